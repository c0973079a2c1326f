//! The replay cache's memory bound, measured with a counting allocator:
//! heap <= `BASE_BYTES + BYTES_PER_ENTRY x entries + BYTES_PER_SECOND x
//! shard-seconds`, where `entries` is the most held at once and a
//! shard-second is a timestamp second held by one shard (at most
//! `min(entries, shards x seconds held)`). A drained cache gives its
//! tables back.

use std::alloc::System;
use std::time::Duration;

use bijou_proto::nonce_cache::{NonceCache, NonceCheck, DEFAULT_NONCE_CAPACITY};
use bijou_signing::PeerId;
use cap::Cap;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const DRIFT: u64 = 600;
const NOW: u64 = 1_800_000_000;

fn bound(cache: &NonceCache, entries: usize, seconds: usize) -> usize {
    let shard_seconds = entries.min(cache.shards() * seconds);
    NonceCache::BASE_BYTES
        + NonceCache::BYTES_PER_ENTRY * entries
        + NonceCache::BYTES_PER_SECOND * shard_seconds
}

/// Fills a cache of `capacity` with nonces spread over `seconds` distinct
/// timestamps (as a flood spreads them over the drift window), checking the
/// stated bound all along, then lets the clock expire it second by second,
/// checking the bound against the most entries held, and finally that the
/// drained cache holds no more than its shards' fixed parts. Returns the
/// bytes per entry once full. (Samples between checks: the transient of a
/// table doubling, inside one insert, is not seen here.)
/// `spread` stamps over `now - drift ..` (future seconds included, so only
/// three quarters of the capacity is filled, under the 7/8 limit on future
/// stamps); otherwise stamps are `now - (i % seconds)` and the requested
/// capacity is filled (the shards' headroom absorbs their unevenness).
fn fill_and_check(
    cache: &NonceCache,
    requested: usize,
    seconds: u64,
    spread: bool,
    before: usize,
) -> f64 {
    let capacity = cache.capacity();
    let drift = cache.max_drift_secs();
    let mut rng = StdRng::seed_from_u64(capacity as u64 ^ seconds);
    let mut worst_margin = f64::MAX;
    let filled = if spread { requested * 3 / 4 } else { requested };
    for i in 0..filled {
        let ts = if spread {
            NOW - drift + (i as u64 % seconds)
        } else {
            NOW - (i as u64 % seconds)
        };
        let verdict = cache.check_and_insert(
            PeerId::from_bytes(rng.random()),
            rng.random::<[u8; 16]>(),
            ts,
            NOW,
        );
        assert_eq!(verdict, NonceCheck::Fresh);
        if i % 101 == 0 || i + 1 == filled {
            let used = ALLOCATOR.allocated() - before;
            let held_seconds = (i as u64 + 1).min(seconds) as usize;
            let bound = bound(cache, cache.len(), held_seconds);
            assert!(
                used <= bound,
                "{used} B for {} entries in {held_seconds} s: over the stated {bound} B",
                cache.len()
            );
            worst_margin = worst_margin.min(bound as f64 / used as f64);
        }
    }
    let peak_entries = cache.len();
    let full = (ALLOCATOR.allocated() - before) as f64 / peak_entries as f64;
    // Expiry: the oldest second goes first; memory never exceeds the bound
    // for the most entries held.
    for late in 1..=seconds {
        cache.evict_expired(NOW + drift + late);
        let used = ALLOCATOR.allocated() - before;
        assert!(
            used <= bound(cache, peak_entries, seconds as usize),
            "{used} B after expiring {late} s"
        );
    }
    assert!(cache.is_empty());
    let drained = ALLOCATOR.allocated() - before;
    eprintln!(
        "{} shards, capacity {capacity} over {seconds} s: {full:.1} B/entry full; bound/used at worst {worst_margin:.2}; drained {drained} B",
        cache.shards()
    );
    assert!(
        drained <= NonceCache::BASE_BYTES / 32 * cache.shards(),
        "{drained} B left once drained"
    );
    full
}

/// One test, so that nothing else in this binary allocates while it
/// measures (the allocator counts every thread).
#[test]
fn memory_stays_under_the_stated_bound() {
    flood_shaped_caches();
    the_ephemeral_window();
    the_default_cache();
}

fn flood_shaped_caches() {
    for (capacity, seconds, spread) in [
        (200_000, 601, false),
        (200_000, 20, false),
        (200_000, 1, false),
        (200_000, 1_201, true),
    ] {
        for sharded in [true, false] {
            let before = ALLOCATOR.allocated();
            let cache = if sharded {
                NonceCache::new(Duration::from_secs(DRIFT), capacity)
            } else {
                NonceCache::unsharded(Duration::from_secs(DRIFT), capacity, [5; 16])
            };
            let full = fill_and_check(&cache, capacity, seconds, spread, before);
            assert!(full <= NonceCache::BYTES_PER_ENTRY as f64);
        }
    }
}

/// The ephemeral session's window: one shard of 65,536 over 61 seconds.
fn the_ephemeral_window() {
    let before = ALLOCATOR.allocated();
    let cache = NonceCache::unsharded(Duration::from_secs(30), 65_536, [5; 16]);
    let full = fill_and_check(&cache, 65_536, 61, true, before);
    assert!(full <= NonceCache::BYTES_PER_ENTRY as f64);
    let before = ALLOCATOR.allocated();
    let cache = NonceCache::unsharded(Duration::from_secs(30), 65_536, [5; 16]);
    let full = fill_and_check(&cache, 65_536, 31, false, before);
    assert!(full <= NonceCache::BYTES_PER_ENTRY as f64);
}

/// The default responder cache: 32 shards, filled to the requested 2^21
/// over the 601 past seconds of the window.
fn the_default_cache() {
    let before = ALLOCATOR.allocated();
    let cache = NonceCache::new(Duration::from_secs(DRIFT), DEFAULT_NONCE_CAPACITY);
    assert_eq!(cache.shards(), 32);
    let full = fill_and_check(&cache, DEFAULT_NONCE_CAPACITY, DRIFT + 1, false, before);
    assert!(full <= NonceCache::BYTES_PER_ENTRY as f64);
}
