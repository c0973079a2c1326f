//! RFC 6455 frames, sans-IO: a [`FrameDecoder`] that never reserves ahead
//! of the bytes received, and [`encode_frame`].
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
//! The buffer policy is `bijou_framing::FrameCodec`'s: while a payload of
//! `len` bytes is incomplete with `r` bytes received, the buffer grows to at
//! most `min(len, 2r + 64 KiB)` ([`RESERVE_STEP`]), never to the announced
//! length; after a buffer of 1 MiB or more, a nearly drained buffer (8 KiB
//! or less unread) is moved to a fresh small allocation. A complete payload
//! leaves the buffer zero-copy (`split_to(len).freeze()`, unmasked in place).

use bytes::{BufMut, Bytes, BytesMut};

use bijou_framing::{RELEASE_COPY_LIMIT, RELEASE_THRESHOLD, RESERVE_STEP};

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

/// A close frame's payload, checked: no code, or a code a peer may send
/// with a UTF-8 reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Close {
    /// The status code, if any.
    pub code: Option<u16>,
    /// The reason (empty without a code).
    pub reason: String,
}

/// A frame the decoder refused, or a connection that broke mid-frame.
/// Every error is terminal. [`WsFrameError::close_code`] is the code to
/// close the connection with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WsFrameError {
    /// RSV1, RSV2 or RSV3 set: no extension was negotiated.
    #[error("reserved bits {bits:#05b} set in a frame header (no extension negotiated)")]
    ReservedBits {
        /// RSV1..RSV3 as 3 bits.
        bits: u8,
    },
    /// An opcode RFC 6455 reserves (3-7, B-F).
    #[error("reserved opcode {opcode:#x}")]
    ReservedOpcode {
        /// The 4 opcode bits.
        opcode: u8,
    },
    /// A client frame without a masking key (servers must refuse them).
    #[error("unmasked frame from a client ({opcode:?}, {len} bytes)")]
    UnmaskedClientFrame {
        /// The frame's opcode.
        opcode: OpCode,
        /// Its announced length.
        len: u64,
    },
    /// A server frame with a masking key (clients must refuse them).
    #[error("masked frame from a server ({opcode:?}, {len} bytes)")]
    MaskedServerFrame {
        /// The frame's opcode.
        opcode: OpCode,
        /// Its announced length.
        len: u64,
    },
    /// A control frame announcing more than 125 bytes.
    #[error("{opcode:?} frame of {len} bytes (control frames carry at most 125)")]
    ControlTooLong {
        /// Close, ping or pong.
        opcode: OpCode,
        /// The announced length.
        len: u64,
    },
    /// A control frame without FIN.
    #[error("fragmented {opcode:?} frame (control frames are never fragmented)")]
    FragmentedControl {
        /// Close, ping or pong.
        opcode: OpCode,
    },
    /// A continuation frame with no fragmented message to continue.
    #[error("continuation frame ({len} bytes) without a message to continue")]
    ContinuationWithoutStart {
        /// Its announced length.
        len: u64,
    },
    /// A text or binary frame while a fragmented message is unfinished.
    #[error("new {opcode:?} message inside a fragmented message ({received} bytes received)")]
    MessageInsideFragmented {
        /// The new message's opcode.
        opcode: OpCode,
        /// Bytes of the unfinished message received so far.
        received: u64,
    },
    /// A length in a longer form than needed (RFC 6455 5.2: the minimal
    /// number of bytes must be used).
    #[error("length {len} in a {header_len}-byte header form (not minimal)")]
    NonMinimalLength {
        /// The length.
        len: u64,
        /// Bytes of the length field (2 or 8).
        header_len: usize,
    },
    /// A 64-bit length with the most significant bit set.
    #[error("64-bit length {len:#x} with the top bit set")]
    LengthTopBit {
        /// The raw 64-bit length.
        len: u64,
    },
    /// A message longer than the maximum, refused from the header that
    /// announced it (`len` counts the fragments already received).
    #[error("message of {len} bytes exceeds the maximum of {max} bytes")]
    TooLarge {
        /// The message's length so far, this frame included.
        len: u64,
        /// The maximum in force.
        max: usize,
    },
    /// A text message (refused at its first header: Subduction messages
    /// are binary).
    #[error("text message frame of {len} bytes (Subduction messages are binary)")]
    TextMessage {
        /// The first frame's announced length.
        len: u64,
    },
    /// A close frame with a 1-byte payload.
    #[error("close frame with a 1-byte payload")]
    CloseOneByte,
    /// A close code a peer may not send (below 1000, 1004-1006, 1015,
    /// 1016-2999, 5000 and up).
    #[error("invalid close code {code}")]
    InvalidCloseCode {
        /// The code.
        code: u16,
    },
    /// A close reason that is not UTF-8.
    #[error("close reason is not UTF-8 (valid up to byte {valid_up_to} of {len})")]
    CloseReasonNotUtf8 {
        /// Length of the valid UTF-8 prefix.
        valid_up_to: usize,
        /// The reason's length.
        len: usize,
    },
    /// The stream ended inside a frame or a fragmented message.
    #[error("stream ended inside a frame: {have} of at least {needed} bytes")]
    Truncated {
        /// Bytes the frame (header and payload) needs, at least.
        needed: u64,
        /// Bytes of it received.
        have: u64,
    },
    /// The peer stopped in the middle of a frame or a fragmented message
    /// for longer than the stall timeout.
    #[error("peer stalled for {after_ms} ms inside a frame ({have} bytes of it buffered)")]
    Stalled {
        /// The stall timeout, in milliseconds.
        after_ms: u64,
        /// Bytes of the unfinished frame buffered.
        have: usize,
    },
    /// A message handed to the sink after our close frame.
    #[error("message sent after the close frame")]
    SendAfterClose,
}

