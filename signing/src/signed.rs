use core::fmt;

use bijou_codec::{Reader, Wire, WriteError, Writer};
use bytes::{BufMut, Bytes};
use ed25519_dalek::{Signature, VerifyingKey};

use crate::{
    payload::{header_len, SCHEMA_LEN, SIGNATURE_LEN},
    strict, Digest, Identity, Payload, PeerId, Schema, SealError, SignedDecodeError, Unsigned,
    Verified, VerifyError,
};

/// ```
/// use bijou_frame::codec::{Reader, ReadError, Wire, WriteError, Writer};
/// use bijou_frame::signing::{Payload, Signed};
/// use bytes::{BufMut, Bytes};
/// use ed25519_dalek::SigningKey;
///
/// #[derive(Debug, Clone, PartialEq)]
/// struct Note { text: Bytes }
///
/// impl Wire for Note {
///     type Error = ReadError;
///     fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
///         w.bijou64_len(self.text.len());
///         w.bytes(&self.text);
///         Ok(())
///     }
///     fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
///         let len = r.bijou64("text_len")?;
///         Ok(Note { text: r.shared_u64("text", len)? })
///     }
/// }
///
/// impl Payload for Note {
///     const SCHEMA: [u8; 4] = *b"NT\x01\x00";
/// }
///
/// let key = SigningKey::from_bytes(&[9; 32]);
/// let sealed = Signed::seal(&key, &Note { text: Bytes::from_static(b"hi") })?;
/// assert_eq!(sealed.len(), 4 + 32 + 3 + 64);
///
/// // On the other side: decode (zero-copy, one pass), verify, then read.
/// let received = Signed::<Note>::decode(sealed.to_bytes())?;
/// let verified = received.verify_strict()?;
/// assert_eq!(verified.payload().text, &b"hi"[..]);
/// assert_eq!(verified.issuer(), key.verifying_key());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A signed payload in wire form, decoded once, not yet
/// verified.
///
/// ```text
///   offset 0         4            4+d            4+d+32                 n-64          n
///   +----------------+------------+--------------+----------------------+-------------+
///   | Schema (4)     | Disc (d=0  | IssuerVK     | fields               | Signature   |
///   | T::SCHEMA      |  or 1)     | (32)         | T as Wire            | R(32) S(32) |
///   +----------------+------------+--------------+----------------------+-------------+
///   \__________________ signed message: everything before the signature _/
///
///   digest = BLAKE3(Schema || fields)   (no discriminant, issuer or signature)
/// ```
///
/// A `Signed<T>` keeps the exact bytes it was decoded from (a [`Bytes`]
/// slice of the frame, no copy), so a relay forwards what it received, and
/// the payload `T`, decoded exactly once. It does not expose the payload:
/// the only way to it is [`Signed::verify_strict`] (or
/// [`verify_batch`](crate::batch::verify_batch)), which returns a [`Verified<T>`]
/// built from this same decode.
///
/// ```compile_fail
/// # fn f<T: bijou_frame::signing::Payload>(signed: bijou_frame::signing::Signed<T>) {
/// let payload = signed.payload(); // no such method: verify first
/// # }
/// ```
///
/// Decoding ([`Wire::read_from`]) is strict and cheap, and checks, in
/// order:
///
/// 1. the schema, then the discriminant (distinct errors, before anything
///    else);
/// 2. that the issuer key is a canonical point *encoding* (a byte
///    comparison: `y < p`, no sign bit on `x = 0`); the point itself is
///    decompressed only by verification, which is most of the cost of a
///    decode that skips it: a relay routing by tree id never pays it;
/// 3. the fields, with `T::read_from` (strict, so accepted fields are the
///    only encoding of their value), which also finds the signature;
/// 4. the 64 signature bytes.
///
/// Error offsets are absolute in the frame the reader reads, also for a
/// signed payload embedded in a larger message. Verification then
/// decompresses the key: a key that is no curve point is refused there
/// ([`VerifyError::InvalidIssuer`]), before any payload is handed out.
pub struct Signed<T> {
    bytes: Bytes,
    issuer: PeerId,
    signature: Signature,
    // Decoded once, from `bytes`; reachable only through `Verified<T>`.
    payload: T,
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
    pub fn seal<S: Identity + ?Sized>(signer: &S, payload: &T) -> Result<Self, SealError> {
        let unsigned = Unsigned::new(signer.verifying_key(), payload)?;
        let signature = signer
            .sign_message(unsigned.message())
            .map_err(|reason| SealError::Signer { reason })?;
        Ok(unsigned.sign_unchecked(signature))
    }

