//! Subduction-compatible messages: the `SUM\0` sync envelope, the signed
//! `STC\0`/`STF\0` payloads it carries, the `SUH\0` handshake, the
//! `SUE\0` ephemeral messages, and (from [`crate::keyhive`]) the `SUK\0`
//! keyhive messages. [`Message`] is the one inbound type: every decoder
//! that takes a whole message (the session, the framing codecs above it,
//! the inspector) dispatches through it.
//!
//! Byte-compatible with `subduction_core` 0.20 / `sedimentree_core` 0.16 /
//! `subduction_crypto` 0.11, and stricter: decoding is injective
//! (`encode(decode(b)) == b` for every accepted `b`), bounded by the input,
//! panic-free, and encoding never truncates a count.
//!
//! Every wire type implements the one [`Wire`] trait (exact length, write
//! into any `BufMut`, strict read from a zero-copy [`Reader`]
//! over the frame), with its read and write side by side in its own file:
//!
//! ```text
//!   message/
//!     mod.rs               Message: dispatch on the 4-byte schema (SUK\0: keyhive/envelope.rs)
//!     sync/mod.rs          SyncMessage: "SUM\0" envelope + tag dispatch
//!       blob_message.rs            00 LooseCommit, 01 Fragment
//!       batch_sync_request.rs      04
//!       batch_sync_response.rs     05 (+ SyncResult)
//!       remove_subscriptions.rs    06
//!       data_request_rejected.rs   07
//!       heads_update.rs            08
//!     handshake/mod.rs     HandshakeMessage: "SUH\0" + kind dispatch
//!       challenge.rs  response.rs  rejection.rs
//!     ephemeral/mod.rs     EphemeralMessage: "SUE\0" + tag dispatch
//!       payload.rs  signed_ephemeral.rs   00 signed EphemeralPayload
//!       topics.rs                         01 Subscribe, 02 Unsubscribe, 03 SubscribeRejected
//!     loose_commit.rs      STC\0 signed payload     fragment.rs   STF\0 signed payload
//!     signed_item.rs       Signed<T> · BlobLen · Blob, and its scope-bound verification
//!     sync_diff.rs         SyncDiff                remote_heads.rs  RemoteHeads
//!     ids.rs               SedimentreeId, CommitId, Fingerprint, FingerprintSeed, Topic
//!     fields.rs            shared field helpers    error.rs   MessageError, VerifyItemError
//! ```
//!
//! # Ids
//!
//! Identifiers carried by messages: [`SedimentreeId`], [`CommitId`],
//! [`Fingerprint`] and the [`FingerprintSeed`] that keys it, and the
//! ephemeral [`Topic`].
//!
//! ```text
//!   SedimentreeId  +------------------ 32 bytes ------------------+  (opaque)
//!   CommitId       +------------------ 32 bytes ------------------+  (opaque)
//!   Topic          +------------------ 32 bytes ------------------+  (opaque)
//!   FingerprintSeed   | SeedKey0 u64 BE | SeedKey1 u64 BE |            (16 bytes)
//!   Fingerprint       | SipHash-2-4(key0, key1; commit id) u64 BE |    (8 bytes)
//! ```
//!
//! A fingerprint is SipHash-2-4 keyed by `(SeedKey0, SeedKey1)` over the 32
//! bytes of a commit id, written big-endian. Fingerprints order
//! numerically, which is the byte order of their wire form.
//!
//! ```
//! use bijou_frame::proto::message::{CommitId, FingerprintSeed};
//!
//! let seed = FingerprintSeed::new(42, 99);
//! let id = CommitId::new([7; 32]);
//! let fp = seed.fingerprint(&id);
//! assert_eq!(fp, seed.fingerprint(&id));
//! assert_ne!(fp, FingerprintSeed::new(42, 100).fingerprint(&id));
//!
//! // Ids print and parse as 64 lower-case hex digits.
//! assert_eq!(id.to_string(), "07".repeat(32));
//! assert_eq!("07".repeat(32).parse::<CommitId>(), Ok(id));
//! ```

use alloc::boxed::Box;
use bijou_codec::{Reader, Wire, WriteError, Writer};
use bijou_signing::Schema;
use bytes::BufMut;

use crate::keyhive::{SukMessage, KEYHIVE_SCHEMA};

mod ephemeral;
mod error;
mod fields;
mod fragment;
mod handshake;
mod ids;
mod loose_commit;
mod remote_heads;
mod signed_item;
mod sync;
mod sync_diff;

