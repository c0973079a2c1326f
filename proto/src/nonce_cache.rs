//! [`NonceCache`]: the `(issuer, nonce)` pairs of accepted signed messages,
//! kept exactly as long as a replay could pass the timestamp check, in
//! bounded memory, without ever locking honest peers out, at O(1) expected
//! cost per check, shared through `&self` by every connection.
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
//! Each entry is a 64-bit SipHash of `(issuer, nonce)` under a secret key
//! (from the OS with [`NonceCache::new`], from the driver's [`rng::SeededRng`](crate::rng) with
//! [`NonceCache::keyed`]), so nobody can aim for collisions or for a
//! shard. A pair is a duplicate whatever timestamp it comes with. At most
//! [`NonceCache::capacity`] entries are held. Anyone can mint keys and sign
//! valid challenges, so a flood can fill any capacity; refusing everything
//! once full would lock honest peers out for up to `2 * max_drift`.
//! Instead:
//!
//! 1. **Future stamps are admitted only while there is room.** Once the
//!    cache (its shard, see below) is 7/8 full, a challenge stamped ahead of
//!    the responder's clock is refused before anything is remembered
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
//! # Shards
//!
//! A cache made with [`NonceCache::new`] and a capacity of at least
//! `2 x 16,384` is split into 2 to 32 shards (a power of two; 32 at the
//! default capacity), each behind its own lock, with its own capacity,
//! 7/8 limit and floor; bits of the keyed hash pick the shard. Everything
//! above holds per shard, because everything that decides a pair's fate
//! lands in one shard: a replay carries the same `(issuer, nonce)`, hence
//! the same hash and the same shard, so it meets the entry or the floor
//! that shard raised when it forgot it. An honest challenge meets its own
//! shard's reserved eighth. [`NonceCache::floor`] reports the highest
//! shard floor. Concurrent accepts take different locks 31 times out of 32.
//! [`NonceCache::unsharded`] makes a single-shard cache (the ephemeral
//! session's, one per connection).
//!
//! Per-shard capacity against the requested one: a random key spreads any
//! flood evenly, but not exactly (binomially), so each of `s` shards holds
//! `ceil(capacity / s) + 6 x sqrt(capacity / s)` entries, six standard
//! deviations of headroom: a flood that fits the requested capacity fits
//! every shard, with odds of about 10^-8 against per shard and second.
//! [`NonceCache::capacity`] reports the sum, the real bound on entries held:
//! at most `capacity x (1 + 6 / sqrt(capacity / s))` (plus rounding), 2.3%
//! more than requested at the default capacity (2,146,304 for 2^21), and
//! at most 4.7% (each shard's share is at least 16,384).
//!
//! # Cost
//!
//! Each shard holds its entries in a slab (hash, and a link to the next
//! entry of the same second), an open-addressed table of 32-bit slots
//! (linear probing, load at most 3/4, an 8-bit hash fingerprint beside the
//! slab index so that a probe rarely reads the slab), a hash map from each
//! timestamp second held to its newest entry, and a min-heap of those
//! seconds. A check costs one table lookup (O(1) expected, whatever the
//! number of seconds held) and, if fresh, one map lookup and one insert.
//! Forgetting a second (expired, or the oldest when full) walks its list
//! and removes each entry from the table: O(entries in it), each entry
//! removed once after being inserted once, so amortised O(1) per check
//! (the one check that pays for a whole second can take milliseconds if a
//! flood stamped a shard's 67,072 entries in one second: rare, and never
//! more than one shard's capacity). A
//! second enters the heap once (its removal raises the floor to it, and a
//! second at or below the floor is never filed again), so the heap's
//! O(log seconds) is paid once per second, not per check.
//!
//! # Memory
//!
//! **Sizing.** With `capacity >= flood rate x (2 x max_drift + 1) x 8/7`
//! the window never narrows, and every peer within the drift gets in.
//!
//! **Bound.** At most [`NonceCache::BYTES_PER_ENTRY`] (25) bytes per entry
//! (a table at least 3/8 full once grown, 10.7 B, and a slab that grows by
//! an eighth at a time, 13.5 B), plus [`NonceCache::BYTES_PER_SECOND`] (64)
//! per shard-second (a timestamp second held by one shard: at most
//! `min(entries, shards x (2 x max_drift + 1))`), plus
//! [`NonceCache::BASE_BYTES`] (32 KiB, for 32 shards). Measured by
//! `proto/tests/nonce_cache_memory.rs`: 20 to 24 B per entry in a full
//! cache. Memory follows the most entries held at once, not the current
//! count: a shard keeps its table and slab (to reuse them) until it is
//! empty again, when it frees them, keeping only its fixed part (256 bytes
//! of heap per shard when sharded; an unsharded cache's is inline, so a
//! new one holds no heap at all), or, if it never held more than 12
//! entries, its smallest table, slab and maps (about 400 bytes).
//! So the default [`DEFAULT_NONCE_CAPACITY`] of 2^21 (2,146,304 entries
//! with the shards' headroom) stays under 54 MiB with a 600 s drift. One
//! transient exception: while a shard's table doubles, its old table (at
//! most 5.4 B per entry of that shard) coexists with the new one, and a
//! slab reallocation may copy (13.5 B per entry of that shard), for the
//! instant of one rehash or copy; one shard at a time per thread, so a
//! fraction of a percent for a sharded cache, and up to 19 B per entry
//! more for an unsharded one.
//!
//! ```
//! use bijou_frame::proto::nonce_cache::{NonceCache, NonceCheck};
//! use bijou_frame::signing::PeerId;
//! use std::time::Duration;
//!
//! let peer = PeerId::from_bytes([1; 32]);
//! let cache = NonceCache::new(Duration::from_secs(600), 2);
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
//!
//! Shared by many tasks or threads, through `&self` (the responder keeps
//! one in an `Arc`):
//!
//! ```
//! use bijou_frame::proto::nonce_cache::{NonceCache, NonceCheck, DEFAULT_NONCE_CAPACITY};
//! use bijou_frame::signing::PeerId;
//! use std::{sync::Arc, time::Duration};
//!
//! let cache = Arc::new(NonceCache::new(Duration::from_secs(600), DEFAULT_NONCE_CAPACITY));
//! assert_eq!(cache.shards(), 32);
//! std::thread::scope(|s| {
//!     for t in 0..2u8 {
//!         let cache = &cache;
//!         s.spawn(move || {
//!             let peer = PeerId::from_bytes([t; 32]);
//!             assert_eq!(cache.check_and_insert(peer, [1; 16], 1_000, 1_000), NonceCheck::Fresh);
//!         });
//!     }
//! });
//! assert_eq!(cache.len(), 2);
//! ```

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BinaryHeap};
use alloc::vec;
use alloc::vec::Vec;
#[cfg(test)]
use core::cell::Cell;
use core::cmp::Reverse;
use core::fmt;
use core::hash::Hasher;
use core::time::Duration;

