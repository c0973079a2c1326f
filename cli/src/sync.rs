//! `bijou sync`: push signed commits to a Subduction sync server, fetch
//! them back over a second connection, and check every byte.
//!
//! **Push.** Peer A connects (connection 1) and sends `--count` signed
//! LooseCommits (tag 00) into a fresh random tree (SedimentreeId), chained
//! (each commit's parent is the previous one), each with a random blob of
//! `--blob-size` bytes. A Subduction server answers every *new* commit with
//! a HeadsUpdate (tag 08) for the tree whose heads name it, and stays silent
//! about a commit it refuses, so each commit gets `--ack-timeout` to be
//! acknowledged. The round trip (LooseCommit sent -> HeadsUpdate naming it
//! received) is measured per commit; `--window` commits may be in flight
//! (default 1). A Subduction server may ingest pipelined commits out of
//! order, and then its HeadsUpdate for a commit names a later one (which
//! lists it as parent), so a HeadsUpdate acknowledges every pending commit
//! up to the newest one it names, like a TCP ack. Only the fetch proves
//! each commit arrived.
//!
//! **Fetch.** Peer B (a second key, connection 2) sends a BatchSyncRequest
//! for the tree with no fingerprints. The BatchSyncResponse's SyncDiff must
//! carry all the commits: every item verified (`verify_strict`, scope,
//! blob), and every signed commit and blob byte-identical to one A sent.
//!
//! **Addressing.** With `--server-id` the handshake is addressed to that key
//! (`Audience::Known`). Otherwise it is addressed to a service name
//! (`Audience::discover`): `--service-name`, or by default the server's
//! `HOST:PORT` as written in `--connect`, which is what `subduction_cli
//! server` serves when it has no `--service-name`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bijou_frame::codec::Wire;
use bijou_frame::framing::prefix::PrefixKind;
use bijou_frame::framing::DEFAULT_MAX_FRAME_LENGTH;
use bijou_frame::net::{Connection, RunError};
use bijou_frame::proto::keyhive::{check_tree_id, Access, DocumentKey, Grantee};
use bijou_frame::proto::message::{
    Audience, BatchSyncResponse, BlobMessage, CommitId, LooseCommit, Message, RemoteHeads,
    SedimentreeId, SignedItem, SyncMessage, SyncResult,
};
use bijou_frame::proto::session::RejectedItem;
use bijou_frame::proto::session::{self, Operation, OperationError, OperationId, TreeAccess};
use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Identity, PeerId, Signed};
use bytes::Bytes;
use indicatif::ProgressBar;
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use tokio::net::TcpListener;

use crate::exit::Failure;
use crate::figures::percentile_ms;
use crate::progress;
use crate::serve::{short, Fault, ServerStats, SyncServer, ITEM_OVERHEAD};
use crate::target::{Carrier, Target, TransportArg};

