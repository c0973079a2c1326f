//! Two peers over real TCP: a handshake, then 1000 signed commits echoed
//! byte for byte and verified on both sides.
//!
//! ```text
//! cargo run --release --example echo
//! ```
//!
//! Peer B listens on 127.0.0.1 (an ephemeral port). Peer A connects, and
//! the two run the mutual handshake (A addresses B's key). A sends 1000
//! `LooseCommit` messages, each with a random blob and its BLAKE3 digest,
//! signed with A's key, up to 8 in flight. B verifies every message
//! (`verify_strict`, the tree scope, the blob digest) and echoes its bytes
//! back exactly as received. A checks each echo is the frame it sent, in
//! order, and verifies it again. The exit code is 1 if any frame is lost,
//! reordered, altered or rejected.
//!
//! The load test with more peers, windows, prefixes, WebSocket, captures
//! and a two-terminal mode is `bijou echo` (`cargo run -p bijou-cli --
//! echo --help`).

use std::collections::VecDeque;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bijou_frame::codec::Wire;
use bijou_frame::framing::prefix::Bijou64;
use bijou_frame::net::handshake::ConnectConfig;
use bijou_frame::net::transport::FramedTransport;
use bijou_frame::net::Connection;
use bijou_frame::proto::handshake::{HandshakeConfig, Responder};
use bijou_frame::proto::message::{Audience, CommitId, SedimentreeId, SyncMessage};
use bijou_frame::signing::Identity;
use bijou_frame::signing::{ed25519_dalek::SigningKey, key_file, Blob};
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

type Error = Box<dyn std::error::Error + Send + Sync>;

