//! The other end speaks another transport: the client's error says so and
//! what to try (issue 22, friction 2), over real loopback sockets.

use std::time::Duration;

use bijou_net::handshake::{HandshakeConfig, Responder};
use bijou_net::message::Audience;
use bijou_net::transport::websocket::{self, UpgradeError};
use bijou_net::transport::FramedTransport;
use bijou_net::{prefix::Bijou64, ConnectError, Connection, TransportError};
use bijou_signing::{ed25519_dalek::SigningKey, Identity};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(10);

/// A WebSocket client against a framed server: the server reads the HTTP
/// request as a malformed frame and closes; the client says the server may
/// be a framed peer.
#[tokio::test]
async fn a_websocket_client_at_a_framed_server_is_told_so() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let key = SigningKey::from_bytes(&[2; 32]);
        let responder = Responder::new(HandshakeConfig::default());
        Connection::accept(FramedTransport::new(tcp, Bijou64), &key, &responder).await
    });
    let err = timeout(LIMIT, websocket::connect(&format!("ws://{addr}/")))
        .await
        .expect("in time")
        .expect_err("no upgrade");
    let TransportError::WebSocket(inner) = &err else {
        panic!("{err:?}")
    };
    assert!(
        matches!(
            inner.downcast_ref::<UpgradeError>(),
            Some(UpgradeError::NotAnswered { have: 0 })
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("framed"), "{err}");
    // The server saw a malformed handshake message ("ET /"), not a panic.
    let refused = server.await.expect("task").expect_err("refused");
    assert!(refused.handshake().is_some(), "{refused:?}");
}

/// A framed client against a WebSocket server: the server finds no HTTP
/// request and closes; the client says a WebSocket server does that and
/// to use a ws:// URL.
#[tokio::test]
async fn a_framed_client_at_a_websocket_server_is_told_so() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        websocket::accept(tcp).await.map(|_| ())
    });
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let server_id = SigningKey::from_bytes(&[2; 32]).peer_id();
    let err = timeout(
        LIMIT,
        Connection::connect(
            FramedTransport::new(tcp, Bijou64),
            &SigningKey::from_bytes(&[1; 32]),
            Audience::Known(server_id),
            &HandshakeConfig::default(),
        ),
    )
    .await
    .expect("in time")
    .expect_err("no handshake");
    assert!(
        matches!(
            err,
            ConnectError::Closed {
                waiting_for: "response"
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("ws://"), "{err}");
    assert!(server.await.expect("task").is_err());
}
