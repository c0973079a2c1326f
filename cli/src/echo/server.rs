//! The echo server (peer B): verifies every frame a sender sends and
//! echoes it back exactly as received.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bijou_frame::framing::prefix::LengthPrefix;
use bijou_frame::net::handshake::ConnectConfig;
#[cfg(feature = "iroh")]
use bijou_frame::net::transport::iroh;
use bijou_frame::net::transport::{websocket, FramedTransport, Transport};
use bijou_frame::net::Connection;
use bijou_frame::proto::handshake::{HandshakeConfig, Responder};
use bijou_frame::signing::{ed25519_dalek::SigningKey, PeerId};
use bytes::Bytes;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::accept;
use crate::cap::Cap;
use crate::figures::short;
use crate::target::{TransportArg, CONNECT_TIMEOUT};
use crate::AnyError;

/// The discovery id both sides use in two-terminal mode.
pub(super) fn discovery_id() -> [u8; 32] {
    *blake3::hash(b"bijou-frame echo").as_bytes()
}

/// Connections the echo server echoes at once: the most `--peers` asks
/// for, so that no sender of a run waits for another to finish.
const MAX_CONNECTIONS: usize = 10_000;

/// The echo server: its key, and what it counted over every connection.
pub(super) struct Server {
    pub(super) key: SigningKey,
    responder: Responder,
    verified: AtomicU64,
    pub(super) rejected: AtomicU64,
    handshakes: AtomicU64,
    /// Why the first rejected frame was rejected.
    pub(super) first_rejection: Mutex<Option<String>>,
}

impl Server {
    /// An echo server answering to `key` and to the echo discovery id.
    pub(super) fn new(key: SigningKey) -> Self {
        Self {
            key,
            responder: Responder::new(HandshakeConfig::default()).with_discovery_id(discovery_id()),
            verified: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            handshakes: AtomicU64::new(0),
            first_rejection: Mutex::new(None),
        }
    }

    /// Accepts connections until the task is dropped; at most
    /// [`MAX_CONNECTIONS`] are echoed at once.
    pub(super) async fn serve<P: LengthPrefix>(
        self: Arc<Self>,
        listener: TcpListener,
        transport: TransportArg,
        log: bool,
    ) {
        if transport == TransportArg::Longpoll {
            accept::serve_longpoll(&listener, &Cap::silent(MAX_CONNECTIONS), |session| {
                let this = Arc::clone(&self);
                async move {
                    let result = async {
                        let config = ConnectConfig::default();
                        let conn = Connection::accept(session, &this.key, &this.responder, &config)
                            .await?;
                        this.echo(conn).await
                    }
                    .await;
                    if log {
                        log_connection("long-poll", result);
                    }
                }
            })
            .await;
            return;
        }
        accept::serve_tcp(
            &listener,
            &Cap::silent(MAX_CONNECTIONS),
            |(stream, peer_addr)| {
                let this = Arc::clone(&self);
                async move {
                    let result = this.accept::<P>(stream, transport).await;
                    if log {
                        log_connection(peer_addr, result);
                    }
                }
            },
        )
        .await;
    }

    /// Echoes every connection accepted on an iroh `endpoint`, at most
    /// [`MAX_CONNECTIONS`] at once.
    #[cfg(feature = "iroh")]
    pub(super) async fn serve_iroh(self: Arc<Self>, endpoint: iroh::Endpoint, log: bool) {
        let endpoint = &endpoint;
        let accept = move || async move { endpoint.accept().await.map(Ok) };
        accept::serve_each(&Cap::silent(MAX_CONNECTIONS), accept, |incoming| {
            let this = Arc::clone(&self);
            async move {
                let result: Result<_, AnyError> = async {
                    let transport = iroh::accept_incoming(incoming).await?;
                    this.echo(
                        Connection::accept(
                            transport,
                            &this.key,
                            &this.responder,
                            &ConnectConfig::default(),
                        )
                        .await?,
                    )
                    .await
                }
                .await;
                if log {
                    log_connection("iroh", result);
                }
            }
        })
        .await;
    }

    /// Accepts one connection on `transport` and echoes it.
    async fn accept<P: LengthPrefix>(
        &self,
        stream: TcpStream,
        transport: TransportArg,
    ) -> Result<(PeerId, u64, u64), AnyError> {
        stream.set_nodelay(true)?;
        match transport {
            // Its TCP connections carry HTTP requests: `serve` hands them
            // to the long-poll server instead.
            TransportArg::Longpoll => Err("a long-poll TCP connection is not one session".into()),
            TransportArg::Tcp | TransportArg::Iroh => {
                let framed = FramedTransport::new(stream, P::default());
                self.echo(
                    Connection::accept(
                        framed,
                        &self.key,
                        &self.responder,
                        &ConnectConfig::default(),
                    )
                    .await?,
                )
                .await
            }
            TransportArg::Ws => {
                let upgrade = websocket::accept(stream);
                let ws = tokio::time::timeout(CONNECT_TIMEOUT, upgrade)
                    .await
                    .map_err(|_| "WebSocket upgrade timed out")??;
                self.echo(
                    Connection::accept(ws, &self.key, &self.responder, &ConnectConfig::default())
                        .await?,
                )
                .await
            }
        }
    }

    /// Verifies and echoes one connection's frames; a reader task verifies,
    /// a writer task echoes (batching flushes while frames keep coming).
    async fn echo<T: Transport + Send + 'static>(
        &self,
        conn: Connection<T>,
    ) -> Result<(PeerId, u64, u64), AnyError> {
        self.handshakes.fetch_add(1, Ordering::Relaxed);
        let peer = conn.remote_peer();
        let (mut tx, mut rx) = conn.split();
        let (queue, mut frames) = mpsc::channel::<Bytes>(256);
        let writer = tokio::spawn(async move {
            while let Some(frame) = frames.recv().await {
                tx.feed_bytes(frame).await?;
                while let Ok(more) = frames.try_recv() {
                    tx.feed_bytes(more).await?;
                }
                tx.flush().await?;
            }
            tx.close().await
        });
        let (mut echoed, mut rejected) = (0, 0);
        while let Some(received) = rx.recv().await? {
            match received.result {
                Ok(_) => {
                    echoed += 1;
                    self.verified.fetch_add(1, Ordering::Relaxed);
                    if queue.send(received.bytes).await.is_err() {
                        break;
                    }
                }
                Err(why) => {
                    rejected += 1;
                    self.rejected.fetch_add(1, Ordering::Relaxed);
                    let mut first = self
                        .first_rejection
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    first.get_or_insert_with(|| why.to_string());
                }
            }
        }
        drop(queue);
        writer.await??;
        Ok((peer, echoed, rejected))
    }
}

/// The `--listen` log line of a connection from `from` (its address, or
/// `iroh`): what it echoed, or why it failed.
fn log_connection(from: impl std::fmt::Display, result: Result<(PeerId, u64, u64), AnyError>) {
    match result {
        Ok((peer, echoed, rejected)) => println!(
            "  {from} peer {}: {echoed} frames verified and echoed, {rejected} rejected",
            short(peer)
        ),
        Err(e) => println!("  {from}: {e}"),
    }
}
