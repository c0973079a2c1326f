//! [`WebSocketTransport`]: the transport Subduction's server speaks, one
//! binary WebSocket message per Subduction message (feature `websocket`).
//!
//! ```text
//!   +--------------------------+   +--------------------------+
//!   | WS frame header (2-14 B) |   | SUH\0 / SUM\0 message    |   one binary message
//!   +--------------------------+   +--------------------------+   per Subduction message,
//!                                                                  no length prefix
//!
//!   the frame header (RFC 6455), as read and written here:
//!   byte 0: FIN | RSV1 RSV2 RSV3 (0 0 0) | opcode (4 bits)
//!   byte 1: MASK | payload len (7 bits): 0..=125 the length,
//!           126 -> a 16-bit BE length follows (126..=65535),
//!           127 -> a 64-bit BE length follows (65536.., top bit 0)
//!   then:   masking key (4 B, client -> server frames only), payload
//!
//!   +----+----+-------------------+-------------+------------------+
//!   | b0 | b1 | 0 / 2 / 8 B len   | 0 / 4 B key | payload          |
//!   +----+----+-------------------+-------------+------------------+
//! ```
//!
//! - [`connect`] opens a client connection by URL (`ws://host:port/...`;
//!   TLS is not built in), [`client`] runs the upgrade over any stream,
//!   [`accept`] answers a client on any accepted stream. tungstenite does
//!   the HTTP upgrade only (its request, response and accept-key pieces);
//!   the bytes a peer sent right behind the HTTP head are kept and read as
//!   frames. Frames are read and written here
//!   ([`ws_frame`](super::ws_frame)).
//! - Messages are at most [`WEBSOCKET_MAX_MESSAGE_LENGTH`] (50 MiB, as in
//!   Subduction), for a message and for a single frame alike, and at most
//!   the limit the session sets: 256 bytes before the handshake completes.
//!   A longer one is [`TransportError::TooLarge`], refused from the frame
//!   header that announces it (counting the fragments before it), before
//!   its payload is buffered; the peer gets a 1009 close.
//! - A text message is [`TransportError::TextMessage`], refused at its
//!   first header; the peer gets a 1003 close.
//! - Fragmented messages are reassembled. Pings are answered as they are
//!   read (only the latest one if the socket cannot take the pong yet:
//!   it then goes out with the next read or write), pongs ignored.
//! - A close from the peer is answered (its code echoed) and ends the
//!   stream after every message that came before it; a socket dropped
//!   between frames ends it too. Our side of the socket is then shut down.
//!   Closing the sink sends a close (1000) and the stream keeps delivering
//!   until the peer's close arrives.
//! - Every other violation (see [`WsFrameError`]) is
//!   [`TransportError::WebSocket`] holding the [`WsFrameError`], and a
//!   close with [`WsFrameError::close_code`] (1002 protocol error, 1007 bad
//!   UTF-8 in a close reason, 1008 a peer that stalled inside a frame for
//!   longer than [`DEFAULT_STALL_TIMEOUT`]). Errors end the stream.
//!
//! # Memory
//!
//! The same discipline as [`FramedTransport`](super::FramedTransport):
//!
//! ```text
//!   read:  buffer empty  -> read into a 4 KiB stack scratch, copy what came
//!          frame pending -> read straight into the spare capacity the
//!                           decoder made: at most min(len, 2 x received
//!                           + 64 KiB) for a frame announcing len bytes
//!          buffer drained -> dropped (messages handed out keep their bytes)
//!   fragments:              appended to one buffer, as they arrive whole
//!   write: frames are written into the write buffer (client frames masked
//!          there); once flushed, the buffer is dropped
//!   stall timer:            allocated only while inside a frame
//! ```
//!
//! A header announcing more than the limit in force is refused before
//! anything is reserved: with the 256-byte limit before authentication, a
//! peer cannot make the connection hold more than a few kilobytes, whatever
//! it announces. An idle connection holds no heap buffer at all.
//!
//! ```no_run
//! use bijou_frame::net::handshake::ConnectConfig;
//! use bijou_frame::proto::message::Audience;
//! use bijou_frame::net::{transport::websocket, Connection};
//! use bijou_frame::signing::ed25519_dalek::SigningKey;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let me = SigningKey::from_bytes(&[1; 32]);
//! let transport = websocket::connect("ws://127.0.0.1:8080").await?;
//! let service = Audience::discover(b"subduction");
//! let conn = Connection::connect(transport, &me, service, &ConnectConfig::default()).await?;
//! println!("connected to {}", conn.remote_peer());
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures::{Sink, Stream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::handshake::client::{generate_request, Response};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::handshake::machine::TryParse;
use tokio_tungstenite::tungstenite::handshake::server::{create_response, write_response, Request};
use tokio_tungstenite::tungstenite::Error as WsError;

use super::ws_frame::{
    apply_mask, close_payload, encode_frame, encode_header, parse_close, Frame, FrameDecoder,
    OpCode, Role, WsFrameError,
};
use super::{Transport, TransportError, WriteInPlace};
use crate::SendError;
use bijou_framing::DEFAULT_MAX_FRAME_LENGTH;

/// The largest message either side accepts: 50 MiB, as in Subduction.
pub const WEBSOCKET_MAX_MESSAGE_LENGTH: usize = DEFAULT_MAX_FRAME_LENGTH;

/// How long a peer may pause inside a frame (or a fragmented message)
/// before the transport gives up with [`WsFrameError::Stalled`]: 30 s.
/// Between messages a peer may be silent for as long as it likes.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest HTTP head the upgrade reads: 16 KiB.
pub const MAX_HTTP_HEAD: usize = 16 * 1024;

/// Size of the stack buffer an idle connection reads into.
const SCRATCH: usize = 4096;

/// Buffered bytes above which `poll_ready` writes out first.
const BACKPRESSURE: usize = 8 * 1024;

/// Why the HTTP upgrade failed (inside [`TransportError::WebSocket`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpgradeError {
    /// The peer's HTTP head is longer than [`MAX_HTTP_HEAD`].
    #[error("HTTP head longer than {max} bytes ({len} read)")]
    HeadTooLong {
        /// Bytes read.
        len: usize,
        /// The maximum.
        max: usize,
    },
    /// (Server) the stream ended inside the client's HTTP request.
    #[error("stream ended inside the HTTP head ({have} bytes read)")]
    HeadIncomplete {
        /// Bytes read.
        have: usize,
    },
    /// (Client) the server closed without answering the upgrade: a
    /// framed peer (a length prefix over TCP) does this, as it reads an
    /// HTTP request as a malformed frame.
    #[error("the server closed the connection without answering the WebSocket upgrade ({have} bytes read); is it a framed (length-prefixed TCP) peer rather than a WebSocket server? Connect to it with a framed transport instead")]
    NotAnswered {
        /// Bytes of an answer read before the end.
        have: usize,
    },
    /// The server answered with another status than 101.
    #[error("server answered the upgrade with status {status}")]
    Status {
        /// The HTTP status code.
        status: u16,
    },
    /// A required header is missing or wrong in the server's answer.
    #[error("bad {header} header in the server's answer")]
    BadHeader {
        /// The header's name.
        header: &'static str,
    },
    /// The peer's first bytes are not an HTTP head at all: a framed peer
    /// (a length prefix over TCP) sends this, where a WebSocket peer sends
    /// an HTTP upgrade.
    #[error("the peer's first bytes are not HTTP ({first:02x?}, {have} bytes read); is it a framed (length-prefixed TCP) peer? Both ends must use the same transport: a WebSocket server is reached with a ws:// URL")]
    NotHttp {
        /// Up to the first four bytes the peer sent.
        first: Vec<u8>,
        /// Bytes read.
        have: usize,
    },
    /// tungstenite refused the request or the head.
    #[error(transparent)]
    Http(Box<WsError>),
}

