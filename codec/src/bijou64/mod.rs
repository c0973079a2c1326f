//! bijou64: a bijective variable-length encoding of `u64`.
//!
//! Every `u64` has exactly one encoding and every accepted byte string
//! decodes to exactly one value, so canonicality is a property of the
//! format, not a runtime check. The first byte alone gives the total length.
//!
//! ```text
//! tier 0 (1 byte, values 0..=247):
//! +--------+
//! | value  |   0x00..=0xF7
//! +--------+
//!
//! tier t = 1..=8 (1 + t bytes, values OFFSETS[t] ..= OFFSETS[t] + 256^t - 1):
//! +------------+----------------------------------+
//! | 0xF7 + t   | value - OFFSETS[t], t bytes, BE   |
//! +------------+----------------------------------+
//!  tag 0xF8..=0xFF
//! ```
//!
//! | tag          | length | first value             |
//! |--------------|--------|-------------------------|
//! | `0x00..0xF7` | 1      | 0                       |
//! | `0xF8`       | 2      | 248                     |
//! | `0xF9`       | 3      | 504                     |
//! | `0xFA`       | 4      | 66 040                  |
//! | `0xFB`       | 5      | 16 843 256              |
//! | `0xFC`       | 6      | 4 311 810 552           |
//! | `0xFD`       | 7      | 1 103 823 438 328       |
//! | `0xFE`       | 8      | 282 578 800 148 984     |
//! | `0xFF`       | 9      | 72 340 172 838 076 920  |
//!
//! Lexicographic byte order equals numeric order. A decoder has exactly two
//! failure modes: [`Bijou64Error::Incomplete`] (with the exact number of
//! missing bytes) and [`Bijou64Error::Overflow`] (a tier-8 payload that would
//! exceed `u64::MAX`).
//!
//! # Example
//!
//! ```
//! use bijou_frame::codec::bijou64;
//!
//! let mut buf = Vec::new();
//! bijou64::encode_to_vec(300, &mut buf);
//! assert_eq!(buf, [0xF8, 0x34]);
//! assert_eq!(bijou64::len_from_first_byte(buf[0]), 2);
//! assert_eq!(bijou64::decode(&buf), Ok((300, 2)));
//!
//! // A prefix says exactly how much is missing.
//! assert_eq!(
//!     bijou64::decode(&[0xF9, 0x00]),
//!     Err(bijou64::Bijou64Error::Incomplete { missing: 1 })
//! );
//! ```

use crate::{varint, BufferTooSmall};

/// The longest encoding, in bytes (tier 8: tag plus eight payload bytes).
pub const MAX_LEN: usize = 9;

/// The smallest value of each tier; `OFFSETS[t] + 256^t` is the next tier's.
pub const OFFSETS: [u64; 9] = [
    0,
    248,
    504,
    66_040,
    16_843_256,
    4_311_810_552,
    1_103_823_438_328,
    282_578_800_148_984,
    72_340_172_838_076_920,
];

/// [`OFFSETS`] padded to 16 entries so a masked tier indexes it without a
/// bounds check on the decode hot path.
const OFFSETS_BY_NIBBLE: [u64; 16] = {
    let mut padded = [0u64; 16];
    let mut tier = 0;
    while tier < OFFSETS.len() {
        padded[tier] = OFFSETS[tier];
        tier += 1;
    }
    padded
};

/// The first tag byte that announces a multi-byte encoding (tier 1).
const FIRST_MULTI_BYTE_TAG: u8 = 0xF8;

