//! `bijou serve`: a bounded, in-memory sync peer for trying clients.
//!
//! It speaks the Subduction sync protocol over WebSocket (the default) or
//! length-prefixed TCP, keeps every tree in one in-memory store shared by
//! all connections, and forgets everything when it stops. Bounds: at most
//! 256 connections at a time (more wait in the kernel's backlog), 120 s
//! idle per connection, 1024 trees, 65,535 commits per tree (what one
//! SyncDiff can carry) and 48 MiB per tree (so a whole tree fits one
//! 50 MiB response), 256 MiB in all. A commit beyond a cap is refused
//! without a reply, as Subduction does. It answers to its key and to its
//! service name. It does not push updates to subscribers and stores no
//! fragments.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bijou_frame::framing::prefix::PrefixKind;
use bijou_frame::net::handshake::ConnectConfig;
use bijou_frame::net::transport::websocket;
use bijou_frame::net::Connection;
use bijou_frame::proto::handshake::{HandshakeConfig, Responder};
use bijou_frame::proto::message::{
    BatchSyncRequest, BatchSyncResponse, BlobMessage, CommitId, Fingerprint, HeadsUpdate,
    LooseCommit, Message, RemoteHeads, SedimentreeId, SignedItem, SyncDiff, SyncMessage,
    SyncResult, VerifiedItem,
};
use bijou_frame::proto::session::Delivered;
use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Identity, PeerId, Signed};
use tokio::net::{TcpListener, TcpStream};

use crate::accept;
use crate::exit::Failure;
use crate::figures::short;
use crate::target::{framed, Carrier, Target, TransportArg, CONNECT_TIMEOUT};
use crate::AnyError;

/// Run a bounded, in-memory sync peer, for trying clients.
///
/// It keeps nothing across restarts: every tree lives in memory, capped
/// (1024 trees, 48 MiB each, 256 MiB in all, 256 connections). Real
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

/// Whether a fetch's answer returns any commit.
fn answer_has_commits(answer: &BatchSyncResponse) -> bool {
    matches!(&answer.result, SyncResult::Ok(diff) if !diff.commits().is_empty())
}

/// The `--listen` log line of one connection (`who`: its address, or its
/// transport where it has none).
fn log_connection(who: &str, result: Result<(PeerId, ConnReport), AnyError>) {
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
        Err(e) => say!("  {who}: {e}"),
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
        }
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
    /// [`MAX_CONNECTIONS`] are served at once.
    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        transport: TransportArg,
        prefix: PrefixKind,
        log: bool,
    ) {
        if transport == TransportArg::Longpoll {
            accept::serve_longpoll(&listener, MAX_CONNECTIONS, |session| {
                let this = Arc::clone(&self);
                async move {
                    let result = this.accept_carrier(Box::new(session)).await;
                    if log {
                        log_connection("long-poll", result);
                    }
                }
            })
            .await;
            return;
        }
        accept::serve_tcp(&listener, MAX_CONNECTIONS, |(stream, peer_addr)| {
            let this = Arc::clone(&self);
            async move {
                let result = this.accept(stream, transport, prefix).await;
                if log {
                    log_connection(&peer_addr.to_string(), result);
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
    ) -> Result<(PeerId, ConnReport), AnyError> {
        stream.set_nodelay(true)?;
        let carrier: Carrier = match transport {
            TransportArg::Ws => Box::new(
                tokio::time::timeout(CONNECT_TIMEOUT, websocket::accept(stream))
                    .await
                    .map_err(|_| "WebSocket upgrade timed out")??,
            ),
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
    async fn accept_carrier(&self, carrier: Carrier) -> Result<(PeerId, ConnReport), AnyError> {
        let conn = Connection::accept(
            carrier,
            &self.key,
            &self.responder,
            &ConnectConfig::default(),
        )
        .await?;
        let peer = conn.remote_peer();
        Ok((peer, self.session(conn).await))
    }

    /// [`SyncServer::serve`] over iroh: accepts QUIC connections on
    /// `endpoint` until the task is dropped, at most [`MAX_CONNECTIONS`] at
    /// once.
    #[cfg(feature = "iroh")]
    pub async fn serve_iroh(
        self: Arc<Self>,
        endpoint: bijou_frame::net::transport::iroh::Endpoint,
        log: bool,
    ) {
        use bijou_frame::net::transport::iroh;
        let endpoint = &endpoint;
        let accept = move || async move { endpoint.accept().await.map(Ok) };
        accept::serve_each(MAX_CONNECTIONS, accept, |incoming| {
            let this = Arc::clone(&self);
            async move {
                let result = match iroh::accept_incoming(incoming).await {
                    Ok(transport) => this.accept_carrier(Box::new(transport)).await,
                    Err(e) => Err(e.into()),
                };
                if log {
                    log_connection("iroh", result);
                }
            }
        })
        .await;
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
                    let answer = self.answer(&request, counter);
                    let drop_it = self.fault == Fault::DropFetchAnswer
                        && answer_has_commits(&answer)
                        && !self.fault_spent.swap(true, Ordering::Relaxed);
                    (!drop_it).then(|| answer.into())
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
    let server = Arc::new(SyncServer::new(key, name, Fault::None));
    let id = server.key.peer_id();
    say!(
        "sync server S {id} listening on iroh {addr}; service name {:?}; in memory only, nothing is kept after it stops; Ctrl-C to stop",
        server.service_name
    );
    say!("  connect with: bijou sync --connect {addr} --server-id {id}");
    tokio::select! {
        () = Arc::clone(&server).serve_iroh(endpoint.clone(), true) => {}
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
        return serve_iroh(args, key).await;
    }
    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|e| Failure::input(format!("cannot listen on {}: {e}", args.listen)))?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure::input(format!("cannot listen on {}: {e}", args.listen)))?;
    let name = args
        .service_name
        .clone()
        .unwrap_or_else(|| local.to_string());
    let server = Arc::new(SyncServer::new(key, name, Fault::None));
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
    tokio::select! {
        () = server.serve(listener, args.transport, args.prefix, true) => {}
        _ = tokio::signal::ctrl_c() => say!("interrupted: stopping (the store is dropped)"),
    }
    Ok(())
}
