//! Push signed commits to a Subduction sync server, fetch them back over a
//! second connection, and check every byte.
//!
//! ```text
//! cargo run --release --example sync                      # our server + client, ws://127.0.0.1:<ephemeral>
//! cargo run --release --example sync -- --count 50 --transport tcp   # same, bijou64-framed TCP
//!
//! subduction_cli server --socket 127.0.0.1:8080 --auth open         # terminal 1: a real Subduction server
//! cargo run --release --example sync -- --connect ws://127.0.0.1:8080                 # terminal 2
//! cargo run --release --example sync -- --connect ws://127.0.0.1:8080 --server-id <its peer id>
//!
//! cargo run --release --example sync -- --listen 127.0.0.1:7879     # terminal 1: our own minimal server
//! cargo run --release --example sync -- --connect ws://127.0.0.1:7879 # terminal 2 (it prints the exact command)
//! ```
//!
//! **Push.** Peer A connects (connection 1) and sends `--count` signed
//! LooseCommits (tag 00) into a fresh random tree (SedimentreeId), chained
//! (each commit's parent is the previous one), each with a random blob of
//! `--blob-size` bytes. A Subduction server answers every *new* commit with
//! a HeadsUpdate (tag 08) for the tree whose heads name it, and stays silent
//! about a commit it refuses, so each commit gets `--ack-timeout` to be
//! acknowledged. The round trip (LooseCommit sent -> HeadsUpdate naming it
//! received) is measured per commit; `--window` commits may be in flight
//! (default 1: one at a time, so the round trip is not queueing). A
//! Subduction server may ingest pipelined commits out of order, and then
//! its HeadsUpdate for a commit names a later one (which lists it as
//! parent), so a HeadsUpdate acknowledges every pending commit up to the
//! newest one it names, like a TCP ack. Only the fetch proves each commit
//! arrived.
//!
//! **Fetch.** Peer B (a second key, connection 2) sends a BatchSyncRequest
//! for the tree with no fingerprints ("I have nothing"; fresh nonce and
//! seed, no subscription). The BatchSyncResponse's SyncDiff must carry all
//! the commits: every item verified (`verify_strict`, scope, blob), and
//! every signed commit and blob byte-identical to one A sent. Anything
//! unacknowledged, rejected, altered, unexpected or missing is reported and
//! the exit code is 1.
//!
//! **Addressing.** With `--server-id` the handshake is addressed to that key
//! (`Audience::Known`) and the response must be signed by it. Otherwise it
//! is addressed to a service name (`Audience::discover`): `--service-name`,
//! or by default the server's `HOST:PORT` as written in `--connect`, which
//! is what `subduction_cli server` serves when it has no `--service-name`
//! (its `--socket` string: bound to `0.0.0.0:8080`, it answers to
//! `--service-name 0.0.0.0:8080`). In process, A and B address the server's
//! key, or `--service-name` if given.
//!
//! **Our server** (`--listen`, and the default in-process run) speaks the
//! same protocol over WebSocket, or with `--transport tcp` over TCP with a
//! bijou64 length prefix (`--connect` then takes `HOST:PORT`). It keeps
//! every tree in one in-memory store shared by all connections, bounded:
//! at most 256 connections at a time (more wait in the kernel's backlog),
//! 120 s idle per connection, 1024 trees, 65,535 commits per tree (what one
//! SyncDiff can carry) and 48 MiB per tree (so a whole tree fits one 50 MiB
//! response), 256 MiB in all. A commit beyond a cap is refused without a
//! reply, as Subduction does. It answers to its key and to its service name
//! (`--service-name`, default the `--listen` address). It does not push
//! updates to subscribers (`subscribe` is ignored) and stores no fragments.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bijou_frame::net::connection::{Delivered, RejectedItem, VerifiedMessage};
use bijou_frame::net::handshake::{HandshakeConfig, Responder};
use bijou_frame::net::message::{
    Audience, BatchSyncRequest, BatchSyncResponse, BlobMessage, CommitId, Fingerprint,
    FingerprintSeed, HeadsUpdate, LooseCommit, Message, RemoteHeads, SedimentreeId, SignedItem,
    SyncDiff, SyncMessage, SyncResult, VerifiedItem,
};
use bijou_frame::net::prefix::Bijou64;
use bijou_frame::net::transport::{websocket, FramedTransport, Transport};
use bijou_frame::net::{Connection, DEFAULT_MAX_FRAME_LENGTH};
use bijou_frame::prelude::Wire;
use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Identity, PeerId, Signed};
use bytes::Bytes;
use clap::{Parser, ValueEnum};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// Push signed commits to a Subduction sync server and fetch them back.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Talk to the sync server at URL: `ws://HOST:PORT` (with
    /// `--transport tcp`: `HOST:PORT`). Without it (and without --listen),
    /// our own server runs in process.
    #[arg(long, value_name = "URL", conflicts_with = "listen")]
    connect: Option<String>,
    /// Only run our own minimal sync server, listening on ADDR.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// The service name: the client addresses its handshake to whoever
    /// serves it (`Audience::discover`), the server answers to it. Default:
    /// the server's HOST:PORT (as `subduction_cli server` defaults to its
    /// --socket).
    #[arg(long, value_name = "NAME", conflicts_with = "server_id")]
    service_name: Option<String>,
    /// With --connect: the server's peer id (64 hex digits). The handshake
    /// is addressed to that key and its response must be signed by it.
    #[arg(long, value_name = "PEER_ID", requires = "connect")]
    server_id: Option<PeerId>,
    /// Commits to push (1-65535: one BatchSyncResponse brings them all back).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(1..))]
    count: u16,
    /// Blob size of each commit, in bytes.
    #[arg(long, default_value_t = 1024)]
    blob_size: usize,
    /// Commits in flight before waiting for a HeadsUpdate (1-256); a
    /// HeadsUpdate acknowledges every commit up to the newest it names.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    window: u16,
    /// `ws`: one binary WebSocket message per message, as Subduction's
    /// servers speak; `tcp`: bijou64 length-prefixed frames over TCP.
    #[arg(long, value_enum, default_value_t = TransportArg::Ws)]
    transport: TransportArg,
    /// How long each commit may wait for its HeadsUpdate, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    ack_timeout: u64,
    /// Seed for the commit ids and blobs (random if not given; the tree id
    /// is always fresh).
    #[arg(long)]
    seed: Option<u64>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// What the in-process server gets wrong on purpose (tests only).
    #[arg(skip)]
    fault: Fault,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TransportArg {
    /// WebSocket binary messages (default).
    Ws,
    /// bijou64 length-prefixed frames over TCP.
    Tcp,
}

