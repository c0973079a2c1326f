//! # bijou-signing
//!
//! Signed, content-addressed payloads in Subduction's wire format:
//! Ed25519 signatures with `verify_strict` semantics (also in batches) and
//! BLAKE3 digests. `no_std` with `alloc`.
//!
//! ```text
//!   Signed<T> wire form (byte-compatible with subduction_crypto's Signed<T>):
//!
//!   +------------+-----------+--------------+--------------------+---------------+
//!   | Schema (4) | Disc (0|1)| IssuerVK (32)| fields (variable)  | Signature (64)|
//!   +------------+-----------+--------------+--------------------+---------------+
//!   \____________________ covered by the signature _____________/
//!   \__ hashed __/                          \______ hashed ______/   -> Digest<T>
//!
//!   Blob id: Digest<Blob> = BLAKE3(blob bytes)
//! ```
//!
//! The type flow:
//!
//! ```text
//!   local:   T ──Signed::seal(&identity, &t)──► Signed<T> ──as_bytes──► wire
//!   remote:  wire ──Signed::decode (one pass)──► Signed<T> ──verify_strict──► Verified<T> ──payload──► &T
//!                                        many ──verify_batch──► Vec<Result<Verified<T>, _>>
//!   blobs:   Verified<T: HasBlobMeta> ──verify_blob(blob)──► VerifiedBlob
//! ```
//!
//! - [`Digest<T>`]: typed BLAKE3 digest; [`Blob`], [`BlobMeta`],
//!   [`VerifiedBlob`]: content-addressed bytes and the check against
//!   announced metadata.
//! - [`BlobStatement`]: a standalone signed statement about one blob
//!   (digest and size), the type behind `bijou blob sign`.
//! - [`Payload`]: what a signable type provides: its fields as a
//!   [`bijou_codec::Wire`] type, plus a [`Schema`] and discriminant.
//! - [`Signed<T>`]: the wire form, keeping the received bytes (zero-copy)
//!   and the payload decoded once; no access to the payload. The issuer key
//!   is decompressed only when verifying.
//! - [`Verified<T>`]: obtainable only by verification.
//! - [`verify_batch`](batch::verify_batch): many at once, with the strict accept set.
//! - [`key_file`] (feature `std`): new keys from the operating system's
//!   randomness, and key files (labelled, with the peer id beside the
//!   seed; the bare 64 hex digits `subduction_cli --key-file` reads are
//!   read too).
//! - [`Identity`], [`PeerId`]: who signs, and how peers are named
//!   (`Display`/`FromStr` as lower-case hex; `serde` with the `serde`
//!   feature).
//! - [`strict`]: the verification rules on raw triples.
//!
//! ```
//! use bijou_frame::codec::{Reader, ReadError, Wire, WriteError, Writer};
//! use bijou_frame::signing::{Payload, Signed, VerifyError};
//! use bytes::BufMut;
//! use ed25519_dalek::SigningKey;
//!
//! #[derive(Debug, Clone, PartialEq)]
//! struct Counter(u64);
//!
//! impl Wire for Counter {
//!     type Error = ReadError;
//!     fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
//!         w.bijou64(self.0);
//!         Ok(())
//!     }
//!     fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
//!         r.bijou64("value").map(Counter)
//!     }
//! }
//!
//! impl Payload for Counter {
//!     const SCHEMA: [u8; 4] = *b"CT\x00\x01";
//! }
//!
//! let key = SigningKey::from_bytes(&[42; 32]);
//! let wire = Signed::seal(&key, &Counter(300))?.into_bytes();
//! assert_eq!(&wire[..4], b"CT\x00\x01");
//! assert_eq!(&wire[36..38], [0xF8, 0x34]); // bijou64(300)
//!
//! let verified = Signed::<Counter>::decode(wire.clone())?.verify_strict()?;
//! assert_eq!(verified.payload(), &Counter(300));
//! assert_eq!(verified.as_bytes(), &wire[..]);
//!
//! // Change one signed byte: decoding still works, verification does not.
//! let mut tampered = wire.to_vec();
//! tampered[37] ^= 1;
//! let tampered = Signed::<Counter>::decode(tampered.into())?;
//! assert!(matches!(tampered.verify_strict(), Err(VerifyError::BadSignature { .. })));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod batch;
mod blob;
mod blob_statement;
mod digest;
mod error;
pub mod hex;
mod identity;
#[cfg(feature = "std")]
pub mod key_file;
mod payload;
mod peer_id;
mod signed;
pub mod strict;
mod unsigned;
mod verified;

pub use blob::{Blob, BlobMeta, HasBlobMeta, VerifiedBlob};
pub use blob_statement::BlobStatement;
pub use digest::{Digest, DIGEST_LEN};
pub use error::{BlobMismatch, SealError, SignedDecodeError, VerifyError};
pub use identity::Identity;
pub use payload::{Payload, Schema, ISSUER_LEN, SCHEMA_LEN, SIGNATURE_LEN};
pub use peer_id::PeerId;
pub use signed::Signed;
pub use unsigned::Unsigned;
pub use verified::Verified;

/// `serde`, for the `impl_hex_text!` macro's expansion in other crates.
#[cfg(feature = "serde")]
#[doc(hidden)]
pub use serde as __serde;

/// Re-exported so users name the same `ed25519-dalek` types this crate
/// uses.
pub use ed25519_dalek;
