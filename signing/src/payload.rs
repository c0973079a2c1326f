//! The [`Payload`] contract: what a type must provide to be signed.
//!
//! A payload type has a 4-byte schema, an optional discriminant byte (for
//! types sharing a schema, such as the handshake's Challenge and Response),
//! and its fields, written with a [`Writer`] and read back with a
//! [`Reader`]:
//!
//! ```text
//!   Schema(4) | Discriminant(0 or 1) | IssuerVK(32) | fields ... | Signature(64)
//!   \_______ from the trait ______/                  \ encode_ /
//!                                                     \fields /
//! ```
//!
//! Rules for `decode_fields`, which [`Signed`](crate::Signed) relies on:
//!
//! - **Self-delimiting.** Read exactly the fields and stop; the signature
//!   follows and [`Signed::decode_prefix`](crate::Signed::decode_prefix)
//!   finds it where `decode_fields` stopped. Never read "the rest".
//! - **Strict.** Reject anything [`encode_fields`](Payload::encode_fields)
//!   would not produce (unsorted arrays, unknown flag values, ...).
//!   [`Signed`](crate::Signed) re-encodes the decoded value and rejects the
//!   input with [`DecodeError::NonCanonicalFields`](crate::DecodeError) if
//!   the bytes differ, so a lax decoder is caught, but the error is less
//!   precise than the one the decoder itself could give.
//! - **Bounded.** Check counts against the remaining input before
//!   allocating ([`Reader::capacity_for`], [`Reader::ascending_arrays`]).
//!
//! ```
//! use bijou_codec::{Reader, ReadError, Writer, WriteError};
//! use bijou_signing::Payload;
//!
//! /// `Count u8 | Items N×8 (strictly ascending)`.
//! struct Ids(Vec<[u8; 8]>);
//!
//! impl Payload for Ids {
//!     const SCHEMA: [u8; 4] = *b"IDS\x00";
//!
//!     fn encode_fields(&self, w: &mut Writer<'_>) -> Result<(), WriteError> {
//!         w.count_u8("ids", self.0.len())?;
//!         self.0.iter().for_each(|id| w.bytes(id));
//!         Ok(())
//!     }
//!
//!     fn decode_fields(r: &mut Reader<'_>) -> Result<Self, ReadError> {
//!         let count = r.u8("count")?;
//!         Ok(Ids(r.ascending_arrays("ids", count.into())?))
//!     }
//! }
//!
//! let digest = Ids(vec![[1; 8], [2; 8]]).digest()?;
//! let mut hashed = b"IDS\x00".to_vec();
//! hashed.extend([2].iter().chain(&[1; 8]).chain(&[2; 8]));
//! assert_eq!(digest.as_bytes(), blake3::hash(&hashed).as_bytes());
//! # Ok::<(), WriteError>(())
//! ```

use alloc::vec::Vec;

use bijou_codec::{ReadError, Reader, WriteError, Writer};

use crate::Digest;

/// Length of the schema header.
pub const SCHEMA_LEN: usize = 4;
/// Length of the issuer's verifying key.
pub const ISSUER_LEN: usize = ed25519_dalek::PUBLIC_KEY_LENGTH;
/// Length of the Ed25519 signature.
pub const SIGNATURE_LEN: usize = ed25519_dalek::SIGNATURE_LENGTH;

/// A type that can be signed; see the [module docs](self) for the rules.
pub trait Payload: Sized {
    /// The 4-byte schema header `[prefix0, prefix1, type, version]`.
    const SCHEMA: [u8; SCHEMA_LEN];

    /// The discriminant byte after the schema, for types that share a
    /// schema; `None` (the default) means no byte is written.
    const DISCRIMINANT: Option<u8> = None;

    /// Appends the fields, in wire order.
    ///
    /// # Errors
    ///
    /// [`WriteError`] if a count does not fit its field.
    fn encode_fields(&self, w: &mut Writer<'_>) -> Result<(), WriteError>;

    /// Reads exactly the fields, strictly, leaving the reader just past
    /// them.
    ///
    /// # Errors
    ///
    /// [`ReadError`] for truncated or malformed fields.
    fn decode_fields(r: &mut Reader<'_>) -> Result<Self, ReadError>;

    /// The content digest BLAKE3(`SCHEMA` || fields), as
    /// [`Verified::digest`](crate::Verified::digest) computes it from the
    /// received bytes. The issuer, the discriminant and the signature are
    /// not part of it.
    ///
    /// # Errors
    ///
    /// As [`Payload::encode_fields`].
    fn digest(&self) -> Result<Digest<Self>, WriteError> {
        let mut fields = Vec::new();
        self.encode_fields(&mut Writer::new(&mut fields))?;
        Ok(Digest::hash_parts(&[&Self::SCHEMA, &fields]))
    }
}

/// Bytes before the fields: schema, discriminant (if any), issuer.
pub(crate) const fn header_len<T: Payload>() -> usize {
    SCHEMA_LEN
        + match T::DISCRIMINANT {
            Some(_) => 1,
            None => 0,
        }
        + ISSUER_LEN
}
