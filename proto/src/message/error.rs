use bijou_codec::ReadError;
use bijou_signing::{BlobMismatch, Schema, SignedDecodeError, VerifyError};

use super::SedimentreeId;
use crate::keyhive::KeyhiveError;

/// Why a frame does not hold a well-formed message. Field-level problems
/// are the codec's [`ReadError`] (field, absolute offset, need/have),
/// wrapped unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// Truncation, trailing bytes, unsorted arrays, unknown tag or flag
    /// values: with the field and its absolute offset.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The first four bytes are not a schema this layer knows (or not the
    /// one the decoder was asked for).
    #[error("unknown message schema {found}")]
    UnknownSchema {
        /// The bytes found.
        found: Schema,
    },
    /// The sync envelope's `TotalSize` is not the message's length.
    #[error("TotalSize declares {declared} bytes but the message has {actual}")]
    TotalSize {
        /// What `TotalSize` says.
        declared: u32,
        /// The message's actual length.
        actual: usize,
    },
    /// A list that must hold at least one element declares none.
    #[error("{field} at offset {offset}: count 0, at least one is needed")]
    EmptyList {
        /// The list.
        field: &'static str,
        /// Where its count starts.
        offset: usize,
    },
    /// A sync tag that Subduction retired (`02`, `03`).
    #[error("retired sync message tag {tag:#04x} at offset {offset}")]
    RetiredTag {
        /// The tag.
        tag: u8,
        /// Where it is.
        offset: usize,
    },
    /// A diff carries the same signed payload twice (non-canonical: a diff
    /// is a set, and each copy would cost a verification).
    #[error(
        "{field} item {index} at offset {offset} repeats the signed payload of item {first}; \
         a diff is a set, each signed payload at most once (the sender should drop the repeat, \
         as SyncDiff::new does)"
    )]
    DuplicateItem {
        /// `"commits"` or `"fragments"`.
        field: &'static str,
        /// The repeat's index in the list.
        index: usize,
        /// The index of its first occurrence.
        first: usize,
        /// Where the repeat starts.
        offset: usize,
    },
    /// A `SUK\0` keyhive message is malformed (its envelope, its signed
    /// envelope or the keyhive message inside), with the field and its
    /// absolute offset.
    #[error(transparent)]
    Keyhive(KeyhiveError),
    /// An embedded signed payload is malformed. Offsets inside `source`
    /// are absolute in the frame, like every other offset.
    #[error("signed payload at offset {offset}: {source}")]
    Signed {
        /// Where the signed payload starts.
        offset: usize,
        /// What is wrong with it.
        #[source]
        source: SignedDecodeError,
    },
}

/// Why a signed commit or fragment (with its blob) was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyItemError {
    /// The signature failed the strict checks.
    #[error(transparent)]
    Signature(#[from] VerifyError),
    /// The signature is good, but it was signed for another document than
    /// the message carrying it claims: a replay across documents.
    #[error("payload signed for sedimentree {signed} arrived in a message for {outer}")]
    ScopeMismatch {
        /// The enclosing message's tree id.
        outer: SedimentreeId,
        /// The tree id in the signed payload.
        signed: SedimentreeId,
    },
    /// The blob does not match the signed size and digest.
    #[error(transparent)]
    Blob(#[from] BlobMismatch),
}
