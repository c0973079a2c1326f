//! [`encode_slice`]: many values into a pre-sized buffer, with an encoder
//! chosen for the shape of the input.
//!
//! ```text
//! while at least 9 bytes of room remain, every value is written as a whole
//! 9-byte window (tag + payload, left-aligned); the next value starts at the
//! end of this one's encoding and overwrites the rest:
//!
//! offset:        0    1    2    3    4
//! value 300:    | F8 | 34 | xx | xx | xx | xx | xx | xx | xx |
//! value 1000:             | F9 | 01 | F0 | xx | xx | xx | xx | xx | xx |
//! result:       | F8 | 34 | F9 | 01 | F0 |
//! ```
//!
//! How it picks an encoder is documented on [`encode_slice`].

use super::{encode_array, encoded_len, put_window, tag_of_len, tier, MAX_LEN, OFFSETS};
use crate::BufferTooSmall;

/// Values whose tiers are sampled to choose an encoder.
const SAMPLE: usize = 8;
/// Values encoded by the branch-free encoder between two choices.
const BLOCK: usize = 256;
/// One-byte values checked and stored at once.
const ONE_BYTE_GROUP: usize = 16;
/// Values of one tier checked at once by the run encoder.
const RUN_GROUP: usize = 4;

/// Encodes every value of `values` back to back into `out`, returning the
/// number of bytes written. Meant for pre-sized buffers (size them with
/// `values.len() * MAX_LEN`, or exactly with [`encoded_len`]). While at
/// least nine bytes of room remain, every value is written as a whole 9-byte
/// window that the next value overwrites.
///
/// On success, bytes of `out` past the returned length are unspecified.
///
/// # Speed
///
/// Like [`decode_iter`](super::decode_iter()), the encoder looks at the
/// tiers of the next 8 values and picks one of three encoders:
///
/// | next values              | encoder                                                 |
/// |--------------------------|---------------------------------------------------------|
/// | all below 248            | one byte each, a group of 16 checked and stored at once |
/// | all one tier (2-9 bytes) | a loop for that length: constant tag, shift and stride  |
/// | anything else            | branch-free per value, whatever its tier                |
///
/// The first two continue while the shape holds; the third encodes a block
/// of 256 values, or a single value when only the first sampled value is of
/// another tier (an outlier before a run). The last few values, once fewer
/// than nine bytes of room remain, are written exactly.
///
/// # Errors
///
/// [`BufferTooSmall`] with the total length needed; `out` may then hold a
/// partial encoding.
///
/// ```
/// let mut out = [0u8; 32];
/// let n = bijou_frame::codec::bijou64::encode_slice(&[1, 300, 1000], &mut out).unwrap();
/// assert_eq!(&out[..n], &[0x01, 0xF8, 0x34, 0xF9, 0x01, 0xF0]);
/// ```
pub fn encode_slice(values: &[u64], out: &mut [u8]) -> Result<usize, BufferTooSmall> {
    let mut cursor = Cursor { value: 0, byte: 0 };
    while cursor.value < values.len() {
        let start = cursor;
        match shape(values.get(cursor.value..).unwrap_or_default()) {
            Shape::OneByte => one_byte_values(values, out, &mut cursor),
            Shape::Run(2) => run::<2>(values, out, &mut cursor),
            Shape::Run(3) => run::<3>(values, out, &mut cursor),
            Shape::Run(4) => run::<4>(values, out, &mut cursor),
            Shape::Run(5) => run::<5>(values, out, &mut cursor),
            Shape::Run(6) => run::<6>(values, out, &mut cursor),
            Shape::Run(7) => run::<7>(values, out, &mut cursor),
            Shape::Run(8) => run::<8>(values, out, &mut cursor),
            Shape::Run(_) => run::<9>(values, out, &mut cursor),
            Shape::Outlier => mixed_values(values, out, &mut cursor, 1),
            Shape::Mixed => mixed_values(values, out, &mut cursor, BLOCK),
        }
        if cursor == start {
            // Fewer than nine bytes of room: write this value exactly.
            exact_value(values, out, &mut cursor)?;
        }
    }
    Ok(cursor.byte)
}

/// How far the encoding has got: values encoded and bytes written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    value: usize,
    byte: usize,
}

