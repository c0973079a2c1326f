//! [`Builder`]: configures a [`FrameCodec`] and starts framed transports.

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Framed, FramedRead, FramedWrite};

use crate::frame_codec::DEFAULT_MAX_FRAME_LENGTH;
use crate::prefix::{Bijou64, LengthPrefix};
use crate::FrameCodec;

/// Configures a [`FrameCodec`], in the spirit of tokio-util's
/// `LengthDelimitedCodec::builder()`.
///
/// Setters take `&mut self` and return it, so a builder can be configured
/// once and then start any number of codecs or transports.
///
/// ```
/// use bijou_frame::framing::{prefix::Leb128, FrameCodec};
/// use futures::{SinkExt, StreamExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), bijou_frame::framing::FrameError> {
/// let (a, b) = tokio::io::duplex(1024);
/// let mut builder = FrameCodec::builder().prefix(Leb128);
/// builder.max_frame_length(64 * 1024);
/// let mut tx = builder.new_write(a);
/// let mut rx = builder.new_read(b);
///
/// tx.send(&b"ping"[..]).await?;
/// assert_eq!(rx.next().await.transpose()?.as_deref(), Some(&b"ping"[..]));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Builder<P = Bijou64> {
    max_frame_length: usize,
    prefix: P,
}

impl Builder<Bijou64> {
    /// A builder for bijou64 prefixes and a 50 MiB maximum
    /// ([`DEFAULT_MAX_FRAME_LENGTH`]).
    ///
    /// ```
    /// let codec = bijou_frame::framing::Builder::new().new_codec();
    /// assert_eq!(codec.max_frame_length(), 50 * 1024 * 1024);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

impl<P: LengthPrefix> Default for Builder<P> {
    fn default() -> Self {
        Self {
            max_frame_length: DEFAULT_MAX_FRAME_LENGTH,
            prefix: P::default(),
        }
    }
}

impl<P: LengthPrefix> Builder<P> {
    /// The same settings with another length prefix.
    ///
    /// ```
    /// use bijou_frame::framing::{prefix::U32Be, FrameCodec};
    /// let codec = FrameCodec::builder().prefix(U32Be).new_codec();
    /// assert_eq!(codec.prefix(), U32Be);
    /// ```
    #[must_use]
    pub fn prefix<Q: LengthPrefix>(&self, prefix: Q) -> Builder<Q> {
        Builder {
            max_frame_length: self.max_frame_length,
            prefix,
        }
    }

    /// Sets the largest payload, in bytes, that codecs decode and encode
    /// (default 50 MiB). A longer frame is an error both ways:
    /// [`FrameError::TooLarge`](crate::FrameError::TooLarge). Values above
    /// what the prefix can express (`u32::MAX` for [`U32Be`]) are clamped.
    ///
    /// [`U32Be`]: crate::prefix::U32Be
    ///
    /// ```
    /// let codec = bijou_frame::framing::FrameCodec::builder().max_frame_length(4096).new_codec();
    /// assert_eq!(codec.max_frame_length(), 4096);
    /// ```
    pub fn max_frame_length(&mut self, max_frame_length: usize) -> &mut Self {
        self.max_frame_length = max_frame_length;
        self
    }

    /// A codec with these settings.
    ///
    /// ```
    /// let codec = bijou_frame::framing::FrameCodec::builder().max_frame_length(10).new_codec();
    /// assert_eq!(codec.max_frame_length(), 10);
    /// ```
    #[must_use]
    pub fn new_codec(&self) -> FrameCodec<P> {
        FrameCodec::from_parts(self.prefix, self.max_frame_length)
    }

    /// A `Framed` stream and sink of frames over `io`.
    ///
    /// ```
    /// use futures::{SinkExt, StreamExt};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), bijou_frame::framing::FrameError> {
    /// let (a, b) = tokio::io::duplex(64);
    /// let mut left = bijou_frame::framing::FrameCodec::builder().new_framed(a);
    /// let mut right = bijou_frame::framing::FrameCodec::builder().new_framed(b);
    /// left.send(bytes::Bytes::from_static(b"hi")).await?;
    /// assert_eq!(right.next().await.transpose()?.as_deref(), Some(&b"hi"[..]));
    /// # Ok(())
    /// # }
    /// ```
    pub fn new_framed<T: AsyncRead + AsyncWrite>(&self, io: T) -> Framed<T, FrameCodec<P>> {
        Framed::new(io, self.new_codec())
    }

    /// A `FramedRead` stream of frames from `io`.
    ///
    /// ```
    /// use futures::StreamExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), bijou_frame::framing::FrameError> {
    /// let wire: &[u8] = b"\x02hi\x00";
    /// let mut frames = bijou_frame::framing::FrameCodec::builder().new_read(wire);
    /// assert_eq!(frames.next().await.transpose()?.as_deref(), Some(&b"hi"[..]));
    /// assert_eq!(frames.next().await.transpose()?.as_deref(), Some(&b""[..]));
    /// assert!(frames.next().await.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn new_read<T: AsyncRead>(&self, io: T) -> FramedRead<T, FrameCodec<P>> {
        FramedRead::new(io, self.new_codec())
    }

    /// A `FramedWrite` sink of frames into `io`.
    ///
    /// ```
    /// use futures::SinkExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), bijou_frame::framing::FrameError> {
    /// let mut sink = bijou_frame::framing::FrameCodec::builder().new_write(Vec::new());
    /// sink.send(&b"hi"[..]).await?;
    /// assert_eq!(sink.get_ref().as_slice(), b"\x02hi");
    /// # Ok(())
    /// # }
    /// ```
    pub fn new_write<T: AsyncWrite>(&self, io: T) -> FramedWrite<T, FrameCodec<P>> {
        FramedWrite::new(io, self.new_codec())
    }
}
