//! The responder's side of the handshake: its checks, its replay cache,
//! and the answer to a challenge, without I/O.

use alloc::boxed::Box;
use alloc::sync::Arc;

use bijou_codec::Wire;
use bijou_signing::ed25519_dalek::{Signature, VerifyingKey};
use bijou_signing::{Identity, PeerId, SealError, Signed, Unsigned, Verified, VerifyError};
use bytes::Bytes;

use super::{decode_handshake, Authenticated, HandshakeConfig, HandshakeError};
use crate::message::{Audience, Challenge, HandshakeMessage, Rejection, RejectionReason, Response};
#[cfg(feature = "std")]
use crate::nonce_cache::DEFAULT_NONCE_CAPACITY;
use crate::nonce_cache::{NonceCache, NonceCheck};
use crate::time::Now;

/// Why the responder refused a challenge (steps 1-4 in the
/// [module docs](super)): what the challenge said against what we
/// expected. Each cause is answered with the [`RejectionReason`] of
/// [`ChallengeError::reason`]; the wire has four reasons, and the two
/// refusals of a replay cache under load share theirs with a replay and
/// with drift. Subduction's counterpart is `ChallengeValidationError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChallengeError {
    /// Step 1: the challenge's signature failed `verify_strict`.
    #[error("the challenge's signature is invalid: {0}")]
    InvalidSignature(#[source] VerifyError),
    /// Step 2: the challenge is for another peer or service.
    #[error("the challenge is addressed to {audience}, which is neither this responder ({me}) nor its service: the peer should address this key, or the service name the responder was given")]
    InvalidAudience {
        /// The audience the challenge named.
        audience: Audience,
        /// This responder's key.
        me: PeerId,
    },
    /// Step 3: the challenge's timestamp is further from our clock than
    /// the maximum drift.
    #[error("the challenge is stamped {timestamp} and this clock reads {now}: more than the {max_drift_secs} s apart the handshake allows; the two machines' clocks must agree")]
    ClockDrift {
        /// The challenge's timestamp, unix seconds.
        timestamp: u64,
        /// Our clock, unix seconds.
        now: u64,
        /// The largest difference accepted.
        max_drift_secs: u64,
    },
    /// Step 3, under load: stamped ahead of our clock while the replay
    /// cache is nearly full (see [`NonceCheck::FutureUnderLoad`]);
    /// answered as [`RejectionReason::ClockDrift`].
    #[error("the challenge is stamped {timestamp}, ahead of this clock ({now}), while the replay cache is nearly full (a flood of challenges): refused until the load passes; a peer whose clock is not ahead of ours still gets in")]
    AheadUnderLoad {
        /// The challenge's timestamp, unix seconds.
        timestamp: u64,
        /// Our clock, unix seconds.
        now: u64,
    },
    /// Step 4: this issuer's nonce is remembered: a recorded challenge
    /// sent again, or a nonce reused.
    #[error("the challenge repeats nonce {nonce:02x?} of {issuer}: a replay, or a nonce reused (each challenge needs fresh random bytes)")]
    ReplayedNonce {
        /// The challenge's issuer.
        issuer: PeerId,
        /// Its nonce.
        nonce: [u8; 16],
    },
    /// Step 4, under a flood: stamped at or before a second the replay
    /// cache had to forget, so it may replay a forgotten challenge (see
    /// [`NonceCheck::PossibleReplay`]); answered as
    /// [`RejectionReason::ReplayedNonce`].
    #[error("the challenge from {issuer} is stamped {timestamp}, a second the replay cache had to forget under a flood, so it may be a replay: a challenge stamped with the current time gets in")]
    PossibleReplay {
        /// The challenge's issuer.
        issuer: PeerId,
        /// The challenge's timestamp, unix seconds.
        timestamp: u64,
    },
}

impl ChallengeError {
    /// The reason sent to the peer in the [`Rejection`].
    ///
    /// ```
    /// use bijou_frame::proto::handshake::ChallengeError;
    /// use bijou_frame::proto::message::RejectionReason;
    ///
    /// let drift = ChallengeError::AheadUnderLoad { timestamp: 1_700_000_100, now: 1_700_000_000 };
    /// assert_eq!(drift.reason(), RejectionReason::ClockDrift);
    /// ```
    #[must_use]
    pub const fn reason(&self) -> RejectionReason {
        match self {
            Self::InvalidSignature(_) => RejectionReason::InvalidSignature,
            Self::InvalidAudience { .. } => RejectionReason::InvalidAudience,
            Self::ClockDrift { .. } | Self::AheadUnderLoad { .. } => RejectionReason::ClockDrift,
            Self::ReplayedNonce { .. } | Self::PossibleReplay { .. } => {
                RejectionReason::ReplayedNonce
            }
        }
    }
}

