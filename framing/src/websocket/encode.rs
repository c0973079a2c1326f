use bytes::{BufMut, BytesMut};

use super::{OpCode, MAX_HEADER_LEN};
use crate::to_u64;

/// XORs `buf` with the masking key, from the key's first byte.
pub fn apply_mask(buf: &mut [u8], mask: [u8; 4]) {
    let wide = u64::from_ne_bytes([
        mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3],
    ]);
    let mut chunks = buf.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(word) ^ wide).to_ne_bytes());
    }
    // Chunks are 8 bytes, a multiple of the key: the rest starts at key
    // byte 0.
    for (byte, key) in chunks.into_remainder().iter_mut().zip(mask.iter().cycle()) {
        *byte ^= key;
    }
}

/// Appends a frame header for `len` payload bytes.
pub fn encode_header(
    dst: &mut BytesMut,
    fin: bool,
    opcode: OpCode,
    len: usize,
    mask: Option<[u8; 4]>,
) {
    let b0 = if fin { 0x80 } else { 0 } | opcode.bits();
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    dst.reserve(MAX_HEADER_LEN);
    dst.put_u8(b0);
    match len {
        0..=125 => dst.put_u8(mask_bit | len as u8),
        126..=0xFFFF => {
            dst.put_u8(mask_bit | 126);
            dst.put_u16(len as u16);
        }
        _ => {
            dst.put_u8(mask_bit | 127);
            dst.put_u64(to_u64(len));
        }
    }
    if let Some(mask) = mask {
        dst.put_slice(&mask);
    }
}

/// Appends one frame: its header, then `payload`, masked with `mask` if
/// given (client frames).
pub fn encode_frame(
    dst: &mut BytesMut,
    fin: bool,
    opcode: OpCode,
    payload: &[u8],
    mask: Option<[u8; 4]>,
) {
    encode_header(dst, fin, opcode, payload.len(), mask);
    let start = dst.len();
    dst.extend_from_slice(payload);
    if let Some(mask) = mask {
        if let Some(written) = dst.get_mut(start..) {
            apply_mask(written, mask);
        }
    }
}
