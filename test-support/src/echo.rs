//! An echo server and honest sender over loopback TCP (the `echo`
//! feature), shared by the facade's echo and load tests. The server
//! verifies every frame through `Connection` and echoes the verified ones
//! byte for byte; everything it sees is reported as an [`Event`]. The
//! frames to send come from [`messages::chain_commit`](crate::messages::chain_commit)
//! and [`messages::frame`](crate::messages::frame).

use std::sync::Arc;
use std::time::Duration;

use bijou_framing::prefix::Bijou64;
use bijou_net::handshake::{ConnectConfig, ConnectError};
use bijou_net::transport::FramedTransport;
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::Audience;
use bijou_proto::session::Rejected;
use bijou_signing::{ed25519_dalek::SigningKey, Identity, PeerId};
use bytes::Bytes;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// What the echo server observed.
#[derive(Debug)]
pub enum Event {
    /// A handshake failed (or was refused).
    HandshakeFailed(ConnectError),
    /// A frame from `peer` was rejected; the connection continued.
    Rejected(PeerId, Rejected),
    /// A connection ended after echoing `echoed` frames.
    Closed {
        /// The authenticated peer.
        peer: PeerId,
        /// Frames verified and echoed.
        echoed: u64,
    },
}

/// A running echo server.
pub struct EchoServer {
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    /// Its peer id.
    pub peer: PeerId,
    /// What it observed.
    pub events: mpsc::UnboundedReceiver<Event>,
}

/// Starts an echo server on 127.0.0.1:0.
pub async fn start_server(key: SigningKey) -> EchoServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let peer = key.peer_id();
    let (events_tx, events) = mpsc::unbounded_channel();
    let key = Arc::new(key);
    let responder = Responder::new(HandshakeConfig::default());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (key, responder, events) = (Arc::clone(&key), responder.clone(), events_tx.clone());
            tokio::spawn(async move {
                stream.set_nodelay(true).expect("nodelay");
                let mut conn = match Connection::accept(
                    FramedTransport::new(stream, Bijou64),
                    &*key,
                    &responder,
                    &ConnectConfig::default(),
                )
                .await
                {
                    Ok(conn) => conn,
                    Err(e) => {
                        let _ = events.send(Event::HandshakeFailed(e));
                        return;
                    }
                };
                let peer = conn.remote_peer();
                let mut echoed = 0;
                while let Ok(Some(received)) = conn.recv().await {
                    match received.result {
                        Ok(_) => {
                            if conn.send_bytes(received.bytes).await.is_err() {
                                break;
                            }
                            echoed += 1;
                        }
                        Err(why) => {
                            let _ = events.send(Event::Rejected(peer, why));
                        }
                    }
                }
                let _ = events.send(Event::Closed { peer, echoed });
            });
        }
    });
    EchoServer { addr, peer, events }
}

/// Connects and completes the handshake with `key`.
pub async fn connect(
    addr: std::net::SocketAddr,
    key: &SigningKey,
    server: PeerId,
) -> Connection<FramedTransport<TcpStream, Bijou64>> {
    let stream = TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    Connection::connect(
        FramedTransport::new(stream, Bijou64),
        key,
        Audience::Known(server),
        &ConnectConfig::default(),
    )
    .await
    .expect("handshake")
}

/// Sends `frames` over `conn` with at most `window` in flight, and checks
/// that every echo is the frame sent, in order, and verifies again.
/// Returns the number of frames echoed intact.
pub async fn send_and_check<T>(
    conn: Connection<FramedTransport<T, Bijou64>>,
    frames: Vec<Bytes>,
    window: usize,
) -> u64
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut tx, mut rx) = conn.split();
    let total = frames.len();
    let sem = Arc::new(tokio::sync::Semaphore::new(window));
    let expected = frames.clone();
    let permits = Arc::clone(&sem);
    let sender = tokio::spawn(async move {
        for f in frames {
            permits.acquire().await.expect("open").forget();
            tx.send_bytes(f).await.expect("send");
        }
        tx
    });
    let mut intact = 0;
    for (i, want) in expected.iter().enumerate() {
        let got = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("echo {i}/{total} did not arrive"))
            .expect("no framing error")
            .unwrap_or_else(|| panic!("server closed after {i}/{total} echoes"));
        assert_eq!(&got.bytes, want, "echo {i} differs (altered or reordered)");
        got.result.expect("the echo verifies again");
        sem.add_permits(1);
        intact += 1;
    }
    let mut tx = sender.await.expect("sender");
    tx.close().await.expect("close");
    intact
}

/// Records every byte written through it (what a wiretap sees).
pub struct Tee<T> {
    /// The transport.
    pub inner: T,
    /// The recording.
    pub copy: Arc<std::sync::Mutex<Vec<u8>>>,
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Tee<T> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Tee<T> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let poll = std::pin::Pin::new(&mut this.inner).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = &poll {
            this.copy
                .lock()
                .expect("lock")
                .extend_from_slice(&buf[..*n]);
        }
        poll
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
