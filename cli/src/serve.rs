//! `bijou serve`: a bounded, in-memory sync peer for trying clients.
//!
//! It speaks the Subduction sync protocol over WebSocket (the default) or
//! length-prefixed TCP, keeps every tree in one in-memory store shared by
//! all connections, and forgets everything when it stops. Bounds: at most
//! 256 connections at a time by default (`--max-connections`; more wait in
//! the kernel's backlog of 4,096, or `somaxconn` if lower), 120 s idle per
//! connection (and a reply the peer does not read is dropped after as
//! long)
//! (`--idle-timeout`; a connection that sends a byte at a time is ended
//! then too, since only a whole message counts), 10 s for the WebSocket
//! upgrade and 10 s for the handshake, 1024 trees, 65,535 commits per tree
//! (what one SyncDiff can carry) and 48 MiB per tree (so a whole tree fits
//! one 50 MiB response), 256 MiB in all. A commit beyond a cap is refused
//! without a reply, as Subduction does. It answers to its key and to its
//! service name. It does not push updates to subscribers and stores no
//! fragments.
//!
//! What an idle authenticated connection costs it (heaptrack over 5,000,
//! release; `bijou load` measures the sum, 1,316 B over framed TCP and
//! 1,436 B over WebSocket at 100,000):
//!
//! ```text
//! the connection's task (its future inline, see `session`)   896 B
//! tokio's I/O registration of the socket                      256 B
//! FramedTransport / WebSocketTransport (no buffer while idle) 144 / 246 B
//! the replay cache's entry for its challenge's nonce           21 B
//! timers, wakeups while idle                                    0
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bijou_frame::framing::prefix::PrefixKind;
use bijou_frame::net::handshake::ConnectConfig;
use bijou_frame::net::handshake::ConnectError;
use bijou_frame::net::transport::websocket;
use bijou_frame::net::{Connection, ErrorKind};
use bijou_frame::proto::handshake::{HandshakeConfig, Responder};
use bijou_frame::proto::message::{
    BatchSyncRequest, BatchSyncResponse, BlobMessage, CommitId, Fingerprint, HeadsUpdate,
    LooseCommit, Message, RemoteHeads, SedimentreeId, SignedItem, SyncDiff, SyncMessage,
    SyncResult, VerifiedItem,
};
use bijou_frame::proto::replay_table::{ReplayTable, ReplayTableConfig};
use bijou_frame::proto::session::{Delivered, Received};
use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Identity, PeerId, Signed};
use tokio::net::{TcpListener, TcpStream};

use crate::accept;
use crate::cap::{Cap, GaveUp};
use crate::exit::Failure;
use crate::figures::short;
use crate::target::{framed, Carrier, Target, TransportArg, CONNECT_TIMEOUT};
use crate::AnyError;

/// Run a bounded, in-memory sync peer, for trying clients.
///
/// It keeps nothing across restarts: every tree lives in memory, capped
/// (1024 trees, 48 MiB each, 256 MiB in all, 256 connections by default). Real
/// deployments run a Subduction node (`subduction_cli server`); this is
/// for trying `bijou sync` and your own clients against.
///
/// Example:
///   bijou serve --listen 127.0.0.1:7879
///   bijou sync --connect ws://127.0.0.1:7879        # in another terminal
///   bijou serve --listen 127.0.0.1:7880 --transport tcp --key server.key
///
/// Exit codes: 2 the address cannot be bound or the key file is bad;
/// otherwise it runs until interrupted (Ctrl-C).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Listen on ADDR (HOST:PORT).
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// ws: one binary WebSocket message per message (as Subduction
    /// speaks); tcp: length-prefixed frames; iroh: QUIC (UDP on the same
    /// address; needs the `iroh` feature).
    #[arg(long, value_enum, default_value_t = TransportArg::Ws)]
    pub transport: TransportArg,
    /// Length prefix with --transport tcp: bijou64, leb128 or u32-be.
    #[arg(long, default_value_t = PrefixKind::Bijou64)]
    pub prefix: PrefixKind,
    /// The service name clients may address (default: the address it
    /// listens on, port included, as `subduction_cli server` defaults to
    /// its --socket).
    #[arg(long, value_name = "NAME")]
    pub service_name: Option<String>,
    /// The server's key file (default: a new key for this run).
    #[arg(long, value_name = "KEY")]
    pub key: Option<PathBuf>,
    /// Connections served at once; more wait in the kernel's backlog,
    /// unanswered. Reaching it is said (at most once every 10 s), and the
    /// connections whose clients gave up waiting are summed in one line
    /// every 10 s. The process raises its file-descriptor limit to fit
    /// them, or says how many it needs.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub max_connections: u64,
    /// Seconds a connection may go without a whole message before it is
    /// closed.
    #[arg(long, value_name = "SECS", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout: u64,
    /// Share the port with other `bijou serve --reuse-port` processes
    /// (SO_REUSEPORT: the kernel spreads new connections over them). For
    /// measuring crowds larger than one process's file-descriptor limit,
    /// not for serving: each process keeps its own store and its own
    /// replay cache (a challenge replayed to another of them within the
    /// clock drift is accepted there), and, without --key, its own key.
    #[arg(long)]
    pub reuse_port: bool,
    /// Write the server's figures to FILE every second: its pid, heap
    /// (live and peak, counted by its allocator), open connections,
    /// handshakes, refusals by reason (`bijou load --server-stats` reads
    /// it).
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// No log line for each connection that ends.
    #[arg(long)]
    pub quiet: bool,
}

