//! Echo throughput over loopback TCP for 1 KiB signed commits, with the
//! bijou64 and LEB128 prefixes and over WebSocket, against the crypto limit
//! measured in the same run; and the cost of opening a connection
//! (handshake) on each transport.
//!
//! Per round trip the echo does: A signs a LooseCommit (1 KiB blob), B
//! verifies it (`verify_strict` + scope + blob digest) and echoes the frame
//! bytes, A compares the echo and verifies it again. The echo pipelines
//! frames and runs A and B on two runtime threads. Two limits, in the same
//! group:
//!
//! - `crypto_limit_2_threads`, the honest one: that cryptography with no
//!   I/O, split as the echo splits it and run on two threads at once (A:
//!   `sign`, `verify_strict`, blob check; B: `verify_strict`, blob check).
//!   No echo on two threads can take less per frame than the busier share:
//!   report echo against this one (`crypto_limit_2_threads / echo`, a
//!   throughput ratio at most 1.0).
//! - `crypto_limit`: all of it back to back on one thread, the figure the
//!   README first gave (an echo on two threads can beat it, so it bounds
//!   nothing; kept for comparison with earlier runs).
//!
//! ```text
//! cargo bench -p bijou-frame-benches --bench echo -- --warm-up-time 1 --measurement-time 3
//! ```
//! Report: time per frame (median), and crypto_limit_2_threads / echo as
//! the ratio;
//! time per connection in `handshake`, against the sans-IO exchange alone
//! (sign, verify, sign, verify: no I/O).
//!
//! With the `iroh` feature, two more groups compare QUIC through iroh
//! (direct-only endpoints on loopback) with framed TCP carrying the same
//! u32-BE framing, in the same run: `echo_iroh_1KiB_commit` (echo over
//! iroh against echo over TCP; report the throughput ratio iroh / TCP) and
//! `first_verified_message` (connect + handshake + one verified echo on a
//! fresh connection; report the median, the p50):
//!
//! ```text
//! cargo bench -p bijou-frame-benches --features iroh --bench echo -- 'iroh|first_verified'
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use bijou_frame::codec::Wire;
use bijou_frame::framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_frame::net::handshake::ConnectConfig;
use bijou_frame::net::transport::{websocket, FramedTransport, Transport};
use bijou_frame::net::Connection;
use bijou_frame::net::{ConnectionReceiver, ConnectionSender};
use bijou_frame::proto::handshake::{HandshakeConfig, Initiator, Responder};
use bijou_frame::proto::message::{
    Audience, BlobMessage, CommitId, LooseCommit, Message, RemoteHeads, SedimentreeId, SignedItem,
    SyncMessage,
};
use bijou_frame::proto::time::Now;
use bijou_frame::proto::verify_budget::VerifyBudget;
use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{rngs::StdRng, RngCore, SeedableRng};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

const BLOB: usize = 1024;
/// Flush after this many queued frames (and at the end of a batch).
const FLUSH_EVERY: u64 = 16;

struct Fixture {
    key: SigningKey,
    tree: SedimentreeId,
    blob: Blob,
}

impl Fixture {
    fn new() -> Self {
        let mut rng = StdRng::seed_from_u64(0xEC40);
        let mut blob = vec![0u8; BLOB];
        rng.fill_bytes(&mut blob);
        Self {
            key: SigningKey::from_bytes(&[0xA1; 32]),
            tree: SedimentreeId::new([0x42; 32]),
            blob: Blob::new(blob),
        }
    }

    /// Signs the `n`th commit.
    fn seal(&self, n: u64) -> Signed<LooseCommit> {
        let mut head = [0u8; 32];
        head[..8].copy_from_slice(&n.to_be_bytes());
        let commit = LooseCommit::new(self.tree, CommitId::new(head), [], self.blob.meta());
        Signed::seal(&self.key, &commit).expect("seal")
    }

    /// Signs the `n`th commit and encodes its frame (the sender's work).
    fn frame(&self, n: u64) -> Bytes {
        let signed = self.seal(n);
        let msg = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
            id: self.tree,
            sender_heads: RemoteHeads::default(),
            item: SignedItem::new(signed, self.blob.clone()),
        }));
        msg.encode().expect("encode")
    }
}

/// How A and B talk in one benchmark.
#[derive(Clone, Copy)]
enum Carrier {
    Bijou64,
    Leb128,
    /// Subduction's QUIC framing, over TCP (the iroh comparison).
    #[cfg_attr(not(feature = "iroh"), allow(dead_code))]
    U32Be,
    WebSocket,
}

type Halves<T> = (ConnectionSender<T>, ConnectionReceiver<T>);

