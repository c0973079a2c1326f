//! [`Signed<T>`]: a signed payload in wire form, not yet verified.
//!
//! ```text
//!   offset 0         4            4+d            4+d+32                 n-64          n
//!   +----------------+------------+--------------+----------------------+-------------+
//!   | Schema (4)     | Disc (d=0  | IssuerVK     | fields               | Signature   |
//!   | T::SCHEMA      |  or 1)     | (32)         | T::encode_fields     | R(32) S(32) |
//!   +----------------+------------+--------------+----------------------+-------------+
//!   \__________________ signed message: everything before the signature _/
//!
//!   digest = BLAKE3(Schema || fields)   (no discriminant, issuer or signature)
//! ```
//!
//! A `Signed<T>` keeps the exact bytes it was decoded from (a [`Bytes`]
//! slice of the input, no copy), so a relay forwards what it received. It
//! does not expose the payload: the only way to the payload is
//! [`Signed::verify_strict`] (or [`verify_batch`](crate::verify_batch)),
//! which returns a [`Verified<T>`].
//!
//! ```compile_fail
//! # fn f<T: bijou_signing::Payload>(signed: bijou_signing::Signed<T>) {
//! let payload = signed.payload(); // no such method: verify first
//! # }
//! ```
//!
//! Decoding is strict and checks, in order:
//!
//! 1. the schema, then the discriminant (distinct errors, before anything
//!    else);
//! 2. the issuer key: canonical encoding, then a curve point;
//! 3. the fields, with `T::decode_fields`, which also finds where the
//!    signature starts;
//! 4. the 64 signature bytes; for [`Signed::decode`], nothing after them;
//! 5. that the fields re-encode to exactly the bytes received.
//!
//! So `Signed::decode(b)?.as_bytes() == b` for every accepted `b`, and
//! every accepted `b` is the only encoding of its contents.

use core::{fmt, marker::PhantomData};

use alloc::vec::Vec;
use bijou_codec::{Reader, Writer};
use bytes::Bytes;
use ed25519_dalek::{Signature, VerifyingKey};

use crate::{
    payload::{header_len, SIGNATURE_LEN},
    strict, DecodeError, Payload, PeerId, SealError, Signer, Verified, VerifyError,
};

/// A signed `T` in wire form; see the [module docs](self).
///
/// ```
/// use bijou_codec::{Reader, ReadError, Writer, WriteError};
/// use bijou_signing::{Payload, Signed};
/// use ed25519_dalek::SigningKey;
///
/// #[derive(Debug, PartialEq)]
/// struct Note { text: Vec<u8> }
///
/// impl Payload for Note {
///     const SCHEMA: [u8; 4] = *b"NT\x01\x00";
///     fn encode_fields(&self, w: &mut Writer<'_>) -> Result<(), WriteError> {
///         w.bijou64_len(self.text.len());
///         w.bytes(&self.text);
///         Ok(())
///     }
///     fn decode_fields(r: &mut Reader<'_>) -> Result<Self, ReadError> {
///         let len = r.bijou64("text_len")?;
///         Ok(Note { text: r.bytes_u64("text", len)?.to_vec() })
///     }
/// }
///
/// let key = SigningKey::from_bytes(&[9; 32]);
/// let sealed = Signed::seal(&key, &Note { text: b"hi".to_vec() })?;
/// assert_eq!(sealed.len(), 4 + 32 + 3 + 64);
///
/// // On the other side: decode (zero-copy), verify, then read.
/// let received = Signed::<Note>::decode(sealed.to_bytes())?;
/// let verified = received.verify_strict()?;
/// assert_eq!(verified.payload().text, b"hi");
/// assert_eq!(verified.issuer(), key.verifying_key());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Signed<T> {
    bytes: Bytes,
    issuer: VerifyingKey,
    // Whether the issuer has small order, found once when the key is parsed
    // (it is rejected at verification, not at decoding).
    issuer_is_weak: bool,
    signature: Signature,
    // `fn() -> T`: a `Signed<T>` holds no `T`.
    _marker: PhantomData<fn() -> T>,
}

