use bijou_codec::{Reader, Wire, WriteError, Writer};
use bijou_signing::{Identity, PeerId, SealError, Signed, Verified, VerifyError};
use bytes::{BufMut, Bytes};

use super::super::MessageError;
use super::payload::{EphemeralHeader, EphemeralPayload};

/// ```
/// use bijou_frame::proto::message::{EphemeralPayload, SignedEphemeral, Topic};
/// use bijou_frame::codec::Wire;
/// use bijou_frame::signing::ed25519_dalek::SigningKey;
///
/// let key = SigningKey::from_bytes(&[1; 32]);
/// let sealed = SignedEphemeral::seal(&key, &EphemeralPayload::new(Topic::new([7; 32]), 9, 1_700_000_000, &b"hi"[..]))?;
/// let received = SignedEphemeral::decode(sealed.to_bytes())?;
/// assert_eq!(received.header().nonce, 9); // readable before verifying, untrusted
/// let verified = received.verify_strict()?;
/// assert_eq!(verified.payload().payload().as_ref(), b"hi");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A received or sealed ephemeral message, its
/// signature not yet checked, with its [`EphemeralHeader`] readable before
/// verification for the cheap checks.
///
/// The message is the whole `Signed<EphemeralPayload>`: schema `SUE\0`,
/// discriminant `00`, issuer, fields, signature (see
/// [`EphemeralPayload`](super::EphemeralPayload)). Nothing may follow the signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedEphemeral {
    signed: Signed<EphemeralPayload>,
    header: EphemeralHeader,
}

impl SignedEphemeral {
    /// Signs `payload` as `signer`.
    ///
    /// # Errors
    ///
    /// [`SealError`] if the signer fails.
    pub fn seal<S: Identity + ?Sized>(
        signer: &S,
        payload: &EphemeralPayload,
    ) -> Result<Self, SealError> {
        let signed = Signed::seal(signer, payload)?;
        Ok(Self {
            signed,
            header: EphemeralHeader {
                topic: payload.topic(),
                nonce: payload.nonce(),
                timestamp: payload.timestamp(),
                payload_len: payload.payload().len() as u64,
            },
        })
    }

    /// Topic, nonce, timestamp and payload length as sent: **unverified**.
    #[must_use]
    pub fn header(&self) -> &EphemeralHeader {
        &self.header
    }

    /// The issuer as sent: unverified until [`SignedEphemeral::verify_strict`].
    #[must_use]
    pub fn issuer(&self) -> PeerId {
        self.signed.peer_id()
    }

    /// Verifies the signature with the strict rules.
    ///
    /// # Errors
    ///
    /// [`VerifyError`].
    pub fn verify_strict(&self) -> Result<Verified<EphemeralPayload>, VerifyError> {
        self.signed.verify_strict()
    }

    /// The signed payload.
    #[must_use]
    pub fn signed(&self) -> &Signed<EphemeralPayload> {
        &self.signed
    }

    /// The message bytes, exactly as received or sealed.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.signed.as_bytes()
    }

    /// The message bytes as a cheap [`Bytes`] handle.
    #[must_use]
    pub fn to_bytes(&self) -> Bytes {
        self.signed.to_bytes()
    }
}

/// The message is the signed bytes as they are.
impl Wire for SignedEphemeral {
    type Error = MessageError;

    fn wire_len(&self) -> Result<usize, WriteError> {
        Ok(self.signed.len())
    }

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(self.signed.as_bytes());
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        let offset = r.offset();
        let signed = Signed::<EphemeralPayload>::read_from(r)
            .map_err(|source| MessageError::Signed { offset, source })?;
        let header = EphemeralHeader::of_signed(&signed.to_bytes())?;
        Ok(Self { signed, header })
    }
}