/// The verification budget of both ends: far above what two threads can
/// verify, so the echo measures the crypto, framing and I/O, not the
/// default per-connection budget (8,192 verifications a second, one every
/// 122 us, which every transport's echo met exactly before).
const ECHO_BUDGET: VerifyBudget = VerifyBudget::new(1 << 30, 1 << 30);

/// B's side of an accepted TCP stream: echoes every verified message.
async fn serve_echo<T: Transport + Send + 'static>(mut conn: Connection<T>) {
    conn.set_verify_budget(ECHO_BUDGET);
    let (mut tx, mut rx) = conn.split();
    let (queue, mut frames) = tokio::sync::mpsc::channel::<Bytes>(1024);
    tokio::spawn(async move {
        while let Some(frame) = frames.recv().await {
            tx.feed_bytes(frame).await.expect("echo");
            while let Ok(more) = frames.try_recv() {
                tx.feed_bytes(more).await.expect("echo");
            }
            tx.flush().await.expect("flush");
        }
    });
    while let Ok(Some(received)) = rx.recv().await {
        received.result.expect("B verifies");
        if queue.send(received.bytes).await.is_err() {
            break;
        }
    }
}

/// Starts a server (B) that accepts every connection on `carrier`, and
/// echoes messages if `echo`; returns its address and peer id.
async fn start_server(carrier: Carrier, echo: bool) -> (std::net::SocketAddr, Audience) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server_key = std::sync::Arc::new(SigningKey::from_bytes(&[0xB0; 32]));
    let audience = Audience::Known(server_key.peer_id());
    let responder = Responder::new(HandshakeConfig::default());
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.expect("accept");
            stream.set_nodelay(true).expect("nodelay");
            let (key, responder) = (server_key.clone(), responder.clone());
            tokio::spawn(async move {
                match carrier {
                    Carrier::Bijou64 => {
                        let t = FramedTransport::new(stream, Bijou64);
                        let conn =
                            Connection::accept(t, &*key, &responder, &ConnectConfig::default())
                                .await
                                .expect("hs");
                        if echo {
                            serve_echo(conn).await;
                        }
                    }
                    Carrier::Leb128 => {
                        let t = FramedTransport::new(stream, Leb128);
                        let conn =
                            Connection::accept(t, &*key, &responder, &ConnectConfig::default())
                                .await
                                .expect("hs");
                        if echo {
                            serve_echo(conn).await;
                        }
                    }
                    Carrier::U32Be => {
                        let t = FramedTransport::new(stream, U32Be);
                        let conn =
                            Connection::accept(t, &*key, &responder, &ConnectConfig::default())
                                .await
                                .expect("hs");
                        if echo {
                            serve_echo(conn).await;
                        }
                    }
                    Carrier::WebSocket => {
                        let t = websocket::accept(stream).await.expect("upgrade");
                        let conn =
                            Connection::accept(t, &*key, &responder, &ConnectConfig::default())
                                .await
                                .expect("hs");
                        if echo {
                            serve_echo(conn).await;
                        }
                    }
                }
            });
        }
    });
    (addr, audience)
}

async fn tcp(addr: std::net::SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream
}

/// A's connection over a length prefix.
async fn connect_framed<P: LengthPrefix>(
    addr: std::net::SocketAddr,
    audience: Audience,
    prefix: P,
) -> Connection<FramedTransport<TcpStream, P>> {
    let client_key = SigningKey::from_bytes(&[0xA1; 32]);
    let t = FramedTransport::new(tcp(addr).await, prefix);
    let mut conn = Connection::connect(t, &client_key, audience, &ConnectConfig::default())
        .await
        .expect("handshake");
    conn.set_verify_budget(ECHO_BUDGET);
    conn
}

/// A's connection over WebSocket.
async fn connect_ws(
    addr: std::net::SocketAddr,
    audience: Audience,
) -> Connection<websocket::WebSocketTransport<TcpStream>> {
    let client_key = SigningKey::from_bytes(&[0xA1; 32]);
    let url = format!("ws://{addr}/");
    let t = websocket::client(tcp(addr).await, url.as_str())
        .await
        .expect("upgrade");
    let mut conn = Connection::connect(t, &client_key, audience, &ConnectConfig::default())
        .await
        .expect("handshake");
    conn.set_verify_budget(ECHO_BUDGET);
    conn
}

