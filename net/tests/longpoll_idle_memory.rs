//! What an idle authenticated long-poll session holds on the server,
//! measured with a counting allocator over 2,000 sessions on loopback TCP.
//!
//! Each session is opened (the handshake on its own connection, then
//! closed), a bijou `Connection` accepted on it, and kept. Three figures
//! per session:
//!
//! 1. idle, before any traffic, no HTTP connection: the session's state,
//!    its table entry and the `Connection` (bijou's session state
//!    included, as on every transport);
//! 2. with one `/lp/recv` held on its own keep-alive TCP connection, after
//!    a burst of traffic (1 KiB in, 64 KiB out): that plus hyper's
//!    connection, the held request, and both TCP endpoints' tokio
//!    registrations (the client's too, as in `websocket_idle_memory.rs`);
//! 3. idle again once those connections closed: the burst must have left
//!    nothing behind (the 64 KiB message acknowledged and dropped).
//!
//! Run alone: it needs about 4,000 file descriptors and raises
//! `RLIMIT_NOFILE`.

#[path = "support/lp_http.rs"]
mod lp_http;

use std::alloc::System;
use std::time::Duration;

use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::longpoll::{
    IncomingSessions, LongPollServer, LongPollSession, ServerConfig,
};
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{
    Audience, BlobMessage, CommitId, HeadsUpdate, LooseCommit, Message, RemoteHeads, SedimentreeId,
    SignedItem, SyncMessage,
};
use bijou_proto::time::Clock;
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
use cap::Cap;
use lp_http::{connect, listen, next_session, request, Http};
use std::net::SocketAddr;
use tokio::net::TcpStream;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const SESSIONS: usize = 2_000;
const NOW: u64 = 1_800_000_000;
const LIMIT: Duration = Duration::from_secs(10);
/// Per idle session without a connection: state, table entry, Connection
/// (measured: about 380 B).
const IDLE_BOUND: usize = 1024;
/// Per session with a held `/lp/recv` on its own TCP connection, both
/// endpoints (measured: about 20 KiB, most of it hyper's: an 8 KiB read
/// buffer and an 8 KiB buffer for response heads per HTTP connection,
/// kept for as long as the connection lives).
const HELD_BOUND: usize = 32 * 1024;
/// What the burst of traffic may leave behind per session.
const BOUND_LEFT_BY_TRAFFIC: usize = 64;

fn config() -> ConnectConfig {
    let mut c = ConnectConfig::default();
    c.clock = Clock::fixed(NOW);
    c.timeout = Duration::from_secs(60);
    c
}

fn messages(key: &SigningKey) -> (Message, Message) {
    let tree = SedimentreeId::new([7; 32]);
    let blob = Blob::from(vec![0xAB; 64 * 1024]);
    let commit = LooseCommit::new(tree, CommitId::new([3; 32]), [], blob.meta());
    let big = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
        id: tree,
        sender_heads: RemoteHeads::default(),
        item: SignedItem::new(Signed::seal(key, &commit).expect("seal"), blob),
    }));
    let small = Message::Sync(SyncMessage::HeadsUpdate(HeadsUpdate {
        id: tree,
        heads: RemoteHeads::new(1, [CommitId::new([3; 32])]),
    }));
    (big, small)
}

/// Opens `n` sessions, each over a connection closed after the
/// handshake; their ids (as bytes) and our connections.
async fn open_sessions(
    addr: SocketAddr,
    sessions: &mut IncomingSessions,
    n: usize,
    ids: &mut Vec<[u8; 32]>,
    conns: &mut Vec<Connection<LongPollSession>>,
) {
    let client = SigningKey::from_bytes(&[1; 32]);
    let server = SigningKey::from_bytes(&[2; 32]);
    let responder = Responder::new(HandshakeConfig::default());
    for _ in 0..n {
        let mut http = connect(addr).await;
        let ((sid, _), conn) = tokio::join!(
            http.handshake(&client, Audience::Known(server.peer_id()), NOW),
            async {
                let session = next_session(sessions, LIMIT).await;
                Connection::accept(session, &server, &responder, &config())
                    .await
                    .expect("accepted")
            }
        );
        let mut id = [0u8; 32];
        id.copy_from_slice(sid.as_bytes());
        ids.push(id);
        conns.push(conn);
    }
}

/// Lets the server's connection tasks see their clients gone.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

