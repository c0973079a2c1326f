//! `bijou echo`: the echo load test. Peers send signed commits with blobs
//! to an echo server, which verifies each and echoes it byte for byte;
//! each peer checks every echo is identical, in order, and verifies it
//! again. The echo example (`cargo run --example echo`) is the short
//! version; this one adds concurrent peers, windows, captures and the
//! two-terminal mode.
//!
//! In two-terminal mode the challenge is addressed with
//! `Audience::Discover(BLAKE3("bijou-frame echo"))`, so a sender needs no
//! key from the server, or, with `--server-id`, to the server's key.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bijou_frame::codec::Wire;
use bijou_frame::framing::prefix::{Bijou64, Leb128, LengthPrefix, PrefixKind, U32Be};
use bijou_frame::net::handshake::ConnectConfig;
use bijou_frame::net::handshake::ConnectError;
use bijou_frame::net::transport::{websocket, FramedTransport, Transport};
use bijou_frame::net::Connection;
use bijou_frame::net::ConnectionReceiver;
use bijou_frame::proto::handshake::{HandshakeConfig, Responder};
use bijou_frame::proto::message::{
    Audience, BlobMessage, CommitId, LooseCommit, Message, RemoteHeads, SedimentreeId, SignedItem,
    SyncMessage,
};
use bijou_frame::proto::session::{Received, Rejected};
use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Identity, PeerId, Signed};
use bytes::Bytes;
use indicatif::ProgressBar;
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

use crate::accept;
use crate::exit::Failure;
use crate::figures::percentile_ms;
use crate::progress;
use crate::target::{Target, TransportArg, CONNECT_TIMEOUT};
#[cfg(feature = "iroh")]
use bijou_frame::net::transport::iroh;

/// Echo signed commits between peers over TCP or WebSocket: a load test.
///
/// Each sending peer (A) sends --count LooseCommit messages with random
/// blobs, signed with a key of its own; the echo server (B) verifies every
/// signature and blob and echoes each frame back exactly as received; A
/// checks each echo is the frame it sent, in order, and verifies it again.
///
/// Example:
///   bijou echo                                    # both sides in process
///   bijou echo --peers 4 --window 16 --transport ws
///   bijou echo --listen 127.0.0.1:7878            # terminal 1: server B
///   bijou echo --connect localhost:7878 --peers 4 # terminal 2: senders A
///   bijou echo --count 2 --blob-size 100 --capture echo.cap && bijou inspect echo.cap
///
/// Exit codes: 0 every frame came back intact; 1 a frame was lost,
/// altered, reordered or rejected, or the server is not an echo server;
/// 2 bad arguments; 3 cannot connect, handshake refused, timeout.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Only run the echo server (peer B), listening on ADDR.
    #[arg(long, value_name = "ADDR", conflicts_with = "connect")]
    pub listen: Option<SocketAddr>,
    /// Only run the sender(s) (peer A), against an echo server:
    /// HOST:PORT, tcp://HOST:PORT or ws://HOST:PORT.
    #[arg(long, value_name = "URL")]
    pub connect: Option<String>,
    /// With --connect: the server's peer id (64 hex digits, printed by
    /// --listen). The challenge is then addressed to that key; without it,
    /// any server offering the echo discovery id is accepted.
    #[arg(long, value_name = "PEER_ID", requires = "connect")]
    pub server_id: Option<PeerId>,
    /// Frames each sending peer sends (at least 1).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: u64,
    /// Blob size in bytes, or `mix`: 94% 100 B-2 KiB, 5% 2-16 KiB, 1% 64 KiB.
    #[arg(long, default_value = "mix")]
    pub blob_size: BlobSize,
    /// Length prefix of the frames with --transport tcp: bijou64, leb128
    /// or u32-be.
    #[arg(long, default_value_t = PrefixKind::Bijou64)]
    pub prefix: PrefixKind,
    /// How messages travel when --connect is a bare HOST:PORT (a URL's
    /// scheme decides otherwise).
    #[arg(long, value_enum, default_value_t = TransportArg::Tcp)]
    pub transport: TransportArg,
    /// Concurrent sending peers against the one echo server (1-10000).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub peers: u32,
    /// Frames each sender keeps in flight (1-4096).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub window: u32,
    /// Write the bytes the first sender put on the wire to FILE (framed
    /// TCP only).
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    /// Seed for blob contents and sizes (random if not given).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Give up after this many seconds (at least 1).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
}

