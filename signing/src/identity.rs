use ed25519_dalek::{Signature, SignatureError, SigningKey, VerifyingKey};

use crate::PeerId;

/// A source of Ed25519 signatures under one verifying key.
///
/// Implemented for [`ed25519_dalek::SigningKey`]; a hardware or remote
/// signer implements the same two methods. Signing is fallible so such a
/// signer can report failure instead of panicking. Neither the trait nor its
/// methods clash with [`ed25519_dalek::Signer`] (whose `try_sign` the same
/// key also has): both can be imported together and called unambiguously.
///
/// ```
/// use bijou_frame::signing::Identity;
/// use ed25519_dalek::{Signer, SigningKey, Verifier};
///
/// let key = SigningKey::from_bytes(&[1; 32]);
/// let signature = Identity::sign_message(&key, b"message")?;
/// assert_eq!(signature, key.sign(b"message")); // dalek's Signer, same key
/// assert_eq!(key.try_sign(b"message")?, key.sign_message(b"message")?); // no ambiguity
/// key.verifying_key().verify(b"message", &signature)?;
/// # Ok::<(), ed25519_dalek::SignatureError>(())
/// ```
pub trait Identity {
    /// The key signatures verify under; it becomes the issuer.
    fn verifying_key(&self) -> VerifyingKey;

    /// Signs `message` (pure Ed25519, RFC 8032; deterministic for
    /// [`SigningKey`]).
    ///
    /// # Errors
    ///
    /// [`SignatureError`] if the signer cannot sign.
    fn sign_message(&self, message: &[u8]) -> Result<Signature, SignatureError>;

    /// The signer's peer id (its verifying key bytes).
    fn peer_id(&self) -> PeerId {
        PeerId::from(self.verifying_key())
    }
}

impl Identity for SigningKey {
    fn verifying_key(&self) -> VerifyingKey {
        SigningKey::verifying_key(self)
    }

    fn sign_message(&self, message: &[u8]) -> Result<Signature, SignatureError> {
        Ok(ed25519_dalek::Signer::sign(self, message))
    }
}

impl<S: Identity + ?Sized> Identity for &S {
    fn verifying_key(&self) -> VerifyingKey {
        (**self).verifying_key()
    }

    fn sign_message(&self, message: &[u8]) -> Result<Signature, SignatureError> {
        (**self).sign_message(message)
    }
}
