//! The HTTP under the client: hyper 1.x HTTP/1.1 client connections over
//! TCP, one request at a time on each, and response bodies read within a
//! limit as their bytes arrive.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::super::body::Gathered;
use super::super::{LongPollError, SessionId, ACK_HEADER, SESSION_ID_HEADER};
use super::url::{BaseUrl, Endpoint};
use crate::transport::TransportError;

/// The content type of every body that carries a message.
const OCTET_STREAM: &str = "application/octet-stream";

/// At most this many bytes of an unexpected answer's body are read, for
/// [`LongPollError::Status`].
const STATUS_TEXT: usize = 200;

/// A spawned task, aborted when this is dropped.
#[derive(Debug)]
pub(super) struct AbortOnDrop(pub(super) JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One HTTP/1.1 connection: the handle requests go through, and the task
/// driving the connection (aborted, closing the socket, when this is
/// dropped).
#[derive(Debug)]
pub(super) struct HttpConn {
    sender: SendRequest<Full<Bytes>>,
    _driver: AbortOnDrop,
}

/// Opens a TCP connection to the server (the host name resolved by tokio)
/// and runs the HTTP/1 client handshake over it.
pub(super) async fn open(
    base: &BaseUrl,
    connect_timeout: Duration,
) -> Result<HttpConn, TransportError> {
    let connecting = TcpStream::connect((base.host.as_str(), base.port));
    let tcp = tokio::time::timeout(connect_timeout, connecting)
        .await
        .map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "no TCP connection to {}:{} within {connect_timeout:?}",
                    base.host, base.port
                ),
            )
        })??;
    tcp.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(http_error)?;
    let driver = tokio::spawn(async move {
        // Its error is the request's, which reports it.
        let _ = connection.await;
    });
    Ok(HttpConn {
        sender,
        _driver: AbortOnDrop(driver),
    })
}

/// Why a request got no response.
#[derive(Debug)]
pub(super) enum Failure {
    /// The request certainly did not reach the server (no connection, or
    /// hyper gave it back unsent): it may be sent again.
    NotSent(TransportError),
    /// It may have reached the server.
    Failed(TransportError),
}

impl Failure {
    pub(super) fn into_error(self) -> TransportError {
        match self {
            Self::NotSent(e) | Self::Failed(e) => e,
        }
    }
}

/// What a request carries besides its endpoint.
#[derive(Debug, Clone, Default)]
pub(super) struct Fields {
    pub(super) session: Option<SessionId>,
    pub(super) ack: Option<u64>,
    /// A message, sent with `content-type: application/octet-stream`.
    pub(super) body: Option<Bytes>,
}

/// `POST {base}{endpoint}` on `conn` (opened first if there is none or it
/// closed); on a failure the connection is dropped, so the next request
/// opens a new one. Returns when the response's head has arrived, or at
/// `deadline`.
pub(super) async fn post(
    conn: &mut Option<HttpConn>,
    base: &BaseUrl,
    connect_timeout: Duration,
    endpoint: Endpoint,
    fields: &Fields,
    deadline: Instant,
) -> Result<Response<Incoming>, Failure> {
    let request = request(base, endpoint, fields).map_err(Failure::NotSent)?;
    let attempt = async {
        let mut http = match conn.take() {
            Some(http) if !http.sender.is_closed() => http,
            _ => open(base, connect_timeout)
                .await
                .map_err(Failure::NotSent)?,
        };
        if let Err(e) = http.sender.ready().await {
            return Err(Failure::NotSent(http_error(e)));
        }
        match http.sender.try_send_request(request).await {
            Ok(response) => {
                *conn = Some(http);
                Ok(response)
            }
            Err(mut e) => {
                let unsent = e.take_message().is_some();
                let error = http_error(e.into_error());
                Err(if unsent {
                    Failure::NotSent(error)
                } else {
                    Failure::Failed(error)
                })
            }
        }
    };
    tokio::time::timeout_at(deadline, attempt)
        .await
        .unwrap_or_else(|_| Err(Failure::Failed(timed_out(endpoint))))
}

fn request(
    base: &BaseUrl,
    endpoint: Endpoint,
    fields: &Fields,
) -> Result<Request<Full<Bytes>>, TransportError> {
    let body = fields.body.clone().unwrap_or_default();
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(base.target(endpoint).clone())
        .header(HOST, base.host_header.clone())
        .header(CONTENT_LENGTH, body.len());
    if fields.body.is_some() {
        request = request.header(CONTENT_TYPE, HeaderValue::from_static(OCTET_STREAM));
    }
    if let Some(session) = fields.session {
        request = request.header(SESSION_ID_HEADER, session.to_string());
    }
    if let Some(ack) = fields.ack {
        request = request.header(ACK_HEADER, ack);
    }
    request
        .body(Full::new(body))
        .map_err(|e| TransportError::LongPoll(LongPollError::Http(Box::new(e))))
}