/// A mistake our server makes on purpose, so the tests can check the
/// client notices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))] // set by the tests only
enum Fault {
    #[default]
    None,
    /// No HeadsUpdate for a tree's second commit.
    DropAck,
    /// The sync response leaves one commit out.
    OmitCommit,
    /// The sync response flips a bit of one blob.
    CorruptBlob,
    /// The sync response adds a validly signed commit nobody pushed.
    ForeignCommit,
}

/// Bound on a WebSocket upgrade or a TCP connect.
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections our server serves at once.
const MAX_CONNECTIONS: usize = 256;
/// How long our server waits for a connection's next message.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Trees our server stores.
const MAX_TREES: usize = 1024;
/// Commits per tree: the most one SyncDiff carries (a u16 count).
const MAX_COMMITS_PER_TREE: usize = u16::MAX as usize;
/// Bytes per tree (signed commits, blobs, per-item overhead), so that a
/// whole tree fits one 50 MiB BatchSyncResponse.
const MAX_TREE_BYTES: usize = 48 << 20;
/// Bytes in the whole store.
const MAX_STORE_BYTES: usize = 256 << 20;
/// Upper bound on the bytes a commit adds to a SyncDiff besides its blob:
/// the signed commit (at most 238 bytes with one parent) and the blob
/// length.
const ITEM_OVERHEAD: usize = 256;

type AnyError = Box<dyn std::error::Error + Send + Sync>;

fn new_key() -> SigningKey {
    SigningKey::from_bytes(&rand::random())
}

