//! Message transports: whatever carries whole messages between two peers.
//!
//! A [`Transport`] is a [`Sink`] of message bytes and a [`Stream`] of the
//! messages received, one item per message, with a maximum message length
//! the session can lower and raise (256 bytes until the handshake
//! completes, then the configured maximum):
//!
//! ```text
//!            Connection / handshake drivers (sans-IO state machines inside)
//!                 |  Sink<Bytes>              ^  Stream<Result<Bytes, TransportError>>
//!                 v                           |
//!   +---------------------------+   +-------------------------------------+
//!   | FramedTransport<T, P>     |   | WebSocketTransport<S>  (`websocket`)|
//!   | prefix · message, over    |   | one binary WebSocket message per    |
//!   | any AsyncRead+AsyncWrite  |   | message, no prefix (Subduction's    |
//!   | (bijou64, LEB128, u32-BE) |   | own server transport)               |
//!   +---------------------------+   +-------------------------------------+
//!   | LengthChecked<S>: any other Sink<Bytes> + Stream<Result<Bytes, E>>  |
//!   +---------------------------------------------------------------------+
//!   | IrohTransport (`iroh`): FramedTransport<_, U32Be> over the one QUIC |
//!   | stream of an iroh connection, ALPN subduction/0, close codes        |
//!   +---------------------------------------------------------------------+
//!   | LongPollTransport / LongPollSession (`longpoll`): one message per   |
//!   | HTTP request body, POST /lp/send up, a held POST /lp/recv down      |
//!   +---------------------------------------------------------------------+
//! ```
//!
//! Every transport refuses a received message longer than its current
//! maximum with [`TransportError::TooLarge`]. An error from the stream is
//! terminal (the stream ends after yielding it); an error from the sink
//! refuses that one message and writes nothing of it.
//!
//! The byte-stream transports share one buffered I/O loop (a read buffer a
//! sans-IO frame decoder consumes, a write buffer, neither held while idle)
//! and the frame decoders share one receive-buffer policy
//! (`bijou_framing`'s, stated in [`FrameCodec`'s memory
//! section](bijou_framing::FrameCodec#memory)).
//!
//! ```
//! use bijou_frame::framing::prefix::Bijou64;
//! use bijou_frame::net::transport::{FramedTransport, Transport, TransportError};
//! use bytes::Bytes;
//! use futures::{SinkExt, StreamExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), TransportError> {
//! let (a, b) = tokio::io::duplex(4096);
//! let mut a = FramedTransport::new(a, Bijou64);
//! let mut b = FramedTransport::new(b, Bijou64);
//! b.set_max_message_length(4);
//! a.send(Bytes::from_static(b"ok")).await?;
//! a.send(Bytes::from_static(b"too long")).await?;
//! assert_eq!(b.next().await.transpose()?.as_deref(), Some(&b"ok"[..]));
//! assert!(matches!(b.next().await, Some(Err(TransportError::TooLarge { len: 8, max: 4 }))));
//! assert!(b.next().await.is_none());
//! # Ok(())
//! # }
//! ```

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::{Sink, Stream};

use bijou_codec::{Wire, WriteError, Writer};
use bijou_framing::prefix::PrefixKind;
use bijou_framing::FrameError;
use bytes::BytesMut;

mod buffered;
mod framed;
#[cfg(feature = "iroh")]
pub mod iroh;
#[cfg(feature = "longpoll")]
pub mod longpoll;
#[cfg(feature = "websocket")]
pub mod websocket;

pub mod peer_framing;

pub use framed::FramedTransport;

