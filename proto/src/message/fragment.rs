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

/// Length of a [`Checkpoint`] on the wire.
pub const CHECKPOINT_LEN: usize = 12;

/// A commit id truncated to its first 12 bytes, as fragments list the
/// commits they cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Checkpoint([u8; CHECKPOINT_LEN]);

impl Checkpoint {
    /// A checkpoint from its 12 wire bytes.
    #[must_use]
    pub const fn from_bytes(bytes: [u8; CHECKPOINT_LEN]) -> Self {
        Self(bytes)
    }

    /// The 12 bytes.
    #[must_use]
    pub const fn as_bytes(&self) -> &[u8; CHECKPOINT_LEN] {
        &self.0
    }
}

impl From<[u8; CHECKPOINT_LEN]> for Checkpoint {
    fn from(bytes: [u8; CHECKPOINT_LEN]) -> Self {
        Self(bytes)
    }
}

impl From<CommitId> for Checkpoint {
    /// The first 12 bytes of the id.
    fn from(id: CommitId) -> Self {
        let [a, b, c, d, e, f, g, h, i, j, k, l, ..] = *id.as_bytes();
        Self([a, b, c, d, e, f, g, h, i, j, k, l])
    }
}

/// A signed summary of a range of commits (schema `STF\0`).
///
/// Wire form inside a [`Signed<Fragment>`](bijou_signing::Signed):
///
/// ```text
///   0        4             36              68        100          132  133   135        135+b
///   +--------+-------------+---------------+---------+------------+----+-----+----------+----------+-------------+-----------+
///   | "STF\0"| IssuerVK 32 | SedimentreeId | Head 32 | BlobDigest | N  | M   | BlobSize | Boundary | Checkpoints | Signature |
///   |        |             | 32            |         | 32         | u8 | u16 | bijou64  | N x 32   | M x 12      | 64        |
///   +--------+-------------+---------------+---------+------------+----+-----+----------+----------+-------------+-----------+
///                          \______________________________ fields (this type) ___________________________/
/// ```
///
/// Boundary and checkpoints are strictly ascending; the constructor sorts
/// and deduplicates, the decoder rejects anything else. A checkpoint is the
/// first 12 bytes of a commit id.
///
/// ```
/// use bijou_frame::proto::message::{Checkpoint, CommitId, Fragment, SedimentreeId};
/// use bijou_frame::signing::Blob;
///
/// let fragment = Fragment::new(
///     SedimentreeId::new([1; 32]),
///     CommitId::new([2; 32]),
///     [CommitId::new([8; 32]), CommitId::new([4; 32])],
///     [Checkpoint::from(CommitId::new([6; 32]))],
///     Blob::from_static(b"bundle").meta(),
/// );
/// assert_eq!(fragment.boundary(), &[CommitId::new([4; 32]), CommitId::new([8; 32])]);
/// assert_eq!(fragment.checkpoints()[0].as_bytes(), &[6; 12]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fragment {
    sedimentree_id: SedimentreeId,
    head: CommitId,
    boundary: Vec<CommitId>,
    checkpoints: Vec<Checkpoint>,
    blob_meta: BlobMeta,
}

impl Fragment {
    /// A fragment; `boundary` and `checkpoints` are sorted and
    /// deduplicated.
    #[must_use]
    pub fn new(
        sedimentree_id: SedimentreeId,
        head: CommitId,
        boundary: impl IntoIterator<Item = CommitId>,
        checkpoints: impl IntoIterator<Item = Checkpoint>,
        blob_meta: BlobMeta,
    ) -> Self {
        Self {
            sedimentree_id,
            head,
            boundary: sorted_unique(boundary),
            checkpoints: sorted_unique(checkpoints),
            blob_meta,
        }
    }

    /// The boundary commits, strictly ascending.
    #[must_use]
    pub fn boundary(&self) -> &[CommitId] {
        &self.boundary
    }

    /// The checkpoints, strictly ascending.
    #[must_use]
    pub fn checkpoints(&self) -> &[Checkpoint] {
        &self.checkpoints
    }
}
signed_content!(Fragment, *b"STF\0");

/// The fields (the signed payload between issuer and signature).
impl Wire for Fragment {
    type Error = ReadError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        write_item_head(w, &self.sedimentree_id, &self.head, &self.blob_meta);
        w.count_u8("boundary", self.boundary.len())?;
        w.count_u16("checkpoints", self.checkpoints.len())?;
        w.bijou64(self.blob_meta.size());
        write_ids(w, &self.boundary);
        self.checkpoints.iter().for_each(|c| w.bytes(c.as_bytes()));
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let (sedimentree_id, head, digest) = read_item_head(r)?;
        let boundary_count = r.u8("boundary_count")?;
        let checkpoint_count = r.u16("checkpoint_count")?;
        let size = r.bijou64("blob_size")?;
        let boundary = read_sorted::<32, _>(r, "boundary", boundary_count.into())?;
        let checkpoints =
            read_sorted::<CHECKPOINT_LEN, _>(r, "checkpoints", checkpoint_count.into())?;
        Ok(Self {
            sedimentree_id,
            head,
            boundary,
            checkpoints,
            blob_meta: BlobMeta::new(digest, size),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bijou_signing::Digest;

    fn fragment(boundary: usize, checkpoints: usize) -> Fragment {
        let id = |i: usize| {
            let mut id = [0u8; 32];
            id[..8].copy_from_slice(&(i as u64).to_be_bytes());
            CommitId::new(id)
        };
        Fragment::new(
            SedimentreeId::new([1; 32]),
            CommitId::new([2; 32]),
            (0..boundary).map(id),
            (0..checkpoints).map(|i| Checkpoint::from(id(i))),
            BlobMeta::new(Digest::from_bytes([3; 32]), 5),
        )
    }

    fn fields(f: &Fragment) -> Result<Vec<u8>, WriteError> {
        f.encode().map(Vec::from)
    }

    #[test]
    fn layout_matches_the_table() {
        let f = fragment(1, 2);
        let bytes = fields(&f).unwrap();
        assert_eq!(bytes.len(), 96 + 1 + 2 + 1 + 32 + 24);
        assert_eq!(&bytes[96..100], &[1, 0, 2, 5]);
        assert_eq!(Fragment::decode(bytes.into()), Ok(f));
    }

    #[test]
    fn counts_that_do_not_fit_are_encode_errors() {
        assert!(matches!(
            fields(&fragment(256, 0)),
            Err(WriteError::CountTooLarge {
                field: "boundary",
                ..
            })
        ));
        assert!(matches!(
            fields(&fragment(0, 65_536)),
            Err(WriteError::CountTooLarge {
                field: "checkpoints",
                ..
            })
        ));
    }

    #[test]
    fn unsorted_checkpoints_are_rejected() {
        let mut bytes = fields(&fragment(0, 2)).unwrap();
        let tail = bytes.split_off(100);
        bytes.extend_from_slice(&tail[12..]);
        bytes.extend_from_slice(&tail[..12]);
        assert!(matches!(
            Fragment::decode(bytes.into()),
            Err(ReadError::NotAscending {
                field: "checkpoints",
                index: 1,
                ..
            })
        ));
    }
}