use bijou_signing::PeerId;
use siphasher::sip::SipHasher13;

use crate::lock::Lock;
#[cfg(feature = "std")]
use crate::rng::SeededRng;

/// Default number of nonces a cache holds: 2^21 (plus the shards'
/// headroom, 2,146,304 in all; under 54 MiB).
pub const DEFAULT_NONCE_CAPACITY: usize = 1 << 21;

/// Smallest per-shard capacity [`NonceCache::new`] splits into.
const MIN_SHARD_CAPACITY: usize = 16_384;
/// Most shards [`NonceCache::new`] makes.
const MAX_SHARDS: usize = 32;
/// Most entries one shard holds: its slab index (plus one) fits in 24 bits.
pub(crate) const MAX_SHARD_ENTRIES: usize = (1 << 24) - 1;
/// Table slot bits holding the slab index plus one (0: empty slot).
const INDEX_BITS: u32 = 24;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;
/// "No entry" in the slab's links.
const NIL: u32 = u32::MAX;
/// Smallest table, in slots.
const MIN_SLOTS: usize = 16;

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
/// Every method takes `&self`: share it (in an `Arc`) between connections.
pub struct NonceCache {
    max_drift: u64,
    key: (u64, u64),
    shards: Shards,
}

/// A one-shard cache's contents ([`NonceCache::export`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Export {
    pub(crate) key: [u8; 16],
    pub(crate) floor: Option<u64>,
    /// `(second, keyed hash)`, oldest second first.
    pub(crate) entries: Vec<(u64, u64)>,
}

/// One shard inline (no allocation while idle), or a power of two of
/// them, each owning the hashes whose bits 32.. pick it.
enum Shards {
    One(Lock<Shard>),
    Many(Box<[Padded]>),
}

/// One shard behind its own lock, on its own cache lines, so that two
/// cores checking in different shards do not share a line.
#[derive(Debug)]
#[repr(align(128))]
struct Padded(Lock<Shard>);

impl NonceCache {
    /// Heap bytes per entry: a 4-byte table slot at a load of at least 3/8
    /// once grown (10.7 B), and 12 bytes of slab grown by an eighth at a
    /// time (13.5 B). With [`NonceCache::BYTES_PER_SECOND`], the stated
    /// bound: heap <= `BASE_BYTES + BYTES_PER_ENTRY x entries +
    /// BYTES_PER_SECOND x shard-seconds`, where `entries` is the most held
    /// at once since each shard was last empty (at most
    /// [`NonceCache::capacity`]) and shard-seconds the timestamp seconds
    /// held, counted once per shard holding them (at most
    /// `min(entries, shards x (2 x max_drift + 1))`), checked by
    /// `proto/tests/nonce_cache_memory.rs`.
    pub const BYTES_PER_ENTRY: usize = 25;

    /// Heap bytes of a cache with every shard holding something (each
    /// shard's 256-byte fixed part when sharded, its smallest table, slab
    /// and maps), for up to 32 shards; an unsharded cache needs a
    /// thirty-second of it.
    pub const BASE_BYTES: usize = 32 * 1024;

    /// Heap bytes per timestamp second held by a shard (its entry in the
    /// shard's map of seconds and in its heap); a shard holds at most
    /// `2 x max_drift + 1` of them while the clock moves forward.
    pub const BYTES_PER_SECOND: usize = 64;

    /// A cache for a responder that allows `max_drift` (whole seconds; a
    /// fraction is dropped, as timestamps are whole seconds), holding about
    /// `capacity` nonces (at least 1): from `2 x 16,384` on, split into up
    /// to 32 shards with some headroom each (see the [module docs](self)
    /// and [`NonceCache::capacity`]). Its window check is the responder's
    /// drift check, so acceptance and retention use the one number.
    ///
    /// Its hash key comes from the operating system
    /// ([`SeededRng::from_os`]); [`NonceCache::keyed`] takes one.
    #[cfg(feature = "std")]
    #[must_use]
    pub fn new(max_drift: Duration, capacity: usize) -> Self {
        Self::keyed(max_drift, capacity, SeededRng::from_os().bytes())
    }

    /// [`NonceCache::new`] with the SipHash key chosen by the caller (drawn
    /// from a [`SeededRng`], for a driver without std or a simulation). The
    /// key must be secret: whoever knows it can aim collisions at the table.
    #[must_use]
    pub fn keyed(max_drift: Duration, capacity: usize, key: [u8; 16]) -> Self {
        let capacity = capacity.max(1);
        let wanted = (capacity / MIN_SHARD_CAPACITY).clamp(1, MAX_SHARDS);
        // The largest power of two not above `wanted`.
        let shards = 1 << (usize::BITS - 1 - wanted.leading_zeros());
        Self::with_shards(max_drift, capacity, shards, key)
    }

