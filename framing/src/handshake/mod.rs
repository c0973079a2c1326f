//! The Subduction-style mutual handshake (`SUH\0`) over a framed stream.
//!
//! ```text
//!   initiator (client)                                   responder (server)
//!   ------------------                                   ------------------
//!   max frame = 256 B                                    max frame = 256 B
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
//!   max frame = configured (50 MiB default)              max frame = configured
//!        |<=============== signed sync messages ===============>|
//! ```
//!
//! Until the handshake completes, each side accepts frames of at most
//! [`HANDSHAKE_MAX_FRAME_LENGTH`] bytes (a challenge is 158): an
//! unauthenticated peer cannot make us buffer megabytes. Afterwards the
//! configured maximum applies. The whole exchange is bounded by
//! [`HandshakeConfig::timeout`].
//!
//! Replay protection: the responder remembers every accepted
//! `(issuer, nonce)` in a [`NonceCache`] shared by all its connections, until
//! the challenge's timestamp plus the maximum drift, which is the whole window in which a recorded
//! challenge would still pass the drift check (see [`nonce_cache`]).
//!
//! Use the handshake through [`Connection::connect`] and
//! [`Connection::accept`](crate::Connection::accept).
//!
//! [`Connection::connect`]: crate::Connection::connect

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bijou_signing::{Digest, Identity, PeerId, SealError, Signed, Verified, VerifyError};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::message::{
    Audience, Challenge, HandshakeMessage, Message, MessageError, Rejection, RejectionReason,
    Response,
};
use crate::{
    framed_io::FramedIo, prefix::LengthPrefix, FrameError, SendError, DEFAULT_MAX_FRAME_LENGTH,
};

pub mod nonce_cache;

pub use nonce_cache::{NonceCache, NonceCheck, DEFAULT_NONCE_CAPACITY};

/// Largest frame either side accepts before the handshake completes. The
/// largest handshake message is a 158-byte challenge.
pub const HANDSHAKE_MAX_FRAME_LENGTH: usize = 256;

/// Default maximum clock difference between the peers: 600 s.
pub const DEFAULT_MAX_DRIFT: Duration = Duration::from_secs(600);

/// Default bound on the whole handshake: 10 s.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The system clock in unix seconds (0 if it is before 1970).
#[must_use]
pub fn system_clock() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Where the handshake reads the time, in unix seconds: the system clock by
/// default, or any function, so each responder, connection or test can
/// have its own time (no global to fake, so tests with different clocks
/// run in parallel).
///
/// ```
/// use bijou_framing::handshake::Clock;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
///
/// assert_eq!(Clock::fixed(1_700_000_000).now(), 1_700_000_000);
/// let time = Arc::new(AtomicU64::new(5));
/// let clock = Clock::from_fn({
///     let time = time.clone();
///     move || time.load(Ordering::Relaxed)
/// });
/// time.store(6, Ordering::Relaxed);
/// assert_eq!(clock.now(), 6);
/// ```
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> u64 + Send + Sync>);

impl Clock {
    /// The system clock ([`system_clock`]).
    #[must_use]
    pub fn system() -> Self {
        Self::from_fn(system_clock)
    }

    /// A clock that always reads `unix_secs`.
    #[must_use]
    pub fn fixed(unix_secs: u64) -> Self {
        Self::from_fn(move || unix_secs)
    }

    /// A clock reading `now()` from `f`.
    pub fn from_fn(f: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// The time, unix seconds.
    #[must_use]
    pub fn now(&self) -> u64 {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock(now = {})", self.now())
    }
}

/// Settings shared by both sides of the handshake.
///
/// ```
/// use bijou_framing::handshake::HandshakeConfig;
/// use std::time::Duration;
///
/// let mut config = HandshakeConfig::default();
/// config.max_drift = Duration::from_secs(30);
/// config.max_frame_length = 1 << 20;
/// assert_eq!(config.timeout, Duration::from_secs(10));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HandshakeConfig {
    /// Largest accepted difference between a challenge's timestamp and the
    /// responder's clock ([`DEFAULT_MAX_DRIFT`]).
    pub max_drift: Duration,
    /// Maximum frame length after the handshake
    /// ([`DEFAULT_MAX_FRAME_LENGTH`]).
    pub max_frame_length: usize,
    /// Bound on the whole handshake ([`DEFAULT_HANDSHAKE_TIMEOUT`]).
    pub timeout: Duration,
    /// The clock, unix seconds ([`Clock::system`]); give each responder or
    /// connection its own in tests.
    pub clock: Clock,
}