/// Why a byte string is not a bijou64 value.
///
/// The spec defines exactly these two failures, so this enum is exhaustive
/// and will not grow: a `match` needs no catch-all arm. (LEB128's are
/// [`leb128::Leb128Error`](crate::leb128::Leb128Error): that format fails
/// in more ways.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Bijou64Error {
    /// The input ends before the encoding does; `missing` more bytes are
    /// required (exact, since the first byte fixes the length). The field
    /// counts the bytes still to come, not the encoding's length (which is
    /// what `needed` means in [`ReadError::Truncated`](crate::ReadError)):
    /// a streaming caller waits for exactly this many more.
    #[error("bijou64 value incomplete: its first byte announces {missing} more byte(s) than the input holds; wait for them")]
    Incomplete {
        /// How many more bytes the encoding needs.
        missing: usize,
    },
    /// A tier-8 payload (tag `0xFF`) whose value would exceed `u64::MAX`:
    /// no encoder writes it.
    #[error("bijou64 value overflows u64: a tier-8 payload above 0xFEFE_FEFE_FEFE_FE07, which no encoder writes")]
    Overflow,
}

/// Tier (0..=8) of the smallest value with each count of leading zeros,
/// and the largest value of that tier inside the same bit width (or
/// `u64::MAX` when the tier does not end within that bit width).
///
/// Every bit width contains at most one tier boundary, so
/// `tier(v) = TIER_FLOOR[lz] + (v > TIER_FLOOR_LAST[lz])`: one table load
/// and one compare, no branches.
const TIER_FLOOR: [u8; 65] = tier_tables().0;
const TIER_FLOOR_LAST: [u64; 65] = tier_tables().1;

const fn naive_tier(value: u64) -> usize {
    let mut tier = 0;
    while tier < 8 && value >= OFFSETS[tier + 1] {
        tier += 1;
    }
    tier
}

const fn tier_tables() -> ([u8; 65], [u64; 65]) {
    let mut floor = [0u8; 65];
    let mut last = [u64::MAX; 65];
    let mut lz = 0;
    while lz <= 64 {
        let bits = 64 - lz;
        let (lowest, highest) = if bits == 0 {
            (0, 0)
        } else {
            (1u64 << (bits - 1), u64::MAX >> lz)
        };
        let tier = naive_tier(lowest);
        floor[lz] = tier as u8;
        if tier < 8 && OFFSETS[tier + 1] <= highest {
            last[lz] = OFFSETS[tier + 1] - 1;
            // At most one boundary per bit width, or the table is wrong.
            assert!(tier + 2 > 8 || OFFSETS[tier + 2] > highest);
        }
        lz += 1;
    }
    (floor, last)
}

#[inline(always)]
const fn tier(value: u64) -> usize {
    // 0 and 1 share a row of the tables; `| 1` spares the zero case of
    // `leading_zeros` (a bit scan needs a guard for it without LZCNT).
    let lz = (value | 1).leading_zeros() as usize;
    TIER_FLOOR[lz] as usize + (value > TIER_FLOOR_LAST[lz]) as usize
}

/// Length in bytes (1..=9) of the encoding of `value`.
///
/// ```
/// use bijou_frame::codec::bijou64::encoded_len;
/// assert_eq!(encoded_len(247), 1);
/// assert_eq!(encoded_len(248), 2);
/// assert_eq!(encoded_len(u64::MAX), 9);
/// ```
#[inline]
#[must_use]
pub const fn encoded_len(value: u64) -> usize {
    tier(value) + 1
}

/// Total encoded length (1..=9) announced by a first byte. O(1), no
/// branches: this is what a streaming decoder needs to know how long to wait.
///
/// ```
/// use bijou_frame::codec::bijou64::len_from_first_byte;
/// assert_eq!(len_from_first_byte(0x2A), 1);
/// assert_eq!(len_from_first_byte(0xF8), 2);
/// assert_eq!(len_from_first_byte(0xFF), 9);
/// ```
#[inline]
#[must_use]
pub const fn len_from_first_byte(first: u8) -> usize {
    first.saturating_sub(FIRST_MULTI_BYTE_TAG - 1) as usize + 1
}

/// The tag of every encoding `len` (2..=9) bytes long: `0xF6 + len`.
#[cfg(feature = "bulk")]
#[inline(always)]
const fn tag_of_len(len: usize) -> u8 {
    FIRST_MULTI_BYTE_TAG - 2 + len as u8
}

