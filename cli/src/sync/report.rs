//! `bijou sync`'s report: the banner, what each step saw, and the
//! verdict.

use bijou_frame::proto::message::Audience;
use bijou_frame::signing::Identity;

use super::args::{AccessArg, Args};
use super::client::Outcome;
use super::keyhive::Keyhive;
use super::plan::Plan;
use crate::figures::{ms, percentile_ms, short};
use crate::serve::SyncServer;
use crate::target::Target;

/// The banner: what is pushed where, and the server line.
pub(super) fn print_banner(
    args: &Args,
    plan: &Plan,
    target: &Target,
    server: Option<&SyncServer>,
    audience: Audience,
) {
    println!(
        "bijou sync: {} chained commits x {} B into tree {}.. over {target}, window {}, seed {}",
        plan.commits.len(),
        args.blob_size,
        plan.tree.to_string().get(..8).unwrap_or_default(),
        args.window,
        plan.seed
    );
    println!(
        "  server       {}",
        describe_server(args, server, audience, target)
    );
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

impl Outcome {
    /// One line: what went wrong, for the exit message.
    pub(super) fn verdict(&self) -> String {
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

    /// Prints the report: what each step saw, then OK or FAILED.
    pub(super) fn print(&self, plan: &Plan, window: usize) {
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
        for note in &f.notes {
            println!("  note         {note}");
        }
        if problems.len() > SHOWN {
            println!("  problem      ... and {} more", problems.len() - SHOWN);
        }
    }
}