/// A carrier of whole messages; see the [module docs](self).
///
/// Implemented by [`FramedTransport`], `WebSocketTransport` (feature
/// `websocket`), `IrohTransport` (feature `iroh`), `LongPollTransport` and
/// `LongPollSession` (feature `longpoll`), and [`LengthChecked`], which
/// adapts any other `Sink<Bytes> + Stream<Item = Result<Bytes, E>>`.
pub trait Transport:
    Stream<Item = Result<Bytes, TransportError>> + Sink<Bytes, Error = TransportError> + Unpin
{
    /// Refuses received messages longer than `max` bytes from now on
    /// ([`TransportError::TooLarge`]). Where it can, the transport refuses
    /// them before buffering them.
    fn set_max_message_length(&mut self, max: usize);

    /// The maximum now in force.
    fn max_message_length(&self) -> usize;

    /// What a transport that frames a byte stream can tell about the
    /// bytes it read ([`FramedTransport`] and `IrohTransport`); `None`, the
    /// default, for the others. The handshake driver asks it to tell the
    /// user what the peer speaks when its reply does not parse.
    fn diagnostics(&self) -> Option<&dyn FramingDiagnostics> {
        None
    }

    /// Queues one message of `len` bytes (what
    /// [`WriteInPlace::encoded_len`] returned for it), written in place,
    /// like `start_send` (call it after `poll_ready`). By default it writes
    /// the message to `Bytes` and calls `start_send`; a transport that can
    /// write in place overrides it ([`FramedTransport`] writes it straight
    /// behind its prefix, with no intermediate buffer).
    ///
    /// # Errors
    ///
    /// [`TransportError::TooLarge`] if `len` is over the maximum, and the
    /// errors of `start_send`; [`TransportError::LengthMismatch`] if the
    /// message writes another number of bytes than `len`. Nothing is sent
    /// then.
    fn start_send_in_place(
        &mut self,
        message: &dyn WriteInPlace,
        len: usize,
    ) -> Result<(), TransportError> {
        let mut buf = BytesMut::with_capacity(len);
        write_body(&mut buf, 0, message, len)?;
        Pin::new(self).start_send(buf.freeze())
    }
}

/// What a transport over a byte stream knows of the peer's framing, for
/// diagnostics; see [`Transport::diagnostics`].
pub trait FramingDiagnostics {
    /// The length prefix this transport frames with.
    fn length_prefix(&self) -> PrefixKind;

    /// Bytes received but not delivered as a message yet (a partial
    /// frame).
    fn unread(&self) -> &[u8];
}

/// Appends `message`'s `len` bytes to `dst`, behind the frame header a
/// transport wrote from `frame_start`; if the message writes another number
/// of bytes, or fails, `dst` is cut back to `frame_start` (nothing of the
/// frame is left to send) and the error is [`TransportError::LengthMismatch`].
pub(crate) fn write_body(
    dst: &mut BytesMut,
    frame_start: usize,
    message: &dyn WriteInPlace,
    len: usize,
) -> Result<(), TransportError> {
    let body = dst.len();
    message.write_in_place(dst, len);
    let written = dst.len().saturating_sub(body);
    if written != len {
        dst.truncate(frame_start);
        return Err(TransportError::LengthMismatch {
            announced: len,
            written,
        });
    }
    Ok(())
}

/// Bytes a transport can write in place: their exact length first, then
/// the bytes themselves. Every [`Wire`] type is one, so a transport carries
/// any message without knowing its type.
pub trait WriteInPlace {
    /// The exact length [`WriteInPlace::write_in_place`] appends.
    ///
    /// # Errors
    ///
    /// [`WriteError`]: a count does not fit its field.
    fn encoded_len(&self) -> Result<usize, WriteError>;

    /// Appends exactly `len` bytes to `dst`; `len` is what
    /// [`WriteInPlace::encoded_len`] returned (a message whose wire form
    /// states its own length writes it from `len`, without a second pass).
    /// Counts were checked by `encoded_len`, so writing cannot fail; a
    /// message that writes another number of bytes anyway (a `Wire`
    /// implementation at odds with itself) is refused by the transport
    /// with [`TransportError::LengthMismatch`].
    fn write_in_place(&self, dst: &mut BytesMut, len: usize);
}

impl<T: Wire> WriteInPlace for T {
    fn encoded_len(&self) -> Result<usize, WriteError> {
        self.wire_len()
    }

    fn write_in_place(&self, dst: &mut BytesMut, len: usize) {
        let start = dst.len();
        if self.write_sized(&mut Writer::growing(dst), len).is_err() {
            // Only a `Wire` type whose `write_to` disagrees with its
            // `wire_len` gets here: write nothing, which the transport
            // reports as a length mismatch.
            dst.truncate(start);
        }
    }
}

