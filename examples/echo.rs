//! Two peers over real TCP: handshake, then signed commits echoed byte for
//! byte.
//!
//! ```text
//! cargo run --release --example echo                        # both peers, 127.0.0.1:<ephemeral>
//! cargo run --release --example echo -- --listen 127.0.0.1:7878   # terminal 1: echo server (B)
//! cargo run --release --example echo -- --connect 127.0.0.1:7878  # terminal 2: sender (A)
//! ```
//!
//! Peer A (and with `--peers N`, N such peers) sends `--count` LooseCommit
//! messages, each with a random blob and its BLAKE3 digest, signed with a
//! key generated for this run. Peer B verifies every signature and blob
//! (`verify_strict`, the scope check, the blob digest) and echoes each frame
//! back exactly as it received it. A checks that every echo is identical to
//! what it sent, in order, and verifies it again. The exit code is non-zero
//! if any frame is lost, reordered, altered or rejected.
//!
//! `--capture FILE` writes the raw byte stream peer A (the first peer)
//! sent, handshake included: length prefixes and frames exactly as they
//! went on the wire. `cargo run --example inspect -- FILE` decodes it.
//!
//! In two-terminal mode the challenge is addressed with
//! `Audience::Discover(BLAKE3("bijou-frame echo"))`, so A needs no key from
//! B, or, with `--server-id <the id B printed>`, to B's key
//! (`Audience::Known`), which A then checks the response against.
//! In-process, A always addresses B's key.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bijou_frame::net::connection::{ConnectionReceiver, Rejected};
use bijou_frame::net::handshake::{HandshakeConfig, Responder};
use bijou_frame::net::message::{
    Audience, BlobMessage, CommitId, LooseCommit, Message, RemoteHeads, SedimentreeId, SignedItem,
    SyncMessage,
};
use bijou_frame::net::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_frame::net::transport::{websocket, FramedTransport, Transport};
use bijou_frame::net::Connection;
use bijou_frame::prelude::Wire;
use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Identity, PeerId, Signed};
use bytes::Bytes;
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

/// Echo signed commits between two peers over TCP.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Only run the echo server (peer B), listening on ADDR.
    #[arg(long, value_name = "ADDR", conflicts_with = "connect")]
    listen: Option<SocketAddr>,
    /// Only run the sender(s) (peer A), against an echo server at ADDR.
    #[arg(long, value_name = "ADDR")]
    connect: Option<SocketAddr>,
    /// With --connect: the server's peer id (64 hex digits, printed by
    /// --listen). The challenge is then addressed to that key and the
    /// response must be signed by it; without it, any server offering the
    /// echo discovery id is accepted.
    #[arg(long, value_name = "PEER_ID", requires = "connect")]
    server_id: Option<PeerId>,
    /// Frames each sending peer sends.
    #[arg(long, default_value_t = 1000)]
    count: u64,
    /// Blob size in bytes, or `mix`: 94% 100 B-2 KiB, 5% 2-16 KiB, 1% 64 KiB.
    #[arg(long, default_value = "mix")]
    blob_size: BlobSize,
    /// Length prefix of the frames (with `--transport tcp`).
    #[arg(long, value_enum, default_value_t = PrefixArg::Bijou64)]
    prefix: PrefixArg,
    /// How messages travel over the TCP connection: `tcp`, behind a length
    /// prefix, or `ws`, one binary WebSocket message each (no prefix; as
    /// Subduction's servers speak).
    #[arg(long, value_enum, default_value_t = TransportArg::Tcp)]
    transport: TransportArg,
    /// Concurrent sending peers against the one echo server.
    #[arg(long, default_value_t = 1)]
    peers: u32,
    /// Frames each sender keeps in flight (more adds queueing to the
    /// round trip; fewer leaves the two peers idle in turn).
    #[arg(long, default_value_t = 8)]
    window: u32,
    /// Write the bytes the first sender put on the wire to FILE.
    #[arg(long, value_name = "FILE")]
    capture: Option<PathBuf>,
    /// Seed for blob contents and sizes (random if not given).
    #[arg(long)]
    seed: Option<u64>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TransportArg {
    /// Length-prefixed frames over TCP (default).
    Tcp,
    /// WebSocket binary messages over TCP.
    Ws,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PrefixArg {
    /// bijou64 (default).
    Bijou64,
    /// Canonical LEB128.
    Leb128,
    /// 4-byte big-endian (Subduction's QUIC framing).
    U32,
}

#[derive(Debug, Clone, Copy)]
enum BlobSize {
    Mix,
    Fixed(usize),
}

impl std::str::FromStr for BlobSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "mix" {
            return Ok(Self::Mix);
        }
        s.parse()
            .map(Self::Fixed)
            .map_err(|_| format!("expected `mix` or a size in bytes, got `{s}`"))
    }
}