/// Opens a WebSocket to `url` (`ws://host:port/path`) over TCP.
///
/// # Errors
///
/// [`TransportError::Io`] if the TCP connection fails,
/// [`TransportError::WebSocket`] for a bad URL (including `wss://`: TLS is
/// not built in) or a failed upgrade.
///
/// # Cancel safety
///
/// Cancel safe in the sense that nothing is left behind: a cancelled
/// connect drops the half-open socket.
pub async fn connect(url: &str) -> Result<WebSocketTransport<TcpStream>, TransportError> {
    let request = url.into_client_request().map_err(ws_error)?;
    let uri = request.uri();
    if uri.scheme_str() != Some("ws") {
        return Err(TransportError::WebSocket(
            format!("unsupported URL scheme in {url}: only ws:// is built in").into(),
        ));
    }
    let host = uri.host().unwrap_or_default().trim_matches(['[', ']']);
    let port = uri.port_u16().unwrap_or(80);
    let tcp = TcpStream::connect((host, port)).await?;
    tcp.set_nodelay(true)?;
    client(tcp, request).await
}

/// Runs the client side of the WebSocket upgrade for `request` over an
/// established `stream`.
///
/// # Errors
///
/// [`TransportError::WebSocket`] if the upgrade fails
/// ([`UpgradeError`]), [`TransportError::Io`] if the stream does.
///
/// # Cancel safety
///
/// Not cancel safe: a cancelled upgrade leaves the stream mid-handshake.
pub async fn client<S, R>(
    mut stream: S,
    request: R,
) -> Result<WebSocketTransport<S>, TransportError>
where
    S: AsyncRead + AsyncWrite + Unpin,
    R: IntoClientRequest + Unpin,
{
    let request = request.into_client_request().map_err(ws_error)?;
    let (head, key) = generate_request(request).map_err(ws_error)?;
    stream.write_all(&head).await?;
    stream.flush().await?;
    let (response, tail) =
        read_head::<Response, _>(&mut stream, |have| UpgradeError::NotAnswered { have }).await?;
    verify_response(&response, &key).map_err(upgrade_error)?;
    Ok(WebSocketTransport::new(stream, Role::Client, tail))
}