fn short(peer: PeerId) -> String {
    peer.to_string().chars().take(8).collect()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
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
    match runtime.block_on(run(&args)) {
        Ok(outcome) if outcome.ok() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs what the flags ask for and prints the summary.
async fn run(args: &Args) -> Result<Outcome, AnyError> {
    if let Some(addr) = args.listen {
        listen(args, addr).await?;
        return Ok(Outcome::default());
    }
    let count = usize::from(args.count);
    let response_size = count
        .checked_mul(args.blob_size.saturating_add(ITEM_OVERHEAD))
        .and_then(|n| n.checked_add(ITEM_OVERHEAD))
        .filter(|&n| n <= DEFAULT_MAX_FRAME_LENGTH);
    if response_size.is_none() {
        return Err(format!(
            "{count} commits of {} B would not fit one {} MiB BatchSyncResponse: push fewer or smaller",
            args.blob_size,
            DEFAULT_MAX_FRAME_LENGTH >> 20
        )
        .into());
    }

    // Where to connect, and to whom the handshakes are addressed.
    let (target, server, serving) = match &args.connect {
        Some(spec) => (Target::parse(spec, args.transport), None, None),
        None => {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            let addr = listener.local_addr()?;
            let name = args
                .service_name
                .clone()
                .unwrap_or_else(|| addr.to_string());
            let server = Arc::new(SyncServer::new(new_key(), name, args.fault));
            let task = tokio::spawn(Arc::clone(&server).serve(listener, args.transport, false));
            (
                Target::local(addr, args.transport),
                Some(server),
                Some(task),
            )
        }
    };
    let audience = match (&server, args.server_id, &args.service_name) {
        (_, Some(id), _) => Audience::Known(id),
        (_, None, Some(name)) => Audience::discover(name.as_bytes()),
        (Some(s), None, None) => Audience::Known(s.key.peer_id()),
        (None, None, None) => Audience::discover(target.authority().as_bytes()),
    };
    let seed = args.seed.unwrap_or_else(rand::random);
    let key_a = new_key();
    let plan = Plan::new(&key_a, seed, count, args.blob_size)?;
    println!(
        "bijou-frame sync: {count} chained commits x {} B into tree {}.. over {target}, window {}, seed {seed}",
        args.blob_size,
        &plan.tree.to_string()[..8],
        args.window
    );
    println!(
        "  server       {}",
        match (&server, audience) {
            (Some(s), Audience::Known(_)) => format!(
                "in process: S {}.. (in-memory store), addressed by its key",
                short(s.key.peer_id())
            ),
            (Some(s), Audience::Discover(_)) => format!(
                "in process: S {}.. (in-memory store), addressed by service name {:?}",
                short(s.key.peer_id()),
                s.service_name
            ),
            (None, Audience::Known(id)) => format!("{}.., addressed by its key", short(id)),
            (None, Audience::Discover(_)) => format!(
                "addressed by service name {:?}",
                args.service_name
                    .clone()
                    .unwrap_or_else(|| target.authority())
            ),
        }
    );

    let bar = progress_bar(plan.commits.len() as u64);
    let job = ClientJob {
        target,
        audience,
        window: usize::from(args.window),
        ack_timeout: Duration::from_millis(args.ack_timeout),
        bar: bar.clone(),
    };
    let bound = Duration::from_secs(args.timeout);
    let result = tokio::time::timeout(bound, client(&job, key_a, &plan)).await;
    bar.finish_and_clear();
    if let Some(task) = serving {
        task.abort();
    }
    let mut outcome = match result {
        Err(_) => return Err(format!("timed out after {bound:?}").into()),
        Ok(outcome) => outcome?,
    };
    outcome.server = server.map(|s| s.stats());
    outcome.print(&plan, usize::from(args.window));
    Ok(outcome)
}

fn progress_bar(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("  {bar:40} {pos}/{len} commits acked  {per_sec}  {elapsed}")
    {
        bar.set_style(style);
    }
    bar
}

// ---------------------------------------------------------------- transport

/// Where the client connects.
#[derive(Debug, Clone)]
enum Target {
    /// A `ws://` URL.
    Ws(String),
    /// `HOST:PORT`, bijou64-framed TCP.
    Tcp(String),
}

impl Target {
    fn parse(spec: &str, transport: TransportArg) -> Self {
        match transport {
            TransportArg::Ws if spec.contains("://") => Self::Ws(spec.to_owned()),
            TransportArg::Ws => Self::Ws(format!("ws://{spec}/")),
            TransportArg::Tcp => Self::Tcp(spec.trim_start_matches("tcp://").to_owned()),
        }
    }

    fn local(addr: SocketAddr, transport: TransportArg) -> Self {
        match transport {
            TransportArg::Ws => Self::Ws(format!("ws://{addr}/")),
            TransportArg::Tcp => Self::Tcp(addr.to_string()),
        }
    }

    /// `HOST:PORT`: the default service name.
    fn authority(&self) -> String {
        match self {
            Self::Ws(url) => {
                let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
                rest.split(['/', '?', '#'])
                    .next()
                    .unwrap_or(rest)
                    .to_owned()
            }
            Self::Tcp(addr) => addr.clone(),
        }
    }

    /// Opens a connection and runs the handshake.
    async fn open(
        &self,
        key: &SigningKey,
        audience: Audience,
    ) -> Result<(Connection<Carrier>, Duration), AnyError> {
        let t0 = Instant::now();
        let carrier = tokio::time::timeout(UPGRADE_TIMEOUT, async {
            Ok::<Carrier, AnyError>(match self {
                Self::Ws(url) => Box::new(websocket::connect(url).await?),
                Self::Tcp(addr) => {
                    let stream = TcpStream::connect(addr.as_str()).await?;
                    stream.set_nodelay(true)?;
                    Box::new(FramedTransport::new(stream, Bijou64))
                }
            })
        })
        .await
        .map_err(|_| format!("connecting to {self} timed out"))??;
        let conn = Connection::connect(carrier, key, audience, &HandshakeConfig::default())
            .await
            .map_err(|e| format!("handshake with {self} failed: {e}"))?;
        Ok((conn, t0.elapsed()))
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ws(url) => write!(f, "WebSocket {url}"),
            Self::Tcp(addr) => write!(f, "TCP {addr} (bijou64 prefix)"),
        }
    }
}

/// Whichever transport the run uses, boxed, so one `Connection<Carrier>`
/// type serves both.
type Carrier = Box<dyn Transport + Send>;

// ---------------------------------------------------------------- server

/// Our minimal sync server: one in-memory store shared by every
/// connection.
struct SyncServer {
    key: SigningKey,
    responder: Responder,
    service_name: String,
    fault: Fault,
    store: Mutex<Store>,
    stored: AtomicU64,
    duplicates: AtomicU64,
    refused: AtomicU64,
    rejected: AtomicU64,
    requests: AtomicU64,
}

/// What the server did, for the summary.
#[derive(Debug, Clone, Copy, Default)]
struct ServerStats {
    stored: u64,
    duplicates: u64,
    refused: u64,
    rejected: u64,
    requests: u64,
}

/// What one connection did, for the `--listen` log.
#[derive(Debug, Default)]
struct ConnReport {
    stored: u64,
    duplicates: u64,
    refused: u64,
    rejected: u64,
    requests: u64,
    ignored: u64,
    first_problem: Option<String>,
}

impl SyncServer {
    fn new(key: SigningKey, service_name: String, fault: Fault) -> Self {
        Self {
            responder: Responder::new(HandshakeConfig::default())
                .with_service_name(service_name.as_bytes()),
            key,
            service_name,
            fault,
            store: Mutex::new(Store::default()),
            stored: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            requests: AtomicU64::new(0),
        }
    }

    fn stats(&self) -> ServerStats {
        ServerStats {
            stored: self.stored.load(Ordering::Relaxed),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
        }
    }

    /// Accepts connections until the task is dropped; at most
    /// [`MAX_CONNECTIONS`] are served at once.
    async fn serve(self: Arc<Self>, listener: TcpListener, transport: TransportArg, log: bool) {
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        loop {
            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                return;
            };
            let Ok((stream, peer_addr)) = listener.accept().await else {
                // Out of file descriptors, say: back off a little.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let this = Arc::clone(&self);
            tokio::spawn(async move {
                let result = this.accept(stream, transport).await;
                drop(slot);
                if log {
                    match result {
                        Ok((peer, r)) => println!(
                            "  {peer_addr} peer {}: {} commits stored ({} duplicate, {} refused, {} rejected), {} sync request(s) answered{}",
                            short(peer),
                            r.stored,
                            r.duplicates,
                            r.refused,
                            r.rejected,
                            r.requests,
                            r.first_problem.map(|p| format!("; {p}")).unwrap_or_default()
                        ),
                        Err(e) => println!("  {peer_addr}: {e}"),
                    }
                }
            });
        }
    }

    async fn accept(
        &self,
        stream: TcpStream,
        transport: TransportArg,
    ) -> Result<(PeerId, ConnReport), AnyError> {
        stream.set_nodelay(true)?;
        let carrier: Carrier = match transport {
            TransportArg::Ws => Box::new(
                tokio::time::timeout(UPGRADE_TIMEOUT, websocket::accept(stream))
                    .await
                    .map_err(|_| "WebSocket upgrade timed out")??,
            ),
            TransportArg::Tcp => Box::new(FramedTransport::new(stream, Bijou64)),
        };
        let conn = Connection::accept(carrier, &self.key, &self.responder).await?;
        let peer = conn.remote_peer();
        Ok((peer, self.session(conn).await))
    }

    /// Serves one authenticated connection until it closes, fails or idles.
    async fn session(&self, mut conn: Connection<Carrier>) -> ConnReport {
        let mut report = ConnReport::default();
        let mut counter = 0u64;
        loop {
            let received = match tokio::time::timeout(IDLE_TIMEOUT, conn.recv()).await {
                Err(_) => {
                    report.first_problem = Some(format!("idle for {IDLE_TIMEOUT:?}, closed"));
                    break;
                }
                Ok(Err(e)) => {
                    report.first_problem = Some(format!("connection failed: {e}"));
                    break;
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(received))) => received,
            };
            let verified = match received.result {
                Ok(Delivered::Sync(verified)) => verified,
                // This server does not relay ephemeral messages.
                Ok(_) => continue,
                Err(why) => {
                    report.rejected += 1;
                    self.rejected.fetch_add(1, Ordering::Relaxed);
                    report.first_problem.get_or_insert_with(|| why.to_string());
                    continue;
                }
            };
            let reply = match verified.message {
                SyncMessage::LooseCommit(m) => {
                    self.receive_commit(m, &verified.items, &mut counter, &mut report)
                }
                SyncMessage::BatchSyncRequest(request) => {
                    report.requests += 1;
                    self.requests.fetch_add(1, Ordering::Relaxed);
                    counter += 1;
                    Some(self.answer(&request, counter).into())
                }
                _ => {
                    report.ignored += 1;
                    None
                }
            };
            if let Some(reply) = reply {
                if let Err(e) = conn.send(Message::Sync(reply)).await {
                    report.first_problem = Some(format!("send failed: {e}"));
                    break;
                }
            }
        }
        let _ = conn.close().await;
        report
    }

    /// Stores a verified commit; the HeadsUpdate to send if it was new.
    fn receive_commit(
        &self,
        m: BlobMessage<LooseCommit>,
        items: &[VerifiedItem],
        counter: &mut u64,
        report: &mut ConnReport,
    ) -> Option<SyncMessage> {
        // A LooseCommit that fails verification is rejected whole, so a
        // verified one has its item; check anyway.
        let Some(VerifiedItem::Commit(commit, _)) = items.first() else {
            report.ignored += 1;
            return None;
        };
        let payload = commit.payload();
        let stored = lock(&self.store).insert(m.id, payload.head(), payload.parents(), m.item);
        match stored {
            Stored::New { heads, commits } => {
                report.stored += 1;
                self.stored.fetch_add(1, Ordering::Relaxed);
                if self.fault == Fault::DropAck && commits == 2 {
                    return None;
                }
                *counter += 1;
                Some(SyncMessage::HeadsUpdate(HeadsUpdate {
                    id: m.id,
                    heads: RemoteHeads::new(*counter, heads),
                }))
            }
            Stored::Duplicate => {
                report.duplicates += 1;
                self.duplicates.fetch_add(1, Ordering::Relaxed);
                None
            }
            Stored::Refused(why) => {
                report.refused += 1;
                self.refused.fetch_add(1, Ordering::Relaxed);
                report.first_problem.get_or_insert_with(|| why.to_owned());
                None
            }
        }
    }

    /// The BatchSyncResponse to `request`: every stored commit whose
    /// fingerprint under the request's seed the requester did not list.
    fn answer(&self, request: &BatchSyncRequest, counter: u64) -> BatchSyncResponse {
        let (mut commits, requested, heads) = lock(&self.store).diff(request);
        match self.fault {
            Fault::OmitCommit => {
                commits.pop();
            }
            Fault::CorruptBlob => {
                if let Some(item) = commits.pop() {
                    let (signed, blob) = item.into_parts();
                    let mut bytes = blob.as_bytes().to_vec();
                    match bytes.first_mut() {
                        Some(b) => *b ^= 1,
                        None => bytes.push(0),
                    }
                    commits.push(SignedItem::new(signed, Blob::new(bytes)));
                }
            }
            Fault::ForeignCommit => {
                let blob = Blob::new(b"not pushed by anyone".to_vec());
                let commit =
                    LooseCommit::new(request.id, CommitId::new(rand::random()), [], blob.meta());
                if let Ok(signed) = Signed::seal(&self.key, &commit) {
                    commits.push(SignedItem::new(signed, blob));
                }
            }
            Fault::None | Fault::DropAck => {}
        }
        BatchSyncResponse {
            requestor: request.requestor,
            nonce: request.nonce,
            id: request.id,
            result: SyncResult::Ok(SyncDiff::new(
                commits,
                Vec::new(),
                requested,
                request.fragment_fingerprints().iter().copied(),
            )),
            responder_heads: RemoteHeads::new(counter, heads),
        }
    }
}

