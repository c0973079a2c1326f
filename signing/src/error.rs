use bijou_codec::{ReadError, WriteError};
use ed25519_dalek::SignatureError;

use crate::{Blob, Digest, PeerId, Schema};

/// Why bytes are not a well-formed `Signed<T>`.
///
/// The crate's error types. Each says what failed and where.
///
/// | Error                            | Raised by                                          |
/// |----------------------------------|----------------------------------------------------|
/// | [`SignedDecodeError`]            | `Signed::decode`, `Signed::read_from`              |
/// | [`VerifyError`]                  | `Signed::verify_strict`, `verify_batch`, `Unsigned::sign` |
/// | [`SealError`]                    | `Signed::seal`                                     |
/// | [`BlobMismatch`]                 | `BlobMeta::verify`, `Verified::verify_blob`        |
/// | [`ParseHexError`]                | `hex::parse`, `FromStr` of ids and digests         |
/// | `key_file::KeyTextError`         | `key_file::parse_key`                              |
/// | `key_file::KeyFileError`         | `key_file::generate`, `read_key_file`, `write_key_file` |
///
/// Truncation, trailing bytes and malformed fields are the codec's
/// [`ReadError`], wrapped unchanged, so they keep the field name, the
/// absolute offset and needed/have.
///
/// [`ParseHexError`]: crate::hex::ParseHexError
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignedDecodeError {
    /// Truncated input, trailing bytes, or fields the payload type rejects.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The 4-byte schema header belongs to another type (checked first).
    #[error("schema {found} at offset {offset}, expected {expected}: these bytes are another payload type")]
    WrongSchema {
        /// The payload type's schema.
        expected: Schema,
        /// What the input starts with.
        found: Schema,
        /// Where the schema starts.
        offset: usize,
    },
    /// The discriminant byte belongs to another type sharing the schema.
    #[error("discriminant {found:#04x} at offset {offset}, expected {expected:#04x}: these bytes are another payload type of the same schema")]
    WrongDiscriminant {
        /// The payload type's discriminant.
        expected: u8,
        /// The byte found.
        found: u8,
        /// Where the discriminant byte is.
        offset: usize,
    },
    /// The issuer key is an alternative encoding of a point (y >= p, or a
    /// sign bit on x = 0); every point has exactly one accepted encoding.
    #[error("issuer key at offset {offset} is not canonically encoded (y >= p, or a sign bit on x = 0): another spelling of a point, which no honest signer sends")]
    NonCanonicalIssuer {
        /// Where the issuer key starts.
        offset: usize,
    },
}

/// Why a `Signed<T>` did not verify. The checks run in this order, so a
/// signature that fails several of them reports the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The issuer key is not a curve point (found when verification
    /// decompresses it; decoding only checks the encoding is canonical).
    #[error("issuer {issuer} is not a curve point")]
    InvalidIssuer {
        /// The issuer, as sent.
        issuer: PeerId,
    },
    /// The scalar `S` (signature bytes 32..64) is not below the group order
    /// `L`; `S + L` would otherwise be a second valid signature.
    #[error("signature scalar S is not canonical (S >= L)")]
    NonCanonicalS,
    /// The issuer key has small order, so anything "verifies" under it.
    #[error("issuer {issuer} is a weak (small-order) key")]
    WeakIssuer {
        /// The issuer.
        issuer: PeerId,
    },
    /// `R` (signature bytes 0..32) is an alternative point encoding.
    #[error("signature R is not a canonical point encoding")]
    NonCanonicalR,
    /// `R` is one of the eight small-order points.
    #[error("signature R is a small-order point")]
    SmallOrderR,
    /// `R` is not a curve point at all.
    #[error("signature R is not a curve point")]
    InvalidR,
    /// The verification equation `[S]B = R + [H(R || A || M)]A` fails.
    #[error("signature does not verify under issuer {issuer}")]
    BadSignature {
        /// The issuer.
        issuer: PeerId,
    },
}

/// Why a payload could not be sealed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// A count in the payload does not fit its wire field (the encoder
    /// never truncates).
    #[error(transparent)]
    Encode(#[from] WriteError),
    /// The signer refused or failed (a remote or hardware signer may).
    ///
    /// `reason` is not marked as the error's source: without `std`,
    /// `SignatureError` does not implement `Error`.
    #[error("the signer failed: {reason} (check it holds the key and can be reached)")]
    Signer {
        /// The signer's error.
        reason: SignatureError,
    },
}

/// A blob that does not match the metadata it was announced with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlobMismatch {
    /// The blob's length differs from the announced size (checked first:
    /// it costs nothing).
    #[error("blob is {actual} bytes, expected {expected}")]
    Size {
        /// The announced size.
        expected: u64,
        /// The blob's length.
        actual: u64,
    },
    /// The blob's BLAKE3 digest differs from the announced one.
    #[error("blob digest is {actual}, expected {expected}")]
    Digest {
        /// The announced digest.
        expected: Digest<Blob>,
        /// The blob's digest.
        actual: Digest<Blob>,
    },
}
