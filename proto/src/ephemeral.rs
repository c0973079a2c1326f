//! Ephemeral messaging on one connection, sans-IO: which topics each side
//! subscribed to, and the checks a received ephemeral message passes
//! before it is delivered. [`Session`](crate::session::Session) drives it
//! (and through it, `bijou-net`'s `Connection`); anything else (a relay, a
//! test) can too.
//!
//! A received `SUE\0` message (see [`EphemeralMessage`](crate::message::EphemeralMessage))
//! is checked in this order, cheapest first:
//!
//! ```text
//!   1. payload length <= max_payload (64 KiB)        -> TooLarge
//!   2. |timestamp - now| <= max_age (30 s)           -> Stale / Future
//!   3. topic is one we subscribed to                  -> NotSubscribed
//!   4. (issuer, nonce) not seen (read-only probe)     -> Duplicate / PossibleReplay / FutureUnderLoad
//!   5. verify_strict                                  -> Signature
//!   6. record (issuer, nonce), then deliver           -> (a race lost here is Duplicate)
//! ```
//!
//! Steps 1 to 4 read the message's unverified header and cost no
//! signature check; nothing is remembered before step 6, so a forged
//! message cannot fill the deduplication window.
//!
//! # Bounds: what a peer can make us store
//!
//! - **Deduplication window**: the connection's own, or, for a session
//!   made with a [`ReplayTable`](crate::replay_table::ReplayTable), its
//!   peer's, shared with the peer's other connections and sized by the
//!   table (see [`replay_table`](crate::replay_table) for its bound);
//!   below, the connection's own: a [`NonceCache`] (unsharded: one
//!   connection checks at a time) of at most
//!   [`EphemeralConfig::dedup_capacity`] entries (default
//!   [`DEFAULT_EPHEMERAL_DEDUP_CAPACITY`], 65,536), retained exactly as
//!   long as the age check lets a replay through (`2 x 30 + 1` seconds of
//!   timestamps), each check O(1) expected. Memory at most
//!   `1 KiB + 25 B x entries + 64 B x 61`: 1.6 MiB when full, nothing
//!   before the first message, under 1 KiB once drained. Only verified messages are
//!   recorded, so filling it costs the peer a valid signature per entry,
//!   paced by the verify budget (8,192 per second by default): across all
//!   connections the entries held are at most (verifications per second)
//!   x 61, whatever the number of connections.
//! - **No lockout**: a flood of validly signed messages from fresh keys
//!   cannot stop honest ones. When full, the oldest second is forgotten and
//!   later stamps at or before it are refused as possible replays, so a
//!   message stamped with the current time keeps getting in, unless more
//!   than an eighth of the capacity per second is stamped exactly "now"
//!   (see [`nonce_cache`](crate::nonce_cache)). The default capacity is 8
//!   times the default verify budget, so a peer cannot get there on one
//!   connection.
//! - **The peer's subscriptions**: at most
//!   [`EphemeralConfig::max_remote_topics`] topics (default 1,024, 32 KiB
//!   of topics); the rest of a Subscribe is reported as rejected, for a
//!   `SubscribeRejected` answer.
//! - **CPU**: one signature check per message that passes steps 1 to 4,
//!   paced by the connection's [`VerifyBudget`](crate::verify_budget::VerifyBudget).
//!
//! ```
//! use bijou_frame::proto::ephemeral::{EphemeralConfig, EphemeralRejected, EphemeralSession};
//! use bijou_frame::proto::message::{EphemeralPayload, SignedEphemeral, Topic, Topics};
//! use bijou_frame::proto::rng::SeededRng;
//! use bijou_frame::proto::time::Now;
//! use bijou_frame::signing::ed25519_dalek::SigningKey;
//!
//! let now = Now::from_secs(1_700_000_000); // the caller reads its clock
//! let mut session = EphemeralSession::new(EphemeralConfig::default(), SeededRng::from_seed([3; 32]));
//! let topic = Topic::new([7; 32]);
//! session.subscribe(&Topics::one(topic));
//!
//! let key = SigningKey::from_bytes(&[1; 32]);
//! let msg = SignedEphemeral::seal(&key, &EphemeralPayload::new(topic, 1, 1_700_000_000, &b"hi"[..]))?;
//! let verified = session.receive(&msg, now)?;
//! assert_eq!(verified.payload().payload().as_ref(), b"hi");
//! // The same message again is a duplicate, refused before verification.
//! assert!(matches!(session.receive(&msg, now), Err(EphemeralRejected::Duplicate { nonce: 1, .. })));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::sync::Arc;
use alloc::vec::Vec;