impl WsFrameError {
    /// The close code to send for this error: 1009 for
    /// [`WsFrameError::TooLarge`], 1003 for [`WsFrameError::TextMessage`],
    /// 1007 for a close reason that is not UTF-8, 1008 for a stall, 1002
    /// (protocol error) for the rest.
    #[must_use]
    pub fn close_code(&self) -> u16 {
        match self {
            Self::TooLarge { .. } => 1009,
            Self::TextMessage { .. } => 1003,
            Self::CloseReasonNotUtf8 { .. } => 1007,
            Self::Stalled { .. } => 1008,
            _ => 1002,
        }
    }
}

/// A header, checked and ready for its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    fin: bool,
    opcode: OpCode,
    mask: Option<[u8; 4]>,
    len: usize,
}

/// Decodes frames from a growing buffer; see the [module docs](self).
///
/// ```
/// use bijou_frame::net::transport::ws_frame::{encode_frame, FrameDecoder, OpCode, Role};
/// use bytes::BytesMut;
///
/// let mut wire = BytesMut::new();
/// encode_frame(&mut wire, true, OpCode::Binary, b"hello", Some([1, 2, 3, 4]));
/// let mut server = FrameDecoder::new(Role::Server, 1024);
/// let frame = server.decode(&mut wire)?.expect("a whole frame");
/// assert_eq!(&frame.payload[..], b"hello");
/// assert_eq!(server.decode(&mut wire)?, None);
/// # Ok::<(), bijou_frame::net::transport::ws_frame::WsFrameError>(())
/// ```
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    role: Role,
    max_message_length: usize,
    /// The header of the frame whose payload is pending.
    pending: Option<Header>,
    /// Bytes of a fragmented message received so far (`None`: no
    /// fragmented message is open).
    fragmented: Option<u64>,
    /// Largest buffer capacity seen since the last release.
    peak_capacity: usize,
}

impl FrameDecoder {
    /// A decoder for our `role` (a server reads a client's masked frames),
    /// refusing messages over `max_message_length` bytes.
    #[must_use]
    pub fn new(role: Role, max_message_length: usize) -> Self {
        Self {
            role,
            max_message_length,
            pending: None,
            fragmented: None,
            peak_capacity: 0,
        }
    }

    /// The maximum message length now in force.
    #[must_use]
    pub fn max_message_length(&self) -> usize {
        self.max_message_length
    }

    /// Refuses messages over `max` bytes from the next header on (a frame
    /// whose header was already read keeps the limit it was admitted
    /// with).
    pub fn set_max_message_length(&mut self, max: usize) {
        self.max_message_length = max;
    }

    /// Between frames and outside any fragmented message: the stream may
    /// end here.
    #[must_use]
    pub fn is_at_boundary(&self) -> bool {
        self.pending.is_none() && self.fragmented.is_none()
    }

    /// Bytes of a fragmented message received so far, if one is open.
    #[must_use]
    pub fn fragmented_len(&self) -> Option<u64> {
        self.fragmented
    }

