//! The Subduction-style mutual handshake (`SUH\0`), sans-IO.
//!
//! ```text
//!   initiator (client)                                   responder (server)
//!   ------------------                                   ------------------
//!   max message = 256 B                                  max message = 256 B
//!   nonce <- 16 random bytes
//!   Challenge{audience, now, nonce}, signed
//!        |---------------- Challenge (158 B) ------------------>|
//!        |                                   1. verify_strict(signature)      -> InvalidSignature
//!        |                                   2. audience is me / my service   -> InvalidAudience
//!        |                                   3. |timestamp - now| <= max drift -> ClockDrift
//!        |                                   4. (issuer, nonce) not seen       -> ReplayedNonce
//!        |                                      (remembered until timestamp + max drift)
//!        |<--------------- Response (141 B) --------------------|  signed {BLAKE3(challenge), now}
//!        |         or      Rejection (14 B) {reason, now} ------|  and the responder closes
//!   5. verify_strict(response signature)
//!   6. response issuer == audience (if Known)
//!   7. response digest == BLAKE3(my challenge)
//!   max message = configured (50 MiB default)            max message = configured
//!        |<=============== signed sync messages ===============>|
//! ```
//!
//! The two sides are plain state machines with no I/O and no clock of
//! their own, like quinn-proto under quinn: messages, the time and the
//! nonce go in; the message to send and the outcome come out.
//!
//! - [`Initiator::new`] signs the challenge ([`Initiator::challenge`]);
//!   [`Initiator::receive`] checks the reply (steps 5-7).
//! - [`Responder::answer`] checks a challenge (steps 1-4, also reachable
//!   alone as [`Responder::check_challenge`]) and gives the reply to send:
//!   a signed response or a rejection.
//!
//! `bijou-net`'s `handshake::initiate` and `handshake::respond` drive them
//! over any transport, with a timeout; its `Connection::connect` and
//! `Connection::accept` use those.
//!
//! Until the handshake completes, each side accepts messages of at most
//! [`HANDSHAKE_MAX_MESSAGE_LENGTH`] bytes (a challenge is 158), on every
//! transport: the drivers lower the transport's limit, and the state
//! machines check it again. An unauthenticated peer cannot make us buffer
//! megabytes. Afterwards the configured maximum applies. The drivers bound
//! the whole exchange by their own timeout (`bijou-net`'s `ConnectConfig`).
//!
//! Replay protection: the responder remembers every accepted
//! `(issuer, nonce)` in a [`NonceCache`](crate::nonce_cache::NonceCache) shared by all its connections, until
//! the challenge's timestamp plus the maximum drift, which is the whole window in which a recorded
//! challenge would still pass the drift check (see [`nonce_cache`](crate::nonce_cache)).
//!
//! ```
//! use bijou_frame::proto::handshake::{HandshakeConfig, Initiator, Responder};
//! use bijou_frame::proto::message::Audience;
//! use bijou_frame::proto::time::Now;
//! use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity};
//!
//! let (alice, bob) = (SigningKey::from_bytes(&[1; 32]), SigningKey::from_bytes(&[2; 32]));
//! let responder = Responder::new(HandshakeConfig::default());
//! let now = Now::from_secs(1_700_000_000); // the driver reads its clock
//!
//! let initiator = Initiator::new(&alice, Audience::Known(bob.peer_id()), now, [7; 16])?;
//! let answer = responder.answer(&bob, initiator.challenge().clone(), now);
//! let at_bob = answer.outcome?;
//! let at_alice = initiator.receive(answer.reply.expect("a response"))?;
//! assert_eq!((at_bob.peer(), at_alice.peer()), (alice.peer_id(), bob.peer_id()));
//! assert_eq!(at_bob.challenge_digest(), at_alice.challenge_digest());
//!
//! // The same challenge again is a replay: refused, with a rejection to send.
//! let again = Initiator::new(&alice, Audience::Known(bob.peer_id()), now, [7; 16])?;
//! let answer = responder.answer(&bob, again.challenge().clone(), now);
//! assert!(answer.outcome.is_err());
//! assert!(answer.reply.is_some());
//! # Ok::<(), bijou_frame::proto::handshake::HandshakeError>(())
//! ```

use core::time::Duration;

use bijou_codec::Wire;
use bijou_signing::{Digest, PeerId, SealError, VerifyError};
use bytes::Bytes;

use crate::message::{
    Audience, Challenge, HandshakeMessage, Message, MessageError, RejectionReason,
};

mod initiator;
mod responder;

/// The largest message after the handshake by default: 50 MiB, as in
/// Subduction (the same as the frame codec's default maximum).
pub const DEFAULT_MAX_MESSAGE_LENGTH: usize = 50 * 1024 * 1024;
pub use initiator::{Initiator, UnsignedChallenge};
pub use responder::{Answer, Answering, ChallengeError, Responder, UnsignedResponse};

/// Largest message either side accepts before the handshake completes. The
/// largest handshake message is a 158-byte challenge.
pub const HANDSHAKE_MAX_MESSAGE_LENGTH: usize = 256;

/// Default maximum clock difference between the peers: 600 s.
pub const DEFAULT_MAX_DRIFT: Duration = Duration::from_secs(600);

