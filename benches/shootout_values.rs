//! The shootout's values: eight distributions of `u64`, drawn with one seed,
//! shared by the varint benchmark (`varint.rs`) and the loop-placement
//! benchmark (`placements.rs`) so that both time the same streams.
//!
//! Batches of 4096 values (`mixed64k`: 65,536) drawn with seed
//! `0xBEEF_CAFE_DEAD_F00D`: `tiny` (0..=247, one byte), `small`
//! (248..=65,535), `medium` (65,536..=2^32-1), `large` (2^32..=2^64-1),
//! `boundary` (the 18 values either side of every tier boundary, cycled),
//! `uniform` (any `u64`), and `mixed`/`mixed64k` (a random tier, then a
//! random value in it).

use bijou_codec::bijou64;
use rand::{rngs::SmallRng, Rng, SeedableRng};

const SEED: u64 = 0xBEEF_CAFE_DEAD_F00D;
const BATCH: usize = 4096;

fn tier_value(rng: &mut SmallRng, tier: usize) -> u64 {
    let low = bijou64::OFFSETS[tier];
    let high = bijou64::OFFSETS
        .get(tier + 1)
        .map_or(u64::MAX, |next| next - 1);
    rng.random_range(low..=high)
}

/// Every distribution, by name, in the shootout's order.
pub fn distributions() -> Vec<(&'static str, Vec<u64>)> {
    let mut rng = SmallRng::seed_from_u64(SEED);
    let mut draw = |n: usize, f: &mut dyn FnMut(&mut SmallRng) -> u64| -> Vec<u64> {
        (0..n).map(|_| f(&mut rng)).collect()
    };
    let mut edges: Vec<u64> = Vec::new();
    for &offset in &bijou64::OFFSETS[1..] {
        edges.extend([offset - 1, offset]);
    }
    edges.insert(0, 0);
    edges.push(u64::MAX);
    assert_eq!(edges.len(), 18);
    vec![
        ("tiny", draw(BATCH, &mut |r| r.random_range(0..=247))),
        ("small", draw(BATCH, &mut |r| r.random_range(248..=65_535))),
        (
            "medium",
            draw(BATCH, &mut |r| r.random_range(65_536..=u64::from(u32::MAX))),
        ),
        (
            "large",
            draw(BATCH, &mut |r| {
                r.random_range(u64::from(u32::MAX) + 1..=u64::MAX)
            }),
        ),
        (
            "boundary",
            edges.iter().copied().cycle().take(BATCH).collect(),
        ),
        ("uniform", draw(BATCH, &mut |r| r.random())),
        (
            "mixed",
            draw(BATCH, &mut |r| {
                let tier = r.random_range(0..=8);
                tier_value(r, tier)
            }),
        ),
        (
            "mixed64k",
            draw(65_536, &mut |r| {
                let tier = r.random_range(0..=8);
                tier_value(r, tier)
            }),
        ),
    ]
}
