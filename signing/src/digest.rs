use core::{cmp::Ordering, hash, marker::PhantomData};

use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bytes::BufMut;

/// Length of a BLAKE3 digest in bytes.
pub const DIGEST_LEN: usize = 32;

/// ```
/// use bijou_frame::signing::{Blob, Digest};
///
/// let blob = Blob::from_static(b"hello");
/// let id: Digest<Blob> = blob.digest();
/// assert_eq!(id.as_bytes(), blake3::hash(b"hello").as_bytes());
/// assert_eq!(Digest::<Blob>::from_bytes(*id.as_bytes()), id);
/// assert_eq!(id.to_string().parse::<Digest<Blob>>()?, id); // lower-case hex
/// # Ok::<(), bijou_frame::signing::hex::ParseHexError>(())
/// ```
///
/// A 32-byte BLAKE3 digest tagged with what it is a digest
/// of.
///
/// ```text
///   Digest<Blob>         = BLAKE3(blob bytes)
///   Digest<T: Payload>   = BLAKE3(Schema(4) || fields)
///
///   +------------------------------- 32 bytes -------------------------------+
///   | BLAKE3 output, as is (no length prefix, no tag on the wire)            |
///   +------------------------------------------------------------------------+
/// ```
///
/// The type parameter exists only at compile time: a `Digest<Blob>` cannot be
/// passed where a `Digest<LooseCommit>` is expected, although both are the
/// same 32 bytes on the wire.
///
/// ```compile_fail
/// use bijou_frame::signing::{Blob, Digest};
/// struct Commit;
/// let blob_id: Digest<Blob> = Blob::from_static(b"hi").digest();
/// let commit_id: Digest<Commit> = blob_id; // different types
/// ```
pub struct Digest<T: ?Sized> {
    bytes: [u8; DIGEST_LEN],
    // `fn() -> T`: no ownership of a `T`, so `Digest<T>` is `Send + Sync +
    // Copy` whatever `T` is.
    _marker: PhantomData<fn() -> T>,
}

impl<T: ?Sized> Digest<T> {
    /// A digest from its 32 raw bytes (for example, read off the wire).
    #[must_use]
    pub const fn from_bytes(bytes: [u8; DIGEST_LEN]) -> Self {
        Self {
            bytes,
            _marker: PhantomData,
        }
    }

    /// The raw bytes.
    #[must_use]
    pub const fn as_bytes(&self) -> &[u8; DIGEST_LEN] {
        &self.bytes
    }

    /// BLAKE3 over `parts`, concatenated.
    pub(crate) fn hash_parts(parts: &[&[u8]]) -> Self {
        let mut hasher = blake3::Hasher::new();
        for part in parts {
            hasher.update(part);
        }
        Self::from_bytes(*hasher.finalize().as_bytes())
    }
}

impl<T: ?Sized> Clone for Digest<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for Digest<T> {}

impl<T: ?Sized> PartialEq for Digest<T> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl<T: ?Sized> Eq for Digest<T> {}

impl<T: ?Sized> PartialOrd for Digest<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: ?Sized> Ord for Digest<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.bytes.cmp(&other.bytes)
    }
}

impl<T: ?Sized> hash::Hash for Digest<T> {
    fn hash<H: hash::Hasher>(&self, state: &mut H) {
        self.bytes.hash(state);
    }
}

crate::impl_hex_text!(Digest<T>, DIGEST_LEN, from_bytes);

impl<T: ?Sized> From<Digest<T>> for [u8; DIGEST_LEN] {
    fn from(digest: Digest<T>) -> Self {
        digest.bytes
    }
}

impl<T: ?Sized> AsRef<[u8]> for Digest<T> {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

/// 32 raw bytes on the wire.
impl<T: ?Sized> Wire for Digest<T> {
    type Error = ReadError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(&self.bytes);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        r.array("digest").map(Self::from_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    struct Thing;

    #[test]
    fn hash_parts_is_blake3_of_the_concatenation() {
        let d = Digest::<Thing>::hash_parts(&[b"ab", b"", b"cd"]);
        assert_eq!(d.as_bytes(), blake3::hash(b"abcd").as_bytes());
    }

    #[test]
    fn formats_as_lower_hex() {
        let mut bytes = [0u8; 32];
        bytes[0] = 0xAB;
        bytes[31] = 0x0F;
        let d = Digest::<Thing>::from_bytes(bytes);
        let hex = format!("{d}");
        assert_eq!(hex.len(), 64);
        assert!(hex.starts_with("ab00"));
        assert!(hex.ends_with("000f"));
        assert_eq!(format!("{d:?}"), format!("Digest({hex})"));
    }

    #[test]
    fn codec_round_trip_and_truncation() {
        let d = Digest::<Thing>::from_bytes([7; 32]);
        let wire = bytes::Bytes::copy_from_slice(d.as_bytes());
        assert_eq!(<[u8; 32]>::from(d), [7; 32]);
        assert_eq!(d.encode(), Ok(wire.clone()));
        assert_eq!(Digest::<Thing>::decode(wire.clone()), Ok(d));
        assert!(Digest::<Thing>::decode(wire.slice(..31)).is_err());
    }

    #[test]
    fn ordering_is_bytewise() {
        let a = Digest::<Thing>::from_bytes([1; 32]);
        let b = Digest::<Thing>::from_bytes([2; 32]);
        assert!(a < b);
        assert_eq!(a.cmp(&a), Ordering::Equal);
    }
}
