//! The fetch's BatchSyncResponse against the plan: every item verified,
//! each one a commit we pushed, byte for byte, and none missing.

use std::collections::{HashMap, HashSet};

use bijou_frame::proto::message::{BatchSyncResponse, LooseCommit, SignedItem, SyncResult};
use bijou_frame::proto::session::RejectedItem;

use super::fetch::FetchOutcome;
use super::plan::{Plan, Planned};
use crate::figures::short;

/// Checks a BatchSyncResponse: every item verified, each one a commit we
/// pushed, byte for byte, and none missing.
pub(super) fn check_response(
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
    let seen = check_commits(out, plan, diff.commits(), rejected);
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

/// Counts each returned commit: rejected by the session, identical to one
/// pushed, altered (its blob), or unexpected. Returns the plan's indices
/// of the commits that came back identical.
fn check_commits(
    out: &mut FetchOutcome,
    plan: &Plan,
    returned: &[SignedItem<LooseCommit>],
    rejected: &[RejectedItem],
) -> HashSet<usize> {
    let sent: HashMap<&[u8], (usize, &Planned)> = plan
        .commits
        .iter()
        .enumerate()
        .map(|(i, c)| (c.signed.as_ref(), (i, c)))
        .collect();
    let bad: HashMap<usize, &RejectedItem> = rejected.iter().map(|r| (r.index, r)).collect();
    let mut seen = HashSet::with_capacity(plan.commits.len());
    out.returned = returned.len();
    for (index, item) in returned.iter().enumerate() {
        if let Some(why) = bad.get(&index) {
            out.rejected += 1;
            out.problems.push(format!("returned commit {why}"));
            continue;
        }
        match sent.get(item.signed().as_bytes()) {
            Some(&(i, commit)) if item.blob().as_bytes() == commit.blob.as_ref() => {
                if seen.insert(i) {
                    out.identical += 1;
                }
            }
            Some(&(i, _)) => {
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
    seen
}