    /// Like [`NonceCache::keyed`], in one shard holding exactly `capacity`
    /// nonces (at least 1, at most 2^24 - 1): for a cache used by one task
    /// at a time, such as a connection's.
    #[must_use]
    pub fn unsharded(max_drift: Duration, capacity: usize, key: [u8; 16]) -> Self {
        Self::with_shards(max_drift, capacity.max(1), 1, key)
    }

    fn with_shards(max_drift: Duration, capacity: usize, shards: usize, key: [u8; 16]) -> Self {
        let max_drift = max_drift.as_secs();
        let per_shard = capacity.div_ceil(shards);
        let headroom = if shards > 1 { 6 * per_shard.isqrt() } else { 0 };
        let per_shard = (per_shard + headroom).min(MAX_SHARD_ENTRIES);
        let shard = || Lock::new(Shard::new(max_drift, per_shard));
        let (k0, k1) = key.split_at(8);
        let word = |half: &[u8]| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(half);
            u64::from_le_bytes(bytes)
        };
        Self {
            max_drift,
            key: (word(k0), word(k1)),
            shards: if shards > 1 {
                Shards::Many((0..shards).map(|_| Padded(shard())).collect())
            } else {
                Shards::One(shard())
            },
        }
    }

    /// What a one-shard cache holds, for a session snapshot: its hash key,
    /// its floor, and each remembered `(second, keyed hash)`, oldest
    /// second first (within a second, newest first). `None` for a sharded
    /// cache (a connection's caches have one shard).
    pub(crate) fn export(&self) -> Option<Export> {
        let Shards::One(shard) = &self.shards else {
            return None;
        };
        let shard = lock(shard);
        let key = self.key_bytes();
        let mut entries = Vec::with_capacity(shard.len);
        for (&second, &newest) in &shard.seconds {
            let mut index = newest;
            while index != NIL && entries.len() < shard.len {
                entries.push((second, shard.hash_at(index)));
                index = shard.next_of(index);
            }
        }
        Some(Export {
            key,
            floor: shard.floor,
            entries,
        })
    }

    /// A one-shard cache holding what [`NonceCache::export`] gave: the
    /// same answers as the one exported. `None` if there are more entries
    /// than `capacity`, or a second at or below the floor.
    pub(crate) fn import(max_drift: Duration, capacity: usize, export: &Export) -> Option<Self> {
        let this = Self::unsharded(max_drift, capacity, export.key);
        if export.entries.len() > capacity.max(1) {
            return None;
        }
        {
            let Shards::One(shard) = &this.shards else {
                return None;
            };
            let mut shard = lock(shard);
            // The shard's own capacity, which may be below `capacity`.
            if export.entries.len() > shard.capacity {
                return None;
            }
            shard.floor = export.floor;
            // Oldest second first; within a second, the exported order is
            // newest first, so file them reversed to keep it.
            let mut at = 0;
            while at < export.entries.len() {
                let second = export.entries[at].0;
                let end = export.entries[at..]
                    .iter()
                    .position(|&(s, _)| s != second)
                    .map_or(export.entries.len(), |n| at + n);
                if shard.below_floor(second) || shard.seconds.contains_key(&second) {
                    return None;
                }
                for &(_, hash) in export.entries[at..end].iter().rev() {
                    shard.insert(hash, second);
                }
                at = end;
            }
        }
        Some(this)
    }

    /// Adds what another cache held ([`NonceCache::export`]): for a
    /// session restored into a [`ReplayTable`](crate::replay_table::ReplayTable)
    /// that already keeps a window for its peer. The floor rises to the
    /// export's. Under the same hash key each entry is filed as a check
    /// would file it (room made by forgetting the oldest second, which
    /// raises the floor; an entry older than every second held, in a full
    /// cache, is forgotten at once). Under another key the hashes cannot
    /// be compared, so the export is forgotten whole: the floor rises to
    /// its newest second. Either way, whatever the export would refuse as
    /// a replay this cache refuses from now on (as a replay, or as a
    /// possible one).
    pub(crate) fn merge(&self, export: &Export) {
        let same_key = self.key_bytes() == export.key;
        let newest = export.entries.iter().map(|&(second, _)| second).max();
        let floor = if same_key {
            export.floor
        } else {
            export.floor.max(newest)
        };
        if let Some(floor) = floor {
            for shard in self.each_shard() {
                lock(shard).raise_floor(floor);
            }
        }
        if !same_key {
            return;
        }
        for &(second, hash) in &export.entries {
            if let Some(shard) = self.shard(hash) {
                lock(shard).file(hash, second);
            }
        }
    }

    fn key_bytes(&self) -> [u8; 16] {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&self.key.0.to_le_bytes());
        key[8..].copy_from_slice(&self.key.1.to_le_bytes());
        key
    }

    /// The drift the cache's retention covers, in seconds.
    #[must_use]
    pub fn max_drift_secs(&self) -> u64 {
        self.max_drift
    }

    /// How many shards (locks) the cache is split into.
    #[must_use]
    pub fn shards(&self) -> usize {
        match &self.shards {
            Shards::One(_) => 1,
            Shards::Many(shards) => shards.len(),
        }
    }

    fn each_shard(&self) -> impl Iterator<Item = &Lock<Shard>> {
        let (one, many) = match &self.shards {
            Shards::One(shard) => (Some(shard), &[][..]),
            Shards::Many(shards) => (None, &shards[..]),
        };
        one.into_iter().chain(many.iter().map(|padded| &padded.0))
    }

    /// The most nonces held at once: the sum of the shards' capacities
    /// (the requested capacity, plus headroom when sharded).
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.fold_shards(0, |sum, shard| sum + shard.capacity)
    }

    /// Nonces currently held (some may have expired but not been evicted
    /// yet). Locks each shard in turn, so under concurrent checks it is a
    /// snapshot of each shard, not of the whole.
    #[must_use]
    pub fn len(&self) -> usize {
        self.fold_shards(0, |sum, shard| sum + shard.len)
    }

    /// Whether the cache holds no nonce.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The floor, if a flood made the cache forget a second that could
    /// still be replayed: challenges stamped at or before it are refused.
    /// When sharded, the highest of the shards' floors: a challenge stamped
    /// above it is never refused as [`NonceCheck::PossibleReplay`], one at
    /// or below it is if its own shard's floor covers it.
    #[must_use]
    pub fn floor(&self) -> Option<u64> {
        self.fold_shards(None, |max, shard| max.max(shard.floor))
    }

    /// Forgets, in every shard, every second whose challenges can no longer
    /// pass the drift check at `now` (`ts + max_drift < now`). (Each check
    /// already does this in the shard it touches.) Each forgotten second
    /// also raises its shard's floor, so that if the clock later reads an
    /// earlier time (a step back, or one bad reading ahead), replays of
    /// forgotten nonces are still refused rather than accepted. The floor
    /// is never lowered: it only refuses stamps at or before seconds
    /// already seen, which an honest peer, stamping its current time, does
    /// not use again.
    pub fn evict_expired(&self, now: u64) {
        for shard in self.each_shard() {
            lock(shard).evict_expired(now);
        }
    }

    /// Checks the nonce of a challenge by `issuer` stamped `timestamp`, at
    /// responder time `now` (unix seconds), and remembers it if it is new.
    /// Locks one shard.
    pub fn check_and_insert(
        &self,
        issuer: PeerId,
        nonce: impl AsRef<[u8]>,
        timestamp: u64,
        now: u64,
    ) -> NonceCheck {
        let hash = self.hash(&issuer, nonce.as_ref());
        // (Never `None`; if it were, refusing is the safe answer.)
        self.shard(hash)
            .map_or(NonceCheck::PossibleReplay, |shard| {
                lock(shard).check_and_insert(hash, timestamp, now)
            })
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
        let hash = self.hash(&issuer, nonce.as_ref());
        self.shard(hash)
            .map_or(NonceCheck::PossibleReplay, |shard| {
                lock(shard).check_hash(hash, timestamp, now)
            })
    }

    /// The shard owning `hash`. Bits 32.. pick it; the table uses the low
    /// bits (the home slot) and the top byte (the fingerprint), so within
    /// a shard those stay uniform. (The number of shards is a power of
    /// two, so this is never `None`.)
    fn shard(&self, hash: u64) -> Option<&Lock<Shard>> {
        match &self.shards {
            Shards::One(shard) => Some(shard),
            Shards::Many(shards) => shards.get(self.shard_index(hash)).map(|padded| &padded.0),
        }
    }

    fn shard_index(&self, hash: u64) -> usize {
        (hash >> 32) as usize & (self.shards() - 1)
    }

    fn fold_shards<T>(&self, init: T, mut f: impl FnMut(T, &Shard) -> T) -> T {
        self.each_shard()
            .fold(init, |acc, shard| f(acc, &lock(shard)))
    }

    fn hash(&self, issuer: &PeerId, nonce: &[u8]) -> u64 {
        let mut hasher = SipHasher13::new_with_keys(self.key.0, self.key.1);
        hasher.write(issuer.as_bytes());
        hasher.write(nonce);
        hasher.finish()
    }

    /// Table slots, slab links and seconds-map reads since the cache was
    /// made, summed over the shards: the work counter of the cost tests.
    #[cfg(test)]
    fn visits(&self) -> u64 {
        self.fold_shards(0, |sum, shard| sum + shard.visits.get())
    }
}

