//! The long-poll client: [`LongPollTransport`] (whose docs give the
//! request sequence and the bounds), [`connect`] and [`connect_with`];
//! the URL, the HTTP and the two tasks in modules of their own.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures::{Sink, Stream};
use tokio::sync::Notify;

use super::{LongPollError, SessionId, DEFAULT_POLL_TIMEOUT, LONGPOLL_MAX_MESSAGE_LENGTH};
use crate::transport::{Transport, TransportError};

mod http;
mod tasks;
mod url;

use http::AbortOnDrop;
use url::BaseUrl;

/// The poller stops asking for messages while this many wait to be taken
/// from the stream: backpressure toward the server, which keeps them.
pub const RECV_QUEUE_MESSAGES: usize = 16;

/// The poller stops asking for messages while this many bytes wait to be
/// taken from the stream (the message that crosses it is kept whole).
pub const RECV_QUEUE_BYTES: usize = 1024 * 1024;

/// The sink is not ready while this many messages wait for their answer
/// (the one being sent included).
pub const SEND_QUEUE_MESSAGES: usize = 16;

/// The sink is not ready while this many bytes wait for their answer (a
/// message that crosses it is taken whole).
pub const SEND_QUEUE_BYTES: usize = 1024 * 1024;

/// The client's timeouts and retries; see [`LongPollTransport`].
///
/// ```
/// use bijou_frame::net::transport::longpoll::ClientConfig;
/// use std::time::Duration;
///
/// let mut config = ClientConfig::default();
/// assert_eq!(config.request_timeout, Duration::from_secs(45));
/// config.request_timeout = Duration::from_secs(90); // a server holding polls for 60 s
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// Bound on one request, from sending it to the end of its answer's
    /// body: 45 s. It must exceed the server's hold of a poll
    /// ([`DEFAULT_POLL_TIMEOUT`], 30 s, on Subduction's and ours), or
    /// every idle poll fails.
    pub request_timeout: Duration,
    /// Bound on opening a TCP connection: 10 s.
    pub connect_timeout: Duration,
    /// Failed polls in a row (and attempts at a request that could not be
    /// sent) before the error ends the stream (or the sink): 5.
    pub max_failures: u32,
    /// The pause after the first failure: 50 ms, doubling after each
    /// further one...
    pub retry_pause: Duration,
    /// ...up to this: 1 s.
    pub max_retry_pause: Duration,
    /// Bound on the disconnect when the sink is closed or the transport
    /// dropped: 2 s.
    pub disconnect_timeout: Duration,
    /// How many times one `/lp/send` answered `503` (server busy: our
    /// server's queue from this session stayed full) is sent again before
    /// the sink fails with [`LongPollError::Busy`]: 8, so at most 9
    /// attempts. Each goes after the pause the server asks for
    /// (`Retry-After`, in seconds), else the pause of a failed poll (from
    /// [`retry_pause`](Self::retry_pause), doubling, up to
    /// [`max_retry_pause`](Self::max_retry_pause)). 0: a `503` fails the
    /// sink at once.
    pub busy_retries: u32,
    /// The longest `Retry-After` honoured: 10 s. A `503` asking for a
    /// longer pause fails the sink at once ([`LongPollError::Busy`]).
    pub max_busy_pause: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            request_timeout: DEFAULT_POLL_TIMEOUT + Duration::from_secs(15),
            connect_timeout: Duration::from_secs(10),
            max_failures: 5,
            retry_pause: Duration::from_millis(50),
            max_retry_pause: Duration::from_secs(1),
            disconnect_timeout: Duration::from_secs(2),
            busy_retries: 8,
            max_busy_pause: Duration::from_secs(10),
        }
    }
}

impl ClientConfig {
    /// The pause after `failures` failures in a row (1 or more).
    fn pause(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(16);
        self.retry_pause
            .saturating_mul(1 << doublings)
            .min(self.max_retry_pause)
    }
}

/// Opens a long-poll transport to the server at `url`
/// (`http://host:port[/base]`), with the default [`ClientConfig`]. See
/// [`connect_with`].
///
/// # Errors
///
/// As [`connect_with`].
///
/// # Cancel safety
///
/// Cancel safe: a cancelled connect leaves nothing behind.
pub async fn connect(url: &str) -> Result<LongPollTransport, TransportError> {
    connect_with(url, ClientConfig::default()).await
}