/// Answers a client's WebSocket upgrade on `stream` (for example a
/// `TcpStream` from a listener). Bound it with a timeout: the upgrade
/// waits for the client.
///
/// # Errors
///
/// [`TransportError::WebSocket`] if the upgrade fails
/// ([`UpgradeError`]; the client gets a 400 answer where it can),
/// [`TransportError::Io`] if the stream does.
///
/// # Cancel safety
///
/// Not cancel safe: a cancelled upgrade leaves the stream mid-handshake.
pub async fn accept<S>(mut stream: S) -> Result<WebSocketTransport<S>, TransportError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (request, tail) =
        read_head::<Request, _>(&mut stream, |have| UpgradeError::HeadIncomplete { have }).await?;
    let response = match create_response(&request) {
        Ok(response) => response,
        Err(e) => {
            let _ = stream
                .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                .await;
            let _ = stream.flush().await;
            return Err(ws_error(e));
        }
    };
    let mut head = Vec::with_capacity(256);
    write_response(&mut head, &response).map_err(ws_error)?;
    stream.write_all(&head).await?;
    stream.flush().await?;
    Ok(WebSocketTransport::new(stream, Role::Server, tail))
}

/// Reads an HTTP head (at most [`MAX_HTTP_HEAD`] bytes) and returns it
/// parsed, with the bytes read behind it: the peer's first frames. If the
/// stream ends first, the error is `at_eof(bytes read)`: each side says
/// what an early end means for it.
async fn read_head<T: TryParse, S: AsyncRead + Unpin>(
    stream: &mut S,
    at_eof: fn(usize) -> UpgradeError,
) -> Result<(T, BytesMut), TransportError> {
    let mut buf = Vec::new();
    let mut scratch = [0u8; 1024];
    loop {
        let n = stream.read(&mut scratch).await?;
        let Some(read) = scratch.get(..n).filter(|read| !read.is_empty()) else {
            return Err(upgrade_error(at_eof(buf.len())));
        };
        buf.extend_from_slice(read);
        let parsed = T::try_parse(&buf).map_err(|e| match e {
            WsError::Protocol(ProtocolError::HttparseError(_)) => {
                upgrade_error(UpgradeError::NotHttp {
                    first: buf.iter().take(4).copied().collect(),
                    have: buf.len(),
                })
            }
            other => ws_error(other),
        })?;
        if let Some((size, parsed)) = parsed {
            let tail = buf.get(size..).map(BytesMut::from).unwrap_or_default();
            return Ok((parsed, tail));
        }
        if buf.len() > MAX_HTTP_HEAD {
            return Err(upgrade_error(UpgradeError::HeadTooLong {
                len: buf.len(),
                max: MAX_HTTP_HEAD,
            }));
        }
    }
}

