//! The two-lane decoder: values whose lengths change at random.
//!
//! A decoder that does not branch on the tag cannot start a value before
//! it has loaded the previous value's tag: the position of every value is
//! one tag load, a compare and a select after the one before, about seven
//! cycles, whatever the input. This decoder follows two such chains at
//! once, so that each works while the other waits:
//!
//! ```text
//! cursor                           cursor + SPAN: lane 1 starts here
//!   v                              v
//! +----+-------+----+-- ... --+-------------+----+-------+----
//! | 2A | F8 34 | 07 |   ...   | FA 00 03 C0 | 11 | F8 9C | ...
//! +----+-------+----+-- ... --+-------------+----+-------+----
//!                                  ^  ^  ^    ^
//!                                  lane 1 reads 00, 03 and C0 as
//!                                  one-byte values, then 11: the
//!                                  boundary lane 0 reaches after
//!                                  FA 00 03 C0. From there on the
//!                                  two lanes agree.
//! ```
//!
//! Lane 0 starts at the cursor, a value boundary, and hands its values to
//! the closure as it goes. Lane 1 starts [`SPAN`] bytes further on, which
//! may be inside a value, and keeps its values (and where its first
//! [`MAX_LEN`] values start, the only places it can meet lane 0). Both
//! take one branch-free step per iteration. When lane 0 reaches the first
//! boundary `t` at or past `cursor + SPAN`, lane 1's values from position
//! `t` on are the stream's own (where the next value starts depends only
//! on the tag at `t`), so they go to the closure and the cursor moves to
//! the end of lane 1; its values before `t` are dropped. If lane 1 never
//! stepped on `t` (it jumped over it, or stopped), all its values are
//! dropped: a bad guess costs time, never a wrong value.
//!
//! A lane stops at the end of the input (it needs [`MAX_LEN`] bytes for a
//! step) and at a tier-8 overflow; decoding stops on the first value of
//! the stream's own path that a lane could not decode, and the caller
//! decodes it one value at a time and reports the error there. Lane 1
//! lands on a boundary within a few bytes in real data: a payload byte
//! read as a tag is a one-byte value 31 times in 32, so it steps one byte
//! at a time until it does. Input made so that it never does (lane 1 out
//! of step through a run of tier-8 values, say) costs up to twice one
//! lane's work: lane 1's is wasted, lane 0 still decodes every value.

use super::{Bijou64Error, FIRST_MULTI_BYTE_TAG, MAX_LEN, OFFSETS};

/// Bytes between the two lanes' starting points.
pub(super) const SPAN: usize = 256;

/// Values lane 1 can keep: one per step, and lane 0 needs at most
/// [`SPAN`] steps (each at least one byte) to cross `cursor + SPAN`.
const KEPT: usize = SPAN;

/// What lane 1 decoded, kept until lane 0 catches up with it. Held by the
/// caller across blocks so that its 2 KiB are zeroed once per fold.
pub(super) struct LaneScratch {
    values: [u64; KEPT],
}

impl LaneScratch {
    pub(super) const fn new() -> Self {
        Self { values: [0; KEPT] }
    }
}

/// The constants of a branch-free step, per tag: the value of the encoding
/// whose tag is `tag` and whose next eight bytes, big-endian, are `window`
/// is `offset[tag] + ((window >> shift[tag]) & mask[tag])`. A one-byte
/// value is its own offset, with an empty mask; a tier-t value keeps the
/// top `t` bytes of the window.
struct TagConstants {
    offset: [u64; 256],
    mask: [u64; 256],
    shift: [u8; 256],
}

static TAG_CONSTANTS: TagConstants = {
    let mut constants = TagConstants {
        offset: [0; 256],
        mask: [0; 256],
        shift: [0; 256],
    };
    let mut tag = 0;
    while tag < 256 {
        if tag < FIRST_MULTI_BYTE_TAG as usize {
            constants.offset[tag] = tag as u64;
        } else {
            let tier = tag - (FIRST_MULTI_BYTE_TAG as usize - 1);
            constants.offset[tag] = OFFSETS[tier];
            constants.shift[tag] = (64 - 8 * tier as u32) as u8 & 63;
            constants.mask[tag] = if tier == 8 {
                u64::MAX
            } else {
                (1 << (8 * tier)) - 1
            };
        }
        tag += 1;
    }
    constants
};