fn sid(id: &[u8; 32]) -> &str {
    std::str::from_utf8(id).expect("hex")
}

/// Per-session figures, in bytes.
#[derive(Debug, Clone, Copy)]
struct Figures {
    idle_before_traffic: usize,
    with_held_recv: usize,
    idle_after_traffic: usize,
}

async fn measure(addr: SocketAddr, sessions: &mut IncomingSessions, n: usize) -> Figures {
    let client_key = SigningKey::from_bytes(&[1; 32]);
    let (big, small) = messages(&client_key);
    let small_bytes = bijou_codec::Wire::encode(&small).expect("encode");
    let big_len = bijou_codec::Wire::encode(&big).expect("encode").len();
    let mut ids = Vec::with_capacity(n);
    let mut conns = Vec::with_capacity(n);
    let mut https: Vec<Http<TcpStream>> = Vec::with_capacity(n);

    let start = ALLOCATOR.allocated();
    open_sessions(addr, sessions, n, &mut ids, &mut conns).await;
    settle().await;
    let idle_before_traffic = ALLOCATOR.allocated().saturating_sub(start);

    // The burst: 1 KiB-ish in, 64 KiB out (acknowledged by the held
    // recv below), each session on a new keep-alive connection.
    for (id, conn) in ids.iter().zip(conns.iter_mut()) {
        let mut http = connect(addr).await;
        let sent = http.send(sid(id), &small_bytes).await.expect("send");
        assert_eq!(sent.status, 204);
        let received = conn.recv().await.expect("recv").expect("a message");
        assert!(received.result.is_ok());
        drop(received);
        conn.send(&big).await.expect("queued");
        let reply = http.recv(sid(id), Some(0)).await.expect("recv");
        assert_eq!((reply.status, reply.body.len()), (200, big_len));
        drop(reply);
        https.push(http);
    }
    // Each connection holds an /lp/recv acknowledging the message.
    for (id, http) in ids.iter().zip(https.iter_mut()) {
        let held = request(
            "POST",
            "/lp/recv",
            &[("x-session-id", sid(id)), ("x-bijou-ack", "1")],
            b"",
        );
        http.write(&held).await.expect("held recv");
    }
    settle().await;
    for conn in &conns {
        assert_eq!(conn.get_ref().queued_for_client(), (0, 0), "acknowledged");
    }
    let with_held_recv = ALLOCATOR.allocated().saturating_sub(start);
    drop(https);
    settle().await;
    let idle_after_traffic = ALLOCATOR.allocated().saturating_sub(start);
    drop(conns);
    drop(ids);
    Figures {
        idle_before_traffic: idle_before_traffic / n,
        with_held_recv: with_held_recv / n,
        idle_after_traffic: idle_after_traffic / n,
    }
}

#[tokio::test]
async fn an_idle_authenticated_long_poll_session_holds_a_few_hundred_bytes() {
    let wanted = (2 * SESSIONS + 256) as u64;
    let got = rlimit::increase_nofile_limit(wanted).expect("raise RLIMIT_NOFILE");
    assert!(got >= wanted, "RLIMIT_NOFILE is {got}, need {wanted}");
    let mut config = ServerConfig::default();
    config.max_sessions = 2 * SESSIONS;
    let (server, mut sessions) = LongPollServer::new(config);
    let addr = listen(&server).await;

    // Warm-up, not measured: tokio's slab pages for socket registrations,
    // the sweeper task, the table's first growth.
    let figures = tokio::time::timeout(Duration::from_secs(300), async {
        let _ = measure(addr, &mut sessions, 200).await;
        measure(addr, &mut sessions, SESSIONS).await
    })
    .await
    .expect("in time");
    eprintln!(
        "{SESSIONS} idle authenticated long-poll sessions, server side, per session: \
         {} B idle before traffic (no connection), {} B with a held /lp/recv on its own \
         TCP connection (both endpoints), {} B idle after the traffic",
        figures.idle_before_traffic, figures.with_held_recv, figures.idle_after_traffic,
    );
    assert!(
        figures.idle_after_traffic <= figures.idle_before_traffic + BOUND_LEFT_BY_TRAFFIC,
        "{figures:?}"
    );
    assert!(figures.idle_after_traffic <= IDLE_BOUND, "{figures:?}");
    assert!(figures.with_held_recv <= HELD_BOUND, "{figures:?}");
    drop(server);
}
