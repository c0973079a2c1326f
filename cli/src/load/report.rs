//! What `bijou load` prints, and whether the run went well.

use std::time::Duration;

use super::args::{Args, Role};
use super::crypto::CryptoLimit;
use super::honest::Pushes;
use super::server::ServerFigures;
use crate::figures::percentile_ms;
use crate::stats_file::Figures;
use crate::target::Target;

/// The crowd's figures, summed over its workers.
#[derive(Debug, Default)]
pub struct Crowd {
    pub workers: usize,
    /// `connected`: ok, failed, failed_REASON.
    pub connected: Figures,
    /// From the first `go` to the last worker's `connected`.
    pub elapsed: Duration,
    /// `authenticated`: the replies that checked (ok, failed,
    /// failed_REASON).
    pub authenticated: Figures,
    /// `alive`: ok, failed, failed_REASON.
    pub alive: Figures,
    /// CPU time the server used meanwhile (10 ms ticks).
    pub server_cpu: Duration,
}

/// Everything measured, in the order it was.
pub struct Report {
    pub connections: u64,
    pub flooders: u64,
    /// Held connections dropped on purpose (as the workers counted).
    pub vanished: u64,
    pub target: String,
    /// Sign + verify_strict pairs per second on the server's cores.
    pub crypto: CryptoLimit,
    pub before: ServerFigures,
    pub crowd: Crowd,
    pub held: ServerFigures,
    pub kernel: (Option<u64>, Option<u64>),
    /// CPU time the server used while the crowd idled, and over how long.
    pub idle_cpu: (Duration, Duration),
    pub alone: Option<Pushes>,
    pub beside: Option<Pushes>,
    /// Commits the flooders sent, and for how long.
    pub flood_sent: Option<(u64, Duration)>,
    pub during_flood: Option<ServerFigures>,
    pub bad: Vec<(Role, Figures)>,
    pub fetched: Option<Result<(usize, usize), String>>,
    pub end: ServerFigures,
}