/// Encodes `value` into a 9-byte scratch array; the encoding is the first
/// `len` bytes, where `len` is the second element. Bytes past `len` are
/// unspecified. This is the building block of every other encoder here.
///
/// ```
/// let (bytes, len) = bijou_frame::codec::bijou64::encode_array(1000);
/// assert_eq!(&bytes[..len], &[0xF9, 0x01, 0xF0]);
/// ```
#[inline]
#[must_use]
pub const fn encode_array(value: u64) -> ([u8; MAX_LEN], usize) {
    let mut bytes = [0u8; MAX_LEN];
    let len = put_window(value, &mut bytes);
    (bytes, len)
}

/// Writes the encoding of `value` to the front of `window` and returns its
/// length; the bytes of the window past that length are unspecified. No
/// branches: the tag is a select, and the payload is shifted left so that
/// its big-endian bytes start right after the tag (tier 0 carries none, and
/// its shift amount is then irrelevant). The tag and the payload are two
/// stores, a byte and a word.
#[inline(always)]
const fn put_window(value: u64, window: &mut [u8; MAX_LEN]) -> usize {
    let tier = tier(value);
    // Tier 0: the value itself (below 0xF8). Tier t >= 1: 0xF7 + t, which
    // is below every value of the tier (the smallest is 248 = 0xF8).
    let tag_of_tier = (FIRST_MULTI_BYTE_TAG - 1) as u64 + tier as u64;
    let tag = if value < tag_of_tier {
        value as u8
    } else {
        tag_of_tier as u8
    };
    let payload = value
        .wrapping_sub(OFFSETS_BY_NIBBLE[tier & 15])
        .wrapping_shl(8 * (8 - tier as u32));
    let (head, tail) = window.split_at_mut(1);
    head[0] = tag;
    tail.copy_from_slice(&payload.to_be_bytes());
    tier + 1
}

/// Writes the encoding of `value` to the front of `out` and returns its
/// length. Exactly that many bytes are written; the rest of `out` is
/// untouched.
///
/// # Errors
///
/// [`BufferTooSmall`] if `out` is shorter than [`encoded_len`]`(value)`;
/// nothing is written then.
///
/// ```
/// let mut out = [0u8; 4];
/// assert_eq!(bijou_frame::codec::bijou64::encode_to_slice(300, &mut out), Ok(2));
/// assert_eq!(out, [0xF8, 0x34, 0, 0]);
/// assert!(bijou_frame::codec::bijou64::encode_to_slice(u64::MAX, &mut out).is_err());
/// ```
#[inline]
pub fn encode_to_slice(value: u64, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
    varint::encode_to_slice::<Bijou64>(value, out)
}

/// Appends the encoding of `value` to `out`.
///
/// ```
/// let mut out = vec![0xAA];
/// bijou_frame::codec::bijou64::encode_to_vec(504, &mut out);
/// assert_eq!(out, [0xAA, 0xF9, 0x00, 0x00]);
/// ```
#[inline]
pub fn encode_to_vec(value: u64, out: &mut alloc::vec::Vec<u8>) {
    varint::encode_to_vec::<Bijou64>(value, out);
}

/// Appends the encoding of `value` to any [`bytes::BufMut`].
///
/// # Panics
///
/// Like every `BufMut::put_*` method, panics if `buf` has less than
/// [`encoded_len`]`(value)` bytes of remaining capacity and cannot grow
/// (`Vec<u8>` and `BytesMut` always grow).
///
/// ```
/// let mut out = bytes::BytesMut::new();
/// bijou_frame::codec::bijou64::encode(67_000, &mut out);
/// assert_eq!(&out[..], &[0xFA, 0x00, 0x03, 0xC0]);
/// ```
#[inline]
pub fn encode<B: bytes::BufMut + ?Sized>(value: u64, buf: &mut B) {
    varint::encode::<Bijou64, B>(value, buf);
}

