//! The other end speaks another transport: the client's error says so and
//! what to try (issue 22, friction 2), over real loopback sockets.

use std::time::Duration;

use bijou_framing::prefix::Bijou64;
use bijou_framing::prefix::PrefixKind;
use bijou_net::handshake::ConnectConfig;
use bijou_net::handshake::ConnectError;
use bijou_net::transport::peer_framing::PeerFraming;
use bijou_net::transport::websocket::{self, UpgradeError};
use bijou_net::transport::FramedTransport;
use bijou_net::transport::TransportError;
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::Audience;
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
        Connection::accept(
            FramedTransport::new(tcp, Bijou64),
            &key,
            &responder,
            &ConnectConfig::default(),
        )
        .await
    });
    let err = timeout(LIMIT, websocket::connect(&format!("ws://{addr}/")))
        .await
        .expect("in time")
        .expect_err("no upgrade");
    assert!(
        matches!(
            &err,
            TransportError::Upgrade(UpgradeError::NotAnswered { have: 0 })
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
            &ConnectConfig::default(),
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
    // The server's side, as its log shows it: not HTTP, said once, with the
    // first bytes the client sent (a bijou64 length, then "SUH").
    let refused = server.await.expect("task").expect_err("refused");
    assert!(
        matches!(
            &refused,
            TransportError::Upgrade(UpgradeError::NotHttp { first, .. }) if first[1..] == *b"SUH"
        ),
        "{refused:?}"
    );
    let said = refused.to_string();
    assert_eq!(said.matches("WebSocket upgrade").count(), 1, "{said}");
    assert!(
        said.contains("not HTTP") && said.contains("framed"),
        "{said}"
    );
}

/// Reads the client's challenge, then writes `reply` raw and closes.
async fn raw_server(reply: Vec<u8>) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.expect("accept");
        let mut buf = [0u8; 512];
        let _ = tcp.read(&mut buf).await;
        let _ = tcp.write_all(&reply).await;
        let _ = tcp.shutdown().await;
    });
    (addr, task)
}

async fn framed_connect(addr: std::net::SocketAddr) -> ConnectError {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    timeout(
        LIMIT,
        Connection::connect(
            FramedTransport::new(tcp, Bijou64),
            &SigningKey::from_bytes(&[1; 32]),
            Audience::Known(SigningKey::from_bytes(&[2; 32]).peer_id()),
            &ConnectConfig::default(),
        ),
    )
    .await
    .expect("in time")
    .expect_err("no handshake")
}

/// A framed client at an HTTP server (a WebSocket server that answers a
/// non-HTTP request with 400): the client says to use a ws:// URL.
#[tokio::test]
async fn a_framed_client_at_an_http_server_is_told_to_use_ws() {
    let (addr, server) =
        raw_server(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n".to_vec()).await;
    let err = framed_connect(addr).await;
    assert!(
        matches!(
            err,
            ConnectError::OtherFraming {
                theirs: PeerFraming::Http,
                ours: PrefixKind::Bijou64,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("ws:// URL"), "{err}");
    server.await.expect("server");
}

/// A reply that parses only under another prefix (a u32-be-framed
/// rejection, to a bijou64 client) names that prefix.
#[tokio::test]
async fn a_reply_behind_another_prefix_names_that_prefix() {
    use bijou_codec::Wire;
    use bijou_framing::prefix::{LengthPrefix, U32Be};
    use bijou_proto::message::{HandshakeMessage, Rejection, RejectionReason};
    let rejection = HandshakeMessage::Rejection(Rejection {
        reason: RejectionReason::InvalidAudience,
        timestamp: 1,
    })
    .encode()
    .expect("encode");
    let (prefix, n) = U32Be::encode(rejection.len() as u64).expect("fits");
    let mut reply = prefix[..n].to_vec();
    reply.extend_from_slice(&rejection);
    let (addr, server) = raw_server(reply).await;
    let err = framed_connect(addr).await;
    assert!(
        matches!(
            err,
            ConnectError::OtherFraming {
                theirs: PeerFraming::Prefix(PrefixKind::U32Be),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("--prefix u32-be"), "{err}");
    server.await.expect("server");
}

/// Our server, framed with u32-be, names the client's bijou64 framing;
/// the client, answered with silence, is told to check transport and
/// prefix.
#[tokio::test]
async fn a_server_names_the_prefix_a_client_frames_with() {
    use bijou_framing::prefix::U32Be;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let key = SigningKey::from_bytes(&[2; 32]);
        let responder = Responder::new(HandshakeConfig::default());
        Connection::accept(
            FramedTransport::new(tcp, U32Be),
            &key,
            &responder,
            &ConnectConfig::default(),
        )
        .await
    });
    let client = framed_connect(addr).await;
    assert!(client.to_string().contains("length prefix"), "{client}");
    let refused = server.await.expect("task").expect_err("refused");
    assert!(
        matches!(
            refused,
            ConnectError::OtherFraming {
                theirs: PeerFraming::Prefix(PrefixKind::Bijou64),
                ours: PrefixKind::U32Be,
                ..
            }
        ),
        "{refused:?}"
    );
}
