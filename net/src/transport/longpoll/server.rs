//! The HTTP side of the long-poll server: hyper's connection, the routes,
//! one handler per endpoint ([`LongPollServer`] has the picture).

use std::convert::Infallible;
use std::sync::Arc;

use bijou_codec::Wire;
use bijou_proto::message::HandshakeMessage;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::body::{read_capped, Deadline};
use super::config::ServerConfig;
use super::error::LongPollError;
use super::refusal::Refusal;
use super::registry::Registry;
use super::session::{Closed, Collected, LongPollSession, Shared};
use super::session_id::SessionId;
use super::write_deadline::{DrainTimeout, WriteDeadline};
use super::{path, ACK_HEADER, MAX_HANDSHAKE_BODY, SEQUENCE_HEADER, SESSION_ID_HEADER};

/// The largest request head hyper reads (its read buffer's bound): 16 KiB.
const MAX_HEAD: usize = 16 * 1024;
/// Attempts at a session id not in the table (one is all but certain).
const ID_ATTEMPTS: usize = 4;

type Answer = Response<Full<Bytes>>;

/// A long-poll server: serves the HTTP/1.1 connections the caller accepts
/// (keep-alive: request after request), and hands each new session to
/// [`IncomingSessions::accept`]. Clones share the sessions.
///
/// ```text
///   caller's accept loop ── a stream ──► serve_connection (hyper, a task per connection)
///                                            │ POST /lp/handshake: body ≤ 256 B
///                                            ▼
///   IncomingSessions::accept() ◄──── LongPollSession (≤ accept_queue waiting)
///            │ Connection::accept (handshake::respond)
///            ▼
///   its first message ──► 200 + x-session-id + the Response   (a Rejection: 401)
/// ```
///
/// A session's requests may come on any connection (Subduction's client
/// sends on one and polls on another). The id is the session's only
/// credential: 16 bytes from the operating system, kept in the server's
/// table as their BLAKE3 hash; it is valid from the `200` on.
///
/// | Request | Answers |
/// |---|---|
/// | `POST /lp/handshake` | `200` + `x-session-id` + the response; `401` + the rejection (`application/octet-stream`), or `401` + text when the server side closed without answering; `413` over 256 bytes; `400` a body that broke off; `408` a body that stalled; `503` sessions full, handshakes queued full, no answer within the handshake timeout; `500` the server side answered with something other than a handshake reply |
/// | `POST /lp/send` | `204`; `400` no or bad `x-session-id`, a body that broke off; `410` unknown, expired or closed session; `413` over the session's maximum message length; `408` a body that stalled, or did not arrive whole within the send body timeout; `503` the inbound queue stayed full for the send timeout |
/// | `POST /lp/recv` | `200` + one message + `x-bijou-seq`; `204` nothing within the poll timeout; `400` no or bad `x-session-id` or `x-bijou-ack`, an acknowledgement beyond what was sent; `409` another `/lp/recv` of the session is waiting; `410` unknown, expired, or closed and collected |
/// | `POST /lp/disconnect` | `204` (also for an unknown id); `400` no or bad `x-session-id` |
/// | anything else | `404`; `405` + `allow: POST` for another method on a long-poll path |
///
/// Every refusal carries a short `text/plain` body saying what was wrong
/// and what to do. Request heads are bounded by the header read timeout
/// (a head that trickles in, or an idle keep-alive connection, is cut
/// off) and 16 KiB; bodies by their endpoint's cap (checked against
/// `Content-Length` before anything is read, then against the bytes as
/// they arrive; nothing is reserved from `Content-Length`), the body
/// stall timeout, and as a whole by the handshake timeout
/// (`/lp/handshake`) or the send body timeout (`/lp/send`). Requests
/// naming an unknown session are answered before their body is read.
/// Answers are bounded by the write timeout: one the client stops taking
/// (its socket's buffers full) for that long drops its connection.
///
/// The bounds (sessions, queues, timeouts) are [`ServerConfig`]'s; what a
/// session holds is in [`LongPollSession`]'s docs.
///
/// ```no_run
/// use bijou_frame::net::handshake::ConnectConfig;
/// use bijou_frame::net::transport::longpoll::{LongPollServer, ServerConfig};
/// use bijou_frame::net::Connection;
/// use bijou_frame::proto::handshake::{HandshakeConfig, Responder};
/// use bijou_frame::signing::ed25519_dalek::SigningKey;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let key = SigningKey::from_bytes(&[7; 32]);
/// let responder = Responder::new(HandshakeConfig::default());
/// let (server, mut sessions) = LongPollServer::new(ServerConfig::default());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// tokio::spawn(async move {
///     while let Ok((tcp, _)) = listener.accept().await {
///         tokio::spawn(server.clone().serve_connection(tcp));
///     }
/// });
/// while let Some(session) = sessions.accept().await {
///     let conn = Connection::accept(session, &key, &responder, &ConnectConfig::default()).await?;
///     println!("{} connected over long-poll", conn.remote_peer());
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct LongPollServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: Arc<ServerConfig>,
    registry: Arc<Registry>,
    incoming: mpsc::Sender<LongPollSession>,
}

