//! The crate's error types. Each says what failed and where.
//!
//! | Error            | Raised by                                        |
//! |------------------|--------------------------------------------------|
//! | [`DecodeError`]  | `Signed::decode`, `Signed::decode_prefix`        |
//! | [`VerifyError`]  | `Signed::verify_strict`, `verify_batch`          |
//! | [`SealError`]    | `Signed::seal`                                   |
//! | [`BlobMismatch`] | `BlobMeta::verify`, `Verified::verify_blob`      |
//!
//! Truncation, trailing bytes and malformed fields are the codec's
//! [`ReadError`], wrapped unchanged, so they keep the field name, the
//! absolute offset and need/have.

use bijou_codec::{ReadError, WriteError};
use ed25519_dalek::SignatureError;

use crate::{Blob, Digest, PeerId};

/// Why bytes are not a well-formed `Signed<T>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Truncated input, trailing bytes, or fields the payload type rejects.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The 4-byte schema header belongs to another type (checked first).
    #[error("schema {found:02x?} at offset 0, expected {expected:02x?}")]
    WrongSchema {
        /// The payload type's schema.
        expected: [u8; 4],
        /// What the input starts with.
        found: [u8; 4],
    },
    /// The discriminant byte belongs to another type sharing the schema.
    #[error("discriminant {found:#04x} at offset {offset}, expected {expected:#04x}")]
    WrongDiscriminant {
        /// The payload type's discriminant.
        expected: u8,
        /// The byte found.
        found: u8,
        /// Where the discriminant byte is.
        offset: usize,
    },
    /// The issuer key is not the encoding of a curve point.
    #[error("issuer key at offset {offset} is not a curve point")]
    InvalidIssuer {
        /// Where the issuer key starts.
        offset: usize,
    },
    /// The issuer key is an alternative encoding of a point (y >= p, or a
    /// sign bit on x = 0); every point has exactly one accepted encoding.
    #[error("issuer key at offset {offset} is not canonically encoded")]
    NonCanonicalIssuer {
        /// Where the issuer key starts.
        offset: usize,
    },
    /// The fields decoded, but do not re-encode to the same bytes: the
    /// payload type's decoder accepted a second encoding of some value.
    #[error("fields are not canonical: re-encoding differs at offset {offset}")]
    NonCanonicalFields {
        /// The first byte (absolute) where the re-encoding differs.
        offset: usize,
    },
}

/// Why a `Signed<T>` did not verify. The checks run in this order, so a
/// signature that fails several of them reports the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
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
    /// The signature is valid but the fields no longer decode. Decoding is
    /// deterministic, so this means a payload type's `decode_fields` is not;
    /// it is reported rather than assumed away.
    #[error("verified fields failed to decode: {0}")]
    Fields(DecodeError),
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
    #[error("signer failed: {reason}")]
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
