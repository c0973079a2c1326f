//! Echo throughput over loopback TCP for 1 KiB signed commits, with the
//! bijou64 and LEB128 prefixes, against the crypto limit measured in the
//! same run.
//!
//! Per round trip the echo does: A signs a LooseCommit (1 KiB blob), B
//! verifies it (`verify_strict` + scope + blob digest) and echoes the frame
//! bytes, A compares the echo and verifies it again. The crypto limit is
//! exactly that cryptography with no I/O: one `sign` and two
//! `verify_strict` plus two blob checks, back to back on one thread. The
//! echo pipelines frames and runs A and B on two runtime threads, so it can
//! approach (or pass) the single-threaded limit only if framing and TCP
//! cost little.
//!
//! ```text
//! cargo bench -p bijou-frame-benches --bench echo -- --warm-up-time 1 --measurement-time 3
//! ```
//! Report: time per frame (median), and crypto_limit / echo as the ratio.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bijou_frame::framing::connection::{ConnectionReceiver, ConnectionSender};
use bijou_frame::framing::handshake::{HandshakeConfig, Responder};
use bijou_frame::framing::message::{
    Audience, BlobMessage, CommitId, LooseCommit, Message, RemoteHeads, SedimentreeId, SignedItem,
    SyncMessage,
};
use bijou_frame::framing::prefix::{Bijou64, Leb128, LengthPrefix};
use bijou_frame::framing::Connection;
use bijou_frame::prelude::Wire;
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

/// Starts an echo server (B) and connects A; returns A's halves.
fn connect<P: LengthPrefix>(
    rt: &Runtime,
) -> (
    ConnectionSender<TcpStream, P>,
    ConnectionReceiver<TcpStream, P>,
) {
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server_key = SigningKey::from_bytes(&[0xB0; 32]);
        let server_id = server_key.peer_id();
        tokio::spawn(async move {
            let responder = Responder::new(HandshakeConfig::default());
            let (stream, _) = listener.accept().await.expect("accept");
            stream.set_nodelay(true).expect("nodelay");
            let conn = Connection::accept(stream, P::default(), &server_key, &responder)
                .await
                .expect("handshake");
            let (mut tx, mut rx) = conn.split();
            let (queue, mut frames) = tokio::sync::mpsc::channel::<Bytes>(1024);
            tokio::spawn(async move {
                while let Some(frame) = frames.recv().await {
                    tx.feed_frame(frame).await.expect("echo");
                    while let Ok(more) = frames.try_recv() {
                        tx.feed_frame(more).await.expect("echo");
                    }
                    tx.flush().await.expect("flush");
                }
            });
            while let Ok(Some(received)) = rx.recv().await {
                received.result.expect("B verifies");
                if queue.send(received.frame).await.is_err() {
                    break;
                }
            }
        });
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let client_key = SigningKey::from_bytes(&[0xA1; 32]);
        Connection::connect(
            stream,
            P::default(),
            &client_key,
            Audience::Known(server_id),
            &HandshakeConfig::default(),
        )
        .await
        .expect("handshake")
        .split()
    })
}

/// `iters` round trips, pipelined: A signs and sends while it reads,
/// compares and verifies the echoes.
async fn batch<P: LengthPrefix>(
    fixture: &Fixture,
    tx: &mut ConnectionSender<TcpStream, P>,
    rx: &mut ConnectionReceiver<TcpStream, P>,
    start: u64,
    iters: u64,
) -> Duration {
    let began = Instant::now();
    let (sent_tx, mut sent_rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
    let send = async {
        for n in start..start + iters {
            let frame = fixture.frame(n);
            sent_tx.send(frame.clone()).expect("receiver alive");
            tx.feed_frame(frame).await.expect("send");
            if n % FLUSH_EVERY == 0 {
                tx.flush().await.expect("flush");
            }
        }
        tx.flush().await.expect("flush");
    };
    let receive = async {
        for _ in 0..iters {
            let echo = rx.recv().await.expect("framing").expect("open");
            let sent = sent_rx.recv().await.expect("sent");
            assert_eq!(echo.frame, sent, "echo altered or reordered");
            black_box(echo.result.expect("A verifies again"));
        }
    };
    tokio::join!(send, receive);
    began.elapsed()
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

    // The crypto limit: one sign, two verify_strict and two blob checks
    // (BLAKE3 of 1 KiB), no encoding, framing or I/O.
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

    let (mut tx, mut rx) = connect::<Bijou64>(&rt);
    let mut next = 0u64;
    group.bench_function("echo_bijou64", |b| {
        b.iter_custom(|iters| {
            let d = rt.block_on(batch(&fixture, &mut tx, &mut rx, next, iters));
            next += iters;
            d
        });
    });

    let (mut tx, mut rx) = connect::<Leb128>(&rt);
    let mut next = 0u64;
    group.bench_function("echo_leb128", |b| {
        b.iter_custom(|iters| {
            let d = rt.block_on(batch(&fixture, &mut tx, &mut rx, next, iters));
            next += iters;
            d
        });
    });
    group.finish();
}

criterion_group!(benches, echo);
criterion_main!(benches);
