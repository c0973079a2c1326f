//! The replay table's memory bound, measured with a counting allocator:
//! heap <= `BASE_BYTES + peers x (PEER_BYTES + 1 KiB + 25 B x
//! entries_per_peer + 64 B x min(entries_per_peer, 2 x max_age + 1))`
//! ([`ReplayTableConfig::max_heap_bytes`]), whatever the number of peer
//! ids that come by: windows are evicted, and an evicted window no
//! session holds is freed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::alloc::System;

use bijou_proto::nonce_cache::{NonceCache, NonceCheck};
use bijou_proto::replay_table::{ReplayTable, ReplayTableConfig};
use bijou_signing::PeerId;
use cap::Cap;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const NOW: u64 = 1_800_000_000;

fn peer(i: u64) -> PeerId {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&i.to_le_bytes());
    PeerId::from_bytes(bytes)
}

fn config(peers: usize, entries_per_peer: usize) -> ReplayTableConfig {
    let mut config = ReplayTableConfig::default();
    config.peers = peers;
    config.entries_per_peer = entries_per_peer;
    config
}

/// One test (the allocator counts the whole process, and a second test's
/// thread would count in the first's figures): both measurements in turn.
#[test]
fn the_replay_tables_heap_stays_under_the_stated_bound() {
    each_peer_costs_at_most_peer_bytes_besides_its_entries();
    a_full_table_stays_under_the_stated_bound_through_a_flood_of_peers();
}

/// A table full of empty windows (a window made, no message yet), through
/// a flood of peer ids ten times its size: what each peer costs besides
/// its entries is within [`ReplayTable::PEER_BYTES`] (the table's own
/// allocation and first map nodes within [`ReplayTable::BASE_BYTES`]).
fn each_peer_costs_at_most_peer_bytes_besides_its_entries() {
    for peers in [1usize, 7, 64, 1_000] {
        let before = ALLOCATOR.allocated();
        let table = ReplayTable::new(config(peers, 4_096), [1; 32]);
        let mut worst = 0;
        for i in 0..(peers as u64 * 10) {
            drop(table.window(peer(i)));
            let used = ALLOCATOR.allocated() - before;
            worst = worst.max(used);
        }
        assert_eq!(table.len(), peers);
        let bound = ReplayTable::BASE_BYTES + peers * ReplayTable::PEER_BYTES;
        assert!(
            worst <= bound,
            "{worst} B for {peers} peers: over the stated {bound} B"
        );
        drop(table);
        assert_eq!(
            ALLOCATOR.allocated(),
            before,
            "dropped, it gives everything back"
        );
        // Printed last: the test harness's capture of it allocates.
        let per_peer = worst as f64 / peers as f64;
        eprintln!("{peers} peers, empty windows: at most {worst} B, {per_peer:.0} B a peer");
    }
}

/// Every window filled to its capacity, stamps spread over the age
/// window, then ten times as many peers again (each evicting a full
/// one): the heap stays under the stated bound all along.
fn a_full_table_stays_under_the_stated_bound_through_a_flood_of_peers() {
    let config = config(32, 2_048);
    let bound = config.max_heap_bytes();
    let before = ALLOCATOR.allocated();
    let table = ReplayTable::new(config.clone(), [2; 32]);
    let mut rng = StdRng::seed_from_u64(7);
    let mut worst = 0;
    for i in 0..(32 * 10) {
        let window = table.window(peer(i));
        for n in 0..config.entries_per_peer as u64 {
            // Stamped up to 30 s before now (31 seconds held).
            let stamp = NOW - n % 31;
            assert_eq!(
                window.check_and_insert(
                    PeerId::from_bytes(rng.random()),
                    n.to_be_bytes(),
                    stamp,
                    NOW
                ),
                NonceCheck::Fresh
            );
        }
        assert_eq!(window.len(), config.entries_per_peer);
        drop(window);
        worst = worst.max(ALLOCATOR.allocated() - before);
        assert!(worst <= bound, "{worst} B: over the stated {bound} B");
    }
    assert_eq!(table.len(), 32);
    let entries = 32 * config.entries_per_peer;
    eprintln!(
        "32 peers x 2,048 entries: at most {worst} B ({:.1} B an entry), bound {bound} B ({:.0}% used)",
        worst as f64 / entries as f64,
        100.0 * worst as f64 / bound as f64
    );
    // The default figure the docs quote.
    let default = ReplayTableConfig::default();
    eprintln!(
        "default bound: {} peers x {} entries = {} B ({:.1} MiB)",
        default.peers,
        default.entries_per_peer,
        default.max_heap_bytes(),
        default.max_heap_bytes() as f64 / (1 << 20) as f64
    );
    assert_eq!(
        default.max_heap_bytes(),
        ReplayTable::BASE_BYTES
            + default.peers
                * (ReplayTable::PEER_BYTES
                    + NonceCache::BASE_BYTES / 32
                    + NonceCache::BYTES_PER_ENTRY * default.entries_per_peer
                    + NonceCache::BYTES_PER_SECOND * 61)
    );
}