/// A boxed transport is a transport, so one `Connection<Box<dyn Transport
/// + Send>>` type can run over whichever transport is chosen at run time.
///
/// ```
/// use bijou_frame::framing::prefix::Bijou64;
/// use bijou_frame::net::transport::{FramedTransport, LengthChecked, Transport};
///
/// let (a, _b) = tokio::io::duplex(64);
/// let framed: Box<dyn Transport + Send> = Box::new(FramedTransport::new(a, Bijou64));
/// let channel = LengthChecked::new(futures::stream::empty::<Result<bytes::Bytes, std::io::Error>>(), futures::sink::drain());
/// let mut either: Vec<Box<dyn Transport + Send>> = vec![framed, Box::new(channel)];
/// either[1].set_max_message_length(256);
/// assert_eq!(either[1].max_message_length(), 256);
/// ```
impl<T: Transport + ?Sized> Transport for Box<T> {
    fn set_max_message_length(&mut self, max: usize) {
        (**self).set_max_message_length(max);
    }

    fn max_message_length(&self) -> usize {
        (**self).max_message_length()
    }

    fn diagnostics(&self) -> Option<&dyn FramingDiagnostics> {
        (**self).diagnostics()
    }

    fn start_send_in_place(
        &mut self,
        message: &dyn WriteInPlace,
        len: usize,
    ) -> Result<(), TransportError> {
        (**self).start_send_in_place(message, len)
    }
}

/// Why a transport could not carry a message. An error from the stream
/// ends it (it yields `None` afterwards); an error from the sink refuses
/// that one message, with nothing of it written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// A message longer than the maximum now in force (256 bytes until the
    /// handshake completes): announced by a frame prefix or header,
    /// received, or handed to the sink.
    #[error("message of {len} bytes exceeds the maximum of {max} bytes")]
    TooLarge {
        /// The message's length.
        len: u64,
        /// The maximum in force.
        max: usize,
    },
    /// A malformed length prefix or a stream that ended inside a frame
    /// (framed byte streams; never [`FrameError::TooLarge`] or
    /// [`FrameError::Io`], which are [`TransportError::TooLarge`] and
    /// [`TransportError::Io`]).
    #[error(transparent)]
    Frame(FrameError),
    /// A WebSocket frame that breaks RFC 6455 or is not a Subduction
    /// message (a text message, say), or a stream that ended inside one
    /// (never [`WsFrameError::TooLarge`](bijou_framing::websocket::WsFrameError::TooLarge),
    /// which is [`TransportError::TooLarge`]). The peer got a close with
    /// the error's close code.
    #[cfg(feature = "websocket")]
    #[error("WebSocket: {0}")]
    WebSocket(bijou_framing::websocket::WsFrameError),
    /// The WebSocket upgrade (the HTTP exchange before the first frame)
    /// failed.
    #[cfg(feature = "websocket")]
    #[error("WebSocket upgrade: {0}")]
    Upgrade(websocket::UpgradeError),
    /// The peer stopped inside a frame or a fragmented WebSocket message
    /// for longer than the stall timeout (see
    /// `WebSocketTransport::set_stall_timeout`); the peer got a 1008 close.
    #[cfg(feature = "websocket")]
    #[error(
        "the peer stalled for {after_ms} ms inside a WebSocket frame ({have} bytes of it buffered)"
    )]
    Stalled {
        /// The stall timeout, in milliseconds.
        after_ms: u64,
        /// Bytes of the unfinished frame buffered.
        have: usize,
    },
    /// A message handed to the sink after it was closed (our WebSocket
    /// close frame is sent).
    #[cfg(feature = "websocket")]
    #[error("message sent after the WebSocket close frame")]
    SendAfterClose,
    /// The QUIC connection of an iroh transport failed or was closed by
    /// the peer.
    #[cfg(feature = "iroh")]
    #[error("QUIC (iroh): {0}")]
    Quic(iroh::IrohStreamError),
    /// An HTTP long-poll session failed, was closed or expired, or its
    /// client stopped collecting messages.
    #[cfg(feature = "longpoll")]
    #[error("long-poll: {0}")]
    LongPoll(longpoll::LongPollError),
    /// A message wrote another number of bytes than its
    /// [`WriteInPlace::encoded_len`] announced: its `Wire` (or
    /// `WriteInPlace`) implementation disagrees with itself. Nothing was
    /// sent; the transport is still usable.
    #[error("a message announced {announced} bytes and wrote {written}: its Wire implementation's write_to and wire_len disagree; nothing was sent")]
    LengthMismatch {
        /// The length `encoded_len` gave.
        announced: usize,
        /// The bytes it wrote.
        written: usize,
    },
    /// The underlying I/O failed.
    #[error("transport I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// An error of a transport adapted with [`LengthChecked`].
    #[error("transport error: {0}")]
    Other(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<FrameError> for TransportError {
    fn from(err: FrameError) -> Self {
        match err {
            FrameError::TooLarge { len, max } => Self::TooLarge { len, max },
            FrameError::Io(e) => Self::Io(e),
            other => Self::Frame(other),
        }
    }
}

/// Any `Sink<Bytes> + Stream<Item = Result<Bytes, E>>` of whole messages as
/// a [`Transport`]: received messages longer than the maximum are refused
/// when they arrive. The inner transport's own buffering is its business,
/// so give it a bound of its own where it has one.
///
/// ```
/// use bijou_frame::net::transport::{LengthChecked, Transport, TransportError};
/// use bytes::Bytes;
/// use futures::StreamExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // A channel of messages, as an in-memory transport.
/// let (tx, rx) = futures::channel::mpsc::unbounded::<Bytes>();
/// let sink = futures::sink::drain::<Bytes>();
/// let stream = rx.map(Ok::<_, std::io::Error>);
/// let mut transport = LengthChecked::new(futures::StreamExt::fuse(stream), sink);
/// transport.set_max_message_length(3);
/// tx.unbounded_send(Bytes::from_static(b"abcd")).unwrap();
/// assert!(matches!(transport.next().await, Some(Err(TransportError::TooLarge { len: 4, max: 3 }))));
/// assert!(transport.next().await.is_none());
/// # }
/// ```
#[derive(Debug)]
pub struct LengthChecked<St, Si> {
    stream: St,
    sink: Si,
    max: usize,
    failed: bool,
}

impl<St, Si> LengthChecked<St, Si> {
    /// Receives from `stream` and sends into `sink`, with no maximum until
    /// one is set.
    pub fn new(stream: St, sink: Si) -> Self {
        Self {
            stream,
            sink,
            max: usize::MAX,
            failed: false,
        }
    }

    /// The stream and the sink.
    pub fn into_inner(self) -> (St, Si) {
        (self.stream, self.sink)
    }
}

fn other<E: std::error::Error + Send + Sync + 'static>(err: E) -> TransportError {
    TransportError::Other(Box::new(err))
}