/// `--blob-size`: `mix` or a fixed size.
#[derive(Debug, Clone, Copy)]
pub enum BlobSize {
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

use crate::keygen::new_key;

fn short(peer: PeerId) -> String {
    peer.to_string().chars().take(8).collect()
}

type AnyError = Box<dyn std::error::Error + Send + Sync>;

/// Runs what the flags ask for and prints the summary.
pub async fn run(args: &Args) -> Result<(), Failure> {
    match args.prefix {
        PrefixKind::Leb128 => run_with::<Leb128>(args).await,
        PrefixKind::U32Be => run_with::<U32Be>(args).await,
        _ => run_with::<Bijou64>(args).await,
    }
}

/// `--listen`: only the echo server, until Ctrl-C.
async fn listen<P: LengthPrefix>(addr: SocketAddr, transport: TransportArg) -> Result<(), Failure> {
    let cannot = |e: std::io::Error| Failure::input(format!("cannot listen on {addr}: {e}"));
    let listener = TcpListener::bind(addr).await.map_err(cannot)?;
    let local = listener.local_addr().map_err(cannot)?;
    let server = Server::new(new_key()?);
    println!(
        "echo server B {} listening on {local} ({}); Ctrl-C to stop",
        server.key.peer_id(),
        transport_name::<P>(transport)
    );
    tokio::select! {
        () = Arc::new(server).serve::<P>(listener, transport, true) => {}
        _ = tokio::signal::ctrl_c() => println!("interrupted: stopping"),
    }
    Ok(())
}

/// Where the senders connect: `--connect`, or an echo server started here
/// in process (then also the server).
async fn where_to_echo<P: LengthPrefix>(
    args: &Args,
) -> Result<(Target, Option<Arc<Server>>), Failure> {
    if let Some(spec) = &args.connect {
        return Ok((Target::parse(spec, args.transport, P::KIND)?, None));
    }
    if args.transport == TransportArg::Iroh {
        let (target, server) = in_process_iroh().await?;
        return Ok((target, Some(server)));
    }
    let cannot = |e: std::io::Error| Failure::input(format!("cannot listen on 127.0.0.1: {e}"));
    let listener = TcpListener::bind("127.0.0.1:0").await.map_err(cannot)?;
    let addr = listener.local_addr().map_err(cannot)?;
    let server = Arc::new(Server::new(new_key()?));
    let serving = Arc::clone(&server);
    let transport = args.transport;
    tokio::spawn(async move { serving.serve::<P>(listener, transport, false).await });
    Ok((Target::local(addr, args.transport, P::KIND), Some(server)))
}

/// Spawns the `--peers` senders and gathers what each found, until the
/// `--timeout`; also returns the first sender's capture, if asked for.
async fn run_senders<P: LengthPrefix>(
    args: &Args,
    target: &Target,
    audience: Audience,
    seed: u64,
    total: u64,
    bar: &ProgressBar,
) -> (Report, Option<Vec<u8>>) {
    let bound = Duration::from_secs(args.timeout);
    let clients: Vec<_> = (0..args.peers)
        .map(|i| {
            tokio::spawn(client::<P>(ClientJob {
                target: target.clone(),
                audience,
                count: args.count,
                blob_size: args.blob_size,
                window: args.window,
                seed: seed.wrapping_add(u64::from(i)),
                capture: i == 0 && args.capture.is_some(),
                bar: bar.clone(),
            }))
        })
        .collect();
    let mut report = Report {
        window: args.window,
        ..Report::default()
    };
    let mut captured = None;
    let deadline = tokio::time::Instant::now() + bound;
    for handle in clients {
        match tokio::time::timeout_at(deadline, handle).await {
            Err(_) => {
                report.errors.push(Failure::network(format!(
                    "timed out after {bound:?} (--timeout) with {} of {total} frames echoed; \
                     raise --timeout or lower --count",
                    bar.position()
                )));
                break;
            }
            Ok(Err(join)) => report
                .errors
                .push(Failure::network(format!("client task failed: {join}"))),
            Ok(Ok(Err(e))) => report.errors.push(e),
            Ok(Ok(Ok(outcome))) => {
                if outcome.capture.is_some() {
                    captured = outcome.capture.clone();
                }
                report.add(outcome);
            }
        }
    }
    (report, captured)
}

async fn run_with<P: LengthPrefix>(args: &Args) -> Result<(), Failure> {
    if let (Some(addr), TransportArg::Iroh) = (args.listen, args.transport) {
        return listen_iroh(addr).await;
    }
    if let Some(addr) = args.listen {
        return listen::<P>(addr, args.transport).await;
    }
    let (target, server) = where_to_echo::<P>(args).await?;
    let transport = target.transport();
    let audience = match (&server, args.server_id) {
        (Some(s), _) => Audience::Known(s.key.peer_id()),
        (None, Some(id)) => Audience::Known(id),
        (None, None) => Audience::Discover(discovery_id()),
    };
    let seed = args.seed.unwrap_or_else(rand::random);
    if args.capture.is_some() && transport == TransportArg::Ws {
        return Err(Failure::input(
            "--capture records length-prefixed frames: use it with --transport tcp",
        ));
    }
    println!(
        "bijou-frame echo: {} peer(s) x {} frames over {} {}, {}, blobs {}, seed {seed}",
        args.peers,
        args.count,
        if transport == TransportArg::Iroh {
            "UDP"
        } else {
            "TCP"
        },
        target.authority(),
        transport_name::<P>(transport),
        match args.blob_size {
            BlobSize::Mix => "mix (100 B-2 KiB, some 2-16 KiB, 1% 64 KiB)".to_owned(),
            BlobSize::Fixed(n) => format!("{n} B"),
        }
    );

    let total = args.count.saturating_mul(u64::from(args.peers));
    let bar = progress::bar(total, "frames echoed");
    let started = Instant::now();
    let (report, captured) = run_senders::<P>(args, &target, audience, seed, total, &bar).await;
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    if let (Some(path), Some(bytes)) = (&args.capture, captured) {
        std::fs::write(path, &bytes)
            .map_err(|e| Failure::input(format!("cannot write {}: {e}", path.display())))?;
        println!(
            "  capture      {} bytes A->B written to {}",
            bytes.len(),
            path.display()
        );
    }
    let server_rejected = server
        .as_ref()
        .map_or(0, |s| s.rejected.load(Ordering::Relaxed));
    report.print(total, elapsed, server_rejected, server.as_deref())
}

/// How the run's messages travel, for the banners.
fn transport_name<P: LengthPrefix>(transport: TransportArg) -> String {
    match transport {
        TransportArg::Tcp => format!("prefix {}", P::NAME),
        TransportArg::Ws => "WebSocket binary messages".to_owned(),
        TransportArg::Iroh => "iroh QUIC, u32-be prefix".to_owned(),
    }
}

/// `--listen` with `--transport iroh`: an echo server on a direct-only
/// iroh endpoint, until interrupted.
#[cfg(feature = "iroh")]
async fn listen_iroh(addr: SocketAddr) -> Result<(), Failure> {
    let (endpoint, dial) = crate::target::iroh_listener(addr).await?;
    let server = Server::new(new_key()?);
    println!(
        "echo server B {} listening on iroh {dial}; Ctrl-C to stop",
        server.key.peer_id()
    );
    tokio::select! {
        () = Arc::new(server).serve_iroh(endpoint.clone(), true) => {}
        _ = tokio::signal::ctrl_c() => println!("interrupted: stopping"),
    }
    endpoint.close().await;
    Ok(())
}

/// An echo server in this process on a loopback iroh endpoint.
#[cfg(feature = "iroh")]
async fn in_process_iroh() -> Result<(Target, Arc<Server>), Failure> {
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let (endpoint, dial) = crate::target::iroh_listener(loopback).await?;
    let server = Arc::new(Server::new(new_key()?));
    tokio::spawn(Arc::clone(&server).serve_iroh(endpoint, false));
    Ok((Target::Iroh(dial), server))
}

#[cfg(not(feature = "iroh"))]
async fn listen_iroh(_: SocketAddr) -> Result<(), Failure> {
    Err(crate::target::no_iroh())
}

#[cfg(not(feature = "iroh"))]
async fn in_process_iroh() -> Result<(Target, Arc<Server>), Failure> {
    Err(crate::target::no_iroh())
}

// ---------------------------------------------------------------- server (B)

/// Connections the echo server echoes at once: the most `--peers` asks
/// for, so that no sender of a run waits for another to finish.
const MAX_CONNECTIONS: usize = 10_000;

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

