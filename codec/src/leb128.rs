//! Unsigned LEB128, the comparison variant, with a canonical decoder.
//!
//! Seven value bits per byte, least significant group first; the high bit
//! of each byte says "another byte follows".
//!
//! ```text
//!  byte 0          byte 1              byte k (last)
//! +-+-------+    +-+-------+         +-+-------+
//! |1| g0    |    |1| g1    |   ...   |0| gk    |   value = g0 | g1<<7 | ... | gk<<7k
//! +-+-------+    +-+-------+         +-+-------+
//!  ^ continuation bit
//! ```
//!
//! Unlike bijou64, LEB128 admits many spellings of one value (`00`, `80 00`,
//! `80 80 00`, ... all mean 0), so a canonical decoder has to reject:
//!
//! - overlong forms: a multi-byte encoding whose last byte is `0x00`
//!   ([`Leb128Error::Overlong`]);
//! - a 10th byte above `0x01`, which would overflow a `u64`
//!   ([`Leb128Error::Overflow`]);
//! - a 10th byte with the continuation bit set, i.e. more than 10 bytes
//!   ([`Leb128Error::TooLong`]).
//!
//! [`decode`] is canonical; [`decode_lax`] accepts overlong forms (as most
//! LEB128 crates do) and exists for comparison.
//!
//! ```
//! use bijou_frame::codec::leb128::{decode, decode_lax, Leb128Error};
//! assert_eq!(decode(&[0xAC, 0x02]), Ok((300, 2)));
//! assert_eq!(decode(&[0x80, 0x00]), Err(Leb128Error::Overlong { len: 2 }));
//! assert_eq!(decode_lax(&[0x80, 0x00]), Ok((0, 2)));
//! ```

use crate::{varint, BufferTooSmall};

/// The longest encoding of a `u64`, in bytes.
pub const MAX_LEN: usize = 10;

const CONTINUATION_BITS: u64 = 0x8080_8080_8080_8080;

/// Why a byte string is not a (canonical) LEB128 `u64`.
///
/// These are all the ways a byte string can fail to be a canonical LEB128
/// `u64`, so this enum is exhaustive and will not grow. (bijou64's are
/// [`bijou64::Bijou64Error`](crate::bijou64::Bijou64Error): two of these
/// cannot happen there.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Leb128Error {
    /// The input ends while a continuation bit asks for more. LEB128 cannot
    /// say how many bytes are missing (at least one), so the error says
    /// what arrived instead.
    #[error("LEB128 value incomplete: all {have} byte(s) of the input have the continuation bit set; at least one more is needed")]
    Incomplete {
        /// The input's length: every byte of it announced another.
        have: usize,
    },
    /// A `len`-byte encoding whose last byte is zero: a shorter form exists.
    #[error("non-canonical LEB128: the {len}-byte encoding ends in a zero byte, and a shorter one exists")]
    Overlong {
        /// Length of the rejected encoding.
        len: usize,
    },
    /// The 10th byte carries bits beyond `u64::MAX`.
    #[error("LEB128 value overflows u64: its 10th byte is {last_byte:#04x}, at most 0x01 fits")]
    Overflow {
        /// The offending 10th byte.
        last_byte: u8,
    },
    /// The 10th byte has its continuation bit set: longer than 10 bytes.
    #[error("LEB128 value longer than 10 bytes: the 10th byte has the continuation bit set, and a u64 needs at most 10")]
    TooLong,
}

