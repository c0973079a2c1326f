//! The replay cache's memory bound, measured with a counting allocator:
//! heap <= `BASE_BYTES + BYTES_PER_ENTRY x entries + BYTES_PER_SECOND x
//! seconds held`.

use std::alloc::System;
use std::time::Duration;

use bijou_proto::handshake::{NonceCache, NonceCheck};
use bijou_signing::PeerId;
use cap::Cap;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Fills a cache of `capacity` with nonces spread over `seconds` distinct
/// timestamps (as a flood spreads them over the drift window), checking the
/// stated bound all along, and returns the bytes per entry once full.
fn fill_and_check(capacity: usize, seconds: u64) -> f64 {
    let drift = 600;
    let now = 1_800_000_000u64;
    let mut rng = StdRng::seed_from_u64(capacity as u64 ^ seconds);
    let before = ALLOCATOR.allocated();
    let mut cache = NonceCache::new(Duration::from_secs(drift), capacity);
    let mut worst_margin = f64::MAX;
    for i in 0..capacity {
        let ts = now - (i as u64 % seconds);
        let verdict = cache.check_and_insert(
            PeerId::from_bytes(rng.random()),
            rng.random::<[u8; 16]>(),
            ts,
            now,
        );
        assert_eq!(verdict, NonceCheck::Fresh);
        if i % 101 == 0 || i + 1 == capacity {
            let used = ALLOCATOR.allocated() - before;
            let held_seconds = (i as u64 + 1).min(seconds) as usize;
            let bound = NonceCache::BASE_BYTES
                + NonceCache::BYTES_PER_ENTRY * cache.len()
                + NonceCache::BYTES_PER_SECOND * held_seconds;
            assert!(
                used <= bound,
                "{used} B for {} entries in {held_seconds} s: over the stated {bound} B",
                cache.len()
            );
            worst_margin = worst_margin.min(bound as f64 / used as f64);
        }
    }
    let full = (ALLOCATOR.allocated() - before) as f64 / cache.len() as f64;
    eprintln!(
        "capacity {capacity} over {seconds} s: {full:.1} B/entry full; bound/used at worst {worst_margin:.2}"
    );
    full
}

#[test]
fn memory_stays_under_the_stated_bound() {
    for (capacity, seconds) in [(200_000, 601), (200_000, 20), (200_000, 1)] {
        let full = fill_and_check(capacity, seconds);
        assert!(full <= NonceCache::BYTES_PER_ENTRY as f64);
    }
}
