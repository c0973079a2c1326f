//! What a [`Session`](super::Session) hands out for each received message:
//! its exact bytes and what it delivered, or why it was rejected.
//!
//! ```text
//!   Received { bytes, result }
//!     result = Ok(Delivered::Sync(VerifiedMessage))      items verified (signature, scope,
//!                                                        blob); a BatchSyncResponse's bad
//!                                                        items named in `rejected`
//!            = Ok(Delivered::Ephemeral(Verified<..>))    subscribed, in time, fresh, verified
//!            = Ok(Delivered::Subscribed | Unsubscribed | SubscribeRejected)
//!            = Ok(Delivered::Keyhive(VerifiedSuk))       a SUK message signed by the peer
//!            = Err(Rejected)                             consumed whole; the connection stays up
//! ```

use alloc::boxed::Box;
use alloc::vec::Vec;
use bijou_signing::Verified;
use bytes::Bytes;

use crate::ephemeral::{EphemeralRejected, SubscribeOutcome};
use crate::keyhive::{KeyhiveError, VerifiedSuk};
use crate::message::{
    EphemeralPayload, HandshakeMessage, MessageError, SyncMessage, Topics, VerifiedItem,
    VerifyItemError,
};

/// A received sync message and its signed items, verified.
#[derive(Debug, Clone)]
pub struct VerifiedMessage {
    /// The message as decoded. Its items are not all verified: use
    /// [`VerifiedMessage::items`].
    pub message: SyncMessage,
    /// The signed items that passed verification (`verify_strict`, scope,
    /// blob), in wire order; empty for messages without signed items.
    pub items: Vec<VerifiedItem>,
    /// The items of a `BatchSyncResponse` that failed, by index (wire order:
    /// the diff's commits, then its fragments) and reason. Always empty for
    /// a LooseCommit or Fragment message, which is rejected whole
    /// ([`Rejected::Verify`]).
    pub rejected: Vec<RejectedItem>,
}

/// A signed item of a `BatchSyncResponse` that failed verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("signed item {index} rejected: {error}")]
pub struct RejectedItem {
    /// Its position in the message ([`SyncMessage::verify_item`] order).
    pub index: usize,
    /// Why.
    #[source]
    pub error: VerifyItemError,
}

/// Why a received message was not accepted. It was consumed whole and the
/// connection stays up.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Rejected {
    /// The bytes do not hold a well-formed message.
    #[error("malformed message: {0}")]
    Malformed(#[source] MessageError),
    /// The signed item of a LooseCommit or Fragment message failed
    /// verification: bad signature ([`VerifyItemError::Signature`]), wrong
    /// document, or a blob that does not match its signed size and digest
    /// ([`VerifyItemError::Blob`]).
    #[error("signed item rejected: {0}")]
    Verify(#[source] VerifyItemError),
    /// A handshake message after the handshake completed.
    #[error("unexpected handshake message after the handshake")]
    UnexpectedHandshake(Box<HandshakeMessage>),
    /// A well-formed keyhive (`SUK\0`) message not signed by the
    /// handshake's peer, with a bad signature, or whose `sender_id` is not
    /// its signer (a malformed one is [`Rejected::Malformed`], with
    /// [`MessageError::Keyhive`]).
    #[error("keyhive message rejected: {0}")]
    Keyhive(#[source] KeyhiveError),
    /// An ephemeral message that failed a check: too large, stale or in
    /// the future, for a topic we did not subscribe to, a duplicate, or a
    /// bad signature (see [`ephemeral`](crate::ephemeral)).
    #[error("ephemeral message rejected: {0}")]
    Ephemeral(#[source] EphemeralRejected),
}

/// What an accepted message delivered.
#[derive(Debug, Clone)]
pub enum Delivered {
    /// A sync message and its verified items.
    Sync(VerifiedMessage),
    /// An ephemeral message for a topic we subscribed to: in time, not
    /// seen before, and verified.
    Ephemeral(Verified<EphemeralPayload>),
    /// The peer subscribed to topics (recorded, up to the cap; the
    /// session answers the `rejected` ones itself with a
    /// `SubscribeRejected`, waiting in
    /// [`Session::poll_transmit`](super::Session::poll_transmit)).
    Subscribed(SubscribeOutcome),
    /// The peer unsubscribed from topics (recorded).
    Unsubscribed(Topics),
    /// The peer refused some of our subscriptions.
    SubscribeRejected(Topics),
    /// A keyhive (`SUK\0`) message, signed by the handshake's peer.
    Keyhive(Box<VerifiedSuk>),
}

impl Delivered {
    /// The sync message, if this is one.
    #[must_use]
    pub fn into_sync(self) -> Option<VerifiedMessage> {
        match self {
            Self::Sync(verified) => Some(verified),
            _ => None,
        }
    }

    /// The sync message, if this is one.
    #[must_use]
    pub fn as_sync(&self) -> Option<&VerifiedMessage> {
        match self {
            Self::Sync(verified) => Some(verified),
            _ => None,
        }
    }

    /// The keyhive message, if this is one.
    #[must_use]
    pub fn into_keyhive(self) -> Option<VerifiedSuk> {
        match self {
            Self::Keyhive(verified) => Some(*verified),
            _ => None,
        }
    }

    /// The ephemeral message, if this is one.
    #[must_use]
    pub fn into_ephemeral(self) -> Option<Verified<EphemeralPayload>> {
        match self {
            Self::Ephemeral(verified) => Some(verified),
            _ => None,
        }
    }
}

/// One received message: its exact bytes and what it held.
#[derive(Debug, Clone)]
pub struct Received {
    /// The message's bytes, exactly as received (no frame prefix).
    pub bytes: Bytes,
    /// What it delivered, or why it was rejected.
    pub result: Result<Delivered, Rejected>,
}
