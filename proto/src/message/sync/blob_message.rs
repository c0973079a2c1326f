//! Tags `00` and `01`: one signed commit or fragment, with its blob and
//! the sender's heads ([`BlobMessage`]).
//!
//! ```text
//!   +-----------+-------------+------------------------------------+-----------------+------+
//!   | TreeId 32 | RemoteHeads | Signed<LooseCommit> (tag 00)       | BlobLen bijou64 | Blob |
//!   |           |             | Signed<Fragment>    (tag 01)       |                 |      |
//!   +-----------+-------------+------------------------------------+-----------------+------+
//!                               \____________ SignedItem<T> (signed_item.rs) ______________/
//! ```
//!
//! The outer `TreeId` must equal the tree id inside the signed payload;
//! [`BlobMessage::verify`] checks it ([`VerifyItemError::ScopeMismatch`]).

use bijou_codec::{Reader, Wire, WriteError, Writer};
use bijou_signing::{HasBlobMeta, Payload, Verified, VerifiedBlob};
use bytes::BufMut;

use crate::message::{
    MessageError, RemoteHeads, Scoped, SedimentreeId, SignedItem, VerifyItemError,
};

/// A signed commit or fragment pushed to a peer, with the sender's heads.
/// The outer `id` must equal the signed payload's tree id, which
/// [`BlobMessage::verify`] checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobMessage<T> {
    /// The document the message is sent for.
    pub id: SedimentreeId,
    /// The sender's heads for that document after this item.
    pub sender_heads: RemoteHeads,
    /// The signed payload and its blob.
    pub item: SignedItem<T>,
}

impl<T: Payload + Scoped + HasBlobMeta> BlobMessage<T> {
    /// Verifies the signature (strict), that the signed tree id is the
    /// message's `id`, and the blob; returns the verified payload and blob.
    ///
    /// # Errors
    ///
    /// [`VerifyItemError`]; a payload signed for another document is
    /// [`VerifyItemError::ScopeMismatch`].
    pub fn verify(&self) -> Result<(Verified<T>, VerifiedBlob), VerifyItemError> {
        self.item.verify_in(self.id)
    }
}

impl<T: Payload> Wire for BlobMessage<T> {
    type Error = MessageError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(self.id.as_bytes());
        self.sender_heads.write_to(w)?;
        self.item.write_to(w)
    }

    // `#[inline]` so that the inliner keeps this in `SyncMessage`'s
    // decoder whatever the codec's cold paths look like. Out of line it
    // costs a call and a memcpy of the result: when the codec's
    // `decode_short` became a per-crate copy, LLVM left it out of line and
    // `Message::decode` of a commit took 258-272 ns instead of 237-243
    // (`messages_decode`); a small program that decodes the same message,
    // where it was out of line either way, went from 255-274 ns to 231-247
    // with the attribute (`benches/DECODERS.md`, "`decode_short` per
    // crate").
    #[inline]
    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        Ok(Self {
            id: SedimentreeId::read_from(r)?,
            sender_heads: RemoteHeads::read_from(r)?,
            item: SignedItem::read_from(r)?,
        })
    }
}
