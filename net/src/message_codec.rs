use std::io;

use bijou_codec::Wire;
use bijou_framing::prefix::{Bijou64, LengthPrefix};
use bijou_framing::{FrameCodec, FrameError};
use bijou_proto::ephemeral::PublishError;
use bijou_proto::message::{Message, MessageFrame};
use bijou_proto::session::SendRefused;
use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::transport::{write_body, TransportError};

/// A [`FrameCodec`] plus typed decoding and encoding of [`Message`]s
/// (sync, handshake, ephemeral, keyhive), dispatched on the 4-byte schema. This
/// is the one typed path: [`Connection`](crate::Connection) and the
/// [`handshake`](crate::handshake) are built on it.
///
/// ```text
///   wire:  | prefix | "SUM\0" | TotalSize | Tag | payload | prefix | "SUH\0" | 00 | ... |
///          \_ FrameCodec<P> _/\____ one frame = one Message __/
///
///   decode:  bytes ──FrameCodec──► frame (Bytes) ──Message::decode──► MessageFrame { bytes, message }
///   encode:  &Message ──wire_len──► prefix ──write_to──► message, in place in the frame buffer
///            Bytes ─────────────────► prefix + bytes as they are (forwarding a received frame)
/// ```
///
/// Decoding yields each message **together with its exact frame bytes**,
/// so a relay or an echo server verifies what it received and forwards the
/// same bytes. Signed items and blobs inside the message are zero-copy
/// slices of those bytes.
///
/// Encoding writes the length prefix and then the message straight into the
/// frame buffer: the message's exact length is computed first (every count
/// checked), so there is no intermediate buffer and nothing is written for
/// a message that cannot be encoded.
///
/// # Error handling
///
/// There are two kinds of failure, handled differently:
///
/// - **Framing errors end the stream.** A malformed or oversize length
///   prefix, or a stream that stops inside a frame, is a
///   [`FrameError`], returned as the `Decoder::Error`. The next frame
///   boundary cannot be found after it, so tokio-util's `FramedRead` ends
///   the stream; drop the connection.
/// - **A bad message does not.** A well-delimited frame whose contents do
///   not decode (unknown schema, retired tag, wrong `TotalSize`, unsorted
///   ids, ...) leaves the stream in sync: the frame was consumed whole. The
///   item is a [`MessageFrame`] whose `message` is the
///   `Err(MessageError)`; the caller decides whether to skip it, answer, or
///   disconnect.
///
/// ```
/// use bijou_frame::framing::FrameCodec;
/// use bijou_frame::net::MessageCodec;
/// use bijou_frame::proto::message::{DataRequestRejected, Message, MessageError, SedimentreeId, SyncMessage};
/// use bytes::{Bytes, BytesMut};
/// use tokio_util::codec::{Decoder, Encoder};
///
/// let mut codec = MessageCodec::new();
/// let mut wire = BytesMut::new();
/// let reject = Message::Sync(SyncMessage::from(DataRequestRejected { id: SedimentreeId::new([1; 32]) }));
/// codec.encode(&reject, &mut wire)?;
/// // A well-framed frame holding garbage, then a good message again.
/// FrameCodec::new().encode(Bytes::from_static(b"SUM\0junk"), &mut wire)?;
/// codec.encode(&reject, &mut wire)?;
///
/// let first = codec.decode(&mut wire)?.expect("a frame");
/// assert_eq!(first.message, Ok(reject.clone()));
/// assert_eq!(first.bytes.len(), 41); // the exact frame, without the prefix
/// let second = codec.decode(&mut wire)?.expect("a frame");
/// assert!(matches!(second.message, Err(MessageError::TotalSize { .. })));
/// assert_eq!(&second.bytes[..], b"SUM\0junk");
/// assert_eq!(codec.decode(&mut wire)?.expect("a frame").message, Ok(reject)); // still in sync
/// assert!(codec.decode(&mut wire)?.is_none());
///
/// // A framing error is the decoder's error: the stream ends.
/// let mut bad = BytesMut::from(&[0xFF; 9][..]); // bijou64 overflow
/// assert!(codec.decode(&mut bad).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct MessageCodec<P = Bijou64> {
    frames: FrameCodec<P>,
}

impl MessageCodec<Bijou64> {
    /// A bijou64-prefixed message codec with the default maximum frame
    /// length.
    #[must_use]
    pub fn new() -> Self {
        Self::from_frame_codec(FrameCodec::new())
    }
}