/// `iters` round trips, pipelined: A signs and sends while it reads,
/// compares and verifies the echoes.
async fn batch<T: Transport>(
    fixture: &Fixture,
    (tx, rx): &mut Halves<T>,
    start: u64,
    iters: u64,
) -> Duration {
    let began = Instant::now();
    let (sent_tx, mut sent_rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
    let send = async {
        for n in start..start + iters {
            let frame = fixture.frame(n);
            sent_tx.send(frame.clone()).expect("receiver alive");
            tx.feed_bytes(frame).await.expect("send");
            if n % FLUSH_EVERY == 0 {
                tx.flush().await.expect("flush");
            }
        }
        tx.flush().await.expect("flush");
    };
    let receive = async {
        for _ in 0..iters {
            let echo = rx.recv().await.expect("transport").expect("open");
            let sent = sent_rx.recv().await.expect("sent");
            assert_eq!(echo.bytes, sent, "echo altered or reordered");
            black_box(echo.result.expect("A verifies again"));
        }
    };
    tokio::join!(send, receive);
    began.elapsed()
}

fn bench_echo<T: Transport>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &Runtime,
    fixture: &Fixture,
    name: &str,
    mut halves: Halves<T>,
) {
    let mut next = 0u64;
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let d = rt.block_on(batch(fixture, &mut halves, next, iters));
            next += iters;
            d
        });
    });
}

fn echo(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let fixture = Fixture::new();
    let mut group = c.benchmark_group("echo_1KiB_commit");
    group.throughput(Throughput::Elements(1));

    // The crypto of one round trip on one thread: one sign, two
    // verify_strict and two blob checks (BLAKE3 of 1 KiB), no encoding,
    // framing or I/O.
    let mut n = 0u64;
    group.bench_function("crypto_limit", |b| {
        b.iter(|| {
            n += 1;
            let signed = fixture.seal(n);
            for _ in 0..2 {
                let verified = signed.verify_strict().expect("verifies");
                black_box(verified.verify_blob(fixture.blob.clone()).expect("blob"));
            }
        });
    });

    // The honest limit: the same crypto split as the echo splits it, on
    // the echo's two threads at once: A signs, and verifies and checks the
    // echo; B verifies and checks. A frame can leave no sooner than the
    // busier of the two finishes its share, so this is the least time per
    // frame any echo on two threads can take.
    let mut n = 0u64;
    group.bench_function("crypto_limit_2_threads", |b| {
        b.iter_custom(|iters| {
            let start = n;
            n += iters;
            let presealed = fixture.seal(u64::MAX);
            let began = Instant::now();
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    for _ in 0..iters {
                        let verified = presealed.verify_strict().expect("verifies");
                        black_box(verified.verify_blob(fixture.blob.clone()).expect("blob"));
                    }
                });
                for i in start..start + iters {
                    let signed = fixture.seal(i);
                    let verified = signed.verify_strict().expect("verifies");
                    black_box(verified.verify_blob(fixture.blob.clone()).expect("blob"));
                }
            });
            began.elapsed()
        });
    });

    let (addr, audience) = rt.block_on(start_server(Carrier::Bijou64, true));
    let halves = rt.block_on(connect_framed(addr, audience, Bijou64)).split();
    bench_echo(&mut group, &rt, &fixture, "echo_bijou64", halves);

    let (addr, audience) = rt.block_on(start_server(Carrier::Leb128, true));
    let halves = rt.block_on(connect_framed(addr, audience, Leb128)).split();
    bench_echo(&mut group, &rt, &fixture, "echo_leb128", halves);

    let (addr, audience) = rt.block_on(start_server(Carrier::WebSocket, true));
    let halves = rt.block_on(connect_ws(addr, audience)).split();
    bench_echo(&mut group, &rt, &fixture, "echo_websocket", halves);
    group.finish();

    // Opening a connection: TCP connect (+ WebSocket upgrade) + handshake,
    // against the handshake's cryptography and encoding alone.
    let mut group = c.benchmark_group("handshake");
    let client_key = SigningKey::from_bytes(&[0xA1; 32]);
    let server_key = SigningKey::from_bytes(&[0xB0; 32]);
    let responder = Responder::new(HandshakeConfig::default());
    let mut nonce = 0u128;
    group.bench_function("sans_io", |b| {
        b.iter(|| {
            nonce += 1;
            let to = Audience::Known(server_key.peer_id());
            let initiator = Initiator::new(
                &client_key,
                to,
                Now::from_secs(1_700_000_000),
                nonce.to_be_bytes(),
            )
            .expect("challenge");
            let answer = responder.answer(
                &server_key,
                initiator.challenge().clone(),
                Now::from_secs(1_700_000_000),
            );
            black_box(answer.outcome.expect("accepted"));
            black_box(
                initiator
                    .receive(answer.reply.expect("reply"))
                    .expect("verified"),
            )
        });
    });
    let (addr, audience) = rt.block_on(start_server(Carrier::Bijou64, false));
    group.bench_function("tcp_bijou64", |b| {
        b.iter(|| black_box(rt.block_on(connect_framed(addr, audience, Bijou64))));
    });
    let (addr, audience) = rt.block_on(start_server(Carrier::WebSocket, false));
    group.bench_function("websocket", |b| {
        b.iter(|| black_box(rt.block_on(connect_ws(addr, audience))));
    });
    group.finish();
}