/// Opens a long-poll transport to the server at `url`
/// (`http://host:port[/base]`; a trailing `/` is trimmed, the endpoints
/// are `{base}/lp/...`): opens the first TCP connection, so that a server
/// that is not there fails here. The handshake is the first message sent
/// ([`Connection::connect`](crate::Connection::connect) sends it).
///
/// # Errors
///
/// [`LongPollError::Url`] (in [`TransportError::LongPoll`]) for a URL that
/// is not `http://` (`https://`: TLS is not built in), and
/// [`TransportError::Io`] if the TCP connection fails (refused, host name
/// not resolved, [`ClientConfig::connect_timeout`]), or
/// [`LongPollError::Http`] if the HTTP/1 client cannot start on it.
///
/// # Cancel safety
///
/// Cancel safe: a cancelled connect leaves nothing behind.
pub async fn connect_with(
    url: &str,
    config: ClientConfig,
) -> Result<LongPollTransport, TransportError> {
    let base = Arc::new(BaseUrl::parse(url).map_err(TransportError::LongPoll)?);
    let first = http::open(&base, config.connect_timeout).await?;
    let shared = Arc::new(Shared::default());
    let sender = tokio::spawn(tasks::run_sender(
        Arc::clone(&shared),
        Arc::clone(&base),
        config.clone(),
        first,
    ));
    Ok(LongPollTransport {
        shared,
        base,
        config,
        _sender: AbortOnDrop(sender),
        poller: None,
    })
}

