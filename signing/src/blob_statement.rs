use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bytes::BufMut;

use crate::payload::{ISSUER_LEN, SCHEMA_LEN, SIGNATURE_LEN};
use crate::{Blob, BlobMeta, BlobMismatch, Digest, Payload, DIGEST_LEN};

/// "This blob, of this size, with this BLAKE3 digest": the signed fields
/// of a standalone blob signature (below).
///
/// A signed, content-addressed statement about one blob
/// (a file, say) that stands on its own, with no tree or commit around it.
/// It is the type behind `bijou blob sign` / `bijou blob verify`.
///
/// ```text
///   Signed<BlobStatement> (the whole signature file; 133-141 bytes):
///
///   +----------------+--------------+------------------+-----------------+---------------+
///   | "BJB\0" (4)    | IssuerVK (32)| BLAKE3 digest(32)| Size (bijou64)  | Signature (64)|
///   +----------------+--------------+------------------+-----------------+---------------+
///    42 4A 42 00                                        1-9 bytes
/// ```
///
/// Because the size is a canonical bijou64 and nothing else is variable,
/// one statement has exactly one encoding: the same signer, digest and
/// size always give the same bytes, and a signature file that decodes
/// re-encodes to itself (trailing bytes are refused).
///
/// ```
/// use bijou_frame::signing::{BlobStatement, Signed, Identity};
/// use bijou_frame::codec::Wire;
/// use ed25519_dalek::SigningKey;
///
/// let key = SigningKey::from_bytes(&[7; 32]);
/// let file = b"hello, world\n";
/// let signed = Signed::seal(&key, &BlobStatement::for_bytes(file))?;
/// let sig_file = signed.into_bytes(); // what `bijou blob sign` writes
///
/// // Later, elsewhere: decode, verify the signature, then the file.
/// let verified = Signed::<BlobStatement>::decode(sig_file)?.verify_strict()?;
/// assert_eq!(verified.peer_id(), key.peer_id());
/// verified.payload().check(&BlobStatement::for_bytes(file))?;
/// assert!(verified.payload().check(&BlobStatement::for_bytes(b"hello, world!")).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlobStatement {
    meta: BlobMeta,
}

impl BlobStatement {
    /// The length of the shortest signature file (`Signed<BlobStatement>`):
    /// schema, issuer, digest, a one-byte size (under 248) and the
    /// signature, 133 bytes.
    pub const MIN_SIGNED_LEN: usize = SCHEMA_LEN + ISSUER_LEN + DIGEST_LEN + 1 + SIGNATURE_LEN;

    /// The length of the longest signature file: a nine-byte size (at least
    /// 72,340,172,838,076,920 bytes), 141 bytes.
    pub const MAX_SIGNED_LEN: usize =
        SCHEMA_LEN + ISSUER_LEN + DIGEST_LEN + bijou_codec::bijou64::MAX_LEN + SIGNATURE_LEN;

    /// A statement about a blob with this digest and size (for example,
    /// computed by a streaming or multi-threaded hasher).
    #[must_use]
    pub const fn new(digest: Digest<Blob>, size: u64) -> Self {
        Self {
            meta: BlobMeta::new(digest, size),
        }
    }

    /// A statement about `bytes`: their BLAKE3 digest and length.
    #[must_use]
    pub fn for_bytes(bytes: &[u8]) -> Self {
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        Self::new(Digest::from_bytes(*blake3::hash(bytes).as_bytes()), size)
    }

    /// The blob's BLAKE3 digest.
    #[must_use]
    pub const fn digest(&self) -> Digest<Blob> {
        self.meta.digest()
    }

    /// The blob's size in bytes.
    #[must_use]
    pub const fn size(&self) -> u64 {
        self.meta.size()
    }

    /// The digest and size as [`BlobMeta`].
    #[must_use]
    pub const fn meta(&self) -> BlobMeta {
        self.meta
    }

    /// Checks that `actual` (the statement computed from the blob at hand)
    /// is this one: size first, then digest.
    ///
    /// # Errors
    ///
    /// [`BlobMismatch::Size`] or [`BlobMismatch::Digest`], with both values.
    pub fn check(&self, actual: &BlobStatement) -> Result<(), BlobMismatch> {
        if actual.size() != self.size() {
            return Err(BlobMismatch::Size {
                expected: self.size(),
                actual: actual.size(),
            });
        }
        if actual.digest() != self.digest() {
            return Err(BlobMismatch::Digest {
                expected: self.digest(),
                actual: actual.digest(),
            });
        }
        Ok(())
    }
}