    /// Decodes the next frame from the front of `src`, or `Ok(None)` if it
    /// is not all there yet (having made room for at most
    /// `min(len, 2r + 64 KiB)` bytes; see the [module docs](self)).
    ///
    /// # Errors
    ///
    /// Any [`WsFrameError`] but `Truncated`, `Stalled` and
    /// `SendAfterClose`, as soon as the bytes that show it are in `src`.
    pub fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, WsFrameError> {
        self.peak_capacity = self.peak_capacity.max(src.capacity());
        let header = match self.pending {
            Some(header) => header,
            None => match self.decode_header(src)? {
                Some(header) => header,
                None => {
                    self.maybe_release(src);
                    return Ok(None);
                }
            },
        };
        if src.len() < header.len {
            self.pending = Some(header);
            self.maybe_release(src);
            reserve_payload(src, header.len);
            return Ok(None);
        }
        self.pending = None;
        let payload = if header.len == 0 {
            Bytes::new()
        } else {
            let mut payload = src.split_to(header.len);
            if let Some(mask) = header.mask {
                apply_mask(&mut payload, mask);
            }
            payload.freeze()
        };
        if header.opcode == OpCode::Close {
            parse_close(&payload)?;
        }
        self.track_fragments(&header);
        self.maybe_release(src);
        Ok(Some(Frame {
            fin: header.fin,
            opcode: header.opcode,
            payload,
        }))
    }

    /// As [`FrameDecoder::decode`] once the stream has ended: bytes left
    /// over, a pending frame or an open fragmented message are
    /// [`WsFrameError::Truncated`].
    ///
    /// # Errors
    ///
    /// As `decode`, and `Truncated`.
    pub fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, WsFrameError> {
        if let Some(frame) = self.decode(src)? {
            return Ok(Some(frame));
        }
        if src.is_empty() && self.is_at_boundary() {
            return Ok(None);
        }
        let have = to_u64(src.len());
        let needed = match self.pending {
            Some(header) => to_u64(header.len),
            None => have.saturating_add(1),
        };
        Err(WsFrameError::Truncated { needed, have })
    }

    /// The message bookkeeping of a completed frame.
    fn track_fragments(&mut self, header: &Header) {
        let len = to_u64(header.len);
        self.fragmented = match (header.opcode, header.fin) {
            (OpCode::Binary | OpCode::Text, false) => Some(len),
            (OpCode::Continuation, false) => Some(self.fragmented.unwrap_or(0).saturating_add(len)),
            (OpCode::Binary | OpCode::Text | OpCode::Continuation, true) => None,
            // Control frames may come between fragments.
            _ => self.fragmented,
        };
    }

