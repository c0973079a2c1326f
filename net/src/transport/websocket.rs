//! [`WebSocketTransport`]: Subduction's WebSocket transport, one binary
//! WebSocket message per Subduction message (feature `websocket`).
//!
//! ```text
//!   +--------------------------+   +--------------------------+
//!   | WS frame header (2-14 B) |   | SUH\0 / SUM\0 message    |   one binary message
//!   +--------------------------+   +--------------------------+   per Subduction message,
//!                                                                  no length prefix
//! ```
//!
//! - [`connect`] opens a client connection by URL (`ws://host:port/...`;
//!   TLS is not built in), [`accept`] answers a client on any accepted
//!   stream.
//! - Messages are at most [`WEBSOCKET_MAX_MESSAGE_LENGTH`] (50 MiB, as in
//!   Subduction), and at most the limit the session sets: 256 bytes before
//!   the handshake completes. A longer one is
//!   [`TransportError::TooLarge`].
//! - A text message is [`TransportError::TextMessage`]: Subduction
//!   messages are binary.
//! - Pings are answered (by tungstenite) and pongs ignored. A close from
//!   the peer, or a socket dropped without one, ends the stream after every
//!   message that came before it, and shuts our side of the socket down.
//!   Errors end the stream too, and the adapter starts a clean close (1003
//!   for a text message, 1009 for one too large).
//!
//! tokio-tungstenite fixes its size limits when the stream is built, so the
//! lower limit before authentication is enforced here: while the limit is
//! below [`PRE_AUTH_READ_THRESHOLD`], the adapter reads at most the limit
//! plus [`PRE_AUTH_READ_SLACK`] bytes from the socket in all, and refuses
//! every message over the limit. A peer that has not authenticated cannot
//! make us buffer more than that.
//!
//! ```no_run
//! use bijou_proto::handshake::HandshakeConfig;
//! use bijou_proto::message::Audience;
//! use bijou_net::{transport::websocket, Connection};
//! use bijou_signing::ed25519_dalek::SigningKey;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let me = SigningKey::from_bytes(&[1; 32]);
//! let transport = websocket::connect("ws://127.0.0.1:8080").await?;
//! let service = Audience::discover(b"subduction");
//! let conn = Connection::connect(transport, &me, service, &HandshakeConfig::default()).await?;
//! println!("connected to {}", conn.remote_peer());
//! # Ok(())
//! # }
//! ```

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use futures::{Sink, SinkExt, Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message as WsMessage};
use tokio_tungstenite::WebSocketStream;

use super::{Transport, TransportError};
use bijou_framing::DEFAULT_MAX_FRAME_LENGTH;

/// The largest message either side accepts: 50 MiB, as in Subduction.
pub const WEBSOCKET_MAX_MESSAGE_LENGTH: usize = DEFAULT_MAX_FRAME_LENGTH;

/// Limits below this also cap the bytes read from the socket (see the
/// [module docs](self)): 64 KiB.
pub const PRE_AUTH_READ_THRESHOLD: usize = 64 * 1024;

/// Bytes read beyond a low limit, for WebSocket framing and control
/// frames: 1 KiB.
pub const PRE_AUTH_READ_SLACK: usize = 1024;

/// The read buffer tungstenite grows toward: 16 KiB (its default of
/// 128 KiB would be held by every connection).
const READ_BUFFER_SIZE: usize = 16 * 1024;

fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_SIZE)
        .max_message_size(Some(WEBSOCKET_MAX_MESSAGE_LENGTH))
        .max_frame_size(Some(WEBSOCKET_MAX_MESSAGE_LENGTH))
}