/// The handshake's protocol settings: what the state machines check. The
/// shell's (the handshake's timeout, the clock, the message length after
/// it) are `bijou-net`'s `ConnectConfig`.
///
/// ```
/// use bijou_frame::proto::handshake::HandshakeConfig;
/// use std::time::Duration;
///
/// let mut config = HandshakeConfig::default();
/// config.max_drift = Duration::from_secs(30);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandshakeConfig {
    /// Largest accepted difference between a challenge's timestamp and the
    /// responder's clock ([`DEFAULT_MAX_DRIFT`]).
    pub max_drift: Duration,
}

impl Default for HandshakeConfig {
    fn default() -> Self {
        Self {
            max_drift: DEFAULT_MAX_DRIFT,
        }
    }
}

/// Why the handshake state machines refused to go on: only what a message,
/// the time and the signer can cause (the transport's failures, a peer
/// that closes and timeouts are the driver's: see `bijou-net`'s
/// `ConnectError`). Every variant ends the connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// A message longer than [`HANDSHAKE_MAX_MESSAGE_LENGTH`] before the
    /// handshake completed.
    #[error(
        "handshake message of {len} bytes exceeds the pre-authentication maximum of {max} bytes"
    )]
    TooLarge {
        /// The message's length.
        len: u64,
        /// [`HANDSHAKE_MAX_MESSAGE_LENGTH`].
        max: usize,
    },
    /// A frame that is not a well-formed message.
    #[error("malformed handshake message: {0}")]
    Malformed(#[source] MessageError),
    /// A well-formed message of the wrong kind.
    #[error("expected a {expected}, received a {found}")]
    Unexpected {
        /// What the protocol step requires.
        expected: &'static str,
        /// What arrived.
        found: &'static str,
    },
    /// (Initiator) the responder refused our challenge.
    #[error("responder rejected the challenge: {reason:?} (we addressed {sent}; responder time {responder_time})")]
    Rejected {
        /// The responder's reason.
        reason: RejectionReason,
        /// The responder's clock, unix seconds.
        responder_time: u64,
        /// The audience our challenge was addressed to.
        sent: Audience,
    },
    /// (Responder) we refused the peer's challenge, and sent it a
    /// [`Rejection`](crate::message::Rejection) naming
    /// [`ChallengeError::reason`].
    #[error("refused the peer's challenge: {0}")]
    Refused(#[source] ChallengeError),
    /// (Initiator) the response's signature failed `verify_strict`.
    #[error("response signature invalid: {0}")]
    ResponseSignature(#[source] VerifyError),
    /// (Initiator) the response was signed by someone other than the peer
    /// the challenge was addressed to.
    #[error("response signed by {found}, but the challenge was for {expected}")]
    WrongResponder {
        /// The audience of our challenge.
        expected: PeerId,
        /// The response's issuer.
        found: PeerId,
    },
    /// (Initiator) the response names another challenge.
    #[error("response answers challenge {found}, but we sent {expected}")]
    ChallengeDigest {
        /// BLAKE3 of our challenge.
        expected: Digest<Challenge>,
        /// The digest in the response.
        found: Digest<Challenge>,
    },
    /// Our own message could not be sealed (the signer failed).
    #[error("could not sign the handshake message: {0}")]
    Seal(#[from] SealError),
    /// The signature a signer that answers later handed back does not
    /// verify over our message under our key: nothing was sent (see
    /// [`Initiator::unsigned`], [`Responder::answer_unsigned`]).
    #[error("the signer's signature over our handshake message does not verify: {0} (nothing was sent; check the signer holds the key it was asked for)")]
    OwnSignature(#[source] VerifyError),
}

/// The authenticated peer, as the handshake established it: a proof that
/// only a completed handshake ([`Initiator::receive`],
/// [`Responder::answer`]) can build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authenticated {
    peer: PeerId,
    challenge_digest: Digest<Challenge>,
    remote_time: u64,
}

impl Authenticated {
    pub(crate) fn new(peer: PeerId, challenge_digest: Digest<Challenge>, remote_time: u64) -> Self {
        Self {
            peer,
            challenge_digest,
            remote_time,
        }
    }

    /// The remote peer's id (its verifying key).
    #[must_use]
    pub fn peer(&self) -> PeerId {
        self.peer
    }

    /// The digest of the challenge both sides agreed on.
    #[must_use]
    pub fn challenge_digest(&self) -> Digest<Challenge> {
        self.challenge_digest
    }

    /// The remote peer's clock at the handshake, unix seconds.
    #[must_use]
    pub fn remote_time(&self) -> u64 {
        self.remote_time
    }
}

/// Decodes a received handshake message: at most
/// [`HANDSHAKE_MAX_MESSAGE_LENGTH`] bytes, well-formed, and a handshake
/// message.
fn decode_handshake(
    message: Bytes,
    waiting_for: &'static str,
) -> Result<HandshakeMessage, HandshakeError> {
    if message.len() > HANDSHAKE_MAX_MESSAGE_LENGTH {
        return Err(HandshakeError::TooLarge {
            len: message.len() as u64,
            max: HANDSHAKE_MAX_MESSAGE_LENGTH,
        });
    }
    match Message::decode(message).map_err(HandshakeError::Malformed)? {
        Message::Handshake(msg) => Ok(msg),
        other => Err(HandshakeError::Unexpected {
            expected: waiting_for,
            found: other.kind_name(),
        }),
    }
}
