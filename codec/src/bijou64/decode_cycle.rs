//! The cycle decoder: values whose lengths repeat with a short period.
//!
//! A stream such as the `boundary` distribution, or records of a few
//! fields written one after another, has lengths that follow a cycle:
//!
//! ```text
//! period 4, lengths 1 2 2 9:
//! +----+-------+-------+----------------------------+----+-------+-- ...
//! | 2A | F8 34 | F8 07 | FF xx xx xx xx xx xx xx xx | 11 | F8 9C |
//! +----+-------+-------+----------------------------+----+-------+-- ...
//!  |<------------------- one cycle, 14 bytes ----------->|<-- the next
//! ```
//!
//! Once the cycle is known, every value's position inside a group of
//! cycles is a constant, so no value waits for the length of the one
//! before it, and no branch guesses a length. [`Cycle::find`] reads the
//! tags of the next [`SAMPLE`] values and finds the shortest period that
//! repeats through them; [`Cycle::values`] then decodes group after group.
//! For each group it
//!
//! 1. checks every byte where a tag should be, 16 bytes at a time: a
//!    multi-byte tag must be the cycle's, a one-byte value must be below
//!    `0xF8` (`byte - low <= span`, with `span = 0xFF` where any byte will
//!    do);
//! 2. checks that no tier-8 value overflows;
//! 3. only then hands every value of the group to the closure, each read
//!    from its fixed position with a fixed shift.
//!
//! A group that fails a check is left for the caller, which decodes it one
//! value at a time: the first value that breaks the cycle (or overflows)
//! ends the run of the cycle decoder, so a guess of the period costs time
//! but never a wrong value.

use super::{len_from_first_byte, tag_of_len, Bijou64Error, FIRST_MULTI_BYTE_TAG, OFFSETS};

/// Bytes a group may span, so every position in it fits a `u8`.
const GROUP_BYTES: usize = 256;
/// Bytes that must be in front of the cursor to decode a group: the group,
/// and the 8-byte window read at the last position.
const CHUNK: usize = GROUP_BYTES + 8;
/// Most values in a group.
const GROUP_VALUES: usize = 64;
/// The longest period looked for.
pub(super) const MAX_PERIOD: usize = 32;
/// Tags read to find the period: two periods of the longest.
pub(super) const SAMPLE: usize = 2 * MAX_PERIOD;
/// Bytes checked at once (one SSE2 register on x86-64).
const CHECK_LANES: usize = 16;

/// The schedule of one group of whole cycles.
pub(super) struct Cycle {
    /// Where each value's 8-byte big-endian window starts in the group:
    /// after the tag, or at the tag for a one-byte value.
    window_at: [u8; GROUP_VALUES],
    /// The right shift that leaves the payload of each window.
    shift: [u8; GROUP_VALUES],
    /// The first value of each value's tier, added to its payload.
    offset: [u64; GROUP_VALUES],
    /// The window positions of the tier-8 values, the only ones that can
    /// overflow.
    tier8_window_at: [u8; GROUP_VALUES],
    tier8_count: usize,
    /// Per byte of the group, the bytes allowed there:
    /// `byte.wrapping_sub(low) <= span`.
    low: [u8; GROUP_BYTES],
    span: [u8; GROUP_BYTES],
    /// Values in a group.
    values: usize,
    /// Bytes in a group.
    bytes: usize,
}

