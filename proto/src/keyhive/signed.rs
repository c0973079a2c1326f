use alloc::vec::Vec;
use bijou_codec::{Reader, Writer};
use bijou_signing::ed25519_dalek::Signature;
use bijou_signing::{strict, Identity, PeerId};
use bytes::{BufMut, Bytes};

use super::error::KeyhiveError;
use super::message::KeyhiveMessage;

/// Bytes around the payload: its length, the key's length, the key, the
/// signature.
pub const ENVELOPE_OVERHEAD: usize = 8 + 8 + 32 + 64;

/// A keyhive signed envelope around a keyhive message, decoded but not yet
/// verified.
///
/// Keyhive's signed envelope (`keyhive_crypto` 0.2 `Signed<Vec<u8>>`), in
/// keyhive's binary form: fixed-width little-endian integers, a 64-bit
/// length before every variable-length field (bincode 1's layout, written
/// here with our own reader and writer).
///
/// ```text
///   PayloadLen u64 LE | Payload (PayloadLen bytes: a CBOR keyhive message)
///   KeyLen u64 LE (= 32) | Issuer (32, Ed25519 verifying key)
///   Signature (64, no length: a fixed-size tuple)
///
///   signed bytes = PayloadLen · Payload   (the payload's own binary form)
/// ```
///
/// Verification is `verify_strict` over the signed bytes, by the key the
/// handshake authenticated, and the message's `sender_id` must be the
/// issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedKeyhive {
    /// The message, decoded from `payload`.
    pub message: KeyhiveMessage,
    /// The payload's CBOR, exactly as received.
    pub payload: Bytes,
    /// Who says they signed it.
    pub issuer: PeerId,
    /// The Ed25519 signature over `PayloadLen · Payload`.
    pub signature: [u8; 64],
}

impl SignedKeyhive {
    /// Signs `message` as `signer`.
    ///
    /// # Errors
    ///
    /// [`KeyhiveError::Signer`] if the signer fails.
    pub fn sign<S: Identity + ?Sized>(
        signer: &S,
        message: KeyhiveMessage,
    ) -> Result<Self, KeyhiveError> {
        let payload = Bytes::from(message.to_cbor());
        let mut signed = Vec::with_capacity(8 + payload.len());
        signed.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        signed.extend_from_slice(&payload);
        let issuer = signer.peer_id();
        let signature = signer
            .sign_message(&signed)
            .map_err(|_| KeyhiveError::Signer { issuer })?;
        Ok(Self {
            message,
            payload,
            issuer,
            signature: signature.to_bytes(),
        })
    }

    /// The envelope's length in bytes.
    #[must_use]
    pub fn wire_len(&self) -> usize {
        ENVELOPE_OVERHEAD + self.payload.len()
    }

    /// Writes the envelope's binary form.
    pub fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) {
        w.bytes(&(self.payload.len() as u64).to_le_bytes());
        w.bytes(&self.payload);
        w.bytes(&32u64.to_le_bytes());
        w.bytes(self.issuer.as_bytes());
        w.bytes(&self.signature);
    }

    /// Reads the envelope from `r` (all of it: trailing bytes are an
    /// error), and decodes the message it carries.
    ///
    /// # Errors
    ///
    /// [`KeyhiveError`] with the field and its absolute offset.
    pub fn read_from(mut r: Reader<'_>) -> Result<Self, KeyhiveError> {
        let len_offset = r.offset();
        let len = u64::from_le_bytes(r.array::<8>("keyhive signed payload length")?);
        let payload = r.shared_u64("keyhive signed payload", len)?;
        let key_len_offset = r.offset();
        let key_len = u64::from_le_bytes(r.array::<8>("keyhive issuer length")?);
        if key_len != 32 {
            return Err(KeyhiveError::WrongLength {
                field: "keyhive issuer",
                offset: key_len_offset,
                len: usize::try_from(key_len).unwrap_or(usize::MAX),
                expected: 32,
            });
        }
        let issuer = PeerId::from_bytes(r.array::<32>("keyhive issuer")?);
        let signature = r.array::<64>("keyhive signature")?;
        r.finish()?;
        let message = KeyhiveMessage::from_cbor(&payload, len_offset + 8)?;
        Ok(Self {
            message,
            payload,
            issuer,
            signature,
        })
    }

    /// Checks the signature (`verify_strict`), that the signer is
    /// `expected` (the peer the handshake authenticated), and that the
    /// message's `sender_id` is the signer.
    ///
    /// # Errors
    ///
    /// [`KeyhiveError::WrongSigner`], [`KeyhiveError::Signature`],
    /// [`KeyhiveError::SenderMismatch`].
    pub fn verify(&self, expected: PeerId) -> Result<(), KeyhiveError> {
        let issuer = self.issuer;
        if issuer != expected {
            return Err(KeyhiveError::WrongSigner { issuer, expected });
        }
        let key = issuer
            .verifying_key()
            .map_err(|_| KeyhiveError::Signature {
                issuer,
                source: bijou_signing::VerifyError::InvalidIssuer { issuer },
            })?;
        let mut signed = Vec::with_capacity(8 + self.payload.len());
        signed.extend_from_slice(&(self.payload.len() as u64).to_le_bytes());
        signed.extend_from_slice(&self.payload);
        strict::verify(&key, &signed, &Signature::from_bytes(&self.signature))
            .map_err(|source| KeyhiveError::Signature { issuer, source })?;
        let sender = self.message.sender().key;
        if sender != issuer {
            return Err(KeyhiveError::SenderMismatch { sender, issuer });
        }
        Ok(())
    }
}