/// Every tree the server holds.
#[derive(Debug, Default)]
struct Store {
    trees: HashMap<SedimentreeId, Tree>,
    bytes: usize,
}

/// One tree: its commits in arrival order and its heads (commits no other
/// stored commit names as a parent).
#[derive(Debug, Default)]
struct Tree {
    commits: Vec<(CommitId, SignedItem<LooseCommit>)>,
    known: HashSet<CommitId>,
    referenced: HashSet<CommitId>,
    heads: BTreeSet<CommitId>,
    bytes: usize,
}

/// What storing a commit did.
#[derive(Debug)]
enum Stored {
    New {
        heads: Vec<CommitId>,
        commits: usize,
    },
    Duplicate,
    Refused(&'static str),
}

impl Store {
    /// Stores a verified commit, keyed by its head (the first one signed
    /// for a head wins, as in Subduction).
    fn insert(
        &mut self,
        tree: SedimentreeId,
        head: CommitId,
        parents: &[CommitId],
        item: SignedItem<LooseCommit>,
    ) -> Stored {
        let size = item.signed().len() + item.blob().len() + ITEM_OVERHEAD;
        if !self.trees.contains_key(&tree) && self.trees.len() >= MAX_TREES {
            return Stored::Refused("commit refused: the store holds its maximum of trees");
        }
        let total = self.bytes;
        let t = self.trees.entry(tree).or_default();
        if t.known.contains(&head) {
            return Stored::Duplicate;
        }
        if total + size > MAX_STORE_BYTES {
            return Stored::Refused("commit refused: the store is full");
        }
        if t.commits.len() >= MAX_COMMITS_PER_TREE || t.bytes + size > MAX_TREE_BYTES {
            return Stored::Refused("commit refused: the tree is full");
        }
        for parent in parents {
            t.heads.remove(parent);
            t.referenced.insert(*parent);
        }
        if !t.referenced.contains(&head) {
            t.heads.insert(head);
        }
        t.known.insert(head);
        t.commits.push((head, item));
        t.bytes += size;
        self.bytes += size;
        Stored::New {
            heads: t.heads.iter().copied().collect(),
            commits: t.commits.len(),
        }
    }