impl<T: Payload> Signed<T> {
    /// Encodes `payload`, signs it as `signer`, and returns the wire form.
    /// Deterministic for deterministic signers such as
    /// [`SigningKey`](ed25519_dalek::SigningKey): the same payload and key
    /// give the same bytes.
    ///
    /// # Errors
    ///
    /// [`SealError::Encode`] if a count does not fit its field,
    /// [`SealError::Signer`] if the signer fails.
    pub fn seal<S: Signer + ?Sized>(signer: &S, payload: &T) -> Result<Self, SealError> {
        let issuer = signer.verifying_key();
        let mut out = Vec::with_capacity(header_len::<T>() + 64 + SIGNATURE_LEN);
        let mut w = Writer::new(&mut out);
        w.bytes(&T::SCHEMA);
        if let Some(discriminant) = T::DISCRIMINANT {
            w.u8(discriminant);
        }
        w.bytes(issuer.as_bytes());
        payload.encode_fields(&mut w)?;
        let signature = signer
            .try_sign(&out)
            .map_err(|reason| SealError::Signer { reason })?;
        out.extend_from_slice(&signature.to_bytes());
        Ok(Self {
            bytes: Bytes::from(out),
            issuer_is_weak: issuer.is_weak(),
            issuer,
            signature,
            _marker: PhantomData,
        })
    }

    /// Decodes a `Signed<T>` that must use all of `bytes`. Keeps `bytes`
    /// (no copy).
    ///
    /// # Errors
    ///
    /// [`DecodeError`]; trailing bytes are
    /// [`ReadError::TrailingBytes`](bijou_codec::ReadError::TrailingBytes).
    pub fn decode(bytes: Bytes) -> Result<Self, DecodeError> {
        let total = bytes.len();
        let (signed, used) = Self::decode_prefix(bytes)?;
        if used != total {
            return Err(bijou_codec::ReadError::TrailingBytes {
                offset: used,
                count: total - used,
            }
            .into());
        }
        Ok(signed)
    }

    /// Decodes one `Signed<T>` from the front of `bytes`, for signed items
    /// embedded in larger messages. Returns it (holding a zero-copy slice
    /// of exactly its own bytes) and how many bytes it used. Error offsets
    /// are relative to the start of `bytes`.
    ///
    /// The fields are variable-length, so this parses them to find where
    /// the signature starts.
    ///
    /// # Errors
    ///
    /// [`DecodeError`].
    pub fn decode_prefix(bytes: Bytes) -> Result<(Self, usize), DecodeError> {
        let mut r = Reader::new(&bytes);

        let found = r.array::<4>("schema")?;
        if found != T::SCHEMA {
            return Err(DecodeError::WrongSchema {
                expected: T::SCHEMA,
                found,
            });
        }
        if let Some(expected) = T::DISCRIMINANT {
            let offset = r.offset();
            let found = r.u8("discriminant")?;
            if found != expected {
                return Err(DecodeError::WrongDiscriminant {
                    expected,
                    found,
                    offset,
                });
            }
        }

        let offset = r.offset();
        let issuer = r.array_ref::<32>("issuer")?;
        if !strict::is_canonical_point(issuer) {
            return Err(DecodeError::NonCanonicalIssuer { offset });
        }
        let issuer =
            VerifyingKey::from_bytes(issuer).map_err(|_| DecodeError::InvalidIssuer { offset })?;

        let fields_start = r.offset();
        let payload = T::decode_fields(&mut r)?;
        let fields_end = r.offset();
        let signature = Signature::from_bytes(r.array_ref::<64>("signature")?);
        let used = r.offset();

        // A lax `decode_fields` would let two byte strings carry one value
        // (and one signature-covered digest per encoding); refuse it here.
        let fields = bytes.get(fields_start..fields_end).unwrap_or_default();
        let mut again = Vec::with_capacity(fields.len());
        let reencoded = payload.encode_fields(&mut Writer::new(&mut again));
        if reencoded.is_err() || again != fields {
            let differs_at = again
                .iter()
                .zip(fields)
                .position(|(a, b)| a != b)
                .unwrap_or(again.len().min(fields.len()));
            return Err(DecodeError::NonCanonicalFields {
                offset: fields_start.saturating_add(differs_at),
            });
        }

        let signed = Self {
            bytes: bytes.slice(..used),
            issuer_is_weak: issuer.is_weak(),
            issuer,
            signature,
            _marker: PhantomData,
        };
        Ok((signed, used))
    }