impl Default for HandshakeConfig {
    fn default() -> Self {
        Self {
            max_drift: DEFAULT_MAX_DRIFT,
            max_frame_length: DEFAULT_MAX_FRAME_LENGTH,
            timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            clock: Clock::system(),
        }
    }
}

/// Why a handshake failed. Every variant ends the connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// Framing or transport failure, including a handshake frame longer
    /// than [`HANDSHAKE_MAX_FRAME_LENGTH`] ([`FrameError::TooLarge`]).
    #[error("handshake framing failed: {0}")]
    Frame(#[from] FrameError),
    /// The peer closed the stream before the handshake completed.
    #[error("peer closed the stream during the handshake (waiting for {waiting_for})")]
    Closed {
        /// The message we were waiting for.
        waiting_for: &'static str,
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
    #[error("responder rejected the challenge: {reason:?} (responder time {responder_time})")]
    Rejected {
        /// The responder's reason.
        reason: RejectionReason,
        /// The responder's clock, unix seconds.
        responder_time: u64,
    },
    /// (Responder) we refused the peer's challenge and told it why.
    #[error("refused the peer's challenge: {reason:?}")]
    Refused {
        /// The reason sent to the peer.
        reason: RejectionReason,
        /// The signature failure, for [`RejectionReason::InvalidSignature`].
        signature: Option<VerifyError>,
    },
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
    /// The handshake did not complete in time.
    #[error("handshake timed out after {after:?}")]
    Timeout {
        /// The configured bound.
        after: Duration,
    },
}

/// The authenticated peer, as the handshake established it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authenticated {
    /// The remote peer's id (its verifying key).
    pub peer: PeerId,
    /// The digest of the challenge both sides agreed on.
    pub challenge_digest: Digest<Challenge>,
    /// The remote peer's clock at the handshake, unix seconds.
    pub remote_time: u64,
}

/// Why the responder refused a challenge: the reason it sends back, and
/// the signature failure behind [`RejectionReason::InvalidSignature`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The reason sent to the peer.
    pub reason: RejectionReason,
    /// The signature failure, for [`RejectionReason::InvalidSignature`].
    pub signature: Option<VerifyError>,
}

impl Refusal {
    const fn because(reason: RejectionReason) -> Self {
        Self {
            reason,
            signature: None,
        }
    }
}

/// The accepting side's state: configuration, identity checks and the
/// replay cache, shared by every connection it accepts (clones share the
/// cache).
///
/// ```
/// use bijou_framing::handshake::{HandshakeConfig, Responder};
/// let responder = Responder::new(HandshakeConfig::default()).with_discovery_id([7; 32]);
/// assert_eq!(responder.max_drift_secs(), 600);
/// ```
#[derive(Debug, Clone)]
pub struct Responder {
    config: HandshakeConfig,
    discovery_id: Option<[u8; 32]>,
    nonces: Arc<Mutex<NonceCache>>,
}

impl Responder {
    /// A responder that accepts challenges addressed to its own key, with a
    /// nonce cache of [`DEFAULT_NONCE_CAPACITY`] entries.
    #[must_use]
    pub fn new(config: HandshakeConfig) -> Self {
        Self::with_nonce_capacity(config, DEFAULT_NONCE_CAPACITY)
    }

    /// Like [`Responder::new`] with a nonce cache of `capacity` entries
    /// (see [`nonce_cache`] for how to size it against a flood).
    #[must_use]
    pub fn with_nonce_capacity(config: HandshakeConfig, capacity: usize) -> Self {
        let cache = NonceCache::new(config.max_drift, capacity);
        Self {
            config,
            discovery_id: None,
            nonces: Arc::new(Mutex::new(cache)),
        }
    }

    /// Also accept challenges addressed to this discovery id
    /// ([`Audience::Discover`]).
    #[must_use]
    pub fn with_discovery_id(mut self, id: [u8; 32]) -> Self {
        self.discovery_id = Some(id);
        self
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
        self.with_cache(|cache| cache.max_drift_secs())
    }

