//! Keyhive (`SUK\0`): the messages a keyhive-enforcing Subduction server
//! (`subduction_cli server`, `--auth keyhive` by default) needs before it
//! accepts pushes, and the one exchange a sync client needs: registering a
//! document. Byte-compatible with `subduction_keyhive` 0.12 and
//! `keyhive_core` 0.7, and stricter (see [`SukMessage`]).
//!
//! ```text
//!   "SUK\0" | TotalSize u32 BE | CBOR { "contactCard": text, "signed": bytes }   envelope.rs
//!                                                             │
//!       ┌─────────────────────────────────────────────────────┘
//!       ▼
//!   PayloadLen u64 LE | Payload | KeyLen u64 LE | Issuer32 | Signature64         signed.rs
//!                         │
//!                         ▼
//!   CBOR { "<Kind>": { "sender_id": …, "target_id": …, … } }                     message.rs
//!
//!   document.rs       DocumentKey (seed → tree id = document id), the root
//!                     delegation event (keyhive's binary form) that creates it
//!   contact_card.rs   our contact card (keyhive's ContactCard as JSON)
//!   registration.rs   RequestContactCard → MissingContactCard → SyncRequest →
//!                     SyncResponse → SyncOps → SyncConfirmation
//!   cbor.rs           strict CBOR reads over minicbor
//! ```
//!
//! What keyhive requires of a push (read from `subduction_keyhive`'s
//! policy): the tree id is a valid Ed25519 point, a document with that id
//! exists on the server, and `Public` or the commit's author holds Edit or
//! more; a refused push gets no answer. A fetch needs `Public` or the
//! fetching peer at Relay or more; a refused fetch is answered with
//! `SyncResult::Unauthorized`. A server sends `SUK\0` only in answer to a
//! client's `SUK\0`, and an open (`--auth open`) server drops them.
//!
//! Implemented: the envelope, the signed envelope, all seven message
//! kinds, contact cards for our own key, documents with one root
//! delegation to `Public` or to one key, and their registration. Not
//! implemented: the rest of keyhive (groups, further delegations,
//! revocations, prekey secrets and group key agreement, so no encrypted
//! documents); the events a server sends back are kept as bytes, never
//! interpreted. See [`DocumentKey`] for what public Edit means.

mod cbor;
mod contact_card;
mod document;
mod envelope;
mod error;
mod message;
mod registration;
mod signed;

use bijou_signing::PeerId;

pub use contact_card::contact_card;
pub use document::{check_tree_id, public_id, Access, DocumentKey, Grantee, RootDelegation};
pub use envelope::{ContactCardJson, SukMessage, HEADER_LEN, KEYHIVE_SCHEMA, MAX_CONTACT_CARD};
pub use error::KeyhiveError;
pub use message::{EventHash, KeyhiveMessage, KeyhivePeer, MAX_SUFFIX, MIN_EVENT_LEN};
pub use registration::{Outcome, Registration, Step};
pub use signed::{SignedKeyhive, ENVELOPE_OVERHEAD};

/// A `SUK\0` message whose signature verified (`verify_strict`) under the
/// key the handshake authenticated, and whose `sender_id` is that key.
/// Only [`SukMessage::verify`] makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedSuk {
    message: SukMessage,
}

impl VerifiedSuk {
    /// The verified message.
    #[must_use]
    pub fn message(&self) -> &SukMessage {
        &self.message
    }

    /// The keyhive message inside.
    #[must_use]
    pub fn keyhive(&self) -> &KeyhiveMessage {
        &self.message.signed.message
    }

    /// The verified message, owned.
    #[must_use]
    pub fn into_message(self) -> SukMessage {
        self.message
    }
}

impl SukMessage {
    /// Verifies the signed envelope: signed by `peer` (the handshake's
    /// peer), `verify_strict`, and the message's `sender_id` is `peer`.
    ///
    /// # Errors
    ///
    /// [`KeyhiveError::WrongSigner`], [`KeyhiveError::Signature`],
    /// [`KeyhiveError::SenderMismatch`].
    pub fn verify(self, peer: PeerId) -> Result<VerifiedSuk, KeyhiveError> {
        self.signed.verify(peer)?;
        Ok(VerifiedSuk { message: self })
    }
}
