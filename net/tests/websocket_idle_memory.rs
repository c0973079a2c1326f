//! What an idle authenticated WebSocket connection keeps, beside the same
//! connection over framed TCP (`idle_memory.rs`), measured in the same run.
//!
//! 5,000 concurrent loopback connections complete the upgrade (WebSocket)
//! and the handshake, each carries a burst of traffic (a 64 KiB signed
//! commit one way, a small message back), and then all sit idle. A
//! counting allocator measures the heap they hold, sockets, `Connection`
//! structs and session state included (each connection has two endpoints
//! here, client and server, both counted), once before any traffic and
//! once idle after it. The same with `FramedTransport` (bijou64) first,
//! after a warm-up round.
//!
//! The bound: the WebSocket transport's buffers are all given back (0 B),
//! the traffic leaves nothing behind, and an idle WebSocket connection
//! holds at most 2 KiB more than the same connection over framed TCP (the
//! transport's struct is bigger; it holds no heap of its own). Run alone:
//! it needs about 10,000 file descriptors and raises `RLIMIT_NOFILE`.

use std::alloc::System;
use std::time::Duration;

use bijou_framing::prefix::Bijou64;
use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::{websocket, FramedTransport};
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{
    Audience, BlobMessage, CommitId, HeadsUpdate, LooseCommit, Message, RemoteHeads, SedimentreeId,
    SignedItem, SyncMessage,
};
use bijou_proto::time::Clock;
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
use cap::Cap;

use tokio::net::{TcpListener, TcpStream};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const CONNECTIONS: usize = 5_000;
/// What an idle WebSocket connection may hold beyond a framed one.
const BOUND_OVER_FRAMED: usize = 2 * 1024;
/// What the burst of traffic may leave behind per connection.
const BOUND_LEFT_BY_TRAFFIC: usize = 64;
const NOW: u64 = 1_800_000_000;

fn config() -> ConnectConfig {
    let mut c = ConnectConfig::default();
    c.clock = Clock::fixed(NOW);
    c.timeout = Duration::from_secs(60);
    c
}

fn messages(client_key: &SigningKey) -> (Message, Message) {
    let tree = SedimentreeId::new([7; 32]);
    let blob = Blob::from(vec![0xAB; 64 * 1024]);
    let commit = LooseCommit::new(tree, CommitId::new([3; 32]), [], blob.meta());
    let big = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
        id: tree,
        sender_heads: RemoteHeads::default(),
        item: SignedItem::new(Signed::seal(client_key, &commit).expect("seal"), blob),
    }));
    let small = Message::Sync(SyncMessage::HeadsUpdate(HeadsUpdate {
        id: tree,
        heads: RemoteHeads::new(1, [CommitId::new([3; 32])]),
    }));
    (big, small)
}

/// Per connection: bytes held idle before any traffic, and idle after it.
#[derive(Debug, Clone, Copy)]
struct Figures {
    before_traffic: usize,
    after_traffic: usize,
}