    /// Verifies the signature with the strict rules (see
    /// [`strict`]) and, if it holds, decodes the payload.
    ///
    /// # Errors
    ///
    /// The first failed check, as a [`VerifyError`].
    pub fn verify_strict(&self) -> Result<Verified<T>, VerifyError> {
        strict::precheck(&self.issuer, self.issuer_is_weak, &self.signature)?;
        strict::verify_prechecked(&self.issuer, self.message(), &self.signature)?;
        self.to_verified()
    }

    /// After the signature was checked: decode the payload and wrap it.
    pub(crate) fn to_verified(&self) -> Result<Verified<T>, VerifyError> {
        let mut r = Reader::with_base(self.fields(), header_len::<T>());
        let payload = T::decode_fields(&mut r)
            .and_then(|payload| r.finish().map(|()| payload))
            .map_err(|e| VerifyError::Fields(e.into()))?;
        Ok(Verified::new(self.clone(), payload))
    }
}

impl<T> Signed<T> {
    /// The issuer's verifying key (checked to be a canonical curve point
    /// when decoded; checked for small order when verified).
    #[must_use]
    pub fn issuer(&self) -> VerifyingKey {
        self.issuer
    }

    /// The issuer's peer id.
    #[must_use]
    pub fn peer_id(&self) -> PeerId {
        PeerId::from(&self.issuer)
    }

    pub(crate) fn issuer_ref(&self) -> &VerifyingKey {
        &self.issuer
    }

    pub(crate) fn issuer_is_weak(&self) -> bool {
        self.issuer_is_weak
    }

    /// The signature (not yet checked).
    #[must_use]
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The complete wire bytes, exactly as received or sealed.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The wire bytes as a cheap, reference-counted [`Bytes`] handle.
    #[must_use]
    pub fn to_bytes(&self) -> Bytes {
        self.bytes.clone()
    }

    /// The wire bytes, consuming `self`.
    #[must_use]
    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }

    /// Length of the wire form.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Always `false`: a signed payload has at least a schema, an issuer
    /// and a signature.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The signed message: every byte before the signature.
    pub(crate) fn message(&self) -> &[u8] {
        let end = self.bytes.len().saturating_sub(SIGNATURE_LEN);
        self.bytes.get(..end).unwrap_or_default()
    }
}

impl<T: Payload> Signed<T> {
    /// The fields: between the header and the signature.
    pub(crate) fn fields(&self) -> &[u8] {
        self.message().get(header_len::<T>()..).unwrap_or_default()
    }
}

impl<T> Clone for Signed<T> {
    fn clone(&self) -> Self {
        Self {
            bytes: self.bytes.clone(),
            issuer: self.issuer,
            issuer_is_weak: self.issuer_is_weak,
            signature: self.signature,
            _marker: PhantomData,
        }
    }
}

/// Equal iff the wire bytes are equal (issuer and signature are part of
/// them).
impl<T> PartialEq for Signed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl<T> Eq for Signed<T> {}

/// Shows the issuer, the length and the signature, not the payload.
impl<T> fmt::Debug for Signed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signed")
            .field("type", &core::any::type_name::<T>())
            .field("issuer", &self.peer_id())
            .field("len", &self.bytes.len())
            .finish_non_exhaustive()
    }
}