    /// The commits the requester lacks, the fingerprints it listed that
    /// match nothing here (what we would like in return), and our heads.
    fn diff(
        &self,
        request: &BatchSyncRequest,
    ) -> (
        Vec<SignedItem<LooseCommit>>,
        Vec<Fingerprint>,
        Vec<CommitId>,
    ) {
        let theirs: HashSet<Fingerprint> = request.commit_fingerprints().iter().copied().collect();
        let Some(tree) = self.trees.get(&request.id) else {
            return (Vec::new(), theirs.into_iter().collect(), Vec::new());
        };
        let mut ours = HashSet::with_capacity(tree.commits.len());
        let mut missing = Vec::new();
        for (head, item) in &tree.commits {
            let fp = request.seed.fingerprint(head);
            ours.insert(fp);
            if !theirs.contains(&fp) {
                missing.push(item.clone());
            }
        }
        let requested = theirs.difference(&ours).copied().collect();
        (missing, requested, tree.heads.iter().copied().collect())
    }
}

/// `--listen`: our server alone, until interrupted.
async fn listen(args: &Args, addr: SocketAddr) -> Result<(), AnyError> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let name = args
        .service_name
        .clone()
        .unwrap_or_else(|| addr.to_string());
    let server = Arc::new(SyncServer::new(new_key(), name, Fault::None));
    let id = server.key.peer_id();
    let (url, transport) = match args.transport {
        TransportArg::Ws => (format!("ws://{local}"), ""),
        TransportArg::Tcp => (local.to_string(), " --transport tcp"),
    };
    println!(
        "sync server S {id} listening on {}; service name {:?}; Ctrl-C to stop",
        Target::local(local, args.transport),
        server.service_name
    );
    println!("  connect with: cargo run --release --example sync -- --connect {url}{transport} --server-id {id}");
    println!(
        "           or: cargo run --release --example sync -- --connect {url}{transport} --service-name {:?}",
        server.service_name
    );
    server.serve(listener, args.transport, true).await;
    Ok(())
}

// ---------------------------------------------------------------- client

/// The commits to push, made and signed before the clock starts.
struct Plan {
    tree: SedimentreeId,
    commits: Vec<Planned>,
}

struct Planned {
    head: CommitId,
    /// The encoded LooseCommit message.
    frame: Bytes,
    /// The signed commit's bytes.
    signed: Bytes,
    blob: Bytes,
}

impl Plan {
    fn new(key: &SigningKey, seed: u64, count: usize, blob_size: usize) -> Result<Self, AnyError> {
        let mut rng = StdRng::seed_from_u64(seed);
        let tree = SedimentreeId::new(rand::random());
        let mut parent: Option<CommitId> = None;
        let mut commits = Vec::with_capacity(count);
        for counter in 1..=count as u64 {
            let mut blob = vec![0u8; blob_size];
            rng.fill_bytes(&mut blob);
            let blob = Blob::new(blob);
            let head = CommitId::new(rng.random());
            let commit = LooseCommit::new(tree, head, parent, blob.meta());
            parent = Some(head);
            let signed = Signed::seal(key, &commit)?;
            let msg = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
                id: tree,
                sender_heads: RemoteHeads::new(counter, [head]),
                item: SignedItem::new(signed.clone(), blob.clone()),
            }));
            commits.push(Planned {
                head,
                frame: msg.encode()?,
                signed: signed.into_bytes(),
                blob: blob.into_bytes(),
            });
        }
        Ok(Self { tree, commits })
    }
}

struct ClientJob {
    target: Target,
    audience: Audience,
    window: usize,
    ack_timeout: Duration,
    bar: ProgressBar,
}

/// Everything the client saw.
#[derive(Debug, Default)]
struct Outcome {
    pusher: Option<PeerId>,
    fetcher: Option<PeerId>,
    remote: Option<PeerId>,
    handshakes: (Duration, Duration),
    push: PushOutcome,
    fetch: FetchOutcome,
    server: Option<ServerStats>,
    expected: usize,
}

#[derive(Debug, Default)]
struct PushOutcome {
    acked: usize,
    unacked: usize,
    /// Messages from the server we could not accept.
    rejected: usize,
    /// Other messages (another tree, another kind), ignored.
    other: usize,
    bytes: u64,
    rtts: Vec<Duration>,
    elapsed: Duration,
    problems: Vec<String>,
}

