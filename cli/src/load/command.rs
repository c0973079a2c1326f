//! `bijou load`: the phases, in order (see the [module docs](super)).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use bijou_frame::net::handshake::DEFAULT_HANDSHAKE_TIMEOUT;
use bijou_frame::proto::message::{Audience, SedimentreeId};

use super::args::{Args, Role, ServerArgs, WorkerArgs};
use super::honest::{self, Pushes};
use super::report::{Crowd, Report};
use super::server::{self, ServerFigures};
use super::stall::{cap_hint, Stall};
use super::workers::{Job, Worker};
use super::{bad, crowd, crypto, flood};
use crate::exit::Failure;
use crate::fd_limit;
use crate::keygen::new_key;
use crate::stats_file::Figures;
use crate::sync::plan::Plan;
use crate::target::{Target, TransportArg};

/// How long the crowd settles before the server's figures are read (its
/// figures file is rewritten every second).
const SETTLE: Duration = Duration::from_millis(2500);

/// How long stalled connections are given before they are counted: the
/// server's handshake timeout (its default), and two seconds.
const STALLED_GRACE: Duration = DEFAULT_HANDSHAKE_TIMEOUT.saturating_add(Duration::from_secs(2));

/// How often the crowd's progress is said while it connects.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The phases of a run, in order (see the [module docs](super)).
const PHASES: [&str; 8] = [
    CRYPTO,
    CONNECTED,
    AUTHENTICATED,
    HELD,
    ALONE,
    FLOOD,
    FETCHED,
    CHECKED,
];
const CRYPTO: &str = "crypto limit";
const CONNECTED: &str = "crowd connected";
const AUTHENTICATED: &str = "crowd replies checked";
const HELD: &str = "held crowd measured";
const ALONE: &str = "honest peer alone";
const FLOOD: &str = "flood";
const FETCHED: &str = "fetch back";
const CHECKED: &str = "held connections asked for an answer";

/// What a run has done so far: what its summary says if its deadline
/// passes.
#[derive(Debug, Default)]
struct SoFar {
    /// The phases finished, in order.
    done: Vec<&'static str>,
    /// The crowd's last figures: its workers' progress summed, then their
    /// `connected`.
    crowd: Figures,
    /// The hint said when the crowd stalled as at the server's cap.
    cap_hint: Option<String>,
}

fn lock(so_far: &Mutex<SoFar>) -> std::sync::MutexGuard<'_, SoFar> {
    so_far.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `bijou load`: the phases, stopped at `--deadline` with a summary of
/// what was done and what was not.
pub async fn run(args: &Args) -> Result<(), Failure> {
    let so_far = Mutex::new(SoFar::default());
    let deadline = Duration::from_secs(args.deadline);
    // Dropping the phases drops the workers, which kills them.
    match tokio::time::timeout(deadline, phases(args, &so_far)).await {
        Ok(Ok(())) => Ok(()),
        // A failure after a stall at the cap (the honest peer's connection
        // unanswered, say) is likely the cap's doing too.
        Ok(Err(mut failure)) => {
            if let Some(hint) = &lock(&so_far).cap_hint {
                if !failure.message.contains(hint.as_str()) {
                    failure.message = format!("{}; {hint}", failure.message);
                }
            }
            Err(failure)
        }
        Err(_) => Err(Failure::network(past_deadline(args, &lock(&so_far)))),
    }
}

/// The summary of a run its deadline stopped: what was done, the crowd's
/// last figures, what was not done.
fn past_deadline(args: &Args, so_far: &SoFar) -> String {
    let flood = args.flooders > 0 || args.stalled > 0 || args.trickle > 0 || args.vanish > 0;
    let planned = PHASES.iter().filter(|p| flood || **p != FLOOD);
    let not_done: Vec<&str> = planned
        .filter(|p| !so_far.done.contains(p))
        .copied()
        .collect();
    let done = if so_far.done.is_empty() {
        "nothing".to_owned()
    } else {
        so_far.done.join(", ")
    };
    let get = |name: &str| so_far.crowd.get(name).copied().unwrap_or(0);
    let crowd = if so_far.crowd.is_empty() {
        "no connection opened yet".to_owned()
    } else {
        let reasons: Vec<String> = so_far
            .crowd
            .iter()
            .filter_map(|(k, n)| Some(format!("{} {n}", k.strip_prefix("failed_")?)))
            .collect();
        let reasons = if reasons.is_empty() {
            String::new()
        } else {
            format!(" ({})", reasons.join(", "))
        };
        format!(
            "{} answered, {} failed{reasons}, {} waiting for an answer, {} not started, of {}",
            get("ok"),
            get("failed"),
            get("waiting"),
            get("not_started"),
            args.connections
        )
    };
    let hint = so_far
        .cap_hint
        .as_ref()
        .map(|h| format!("; {h}"))
        .unwrap_or_default();
    format!(
        "stopped at the deadline of {}s (--deadline); done: {done}; not done: {}; the crowd: {crowd}; no figures are reported{hint}",
        args.deadline,
        not_done.join(", ")
    )
}

