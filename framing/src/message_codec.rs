//! [`MessageCodec`]: [`FrameCodec`] plus typed decoding and encoding of
//! [`Message`]s (sync or handshake), dispatched on the 4-byte schema.
//!
//! ```text
//!   wire:  | prefix | "SUM\0" | TotalSize | Tag | payload | prefix | "SUH\0" | 00 | ... |
//!          \_ FrameCodec<P> _/\____ one frame = one Message __/
//!
//!   decode:  bytes ──FrameCodec──► Bytes (frame) ──Message::decode──► Result<Message, MessageError>
//!   encode:  &Message ──Message::encode──► Bytes ──FrameCodec──► prefix + bytes
//! ```
//!
//! # Error handling
//!
//! There are two kinds of failure, handled differently:
//!
//! - **Framing errors end the stream.** A malformed or oversize length
//!   prefix, or a stream that stops inside a frame, is a
//!   [`FrameError`], returned as the `Decoder::Error`. The next frame
//!   boundary cannot be found after it, so tokio-util's `FramedRead` ends
//!   the stream; drop the connection.
//! - **A bad message does not.** A well-delimited frame whose contents do
//!   not decode (unknown schema, retired tag, wrong `TotalSize`, unsorted
//!   ids, ...) leaves the stream in sync: the frame was consumed whole. As
//!   tokio-util's `Decoder` docs suggest for recoverable errors, the item
//!   type is a `Result`: `Ok(Message)` or `Err(MessageError)`. The caller
//!   decides whether to skip it, answer, or disconnect.
//!
//! ```
//! use bijou_framing::message::{Message, MessageError, SedimentreeId, SyncMessage};
//! use bijou_framing::{FrameCodec, MessageCodec};
//! use bytes::{Bytes, BytesMut};
//! use tokio_util::codec::{Decoder, Encoder};
//!
//! let mut codec = MessageCodec::new();
//! let mut wire = BytesMut::new();
//! let reject = Message::Sync(SyncMessage::DataRequestRejected { id: SedimentreeId::new([1; 32]) });
//! codec.encode(&reject, &mut wire)?;
//! // A well-framed frame holding garbage, then a good message again.
//! FrameCodec::new().encode(Bytes::from_static(b"SUM\0junk"), &mut wire)?;
//! codec.encode(&reject, &mut wire)?;
//!
//! assert_eq!(codec.decode(&mut wire)?, Some(Ok(reject.clone())));
//! assert!(matches!(codec.decode(&mut wire)?, Some(Err(MessageError::TotalSize { .. }))));
//! assert_eq!(codec.decode(&mut wire)?, Some(Ok(reject))); // still in sync
//! assert_eq!(codec.decode(&mut wire)?, None);
//!
//! // A framing error is the decoder's error: the stream ends.
//! let mut bad = BytesMut::from(&[0xFF; 9][..]); // bijou64 overflow
//! assert!(codec.decode(&mut bad).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io;

use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::{
    message::{Message, MessageError},
    prefix::{Bijou64, LengthPrefix},
    FrameCodec, FrameError,
};

/// Typed message codec; see the [module docs](self).
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
    /// use bijou_framing::{prefix::U32Be, FrameCodec, MessageCodec};
    /// // Subduction's QUIC framing: a 4-byte big-endian length prefix.
    /// let codec = MessageCodec::from_frame_codec(FrameCodec::with_prefix(U32Be));
    /// # let _ = codec;
    /// ```
    #[must_use]
    pub fn from_frame_codec(frames: FrameCodec<P>) -> Self {
        Self { frames }
    }

    /// The underlying frame codec.
    #[must_use]
    pub fn frame_codec(&self) -> &FrameCodec<P> {
        &self.frames
    }
}

impl<P: LengthPrefix> Default for MessageCodec<P> {
    fn default() -> Self {
        Self::from_frame_codec(FrameCodec::default())
    }
}

impl<P: LengthPrefix> Decoder for MessageCodec<P> {
    type Item = Result<Message, MessageError>;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, FrameError> {
        Ok(self.frames.decode(src)?.map(Message::decode))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, FrameError> {
        Ok(self.frames.decode_eof(src)?.map(Message::decode))
    }
}

/// Why a message could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The message cannot be encoded (a count does not fit its field);
    /// nothing was written.
    #[error(transparent)]
    Encode(#[from] bijou_codec::WriteError),
    /// The frame layer refused it (too large) or the transport failed.
    #[error(transparent)]
    Frame(#[from] FrameError),
}

impl From<io::Error> for SendError {
    fn from(err: io::Error) -> Self {
        Self::Frame(FrameError::Io(err))
    }
}

impl<P: LengthPrefix> Encoder<&Message> for MessageCodec<P> {
    type Error = SendError;

    fn encode(&mut self, msg: &Message, dst: &mut BytesMut) -> Result<(), SendError> {
        let bytes: Bytes = msg.encode()?;
        self.frames.encode(bytes, dst)?;
        Ok(())
    }
}

impl<P: LengthPrefix> Encoder<Message> for MessageCodec<P> {
    type Error = SendError;

    fn encode(&mut self, msg: Message, dst: &mut BytesMut) -> Result<(), SendError> {
        self.encode(&msg, dst)
    }
}