/// Push signed commits to a sync server and fetch them back, byte for byte.
///
/// Peer A pushes --count chained, signed commits with random blobs into a
/// fresh tree; each must be acknowledged by a HeadsUpdate. Peer B (a second
/// key) then fetches the tree and every commit must come back identical
/// and verify. Without --connect, `bijou serve`'s server runs in process.
///
/// Example:
///   bijou sync                                          # in-process server
///   bijou serve --listen 127.0.0.1:7879 &  bijou sync --connect 127.0.0.1:7879
///   subduction_cli server --socket 127.0.0.1:8080 --auth open &
///   bijou sync --connect ws://127.0.0.1:8080 --window 16
///
/// Exit codes: 0 every commit acknowledged and fetched back identical;
/// 1 something was lost, altered, rejected or unacknowledged; 2 bad
/// arguments or key file; 3 cannot connect, handshake refused, timeout.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The sync server: HOST:PORT, ws://HOST:PORT[/path] or tcp://HOST:PORT.
    /// Without it, our own server runs in process.
    #[arg(long, value_name = "URL")]
    pub connect: Option<String>,
    /// The service name the handshake is addressed to (Audience::discover).
    /// Default: the server's HOST:PORT, as `subduction_cli server`
    /// defaults to its --socket.
    #[arg(long, value_name = "NAME", conflicts_with = "server_id")]
    pub service_name: Option<String>,
    /// The server's peer id (64 hex digits). The handshake is addressed to
    /// that key and its response must be signed by it.
    #[arg(long, value_name = "PEER_ID", requires = "connect")]
    pub server_id: Option<PeerId>,
    /// The pushing peer's key file (default: a new key for this run).
    #[arg(long, value_name = "KEY")]
    pub key: Option<PathBuf>,
    /// Commits to push (1-65535: one BatchSyncResponse brings them all back).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(1..))]
    pub count: u16,
    /// Blob size of each commit, in bytes.
    #[arg(long, default_value_t = 1024)]
    pub blob_size: usize,
    /// Commits in flight before waiting for a HeadsUpdate (1-256).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub window: u16,
    /// How messages travel when --connect is a bare HOST:PORT (a URL's
    /// scheme decides otherwise).
    #[arg(long, value_enum, default_value_t = TransportArg::Ws)]
    pub transport: TransportArg,
    /// Length prefix for framed TCP: bijou64, leb128 or u32-be.
    #[arg(long, default_value_t = PrefixKind::Bijou64)]
    pub prefix: PrefixKind,
    /// How long each commit may wait for its HeadsUpdate, in milliseconds
    /// (at least 1).
    #[arg(long, value_name = "MS", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    pub ack_timeout: u64,
    /// Seed for the commit ids and blobs (random if not given; the tree id
    /// is always fresh).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Give up after this many seconds (at least 1).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// Who may edit the tree if the server enforces keyhive (a default
    /// `subduction_cli`): public (everyone, so any key may read and push)
    /// or key (only the pushing key, which then also fetches).
    #[arg(long, value_enum, default_value_t = AccessArg::Public)]
    pub access: AccessArg,
    /// What the in-process server gets wrong on purpose (tests only).
    #[arg(skip)]
    pub fault: Fault,
}

/// `--access`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AccessArg {
    /// Edit for keyhive's Public agent: anyone may read and push.
    Public,
    /// Edit for the pushing key only.
    Key,
}

/// How long a keyhive probe or registration may take.
const PROBE_LIMIT: Duration = Duration::from_secs(5);
const REGISTER_LIMIT: Duration = Duration::from_secs(15);

/// What the keyhive step found.
#[derive(Debug, Default)]
enum Keyhive {
    /// Not run yet.
    #[default]
    Skipped,
    /// The server answered a fetch of the new tree: it does not enforce
    /// keyhive (or lets anyone read), so no registration.
    NotEnforced,
    /// The server enforces keyhive: the document was registered.
    Registered { took: Duration, access: AccessArg },
    /// The server enforces keyhive, and registering failed.
    Failed(String),
    /// The probe got no answer.
    Silent,
}

/// Probes the new tree; registers it as a keyhive document if the server
/// refuses it (keyhive enforced), before any push.
async fn keyhive(
    conn: &mut Connection<Carrier>,
    key: &SigningKey,
    job: &ClientJob,
    tree: SedimentreeId,
) -> Keyhive {
    match conn.run(key, Operation::Probe(tree), PROBE_LIMIT).await {
        Ok(session::Outcome::Probed(TreeAccess::Unauthorized)) => {}
        Ok(session::Outcome::Probed(TreeAccess::Silent)) => return Keyhive::Silent,
        Ok(_) => return Keyhive::NotEnforced,
        Err(e) => return Keyhive::Failed(format!("probing tree {tree}: {e}")),
    }
    if let Err(e) = check_tree_id(tree) {
        return Keyhive::Failed(e.to_string());
    }
    let grantee = match job.access {
        AccessArg::Public => Grantee::Public,
        AccessArg::Key => Grantee::Key(key.peer_id()),
    };
    let started = Instant::now();
    let registered = match job.doc.root_delegation(grantee, Access::Edit) {
        Ok(delegation) => {
            conn.run(key, Operation::Register(delegation), REGISTER_LIMIT)
                .await
        }
        Err(e) => return Keyhive::Failed(e.to_string()),
    };
    match registered {
        Ok(_) => Keyhive::Registered {
            took: started.elapsed(),
            access: job.access,
        },
        Err(e) => Keyhive::Failed(e.to_string()),
    }
}