impl BlobSize {
    fn sample(self, rng: &mut StdRng) -> usize {
        match self {
            Self::Fixed(n) => n,
            Self::Mix => match rng.random_range(0..100u32) {
                0 => 64 * 1024,
                1..=5 => rng.random_range(2049..=16 * 1024),
                _ => rng.random_range(100..=2048),
            },
        }
    }
}

/// The discovery id both sides use in two-terminal mode.
fn discovery_id() -> [u8; 32] {
    *blake3::hash(b"bijou-frame echo").as_bytes()
}

fn new_key() -> SigningKey {
    SigningKey::from_bytes(&rand::random())
}

fn short(peer: PeerId) -> String {
    peer.to_string().chars().take(8).collect()
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match args.prefix {
            PrefixArg::Bijou64 => run::<Bijou64>(&args).await,
            PrefixArg::Leb128 => run::<Leb128>(&args).await,
            PrefixArg::U32 => run::<U32Be>(&args).await,
        }
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

type AnyError = Box<dyn std::error::Error + Send + Sync>;

async fn run<P: LengthPrefix>(args: &Args) -> Result<bool, AnyError> {
    let bound = Duration::from_secs(args.timeout);
    if let Some(addr) = args.listen {
        let listener = TcpListener::bind(addr).await?;
        let server = Server::new(new_key());
        println!(
            "echo server B {} listening on {} ({}); Ctrl-C to stop",
            server.key.peer_id(),
            listener.local_addr()?,
            transport_name::<P>(args.transport)
        );
        Arc::new(server)
            .serve::<P>(listener, args.transport, true)
            .await;
        return Ok(true);
    }
    let (addr, server) = match args.connect {
        Some(addr) => (addr, None),
        None => {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            let addr = listener.local_addr()?;
            let server = Arc::new(Server::new(new_key()));
            let serving = Arc::clone(&server);
            let transport = args.transport;
            tokio::spawn(async move { serving.serve::<P>(listener, transport, false).await });
            (addr, Some(server))
        }
    };
    let audience = match (&server, args.server_id) {
        (Some(s), _) => Audience::Known(s.key.peer_id()),
        (None, Some(id)) => Audience::Known(id),
        (None, None) => Audience::Discover(discovery_id()),
    };
    let seed = args.seed.unwrap_or_else(rand::random);
    if args.capture.is_some() && args.transport == TransportArg::Ws {
        return Err("--capture records length-prefixed frames: use it with --transport tcp".into());
    }
    println!(
        "bijou-frame echo: {} peer(s) x {} frames over TCP {addr}, {}, blobs {}, seed {seed}",
        args.peers,
        args.count,
        transport_name::<P>(args.transport),
        match args.blob_size {
            BlobSize::Mix => "mix (100 B-2 KiB, some 2-16 KiB, 1% 64 KiB)".to_owned(),
            BlobSize::Fixed(n) => format!("{n} B"),
        }
    );

    let total = args.count.saturating_mul(u64::from(args.peers));
    let bar = progress_bar(total);
    let started = Instant::now();
    let mut clients = Vec::new();
    for i in 0..args.peers {
        let job = ClientJob {
            addr,
            transport: args.transport,
            audience,
            count: args.count,
            blob_size: args.blob_size,
            window: args.window.max(1),
            seed: seed.wrapping_add(u64::from(i)),
            capture: i == 0 && args.capture.is_some(),
            bar: bar.clone(),
        };
        clients.push(tokio::spawn(client::<P>(job)));
    }
    let mut report = Report {
        window: args.window.max(1),
        ..Report::default()
    };
    let mut captured = None;
    let deadline = tokio::time::Instant::now() + bound;
    for handle in clients {
        match tokio::time::timeout_at(deadline, handle).await {
            Err(_) => {
                report.errors.push(format!("timed out after {bound:?}"));
                break;
            }
            Ok(Err(join)) => report.errors.push(format!("client task failed: {join}")),
            Ok(Ok(Err(e))) => report.errors.push(format!("{e}")),
            Ok(Ok(Ok(outcome))) => {
                if outcome.capture.is_some() {
                    captured = outcome.capture.clone();
                }
                report.add(outcome);
            }
        }
    }
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    if let (Some(path), Some(bytes)) = (&args.capture, captured) {
        std::fs::write(path, &bytes)?;
        println!(
            "  capture      {} bytes A->B written to {}",
            bytes.len(),
            path.display()
        );
    }
    let server_rejected = server
        .as_ref()
        .map_or(0, |s| s.rejected.load(Ordering::Relaxed));
    Ok(report.print(total, elapsed, server_rejected, server.as_deref()))
}

/// How the run's messages travel, for the banners.
fn transport_name<P: LengthPrefix>(transport: TransportArg) -> String {
    match transport {
        TransportArg::Tcp => format!("prefix {}", P::NAME),
        TransportArg::Ws => "WebSocket binary messages".to_owned(),
    }
}

fn progress_bar(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("  {bar:40} {pos}/{len} frames echoed  {per_sec}  {elapsed}")
    {
        bar.set_style(style);
    }
    bar
}

// ---------------------------------------------------------------- server (B)

struct Server {
    key: SigningKey,
    responder: Responder,
    verified: AtomicU64,
    rejected: AtomicU64,
    handshakes: AtomicU64,
    first_rejection: Mutex<Option<String>>,
}

impl Server {
    fn new(key: SigningKey) -> Self {
        Self {
            key,
            responder: Responder::new(HandshakeConfig::default()).with_discovery_id(discovery_id()),
            verified: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            handshakes: AtomicU64::new(0),
            first_rejection: Mutex::new(None),
        }
    }

    async fn serve<P: LengthPrefix>(
        self: Arc<Self>,
        listener: TcpListener,
        transport: TransportArg,
        log: bool,
    ) {
        let this = self;
        loop {
            let Ok((stream, peer_addr)) = listener.accept().await else {
                continue;
            };
            let this = Arc::clone(&this);
            tokio::spawn(async move {
                let result = this.accept::<P>(stream, transport).await;
                if log {
                    match result {
                        Ok((peer, echoed, rejected)) => println!(
                            "  {peer_addr} peer {}: {echoed} frames verified and echoed, {rejected} rejected",
                            short(peer)
                        ),
                        Err(e) => println!("  {peer_addr}: {e}"),
                    }
                }
            });
        }
    }

    /// Accepts one connection on `transport` and echoes it.
    async fn accept<P: LengthPrefix>(
        &self,
        stream: TcpStream,
        transport: TransportArg,
    ) -> Result<(PeerId, u64, u64), AnyError> {
        stream.set_nodelay(true)?;
        match transport {
            TransportArg::Tcp => {
                let framed = FramedTransport::new(stream, P::default());
                self.echo(Connection::accept(framed, &self.key, &self.responder).await?)
                    .await
            }
            TransportArg::Ws => {
                let upgrade = websocket::accept(stream);
                let ws = tokio::time::timeout(UPGRADE_TIMEOUT, upgrade)
                    .await
                    .map_err(|_| "WebSocket upgrade timed out")??;
                self.echo(Connection::accept(ws, &self.key, &self.responder).await?)
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

// ---------------------------------------------------------------- client (A)

/// Bound on a WebSocket upgrade.
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(10);

struct ClientJob {
    addr: SocketAddr,
    transport: TransportArg,
    audience: Audience,
    count: u64,
    blob_size: BlobSize,
    window: u32,
    seed: u64,
    capture: bool,
    bar: ProgressBar,
}

#[derive(Debug, Default, Clone)]
struct Outcome {
    local: Option<PeerId>,
    remote: Option<PeerId>,
    handshake: Duration,
    sent: u64,
    echoed: u64,
    verified_again: u64,
    rejected: u64,
    altered: u64,
    reordered: u64,
    lost: u64,
    bytes: u64,
    rtts: Vec<Duration>,
    first_problem: Option<String>,
    capture: Option<Vec<u8>>,
}

async fn client<P: LengthPrefix>(job: ClientJob) -> Result<Outcome, AnyError> {
    let key = new_key();
    let stream = TcpStream::connect(job.addr).await?;
    stream.set_nodelay(true)?;
    let captured = Arc::new(Mutex::new(Vec::new()));
    let io = Tee {
        inner: stream,
        copy: job.capture.then(|| Arc::clone(&captured)),
    };
    let t0 = Instant::now();
    let config = HandshakeConfig::default();
    let capture = job.capture.then_some(captured);
    match job.transport {
        TransportArg::Tcp => {
            let framed = FramedTransport::new(io, P::default());
            let conn = Connection::connect(framed, &key, job.audience, &config)
                .await
                .map_err(|e: bijou_frame::net::ConnectError| format!("handshake failed: {e}"))?;
            session(job, key, conn, t0.elapsed(), capture).await
        }
        TransportArg::Ws => {
            let url = format!("ws://{}/", job.addr);
            let ws = websocket::client(io, url.as_str()).await?;
            let conn = Connection::connect(ws, &key, job.audience, &config)
                .await
                .map_err(|e: bijou_frame::net::ConnectError| format!("handshake failed: {e}"))?;
            session(job, key, conn, t0.elapsed(), capture).await
        }
    }
}

/// Sends the job's commits on an established connection and checks the
/// echoes.
async fn session<T: Transport + Send + 'static>(
    job: ClientJob,
    key: SigningKey,
    conn: Connection<T>,
    handshake: Duration,
    captured: Option<Arc<Mutex<Vec<u8>>>>,
) -> Result<Outcome, AnyError> {
    let remote = conn.remote_peer();
    let (mut tx, rx) = conn.split();

    let window = Arc::new(Semaphore::new(job.window as usize));
    let (in_flight, pending) = mpsc::unbounded_channel::<(Bytes, Instant)>();
    let checker = tokio::spawn(check_echoes(
        rx,
        pending,
        Arc::clone(&window),
        job.count,
        job.bar.clone(),
    ));

    let mut rng = StdRng::seed_from_u64(job.seed);
    let tree = SedimentreeId::new(rng.random());
    let mut parent: Option<CommitId> = None;
    let mut bytes = 0u64;
    for _ in 0..job.count {
        let size = job.blob_size.sample(&mut rng);
        let mut blob = vec![0u8; size];
        rng.fill_bytes(&mut blob);
        let blob = Blob::new(blob);
        let head = CommitId::new(rng.random());
        let commit = LooseCommit::new(tree, head, parent, blob.meta());
        parent = Some(head);
        let item = SignedItem::new(Signed::seal(&key, &commit)?, blob);
        let msg = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
            id: tree,
            sender_heads: RemoteHeads::new(0, [head]),
            item,
        }));
        let frame = msg.encode()?;
        bytes += frame.len() as u64;
        let permit = window.acquire().await?;
        permit.forget(); // given back by the checker when the echo arrives
        if in_flight.send((frame.clone(), Instant::now())).is_err() {
            break; // the checker stopped: it reports why
        }
        tx.send_bytes(frame).await?;
    }
    drop(in_flight);
    let mut outcome = checker.await??;
    tx.close().await?;
    outcome.local = Some(key.peer_id());
    outcome.remote = Some(remote);
    outcome.handshake = handshake;
    outcome.sent = job.count;
    outcome.bytes = bytes;
    outcome.lost = job
        .count
        .saturating_sub(outcome.echoed + outcome.altered + outcome.reordered);
    if let Some(captured) = captured {
        outcome.capture = Some(
            captured
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        );
    }
    Ok(outcome)
}

/// How long the checker waits for an echo before counting the rest lost.
const ECHO_IDLE: Duration = Duration::from_secs(10);

/// Reads the echoes: each must be the next frame sent, byte for byte, and
/// verify again.
async fn check_echoes<T: Transport>(
    mut rx: ConnectionReceiver<T>,
    mut pending: mpsc::UnboundedReceiver<(Bytes, Instant)>,
    window: Arc<Semaphore>,
    count: u64,
    bar: ProgressBar,
) -> Result<Outcome, AnyError> {
    let mut out = Outcome {
        rtts: Vec::with_capacity(usize::try_from(count).unwrap_or(0)),
        ..Outcome::default()
    };
    let mut expected: VecDeque<(Bytes, Instant)> = VecDeque::new();
    let problem = |out: &mut Outcome, what: String| {
        out.first_problem.get_or_insert(what);
    };
    for _ in 0..count {
        if expected.is_empty() {
            match pending.recv().await {
                Some(next) => expected.push_back(next),
                None => break, // the sender stopped early
            }
        }
        let received = match tokio::time::timeout(ECHO_IDLE, rx.recv()).await {
            Err(_) => {
                problem(&mut out, format!("no echo for {ECHO_IDLE:?}"));
                break;
            }
            Ok(Err(e)) => {
                problem(&mut out, format!("connection failed: {e}"));
                break;
            }
            Ok(Ok(None)) => {
                problem(&mut out, "server closed the connection".to_owned());
                break;
            }
            Ok(Ok(Some(received))) => received,
        };
        let now = Instant::now();
        while let Ok(next) = pending.try_recv() {
            expected.push_back(next);
        }
        window.add_permits(1);
        bar.inc(1);
        let Some((sent, at)) = expected.pop_front() else {
            problem(
                &mut out,
                "an echo arrived for a frame never sent".to_owned(),
            );
            out.altered += 1;
            continue;
        };
        if received.bytes != sent {
            // Some later frame, or nothing we sent?
            if let Some(pos) = expected.iter().position(|(f, _)| *f == received.bytes) {
                out.reordered += 1;
                problem(
                    &mut out,
                    format!("echo out of order ({} frames early)", pos + 1),
                );
                expected.remove(pos);
                expected.push_front((sent, at));
            } else {
                out.altered += 1;
                problem(&mut out, "echo differs from the frame sent".to_owned());
            }
            continue;
        }
        out.echoed += 1;
        out.rtts.push(now.duration_since(at));
        match received.result {
            Ok(_) => out.verified_again += 1,
            Err(why) => {
                out.rejected += 1;
                let why: Rejected = why;
                problem(&mut out, format!("echo rejected: {why}"));
            }
        }
    }
    Ok(out)
}

/// Copies every byte written to `inner` into `copy` (the capture).
struct Tee<T> {
    inner: T,
    copy: Option<Arc<Mutex<Vec<u8>>>>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Tee<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Tee<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let (Poll::Ready(Ok(n)), Some(copy)) = (&poll, &this.copy) {
            copy.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend_from_slice(&buf[..*n]);
        }
        poll
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

// ---------------------------------------------------------------- report

#[derive(Debug, Default)]
struct Report {
    window: u32,
    outcomes: Vec<Outcome>,
    errors: Vec<String>,
}

impl Report {
    fn add(&mut self, outcome: Outcome) {
        self.outcomes.push(outcome);
    }

    fn sum(&self, f: impl Fn(&Outcome) -> u64) -> u64 {
        self.outcomes.iter().map(f).sum()
    }

    /// Prints the summary; `true` if every frame came back intact.
    fn print(
        &self,
        total: u64,
        elapsed: Duration,
        server_rejected: u64,
        server: Option<&Server>,
    ) -> bool {
        let echoed = self.sum(|o| o.echoed);
        let verified = self.sum(|o| o.verified_again);
        let rejected = self.sum(|o| o.rejected) + server_rejected;
        let altered = self.sum(|o| o.altered);
        let reordered = self.sum(|o| o.reordered);
        let finished: u64 = self.outcomes.len() as u64;
        let lost = self.sum(|o| o.lost)
            + total.saturating_sub(
                finished.saturating_mul(self.outcomes.first().map_or(0, |o| o.sent)),
            );
        let bytes = self.sum(|o| o.bytes);
        let mut rtts: Vec<Duration> = self.outcomes.iter().flat_map(|o| o.rtts.clone()).collect();
        rtts.sort_unstable();
        let pct = |p: f64| -> String {
            if rtts.is_empty() {
                return "-".to_owned();
            }
            let idx = ((rtts.len() - 1) as f64 * p).round() as usize;
            rtts.get(idx).map_or("-".to_owned(), |d| {
                format!("{:.2} ms", d.as_secs_f64() * 1e3)
            })
        };
        let secs = elapsed.as_secs_f64().max(1e-9);

        if let Some(first) = self.outcomes.first() {
            let (a, b) = (first.local, first.remote);
            let hs = first.handshake.as_secs_f64() * 1e3;
            match (a, b) {
                (Some(a), Some(b)) if self.outcomes.len() == 1 => println!(
                    "  handshake    ok: A {}.. <-> B {}.. in {hs:.2} ms",
                    short(a),
                    short(b)
                ),
                (_, Some(b)) => println!(
                    "  handshake    ok: {} peers <-> B {}.. (first in {hs:.2} ms)",
                    self.outcomes.len(),
                    short(b)
                ),
                _ => {}
            }
        }
        println!(
            "  frames       {echoed}/{total} echoed byte for byte, {verified} verified by A again{}",
            if server.is_some() { " (and by B first)" } else { "" }
        );
        println!(
            "  bytes        {:.2} MB each way ({:.0} B per frame on average)",
            bytes as f64 / 1e6,
            bytes as f64 / (echoed.max(1)) as f64
        );
        println!(
            "  throughput   {:.0} frames/s, {:.1} MB/s each way in {:.2} s",
            echoed as f64 / secs,
            bytes as f64 / 1e6 / secs,
            secs
        );
        println!(
            "  round trip   p50 {}, p99 {} (up to {} frames in flight per peer)",
            pct(0.50),
            pct(0.99),
            self.window
        );
        println!(
            "  problems     rejected {rejected}, lost {lost}, altered {altered}, reordered {reordered}"
        );
        if let Some(server) = server {
            let first = server
                .first_rejection
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(why) = first.as_ref() {
                println!("  B rejected   first: {why}");
            }
        }
        for o in &self.outcomes {
            if let Some(why) = &o.first_problem {
                println!("  A problem    {why}");
            }
        }
        for e in &self.errors {
            println!("  error        {e}");
        }
        let ok = self.errors.is_empty()
            && rejected == 0
            && lost == 0
            && altered == 0
            && reordered == 0
            && echoed == total
            && verified == total;
        println!("{}", if ok { "OK" } else { "FAILED" });
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Args {
        let mut argv = vec!["echo", "--seed", "7", "--timeout", "30"];
        argv.extend_from_slice(extra);
        Args::try_parse_from(argv).expect("valid flags")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn default_run_echoes_every_frame_for_every_prefix() {
        let a = args(&["--count", "150"]);
        assert!(matches!(a.blob_size, BlobSize::Mix));
        assert!(run::<Bijou64>(&a).await.expect("runs"));
        assert!(run::<Leb128>(&a).await.expect("runs"));
        assert!(run::<U32Be>(&a).await.expect("runs"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn websocket_run_echoes_every_frame_with_several_peers() {
        let a = args(&["--count", "150", "--peers", "2", "--transport", "ws"]);
        assert_eq!(a.transport, TransportArg::Ws);
        assert!(run::<Bijou64>(&a).await.expect("runs"));
        // A capture of length-prefixed frames makes no sense over WebSocket.
        let a = args(&["--transport", "ws", "--capture", "x.cap"]);
        assert!(run::<Bijou64>(&a).await.is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn several_peers_and_a_capture_that_the_inspector_format_describes() {
        let path = std::env::temp_dir().join(format!("bijou-echo-test-{}.cap", std::process::id()));
        let path_str = path.to_str().expect("utf8 path").to_owned();
        let a = args(&[
            "--count",
            "40",
            "--peers",
            "4",
            "--blob-size",
            "512",
            "--capture",
            &path_str,
        ]);
        assert!(run::<Bijou64>(&a).await.expect("runs"));
        let capture = std::fs::read(&path).expect("capture written");
        let _ = std::fs::remove_file(&path);
        // The capture starts with the handshake challenge: bijou64 prefix
        // 0x9E (158 bytes), then "SUH\0" 00.
        assert_eq!(&capture[..6], b"\x9eSUH\0\x00");
        // 40 commits with 512-byte blobs follow.
        assert!(capture.len() > 158 + 40 * 512);
    }

    #[test]
    fn server_ids_parse_from_hex() {
        let id = PeerId::from_bytes([0xAB; 32]);
        let parse =
            |s: &str| Args::try_parse_from(["echo", "--connect", "127.0.0.1:1", "--server-id", s]);
        assert_eq!(
            parse(&id.to_string()).map(|a| a.server_id).ok(),
            Some(Some(id))
        );
        assert!(parse("abcd").is_err());
        assert!(parse(&"zz".repeat(32)).is_err());
    }

    #[test]
    fn blob_sizes_follow_the_mix() {
        let mut rng = StdRng::seed_from_u64(1);
        let sizes: Vec<usize> = (0..10_000)
            .map(|_| BlobSize::Mix.sample(&mut rng))
            .collect();
        assert!(sizes.iter().all(|&s| (100..=64 * 1024).contains(&s)));
        let small = sizes.iter().filter(|&&s| s <= 2048).count();
        let huge = sizes.iter().filter(|&&s| s == 64 * 1024).count();
        assert!(small > 9_000, "{small}");
        assert!((50..200).contains(&huge), "{huge}");
        assert!(matches!("1024".parse(), Ok(BlobSize::Fixed(1024))));
        assert!("big".parse::<BlobSize>().is_err());
    }
}