/// A client session with a long-poll server (Subduction's, or ours): a
/// [`Transport`], so a [`Connection`](crate::Connection) runs on it as on
/// any other. Made by [`connect`] or [`connect_with`].
///
/// ```text
///   connect(url)                      TCP connection A opened (a refused one is TransportError::Io)
///   sink: challenge ──────────────►   A: POST {base}/lp/handshake   body: challenge
///   stream ◄─ response ────────────   200 x-session-id: <32 hex>    body: response
///                                     (401 + a Rejection: the stream yields it, then ends)
///   sink: message ────────────────►   A: POST {base}/lp/send        x-session-id, body: message
///   (flush completes on its 2xx)      204
///   stream polled after the handshake: TCP connection B opened
///                                     B: POST {base}/lp/recv        x-session-id, x-bijou-ack: 0
///   stream ◄─ message ─────────────   200 [x-bijou-seq: 1]          body: message
///                                     B: POST {base}/lp/recv        x-session-id, x-bijou-ack: 1
///                                     204 (nothing within the server's hold): polled again at once
///                                     410: the stream ends
///   sink closed ──────────────────►   A: POST {base}/lp/disconnect  x-session-id (at most 2 s)
/// ```
///
/// Two tasks do the HTTP, each on its own keep-alive connection (HTTP/1
/// answers one request at a time per connection): the sender (handshake,
/// sends and the disconnect, strictly one after another) and the poller
/// (one `/lp/recv` in flight at a time). Both are aborted when the
/// transport is dropped, and a dropped transport whose session is open
/// tries a disconnect (a task of its own, at most
/// [`ClientConfig::disconnect_timeout`]). Every body that carries a message
/// is sent with `content-type: application/octet-stream`.
///
/// # Receiving
///
/// - The poller starts the first time the stream is polled after the
///   handshake's reply was taken, so the message length the handshake
///   driver sets then applies to every message after it.
/// - A `200`'s body is one message, read as its bytes arrive and refused
///   as soon as it is known to be longer than the maximum in force
///   ([`Transport::set_max_message_length`]: 256 bytes while the
///   handshake runs): from its `content-length` before anything is read,
///   else from the bytes received. That is [`TransportError::TooLarge`],
///   and ends the stream.
/// - Acknowledgements (our server's extension, ignored by Subduction's):
///   each `/lp/recv` carries [`ACK_HEADER`](super::ACK_HEADER), the highest
///   [`SEQUENCE_HEADER`](super::SEQUENCE_HEADER) received (0 at first). A
///   `200` numbered at or below it is a repeat and is dropped; a `200`
///   without a number (Subduction's server) is always delivered. A number
///   beyond the next one (or 0) ends the stream with
///   [`LongPollError::Sequence`] before anything out of order is
///   delivered: messages are missing, and taking it as the acknowledgement
///   would drop every later message as a repeat. A number that is not a
///   decimal u64 ends it with [`LongPollError::MalformedSequence`]. The
///   rules are bijou-proto's [`Inbox`](bijou_proto::longpoll_seq::Inbox).
/// - A poll that fails (no connection, a reset, a body that broke off, no
///   answer within [`ClientConfig::request_timeout`], any status but 200,
///   204 or 410) is sent again on a new connection, with the same
///   acknowledgement: our server then repeats a response that was lost.
///   The pause before it doubles from [`ClientConfig::retry_pause`] (50 ms)
///   up to [`ClientConfig::max_retry_pause`] (1 s); after
///   [`ClientConfig::max_failures`] (5) failures in a row, the last one's
///   error ends the stream. A 200 or 204 resets the count.
/// - A `410` ends the stream (`None`), whether or not anything came
///   before, as a WebSocket close does: the server no longer knows the
///   session. Our server answers `410` to a session it closed only once
///   the messages it queued were delivered; one that expired the session,
///   refused a client that stopped collecting (backpressure), or restarted
///   dropped what it held, and Subduction's drops a message whose response
///   was lost. The stream cannot tell these apart. Once this side
///   disconnected, any failure ends it the same way.
///
/// # Sending
///
/// - The first message handed to the sink is the challenge: it goes to
///   `/lp/handshake`. A `200` must carry a valid `x-session-id`
///   ([`LongPollError::MissingSessionId`] otherwise); any other status
///   but a `401` whose body is a Rejection is [`LongPollError::Status`],
///   with the body's first bytes. These errors come from the sink (the
///   handshake driver's `send`), and the stream then ends.
/// - Every later message is one `/lp/send`, in order, one at a time; any
///   2xx is success. A `503` (the server is busy: our server's queue from
///   the session stayed full for its send timeout; the message was not
///   taken) sends the same message again, ahead of every later one, after
///   the server's `Retry-After` (delta-seconds; a date is not read) or
///   the pause of a failed poll, at most [`ClientConfig::busy_retries`]
///   (8) times; beyond that, or for a `Retry-After` over
///   [`ClientConfig::max_busy_pause`] (10 s), the sink fails with
///   [`LongPollError::Busy`]. A `410` is [`LongPollError::SessionGone`],
///   another status [`LongPollError::Status`], a request that may have
///   reached the server and got no answer the HTTP or I/O error; a request
///   that certainly did not leave (no connection) is tried again as a poll
///   is. The error comes from the sink's next call, the messages queued
///   behind it are dropped, and the sink refuses more
///   ([`LongPollError::Closed`]). The stream is not affected.
/// - **Flush completes when every message queued got its 2xx** (the
///   challenge: its `200` or `401`). So `send` returns once the server has
///   the message.
/// - Closing the sink flushes, then posts `/lp/disconnect` (best effort, at
///   most [`ClientConfig::disconnect_timeout`], 2 s): Subduction's server
///   keeps a session until then.
///
/// # Bounds
///
/// | What | Bound |
/// |---|---|
/// | received messages not yet taken | [`RECV_QUEUE_MESSAGES`] (16) messages, polled for while fewer than 16 and less than [`RECV_QUEUE_BYTES`] (1 MiB) wait, so at most 1 MiB + one message |
/// | one received message | the maximum in force (256 B during the handshake, then the configured one, 50 MiB by default) |
/// | messages queued to send (the one in flight included) | `poll_ready` is pending from [`SEND_QUEUE_MESSAGES`] (16) or [`SEND_QUEUE_BYTES`] (1 MiB) on |
/// | requests in flight | one `/lp/recv`, one other |
/// | one request, answer included | [`ClientConfig::request_timeout`] (45 s, above the server's 30 s hold) |
/// | a TCP connection | [`ClientConfig::connect_timeout`] (10 s) |
/// | failed polls in a row | [`ClientConfig::max_failures`] (5), pauses 50 ms doubling to 1 s |
/// | one `/lp/send` sent again after a `503` | [`ClientConfig::busy_retries`] (8) times, pauses `Retry-After` (at most [`ClientConfig::max_busy_pause`], 10 s) or 50 ms doubling to 1 s |
/// | the disconnect | [`ClientConfig::disconnect_timeout`] (2 s) |
/// | an idle session's heap | about 62 KB, measured (`tests/longpoll_client_idle_memory.rs`): mostly hyper's 8 KiB write and read buffers on each of the two connections |
///
/// ```no_run
/// use bijou_frame::net::handshake::ConnectConfig;
/// use bijou_frame::net::transport::longpoll;
/// use bijou_frame::net::Connection;
/// use bijou_frame::proto::message::Audience;
/// use bijou_frame::signing::ed25519_dalek::SigningKey;
///
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let key = SigningKey::from_bytes(&[7; 32]);
/// let transport = longpoll::connect("http://127.0.0.1:8080").await?;
/// let mut conn = Connection::connect(
///     transport,
///     &key,
///     Audience::discover(b"127.0.0.1:8080"),
///     &ConnectConfig::default(),
/// )
/// .await?;
/// while let Some(received) = conn.recv().await? {
///     println!("{} bytes", received.bytes.len());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LongPollTransport {
    shared: Arc<Shared>,
    base: Arc<BaseUrl>,
    config: ClientConfig,
    /// The sender task, aborted with the transport.
    _sender: AbortOnDrop,
    /// The poller task, once started; aborted with the transport.
    poller: Option<AbortOnDrop>,
}

