use bytes::{BufMut, BytesMut};
use ed25519_dalek::{Signature, VerifyingKey};

use crate::payload::header_len;
use crate::{Payload, PeerId, Signed, VerifyError, SIGNATURE_LEN};
use bijou_codec::WriteError;

/// A payload encoded behind its schema and issuer, its signature still to
/// come (below).
///
/// [`Signed::seal`] asks an [`Identity`](crate::Identity) and gets the
/// signature back at once. A key that never leaves its keeper (a remote
/// signer, a hardware key, a non-extractable WebCrypto key) answers later,
/// so the seal comes in two steps, with nothing else to hold while the
/// signer works:
///
/// ```text
///   Signed::unsigned(issuer, &payload) ──► Unsigned<T> ── message() ──► the signer
///                                               │                           │ (later)
///                                               └── sign(signature) ◄───────┘
///                                                     │ verify_strict first: a wrong signature
///                                                     ▼ is refused, never sent
///                                                  Signed<T>  (the same bytes Signed::seal makes)
/// ```
///
/// ```
/// use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity, Payload, Signed};
/// # use bijou_frame::codec::{Reader, ReadError, Wire, WriteError, Writer};
/// # use bytes::{BufMut, Bytes};
/// # #[derive(Debug, Clone, PartialEq, Eq)]
/// # struct Note { text: Bytes }
/// # impl Wire for Note {
/// #     type Error = ReadError;
/// #     fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
/// #         w.bijou64_len(self.text.len());
/// #         w.bytes(&self.text);
/// #         Ok(())
/// #     }
/// #     fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
/// #         let len = r.bijou64("text_len")?;
/// #         Ok(Note { text: r.shared_u64("text", len)? })
/// #     }
/// # }
/// # impl Payload for Note {
/// #     const SCHEMA: [u8; 4] = *b"NT\x01\x00";
/// # }
/// let key = SigningKey::from_bytes(&[9; 32]); // kept elsewhere, in practice
/// let note = Note { text: Bytes::from_static(b"hi") };
/// let unsigned = Signed::unsigned(key.verifying_key(), &note)?;
/// let signature = key.sign_message(unsigned.message())?; // the signer's answer, later
/// let sealed = unsigned.sign(&signature)?;
/// assert_eq!(sealed, Signed::seal(&key, &note)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Unsigned<T> {
    /// Schema, discriminant, issuer and payload: what the signature covers.
    message: BytesMut,
    issuer: VerifyingKey,
    payload: T,
}

impl<T: Payload> Unsigned<T> {
    pub(crate) fn new(issuer: VerifyingKey, payload: &T) -> Result<Self, WriteError> {
        let len = header_len::<T>() + payload.wire_len()? + SIGNATURE_LEN;
        let mut message = BytesMut::with_capacity(len);
        message.put_slice(&T::SCHEMA);
        if let Some(discriminant) = T::DISCRIMINANT {
            message.put_u8(discriminant);
        }
        message.put_slice(issuer.as_bytes());
        payload.encode_into(&mut message)?;
        Ok(Self {
            message,
            issuer,
            payload: payload.clone(),
        })
    }

    /// The bytes to sign (pure Ed25519 over exactly these).
    #[must_use]
    pub fn message(&self) -> &[u8] {
        &self.message
    }

    /// The key the signature must verify under.
    #[must_use]
    pub fn issuer(&self) -> PeerId {
        PeerId::from(self.issuer)
    }

    /// Seals with the signer's answer, after checking it with
    /// [`Signed::verify_strict`]'s rules: a signature by another key, over
    /// other bytes, or not canonical is refused, and nothing is sealed.
    ///
    /// # Errors
    ///
    /// [`VerifyError`]: the signature does not verify strictly.
    pub fn sign(self, signature: &Signature) -> Result<Signed<T>, VerifyError> {
        let signed = self.sign_unchecked(*signature);
        signed.verify_strict()?;
        Ok(signed)
    }

    /// Seals with a signature the caller's own signer just made.
    pub(crate) fn sign_unchecked(self, signature: Signature) -> Signed<T> {
        let Self {
            mut message,
            issuer,
            payload,
        } = self;
        message.put_slice(&signature.to_bytes());
        Signed::from_parts(message.freeze(), PeerId::from(issuer), signature, payload)
    }
}