    /// Accepts connections until the task is dropped; at most
    /// [`MAX_CONNECTIONS`] are echoed at once.
    async fn serve<P: LengthPrefix>(
        self: Arc<Self>,
        listener: TcpListener,
        transport: TransportArg,
        log: bool,
    ) {
        accept::serve_tcp(&listener, MAX_CONNECTIONS, |(stream, peer_addr)| {
            let this = Arc::clone(&self);
            async move {
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
            }
        })
        .await;
    }

    /// Echoes every connection accepted on an iroh `endpoint`, at most
    /// [`MAX_CONNECTIONS`] at once.
    #[cfg(feature = "iroh")]
    async fn serve_iroh(self: Arc<Self>, endpoint: iroh::Endpoint, log: bool) {
        let endpoint = &endpoint;
        let accept = move || async move { endpoint.accept().await.map(Ok) };
        accept::serve_each(MAX_CONNECTIONS, accept, |incoming| {
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
                    match result {
                        Ok((peer, echoed, rejected)) => println!(
                            "  iroh peer {}: {echoed} frames verified and echoed, {rejected} rejected",
                            short(peer)
                        ),
                        Err(e) => println!("  iroh: {e}"),
                    }
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

// ---------------------------------------------------------------- client (A)

struct ClientJob {
    target: Target,
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
    /// Frames this peer was asked to send.
    planned: u64,
    /// Frames it actually sent.
    sent: u64,
    echoed: u64,
    verified_again: u64,
    rejected: u64,
    altered: u64,
    reordered: u64,
    lost: u64,
    /// The server's first reply was no echo of anything sent.
    not_echo: bool,
    bytes: u64,
    rtts: Vec<Duration>,
    first_problem: Option<String>,
    capture: Option<Vec<u8>>,
}

async fn client<P: LengthPrefix>(job: ClientJob) -> Result<Outcome, Failure> {
    let key = new_key()?;
    let t0 = Instant::now();
    let addressed = match job.audience {
        Audience::Known(id) => format!("the server key {id}"),
        Audience::Discover(_) => "the echo discovery id".to_owned(),
    };
    let refused = |e: ConnectError| {
        job.target.refused(
            &e,
            &addressed,
            "give the server's peer id with --server-id (`bijou echo --listen` prints it)",
        )
    };
    if let Target::Iroh(_) = &job.target {
        let carrier = job.target.carrier().await?;
        let conn = Connection::connect(carrier, &key, job.audience, &ConnectConfig::default())
            .await
            .map_err(refused)?;
        let handshake = t0.elapsed();
        return session(job, key, conn, handshake, None)
            .await
            .map_err(Failure::network);
    }
    let stream = job.target.tcp().await?;
    let captured = Arc::new(Mutex::new(Vec::new()));
    let io = Tee {
        inner: stream,
        copy: job.capture.then(|| Arc::clone(&captured)),
    };
    let config = ConnectConfig::default();
    let capture = job.capture.then_some(captured);
    match &job.target {
        // Iroh returned above.
        Target::Tcp { .. } | Target::Iroh(_) => {
            let framed = FramedTransport::new(io, P::default());
            let conn = Connection::connect(framed, &key, job.audience, &config)
                .await
                .map_err(refused)?;
            session(job, key, conn, t0.elapsed(), capture)
                .await
                .map_err(Failure::network)
        }
        Target::Ws(url) => {
            let ws = tokio::time::timeout(CONNECT_TIMEOUT, websocket::client(io, url.as_str()))
                .await
                .map_err(|_| Failure::network(format!("WebSocket upgrade at {url} timed out")))?
                .map_err(|e| Failure::network(format!("cannot open {url}: {e}")))?;
            let conn = Connection::connect(ws, &key, job.audience, &config)
                .await
                .map_err(refused)?;
            session(job, key, conn, t0.elapsed(), capture)
                .await
                .map_err(Failure::network)
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
    let mut sent = 0u64;
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
        let permit = window.acquire().await?;
        permit.forget(); // given back by the checker when the echo arrives
        if in_flight.send((frame.clone(), Instant::now())).is_err() {
            break; // the checker stopped: it reports why
        }
        tx.send_bytes(frame).await?;
        sent += 1;
    }
    drop(in_flight);
    let mut outcome = checker.await??;
    tx.close().await?;
    outcome.local = Some(key.peer_id());
    outcome.remote = Some(remote);
    outcome.handshake = handshake;
    outcome.planned = job.count;
    outcome.sent = sent;
    outcome.lost = sent.saturating_sub(outcome.echoed + outcome.altered + outcome.reordered);
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

/// Round-trip times reserved up front, at most: the rest grow with the
/// echoes that arrive.
const RTTS_RESERVED: usize = 1 << 16;

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
        // Grown as echoes arrive: --count may be far more than a run
        // finishes before its timeout (16 bytes an echo, not a promise).
        rtts: Vec::with_capacity(
            usize::try_from(count).map_or(RTTS_RESERVED, |n| n.min(RTTS_RESERVED)),
        ),
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
        let received = match next_echo(&mut rx).await {
            Ok(received) => received,
            Err(why) => {
                problem(&mut out, why);
                break;
            }
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
            if not_the_next_frame(&mut out, &mut expected, &received.bytes, (sent, at)) {
                break;
            }
            continue;
        }
        out.echoed += 1;
        out.bytes += received.bytes.len() as u64;
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

/// The next echo, or why none came.
async fn next_echo<T: Transport>(rx: &mut ConnectionReceiver<T>) -> Result<Received, String> {
    match tokio::time::timeout(ECHO_IDLE, rx.recv()).await {
        Err(_) => Err(format!("no echo for {ECHO_IDLE:?}")),
        Ok(Err(e)) => Err(format!("connection failed: {e}")),
        Ok(Ok(None)) => Err("server closed the connection".to_owned()),
        Ok(Ok(Some(received))) => Ok(received),
    }
}

/// An echo that is not of the next frame sent: some later frame (out of
/// order; the frame expected goes back in front), or none sent at all
/// (altered, or, for a first reply, not an echo server). Returns whether
/// to stop reading.
fn not_the_next_frame(
    out: &mut Outcome,
    expected: &mut VecDeque<(Bytes, Instant)>,
    received: &Bytes,
    next: (Bytes, Instant),
) -> bool {
    let why = if let Some(pos) = expected.iter().position(|(f, _)| f == received) {
        out.reordered += 1;
        expected.remove(pos);
        expected.push_front(next);
        format!("echo out of order ({} frames early)", pos + 1)
    } else if out.echoed == 0 && out.reordered == 0 {
        out.not_echo = true;
        "the server's first reply is no echo of any frame sent: it is not an echo server (start one with `bijou echo --listen ADDR`)".to_owned()
    } else {
        out.altered += 1;
        "echo differs from the frame sent".to_owned()
    };
    out.first_problem.get_or_insert(why);
    out.not_echo
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
    errors: Vec<Failure>,
}

impl Report {
    fn add(&mut self, outcome: Outcome) {
        self.outcomes.push(outcome);
    }

    fn sum(&self, f: impl Fn(&Outcome) -> u64) -> u64 {
        self.outcomes.iter().map(f).sum()
    }

    /// Prints the summary; an error unless every frame came back intact.
    /// Frames are counted once each: echoed, or lost (sent, never echoed
    /// back), or never sent (a peer that failed before sending them).
    fn print(
        &self,
        total: u64,
        elapsed: Duration,
        server_rejected: u64,
        server: Option<&Server>,
    ) -> Result<(), Failure> {
        let t = self.totals(total, server_rejected);
        self.print_handshake();
        self.print_figures(&t, elapsed, server.is_some());
        if t.sent > 0 {
            println!(
                "  problems     rejected {}, lost {}, altered {}, reordered {}{}{}",
                t.rejected,
                t.lost,
                t.altered,
                t.reordered,
                if t.not_sent > 0 {
                    format!(", never sent {}", t.not_sent)
                } else {
                    String::new()
                },
                if t.not_echo {
                    "; not an echo server"
                } else {
                    ""
                }
            );
        }
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
        self.verdict(&t)
    }

    /// The counts of every sender, added up.
    fn totals(&self, total: u64, server_rejected: u64) -> Totals {
        let sent = self.sum(|o| o.sent);
        Totals {
            total,
            echoed: self.sum(|o| o.echoed),
            verified: self.sum(|o| o.verified_again),
            rejected: self.sum(|o| o.rejected) + server_rejected,
            altered: self.sum(|o| o.altered),
            reordered: self.sum(|o| o.reordered),
            sent,
            lost: self.sum(|o| o.lost),
            not_sent: total.saturating_sub(sent),
            not_echo: self.outcomes.iter().any(|o| o.not_echo),
            bytes: self.sum(|o| o.bytes),
        }
    }

    fn print_handshake(&self) {
        let Some(first) = self.outcomes.first() else {
            return;
        };
        let hs = first.handshake.as_secs_f64() * 1e3;
        match (first.local, first.remote) {
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

    /// Frames, bytes, throughput and round-trip percentiles.
    fn print_figures(&self, t: &Totals, elapsed: Duration, verified_by_b: bool) {
        if t.sent > 0 {
            println!(
                "  frames       {}/{} echoed byte for byte, {} verified by A again{}",
                t.echoed,
                t.total,
                t.verified,
                if verified_by_b {
                    " (and by B first)"
                } else {
                    ""
                }
            );
        }
        if t.echoed == 0 {
            return;
        }
        let mut rtts: Vec<Duration> = self.outcomes.iter().flat_map(|o| o.rtts.clone()).collect();
        rtts.sort_unstable();
        let pct = |q: f64| percentile_ms(&rtts, q);
        let secs = elapsed.as_secs_f64().max(1e-9);
        let bytes = t.bytes as f64;
        println!(
            "  bytes        {:.2} MB each way ({:.0} B per frame on average)",
            bytes / 1e6,
            bytes / t.echoed as f64
        );
        println!(
            "  throughput   {:.0} frames/s, {:.1} MB/s each way in {secs:.2} s",
            t.echoed as f64 / secs,
            bytes / 1e6 / secs,
        );
        println!(
            "  round trip   p50 {}, p99 {} (up to {} frames in flight per peer)",
            pct(0.50),
            pct(0.99),
            self.window
        );
    }

    /// OK, or the run's failure: a peer's connect or handshake error
    /// first (the network exit code), else what went wrong with frames.
    fn verdict(&self, t: &Totals) -> Result<(), Failure> {
        let ok = self.errors.is_empty()
            && t.rejected == 0
            && t.lost == 0
            && t.altered == 0
            && t.reordered == 0
            && !t.not_echo
            && t.echoed == t.total
            && t.verified == t.total;
        if ok {
            println!("OK");
            return Ok(());
        }
        println!("FAILED");
        let peers = self.outcomes.len() + self.errors.len();
        if let Some(first) = self.errors.first() {
            let others = self.errors.len() - 1;
            return Err(Failure {
                exit: first.exit,
                message: if others > 0 {
                    format!("{first} (and {others} more of {peers} peers failed)")
                } else {
                    first.message.clone()
                },
            });
        }
        Err(Failure::check(if t.not_echo {
            "the server is not an echo server: its replies are not echoes of the frames sent"
                .to_owned()
        } else {
            format!(
                "{}/{} frames echoed intact: rejected {}, lost {}, altered {}, reordered {}",
                t.echoed, t.total, t.rejected, t.lost, t.altered, t.reordered
            )
        }))
    }
}

/// A run's counts, every sender's added up.
struct Totals {
    total: u64,
    echoed: u64,
    verified: u64,
    rejected: u64,
    altered: u64,
    reordered: u64,
    sent: u64,
    lost: u64,
    not_sent: u64,
    not_echo: bool,
    bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cmd {
        #[command(flatten)]
        args: Args,
    }

    fn args(extra: &[&str]) -> Args {
        let mut argv = vec!["echo", "--seed", "7", "--timeout", "30"];
        argv.extend_from_slice(extra);
        Cmd::try_parse_from(argv).expect("valid flags").args
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn default_run_echoes_every_frame_for_every_prefix() {
        assert!(matches!(args(&[]).blob_size, BlobSize::Mix));
        for prefix in PrefixKind::ALL {
            let mut a = args(&["--count", "150"]);
            a.prefix = prefix;
            run(&a).await.expect("every frame echoed");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn websocket_run_echoes_every_frame_with_several_peers() {
        let a = args(&["--count", "150", "--peers", "2", "--transport", "ws"]);
        assert_eq!(a.transport, TransportArg::Ws);
        run(&a).await.expect("every frame echoed");
        // A capture of length-prefixed frames makes no sense over WebSocket.
        let a = args(&["--transport", "ws", "--capture", "x.cap"]);
        assert!(run(&a).await.is_err());
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
        run(&a).await.expect("every frame echoed");
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
        let parse = |s: &str| {
            Cmd::try_parse_from(["echo", "--connect", "127.0.0.1:1", "--server-id", s])
                .map(|c| c.args)
        };
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
