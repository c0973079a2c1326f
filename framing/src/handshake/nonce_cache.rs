//! [`NonceCache`]: the challenge nonces a responder has accepted, kept long
//! enough that a replay inside the clock-drift window is always caught.
//!
//! # Why twice the drift
//!
//! A responder accepts a challenge whose timestamp `ts` is within
//! `max_drift` of its own clock: `|ts - now| <= max_drift`. A recording of
//! that challenge therefore stays acceptable until the responder's clock
//! reaches `ts + max_drift`, which is at most `now + 2 * max_drift` after the
//! first sighting. Remembering each nonce for `retention >= 2 * max_drift`
//! from the moment it was first accepted covers that whole window. (A cache
//! that keeps nonces for only `max_drift` forgets a nonce while a replay of
//! it can still pass the drift check.)
//!
//! ```text
//!   ts - drift          ts           ts + drift
//!   ----|---------------|---------------|------------>  responder clock
//!       ^ first sighting (earliest)      ^ last moment a replay passes the drift check
//!       \________ 2 * max_drift ________/
//! ```
//!
//! # Bounded memory
//!
//! Entries are kept in insertion order with their expiry. Every insertion
//! first evicts the expired ones from the front. If the cache is still at
//! capacity, the insertion is refused ([`NonceCacheFull`]): forgetting a
//! live nonce would re-open the replay window, so the cache fails closed
//! and the handshake is refused instead.
//!
//! ```
//! use bijou_framing::handshake::{NonceCache, NonceCacheFull, NonceCheck};
//! use bijou_signing::PeerId;
//! use std::time::Duration;
//!
//! let peer = PeerId::from_bytes([1; 32]);
//! let mut cache = NonceCache::new(Duration::from_secs(1200), 2);
//! assert_eq!(cache.check_and_insert(peer, [7; 16], 1_000), Ok(NonceCheck::Fresh));
//! assert_eq!(cache.check_and_insert(peer, [7; 16], 1_500), Ok(NonceCheck::Replayed));
//! assert_eq!(cache.check_and_insert(peer, [8; 16], 1_500), Ok(NonceCheck::Fresh));
//! // Full, and nothing has expired yet: fail closed.
//! assert!(matches!(cache.check_and_insert(peer, [9; 16], 1_500), Err(NonceCacheFull { .. })));
//! // 1200 s after the first sighting, the first entry expires.
//! assert_eq!(cache.check_and_insert(peer, [9; 16], 2_200), Ok(NonceCheck::Fresh));
//! ```

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use bijou_signing::PeerId;

/// Default number of nonces a cache holds.
pub const DEFAULT_NONCE_CAPACITY: usize = 100_000;

/// What [`NonceCache::check_and_insert`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceCheck {
    /// Not seen within the retention window; now remembered.
    Fresh,
    /// Seen before and not yet expired: a replay.
    Replayed,
}

/// The cache is full of unexpired nonces; the challenge must be refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("nonce cache is full ({capacity} unexpired nonces)")]
pub struct NonceCacheFull {
    /// The cache's capacity.
    pub capacity: usize,
}

type Key = (PeerId, [u8; 16]);

/// Remembers accepted `(issuer, nonce)` pairs; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct NonceCache {
    retention_secs: u64,
    capacity: usize,
    /// Key -> expiry (unix seconds).
    seen: HashMap<Key, u64>,
    /// Keys in insertion order with their expiry (non-decreasing, because
    /// `now` is clamped to be monotonic).
    order: VecDeque<(u64, Key)>,
    /// The latest `now` seen, so a clock step backwards cannot shorten
    /// retention.
    latest: u64,
}

impl NonceCache {
    /// A cache that remembers each nonce for `retention` (rounded up to
    /// whole seconds) and holds at most `capacity` of them.
    #[must_use]
    pub fn new(retention: Duration, capacity: usize) -> Self {
        let retention_secs = retention
            .as_secs()
            .saturating_add(u64::from(retention.subsec_nanos() > 0));
        Self {
            retention_secs,
            capacity,
            seen: HashMap::new(),
            order: VecDeque::new(),
            latest: 0,
        }
    }

    /// A cache for a responder that allows `max_drift`: retention is
    /// `2 * max_drift` (the minimum that catches every replay), with
    /// [`DEFAULT_NONCE_CAPACITY`].
    #[must_use]
    pub fn for_max_drift(max_drift: Duration) -> Self {
        Self::new(max_drift.saturating_mul(2), DEFAULT_NONCE_CAPACITY)
    }

    /// How long a nonce is remembered, in seconds.
    #[must_use]
    pub fn retention_secs(&self) -> u64 {
        self.retention_secs
    }