/// A mistake our server makes on purpose, so the tests can check the
/// client notices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))] // set by the tests only
pub enum Fault {
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
    /// No answer to the first BatchSyncRequest that has commits to return
    /// (as Subduction's long-poll server loses a response that does not
    /// arrive).
    DropFetchAnswer,
}

/// Connections our server serves at once, by default.
const MAX_CONNECTIONS: usize = 256;
/// How long our server waits for a connection's next message, by default.
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
pub const ITEM_OVERHEAD: usize = 256;

/// `println!` that ignores a closed stdout: a server keeps serving when
/// whoever started it stops reading its log.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------------- server

/// Our minimal sync server: one in-memory store shared by every
/// connection.
pub struct SyncServer {
    pub key: SigningKey,
    responder: Responder,
    /// How connections are accepted: one replay table for all, so an
    /// ephemeral message replayed on a peer's next connection is refused.
    connect: ConnectConfig,
    pub service_name: String,
    fault: Fault,
    store: Mutex<Store>,
    stored: AtomicU64,
    duplicates: AtomicU64,
    refused: AtomicU64,
    rejected: AtomicU64,
    requests: AtomicU64,
    /// [`Fault::DropFetchAnswer`] has dropped its answer.
    fault_spent: std::sync::atomic::AtomicBool,
    limits: Limits,
    /// Authenticated connections being served now.
    open: AtomicU64,
    /// Handshakes completed.
    handshakes: AtomicU64,
    /// Connections closed for idling.
    idle_closed: AtomicU64,
    /// Connections that ended before their session, by why
    /// ([`refusal_reason`]).
    refusals: Mutex<BTreeMap<&'static str, u64>>,
    /// [`Limits::max_connections`], and when it was reached.
    cap: Cap,
}

/// A connection that ended before its session.
#[derive(Debug)]
struct Refused {
    error: AnyError,
    /// Its peer went away before authenticating (see [`went_away`]).
    went_away: bool,
}

impl<E: Into<AnyError>> From<E> for Refused {
    fn from(error: E) -> Self {
        Self {
            error: error.into(),
            went_away: false,
        }
    }
}

/// Whether a connection whose upgrade or handshake failed this way was
/// closed by its peer before it authenticated: what a client that gave up
/// waiting in the backlog leaves behind. Never a transport mismatch (one
/// is [`ErrorKind::Protocol`]: a request that is not HTTP, another
/// framing's bytes).
fn went_away(kind: ErrorKind) -> bool {
    kind == ErrorKind::Closed
}

/// The accepting side's settings: the defaults, and one replay table
/// (its default bounds) for every connection.
fn accept_config() -> ConnectConfig {
    let mut config = ConnectConfig::default();
    config.replay_table = Some(ReplayTable::new(
        ReplayTableConfig::default(),
        rand::random(),
    ));
    config
}

/// How many connections our server serves at once and how long each may
/// idle.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: MAX_CONNECTIONS,
            idle_timeout: IDLE_TIMEOUT,
        }
    }
}