/// Opens a WebSocket to `url` (`ws://host:port/path`) over TCP.
///
/// # Errors
///
/// [`TransportError::Io`] if the TCP connection fails,
/// [`TransportError::WebSocket`] for a bad URL (including `wss://`: TLS is
/// not built in) or a failed upgrade.
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
/// [`TransportError::WebSocket`] if the upgrade fails.
pub async fn client<S, R>(stream: S, request: R) -> Result<WebSocketTransport<S>, TransportError>
where
    S: AsyncRead + AsyncWrite + Unpin,
    R: IntoClientRequest + Unpin,
{
    let guarded = Guarded::new(stream);
    let (ws, _response) =
        tokio_tungstenite::client_async_with_config(request, guarded, Some(config()))
            .await
            .map_err(ws_error)?;
    Ok(WebSocketTransport { ws, ended: false })
}

/// Answers a client's WebSocket upgrade on `stream` (for example a
/// `TcpStream` from a listener). Bound it with a timeout: the upgrade
/// waits for the client.
///
/// # Errors
///
/// [`TransportError::WebSocket`] if the upgrade fails.
pub async fn accept<S>(stream: S) -> Result<WebSocketTransport<S>, TransportError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let ws = tokio_tungstenite::accept_async_with_config(Guarded::new(stream), Some(config()))
        .await
        .map_err(ws_error)?;
    Ok(WebSocketTransport { ws, ended: false })
}

/// Maps a tungstenite error.
fn ws_error(err: WsError) -> TransportError {
    match err {
        WsError::Capacity(CapacityError::MessageTooLong { size, max_size }) => {
            TransportError::TooLarge {
                len: size as u64,
                max: max_size,
            }
        }
        WsError::Io(e) => match e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<ReadLimit>())
        {
            Some(limit) => TransportError::TooLarge {
                len: limit.read as u64,
                max: limit.max,
            },
            None => TransportError::Io(e),
        },
        other => TransportError::WebSocket(Box::new(other)),
    }
}

/// More bytes than a low limit allows arrived before the limit was raised.
#[derive(Debug, thiserror::Error)]
#[error("{read} bytes arrived while messages are limited to {max} bytes")]
struct ReadLimit {
    read: usize,
    max: usize,
}

/// The socket under tungstenite. It holds the message limit (the one
/// place it is kept) and, while the limit is low, reads no more than
/// `read_budget` bytes since the limit was set.
#[derive(Debug)]
struct Guarded<S> {
    io: S,
    max: usize,
    /// `None`: unlimited reads.
    read_budget: Option<usize>,
    /// Bytes read since the limit was set.
    read: usize,
}

impl<S> Guarded<S> {
    fn new(io: S) -> Self {
        Self {
            io,
            max: WEBSOCKET_MAX_MESSAGE_LENGTH,
            read_budget: None,
            read: 0,
        }
    }

    /// Sets the message limit, and the read budget that goes with it (see
    /// the [module docs](self)).
    fn set_max(&mut self, max: usize) {
        self.max = max.min(WEBSOCKET_MAX_MESSAGE_LENGTH);
        self.read_budget =
            (self.max < PRE_AUTH_READ_THRESHOLD).then_some(self.max + PRE_AUTH_READ_SLACK);
        self.read = 0;
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(budget) = this.read_budget else {
            return Pin::new(&mut this.io).poll_read(cx, buf);
        };
        let remaining = budget.saturating_sub(this.read);
        if remaining == 0 {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                ReadLimit {
                    read: this.read.saturating_add(1),
                    max: this.max,
                },
            )));
        }
        // Read at most the budget, through a small stack buffer (no
        // `unsafe` to narrow `buf` in place). Only before authentication.
        let mut scratch = [0u8; PRE_AUTH_READ_SLACK];
        let len = remaining.min(scratch.len()).min(buf.remaining());
        let mut limited = ReadBuf::new(&mut scratch[..len]);
        ready!(Pin::new(&mut this.io).poll_read(cx, &mut limited))?;
        buf.put_slice(limited.filled());
        this.read += limited.filled().len();
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// A [`Transport`] over a WebSocket; see the [module docs](self).
#[derive(Debug)]
pub struct WebSocketTransport<S> {
    ws: WebSocketStream<Guarded<S>>,
    /// An error was returned or the peer closed: the stream has ended.
    ended: bool,
}