    /// The most nonces held at once.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Nonces currently held (some may have expired but not been evicted
    /// yet).
    #[must_use]
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether the cache holds no nonce.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Evicts every entry that expired at or before `now` (unix seconds).
    pub fn evict_expired(&mut self, now: u64) {
        let now = self.observe(now);
        while let Some(&(expiry, key)) = self.order.front() {
            if expiry > now {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&key);
        }
    }

    /// Checks `(issuer, nonce)` at `now` (unix seconds): a replay if it was
    /// remembered and has not expired; otherwise remembers it until
    /// `now + retention`.
    ///
    /// # Errors
    ///
    /// [`NonceCacheFull`] if the nonce is new but the cache holds
    /// `capacity` unexpired nonces. Nothing is inserted.
    pub fn check_and_insert(
        &mut self,
        issuer: PeerId,
        nonce: [u8; 16],
        now: u64,
    ) -> Result<NonceCheck, NonceCacheFull> {
        self.evict_expired(now);
        let now = self.latest;
        let key = (issuer, nonce);
        if self.seen.contains_key(&key) {
            return Ok(NonceCheck::Replayed);
        }
        if self.seen.len() >= self.capacity {
            return Err(NonceCacheFull {
                capacity: self.capacity,
            });
        }
        let expiry = now.saturating_add(self.retention_secs);
        self.seen.insert(key, expiry);
        self.order.push_back((expiry, key));
        Ok(NonceCheck::Fresh)
    }

    fn observe(&mut self, now: u64) -> u64 {
        self.latest = self.latest.max(now);
        self.latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEER: PeerId = PeerId::from_bytes([3; 32]);

    #[test]
    fn replay_inside_the_whole_drift_window_is_caught() {
        let drift = 600;
        let mut cache = NonceCache::for_max_drift(Duration::from_secs(drift));
        assert_eq!(cache.retention_secs(), 2 * drift);
        // Challenge stamped ts = 10_000 + drift (client clock ahead), first
        // seen at server time 10_000; it passes the drift check until
        // server time ts + drift = 10_000 + 2 * drift.
        let first = 10_000;
        assert_eq!(
            cache.check_and_insert(PEER, [1; 16], first),
            Ok(NonceCheck::Fresh)
        );
        for t in [first, first + drift, first + 2 * drift - 1] {
            assert_eq!(
                cache.check_and_insert(PEER, [1; 16], t),
                Ok(NonceCheck::Replayed),
                "at {t}"
            );
        }
        // Once the window is over, the drift check rejects the replay; the
        // cache may forget it.
        assert_eq!(
            cache.check_and_insert(PEER, [1; 16], first + 2 * drift),
            Ok(NonceCheck::Fresh)
        );
    }

    #[test]
    fn same_nonce_from_another_issuer_is_distinct() {
        let mut cache = NonceCache::new(Duration::from_secs(10), 10);
        let other = PeerId::from_bytes([4; 32]);
        assert_eq!(
            cache.check_and_insert(PEER, [1; 16], 0),
            Ok(NonceCheck::Fresh)
        );
        assert_eq!(
            cache.check_and_insert(other, [1; 16], 0),
            Ok(NonceCheck::Fresh)
        );
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn memory_is_bounded_and_expired_entries_are_evicted() {
        let mut cache = NonceCache::new(Duration::from_secs(10), 100);
        for i in 0..100u8 {
            assert_eq!(
                cache.check_and_insert(PEER, [i; 16], 5),
                Ok(NonceCheck::Fresh)
            );
        }
        assert_eq!(
            cache.check_and_insert(PEER, [200; 16], 14),
            Err(NonceCacheFull { capacity: 100 })
        );
        assert_eq!(cache.len(), 100);
        assert_eq!(
            cache.check_and_insert(PEER, [200; 16], 15),
            Ok(NonceCheck::Fresh)
        );
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_clock_stepping_back_does_not_shorten_retention() {
        let mut cache = NonceCache::new(Duration::from_secs(10), 10);
        assert_eq!(
            cache.check_and_insert(PEER, [1; 16], 100),
            Ok(NonceCheck::Fresh)
        );
        assert_eq!(
            cache.check_and_insert(PEER, [2; 16], 50),
            Ok(NonceCheck::Fresh)
        );
        // [2] was stamped with the monotonic clock (100), so it lives to 110.
        assert_eq!(
            cache.check_and_insert(PEER, [2; 16], 109),
            Ok(NonceCheck::Replayed)
        );
    }

    #[test]
    fn sub_second_retention_rounds_up() {
        let cache = NonceCache::new(Duration::from_millis(1500), 1);
        assert_eq!(cache.retention_secs(), 2);
    }
}