/// The accepting side's state: configuration, identity checks and the
/// replay cache, shared by every connection it accepts (clones share the
/// cache, whose shards lock separately, so concurrent accepts rarely wait
/// on each other).
///
/// ```
/// use bijou_frame::proto::handshake::{HandshakeConfig, Responder};
/// let responder = Responder::new(HandshakeConfig::default()).with_discovery_id([7; 32]);
/// assert_eq!(responder.max_drift_secs(), 600);
/// ```
#[derive(Debug, Clone)]
pub struct Responder {
    config: HandshakeConfig,
    discovery_id: Option<[u8; 32]>,
    nonces: Arc<NonceCache>,
}

impl Responder {
    /// A responder that accepts challenges addressed to its own key, with a
    /// nonce cache of [`DEFAULT_NONCE_CAPACITY`] entries keyed from the
    /// operating system.
    #[cfg(feature = "std")]
    #[must_use]
    pub fn new(config: HandshakeConfig) -> Self {
        Self::with_nonce_capacity(config, DEFAULT_NONCE_CAPACITY)
    }

    /// Like [`Responder::new`] with a nonce cache of `capacity` entries
    /// (see [`nonce_cache`](crate::nonce_cache) for how to size it against a flood).
    #[cfg(feature = "std")]
    #[must_use]
    pub fn with_nonce_capacity(config: HandshakeConfig, capacity: usize) -> Self {
        let cache = NonceCache::new(config.max_drift, capacity);
        Self::with_nonce_cache(config, Arc::new(cache))
    }

    /// A responder over a replay cache of the caller's (keyed from its own
    /// [`SeededRng`](crate::rng::SeededRng), or shared with other
    /// responders). The cache's drift is the one the replay check uses; make
    /// it with `config.max_drift`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bijou_frame::proto::handshake::{HandshakeConfig, Responder};
    /// use bijou_frame::proto::nonce_cache::NonceCache;
    /// use bijou_frame::proto::rng::SeededRng;
    ///
    /// let config = HandshakeConfig::default();
    /// let mut rng = SeededRng::from_seed([9; 32]);
    /// let cache = NonceCache::keyed(config.max_drift, 4_096, rng.bytes());
    /// let responder = Responder::with_nonce_cache(config, Arc::new(cache));
    /// assert_eq!(responder.max_drift_secs(), 600);
    /// ```
    #[must_use]
    pub fn with_nonce_cache(config: HandshakeConfig, cache: Arc<NonceCache>) -> Self {
        Self {
            config,
            discovery_id: None,
            nonces: cache,
        }
    }

    /// Also accept challenges addressed to this discovery id
    /// ([`Audience::Discover`]).
    #[must_use]
    pub fn with_discovery_id(mut self, id: [u8; 32]) -> Self {
        self.discovery_id = Some(id);
        self
    }