use alloc::collections::BTreeSet;
use core::ops::Deref;
use core::time::Duration;

use bijou_signing::{Identity, PeerId, SealError, Verified, VerifyError};

use crate::message::{EphemeralPayload, SignedEphemeral, Topic, Topics};
use crate::nonce_cache::{NonceCache, NonceCheck};
use crate::rng::SeededRng;
use crate::time::Now;

/// Largest ephemeral payload accepted or published by default: 64 KiB, as
/// in Subduction.
pub const MAX_EPHEMERAL_PAYLOAD: usize = 64 * 1024;

/// Oldest (and furthest in the future) an ephemeral message may be stamped
/// by default: 30 s, as in Subduction.
pub const MAX_EPHEMERAL_AGE: Duration = Duration::from_secs(30);

/// Default size of a connection's deduplication window, in entries.
pub const DEFAULT_EPHEMERAL_DEDUP_CAPACITY: usize = 1 << 16;

/// Default cap on the topics a peer may subscribe to on one connection.
pub const DEFAULT_MAX_REMOTE_TOPICS: usize = 1024;

/// The limits of a connection's ephemeral messaging.
///
/// ```
/// use bijou_frame::proto::ephemeral::EphemeralConfig;
/// use std::time::Duration;
///
/// let config = EphemeralConfig::default();
/// assert_eq!(config.max_payload, 64 * 1024);
/// assert_eq!(config.max_age, Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EphemeralConfig {
    /// Largest payload accepted or published ([`MAX_EPHEMERAL_PAYLOAD`]).
    pub max_payload: usize,
    /// Largest difference between a message's timestamp and our clock
    /// ([`MAX_EPHEMERAL_AGE`]); also how long a nonce is remembered.
    pub max_age: Duration,
    /// Entries in the deduplication window
    /// ([`DEFAULT_EPHEMERAL_DEDUP_CAPACITY`]).
    pub dedup_capacity: usize,
    /// Topics the peer may subscribe to ([`DEFAULT_MAX_REMOTE_TOPICS`]).
    pub max_remote_topics: usize,
}

impl Default for EphemeralConfig {
    fn default() -> Self {
        Self {
            max_payload: MAX_EPHEMERAL_PAYLOAD,
            max_age: MAX_EPHEMERAL_AGE,
            dedup_capacity: DEFAULT_EPHEMERAL_DEDUP_CAPACITY,
            max_remote_topics: DEFAULT_MAX_REMOTE_TOPICS,
        }
    }
}

/// Why a received ephemeral message was not delivered. The message is
/// dropped and the connection stays up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EphemeralRejected {
    /// The payload is larger than [`EphemeralConfig::max_payload`].
    #[error("ephemeral payload of {len} bytes exceeds the maximum of {max}")]
    TooLarge {
        /// The declared payload length.
        len: u64,
        /// The maximum.
        max: usize,
    },
    /// Stamped more than `max_age` before our clock.
    #[error("ephemeral message stamped {timestamp} is stale at {now} (max age {max_age_secs} s)")]
    Stale {
        /// The message's timestamp (unix seconds).
        timestamp: u64,
        /// Our clock.
        now: u64,
        /// The maximum age.
        max_age_secs: u64,
    },
    /// Stamped more than `max_age` after our clock.
    #[error("ephemeral message stamped {timestamp} is in the future at {now} (max skew {max_age_secs} s)")]
    Future {
        /// The message's timestamp (unix seconds).
        timestamp: u64,
        /// Our clock.
        now: u64,
        /// The maximum skew.
        max_age_secs: u64,
    },
    /// For a topic we did not subscribe to.
    #[error("ephemeral message for topic {topic}, which we did not subscribe to")]
    NotSubscribed {
        /// The topic.
        topic: Topic,
    },
    /// This issuer's nonce was already delivered within the window.
    #[error("duplicate ephemeral nonce {nonce:#x} from {issuer}")]
    Duplicate {
        /// The claimed issuer.
        issuer: PeerId,
        /// The nonce.
        nonce: u64,
    },
    /// Under a flood the window had to forget the second this message is
    /// stamped with, so it could be a replay: refused.
    #[error("ephemeral message from {issuer} stamped {timestamp} may replay a forgotten one")]
    PossibleReplay {
        /// The claimed issuer.
        issuer: PeerId,
        /// The message's timestamp.
        timestamp: u64,
    },
    /// Stamped ahead of our clock while the window is nearly full.
    #[error("ephemeral message from {issuer} stamped ahead of our clock while under load")]
    FutureUnderLoad {
        /// The claimed issuer.
        issuer: PeerId,
    },
    /// The signature failed the strict checks.
    #[error("ephemeral signature rejected: {0}")]
    Signature(#[source] VerifyError),
}