/// Length in bytes (1..=10) of the encoding of `value`.
///
/// ```
/// use bijou_frame::codec::leb128::encoded_len;
/// assert_eq!(encoded_len(127), 1);
/// assert_eq!(encoded_len(128), 2);
/// assert_eq!(encoded_len(u64::MAX), 10);
/// ```
#[inline]
#[must_use]
pub const fn encoded_len(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Encodes `value` into a 10-byte scratch array; the encoding is the first
/// `len` bytes (the second element). Bytes past `len` are unspecified.
///
/// ```
/// let (bytes, len) = bijou_frame::codec::leb128::encode_array(300);
/// assert_eq!(&bytes[..len], &[0xAC, 0x02]);
/// ```
#[inline]
#[must_use]
pub const fn encode_array(value: u64) -> ([u8; MAX_LEN], usize) {
    let len = encoded_len(value);
    // Spread the low 56 bits into eight 7-bit groups (the inverse of the
    // decoder's compaction), then set continuation bits below the last byte.
    let mut spread = value & 0x00FF_FFFF_FFFF_FFFF;
    spread = (spread & 0x0000_0000_0FFF_FFFF) | ((spread & 0x00FF_FFFF_F000_0000) << 4);
    spread = (spread & 0x0000_3FFF_0000_3FFF) | ((spread & 0x0FFF_C000_0FFF_C000) << 2);
    spread = (spread & 0x007F_007F_007F_007F) | ((spread & 0x3F80_3F80_3F80_3F80) << 1);
    // Continuation bits for bytes 0..len-1 (all eight when len > 8).
    let cont_mask = if len > 8 {
        CONTINUATION_BITS
    } else {
        CONTINUATION_BITS & (u64::MAX >> (8 * (9 - len) - 1) >> 1)
    };
    let low = (spread | cont_mask).to_le_bytes();
    let b8 = ((value >> 56) & 0x7F) as u8 | if len > 9 { 0x80 } else { 0 };
    let b9 = (value >> 63) as u8;
    (
        [
            low[0], low[1], low[2], low[3], low[4], low[5], low[6], low[7], b8, b9,
        ],
        len,
    )
}

/// Writes the encoding of `value` to the front of `out` and returns its
/// length; exactly that many bytes are written.
///
/// # Errors
///
/// [`BufferTooSmall`] if `out` is too short; nothing is written then.
pub fn encode_to_slice(value: u64, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
    varint::encode_to_slice::<Leb128>(value, out)
}

/// Appends the encoding of `value` to `out`.
///
/// ```
/// let mut out = Vec::new();
/// bijou_frame::codec::leb128::encode_to_vec(u64::MAX, &mut out);
/// assert_eq!(out, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]);
/// ```
#[inline]
pub fn encode_to_vec(value: u64, out: &mut alloc::vec::Vec<u8>) {
    varint::encode_to_vec::<Leb128>(value, out);
}

/// Appends the encoding of `value` to any [`bytes::BufMut`].
///
/// # Panics
///
/// As every `BufMut::put_*`: if `buf` lacks room and cannot grow.
#[inline]
pub fn encode<B: bytes::BufMut + ?Sized>(value: u64, buf: &mut B) {
    varint::encode::<Leb128, B>(value, buf);
}

/// Encodes every value of `values` back to back into the pre-sized `out`,
/// returning the bytes written (see `bijou64::encode_slice` for the
/// contract; bytes past the returned length are unspecified).
///
/// # Errors
///
/// [`BufferTooSmall`] with the total length needed.
pub fn encode_slice(values: &[u64], out: &mut [u8]) -> Result<usize, BufferTooSmall> {
    varint::encode_slice::<Leb128>(values, out)
}

/// Canonically decodes one value from the front of `buf`, returning it and
/// the bytes used. Trailing bytes are left alone.
///
/// # Errors
///
/// Any [`Leb128Error`]: incomplete input, overlong forms, overflow, or more
/// than 10 bytes.
///
/// ```
/// use bijou_frame::codec::leb128::{decode, Leb128Error};
/// assert_eq!(decode(&[0x7F]), Ok((127, 1)));
/// // unsigned-varint 0.8 accepts this as 2^63; it is not canonical.
/// let bad = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x03];
/// assert_eq!(decode(&bad), Err(Leb128Error::Overflow { last_byte: 0x03 }));
/// ```
#[inline(always)]
pub fn decode(buf: &[u8]) -> Result<(u64, usize), Leb128Error> {
    let (value, len) = decode_lax(buf)?;
    // Overlong iff the last byte carries no bits (only possible for len > 1).
    if len > 1 && matches!(buf.get(len - 1), Some(0)) {
        return Err(Leb128Error::Overlong { len });
    }
    Ok((value, len))
}

/// Decodes one value, accepting overlong forms (`80 00` for 0). Still
/// rejects overflow and more than 10 bytes. For comparison only: two
/// different byte strings can decode to the same value here.
///
/// # Errors
///
/// [`Leb128Error::Incomplete`], [`Leb128Error::Overflow`] or
/// [`Leb128Error::TooLong`].
#[inline(always)]
pub fn decode_lax(buf: &[u8]) -> Result<(u64, usize), Leb128Error> {
    // A byte at a time with an early exit, unrolled. Each exit is a
    // predicted branch, so in a stream whose lengths repeat the CPU knows
    // where the next value starts before this one is assembled; a
    // branch-free length computation would make every value wait for the
    // previous one's bytes instead.
    // One-byte values first, whatever follows them.
    if let Some(&first) = buf.first() {
        if first < 0x80 {
            return Ok((u64::from(first), 1));
        }
    }
    let [b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, ..] = *buf else {
        return decode_short(buf);
    };
    let mut value = u64::from(b0 & 0x7F);
    macro_rules! group {
        ($byte:expr, $index:expr) => {
            value |= u64::from($byte & 0x7F) << (7 * $index);
            if $byte < 0x80 {
                return Ok((value, $index + 1));
            }
        };
    }
    group!(b1, 1);
    group!(b2, 2);
    group!(b3, 3);
    group!(b4, 4);
    group!(b5, 5);
    group!(b6, 6);
    group!(b7, 7);
    group!(b8, 8);
    last_byte(value, b9)
}

/// The 10th byte of a maximal encoding, on top of the 63 bits before it.
#[inline(always)]
fn last_byte(value: u64, byte: u8) -> Result<(u64, usize), Leb128Error> {
    if byte >= 0x80 {
        Err(Leb128Error::TooLong)
    } else if byte > 1 {
        Err(Leb128Error::Overflow { last_byte: byte })
    } else {
        Ok((value | (u64::from(byte) << 63), MAX_LEN))
    }
}

/// Inputs shorter than ten bytes (the end of a stream): a plain loop.
#[cold]
fn decode_short(buf: &[u8]) -> Result<(u64, usize), Leb128Error> {
    let mut value = 0u64;
    for (i, &byte) in buf.iter().enumerate().take(MAX_LEN - 1) {
        value |= u64::from(byte & 0x7F) << (7 * i);
        if byte < 0x80 {
            return Ok((value, i + 1));
        }
    }
    match buf.get(MAX_LEN - 1) {
        Some(&byte) => last_byte(value, byte),
        None => Err(Leb128Error::Incomplete { have: buf.len() }),
    }
}

/// Canonically decodes concatenated values from `buf`, front to back.
///
/// ```
/// let values: Result<Vec<u64>, _> =
///     bijou_frame::codec::leb128::decode_iter(&[0x01, 0xAC, 0x02]).collect();
/// assert_eq!(values, Ok(vec![1, 300]));
/// ```
pub fn decode_iter(buf: &[u8]) -> DecodeIter<'_> {
    DecodeIter { rest: buf }
}