    /// Also accept challenges addressed to `service_name`
    /// ([`Audience::discover`]).
    #[must_use]
    pub fn with_service_name(self, service_name: &[u8]) -> Self {
        self.with_discovery_id(crate::message::discovery_id(service_name))
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &HandshakeConfig {
        &self.config
    }

    /// The drift the replay cache covers, in seconds: a nonce is kept until
    /// its challenge's timestamp plus this.
    #[must_use]
    pub fn max_drift_secs(&self) -> u64 {
        self.nonces.max_drift_secs()
    }

    /// The replay cache's current size and floor (see
    /// [`NonceCache::len`] and [`NonceCache::floor`]).
    #[must_use]
    pub fn nonce_cache_state(&self) -> (usize, Option<u64>) {
        (self.nonces.len(), self.nonces.floor())
    }

    /// The responder's checks (steps 1-4 in the [module docs](super)), in
    /// order, on a challenge received at `now` (its wall time) by the peer
    /// `me`: `verify_strict`, audience, drift, then the nonce, which is
    /// remembered only if every other check passed. Without I/O, so a
    /// driver over any transport (or a test) calls it directly.
    ///
    /// # Errors
    ///
    /// [`ChallengeError`]: why, and (its [`reason`](ChallengeError::reason))
    /// what to send back.
    pub fn check_challenge(
        &self,
        me: PeerId,
        challenge: &Signed<Challenge>,
        now: Now,
    ) -> Result<Verified<Challenge>, ChallengeError> {
        let verified = challenge
            .verify_strict()
            .map_err(ChallengeError::InvalidSignature)?;
        let payload = verified.payload();
        let audience_ok = match payload.audience {
            Audience::Known(peer) => peer == me,
            Audience::Discover(id) => self.discovery_id == Some(id),
        };
        if !audience_ok {
            return Err(ChallengeError::InvalidAudience {
                audience: payload.audience,
                me,
            });
        }
        // The drift check is the cache's (`OutsideWindow`): it judges the
        // same window its retention covers, before remembering anything.
        let (issuer, nonce, timestamp) = (verified.peer_id(), payload.nonce, payload.timestamp);
        let now = now.unix_secs;
        match self.nonces.check_and_insert(issuer, nonce, timestamp, now) {
            NonceCheck::Fresh => Ok(verified),
            NonceCheck::Replayed => Err(ChallengeError::ReplayedNonce { issuer, nonce }),
            NonceCheck::PossibleReplay => Err(ChallengeError::PossibleReplay { issuer, timestamp }),
            // Refused before anything is remembered: the peer's clock is too
            // far from ours (for `FutureUnderLoad`: too far ahead, for now).
            NonceCheck::OutsideWindow => Err(ChallengeError::ClockDrift {
                timestamp,
                now,
                max_drift_secs: self.nonces.max_drift_secs(),
            }),
            NonceCheck::FutureUnderLoad => Err(ChallengeError::AheadUnderLoad { timestamp, now }),
        }
    }
}

/// What the responder makes of a received message: the reply to send (if
/// any), and the handshake's outcome.
#[derive(Debug)]
#[must_use]
pub struct Answer {
    /// The message to send back: a signed response, or a rejection that
    /// names the reason. `None` when the message was not a challenge at all
    /// (nothing is owed to such a peer) or our signer failed.
    pub reply: Option<Bytes>,
    /// The authenticated peer, or why not. A refused challenge is
    /// [`HandshakeError::Refused`].
    pub outcome: Result<Authenticated, HandshakeError>,
}

impl Answer {
    fn silent(err: HandshakeError) -> Self {
        Self {
            reply: None,
            outcome: Err(err),
        }
    }
}

impl Responder {
    /// Answers `message`, received at `now` (its wall time) by `signer`:
    /// checks it is a challenge of at most
    /// [`HANDSHAKE_MAX_MESSAGE_LENGTH`](super::HANDSHAKE_MAX_MESSAGE_LENGTH)
    /// bytes, runs [`Responder::check_challenge`], and signs the response
    /// or builds the rejection. No I/O: the caller sends
    /// [`Answer::reply`].
    pub fn answer<S: Identity + ?Sized>(&self, signer: &S, message: Bytes, now: Now) -> Answer {
        match self.check(signer.peer_id(), message, now) {
            Checked::Answered(answer) => answer,
            Checked::Accepted {
                response,
                authenticated,
            } => {
                let sealed = Signed::seal(signer, &response).and_then(|signed| {
                    HandshakeMessage::Response(signed)
                        .encode()
                        .map_err(SealError::from)
                });
                match sealed {
                    Ok(reply) => Answer {
                        reply: Some(reply),
                        outcome: Ok(authenticated),
                    },
                    Err(e) => Answer::silent(HandshakeError::Seal(e)),
                }
            }
        }
    }