/// The sessions whose handshake arrived, to be accepted: run the
/// handshake on each ([`Connection::accept`](crate::Connection::accept)).
#[derive(Debug)]
pub struct IncomingSessions {
    queue: mpsc::Receiver<LongPollSession>,
}

impl IncomingSessions {
    /// The next new session; `None` once every [`LongPollServer`] clone is
    /// gone. A session whose handshake request ended while it waited here
    /// (the client left, or the handshake timeout passed) comes closed: its
    /// handshake fails with [`LongPollError::Closed`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a session not returned stays queued.
    pub async fn accept(&mut self) -> Option<LongPollSession> {
        self.queue.recv().await
    }
}

impl LongPollServer {
    /// A server with `config`, and where its new sessions arrive. Nothing
    /// runs until connections are served.
    #[must_use]
    pub fn new(config: ServerConfig) -> (Self, IncomingSessions) {
        let (incoming, queue) = mpsc::channel(config.accept_queue.max(1));
        let config = Arc::new(config);
        let server = Self {
            inner: Arc::new(Inner {
                registry: Arc::new(Registry::new(Arc::clone(&config))),
                config,
                incoming,
            }),
        };
        (server, IncomingSessions { queue })
    }

    /// The server's settings.
    #[must_use]
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// Sessions open or in their handshake now.
    #[must_use]
    pub fn session_count(&self) -> usize {
        self.inner.registry.len()
    }