impl LongPollTransport {
    /// The session's id, once the handshake's `200` has come.
    #[must_use]
    pub fn session_id(&self) -> Option<SessionId> {
        match self.shared.lock().phase {
            Phase::Open(id) => Some(id),
            Phase::New | Phase::Failed => None,
        }
    }
}

impl Drop for LongPollTransport {
    /// Aborts both tasks (and so their connections); if the session is
    /// open and was not disconnected, a task of its own posts
    /// `/lp/disconnect` (on a new connection, at most
    /// [`ClientConfig::disconnect_timeout`]), when a tokio runtime is there
    /// to run it.
    fn drop(&mut self) {
        // The tasks are aborted as the fields drop, after this.
        let session = {
            let st = self.shared.lock();
            match st.phase {
                Phase::Open(id) if !st.disconnected => Some(id),
                _ => None,
            }
        };
        if let (Some(session), Ok(runtime)) = (session, tokio::runtime::Handle::try_current()) {
            runtime.spawn(tasks::disconnect(
                Arc::clone(&self.base),
                self.config.clone(),
                session,
            ));
        }
    }
}

/// Where the session is.
#[derive(Debug, Clone, Copy, Default)]
enum Phase {
    /// No handshake answered yet.
    #[default]
    New,
    /// The handshake's `200` gave this id.
    Open(SessionId),
    /// The handshake failed or was refused: nothing more is sent.
    Failed,
}

/// How the stream ends, after the messages before it.
#[derive(Debug, Default)]
enum End {
    /// Not yet.
    #[default]
    Open,
    /// With this error (then `None`).
    Error(TransportError),
    /// With `None`.
    Done,
}

/// The sink's state.
#[derive(Debug, Default)]
enum SinkState {
    #[default]
    Open,
    /// A request failed: its error, until reported; then
    /// [`LongPollError::Closed`].
    Failed(Option<TransportError>),
}

/// Closing the sink.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Close {
    #[default]
    No,
    /// Asked: the sender disconnects once the queue is empty.
    Asked,
    /// The disconnect was tried (or there was no session).
    Done,
}

/// What the transport and its two tasks share.
#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    /// Wakes the sender: a message queued, a close asked.
    to_sender: Notify,
    /// Wakes the poller: a message taken from the stream.
    to_poller: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[derive(Debug)]
struct State {
    max: usize,
    phase: Phase,
    /// `/lp/disconnect` was posted (or tried).
    disconnected: bool,
    // The sink.
    outgoing: VecDeque<Bytes>,
    outgoing_bytes: usize,
    sink: SinkState,
    close: Close,
    writers: Vec<Waker>,
    // The stream.
    received: VecDeque<Bytes>,
    received_bytes: usize,
    end: End,
    reader: Option<Waker>,
}