/// The phases, in order; each finished one is noted in `so_far`.
async fn phases(args: &Args, so_far: &Mutex<SoFar>) -> Result<(), Failure> {
    let finished = |phase| lock(so_far).done.push(phase);
    let (target, audience) = address(&args.server)?;
    let before = server::read(&args.server_stats)?;
    let crypto = crypto::measure(&before.cores, Duration::from_secs(1));
    finished(CRYPTO);
    let mut report = Report::new(args, &target, crypto, before.clone());

    // Source addresses of this run's own (see `crowd::source`).
    let source_base = rand::random_range(1..=254u8);
    let mut crowd = start_crowd(args, source_base).await?;
    let cpu_before = server::read(&args.server_stats)?.cpu_ticks;
    let started = Instant::now();
    for worker in &mut crowd {
        worker.send("go").await?;
    }
    let connected = connect_crowd(&mut crowd, args.connections, so_far).await?;
    let elapsed = started.elapsed();
    finished(CONNECTED);
    for worker in &mut crowd {
        worker.send("verify").await?;
    }
    let server_cpu = server::read(&args.server_stats)?.cpu_ticks;
    report.crowd = Crowd {
        workers: crowd.len(),
        connected,
        elapsed,
        server_cpu: Duration::from_millis(10 * server_cpu.saturating_sub(cpu_before)),
        authenticated: collect(&mut crowd, "authenticated").await?,
        ..Crowd::default()
    };
    finished(AUTHENTICATED);
    let idle_from = server::read(&args.server_stats)?.cpu_ticks;
    tokio::time::sleep(SETTLE).await;
    report.held = server::read(&args.server_stats)?;
    report.idle_cpu = (
        Duration::from_millis(10 * report.held.cpu_ticks.saturating_sub(idle_from)),
        SETTLE,
    );
    report.kernel = server::kernel_tcp_memory();
    finished(HELD);

    let key = new_key()?;
    let tree = SedimentreeId::new(rand::random());
    let pushes = usize::try_from(args.pushes).unwrap_or(usize::MAX);
    let plan = Plan::new(&key, tree, rand::random(), 2 * pushes, args.blob_size)
        .map_err(|e| Failure::input(format!("cannot sign the honest peer's commits: {e}")))?;
    let (mut conn, _) = target
        .open_from(
            Some(crowd::source(source_base, args.connections)),
            &key,
            audience,
            "the server",
            "give --server-id or --service-name",
        )
        .await?;
    let (alone, beside) = plan.commits.split_at(pushes);
    report.alone = Some(honest::push(&mut conn, &key, alone).await);
    finished(ALONE);

    if args.flooders > 0 || args.stalled > 0 || args.trickle > 0 || args.vanish > 0 {
        let (flooded, bad_seen, during, vanished) =
            flood_phase(args, source_base, &mut crowd, &mut conn, &key, beside).await?;
        report.beside = Some(flooded.0);
        report.flood_sent = flooded.1;
        report.bad = bad_seen;
        report.during_flood = Some(during);
        report.vanished = vanished;
        finished(FLOOD);
    }
    let acked: Vec<_> = [report.alone.as_ref(), report.beside.as_ref()]
        .into_iter()
        .flatten()
        .flat_map(|p| p.acked.iter().copied())
        .collect();
    report.fetched = Some(honest::fetch_back(&mut conn, &key, tree, &acked).await);
    finished(FETCHED);
    for worker in &mut crowd {
        worker.send("check").await?;
    }
    report.crowd.alive = collect(&mut crowd, "alive").await?;
    finished(CHECKED);
    report.end = server::read(&args.server_stats)?;
    for worker in &mut crowd {
        let _ = worker.send("end").await;
    }
    report.print();
    if report.all_well() {
        Ok(())
    } else {
        Err(Failure::check(
            "connections or pushes were lost (see above)",
        ))
    }
}