/// One lane's step at `at`: the value there and where the next one starts,
/// or `None` if fewer than [`MAX_LEN`] bytes remain or the value overflows.
///
/// The next position is a select between `at + 1` and `at + len` made
/// after the tag's load (a compare and a conditional move), so a lane
/// advances every seven cycles or so; the value's own table loads and
/// shift are off that chain.
///
/// The iterator's one-lane branch-free step (`finish_decode`, used by
/// `next` and near the end) returns the one-byte values with a branch
/// first and is kept apart: `next` built on this step instead measured
/// 2.92-2.96 ns a value on `mixed` against 2.46-2.47 (criterion, two
/// alternating pairs of runs). The lanes take one-byte values without that
/// branch, which random tiers would mispredict on about one value in nine
/// (not measured with it).
#[inline(always)]
fn step(buf: &[u8], at: usize) -> Option<(u64, usize)> {
    let &[tag, a, b, c, d, e, f, g, h] = buf.get(at..)?.first_chunk::<MAX_LEN>()?;
    let window = u64::from_be_bytes([a, b, c, d, e, f, g, h]);
    let index = usize::from(tag);
    let constants = &TAG_CONSTANTS;
    let payload = (window >> constants.shift[index]) & constants.mask[index];
    let value = constants.offset[index].checked_add(payload)?;
    // `tag - 0xF6` is the length of a multi-byte encoding.
    let multi_byte_next = (at + index).wrapping_sub(usize::from(FIRST_MULTI_BYTE_TAG) - 2);
    let next =
        core::hint::select_unpredictable(tag >= FIRST_MULTI_BYTE_TAG, multi_byte_next, at + 1);
    Some((value, next))
}

/// Decodes at least `at_least` values from `*pos` (rounds of [`round`])
/// and hands them to `f`; moves `*pos` past them. Stops early, with `*pos`
/// on the first value not decoded, where fewer than `2 * SPAN + MAX_LEN`
/// bytes remain or at a value of the stream's own path that a lane cannot
/// decode (an overflow, which the caller reports).
#[inline(never)]
pub(super) fn two_lane_values<B, F>(
    buf: &[u8],
    pos: &mut usize,
    mut acc: B,
    f: &mut F,
    kept: &mut LaneScratch,
    at_least: usize,
) -> B
where
    F: FnMut(B, Result<u64, Bijou64Error>) -> B,
{
    let mut decoded = 0;
    while decoded < at_least {
        let start = *pos;
        let (folded, values) = round(buf, pos, acc, f, kept);
        acc = folded;
        decoded += values;
        if *pos == start {
            break;
        }
    }
    acc
}