/// RFC 6455 4.1: status 101, `Upgrade: websocket`, `Connection: Upgrade`,
/// the accept key of our key, and no extension or subprotocol we did not
/// ask for.
fn verify_response(response: &Response, key: &str) -> Result<(), UpgradeError> {
    if response.status().as_u16() != 101 {
        return Err(UpgradeError::Status {
            status: response.status().as_u16(),
        });
    }
    let headers = response.headers();
    let header = |name: &'static str| headers.get(name).and_then(|v| v.to_str().ok());
    let bad = |header| UpgradeError::BadHeader { header };
    if !header("Upgrade").is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket")) {
        return Err(bad("Upgrade"));
    }
    if !header("Connection").is_some_and(|v| {
        v.split(',')
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
    }) {
        return Err(bad("Connection"));
    }
    if header("Sec-WebSocket-Accept") != Some(derive_accept_key(key.as_bytes()).as_str()) {
        return Err(bad("Sec-WebSocket-Accept"));
    }
    if headers.contains_key("Sec-WebSocket-Extensions") {
        return Err(bad("Sec-WebSocket-Extensions"));
    }
    if headers.contains_key("Sec-WebSocket-Protocol") {
        return Err(bad("Sec-WebSocket-Protocol"));
    }
    Ok(())
}

fn upgrade_error(err: UpgradeError) -> TransportError {
    TransportError::WebSocket(Box::new(err))
}

/// Maps a tungstenite (upgrade) error.
fn ws_error(err: WsError) -> TransportError {
    match err {
        WsError::Io(e) => TransportError::Io(e),
        other => upgrade_error(UpgradeError::Http(Box::new(other))),
    }
}

/// Maps a frame error: `TooLarge` and `TextMessage` have their own
/// variants, the rest is [`TransportError::WebSocket`].
fn frame_error(err: WsFrameError) -> TransportError {
    match err {
        WsFrameError::TooLarge { len, max } => TransportError::TooLarge { len, max },
        WsFrameError::TextMessage { len } => TransportError::TextMessage {
            len: usize::try_from(len).unwrap_or(usize::MAX),
        },
        other => TransportError::WebSocket(Box::new(other)),
    }
}

/// The [`WsFrameError`] inside a transport error, if it holds one.
///
/// ```
/// use bijou_frame::net::transport::{websocket, ws_frame::WsFrameError, TransportError};
///
/// let err = TransportError::WebSocket(Box::new(WsFrameError::CloseOneByte));
/// assert_eq!(websocket::frame_error_of(&err), Some(&WsFrameError::CloseOneByte));
/// ```
#[must_use]
pub fn frame_error_of(err: &TransportError) -> Option<&WsFrameError> {
    match err {
        TransportError::WebSocket(inner) => inner.downcast_ref(),
        _ => None,
    }
}

/// A [`Transport`] over a WebSocket; see the [module docs](self).
#[derive(Debug)]
pub struct WebSocketTransport<S> {
    io: S,
    role: Role,
    decoder: FrameDecoder,
    read_buf: BytesMut,
    write_buf: BytesMut,
    /// The fragments of an unfinished message.
    assembly: BytesMut,
    /// The latest ping not answered yet.
    pong: Option<Bytes>,
    /// Armed only while the peer is inside a frame.
    stall: Option<Pin<Box<Sleep>>>,
    stall_timeout: Option<Duration>,
    /// A write returned `Pending` in the sink: the read side leaves the
    /// socket's write waker alone.
    sink_waiting: bool,
    eof: bool,
    close_sent: bool,
    close_received: bool,
    /// An error was returned or the close finished: the stream has ended.
    ended: bool,
}

impl<S> WebSocketTransport<S> {
    /// A transport over a stream whose upgrade is done, playing `role`,
    /// with `read` the bytes already read from it (what came behind the
    /// HTTP head, or what [`WebSocketTransport::into_parts`] gave back at
    /// a frame boundary). The inverse of `into_parts`.
    ///
    /// ```
    /// use bijou_frame::net::transport::{websocket::WebSocketTransport, ws_frame::Role, Transport};
    /// use bytes::BytesMut;
    ///
    /// let (a, _b) = tokio::io::duplex(64);
    /// let ws = WebSocketTransport::from_partially_read(a, Role::Server, BytesMut::new());
    /// let (a, unread) = ws.into_parts();
    /// let ws = WebSocketTransport::from_partially_read(a, Role::Server, unread);
    /// assert_eq!(ws.max_message_length(), 50 * 1024 * 1024);
    /// ```
    pub fn from_partially_read(io: S, role: Role, read: BytesMut) -> Self {
        Self::new(io, role, read)
    }