#[cfg(feature = "bulk")]
mod encode_slice;
#[cfg(feature = "bulk")]
pub use encode_slice::encode_slice;

/// Completes the decode of a multi-byte value (`tag` is `0xF8..=0xFF`; the
/// caller has returned the one-byte values) once the eight bytes after the
/// tag are known. `window` holds them big-endian; bytes past the encoding
/// are ignored. Straight-line code: the tier and the length are the tag
/// minus a constant, the payload one shift, and the only branch is the
/// overflow check that honest input never takes. The bulk decoder uses it
/// where the tiers do not repeat; the single-value [`decode`] branches on
/// the tag instead (see there).
///
/// The next value starts at `pos + len`, and `len` waits for the tag's
/// load: that chain is this decoder's speed. `len` is `tag - 0xF6`, one
/// addition after the load; it used to be a saturating subtraction (for
/// the one-byte tags the caller had already returned) plus one, three
/// steps.
#[cfg(feature = "bulk")]
#[inline(always)]
fn finish_decode(tag: u8, window: u64) -> Result<(u64, usize), Bijou64Error> {
    let tier = u32::from(tag) - u32::from(FIRST_MULTI_BYTE_TAG - 1); // 1..=8
    let payload = window >> (8 * (8 - tier));
    let (value, overflow) = OFFSETS_BY_NIBBLE[(tier & 15) as usize].overflowing_add(payload);
    if overflow {
        return Err(Bijou64Error::Overflow);
    }
    Ok((
        value,
        usize::from(tag) - usize::from(FIRST_MULTI_BYTE_TAG - 2),
    ))
}

/// Decodes one value from the front of `buf`, returning it and the number of
/// bytes it used. Trailing bytes are left alone (use [`crate::Reader`] or
/// [`decode_exact`] to reject them).
///
/// # Errors
///
/// [`Bijou64Error::Incomplete`] with the exact number of missing bytes, or
/// [`Bijou64Error::Overflow`] for a tier-8 payload past `u64::MAX`.
///
/// ```
/// use bijou_frame::codec::bijou64::{decode, Bijou64Error};
/// assert_eq!(decode(&[0xF8, 0x34, 0xEE]), Ok((300, 2)));
/// assert_eq!(decode(&[]), Err(Bijou64Error::Incomplete { missing: 1 }));
/// assert_eq!(decode(&[0xFF; 9]), Err(Bijou64Error::Overflow));
/// ```
// How it is fast. A caller decodes the next value at `pos + used`, so the
// length is on the critical path of every message read. Computed from the
// tag without branches, it costs a load and two ALU steps before the next
// value can start (about 2 ns a value whatever the input). Here it is a
// constant in each arm of a `match` on the tag, so when the branch
// predictor knows the tier (most fields carry values of one size) the next
// value starts before this one is loaded.
//
// One bounds check covers the whole 9-byte window; each arm then reads its
// payload with one load (of 1, 2, 4 or 8 bytes) and at most one constant
// shift. Tiers 1-7 add their offset with a plain addition (the sum stays
// below the next tier's offset), so in the loops measured their arms leave
// by an unconditional jump; only tier 8's arm tests for overflow. The
// earlier shape did one checked addition after the `match`, which LLVM
// copied into every arm as an add whose carry was the test, so every arm
// left by a conditional jump. Over sixteen layouts of the caller's loop
// (`benches/DECODERS.md`, "Across four builds") that shape ran `small`,
// `medium`, `large`, `boundary` and `uniform` at 0.86-0.96 of bijoux's
// time but `mixed` (4,096 values of random tiers, repeated) at 1.05; this
// one runs the others at 0.95-1.01 and `mixed` at 0.93. Fewer than 9 bytes
// left (only near the end of the input) go to `decode_short`.
#[inline]
pub fn decode(buf: &[u8]) -> Result<(u64, usize), Bijou64Error> {
    if let Some(&tag) = buf.first() {
        if tag < FIRST_MULTI_BYTE_TAG {
            return Ok((u64::from(tag), 1));
        }
    }
    let Some(chunk) = buf.first_chunk::<MAX_LEN>() else {
        // The short path never overflows (that needs all nine bytes), so
        // it reports in two registers: `used == 0` means incomplete, with
        // the missing count in the first field. A `Result` returned from
        // an out-of-line function would go through memory and slow down
        // every caller's loop.
        return match decode_short(buf) {
            (value, 0) => Err(Bijou64Error::Incomplete {
                missing: value as usize,
            }),
            (value, used) => Ok((value, used)),
        };
    };
    // Big-endian loads from the window; the indices are constants below.
    let be4 = |at: usize| {
        u64::from(u32::from_be_bytes([
            chunk[at],
            chunk[at + 1],
            chunk[at + 2],
            chunk[at + 3],
        ]))
    };
    let be8 = |at: usize| {
        u64::from_be_bytes([
            chunk[at],
            chunk[at + 1],
            chunk[at + 2],
            chunk[at + 3],
            chunk[at + 4],
            chunk[at + 5],
            chunk[at + 6],
            chunk[at + 7],
        ])
    };
    // Each arm loads its own payload (a load shared by all arms would be
    // made before the jump and copied after it).
    let (value, len) = match chunk[0] {
        0xF8 => (OFFSETS[1] + u64::from(chunk[1]), 2),
        0xF9 => (
            OFFSETS[2] + u64::from(u16::from_be_bytes([chunk[1], chunk[2]])),
            3,
        ),
        0xFA => (OFFSETS[3] + (be4(1) >> 8), 4),
        0xFB => (OFFSETS[4] + be4(1), 5),
        0xFC => (OFFSETS[5] + (be8(1) >> 24), 6),
        0xFD => (OFFSETS[6] + (be8(1) >> 16), 7),
        0xFE => (OFFSETS[7] + (be8(1) >> 8), 8),
        // 0xFF (the one-byte tags returned above): the only tier whose
        // payload can carry the sum past `u64::MAX`.
        _ => match OFFSETS[8].checked_add(be8(1)) {
            Some(value) => (value, MAX_LEN),
            None => return Err(Bijou64Error::Overflow),
        },
    };
    Ok((value, len))
}

