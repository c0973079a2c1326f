//! A crowd worker: idle authenticated connections, opened as fast as the
//! server takes them, held until the parent says `end`.
//!
//! Every connection has its own key. Its challenge is signed before the
//! clock starts, and the server's response is checked (`verify_strict`,
//! the challenge digest, the server's key) once every connection is
//! open: the rate measured is the server's, not this generator's
//! signing. A response that does not check fails its connection all the
//! same.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use bijou_frame::net::handshake::ConnectConfig;
use bijou_frame::net::Connection;
use bijou_frame::proto::handshake::{Initiator, HANDSHAKE_MAX_MESSAGE_LENGTH};
use bijou_frame::proto::message::{Audience, SedimentreeId};
use bijou_frame::proto::session::{Operation, Outcome, SessionConfig};
use bijou_frame::proto::time::Clock;
use bijou_frame::signing::ed25519_dalek::SigningKey;
use bijou_frame::signing::Identity as _;
use bytes::Bytes;
use futures::{SinkExt as _, StreamExt as _};
use rand::{Rng as _, RngCore as _};

use super::args::WorkerArgs;
use super::tally::Tally;
use super::workers::{emit, Commands};
use crate::exit::Failure;
use crate::target::{Carrier, Target, CONNECT_TIMEOUT};
use bijou_frame::net::transport::websocket;

/// Connections per loopback source address: its ephemeral ports number
/// about 28,000, and a closed connection keeps its port in TIME_WAIT for
/// a minute.
const PER_SOURCE: u64 = 5_000;

/// The reason of a connection the server took and never answered.
pub const NO_ANSWER: &str = "no_answer";

/// How often a worker says how far its connections have got.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// How long a held connection may take to answer the parent's check.
const CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// The loopback address connection `index` of a run connects from:
/// `127.BASE.0.1` for the first [`PER_SOURCE`], then `127.BASE.0.2`, up
/// to `127.BASE.0.250`, then `127.BASE.1.1`... Each run picks its own
/// `base` (1-254), so the ports a previous run left in TIME_WAIT are not
/// in its way.
pub fn source(base: u8, index: u64) -> IpAddr {
    let n = index / PER_SOURCE;
    let lo = 1 + (n % 250) as u8;
    let hi = u8::try_from(n / 250).unwrap_or(u8::MAX);
    IpAddr::V4(Ipv4Addr::new(127, base, hi, lo))
}

/// One held connection and its key (the key signs what the session asks).
pub struct Held {
    pub conn: Connection<Carrier>,
    pub key: SigningKey,
}

/// A connection whose challenge is signed and not sent yet.
pub struct Signed {
    key: SigningKey,
    initiator: Initiator,
}

/// A connection that sent its challenge and read the reply, not checked
/// yet.
pub struct Answered {
    key: SigningKey,
    initiator: Initiator,
    carrier: Carrier,
    reply: Bytes,
}

/// `count` keys, each with its challenge to `audience` signed now.
pub fn sign_challenges(count: u64, audience: Audience) -> Result<Vec<Signed>, Failure> {
    let mut rng = rand::rng();
    let now = Clock::system().now();
    (0..count)
        .map(|_| {
            let mut seed = [0u8; 32];
            rng.fill_bytes(&mut seed);
            let key = SigningKey::from_bytes(&seed);
            let initiator = Initiator::new(&key, audience, now, rng.random())
                .map_err(|e| Failure::input(format!("cannot sign a challenge: {e}")))?;
            Ok(Signed { key, initiator })
        })
        .collect()
}