/// Why a body was not read.
#[derive(Debug)]
pub(super) enum BodyError {
    /// Longer than the limit: announced (`content-length`) or received.
    TooLarge { len: u64, max: usize },
    /// The body broke off, or the deadline passed.
    Failed(TransportError),
}

impl From<BodyError> for TransportError {
    fn from(err: BodyError) -> Self {
        match err {
            BodyError::TooLarge { len, max } => TransportError::TooLarge { len, max },
            BodyError::Failed(e) => e,
        }
    }
}

/// Reads `response`'s body whole, refusing it as soon as it is known to be
/// longer than `max`: from its `content-length` before reading anything,
/// or from the bytes received so far. Memory grows with the bytes
/// received, never with what a header announces; a body that came in one
/// piece is not copied.
pub(super) async fn read_body(
    response: Response<Incoming>,
    max: usize,
    endpoint: Endpoint,
    deadline: Instant,
) -> Result<Bytes, BodyError> {
    let mut body = response.into_body();
    let announced = body.size_hint().lower();
    if announced > max as u64 {
        return Err(BodyError::TooLarge {
            len: announced,
            max,
        });
    }
    let read = async {
        let mut whole = Gathered::default();
        let mut len = 0usize;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| BodyError::Failed(http_error(e)))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            len = len.saturating_add(data.len());
            if len > max {
                return Err(BodyError::TooLarge {
                    len: len as u64,
                    max,
                });
            }
            if !data.is_empty() {
                whole.push(data);
            }
        }
        Ok(whole.finish())
    };
    tokio::time::timeout_at(deadline, read)
        .await
        .unwrap_or_else(|_| Err(BodyError::Failed(timed_out(endpoint))))
}

/// The first `limit` bytes of `body` (fewer if it is shorter), and
/// whether that is all of it. A body that breaks off, or the deadline,
/// ends the reading with what came.
pub(super) async fn read_prefix(
    response: Response<Incoming>,
    limit: usize,
    deadline: Instant,
) -> (Bytes, bool) {
    let mut body = response.into_body();
    let mut prefix = BytesMut::new();
    let read = async {
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                let room = limit.saturating_sub(prefix.len());
                if data.len() > room {
                    prefix.extend_from_slice(data.get(..room).unwrap_or_default());
                    return false;
                }
                prefix.extend_from_slice(&data);
            }
        }
        true
    };
    let complete = tokio::time::timeout_at(deadline, read)
        .await
        .unwrap_or(false);
    (prefix.freeze(), complete)
}

/// [`LongPollError::Status`] for an answer the protocol does not expect,
/// with the first bytes of its body as text.
pub(super) async fn status_error(
    endpoint: Endpoint,
    response: Response<Incoming>,
    deadline: Instant,
) -> TransportError {
    let status = response.status().as_u16();
    TransportError::LongPoll(LongPollError::Status {
        endpoint: endpoint.path(),
        status,
        body: answer_text(response, deadline).await,
    })
}

pub(super) fn status_from_text(endpoint: Endpoint, status: u16, text: &[u8]) -> TransportError {
    TransportError::LongPoll(LongPollError::Status {
        endpoint: endpoint.path(),
        status,
        body: readable(text),
    })
}

/// The first bytes of `response`'s body (read whole if it is short, so
/// the connection can carry the next request), as [`readable`] text.
pub(super) async fn answer_text(response: Response<Incoming>, deadline: Instant) -> String {
    let (text, _) = read_prefix(response, STATUS_TEXT, deadline).await;
    readable(&text)
}

/// The server's words, for a log or a terminal: at most [`STATUS_TEXT`]
/// bytes, control characters (escape sequences, line breaks) made spaces.
fn readable(text: &[u8]) -> String {
    let text = text.get(..STATUS_TEXT.min(text.len())).unwrap_or_default();
    String::from_utf8_lossy(text)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

pub(super) fn http_error(err: hyper::Error) -> TransportError {
    TransportError::LongPoll(LongPollError::Http(Box::new(err)))
}

fn timed_out(endpoint: Endpoint) -> TransportError {
    TransportError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("POST {}: no complete answer in time", endpoint.path()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_text_is_cut_and_its_control_characters_blanked() {
        let text = b"  busy\x1b[31m\r\nretry later\x07  ";
        let TransportError::LongPoll(LongPollError::Status {
            endpoint,
            status,
            body,
        }) = status_from_text(Endpoint::Send, 503, text)
        else {
            panic!("a status error")
        };
        assert_eq!((endpoint, status), ("/lp/send", 503));
        assert_eq!(body, "busy [31m  retry later");
        let long = vec![b'x'; 3 * STATUS_TEXT];
        let TransportError::LongPoll(LongPollError::Status { body, .. }) =
            status_from_text(Endpoint::Recv, 500, &long)
        else {
            panic!("a status error")
        };
        assert_eq!(body.len(), STATUS_TEXT);
    }
}
