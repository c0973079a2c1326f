//! A received message with signatures still to verify, and the bounded
//! steps that verify it.

use alloc::boxed::Box;
use alloc::vec::Vec;
use bytes::Bytes;

use super::received::{Delivered, Received, Rejected, RejectedItem, VerifiedMessage};
use crate::ephemeral::{EphemeralRejected, EphemeralSession, SubscribeOutcome};
use crate::keyhive::SukMessage;
use crate::message::{EphemeralMessage, Message, MessageFrame, SignedEphemeral, SyncMessage};
use crate::message::{VerifiedItem, VerifyItemError};
use crate::time::{Now, Timestamp};
use crate::verify_budget::Bucket;
use bijou_signing::PeerId;

/// Blob bytes checked (hashed with BLAKE3) in one step at most, unless a
/// single item's blob is larger: 1 MiB, about 0.3 ms of one core.
pub(super) const STEP_BLOB_BYTES: usize = 1 << 20;

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

    /// One step: pays for at most `step` items at `now` and verifies them.
    pub(super) fn step(
        &mut self,
        budget: &mut Bucket,
        ephemeral: Option<&mut EphemeralSession>,
        step: usize,
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
                if let Some(rejected) = pending.verify_until(end) {
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

    /// Verifies items up to `end` (exclusive) as one batch; `Some` if the
    /// whole message is rejected.
    fn verify_until(&mut self, end: usize) -> Option<Received> {
        let per_item = self.per_item();
        let start = self.next;
        for (index, result) in (start..).zip(self.message.verify_items(start..end)) {
            match result {
                Ok(item) => self.items.push(item),
                Err(error) if per_item => self.rejected.push(RejectedItem { index, error }),
                Err(error) => return Some(self.reject(error)),
            }
        }
        self.next = end;
        None
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
            pending
                .verify_until(total)
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