impl<S> WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// The message limit now in force.
    fn max(&self) -> usize {
        self.ws.get_ref().max
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &S {
        &self.ws.get_ref().io
    }

    /// Ends the stream with `err`, starting a clean close with `code`
    /// (best effort: the close frame goes out if the socket takes it now).
    fn fail(
        &mut self,
        cx: &mut Context<'_>,
        err: TransportError,
        code: CloseCode,
    ) -> TransportError {
        self.ended = true;
        if let Poll::Ready(Ok(())) = self.ws.poll_ready_unpin(cx) {
            let frame = CloseFrame {
                code,
                reason: "".into(),
            };
            if self
                .ws
                .start_send_unpin(WsMessage::Close(Some(frame)))
                .is_ok()
            {
                let _ = self.ws.poll_flush_unpin(cx);
            }
        }
        err
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
            let err = match ready!(this.ws.poll_next_unpin(cx)) {
                // The end: after a close handshake, or a peer that dropped
                // the socket without one (like EOF between frames on a
                // byte stream). Shut our side of the socket down too, so
                // the peer's stream ends as well (best effort).
                None
                | Some(Err(
                    WsError::ConnectionClosed
                    | WsError::AlreadyClosed
                    | WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake),
                )) => {
                    this.ended = true;
                    let _ = Pin::new(&mut this.ws.get_mut().io).poll_shutdown(cx);
                    return Poll::Ready(None);
                }
                Some(Ok(WsMessage::Binary(bytes))) if bytes.len() <= this.max() => {
                    return Poll::Ready(Some(Ok(bytes)));
                }
                Some(Ok(WsMessage::Binary(bytes))) => TransportError::TooLarge {
                    len: bytes.len() as u64,
                    max: this.max(),
                },
                Some(Ok(WsMessage::Text(text))) => TransportError::TextMessage { len: text.len() },
                // Pings are answered by tungstenite; pongs and raw frames
                // carry nothing. A close ends the stream at the next poll.
                Some(Ok(WsMessage::Ping(_) | WsMessage::Pong(_) | WsMessage::Frame(_))) => continue,
                Some(Ok(WsMessage::Close(_))) => continue,
                Some(Err(e)) => ws_error(e),
            };
            let code = match err {
                TransportError::TextMessage { .. } => CloseCode::Unsupported,
                TransportError::TooLarge { .. } => CloseCode::Size,
                _ => CloseCode::Protocol,
            };
            return Poll::Ready(Some(Err(this.fail(cx, err, code))));
        }
    }
}

impl<S> Sink<Bytes> for WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    type Error = TransportError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        self.get_mut().ws.poll_ready_unpin(cx).map_err(ws_error)
    }

    /// Sends `message` as one binary message; one over the maximum is
    /// refused and nothing is sent.
    fn start_send(self: Pin<&mut Self>, message: Bytes) -> Result<(), TransportError> {
        let this = self.get_mut();
        if message.len() > this.max() {
            return Err(TransportError::TooLarge {
                len: message.len() as u64,
                max: this.max(),
            });
        }
        this.ws
            .start_send_unpin(WsMessage::Binary(message))
            .map_err(ws_error)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        self.get_mut().ws.poll_flush_unpin(cx).map_err(ws_error)
    }

    /// Sends a close frame (1000, normal) and flushes it.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        match ready!(self.get_mut().ws.poll_close_unpin(cx)) {
            Ok(()) | Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => Poll::Ready(Ok(())),
            Err(e) => Poll::Ready(Err(ws_error(e))),
        }
    }
}

impl<S> Transport for WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// Also caps the bytes read from the socket while `max` is below
    /// [`PRE_AUTH_READ_THRESHOLD`] (see the [module docs](self)).
    fn set_max_message_length(&mut self, max: usize) {
        self.ws.get_mut().set_max(max);
    }

    fn max_message_length(&self) -> usize {
        self.max()
    }
}