/// Streaming canonical iterator over concatenated LEB128 values; fused
/// after the first error. See [`decode_iter`].
#[derive(Debug, Clone)]
#[must_use = "iterators are lazy"]
pub struct DecodeIter<'a> {
    rest: &'a [u8],
}

impl<'a> DecodeIter<'a> {
    /// The bytes not yet decoded (empty after an error).
    #[must_use]
    pub fn remainder(&self) -> &'a [u8] {
        self.rest
    }
}

impl Iterator for DecodeIter<'_> {
    type Item = Result<u64, Leb128Error>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match decode(self.rest) {
            Ok((value, used)) => {
                self.rest = self.rest.get(used..).unwrap_or_default();
                Some(Ok(value))
            }
            Err(err) => {
                self.rest = &[];
                Some(Err(err))
            }
        }
    }
}

impl core::iter::FusedIterator for DecodeIter<'_> {}

/// This format, for the encoders shared with the other varint.
struct Leb128;

impl varint::Format for Leb128 {
    const MAX_LEN: usize = MAX_LEN;
    const ONE_BYTE_BELOW: u64 = 0x80;
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

    fn naive_encode(mut value: u64) -> alloc::vec::Vec<u8> {
        let mut out = alloc::vec::Vec::new();
        loop {
            let byte = (value & 0x7F) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    }

    #[test]
    fn encoder_matches_naive_loop_at_every_group_boundary() {
        for shift in 0..64 {
            for value in [(1u64 << shift) - 1, 1u64 << shift, (1u64 << shift) + 1] {
                let (bytes, len) = encode_array(value);
                assert_eq!(&bytes[..len], naive_encode(value).as_slice(), "{value}");
                assert_eq!(decode(&bytes[..len]), Ok((value, len)));
            }
        }
        let (bytes, len) = encode_array(u64::MAX);
        assert_eq!(&bytes[..len], naive_encode(u64::MAX).as_slice());
    }

    #[test]
    fn fast_and_short_paths_agree() {
        for value in [0, 1, 127, 128, 300, 1 << 40, u64::MAX] {
            let mut padded = naive_encode(value);
            let len = padded.len();
            padded.extend_from_slice(&[0x00; 10]);
            assert_eq!(decode(&padded), Ok((value, len)));
            assert_eq!(decode(&padded[..len]), Ok((value, len)));
        }
    }
}