pub use ephemeral::{
    EphemeralHeader, EphemeralMessage, EphemeralPayload, SignedEphemeral, Topics, EPHEMERAL_SCHEMA,
};
pub use error::{MessageError, VerifyItemError};
pub use fragment::{Checkpoint, Fragment, CHECKPOINT_LEN};
pub use handshake::{
    discovery_id, kind, Audience, Challenge, HandshakeMessage, Rejection, RejectionReason,
    Response, CHALLENGE_LEN, HANDSHAKE_SCHEMA, REJECTION_LEN, RESPONSE_LEN,
};
pub use ids::{CommitId, Fingerprint, FingerprintSeed, SedimentreeId, Topic};
pub use loose_commit::LooseCommit;
pub use remote_heads::RemoteHeads;
pub use signed_item::SignedItem;
pub use sync::tag;
pub use sync::{
    BatchSyncRequest, BatchSyncResponse, BlobMessage, DataRequestRejected, HeadsUpdate,
    RemoveSubscriptions, SyncMessage, SyncResult, VerifiedItem, SYNC_HEADER_LEN, SYNC_SCHEMA,
};
pub use sync_diff::SyncDiff;

/// A signed payload that belongs to one document. Verification checks that
/// this id matches the enclosing message's (scope binding).
pub trait Scoped {
    /// The document id inside the signed payload.
    fn sedimentree_id(&self) -> SedimentreeId;
}

/// What [`Message::peek_kind`] reads from an encoded message's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageKind {
    /// `SUM\0`.
    Sync,
    /// `SUH\0`.
    Handshake,
    /// `SUE\0` with a tag other than Subscribe or Unsubscribe.
    Ephemeral,
    /// `SUE\0` Subscribe (01) or Unsubscribe (02): changes the sender's
    /// subscriptions.
    SubscriptionChange,
    /// `SUK\0`.
    Keyhive,
}

/// Any top-level message, told apart by its 4-byte schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// `SUM\0`.
    Sync(SyncMessage),
    /// `SUH\0`.
    Handshake(HandshakeMessage),
    /// `SUE\0`.
    Ephemeral(EphemeralMessage),
    /// `SUK\0` (boxed: it is the large variant).
    Keyhive(Box<SukMessage>),
}

impl Message {
    /// What an encoded message is, read from its schema (and an
    /// ephemeral message's tag) without decoding it: for a decision that
    /// needs only the kind (refusing a handshake message, telling a cut
    /// message from noise). `None` if `bytes` do not start with a schema
    /// [`Message`] decodes. The bytes after are not checked: decode them
    /// to know they are a message.
    ///
    /// ```
    /// use bijou_frame::proto::message::{Message, MessageKind};
    /// assert_eq!(Message::peek_kind(b"SUK\0\x00\x00"), Some(MessageKind::Keyhive));
    /// assert_eq!(Message::peek_kind(b"SUE\0\x01"), Some(MessageKind::SubscriptionChange));
    /// assert_eq!(Message::peek_kind(b"SUE\0\x00"), Some(MessageKind::Ephemeral));
    /// assert_eq!(Message::peek_kind(b"SUX\0"), None);
    /// assert_eq!(Message::peek_kind(b"SU"), None);
    /// ```
    #[must_use]
    pub fn peek_kind(bytes: &[u8]) -> Option<MessageKind> {
        let schema: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
        Some(match schema {
            SYNC_SCHEMA => MessageKind::Sync,
            HANDSHAKE_SCHEMA => MessageKind::Handshake,
            KEYHIVE_SCHEMA => MessageKind::Keyhive,
            EPHEMERAL_SCHEMA => match bytes.get(4) {
                Some(&(ephemeral::TAG_SUBSCRIBE | ephemeral::TAG_UNSUBSCRIBE)) => {
                    MessageKind::SubscriptionChange
                }
                _ => MessageKind::Ephemeral,
            },
            _ => return None,
        })
    }

    /// What kind of message this is, for errors and logs.
    #[must_use]
    pub const fn kind_name(&self) -> &'static str {
        match self {
            Self::Sync(_) => "sync message",
            Self::Handshake(h) => h.kind_name(),
            Self::Ephemeral(e) => e.kind_name(),
            Self::Keyhive(_) => "keyhive message",
        }
    }
}

