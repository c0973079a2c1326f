//! What a peer's large batch response costs the receiver, and whether it
//! can stall other connections: the issue-20 figures.
//!
//! - `session/poll`: receiving one 8,192-commit `BatchSyncResponse` through
//!   a `Connection`, polled by hand: the longest single poll (`max_poll`,
//!   the poll that decodes the frame excluded) and the decoding poll
//!   (`decode_poll`), in this thread's CPU time (`max_poll_cpu`) and in wall
//!   time (`max_poll_wall`, which includes preemption on a busy machine).
//!   Reported as criterion's time per iteration, which here *is* the
//!   longest poll (an `iter_custom` measurement).
//! - `session/verify`: the same message from first byte to last item
//!   delivered (`connection`) against sequential `verify_strict` of the same
//!   items plus their blob checks (`verify_strict`), in the same run.
//! - `session/flood`: an honest peer's round trip (median and p99 of 100,
//!   as `rtt_p50`/`rtt_p99`) on a 2-worker runtime while 4 authenticated
//!   peers send 2,048-commit batch responses as fast as their verify budget
//!   lets them, over loopback TCP.
//! - `session/handshakes`: challenges answered by one `Responder` (one
//!   replay cache) from one thread and from two: time per 2,048 handshakes.
//! - `session/aggregate`: verified commits per second across 8 connections
//!   on a 2-worker runtime (`connections`), against `verify_strict` on one
//!   thread (`single_core_strict`): time per commit.
//!
//! ```text
//! cargo bench -p bijou-frame-benches --bench session
//! ```

use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bijou_frame::framing::prefix::Bijou64;
use bijou_frame::net::handshake::ConnectConfig;
use bijou_frame::net::transport::{FramedTransport, LengthChecked};
use bijou_frame::net::Connection;
use bijou_frame::proto::handshake::{HandshakeConfig, Initiator, Responder};
use bijou_frame::proto::message::{
    Audience, BatchSyncResponse, HeadsUpdate, LooseCommit, Message, RemoteHeads, SedimentreeId,
    SignedItem, SyncMessage, SyncResult,
};
use bijou_frame::proto::session::SessionConfig;
use bijou_frame::proto::time::Now;
use bijou_frame::proto::verify_budget::VerifyBudget;
use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity, PeerId};
use bijou_test_support::echo;
use bijou_test_support::messages::{batch_response, frame};
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use futures::StreamExt;
use tokio::net::{TcpListener, TcpStream};

const TREE: SedimentreeId = SedimentreeId::new([0x42; 32]);

fn response(n: u32) -> (Bytes, Vec<SignedItem<LooseCommit>>) {
    let msg = batch_response(TREE, n);
    let SyncMessage::BatchSyncResponse(BatchSyncResponse {
        result: SyncResult::Ok(diff),
        ..
    }) = &msg
    else {
        unreachable!("batch_response makes an Ok response");
    };
    let commits = diff.commits().to_vec();
    (frame(&msg), commits)
}

type Channel = LengthChecked<
    futures::channel::mpsc::UnboundedReceiver<Result<Bytes, std::io::Error>>,
    futures::sink::Drain<Bytes>,
>;

/// A connection whose peer is a channel: the handshake driven by hand.
fn channel_connection(
    budget: VerifyBudget,
) -> (
    Connection<Channel>,
    futures::channel::mpsc::UnboundedSender<Result<Bytes, std::io::Error>>,
) {
    let (alice, bob) = (
        SigningKey::from_bytes(&[1; 32]),
        SigningKey::from_bytes(&[2; 32]),
    );
    let now = 1_800_000_000;
    let initiator = Initiator::new(
        &alice,
        Audience::Known(bob.peer_id()),
        Now::from_secs(now),
        [7; 16],
    )
    .expect("challenge");
    let answer = Responder::new(HandshakeConfig::default()).answer(
        &bob,
        initiator.challenge().clone(),
        Now::from_secs(now),
    );
    let at_bob = answer.outcome.expect("accepted");
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let mut conn = Connection::established(
        LengthChecked::new(rx, futures::sink::drain()),
        bob.peer_id(),
        at_bob,
        SessionConfig::new([2; 32]),
    );
    conn.set_verify_budget(budget);
    (conn, tx)
}