/// Connects, upgrades, sends the signed challenge and reads the reply;
/// the error is a short reason (`connect`, `closed`, ...). A connection
/// the server took but did not answer in [`CONNECT_TIMEOUT`] (no upgrade,
/// no reply to the challenge) is `no_answer`: what a server at its
/// connection cap does to the connections waiting in its backlog.
pub async fn open(target: &Target, from: IpAddr, signed: Signed) -> Result<Answered, &'static str> {
    let mut carrier: Carrier = match target {
        Target::Ws(url) => {
            let io = target
                .tcp_from(Some(from))
                .await
                .map_err(|e| said_once("connect", &e))?;
            match tokio::time::timeout(CONNECT_TIMEOUT, websocket::client(io, url)).await {
                Ok(Ok(ws)) => Box::new(ws),
                Ok(Err(e)) => return Err(said_once("upgrade", &e)),
                Err(_) => {
                    let why = format!(
                        "no answer to the WebSocket upgrade at {url} in {CONNECT_TIMEOUT:?}"
                    );
                    return Err(said_once(NO_ANSWER, &why));
                }
            }
        }
        _ => target
            .carrier_from(Some(from))
            .await
            .map_err(|e| said_once("connect", &e))?,
    };
    carrier.set_max_message_length(HANDSHAKE_MAX_MESSAGE_LENGTH);
    let exchange = async {
        carrier
            .send(signed.initiator.challenge().clone())
            .await
            .map_err(|e| said_once("send", &e))?;
        match carrier.next().await {
            Some(Ok(reply)) => Ok(reply),
            Some(Err(e)) => Err(said_once("read", &e)),
            None => Err("closed"),
        }
    };
    let reply = tokio::time::timeout(CONNECT_TIMEOUT, exchange)
        .await
        .map_err(|_| {
            let why = format!("no reply to the challenge in {CONNECT_TIMEOUT:?}");
            said_once(NO_ANSWER, &why)
        })??;
    Ok(Answered {
        key: signed.key,
        initiator: signed.initiator,
        carrier,
        reply,
    })
}

/// `why`, having said `error` on standard error if it is this worker's
/// first failure: the report counts failures by short reason, this says
/// what the first one was (a refused connect, `EMFILE`, a reset).
fn said_once(why: &'static str, error: &dyn std::fmt::Display) -> &'static str {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!("bijou load: a connection failed ({why}): {error}");
    }
    why
}

/// Checks the server's response: an established connection, or why not.
pub fn check(answered: Answered) -> Result<Held, &'static str> {
    let Answered {
        key,
        initiator,
        mut carrier,
        reply,
    } = answered;
    let authenticated = initiator.receive(reply).map_err(|e| match e {
        bijou_frame::proto::handshake::HandshakeError::Rejected { .. } => "refused",
        _ => "bad_response",
    })?;
    carrier.set_max_message_length(ConnectConfig::default().max_message_length);
    let config = SessionConfig::new(rand::random());
    let conn = Connection::established(carrier, key.peer_id(), authenticated, config);
    Ok(Held { conn, key })
}

/// Opens `signed`'s connections, `concurrency` at a time, from the
/// source addresses of indices `first..`: those answered, what failed,
/// and how long it took. Every [`PROGRESS_EVERY`] it emits a `progress`
/// line: answered, failed, waiting (opened, no answer yet) and not
/// started yet.
pub async fn open_all(
    target: &Target,
    signed: Vec<Signed>,
    (base, first): (u8, u64),
    concurrency: usize,
) -> (Vec<Answered>, Tally, Duration) {
    let started = Instant::now();
    let total = signed.len() as u64;
    let mut tally = Tally::default();
    let mut answered = Vec::new();
    let begun = std::cell::Cell::new(0u64);
    let mut opening = futures::stream::iter(signed.into_iter().zip(first..))
        .map(|(signed, index)| {
            begun.set(begun.get() + 1);
            open(target, source(base, index), signed)
        })
        .buffer_unordered(concurrency);
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    loop {
        tokio::select! {
            next = opening.next() => match next {
                Some(result) => answered.extend(tally.keep(result)),
                None => break,
            },
            _ = tick.tick() => {
                let done = tally.ok + tally.failures();
                let begun = begun.get();
                emit("progress", &progress(&tally, begun.saturating_sub(done), total - begun));
            }
        }
    }
    (answered, tally, started.elapsed())
}