/// The shape of the next [`SAMPLE`] values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// All below 248.
    OneByte,
    /// All of one tier: this encoded length (2..=9).
    Run(usize),
    /// The first value's tier differs from the others', which share one.
    Outlier,
    /// Tiers differ.
    Mixed,
}

#[inline]
fn shape(values: &[u64]) -> Shape {
    let mut tiers = values.iter().take(SAMPLE).map(|&value| tier(value));
    let (Some(first), Some(second)) = (tiers.next(), tiers.next()) else {
        return Shape::Mixed;
    };
    if !tiers.all(|t| t == second) {
        return Shape::Mixed;
    }
    match (first == second, first) {
        (true, 0) => Shape::OneByte,
        (true, tier) => Shape::Run(tier + 1),
        (false, _) => Shape::Outlier,
    }
}

/// Stores values below 248 as the bytes they are, [`ONE_BYTE_GROUP`] at a
/// time (a check and a store the compiler vectorises), then one at a time
/// up to the first larger value.
#[inline(never)]
fn one_byte_values(values: &[u64], out: &mut [u8], cursor: &mut Cursor) {
    let one_byte_below = OFFSETS[1];
    while let Some(group) = values
        .get(cursor.value..)
        .and_then(|rest| rest.first_chunk::<ONE_BYTE_GROUP>())
    {
        let Some(dst) = out
            .get_mut(cursor.byte..)
            .and_then(|rest| rest.first_chunk_mut::<ONE_BYTE_GROUP>())
        else {
            break;
        };
        let too_big = group
            .iter()
            .fold(false, |any, &value| any | (value >= one_byte_below));
        if too_big {
            break;
        }
        for (slot, &value) in dst.iter_mut().zip(group) {
            *slot = value as u8;
        }
        cursor.value += ONE_BYTE_GROUP;
        cursor.byte += ONE_BYTE_GROUP;
    }
    while let (Some(&value), Some(slot)) = (values.get(cursor.value), out.get_mut(cursor.byte)) {
        if value >= one_byte_below {
            break;
        }
        *slot = value as u8;
        cursor.value += 1;
        cursor.byte += 1;
    }
}

/// Writes the 9-byte window of a `LEN`-byte encoding of `value`, which must
/// be of that tier, to the front of `dst`.
#[inline(always)]
fn put_run_window<const LEN: usize>(value: u64, dst: &mut [u8; MAX_LEN]) {
    let payload = value.wrapping_sub(OFFSETS[LEN - 1]) << (8 * (MAX_LEN - LEN));
    let [a, b, c, d, e, f, g, h] = payload.to_be_bytes();
    *dst = [tag_of_len(LEN), a, b, c, d, e, f, g, h];
}

/// Whether `value` is of the tier whose encodings are `LEN` bytes long.
#[inline(always)]
fn in_run<const LEN: usize>(value: u64) -> bool {
    let last = match OFFSETS.get(LEN) {
        Some(next) => next - 1,
        None => u64::MAX,
    };
    value.wrapping_sub(OFFSETS[LEN - 1]) <= last - OFFSETS[LEN - 1]
}

/// The run encoder for values whose encodings are `LEN` (2..=9) bytes long:
/// checks the tier of [`RUN_GROUP`] values with one branch, then writes them
/// with a constant tag, shift and stride. Stops at the first value of
/// another tier, or when the room left is short of a whole group (the last
/// few values of the run go one at a time while a window fits).
#[inline(never)]
fn run<const LEN: usize>(values: &[u64], out: &mut [u8], cursor: &mut Cursor) {
    let group_bytes = (RUN_GROUP - 1) * LEN + MAX_LEN;
    while let Some(group) = values
        .get(cursor.value..)
        .and_then(|rest| rest.first_chunk::<RUN_GROUP>())
    {
        let Some(dst) = out
            .get_mut(cursor.byte..)
            .and_then(|rest| rest.get_mut(..group_bytes))
        else {
            break;
        };
        if !group
            .iter()
            .fold(true, |all, &value| all & in_run::<LEN>(value))
        {
            break;
        }
        for (k, &value) in group.iter().enumerate() {
            if let Some(window) = dst
                .get_mut(k * LEN..)
                .and_then(|rest| rest.first_chunk_mut::<MAX_LEN>())
            {
                put_run_window::<LEN>(value, window);
            }
        }
        cursor.value += RUN_GROUP;
        cursor.byte += RUN_GROUP * LEN;
    }
    while let Some(&value) = values.get(cursor.value) {
        let Some(window) = out
            .get_mut(cursor.byte..)
            .and_then(|rest| rest.first_chunk_mut::<MAX_LEN>())
        else {
            break;
        };
        if !in_run::<LEN>(value) {
            break;
        }
        put_run_window::<LEN>(value, window);
        cursor.value += 1;
        cursor.byte += LEN;
    }
}