/// The polls of one receive: the longest after the first (decoding) one,
/// in wall time and in this thread's CPU time, and the first one's wall
/// time.
struct Polls {
    longest_wall: Duration,
    longest_cpu: Duration,
    /// Wall time minus the time this thread waited in the run queue
    /// (`/proc/thread-self/schedstat`): what a poll holds its thread for,
    /// preemption aside. Zero where schedstat is missing.
    longest_running: Duration,
    decode_wall: Duration,
    count: usize,
}

/// This thread's run-queue wait so far (the second field of
/// `/proc/thread-self/schedstat`), if the kernel reports it.
fn run_queue_wait() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let waited = stat.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(waited))
}

/// Receives `bytes` through a fresh connection polled by hand.
fn receive_timing_polls(bytes: &Bytes, items: usize) -> Polls {
    let (mut conn, tx) = channel_connection(VerifyBudget::new(u32::MAX, u32::MAX));
    tx.unbounded_send(Ok(bytes.clone())).expect("queued");
    let mut cx = Context::from_waker(Waker::noop());
    let mut polls = Polls {
        longest_wall: Duration::ZERO,
        longest_cpu: Duration::ZERO,
        longest_running: Duration::ZERO,
        decode_wall: Duration::ZERO,
        count: 0,
    };
    loop {
        let waited = run_queue_wait();
        let (wall, cpu) = (Instant::now(), cpu_time::ThreadTime::now());
        let poll = conn.poll_next_unpin(&mut cx);
        let (wall, cpu) = (wall.elapsed(), cpu.elapsed());
        let queued = match (waited, run_queue_wait()) {
            (Some(before), Some(after)) => after.saturating_sub(before),
            _ => wall,
        };
        if polls.count == 0 {
            polls.decode_wall = wall;
        } else {
            polls.longest_wall = polls.longest_wall.max(wall);
            polls.longest_cpu = polls.longest_cpu.max(cpu);
            polls.longest_running = polls.longest_running.max(wall.saturating_sub(queued));
        }
        polls.count += 1;
        match poll {
            Poll::Ready(Some(Ok(received))) => {
                let verified = received.result.expect("ok").into_sync().expect("sync");
                assert_eq!(verified.items.len(), items);
                return polls;
            }
            Poll::Ready(other) => panic!("{other:?}"),
            Poll::Pending => {}
        }
    }
}

fn poll_bound(c: &mut Criterion) {
    let (bytes, _) = response(8192);
    // Ten receives, each poll's wall time less its run-queue wait: the
    // bound must hold in every one, not at the median.
    let mut worst = Duration::ZERO;
    for run in 1..=10 {
        let polls = receive_timing_polls(&bytes, 8192);
        worst = worst.max(polls.longest_running);
        println!(
            "session/poll run {run}: {} polls for 8,192 commits; longest {:?} wall, {:?} wall less run-queue wait, {:?} CPU; decode poll {:?}",
            polls.count, polls.longest_wall, polls.longest_running, polls.longest_cpu, polls.decode_wall
        );
    }
    println!("session/poll: the longest poll of ten runs, less run-queue wait: {worst:?}");
    let mut group = c.benchmark_group("session/poll");
    group.sample_size(10);
    group.bench_function("max_poll_cpu/8192", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| receive_timing_polls(&bytes, 8192).longest_cpu)
                .sum()
        })
    });
    group.bench_function("max_poll_wall/8192", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| receive_timing_polls(&bytes, 8192).longest_wall)
                .sum()
        })
    });
    group.bench_function("decode_poll/8192", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| receive_timing_polls(&bytes, 8192).decode_wall)
                .sum()
        })
    });
    group.finish();
}

