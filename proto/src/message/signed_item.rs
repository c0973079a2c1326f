use bijou_codec::{Reader, Wire, WriteError, Writer};
use bijou_signing::{Blob, HasBlobMeta, Payload, Signed, Verified, VerifiedBlob};
use bytes::BufMut;

use super::{
    fields::{blob_field_len, read_blob, write_blob},
    MessageError, Scoped, SedimentreeId, VerifyItemError,
};

/// A signed commit or fragment with the blob it announces,
/// as both travel in sync messages, and its verification, which binds the
/// item to the document it was sent for.
///
/// ```text
///   +-------------------------------+------------------+-------------+
///   | Signed<T> (schema .. sig)     | BlobLen bijou64  | Blob        |
///   +-------------------------------+------------------+-------------+
///     self-delimiting (T's fields)                       BlobLen bytes
/// ```
///
/// Both parts are zero-copy [`Bytes`](bytes::Bytes) slices of the received
/// frame, and the signed payload is decoded once, as it is read. Error
/// offsets are absolute in the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedItem<T> {
    signed: Signed<T>,
    blob: Blob,
}

impl<T> SignedItem<T> {
    /// Pairs a signed payload with its blob (checked by
    /// [`SignedItem::verify_in`], not here).
    #[must_use]
    pub fn new(signed: Signed<T>, blob: Blob) -> Self {
        Self { signed, blob }
    }

    /// The signed payload, unverified.
    #[must_use]
    pub fn signed(&self) -> &Signed<T> {
        &self.signed
    }

    /// The blob, unverified.
    #[must_use]
    pub fn blob(&self) -> &Blob {
        &self.blob
    }

    /// Both parts.
    #[must_use]
    pub fn into_parts(self) -> (Signed<T>, Blob) {
        (self.signed, self.blob)
    }
}

/// `Signed<T> · BlobLen bijou64 · Blob`.
impl<T: Payload> Wire for SignedItem<T> {
    type Error = MessageError;

    /// Three lengths added: no walk of the fields (a batch response's
    /// length pass is this, once per item).
    #[inline]
    fn wire_len(&self) -> Result<usize, WriteError> {
        let blob = self.blob.as_bytes().len();
        Ok(self
            .signed
            .as_bytes()
            .len()
            .saturating_add(blob_field_len(blob)))
    }

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(self.signed.as_bytes());
        write_blob(w, self.blob.as_bytes());
        Ok(())
    }

    // `#[inline]`: out of line, the decoded item (a few hundred bytes) went
    // back through a `Result` in memory and was copied again by each
    // caller: `Message::decode` of a commit took 232-235 ns against 204-206
    // with the hint, a 256-commit batch response 50.8-52.6 us against
    // 45.6-45.7 (`messages_decode`, two builds alternated twice). The same
    // hint on `Signed::read_from` measured no further gain.
    #[inline]
    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        let offset = r.offset();
        let signed =
            Signed::<T>::read_from(r).map_err(|source| MessageError::Signed { offset, source })?;
        let blob = Blob::new(read_blob(r)?);
        Ok(Self { signed, blob })
    }
}

impl<T: Payload + Scoped + HasBlobMeta> SignedItem<T> {
    /// Verifies the signature (strict), then that the signed payload
    /// belongs to `scope` (the document the enclosing message is for), then
    /// the blob against the signed size and digest.
    ///
    /// # Errors
    ///
    /// [`VerifyItemError::Signature`], [`VerifyItemError::ScopeMismatch`]
    /// or [`VerifyItemError::Blob`], in that order.
    pub fn verify_in(
        &self,
        scope: SedimentreeId,
    ) -> Result<(Verified<T>, VerifiedBlob), VerifyItemError> {
        let verified = self.signed.verify_strict()?;
        self.check_verified_in(verified, scope)
    }

    /// The checks of [`SignedItem::verify_in`] after the signature: `verified`
    /// (this item's signed payload, verified, for example by
    /// [`verify_batch`](bijou_signing::batch::verify_batch)) belongs to `scope`, and
    /// the blob matches its signed size and digest.
    ///
    /// # Errors
    ///
    /// [`VerifyItemError::ScopeMismatch`] or [`VerifyItemError::Blob`].
    pub fn check_verified_in(
        &self,
        verified: Verified<T>,
        scope: SedimentreeId,
    ) -> Result<(Verified<T>, VerifiedBlob), VerifyItemError> {
        let signed = verified.payload().sedimentree_id();
        if signed != scope {
            return Err(VerifyItemError::ScopeMismatch {
                outer: scope,
                signed,
            });
        }
        let blob = verified.verify_blob(self.blob.clone())?;
        Ok((verified, blob))
    }
}

#[cfg(test)]
mod tests {
    use bijou_codec::{ReadError, Wire};
    use bijou_signing::{ed25519_dalek::SigningKey, Blob, Signed, SignedDecodeError};
    use bytes::Bytes;

    use crate::message::{
        BlobMessage, CommitId, LooseCommit, Message, MessageError, RemoteHeads, SedimentreeId,
        SignedItem, SyncMessage,
    };

    #[test]
    fn errors_inside_a_signed_item_carry_offsets_absolute_in_the_frame() {
        let tree = SedimentreeId::new([1; 32]);
        let blob = Blob::from_static(b"blob");
        let commit = LooseCommit::new(tree, CommitId::new([2; 32]), [], blob.meta());
        let item = SignedItem::new(
            Signed::seal(&SigningKey::from_bytes(&[3; 32]), &commit).unwrap(),
            blob,
        );
        let msg = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
            id: tree,
            sender_heads: RemoteHeads::default(),
            item,
        }));
        let wire = msg.encode().unwrap();
        // header 9 + tree 32 + heads 12: the signed commit starts at 53; its
        // parent count is at 53 + 4 + 32 + 96 = 185. Claim 200 parents, more
        // than the frame holds.
        let signed_at = 9 + 32 + 12;
        let parent_count_at = signed_at + 4 + 32 + 96;
        assert_eq!(wire[parent_count_at], 0);
        let mut bad = wire.to_vec();
        bad[parent_count_at] = 200;
        let err = Message::decode(Bytes::from(bad)).unwrap_err();
        let MessageError::Signed { offset, source } = err else {
            panic!("{err:?}")
        };
        assert_eq!(offset, signed_at);
        let SignedDecodeError::Read(ReadError::Truncated {
            field: "parents",
            offset,
            needed: 6400,
            ..
        }) = source
        else {
            panic!("{source:?}")
        };
        // parent count, blob size (1 byte), then the parents: absolute.
        assert_eq!(offset, parent_count_at + 2);
    }
}