#[derive(Debug, Default)]
struct FetchOutcome {
    answered: bool,
    returned: usize,
    identical: usize,
    rejected: usize,
    altered: usize,
    unexpected: usize,
    missing: usize,
    bytes: usize,
    elapsed: Duration,
    last_is_head: bool,
    problems: Vec<String>,
}

/// Connection 1 pushes, then connection 2 fetches.
async fn client(job: &ClientJob, key_a: SigningKey, plan: &Plan) -> Result<Outcome, AnyError> {
    let mut outcome = Outcome {
        expected: plan.commits.len(),
        ..Outcome::default()
    };
    let (mut conn, handshake) = job.target.open(&key_a, job.audience).await?;
    outcome.pusher = Some(conn.local_peer());
    outcome.remote = Some(conn.remote_peer());
    outcome.handshakes.0 = handshake;
    outcome.push = push(&mut conn, plan, job).await;
    let _ = conn.close().await;

    let key_b = new_key();
    let (mut conn, handshake) = job.target.open(&key_b, job.audience).await?;
    outcome.fetcher = Some(conn.local_peer());
    outcome.handshakes.1 = handshake;
    outcome.fetch = fetch(
        &mut conn,
        plan,
        job.ack_timeout.max(Duration::from_secs(10)),
    )
    .await;
    let _ = conn.close().await;
    Ok(outcome)
}

/// Sends the commits, up to `window` in flight, and matches each to the
/// HeadsUpdate that names it.
async fn push(conn: &mut Connection<Carrier>, plan: &Plan, job: &ClientJob) -> PushOutcome {
    let mut out = PushOutcome {
        rtts: Vec::with_capacity(plan.commits.len()),
        ..PushOutcome::default()
    };
    let started = Instant::now();
    let index: HashMap<CommitId, usize> = plan
        .commits
        .iter()
        .enumerate()
        .map(|(i, c)| (c.head, i))
        .collect();
    let mut pending: VecDeque<(usize, Instant)> = VecDeque::with_capacity(job.window);
    let mut next = 0;
    loop {
        while pending.len() < job.window && next < plan.commits.len() {
            let frame = plan.commits[next].frame.clone();
            let len = frame.len() as u64;
            let at = Instant::now();
            if let Err(e) = conn.send_bytes(frame).await {
                out.problems
                    .push(format!("sending commit #{} failed: {e}", next + 1));
                break;
            }
            out.bytes += len;
            pending.push_back((next, at));
            next += 1;
        }
        let Some(&(oldest, sent_at)) = pending.front() else {
            break;
        };
        let deadline = tokio::time::Instant::from_std(sent_at + job.ack_timeout);
        let received = match tokio::time::timeout_at(deadline, conn.recv()).await {
            Err(_) => {
                pending.pop_front();
                out.unacked += 1;
                out.problems.push(format!(
                    "no HeadsUpdate naming commit #{} within {:?}",
                    oldest + 1,
                    job.ack_timeout
                ));
                continue;
            }
            Ok(Err(e)) => {
                out.problems.push(format!("connection 1 failed: {e}"));
                break;
            }
            Ok(Ok(None)) => {
                out.problems
                    .push("the server closed connection 1".to_owned());
                break;
            }
            Ok(Ok(Some(received))) => received,
        };
        let now = Instant::now();
        match received.result {
            Ok(Delivered::Sync(VerifiedMessage {
                message: SyncMessage::HeadsUpdate(update),
                ..
            })) if update.id == plan.tree => {
                // Cumulative: the newest of our commits it names covers
                // every pending commit sent before it.
                let newest = update
                    .heads
                    .heads()
                    .iter()
                    .filter_map(|h| index.get(h))
                    .max();
                let Some(&newest) = newest else {
                    out.other += 1;
                    continue;
                };
                pending.retain(|&(i, at)| {
                    if i <= newest {
                        out.rtts.push(now.duration_since(at));
                        out.acked += 1;
                        job.bar.inc(1);
                        false
                    } else {
                        true
                    }
                });
            }
            Ok(_) => out.other += 1,
            Err(why) => {
                out.rejected += 1;
                out.problems
                    .push(format!("rejected a server message: {why}"));
            }
        }
    }
    // Whatever is still pending or unsent when the loop broke off.
    out.unacked += pending.len() + (plan.commits.len() - next);
    out.elapsed = started.elapsed();
    out
}

/// Asks for the whole tree and checks the answer against the plan.
async fn fetch(conn: &mut Connection<Carrier>, plan: &Plan, wait: Duration) -> FetchOutcome {
    let mut out = FetchOutcome::default();
    let nonce: u64 = rand::random();
    let seed = FingerprintSeed::new(rand::random(), rand::random());
    let me = conn.local_peer();
    let request = BatchSyncRequest::new(plan.tree, me, nonce, false, seed, [], []);
    let started = Instant::now();
    if let Err(e) = conn.send(Message::Sync(request.into())).await {
        out.problems
            .push(format!("sending the BatchSyncRequest failed: {e}"));
        out.missing = plan.commits.len();
        return out;
    }
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let received = match tokio::time::timeout_at(deadline, conn.recv()).await {
            Err(_) => {
                out.problems
                    .push(format!("no BatchSyncResponse within {wait:?}"));
                break;
            }
            Ok(Err(e)) => {
                out.problems.push(format!("connection 2 failed: {e}"));
                break;
            }
            Ok(Ok(None)) => {
                out.problems
                    .push("the server closed connection 2".to_owned());
                break;
            }
            Ok(Ok(Some(received))) => received,
        };
        let verified = match received.result {
            Ok(Delivered::Sync(verified)) => verified,
            Ok(_) => continue,
            Err(why) => {
                out.problems
                    .push(format!("rejected a server message: {why}"));
                continue;
            }
        };
        let SyncMessage::BatchSyncResponse(response) = &verified.message else {
            continue;
        };
        if response.nonce != nonce || response.id != plan.tree {
            continue;
        }
        out.elapsed = started.elapsed();
        out.bytes = received.bytes.len();
        if response.requestor != me {
            out.problems
                .push("the response names another requestor".to_owned());
        }
        check_response(&mut out, plan, response, &verified.rejected);
        return out;
    }
    out.missing = plan.commits.len();
    out
}

