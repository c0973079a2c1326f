//! [`DecodeIter`]: concatenated bijou64 values, front to back, with a
//! decoder chosen for the shape of the input.
//!
//! ```text
//! a stream is values back to back, no separators:
//! +----+-------+----+----------------------------+----+
//! | 2A | F8 34 | 07 | FF xx xx xx xx xx xx xx xx | 00 | ...
//! +----+-------+----+----------------------------+----+
//!  42    300     7    tier 8 (9 bytes)             0
//! ```
//!
//! How the iterator picks a decoder is documented on [`DecodeIter`].

use super::decode_cycle::{cycle_values, shortest_period};
use super::decode_lanes::{two_lane_values, LaneScratch};
use super::{
    decode, finish_decode, tag_of_len, Bijou64Error, FIRST_MULTI_BYTE_TAG, MAX_LEN, OFFSETS,
};

/// Decodes concatenated values from `buf`, front to back.
///
/// ```
/// let bytes = [0x01, 0xF8, 0x34, 0xF9, 0x01, 0xF0];
/// let values: Result<Vec<u64>, _> = bijou_frame::codec::bijou64::decode_iter(&bytes).collect();
/// assert_eq!(values, Ok(vec![1, 300, 1000]));
///
/// // Internal iteration is the fast path.
/// let sum = bijou_frame::codec::bijou64::decode_iter(&bytes)
///     .try_fold(0u64, |sum, value| value.map(|v| sum + v));
/// assert_eq!(sum, Ok(1301));
/// ```
pub fn decode_iter(buf: &[u8]) -> DecodeIter<'_> {
    DecodeIter::new(buf)
}

/// Streaming iterator over concatenated bijou64 values; see [`decode_iter`].
///
/// Yields `Ok(value)` per value; on the first error yields `Err` once and
/// then ends (it is fused). [`DecodeIter::remainder`] gives the bytes not
/// yet consumed.
///
/// # Speed
///
/// The first byte of a value gives its length, so the cursor's next
/// position depends on the byte just loaded. A decoder that computes the
/// length from that byte (branch-free) waits for the load on every value:
/// its speed does not depend on the input, but it cannot overlap values.
/// A decoder that branches on the tag lets the CPU guess the length and
/// start on the next value at once, and pays a misprediction whenever the
/// guess is wrong. Which one wins depends on the input, so internal
/// iteration ([`Iterator::fold`] and what builds on it: `for_each`, `count`,
/// `sum`, `collect` into a `Vec` of results, …) looks at the tags of the next
/// [`DecodeIter::SAMPLE`] values and picks a decoder:
///
/// | next tags                              | decoder                                              |
/// |----------------------------------------|------------------------------------------------------|
/// | all one-byte values                    | bulk: 64 bytes at a time, checked at once            |
/// | all one tier of 2-9 bytes              | a run loop specialised for that length               |
/// | the first differs, the rest one tier   | the first with the `match` below, then a run         |
/// | tiers change on most, no short period  | branch-free, two lanes at once (see below)           |
/// | otherwise (a pattern)                  | a cycle if the lengths have one, else the `match`    |
///
/// A *cycle* is a period of 2 to 32 lengths that the next 64 values repeat
/// (at most 256 bytes a period); the cycle decoder then reads each value
/// of a group of whole periods from a fixed position, after checking every
/// tag of the group at once, 16 bytes at a time. The `match` branches on
/// the tag, with arms that advance by constants.
///
/// The *two lanes* are two branch-free decoders, one from the cursor and
/// one from a guess 256 bytes on, run in the same loop so that each works
/// while the other waits for its load; the second lane's values count once
/// the first reaches a position the second passed through (module
/// `decode_lanes` has the details). Lengths that look patterned in one
/// sample right after a block of changing ones (a sample in thirty or so of
/// random lengths does) get one more turn of the lanes rather than the
/// `match`.
///
/// The bulk, run and cycle decoders continue until the shape ends (a value
/// of another length), then the iterator samples again; the branch-free
/// decoder and the `match` decode a block of [`DecodeIter::BLOCK`] values
/// first, the lanes four blocks (they need 521 bytes ahead, and leave the
/// last ones to the branch-free decoder). After a cycle ends, the next
/// patterned block uses the `match` before the iterator searches again;
/// after a search that finds none, or a cycle that held for less than a
/// block, the next 8 do. Input that keeps almost repeating so costs at
/// most one search (64 tags read) per 8 blocks, and one per 2 blocks while
/// each cycle holds for a block. `next` (external iteration, and `collect`
/// into a `Result`, which stops at the first error) uses the branch-free
/// decoder and the `match` only. The README's shootout has the figures.
#[derive(Debug, Clone)]
#[must_use = "iterators are lazy"]
pub struct DecodeIter<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Values left in the current block.
    countdown: u32,
    branch_free: bool,
}