/// Waits for every crowd worker's `connected`, saying their progress
/// summed on standard error every [`PROGRESS_EVERY`] meanwhile, and the
/// hint once if the crowd stalls as at the server's connection cap.
async fn connect_crowd(
    crowd: &mut [Worker],
    connections: u64,
    so_far: &Mutex<SoFar>,
) -> Result<Figures, Failure> {
    let progress: Vec<_> = crowd.iter().map(Worker::progress).collect();
    let all = futures::future::try_join_all(crowd.iter_mut().map(|w| w.expect("connected")));
    tokio::pin!(all);
    let started = tokio::time::Instant::now();
    let mut tick = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
    let mut stall = Stall::default();
    let connected = loop {
        tokio::select! {
            connected = &mut all => break connected?,
            _ = tick.tick() => {
                let mut sum = Figures::new();
                for worker in &progress {
                    let figures = worker.lock().unwrap_or_else(PoisonError::into_inner);
                    for (name, value) in figures.iter() {
                        *sum.entry(name.clone()).or_default() += value;
                    }
                }
                // Counted here, not summed: a worker that has not said
                // its first progress yet has started nothing.
                let begun: u64 = ["ok", "failed", "waiting"]
                    .iter()
                    .filter_map(|name| sum.get(*name))
                    .sum();
                sum.insert("not_started".to_owned(), connections.saturating_sub(begun));
                let get = |name: &str| sum.get(name).copied().unwrap_or(0);
                eprintln!(
                    "bijou load: {}s: {} of {connections} connections answered, {} failed, {} waiting for an answer, {} not started",
                    started.elapsed().as_secs(),
                    get("ok"),
                    get("failed"),
                    get("waiting"),
                    get("not_started"),
                );
                let hint = stall.observe(&sum, started.elapsed());
                let mut so_far = lock(so_far);
                if let Some(hint) = hint {
                    eprintln!("bijou load: {hint}");
                    so_far.cap_hint = Some(hint);
                }
                so_far.crowd = sum;
            }
        }
    };
    let mut sum = Figures::new();
    for figures in connected {
        for (name, value) in figures {
            *sum.entry(name).or_default() += value;
        }
    }
    let get = |name: &str| sum.get(name).copied().unwrap_or(0);
    let mut so_far = lock(so_far);
    if so_far.cap_hint.is_none()
        && get(&format!("failed_{}", super::crowd::NO_ANSWER)) > 0
        && get("ok") > 0
    {
        let hint = cap_hint(get("ok"));
        eprintln!("bijou load: {hint}");
        so_far.cap_hint = Some(hint);
    }
    so_far.crowd = sum.clone();
    Ok(sum)
}

/// The flood: flooders, stalled and trickling connections start; the
/// honest peer measures again; halfway, `--vanish` held connections
/// disconnect at once. Returns the honest peer's figures with the commits
/// the flooders sent and how long they flooded, what the stalled and
/// trickling workers saw, and the server's figures during the flood.
async fn flood_phase(
    args: &Args,
    source_base: u8,
    crowd: &mut [Worker],
    conn: &mut bijou_frame::net::Connection<crate::target::Carrier>,
    key: &bijou_frame::signing::ed25519_dalek::SigningKey,
    commits: &[crate::sync::plan::Planned],
) -> Result<
    (
        (Pushes, Option<(u64, Duration)>),
        Vec<(Role, Figures)>,
        ServerFigures,
        u64,
    ),
    Failure,
> {
    let job = |role, count| Job {
        role,
        count,
        first: args.connections + 1,
        concurrency: args.concurrency,
        blob_size: args.blob_size,
        trickle_every: args.trickle_every,
        source_base,
    };
    let mut flooders = if args.flooders > 0 {
        let mut w = Worker::spawn(&args.server, &job(Role::Flood, args.flooders))?;
        w.expect("ready").await?;
        w.send("go").await?;
        w.expect("flooding").await?;
        Some(w)
    } else {
        None
    };
    let mut bad_workers = Vec::new();
    let mut stalled_since = None;
    for (role, count) in [(Role::Stalled, args.stalled), (Role::Trickle, args.trickle)] {
        if count > 0 {
            let mut w = Worker::spawn(&args.server, &job(role, count))?;
            w.expect("ready").await?;
            if role == Role::Stalled {
                // Its last connection opened just now.
                stalled_since = Some(tokio::time::Instant::now());
            }
            bad_workers.push(w);
        }
    }
    let half = commits.len() / 2;
    let mut pushed = honest::push(conn, key, &commits[..half]).await;
    let vanished = vanish(crowd, args.vanish).await?;
    let second = honest::push(conn, key, &commits[half..]).await;
    pushed.merge(second);
    if let Some(since) = stalled_since {
        // Long enough for the server's handshake timeout to end every
        // stalled connection (the flood goes on meanwhile).
        tokio::time::sleep_until(since + STALLED_GRACE).await;
    }
    let during = server::read(&args.server_stats)?;
    let sent = match flooders.as_mut() {
        Some(w) => {
            w.send("end").await?;
            let f = w.expect("flooded").await?;
            let ms = f.get("ms").copied().unwrap_or(0);
            Some((
                f.get("sent").copied().unwrap_or(0),
                Duration::from_millis(ms),
            ))
        }
        None => None,
    };
    let mut bad_seen = Vec::new();
    for w in &mut bad_workers {
        w.send("check").await?;
        bad_seen.push((w.role, w.expect("closed").await?));
    }
    Ok(((pushed, sent), bad_seen, during, vanished))
}