/// Checks a BatchSyncResponse: every item verified, each one a commit we
/// pushed, byte for byte, and none missing.
fn check_response(
    out: &mut FetchOutcome,
    plan: &Plan,
    response: &BatchSyncResponse,
    rejected: &[RejectedItem],
) {
    out.answered = true;
    if let Some(last) = plan.commits.last() {
        out.last_is_head = response.responder_heads.heads().contains(&last.head);
    }
    let diff = match &response.result {
        SyncResult::Ok(diff) => diff,
        other => {
            out.problems.push(format!("the server answered {other:?}"));
            out.missing = plan.commits.len();
            return;
        }
    };
    let sent: HashMap<&[u8], usize> = plan
        .commits
        .iter()
        .enumerate()
        .map(|(i, c)| (c.signed.as_ref(), i))
        .collect();
    let bad: HashMap<usize, &RejectedItem> = rejected.iter().map(|r| (r.index, r)).collect();
    let mut seen = HashSet::with_capacity(plan.commits.len());
    out.returned = diff.commits().len();
    for (index, item) in diff.commits().iter().enumerate() {
        if let Some(why) = bad.get(&index) {
            out.rejected += 1;
            out.problems.push(format!("returned commit {why}"));
            continue;
        }
        match sent.get(item.signed().as_bytes()) {
            Some(&i) if item.blob().as_bytes() == plan.commits[i].blob.as_ref() => {
                if seen.insert(i) {
                    out.identical += 1;
                }
            }
            Some(&i) => {
                out.altered += 1;
                out.problems
                    .push(format!("commit #{}'s blob came back altered", i + 1));
            }
            None => {
                out.unexpected += 1;
                out.problems.push(format!(
                    "returned commit {index} is not one we pushed (signed by {})",
                    short(item.signed().peer_id())
                ));
            }
        }
    }
    if !diff.fragments().is_empty() {
        out.unexpected += diff.fragments().len();
        out.problems.push(format!(
            "{} fragments returned, none pushed",
            diff.fragments().len()
        ));
    }
    out.missing = plan.commits.len() - out.identical;
    if out.missing > 0 {
        let first = (0..plan.commits.len()).find(|i| !seen.contains(i));
        if let Some(i) = first {
            out.problems.push(format!(
                "{} pushed commits did not come back (first: #{})",
                out.missing,
                i + 1
            ));
        }
    }
}

// ---------------------------------------------------------------- report

impl Outcome {
    fn ok(&self) -> bool {
        let (p, f) = (&self.push, &self.fetch);
        self.expected > 0
            && p.acked == self.expected
            && p.unacked == 0
            && p.rejected == 0
            && f.answered
            && f.identical == self.expected
            && f.rejected == 0
            && f.altered == 0
            && f.unexpected == 0
            && f.missing == 0
            && p.problems.is_empty()
            && f.problems.is_empty()
    }