fn lock(shard: &Lock<Shard>) -> impl core::ops::DerefMut<Target = Shard> + '_ {
    shard.lock()
}

impl Clone for NonceCache {
    /// An independent copy (same key, same entries and floors).
    fn clone(&self) -> Self {
        Self {
            max_drift: self.max_drift,
            key: self.key,
            shards: match &self.shards {
                Shards::One(shard) => Shards::One(Lock::new(lock(shard).clone())),
                Shards::Many(shards) => Shards::Many(
                    shards
                        .iter()
                        .map(|padded| Padded(Lock::new(lock(&padded.0).clone())))
                        .collect(),
                ),
            },
        }
    }
}

impl fmt::Debug for NonceCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NonceCache")
            .field("max_drift", &self.max_drift)
            .field("shards", &self.shards())
            .field("capacity", &self.capacity())
            .field("len", &self.len())
            .field("floor", &self.floor())
            .finish_non_exhaustive()
    }
}

/// One shard: the whole cache's rules over the hashes it owns.
#[derive(Debug, Clone)]
struct Shard {
    max_drift: u64,
    capacity: usize,
    len: usize,
    /// Challenges stamped at or before this were possibly forgotten.
    floor: Option<u64>,
    /// Open addressing, linear probing, a power of two long (or empty):
    /// 0 is a free slot, else `fingerprint << 24 | (slab index + 1)`, the
    /// fingerprint being the hash's top byte.
    slots: Vec<u32>,
    /// Slab: each entry's keyed hash...
    hashes: Vec<u64>,
    /// ...and the next (older) entry of the same second, or, for a free
    /// entry, the next free one ([`NIL`] ends either list).
    next: Vec<u32>,
    /// First free slab entry.
    free: u32,
    /// Each timestamp second held -> its newest entry.
    seconds: BTreeMap<u64, u32>,
    /// The seconds held, oldest first.
    order: BinaryHeap<Reverse<u64>>,
    #[cfg(test)]
    visits: Cell<u64>,
}

impl Shard {
    fn new(max_drift: u64, capacity: usize) -> Self {
        Self {
            max_drift,
            capacity,
            len: 0,
            floor: None,
            slots: Vec::new(),
            hashes: Vec::new(),
            next: Vec::new(),
            free: NIL,
            seconds: BTreeMap::new(),
            order: BinaryHeap::new(),
            #[cfg(test)]
            visits: Cell::new(0),
        }
    }

    #[inline]
    fn visit(&self) {
        #[cfg(test)]
        self.visits.set(self.visits.get() + 1);
    }