/// What one decoding step found at the cursor.
enum Step {
    /// A value and its encoded length.
    Value(u64, usize),
    /// Fewer than [`MAX_LEN`] bytes left: finish with [`decode`].
    NearEnd,
    /// A tier-8 overflow.
    Overflow,
}

/// The shape of the next [`DecodeIter::SAMPLE`] values, read from their
/// tags only (payloads are skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Every sampled value is one byte long.
    OneByte,
    /// Every sampled value is this many (2..=9) bytes long.
    Run(usize),
    /// The first value's length differs from the others', which share
    /// one: an outlier before a run (a 300 among values near 60 000).
    Outlier,
    /// The length changes between most sampled values.
    Changing,
    /// Anything else: lengths that repeat, or follow a pattern.
    Patterned,
}

impl Shape {
    #[inline]
    fn sample(buf: &[u8], mut pos: usize) -> Self {
        let Some(&first) = buf.get(pos) else {
            return Self::Patterned;
        };
        let first_len = super::len_from_first_byte(first);
        pos += first_len;
        let Some(&second) = buf.get(pos) else {
            return Self::Patterned;
        };
        let second_len = super::len_from_first_byte(second);
        let mut lens = [first_len, second_len, 0, 0, 0, 0, 0, 0];
        let mut changes = u32::from(second_len != first_len);
        let mut tail_same = true;
        pos += second_len;
        for i in 2..lens.len() {
            let Some(&tag) = buf.get(pos) else { break };
            let len = super::len_from_first_byte(tag);
            changes += u32::from(len != lens[i - 1]);
            tail_same &= len == second_len;
            lens[i] = len;
            pos += len;
        }
        match (tail_same, changes, first_len) {
            (true, 0, 1) => Self::OneByte,
            (true, 0, len) => Self::Run(len),
            (true, _, _) => Self::Outlier,
            // Lengths that alternate with a short period are a pattern the
            // cycle decoder takes.
            _ if changes * 2 > DecodeIter::SAMPLE && shortest_period(&lens, 4).is_none() => {
                Self::Changing
            }
            _ => Self::Patterned,
        }
    }
}

/// Decodes the value at `pos` when at least [`MAX_LEN`] bytes remain.
#[inline(always)]
fn step(buf: &[u8], pos: usize, branch_free: bool) -> Step {
    let Some(&[tag, a, b, c, d, e, f, g, h]) = buf.get(pos..).and_then(<[u8]>::first_chunk) else {
        return Step::NearEnd;
    };
    if tag < FIRST_MULTI_BYTE_TAG {
        return Step::Value(u64::from(tag), 1);
    }
    let window = u64::from_be_bytes([a, b, c, d, e, f, g, h]);
    if branch_free {
        return match finish_decode(tag, window) {
            Ok((value, len)) => Step::Value(value, len),
            Err(_) => Step::Overflow,
        };
    }
    // Constant-stride arms: see "Speed" on `DecodeIter`.
    let (value, len) = match tag {
        0xF8 => (OFFSETS[1] + (window >> 56), 2),
        0xF9 => (OFFSETS[2] + (window >> 48), 3),
        0xFA => (OFFSETS[3] + (window >> 40), 4),
        0xFB => (OFFSETS[4] + (window >> 32), 5),
        0xFC => (OFFSETS[5] + (window >> 24), 6),
        0xFD => (OFFSETS[6] + (window >> 16), 7),
        0xFE => (OFFSETS[7] + (window >> 8), 8),
        _ => match OFFSETS[8].checked_add(window) {
            Some(value) => (value, 9),
            None => return Step::Overflow,
        },
    };
    Step::Value(value, len)
}

