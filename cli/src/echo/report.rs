//! `bijou echo`'s report: the banner, then every sender's counts added
//! up, the problems, and the verdict.

use std::time::Duration;

use bijou_frame::framing::prefix::LengthPrefix;

use super::args::{Args, BlobSize};
use super::outcome::Outcome;
use super::server::Server;
use crate::exit::Failure;
use crate::figures::{percentile_ms, short};
use crate::target::{Target, TransportArg};

/// The banner: how many frames from how many peers, over what.
pub(super) fn print_banner<P: LengthPrefix>(args: &Args, target: &Target, seed: u64) {
    let transport = target.transport();
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
}

/// How the run's messages travel, for the banners.
pub(super) fn transport_name<P: LengthPrefix>(transport: TransportArg) -> String {
    match transport {
        TransportArg::Tcp => format!("prefix {}", P::NAME),
        TransportArg::Ws => "WebSocket binary messages".to_owned(),
        TransportArg::Longpoll => "HTTP long-poll, one message per request".to_owned(),
        TransportArg::Iroh => "iroh QUIC, u32-be prefix".to_owned(),
    }
}

/// What the senders found, gathered for the summary.
#[derive(Debug, Default)]
pub(super) struct Report {
    /// `--window`, for the round-trip line.
    window: u32,
    outcomes: Vec<Outcome>,
    /// The senders that failed (connect, handshake, timeout).
    pub(super) errors: Vec<Failure>,
}

impl Report {
    /// No sender's outcome yet, of senders keeping `window` frames in
    /// flight.
    pub(super) fn new(window: u32) -> Self {
        Self {
            window,
            ..Self::default()
        }
    }

    /// Adds a sender's outcome.
    pub(super) fn add(&mut self, outcome: Outcome) {
        self.outcomes.push(outcome);
    }

    fn sum(&self, f: impl Fn(&Outcome) -> u64) -> u64 {
        self.outcomes.iter().map(f).sum()
    }

    /// Prints the summary; an error unless every frame came back intact.
    /// Frames are counted once each: echoed, or lost (sent, never echoed
    /// back), or never sent (a peer that failed before sending them).
    pub(super) fn print(
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
