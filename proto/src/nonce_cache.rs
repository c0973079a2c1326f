//! [`NonceCache`]: the `(issuer, nonce)` pairs of accepted signed messages,
//! kept exactly as long as a replay could pass the timestamp check, in
//! bounded memory, without ever locking honest peers out.
//!
//! Two users, one rule: a handshake responder records challenge nonces
//! (16 bytes) with its clock drift as the window, and a connection records
//! the nonces of ephemeral messages (8 bytes) with their maximum age as the
//! window (see [`ephemeral`](crate::ephemeral)). Below, "challenge" reads
//! as either, and "drift" as the window.
//!
//! # Retention covers the acceptance window, boundaries included
//!
//! A responder accepts a challenge stamped `ts` while its own clock `now`
//! satisfies `|ts - now| <= max_drift`. A recording of that challenge can
//! therefore be replayed until `now = ts + max_drift` *inclusive*. The cache
//! files each nonce under its challenge's timestamp and forgets the whole
//! second `ts` only once `ts + max_drift < now`: from then on the drift
//! check refuses every replay. (Keying retention on the timestamp rather
//! than on the moment of first sight makes it exact whatever the
//! challenger's clock offset.)
//!
//! ```text
//!   ts - drift              ts               ts + drift   ts + drift + 1
//!   ----|--------------------|--------------------|-------------|-----> responder clock
//!       \___ a challenge stamped ts passes the drift check ___/ ^ forgotten here
//! ```
//!
//! # Bounded memory without lockout
//!
//! Each entry is a 64-bit SipHash of `(issuer, nonce)` under a key chosen at
//! random when the cache is made (so nobody can aim for collisions), filed
//! in a per-second bucket. A pair is a duplicate whatever timestamp it
//! comes with: a lookup checks every second held (at most
//! `2 x max_drift + 1` hash lookups). At most [`NonceCache::capacity`] entries are
//! held. Anyone can mint keys and sign valid challenges, so a flood can
//! fill any capacity; refusing everything once full (what this cache did
//! before) locks honest peers out for up to `2 * max_drift`. Instead:
//!
//! 1. **Future stamps are admitted only while there is room.** Once the
//!    cache is 7/8 full, a challenge stamped ahead of the responder's clock
//!    is refused before anything is remembered
//!    ([`NonceCheck::FutureUnderLoad`]). A future-stamped nonce would have
//!    to be kept longest, and forgetting one later would mean refusing its
//!    whole second when honest clocks reach it, so such nonces are never
//!    accepted and then forgotten.
//! 2. **When full, the oldest second is forgotten** and becomes a `floor`:
//!    every later challenge stamped at or before it is refused as a possible
//!    replay ([`NonceCheck::PossibleReplay`]). The last eighth of the cache
//!    only ever fills with challenges stamped at or before `now`, so the
//!    forgotten second is in the past, and a peer whose clock agrees with
//!    the responder's keeps getting in.
//!
//! So **no replay is ever accepted** (a replay carries its original
//! timestamp, which is either still remembered or at or below the floor),
//! and **peers with accurate clocks are never locked out**, whatever the
//! flood stamps its challenges with; the one exception would be a flood of
//! more than an eighth of the capacity per second stamped exactly `now`
//! (262,144 challenges per second for the default capacity, about ten
//! cores' worth of signature verification). Under a flood the acceptance
//! window narrows to about `capacity / rate` seconds into the past and to
//! `now` on the future side. The floor is only ever raised (also when a
//! second expires), so one wrong clock reading cannot re-open a replay, and
//! it never refuses a stamp an honest peer would send later.
//!
//! **Sizing.** With `capacity >= flood rate x 2 x max_drift x 8/7` the
//! window never narrows, and every peer within the drift gets in.
//! Memory: at most [`NonceCache::BYTES_PER_ENTRY`] (24) bytes per entry,
//! plus [`NonceCache::BYTES_PER_SECOND`] (160) per timestamp second held,
//! plus [`NonceCache::BASE_BYTES`] (2 KiB) (measured by
//! `framing/tests/nonce_cache_memory.rs`; about 15 B per entry in a full
//! cache), so the default [`DEFAULT_NONCE_CAPACITY`] of 2^21 entries stays
//! under 49 MiB with a 600 s drift. One transient exception: while one
//! second's hash set grows, its old and new tables briefly coexist, so a
//! flood stamping everything in a single second peaks at about 1.5x that
//! (about 56 MiB at the default capacity) for the duration of one rehash.
//!
//! ```
//! use bijou_proto::nonce_cache::{NonceCache, NonceCheck};
//! use bijou_signing::PeerId;
//! use std::time::Duration;
//!
//! let peer = PeerId::from_bytes([1; 32]);
//! let mut cache = NonceCache::new(Duration::from_secs(600), 2);
//! assert_eq!(cache.check_and_insert(peer, [7; 16], 1_000, 1_000), NonceCheck::Fresh);
//! // A replay at the last second the drift check would let it through.
//! assert_eq!(cache.check_and_insert(peer, [7; 16], 1_000, 1_600), NonceCheck::Replayed);
//! // Full (2 of 2): the oldest second, 1_000, is forgotten and becomes the
//! // floor; a fresh challenge stamped 1_001 still gets in...
//! assert_eq!(cache.check_and_insert(peer, [8; 16], 1_000, 1_600), NonceCheck::Fresh);
//! assert_eq!(cache.check_and_insert(peer, [9; 16], 1_001, 1_600), NonceCheck::Fresh);
//! assert_eq!(cache.floor(), Some(1_000));
//! // ...and a replay from the forgotten second is refused, never accepted.
//! assert_eq!(cache.check_and_insert(peer, [7; 16], 1_000, 1_600), NonceCheck::PossibleReplay);
//! // Full again: a challenge stamped ahead of our clock is not admitted.
//! assert_eq!(cache.check_and_insert(peer, [10; 16], 1_001, 1_600), NonceCheck::Fresh);
//! assert_eq!(cache.check_and_insert(peer, [11; 16], 1_700, 1_600), NonceCheck::FutureUnderLoad);
//! ```

