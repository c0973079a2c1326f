//! The initiator's side of the handshake, as a state machine.

use bijou_codec::Wire;
use bijou_signing::{Digest, Identity, SealError, Signed};
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
        let challenge = Challenge::new(audience, now.unix_secs, nonce);
        let expected = Response::for_challenge(&challenge, 0)
            .map_err(SealError::from)?
            .challenge_digest();
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