    /// The stream and the bytes read from it but not decoded yet. Between
    /// frames (no fragmented message open) these are whole frames and the
    /// next frame's first bytes; inside a frame, the frame's header is
    /// already consumed and lost with the decoder.
    pub fn into_parts(self) -> (S, BytesMut) {
        (self.io, self.read_buf)
    }

    /// Received bytes buffered right now: the unfinished frame's and the
    /// unfinished fragmented message's.
    pub fn buffered_len(&self) -> usize {
        self.read_buf.len() + self.assembly.len()
    }

    fn new(io: S, role: Role, tail: BytesMut) -> Self {
        Self {
            io,
            role,
            decoder: FrameDecoder::new(role, WEBSOCKET_MAX_MESSAGE_LENGTH),
            read_buf: tail,
            write_buf: BytesMut::new(),
            assembly: BytesMut::new(),
            pong: None,
            stall: None,
            stall_timeout: Some(DEFAULT_STALL_TIMEOUT),
            sink_waiting: false,
            eof: false,
            close_sent: false,
            close_received: false,
            ended: false,
        }
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &S {
        &self.io
    }

    /// Heap bytes held by the read, write and reassembly buffers right now
    /// (their capacities).
    pub fn buffered_capacity(&self) -> usize {
        self.read_buf.capacity() + self.write_buf.capacity() + self.assembly.capacity()
    }

    /// How long the peer may pause inside a frame or a fragmented message
    /// ([`DEFAULT_STALL_TIMEOUT`] unless changed; `None`: forever). The
    /// timer is Tokio's: like the handshake drivers, the transport then
    /// needs a runtime with time enabled.
    pub fn set_stall_timeout(&mut self, timeout: Option<Duration>) {
        self.stall_timeout = timeout;
        self.stall = None;
    }

    /// A fresh masking key for a client frame, none for a server frame.
    fn mask(&self) -> Option<[u8; 4]> {
        (self.role == Role::Client).then(rand::random)
    }

    /// Inside a frame or a fragmented message.
    fn mid_frame(&self) -> bool {
        !self.read_buf.is_empty() || !self.decoder.is_at_boundary()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> WebSocketTransport<S> {
    /// Reads more bytes into `read_buf`; `Ok(0)` at end of stream.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.read_buf.capacity() == self.read_buf.len() {
            // Nothing reserved: read into the stack, allocate for what came.
            let mut scratch = [0u8; SCRATCH];
            let mut buf = ReadBuf::new(&mut scratch);
            ready!(Pin::new(&mut self.io).poll_read(cx, &mut buf))?;
            let filled = buf.filled();
            self.read_buf.extend_from_slice(filled);
            return Poll::Ready(Ok(filled.len()));
        }
        tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.read_buf)
    }