impl Cycle {
    /// The cycle the lengths of the next [`SAMPLE`] values at `pos` follow,
    /// if they repeat with a period of 2 to [`MAX_PERIOD`] values and one
    /// cycle spans at most 256 bytes. `None` when there is none, or fewer
    /// than [`SAMPLE`] values remain.
    #[inline(always)]
    pub(super) fn find(buf: &[u8], mut pos: usize) -> Option<Self> {
        let mut lens = [0u8; SAMPLE];
        for len in &mut lens {
            let tag = *buf.get(pos)?;
            let n = len_from_first_byte(tag);
            *len = n as u8;
            pos += n;
        }
        let period = shortest_period(&lens, MAX_PERIOD)?;
        let cycle = lens.get(..period)?;
        let cycle_bytes: usize = cycle.iter().map(|&len| usize::from(len)).sum();
        let cycles = (GROUP_BYTES / cycle_bytes).min(GROUP_VALUES / period);
        if cycles == 0 {
            return None;
        }
        let mut schedule = Self {
            window_at: [0; GROUP_VALUES],
            shift: [0; GROUP_VALUES],
            offset: [0; GROUP_VALUES],
            tier8_window_at: [0; GROUP_VALUES],
            tier8_count: 0,
            low: [0; GROUP_BYTES],
            span: [u8::MAX; GROUP_BYTES],
            values: cycles * period,
            bytes: cycles * cycle_bytes,
        };
        let mut at = 0usize;
        for (value, &len) in cycle.iter().cycle().take(schedule.values).enumerate() {
            let tier = usize::from(len) - 1;
            let tag_at = u8::try_from(at).ok()?;
            // A one-byte value is its own window's top byte.
            let window_at = u8::try_from(at + usize::from(tier > 0)).ok()?;
            *schedule.window_at.get_mut(value)? = window_at;
            *schedule.shift.get_mut(value)? = match tier {
                0 => 56,
                _ => (64 - 8 * tier) as u8,
            };
            *schedule.offset.get_mut(value)? = OFFSETS[tier];
            let (low, span) = match tier {
                0 => (0, FIRST_MULTI_BYTE_TAG - 1),
                _ => (tag_of_len(usize::from(len)), 0),
            };
            *schedule.low.get_mut(usize::from(tag_at))? = low;
            *schedule.span.get_mut(usize::from(tag_at))? = span;
            if tier == 8 {
                *schedule.tier8_window_at.get_mut(schedule.tier8_count)? = window_at;
                schedule.tier8_count += 1;
            }
            at += usize::from(len);
        }
        Some(schedule)
    }

    /// Values per group and bytes per group (for tests).
    #[cfg(test)]
    pub(super) fn group(&self) -> (usize, usize) {
        (self.values, self.bytes)
    }

    /// Whether every tag of the group at the front of `chunk` is where the
    /// cycle puts it.
    #[inline(always)]
    fn tags_match(&self, chunk: &[u8; CHUNK]) -> bool {
        let mut misfits = [0u8; CHECK_LANES];
        let (blocks, _) = chunk.as_chunks::<CHECK_LANES>();
        let (low, _) = self.low.as_chunks::<CHECK_LANES>();
        let (span, _) = self.span.as_chunks::<CHECK_LANES>();
        let lanes = blocks
            .iter()
            .zip(low)
            .zip(span)
            .take(self.bytes.div_ceil(CHECK_LANES));
        // Indexed, not zipped: this form compiles to a few vector
        // instructions per 16 bytes and one mask test at the end.
        for ((bytes, low), span) in lanes {
            for i in 0..CHECK_LANES {
                misfits[i] |= u8::from(bytes[i].wrapping_sub(low[i]) > span[i]);
            }
        }
        misfits == [0; CHECK_LANES]
    }

    /// Whether no tier-8 value of the group overflows.
    #[inline(always)]
    fn fits(&self, chunk: &[u8; CHUNK]) -> bool {
        let windows = self.tier8_window_at.get(..self.tier8_count);
        windows.unwrap_or_default().iter().fold(true, |fits, &at| {
            fits & (window(chunk, at) <= u64::MAX - OFFSETS[8])
        })
    }

    /// Decodes whole groups from `*pos` while the cycle holds, leaving
    /// `*pos` after the last group decoded, and returns the values decoded
    /// with the folded `acc`. Stops without decoding at a group that breaks
    /// the cycle, contains an overflow, or is not followed by 8 more bytes.
    #[inline(always)]
    pub(super) fn values<B, F>(
        &self,
        buf: &[u8],
        pos: &mut usize,
        mut acc: B,
        f: &mut F,
    ) -> (B, usize)
    where
        F: FnMut(B, Result<u64, Bijou64Error>) -> B,
    {
        let mut p = *pos;
        let mut decoded = 0;
        let values = self.values;
        let window_at = self.window_at.get(..values).unwrap_or_default();
        let shift = self.shift.get(..values).unwrap_or_default();
        let offset = self.offset.get(..values).unwrap_or_default();
        while let Some(chunk) = buf.get(p..).and_then(<[u8]>::first_chunk::<CHUNK>) {
            if !(self.tags_match(chunk) && self.fits(chunk)) {
                break;
            }
            for ((&at, &shift), &offset) in window_at.iter().zip(shift).zip(offset) {
                acc = f(acc, Ok(offset.wrapping_add(window(chunk, at) >> shift)));
            }
            p += self.bytes;
            decoded += values;
        }
        *pos = p;
        (acc, decoded)
    }
}