/// A `progress` line's figures: answered, failed (and by reason),
/// waiting, not started.
fn progress(tally: &Tally, waiting: u64, not_started: u64) -> Vec<(String, u64)> {
    let mut figures = tally.figures();
    figures.push(("waiting".to_owned(), waiting));
    figures.push(("not_started".to_owned(), not_started));
    figures
}

/// Checks every answer ([`check`]): the held connections, and what
/// failed.
pub fn check_all(answered: Vec<Answered>) -> (Vec<Held>, Tally) {
    let mut tally = Tally::default();
    let held = answered
        .into_iter()
        .filter_map(|a| tally.keep(check(a)))
        .collect();
    (held, tally)
}

/// Asks every held connection for an answer (a fetch of a tree nobody
/// has), `concurrency` at a time: how many answered.
pub async fn check_alive(held: &mut [Held], concurrency: usize) -> Tally {
    let mut tally = Tally::default();
    let results: Vec<Result<(), &'static str>> = futures::stream::iter(held.iter_mut())
        .map(|h| async move {
            let tree = SedimentreeId::new(rand::random());
            match h
                .conn
                .run(&h.key, Operation::Fetch(tree), CHECK_TIMEOUT)
                .await
            {
                Ok(Outcome::Fetched(_)) => Ok(()),
                Ok(_) => Err("other_answer"),
                Err(e) if e.kind() == bijou_frame::net::ErrorKind::TimedOut => Err("no_answer"),
                Err(_) => Err("closed"),
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    for r in results {
        tally.keep(r);
    }
    tally
}

/// `bijou load-worker --role crowd`: signs, waits for `go`, opens its
/// connections, waits for `verify`, checks them, then answers `check` and
/// `vanish N` until `end`.
pub async fn run(args: &WorkerArgs, target: Target, audience: Audience) -> Result<(), Failure> {
    let signed = sign_challenges(args.count, audience)?;
    emit("ready", &[("count", args.count)]);
    let mut commands = Commands::new();
    if commands.next().await.as_deref() != Some("go") {
        return Ok(());
    }
    let concurrency = usize::try_from(args.concurrency).unwrap_or(1).max(1);
    // While connecting, this thread never sleeps in the kernel: a reply
    // the server sends over loopback then finds no sleeping thread to
    // wake (a wake-up across cores, paid inside the server's `send`,
    // which a real network never charges it).
    let spinner = tokio::spawn(async {
        loop {
            tokio::task::yield_now().await;
        }
    });
    let (answered, tally, elapsed) =
        open_all(&target, signed, (args.source_base, args.first), concurrency).await;
    spinner.abort();
    let mut figures = tally.figures();
    figures.push(("ms".to_owned(), elapsed.as_millis() as u64));
    emit("connected", &figures);
    // The replies are checked when the parent says so: after every
    // worker has connected, so that no check takes the core from a worker
    // still connecting.
    if commands.next().await.as_deref() != Some("verify") {
        return Ok(());
    }
    let (mut held, tally) = check_all(answered);
    emit("authenticated", &tally.figures());
    while let Some(command) = commands.next().await {
        let mut words = command.split_whitespace();
        match (words.next(), words.next()) {
            (Some("check"), _) => {
                let tally = check_alive(&mut held, concurrency).await;
                emit("alive", &tally.figures());
            }
            (Some("vanish"), Some(n)) => {
                let n = n.parse::<usize>().unwrap_or(0).min(held.len());
                // Dropped at once: each socket closes.
                held.truncate(held.len() - n);
                emit("vanished", &[("count", n as u64)]);
            }
            _ => break,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_change_every_5000_connections() {
        let ip = |a, b, c| IpAddr::V4(Ipv4Addr::new(127, a, b, c));
        assert_eq!(source(9, 0), ip(9, 0, 1));
        assert_eq!(source(9, 4_999), ip(9, 0, 1));
        assert_eq!(source(9, 5_000), ip(9, 0, 2));
        assert_eq!(source(9, 250 * 5_000), ip(9, 1, 1));
    }
}