impl Default for State {
    fn default() -> Self {
        Self {
            max: LONGPOLL_MAX_MESSAGE_LENGTH,
            phase: Phase::New,
            disconnected: false,
            outgoing: VecDeque::new(),
            outgoing_bytes: 0,
            sink: SinkState::Open,
            close: Close::No,
            writers: Vec::new(),
            received: VecDeque::new(),
            received_bytes: 0,
            end: End::Open,
            reader: None,
        }
    }
}

/// Wakers taken out of the state under its lock, woken after it is
/// released.
#[derive(Default)]
struct Wake(Vec<Waker>);

impl Wake {
    fn wake(self) {
        for waker in self.0 {
            waker.wake();
        }
    }
}

impl State {
    /// Whether the poller should wait before asking for another message.
    fn received_full(&self) -> bool {
        self.received.len() >= RECV_QUEUE_MESSAGES || self.received_bytes >= RECV_QUEUE_BYTES
    }

    fn push_received(&mut self, message: Bytes, wake: &mut Wake) {
        self.received_bytes = self.received_bytes.saturating_add(message.len());
        self.received.push_back(message);
        wake.0.extend(self.reader.take());
    }

    fn end_stream(&mut self, end: End, wake: &mut Wake) {
        if matches!(self.end, End::Open) {
            self.end = end;
        }
        wake.0.extend(self.reader.take());
    }

    /// The message at the front of the queue got its answer.
    fn sent(&mut self, wake: &mut Wake) {
        if let Some(message) = self.outgoing.pop_front() {
            self.outgoing_bytes = self.outgoing_bytes.saturating_sub(message.len());
        }
        wake.0.append(&mut self.writers);
    }

    /// The sink failed with `error`: what was queued is dropped.
    fn fail_sink(&mut self, error: TransportError, wake: &mut Wake) {
        self.outgoing.clear();
        self.outgoing_bytes = 0;
        if matches!(self.sink, SinkState::Open) {
            self.sink = SinkState::Failed(Some(error));
        }
        wake.0.append(&mut self.writers);
    }

    /// The sink takes nothing more, with no error to report: what was
    /// queued is dropped.
    fn close_sink(&mut self, wake: &mut Wake) {
        self.outgoing.clear();
        self.outgoing_bytes = 0;
        if matches!(self.sink, SinkState::Open) {
            self.sink = SinkState::Failed(None);
        }
        wake.0.append(&mut self.writers);
    }

    fn wake_writers(&mut self, wake: &mut Wake) {
        wake.0.append(&mut self.writers);
    }

    /// Remembers `waker` to wake when the sink can move on (every task
    /// that polls it: a split connection's halves both flush).
    fn register_writer(&mut self, waker: &Waker) {
        if self.writers.iter().any(|w| w.will_wake(waker)) {
            return;
        }
        if self.writers.len() >= 8 {
            // More tasks than a transport has: wake them all (they poll
            // again and register anew) rather than grow.
            for w in self.writers.drain(..) {
                w.wake();
            }
        }
        self.writers.push(waker.clone());
    }

    /// The sink's error, once: the request that failed, or
    /// [`LongPollError::Closed`] after it was reported or once closing.
    fn sink_refusal(&mut self) -> Option<TransportError> {
        match &mut self.sink {
            SinkState::Failed(error) => Some(
                error
                    .take()
                    .unwrap_or(TransportError::LongPoll(LongPollError::Closed)),
            ),
            SinkState::Open if self.close != Close::No => {
                Some(TransportError::LongPoll(LongPollError::Closed))
            }
            SinkState::Open => None,
        }
    }

    /// The sink's error if one is waiting to be reported.
    fn take_sink_error(&mut self) -> Option<TransportError> {
        match &mut self.sink {
            SinkState::Failed(error) => error.take(),
            SinkState::Open => None,
        }
    }
}

