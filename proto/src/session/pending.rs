//! A received message with signatures still to verify, and the bounded
//! steps that verify it.

use alloc::boxed::Box;
use alloc::vec::Vec;
use bytes::Bytes;

use super::received::{Delivered, Received, Rejected, RejectedItem, VerifiedMessage};
use crate::ephemeral::{EphemeralRejected, EphemeralSession, SubscribeOutcome};
use crate::keyhive::SukMessage;
use crate::message::{BatchSyncResponse, SyncResult};
use crate::message::{EphemeralMessage, Message, MessageFrame, SignedEphemeral, SyncMessage};
use crate::message::{VerifiedItem, VerifyItemError};
use crate::time::{Now, Timestamp};
use crate::verify_budget::Bucket;
use bijou_signing::PeerId;

/// Blob bytes checked (hashed with BLAKE3) in one step at most, unless a
/// single item's blob is larger: 1 MiB, about 0.3 ms of one core.
pub(super) const STEP_BLOB_BYTES: usize = 1 << 20;

/// Items batched together at most while the peer's batches hold.
///
/// A batch of honest items costs about half a `verify_strict` per item.
/// A batch that fails says only that *some* item in it is bad; from then
/// on the session verifies the peer one by one (one `verify_strict` per
/// item), so the failure is paid once per session: one batch of at most
/// this many items, about half as many `verify_strict`s, on top of one
/// `verify_strict` per item. Smaller is a tighter bound on that one-time
/// extra; larger batches honest items a little cheaper.
pub(super) const PROBE_BATCH: usize = 32;

/// A received message: answered at once (malformed, a handshake message, a
/// control message, an ephemeral message that failed a cheap check), or a
/// message with signatures to verify.
pub(super) enum Start {
    Answered(Received),
    Verify(Pending),
}

/// What one step did.
pub(super) enum Step {
    /// More items remain.
    More,
    /// The budget allows the next step at this instant.
    Wait(Timestamp),
    /// The message is answered (rejected, or an ephemeral message).
    Done(Box<Received>),
    /// Every item is verified (a sync message), or paid for (a keyhive
    /// message): [`Pending::finish`] it.
    Finished,
}

/// A message taken off the transport with signatures still to verify.
#[derive(Debug)]
pub(super) enum Pending {
    Sync(PendingSync),
    Ephemeral(PendingEphemeral),
    Keyhive(PendingKeyhive),
}

/// A keyhive message, decoded, its one signature still to check against
/// the handshake's peer (paid for from the budget like any other).
#[derive(Debug)]
pub(super) struct PendingKeyhive {
    bytes: Bytes,
    message: SukMessage,
    peer: PeerId,
}

/// An ephemeral message that passed the cheap checks at `now`.
#[derive(Debug)]
pub(super) struct PendingEphemeral {
    bytes: Bytes,
    message: SignedEphemeral,
    now: Now,
}

impl Pending {
    /// A message to verify, or the answer for anything else, at `now`.
    /// `session` is the connection's ephemeral state, `peer` the
    /// key its handshake authenticated (`None` for both: verify only, a
    /// keyhive message against the key it names).
    pub(super) fn start(
        frame: MessageFrame,
        session: Option<&mut EphemeralSession>,
        peer: Option<PeerId>,
        now: Now,
    ) -> Start {
        let bytes = frame.bytes;
        let answer = |result| {
            Start::Answered(Received {
                bytes: bytes.clone(),
                result,
            })
        };
        let message = match frame.message {
            Ok(Message::Sync(message)) => {
                return Start::Verify(Self::Sync(PendingSync::new(bytes, message)));
            }
            Ok(Message::Ephemeral(message)) => message,
            Ok(Message::Keyhive(message)) => {
                // Its one signature is checked against the handshake's
                // peer in a step, paid for from the budget like any other;
                // with no handshake, at once against the key it names.
                let Some(peer) = peer else {
                    let issuer = message.signed.issuer;
                    return answer(keyhive_verified(*message, issuer));
                };
                return Start::Verify(Self::Keyhive(PendingKeyhive {
                    bytes,
                    message: *message,
                    peer,
                }));
            }
            Err(e) => return answer(Err(Rejected::Malformed(e))),
            Ok(Message::Handshake(h)) => {
                return answer(Err(Rejected::UnexpectedHandshake(Box::new(h))))
            }
        };
        let delivered = match (message, session) {
            (EphemeralMessage::Ephemeral(message), Some(session)) => {
                if let Err(e) = session.precheck(&message, now) {
                    return answer(Err(Rejected::Ephemeral(e)));
                }
                return Start::Verify(Self::Ephemeral(PendingEphemeral {
                    bytes,
                    message: *message,
                    now,
                }));
            }
            (EphemeralMessage::Ephemeral(message), None) => {
                let result = message
                    .verify_strict()
                    .map(Delivered::Ephemeral)
                    .map_err(|e| Rejected::Ephemeral(EphemeralRejected::Signature(e)));
                return answer(result);
            }
            (EphemeralMessage::Subscribe(topics), Some(session)) => {
                Delivered::Subscribed(session.remote_subscribe(&topics))
            }
            (EphemeralMessage::Subscribe(topics), None) => {
                Delivered::Subscribed(SubscribeOutcome {
                    accepted: topics.as_slice().to_vec(),
                    rejected: None,
                })
            }
            (EphemeralMessage::Unsubscribe(topics), session) => {
                if let Some(session) = session {
                    session.remote_unsubscribe(&topics);
                }
                Delivered::Unsubscribed(topics)
            }
            (EphemeralMessage::SubscribeRejected(topics), _) => {
                Delivered::SubscribeRejected(topics)
            }
        };
        answer(Ok(delivered))
    }

