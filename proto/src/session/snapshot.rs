//! [`Session::snapshot`] and [`Session::restore`]: a session as versioned
//! canonical bytes, so a host that is evicted (a Durable Object recycled
//! while its WebSocket stays open, a suspended app) resumes the same
//! connection with nothing lost and every replay still refused.
//!
//! ```text
//!   "BJS\0" · version 01
//!   local 32 · remote peer 32 · challenge digest 32 · remote time b64
//!   budget: per second b64 · burst b64 · tokens 8 (f64, LE) · counted: 00 | 01 age-ns b64
//!   verify step b64
//!   ephemeral: 00 | 01 · max payload b64 · max age s b64 · ns b64 · dedup capacity b64
//!              · max remote topics b64 · latest wall time b64
//!              · ours: n b64 · n x Topic 32 · theirs: n b64 · n x Topic 32
//!              · window: key 16 · floor 00 | 01 b64 · n b64 · n x (second b64 · hash 8)
//!   to send: n b64 · n x (len b64 · message)
//!   operations: 00 | 01 · last id b64 · n b64 · n x (id b64 · time left ns b64 · kind · fields)
//!       kind 00 push: tree 32 · head 32     01 fetch: tree 32 · nonce 8 · probe 00 | 01
//!            02 subscribe: n b64 · n x Topic 32
//!            03 registration, not started: len b64 · root delegation event
//!            04 registration: stage (00 card, 01 response, 02 confirmation) · len b64 · event
//!            05 registration, an answer waiting for the signer: as 04 · len b64 · SUK message
//!   checksum 16: BLAKE3 of every byte before it
//! ```
//!
//! (b64: a bijou64 varint; 8: little-endian.) Times are kept as ages and
//! times left against the `now` of each call, so a restore in another
//! process, whose monotonic clock starts anew, keeps every deadline and
//! budget where it was.
//!
//! # What a snapshot holds, and what it trusts
//!
//! No key: not ours (the session never holds one), and no random state
//! (a restore takes a fresh seed). It does hold the deduplication window's
//! hash key, which lets whoever reads it aim collisions at that window:
//! keep snapshots where the session's memory would be kept. A snapshot is
//! trusted like that memory: whoever can write one can restore a session
//! with any peer. The checksum finds corruption, truncation and bytes
//! added; it is no signature.
//!
//! # When
//!
//! Between messages: [`Session::snapshot`] refuses (and changes nothing)
//! while a received message is being verified or waits in
//! [`poll_event`](Session::poll_event), or while an ended operation waits
//! in [`poll_completed`](Session::poll_completed).

use alloc::collections::{BTreeSet, VecDeque};
use alloc::vec::Vec;
use core::time::Duration;

use bijou_codec::{ReadError, Reader, Wire, Writer};
use bijou_signing::{Digest, PeerId};
use bytes::{Bytes, BytesMut};

use super::operation::Operations;
use super::{ephemeral_rng, operations_rng, Extras, Phase, Session};
use crate::ephemeral::{EphemeralConfig, EphemeralSession};
use crate::handshake::Authenticated;
use crate::message::{Message, Topic};
use crate::nonce_cache::Export;
use crate::rng::SeededRng;
use crate::time::{Now, Timestamp};
use crate::verify_budget::{Bucket, VerifyBudget};

/// The first bytes of every snapshot.
pub const SNAPSHOT_MAGIC: [u8; 4] = *b"BJS\0";
/// The snapshot format this version writes and reads.
pub const SNAPSHOT_VERSION: u8 = 1;
const CHECKSUM_LEN: usize = 16;

/// Why [`Session::snapshot`] made none; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Something is under way: snapshot again between messages, after
    /// taking what `poll_event` and `poll_completed` hold.
    #[error("no snapshot while {what}: snapshot between messages, after taking what poll_event and poll_completed hold")]
    Busy {
        /// What is under way.
        what: &'static str,
    },
    /// The session holds state the snapshot format cannot: a message
    /// waiting in `poll_transmit` or a keyhive answer that does not
    /// encode, or a sharded ephemeral window. None of these arises from
    /// the session's own use (what it queues fits its fields, an answer
    /// re-encodes to the bytes received, its window has one shard); the
    /// check stays because each is a fallible call.
    #[error("no snapshot: {what}, which a snapshot cannot hold")]
    Unsupported {
        /// What the snapshot could not hold.
        what: &'static str,
    },
}

