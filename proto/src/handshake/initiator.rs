//! The initiator's side of the handshake, as a state machine.

use bijou_codec::Wire;
use bijou_signing::ed25519_dalek::{Signature, VerifyingKey};
use bijou_signing::{Digest, Identity, SealError, Signed, Unsigned};
use bytes::Bytes;

use super::{decode_handshake, Authenticated, HandshakeError};
use crate::message::{Audience, Challenge, HandshakeMessage, Rejection, Response};
use crate::time::Now;

/// The initiator (client) of a handshake, between sending its challenge
/// and receiving the reply. No I/O: the caller sends
/// [`Initiator::challenge`] and hands the reply to [`Initiator::receive`].
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
pub struct Initiator {
    audience: Audience,
    expected: Digest<Challenge>,
    challenge: Bytes,
}

impl Initiator {
    /// Signs a challenge for `audience` with `signer`, stamped `now` (its wall
    /// seconds) and carrying `nonce`, which must be fresh randomness: the
    /// responder refuses a nonce it has seen from the same issuer.
    ///
    /// # Errors
    ///
    /// [`HandshakeError::Seal`]: the signer failed.
    pub fn new<S: Identity + ?Sized>(
        signer: &S,
        audience: Audience,
        now: Now,
        nonce: [u8; 16],
    ) -> Result<Self, HandshakeError> {
        let (challenge, expected) = challenge_and_digest(audience, now, nonce)?;
        let signed = Signed::seal(signer, &challenge)?;
        let challenge = HandshakeMessage::Challenge(signed)
            .encode()
            .map_err(SealError::from)?;
        Ok(Self {
            audience,
            expected,
            challenge,
        })
    }

    /// [`Initiator::new`] for a signer that answers later (a remote or
    /// hardware signer, a non-extractable WebCrypto key): the challenge as
    /// `issuer`'s, waiting for its signature. Nothing is sent until
    /// [`UnsignedChallenge::sign`] has it.
    ///
    /// ```
    /// use bijou_frame::proto::handshake::Initiator;
    /// use bijou_frame::proto::message::Audience;
    /// use bijou_frame::proto::time::Now;
    /// use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity};
    ///
    /// let (key, server) = (SigningKey::from_bytes(&[1; 32]), SigningKey::from_bytes(&[2; 32]));
    /// let (audience, now) = (Audience::Known(server.peer_id()), Now::from_secs(1_700_000_000));
    /// let unsigned = Initiator::unsigned(key.verifying_key(), audience, now, [7; 16])?;
    /// let signature = key.sign_message(unsigned.message())?; // the signer's answer, later
    /// let initiator = unsigned.sign(&signature)?;
    /// // The same challenge an in-memory key makes.
    /// let direct = Initiator::new(&key, audience, now, [7; 16])?;
    /// assert_eq!(initiator.challenge(), direct.challenge());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`HandshakeError::Seal`] if the challenge cannot be encoded.
    pub fn unsigned(
        issuer: VerifyingKey,
        audience: Audience,
        now: Now,
        nonce: [u8; 16],
    ) -> Result<UnsignedChallenge, HandshakeError> {
        let (challenge, expected) = challenge_and_digest(audience, now, nonce)?;
        let unsigned = Signed::unsigned(issuer, &challenge).map_err(SealError::from)?;
        Ok(UnsignedChallenge {
            audience,
            expected,
            unsigned,
        })
    }

    /// The challenge message to send, as one whole message.
    #[must_use]
    pub fn challenge(&self) -> &Bytes {
        &self.challenge
    }

    /// The digest a valid response must name: BLAKE3 of our challenge.
    #[must_use]
    pub fn challenge_digest(&self) -> Digest<Challenge> {
        self.expected
    }

    /// Checks the responder's reply (steps 5-7 in the
    /// [module docs](super)): a response signed (`verify_strict`) by the
    /// audience, naming our challenge.
    ///
    /// # Errors
    ///
    /// [`HandshakeError::Rejected`] for a rejection; otherwise the check
    /// that failed.
    pub fn receive(self, reply: Bytes) -> Result<Authenticated, HandshakeError> {
        let expected = self.expected;
        match decode_handshake(reply, "response")? {
            HandshakeMessage::Response(response) => {
                let response = response
                    .verify_strict()
                    .map_err(HandshakeError::ResponseSignature)?;
                if let Audience::Known(peer) = self.audience {
                    if response.peer_id() != peer {
                        return Err(HandshakeError::WrongResponder {
                            expected: peer,
                            found: response.peer_id(),
                        });
                    }
                }
                let found = response.payload().challenge_digest();
                if found != expected {
                    return Err(HandshakeError::ChallengeDigest { expected, found });
                }
                Ok(Authenticated::new(
                    response.peer_id(),
                    expected,
                    response.payload().server_timestamp,
                ))
            }
            HandshakeMessage::Rejection(Rejection { reason, timestamp }) => {
                Err(HandshakeError::Rejected {
                    reason,
                    responder_time: timestamp,
                    sent: self.audience,
                })
            }
            HandshakeMessage::Challenge(_) => Err(HandshakeError::Unexpected {
                expected: "response",
                found: "challenge",
            }),
        }
    }
}

/// The challenge for `audience` stamped `now`, and the digest a valid
/// response must name: what both ways of signing it start from.
fn challenge_and_digest(
    audience: Audience,
    now: Now,
    nonce: [u8; 16],
) -> Result<(Challenge, Digest<Challenge>), HandshakeError> {
    let challenge = Challenge::new(audience, now.unix_secs, nonce);
    let expected = Response::for_challenge(&challenge, 0)
        .map_err(SealError::from)?
        .challenge_digest();
    Ok((challenge, expected))
}

/// An initiator's challenge waiting for the signature of a signer that
/// answers later ([`Initiator::unsigned`]).
#[derive(Debug, Clone)]
pub struct UnsignedChallenge {
    audience: Audience,
    expected: Digest<Challenge>,
    unsigned: Unsigned<Challenge>,
}

impl UnsignedChallenge {
    /// The bytes the signer must sign.
    #[must_use]
    pub fn message(&self) -> &[u8] {
        self.unsigned.message()
    }

    /// The initiator, once the signer answered with `signature`.
    ///
    /// # Errors
    ///
    /// [`HandshakeError::OwnSignature`] if `signature` does not verify
    /// over [`UnsignedChallenge::message`] under the issuer's key.
    pub fn sign(self, signature: &Signature) -> Result<Initiator, HandshakeError> {
        let signed = self
            .unsigned
            .sign(signature)
            .map_err(HandshakeError::OwnSignature)?;
        let challenge = HandshakeMessage::Challenge(signed)
            .encode()
            .map_err(SealError::from)?;
        Ok(Initiator {
            audience: self.audience,
            expected: self.expected,
            challenge,
        })
    }
}
