//! Field helpers shared by the message types: sorted arrays of ids and
//! fingerprints, and blobs with their bijou64 length.

use bijou_codec::{bijou64, ReadError, Reader, Writer};
use bijou_signing::{Blob, BlobMeta, Digest};
use bytes::{BufMut, Bytes};

use super::{CommitId, Fingerprint, SedimentreeId};

/// Length of the fields that open both a commit and a fragment:
/// `SedimentreeId 32 · Head 32 · BlobDigest 32`.
pub(crate) const ITEM_HEAD_LEN: usize = 96;

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

/// Reads `count` strictly ascending 32-byte ids.
pub(crate) fn read_ids<T: From<[u8; 32]>>(
    r: &mut Reader<'_>,
    field: &'static str,
    count: u64,
) -> Result<Vec<T>, ReadError> {
    Ok(r.ascending_arrays::<32>(field, count)?
        .into_iter()
        .map(T::from)
        .collect())
}

/// Writes 32-byte ids as they are.
pub(crate) fn write_ids<T: AsRef<[u8; 32]>, B: BufMut + ?Sized>(w: &mut Writer<'_, B>, ids: &[T]) {
    ids.iter().for_each(|id| w.bytes(id.as_ref()));
}

/// Reads `count` strictly ascending big-endian `u64`s (fingerprints: byte
/// order and numeric order agree).
pub(crate) fn read_fingerprints(
    r: &mut Reader<'_>,
    field: &'static str,
    count: u64,
) -> Result<Vec<Fingerprint>, ReadError> {
    Ok(r.ascending_arrays::<8>(field, count)?
        .into_iter()
        .map(|b| Fingerprint::from_u64(u64::from_be_bytes(b)))
        .collect())
}

/// Writes fingerprints, 8 bytes each, big-endian.
pub(crate) fn write_fingerprints<B: BufMut + ?Sized>(w: &mut Writer<'_, B>, fps: &[Fingerprint]) {
    fps.iter().for_each(|fp| w.u64(fp.as_u64()));
}

/// Wire length of a blob behind its bijou64 length.
pub(crate) fn blob_len(blob: &[u8]) -> usize {
    bijou64::encoded_len(u64::try_from(blob.len()).unwrap_or(u64::MAX)) + blob.len()
}

/// Reads a bijou64 length and that many bytes, as a zero-copy slice of the
/// frame.
pub(crate) fn read_blob(r: &mut Reader<'_>) -> Result<Bytes, ReadError> {
    let len = r.bijou64("blob_len")?;
    r.shared_u64("blob", len)
}

/// Writes a blob with its bijou64 length.
pub(crate) fn write_blob<B: BufMut + ?Sized>(w: &mut Writer<'_, B>, blob: &[u8]) {
    w.bijou64_len(blob.len());
    w.bytes(blob);
}