fn get(figures: &Figures, name: &str) -> u64 {
    figures.get(name).copied().unwrap_or(0)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

/// `failed_REASON=N` pairs as `REASON N, ...`.
fn reasons(figures: &Figures) -> String {
    let parts: Vec<String> = figures
        .iter()
        .filter_map(|(name, n)| Some(format!("{} {n}", name.strip_prefix("failed_")?)))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

impl Report {
    pub fn new(args: &Args, target: &Target, crypto: CryptoLimit, before: ServerFigures) -> Self {
        Self {
            connections: args.connections,
            flooders: args.flooders,
            vanished: 0,
            target: target.to_string(),
            crypto,
            before,
            crowd: Crowd::default(),
            held: ServerFigures::default(),
            kernel: (None, None),
            idle_cpu: (Duration::ZERO, Duration::ZERO),
            alone: None,
            beside: None,
            flood_sent: None,
            during_flood: None,
            bad: Vec::new(),
            fetched: None,
            end: ServerFigures::default(),
        }
    }

    pub fn print(&self) {
        let ok = get(&self.crowd.connected, "ok");
        let secs = self.crowd.elapsed.as_secs_f64().max(1e-9);
        let rate = ok as f64 / secs;
        let CryptoLimit {
            total: limit,
            cores,
            pinned,
        } = self.crypto;
        let on = if pinned {
            format!("a thread pinned to each of the server's {cores} core(s)")
        } else {
            format!("{cores} unpinned thread(s): the server's cores unknown")
        };
        println!(
            "load: {} connections to {} from {} worker process(es)",
            self.connections, self.target, self.crowd.workers
        );
        println!(
            "  connect + handshake: {ok} in {secs:.2} s = {rate:.0}/s; crypto limit {limit:.0}/s \
             (one sign + one verify_strict per handshake, measured now on {on}): {:.2}x; \
             failed {}{}",
            rate / limit.max(1e-9),
            get(&self.crowd.connected, "failed"),
            reasons(&self.crowd.connected),
        );
        println!(
            "  server responses checked afterwards (verify_strict, challenge digest, server key): {} authenticated, {} failed{}",
            get(&self.crowd.authenticated, "ok"),
            get(&self.crowd.authenticated, "failed"),
            reasons(&self.crowd.authenticated),
        );
        if self.before.processes > 0 {
            println!(
                "  server CPU meanwhile: {:.2} s of {secs:.2} s on {cores} core(s) ({:.0}% busy)",
                self.crowd.server_cpu.as_secs_f64(),
                100.0 * self.crowd.server_cpu.as_secs_f64() / (secs * cores as f64),
            );
        }
        self.print_memory();
        if let Some(p) = &self.alone {
            println!("  honest peer alone: {}", pushes(p));
        }
        if let Some(p) = &self.beside {
            let flood = self.flood_sent.map_or(String::new(), |(sent, took)| {
                format!(
                    "; flooders sent {sent} commits ({:.0}/s)",
                    sent as f64 / took.as_secs_f64().max(1e-9)
                )
            });
            let vanished = if self.vanished > 0 {
                format!(
                    "; {} held connections disconnected at once halfway",
                    self.vanished
                )
            } else {
                String::new()
            };
            println!(
                "  honest peer beside {} flooder(s): {}{flood}{vanished}",
                self.flooders,
                pushes(p)
            );
        }
        if let Some(during) = &self.during_flood {
            if during.processes > 0 {
                println!(
                    "  server during the flood: heap {} (peak so far {}), RSS {}",
                    mib(during.get("heap")),
                    mib(during.get("heap_peak")),
                    mib(during.rss)
                );
            }
        }
        for (role, closed) in &self.bad {
            let what = match role {
                Role::Stalled => "stalled connections (connected, never sent a challenge)",
                _ => {
                    "trickling connections (authenticated, then a byte of a message now and then; \
                      the server ends them at its idle timeout)"
                }
            };
            println!(
                "  {} {what}: {} closed by the server (the last after {:.1} s), {} still open{}",
                get(closed, "count") + get(closed, "open"),
                get(closed, "count"),
                get(closed, "ms_max") as f64 / 1e3,
                get(closed, "open"),
                match get(closed, "failed") {
                    0 => String::new(),
                    n => format!("; {n} more could not connect"),
                },
            );
        }
        match &self.fetched {
            Some(Ok((found, missing))) => println!(
                "  fetched back: {found} of {} acknowledged commits{}",
                found + missing,
                if *missing > 0 { " (some LOST)" } else { "" }
            ),
            Some(Err(why)) => println!("  fetched back: nothing: {why}"),
            None => {}
        }
        let expected = self.connections - self.vanished.min(self.connections);
        println!(
            "  still authenticated at the end: {} of {expected} answered{}",
            get(&self.crowd.alive, "ok"),
            reasons(&self.crowd.alive),
        );
        // A server whose figures file counts handshakes (bijou serve's;
        // Subduction's in-process server reports its heap only).
        if self.end.sum.contains_key("handshakes") {
            // What this run added: a server may have counted before it.
            let during = |name: &str| self.end.get(name).saturating_sub(self.before.get(name));
            let refused: Vec<String> = self
                .end
                .sum
                .keys()
                .filter_map(|name| {
                    let why = name.strip_prefix("refused_")?;
                    let n = during(name);
                    (n > 0).then(|| format!("{why} {n}"))
                })
                .collect();
            println!(
                "  the server counted: {} handshakes, {} refused or dropped before their session{}, {} closed for idling, {} open now",
                during("handshakes"),
                during("refused"),
                if refused.is_empty() { String::new() } else { format!(" ({})", refused.join(", ")) },
                during("idle_closed"),
                self.end.get("open"),
            );
        }
    }

    fn print_memory(&self) {
        if self.held.processes == 0 {
            println!("  server memory: not measured (give --server-stats)");
            return;
        }
        let heap = self.held.get("heap");
        let grown = heap.saturating_sub(self.before.get("heap"));
        let held = get(&self.crowd.authenticated, "ok").max(1);
        println!(
            "  server ({} process(es)) holding them: heap {} ({} B per connection above the {} before), RSS {}",
            self.held.processes,
            mib(heap),
            grown / held,
            mib(self.before.get("heap")),
            mib(self.held.rss),
        );
        let (busy, over) = self.idle_cpu;
        println!(
            "  server CPU while they idle: {:.0} ms in {:.1} s ({:.1}% of a core)",
            busy.as_secs_f64() * 1e3,
            over.as_secs_f64(),
            100.0 * busy.as_secs_f64() / over.as_secs_f64().max(1e-9),
        );
        let (buffers, objects) = self.kernel;
        println!(
            "  kernel TCP memory, both ends: buffers {}, socket objects {}",
            buffers.map_or("unknown".to_owned(), mib),
            objects.map_or("unknown (/proc/slabinfo unreadable)".to_owned(), mib),
        );
    }

    /// Nothing refused, dropped or lost.
    pub fn all_well(&self) -> bool {
        let expected = self.connections - self.vanished.min(self.connections);
        let pushes_ok = [&self.alone, &self.beside]
            .into_iter()
            .flatten()
            .all(|p| p.tally.failures() == 0);
        let fetched_ok = matches!(self.fetched, Some(Ok((_, 0))));
        // A stalled connection outlives the server's handshake timeout.
        let stalled_ok = self
            .bad
            .iter()
            .all(|(role, closed)| *role != Role::Stalled || get(closed, "open") == 0);
        get(&self.crowd.connected, "failed") == 0
            && get(&self.crowd.authenticated, "failed") == 0
            && get(&self.crowd.alive, "ok") == expected
            && pushes_ok
            && fetched_ok
            && stalled_ok
    }
}

/// One measurement's line.
fn pushes(p: &Pushes) -> String {
    let failed = p.tally.failures();
    let max = p.rtts.last().map_or("-".to_owned(), |d| {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    });
    format!(
        "{} pushes acknowledged, p50 {}, p99 {}, max {max}{}",
        p.tally.ok,
        percentile_ms(&p.rtts, 0.5),
        percentile_ms(&p.rtts, 0.99),
        if failed > 0 {
            format!(", {failed} NOT acknowledged {:?}", p.tally.failed)
        } else {
            String::new()
        },
    )
}