/// Why a message could not be published.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The payload is larger than [`EphemeralConfig::max_payload`].
    #[error("ephemeral payload of {len} bytes exceeds the maximum of {max}: send it in smaller parts (peers refuse more than their own maximum, 64 KiB by default)")]
    TooLarge {
        /// The payload length.
        len: usize,
        /// The maximum.
        max: usize,
    },
    /// The signer failed.
    #[error(transparent)]
    Seal(#[from] SealError),
    /// Too many publishes wait for the signer
    /// (`Session::publish`): answer the session's sign requests first.
    #[error("{waiting} publishes already wait for their signature (at most {max}): answer the session's sign requests, then publish again")]
    Backlog {
        /// How many wait.
        waiting: usize,
        /// The most that may.
        max: usize,
    },
    /// The session closed (`Session::publish`): connect again.
    #[error("the session is closed: nothing more is published on it; connect again")]
    Closed,
}

/// A peer's Subscribe, applied: the topics now recorded, and those refused
/// because the peer reached [`EphemeralConfig::max_remote_topics`] (answer
/// them with a `SubscribeRejected`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscribeOutcome {
    /// Topics recorded (including ones already recorded).
    pub accepted: Vec<Topic>,
    /// Topics refused, if any.
    pub rejected: Option<Topics>,
}

/// One connection's ephemeral state; see the [module docs](self).
#[derive(Debug)]
pub struct EphemeralSession {
    config: EphemeralConfig,
    /// Topics we subscribed to: messages for others are refused.
    local: BTreeSet<Topic>,
    /// Topics the peer subscribed to (bounded).
    remote: BTreeSet<Topic>,
    seen: Window,
    /// Nonces of the messages we publish, and the window's hash keys.
    rng: SeededRng,
    /// The latest wall time recorded at: a clock set back is read as this,
    /// so it cannot move the window back over forgotten nonces.
    latest: u64,
}

/// The deduplication window: the connection's own, or its peer's, shared
/// with the peer's other sessions through a
/// [`ReplayTable`](crate::replay_table::ReplayTable).
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "the own window inline, as it always was (the ephemeral state lives boxed in the session's extras); a shared one is a pointer"
)]
pub(crate) enum Window {
    Own(NonceCache),
    Peer(Arc<NonceCache>),
}

impl Deref for Window {
    type Target = NonceCache;

    fn deref(&self) -> &NonceCache {
        match self {
            Self::Own(cache) => cache,
            Self::Peer(cache) => cache,
        }
    }
}

impl EphemeralSession {
    /// A session with no subscriptions, drawing its nonces and its
    /// deduplication window's hash key from `rng`.
    #[must_use]
    pub fn new(config: EphemeralConfig, mut rng: SeededRng) -> Self {
        let seen = Window::Own(NonceCache::unsharded(
            config.max_age,
            config.dedup_capacity,
            rng.bytes(),
        ));
        Self {
            config,
            local: BTreeSet::new(),
            remote: BTreeSet::new(),
            seen,
            rng,
            latest: 0,
        }
    }

    /// What a session snapshot keeps: our topics, the peer's, the
    /// deduplication window and the latest wall time recorded at.
    pub(crate) fn parts(&self) -> (&BTreeSet<Topic>, &BTreeSet<Topic>, &NonceCache, u64) {
        (&self.local, &self.remote, &self.seen, self.latest)
    }

    /// The state [`EphemeralSession::parts`] gave, with `seen` (imported
    /// or adopted by a replay table), drawing new nonces from `rng`.
    pub(crate) fn from_parts(
        config: EphemeralConfig,
        local: BTreeSet<Topic>,
        remote: BTreeSet<Topic>,
        seen: Window,
        latest: u64,
        rng: SeededRng,
    ) -> Self {
        Self {
            config,
            local,
            remote,
            seen,
            rng,
            latest,
        }
    }

    /// Checks and records nonces in `window` from now on: the peer's,
    /// from a [`ReplayTable`](crate::replay_table::ReplayTable), shared
    /// with its other sessions. What the session's own window held is
    /// merged into it first.
    pub(crate) fn share_window(&mut self, window: Arc<NonceCache>) {
        if let Some(export) = self.seen.export() {
            if !export.entries.is_empty() || export.floor.is_some() {
                window.merge(&export);
            }
        }
        self.seen = Window::Peer(window);
    }