/// Dispatches on the schema; each kind reads the whole message.
///
/// ```
/// use bijou_frame::codec::Wire;
/// use bijou_frame::proto::message::{DataRequestRejected, Message, MessageError, SedimentreeId, SyncMessage};
/// use bijou_frame::signing::Schema;
///
/// let msg: Message = SyncMessage::from(DataRequestRejected { id: SedimentreeId::new([3; 32]) }).into();
/// let wire = msg.encode()?;
/// assert_eq!(Message::decode(wire)?, msg);
/// let err = Message::decode(bytes::Bytes::from_static(b"BRF\0....")).unwrap_err();
/// assert_eq!(err, MessageError::UnknownSchema { found: Schema(*b"BRF\0") });
/// assert_eq!(err.to_string(), r#"unknown message schema "BRF\0" (42 52 46 00)"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl Wire for Message {
    type Error = MessageError;

    fn wire_len(&self) -> Result<usize, WriteError> {
        match self {
            Self::Sync(msg) => msg.wire_len(),
            Self::Handshake(msg) => msg.wire_len(),
            Self::Ephemeral(msg) => msg.wire_len(),
            Self::Keyhive(msg) => msg.wire_len(),
        }
    }

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        match self {
            Self::Sync(msg) => msg.write_to(w),
            Self::Handshake(msg) => msg.write_to(w),
            Self::Ephemeral(msg) => msg.write_to(w),
            Self::Keyhive(msg) => msg.write_to(w),
        }
    }

    fn write_sized<B: BufMut + ?Sized>(
        &self,
        w: &mut Writer<'_, B>,
        len: usize,
    ) -> Result<(), WriteError> {
        match self {
            Self::Sync(msg) => msg.write_sized(w, len),
            Self::Handshake(msg) => msg.write_sized(w, len),
            Self::Ephemeral(msg) => msg.write_sized(w, len),
            Self::Keyhive(msg) => msg.write_sized(w, len),
        }
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        match r.peek_array::<4>() {
            Some(SYNC_SCHEMA) => SyncMessage::read_from(r).map(Self::Sync),
            Some(HANDSHAKE_SCHEMA) => HandshakeMessage::read_from(r).map(Self::Handshake),
            Some(EPHEMERAL_SCHEMA) => EphemeralMessage::read_from(r).map(Self::Ephemeral),
            Some(KEYHIVE_SCHEMA) => SukMessage::read_from(r)
                .map(|msg| Self::Keyhive(Box::new(msg)))
                .map_err(MessageError::Keyhive),
            Some(found) => Err(MessageError::UnknownSchema {
                found: Schema(found),
            }),
            None => Err(r.array::<4>("schema").err().map_or(
                MessageError::UnknownSchema {
                    found: Schema([0; 4]),
                },
                MessageError::from,
            )),
        }
    }
}

impl From<SyncMessage> for Message {
    fn from(msg: SyncMessage) -> Self {
        Self::Sync(msg)
    }
}

impl From<EphemeralMessage> for Message {
    fn from(msg: EphemeralMessage) -> Self {
        Self::Ephemeral(msg)
    }
}

impl From<SukMessage> for Message {
    fn from(msg: SukMessage) -> Self {
        Self::Keyhive(Box::new(msg))
    }
}

impl From<HandshakeMessage> for Message {
    fn from(msg: HandshakeMessage) -> Self {
        Self::Handshake(msg)
    }
}

/// One received message: its exact bytes, and the message they hold (or why
/// they hold none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageFrame {
    /// The message's bytes, exactly as received (no frame prefix).
    pub bytes: bytes::Bytes,
    /// The decoded message, whose signed items and blobs are slices of
    /// `bytes`, or why the bytes are not a well-formed message.
    pub message: Result<Message, MessageError>,
}

impl MessageFrame {
    /// Decodes `bytes` as one whole message.
    ///
    /// ```
    /// use bijou_frame::proto::message::MessageFrame;
    /// let frame = MessageFrame::decode(bytes::Bytes::from_static(b"SUM\0junk"));
    /// assert!(frame.message.is_err());
    /// assert_eq!(&frame.bytes[..], b"SUM\0junk");
    /// ```
    #[must_use]
    pub fn decode(bytes: bytes::Bytes) -> Self {
        let message = Message::decode(bytes.clone());
        Self { bytes, message }
    }
}

/// A borrowed message, cloned, so `send(&message)` works where a
/// `Message` is taken (its blobs and signed bytes are reference-counted,
/// so the clone copies no payload bytes).
impl From<&Message> for Message {
    fn from(message: &Message) -> Self {
        message.clone()
    }
}
