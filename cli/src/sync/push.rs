//! Connection 1 pushes the plan: up to `--window` commits in flight, each
//! ended by the HeadsUpdate that names it (or a later one: the session's
//! acknowledgements are cumulative, like a TCP ack).

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use bijou_frame::net::{Connection, RunError};
use bijou_frame::proto::session::{self, Operation, OperationError, OperationId};
use bijou_frame::signing::ed25519_dalek::SigningKey;

use super::client::ClientJob;
use super::plan::Plan;
use crate::target::Carrier;

/// What the push saw.
#[derive(Debug, Default)]
pub(super) struct PushOutcome {
    pub(super) acked: usize,
    pub(super) unacked: usize,
    /// Messages from the server we could not accept.
    pub(super) rejected: usize,
    /// Other messages (another tree, another kind), ignored.
    pub(super) other: usize,
    pub(super) bytes: u64,
    pub(super) rtts: Vec<Duration>,
    pub(super) elapsed: Duration,
    pub(super) problems: Vec<String>,
}

/// The pushes started and not yet ended, oldest first, and the next
/// commit of the plan to start.
struct InFlight {
    /// The commit's index in the plan, its operation, when it was sent.
    pending: VecDeque<(usize, OperationId, Instant)>,
    next: usize,
}

/// Pushes the commits as session operations, up to `window` in flight,
/// each ended by the HeadsUpdate that names it (or a later one).
pub(super) async fn push(
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
    let mut flight = InFlight {
        pending: VecDeque::with_capacity(job.window),
        next: 0,
    };
    loop {
        if flight.fill(conn, plan, job, &mut out).is_break() {
            break;
        }
        let Some(&(index, id, sent_at)) = flight.pending.front() else {
            break;
        };
        let ended = conn.finish(id, key).await;
        count_held(conn, &mut out);
        if count_end(ended, index, sent_at, job, &mut out).is_break() {
            break;
        }
        flight.pending.pop_front();
    }
    // Whatever is still pending or unsent when the loop broke off.
    out.unacked += flight.pending.len() + (plan.commits.len() - flight.next);
    out.elapsed = started.elapsed();
    out
}

impl InFlight {
    /// Starts commits until `window` are in flight or none is left;
    /// breaks off when one cannot start.
    fn fill(
        &mut self,
        conn: &mut Connection<Carrier>,
        plan: &Plan,
        job: &ClientJob,
        out: &mut PushOutcome,
    ) -> ControlFlow<()> {
        while self.pending.len() < job.window {
            let Some(commit) = plan.commits.get(self.next) else {
                break;
            };
            let push = Operation::Push(commit.message.clone());
            match conn.start(push, job.ack_timeout) {
                Ok(id) => self.pending.push_back((self.next, id, Instant::now())),
                Err(e) => {
                    out.problems.push(format!(
                        "starting the push of commit #{} failed: {e}",
                        self.next + 1
                    ));
                    return ControlFlow::Break(());
                }
            }
            out.bytes += commit.len as u64;
            self.next += 1;
        }
        ControlFlow::Continue(())
    }
}

/// Counts how the push of commit `index` ended; breaks off when the
/// connection is gone.
fn count_end(
    ended: Result<session::Outcome, RunError>,
    index: usize,
    sent_at: Instant,
    job: &ClientJob,
    out: &mut PushOutcome,
) -> ControlFlow<()> {
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
            // Pushing it again would not help: a server that has the
            // commit answers a repeat with no HeadsUpdate. The fetch
            // shows whether it was stored.
            out.problems.push(format!(
                "no HeadsUpdate naming commit #{} within {:?} (refused, or the acknowledgement was lost on its way: the fetch shows whether it was stored)",
                index + 1,
                job.ack_timeout
            ));
        }
        Err(RunError::Closed { .. }) => {
            out.problems
                .push("the server closed connection 1".to_owned());
            return ControlFlow::Break(());
        }
        Err(e) => {
            out.problems.push(format!("connection 1 failed: {e}"));
            return ControlFlow::Break(());
        }
    }
    ControlFlow::Continue(())
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