/// How far a specialised decoder got: keep folding, or the fold is over
/// (a tier-8 overflow was handed to the closure).
enum Flow<B> {
    Continue(B),
    Done(B),
}

/// Bytes the bulk decoder checks at once.
const BULK: usize = 64;

/// Whether every byte of `block` is a one-byte value (below `0xF8`).
///
/// Written as an OR over per-byte comparisons with no early exit, so the
/// compiler turns it into a few vector compares over the whole block
/// (SSE2 on the baseline x86-64 target). Measured against SWAR over 8-byte
/// words (a byte is `>= 0xF8` when its top five bits are set), this made
/// the bulk decoder about twice as fast; see `benches/DECODERS.md`.
#[inline(always)]
fn all_one_byte(block: &[u8; BULK]) -> bool {
    block.iter().fold(0u8, |long_tags, &byte| {
        long_tags | u8::from(byte >= FIRST_MULTI_BYTE_TAG)
    }) == 0
}

/// The bulk decoder: hands out one-byte values until the next multi-byte
/// tag or the end of `buf`. Out of line: inlined into `fold` its loop
/// measured about a third slower (0.13 against 0.09-0.10 ns a value).
#[inline(never)]
fn one_byte_values<B, F>(buf: &[u8], cursor: &mut usize, mut acc: B, f: &mut F) -> B
where
    F: FnMut(B, Result<u64, Bijou64Error>) -> B,
{
    let mut pos = *cursor;
    while let Some(block) = pos.checked_add(BULK).and_then(|end| buf.get(pos..end)) {
        let Ok(block) = <&[u8; BULK]>::try_from(block) else {
            break;
        };
        if !all_one_byte(block) {
            break;
        }
        for &byte in block {
            acc = f(acc, Ok(u64::from(byte)));
        }
        pos += BULK;
    }
    // Up to the next multi-byte tag, or the end.
    while let Some(&byte) = buf.get(pos) {
        if byte >= FIRST_MULTI_BYTE_TAG {
            break;
        }
        acc = f(acc, Ok(u64::from(byte)));
        pos += 1;
    }
    *cursor = pos;
    acc
}

/// Values the run decoder checks and decodes per iteration.
const RUN_UNROLL: usize = 4;

/// The payload window of the encoding at the front of `at` (the eight bytes
/// after its tag, big-endian), or `None` if fewer than [`MAX_LEN`] bytes
/// remain. The tag is not checked here.
#[inline(always)]
fn window_at(at: &[u8]) -> Option<u64> {
    let &[_, a, b, c, d, e, f, g, h] = at.first_chunk::<MAX_LEN>()?;
    Some(u64::from_be_bytes([a, b, c, d, e, f, g, h]))
}

/// Whether the `LEN`-byte encoding whose payload window is `window` has a
/// value (only a tier-8 payload can overflow).
#[inline(always)]
const fn run_fits<const LEN: usize>(window: u64) -> bool {
    LEN < MAX_LEN || window <= u64::MAX - OFFSETS[8]
}

/// The value of a `LEN`-byte encoding that [fits](run_fits).
#[inline(always)]
const fn run_value<const LEN: usize>(window: u64) -> u64 {
    OFFSETS[LEN - 1].wrapping_add(window.wrapping_shr(8 * (MAX_LEN - LEN) as u32))
}