impl Stream for LongPollTransport {
    type Item = Result<Bytes, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let mut st = this.shared.lock();
        if let Some(message) = st.received.pop_front() {
            st.received_bytes = st.received_bytes.saturating_sub(message.len());
            drop(st);
            this.shared.to_poller.notify_one();
            return Poll::Ready(Some(Ok(message)));
        }
        match std::mem::replace(&mut st.end, End::Done) {
            End::Error(e) => return Poll::Ready(Some(Err(e))),
            End::Done => return Poll::Ready(None),
            End::Open => st.end = End::Open,
        }
        if !st.reader.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            st.reader = Some(cx.waker().clone());
        }
        if let (Phase::Open(session), None) = (st.phase, &this.poller) {
            drop(st);
            this.poller = Some(AbortOnDrop(tokio::spawn(tasks::run_poller(
                Arc::clone(&this.shared),
                Arc::clone(&this.base),
                this.config.clone(),
                session,
            ))));
        }
        Poll::Pending
    }
}

impl Sink<Bytes> for LongPollTransport {
    type Error = TransportError;

    /// Pending while [`SEND_QUEUE_MESSAGES`] messages or
    /// [`SEND_QUEUE_BYTES`] bytes wait for their answer.
    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let mut st = self.shared.lock();
        if let Some(e) = st.sink_refusal() {
            return Poll::Ready(Err(e));
        }
        if st.outgoing.len() >= SEND_QUEUE_MESSAGES || st.outgoing_bytes >= SEND_QUEUE_BYTES {
            st.register_writer(cx.waker());
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    /// Queues `message` (the first one is the handshake's challenge); a
    /// message over the maximum in force is refused.
    fn start_send(self: Pin<&mut Self>, message: Bytes) -> Result<(), TransportError> {
        let mut st = self.shared.lock();
        if let Some(e) = st.sink_refusal() {
            return Err(e);
        }
        if message.len() > st.max {
            return Err(TransportError::TooLarge {
                len: message.len() as u64,
                max: st.max,
            });
        }
        st.outgoing_bytes = st.outgoing_bytes.saturating_add(message.len());
        st.outgoing.push_back(message);
        drop(st);
        self.shared.to_sender.notify_one();
        Ok(())
    }

    /// Ready once every queued message got its 2xx (the challenge: its
    /// answer), or with the error of the one that did not.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let mut st = self.shared.lock();
        if let Some(e) = st.take_sink_error() {
            return Poll::Ready(Err(e));
        }
        if st.outgoing.is_empty() {
            return Poll::Ready(Ok(()));
        }
        st.register_writer(cx.waker());
        Poll::Pending
    }

    /// Flushes, then posts `/lp/disconnect` (best effort, at most
    /// [`ClientConfig::disconnect_timeout`]); the stream ends when the
    /// server closes the session (its `410`).
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let mut st = self.shared.lock();
        if let Some(e) = st.take_sink_error() {
            return Poll::Ready(Err(e));
        }
        match st.close {
            Close::Done => return Poll::Ready(Ok(())),
            Close::No => {
                st.close = Close::Asked;
                st.register_writer(cx.waker());
                drop(st);
                self.shared.to_sender.notify_one();
            }
            Close::Asked => st.register_writer(cx.waker()),
        }
        Poll::Pending
    }
}

impl Transport for LongPollTransport {
    /// Applies to messages sent from now on, and to every `/lp/recv`
    /// answer read from now on.
    /// Refuses messages over `max` (clamped to
    /// [`LONGPOLL_MAX_MESSAGE_LENGTH`](super::LONGPOLL_MAX_MESSAGE_LENGTH))
    /// from the next response on.
    fn set_max_message_length(&mut self, max: usize) {
        self.shared.lock().max = max.min(super::LONGPOLL_MAX_MESSAGE_LENGTH);
    }

    fn max_message_length(&self) -> usize {
        self.shared.lock().max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_timeout_outlasts_the_servers_hold_and_pauses_double_to_the_cap() {
        let config = ClientConfig::default();
        assert!(config.request_timeout > DEFAULT_POLL_TIMEOUT);
        let pauses: Vec<u128> = (1..=7).map(|n| config.pause(n).as_millis()).collect();
        assert_eq!(pauses, [50, 100, 200, 400, 800, 1000, 1000]);
        assert_eq!(config.pause(u32::MAX), Duration::from_secs(1));
    }
}