/// Echo and first message over iroh (QUIC), against framed TCP with the
/// same u32-BE framing, in the same run.
#[cfg(feature = "iroh")]
mod over_iroh {
    use super::*;
    use bijou_frame::net::transport::iroh::{self as quic, Endpoint, IrohTransport, NodeAddr};

    async fn endpoint() -> Endpoint {
        quic::direct_endpoint("127.0.0.1:0".parse().expect("addr"), None)
            .await
            .expect("bind")
    }

    /// B over iroh: accepts every connection, echoes if `echo`. Returns
    /// its endpoint (keep it), address and audience.
    async fn start_iroh_server(echo: bool) -> (Endpoint, NodeAddr, Audience) {
        let ep = endpoint().await;
        let addr = NodeAddr::of(&ep);
        let server_key = std::sync::Arc::new(SigningKey::from_bytes(&[0xB0; 32]));
        let audience = Audience::Known(server_key.peer_id());
        let responder = Responder::new(HandshakeConfig::default());
        let accepting = ep.clone();
        tokio::spawn(async move {
            while let Some(incoming) = accepting.accept().await {
                let (key, responder) = (server_key.clone(), responder.clone());
                tokio::spawn(async move {
                    let t = quic::accept_incoming(incoming).await.expect("accept");
                    let conn = Connection::accept(t, &*key, &responder, &ConnectConfig::default())
                        .await
                        .expect("hs");
                    if echo {
                        serve_echo(conn).await;
                    }
                });
            }
        });
        (ep, addr, audience)
    }

    async fn connect_iroh(
        ep: &Endpoint,
        addr: &NodeAddr,
        audience: Audience,
    ) -> Connection<IrohTransport> {
        let client_key = SigningKey::from_bytes(&[0xA1; 32]);
        let t = quic::connect(ep, addr).await.expect("connect");
        let mut conn = Connection::connect(t, &client_key, audience, &ConnectConfig::default())
            .await
            .expect("handshake");
        conn.set_verify_budget(ECHO_BUDGET);
        conn
    }

    /// One signed commit sent on `conn` and its echo received and verified.
    async fn first_echo<T: Transport>(fixture: &Fixture, conn: &mut Connection<T>) {
        let frame = fixture.frame(0);
        conn.send_bytes(frame.clone()).await.expect("send");
        let echo = conn.recv().await.expect("transport").expect("open");
        assert_eq!(echo.bytes, frame);
        black_box(echo.result.expect("A verifies"));
    }

    pub fn bench(c: &mut Criterion) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let fixture = Fixture::new();

        let mut group = c.benchmark_group("echo_iroh_1KiB_commit");
        group.throughput(Throughput::Elements(1));
        let (addr, audience) = rt.block_on(start_server(Carrier::U32Be, true));
        let halves = rt.block_on(connect_framed(addr, audience, U32Be)).split();
        bench_echo(&mut group, &rt, &fixture, "echo_tcp_u32be", halves);
        let (_server_ep, addr, audience) = rt.block_on(start_iroh_server(true));
        let client_ep = rt.block_on(endpoint());
        let halves = rt
            .block_on(connect_iroh(&client_ep, &addr, audience))
            .split();
        bench_echo(&mut group, &rt, &fixture, "echo_iroh", halves);
        group.finish();

        // Time to the first verified message on a fresh connection:
        // connect (TCP, or QUIC + TLS), the Subduction handshake, one
        // signed commit echoed and verified.
        let mut group = c.benchmark_group("first_verified_message");
        let (addr, audience) = rt.block_on(start_server(Carrier::U32Be, true));
        group.bench_function("tcp_u32be", |b| {
            b.iter(|| {
                rt.block_on(async {
                    let mut conn = connect_framed(addr, audience, U32Be).await;
                    first_echo(&fixture, &mut conn).await;
                })
            });
        });
        let (_server_ep, addr, audience) = rt.block_on(start_iroh_server(true));
        group.bench_function("iroh", |b| {
            b.iter(|| {
                rt.block_on(async {
                    let mut conn = connect_iroh(&client_ep, &addr, audience).await;
                    first_echo(&fixture, &mut conn).await;
                })
            });
        });
        group.finish();
        rt.block_on(client_ep.close());
    }
}

#[cfg(feature = "iroh")]
criterion_group!(benches, echo, over_iroh::bench);
#[cfg(not(feature = "iroh"))]
criterion_group!(benches, echo);
criterion_main!(benches);