/// The run decoder for values `LEN` (2..=9) bytes long: decodes while the
/// tag stays the same and at least [`MAX_LEN`] bytes remain.
///
/// Every value advances the cursor by the constant `LEN`, so consecutive
/// values overlap in the CPU. It checks the tags (and, for tier 8, the
/// overflow) of [`RUN_UNROLL`] values before decoding any of them, so the
/// group costs one predictable branch and the values reach the closure
/// with no branch in between; a group that fails the check is decoded one
/// value at a time, which stops at the end of the run or reports the
/// overflow.
#[inline(always)]
fn run<const LEN: usize, B, F>(buf: &[u8], pos: &mut usize, mut acc: B, f: &mut F) -> Flow<B>
where
    F: FnMut(B, Result<u64, Bijou64Error>) -> B,
{
    let tag = tag_of_len(LEN);
    // A group: RUN_UNROLL values, the last with a full 9-byte window.
    let group = (RUN_UNROLL - 1) * LEN + MAX_LEN;
    let mut p = *pos;
    while let Some(chunk) = buf.get(p..).and_then(|rest| rest.get(..group)) {
        let mut windows = [0u64; RUN_UNROLL];
        let mut ok = true;
        for (i, window) in windows.iter_mut().enumerate() {
            let at = chunk.get(i * LEN..).unwrap_or_default();
            *window = window_at(at).unwrap_or(u64::MAX);
            ok &= at.first() == Some(&tag) && run_fits::<LEN>(*window);
        }
        if !ok {
            break;
        }
        for window in windows {
            acc = f(acc, Ok(run_value::<LEN>(window)));
        }
        p += RUN_UNROLL * LEN;
    }
    // The last values of the run, one at a time.
    while let Some(at) = buf.get(p..) {
        let Some(window) = window_at(at) else { break };
        if at.first() != Some(&tag) {
            break;
        }
        if !run_fits::<LEN>(window) {
            *pos = p;
            return Flow::Done(f(acc, Err(Bijou64Error::Overflow)));
        }
        acc = f(acc, Ok(run_value::<LEN>(window)));
        p += LEN;
    }
    *pos = p;
    Flow::Continue(acc)
}

impl<'a> DecodeIter<'a> {
    /// Values decoded between two choices of the branch-free or the
    /// branching decoder.
    pub const BLOCK: u32 = 256;
    /// Values whose tags are sampled to make the choice.
    pub const SAMPLE: u32 = 8;
    /// Patterned blocks decoded with the `match` after a search for a
    /// cycle found none (or one that held for less than a block), before
    /// the next search.
    const CYCLE_RETRY: u32 = 8;
    /// Values the two lanes decode between two samples: four blocks, since
    /// a sample (eight dependent tag loads and the classification) cost
    /// about 5% of the lanes' time on `mixed` when taken every block.
    const LANE_VALUES: usize = 4 * Self::BLOCK as usize;

    fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            countdown: 0,
            branch_free: false,
        }
    }

    /// The bytes not yet decoded (empty after an error).
    #[must_use]
    pub fn remainder(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// Ends the iteration after an error.
    fn fuse(&mut self, err: Bijou64Error) -> Result<u64, Bijou64Error> {
        self.pos = self.buf.len();
        Err(err)
    }

    /// The last few bytes of the stream, with the careful decoder.
    #[cold]
    fn next_near_end(&mut self) -> Option<Result<u64, Bijou64Error>> {
        let rest = self.remainder();
        if rest.is_empty() {
            return None;
        }
        Some(match decode(rest) {
            Ok((value, used)) => {
                self.pos += used;
                Ok(value)
            }
            Err(err) => self.fuse(err),
        })
    }
}