type AnyError = Box<dyn std::error::Error + Send + Sync>;

/// How long a closing connection waits for the server's side of the close.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

use crate::keygen::new_key;

/// What to try when a server refuses the audience we addressed.
const SYNC_RETRY: &str = "give the server's own --service-name, or its peer id with --server-id";

/// Runs the push and the fetch and prints the summary.
pub async fn run(args: &Args) -> Result<(), Failure> {
    let outcome = push_and_fetch(args).await?;
    if outcome.ok() {
        Ok(())
    } else {
        Err(Failure::check(outcome.verdict()))
    }
}

async fn push_and_fetch(args: &Args) -> Result<Outcome, Failure> {
    let count = usize::from(args.count);
    check_response_fits(count, args.blob_size)?;
    let (target, server, serving) = where_to_sync(args).await?;
    let (audience, addressed) = addressing(args, server.as_deref(), &target);
    let seed = args.seed.unwrap_or_else(rand::random);
    let key_a = match &args.key {
        Some(path) => crate::keygen::read_key(path)?,
        None => new_key()?,
    };
    // The tree is a keyhive document of our own (tree id = document key),
    // so a server that enforces keyhive can be told about it.
    let doc = DocumentKey::from_seed(rand::random());
    let plan =
        Plan::new(&key_a, doc.tree_id(), seed, count, args.blob_size).map_err(Failure::input)?;
    println!(
        "bijou sync: {count} chained commits x {} B into tree {}.. over {target}, window {}, seed {seed}",
        args.blob_size,
        plan.tree.to_string().get(..8).unwrap_or_default(),
        args.window
    );
    println!(
        "  server       {}",
        describe_server(args, server.as_deref(), audience, &target)
    );

    let bar = progress::bar(plan.commits.len() as u64, "commits acked");
    let job = ClientJob {
        target,
        audience,
        addressed,
        doc,
        access: args.access,
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
        Err(_) => {
            return Err(Failure::network(format!(
                "timed out after {bound:?} (--timeout); the server stopped answering"
            )))
        }
        Ok(outcome) => outcome?,
    };
    outcome.server = server.map(|s| s.stats());
    outcome.print(&plan, usize::from(args.window));
    Ok(outcome)
}

/// The fetch brings every commit back in one `BatchSyncResponse`: refuse
/// a run whose response could not be one frame.
fn check_response_fits(count: usize, blob_size: usize) -> Result<(), Failure> {
    let response_size = count
        .checked_mul(blob_size.saturating_add(ITEM_OVERHEAD))
        .and_then(|n| n.checked_add(ITEM_OVERHEAD))
        .filter(|&n| n <= DEFAULT_MAX_FRAME_LENGTH);
    if response_size.is_none() {
        return Err(Failure::input(format!(
            "{count} commits of {blob_size} B would not fit one {} MiB BatchSyncResponse: push fewer (--count) or smaller (--blob-size)",
            DEFAULT_MAX_FRAME_LENGTH >> 20
        )));
    }
    Ok(())
}

/// Where to connect: `--connect`, or a server started here in process
/// (then also the server and its accept task).
async fn where_to_sync(
    args: &Args,
) -> Result<
    (
        Target,
        Option<Arc<SyncServer>>,
        Option<tokio::task::JoinHandle<()>>,
    ),
    Failure,