    /// The replay cache's current size and floor (see
    /// [`NonceCache::floor`]).
    #[must_use]
    pub fn nonce_cache_state(&self) -> (usize, Option<u64>) {
        self.with_cache(|cache| (cache.len(), cache.floor()))
    }

    fn with_cache<R>(&self, f: impl FnOnce(&mut NonceCache) -> R) -> R {
        // A poisoned lock only means another task panicked mid-update; the
        // cache's invariants hold between statements, so keep using it.
        let mut guard = self
            .nonces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut guard)
    }

    /// The responder's checks (steps 1-4 in the [module docs](self)), in
    /// order, on a challenge received at `now` (unix seconds) by the peer
    /// `me`: `verify_strict`, audience, drift, then the nonce, which is
    /// remembered only if every other check passed. Without I/O, so a
    /// driver over any transport (or a test) calls it directly.
    ///
    /// # Errors
    ///
    /// The [`Refusal`] to send back.
    pub fn check_challenge(
        &self,
        me: PeerId,
        challenge: &Signed<Challenge>,
        now: u64,
    ) -> Result<Verified<Challenge>, Refusal> {
        let verified = challenge.verify_strict().map_err(|e| Refusal {
            reason: RejectionReason::InvalidSignature,
            signature: Some(e),
        })?;
        let payload = verified.payload();
        let audience_ok = match payload.audience {
            Audience::Known(peer) => peer == me,
            Audience::Discover(id) => self.discovery_id == Some(id),
        };
        if !audience_ok {
            return Err(Refusal::because(RejectionReason::InvalidAudience));
        }
        // The drift check is the cache's (`OutsideWindow`): it judges the
        // same window its retention covers, before remembering anything.
        let (issuer, nonce, ts) = (verified.peer_id(), payload.nonce, payload.timestamp);
        match self.with_cache(|cache| cache.check_and_insert(issuer, nonce, ts, now)) {
            NonceCheck::Fresh => Ok(verified),
            NonceCheck::Replayed | NonceCheck::PossibleReplay => {
                Err(Refusal::because(RejectionReason::ReplayedNonce))
            }
            // Refused before anything is remembered: the peer's clock is too
            // far from ours (for `FutureUnderLoad`: too far ahead, for now).
            NonceCheck::OutsideWindow | NonceCheck::FutureUnderLoad => {
                Err(Refusal::because(RejectionReason::ClockDrift))
            }
        }
    }
}

async fn next_message<T, P>(
    framed: &mut FramedIo<T, P>,
    waiting_for: &'static str,
) -> Result<HandshakeMessage, HandshakeError>
where
    T: AsyncRead + AsyncWrite + Unpin,
    P: LengthPrefix,
{
    let frame = match framed.next().await {
        None => return Err(HandshakeError::Closed { waiting_for }),
        Some(frame) => frame?,
    };
    match frame.message.map_err(HandshakeError::Malformed)? {
        Message::Handshake(msg) => Ok(msg),
        other => Err(HandshakeError::Unexpected {
            expected: waiting_for,
            found: other.kind_name(),
        }),
    }
}

async fn send<T, P>(
    framed: &mut FramedIo<T, P>,
    msg: HandshakeMessage,
) -> Result<(), HandshakeError>
where
    T: AsyncRead + AsyncWrite + Unpin,
    P: LengthPrefix,
{
    framed
        .send(Message::Handshake(msg))
        .await
        .map_err(|e| match e {
            SendError::Frame(e) => HandshakeError::Frame(e),
            SendError::Encode(e) => HandshakeError::Seal(SealError::Encode(e)),
        })
}

async fn bounded<F, R>(timeout: Duration, fut: F) -> Result<R, HandshakeError>
where
    F: std::future::Future<Output = Result<R, HandshakeError>>,
{
    tokio::time::timeout(timeout, fut)
        .await
        .unwrap_or(Err(HandshakeError::Timeout { after: timeout }))
}