/// One round: lane 0 from `*pos` to the first boundary at or past
/// `*pos + SPAN`, lane 1 from there on if it meets lane 0. Returns the
/// values decoded; decodes none if fewer than `2 * SPAN + MAX_LEN` bytes
/// remain.
#[inline(always)]
fn round<B, F>(
    buf: &[u8],
    pos: &mut usize,
    mut acc: B,
    f: &mut F,
    kept: &mut LaneScratch,
) -> (B, usize)
where
    F: FnMut(B, Result<u64, Bijou64Error>) -> B,
{
    let start = *pos;
    let guess = start + SPAN;
    if buf.len().saturating_sub(start) < 2 * SPAN + MAX_LEN {
        return (acc, 0);
    }
    // Lane 0 reads its part of the input through a fixed-size window, at
    // offsets below `SPAN`, so that the loop's own test is its bounds
    // check; lane 1 has one compare against the last start with a full
    // window.
    let Some(lane0_bytes) = buf
        .get(start..)
        .and_then(<[u8]>::first_chunk::<{ SPAN + MAX_LEN - 1 }>)
    else {
        return (acc, 0);
    };
    let last_lane1_start = buf.len() - MAX_LEN;
    let (mut lane0, mut lane1) = (0, guess);
    let mut steps = 0;
    // Lane 0 ends on the first boundary at or past the guess, at most
    // `MAX_LEN - 1` bytes past it, and lane 1 moves at least a byte a
    // step from the guess: if lane 1 steps on that boundary, it does so in
    // its first `MAX_LEN` steps. Only those starts are kept; a slot lane 1
    // did not reach keeps `usize::MAX`, which no boundary equals, so the
    // search below runs over all nine (unrolled by LLVM) with no length to
    // test. (Searching `early_starts[..steps.min(MAX_LEN)]` instead measured
    // 1.5-2% slower on `mixed64k`, two alternated runs.)
    let mut early_starts = [usize::MAX; MAX_LEN];
    // Both lanes, one step each, until lane 0 crosses the guess: the first
    // `MAX_LEN` steps also record where lane 1's values start, the rest do
    // not (a store less a step). `steps` is below `KEPT` in the body (and
    // below `MAX_LEN` in the first loop), so the stores need no bounds
    // check.
    macro_rules! both_lanes {
        ($steps_below:expr $(, $keep_start:expr)?) => {
            while lane0 < SPAN && lane1 <= last_lane1_start && steps < $steps_below {
                let Some((value0, next0)) = step(lane0_bytes, lane0) else {
                    break;
                };
                let Some((value1, next1)) = step(buf, lane1) else {
                    break;
                };
                acc = f(acc, Ok(value0));
                kept.values[steps] = value1;
                $($keep_start;)?
                lane0 = next0;
                lane1 = next1;
                steps += 1;
            }
        };
    }
    both_lanes!(MAX_LEN, early_starts[steps] = lane1);
    both_lanes!(KEPT);
    let mut decoded = steps;
    // Lane 0 alone, if lane 1 stopped first.
    while lane0 < SPAN {
        let Some((value, next)) = step(lane0_bytes, lane0) else {
            *pos = start + lane0;
            return (acc, decoded);
        };
        acc = f(acc, Ok(value));
        decoded += 1;
        lane0 = next;
    }
    let lane0 = start + lane0;
    // Where lane 1 meets lane 0's boundary, if it does: its starts grow
    // from the guess, and lane 0 ends at most `MAX_LEN - 1` bytes past it.
    let first_at_or_past = early_starts
        .iter()
        .enumerate()
        .find(|&(_, &at)| at >= lane0);
    if let Some((first, &at)) = first_at_or_past {
        if at == lane0 {
            #[cfg(test)]
            LANE1_VALUES.with(|used| used.set(used.get() + (steps - first)));
            for &value in &kept.values[first..steps] {
                acc = f(acc, Ok(value));
            }
            *pos = lane1;
            return (acc, decoded + steps - first);
        }
    }
    *pos = lane0;
    (acc, decoded)
}