/// Asks the crowd workers to drop `count` held connections in all, at
/// once (each worker as many as it can, in order); how many were dropped,
/// as the workers count them.
async fn vanish(crowd: &mut [Worker], count: u64) -> Result<u64, Failure> {
    let mut left = count;
    let mut asked = Vec::new();
    for (i, worker) in crowd.iter_mut().enumerate() {
        let share = left.min(worker.count);
        if share > 0 {
            left -= share;
            worker.send(&format!("vanish {share}")).await?;
            asked.push(i);
        }
    }
    let mut vanished = 0;
    for i in asked {
        if let Some(worker) = crowd.get_mut(i) {
            let said = worker.expect("vanished").await?;
            vanished += said.get("count").copied().unwrap_or(0);
        }
    }
    Ok(vanished)
}

/// Starts the crowd's workers (as many as the file-descriptor limit
/// asks), each signing its challenges; returns once all are ready.
async fn start_crowd(args: &Args, source_base: u8) -> Result<Vec<Worker>, Failure> {
    let per_worker = fd_limit::raise().saturating_sub(fd_limit::SPARE).max(1);
    let workers = args.connections.div_ceil(per_worker).max(1);
    let share = args.connections.div_ceil(workers);
    let mut crowd = Vec::new();
    let mut first = 0;
    while first < args.connections {
        let count = share.min(args.connections - first);
        let job = Job {
            role: Role::Crowd,
            count,
            first,
            concurrency: args.concurrency,
            blob_size: args.blob_size,
            trickle_every: args.trickle_every,
            source_base,
        };
        crowd.push(Worker::spawn(&args.server, &job)?);
        first += count;
    }
    for worker in &mut crowd {
        worker.expect("ready").await?;
    }
    Ok(crowd)
}

/// Each worker's `event` line, summed.
async fn collect(workers: &mut [Worker], event: &str) -> Result<Figures, Failure> {
    let mut sum = Figures::new();
    for worker in workers {
        for (name, value) in worker.expect(event).await? {
            *sum.entry(name).or_default() += value;
        }
    }
    Ok(sum)
}

/// The target and the audience of the handshakes.
fn address(server: &ServerArgs) -> Result<(Target, Audience), Failure> {
    let target = Target::parse(&server.connect, server.transport, server.prefix)?;
    if !matches!(target.transport(), TransportArg::Ws | TransportArg::Tcp) {
        return Err(Failure::input(format!(
            "bijou load holds WebSocket (ws://) and framed TCP (tcp://) connections; {target} is neither"
        )));
    }
    let audience = target.audience(server.server_id, server.service_name.as_deref());
    Ok((target, audience))
}

/// `bijou load-worker`: one worker process.
pub async fn run_worker(args: &WorkerArgs) -> Result<(), Failure> {
    let result = worker(args).await;
    if let Err(e) = &result {
        super::workers::emit_error(&e.to_string());
    }
    result
}

async fn worker(args: &WorkerArgs) -> Result<(), Failure> {
    let (target, audience) = address(&args.server)?;
    let limit = fd_limit::raise();
    if args.count.saturating_add(fd_limit::SPARE) > limit {
        return Err(Failure::input(fd_limit::shortage(
            &format!("a worker of {} connections", args.count),
            args.count,
            limit,
        )));
    }
    match args.role {
        Role::Crowd => crowd::run(args, target, audience).await,
        Role::Flood => flood::run(args, target, audience).await,
        Role::Stalled => bad::stalled(args, target).await,
        Role::Trickle => bad::trickle(args, target, audience).await,
    }
}
