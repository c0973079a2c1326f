use alloc::vec::Vec;
use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bijou_signing::BlobMeta;
use bytes::BufMut;

use super::{
    fields::{
        read_item_head, read_sorted, signed_content, sorted_unique, write_ids, write_item_head,
    },
    CommitId, SedimentreeId,
};

/// A commit: which document, which head, its parents, and the blob that
/// holds the change (below).
///
/// Wire form inside a [`Signed<LooseCommit>`](bijou_signing::Signed), which
/// adds the schema, the issuer and the signature around the fields:
///
/// ```text
///   0        4             36              68         100          132   133        133+b
///   +--------+-------------+---------------+----------+------------+-----+----------+-----------+-----------+
///   | "STC\0"| IssuerVK 32 | SedimentreeId | Head 32  | BlobDigest | N   | BlobSize | Parents   | Signature |
///   |        |             | 32            |          | 32         | u8  | bijou64  | N x 32    | 64        |
///   +--------+-------------+---------------+----------+------------+-----+----------+-----------+-----------+
///                          \_______________________ fields (this type) ____________/
/// ```
///
/// Parents are strictly ascending (sorted, no duplicates): the constructor
/// sorts and deduplicates, the decoder rejects anything else, so each
/// commit has exactly one encoding. More than 255 parents cannot be encoded
/// (an error, never a truncated count).
///
/// ```
/// use bijou_frame::proto::message::{CommitId, LooseCommit, SedimentreeId};
/// use bijou_frame::codec::Wire;
/// use bijou_frame::signing::{Blob, Signed};
/// use bijou_frame::signing::ed25519_dalek::SigningKey;
///
/// let blob = Blob::from_static(b"change");
/// let commit = LooseCommit::new(
///     SedimentreeId::new([1; 32]),
///     CommitId::new([2; 32]),
///     [CommitId::new([9; 32]), CommitId::new([3; 32]), CommitId::new([9; 32])],
///     blob.meta(),
/// );
/// assert_eq!(commit.parents(), &[CommitId::new([3; 32]), CommitId::new([9; 32])]);
///
/// let key = SigningKey::from_bytes(&[5; 32]);
/// let signed = Signed::seal(&key, &commit)?;
/// assert_eq!(&signed.as_bytes()[..4], b"STC\0");
/// let verified = Signed::<LooseCommit>::decode(signed.to_bytes())?.verify_strict()?;
/// assert_eq!(verified.payload(), &commit);
/// assert!(verified.verify_blob(blob).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LooseCommit {
    sedimentree_id: SedimentreeId,
    head: CommitId,
    parents: Vec<CommitId>,
    blob_meta: BlobMeta,
}

impl LooseCommit {
    /// A commit; `parents` are sorted and deduplicated.
    #[must_use]
    pub fn new(
        sedimentree_id: SedimentreeId,
        head: CommitId,
        parents: impl IntoIterator<Item = CommitId>,
        blob_meta: BlobMeta,
    ) -> Self {
        Self {
            sedimentree_id,
            head,
            parents: sorted_unique(parents),
            blob_meta,
        }
    }

    /// The parents, strictly ascending.
    #[must_use]
    pub fn parents(&self) -> &[CommitId] {
        &self.parents
    }
}
signed_content!(LooseCommit, *b"STC\0");

/// The fields (the signed payload between issuer and signature).
impl Wire for LooseCommit {
    type Error = ReadError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        write_item_head(w, &self.sedimentree_id, &self.head, &self.blob_meta);
        w.count_u8("parents", self.parents.len())?;
        w.bijou64(self.blob_meta.size());
        write_ids(w, &self.parents);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let (sedimentree_id, head, digest) = read_item_head(r)?;
        let count = r.u8("parent_count")?;
        let size = r.bijou64("blob_size")?;
        let parents = read_sorted::<32, _>(r, "parents", count.into())?;
        Ok(Self {
            sedimentree_id,
            head,
            parents,
            blob_meta: BlobMeta::new(digest, size),
        })
    }
}

impl super::SignedItem<LooseCommit> {
    /// The tree and head the commit's signed fields claim, read from its
    /// bytes without verifying it: what a push of our own commit waits to
    /// see acknowledged. `None` only for bytes too short to hold them.
    pub(crate) fn claimed_head(&self) -> Option<(SedimentreeId, CommitId)> {
        // A LooseCommit has no discriminant byte: schema, issuer, fields.
        const FIELDS: usize = bijou_signing::SCHEMA_LEN + bijou_signing::ISSUER_LEN;
        let bytes = self.signed().to_bytes();
        let fields = bytes.slice(FIELDS.min(bytes.len())..);
        let (tree, head, _) = read_item_head(&mut Reader::new(&fields)).ok()?;
        Some((tree, head))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bijou_signing::Digest;

    fn commit(parents: usize) -> LooseCommit {
        LooseCommit::new(
            SedimentreeId::new([1; 32]),
            CommitId::new([2; 32]),
            (0..parents).map(|i| {
                let mut id = [0u8; 32];
                id[..8].copy_from_slice(&(i as u64).to_be_bytes());
                CommitId::new(id)
            }),
            BlobMeta::new(Digest::from_bytes([3; 32]), 300),
        )
    }

    fn fields(c: &LooseCommit) -> Result<Vec<u8>, WriteError> {
        c.encode().map(Vec::from)
    }

    #[test]
    fn layout_matches_the_table() {
        let bytes = fields(&commit(2)).unwrap();
        assert_eq!(bytes.len(), 32 * 3 + 1 + 2 + 2 * 32);
        assert_eq!(bytes[96], 2);
        assert_eq!(&bytes[97..99], &[0xF8, 0x34]); // bijou64(300)
        assert_eq!(LooseCommit::decode(bytes.into()).unwrap(), commit(2));
    }

    #[test]
    fn too_many_parents_is_an_encode_error_not_a_truncation() {
        assert_eq!(
            fields(&commit(256)),
            Err(WriteError::CountTooLarge {
                field: "parents",
                len: 256,
                max: 255
            })
        );
        assert!(fields(&commit(255)).is_ok());
    }

    #[test]
    fn unsorted_or_duplicate_parents_are_rejected() {
        let mut bytes = fields(&commit(2)).unwrap();
        let second = bytes[99 + 32..].to_vec();
        let first = bytes[99..99 + 32].to_vec();
        bytes.truncate(99);
        bytes.extend_from_slice(&second);
        bytes.extend_from_slice(&first);
        let err = LooseCommit::decode(bytes.into()).unwrap_err();
        assert!(matches!(
            err,
            ReadError::NotAscending {
                field: "parents",
                index: 1,
                ..
            }
        ));

        let mut dup = fields(&commit(1)).unwrap();
        dup[96] = 2;
        let parent = dup[99..].to_vec();
        dup.extend_from_slice(&parent);
        assert!(matches!(
            LooseCommit::decode(dup.into()),
            Err(ReadError::NotAscending { .. })
        ));
    }
}
