//! Subduction-compatible messages: the `SUM\0` sync envelope, the signed
//! `STC\0`/`STF\0` payloads it carries, and the `SUH\0` handshake.
//!
//! Byte-compatible with `subduction_core` 0.20 / `sedimentree_core` 0.16 /
//! `subduction_crypto` 0.11, and stricter: decoding is injective
//! (`encode(decode(b)) == b` for every accepted `b`), bounded by the input,
//! panic-free, and encoding never truncates a count.
//!
//! ```text
//!   Message ── "SUM\0" ──► SyncMessage        (sync.rs: envelope + 7 variants)
//!           │                ├─ SignedItem<LooseCommit>  (STC\0, loose_commit.rs)
//!           │                ├─ SignedItem<Fragment>     (STF\0, fragment.rs)
//!           │                ├─ RemoteHeads              (remote_heads.rs)
//!           │                └─ SyncDiff                 (sync_diff.rs)
//!           └ "SUH\0" ──► HandshakeMessage   (handshake.rs: Challenge, Response, Rejection)
//! ```
//!
//! | Module | Concept |
//! |---|---|
//! | [`ids`] | `SedimentreeId`, `CommitId`, `Fingerprint`, `FingerprintSeed` |
//! | [`loose_commit`] | `LooseCommit` payload |
//! | [`fragment`] | `Fragment` payload, `Checkpoint` |
//! | [`remote_heads`] | `RemoteHeads` |
//! | [`item`] | `SignedItem`: signed payload + blob, and its scope-bound verification |
//! | [`sync_diff`] | `SyncDiff` |
//! | [`sync`] | `SyncMessage` and the `SUM\0` envelope |
//! | [`handshake`] | `HandshakeMessage` |
//! | [`error`] | `MessageError`, `VerifyItemError` |

use bytes::Bytes;

pub mod error;
mod fields;
pub mod fragment;
pub mod handshake;
pub mod ids;
pub mod item;
pub mod loose_commit;
pub mod remote_heads;
pub mod sync;
pub mod sync_diff;

pub use error::{MessageError, VerifyItemError};
pub use fragment::{Checkpoint, Fragment};
pub use handshake::{
    Audience, Challenge, HandshakeMessage, Rejection, RejectionReason, Response, HANDSHAKE_SCHEMA,
};
pub use ids::{CommitId, Fingerprint, FingerprintSeed, SedimentreeId};
pub use item::SignedItem;
pub use loose_commit::LooseCommit;
pub use remote_heads::RemoteHeads;
pub use sync::{
    BatchSyncRequest, BatchSyncResponse, BlobMessage, SyncMessage, SyncResult, VerifiedItem,
    SYNC_SCHEMA,
};
pub use sync_diff::SyncDiff;

/// A signed payload that belongs to one document. Verification checks that
/// this id matches the enclosing message's (scope binding).
pub trait Scoped {
    /// The document id inside the signed payload.
    fn sedimentree_id(&self) -> SedimentreeId;
}

/// Any top-level message, told apart by its 4-byte schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// `SUM\0`.
    Sync(SyncMessage),
    /// `SUH\0`.
    Handshake(HandshakeMessage),
}

impl Message {
    /// Decodes a message that must be all of `frame`, dispatching on the
    /// schema.
    ///
    /// ```
    /// use bijou_framing::message::{Message, MessageError, SedimentreeId, SyncMessage};
    ///
    /// let wire = SyncMessage::DataRequestRejected { id: SedimentreeId::new([3; 32]) }.encode()?;
    /// assert!(matches!(Message::decode(wire.into())?, Message::Sync(_)));
    /// assert!(matches!(
    ///     Message::decode(bytes::Bytes::from_static(b"XYZ\0....")),
    ///     Err(MessageError::UnknownSchema { found: [b'X', b'Y', b'Z', 0] })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`MessageError`]; an unknown schema is
    /// [`MessageError::UnknownSchema`].
    pub fn decode(frame: Bytes) -> Result<Self, MessageError> {
        let schema = bijou_codec::Reader::new(&frame).array::<4>("schema")?;
        match schema {
            SYNC_SCHEMA => SyncMessage::decode(frame).map(Self::Sync),
            HANDSHAKE_SCHEMA => HandshakeMessage::decode(frame).map(Self::Handshake),
            found => Err(MessageError::UnknownSchema { found }),
        }
    }

    /// Encodes the message.
    ///
    /// # Errors
    ///
    /// [`bijou_codec::WriteError`] if a count does not fit (sync messages).
    pub fn encode(&self) -> Result<Bytes, bijou_codec::WriteError> {
        match self {
            Self::Sync(msg) => msg.encode().map(Bytes::from),
            Self::Handshake(msg) => Ok(msg.encode()),
        }
    }
}

impl From<SyncMessage> for Message {
    fn from(msg: SyncMessage) -> Self {
        Self::Sync(msg)
    }
}

impl From<HandshakeMessage> for Message {
    fn from(msg: HandshakeMessage) -> Self {
        Self::Handshake(msg)
    }
}