    /// [`Responder::answer`] for a signer that answers later: every check
    /// runs now (an accepted challenge's nonce is remembered now); a
    /// refusal is answered at once, an acceptance waits for the signature
    /// of its response ([`UnsignedResponse::sign`]).
    ///
    /// ```
    /// use bijou_frame::proto::handshake::{Answering, HandshakeConfig, Initiator, Responder};
    /// use bijou_frame::proto::message::Audience;
    /// use bijou_frame::proto::time::Now;
    /// use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity};
    ///
    /// let (client, server) = (SigningKey::from_bytes(&[1; 32]), SigningKey::from_bytes(&[2; 32]));
    /// let now = Now::from_secs(1_700_000_000);
    /// let initiator = Initiator::new(&client, Audience::Known(server.peer_id()), now, [7; 16])?;
    /// let responder = Responder::new(HandshakeConfig::default());
    /// let Answering::Sign(unsigned) =
    ///     responder.answer_unsigned(server.verifying_key(), initiator.challenge().clone(), now)
    /// else {
    ///     panic!("accepted");
    /// };
    /// let signature = server.sign_message(unsigned.message())?; // the signer's answer, later
    /// let answer = unsigned.sign(&signature);
    /// let at_client = initiator.receive(answer.reply.expect("a response"))?;
    /// assert_eq!(at_client.peer(), server.peer_id());
    /// assert_eq!(answer.outcome?.peer(), client.peer_id());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn answer_unsigned(&self, me: VerifyingKey, message: Bytes, now: Now) -> Answering {
        match self.check(PeerId::from(me), message, now) {
            Checked::Answered(answer) => Answering::Now(answer),
            Checked::Accepted {
                response,
                authenticated,
            } => match Signed::unsigned(me, &response) {
                Ok(unsigned) => Answering::Sign(Box::new(UnsignedResponse {
                    unsigned,
                    authenticated,
                })),
                Err(e) => Answering::Now(Answer::silent(HandshakeError::Seal(e.into()))),
            },
        }
    }

    /// Decodes and checks `message` for `me`: a refusal (or silence) to
    /// send, or the response to sign.
    fn check(&self, me: PeerId, message: Bytes, now: Now) -> Checked {
        let challenge = match decode_handshake(message, "challenge") {
            Ok(HandshakeMessage::Challenge(challenge)) => challenge,
            Ok(other) => {
                return Checked::Answered(Answer::silent(HandshakeError::Unexpected {
                    expected: "challenge",
                    found: other.kind_name(),
                }))
            }
            Err(e) => return Checked::Answered(Answer::silent(e)),
        };
        match self.check_challenge(me, &challenge, now) {
            Ok(verified) => {
                let digest = verified.digest();
                Checked::Accepted {
                    response: Response::new(digest, now.unix_secs),
                    authenticated: Authenticated::new(
                        verified.peer_id(),
                        digest,
                        verified.payload().timestamp,
                    ),
                }
            }
            Err(refused) => {
                let rejection = HandshakeMessage::Rejection(Rejection {
                    reason: refused.reason(),
                    timestamp: now.unix_secs,
                });
                Checked::Answered(Answer {
                    reply: rejection.encode().ok(),
                    outcome: Err(HandshakeError::Refused(refused)),
                })
            }
        }
    }
}

/// What [`Responder::check`] decided.
enum Checked {
    Answered(Answer),
    Accepted {
        response: Response,
        authenticated: Authenticated,
    },
}

/// What [`Responder::answer_unsigned`] made of a message.
#[derive(Debug)]
#[must_use]
pub enum Answering {
    /// Nothing to sign: a refusal to send, or silence.
    Now(Answer),
    /// Accepted: the response waits for the signer.
    Sign(Box<UnsignedResponse>),
}

/// An accepted challenge's response, waiting for the signature of a signer
/// that answers later.
#[derive(Debug)]
pub struct UnsignedResponse {
    unsigned: Unsigned<Response>,
    authenticated: Authenticated,
}

impl UnsignedResponse {
    /// The bytes the signer must sign.
    #[must_use]
    pub fn message(&self) -> &[u8] {
        self.unsigned.message()
    }

    /// The answer, once the signer answered with `signature`: the
    /// response to send and the authenticated peer, or (a signature that
    /// does not verify) [`HandshakeError::OwnSignature`] and nothing to
    /// send.
    pub fn sign(self, signature: &Signature) -> Answer {
        match self.unsigned.sign(signature) {
            Ok(signed) => match HandshakeMessage::Response(signed).encode() {
                Ok(reply) => Answer {
                    reply: Some(reply),
                    outcome: Ok(self.authenticated),
                },
                Err(e) => Answer::silent(HandshakeError::Seal(e.into())),
            },
            Err(e) => Answer::silent(HandshakeError::OwnSignature(e)),
        }
    }
}
