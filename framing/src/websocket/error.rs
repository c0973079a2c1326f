use super::OpCode;

/// A frame the decoder refused, or a stream that ended inside one. Every
/// error is terminal. [`WsFrameError::close_code`] is the code to
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
        have: usize,
    },
}

impl WsFrameError {
    /// The close code to send for this error: 1009 for
    /// [`WsFrameError::TooLarge`], 1003 for [`WsFrameError::TextMessage`],
    /// 1007 for a close reason that is not UTF-8, 1002 (protocol error) for
    /// the rest.
    #[must_use]
    pub fn close_code(&self) -> u16 {
        match self {
            Self::TooLarge { .. } => 1009,
            Self::TextMessage { .. } => 1003,
            Self::CloseReasonNotUtf8 { .. } => 1007,
            _ => 1002,
        }
    }
}