    /// The first half of [`Signed::seal`], for a signer that answers later:
    /// `payload` encoded as `issuer`'s, waiting for its signature (see
    /// [`Unsigned`](crate::Unsigned)).
    ///
    /// # Errors
    ///
    /// [`WriteError`] if a count does not fit its
    /// field.
    pub fn unsigned(issuer: VerifyingKey, payload: &T) -> Result<Unsigned<T>, WriteError> {
        Unsigned::new(issuer, payload)
    }

    pub(crate) fn from_parts(
        bytes: Bytes,
        issuer: PeerId,
        signature: Signature,
        payload: T,
    ) -> Self {
        Self {
            bytes,
            issuer,
            signature,
            payload,
        }
    }

    /// Verifies the signature with the strict rules (see [`strict`]):
    /// decompresses the issuer key, then runs the checks in order. The
    /// payload in the result is the one decoded with `self`.
    ///
    /// # Errors
    ///
    /// The first failed check, as a [`VerifyError`]; a key that is no
    /// curve point is [`VerifyError::InvalidIssuer`].
    pub fn verify_strict(&self) -> Result<Verified<T>, VerifyError> {
        let key = self.verifying_key()?;
        strict::precheck(&key, key.is_weak(), &self.signature)?;
        strict::verify_prechecked(&key, self.message(), &self.signature)?;
        Ok(Verified::new(self.clone(), key))
    }

    /// BLAKE3(`Schema` || fields), over the bytes as received: the content
    /// address, whoever signed it. Available before verification (it says
    /// nothing about who signed).
    #[must_use]
    pub fn digest(&self) -> Digest<T> {
        let schema = self.bytes.get(..SCHEMA_LEN).unwrap_or_default();
        Digest::hash_parts(&[schema, self.fields()])
    }

    /// The fields: between the header and the signature.
    pub(crate) fn fields(&self) -> &[u8] {
        self.message().get(header_len::<T>()..).unwrap_or_default()
    }
}

impl<T> Signed<T> {
    /// The issuer's peer id, as sent (a canonical point encoding; the point
    /// is checked by verification).
    #[must_use]
    pub fn peer_id(&self) -> PeerId {
        self.issuer
    }

    /// Decompresses the issuer key (the expensive part of parsing a key).
    ///
    /// # Errors
    ///
    /// [`VerifyError::InvalidIssuer`] if the bytes are not a curve point.
    pub fn verifying_key(&self) -> Result<VerifyingKey, VerifyError> {
        self.issuer
            .verifying_key()
            .map_err(|_| VerifyError::InvalidIssuer {
                issuer: self.issuer,
            })
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

    /// The payload; crate-private: outside, only `Verified` hands it out.
    pub(crate) fn payload(&self) -> &T {
        &self.payload
    }

    pub(crate) fn into_payload(self) -> T {
        self.payload
    }
}

/// The wire form is the signed bytes as they are. Reading is the strict
/// single pass of [`Signed`]'s docs; the read value holds a
/// zero-copy slice of the reader's frame.
impl<T: Payload> Wire for Signed<T> {
    type Error = SignedDecodeError;