    fn evict_expired(&mut self, now: u64) {
        while let Some(&Reverse(ts)) = self.order.peek() {
            if ts.saturating_add(self.max_drift) >= now {
                break;
            }
            self.forget_oldest();
        }
    }

    fn check_and_insert(&mut self, hash: u64, timestamp: u64, now: u64) -> NonceCheck {
        self.evict_expired(now);
        let verdict = self.check_hash(hash, timestamp, now);
        if verdict != NonceCheck::Fresh {
            return verdict;
        }
        while self.len >= self.capacity && !self.order.is_empty() {
            self.forget_oldest();
        }
        // Forgetting may have raised the floor to this timestamp.
        if self.below_floor(timestamp) {
            return NonceCheck::PossibleReplay;
        }
        self.insert(hash, timestamp);
        NonceCheck::Fresh
    }

    fn check_hash(&self, hash: u64, timestamp: u64, now: u64) -> NonceCheck {
        if timestamp.abs_diff(now) > self.max_drift {
            return NonceCheck::OutsideWindow;
        }
        if self.below_floor(timestamp) {
            return NonceCheck::PossibleReplay;
        }
        // The pair is a duplicate under whatever timestamp it was filed:
        // one table lookup, whatever the number of seconds held.
        if self.find(hash, None).is_some() {
            return NonceCheck::Replayed;
        }
        if timestamp > now && self.len >= self.future_limit() {
            return NonceCheck::FutureUnderLoad;
        }
        NonceCheck::Fresh
    }

    /// Files `hash` under `second` unless it is held or at or below the
    /// floor, making room as [`Shard::check_and_insert`] does; in a full
    /// shard, an entry older than every second held is forgotten instead
    /// (the floor rises to it), not filed at a newer second's expense.
    fn file(&mut self, hash: u64, second: u64) {
        if self.below_floor(second) || self.find(hash, None).is_some() {
            return;
        }
        if self.len >= self.capacity
            && self
                .order
                .peek()
                .is_none_or(|&Reverse(oldest)| oldest > second)
        {
            self.raise_floor(second);
            return;
        }
        while self.len >= self.capacity && !self.order.is_empty() {
            self.forget_oldest();
        }
        if !self.below_floor(second) {
            self.insert(hash, second);
        }
    }

    /// Forgets every second at or before `to` and raises the floor to it
    /// (never lowers it).
    fn raise_floor(&mut self, to: u64) {
        while self
            .order
            .peek()
            .is_some_and(|&Reverse(oldest)| oldest <= to)
        {
            self.forget_oldest();
        }
        self.floor = Some(self.floor.map_or(to, |floor| floor.max(to)));
    }

    /// Entries above which future-stamped challenges are not admitted: 7/8
    /// of the capacity, so the rest only holds stamps at or before `now`.
    fn future_limit(&self) -> usize {
        self.capacity - (self.capacity / 8).max(1)
    }

    fn below_floor(&self, timestamp: u64) -> bool {
        self.floor.is_some_and(|floor| timestamp <= floor)
    }

    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    fn slot(&self, position: usize) -> u32 {
        self.visit();
        self.slots.get(position).copied().unwrap_or(0)
    }

    fn hash_at(&self, index: u32) -> u64 {
        self.hashes.get(index as usize).copied().unwrap_or(0)
    }

    fn next_of(&self, index: u32) -> u32 {
        self.visit();
        self.next.get(index as usize).copied().unwrap_or(NIL)
    }

    fn set_next(&mut self, index: u32, to: u32) {
        if let Some(link) = self.next.get_mut(index as usize) {
            *link = to;
        }
    }