> {
    if let Some(spec) = &args.connect {
        return Ok((
            Target::parse(spec, args.transport, args.prefix)?,
            None,
            None,
        ));
    }
    if args.transport == TransportArg::Iroh {
        #[cfg(feature = "iroh")]
        {
            let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
            let (endpoint, dial) = crate::target::iroh_listener(loopback).await?;
            let name = args.service_name.clone().unwrap_or_else(|| dial.clone());
            let server = Arc::new(SyncServer::new(new_key()?, name, args.fault));
            let task = tokio::spawn(Arc::clone(&server).serve_iroh(endpoint, false));
            return Ok((Target::Iroh(dial), Some(server), Some(task)));
        }
        #[cfg(not(feature = "iroh"))]
        return Err(crate::target::no_iroh());
    }
    let bind = |e: std::io::Error| Failure::input(format!("cannot listen on 127.0.0.1: {e}"));
    let listener = TcpListener::bind("127.0.0.1:0").await.map_err(bind)?;
    let addr = listener.local_addr().map_err(bind)?;
    let name = args
        .service_name
        .clone()
        .unwrap_or_else(|| addr.to_string());
    let server = Arc::new(SyncServer::new(new_key()?, name, args.fault));
    let task =
        tokio::spawn(Arc::clone(&server).serve(listener, args.transport, args.prefix, false));
    Ok((
        Target::local(addr, args.transport, args.prefix),
        Some(server),
        Some(task),
    ))
}

/// To whom the handshakes are addressed, and how the errors name it.
fn addressing(args: &Args, server: Option<&SyncServer>, target: &Target) -> (Audience, String) {
    let audience = match (server, args.server_id, &args.service_name) {
        (_, Some(id), _) => Audience::Known(id),
        (_, None, Some(name)) => Audience::discover(name.as_bytes()),
        (Some(s), None, None) => Audience::Known(s.key.peer_id()),
        (None, None, None) => Audience::discover(target.authority().as_bytes()),
    };
    let addressed = match (audience, &args.service_name) {
        (Audience::Known(id), _) => format!("the server key {id}"),
        (Audience::Discover(_), Some(name)) => format!("the service name {name:?}"),
        (Audience::Discover(_), None) => format!(
            "the service name {:?} (the HOST:PORT of --connect)",
            target.authority()
        ),
    };
    (audience, addressed)
}