use std::collections::{BTreeMap, HashSet};
use std::hash::Hasher;
use std::time::Duration;

use bijou_signing::PeerId;
use siphasher::sip::SipHasher13;

/// Default number of nonces a cache holds: 2^21 (under 48 MiB).
pub const DEFAULT_NONCE_CAPACITY: usize = 1 << 21;

/// What [`NonceCache::check_and_insert`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceCheck {
    /// Not seen while it could be replayed; now remembered.
    Fresh,
    /// This `(issuer, nonce)` is held (under any timestamp): a replay, or
    /// the issuer reusing a nonce.
    Replayed,
    /// Stamped at or before a second the cache had to forget under load:
    /// it may be a replay of a forgotten nonce, so it is refused.
    PossibleReplay,
    /// Stamped ahead of the responder's clock while the cache is 7/8 full:
    /// refused before anything is remembered (see the [module docs](self)).
    FutureUnderLoad,
    /// Stamped outside `now +- max_drift`: the drift check refuses it, and
    /// nothing is remembered.
    OutsideWindow,
}

/// Remembers accepted `(issuer, nonce)` pairs; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct NonceCache {
    max_drift: u64,
    capacity: usize,
    key: (u64, u64),
    /// Challenge timestamp (unix seconds) -> keyed hashes of its nonces.
    buckets: BTreeMap<u64, HashSet<u64>>,
    len: usize,
    /// Challenges stamped at or before this were possibly forgotten.
    floor: Option<u64>,
}

impl NonceCache {
    /// Heap bytes per entry (an 8-byte hash in a hash set, load factor and
    /// growth included). With [`NonceCache::BYTES_PER_SECOND`], the stated
    /// bound: heap <= `BASE_BYTES + BYTES_PER_ENTRY x entries +
    /// BYTES_PER_SECOND x (2 x max_drift + 1)`, checked by
    /// `framing/tests/nonce_cache_memory.rs`.
    pub const BYTES_PER_ENTRY: usize = 24;

    /// Heap bytes of a cache holding anything at all (the first tree node).
    pub const BASE_BYTES: usize = 2048;

