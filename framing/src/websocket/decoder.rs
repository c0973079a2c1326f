use bytes::{Bytes, BytesMut};

use super::{apply_mask, parse_close, Frame, OpCode, Role, WsFrameError};
use crate::recv_buffer::RecvBuffer;
use crate::to_u64;

/// A header, checked and ready for its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    fin: bool,
    opcode: OpCode,
    mask: Option<[u8; 4]>,
    len: usize,
}

/// Decodes frames from a growing buffer; see the [module docs](crate::websocket).
///
/// ```
/// use bijou_frame::framing::websocket::{encode_frame, FrameDecoder, OpCode, Role};
/// use bytes::BytesMut;
///
/// let mut wire = BytesMut::new();
/// encode_frame(&mut wire, true, OpCode::Binary, b"hello", Some([1, 2, 3, 4]));
/// let mut server = FrameDecoder::new(Role::Server, 1024);
/// let frame = server.decode(&mut wire)?.expect("a whole frame");
/// assert_eq!(&frame.payload[..], b"hello");
/// assert_eq!(server.decode(&mut wire)?, None);
/// # Ok::<(), bijou_frame::framing::websocket::WsFrameError>(())
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
    recv: RecvBuffer,
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
            recv: RecvBuffer::default(),
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
    /// `min(len, 2r + 64 KiB)` bytes; see the [module docs](crate::websocket)).
    ///
    /// # Errors
    ///
    /// Any [`WsFrameError`] but `Truncated`, as soon as the bytes that
    /// show it are in `src`.
    pub fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, WsFrameError> {
        self.recv.observe(src);
        let header = match self.pending {
            Some(header) => header,
            None => match self.decode_header(src)? {
                Some(header) => header,
                None => {
                    self.recv.release_if_drained(src);
                    return Ok(None);
                }
            },
        };
        if src.len() < header.len {
            self.pending = Some(header);
            self.recv.reserve_payload(src, header.len);
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
        self.recv.release_if_drained(src);
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
        let have = src.len();
        let needed = match self.pending {
            Some(header) => to_u64(header.len),
            None => to_u64(have).saturating_add(1),
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
}

/// The extended length of `len_bytes` bytes behind the first two, if
/// they are there (`Some(0)` when there is none).
fn read_len(src: &[u8], len_bytes: usize) -> Option<u64> {
    let field = src.get(2..2 + len_bytes)?;
    Some(field.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}