/// The slow path of [`decode`] for inputs shorter than [`MAX_LEN`] whose
/// first byte is not a one-byte value (or that are empty). Returns the value
/// and its length, or `(missing bytes, 0)` if the input ends first.
///
/// `#[cold]` keeps it off the fast path (LLVM does not inline it);
/// `#[inline]`, not `#[inline(never)]`, gives each crate that decodes its
/// own copy, called directly, as `Reader`'s error path does. It changes
/// the caller's loop only in register choice, and that moves the `mixed`
/// (random tiers) loop by up to 8% either way depending on the code around
/// it: 1.05 -> 0.97 of bijoux's in one placement harness, 0.98 -> 1.06 in
/// another whose loop differed only in where its sum starts
/// (`benches/DECODERS.md`, "`decode_short` per crate"). No speed is
/// claimed for it.
#[cold]
#[inline]
fn decode_short(buf: &[u8]) -> (u64, usize) {
    let Some((&tag, rest)) = buf.split_first() else {
        return (1, 0);
    };
    let len = len_from_first_byte(tag);
    let payload_len = len - 1;
    if rest.len() < payload_len {
        return ((payload_len - rest.len()) as u64, 0);
    }
    // `decode` calls this only with fewer than nine bytes, so the tier is
    // at most 7 and the sum stays below `OFFSETS[8]`: no overflow.
    debug_assert!(buf.len() < MAX_LEN);
    let payload = rest
        .iter()
        .take(payload_len)
        .fold(0u64, |acc, &byte| (acc << 8) | u64::from(byte));
    let value = if payload_len == 0 {
        u64::from(tag)
    } else {
        OFFSETS_BY_NIBBLE[payload_len & 15].wrapping_add(payload)
    };
    (value, len)
}

