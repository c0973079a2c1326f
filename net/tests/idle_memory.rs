//! Hostile peers, finding 4: what an idle authenticated connection keeps.
//!
//! 5,000 concurrent loopback TCP connections complete the handshake, each
//! carries a burst of traffic (a 64 KiB signed commit one way, a small
//! message back), and then all sit idle. A counting allocator measures the
//! heap they hold: the bound is 8 KiB per idle authenticated connection
//! (each connection has two endpoints here, client and server, both
//! counted). Run alone: it needs about 10,000 file descriptors and raises
//! `RLIMIT_NOFILE` to get them.

use std::alloc::System;
use std::time::Duration;

use bijou_framing::prefix::Bijou64;
use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::FramedTransport;
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
const BOUND_PER_CONNECTION: usize = 8 * 1024;
const NOW: u64 = 1_800_000_000;

fn config() -> ConnectConfig {
    let mut c = ConnectConfig::default();
    c.clock = Clock::fixed(NOW);
    c.timeout = Duration::from_secs(60);
    c
}

#[tokio::test]
async fn an_idle_authenticated_connection_keeps_at_most_8_kib() {
    let wanted = (2 * CONNECTIONS + 256) as u64;
    let got = rlimit::increase_nofile_limit(wanted).expect("raise RLIMIT_NOFILE");
    assert!(got >= wanted, "RLIMIT_NOFILE is {got}, need {wanted}");

    let server_key = SigningKey::from_bytes(&[2; 32]);
    let server_id = server_key.peer_id();
    let responder = Responder::new(HandshakeConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
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
        let (accepted, connected) = tokio::join!(listener.accept(), TcpStream::connect(addr));
        let (server_io, _) = accepted.expect("accept");
        let client_io = connected.expect("connect");
        let (server, client) = tokio::join!(
            Connection::accept(
                FramedTransport::new(server_io, Bijou64),
                &server_key,
                &responder,
                &client_config
            ),
            Connection::connect(
                FramedTransport::new(client_io, Bijou64),
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