    /// The received message of a sync or keyhive message whose last step
    /// was [`Step::Finished`] (an ephemeral message never finishes that
    /// way). A keyhive message's signature is checked here, where the
    /// message is owned and becomes the delivered one.
    pub(super) fn finish(self) -> Option<Received> {
        match self {
            Self::Sync(pending) => Some(pending.finish()),
            Self::Keyhive(pending) => Some(Received {
                result: keyhive_verified(pending.message, pending.peer),
                bytes: pending.bytes,
            }),
            Self::Ephemeral(_) => None,
        }
    }

    /// One step: pays for at most `step` items at `now` and verifies them,
    /// one by one if `one_by_one` (the peer's batch already failed once),
    /// else in batches; a batch that fails sets `one_by_one` for the rest
    /// of this step and of the session (see [`PendingSync::verify_until`]).
    pub(super) fn step(
        &mut self,
        budget: &mut Bucket,
        ephemeral: Option<&mut EphemeralSession>,
        step: usize,
        one_by_one: &mut bool,
        now: Now,
    ) -> Step {
        let now = now.monotonic;
        match self {
            // Paid for here; verified by `finish`, which owns the message.
            Self::Keyhive(_) => match budget.try_spend(1, now) {
                Ok(()) => Step::Finished,
                Err(at) => Step::Wait(at),
            },
            Self::Ephemeral(pending) => {
                if let Err(at) = budget.try_spend(1, now) {
                    return Step::Wait(at);
                }
                // The session made its ephemeral state when the message
                // arrived; without one, verify only (as `verify_message`).
                let result = match ephemeral {
                    Some(session) => session.verify_and_record(&pending.message, pending.now),
                    None => pending
                        .message
                        .verify_strict()
                        .map_err(EphemeralRejected::Signature),
                }
                .map(Delivered::Ephemeral)
                .map_err(Rejected::Ephemeral);
                Step::Done(Box::new(Received {
                    bytes: core::mem::take(&mut pending.bytes),
                    result,
                }))
            }
            Self::Sync(pending) => {
                let total = pending.message.signed_item_count();
                let end = pending.step_end(step, total);
                if pending.paid < end {
                    if let Err(at) = budget.try_spend(end - pending.paid, now) {
                        return Step::Wait(at);
                    }
                    pending.paid = end;
                }
                if let Some(rejected) = pending.verify_until(end, one_by_one) {
                    return Step::Done(Box::new(rejected));
                }
                if pending.next >= total {
                    Step::Finished
                } else {
                    Step::More
                }
            }
        }
    }
}

/// A sync message whose signed items are being verified.
#[derive(Debug)]
pub(super) struct PendingSync {
    bytes: Bytes,
    message: SyncMessage,
    items: Vec<VerifiedItem>,
    rejected: Vec<RejectedItem>,
    /// The next item to verify.
    next: usize,
    /// Items already paid for from the budget.
    paid: usize,
    /// The ranges of items that went through a batch, in order (tests
    /// read the price from it).
    #[cfg(test)]
    batched: Vec<core::ops::Range<usize>>,
}

impl PendingSync {
    fn new(bytes: Bytes, message: SyncMessage) -> Self {
        Self {
            bytes,
            items: Vec::with_capacity(message.signed_item_count()),
            rejected: Vec::new(),
            message,
            next: 0,
            paid: 0,
            #[cfg(test)]
            batched: Vec::new(),
        }
    }