/// What the server did, for the summary.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerStats {
    pub stored: u64,
    pub duplicates: u64,
    pub refused: u64,
    pub rejected: u64,
    pub requests: u64,
}

/// The `refused_*` figure a failed handshake counts in.
fn refusal_reason(e: &ConnectError) -> &'static str {
    match e.kind() {
        ErrorKind::TimedOut => "handshake_timeout",
        ErrorKind::Closed => "closed_in_handshake",
        ErrorKind::Rejected => "challenge_refused",
        ErrorKind::TooLarge => "handshake_too_large",
        ErrorKind::Io => "io",
        _ => "handshake_protocol",
    }
}

/// Whether a fetch's answer returns any commit.
fn answer_has_commits(answer: &BatchSyncResponse) -> bool {
    matches!(&answer.result, SyncResult::Ok(diff) if !diff.commits().is_empty())
}

/// The `--listen` log line of one connection (`who`: its address, or its
/// transport where it has none). A connection whose peer went away before
/// authenticating, while the server was at its cap lately, is only
/// counted: `cap` sums such connections in one line now and then.
fn log_connection(cap: &Cap, who: &str, result: Result<(PeerId, ConnReport), Refused>) {
    match result {
        Ok((peer, r)) => say!(
            "  {who} peer {}: {} commits stored ({} duplicate, {} refused, {} rejected), {} sync request(s) answered{}",
            short(peer),
            r.stored,
            r.duplicates,
            r.refused,
            r.rejected,
            r.requests,
            r.first_problem.map(|p| format!("; {p}")).unwrap_or_default()
        ),
        Err(Refused {
            went_away: true,
            error,
        }) => match cap.gave_up_at(cap.now()) {
            GaveUp::AtCap(Some(line)) => say!("{line}"),
            GaveUp::AtCap(None) => {}
            GaveUp::Elsewhere => say!("  {who}: {error}"),
        },
        Err(Refused { error, .. }) => say!("  {who}: {error}"),
    }
}