impl<St, Si, E> Stream for LengthChecked<St, Si>
where
    St: Stream<Item = Result<Bytes, E>> + Unpin,
    Si: Unpin,
    E: std::error::Error + Send + Sync + 'static,
{
    type Item = Result<Bytes, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.failed {
            return Poll::Ready(None);
        }
        let item = match std::task::ready!(Pin::new(&mut this.stream).poll_next(cx)) {
            None => None,
            Some(Err(e)) => Some(Err(other(e))),
            Some(Ok(msg)) if msg.len() > this.max => Some(Err(TransportError::TooLarge {
                len: msg.len() as u64,
                max: this.max,
            })),
            Some(Ok(msg)) => Some(Ok(msg)),
        };
        this.failed = matches!(item, Some(Err(_)));
        Poll::Ready(item)
    }
}

impl<St, Si> Sink<Bytes> for LengthChecked<St, Si>
where
    St: Unpin,
    Si: Sink<Bytes> + Unpin,
    Si::Error: std::error::Error + Send + Sync + 'static,
{
    type Error = TransportError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Pin::new(&mut self.get_mut().sink)
            .poll_ready(cx)
            .map_err(other)
    }

    fn start_send(self: Pin<&mut Self>, item: Bytes) -> Result<(), TransportError> {
        Pin::new(&mut self.get_mut().sink)
            .start_send(item)
            .map_err(other)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Pin::new(&mut self.get_mut().sink)
            .poll_flush(cx)
            .map_err(other)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Pin::new(&mut self.get_mut().sink)
            .poll_close(cx)
            .map_err(other)
    }
}

impl<St, Si, E> Transport for LengthChecked<St, Si>
where
    St: Stream<Item = Result<Bytes, E>> + Unpin,
    Si: Sink<Bytes> + Unpin,
    Si::Error: std::error::Error + Send + Sync + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    fn set_max_message_length(&mut self, max: usize) {
        self.max = max;
    }

    fn max_message_length(&self) -> usize {
        self.max
    }
}