#[cfg(test)]
std::thread_local! {
    /// Values of lane 1 handed to the closure by this thread, for the tests
    /// that check the second lane is used at all.
    pub(super) static LANE1_VALUES: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::decode_iter::tests::reference_decode;
    use super::super::{decode, encode_to_vec, OFFSETS};
    use super::*;
    use alloc::vec::Vec;

    type Decoded = Vec<Result<u64, Bijou64Error>>;

    /// What `two_lane_values` hands out from the front of `bytes`, where it
    /// stops, and how many values lane 1 gave.
    fn lanes(bytes: &[u8], at_least: usize) -> (Decoded, usize, usize) {
        let before = LANE1_VALUES.with(core::cell::Cell::get);
        let mut kept = LaneScratch::new();
        let mut pos = 0;
        let mut collect = |mut out: Decoded, item| {
            out.push(item);
            out
        };
        let out = two_lane_values(
            bytes,
            &mut pos,
            Vec::new(),
            &mut collect,
            &mut kept,
            at_least,
        );
        let from_lane1 = LANE1_VALUES.with(core::cell::Cell::get) - before;
        (out, pos, from_lane1)
    }

    /// A stream of `count` values whose tiers follow an LCG (the iterator's
    /// tests use it too).
    pub(in super::super) fn random_tiers(count: usize, mut state: u64) -> Vec<u8> {
        let mut bytes = Vec::new();
        for i in 0..count as u64 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let tier = (state >> 33) as usize % 9;
            encode_to_vec(OFFSETS[tier] + i % 200, &mut bytes);
        }
        bytes
    }

    #[test]
    fn lane_1_meets_lane_0_on_random_tiers() {
        for seed in 0..20 {
            let bytes = random_tiers(3000, seed);
            let (out, end, from_lane1) = lanes(&bytes, 2000);
            assert!(out.len() >= 2000, "seed {seed}: {} values", out.len());
            assert_eq!(out, reference_decode(&bytes[..end]), "seed {seed}");
            // Lane 1 gives about half the values; a lane that never met
            // lane 0 would still decode correctly, at half the speed.
            assert!(
                from_lane1 * 3 > out.len(),
                "seed {seed}: lane 1 gave {from_lane1} of {}",
                out.len()
            );
        }
    }

    #[test]
    fn too_short_an_input_is_left_to_the_caller() {
        let bytes = random_tiers(3000, 7);
        let short = &bytes[..2 * SPAN + MAX_LEN - 1];
        let (out, end, _) = lanes(short, 1);
        assert!(out.is_empty());
        assert_eq!(end, 0);
        // From there on, rounds stop where fewer bytes remain.
        let (out, end, _) = lanes(&bytes, usize::MAX);
        assert!(bytes.len() - end < 2 * SPAN + MAX_LEN + MAX_LEN);
        assert_eq!(out, reference_decode(&bytes[..end]));
    }

    /// The latest lane 1 can meet lane 0: a tier-8 value starting one byte
    /// before the guess ends eight bytes past it, and lane 1, reading its
    /// payload bytes as one-byte values, steps on that end with its ninth
    /// start (index 8, the last one kept).
    #[test]
    fn lane_1_meets_lane_0_at_its_ninth_start() {
        let mut bytes = alloc::vec![0x01; SPAN - 1];
        encode_to_vec(OFFSETS[8] + 0x0102_0304_0506_0708, &mut bytes);
        assert_eq!(bytes.len(), SPAN + 8);
        bytes.extend_from_slice(&random_tiers(3000, 5));
        let (out, end, from_lane1) = lanes(&bytes, 1);
        assert_eq!(out, reference_decode(&bytes[..end]));
        // Lane 0 took SPAN steps (SPAN - 1 one-byte values and the tier-8
        // one); lane 1 as many, of which the first eight are dropped.
        assert_eq!(from_lane1, SPAN - 8);
        assert_eq!(out.len(), 2 * SPAN - 8);
    }

    /// Tier-8 values whose fourth payload byte is `0xFF`: lane 1 starts
    /// there (256 = 9 * 28 + 4) and reads it as a tier-8 tag, then the
    /// next at the same place in the next value, and so on, out of step
    /// for ever. With a fifth payload byte of zero those reads are valid
    /// values; with `0xFF` they overflow and lane 1 stops.
    #[test]
    fn a_lane_out_of_step_or_stopped_gives_nothing() {
        for fifth in [0x00, 0xFF] {
            let mut bytes = Vec::new();
            for i in 0..400usize {
                bytes.push(0xFF);
                bytes.extend_from_slice(&[0x12, 0x34, i as u8, 0xFF, fifth, 0x9A, 0xBC, 0xDE]);
            }
            let (out, end, from_lane1) = lanes(&bytes, 300);
            assert_eq!(from_lane1, 0, "fifth byte {fifth:#x}");
            assert!(out.len() >= 300);
            assert_eq!(out, reference_decode(&bytes[..end]));
        }
    }

    /// A tier-8 overflow on the stream's own path, in lane 0's part of a
    /// round or lane 1's, or just where they meet: the values before it
    /// are handed out, and decoding stops on it for the caller to report.
    #[test]
    fn an_overflow_stops_the_lanes_on_it() {
        let clean = random_tiers(2000, 3);
        let mut starts = Vec::new();
        let mut pos = 0;
        while pos < clean.len() {
            starts.push(pos);
            pos += decode(&clean[pos..]).expect("valid").1;
        }
        for &at in starts.iter().filter(|&&at| at < 3 * SPAN) {
            let mut bytes = clean[..at].to_vec();
            bytes.extend_from_slice(&[0xFF; 9]);
            bytes.extend_from_slice(&clean[at..]);
            let (out, end, _) = lanes(&bytes, 1000);
            assert_eq!(end, at, "overflow at {at}");
            assert_eq!(out, reference_decode(&bytes[..at]));
        }
    }
}
