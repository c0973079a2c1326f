//! Field helpers shared by the message types: sorted id arrays, and the
//! `Signed · BlobLen · Blob` item that commits and fragments travel in.

use bijou_codec::{ReadError, Reader, WriteError, Writer};
use bytes::Bytes;

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

/// Reads `count` strictly ascending big-endian `u64`s (fingerprints: byte
/// order and numeric order agree).
pub(crate) fn read_fingerprints(
    r: &mut Reader<'_>,
    field: &'static str,
    count: u64,
) -> Result<Vec<super::Fingerprint>, ReadError> {
    Ok(r.ascending_arrays::<8>(field, count)?
        .into_iter()
        .map(|b| super::Fingerprint::from_u64(u64::from_be_bytes(b)))
        .collect())
}

/// Writes fingerprints, 8 bytes each, big-endian.
pub(crate) fn write_fingerprints(w: &mut Writer<'_>, fps: &[super::Fingerprint]) {
    fps.iter().for_each(|fp| w.bytes(&fp.to_be_bytes()));
}

/// Reads a bijou64 length and that many bytes, as a zero-copy slice of
/// `frame` (the buffer `r` reads).
pub(crate) fn read_blob(frame: &Bytes, r: &mut Reader<'_>) -> Result<Bytes, ReadError> {
    let len = r.bijou64("blob_len")?;
    let blob = r.bytes_u64("blob", len)?;
    Ok(frame.slice_ref(blob))
}

/// Writes a blob with its bijou64 length.
pub(crate) fn write_blob(w: &mut Writer<'_>, blob: &[u8]) -> Result<(), WriteError> {
    w.bijou64_len(blob.len());
    w.bytes(blob);
    Ok(())
}
