//! The honest peer: one authenticated connection that pushes commits one
//! at a time, each measured from its send to the server's HeadsUpdate
//! naming it, and at the end fetches the tree back to find every
//! acknowledged commit there.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use bijou_frame::net::Connection;
use bijou_frame::proto::message::{CommitId, VerifiedItem};
use bijou_frame::proto::session::{Operation, Outcome};
use bijou_frame::signing::ed25519_dalek::SigningKey;

use super::tally::Tally;
use crate::sync::plan::Planned;
use crate::target::Carrier;

/// How long one push may wait for its acknowledgement.
const PUSH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the fetch may wait for its answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);

/// What one measurement saw.
#[derive(Debug, Default)]
pub struct Pushes {
    /// Round trips of the acknowledged pushes, sorted.
    pub rtts: Vec<Duration>,
    /// The acknowledged commits.
    pub acked: Vec<CommitId>,
    /// Pushes not acknowledged, by why.
    pub tally: Tally,
}

impl Pushes {
    /// Adds `other`'s pushes to these.
    pub fn merge(&mut self, other: Self) {
        self.rtts.extend(other.rtts);
        self.rtts.sort_unstable();
        self.acked.extend(other.acked);
        self.tally.add(other.tally);
    }
}

/// Unacknowledged pushes in a row after which the rest are not tried
/// (a server refusing every commit, its tree full, answers with silence:
/// each would wait [`PUSH_TIMEOUT`]).
const SILENT_IN_A_ROW: usize = 3;

/// Pushes `commits` one at a time; every commit not acknowledged, tried
/// or not, is counted.
pub async fn push(conn: &mut Connection<Carrier>, key: &SigningKey, commits: &[Planned]) -> Pushes {
    let mut out = Pushes::default();
    let mut silent = 0;
    for (index, commit) in commits.iter().enumerate() {
        let untried = commits.len() - index;
        if silent == SILENT_IN_A_ROW {
            out.tally
                .fail("not_tried_after_3_unacknowledged", untried as u64);
            break;
        }
        let sent = Instant::now();
        let ended = conn
            .run(key, Operation::Push(commit.message.clone()), PUSH_TIMEOUT)
            .await;
        let rtt = sent.elapsed();
        // Other messages (none expected) are not kept.
        conn.drain_held().for_each(drop);
        match ended {
            Ok(Outcome::Pushed { .. }) => {
                silent = 0;
                out.tally.ok += 1;
                out.rtts.push(rtt);
                out.acked.push(commit.head);
            }
            Ok(_) => out.tally.fail("other_answer", 1),
            Err(e) if e.kind() == bijou_frame::net::ErrorKind::TimedOut => {
                silent += 1;
                out.tally.fail("not_acknowledged", 1);
            }
            Err(_) => {
                out.tally.fail("connection_lost", untried as u64);
                break;
            }
        }
    }
    out.rtts.sort_unstable();
    out
}

/// Fetches `tree` and counts how many of `acked` came back verified:
/// `(found, missing)`, or why the fetch failed.
pub async fn fetch_back(
    conn: &mut Connection<Carrier>,
    key: &SigningKey,
    tree: bijou_frame::proto::message::SedimentreeId,
    acked: &[CommitId],
) -> Result<(usize, usize), String> {
    let outcome = conn
        .run(key, Operation::Fetch(tree), FETCH_TIMEOUT)
        .await
        .map_err(|e| format!("the fetch failed: {e}"))?;
    let Outcome::Fetched(verified) = outcome else {
        return Err(format!("the fetch ended as {outcome:?}"));
    };
    let returned: HashSet<CommitId> = verified
        .items
        .iter()
        .filter_map(|item| match item {
            VerifiedItem::Commit(commit, _) => Some(commit.payload().head()),
            VerifiedItem::Fragment(..) => None,
        })
        .collect();
    let found = acked.iter().filter(|head| returned.contains(head)).count();
    Ok((found, acked.len() - found))
}