/// Says, every [`Cap::SAY_EVERY`], the connections put down to the cap
/// and not said yet (the last of a burst); never returns.
async fn say_unsaid(cap: &Cap) {
    let mut tick = tokio::time::interval(Cap::SAY_EVERY);
    loop {
        tick.tick().await;
        if let Some(line) = cap.unsaid_at(cap.now()) {
            say!("{line}");
        }
    }
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
    pub fn new(key: SigningKey, service_name: String, fault: Fault) -> Self {
        Self {
            responder: Responder::new(HandshakeConfig::default())
                .with_service_name(service_name.as_bytes()),
            connect: accept_config(),
            key,
            service_name,
            fault,
            store: Mutex::new(Store::default()),
            stored: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            fault_spent: std::sync::atomic::AtomicBool::new(false),
            limits: Limits::default(),
            cap: Cap::new(MAX_CONNECTIONS, "--max-connections"),
            open: AtomicU64::new(0),
            handshakes: AtomicU64::new(0),
            idle_closed: AtomicU64::new(0),
            refusals: Mutex::new(BTreeMap::new()),
        }
    }

    /// The same server with other [`Limits`].
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self.cap = Cap::new(limits.max_connections, "--max-connections");
        self
    }

    /// The figures `--stats` writes: pid, heap, connections and refusals.
    pub fn figures(&self) -> Vec<(String, u64)> {
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let mut figures = vec![
            ("pid".to_owned(), u64::from(std::process::id())),
            ("heap".to_owned(), crate::heap::live() as u64),
            ("heap_peak".to_owned(), crate::heap::peak() as u64),
            ("open".to_owned(), load(&self.open)),
            ("handshakes".to_owned(), load(&self.handshakes)),
            ("idle_closed".to_owned(), load(&self.idle_closed)),
            ("stored".to_owned(), load(&self.stored)),
            ("requests".to_owned(), load(&self.requests)),
        ];
        let refusals = lock(&self.refusals);
        figures.push(("refused".to_owned(), refusals.values().sum()));
        figures.extend(
            refusals
                .iter()
                .map(|(why, n)| (format!("refused_{why}"), *n)),
        );
        figures
    }

    /// Counts a connection that ended before its session.
    fn refused(&self, why: &'static str) {
        *lock(&self.refusals).entry(why).or_default() += 1;
    }

    pub fn stats(&self) -> ServerStats {
        ServerStats {
            stored: self.stored.load(Ordering::Relaxed),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
        }
    }

    /// Accepts connections until the task is dropped; at most
    /// [`Limits::max_connections`] are served at once.
    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        transport: TransportArg,
        prefix: PrefixKind,
        log: bool,
    ) {
        if log {
            tokio::select! {
                () = Arc::clone(&self).serve_logged(listener, transport, prefix, log) => {}
                () = say_unsaid(&self.cap) => {}
            }
        } else {
            self.serve_logged(listener, transport, prefix, log).await;
        }
    }

    /// [`SyncServer::serve`], the connections logged if `log`.
    async fn serve_logged(
        self: Arc<Self>,
        listener: TcpListener,
        transport: TransportArg,
        prefix: PrefixKind,
        log: bool,
    ) {
        if transport == TransportArg::Longpoll {
            accept::serve_longpoll(&listener, &self.cap, |session| {
                let this = Arc::clone(&self);
                async move {
                    let result = this.accept_carrier(Box::new(session)).await;
                    if log {
                        log_connection(&this.cap, "long-poll", result);
                    }
                }
            })
            .await;
            return;
        }
        accept::serve_tcp(&listener, &self.cap, |(stream, peer_addr)| {
            let this = Arc::clone(&self);
            async move {
                let result = this.accept(stream, transport, prefix).await;
                if log {
                    log_connection(&this.cap, &peer_addr.to_string(), result);
                }
            }
        })
        .await;
    }

    async fn accept(
        &self,
        stream: TcpStream,
        transport: TransportArg,
        prefix: PrefixKind,
    ) -> Result<(PeerId, ConnReport), Refused> {
        stream.set_nodelay(true)?;
        // The upgrade's and the handshake's futures are boxed: the task
        // of an idle connection keeps only the session's (see the crate
        // docs' per-connection costs).
        let carrier: Carrier = match transport {
            TransportArg::Ws => match Box::pin(tokio::time::timeout(
                CONNECT_TIMEOUT,
                websocket::accept(stream),
            ))
            .await
            {
                Ok(Ok(ws)) => Box::new(ws),
                Ok(Err(e)) => {
                    self.refused("upgrade");
                    return Err(Refused {
                        went_away: went_away(e.kind()),
                        error: e.into(),
                    });
                }
                Err(_) => {
                    self.refused("upgrade_timeout");
                    return Err("WebSocket upgrade timed out".into());
                }
            },
            TransportArg::Tcp | TransportArg::Iroh => framed(stream, prefix),
            // Its TCP connections carry HTTP requests: `serve` hands them
            // to the long-poll server instead.
            TransportArg::Longpoll => {
                return Err("a long-poll TCP connection is not one session".into())
            }
        };
        self.accept_carrier(carrier).await
    }

    /// Runs the handshake and the session on an accepted transport.
    async fn accept_carrier(&self, carrier: Carrier) -> Result<(PeerId, ConnReport), Refused> {
        // The connection moves into the session's future inside a block,
        // so the task keeps its room once, not twice.
        let (peer, session) = {
            let conn = Box::pin(Connection::accept(
                carrier,
                &self.key,
                &self.responder,
                &self.connect,
            ))
            .await
            .map_err(|e| {
                self.refused(refusal_reason(&e));
                Refused {
                    went_away: went_away(e.kind()),
                    error: e.into(),
                }
            })?;
            (conn.remote_peer(), self.session(conn))
        };
        self.handshakes.fetch_add(1, Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::Relaxed);
        let report = session.await;
        self.open.fetch_sub(1, Ordering::Relaxed);
        Ok((peer, report))
    }

    /// [`SyncServer::serve`] over iroh: accepts QUIC connections on
    /// `endpoint` until the task is dropped, at most
    /// [`Limits::max_connections`] at once.
    #[cfg(feature = "iroh")]
    pub async fn serve_iroh(
        self: Arc<Self>,
        endpoint: bijou_frame::net::transport::iroh::Endpoint,
        log: bool,
    ) {
        use bijou_frame::net::transport::iroh;
        let endpoint = &endpoint;
        let accept = move || async move { endpoint.accept().await.map(Ok) };
        accept::serve_each(&self.cap, accept, |incoming| {
            let this = Arc::clone(&self);
            async move {
                let result = match iroh::accept_incoming(incoming).await {
                    Ok(transport) => this.accept_carrier(Box::new(transport)).await,
                    Err(e) => Err(e.into()),
                };
                if log {
                    log_connection(&this.cap, "iroh", result);
                }
            }
        })
        .await;
    }

    /// Serves one authenticated connection until it closes, fails or idles.
    ///
    /// While it waits, its future holds the connection, the report and
    /// the timed receive, nothing more: what a message needs (the
    /// message, its reply, the send) lives in blocks that end before the
    /// next wait, or in boxes.
    ///
    /// Not an `async fn`: one would keep the connection twice (its
    /// argument, and the local it is moved to); the block uses the
    /// captured connection in place.
    #[allow(clippy::manual_async_fn)] // on purpose: see above
    fn session(
        &self,
        mut conn: Connection<Carrier>,
    ) -> impl std::future::Future<Output = ConnReport> + Send + '_ {
        async move {
            let mut report = ConnReport::default();
            let mut counter = 0u64;
            let idle = self.limits.idle_timeout;
            loop {
                // A block, so that the message and its reply are gone before
                // the send is awaited (an async fn keeps a local's room until
                // its scope ends).
                let sending = {
                    let received = match tokio::time::timeout(idle, conn.recv()).await {
                        Err(_) => {
                            self.idle_closed.fetch_add(1, Ordering::Relaxed);
                            report.first_problem = Some(format!("idle for {idle:?}, closed"));
                            break;
                        }
                        Ok(Err(e)) => {
                            report.first_problem = Some(format!("connection failed: {e}"));
                            break;
                        }
                        Ok(Ok(None)) => break,
                        Ok(Ok(Some(received))) => received,
                    };
                    self.reply_to(received, &mut counter, &mut report)
                        .map(|reply| Box::pin(conn.send(Message::Sync(reply))))
                };
                let Some(sending) = sending else {
                    continue;
                };
                // A peer that asks and stops reading holds its answer
                // here: no longer than it may idle.
                match tokio::time::timeout(idle, sending).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        report.first_problem = Some(format!("send failed: {e}"));
                        break;
                    }
                    Err(_) => {
                        self.idle_closed.fetch_add(1, Ordering::Relaxed);
                        report.first_problem = Some(format!(
                            "a reply waited {idle:?} for the peer to read, closed"
                        ));
                        return report;
                    }
                }
            }
            // Bounded too: a peer that reads nothing cannot hold the close.
            let _ = tokio::time::timeout(idle, Box::pin(conn.close())).await;
            report
        }
    }

    /// What to answer a received message with, if anything.
    fn reply_to(
        &self,
        received: Received,
        counter: &mut u64,
        report: &mut ConnReport,
    ) -> Option<SyncMessage> {
        let verified = match received.result {
            Ok(Delivered::Sync(verified)) => verified,
            // This server does not relay ephemeral messages.
            Ok(_) => return None,
            Err(why) => {
                report.rejected += 1;
                self.rejected.fetch_add(1, Ordering::Relaxed);
                report.first_problem.get_or_insert_with(|| why.to_string());
                return None;
            }
        };
        match verified.message {
            SyncMessage::LooseCommit(m) => self.receive_commit(m, &verified.items, counter, report),
            SyncMessage::BatchSyncRequest(request) => {
                report.requests += 1;
                self.requests.fetch_add(1, Ordering::Relaxed);
                *counter += 1;
                let answer = self.answer(&request, *counter);
                let drop_it = self.fault == Fault::DropFetchAnswer
                    && answer_has_commits(&answer)
                    && !self.fault_spent.swap(true, Ordering::Relaxed);
                (!drop_it).then(|| answer.into())
            }
            _ => {
                report.ignored += 1;
                None
            }
        }
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
            Fault::None | Fault::DropAck | Fault::DropFetchAnswer => {}
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
pub struct Store {
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
pub enum Stored {
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
    pub fn insert(
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
    pub fn diff(
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

/// `bijou serve --transport iroh`: our server on a direct-only iroh
/// endpoint (no relays, no discovery), until interrupted.
#[cfg(feature = "iroh")]
async fn serve_iroh(args: &Args, key: SigningKey) -> Result<(), Failure> {
    let (endpoint, addr) = crate::target::iroh_listener(args.listen).await?;
    let name = args
        .service_name
        .clone()
        .unwrap_or_else(|| args.listen.to_string());
    let server = Arc::new(SyncServer::new(key, name, Fault::None).with_limits(limits(args)?));
    let id = server.key.peer_id();
    say!(
        "sync server S {id} listening on iroh {addr}; service name {:?}; in memory only, nothing is kept after it stops; Ctrl-C to stop",
        server.service_name
    );
    say!("  connect with: bijou sync --connect {addr} --server-id {id}");
    let figures = write_figures(Arc::clone(&server), args.stats.clone());
    tokio::select! {
        () = Arc::clone(&server).serve_iroh(endpoint.clone(), !args.quiet) => {}
        () = figures => {}
        _ = tokio::signal::ctrl_c() => say!("interrupted: stopping (the store is dropped)"),
    }
    endpoint.close().await;
    Ok(())
}

#[cfg(not(feature = "iroh"))]
async fn serve_iroh(_: &Args, _: SigningKey) -> Result<(), Failure> {
    Err(crate::target::no_iroh())
}

/// `bijou serve`: our server alone, until interrupted.
pub async fn run(args: &Args) -> Result<(), Failure> {
    let key = match &args.key {
        Some(path) => crate::keygen::read_key(path)?,
        None => crate::keygen::new_key()?,
    };
    if args.transport == TransportArg::Iroh {
        if args.reuse_port {
            return Err(Failure::input(
                "--reuse-port shares a TCP port; iroh listens on UDP: give it with ws or tcp",
            ));
        }
        return serve_iroh(args, key).await;
    }
    let limits = limits(args)?;
    let listener = listen(args.listen, args.reuse_port)
        .map_err(|e| Failure::input(format!("cannot listen on {}: {e}", args.listen)))?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure::input(format!("cannot listen on {}: {e}", args.listen)))?;
    let name = args
        .service_name
        .clone()
        .unwrap_or_else(|| local.to_string());
    let server = Arc::new(SyncServer::new(key, name, Fault::None).with_limits(limits));
    let id = server.key.peer_id();
    let connect = match args.transport {
        TransportArg::Ws | TransportArg::Iroh => format!("ws://{local}"),
        TransportArg::Longpoll => format!("http://{local}"),
        TransportArg::Tcp if args.prefix == PrefixKind::Bijou64 => format!("tcp://{local}"),
        TransportArg::Tcp => format!("tcp://{local} --prefix {}", args.prefix),
    };
    say!(
        "sync server S {id} listening on {}; service name {:?}; in memory only, nothing is kept after it stops; Ctrl-C to stop",
        Target::local(local, args.transport, args.prefix),
        server.service_name
    );
    say!("  connect with: bijou sync --connect {connect} --server-id {id}");
    say!(
        "           or: bijou sync --connect {connect} --service-name {:?}",
        server.service_name
    );
    let figures = write_figures(Arc::clone(&server), args.stats.clone());
    tokio::select! {
        () = server.serve(listener, args.transport, args.prefix, !args.quiet) => {}
        () = figures => {}
        _ = tokio::signal::ctrl_c() => say!("interrupted: stopping (the store is dropped)"),
    }
    Ok(())
}

/// `--max-connections` and `--idle-timeout`, once the file-descriptor
/// limit is raised to fit the connections.
fn limits(args: &Args) -> Result<Limits, Failure> {
    let limit = crate::fd_limit::raise();
    if args.max_connections.saturating_add(crate::fd_limit::SPARE) > limit {
        let what = format!("--max-connections {}", args.max_connections);
        return Err(Failure::input(format!(
            "{}; or run several `bijou serve --reuse-port` on one port",
            crate::fd_limit::shortage(&what, args.max_connections, limit)
        )));
    }
    Ok(Limits {
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        idle_timeout: Duration::from_secs(args.idle_timeout),
    })
}

/// A listener on `addr` with a backlog of 4,096 (a crowd connecting
/// waits there, not in SYN retries), sharing its port if `reuse_port`.
fn listen(addr: SocketAddr, reuse_port: bool) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    if reuse_port {
        socket.set_reuseport(true)?;
    }
    socket.bind(addr)?;
    socket.listen(4096)
}

/// Writes the server's figures to `path` every second, for ever (never
/// returns without `path`); a failed write is said once and retried.
async fn write_figures(server: Arc<SyncServer>, path: Option<PathBuf>) {
    let Some(path) = path else {
        return std::future::pending().await;
    };
    let mut said = false;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        if let Err(e) = crate::stats_file::write(&path, &server.figures()) {
            if !said {
                say!("cannot write the figures to {}: {e}", path.display());
                said = true;
            }
        }
    }
}
#[cfg(test)]
mod task_size {
    use super::*;
    use bijou_frame::proto::message::Audience;

    fn size_of_future<F: std::future::Future>(_: &F) -> usize {
        std::mem::size_of::<F>()
    }

    /// What an idle connection's task keeps is the future of `accept`:
    /// the handshake's and the upgrade's futures are boxed, the session
    /// keeps the connection once (not as an argument and a local), and
    /// a message and its reply are gone before the send is awaited.
    /// Without those, it is over 1,100 bytes (2,300 with the accept
    /// loop's `async move` wrapper, which `serve_each` avoids).
    #[tokio::test]
    async fn an_idle_connections_future_stays_under_800_bytes() {
        let (a, b) = tokio::io::duplex(4096);
        let (client, server_key) = (
            SigningKey::from_bytes(&[1; 32]),
            SigningKey::from_bytes(&[2; 32]),
        );
        let responder = Responder::new(HandshakeConfig::default());
        let config = ConnectConfig::default();
        let audience = Audience::Known(server_key.peer_id());
        let (_client, accepted) = tokio::join!(
            Connection::connect(framed(a, PrefixKind::Bijou64), &client, audience, &config),
            Connection::accept(
                framed(b, PrefixKind::Bijou64),
                &server_key,
                &responder,
                &config
            )
        );
        let server = SyncServer::new(server_key.clone(), "size".into(), Fault::None);
        let session = server.session(accepted.expect("handshake"));
        assert!(
            size_of_future(&session) <= 640,
            "session: {}",
            size_of_future(&session)
        );
        drop(session);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let stream = TcpStream::connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        let accept = server.accept(stream, TransportArg::Tcp, PrefixKind::Bijou64);
        assert!(
            size_of_future(&accept) <= 800,
            "accept: {}",
            size_of_future(&accept)
        );
    }
}

#[cfg(test)]
mod bounds {
    use super::*;
    use bijou_frame::framing::prefix::Bijou64;
    use bijou_frame::net::transport::FramedTransport;
    use bijou_frame::proto::message::Audience;
    use std::time::Instant;
    use tokio::io::AsyncWriteExt;

    /// A client key, the server's key, and a server whose connections may
    /// idle `idle`.
    fn server_idling(idle: Duration) -> (SigningKey, SigningKey, SyncServer) {
        let (client_key, server_key) = (
            SigningKey::from_bytes(&[1; 32]),
            SigningKey::from_bytes(&[2; 32]),
        );
        let limits = Limits {
            max_connections: 4,
            idle_timeout: idle,
        };
        let server =
            SyncServer::new(server_key.clone(), "bounds".into(), Fault::None).with_limits(limits);
        (client_key, server_key, server)
    }

    /// A peer that authenticates, announces a message and sends it a
    /// byte at a time (each byte well inside the idle timeout) is ended
    /// at the idle timeout all the same: only a whole message counts.
    #[tokio::test]
    async fn a_message_sent_a_byte_at_a_time_ends_at_the_idle_timeout() {
        let idle = Duration::from_millis(600);
        let (client_key, server_key, server) = server_idling(idle);
        let (a, b) = tokio::io::duplex(4096);
        let audience = Audience::Known(server_key.peer_id());
        let config = ConnectConfig::default();
        let connect = Connection::connect(
            FramedTransport::new(a, Bijou64),
            &client_key,
            audience,
            &config,
        );
        let started = Instant::now();
        let (client, served) = tokio::join!(
            async {
                let conn = connect.await.expect("handshake");
                let mut raw = conn.into_inner().into_inner();
                let mut prefix = Vec::new();
                bijou_frame::codec::bijou64::encode(1000, &mut prefix);
                raw.write_all(&prefix).await.expect("prefix");
                let mut sent = 0;
                // A byte every 100 ms, for up to 3 s.
                for _ in 0..30 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if raw.write_all(&[0]).await.is_err() {
                        break;
                    }
                    sent += 1;
                }
                sent
            },
            server.accept_carrier(framed(b, PrefixKind::Bijou64))
        );
        let (_, report) = served.expect("authenticated");
        let took = started.elapsed();
        assert!(client >= 5, "the peer kept sending: {client} bytes");
        assert!(
            took >= idle && took < Duration::from_secs(3),
            "ended after {took:?}"
        );
        let problem = report.first_problem.unwrap_or_default();
        assert!(problem.contains("idle for"), "{problem}");
        assert_eq!(server.idle_closed.load(Ordering::Relaxed), 1);
    }

    /// A peer that asks for a tree and stops reading holds the answer in
    /// the server's send no longer than the idle timeout (it used to wait
    /// for ever: a full tree's 48 MiB per such connection).
    #[tokio::test]
    async fn an_answer_nobody_reads_is_dropped_at_the_idle_timeout() {
        use bijou_frame::proto::message::{FingerprintSeed, SedimentreeId};
        let idle = Duration::from_millis(600);
        let (client_key, server_key, server) = server_idling(idle);
        // A 64 KiB pipe, and a 256 KiB tree to answer with.
        let (a, b) = tokio::io::duplex(64 << 10);
        let audience = Audience::Known(server_key.peer_id());
        let config = ConnectConfig::default();
        let tree = SedimentreeId::new([4; 32]);
        let client = async {
            let mut conn = Connection::connect(
                framed(a, PrefixKind::Bijou64),
                &client_key,
                audience,
                &config,
            )
            .await
            .expect("handshake");
            let blob = Blob::new(vec![7; 256 << 10]);
            let commit =
                SyncMessage::loose_commit(&client_key, tree, CommitId::new([1; 32]), [], blob)
                    .expect("commit");
            conn.send(Message::Sync(commit)).await.expect("push");
            let acked = conn.recv().await.expect("read").expect("an answer");
            assert!(acked.result.is_ok());
            let request = BatchSyncRequest::new(
                tree,
                client_key.peer_id(),
                1,
                false,
                FingerprintSeed::new(1, 2),
                [],
                [],
            );
            conn.send(Message::Sync(request.into())).await.expect("ask");
            // ... and read nothing more, holding the connection open.
            tokio::time::sleep(Duration::from_secs(5)).await;
            drop(conn);
        };
        let started = Instant::now();
        let served = tokio::select! {
            served = server.accept_carrier(framed(b, PrefixKind::Bijou64)) => served,
            () = client => panic!("the server held the answer for 5 s"),
        };
        let (_, report) = served.expect("authenticated");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        let problem = report.first_problem.unwrap_or_default();
        assert!(problem.contains("a reply waited"), "{problem}");
    }
}

#[cfg(test)]
mod went_away_tests {
    use super::*;
    use bijou_frame::net::transport::websocket::UpgradeError;
    use bijou_frame::net::transport::TransportError;

    /// What a client that gave up in the backlog leaves (a close before
    /// its challenge, a reset) is put down to it going away; a request
    /// that is not HTTP is a transport mismatch, and is not.
    #[test]
    fn a_peer_that_goes_away_is_told_from_a_transport_mismatch() {
        let closed = ConnectError::Closed {
            waiting_for: "challenge",
        };
        assert!(went_away(closed.kind()));
        let reset = TransportError::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(went_away(ConnectError::from(reset).kind()));
        let not_http = TransportError::Upgrade(UpgradeError::NotHttp {
            first: b"\x9eSUH".to_vec(),
            have: 4,
        });
        assert!(!went_away(not_http.kind()));
    }

    /// The server's line for a peer that closed before its challenge
    /// blames no transport; the client's, before the response, still
    /// says a WebSocket server closes a framed client like this.
    #[test]
    fn a_close_before_the_challenge_blames_no_transport() {
        let server_side = ConnectError::Closed {
            waiting_for: "challenge",
        }
        .to_string();
        assert!(!server_side.contains("transport"), "{server_side}");
        assert!(!server_side.contains("ws://"), "{server_side}");
        assert!(server_side.contains("went away"), "{server_side}");
        let client_side = ConnectError::Closed {
            waiting_for: "response",
        }
        .to_string();
        assert!(client_side.contains("ws:// URL"), "{client_side}");
    }
}
