//! [`FrameError`]: everything that can go wrong while framing.

use std::io;

/// Why a frame could not be decoded or encoded.
///
/// **Framing errors are terminal.** After a malformed prefix, an oversize
/// frame or a truncated stream there is no way to find the next frame
/// boundary, so the connection must be dropped. The decoder does not consume
/// the offending bytes: calling it again reports the same error, and
/// tokio-util's `FramedRead` ends the stream after yielding it. The encoder
/// writes nothing for a frame it refuses, so the output stays well-formed.
///
/// Converts into [`io::Error`] (kind `InvalidData`, or `UnexpectedEof` for
/// [`FrameError::Truncated`]) for code that speaks `io::Result`.
///
/// ```
/// use bijou_frame::framing::{FrameCodec, FrameError};
/// use bytes::BytesMut;
/// use tokio_util::codec::Decoder;
///
/// let mut codec = FrameCodec::builder().max_frame_length(16).new_codec();
/// let mut buf = BytesMut::from(&[0x20][..]); // announces 32 bytes
/// assert!(matches!(codec.decode(&mut buf), Err(FrameError::TooLarge { len: 32, max: 16 })));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A frame longer than the codec's maximum: announced by a peer's prefix
    /// (decoding), or handed to the encoder (encoding).
    #[error("frame of {len} bytes exceeds the maximum frame length of {max} bytes")]
    TooLarge {
        /// The frame's payload length.
        len: u64,
        /// The codec's maximum payload length.
        max: usize,
    },
    /// The length prefix encodes a value beyond `u64::MAX`.
    #[error("{prefix} length prefix overflows u64")]
    Overflow {
        /// The prefix encoding (`LengthPrefix::NAME`).
        prefix: &'static str,
    },
    /// A LEB128 length prefix in an overlong form (a shorter one exists).
    /// Never returned for bijou64 or u32-be, which have one form per length.
    #[error("non-canonical {prefix} length prefix: the {prefix_len}-byte form has a shorter one")]
    NonCanonical {
        /// The prefix encoding (`LengthPrefix::NAME`).
        prefix: &'static str,
        /// Length of the rejected prefix in bytes.
        prefix_len: usize,
    },
    /// The stream ended inside a frame.
    ///
    /// `have` counts the bytes of the unfinished frame that arrived (prefix
    /// included); `needed` is the frame's total length as far as it is known:
    /// prefix plus payload once the prefix was read, otherwise the prefix's
    /// length (exact for bijou64 and u32-be, a lower bound for LEB128).
    #[error("stream ended inside a frame: {have} of at least {needed} bytes received")]
    Truncated {
        /// Total bytes the unfinished frame needs (at least).
        needed: u64,
        /// Bytes of it that were received.
        have: usize,
    },
    /// The underlying transport failed.
    #[error("I/O error while framing: {0}")]
    Io(#[from] io::Error),
}

impl From<FrameError> for io::Error {
    /// ```
    /// use bijou_frame::framing::FrameError;
    /// let err = std::io::Error::from(FrameError::Truncated { needed: 5, have: 2 });
    /// assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    /// ```
    fn from(err: FrameError) -> Self {
        match err {
            FrameError::Io(inner) => inner,
            FrameError::Truncated { .. } => io::Error::new(io::ErrorKind::UnexpectedEof, err),
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}