fn verify_throughput(c: &mut Criterion) {
    let (bytes, commits) = response(8192);
    let mut group = c.benchmark_group("session/verify");
    group.sample_size(10);
    group.throughput(Throughput::Elements(8192));
    group.bench_function("connection/8192", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (mut conn, tx) = channel_connection(VerifyBudget::new(u32::MAX, u32::MAX));
                let started = Instant::now();
                tx.unbounded_send(Ok(bytes.clone())).expect("queued");
                let received = futures::executor::block_on(conn.next())
                    .expect("one")
                    .expect("ok");
                total += started.elapsed();
                let verified = received.result.expect("ok").into_sync().expect("sync");
                assert_eq!(verified.items.len(), 8192);
            }
            total
        })
    });
    group.bench_function("verify_strict/8192", |b| {
        b.iter(|| {
            for item in &commits {
                let verified = item.signed().verify_strict().expect("valid");
                verified.verify_blob(item.blob().clone()).expect("blob");
            }
        })
    });
    group.finish();
}

/// One flooding or honest client against the server.
async fn client(
    addr: std::net::SocketAddr,
    server: PeerId,
    key: u8,
) -> Connection<FramedTransport<TcpStream, Bijou64>> {
    echo::connect(addr, &SigningKey::from_bytes(&[key; 32]), server).await
}

/// A server on a 2-worker runtime: every connection's messages are
/// received (verified); those of `honest` are echoed back.
async fn serve(listener: TcpListener, server_key: Arc<SigningKey>, honest: PeerId) {
    let responder = Responder::new(HandshakeConfig::default());
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            return;
        };
        let _ = tcp.set_nodelay(true);
        let (key, responder) = (server_key.clone(), responder.clone());
        tokio::spawn(async move {
            let Ok(mut conn) = Connection::accept(
                FramedTransport::new(tcp, Bijou64),
                &*key,
                &responder,
                &ConnectConfig::default(),
            )
            .await
            else {
                return;
            };
            let echo = conn.remote_peer() == honest;
            while let Ok(Some(received)) = conn.recv().await {
                if echo && conn.send_bytes(received.bytes).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// The honest peer's round trips (sorted) while `flooders` peers send
/// `flood` as fast as they can.
fn flood_rtts(flood: &Bytes, flooders: u8, rounds: usize) -> Vec<Duration> {
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let server_key = Arc::new(SigningKey::from_bytes(&[0xB0; 32]));
    let server_id = server_key.peer_id();
    let honest_key = 0xC0;
    let honest_id = SigningKey::from_bytes(&[honest_key; 32]).peer_id();
    let listener = server_rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    server_rt.spawn(serve(listener, server_key, honest_id));
    // The clients run on a runtime of their own (one thread), so the
    // server's two workers do nothing but serve.
    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rtts = client_rt.block_on(async {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut floods = Vec::new();
        for f in 0..flooders {
            let mut conn = client(addr, server_id, 0x10 + f).await;
            let (flood, stop) = (flood.clone(), stop.clone());
            floods.push(tokio::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if conn.send_bytes(flood.clone()).await.is_err() {
                        return;
                    }
                }
            }));
        }
        // Let the floods fill the server's budgets and queues.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut honest = client(addr, server_id, honest_key).await;
        let ping = Message::Sync(SyncMessage::HeadsUpdate(HeadsUpdate {
            id: TREE,
            heads: RemoteHeads::default(),
        }));
        let mut rtts = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let started = Instant::now();
            honest.send(&ping).await.expect("send");
            honest.recv().await.expect("recv").expect("echo");
            rtts.push(started.elapsed());
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for flood in floods {
            flood.abort();
        }
        rtts
    });
    server_rt.shutdown_timeout(Duration::from_millis(100));
    let mut rtts = rtts;
    rtts.sort();
    rtts
}