/// The shortest period of 2 to `max_period` with which `lens` repeats
/// (`lens[i] == lens[i + period]` throughout), if any.
pub(super) fn shortest_period<T: PartialEq>(lens: &[T], max_period: usize) -> Option<usize> {
    (2..=max_period).find(|&period| {
        lens.iter()
            .zip(lens.get(period..).unwrap_or_default())
            .all(|(a, b)| a == b)
    })
}

/// Looks for a cycle at `*pos` ([`Cycle::find`]) and decodes with it
/// ([`Cycle::values`]): `Ok` with the values decoded when one was found
/// (even if no group could be decoded), `Err` with `acc` untouched when
/// there is none. Out of line, so the schedule (about 1.3 KiB) lives in
/// this function's frame only.
#[inline(never)]
pub(super) fn cycle_values<B, F>(
    buf: &[u8],
    pos: &mut usize,
    acc: B,
    f: &mut F,
) -> Result<(B, usize), B>
where
    F: FnMut(B, Result<u64, Bijou64Error>) -> B,
{
    #[cfg(test)]
    SEARCHES.with(|searches| searches.set(searches.get() + 1));
    match Cycle::find(buf, *pos) {
        Some(cycle) => Ok(cycle.values(buf, pos, acc, f)),
        None => Err(acc),
    }
}

#[cfg(test)]
std::thread_local! {
    /// Searches for a cycle run by this thread, for the tests of their bound.
    pub(super) static SEARCHES: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// The 8 bytes at `at`, big-endian. Always in bounds: `at <= 255` and the
/// chunk has 264 bytes.
#[inline(always)]
fn window(chunk: &[u8; CHUNK], at: u8) -> u64 {
    chunk
        .get(usize::from(at)..)
        .and_then(<[u8]>::first_chunk::<8>)
        .map_or(0, |bytes| u64::from_be_bytes(*bytes))
}

#[cfg(test)]
mod tests {
    use super::super::encode_to_vec;
    use super::*;
    use alloc::vec::Vec;

    fn encode_tiers(tiers: &[usize], repeat: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, &tier) in tiers.iter().cycle().take(tiers.len() * repeat).enumerate() {
            encode_to_vec(OFFSETS[tier] + (i as u64 * 37) % 200, &mut out);
        }
        out
    }

    #[test]
    fn finds_the_shortest_period() {
        let boundary: Vec<usize> = (0..=8).flat_map(|t| [t, t]).collect();
        let cycle = Cycle::find(&encode_tiers(&boundary, 8), 0).map(|c| c.group());
        assert_eq!(cycle, Some((36, 180)));
        // Twice the same cycle is still found as the shorter one.
        let doubled: Vec<usize> = [1, 2, 1, 2].into();
        let cycle = Cycle::find(&encode_tiers(&doubled, 40), 0).map(|c| c.group());
        assert_eq!(cycle, Some((64, 160)));
        let longest: Vec<usize> = (0..MAX_PERIOD).map(|i| usize::from(i % 5 == 0)).collect();
        let cycle = Cycle::find(&encode_tiers(&longest, 3), 0).map(|c| c.group());
        assert_eq!(cycle, Some((2 * MAX_PERIOD, 78)));
    }

    #[test]
    fn no_cycle_is_found_where_there_is_none() {
        // Aperiodic, a period longer than the longest, one spanning more
        // than a group, and too few values.
        let aperiodic: Vec<usize> = (0..SAMPLE).map(|i| (i * i / 7) % 9).collect();
        assert!(Cycle::find(&encode_tiers(&aperiodic, 1), 0).is_none());
        let long: Vec<usize> = (0..=MAX_PERIOD).map(|i| usize::from(i == 0)).collect();
        assert!(Cycle::find(&encode_tiers(&long, 3), 0).is_none());
        let wide: Vec<usize> = [8; 29].into_iter().chain([0]).collect();
        assert!(Cycle::find(&encode_tiers(&wide, 3), 0).is_none());
        assert!(Cycle::find(&encode_tiers(&[0, 1], SAMPLE / 2 - 1), 0).is_none());
    }
}