/// The branch-free encoder: up to `count` values of any tiers, each as a
/// whole window, while a window fits.
#[inline(never)]
fn mixed_values(values: &[u64], out: &mut [u8], cursor: &mut Cursor, count: usize) {
    let Cursor {
        value: mut next,
        byte: mut pos,
    } = *cursor;
    for &value in values.get(next..).unwrap_or_default().iter().take(count) {
        let Some(window) = out
            .get_mut(pos..)
            .and_then(|rest| rest.first_chunk_mut::<MAX_LEN>())
        else {
            break;
        };
        pos += put_window(value, window);
        next += 1;
    }
    *cursor = Cursor {
        value: next,
        byte: pos,
    };
}

/// Writes the value at the cursor with exactly its own length, or reports
/// the total room the whole slice needs.
#[cold]
fn exact_value(values: &[u64], out: &mut [u8], cursor: &mut Cursor) -> Result<(), BufferTooSmall> {
    let Some(&value) = values.get(cursor.value) else {
        return Ok(());
    };
    let (bytes, len) = encode_array(value);
    let dst = out
        .get_mut(cursor.byte..)
        .and_then(|rest| rest.get_mut(..len));
    match (dst, bytes.get(..len)) {
        (Some(dst), Some(src)) => {
            dst.copy_from_slice(src);
            cursor.value += 1;
            cursor.byte += len;
            Ok(())
        }
        _ => {
            let rest = values.get(cursor.value..).unwrap_or_default();
            let tail: usize = rest.iter().map(|&v| encoded_len(v)).sum();
            Err(BufferTooSmall {
                needed: cursor.byte + tail,
                have: out.len(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn expected(values: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for &value in values {
            super::super::encode_to_vec(value, &mut out);
        }
        out
    }

    /// Streams that select each encoder, and switch between them, with
    /// every room from exact to generous.
    #[test]
    fn every_shape_and_every_room_matches_the_single_value_encoder() {
        let mut streams: Vec<Vec<u64>> = Vec::new();
        streams.push((0..100).map(|i| i % 248).collect());
        for &low in &OFFSETS[1..] {
            streams.push((0..100).map(|i| low + i * 3).collect());
            let mut outlier: Vec<u64> = (0..40).map(|i| low + i).collect();
            outlier.insert(9, 5);
            outlier.insert(21, u64::MAX);
            streams.push(outlier);
        }
        streams.push(
            (0..300u64)
                .map(|i| OFFSETS[(i * 5) as usize % 9] + i)
                .collect(),
        );
        streams.push(
            (0..300u64)
                .map(|i| OFFSETS[(i / 37) as usize % 9] + i)
                .collect(),
        );
        streams.push(alloc::vec![u64::MAX; 13]);
        for values in &streams {
            let want = expected(values);
            for room in [want.len(), want.len() + 1, want.len() + 8, want.len() + 64] {
                let mut out = alloc::vec![0xEE; room];
                assert_eq!(encode_slice(values, &mut out), Ok(want.len()));
                assert_eq!(&out[..want.len()], &want[..]);
            }
            if !want.is_empty() {
                let mut short = alloc::vec![0u8; want.len() - 1];
                assert_eq!(
                    encode_slice(values, &mut short),
                    Err(BufferTooSmall {
                        needed: want.len(),
                        have: want.len() - 1
                    })
                );
            }
        }
    }

    #[test]
    fn in_run_matches_tier() {
        fn check<const LEN: usize>() {
            for &offset in &OFFSETS {
                for value in [offset.saturating_sub(1), offset, offset.saturating_add(1)] {
                    assert_eq!(in_run::<LEN>(value), tier(value) + 1 == LEN, "{value}");
                }
            }
            assert_eq!(in_run::<LEN>(u64::MAX), LEN == 9);
        }
        check::<2>();
        check::<3>();
        check::<4>();
        check::<5>();
        check::<6>();
        check::<7>();
        check::<8>();
        check::<9>();
    }
}
