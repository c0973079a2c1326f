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
//! [`initiate`] and [`respond`] drive them over any
//! [`Transport`]; [`Connection::connect`] and
//! [`Connection::accept`] use those.
//!
//! Until the handshake completes, each side accepts messages of at most
//! [`HANDSHAKE_MAX_MESSAGE_LENGTH`] bytes (a challenge is 158), on every
//! transport: the drivers lower the transport's limit, and the state
//! machines check it again. An unauthenticated peer cannot make us buffer
//! megabytes. Afterwards the configured maximum applies. The drivers bound
//! the whole exchange by [`HandshakeConfig::timeout`].
//!
//! Replay protection: the responder remembers every accepted
//! `(issuer, nonce)` in a [`NonceCache`] shared by all its connections, until
//! the challenge's timestamp plus the maximum drift, which is the whole window in which a recorded
//! challenge would still pass the drift check (see [`nonce_cache`]).
//!
//! ```
//! use bijou_framing::handshake::{HandshakeConfig, Initiator, Responder};
//! use bijou_framing::message::Audience;
//! use bijou_signing::{ed25519_dalek::SigningKey, Identity};
//!
//! let (alice, bob) = (SigningKey::from_bytes(&[1; 32]), SigningKey::from_bytes(&[2; 32]));
//! let responder = Responder::new(HandshakeConfig::default());
//! let now = 1_700_000_000;
//!
//! let initiator = Initiator::new(&alice, Audience::Known(bob.peer_id()), now, [7; 16])?;
//! let answer = responder.answer(&bob, initiator.challenge().clone(), now);
//! let at_bob = answer.outcome?;
//! let at_alice = initiator.receive(answer.reply.expect("a response"))?;
//! assert_eq!((at_bob.peer, at_alice.peer), (alice.peer_id(), bob.peer_id()));
//! assert_eq!(at_bob.challenge_digest, at_alice.challenge_digest);
//!
//! // The same challenge again is a replay: refused, with a rejection to send.
//! let again = Initiator::new(&alice, Audience::Known(bob.peer_id()), now, [7; 16])?;
//! let answer = responder.answer(&bob, again.challenge().clone(), now);
//! assert!(answer.outcome.is_err());
//! assert!(answer.reply.is_some());
//! # Ok::<(), bijou_framing::HandshakeError>(())
//! ```
//!
//! [`Connection::connect`]: crate::Connection::connect
//! [`Connection::accept`]: crate::Connection::accept

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bijou_codec::Wire;
use bijou_signing::{Digest, Identity, PeerId, SealError, VerifyError};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};

use crate::message::{
    Audience, Challenge, HandshakeMessage, Message, MessageError, RejectionReason,
};
use crate::transport::{Transport, TransportError};
use crate::DEFAULT_MAX_FRAME_LENGTH;

mod initiator;
mod responder;

pub use crate::nonce_cache::{self, NonceCache, NonceCheck, DEFAULT_NONCE_CAPACITY};
pub use initiator::Initiator;
pub use responder::{Answer, Refusal, Responder};

/// Largest message either side accepts before the handshake completes. The
/// largest handshake message is a 158-byte challenge.
pub const HANDSHAKE_MAX_MESSAGE_LENGTH: usize = 256;

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
/// config.max_message_length = 1 << 20;
/// assert_eq!(config.timeout, Duration::from_secs(10));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HandshakeConfig {
    /// Largest accepted difference between a challenge's timestamp and the
    /// responder's clock ([`DEFAULT_MAX_DRIFT`]).
    pub max_drift: Duration,
    /// Maximum message length after the handshake
    /// ([`DEFAULT_MAX_FRAME_LENGTH`], 50 MiB, as in Subduction).
    pub max_message_length: usize,
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
            max_message_length: DEFAULT_MAX_FRAME_LENGTH,
            timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            clock: Clock::system(),
        }
    }
}

/// Why a handshake failed. Every variant ends the connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// The transport failed (I/O, a malformed frame, a WebSocket text
    /// message, ...).
    #[error("transport failed during the handshake: {0}")]
    Transport(#[source] TransportError),
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

impl From<TransportError> for HandshakeError {
    /// A message over the pre-authentication limit is
    /// [`HandshakeError::TooLarge`] on every transport.
    fn from(err: TransportError) -> Self {
        match err {
            TransportError::TooLarge { len, max } => Self::TooLarge { len, max },
            other => Self::Transport(other),
        }
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

async fn next_message<T: Transport>(
    transport: &mut T,
    waiting_for: &'static str,
) -> Result<Bytes, HandshakeError> {
    match transport.next().await {
        None => Err(HandshakeError::Closed { waiting_for }),
        Some(message) => Ok(message?),
    }
}

async fn bounded<F, R>(timeout: Duration, fut: F) -> Result<R, HandshakeError>
where
    F: std::future::Future<Output = Result<R, HandshakeError>>,
{
    tokio::time::timeout(timeout, fut)
        .await
        .unwrap_or(Err(HandshakeError::Timeout { after: timeout }))
}

/// Drives an [`Initiator`] over `transport`: sends a challenge for
/// `audience` signed by `signer` (time from `config.clock`, a fresh random
/// nonce), and checks the reply. The transport's maximum message length is
/// [`HANDSHAKE_MAX_MESSAGE_LENGTH`] meanwhile, and
/// `config.max_message_length` after a success.
///
/// # Errors
///
/// [`HandshakeError`]; a refusal is [`HandshakeError::Rejected`].
pub async fn initiate<T, S>(
    transport: &mut T,
    signer: &S,
    audience: Audience,
    config: &HandshakeConfig,
) -> Result<Authenticated, HandshakeError>
where
    T: Transport,
    S: Identity + ?Sized,
{
    transport.set_max_message_length(HANDSHAKE_MAX_MESSAGE_LENGTH);
    let initiator = Initiator::new(signer, audience, config.clock.now(), rand::random())?;
    let authenticated = bounded(config.timeout, async {
        transport.send(initiator.challenge().clone()).await?;
        let reply = next_message(transport, "response").await?;
        initiator.receive(reply)
    })
    .await?;
    transport.set_max_message_length(config.max_message_length);
    Ok(authenticated)
}

/// Drives the [`Responder`] over `transport`: receives a challenge,
/// answers it ([`Responder::answer`]) with `signer`, and sends the reply.
/// The transport's maximum message length is
/// [`HANDSHAKE_MAX_MESSAGE_LENGTH`] meanwhile, and the responder's
/// `max_message_length` after a success.
///
/// # Errors
///
/// [`HandshakeError`]; a challenge we refused is
/// [`HandshakeError::Refused`] (the rejection was sent).
pub async fn respond<T, S>(
    transport: &mut T,
    signer: &S,
    responder: &Responder,
) -> Result<Authenticated, HandshakeError>
where
    T: Transport,
    S: Identity + ?Sized,
{
    transport.set_max_message_length(HANDSHAKE_MAX_MESSAGE_LENGTH);
    let config = responder.config();
    let authenticated = bounded(config.timeout, async {
        let challenge = next_message(transport, "challenge").await?;
        let answer = responder.answer(signer, challenge, config.clock.now());
        if let Some(reply) = answer.reply {
            transport.send(reply).await?;
        }
        answer.outcome
    })
    .await?;
    transport.set_max_message_length(config.max_message_length);
    Ok(authenticated)
}