impl<P: LengthPrefix> MessageCodec<P> {
    /// Typed messages over a configured frame codec (prefix, maximum
    /// length).
    ///
    /// ```
    /// use bijou_frame::framing::{prefix::U32Be, FrameCodec};
    /// use bijou_frame::net::MessageCodec;
    /// // Subduction's QUIC framing: a 4-byte big-endian length prefix.
    /// let codec = MessageCodec::from_frame_codec(FrameCodec::with_prefix(U32Be));
    /// # let _ = codec;
    /// ```
    #[must_use]
    pub fn from_frame_codec(frames: FrameCodec<P>) -> Self {
        Self { frames }
    }

    /// Typed messages behind `prefix`, with the default maximum frame
    /// length.
    #[must_use]
    pub fn with_prefix(prefix: P) -> Self {
        Self::from_frame_codec(FrameCodec::with_prefix(prefix))
    }

    /// The underlying frame codec.
    #[must_use]
    pub fn frame_codec(&self) -> &FrameCodec<P> {
        &self.frames
    }

    /// The maximum frame length, both ways.
    #[must_use]
    pub fn max_frame_length(&self) -> usize {
        self.frames.max_frame_length()
    }

    /// Changes the maximum frame length (the handshake lowers it until the
    /// peer is authenticated).
    pub fn set_max_frame_length(&mut self, max_frame_length: usize) {
        self.frames.set_max_frame_length(max_frame_length);
    }
}

impl<P: LengthPrefix> Default for MessageCodec<P> {
    fn default() -> Self {
        Self::from_frame_codec(FrameCodec::default())
    }
}

impl<P: LengthPrefix> Decoder for MessageCodec<P> {
    type Item = MessageFrame;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<MessageFrame>, FrameError> {
        Ok(self.frames.decode(src)?.map(MessageFrame::decode))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<MessageFrame>, FrameError> {
        Ok(self.frames.decode_eof(src)?.map(MessageFrame::decode))
    }
}

/// Why a message could not be sent. Nothing of it was sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The message cannot be encoded (a count does not fit its field);
    /// nothing was written.
    #[error(transparent)]
    Encode(#[from] bijou_codec::WriteError),
    /// The transport of a [`Connection`](crate::Connection), or the frame
    /// layer of a [`MessageCodec`], refused it (too large) or failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The session refused it: a handshake message on an established
    /// [`Connection`](crate::Connection).
    #[error(transparent)]
    Refused(SendRefused),
    /// An ephemeral message could not be built: too large, or the signer
    /// failed.
    #[error(transparent)]
    Publish(#[from] PublishError),
}

impl From<SendRefused> for SendError {
    fn from(err: SendRefused) -> Self {
        match err {
            SendRefused::Encode(e) => Self::Encode(e),
            other => Self::Refused(other),
        }
    }
}

impl SendError {
    /// Whether the session refused a handshake message after the handshake.
    #[must_use]
    pub fn is_handshake_after_handshake(&self) -> bool {
        matches!(
            self,
            Self::Refused(SendRefused::HandshakeAfterHandshake { .. })
        )
    }
}

impl From<io::Error> for SendError {
    fn from(err: io::Error) -> Self {
        Self::Transport(TransportError::Io(err))
    }
}

impl<P: LengthPrefix> Encoder<&Message> for MessageCodec<P> {
    type Error = SendError;

    /// Writes the prefix and the message in place. On error, `dst` is left
    /// as it was.
    fn encode(&mut self, msg: &Message, dst: &mut BytesMut) -> Result<(), SendError> {
        let len = msg.wire_len()?;
        let start = dst.len();
        self.frames
            .put_prefix(len, dst)
            .map_err(TransportError::from)?;
        Ok(write_body(dst, start, msg, len)?)
    }
}

impl<P: LengthPrefix> Encoder<Message> for MessageCodec<P> {
    type Error = SendError;

    fn encode(&mut self, msg: Message, dst: &mut BytesMut) -> Result<(), SendError> {
        self.encode(&msg, dst)
    }
}

/// Sends one frame's bytes as they are: a received frame, forwarded
/// untouched.
impl<P: LengthPrefix> Encoder<Bytes> for MessageCodec<P> {
    type Error = FrameError;

    fn encode(&mut self, frame: Bytes, dst: &mut BytesMut) -> Result<(), FrameError> {
        self.frames.encode(frame, dst)
    }
}