    /// The table position holding `hash` (and, if given, slab entry
    /// `index`).
    fn find(&self, hash: u64, index: Option<u32>) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.mask();
        let fingerprint = (hash >> 56) as u32;
        let mut position = hash as usize & mask;
        // The load is at most 3/4, so a free slot ends every probe.
        loop {
            let slot = self.slot(position);
            if slot == 0 {
                return None;
            }
            let at = (slot & INDEX_MASK) - 1;
            if slot >> INDEX_BITS == fingerprint
                && index.is_none_or(|index| index == at)
                && self.hash_at(at) == hash
            {
                return Some(position);
            }
            position = (position + 1) & mask;
        }
    }

    /// Files slab entry `index` (holding `hash`) in the table, which has a
    /// free slot.
    fn place(&mut self, hash: u64, index: u32) {
        let mask = self.mask();
        let mut position = hash as usize & mask;
        while self.slot(position) != 0 {
            position = (position + 1) & mask;
        }
        if let Some(slot) = self.slots.get_mut(position) {
            *slot = ((hash >> 56) as u32) << INDEX_BITS | (index + 1);
        }
    }

    /// Empties table position `hole`, shifting back the entries after it
    /// that probed past it (so no tombstones are needed).
    fn remove_at(&mut self, mut hole: usize) {
        let mask = self.mask();
        let mut position = hole;
        loop {
            position = (position + 1) & mask;
            let slot = self.slot(position);
            if slot == 0 {
                break;
            }
            let home = self.hash_at((slot & INDEX_MASK) - 1) as usize & mask;
            // The entry at `position` may fill the hole if the hole lies on
            // its probe path, from `home` to `position`.
            if position.wrapping_sub(home) & mask >= position.wrapping_sub(hole) & mask {
                if let Some(dst) = self.slots.get_mut(hole) {
                    *dst = slot;
                }
                hole = position;
            }
        }
        if let Some(dst) = self.slots.get_mut(hole) {
            *dst = 0;
        }
    }

    /// Doubles the table (or makes the first one) and refiles every entry.
    fn grow_table(&mut self) {
        let size = (self.slots.len() * 2).max(MIN_SLOTS);
        let old = core::mem::replace(&mut self.slots, vec![0; size]);
        for slot in old {
            if slot != 0 {
                let index = (slot & INDEX_MASK) - 1;
                self.place(self.hash_at(index), index);
            }
        }
    }

    /// Remembers `hash` under second `timestamp` (not held yet, room made).
    fn insert(&mut self, hash: u64, timestamp: u64) {
        let index = if self.free == NIL {
            if self.hashes.len() == self.hashes.capacity() {
                // Grow by an eighth (at least 16), not double: the slab is
                // most of the memory, and amortised O(1) either way.
                let room = self.capacity.saturating_sub(self.hashes.len());
                let extra = (self.hashes.len() / 8).max(16).min(room.max(1));
                self.hashes.reserve_exact(extra);
                self.next.reserve_exact(extra);
            }
            self.hashes.push(hash);
            self.next.push(NIL);
            // Below 2^24 - 1: the slab never holds more than `capacity`.
            (self.hashes.len() - 1) as u32
        } else {
            let index = self.free;
            self.free = self.next_of(index);
            if let Some(slot) = self.hashes.get_mut(index as usize) {
                *slot = hash;
            }
            index
        };
        self.visit();
        let newest = self.seconds.insert(timestamp, index);
        match newest {
            Some(older) => self.set_next(index, older),
            None => {
                self.set_next(index, NIL);
                self.order.push(Reverse(timestamp));
            }
        }
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow_table();
        }
        self.place(hash, index);
        self.len += 1;
    }

    /// Forgets the oldest second and raises the floor to it.
    fn forget_oldest(&mut self) {
        let Some(Reverse(ts)) = self.order.pop() else {
            return;
        };
        self.floor = Some(self.floor.map_or(ts, |floor| floor.max(ts)));
        self.visit();
        let mut index = self.seconds.remove(&ts).unwrap_or(NIL);
        while index != NIL {
            let next = self.next_of(index);
            if let Some(position) = self.find(self.hash_at(index), Some(index)) {
                self.remove_at(position);
            }
            self.set_next(index, self.free);
            self.free = index;
            self.len -= 1;
            index = next;
        }
        if self.len == 0 {
            // Drained (the floor stays): give the memory back, unless it is
            // the smallest table (12 entries at most, about 400 bytes in
            // all), kept so that a cache holding one nonce at a time does
            // not allocate on every check.
            self.free = NIL;
            self.hashes.clear();
            self.next.clear();
            self.seconds.clear();
            self.order.clear();
            if self.slots.len() > MIN_SLOTS {
                self.slots = Vec::new();
                self.hashes = Vec::new();
                self.next = Vec::new();
                self.seconds = BTreeMap::new();
                self.order = BinaryHeap::new();
            }
        }
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
            let cache = NonceCache::new(Duration::from_secs(drift), 1 << 16);
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
        let cache = NonceCache::new(Duration::from_secs(600), 10);
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
        let cache = NonceCache::new(Duration::from_secs(10), 10);
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
        let cache = NonceCache::new(Duration::from_secs(10), 100);
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
        let cache = NonceCache::new(Duration::from_secs(10), 80);
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
        let cache = NonceCache::new(Duration::from_secs(10), 10);
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
        let cache = NonceCache::new(Duration::from_secs(600), 4);
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
        let cache = NonceCache::new(Duration::from_millis(1500), 4);
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

    impl NonceCache {
        fn shard_at(&self, index: usize) -> &Lock<Shard> {
            self.each_shard().nth(index).unwrap()
        }
    }

    fn peer(i: u64) -> PeerId {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&i.to_be_bytes());
        PeerId::from_bytes(bytes)
    }

    /// Fills a cache with `entries` nonces spread over `seconds` timestamp
    /// seconds around `now`, then counts the work (table slots, slab links,
    /// seconds-map reads) of replayed and fresh checks. The old cache
    /// visited every second held on each check; this one's cost depends on
    /// the table's load, not on how the entries spread over seconds.
    fn work_per_check(entries: u64, seconds: u64, sharded: bool) -> (f64, f64) {
        let drift = 600;
        let now = 1_000_000;
        let capacity = 1 << 17;
        let cache = if sharded {
            NonceCache::new(Duration::from_secs(drift), capacity)
        } else {
            NonceCache::unsharded(Duration::from_secs(drift), capacity, [5; 16])
        };
        for i in 0..entries {
            let ts = now - drift + i % seconds;
            assert_eq!(
                cache.check_and_insert(peer(i), nonce(i), ts, now),
                NonceCheck::Fresh
            );
        }
        let checks = 2_000;
        let before = cache.visits();
        for i in 0..checks {
            let ts = now - drift + i % seconds;
            assert_eq!(
                cache.check_and_insert(peer(i), nonce(i), ts, now),
                NonceCheck::Replayed
            );
        }
        let replayed = (cache.visits() - before) as f64 / checks as f64;
        let before = cache.visits();
        for i in entries..entries + checks {
            // Fresh stamps in seconds already held (new seconds cost a heap
            // push once per second, not per check).
            let ts = now - drift + i % seconds;
            assert_eq!(
                cache.check_and_insert(peer(i), nonce(i), ts, now),
                NonceCheck::Fresh
            );
        }
        let fresh = (cache.visits() - before) as f64 / checks as f64;
        (replayed, fresh)
    }

    #[test]
    fn a_checks_cost_does_not_depend_on_the_seconds_held() {
        for sharded in [false, true] {
            let entries = 60_000;
            let mut costs = Vec::new();
            for seconds in [1, 10, 100, 1_201] {
                let (replayed, fresh) = work_per_check(entries, seconds, sharded);
                eprintln!("sharded {sharded}, {seconds} s held: {replayed:.2} visits per replayed check, {fresh:.2} per fresh one");
                // The old scan: up to `seconds` bucket lookups per check.
                assert!(replayed < 6.0, "{seconds} s: {replayed} per replay");
                assert!(fresh < 12.0, "{seconds} s: {fresh} per fresh check");
                costs.push(replayed + fresh);
            }
            let (min, max) = costs
                .iter()
                .fold((f64::MAX, 0f64), |(lo, hi), &c| (lo.min(c), hi.max(c)));
            // Same load, same work (up to probing noise), from 1 to 1,201
            // seconds held.
            assert!(max < min * 1.5, "sharded {sharded}: {costs:?}");
        }
    }

    /// Forgetting a second is O(entries in it); over a long run with the
    /// clock moving, a flood overflowing the cache, and seconds expiring,
    /// the work per check stays bounded.
    #[test]
    fn expiry_and_forgetting_are_amortised_constant_work() {
        let drift = 30;
        let cache = NonceCache::unsharded(Duration::from_secs(drift), 4_096, [5; 16]);
        let mut now = 1_000_000;
        let mut checks = 0u64;
        let mut i = 0;
        for second in 0..400u64 {
            now += 1;
            // 1,000 per second against room for about 4 seconds' worth:
            // the oldest seconds are forgotten, the rest expire.
            for _ in 0..1_000 {
                i += 1;
                let ts = match i % 3 {
                    0 => now - drift,
                    1 => now,
                    _ => now + second % 7,
                };
                let _ = cache.check_and_insert(peer(i), nonce(i), ts, now);
                checks += 1;
            }
            assert!(cache.len() <= cache.capacity());
        }
        let per_check = cache.visits() as f64 / checks as f64;
        eprintln!("{per_check:.2} visits per check, forgetting and expiry included");
        assert!(per_check < 16.0, "{per_check}");
    }

    /// The old cache, as it was: one hash set per second, every second
    /// scanned on each check. Its verdicts are the specification.
    #[derive(Default)]
    struct Reference {
        max_drift: u64,
        capacity: usize,
        buckets: std::collections::BTreeMap<u64, std::collections::HashSet<(u64, u64)>>,
        len: usize,
        floor: Option<u64>,
    }

    impl Reference {
        fn check_and_insert(&mut self, pair: (u64, u64), ts: u64, now: u64) -> NonceCheck {
            while let Some((&oldest, _)) = self.buckets.first_key_value() {
                if oldest.saturating_add(self.max_drift) >= now {
                    break;
                }
                self.forget_oldest();
            }
            if ts.abs_diff(now) > self.max_drift {
                return NonceCheck::OutsideWindow;
            }
            if self.floor.is_some_and(|floor| ts <= floor) {
                return NonceCheck::PossibleReplay;
            }
            if self.buckets.values().any(|bucket| bucket.contains(&pair)) {
                return NonceCheck::Replayed;
            }
            if ts > now && self.len >= self.capacity - (self.capacity / 8).max(1) {
                return NonceCheck::FutureUnderLoad;
            }
            while self.len >= self.capacity {
                self.forget_oldest();
            }
            if self.floor.is_some_and(|floor| ts <= floor) {
                return NonceCheck::PossibleReplay;
            }
            self.buckets.entry(ts).or_default().insert(pair);
            self.len += 1;
            NonceCheck::Fresh
        }

        fn forget_oldest(&mut self) {
            if let Some((ts, bucket)) = self.buckets.pop_first() {
                self.floor = Some(self.floor.map_or(ts, |floor| floor.max(ts)));
                self.len -= bucket.len();
            }
        }
    }

    /// Random traffic (fresh pairs, replays under the same and other
    /// stamps, stamps in and out of the window, the clock moving on,
    /// standing still and stepping back) through a sharded cache and
    /// through one old cache per shard: the same verdict every time, and
    /// the same sizes and floors.
    #[test]
    fn every_verdict_matches_the_old_cache_shard_by_shard() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |bound: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % bound
        };
        for (shards, capacity, drift) in
            [(1, 7, 3), (1, 50, 5), (1, 300, 20), (4, 400, 8), (8, 64, 2)]
        {
            let cache =
                NonceCache::with_shards(Duration::from_secs(drift), capacity, shards, [5; 16]);
            let per_shard = cache.capacity() / shards;
            let mut reference: Vec<Reference> = (0..shards)
                .map(|_| Reference {
                    max_drift: drift,
                    capacity: per_shard,
                    ..Reference::default()
                })
                .collect();
            let mut now = 1_000_000u64;
            let mut minted = 0u64;
            for step in 0..40_000 {
                match next(100) {
                    0..=9 => now += 1,
                    10 => now = now.saturating_sub(next(3 * drift + 2)),
                    11 => now += next(3 * drift + 2),
                    _ => {}
                }
                let pair = if minted == 0 || next(3) == 0 {
                    minted += 1;
                    (minted % 17, minted)
                } else {
                    let old = 1 + next(minted);
                    (old % 17, old)
                };
                let ts = (now + next(2 * drift + 5)).saturating_sub(drift + 2);
                let issuer = peer(pair.0);
                let hash = cache.hash(&issuer, &nonce(pair.1));
                let shard = cache.shard_index(hash);
                let probed = cache.probe(issuer, nonce(pair.1), ts, now);
                let got = cache.check_and_insert(issuer, nonce(pair.1), ts, now);
                let want = reference[shard].check_and_insert(pair, ts, now);
                assert_eq!(got, want, "step {step}: {pair:?} stamped {ts} at {now}");
                if matches!(want, NonceCheck::Replayed | NonceCheck::OutsideWindow) {
                    assert_eq!(probed, want, "step {step}: probe");
                }
                let held = lock(cache.shard_at(shard)).len;
                assert_eq!(held, reference[shard].len, "step {step}");
                assert_eq!(lock(cache.shard_at(shard)).floor, reference[shard].floor);
            }
            assert_eq!(cache.len(), reference.iter().map(|r| r.len).sum::<usize>());
        }
    }

    #[test]
    fn shards_and_headroom_follow_the_capacity() {
        let drift = Duration::from_secs(600);
        assert_eq!(NonceCache::new(drift, 100).shards(), 1);
        assert_eq!(NonceCache::new(drift, 100).capacity(), 100);
        assert_eq!(NonceCache::new(drift, 2 * 16_384 - 1).shards(), 1);
        assert_eq!(NonceCache::new(drift, 2 * 16_384).shards(), 2);
        assert_eq!(NonceCache::new(drift, 3 * 16_384).shards(), 2);
        let default = NonceCache::new(drift, DEFAULT_NONCE_CAPACITY);
        assert_eq!(default.shards(), 32);
        assert_eq!(default.capacity(), 32 * (65_536 + 6 * 256));
        assert_eq!(default.capacity(), 2_146_304);
        let smallest = NonceCache::new(drift, 32 * 16_384);
        assert!(smallest.capacity() * 100 <= 32 * 16_384 * 105);
        let one = NonceCache::unsharded(drift, DEFAULT_NONCE_CAPACITY, [5; 16]);
        assert_eq!((one.shards(), one.capacity()), (1, DEFAULT_NONCE_CAPACITY));
        assert_eq!(NonceCache::unsharded(drift, 0, [5; 16]).capacity(), 1);
    }

    #[test]
    fn a_drained_shard_gives_its_memory_back_and_keeps_its_floor() {
        let cache = NonceCache::unsharded(Duration::from_secs(5), 1_000, [5; 16]);
        for i in 0..900 {
            assert_eq!(
                cache.check_and_insert(peer(i), nonce(i), 98 + i % 3, 100),
                NonceCheck::Fresh
            );
        }
        cache.evict_expired(200);
        assert!(cache.is_empty());
        let shard = lock(cache.shard_at(0));
        assert_eq!(
            (
                shard.slots.capacity(),
                shard.hashes.capacity(),
                shard.next.capacity()
            ),
            (0, 0, 0)
        );
        assert_eq!(shard.floor, Some(100));
        drop(shard);
        assert_eq!(
            cache.check_and_insert(peer(1), nonce(1), 100, 104),
            NonceCheck::PossibleReplay
        );
    }

    /// A merge under the same key files every entry not held (the
    /// export's floor with them); under another key it raises the floor
    /// over the whole export and drops what it covers; either way what the
    /// export refused is refused, and the result exports and imports.
    #[test]
    fn a_merge_refuses_whatever_the_export_refused() {
        let drift = Duration::from_secs(30);
        let source = NonceCache::unsharded(drift, 8, [1; 16]);
        assert_eq!(
            source.check_and_insert(PEER, nonce(1), 100, 100),
            NonceCheck::Fresh
        );
        assert_eq!(
            source.check_and_insert(PEER, nonce(2), 101, 101),
            NonceCheck::Fresh
        );
        let mut export = source.export().expect("one shard");
        export.floor = Some(90);

        let same = NonceCache::unsharded(drift, 8, [1; 16]);
        assert_eq!(
            same.check_and_insert(PEER, nonce(3), 100, 100),
            NonceCheck::Fresh
        );
        same.merge(&export);
        same.merge(&export); // twice: nothing more
        assert_eq!(same.len(), 3);
        assert_eq!(same.floor(), Some(90));
        for (n, ts) in [(1, 100), (2, 101), (3, 100)] {
            assert_eq!(same.probe(PEER, nonce(n), ts, 102), NonceCheck::Replayed);
        }
        assert_eq!(
            same.probe(PEER, nonce(4), 90, 102),
            NonceCheck::PossibleReplay
        );
        assert_eq!(same.probe(PEER, nonce(4), 101, 102), NonceCheck::Fresh);

        let other = NonceCache::unsharded(drift, 8, [2; 16]);
        assert_eq!(
            other.check_and_insert(PEER, nonce(3), 100, 100),
            NonceCheck::Fresh
        );
        assert_eq!(
            other.check_and_insert(PEER, nonce(5), 102, 102),
            NonceCheck::Fresh
        );
        other.merge(&export);
        assert_eq!(other.floor(), Some(101), "the export's newest second");
        assert_eq!(other.len(), 1, "the entry at 100 is under the floor now");
        assert_eq!(
            other.probe(PEER, nonce(1), 100, 102),
            NonceCheck::PossibleReplay
        );
        assert_eq!(
            other.probe(PEER, nonce(2), 101, 102),
            NonceCheck::PossibleReplay
        );
        assert_eq!(other.probe(PEER, nonce(5), 102, 102), NonceCheck::Replayed);
        let again = other.export().expect("one shard");
        assert!(NonceCache::import(drift, 8, &again).is_some());
    }

    /// Merged into a full cache, entries make room as checks do (the
    /// oldest second forgotten, the floor raised), and one older than
    /// every second held is forgotten at once.
    #[test]
    fn a_merge_into_a_full_cache_forgets_the_oldest_seconds() {
        let drift = Duration::from_secs(30);
        let full = NonceCache::unsharded(drift, 2, [1; 16]);
        assert_eq!(
            full.check_and_insert(PEER, nonce(1), 100, 105),
            NonceCheck::Fresh
        );
        assert_eq!(
            full.check_and_insert(PEER, nonce(2), 101, 105),
            NonceCheck::Fresh
        );
        let source = NonceCache::unsharded(drift, 2, [1; 16]);
        assert_eq!(
            source.check_and_insert(PEER, nonce(9), 99, 105),
            NonceCheck::Fresh
        );
        assert_eq!(
            source.check_and_insert(PEER, nonce(3), 103, 105),
            NonceCheck::Fresh
        );
        full.merge(&source.export().expect("one shard"));
        assert_eq!(full.len(), 2);
        assert_eq!(
            full.floor(),
            Some(100),
            "99 forgotten at once, then 100 for 103"
        );
        assert_eq!(
            full.probe(PEER, nonce(9), 99, 105),
            NonceCheck::PossibleReplay
        );
        assert_eq!(
            full.probe(PEER, nonce(1), 100, 105),
            NonceCheck::PossibleReplay
        );
        assert_eq!(full.probe(PEER, nonce(2), 101, 105), NonceCheck::Replayed);
        assert_eq!(full.probe(PEER, nonce(3), 103, 105), NonceCheck::Replayed);
    }
}