/// Why [`Session::restore`] refused the bytes: not this format, not this
/// version, or not intact. Nothing was restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreError {
    /// Not a session snapshot (its first four bytes).
    #[error("not a session snapshot: it starts {found:02x?}, a snapshot starts \"BJS\\0\"")]
    NotASnapshot {
        /// The first bytes found (fewer if it is shorter).
        found: Vec<u8>,
    },
    /// Written by another version of the format.
    #[error("snapshot format version {found}; this build reads version {supported} only")]
    Version {
        /// The version in the snapshot.
        found: u8,
        /// The one this build reads.
        supported: u8,
    },
    /// Too short to hold a snapshot.
    #[error("a snapshot of {len} bytes is too short to be one (at least {min})")]
    TooShort {
        /// Its length.
        len: usize,
        /// The shortest a snapshot can be.
        min: usize,
    },
    /// The checksum does not match: the bytes were corrupted, cut or
    /// extended.
    #[error("snapshot checksum mismatch over {len} bytes: corrupted, truncated or extended")]
    Checksum {
        /// The snapshot's length.
        len: usize,
    },
    /// Intact but not well formed (a writer's bug).
    #[error("malformed snapshot: {0}")]
    Malformed(#[from] ReadError),
    /// Well formed, but a value is impossible.
    #[error("invalid snapshot: {field} {reason}")]
    Invalid {
        /// Which field.
        field: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}

fn invalid(field: &'static str, reason: &'static str) -> RestoreError {
    RestoreError::Invalid { field, reason }
}

impl Session {
    /// The session's state as versioned canonical bytes, at `now`; see
    /// [`snapshot`](self) for the layout, what it holds and when it can be
    /// taken. An idle authenticated session's is 141 bytes.
    ///
    /// ```
    /// # use bijou_frame::proto::handshake::{HandshakeConfig, Initiator, Responder};
    /// # use bijou_frame::proto::message::Audience;
    /// # use bijou_frame::proto::session::{Session, SessionConfig};
    /// # use bijou_frame::proto::time::Now;
    /// # use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity};
    /// # let (alice, bob) = (SigningKey::from_bytes(&[1; 32]), SigningKey::from_bytes(&[2; 32]));
    /// # let now = Now::from_secs(1_700_000_000);
    /// # let initiator = Initiator::new(&alice, Audience::Known(bob.peer_id()), now, [7; 16])?;
    /// # let answer = Responder::new(HandshakeConfig::default()).answer(&bob, initiator.challenge().clone(), now);
    /// # let at_alice = initiator.receive(answer.reply.expect("a response"))?;
    /// let session = Session::new(alice.peer_id(), at_alice, SessionConfig::new([1; 32]));
    /// let bytes = session.snapshot(now)?;
    /// // ... the host is evicted; a new process, a new clock, a fresh seed ...
    /// let restored = Session::restore(&bytes, now, [3; 32])?;
    /// assert_eq!(restored.remote_peer(), Some(bob.peer_id()));
    /// assert_eq!(restored.snapshot(now)?, bytes);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`SnapshotError::Busy`] while something is under way.
    pub fn snapshot(&self, now: Now) -> Result<Bytes, SnapshotError> {
        if self.inbound.is_some() {
            return Err(SnapshotError::Busy {
                what: "a received message is being verified or waits in poll_event",
            });
        }
        let Some(remote) = self.snapshot_remote()? else {
            return Err(SnapshotError::Busy {
                what: "the handshake runs",
            });
        };
        let mut out = BytesMut::new();
        let mut w = Writer::growing(&mut out);
        w.bytes(&SNAPSHOT_MAGIC);
        w.u8(SNAPSHOT_VERSION);
        w.bytes(self.local.as_bytes());
        w.bytes(remote.peer().as_bytes());
        w.bytes(remote.challenge_digest().as_bytes());
        w.bijou64(remote.remote_time());
        let budget = self.budget.budget();
        w.bijou64(u64::from(budget.per_second()));
        w.bijou64(u64::from(budget.burst()));
        let (tokens, counted) = self.budget.state();
        w.u64(tokens.to_bits());
        write_age(&mut w, counted, now);
        w.bijou64(self.step as u64);
        match self.ephemeral() {
            None => w.u8(0),
            Some(ephemeral) => {
                w.u8(1);
                write_ephemeral(&mut w, ephemeral).ok_or(SnapshotError::Unsupported {
                    what: "the ephemeral window is sharded",
                })?;
            }
        }
        let outbound = self.extras.as_ref().map(|extras| &extras.outbound);
        w.bijou64(outbound.map_or(0, VecDeque::len) as u64);
        for message in outbound.into_iter().flatten() {
            let bytes = message.encode().map_err(|_| SnapshotError::Unsupported {
                what: "a message waiting in poll_transmit does not encode",
            })?;
            w.bijou64_len(bytes.len());
            w.bytes(&bytes);
        }
        match self.operations() {
            None => w.u8(0),
            Some(operations) => {
                w.u8(1);
                operations.write_snapshot(&mut w, now.monotonic)?;
            }
        }
        let checksum = blake3::hash(&out);
        out.extend_from_slice(&checksum.as_bytes()[..CHECKSUM_LEN]);
        Ok(out.freeze())
    }

    /// The session a [`Session::snapshot`] holds, resumed at `now` (every
    /// deadline and budget as far off as when it was taken), drawing its
    /// random numbers from `seed` (a fresh one: a snapshot holds none).
    /// Resume on the same connection: the peer, its subscriptions, the
    /// operations in flight, the ephemeral window and the replay floor are
    /// the ones it had, so nothing is delivered twice and every replay is
    /// refused as before.
    ///
    /// # Errors
    ///
    /// [`RestoreError`]: a foreign, corrupt, truncated or extended
    /// snapshot, or another format version. Never a panic.
    pub fn restore(bytes: &[u8], now: Now, seed: [u8; 32]) -> Result<Self, RestoreError> {
        let min = SNAPSHOT_MAGIC.len() + 1 + CHECKSUM_LEN;
        if bytes.get(..4) != Some(&SNAPSHOT_MAGIC[..]) {
            return Err(RestoreError::NotASnapshot {
                found: bytes.iter().take(4).copied().collect(),
            });
        }
        if bytes.len() < min {
            return Err(RestoreError::TooShort {
                len: bytes.len(),
                min,
            });
        }
        if bytes[4] != SNAPSHOT_VERSION {
            return Err(RestoreError::Version {
                found: bytes[4],
                supported: SNAPSHOT_VERSION,
            });
        }
        let (body, checksum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
        if blake3::hash(body).as_bytes()[..CHECKSUM_LEN] != *checksum {
            return Err(RestoreError::Checksum { len: bytes.len() });
        }
        let body = Bytes::copy_from_slice(&body[5..]);
        let mut r = Reader::new(&body);
        let local = PeerId::from_bytes(r.array("local")?);
        let remote = Authenticated::new(
            PeerId::from_bytes(r.array("remote peer")?),
            Digest::from_bytes(r.array("challenge digest")?),
            r.bijou64("remote time")?,
        );
        let per_second = u32_field(&mut r, "budget per second")?;
        let burst = u32_field(&mut r, "budget burst")?;
        let tokens = f64::from_bits(r.u64("budget tokens")?);
        // A debt (below zero) is at most one step's items past the burst.
        if !tokens.is_finite() || tokens < -f64::from(u32::MAX) {
            return Err(invalid("budget tokens", "is not a count of verifications"));
        }
        let counted = read_age(&mut r, now)?;
        let budget = Bucket::from_state(VerifyBudget::new(per_second, burst), tokens, counted);
        let step = usize::try_from(r.bijou64("verify step")?)
            .ok()
            .filter(|&step| step >= 1)
            .ok_or_else(|| invalid("verify step", "is 0 or too large"))?;
        let ephemeral = match r.u8("ephemeral")? {
            0 => None,
            1 => Some(read_ephemeral(&mut r, ephemeral_rng(seed))?),
            _ => return Err(invalid("ephemeral", "is neither 00 nor 01")),
        };
        let count = r.bijou64("messages to send")?;
        // Grown as messages are read: a reservation sized by the count
        // would be hundreds of bytes of heap per byte of snapshot.
        let mut outbound = VecDeque::new();
        for _ in 0..count {
            let len = r.bijou64("message length")?;
            let message = r.shared_u64("message", len)?;
            let message = Message::decode(message)
                .map_err(|_| invalid("message to send", "does not decode"))?;
            outbound.push_back(message);
        }
        let operations = match r.u8("operations")? {
            0 => None,
            1 => Some(Operations::read_snapshot(
                &mut r,
                now.monotonic,
                operations_rng(seed),
                (local, remote.peer()),
            )?),
            _ => return Err(invalid("operations", "is neither 00 nor 01")),
        };
        r.finish()?;
        let extras =
            (ephemeral.is_some() || !outbound.is_empty() || operations.is_some()).then(|| {
                alloc::boxed::Box::new(Extras {
                    ephemeral,
                    outbound,
                    operations,
                    ..Extras::default()
                })
            });
        Ok(Self {
            local,
            remote: Some(remote),
            phase: Phase::Open,
            // Not in the snapshot: the default, as the transport's.
            max_message_len: crate::handshake::DEFAULT_MAX_MESSAGE_LENGTH,
            budget,
            step,
            verify_one_by_one: false,
            inbound: None,
            extras,
            seed,
        })
    }
}

fn u32_field(r: &mut Reader<'_>, field: &'static str) -> Result<u32, RestoreError> {
    u32::try_from(r.bijou64(field)?).map_err(|_| invalid(field, "does not fit 32 bits"))
}

/// How long ago `at` was, or 00 for never.
fn write_age(w: &mut Writer<'_, BytesMut>, at: Option<Timestamp>, now: Now) {
    match at {
        None => w.u8(0),
        Some(at) => {
            w.u8(1);
            w.bijou64(nanos(now.monotonic.saturating_duration_since(at)));
        }
    }
}

fn read_age(r: &mut Reader<'_>, now: Now) -> Result<Option<Timestamp>, RestoreError> {
    match r.u8("budget counted")? {
        0 => Ok(None),
        1 => {
            let age = r.bijou64("budget age")?;
            Ok(Some(Timestamp::from_nanos(
                now.monotonic.as_nanos().saturating_sub(age),
            )))
        }
        _ => Err(invalid("budget counted", "is neither 00 nor 01")),
    }
}

pub(super) fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

pub(super) fn write_topics<'a>(
    w: &mut Writer<'_, BytesMut>,
    topics: impl ExactSizeIterator<Item = &'a Topic>,
) {
    w.bijou64_len(topics.len());
    for topic in topics {
        w.bytes(topic.as_bytes());
    }
}

/// Topics, strictly ascending (the one order they are written in).
pub(super) fn read_topics(
    r: &mut Reader<'_>,
    field: &'static str,
) -> Result<BTreeSet<Topic>, RestoreError> {
    let count = r.bijou64(field)?;
    r.capacity_for(field, count, 32)?;
    let mut topics = BTreeSet::new();
    for _ in 0..count {
        let topic = Topic::new(r.array(field)?);
        if topics.last().is_some_and(|last| *last >= topic) {
            return Err(invalid(field, "are not strictly ascending"));
        }
        topics.insert(topic);
    }
    Ok(topics)
}

fn write_ephemeral(w: &mut Writer<'_, BytesMut>, ephemeral: &EphemeralSession) -> Option<()> {
    let config = ephemeral.config();
    let (ours, theirs, window, latest) = ephemeral.parts();
    let window = window?;
    w.bijou64_len(config.max_payload);
    w.bijou64(config.max_age.as_secs());
    w.bijou64(u64::from(config.max_age.subsec_nanos()));
    w.bijou64_len(config.dedup_capacity);
    w.bijou64_len(config.max_remote_topics);
    w.bijou64(latest);
    write_topics(w, ours.iter());
    write_topics(w, theirs.iter());
    w.bytes(&window.key);
    match window.floor {
        None => w.u8(0),
        Some(floor) => {
            w.u8(1);
            w.bijou64(floor);
        }
    }
    w.bijou64_len(window.entries.len());
    for (second, hash) in &window.entries {
        w.bijou64(*second);
        w.u64(*hash);
    }
    Some(())
}

fn read_ephemeral(r: &mut Reader<'_>, rng: SeededRng) -> Result<EphemeralSession, RestoreError> {
    let usize_field = |r: &mut Reader<'_>, field| {
        usize::try_from(r.bijou64(field)?).map_err(|_| invalid(field, "is too large"))
    };
    let max_payload = usize_field(r, "max payload")?;
    let secs = r.bijou64("max age")?;
    let subsec = u32::try_from(r.bijou64("max age nanos")?)
        .ok()
        .filter(|&n| n < 1_000_000_000)
        .ok_or_else(|| invalid("max age nanos", "is not below a second"))?;
    let config = EphemeralConfig {
        max_payload,
        max_age: Duration::new(secs, subsec),
        dedup_capacity: usize_field(r, "dedup capacity")?,
        max_remote_topics: usize_field(r, "max remote topics")?,
    };
    let latest = r.bijou64("latest wall time")?;
    let ours = read_topics(r, "our topics")?;
    let theirs = read_topics(r, "their topics")?;
    let key = r.array("window key")?;
    let floor = match r.u8("window floor")? {
        0 => None,
        1 => Some(r.bijou64("window floor")?),
        _ => return Err(invalid("window floor", "is neither 00 nor 01")),
    };
    let count = r.bijou64("window entries")?;
    let mut entries = Vec::with_capacity(r.capacity_for("window entries", count, 9)?);
    for _ in 0..count {
        let second = r.bijou64("window second")?;
        let hash = r.u64("window hash")?;
        if entries.last().is_some_and(|&(last, _)| last > second) {
            return Err(invalid("window entries", "are not oldest first"));
        }
        entries.push((second, hash));
    }
    let window = Export {
        key,
        floor,
        entries,
    };
    EphemeralSession::from_parts(config, ours, theirs, &window, latest, rng)
        .ok_or_else(|| invalid("ephemeral window", "does not fit its capacity and floor"))
}
