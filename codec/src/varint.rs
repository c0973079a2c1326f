//! The encoders bijou64 and LEB128 share: everything but the per-value
//! encoding itself, written once over a small [`Format`] trait.

use alloc::vec::Vec;

use crate::BufferTooSmall;

/// What the shared encoders need to know about a varint format.
pub(crate) trait Format {
    /// The longest encoding of a `u64`.
    const MAX_LEN: usize;
    /// Values below this are encoded as the single byte they are.
    const ONE_BYTE_BELOW: u64;
    /// A `[u8; MAX_LEN]` scratch array.
    type Scratch: AsRef<[u8]>;
    /// The encoding in a scratch array, and its length.
    fn encode_array(value: u64) -> (Self::Scratch, usize);
    /// The length of the encoding.
    fn encoded_len(value: u64) -> usize;
}

/// Writes exactly the encoding to the front of `out`, or nothing.
#[inline]
pub(crate) fn encode_to_slice<F: Format>(
    value: u64,
    out: &mut [u8],
) -> Result<usize, BufferTooSmall> {
    let (bytes, len) = F::encode_array(value);
    match (out.get_mut(..len), bytes.as_ref().get(..len)) {
        (Some(dst), Some(src)) => {
            dst.copy_from_slice(src);
            Ok(len)
        }
        _ => Err(BufferTooSmall {
            needed: len,
            have: out.len(),
        }),
    }
}

/// Appends the encoding to `out`.
#[inline]
pub(crate) fn encode_to_vec<F: Format>(value: u64, out: &mut Vec<u8>) {
    if value < F::ONE_BYTE_BELOW {
        out.push(value as u8);
        return;
    }
    let (bytes, len) = F::encode_array(value);
    // One fixed-size copy and a truncate beat a variable-length copy.
    let start = out.len();
    out.extend_from_slice(bytes.as_ref());
    out.truncate(start + len);
}

/// Appends the encoding to any `BufMut`.
///
/// One byte (a short blob's length, most counts) is written inline at the
/// caller, with no window and no tier; longer values go out of line, so
/// that the inline part stays small enough to be inlined everywhere (a
/// batch response's item writes were a fifth faster for it).
#[inline]
pub(crate) fn encode<F: Format, B: bytes::BufMut + ?Sized>(value: u64, buf: &mut B) {
    if value < F::ONE_BYTE_BELOW {
        buf.put_u8(value as u8);
    } else {
        encode_multi_byte::<F, B>(value, buf);
    }
}

#[inline(never)]
fn encode_multi_byte<F: Format, B: bytes::BufMut + ?Sized>(value: u64, buf: &mut B) {
    let (bytes, len) = F::encode_array(value);
    let (head, _) = bytes.as_ref().split_at(len);
    buf.put_slice(head);
}

/// Encodes `values` back to back into the pre-sized `out`; see the public
/// `encode_slice` functions for the contract.
pub(crate) fn encode_slice<F: Format>(
    values: &[u64],
    out: &mut [u8],
) -> Result<usize, BufferTooSmall> {
    let mut pos = 0usize;
    for (i, &value) in values.iter().enumerate() {
        // One-byte values skip the encoder and the full-width window.
        if value < F::ONE_BYTE_BELOW {
            if let Some(slot) = out.get_mut(pos) {
                *slot = value as u8;
                pos += 1;
                continue;
            }
        }
        let (bytes, len) = F::encode_array(value);
        if let Some(window) = out.get_mut(pos..pos + F::MAX_LEN) {
            window.copy_from_slice(bytes.as_ref());
        } else {
            let rest = out.get_mut(pos..).unwrap_or_default();
            if encode_to_slice::<F>(value, rest).is_err() {
                let tail: usize = values.iter().skip(i).map(|&v| F::encoded_len(v)).sum();
                return Err(BufferTooSmall {
                    needed: pos + tail,
                    have: out.len(),
                });
            }
        }
        pos += len;
    }
    Ok(pos)
}