    /// Where a step starting at `self.next` ends: after `step` items, or
    /// earlier once their blobs reach [`STEP_BLOB_BYTES`] (checking a blob
    /// hashes it), but always after at least one item.
    fn step_end(&self, step: usize, total: usize) -> usize {
        let mut bytes = 0usize;
        let mut end = self.next;
        while end < total.min(self.next.saturating_add(step)) {
            bytes = bytes.saturating_add(self.message.signed_item_blob_len(end).unwrap_or(0));
            end += 1;
            if bytes >= STEP_BLOB_BYTES {
                break;
            }
        }
        end
    }

    /// Whether a bad item rejects only itself (a BatchSyncResponse) or the
    /// whole message (a LooseCommit or Fragment, whose one item it is).
    fn per_item(&self) -> bool {
        !matches!(
            self.message,
            SyncMessage::LooseCommit(_) | SyncMessage::Fragment(_)
        )
    }

    /// Where the probe batch starting at `start` ends (before `end`): at
    /// most [`PROBE_BATCH`] items, all of one kind (a response's commits
    /// and fragments are batched apart).
    fn probe_end(&self, start: usize, end: usize) -> usize {
        let commits = match &self.message {
            SyncMessage::BatchSyncResponse(BatchSyncResponse {
                result: SyncResult::Ok(diff),
                ..
            }) => diff.commits().len(),
            _ => 0,
        };
        let kind_end = if start < commits { commits } else { end };
        end.min(kind_end).min(start.saturating_add(PROBE_BATCH))
    }

    /// Verifies the items up to `end` (exclusive); `Some` if the whole
    /// message is rejected.
    ///
    /// While `one_by_one` is false, in probe batches of up to
    /// [`PROBE_BATCH`] items, each all or none. The first batch that fails
    /// (a bad signature in it, or a key or `R` only a cheating signer
    /// makes) sets `one_by_one`: its own items and every item after it, in
    /// this message and the session's later ones, are verified one by one
    /// with `verify_strict`. A single item is always checked singly, and a
    /// bad signature there sets `one_by_one` as well. The verdicts are the
    /// same either way; only the price differs (see [`PROBE_BATCH`]).
    fn verify_until(&mut self, end: usize, one_by_one: &mut bool) -> Option<Received> {
        let per_item = self.per_item();
        while self.next < end {
            let start = self.next;
            let probe_end = self.probe_end(start, end);
            let results = if *one_by_one {
                self.verify_singly(start..probe_end)
            } else if probe_end - start < 2 {
                let results = self.verify_singly(start..probe_end);
                *one_by_one = results
                    .iter()
                    .any(|r| matches!(r, Err(VerifyItemError::Signature(_))));
                results
            } else {
                #[cfg(test)]
                self.batched.push(start..probe_end);
                match self.message.verify_items_all_or_none(start..probe_end) {
                    Some(results) => results,
                    None => {
                        // Whatever the single checks find (a forgery; or
                        // nothing, for a key only a cheating signer
                        // makes), this peer's batches fail.
                        *one_by_one = true;
                        self.verify_singly(start..probe_end)
                    }
                }
            };
            for (index, result) in (start..).zip(results) {
                match result {
                    Ok(item) => self.items.push(item),
                    Err(error) if per_item => self.rejected.push(RejectedItem { index, error }),
                    Err(error) => return Some(self.reject(error)),
                }
            }
            self.next = probe_end;
        }
        None
    }

    /// Each item at `range`, with `verify_strict` in turn.
    fn verify_singly(
        &self,
        range: core::ops::Range<usize>,
    ) -> Vec<Result<VerifiedItem, VerifyItemError>> {
        range
            .filter_map(|index| self.message.verify_item(index))
            .collect()
    }

    fn reject(&mut self, error: VerifyItemError) -> Received {
        Received {
            bytes: core::mem::take(&mut self.bytes),
            result: Err(Rejected::Verify(error)),
        }
    }

    fn finish(self) -> Received {
        Received {
            bytes: self.bytes,
            result: Ok(Delivered::Sync(VerifiedMessage {
                message: self.message,
                items: self.items,
                rejected: self.rejected,
            })),
        }
    }
}

/// A keyhive message verified as signed by `peer`, and what that delivers.
fn keyhive_verified(message: SukMessage, peer: PeerId) -> Result<Delivered, Rejected> {
    message
        .verify(peer)
        .map(|verified| Delivered::Keyhive(Box::new(verified)))
        .map_err(Rejected::Keyhive)
}