    fn poll_write_all(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.write_buf.has_remaining() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.write_buf))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.write_buf.advance(n);
        }
        // Written out: give the buffer back.
        self.write_buf = BytesMut::new();
        Poll::Ready(Ok(()))
    }

    /// Queues the pending pong, if the write buffer has room for it.
    fn queue_pong(&mut self) {
        if self.write_buf.len() < BACKPRESSURE {
            if let Some(ping) = self.pong.take() {
                let mask = self.mask();
                encode_frame(&mut self.write_buf, true, OpCode::Pong, &ping, mask);
            }
        }
    }

    /// From the read side: sends what is queued (pongs, a close) if the
    /// sink is not waiting on the socket itself (a socket wakes only the
    /// last writer that waited).
    fn write_from_reader(&mut self, cx: &mut Context<'_>) {
        self.queue_pong();
        if !self.sink_waiting && !self.write_buf.is_empty() {
            let _ = self.poll_flush_all(cx);
        }
    }

    fn poll_flush_all(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_write_all(cx))?;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    /// Queues a close frame with `code` unless one was sent.
    fn queue_close(&mut self, code: Option<u16>) {
        if self.close_sent {
            return;
        }
        self.close_sent = true;
        self.pong = None;
        let payload = code.map(|code| close_payload(code, "")).unwrap_or_default();
        let mask = self.mask();
        encode_frame(&mut self.write_buf, true, OpCode::Close, &payload, mask);
    }

    /// Ends the stream with `err`, sending a close with its code (best
    /// effort: if the socket takes it now).
    fn fail(&mut self, cx: &mut Context<'_>, err: WsFrameError) -> TransportError {
        self.ended = true;
        self.stall = None;
        self.queue_close(Some(err.close_code()));
        self.write_from_reader(cx);
        self.release_buffers();
        frame_error(err)
    }

    /// Drops every read-side buffer (the stream has ended).
    fn release_buffers(&mut self) {
        self.read_buf = BytesMut::new();
        self.assembly = BytesMut::new();
    }

    /// Handles one frame; `Some` when it completes a message.
    fn on_frame(&mut self, frame: Frame) -> Option<Bytes> {
        match frame.opcode {
            OpCode::Binary if frame.fin => Some(frame.payload),
            OpCode::Binary | OpCode::Continuation => {
                self.assembly.extend_from_slice(&frame.payload);
                frame
                    .fin
                    .then(|| std::mem::take(&mut self.assembly).freeze())
            }
            OpCode::Ping => {
                if !self.close_sent {
                    // A copy: the ping's bytes would pin the read buffer.
                    self.pong = Some(Bytes::copy_from_slice(&frame.payload));
                }
                None
            }
            OpCode::Close => {
                self.close_received = true;
                // Echo the peer's code (checked by the decoder).
                let code = parse_close(&frame.payload).ok().and_then(|c| c.code);
                self.queue_close(code);
                None
            }
            // Text is refused at its header; pongs carry nothing.
            OpCode::Text | OpCode::Pong => None,
        }
    }

    /// Drops a drained read buffer (it may share the allocation of the
    /// messages split off it).
    fn release_drained_read_buffer(&mut self) {
        if self.read_buf.is_empty() {
            self.read_buf = BytesMut::new();
        }
    }

    /// While the peer is inside a frame, the stall timer: armed, or fired.
    fn poll_stall(&mut self, cx: &mut Context<'_>) -> Poll<WsFrameError> {
        let Some(timeout) = self.stall_timeout.filter(|_| self.mid_frame()) else {
            self.stall = None;
            return Poll::Pending;
        };
        let sleep = self
            .stall
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        ready!(sleep.as_mut().poll(cx));
        Poll::Ready(WsFrameError::Stalled {
            after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            have: self.read_buf.len(),
        })
    }

    /// The end of the stream after a close or a clean end of input: sends
    /// what is queued (our close) and shuts our side down, best effort.
    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.queue_pong();
        if !self.write_buf.is_empty() && ready!(self.poll_flush_all(cx)).is_err() {
            self.write_buf = BytesMut::new();
        }
        let _ = ready!(Pin::new(&mut self.io).poll_shutdown(cx));
        self.ended = true;
        self.stall = None;
        self.release_buffers();
        Poll::Ready(())
    }
}

impl<S> Stream for WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    type Item = Result<Bytes, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            if this.close_received {
                ready!(this.poll_finish(cx));
                return Poll::Ready(None);
            }
            let decoded = if this.eof {
                this.decoder.decode_eof(&mut this.read_buf)
            } else {
                this.decoder.decode(&mut this.read_buf)
            };
            match decoded {
                Err(e) => return Poll::Ready(Some(Err(this.fail(cx, e)))),
                Ok(Some(frame)) => {
                    this.release_drained_read_buffer();
                    let ping = frame.opcode == OpCode::Ping;
                    if let Some(message) = this.on_frame(frame) {
                        return Poll::Ready(Some(Ok(message)));
                    }
                    if ping {
                        // Answer now: the caller may not poll again soon.
                        this.write_from_reader(cx);
                    }
                    continue;
                }
                // A clean end between messages, like EOF between frames
                // on a byte stream.
                Ok(None) if this.eof => {
                    ready!(this.poll_finish(cx));
                    return Poll::Ready(None);
                }
                Ok(None) => {}
            }
            this.write_from_reader(cx);
            match this.poll_fill(cx) {
                Poll::Ready(Ok(0)) => this.eof = true,
                Poll::Ready(Ok(_)) => {
                    // Progress: the peer has the whole timeout again.
                    if let (Some(sleep), Some(timeout)) = (&mut this.stall, this.stall_timeout) {
                        sleep.as_mut().reset(Instant::now() + timeout);
                    }
                }
                Poll::Ready(Err(e)) => {
                    this.ended = true;
                    this.stall = None;
                    this.release_buffers();
                    return Poll::Ready(Some(Err(TransportError::Io(e))));
                }
                Poll::Pending => {
                    let err = ready!(this.poll_stall(cx));
                    return Poll::Ready(Some(Err(this.fail(cx, err))));
                }
            }
        }
    }
}