/// Decodes a buffer that must hold exactly one encoding.
///
/// # Errors
///
/// As [`decode`], plus [`ExactError::TrailingBytes`] if bytes are left
/// over.
///
/// ```
/// use bijou_frame::codec::bijou64::{decode_exact, ExactError};
/// assert_eq!(decode_exact(&[0x2A]), Ok(42));
/// assert_eq!(decode_exact(&[0x2A, 0x00]), Err(ExactError::TrailingBytes { offset: 1, count: 1 }));
/// ```
pub fn decode_exact(buf: &[u8]) -> Result<u64, ExactError> {
    let (value, used) = decode(buf)?;
    match buf.len() - used {
        0 => Ok(value),
        count => Err(ExactError::TrailingBytes {
            offset: used,
            count,
        }),
    }
}

/// Why [`decode_exact`] refused its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExactError {
    /// The value itself did not decode.
    #[error(transparent)]
    Decode(#[from] Bijou64Error),
    /// Bytes are left after the value (the same fields as
    /// [`ReadError::TrailingBytes`](crate::ReadError::TrailingBytes)).
    #[error("{count} trailing byte(s) at offset {offset}, after the bijou64 value; pass the value's bytes alone (or decode, which leaves the rest)")]
    TrailingBytes {
        /// Where they start: the value's length.
        offset: usize,
        /// How many there are.
        count: usize,
    },
}

#[cfg(feature = "bulk")]
mod decode_cycle;
#[cfg(feature = "bulk")]
mod decode_iter;
#[cfg(feature = "bulk")]
mod decode_lanes;
#[cfg(feature = "bulk")]
pub use decode_iter::{decode_iter, DecodeIter};

/// This format, for the encoders shared with the other varint.
struct Bijou64;

impl varint::Format for Bijou64 {
    const MAX_LEN: usize = MAX_LEN;
    const ONE_BYTE_BELOW: u64 = OFFSETS[1];
    type Scratch = [u8; MAX_LEN];

    #[inline(always)]
    fn encode_array(value: u64) -> (Self::Scratch, usize) {
        encode_array(value)
    }

    #[inline(always)]
    fn encoded_len(value: u64) -> usize {
        encoded_len(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tier_tables_agree_with_naive_tier_at_every_boundary() {
        for &offset in &OFFSETS {
            for value in [offset.saturating_sub(1), offset, offset.saturating_add(1)] {
                assert_eq!(tier(value), naive_tier(value), "value {value}");
            }
        }
        for shift in 0..64 {
            for value in [1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) + 1] {
                assert_eq!(tier(value), naive_tier(value), "value {value}");
            }
        }
        assert_eq!(tier(u64::MAX), 8);
    }

    #[test]
    fn len_from_first_byte_matches_every_tag() {
        for byte in 0..=u8::MAX {
            let expected = if byte < 0xF8 {
                1
            } else {
                usize::from(byte - 0xF7) + 1
            };
            assert_eq!(len_from_first_byte(byte), expected);
        }
    }

    #[test]
    fn short_and_fast_paths_agree() {
        for &offset in &OFFSETS {
            let value = offset + 7;
            let (bytes, len) = encode_array(value);
            let mut padded = bytes[..len].to_vec();
            padded.extend_from_slice(&[0xEE; 9]);
            assert_eq!(decode(&bytes[..len]), Ok((value, len)));
            assert_eq!(decode(&padded), Ok((value, len)));
        }
    }

    #[cfg(feature = "bulk")]
    #[test]
    fn encode_slice_reports_total_need() {
        let mut out = [0u8; 3];
        assert_eq!(
            encode_slice(&[1, 300, 1000], &mut out),
            Err(BufferTooSmall { needed: 6, have: 3 })
        );
        let mut exact = [0u8; 6];
        assert_eq!(encode_slice(&[1, 300, 1000], &mut exact), Ok(6));
        assert_eq!(exact, [0x01, 0xF8, 0x34, 0xF9, 0x01, 0xF0]);
    }
}
