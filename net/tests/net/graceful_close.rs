//! `Connection::shutdown`: our close, then the peer's, over WebSocket (the
//! close handshake) and framed TCP, on real loopback sockets; the peer
//! reads every message and sees a clean end, never a reset. A peer that
//! never answers costs the grace period, on virtual time.

use std::time::Duration;

use bijou_framing::prefix::Bijou64;
use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::{websocket, FramedTransport, Transport};
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{Audience, DataRequestRejected, SedimentreeId, SyncMessage};
use bijou_signing::{ed25519_dalek::SigningKey, Identity};
use bijou_test_support::connections::duplex_pair;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(10);

fn message(i: u8) -> SyncMessage {
    SyncMessage::from(DataRequestRejected {
        id: SedimentreeId::new([i; 32]),
    })
}

/// The server reads until the client's close, answering each message, and
/// reports how many it read and whether the stream ended cleanly.
async fn serve<T: Transport>(
    conn: Result<Connection<T>, bijou_net::handshake::ConnectError>,
) -> (u64, bool) {
    let mut conn = conn.expect("handshake");
    let mut read = 0;
    loop {
        match conn.recv().await {
            Ok(Some(_)) => {
                read += 1;
                // An answer the client is still owed when it closes.
                if conn.send(message(200)).await.is_err() {
                    return (read, false);
                }
            }
            Ok(None) => break,
            Err(_) => return (read, false),
        }
    }
    // Our side of the close handshake.
    (read, conn.close().await.is_ok())
}

async fn client<T: Transport>(transport: T, server: &SigningKey) -> bijou_net::Shutdown {
    let key = SigningKey::from_bytes(&[1; 32]);
    let config = ConnectConfig::default();
    let mut conn = Connection::connect(transport, &key, Audience::Known(server.peer_id()), &config)
        .await
        .expect("handshake");
    for i in 0..5 {
        conn.send(message(i)).await.expect("send");
    }
    conn.shutdown(Duration::from_secs(5))
        .await
        .expect("shutdown")
}

#[tokio::test]
async fn websocket_shutdown_runs_the_close_handshake() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server_key = SigningKey::from_bytes(&[2; 32]);
    let key = server_key.clone();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let ws = websocket::accept(tcp).await.expect("upgrade");
        serve(
            Connection::accept(
                ws,
                &key,
                &Responder::new(HandshakeConfig::default()),
                &ConnectConfig::default(),
            )
            .await,
        )
        .await
    });
    let ws = websocket::connect(&format!("ws://{addr}/"))
        .await
        .expect("connect");
    let closed = timeout(LIMIT, client(ws, &server_key))
        .await
        .expect("in time");
    assert!(closed.peer_closed, "{closed:?}");
    let (read, clean) = timeout(LIMIT, server)
        .await
        .expect("in time")
        .expect("task");
    assert_eq!((read, clean), (5, true));
    // The answers still in flight when we closed were read, not reset.
    assert!(closed.drained <= 5, "{closed:?}");
}

#[tokio::test]
async fn framed_shutdown_waits_for_the_peers_end_of_stream() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server_key = SigningKey::from_bytes(&[2; 32]);
    let key = server_key.clone();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let framed = FramedTransport::new(tcp, Bijou64);
        serve(
            Connection::accept(
                framed,
                &key,
                &Responder::new(HandshakeConfig::default()),
                &ConnectConfig::default(),
            )
            .await,
        )
        .await
    });
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let closed = timeout(
        LIMIT,
        client(FramedTransport::new(tcp, Bijou64), &server_key),
    )
    .await
    .expect("in time");
    assert!(closed.peer_closed, "{closed:?}");
    assert_eq!(
        timeout(LIMIT, server)
            .await
            .expect("in time")
            .expect("task"),
        (5, true)
    );
}

/// On virtual time (an in-memory pipe, so nothing real waits): the wait
/// for a peer that never answers our close is the grace period, exactly.
#[tokio::test(start_paused = true)]
async fn a_peer_that_never_closes_costs_only_the_grace_period() {
    let (client_key, server_key) = (
        SigningKey::from_bytes(&[1; 32]),
        SigningKey::from_bytes(&[2; 32]),
    );
    // The server end stays open, unread, until the test ends.
    let (mut conn, _server) =
        duplex_pair(&client_key, &server_key, &ConnectConfig::default()).await;
    let started = tokio::time::Instant::now();
    let closed = conn
        .shutdown(Duration::from_millis(300))
        .await
        .expect("shutdown");
    assert!(!closed.peer_closed);
    let waited = started.elapsed();
    // Timers have millisecond resolution: the grace period, rounded up.
    assert!(
        (Duration::from_millis(300)..=Duration::from_millis(301)).contains(&waited),
        "{waited:?}"
    );
}