    /// Heap bytes per distinct timestamp second held (its bucket's fixed
    /// cost); there are at most `2 x max_drift + 1` of them.
    pub const BYTES_PER_SECOND: usize = 160;

    /// A cache for a responder that allows `max_drift` (whole seconds; a
    /// fraction is dropped, as timestamps are whole seconds), holding at
    /// most `capacity` nonces. Its window check is the responder's drift
    /// check, so acceptance and retention use the one number.
    #[must_use]
    pub fn new(max_drift: Duration, capacity: usize) -> Self {
        let max_drift = max_drift.as_secs();
        Self {
            max_drift,
            capacity: capacity.max(1),
            key: (rand::random(), rand::random()),
            buckets: BTreeMap::new(),
            len: 0,
            floor: None,
        }
    }

    /// The drift the cache's retention covers, in seconds.
    #[must_use]
    pub fn max_drift_secs(&self) -> u64 {
        self.max_drift
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
        self.len
    }

    /// Whether the cache holds no nonce.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The floor, if a flood made the cache forget a second that could
    /// still be replayed: challenges stamped at or before it are refused.
    #[must_use]
    pub fn floor(&self) -> Option<u64> {
        self.floor
    }

    /// Forgets every second whose challenges can no longer pass the drift
    /// check at `now` (`ts + max_drift < now`). Each forgotten second also
    /// raises the floor, so that if the clock later reads an earlier time
    /// (a step back, or one bad reading ahead), replays of forgotten nonces
    /// are still refused rather than accepted. The floor is never lowered:
    /// it only refuses stamps at or before seconds already seen, which an
    /// honest peer, stamping its current time, does not use again.
    pub fn evict_expired(&mut self, now: u64) {
        while let Some((&ts, _)) = self.buckets.first_key_value() {
            if ts.saturating_add(self.max_drift) >= now {
                break;
            }
            self.forget_oldest();
        }
    }

    /// Checks the nonce of a challenge by `issuer` stamped `timestamp`, at
    /// responder time `now` (unix seconds), and remembers it if it is new.
    pub fn check_and_insert(
        &mut self,
        issuer: PeerId,
        nonce: impl AsRef<[u8]>,
        timestamp: u64,
        now: u64,
    ) -> NonceCheck {
        self.evict_expired(now);
        let hash = self.hash(&issuer, nonce.as_ref());
        let verdict = self.check_hash(hash, timestamp, now);
        if verdict != NonceCheck::Fresh {
            return verdict;
        }
        while self.len >= self.capacity {
            self.forget_oldest();
        }
        // Forgetting may have raised the floor to this timestamp.
        if self.below_floor(timestamp) {
            return NonceCheck::PossibleReplay;
        }
        self.buckets.entry(timestamp).or_default().insert(hash);
        self.len += 1;
        NonceCheck::Fresh
    }

    /// What [`NonceCache::check_and_insert`] would answer, without
    /// remembering anything (or forgetting expired seconds): a read-only
    /// probe, to refuse a replay before paying for its verification.
    /// [`NonceCheck::Fresh`] here is not a promise: a flood between the
    /// probe and the insert can still refuse it.
    #[must_use]
    pub fn probe(
        &self,
        issuer: PeerId,
        nonce: impl AsRef<[u8]>,
        timestamp: u64,
        now: u64,
    ) -> NonceCheck {
        self.check_hash(self.hash(&issuer, nonce.as_ref()), timestamp, now)
    }

    fn check_hash(&self, hash: u64, timestamp: u64, now: u64) -> NonceCheck {
        if timestamp.abs_diff(now) > self.max_drift {
            return NonceCheck::OutsideWindow;
        }
        if self.below_floor(timestamp) {
            return NonceCheck::PossibleReplay;
        }
        // The pair is a duplicate under whatever timestamp it was filed:
        // the bucket of its own stamp first (an exact replay), then the
        // rest (at most `2 x max_drift + 1` seconds).
        if self
            .buckets
            .get(&timestamp)
            .is_some_and(|bucket| bucket.contains(&hash))
            || self.buckets.values().any(|bucket| bucket.contains(&hash))
        {
            return NonceCheck::Replayed;
        }
        if timestamp > now && self.len >= self.future_limit() {
            return NonceCheck::FutureUnderLoad;
        }
        NonceCheck::Fresh
    }