/// Connects `CONNECTIONS` pairs with `$upgrade` (the transports over two
/// TCP streams), then measures; `$buffered` (the transports' buffers) must
/// be 0 when idle.
macro_rules! measure {
    ($upgrade:expr, $buffered:expr) => {{
        let server_key = SigningKey::from_bytes(&[2; 32]);
        let server_id = server_key.peer_id();
        let responder = Responder::new(HandshakeConfig::default());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let client_key = SigningKey::from_bytes(&[1; 32]);
        let client_config = config();
        let (big, small) = messages(&client_key);

        let start = ALLOCATOR.allocated();
        let mut clients = Vec::with_capacity(CONNECTIONS);
        let mut servers = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            let (server_io, client_io) = tokio::join!(
                async { listener.accept().await.expect("accept").0 },
                async { TcpStream::connect(addr).await.expect("connect") },
            );
            let (server_t, client_t) = $upgrade(server_io, client_io, addr).await;
            let (server, client) = tokio::join!(
                Connection::accept(server_t, &server_key, &responder, &client_config),
                Connection::connect(
                    client_t,
                    &client_key,
                    Audience::Known(server_id),
                    &client_config
                ),
            );
            clients.push(client.expect("connect"));
            servers.push(server.expect("accept"));
        }
        let before_traffic = ALLOCATOR.allocated().saturating_sub(start);
        for (client, server) in clients.iter_mut().zip(servers.iter_mut()) {
            let (sent, received) = tokio::join!(client.send(&big), server.recv());
            sent.expect("send");
            let received = received.expect("recv").expect("frame");
            assert!(received.result.is_ok());
            drop(received);
            let (sent, received) = tokio::join!(server.send(&small), client.recv());
            sent.expect("send");
            assert!(received.expect("recv").expect("frame").result.is_ok());
        }
        let buffered: usize = clients
            .iter()
            .chain(&servers)
            .map(|conn| $buffered(conn.get_ref()))
            .sum();
        let after_traffic = ALLOCATOR.allocated().saturating_sub(start);
        assert_eq!(buffered, 0, "idle transports hold no buffer");
        drop(clients);
        drop(servers);
        Figures {
            before_traffic: before_traffic / CONNECTIONS,
            after_traffic: after_traffic / CONNECTIONS,
        }
    }};
}

#[tokio::test]
async fn an_idle_authenticated_websocket_connection_holds_no_buffer() {
    let wanted = (2 * CONNECTIONS + 256) as u64;
    let got = rlimit::increase_nofile_limit(wanted).expect("raise RLIMIT_NOFILE");
    assert!(got >= wanted, "RLIMIT_NOFILE is {got}, need {wanted}");

    // Warm-up, not measured: tokio keeps the slab pages of its socket
    // registrations, so whichever carrier ran first would pay for them.
    let _warm_up = measure!(
        |server_io, client_io, _addr| async move {
            (
                FramedTransport::new(server_io, Bijou64),
                FramedTransport::new(client_io, Bijou64),
            )
        },
        |t: &FramedTransport<TcpStream, Bijou64>| t.buffered_capacity()
    );
    let framed = measure!(
        |server_io, client_io, _addr| async move {
            (
                FramedTransport::new(server_io, Bijou64),
                FramedTransport::new(client_io, Bijou64),
            )
        },
        |t: &FramedTransport<TcpStream, Bijou64>| t.buffered_capacity()
    );
    let ws = measure!(
        |server_io: TcpStream, client_io: TcpStream, addr| async move {
            let url = format!("ws://{addr}/");
            let (server, client) = tokio::join!(
                websocket::accept(server_io),
                websocket::client(client_io, url.as_str())
            );
            (server.expect("upgrade"), client.expect("upgrade"))
        },
        |t: &websocket::WebSocketTransport<TcpStream>| t.buffered_capacity()
    );
    eprintln!(
        "{CONNECTIONS} idle authenticated connections, per connection (both endpoints): \
         WebSocket {} B before any traffic, {} B after; framed TCP {} B before, {} B after; \
         WebSocket - framed = {} B",
        ws.before_traffic,
        ws.after_traffic,
        framed.before_traffic,
        framed.after_traffic,
        ws.after_traffic as isize - framed.after_traffic as isize,
    );
    assert!(
        ws.after_traffic <= ws.before_traffic + BOUND_LEFT_BY_TRAFFIC,
        "traffic left {} B per connection",
        ws.after_traffic.saturating_sub(ws.before_traffic)
    );
    assert!(
        ws.after_traffic <= framed.after_traffic + BOUND_OVER_FRAMED,
        "{ws:?} vs {framed:?}"
    );
    // The bound: an idle authenticated WebSocket connection after
    // a 64 KiB message holds at most 2 KiB (both endpoints, counting the
    // connection's own state and its share of tokio's socket bookkeeping).
    assert!(
        ws.after_traffic <= IDLE_BOUND,
        "{} B per idle connection",
        ws.after_traffic
    );
}

/// At most this many bytes per idle connection (both endpoints).
const IDLE_BOUND: usize = 2 * 1024;