impl Iterator for DecodeIter<'_> {
    type Item = Result<u64, Bijou64Error>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.countdown == 0 {
            self.branch_free = Shape::sample(self.buf, self.pos) == Shape::Changing;
            self.countdown = Self::BLOCK;
        }
        self.countdown -= 1;
        match step(self.buf, self.pos, self.branch_free) {
            Step::Value(value, used) => {
                self.pos += used;
                Some(Ok(value))
            }
            Step::NearEnd => self.next_near_end(),
            Step::Overflow => Some(self.fuse(Bijou64Error::Overflow)),
        }
    }

    #[inline]
    fn fold<B, F>(mut self, init: B, mut f: F) -> B
    where
        F: FnMut(B, Self::Item) -> B,
    {
        let buf = self.buf;
        let mut pos = self.pos;
        let mut acc = init;
        // Patterned blocks to decode with the `match` before looking for a
        // cycle again: one after a cycle ends, `CYCLE_RETRY` after a
        // search found none or a cycle shorter than a block.
        let mut cycle_wait = 0u32;
        // Lane 1's values for the two-lane decoder, made on first use.
        let mut lane_scratch: Option<LaneScratch> = None;
        // One value with `step`: on to the next, or out of the blocks near
        // the end, or the fold is over at an overflow.
        macro_rules! value {
            ($branch_free:expr, $done:lifetime) => {
                match step(buf, pos, $branch_free) {
                    Step::Value(value, used) => {
                        pos += used;
                        acc = f(acc, Ok(value));
                    }
                    Step::NearEnd => break $done,
                    Step::Overflow => return f(acc, Err(Bijou64Error::Overflow)),
                }
            };
        }
        // A block of values, `$unroll` per iteration. One loop per block
        // decoder, so neither tests the choice per value; the branching one
        // in line, two values per iteration (the loop's own overhead is a
        // good part of a branching step).
        macro_rules! block {
            ($branch_free:expr, $unroll:literal, $done:lifetime) => {
                for _ in 0..Self::BLOCK / $unroll {
                    for _ in 0..$unroll {
                        value!($branch_free, $done);
                    }
                }
            };
        }
        macro_rules! run {
            ($len:literal) => {
                match run::<$len, B, F>(buf, &mut pos, acc, &mut f) {
                    Flow::Continue(folded) => acc = folded,
                    Flow::Done(folded) => return folded,
                }
            };
        }
        // The lane decoder, or one lane where it cannot run (near the
        // end, or at an overflow, which the one lane reports).
        macro_rules! changing {
            ($start:ident, $done:lifetime) => {
                let kept = lane_scratch.get_or_insert_with(LaneScratch::new);
                acc = two_lane_values(buf, &mut pos, acc, &mut f, kept, Self::LANE_VALUES);
                if pos == $start {
                    block!(true, 1, $done);
                }
            };
        }
        // Whether the last block had changing lengths.
        let mut after_changing = false;
        'blocks: loop {
            let start = pos;
            let shape = Shape::sample(buf, pos);
            after_changing &= matches!(shape, Shape::Changing | Shape::Patterned);
            match shape {
                Shape::OneByte => acc = one_byte_values(buf, &mut pos, acc, &mut f),
                Shape::Run(2) => run!(2),
                Shape::Run(3) => run!(3),
                Shape::Run(4) => run!(4),
                Shape::Run(5) => run!(5),
                Shape::Run(6) => run!(6),
                Shape::Run(7) => run!(7),
                Shape::Run(8) => run!(8),
                Shape::Run(_) => run!(9),
                Shape::Outlier => value!(false, 'blocks),
                Shape::Changing => {
                    changing!(start, 'blocks);
                    after_changing = true;
                }
                Shape::Patterned => {
                    let found = match cycle_wait {
                        0 => cycle_values(buf, &mut pos, acc, &mut f),
                        _ => Err(acc),
                    };
                    match found {
                        Ok((folded, decoded)) => {
                            acc = folded;
                            // A cycle that ran for less than a block did not
                            // pay for its search: wait as after a miss.
                            cycle_wait = if decoded >= Self::BLOCK as usize {
                                1
                            } else {
                                Self::CYCLE_RETRY
                            };
                        }
                        Err(folded) => {
                            acc = folded;
                            cycle_wait = cycle_wait.checked_sub(1).unwrap_or(Self::CYCLE_RETRY);
                            if after_changing {
                                // Eight random lengths look patterned one
                                // sample in thirty or so: one more block
                                // of lanes, not 256 mispredicted branches.
                                after_changing = false;
                                changing!(start, 'blocks);
                            } else {
                                block!(false, 2, 'blocks);
                            }
                        }
                    }
                }
            }
            if pos == start {
                // A run that could not start (the end is near): the
                // branching block finishes the stream.
                block!(false, 1, 'blocks);
            }
        }
        self.pos = pos;
        while let Some(item) = self.next_near_end() {
            acc = f(acc, item);
        }
        acc
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let rest = self.buf.len() - self.pos.min(self.buf.len());
        (usize::from(rest > 0), Some(rest))
    }
}

impl core::iter::FusedIterator for DecodeIter<'_> {}

#[cfg(test)]
pub(super) mod tests {
    use super::super::encode_to_vec;
    use super::*;
    use alloc::vec::Vec;

    type Decoded = Vec<Result<u64, Bijou64Error>>;

    fn encode_all(values: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for &v in values {
            encode_to_vec(v, &mut out);
        }
        out
    }

    pub(in super::super) fn reference_decode(mut bytes: &[u8]) -> Decoded {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            match decode(bytes) {
                Ok((v, n)) => {
                    out.push(Ok(v));
                    bytes = &bytes[n..];
                }
                Err(e) => {
                    out.push(Err(e));
                    break;
                }
            }
        }
        out
    }

    fn collect_next(bytes: &[u8]) -> Decoded {
        let mut out = Vec::new();
        let mut iter = decode_iter(bytes);
        for item in iter.by_ref() {
            out.push(item);
        }
        assert_eq!(iter.next(), None, "fused");
        out
    }

    fn collect_fold(bytes: &[u8]) -> Decoded {
        decode_iter(bytes).fold(Vec::new(), |mut out, item| {
            out.push(item);
            out
        })
    }

    /// `fold` and `next` agree with the single-value decoder on `bytes`,
    /// on every prefix of its last 40 bytes, and with an overflow spliced
    /// in at `cut`.
    fn check(bytes: &[u8], cut: usize) {
        let expected = reference_decode(bytes);
        assert_eq!(collect_next(bytes), expected);
        assert_eq!(collect_fold(bytes), expected);
        for end in bytes.len().saturating_sub(40)..bytes.len() {
            let prefix = &bytes[..end];
            assert_eq!(
                collect_fold(prefix),
                reference_decode(prefix),
                "prefix {end}"
            );
        }
        let mut poisoned = bytes[..cut].to_vec();
        poisoned.extend_from_slice(&[0xFF; 9]);
        poisoned.extend_from_slice(&bytes[cut..]);
        let expected = reference_decode(&poisoned);
        assert_eq!(expected.last(), Some(&Err(Bijou64Error::Overflow)));
        assert_eq!(collect_next(&poisoned), expected);
        assert_eq!(collect_fold(&poisoned), expected);
    }

    fn value(tier: usize, i: u64) -> u64 {
        OFFSETS[tier] + i % 200
    }

    #[test]
    fn shapes_are_recognised() {
        let one_byte = encode_all(&[7; 20]);
        assert_eq!(Shape::sample(&one_byte, 0), Shape::OneByte);
        for tier in 1..=8 {
            let run: Vec<u64> = (0..20).map(|i| value(tier, i)).collect();
            assert_eq!(Shape::sample(&encode_all(&run), 0), Shape::Run(tier + 1));
            let mut outlier = run.clone();
            outlier.insert(0, value((tier + 3) % 9, 1));
            assert_eq!(Shape::sample(&encode_all(&outlier), 0), Shape::Outlier);
        }
        let changing: Vec<u64> = (0..20u64).map(|i| value((i * 5) as usize % 9, i)).collect();
        assert_eq!(Shape::sample(&encode_all(&changing), 0), Shape::Changing);
        let pairs: Vec<u64> = (0..20u64).map(|i| value((i / 2) as usize % 9, i)).collect();
        assert_eq!(Shape::sample(&encode_all(&pairs), 0), Shape::Patterned);
        // Changing on every value, but with a period of at most 4.
        for period in 2..=4usize {
            let alternating: Vec<u64> = (0..20u64)
                .map(|i| value(i as usize % period * 2, i))
                .collect();
            assert_eq!(
                Shape::sample(&encode_all(&alternating), 0),
                Shape::Patterned
            );
        }
        assert_eq!(Shape::sample(&[], 0), Shape::Patterned);
    }

    /// Runs of every tier, long and short, interrupted at every position of
    /// the bulk block and the run group, with overflows spliced in at value
    /// boundaries inside them.
    #[test]
    fn fold_and_next_agree_with_decode_on_every_shape() {
        for tier in 0..=8 {
            for len in [1usize, 3, 4, 5, 8, 9, 63, 64, 65, 130] {
                for other in [0usize, 1, 8] {
                    if other == tier {
                        continue;
                    }
                    let mut values: Vec<u64> = (0..len as u64).map(|i| value(tier, i)).collect();
                    values.push(value(other, 3));
                    values.extend((0..len as u64).map(|i| value(tier, i + 7)));
                    let bytes = encode_all(&values);
                    for cut_at in [0, 1, len / 2, len, values.len()] {
                        let cut = encode_all(&values[..cut_at]).len();
                        check(&bytes, cut);
                    }
                }
            }
        }
    }

    #[test]
    fn fold_and_next_agree_on_changing_and_patterned_streams() {
        let changing: Vec<u64> = (0..2000u64)
            .map(|i| value((i * 5) as usize % 9, i))
            .collect();
        let pairs: Vec<u64> = (0..2000u64)
            .map(|i| value((i / 2) as usize % 9, i))
            .collect();
        let runs: Vec<u64> = (0..2000u64)
            .map(|i| value((i / 300) as usize % 9, i))
            .collect();
        for values in [changing, pairs, runs] {
            let bytes = encode_all(&values);
            let cut = encode_all(&values[..values.len() / 2]).len();
            check(&bytes, cut);
        }
    }

    /// A long stream of random tiers goes through the two lanes, and the
    /// second lane's values are used: a fold that never ran them, or whose
    /// second lane never met the first, would still decode right.
    #[test]
    fn changing_streams_go_through_two_lanes() {
        let bytes = super::super::decode_lanes::tests::random_tiers(5000, 1);
        let lane1 = || super::super::decode_lanes::LANE1_VALUES.with(core::cell::Cell::get);
        let before = lane1();
        let decoded = collect_fold(&bytes);
        assert_eq!(decoded.len(), 5000);
        assert_eq!(decoded, reference_decode(&bytes));
        let from_lane1 = lane1() - before;
        assert!(
            from_lane1 > decoded.len() / 3,
            "lane 1 gave {from_lane1} of {}",
            decoded.len()
        );
    }

    /// Streams whose lengths repeat with a period (what the cycle decoder
    /// takes), each broken once by a value of another length at every
    /// position of the first two groups and a few later, with an overflow
    /// spliced in: `fold` stops at the break, decodes it in place, and
    /// takes up the cycle again.
    #[test]
    fn fold_and_next_agree_on_periodic_streams_broken_anywhere() {
        let boundary: Vec<usize> = (0..=8).flat_map(|tier| [tier, tier]).collect();
        let longest: Vec<usize> = (0..32).map(|i| [0, 3, 8, 1][i % 7 % 4]).collect();
        let cycles: [&[usize]; 6] = [
            &boundary,
            &[1, 2],
            &[0, 8],
            &[0, 0, 5],
            &[8, 7, 8],
            &longest,
        ];
        for cycle in cycles {
            let values: Vec<u64> = (0..400u64)
                .map(|i| value(cycle[i as usize % cycle.len()], i))
                .collect();
            let bytes = encode_all(&values);
            check(&bytes, bytes.len() / 3);
            for at in (0..2 * 64 + 3).chain([200, 333, 390, 399]) {
                let tier = cycle[at % cycle.len()];
                let mut broken = values.clone();
                broken[at] = value((tier + 4) % 9, 5);
                let cut = encode_all(&broken[..at + 1]).len();
                check(&encode_all(&broken), cut);
            }
        }
    }

    /// A one-byte slot of a cycle holding a multi-byte tag, and a tag slot
    /// holding a one-byte value, are both breaks: at every byte of the
    /// first groups after the values the search for the cycle read.
    #[test]
    fn a_cycle_checks_one_byte_slots_and_tag_slots() {
        let values: Vec<u64> = (0..600u64)
            .map(|i| value([0, 2][i as usize % 2], i))
            .collect();
        let bytes = encode_all(&values);
        for at in 0..600 {
            let mut mutated = bytes.clone();
            mutated[at] = if mutated[at] < FIRST_MULTI_BYTE_TAG {
                0xF8
            } else {
                0x05
            };
            assert_eq!(
                collect_fold(&mutated),
                reference_decode(&mutated),
                "byte {at}"
            );
        }
    }

    /// A tier-8 overflow at each tier-8 slot of the first groups of a cycle
    /// is reported in place, after exactly the values before it.
    #[test]
    fn overflow_inside_a_cycle_is_reported_in_place() {
        let cycle = [0usize, 8, 3, 8];
        let values: Vec<u64> = (0..240u64)
            .map(|i| value(cycle[i as usize % cycle.len()], i))
            .collect();
        for at in (0..values.len()).filter(|&i| cycle[i % cycle.len()] == 8) {
            let mut bytes = encode_all(&values);
            let start = encode_all(&values[..at]).len();
            bytes[start + 1..start + MAX_LEN].copy_from_slice(&[0xFF; 8]);
            let expected = reference_decode(&bytes);
            assert_eq!(expected.len(), at + 1);
            assert_eq!(collect_fold(&bytes), expected, "value {at}");
            assert_eq!(collect_next(&bytes), expected, "value {at}");
        }
    }

    /// What input that keeps almost repeating can make `fold` do: at most
    /// one search for a cycle per 8 blocks when searches never pay (no
    /// cycle, or one that breaks within a block), and at most one per 2
    /// blocks when cycles hold for a block each.
    #[test]
    fn searches_for_a_cycle_are_bounded() {
        use super::super::decode_cycle::SEARCHES;
        let boundary: Vec<usize> = (0..=8).flat_map(|tier| [tier, tier]).collect();
        let broken_every = |every: usize, n: usize| -> Vec<u64> {
            (0..n)
                .map(|i| {
                    let tier = boundary[i % boundary.len()];
                    let tier = if i % every == every - 1 {
                        (tier + 4) % 9
                    } else {
                        tier
                    };
                    value(tier, i as u64)
                })
                .collect()
        };
        // Random tiers, each twice: patterned, never periodic.
        let mut state = 7u64;
        let pairs: Vec<u64> = (0..21_000u64)
            .map(|i| {
                if i % 2 == 0 {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                }
                value((state >> 33) as usize % 9, i)
            })
            .collect();
        let block = DecodeIter::BLOCK as usize;
        let never_pay = 8 * block;
        for (values, per_search) in [
            (broken_every(70, 21_000), never_pay),
            (pairs, never_pay),
            (broken_every(300, 21_000), 2 * block),
        ] {
            let bytes = encode_all(&values);
            SEARCHES.with(|searches| searches.set(0));
            assert_eq!(collect_fold(&bytes), reference_decode(&bytes));
            let searches = SEARCHES.with(core::cell::Cell::get);
            assert!(searches > 0, "the stream never reached a search");
            assert!(
                searches <= values.len() / per_search + 1,
                "{searches} searches over {} values",
                values.len()
            );
        }
    }

    /// A tier-8 overflow at each position of a run group is reported in
    /// place, after exactly the values before it.
    #[test]
    fn overflow_inside_a_tier_8_run_is_reported_in_place() {
        for at in 0..12 {
            let mut bytes = encode_all(&[u64::MAX - 1; 12]);
            let start = at * MAX_LEN;
            bytes[start + 1..start + MAX_LEN].copy_from_slice(&[0xFF; 8]);
            let expected = reference_decode(&bytes);
            assert_eq!(expected.len(), at + 1);
            assert_eq!(collect_fold(&bytes), expected);
            assert_eq!(collect_next(&bytes), expected);
        }
    }
}