    fn print(&self, plan: &Plan, window: usize) {
        let (p, f) = (&self.push, &self.fetch);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        if let (Some(a), Some(b), Some(s)) = (self.pusher, self.fetcher, self.remote) {
            println!(
                "  handshake    ok: A {}.. (push) and B {}.. (fetch) <-> S {}.. in {:.2} / {:.2} ms",
                short(a),
                short(b),
                short(s),
                ms(self.handshakes.0),
                ms(self.handshakes.1)
            );
        }
        println!(
            "  push         {}/{} commits acknowledged by a HeadsUpdate",
            p.acked, self.expected
        );
        println!(
            "  bytes        {:.2} MB pushed ({:.0} B per message on average)",
            p.bytes as f64 / 1e6,
            p.bytes as f64 / plan.commits.len().max(1) as f64
        );
        let secs = p.elapsed.as_secs_f64().max(1e-9);
        println!(
            "  throughput   {:.0} commits/s, {:.1} MB/s in {:.2} s",
            p.acked as f64 / secs,
            p.bytes as f64 / 1e6 / secs,
            secs
        );
        let mut rtts = p.rtts.clone();
        rtts.sort_unstable();
        let pct = |q: f64| -> String {
            let idx = ((rtts.len().saturating_sub(1)) as f64 * q).round() as usize;
            rtts.get(idx)
                .map_or("-".to_owned(), |d| format!("{:.2} ms", ms(*d)))
        };
        println!(
            "  round trip   p50 {}, p99 {} (LooseCommit sent -> HeadsUpdate received, up to {window} in flight)",
            pct(0.50),
            pct(0.99)
        );
        if f.answered {
            println!(
                "  fetch        {}/{} commits back, byte for byte, in one BatchSyncResponse of {:.2} MB in {:.2} ms{}",
                f.identical,
                self.expected,
                f.bytes as f64 / 1e6,
                ms(f.elapsed),
                if f.last_is_head {
                    "; server heads: the last commit"
                } else {
                    "; server heads do not name the last commit"
                }
            );
        } else {
            println!("  fetch        no BatchSyncResponse");
        }
        if let Some(s) = self.server {
            println!(
                "  server       stored {} commits ({} duplicate, {} refused, {} rejected), answered {} sync request(s)",
                s.stored, s.duplicates, s.refused, s.rejected, s.requests
            );
        }
        println!(
            "  problems     unacked {}, rejected {}, altered {}, unexpected {}, missing {}",
            p.unacked,
            p.rejected + f.rejected,
            f.altered,
            f.unexpected,
            f.missing
        );
        const SHOWN: usize = 5;
        let problems: Vec<&String> = p.problems.iter().chain(&f.problems).collect();
        for why in problems.iter().take(SHOWN) {
            println!("  problem      {why}");
        }
        if problems.len() > SHOWN {
            println!("  problem      ... and {} more", problems.len() - SHOWN);
        }
        println!("{}", if self.ok() { "OK" } else { "FAILED" });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Args {
        let mut argv = vec!["sync", "--seed", "7", "--timeout", "30"];
        argv.extend_from_slice(extra);
        Args::try_parse_from(argv).expect("valid flags")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn default_run_pushes_and_fetches_every_commit() {
        let a = args(&["--count", "40"]);
        assert_eq!(
            (a.transport, a.window, a.blob_size),
            (TransportArg::Ws, 1, 1024)
        );
        let outcome = run(&a).await.expect("runs");
        assert!(outcome.ok(), "{outcome:?}");
        assert_eq!(outcome.push.rtts.len(), 40);
        assert_eq!(outcome.fetch.identical, 40);
        assert!(outcome.fetch.last_is_head);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tcp_pipelined_and_service_name_runs_succeed() {
        let a = args(&["--count", "60", "--transport", "tcp", "--window", "8"]);
        assert!(run(&a).await.expect("runs").ok());
        let a = args(&[
            "--count",
            "20",
            "--service-name",
            "sync.test",
            "--blob-size",
            "0",
        ]);
        assert!(run(&a).await.expect("runs").ok());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn server_mistakes_are_detected() {
        let cases = [
            (Fault::DropAck, "unacked"),
            (Fault::OmitCommit, "missing"),
            (Fault::CorruptBlob, "rejected"),
            (Fault::ForeignCommit, "unexpected"),
        ];
        for (fault, what) in cases {
            let mut a = args(&["--count", "10", "--ack-timeout", "300"]);
            a.fault = fault;
            let o = run(&a).await.expect("runs");
            assert!(!o.ok(), "{fault:?} went unnoticed");
            let count = match what {
                "unacked" => o.push.unacked,
                "missing" => o.fetch.missing,
                "rejected" => o.fetch.rejected,
                _ => o.fetch.unexpected,
            };
            assert_eq!(count, 1, "{fault:?}: {o:?}");
        }
    }

    #[tokio::test]
    async fn a_response_that_cannot_fit_is_refused_up_front() {
        let a = args(&["--count", "65535", "--blob-size", "1024"]);
        let err = run(&a).await.expect_err("too big");
        assert!(err.to_string().contains("would not fit"), "{err}");
        assert!(Args::try_parse_from(["sync", "--count", "0"]).is_err());
        assert!(Args::try_parse_from(["sync", "--count", "65536"]).is_err());
    }

    #[test]
    fn server_ids_parse_from_hex() {
        let id = PeerId::from_bytes([0xAB; 32]);
        let parse = |s: &str| {
            Args::try_parse_from(["sync", "--connect", "ws://127.0.0.1:1", "--server-id", s])
        };
        assert_eq!(
            parse(&id.to_string()).map(|a| a.server_id).ok(),
            Some(Some(id))
        );
        assert!(parse("abcd").is_err());
        assert!(parse(&"zz".repeat(32)).is_err());
        // A server id needs --connect and excludes a service name.
        assert!(Args::try_parse_from(["sync", "--server-id", &id.to_string()]).is_err());
        let both = [
            "sync",
            "--connect",
            "ws://h:1",
            "--server-id",
            &"ab".repeat(32),
            "--service-name",
            "x",
        ];
        assert!(Args::try_parse_from(both).is_err());
    }

    #[test]
    fn the_default_service_name_is_the_servers_host_and_port() {
        let t = Target::parse("ws://127.0.0.1:8080/sync", TransportArg::Ws);
        assert_eq!(t.authority(), "127.0.0.1:8080");
        let t = Target::parse("sync.example.com:443", TransportArg::Ws);
        assert!(matches!(&t, Target::Ws(url) if url == "ws://sync.example.com:443/"));
        assert_eq!(t.authority(), "sync.example.com:443");
        let t = Target::parse("10.0.0.1:7", TransportArg::Tcp);
        assert_eq!(t.authority(), "10.0.0.1:7");
    }

    #[test]
    fn heads_follow_the_chain_and_duplicates_are_not_new() {
        let key = new_key();
        let plan = Plan::new(&key, 1, 3, 8).expect("plan");
        let mut store = Store::default();
        let decode = |p: &Planned| {
            let Ok(Message::Sync(SyncMessage::LooseCommit(m))) = Message::decode(p.frame.clone())
            else {
                panic!("a LooseCommit")
            };
            m
        };
        let mut parent: Option<CommitId> = None;
        for p in &plan.commits {
            let m = decode(p);
            let parents: Vec<CommitId> = parent.into_iter().collect();
            let stored = store.insert(plan.tree, p.head, &parents, m.item);
            assert!(matches!(stored, Stored::New { ref heads, .. } if heads == &[p.head]));
            parent = Some(p.head);
        }
        let again = decode(&plan.commits[0]);
        assert!(matches!(
            store.insert(plan.tree, plan.commits[0].head, &[], again.item),
            Stored::Duplicate
        ));
        // A request listing the first commit's fingerprint gets the other two.
        let seed = FingerprintSeed::new(1, 2);
        let listed = [
            seed.fingerprint(&plan.commits[0].head),
            Fingerprint::from_u64(9),
        ];
        let request = BatchSyncRequest::new(plan.tree, key.peer_id(), 5, false, seed, listed, []);
        let (missing, requested, heads) = store.diff(&request);
        assert_eq!(missing.len(), 2);
        assert_eq!(requested, vec![Fingerprint::from_u64(9)]);
        assert_eq!(heads, vec![plan.commits[2].head]);
    }
}