    /// Serves HTTP/1.1 on `io` (keep-alive: request after request) until
    /// the client closes it, or a timeout or an HTTP error ends it.
    ///
    /// # Errors
    ///
    /// [`LongPollError::Http`]: the connection failed or broke the
    /// protocol (a head over 16 KiB or one that did not come within the
    /// header read timeout included).
    /// [`LongPollError::WriteTimeout`]: the client stopped reading an
    /// answer, which did not drain within
    /// [`ServerConfig::write_timeout`]; the connection was dropped.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the connection; requests in progress on
    /// it end as if the client had left (a message taken for an
    /// unacknowledged `/lp/recv` response is lost, as the client would
    /// lose it; with acknowledgements nothing is lost).
    pub async fn serve_connection<I>(self, io: I) -> Result<(), LongPollError>
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let io = WriteDeadline::new(io, self.inner.config.write_timeout);
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.inner.config.header_read_timeout)
            .keep_alive(true)
            .max_buf_size(MAX_HEAD);
        let service = service_fn(move |request| {
            let server = self.clone();
            async move { Ok::<_, Infallible>(server.answer(request).await) }
        });
        builder
            .serve_connection(TokioIo::new(io), service)
            .await
            .map_err(|e| match DrainTimeout::find(&e) {
                Some(DrainTimeout { after }) => LongPollError::WriteTimeout { after },
                None => LongPollError::Http(Box::new(e)),
            })
    }

    /// Routes a request and turns a refusal into its answer.
    async fn answer(&self, request: Request<Incoming>) -> Answer {
        match self.route(request).await {
            Ok(answer) => answer,
            Err(refusal) => {
                let mut answer = text(refusal.status(), refusal.to_string());
                if matches!(refusal, Refusal::MethodNotAllowed { .. }) {
                    answer
                        .headers_mut()
                        .insert(ALLOW, HeaderValue::from_static("POST"));
                }
                answer
            }
        }
    }

    async fn route(&self, request: Request<Incoming>) -> Result<Answer, Refusal> {
        let endpoint = match request.uri().path() {
            path::HANDSHAKE => Endpoint::Handshake,
            path::SEND => Endpoint::Send,
            path::RECV => Endpoint::Recv,
            path::DISCONNECT => Endpoint::Disconnect,
            _ => return Err(Refusal::NotFound),
        };
        if request.method() != Method::POST {
            return Err(Refusal::MethodNotAllowed {
                method: request.method().clone(),
            });
        }
        match endpoint {
            Endpoint::Handshake => self.handshake(request).await,
            Endpoint::Send => self.send(request).await,
            Endpoint::Recv => self.recv(request).await,
            Endpoint::Disconnect => self.disconnect(request.headers()),
        }
    }

    /// `POST /lp/handshake`: the body is the new session's first message;
    /// the server side's first message is the answer.
    async fn handshake(&self, request: Request<Incoming>) -> Result<Answer, Refusal> {
        let config = &self.inner.config;
        let deadline = Instant::now() + config.handshake_timeout;
        let challenge = read_capped(
            request.into_body(),
            MAX_HANDSHAKE_BODY,
            config.body_stall_timeout,
            Some(Deadline {
                at: deadline,
                after: config.handshake_timeout,
            }),
        )
        .await?;
        let registry = &self.inner.registry;
        let mut reservation = registry.reserve()?;
        let (session, replied) =
            LongPollSession::pending(challenge, Arc::clone(config), registry.now_ms());
        let shared = Arc::clone(session.shared());
        // Whatever ends this request before the session opens ends the
        // session too (the client left, a refusal, a timeout).
        let guard = CloseUnlessOpened(Some(&shared));
        self.inner.incoming.try_send(session).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => Refusal::AcceptQueueFull,
            mpsc::error::TrySendError::Closed(_) => Refusal::NotAccepting,
        })?;
        let reply = match tokio::time::timeout_at(deadline, replied).await {
            Err(_) => {
                return Err(Refusal::HandshakeTimeout {
                    after: config.handshake_timeout,
                })
            }
            Ok(Err(_)) => return Err(Refusal::HandshakeUnanswered),
            Ok(Ok(reply)) => reply,
        };
        match HandshakeMessage::decode(reply.clone()) {
            Ok(HandshakeMessage::Response(_)) => {}
            Ok(HandshakeMessage::Rejection(_)) => {
                return Ok(octets(StatusCode::UNAUTHORIZED, reply));
            }
            Ok(HandshakeMessage::Challenge(_)) | Err(_) => return Err(Refusal::NotAHandshakeReply),
        }
        let mut registered = None;
        for _ in 0..ID_ATTEMPTS {
            let id = SessionId::random().map_err(|_| Refusal::NoRandomness)?;
            match reservation.register(&id, Arc::clone(&shared)) {
                Ok(()) => {
                    registered = Some(id);
                    break;
                }
                Err(back) => reservation = back,
            }
        }
        let id = registered.ok_or(Refusal::NoRandomness)?;
        guard.disarm();
        let mut answer = octets(StatusCode::OK, reply);
        // 32 lower-case hex digits: always a valid header value.
        if let Ok(value) = HeaderValue::from_str(&id.to_string()) {
            answer
                .headers_mut()
                .insert(HeaderName::from_static(SESSION_ID_HEADER), value);
        }
        Ok(answer)
    }

    /// `POST /lp/send`: one message for the server side's stream.
    async fn send(&self, request: Request<Incoming>) -> Result<Answer, Refusal> {
        let (id, session) = self.session(request.headers())?;
        let _request = Activity::begin(&self.inner.registry, &session);
        if session.is_closed() {
            return Err(self.gone(&id, &session));
        }
        // Before the body is read: one send at a time per session.
        let _sending = session.hold_send()?;
        let config = &self.inner.config;
        let message = read_capped(
            request.into_body(),
            session.max_message_length(),
            config.body_stall_timeout,
            Some(Deadline {
                at: Instant::now() + config.send_body_timeout,
                after: config.send_body_timeout,
            }),
        )
        .await?;
        match session
            .deliver(message, Instant::now() + config.send_timeout)
            .await
        {
            Ok(()) => Ok(empty()),
            Err(Refusal::SessionGone) => Err(self.gone(&id, &session)),
            Err(other) => Err(other),
        }
    }

    /// `POST /lp/recv`: one message for the client, when there is one.
    async fn recv(&self, request: Request<Incoming>) -> Result<Answer, Refusal> {
        let (id, session) = self.session(request.headers())?;
        let ack = match request.headers().get(ACK_HEADER) {
            None => None,
            Some(value) => Some(
                value
                    .to_str()
                    .ok()
                    .and_then(|text| text.parse::<u64>().ok())
                    .ok_or(Refusal::MalformedAck)?,
            ),
        };
        // The request's head is not kept while the answer is awaited.
        drop(request);
        let _request = Activity::begin(&self.inner.registry, &session);
        let _held = session.hold_recv()?;
        let deadline = Instant::now() + self.inner.config.poll_timeout;
        match session.collect(ack, deadline).await {
            Ok(Collected::Message(seq, message)) => {
                let mut answer = octets(StatusCode::OK, message);
                answer
                    .headers_mut()
                    .insert(HeaderName::from_static(SEQUENCE_HEADER), seq.into());
                Ok(answer)
            }
            Ok(Collected::Nothing) => Ok(empty()),
            Err(Refusal::SessionGone) => Err(self.gone(&id, &session)),
            Err(other) => Err(other),
        }
    }

    /// `POST /lp/disconnect`: ends the session.
    fn disconnect(&self, headers: &HeaderMap) -> Result<Answer, Refusal> {
        let id = session_id(headers)?;
        if let Some(session) = self.inner.registry.remove(&id) {
            session.close(Closed::ByClient);
        }
        Ok(empty())
    }

    /// The session a request names.
    fn session(&self, headers: &HeaderMap) -> Result<(SessionId, Arc<Shared>), Refusal> {
        let id = session_id(headers)?;
        let session = self.inner.registry.get(&id).ok_or(Refusal::SessionGone)?;
        Ok((id, session))
    }

    /// `410` for a closed session, which leaves the table once it holds
    /// nothing more for the client.
    fn gone(&self, id: &SessionId, session: &Shared) -> Refusal {
        if session.is_finished() {
            self.inner.registry.remove(id);
        }
        Refusal::SessionGone
    }
}