impl<S> WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// Records whether the sink is waiting on the socket.
    fn sink_poll<T>(&mut self, poll: Poll<T>) -> Poll<T> {
        self.sink_waiting = poll.is_pending();
        poll
    }

    fn check_send(&self, len: usize) -> Result<(), TransportError> {
        if self.close_sent {
            return Err(frame_error(WsFrameError::SendAfterClose));
        }
        let max = self.decoder.max_message_length();
        if len > max {
            return Err(TransportError::TooLarge {
                len: len as u64,
                max,
            });
        }
        Ok(())
    }
}

impl<S> Sink<Bytes> for WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    type Error = TransportError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        if this.write_buf.len() >= BACKPRESSURE {
            let poll = this.poll_write_all(cx);
            ready!(this.sink_poll(poll))?;
        }
        Poll::Ready(Ok(()))
    }

    /// Frames `message` as one binary message into the write buffer; one
    /// over the maximum is refused and nothing is written.
    fn start_send(self: Pin<&mut Self>, message: Bytes) -> Result<(), TransportError> {
        let this = self.get_mut();
        this.check_send(message.len())?;
        this.queue_pong();
        let mask = this.mask();
        encode_frame(&mut this.write_buf, true, OpCode::Binary, &message, mask);
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        this.queue_pong();
        let poll = this.poll_flush_all(cx);
        Poll::Ready(Ok(ready!(this.sink_poll(poll))?))
    }

    /// Sends a close frame (1000, normal) and flushes it. The stream goes
    /// on delivering until the peer answers the close.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        if !this.close_sent && !this.ended {
            this.queue_pong();
            this.queue_close(Some(1000));
        }
        let poll = this.poll_flush_all(cx);
        Poll::Ready(Ok(ready!(this.sink_poll(poll))?))
    }
}

impl<S> Transport for WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// Refuses messages over `max` (clamped to
    /// [`WEBSOCKET_MAX_MESSAGE_LENGTH`]) from the next frame header on.
    fn set_max_message_length(&mut self, max: usize) {
        self.decoder
            .set_max_message_length(max.min(WEBSOCKET_MAX_MESSAGE_LENGTH));
    }

    fn max_message_length(&self) -> usize {
        self.decoder.max_message_length()
    }

    /// Writes the frame header and the message straight into the write
    /// buffer (masked there on a client).
    fn start_send_in_place(&mut self, message: &dyn WriteInPlace) -> Result<(), SendError> {
        let len = message.encoded_len()?;
        self.check_send(len).map_err(SendError::Transport)?;
        self.queue_pong();
        let frame_start = self.write_buf.len();
        let mask = self.mask();
        encode_header(&mut self.write_buf, true, OpCode::Binary, len, mask);
        let start = self.write_buf.len();
        if let Err(e) = message.write_in_place(&mut self.write_buf, len) {
            self.write_buf.truncate(frame_start);
            return Err(e.into());
        }
        if self.write_buf.len() - start != len {
            // A length that lied: send nothing rather than a broken frame.
            let written = self.write_buf.len() - start;
            self.write_buf.truncate(frame_start);
            return Err(SendError::Transport(TransportError::TooLarge {
                len: written as u64,
                max: len,
            }));
        }
        if let (Some(mask), Some(payload)) = (mask, self.write_buf.get_mut(start..)) {
            apply_mask(payload, mask);
        }
        Ok(())
    }
}
