//! `bijou sync`'s client: connection 1 pushes the plan, connection 2
//! fetches it back; what both saw comes back as an [`Outcome`].

use std::time::Duration;

use bijou_frame::proto::keyhive::DocumentKey;
use bijou_frame::proto::message::Audience;
use bijou_frame::proto::session::{self, Operation};
use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity, PeerId};
use indicatif::ProgressBar;

use super::args::AccessArg;
use super::fetch::{fetch, FetchOutcome};
use super::keyhive::{register_if_enforced, Keyhive, PROBE_LIMIT};
use super::plan::Plan;
use super::push::{push, PushOutcome};
use crate::exit::Failure;
use crate::keygen::new_key;
use crate::serve::ServerStats;
use crate::target::Target;

/// How long a closing connection waits for the server's side of the close.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// What to try when a server refuses the audience we addressed.
const SYNC_RETRY: &str = "give the server's own --service-name, or its peer id with --server-id";

/// What the client is to do, besides the plan.
pub(super) struct ClientJob {
    pub(super) target: Target,
    pub(super) audience: Audience,
    /// The document whose tree we push to.
    pub(super) doc: DocumentKey,
    /// Who may edit it, if we register it.
    pub(super) access: AccessArg,
    /// The audience in words, for errors.
    pub(super) addressed: String,
    pub(super) window: usize,
    pub(super) ack_timeout: Duration,
    /// How long each fetch request may wait for its answer.
    pub(super) fetch_timeout: Duration,
    pub(super) bar: ProgressBar,
}

/// Everything the client saw.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    pub(super) keyhive: Keyhive,
    pub(super) pusher: Option<PeerId>,
    pub(super) fetcher: Option<PeerId>,
    pub(super) remote: Option<PeerId>,
    pub(super) handshakes: (Duration, Duration),
    pub(super) push: PushOutcome,
    pub(super) fetch: FetchOutcome,
    pub(super) server: Option<ServerStats>,
    pub(super) expected: usize,
}

impl Outcome {
    /// Every commit acknowledged, fetched back identical, nothing else
    /// wrong.
    pub(super) fn ok(&self) -> bool {
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
}

/// Connection 1 pushes, then connection 2 fetches.
pub(super) async fn push_then_fetch(
    job: &ClientJob,
    key_a: SigningKey,
    plan: &Plan,
) -> Result<Outcome, Failure> {
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
    outcome.keyhive = register_if_enforced(&mut conn, &key_a, job, plan.tree).await;
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
    outcome.fetch = fetch(&mut conn, &key_b, plan, job.fetch_timeout).await;
    let _ = conn.shutdown(CLOSE_GRACE).await;
    Ok(outcome)
}