/// Runs the initiator's side on `framed`: sends a challenge for `audience`
/// signed by `signer`, and checks the response (steps 5-7 in the
/// [module docs](self)). On success the frame limit is raised to
/// `config.max_frame_length`.
///
/// # Errors
///
/// [`HandshakeError`]; a refusal is [`HandshakeError::Rejected`].
pub async fn initiate<T, P, S>(
    framed: &mut FramedIo<T, P>,
    signer: &S,
    audience: Audience,
    config: &HandshakeConfig,
) -> Result<Authenticated, HandshakeError>
where
    T: AsyncRead + AsyncWrite + Unpin,
    P: LengthPrefix,
    S: Identity + ?Sized,
{
    framed
        .codec_mut()
        .set_max_frame_length(HANDSHAKE_MAX_FRAME_LENGTH);
    let nonce: [u8; 16] = rand::random();
    let challenge = Challenge::new(audience, config.clock.now(), nonce);
    let expected = Response::for_challenge(&challenge, 0)
        .map_err(SealError::from)?
        .challenge_digest();
    let signed = Signed::seal(signer, &challenge)?;
    let authenticated = bounded(config.timeout, async {
        send(framed, HandshakeMessage::Challenge(signed)).await?;
        match next_message(framed, "response").await? {
            HandshakeMessage::Response(response) => {
                let response = response
                    .verify_strict()
                    .map_err(HandshakeError::ResponseSignature)?;
                if let Audience::Known(expected) = audience {
                    if response.peer_id() != expected {
                        return Err(HandshakeError::WrongResponder {
                            expected,
                            found: response.peer_id(),
                        });
                    }
                }
                let found = response.payload().challenge_digest();
                if found != expected {
                    return Err(HandshakeError::ChallengeDigest { expected, found });
                }
                Ok(Authenticated {
                    peer: response.peer_id(),
                    challenge_digest: expected,
                    remote_time: response.payload().server_timestamp,
                })
            }
            HandshakeMessage::Rejection(Rejection { reason, timestamp }) => {
                Err(HandshakeError::Rejected {
                    reason,
                    responder_time: timestamp,
                })
            }
            HandshakeMessage::Challenge(_) => Err(HandshakeError::Unexpected {
                expected: "response",
                found: "challenge",
            }),
        }
    })
    .await?;
    framed
        .codec_mut()
        .set_max_frame_length(config.max_frame_length);
    Ok(authenticated)
}

/// Runs the responder's side on `framed`: receives a challenge, checks it
/// (steps 1-4 in the [module docs](self)), and answers with a signed
/// response or a rejection. On success the frame limit is raised to the
/// responder's `max_frame_length`.
///
/// # Errors
///
/// [`HandshakeError`]; a challenge we refused is
/// [`HandshakeError::Refused`] (the rejection was sent).
pub async fn respond<T, P, S>(
    framed: &mut FramedIo<T, P>,
    signer: &S,
    responder: &Responder,
) -> Result<Authenticated, HandshakeError>
where
    T: AsyncRead + AsyncWrite + Unpin,
    P: LengthPrefix,
    S: Identity + ?Sized,
{
    framed
        .codec_mut()
        .set_max_frame_length(HANDSHAKE_MAX_FRAME_LENGTH);
    let config = responder.config();
    let me = signer.peer_id();
    let authenticated = bounded(config.timeout, async {
        let challenge = match next_message(framed, "challenge").await? {
            HandshakeMessage::Challenge(challenge) => challenge,
            HandshakeMessage::Response(_) => {
                return Err(HandshakeError::Unexpected {
                    expected: "challenge",
                    found: "response",
                })
            }
            HandshakeMessage::Rejection(_) => {
                return Err(HandshakeError::Unexpected {
                    expected: "challenge",
                    found: "rejection",
                })
            }
        };
        let now = config.clock.now();
        match responder.check_challenge(me, &challenge, now) {
            Ok(verified) => {
                let digest = verified.digest();
                let response = Response::new(digest, now);
                let signed = Signed::seal(signer, &response)?;
                send(framed, HandshakeMessage::Response(signed)).await?;
                Ok(Authenticated {
                    peer: verified.peer_id(),
                    challenge_digest: digest,
                    remote_time: verified.payload().timestamp,
                })
            }
            Err(Refusal { reason, signature }) => {
                let rejection = Rejection {
                    reason,
                    timestamp: now,
                };
                send(framed, HandshakeMessage::Rejection(rejection)).await?;
                Err(HandshakeError::Refused { reason, signature })
            }
        }
    })
    .await?;
    framed
        .codec_mut()
        .set_max_frame_length(config.max_frame_length);
    Ok(authenticated)
}
