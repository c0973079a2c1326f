//! RFC 6455 frames, sans-IO: a [`FrameDecoder`] whose buffer grows with the
//! bytes received, never with the length a header announces, and
//! [`encode_frame`].
//!
//! ```text
//!   byte 0          byte 1          bytes 2..               then
//!  +-+-+-+-+-------+-+-------------+-----------------------+-------------+---------
//!  |F|R|R|R| opcode|M| payload len | extended payload len  | masking key | payload
//!  |I|S|S|S|  (4)  |A|     (7)     | 0, 2 (16-bit BE) or   | 0 or 4 B    | len B
//!  |N|V|V|V|       |S| 0..=125     | 8 (64-bit BE, top bit | (client     | (XOR the
//!  | |1|2|3|       |K| 126: 16-bit | clear) bytes, minimal | frames      | masking
//!  | | | | |       | | 127: 64-bit | form only             | only)       | key)
//!  +-+-+-+-+-------+-+-------------+-----------------------+-------------+---------
//!   a header is 2 to 14 bytes: 2 + {0, 2, 8} + {0, 4}
//! ```
//!
//! Opcodes: `0` continuation, `1` text, `2` binary, `8` close, `9` ping,
//! `A` pong; the rest are reserved. Control frames (close, ping, pong)
//! carry at most 125 bytes and are never fragmented. A message is one
//! frame with FIN set, or a text/binary frame without FIN followed by
//! continuations, the last with FIN set; control frames may come between
//! them.
//!
//! # Decoding
//!
//! [`FrameDecoder::decode`] checks a header completely (reserved bits and
//! opcodes, the masking rule of the peer's role, control frame rules,
//! fragmentation order, the minimal length form, and the message length
//! against the maximum, counting the fragments already received) before it
//! consumes it and before any payload is buffered. Text messages are
//! refused at the header too ([`WsFrameError::TextMessage`]): Subduction
//! messages are binary.
//!
//! # Memory
//!
//! The buffer policy is [`FrameCodec`'s](crate::FrameCodec#memory), from
//! the same code: while a payload of `len` bytes is incomplete with `r`
//! bytes received, the buffer grows to at most `min(len, 2r + 64 KiB)`,
//! never to the announced
//! length; after a buffer of 1 MiB or more, a nearly drained buffer (8 KiB
//! or less unread) is moved to a fresh small allocation. A complete payload
//! leaves the buffer zero-copy (`split_to(len).freeze()`, unmasked in place).
//!
//! The WebSocket transport of `bijou-net` (feature `websocket`) runs this
//! codec over a socket.

use bytes::Bytes;

mod close;
mod decoder;
mod encode;
mod error;

pub use close::{close_payload, parse_close, valid_close_code, Close};
pub use decoder::FrameDecoder;
pub use encode::{apply_mask, encode_frame, encode_header};
pub use error::WsFrameError;

/// The longest header: 2 bytes, a 64-bit length and a masking key.
pub const MAX_HEADER_LEN: usize = 14;

/// The longest control frame payload.
pub const MAX_CONTROL_PAYLOAD: usize = 125;

/// Which end of the connection we are: a server reads masked frames and
/// writes unmasked ones, a client the reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// We opened the connection.
    Client,
    /// We accepted it.
    Server,
}

/// A frame's opcode (the reserved ones are refused by the decoder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpCode {
    /// `0x0`: the next fragment of a message.
    Continuation,
    /// `0x1`: a UTF-8 text message.
    Text,
    /// `0x2`: a binary message.
    Binary,
    /// `0x8`: close, with an optional code and reason.
    Close,
    /// `0x9`: ping.
    Ping,
    /// `0xA`: pong.
    Pong,
}

impl OpCode {
    fn from_bits(bits: u8) -> Option<Self> {
        Some(match bits {
            0x0 => Self::Continuation,
            0x1 => Self::Text,
            0x2 => Self::Binary,
            0x8 => Self::Close,
            0x9 => Self::Ping,
            0xA => Self::Pong,
            _ => return None,
        })
    }

    /// The opcode's 4 bits.
    #[must_use]
    pub fn bits(self) -> u8 {
        match self {
            Self::Continuation => 0x0,
            Self::Text => 0x1,
            Self::Binary => 0x2,
            Self::Close => 0x8,
            Self::Ping => 0x9,
            Self::Pong => 0xA,
        }
    }

    /// Close, ping or pong.
    #[must_use]
    pub fn is_control(self) -> bool {
        matches!(self, Self::Close | Self::Ping | Self::Pong)
    }
}

/// One decoded frame, its payload unmasked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The FIN bit: the last frame of its message.
    pub fin: bool,
    /// The opcode.
    pub opcode: OpCode,
    /// The payload, unmasked.
    pub payload: Bytes,
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;
    use crate::recv_buffer::RESERVE_STEP;

    fn client_frame(fin: bool, opcode: OpCode, payload: &[u8]) -> BytesMut {
        let mut wire = BytesMut::new();
        encode_frame(
            &mut wire,
            fin,
            opcode,
            payload,
            Some([0xA1, 0xB2, 0xC3, 0xD4]),
        );
        wire
    }

    #[test]
    fn every_length_form_round_trips() {
        for len in [0usize, 1, 125, 126, 127, 0xFFFF, 0x1_0000, 70_000] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut wire = client_frame(true, OpCode::Binary, &payload);
            let header = wire.len() - len;
            assert_eq!(
                header,
                2 + 4
                    + if len < 126 {
                        0
                    } else if len <= 0xFFFF {
                        2
                    } else {
                        8
                    }
            );
            let mut dec = FrameDecoder::new(Role::Server, 1 << 20);
            let frame = dec.decode(&mut wire).unwrap().unwrap();
            assert_eq!(&frame.payload[..], &payload[..]);
            assert!(wire.is_empty());
        }
    }

    #[test]
    fn a_lying_length_reserves_one_step_only() {
        let mut wire = BytesMut::new();
        encode_header(&mut wire, true, OpCode::Binary, 50 << 20, Some([1; 4]));
        let mut dec = FrameDecoder::new(Role::Server, 50 << 20);
        assert_eq!(dec.decode(&mut wire).unwrap(), None);
        assert!(
            wire.capacity() <= RESERVE_STEP + MAX_HEADER_LEN,
            "{}",
            wire.capacity()
        );
    }

    #[test]
    fn mask_matches_the_bytewise_definition() {
        let mask = [1, 2, 3, 4];
        for len in 0..40 {
            let mut fast: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let slow: Vec<u8> = fast
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[i % 4])
                .collect();
            apply_mask(&mut fast, mask);
            assert_eq!(fast, slow);
        }
    }

    #[test]
    fn close_payload_is_cut_at_a_char_boundary() {
        let reason = "é".repeat(100);
        let payload = close_payload(1000, &reason);
        assert!(payload.len() <= MAX_CONTROL_PAYLOAD);
        assert!(parse_close(&payload).is_ok());
    }
}
