use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::handshake::client::{generate_request, Response};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::handshake::machine::TryParse;
use tokio_tungstenite::tungstenite::handshake::server::{create_response, write_response, Request};
use tokio_tungstenite::tungstenite::Error as WsError;

use bijou_framing::websocket::Role;

use super::{WebSocketTransport, MAX_HTTP_HEAD};
use crate::transport::TransportError;

/// Why the HTTP upgrade failed (inside [`TransportError::Upgrade`]).
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
    /// A URL other than `ws://` (TLS, `wss://`, is not built in).
    #[error("unsupported URL scheme in {url}: only ws:// is built in (for wss://, run the upgrade over your own TLS stream with `client`)")]
    UnsupportedScheme {
        /// The URL given.
        url: String,
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
/// [`TransportError::Upgrade`] for a bad URL (including `wss://`: TLS is
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
        return Err(upgrade_error(UpgradeError::UnsupportedScheme {
            url: url.to_owned(),
        }));
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
/// [`TransportError::Upgrade`] if the upgrade fails
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
    Ok(WebSocketTransport::from_partially_read(
        stream,
        Role::Client,
        tail,
    ))
}

/// Answers a client's WebSocket upgrade on `stream` (for example a
/// `TcpStream` from a listener). Bound it with a timeout: the upgrade
/// waits for the client.
///
/// # Errors
///
/// [`TransportError::Upgrade`] if the upgrade fails
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
    Ok(WebSocketTransport::from_partially_read(
        stream,
        Role::Server,
        tail,
    ))
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
    TransportError::Upgrade(err)
}

/// Maps a tungstenite (upgrade) error.
fn ws_error(err: WsError) -> TransportError {
    match err {
        WsError::Io(e) => TransportError::Io(e),
        other => upgrade_error(UpgradeError::Http(Box::new(other))),
    }
}