/// The banner's server line.
fn describe_server(
    args: &Args,
    server: Option<&SyncServer>,
    audience: Audience,
    target: &Target,
) -> String {
    match (server, audience) {
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
}

// ---------------------------------------------------------------- client

/// The commits to push, made and signed before the clock starts.
struct Plan {
    tree: SedimentreeId,
    commits: Vec<Planned>,
}

struct Planned {
    head: CommitId,
    /// The LooseCommit message.
    message: SyncMessage,
    /// Its encoded length.
    len: usize,
    /// The signed commit's bytes.
    signed: Bytes,
    blob: Bytes,
}

impl Plan {
    fn new(
        key: &SigningKey,
        tree: SedimentreeId,
        seed: u64,
        count: usize,
        blob_size: usize,
    ) -> Result<Self, AnyError> {
        let mut rng = StdRng::seed_from_u64(seed);
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
            let len = msg.wire_len()?;
            let Message::Sync(message) = msg else {
                return Err("a LooseCommit is a sync message".into());
            };
            commits.push(Planned {
                head,
                message,
                len,
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
    /// The document whose tree we push to.
    doc: DocumentKey,
    /// Who may edit it, if we register it.
    access: AccessArg,
    /// The audience in words, for errors.
    addressed: String,
    window: usize,
    ack_timeout: Duration,
    bar: ProgressBar,
}

/// Everything the client saw.
#[derive(Debug, Default)]
struct Outcome {
    keyhive: Keyhive,
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
async fn client(job: &ClientJob, key_a: SigningKey, plan: &Plan) -> Result<Outcome, Failure> {
    let mut outcome = Outcome {
        expected: plan.commits.len(),
        ..Outcome::default()
    };
    let (mut conn, handshake) = job
        .target
        .open(&key_a, job.audience, &job.addressed, SYNC_RETRY)
        .await?;
    outcome.pusher = Some(conn.local_peer());
    outcome.remote = Some(conn.remote_peer());
    outcome.handshakes.0 = handshake;
    outcome.keyhive = keyhive(&mut conn, &key_a, job, plan.tree).await;
    outcome.push = push(&mut conn, &key_a, plan, job).await;
    if outcome.push.unacked > 0 {
        // Silence: tell the user why, as far as the server says.
        let probe = conn.run(&key_a, Operation::Probe(plan.tree), PROBE_LIMIT);
        if let Ok(session::Outcome::Probed(access)) = probe.await {
            let why = access.explain(plan.tree, key_a.peer_id());
            outcome.push.problems.insert(0, why);
        }
    }
    // Every commit is acknowledged or timed out by now; closing gracefully
    // lets a server finish what it still sends (acknowledgements of
    // duplicates, its close reply) instead of meeting a reset.
    let _ = conn.shutdown(CLOSE_GRACE).await;

    // A key-only document admits only its key: fetch with it too.
    let key_b = match job.access {
        AccessArg::Key => key_a.clone(),
        AccessArg::Public => new_key()?,
    };
    let (mut conn, handshake) = job
        .target
        .open(&key_b, job.audience, &job.addressed, SYNC_RETRY)
        .await?;
    outcome.fetcher = Some(conn.local_peer());
    outcome.handshakes.1 = handshake;
    outcome.fetch = fetch(
        &mut conn,
        &key_b,
        plan,
        job.ack_timeout.max(Duration::from_secs(10)),
    )
    .await;
    let _ = conn.shutdown(CLOSE_GRACE).await;
    Ok(outcome)
}

/// Pushes the commits as session operations, up to `window` in flight,
/// each ended by the HeadsUpdate that names it (or a later one: the
/// session's acknowledgements are cumulative, like a TCP ack).
async fn push(
    conn: &mut Connection<Carrier>,
    key: &SigningKey,
    plan: &Plan,
    job: &ClientJob,
) -> PushOutcome {
    let mut out = PushOutcome {
        rtts: Vec::with_capacity(plan.commits.len()),
        ..PushOutcome::default()
    };
    let started = Instant::now();
    let mut pending: VecDeque<(usize, OperationId, Instant)> = VecDeque::with_capacity(job.window);
    let mut next = 0;
    'push: loop {
        while pending.len() < job.window && next < plan.commits.len() {
            let commit = &plan.commits[next];
            let push = Operation::Push(commit.message.clone());
            match conn.start(push, job.ack_timeout) {
                Ok(id) => pending.push_back((next, id, Instant::now())),
                Err(e) => {
                    out.problems.push(format!(
                        "starting the push of commit #{} failed: {e}",
                        next + 1
                    ));
                    break 'push;
                }
            }
            out.bytes += commit.len as u64;
            next += 1;
        }
        let Some(&(index, id, sent_at)) = pending.front() else {
            break;
        };
        let ended = conn.finish(id, key).await;
        count_held(conn, &mut out);
        match ended {
            Ok(_) => {
                out.rtts.push(sent_at.elapsed());
                out.acked += 1;
                job.bar.inc(1);
            }
            Err(RunError::Operation {
                error: OperationError::TimedOut { .. },
                ..
            }) => {
                out.unacked += 1;
                out.problems.push(format!(
                    "no HeadsUpdate naming commit #{} within {:?}",
                    index + 1,
                    job.ack_timeout
                ));
            }
            Err(RunError::Closed { .. }) => {
                out.problems
                    .push("the server closed connection 1".to_owned());
                break;
            }
            Err(e) => {
                out.problems.push(format!("connection 1 failed: {e}"));
                break;
            }
        }
        pending.pop_front();
    }
    // Whatever is still pending or unsent when the loop broke off.
    out.unacked += pending.len() + (plan.commits.len() - next);
    out.elapsed = started.elapsed();
    out
}

/// Counts the server's other messages received while a push waited.
fn count_held(conn: &mut Connection<Carrier>, out: &mut PushOutcome) {
    for received in conn.drain_held() {
        match received.result {
            Ok(_) => out.other += 1,
            Err(why) => {
                out.rejected += 1;
                out.problems
                    .push(format!("rejected a server message: {why}"));
            }
        }
    }
}

/// Fetches the whole tree (a session operation) and checks the answer
/// against the plan.
async fn fetch(
    conn: &mut Connection<Carrier>,
    key: &SigningKey,
    plan: &Plan,
    wait: Duration,
) -> FetchOutcome {
    let mut out = FetchOutcome {
        missing: plan.commits.len(),
        ..FetchOutcome::default()
    };
    let started = Instant::now();
    let verified = match conn.run(key, Operation::Fetch(plan.tree), wait).await {
        Ok(session::Outcome::Fetched(verified)) => verified,
        Ok(other) => {
            out.problems.push(format!("a fetch ended as {other:?}"));
            return out;
        }
        Err(RunError::Operation {
            error: OperationError::TimedOut { .. },
            ..
        }) => {
            out.problems
                .push(format!("no BatchSyncResponse within {wait:?}"));
            return out;
        }
        Err(RunError::Operation {
            error: OperationError::Refused { reason, .. },
            ..
        }) => {
            out.answered = true;
            out.problems.push(format!("the server answered {reason}"));
            return out;
        }
        Err(RunError::Closed { .. }) => {
            out.problems
                .push("the server closed connection 2".to_owned());
            return out;
        }
        Err(e) => {
            out.problems.push(format!("connection 2 failed: {e}"));
            return out;
        }
    };
    for received in conn.drain_held() {
        if let Err(why) = received.result {
            out.problems
                .push(format!("rejected a server message: {why}"));
        }
    }
    let SyncMessage::BatchSyncResponse(response) = &verified.message else {
        out.problems
            .push("the fetch ended in another message".to_owned());
        return out;
    };
    out.missing = 0;
    out.elapsed = started.elapsed();
    out.bytes = verified.message.wire_len().unwrap_or_default();
    if response.requestor != conn.local_peer() {
        out.problems
            .push("the response names another requestor".to_owned());
    }
    check_response(&mut out, plan, response, &verified.rejected);
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

    /// One line: what went wrong, for the exit message.
    fn verdict(&self) -> String {
        let (p, f) = (&self.push, &self.fetch);
        if !f.answered {
            return format!(
                "{} of {} commits acknowledged, and the fetch got no BatchSyncResponse",
                p.acked, self.expected
            );
        }
        format!(
            "{} of {} commits acknowledged, {} fetched back identical; unacked {}, rejected {}, altered {}, unexpected {}, missing {}",
            p.acked,
            self.expected,
            f.identical,
            p.unacked,
            p.rejected + f.rejected,
            f.altered,
            f.unexpected,
            f.missing
        )
    }

    fn print(&self, plan: &Plan, window: usize) {
        self.print_handshake_and_keyhive();
        self.print_push(plan, window);
        self.print_fetch();
        if let Some(s) = self.server {
            println!(
                "  server       stored {} commits ({} duplicate, {} refused, {} rejected), answered {} sync request(s)",
                s.stored, s.duplicates, s.refused, s.rejected, s.requests
            );
        }
        self.print_problems();
        println!("{}", if self.ok() { "OK" } else { "FAILED" });
    }

    fn print_handshake_and_keyhive(&self) {
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
        match &self.keyhive {
            Keyhive::Skipped => {}
            Keyhive::NotEnforced => println!(
                "  keyhive      not enforced (the server answered a fetch of the new tree): no registration"
            ),
            Keyhive::Registered { took, access } => println!(
                "  keyhive      enforced: registered the tree as a document, Edit for {} (SyncConfirmation in {:.2} ms)",
                match access {
                    AccessArg::Public => "Public",
                    AccessArg::Key => "the pushing key only",
                },
                ms(*took)
            ),
            Keyhive::Failed(why) => println!("  keyhive      enforced, but registering failed: {why}"),
            Keyhive::Silent => println!("  keyhive      the server answered no probe fetch: pushing anyway"),
        }
    }

    fn print_push(&self, plan: &Plan, window: usize) {
        let p = &self.push;
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
        println!(
            "  round trip   p50 {}, p99 {} (LooseCommit sent -> HeadsUpdate received, up to {window} in flight)",
            percentile_ms(&rtts, 0.50),
            percentile_ms(&rtts, 0.99)
        );
    }

    fn print_fetch(&self) {
        let f = &self.fetch;
        if !f.answered {
            println!("  fetch        no BatchSyncResponse");
            return;
        }
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
    }

    fn print_problems(&self) {
        let (p, f) = (&self.push, &self.fetch);
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
    }
}

/// A duration in milliseconds, for the report.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::{Store, Stored};
    use bijou_frame::proto::message::{BatchSyncRequest, Fingerprint, FingerprintSeed};
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cmd {
        #[command(flatten)]
        args: Args,
    }

    fn parse<const N: usize>(argv: [&str; N]) -> Result<Args, clap::Error> {
        Cmd::try_parse_from(argv).map(|c| c.args)
    }

    fn args(extra: &[&str]) -> Args {
        let mut argv = vec!["sync", "--seed", "7", "--timeout", "30"];
        argv.extend_from_slice(extra);
        Cmd::try_parse_from(argv).expect("valid flags").args
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn default_run_pushes_and_fetches_every_commit() {
        let a = args(&["--count", "40"]);
        assert_eq!(
            (a.transport, a.window, a.blob_size),
            (TransportArg::Ws, 1, 1024)
        );
        let outcome = push_and_fetch(&a).await.expect("runs");
        assert!(outcome.ok(), "{outcome:?}");
        assert_eq!(outcome.push.rtts.len(), 40);
        assert_eq!(outcome.fetch.identical, 40);
        assert!(outcome.fetch.last_is_head);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tcp_pipelined_and_service_name_runs_succeed() {
        let a = args(&["--count", "60", "--transport", "tcp", "--window", "8"]);
        assert!(push_and_fetch(&a).await.expect("runs").ok());
        let a = args(&[
            "--count",
            "20",
            "--service-name",
            "sync.test",
            "--blob-size",
            "0",
        ]);
        assert!(push_and_fetch(&a).await.expect("runs").ok());
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
            let o = push_and_fetch(&a).await.expect("runs");
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
        let err = push_and_fetch(&a).await.expect_err("too big");
        assert!(err.to_string().contains("would not fit"), "{err}");
        assert!(parse(["sync", "--count", "0"]).is_err());
        assert!(parse(["sync", "--count", "65536"]).is_err());
    }

    #[test]
    fn server_ids_parse_from_hex() {
        let id = PeerId::from_bytes([0xAB; 32]);
        let with_id = |s: &str| parse(["sync", "--connect", "ws://127.0.0.1:1", "--server-id", s]);
        assert_eq!(
            with_id(&id.to_string()).map(|a| a.server_id).ok(),
            Some(Some(id))
        );
        assert!(with_id("abcd").is_err());
        assert!(with_id(&"zz".repeat(32)).is_err());
        // A server id needs --connect and excludes a service name.
        assert!(parse(["sync", "--server-id", &id.to_string()]).is_err());
        let both = [
            "sync",
            "--connect",
            "ws://h:1",
            "--server-id",
            &"ab".repeat(32),
            "--service-name",
            "x",
        ];
        assert!(parse(both).is_err());
    }

    #[test]
    fn heads_follow_the_chain_and_duplicates_are_not_new() {
        let key = new_key().expect("key");
        let tree = DocumentKey::from_seed([4; 32]).tree_id();
        let plan = Plan::new(&key, tree, 1, 3, 8).expect("plan");
        let mut store = Store::default();
        let decode = |p: &Planned| {
            let SyncMessage::LooseCommit(m) = p.message.clone() else {
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
