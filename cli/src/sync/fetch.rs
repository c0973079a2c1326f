//! Connection 2 fetches the whole tree back in one BatchSyncResponse.

use std::time::{Duration, Instant};

use bijou_frame::codec::Wire;
use bijou_frame::net::{Connection, RunError};
use bijou_frame::proto::message::SyncMessage;
use bijou_frame::proto::session::{self, Operation, OperationError};
use bijou_frame::signing::ed25519_dalek::SigningKey;

use super::check::check_response;
use super::plan::Plan;
use crate::target::Carrier;

/// What the fetch saw.
#[derive(Debug, Default)]
pub(super) struct FetchOutcome {
    pub(super) answered: bool,
    pub(super) returned: usize,
    pub(super) identical: usize,
    pub(super) rejected: usize,
    pub(super) altered: usize,
    pub(super) unexpected: usize,
    pub(super) missing: usize,
    pub(super) bytes: usize,
    pub(super) elapsed: Duration,
    pub(super) last_is_head: bool,
    pub(super) problems: Vec<String>,
    /// What went wrong and was recovered from (an answer lost, asked
    /// again): said, but not a failure.
    pub(super) notes: Vec<String>,
}

/// Fetches the whole tree (a session operation) and checks the answer
/// against the plan.
pub(super) async fn fetch(
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
    let verified = match fetch_asking_again(conn, key, plan, wait, &mut out).await {
        Ok(session::Outcome::Fetched(verified)) => verified,
        Ok(other) => {
            out.problems.push(format!("a fetch ended as {other:?}"));
            return out;
        }
        Err(e) => {
            count_failure(e, wait, &mut out);
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

/// How many times a fetch is asked in all when its answer does not come.
const FETCH_ATTEMPTS: u32 = 3;

/// Runs the fetch, asking again (a new request: a fetch changes nothing,
/// so it can be repeated) when no answer comes by `wait`: a server that
/// drops responses (Subduction's long-poll server loses one whose HTTP
/// response does not arrive) gets another chance. Each lost answer is
/// noted.
async fn fetch_asking_again(
    conn: &mut Connection<Carrier>,
    key: &SigningKey,
    plan: &Plan,
    wait: Duration,
    out: &mut FetchOutcome,
) -> Result<session::Outcome, RunError> {
    let mut attempt = 1;
    loop {
        match conn.run(key, Operation::Fetch(plan.tree), wait).await {
            Err(RunError::Operation {
                error: OperationError::TimedOut { .. },
                ..
            }) if attempt < FETCH_ATTEMPTS => {
                out.notes.push(format!(
                    "no BatchSyncResponse within {wait:?} (attempt {attempt} of {FETCH_ATTEMPTS}): asked again"
                ));
                attempt += 1;
            }
            ended => return ended,
        }
    }
}

/// Notes why the fetch got no BatchSyncResponse.
fn count_failure(error: RunError, wait: Duration, out: &mut FetchOutcome) {
    let why = match error {
        RunError::Operation {
            error: OperationError::TimedOut { .. },
            ..
        } => format!("no BatchSyncResponse within {wait:?}"),
        RunError::Operation {
            error: OperationError::Refused { reason, .. },
            ..
        } => {
            out.answered = true;
            format!("the server answered {reason}")
        }
        RunError::Closed { .. } => "the server closed connection 2".to_owned(),
        e => format!("connection 2 failed: {e}"),
    };
    out.problems.push(why);
}