    fn wire_len(&self) -> Result<usize, WriteError> {
        Ok(self.bytes.len())
    }

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(&self.bytes);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, SignedDecodeError> {
        let start = r.offset();
        let found = r.array::<SCHEMA_LEN>("schema")?;
        if found != T::SCHEMA {
            return Err(SignedDecodeError::WrongSchema {
                expected: Schema(T::SCHEMA),
                found: Schema(found),
                offset: start,
            });
        }
        if let Some(expected) = T::DISCRIMINANT {
            let offset = r.offset();
            let found = r.u8("discriminant")?;
            if found != expected {
                return Err(SignedDecodeError::WrongDiscriminant {
                    expected,
                    found,
                    offset,
                });
            }
        }
        let offset = r.offset();
        let issuer = r.array::<32>("issuer")?;
        if !strict::is_canonical_point(&issuer) {
            return Err(SignedDecodeError::NonCanonicalIssuer { offset });
        }
        let payload = T::read_from(r)?;
        let signature = Signature::from_bytes(r.array_ref::<SIGNATURE_LEN>("signature")?);
        Ok(Self {
            bytes: r.shared_since(start),
            issuer: PeerId::from_bytes(issuer),
            signature,
            payload,
        })
    }
}

impl<T: Clone> Clone for Signed<T> {
    fn clone(&self) -> Self {
        Self {
            bytes: self.bytes.clone(),
            issuer: self.issuer,
            signature: self.signature,
            payload: self.payload.clone(),
        }
    }
}

/// Equal iff the wire bytes are equal (issuer, signature and payload are
/// all determined by them).
impl<T> PartialEq for Signed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl<T> Eq for Signed<T> {}

/// Shows the issuer, the length and the type, not the payload.
impl<T> fmt::Debug for Signed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signed")
            .field("type", &core::any::type_name::<T>())
            .field("issuer", &self.issuer)
            .field("len", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::verify_batch;
    use bijou_codec::{ReadError, WriteError};
    use ed25519_dalek::SigningKey;

    #[derive(Debug, Clone, PartialEq)]
    struct Byte(u8);

    impl Wire for Byte {
        type Error = ReadError;
        fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
            w.u8(self.0);
            Ok(())
        }
        fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
            r.u8("byte").map(Byte)
        }
    }

    impl Payload for Byte {
        const SCHEMA: [u8; 4] = *b"BY\x00\x00";
    }

    /// y = 2 is below p (a canonical encoding) but no curve point has it.
    fn not_a_point() -> [u8; 32] {
        let mut y = [0u8; 32];
        y[0] = 2;
        y
    }

    fn with_issuer(issuer: [u8; 32]) -> Bytes {
        let sealed = Signed::seal(&SigningKey::from_bytes(&[3; 32]), &Byte(7)).unwrap();
        let mut bytes = sealed.as_bytes().to_vec();
        bytes[4..36].copy_from_slice(&issuer);
        bytes.into()
    }

    #[test]
    fn decoding_keeps_the_key_bytes_and_verification_refuses_a_non_point() {
        assert!(strict::is_canonical_point(&not_a_point()));
        assert!(VerifyingKey::from_bytes(&not_a_point()).is_err());
        // Decoding does not decompress: the message decodes...
        let signed = Signed::<Byte>::decode(with_issuer(not_a_point())).unwrap();
        assert_eq!(signed.peer_id(), PeerId::from_bytes(not_a_point()));
        // ...and the payload is never handed out: verification refuses the
        // key before anything else, alone and in a batch.
        let refused = VerifyError::InvalidIssuer {
            issuer: PeerId::from_bytes(not_a_point()),
        };
        assert_eq!(signed.verify_strict().err(), Some(refused));
        let good = Signed::seal(&SigningKey::from_bytes(&[4; 32]), &Byte(8)).unwrap();
        let results = verify_batch(&[good.clone(), signed, good]);
        assert_eq!(results[1].as_ref().err(), Some(&refused));
        assert!(results[0].is_ok() && results[2].is_ok());
    }

    #[test]
    fn a_non_canonical_key_encoding_is_refused_when_decoding() {
        // y = p + 2 encodes the same y as 2 would, non-canonically.
        let mut y = strict::FIELD_PRIME;
        y[0] = y[0].wrapping_add(2);
        assert_eq!(
            Signed::<Byte>::decode(with_issuer(y)),
            Err(SignedDecodeError::NonCanonicalIssuer { offset: 4 })
        );
    }

    #[test]
    fn the_payload_is_decoded_once_and_verification_uses_it() {
        let key = SigningKey::from_bytes(&[5; 32]);
        let wire = Signed::seal(&key, &Byte(42)).unwrap().into_bytes();
        let signed = Signed::<Byte>::decode(wire.clone()).unwrap();
        assert_eq!(signed.payload(), &Byte(42));
        let verified = signed.verify_strict().unwrap();
        assert_eq!(verified.payload(), &Byte(42));
        assert_eq!(verified.as_bytes(), &wire[..]);
        // Zero-copy: the signed bytes are the input's buffer.
        assert_eq!(verified.signed().as_bytes().as_ptr(), wire.as_ptr());
    }
}