    /// Whether the deduplication window is the peer's, shared through a
    /// [`ReplayTable`](crate::replay_table::ReplayTable) with its other
    /// sessions (else it is this connection's own).
    #[must_use]
    pub fn window_is_shared(&self) -> bool {
        matches!(self.seen, Window::Peer(_))
    }

    /// `now`'s wall time, or the latest recorded at if that is later.
    fn wall(&self, now: Now) -> u64 {
        now.unix_secs.max(self.latest)
    }

    /// Replaces the limits. Subscriptions both ways are kept
    /// (the peer's even beyond a lower topic cap, which applies to later
    /// Subscribes); the connection's own deduplication window starts
    /// empty, sized for the new configuration (the peer's, shared through
    /// a replay table, is kept as the table sized it).
    pub fn set_config(&mut self, config: EphemeralConfig) {
        if let Window::Own(_) = self.seen {
            self.seen = Window::Own(NonceCache::unsharded(
                config.max_age,
                config.dedup_capacity,
                self.rng.bytes(),
            ));
        }
        self.config = config;
    }

    /// The limits in force.
    #[must_use]
    pub fn config(&self) -> &EphemeralConfig {
        &self.config
    }

    /// Records that we subscribed to `topics` (send the Subscribe yourself;
    /// a [`Session`](crate::session::Session) records the Subscribes it
    /// sends).
    pub fn subscribe(&mut self, topics: &Topics) {
        self.local.extend(topics.iter().copied());
    }

    /// Records that we unsubscribed from `topics`.
    pub fn unsubscribe(&mut self, topics: &Topics) {
        for topic in topics {
            self.local.remove(topic);
        }
    }

    /// Whether we subscribed to `topic`.
    #[must_use]
    pub fn is_subscribed(&self, topic: &Topic) -> bool {
        self.local.contains(topic)
    }

    /// The topics we subscribed to, ascending.
    pub fn subscriptions(&self) -> impl Iterator<Item = &Topic> {
        self.local.iter()
    }

    /// The topics the peer subscribed to, ascending.
    pub fn remote_subscriptions(&self) -> impl Iterator<Item = &Topic> {
        self.remote.iter()
    }

    /// Whether the peer subscribed to `topic`.
    #[must_use]
    pub fn remote_is_subscribed(&self, topic: &Topic) -> bool {
        self.remote.contains(topic)
    }

    /// Applies the peer's Subscribe, up to
    /// [`EphemeralConfig::max_remote_topics`].
    pub fn remote_subscribe(&mut self, topics: &Topics) -> SubscribeOutcome {
        let mut accepted = Vec::new();
        let mut rejected = Vec::new();
        for &topic in topics {
            if self.remote.contains(&topic) || self.remote.len() < self.config.max_remote_topics {
                self.remote.insert(topic);
                accepted.push(topic);
            } else {
                rejected.push(topic);
            }
        }
        SubscribeOutcome {
            accepted,
            rejected: Topics::new(rejected),
        }
    }

    /// Applies the peer's Unsubscribe.
    pub fn remote_unsubscribe(&mut self, topics: &Topics) {
        for topic in topics {
            self.remote.remove(topic);
        }
    }

    /// Entries held by the deduplication window.
    #[must_use]
    pub fn dedup_len(&self) -> usize {
        self.seen.len()
    }

    /// The checks that cost no signature verification (steps 1 to 4 of
    /// the [module docs](self)), at `now` (its wall time, never earlier
    /// than the latest this session recorded at). Remembers nothing.
    ///
    /// # Errors
    ///
    /// The first check that fails.
    pub fn precheck(&self, msg: &SignedEphemeral, now: Now) -> Result<(), EphemeralRejected> {
        let now = self.wall(now);
        let header = msg.header();
        let max = self.config.max_payload;
        if header.payload_len > max as u64 {
            return Err(EphemeralRejected::TooLarge {
                len: header.payload_len,
                max,
            });
        }
        self.check_age(header.timestamp, now)?;
        if !self.local.contains(&header.topic) {
            return Err(EphemeralRejected::NotSubscribed {
                topic: header.topic,
            });
        }
        let issuer = msg.issuer();
        let probe = self
            .seen
            .probe(issuer, header.nonce.to_be_bytes(), header.timestamp, now);
        self.nonce_verdict(probe, issuer, header.nonce, header.timestamp, now)
    }

