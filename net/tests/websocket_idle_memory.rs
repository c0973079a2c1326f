//! What an idle authenticated WebSocket connection keeps (the WebSocket
//! twin of `idle_memory.rs`).
//!
//! 5,000 concurrent loopback WebSocket connections (upgrade, then the
//! handshake) complete the handshake, each
//! carries a burst of traffic (a 64 KiB signed commit one way, a small
//! message back), and then all sit idle. A counting allocator measures the
//! heap they hold: the bound is 2 KiB per idle authenticated connection,
//! as for the framed transport (each connection has two endpoints here,
//! client and server, both counted). Run alone: it needs about 10,000 file descriptors and raises
//! `RLIMIT_NOFILE` to get them.

use std::alloc::System;
use std::time::Duration;

use bijou_net::handshake::{Clock, HandshakeConfig, Responder};
use bijou_net::message::{
    Audience, BlobMessage, CommitId, HeadsUpdate, LooseCommit, Message, RemoteHeads, SedimentreeId,
    SignedItem, SyncMessage,
};
use bijou_net::transport::websocket;
use bijou_net::Connection;
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
use cap::Cap;

use tokio::net::{TcpListener, TcpStream};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const CONNECTIONS: usize = 5_000;
const BOUND_PER_CONNECTION: usize = 2 * 1024;
const NOW: u64 = 1_800_000_000;

fn config() -> HandshakeConfig {
    let mut c = HandshakeConfig::default();
    c.clock = Clock::fixed(NOW);
    c.timeout = Duration::from_secs(60);
    c
}

#[tokio::test]
async fn an_idle_authenticated_websocket_connection_keeps_at_most_2_kib() {
    let wanted = (2 * CONNECTIONS + 256) as u64;
    let got = rlimit::increase_nofile_limit(wanted).expect("raise RLIMIT_NOFILE");
    assert!(got >= wanted, "RLIMIT_NOFILE is {got}, need {wanted}");

    let server_key = SigningKey::from_bytes(&[2; 32]);
    let server_id = server_key.peer_id();
    let responder = Responder::new(config());
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let url = format!("ws://{addr}/");
    let client_key = SigningKey::from_bytes(&[1; 32]);
    let client_config = config();

    // The burst: a 64 KiB signed commit, and a small answer.
    let tree = SedimentreeId::new([7; 32]);
    let blob = Blob::from(vec![0xAB; 64 * 1024]);
    let commit = LooseCommit::new(tree, CommitId::new([3; 32]), [], blob.meta());
    let big = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
        id: tree,
        sender_heads: RemoteHeads::default(),
        item: SignedItem::new(Signed::seal(&client_key, &commit).expect("seal"), blob),
    }));
    let small = Message::Sync(SyncMessage::HeadsUpdate(HeadsUpdate {
        id: tree,
        heads: RemoteHeads::new(1, [CommitId::new([3; 32])]),
    }));

    let before = ALLOCATOR.allocated();
    let mut clients = Vec::with_capacity(CONNECTIONS);
    let mut servers = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        let (server_ws, client_ws) = tokio::join!(
            async {
                let (tcp, _) = listener.accept().await.expect("accept");
                websocket::accept(tcp).await.expect("upgrade")
            },
            async {
                let tcp = TcpStream::connect(addr).await.expect("connect");
                websocket::client(tcp, url.as_str()).await.expect("upgrade")
            }
        );
        let (server, client) = tokio::join!(
            Connection::accept(server_ws, &server_key, &responder),
            Connection::connect(
                client_ws,
                &client_key,
                Audience::Known(server_id),
                &client_config
            ),
        );
        let (mut server, mut client) = (server.expect("accept"), client.expect("connect"));
        let (sent, received) = tokio::join!(client.send(&big), server.recv());
        sent.expect("send");
        let received = received.expect("recv").expect("frame");
        assert!(received.result.is_ok());
        drop(received);
        let (sent, received) = tokio::join!(server.send(&small), client.recv());
        sent.expect("send");
        assert!(received.expect("recv").expect("frame").result.is_ok());
        clients.push(client);
        servers.push(server);
    }
    // Everything received has been dropped; the connections sit idle.
    let buffered: usize = clients
        .iter()
        .chain(&servers)
        .map(|conn| conn.get_ref().buffered_capacity())
        .sum();
    eprintln!("buffers: {buffered} B in all");
    let held = ALLOCATOR.allocated().saturating_sub(before);
    let per_connection = held / CONNECTIONS;
    let per_endpoint = held / (2 * CONNECTIONS);
    eprintln!(
        "{CONNECTIONS} idle authenticated connections hold {held} B: \
         {per_connection} B per connection ({per_endpoint} B per endpoint)"
    );
    assert!(
        per_connection <= BOUND_PER_CONNECTION,
        "{per_connection} B per idle connection (bound {BOUND_PER_CONNECTION})"
    );
    drop(clients);
    drop(servers);
}
