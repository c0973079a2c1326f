//! Field helpers shared by the message types: sorted arrays of ids and
//! fingerprints, and blobs with their bijou64 length.

use alloc::vec::Vec;
use bijou_codec::{ReadError, Reader, Writer};
use bijou_signing::{Blob, BlobMeta, Digest};
use bytes::{BufMut, Bytes};

use super::{CommitId, Fingerprint, SedimentreeId};

/// Reads `SedimentreeId · Head · BlobDigest`, the opening fields of a
/// commit or a fragment.
pub(crate) fn read_item_head(
    r: &mut Reader<'_>,
) -> Result<(SedimentreeId, CommitId, Digest<Blob>), ReadError> {
    Ok((
        SedimentreeId::new(r.array("sedimentree_id")?),
        CommitId::new(r.array("head")?),
        Digest::from_bytes(r.array("blob_digest")?),
    ))
}

/// Writes `SedimentreeId · Head · BlobDigest`.
pub(crate) fn write_item_head<B: BufMut + ?Sized>(
    w: &mut Writer<'_, B>,
    tree: &SedimentreeId,
    head: &CommitId,
    blob: &BlobMeta,
) {
    w.bytes(tree.as_bytes());
    w.bytes(head.as_bytes());
    w.bytes(blob.digest().as_bytes());
}

/// Sorts and deduplicates: the one order every strictly ascending array
/// is sent in.
pub(crate) fn sorted_unique<T: Ord>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = items.into_iter().collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Reads `count` strictly ascending `N`-byte elements (ids, checkpoints,
/// big-endian fingerprints: byte order is their order), refusing a count
/// the input cannot hold before allocating.
pub(crate) fn read_sorted<const N: usize, T: From<[u8; N]>>(
    r: &mut Reader<'_>,
    field: &'static str,
    count: u64,
) -> Result<Vec<T>, ReadError> {
    Ok(r.ascending_arrays::<N>(field, count)?
        .into_iter()
        .map(T::from)
        .collect())
}

/// Writes 32-byte ids as they are.
pub(crate) fn write_ids<T: AsRef<[u8; 32]>, B: BufMut + ?Sized>(w: &mut Writer<'_, B>, ids: &[T]) {
    ids.iter().for_each(|id| w.bytes(id.as_ref()));
}

/// Writes fingerprints, 8 bytes each, big-endian.
pub(crate) fn write_fingerprints<B: BufMut + ?Sized>(w: &mut Writer<'_, B>, fps: &[Fingerprint]) {
    fps.iter().for_each(|fp| w.u64(fp.as_u64()));
}

/// Reads a bijou64 length and that many bytes, as a zero-copy slice of the
/// frame.
pub(crate) fn read_blob(r: &mut Reader<'_>) -> Result<Bytes, ReadError> {
    let len = r.bijou64("blob_len")?;
    r.shared_u64("blob", len)
}

/// Writes a blob with its bijou64 length.
#[inline]
pub(crate) fn write_blob<B: BufMut + ?Sized>(w: &mut Writer<'_, B>, blob: &[u8]) {
    w.bijou64_len(blob.len());
    w.bytes(blob);
}

/// What [`write_blob`] writes for a `len`-byte blob: its bijou64 length and
/// the bytes.
#[inline]
pub(crate) fn blob_field_len(len: usize) -> usize {
    // A short blob's length is one byte: no tier search (a batch
    // response's length pass is this, once per item).
    if (len as u64) < bijou_codec::bijou64::OFFSETS[1] {
        return len + 1;
    }
    let prefix = bijou_codec::bijou64::encoded_len(u64::try_from(len).unwrap_or(u64::MAX));
    len.saturating_add(prefix)
}

/// The accessors and traits a signed commit or fragment shares: its tree
/// id (the scope it is bound to), its head, the blob it announces, and its
/// schema. The type has fields `sedimentree_id`, `head` and `blob_meta`.
macro_rules! signed_content {
    ($name:ident, $schema:expr) => {
        impl $name {
            /// The document it belongs to (signed, so bound to it).
            #[must_use]
            pub const fn sedimentree_id(&self) -> SedimentreeId {
                self.sedimentree_id
            }

            /// Its head commit.
            #[must_use]
            pub const fn head(&self) -> CommitId {
                self.head
            }

            /// Digest and size of the blob it announces.
            #[must_use]
            pub const fn blob_meta(&self) -> BlobMeta {
                self.blob_meta
            }
        }

        impl bijou_signing::HasBlobMeta for $name {
            fn blob_meta(&self) -> BlobMeta {
                self.blob_meta
            }
        }

        impl $crate::message::Scoped for $name {
            fn sedimentree_id(&self) -> SedimentreeId {
                self.sedimentree_id
            }
        }

        impl bijou_signing::Payload for $name {
            const SCHEMA: [u8; 4] = $schema;
        }
    };
}
pub(crate) use signed_content;

#[cfg(test)]
mod tests {
    use bijou_codec::{Wire, WriteError, Writer};
    use bytes::BufMut;

    use super::{blob_field_len, write_blob};

    struct BlobField(usize);

    impl Wire for BlobField {
        type Error = bijou_codec::ReadError;
        fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
            write_blob(w, &alloc::vec![0; self.0]);
            Ok(())
        }
        fn read_from(_: &mut bijou_codec::Reader<'_>) -> Result<Self, Self::Error> {
            unreachable!("only written")
        }
    }

    /// The added-up length is what `write_blob` writes, across each bijou64
    /// tier boundary a blob can reach (the one-byte shortcut included).
    #[test]
    fn a_blob_fields_length_is_what_is_written_at_every_tier_boundary() {
        for boundary in [248, 504, 66_040] {
            for len in boundary - 2..boundary + 2 {
                assert_eq!(
                    blob_field_len(len),
                    BlobField(len).encode().map(|b| b.len()).unwrap_or(0),
                    "blob of {len} bytes"
                );
            }
        }
    }
}