#[derive(Debug, Clone, Copy)]
enum Endpoint {
    Handshake,
    Send,
    Recv,
    Disconnect,
}

/// The `x-session-id` header, parsed.
fn session_id(headers: &HeaderMap) -> Result<SessionId, Refusal> {
    let value = headers
        .get(SESSION_ID_HEADER)
        .ok_or(Refusal::MissingSessionId)?;
    let text = value.to_str().map_err(|_| {
        // Not visible ASCII: name the first byte that is not.
        let bytes = value.as_bytes();
        let index = bytes
            .iter()
            .position(|b| !b.is_ascii_graphic())
            .unwrap_or(0);
        let found = bytes.get(index).map_or('?', |&b| char::from(b));
        Refusal::MalformedSessionId(bijou_signing::hex::ParseHexError::InvalidDigit {
            index,
            found,
        })
    })?;
    text.parse().map_err(Refusal::MalformedSessionId)
}

/// A request of a session in progress: counts as activity from its start
/// to its end.
struct Activity<'a> {
    registry: &'a Registry,
    session: &'a Shared,
}

impl<'a> Activity<'a> {
    fn begin(registry: &'a Registry, session: &'a Shared) -> Self {
        session.begin_request(registry.now_ms());
        Self { registry, session }
    }
}

impl Drop for Activity<'_> {
    fn drop(&mut self) {
        self.session.end_request(self.registry.now_ms());
    }
}

/// Closes a session in its handshake if the request ends before it opens.
struct CloseUnlessOpened<'a>(Option<&'a Shared>);

impl CloseUnlessOpened<'_> {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CloseUnlessOpened<'_> {
    fn drop(&mut self) {
        if let Some(session) = self.0 {
            session.close(Closed::Handshake);
        }
    }
}

fn empty() -> Answer {
    let mut answer = Response::new(Full::new(Bytes::new()));
    *answer.status_mut() = StatusCode::NO_CONTENT;
    answer
}

fn octets(status: StatusCode, body: Bytes) -> Answer {
    let mut answer = Response::new(Full::new(body));
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    answer
}

fn text(status: StatusCode, body: String) -> Answer {
    let mut answer = Response::new(Full::new(Bytes::from(body)));
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    answer
}