    fn check_age(&self, timestamp: u64, now: u64) -> Result<(), EphemeralRejected> {
        let max_age_secs = self.config.max_age.as_secs();
        if timestamp.abs_diff(now) <= max_age_secs {
            Ok(())
        } else if timestamp < now {
            Err(EphemeralRejected::Stale {
                timestamp,
                now,
                max_age_secs,
            })
        } else {
            Err(EphemeralRejected::Future {
                timestamp,
                now,
                max_age_secs,
            })
        }
    }

    fn nonce_verdict(
        &self,
        check: NonceCheck,
        issuer: PeerId,
        nonce: u64,
        timestamp: u64,
        now: u64,
    ) -> Result<(), EphemeralRejected> {
        match check {
            NonceCheck::Fresh => Ok(()),
            NonceCheck::Replayed => Err(EphemeralRejected::Duplicate { issuer, nonce }),
            NonceCheck::PossibleReplay => {
                Err(EphemeralRejected::PossibleReplay { issuer, timestamp })
            }
            NonceCheck::FutureUnderLoad => Err(EphemeralRejected::FutureUnderLoad { issuer }),
            // Beyond what the window remembers (the age limit, or a shared
            // window's shorter one): refused, whichever side.
            NonceCheck::OutsideWindow => Err(self.outside_window(timestamp, now)),
        }
    }

    /// Why a message stamped beyond what the window covers is refused:
    /// stale or in the future by the window's age (no larger than the
    /// age limit, unless a shared window's is smaller).
    fn outside_window(&self, timestamp: u64, now: u64) -> EphemeralRejected {
        let max_age_secs = self
            .config
            .max_age
            .as_secs()
            .min(self.seen.max_drift_secs());
        if timestamp < now {
            EphemeralRejected::Stale {
                timestamp,
                now,
                max_age_secs,
            }
        } else {
            EphemeralRejected::Future {
                timestamp,
                now,
                max_age_secs,
            }
        }
    }

    /// Checks a message received at `now` in the order of
    /// the [module docs](self), verifies it, and remembers its nonce.
    ///
    /// # Errors
    ///
    /// [`EphemeralRejected`]: the message is dropped.
    pub fn receive(
        &mut self,
        msg: &SignedEphemeral,
        now: Now,
    ) -> Result<Verified<EphemeralPayload>, EphemeralRejected> {
        self.precheck(msg, now)?;
        self.verify_and_record(msg, now)
    }

    /// Steps 5 and 6 after a passed [`EphemeralSession::precheck`] at `now`:
    /// verifies, then remembers the nonce.
    ///
    /// # Errors
    ///
    /// [`EphemeralRejected::Signature`], or a nonce verdict if the window
    /// changed since the precheck.
    pub fn verify_and_record(
        &mut self,
        msg: &SignedEphemeral,
        now: Now,
    ) -> Result<Verified<EphemeralPayload>, EphemeralRejected> {
        let now = self.wall(now);
        self.latest = now;
        let verified = msg.verify_strict().map_err(EphemeralRejected::Signature)?;
        let payload = verified.payload();
        let issuer = verified.peer_id();
        let check = self.seen.check_and_insert(
            issuer,
            payload.nonce().to_be_bytes(),
            payload.timestamp(),
            now,
        );
        self.nonce_verdict(check, issuer, payload.nonce(), payload.timestamp(), now)?;
        Ok(verified)
    }

    /// Builds a payload for `topic` stamped `now` (its wall time) with a
    /// nonce from the session's generator.
    ///
    /// # Errors
    ///
    /// [`PublishError::TooLarge`] above [`EphemeralConfig::max_payload`].
    pub fn payload(
        &mut self,
        topic: Topic,
        payload: impl Into<bytes::Bytes>,
        now: Now,
    ) -> Result<EphemeralPayload, PublishError> {
        let now = self.wall(now);
        let payload = payload.into();
        let max = self.config.max_payload;
        if payload.len() > max {
            return Err(PublishError::TooLarge {
                len: payload.len(),
                max,
            });
        }
        Ok(EphemeralPayload::new(
            topic,
            self.rng.next_u64(),
            now,
            payload,
        ))
    }

    /// Builds and signs a message for `topic` (see
    /// [`EphemeralSession::payload`]).
    ///
    /// # Errors
    ///
    /// [`PublishError::TooLarge`] or [`PublishError::Seal`].
    pub fn seal<S: Identity + ?Sized>(
        &mut self,
        signer: &S,
        topic: Topic,
        payload: impl Into<bytes::Bytes>,
        now: Now,
    ) -> Result<SignedEphemeral, PublishError> {
        let payload = self.payload(topic, payload, now)?;
        Ok(SignedEphemeral::seal(signer, &payload)?)
    }
}