fn flood(c: &mut Criterion) {
    let (bytes, _) = response(2048);
    let mut group = c.benchmark_group("session/flood");
    group.sample_size(10);
    for (name, quantile) in [("rtt_p50", 0.50), ("rtt_p99", 0.99)] {
        group.bench_function(BenchmarkId::new(name, "4x2048"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let rtts = flood_rtts(&bytes, 4, 100);
                        let at = ((rtts.len() as f64 * quantile) as usize).min(rtts.len() - 1);
                        rtts[at]
                    })
                    .sum()
            })
        });
    }
    group.finish();
}

/// Verified commits across `connections` channel connections on a
/// 2-worker runtime, each receiving `per_connection` copies of `bytes`.
fn aggregate_run(bytes: &Bytes, connections: usize, per_connection: usize) -> Duration {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..connections {
            let (mut conn, tx) = channel_connection(VerifyBudget::new(u32::MAX, u32::MAX));
            for _ in 0..per_connection {
                tx.unbounded_send(Ok(bytes.clone())).expect("queued");
            }
            drop(tx);
            tasks.push(tokio::spawn(async move {
                let mut items = 0;
                while let Some(Ok(received)) = conn.next().await {
                    items += received
                        .result
                        .expect("ok")
                        .into_sync()
                        .expect("sync")
                        .items
                        .len();
                }
                items
            }));
        }
        for task in tasks {
            task.await.expect("task");
        }
    });
    started.elapsed()
}

fn aggregate(c: &mut Criterion) {
    let (bytes, commits) = response(1024);
    let mut group = c.benchmark_group("session/aggregate");
    group.sample_size(10);
    // 8 connections x 2 messages x 1,024 commits.
    group.throughput(Throughput::Elements(8 * 2 * 1024));
    group.bench_function("connections/8x2x1024", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| aggregate_run(&bytes, 8, 2)).sum())
    });
    group.bench_function("single_core_strict/8x2x1024", |b| {
        b.iter(|| {
            for _ in 0..16 {
                for item in &commits {
                    let verified = item.signed().verify_strict().expect("valid");
                    verified.verify_blob(item.blob().clone()).expect("blob");
                }
            }
        })
    });
    group.finish();
}

/// Challenges from distinct keys with fresh nonces, signed once.
fn challenges(n: usize, server: PeerId) -> Vec<Bytes> {
    (0..n)
        .map(|i| {
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&(i as u64 + 1).to_be_bytes());
            let key = SigningKey::from_bytes(&seed);
            let mut nonce = [0u8; 16];
            nonce[..8].copy_from_slice(&(i as u64).to_be_bytes());
            Initiator::new(
                &key,
                Audience::Known(server),
                Now::from_secs(1_800_000_000),
                nonce,
            )
            .expect("challenge")
            .challenge()
            .clone()
        })
        .collect()
}

/// Handshakes answered per second by one responder (shared replay cache)
/// from one thread and from two.
fn handshakes(c: &mut Criterion) {
    let server = SigningKey::from_bytes(&[0xB0; 32]);
    let all = challenges(2048, server.peer_id());
    let mut group = c.benchmark_group("session/handshakes");
    group.sample_size(10);
    group.throughput(Throughput::Elements(all.len() as u64));
    for threads in [1usize, 2] {
        group.bench_function(BenchmarkId::new("threads", threads), |b| {
            b.iter_batched(
                || Responder::new(HandshakeConfig::default()),
                |responder| {
                    std::thread::scope(|scope| {
                        for part in all.chunks(all.len() / threads) {
                            let (responder, server) = (&responder, &server);
                            scope.spawn(move || {
                                for challenge in part {
                                    let answer = responder.answer(
                                        server,
                                        challenge.clone(),
                                        Now::from_secs(1_800_000_000),
                                    );
                                    assert!(answer.outcome.is_ok());
                                }
                            });
                        }
                    });
                },
                criterion::BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = poll_bound, verify_throughput, aggregate, handshakes, flood
}
criterion_main!(benches);