/// [`super::verify_message`]: every step at once, with no budget.
pub(super) fn verify_at_once(bytes: Bytes) -> Received {
    match Pending::start(MessageFrame::decode(bytes), None, None, Now::from_secs(0)) {
        Start::Answered(received) => received,
        Start::Verify(Pending::Sync(mut pending)) => {
            let total = pending.message.signed_item_count();
            // No session, so no peer to remember: this message alone.
            pending
                .verify_until(total, &mut false)
                .unwrap_or_else(|| pending.finish())
        }
        // Without a session an ephemeral message is answered at once.
        Start::Verify(Pending::Ephemeral(pending)) => Received {
            bytes: pending.bytes,
            result: pending
                .message
                .verify_strict()
                .map(Delivered::Ephemeral)
                .map_err(|e| Rejected::Ephemeral(EphemeralRejected::Signature(e))),
        },
        // Only with a peer (never here), but verified all the same.
        Start::Verify(Pending::Keyhive(pending)) => Received {
            result: keyhive_verified(pending.message, pending.peer),
            bytes: pending.bytes,
        },
    }
}

/// The price side of [`PendingSync::verify_until`]: which items went
/// through a batch (the verdicts are the session tests').
#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{CommitId, Fragment, RemoteHeads, SignedItem, SyncDiff};
    use crate::session::tests::{commit, forged, key, response, tree};
    use bijou_codec::Wire;
    use bijou_signing::{Blob, Signed};

    fn pending(message: &Message) -> PendingSync {
        let bytes = message.encode().expect("encode");
        match Pending::start(MessageFrame::decode(bytes), None, None, Now::from_secs(0)) {
            Start::Verify(Pending::Sync(pending)) => pending,
            _ => panic!("a sync message to verify"),
        }
    }

    /// 96 commits, forged at `bad`.
    fn commits_forged_at(bad: &[usize]) -> Message {
        let signer = key(1);
        let mut commits: Vec<_> = (0..96).map(|i| commit(i, &signer)).collect();
        for &i in bad {
            commits[i] = forged(&commits[i]);
        }
        response(commits)
    }

    /// The spans of items that went through a batch, as (start, end).
    fn batched(pending: &PendingSync) -> Vec<(usize, usize)> {
        pending.batched.iter().map(|r| (r.start, r.end)).collect()
    }

    /// Verifies all of `pending` in one step; the rejected indices.
    fn verify_all(pending: &mut PendingSync, one_by_one: &mut bool) -> Vec<usize> {
        let total = pending.message.signed_item_count();
        assert!(pending.verify_until(total, one_by_one).is_none());
        assert_eq!(pending.items.len() + pending.rejected.len(), total);
        pending.rejected.iter().map(|r| r.index).collect()
    }

    #[test]
    fn a_failed_batch_turns_the_rest_of_its_step_one_by_one() {
        // Forged in the first batch: that batch fails, nothing after it
        // is batched.
        let mut early = pending(&commits_forged_at(&[5, 90]));
        let mut one_by_one = false;
        assert_eq!(verify_all(&mut early, &mut one_by_one), [5, 90]);
        assert!(one_by_one);
        assert_eq!(batched(&early), [(0, 32)]);

        // Forged in the last: the two before it hold.
        let mut late = pending(&commits_forged_at(&[70]));
        let mut one_by_one = false;
        assert_eq!(verify_all(&mut late, &mut one_by_one), [70]);
        assert!(one_by_one);
        assert_eq!(batched(&late), [(0, 32), (32, 64), (64, 96)]);
    }

    #[test]
    fn once_one_by_one_nothing_is_batched() {
        let mut pending = pending(&commits_forged_at(&[5]));
        let mut one_by_one = true;
        assert_eq!(verify_all(&mut pending, &mut one_by_one), [5]);
        assert!(one_by_one);
        assert!(pending.batched.is_empty());
    }

    /// Honest items: batches of 32 at most, commits and fragments apart
    /// (so a failing fragment batch never wastes a commit batch that held).
    #[test]
    fn honest_items_are_batched_32_at_a_time_one_kind_per_batch() {
        let signer = key(1);
        let commits = (0..40).map(|i| commit(i, &signer)).collect();
        let fragments = (0..10u8)
            .map(|i| {
                let blob = Blob::from(vec![i; 3]);
                let fragment = Fragment::new(tree(), CommitId::new([i; 32]), [], [], blob.meta());
                SignedItem::new(Signed::seal(&signer, &fragment).expect("seal"), blob)
            })
            .collect();
        let message = Message::Sync(SyncMessage::BatchSyncResponse(BatchSyncResponse {
            requestor: PeerId::from_bytes([5; 32]),
            nonce: 1,
            id: tree(),
            result: SyncResult::Ok(SyncDiff::new(commits, fragments, [], [])),
            responder_heads: RemoteHeads::default(),
        }));
        let mut pending = pending(&message);
        let mut one_by_one = false;
        assert!(verify_all(&mut pending, &mut one_by_one).is_empty());
        assert!(!one_by_one);
        assert_eq!(batched(&pending), [(0, 32), (32, 40), (40, 50)]);
    }
}