    /// Entries above which future-stamped challenges are not admitted: 7/8
    /// of the capacity, so the rest only holds stamps at or before `now`.
    fn future_limit(&self) -> usize {
        self.capacity - (self.capacity / 8).max(1)
    }

    fn below_floor(&self, timestamp: u64) -> bool {
        self.floor.is_some_and(|floor| timestamp <= floor)
    }

    /// Forgets the oldest second and raises the floor to it.
    fn forget_oldest(&mut self) {
        if let Some((ts, bucket)) = self.buckets.pop_first() {
            self.floor = Some(self.floor.map_or(ts, |floor| floor.max(ts)));
            self.len -= bucket.len();
        }
    }

    fn hash(&self, issuer: &PeerId, nonce: &[u8]) -> u64 {
        let mut hasher = SipHasher13::new_with_keys(self.key.0, self.key.1);
        hasher.write(issuer.as_bytes());
        hasher.write(nonce);
        hasher.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEER: PeerId = PeerId::from_bytes([3; 32]);

    fn nonce(i: u64) -> [u8; 16] {
        let mut n = [0u8; 16];
        n[..8].copy_from_slice(&i.to_be_bytes());
        n
    }

    /// The whole acceptance window at 1 s steps, with the challenger's clock
    /// at both extremes of the drift and in the middle: every replay the
    /// drift check lets through is caught, and the nonce is forgotten only
    /// when the drift check refuses it.
    #[test]
    fn retention_covers_the_whole_window_boundaries_included() {
        let drift = 600;
        let first_seen: u64 = 100_000;
        for offset in [-600i64, -1, 0, 1, 600] {
            let ts = first_seen.checked_add_signed(offset).unwrap();
            let mut cache = NonceCache::new(Duration::from_secs(drift), 1 << 16);
            assert_eq!(
                cache.check_and_insert(PEER, [1; 16], ts, first_seen),
                NonceCheck::Fresh
            );
            // Every second a replay passes the drift check, the cache
            // catches it; the first second it does not, the cache forgets.
            for now in first_seen..=ts + drift + 1 {
                let passes_drift = ts.abs_diff(now) <= drift;
                let expected = if passes_drift {
                    NonceCheck::Replayed
                } else {
                    NonceCheck::OutsideWindow
                };
                assert_eq!(
                    cache.check_and_insert(PEER, [1; 16], ts, now),
                    expected,
                    "stamped {ts}, replayed at {now}"
                );
            }
            assert!(cache.is_empty(), "forgotten once outside the window");
        }
    }

    #[test]
    fn the_replay_the_old_cache_accepted_is_caught() {
        // Stamped first_seen + 600, replayed at first_seen + 1200: the drift
        // check passes (exactly 600 s), so the cache must still know it.
        let mut cache = NonceCache::new(Duration::from_secs(600), 10);
        assert_eq!(
            cache.check_and_insert(PEER, [1; 16], 10_600, 10_000),
            NonceCheck::Fresh
        );
        assert_eq!(
            cache.check_and_insert(PEER, [1; 16], 10_600, 11_200),
            NonceCheck::Replayed
        );
    }

    #[test]
    fn same_nonce_from_another_issuer_is_distinct() {
        let mut cache = NonceCache::new(Duration::from_secs(10), 10);
        let other = PeerId::from_bytes([4; 32]);
        assert_eq!(
            cache.check_and_insert(PEER, [1; 16], 0, 0),
            NonceCheck::Fresh
        );
        assert_eq!(
            cache.check_and_insert(other, [1; 16], 0, 0),
            NonceCheck::Fresh
        );
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn a_full_cache_forgets_the_oldest_second_and_never_accepts_its_replays() {
        let mut cache = NonceCache::new(Duration::from_secs(10), 100);
        let now = 1_000;
        // A flood stamped 10 s in the past fills the cache.
        for i in 0..100 {
            assert_eq!(
                cache.check_and_insert(PEER, nonce(i), now - 10, now),
                NonceCheck::Fresh
            );
        }
        // A fresh challenge stamped now still gets in: the past second is
        // forgotten and becomes the floor.
        assert_eq!(
            cache.check_and_insert(PEER, nonce(1_000), now, now),
            NonceCheck::Fresh
        );
        assert_eq!(cache.floor(), Some(now - 10));
        assert_eq!(cache.len(), 1);
        // Replays of the forgotten nonces are refused, not accepted: by the
        // floor while the drift check would let them through, then by the
        // drift check.
        for i in 0..100 {
            assert_eq!(
                cache.check_and_insert(PEER, nonce(i), now - 10, now),
                NonceCheck::PossibleReplay
            );
        }
        for i in 0..100 {
            assert_eq!(
                cache.check_and_insert(PEER, nonce(i), now - 10, now + 1),
                NonceCheck::OutsideWindow
            );
        }
    }

    #[test]
    fn future_stamps_fill_at_most_seven_eighths_and_are_never_forgotten() {
        let mut cache = NonceCache::new(Duration::from_secs(10), 80);
        let now = 1_000;
        let mut admitted = 0;
        for i in 0..200 {
            match cache.check_and_insert(PEER, nonce(i), now + 10, now) {
                NonceCheck::Fresh => admitted += 1,
                other => assert_eq!(other, NonceCheck::FutureUnderLoad),
            }
        }
        assert_eq!(admitted, 70);
        // Challenges stamped now (or earlier) use the rest, and once that is
        // full too, only past seconds are forgotten: while their stamp is
        // ahead of the clock, the future-stamped nonces stay.
        for s in 0..10 {
            for i in 0..5 {
                assert_eq!(
                    cache.check_and_insert(PEER, nonce(10_000 + 100 * s + i), now + s, now + s),
                    NonceCheck::Fresh,
                    "second {s}"
                );
            }
            assert!(cache.floor().is_none_or(|floor| floor < now + s));
        }
        // Every future-stamped nonce that was admitted is still known.
        for i in 0..70 {
            assert_eq!(
                cache.check_and_insert(PEER, nonce(i), now + 10, now + 9),
                NonceCheck::Replayed
            );
        }
    }

    #[test]
    fn a_clock_stepping_back_does_not_reopen_a_replay() {
        let mut cache = NonceCache::new(Duration::from_secs(10), 10);
        assert_eq!(
            cache.check_and_insert(PEER, [1; 16], 100, 100),
            NonceCheck::Fresh
        );
        // One reading far ahead evicts the second 100 (raising the floor)...
        assert_eq!(
            cache.check_and_insert(PEER, [2; 16], 10_000, 10_000),
            NonceCheck::Fresh
        );
        // ...and when the clock is right again, the replay is still refused,
        // while honest challenges stamped with the current time get in.
        assert_eq!(
            cache.check_and_insert(PEER, [1; 16], 100, 105),
            NonceCheck::PossibleReplay
        );
        assert_eq!(
            cache.check_and_insert(PEER, [3; 16], 105, 105),
            NonceCheck::Fresh
        );
        assert_eq!(
            cache.check_and_insert(PEER, [3; 16], 105, 106),
            NonceCheck::Replayed
        );
    }

    #[test]
    fn future_stamps_never_fill_a_tiny_cache() {
        // Below 8 entries, at least one is still kept for stamps up to now.
        let mut cache = NonceCache::new(Duration::from_secs(600), 4);
        let now = 10_000;
        for i in 0..10 {
            let _ = cache.check_and_insert(PEER, nonce(i), now + 600, now);
        }
        assert_eq!(cache.len(), 3);
        assert_eq!(
            cache.check_and_insert(PEER, nonce(100), now, now),
            NonceCheck::Fresh
        );
        assert_eq!(cache.floor(), None);
    }

    #[test]
    fn sub_second_drift_is_whole_seconds_like_the_timestamps() {
        let mut cache = NonceCache::new(Duration::from_millis(1500), 4);
        assert_eq!(cache.max_drift_secs(), 1);
        assert_eq!(
            cache.check_and_insert(PEER, [1; 16], 99, 100),
            NonceCheck::Fresh
        );
        assert_eq!(
            cache.check_and_insert(PEER, [2; 16], 98, 100),
            NonceCheck::OutsideWindow
        );
    }
}