const FRAMES: u64 = 1000;
const WINDOW: usize = 8;
/// How long A waits for any one echo before giving up.
const ECHO_TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<bool, Error> {
    let (key_a, key_b) = (key_file::generate()?, key_file::generate()?);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let seed: u64 = rand::random();
    println!(
        "bijou-frame echo: 1 peer(s) x {FRAMES} frames over TCP {addr}, prefix bijou64, blobs mix (100 B-2 KiB, some 2-16 KiB, 1% 64 KiB), seed {seed}"
    );
    let server = tokio::spawn(echo_server(listener, key_b.clone()));

    // Peer A: connect and authenticate B by its key.
    let started = Instant::now();
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let audience = Audience::Known(key_b.peer_id());
    let conn = Connection::connect(
        FramedTransport::new(tcp, Bijou64),
        &key_a,
        audience,
        &ConnectConfig::default(),
    )
    .await?;
    println!(
        "  handshake    ok: A {}.. <-> B {}.. in {:.2} ms",
        short(&key_a),
        short(&key_b),
        started.elapsed().as_secs_f64() * 1e3
    );

    // A sends from one task, and checks echoes in this one.
    let (mut tx, mut rx) = conn.split();
    let window = Arc::new(Semaphore::new(WINDOW));
    let (sent_tx, mut sent_rx) = mpsc::unbounded_channel::<(Bytes, Instant)>();
    let send_window = Arc::clone(&window);
    let sender = tokio::spawn(async move {
        let mut rng = StdRng::seed_from_u64(seed);
        let tree = SedimentreeId::new(rng.random());
        let mut parent = None;
        for _ in 0..FRAMES {
            let mut blob = vec![0u8; blob_size(&mut rng)];
            rng.fill_bytes(&mut blob);
            let head = CommitId::new(rng.random());
            let msg = SyncMessage::loose_commit(&key_a, tree, head, parent, Blob::new(blob))?;
            parent = Some(head);
            let frame = bijou_frame::proto::message::Message::Sync(msg).encode()?;
            send_window.acquire().await?.forget(); // returned when the echo arrives
            if sent_tx.send((frame.clone(), Instant::now())).is_err() {
                break;
            }
            tx.send_bytes(frame).await?;
        }
        Ok::<_, Error>(tx)
    });

    let mut expected: VecDeque<(Bytes, Instant)> = VecDeque::new();
    let (mut echoed, mut verified, mut rejected, mut altered, mut reordered) = (0, 0, 0, 0, 0);
    let mut bytes = 0u64;
    let mut rtts = Vec::with_capacity(FRAMES as usize);
    while echoed + altered + reordered < FRAMES {
        let Ok(Ok(Some(echo))) = tokio::time::timeout(ECHO_TIMEOUT, rx.recv()).await else {
            break; // timed out, failed or closed: the rest counts as lost
        };
        let arrived = Instant::now();
        while let Ok(next) = sent_rx.try_recv() {
            expected.push_back(next);
        }
        window.add_permits(1);
        match expected.iter().position(|(frame, _)| *frame == echo.bytes) {
            Some(0) => {
                let (frame, at) = expected.pop_front().ok_or("an echo of nothing")?;
                echoed += 1;
                bytes += frame.len() as u64;
                rtts.push(arrived - at);
                match echo.result {
                    Ok(_) => verified += 1,
                    Err(_) => rejected += 1,
                }
            }
            Some(later) => {
                reordered += 1;
                expected.remove(later);
            }
            None => altered += 1,
        }
    }
    let elapsed = started.elapsed();
    let mut tx = sender.await??;
    tx.close().await?; // B's stream ends; B closes its side
    let b_rejected = server.await??;

    let secs = elapsed.as_secs_f64();
    rtts.sort_unstable();
    let pct = |q: f64| {
        let i = ((rtts.len().saturating_sub(1)) as f64 * q).round() as usize;
        rtts.get(i).map_or("-".to_owned(), |d| {
            format!("{:.2} ms", d.as_secs_f64() * 1e3)
        })
    };
    let lost = FRAMES - echoed - altered - reordered;
    let rejected = rejected + b_rejected;
    println!("  frames       {echoed}/{FRAMES} echoed byte for byte, {verified} verified by A again (and by B first)");
    println!(
        "  bytes        {:.2} MB each way ({:.0} B per frame on average)",
        bytes as f64 / 1e6,
        bytes as f64 / echoed.max(1) as f64
    );
    println!(
        "  throughput   {:.0} frames/s, {:.1} MB/s each way in {secs:.2} s",
        echoed as f64 / secs,
        bytes as f64 / 1e6 / secs
    );
    println!(
        "  round trip   p50 {}, p99 {} (up to {WINDOW} frames in flight per peer)",
        pct(0.50),
        pct(0.99)
    );
    println!(
        "  problems     rejected {rejected}, lost {lost}, altered {altered}, reordered {reordered}"
    );
    let ok = echoed == FRAMES && verified == FRAMES && rejected == 0;
    println!("{}", if ok { "OK" } else { "FAILED" });
    Ok(ok)
}

/// Peer B: accepts one connection, verifies every message and echoes the
/// verified ones byte for byte; returns how many it rejected.
async fn echo_server(listener: TcpListener, key: SigningKey) -> Result<u64, Error> {
    let (tcp, _) = listener.accept().await?;
    tcp.set_nodelay(true)?;
    let responder = Responder::new(HandshakeConfig::default());
    let mut conn = Connection::accept(
        FramedTransport::new(tcp, Bijou64),
        &key,
        &responder,
        &ConnectConfig::default(),
    )
    .await?;
    let mut rejected = 0;
    while let Some(received) = conn.recv().await? {
        match received.result {
            Ok(_) => conn.send_bytes(received.bytes).await?,
            Err(why) => {
                eprintln!("B rejected a frame: {why}");
                rejected += 1;
            }
        }
    }
    conn.close().await?;
    Ok(rejected)
}

/// 94% 100 B-2 KiB, 5% 2-16 KiB, 1% 64 KiB.
fn blob_size(rng: &mut StdRng) -> usize {
    match rng.random_range(0..100u32) {
        0 => 64 * 1024,
        1..=5 => rng.random_range(2049..=16 * 1024),
        _ => rng.random_range(100..=2048),
    }
}

fn short(key: &SigningKey) -> String {
    key.peer_id().to_string().chars().take(8).collect()
}