impl Wire for BlobStatement {
    type Error = ReadError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(self.digest().as_bytes());
        w.bijou64(self.size());
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let digest = Digest::from_bytes(r.array::<DIGEST_LEN>("blob digest")?);
        let size = r.bijou64("blob size")?;
        Ok(Self::new(digest, size))
    }
}

impl Payload for BlobStatement {
    /// `"BJB\0"`: bijou-frame, blob, version 0.
    const SCHEMA: [u8; 4] = *b"BJB\x00";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Identity, Signed};
    use ed25519_dalek::SigningKey;

    fn signed() -> bytes::Bytes {
        let key = SigningKey::from_bytes(&[9; 32]);
        Signed::seal(&key, &BlobStatement::for_bytes(&[1; 300]))
            .map(Signed::into_bytes)
            .unwrap_or_default()
    }

    #[test]
    fn layout_is_schema_issuer_digest_size_signature() {
        let wire = signed();
        assert_eq!(wire.len(), 4 + 32 + 32 + 2 + 64);
        assert_eq!(&wire[..4], b"BJB\0");
        assert_eq!(&wire[36..68], blake3::hash(&[1; 300]).as_bytes());
        assert_eq!(&wire[68..70], [0xF8, 0x34]); // bijou64(300)
    }

    /// The documented 133-141 bytes are the constants, and the constants
    /// are what sealing the smallest and the largest size gives.
    #[test]
    fn signature_files_are_133_to_141_bytes() {
        assert_eq!(
            (BlobStatement::MIN_SIGNED_LEN, BlobStatement::MAX_SIGNED_LEN),
            (133, 141)
        );
        let key = SigningKey::from_bytes(&[9; 32]);
        let len = |size: u64| {
            Signed::seal(&key, &BlobStatement::new(Digest::from_bytes([1; 32]), size))
                .map(|s| s.into_bytes().len())
                .unwrap_or_default()
        };
        assert_eq!(len(0), BlobStatement::MIN_SIGNED_LEN);
        assert_eq!(len(247), BlobStatement::MIN_SIGNED_LEN);
        assert_eq!(len(248), BlobStatement::MIN_SIGNED_LEN + 1);
        assert_eq!(len(u64::MAX), BlobStatement::MAX_SIGNED_LEN);
    }

    #[test]
    fn every_truncation_and_trailing_byte_is_refused() {
        let wire = signed();
        for end in 0..wire.len() {
            assert!(
                Signed::<BlobStatement>::decode(wire.slice(..end)).is_err(),
                "{end}"
            );
        }
        let mut longer = std::vec::Vec::from(&wire[..]);
        longer.push(0);
        assert!(Signed::<BlobStatement>::decode(longer.into()).is_err());
    }

    #[test]
    fn every_bit_flip_fails_to_decode_or_to_verify() {
        let wire = signed();
        for bit in 0..wire.len() * 8 {
            let mut flipped = std::vec::Vec::from(&wire[..]);
            flipped[bit / 8] ^= 1 << (bit % 8);
            let result = Signed::<BlobStatement>::decode(flipped.clone().into())
                .map_err(|_| ())
                .and_then(|s| s.verify_strict().map_err(|_| ()));
            assert!(result.is_err(), "bit {bit} flipped still verifies");
        }
    }

    #[test]
    fn accepted_bytes_reencode_to_themselves() {
        let wire = signed();
        let decoded = Signed::<BlobStatement>::decode(wire.clone()).map(|s| s.into_bytes());
        assert_eq!(decoded.ok(), Some(wire));
        let statement = BlobStatement::new(Digest::from_bytes([3; 32]), u64::MAX);
        let bytes = statement.encode().unwrap_or_default();
        assert_eq!(BlobStatement::decode(bytes).ok(), Some(statement));
    }

    #[test]
    fn check_names_size_then_digest() {
        let a = BlobStatement::for_bytes(b"abc");
        assert_eq!(a.check(&a), Ok(()));
        assert!(matches!(
            a.check(&BlobStatement::for_bytes(b"abcd")),
            Err(BlobMismatch::Size {
                expected: 3,
                actual: 4
            })
        ));
        assert!(matches!(
            a.check(&BlobStatement::for_bytes(b"abd")),
            Err(BlobMismatch::Digest { .. })
        ));
    }

    #[test]
    fn a_statement_signed_by_another_key_names_that_key(
    ) -> Result<(), std::boxed::Box<dyn std::error::Error>> {
        let other = SigningKey::from_bytes(&[10; 32]);
        let signed = Signed::seal(&other, &BlobStatement::for_bytes(b"x"))?;
        assert_eq!(signed.verify_strict()?.peer_id(), other.peer_id());
        Ok(())
    }
}
