//! Shared by the iroh tests (`iroh_loopback.rs`, `iroh_interop.rs`):
//! direct-only endpoints on loopback, and a raw QUIC peer on the
//! Subduction ALPN that writes whatever bytes a test wants, with the
//! handshake run by hand (the sans-IO initiator) when it needs one.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::iroh::{self as quic, IrohTransport, NodeAddr};
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, Initiator, Responder};
use bijou_proto::message::Audience;
use bijou_signing::{ed25519_dalek::SigningKey, Identity};
use bytes::Bytes;
use iroh::endpoint::{ConnectionError, RecvStream, SendStream};
use iroh::Endpoint;
use tokio::time::timeout;

/// Bound on each test.
pub const LIMIT: Duration = Duration::from_secs(60);
/// Bound on one reply.
pub const REPLY: Duration = Duration::from_secs(5);

pub fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

pub fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// A direct-only endpoint on 127.0.0.1 (no relays, no lookup, no port
/// mapping).
pub async fn endpoint() -> Endpoint {
    quic::direct_endpoint(loopback(), None)
        .await
        .expect("bind a direct endpoint on loopback")
}

/// A raw QUIC client on the Subduction ALPN, with its stream open.
pub struct RawPeer {
    pub conn: iroh::endpoint::Connection,
    pub send: SendStream,
    pub recv: RecvStream,
    /// Kept alive with the connection.
    pub endpoint: Endpoint,
}

impl RawPeer {
    /// Connects to `server`. The server must be accepting ([`accept_soon`]):
    /// the QUIC handshake completes only then.
    pub async fn connect(server: &Endpoint) -> Self {
        let endpoint = endpoint().await;
        let conn = endpoint
            .connect(iroh::EndpointAddr::from(&NodeAddr::of(server)), quic::ALPN)
            .await
            .expect("raw connect");
        let (send, recv) = conn.open_bi().await.expect("open");
        Self {
            conn,
            send,
            recv,
            endpoint,
        }
    }

    /// Connects to `server` and runs the handshake by hand as `me`, against
    /// our accepting side with `server_key`; returns the raw peer and our
    /// server's connection.
    pub async fn authenticated(
        server: &Endpoint,
        server_key: &SigningKey,
        me: &SigningKey,
    ) -> (Self, Connection<IrohTransport>) {
        let accepting = accept_soon(server);
        let mut peer = Self::connect(server).await;
        let initiator = Initiator::new(
            me,
            Audience::Known(server_key.peer_id()),
            bijou_proto::time::Clock::system().now(),
            rand::random(),
        )
        .expect("sign");
        peer.write_framed(initiator.challenge()).await;
        let transport = accepting.await.expect("accept task");
        let responder = Responder::new(HandshakeConfig::default());
        let config = ConnectConfig::default();
        let (ours, reply) = tokio::join!(
            Connection::accept(transport, server_key, &responder, &config),
            peer.read_framed()
        );
        let ours = ours.expect("our server accepts the raw peer");
        initiator.receive(reply).expect("our answer verifies");
        (peer, ours)
    }

    /// Writes `bytes` behind its u32 length.
    pub async fn write_framed(&mut self, bytes: &[u8]) {
        let len = u32::try_from(bytes.len()).expect("fits");
        self.write(&len.to_be_bytes()).await;
        self.write(bytes).await;
    }

    pub async fn write(&mut self, bytes: &[u8]) {
        self.send.write_all(bytes).await.expect("write");
    }

    pub async fn read_framed(&mut self) -> Bytes {
        let mut len = [0; 4];
        self.recv.read_exact(&mut len).await.expect("read");
        let mut buf = vec![0; u32::from_be_bytes(len) as usize];
        self.recv.read_exact(&mut buf).await.expect("read");
        Bytes::from(buf)
    }

    /// The application code our side closed the connection with.
    pub async fn close_code(&self) -> u64 {
        match timeout(REPLY, self.conn.closed())
            .await
            .expect("closed in time")
        {
            ConnectionError::ApplicationClosed(close) => close.error_code.into_inner(),
            other => panic!("expected an application close, got {other:?}"),
        }
    }
}

/// Accepts the next transport on `server` in a task of its own (the QUIC
/// handshake completes only once the server accepts, and the stream only
/// once the client writes).
pub fn accept_soon(server: &Endpoint) -> tokio::task::JoinHandle<IrohTransport> {
    let server = server.clone();
    tokio::spawn(async move { quic::accept(&server).await.expect("accept") })
}