    /// Parses, checks and consumes a complete header at the front of `src`.
    fn decode_header(&mut self, src: &mut BytesMut) -> Result<Option<Header>, WsFrameError> {
        let (Some(&b0), Some(&b1)) = (src.first(), src.get(1)) else {
            return Ok(None);
        };
        let fin = b0 & 0x80 != 0;
        let rsv = (b0 >> 4) & 0x07;
        if rsv != 0 {
            return Err(WsFrameError::ReservedBits { bits: rsv });
        }
        let opcode = OpCode::from_bits(b0 & 0x0F)
            .ok_or(WsFrameError::ReservedOpcode { opcode: b0 & 0x0F })?;
        let masked = b1 & 0x80 != 0;
        let len7 = b1 & 0x7F;
        let len_bytes = match len7 {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        let header_len = 2 + len_bytes + if masked { 4 } else { 0 };
        // Control frame rules need only the first two bytes.
        if opcode.is_control() {
            if !fin {
                return Err(WsFrameError::FragmentedControl { opcode });
            }
            if len7 > 125 {
                let len = read_len(src, len_bytes).unwrap_or(u64::from(len7));
                return Err(WsFrameError::ControlTooLong { opcode, len });
            }
        }
        let Some(len) = read_len(src, len_bytes) else {
            return Ok(None);
        };
        let len = match len_bytes {
            0 => u64::from(len7),
            2 if len < 126 => return Err(WsFrameError::NonMinimalLength { len, header_len: 2 }),
            8 if len >> 63 != 0 => return Err(WsFrameError::LengthTopBit { len }),
            8 if len <= 0xFFFF => {
                return Err(WsFrameError::NonMinimalLength { len, header_len: 8 })
            }
            _ => len,
        };
        match (self.role, masked) {
            (Role::Server, false) => return Err(WsFrameError::UnmaskedClientFrame { opcode, len }),
            (Role::Client, true) => return Err(WsFrameError::MaskedServerFrame { opcode, len }),
            _ => {}
        }
        let message_len = match (opcode, self.fragmented) {
            (OpCode::Continuation, None) => {
                return Err(WsFrameError::ContinuationWithoutStart { len })
            }
            (OpCode::Continuation, Some(received)) => received.saturating_add(len),
            (OpCode::Text | OpCode::Binary, Some(received)) => {
                return Err(WsFrameError::MessageInsideFragmented { opcode, received })
            }
            (OpCode::Text, None) => return Err(WsFrameError::TextMessage { len }),
            _ => len,
        };
        if !opcode.is_control() && message_len > to_u64(self.max_message_length) {
            return Err(WsFrameError::TooLarge {
                len: message_len,
                max: self.max_message_length,
            });
        }
        if src.len() < header_len {
            return Ok(None);
        }
        let mask = if masked {
            let at = 2 + len_bytes;
            match src.get(at..at + 4) {
                Some(&[a, b, c, d]) => Some([a, b, c, d]),
                _ => return Ok(None),
            }
        } else {
            None
        };
        // Admitted against a maximum that is a `usize`, so this converts.
        let len = usize::try_from(len).map_err(|_| WsFrameError::TooLarge {
            len,
            max: self.max_message_length,
        })?;
        let _ = src.split_to(header_len);
        Ok(Some(Header {
            fin,
            opcode,
            mask,
            len,
        }))
    }

    /// Releases a large, nearly drained buffer (as `FrameCodec` does).
    fn maybe_release(&mut self, src: &mut BytesMut) {
        if self.peak_capacity >= RELEASE_THRESHOLD && src.len() <= RELEASE_COPY_LIMIT {
            let mut fresh = BytesMut::with_capacity(RELEASE_COPY_LIMIT.max(src.len()));
            fresh.extend_from_slice(src);
            *src = fresh;
            self.peak_capacity = src.capacity();
        }
    }
}

/// The extended length of `len_bytes` bytes behind the first two, if
/// they are there (`Some(0)` when there is none).
fn read_len(src: &[u8], len_bytes: usize) -> Option<u64> {
    let field = src.get(2..2 + len_bytes)?;
    Some(field.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}

/// Makes room for the rest of a `len`-byte payload, growing toward the
/// bytes received (`bijou_framing::FrameCodec`'s rule): the buffer owns
/// room already, or keeps a step spare, or grows to
/// `min(len, 2 * received + RESERVE_STEP)`.
fn reserve_payload(src: &mut BytesMut, len: usize) {
    let received = src.len();
    let missing = len.saturating_sub(received);
    if src.try_reclaim(missing) {
        return;
    }
    if src.capacity().saturating_sub(received) >= missing.min(RESERVE_STEP) {
        return;
    }
    let more = missing.min(received.saturating_add(RESERVE_STEP));
    if src.try_reclaim(more) {
        return;
    }
    let mut vec = Vec::from(core::mem::take(src));
    vec.reserve_exact(more);
    *src = BytesMut::from(Bytes::from(vec));
}

/// Checks a close payload: empty, or a code a peer may send and a UTF-8
/// reason.
///
/// # Errors
///
/// [`WsFrameError::CloseOneByte`], [`WsFrameError::InvalidCloseCode`],
/// [`WsFrameError::CloseReasonNotUtf8`].
pub fn parse_close(payload: &[u8]) -> Result<Close, WsFrameError> {
    match payload {
        [] => Ok(Close {
            code: None,
            reason: String::new(),
        }),
        [_] => Err(WsFrameError::CloseOneByte),
        [hi, lo, reason @ ..] => {
            let code = u16::from_be_bytes([*hi, *lo]);
            if !valid_close_code(code) {
                return Err(WsFrameError::InvalidCloseCode { code });
            }
            let reason =
                std::str::from_utf8(reason).map_err(|e| WsFrameError::CloseReasonNotUtf8 {
                    valid_up_to: e.valid_up_to(),
                    len: reason.len(),
                })?;
            Ok(Close {
                code: Some(code),
                reason: reason.to_owned(),
            })
        }
    }
}

/// A code a peer may put in a close frame (RFC 6455 7.4, and the IANA
/// registry's 1012-1014).
#[must_use]
pub fn valid_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

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

/// A close frame's payload: the code and a reason cut to fit 123 bytes at
/// a character boundary.
#[must_use]
pub fn close_payload(code: u16, reason: &str) -> Vec<u8> {
    let mut end = reason.len().min(MAX_CONTROL_PAYLOAD - 2);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut payload = Vec::with_capacity(2 + end);
    payload.extend_from_slice(&code.to_be_bytes());
    payload.extend_from_slice(reason.as_bytes().get(..end).unwrap_or_default());
    payload
}

fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

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
