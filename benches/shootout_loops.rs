//! The shootout's single-value loops: a stream decoded one value at a time
//! by `bijou64::decode`, by `Reader::bijou64` and by bijoux's `decode`,
//! summing the values. The varint benchmark (`varint.rs`) times them under
//! criterion and the loop-placement benchmark (`placements.rs`) times 16
//! copies of each; both call these, so both time the same loops.
//!
//! `#[inline(always)]`: each caller compiles its own loop, which is what
//! the placement benchmark moves around.

use bijou_codec::{bijou64, Reader};
use bytes::Bytes;

/// `bijou64::decode` in a loop, as a caller that slices the stream would.
#[inline(always)]
pub fn decode_loop(buf: &[u8]) -> u64 {
    let (mut pos, mut sum) = (0usize, 0u64);
    while pos < buf.len() {
        let Ok((v, n)) = bijou64::decode(&buf[pos..]) else {
            break;
        };
        sum = sum.wrapping_add(v);
        pos += n;
    }
    sum
}

/// The same decoder through `Reader::bijou64`, the way a message decoder
/// reads its bijou64 fields (cursor, field name and error mapping
/// included).
#[inline(always)]
pub fn reader_loop(frame: &Bytes) -> u64 {
    let mut reader = Reader::new(frame);
    let mut sum = 0u64;
    while !reader.is_empty() {
        let Ok(v) = reader.bijou64("value") else {
            break;
        };
        sum = sum.wrapping_add(v);
    }
    sum
}

/// bijoux's `decode` in the same loop as [`decode_loop`].
#[inline(always)]
pub fn bijoux_loop(buf: &[u8]) -> u64 {
    let (mut pos, mut sum) = (0usize, 0u64);
    while pos < buf.len() {
        let Ok((v, n)) = bijoux::u64::decode(&buf[pos..]) else {
            break;
        };
        sum = sum.wrapping_add(v);
        pos += n;
    }
    sum
}
