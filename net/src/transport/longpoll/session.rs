//! One long-poll session on the server: its state and two queues, shared
//! with its requests, and [`LongPollSession`], the server side's
//! [`Transport`] over them (whose docs have the picture).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use bijou_proto::longpoll_seq::{Outbox, OutboxLimits, Recv};
use bytes::Bytes;
use futures::{Sink, Stream};
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

use super::config::ServerConfig;
use super::error::LongPollError;
use super::refusal::Refusal;
use super::{LONGPOLL_MAX_MESSAGE_LENGTH, MAX_HANDSHAKE_BODY};
use crate::transport::{Transport, TransportError};

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Closed {
    /// The server side closed or dropped its [`LongPollSession`].
    ByServer,
    /// The client sent `/lp/disconnect`.
    ByClient,
    /// The handshake did not open it (a rejection, no answer, the client
    /// left).
    Handshake,
    /// No request for the idle timeout.
    Expired,
    /// The outbound queue was full.
    Backpressure {
        /// Messages waiting then.
        queued: usize,
        /// Their bytes.
        bytes: usize,
    },
}

#[derive(Debug)]
enum Phase {
    /// Waiting for the server side's first message, the handshake reply,
    /// which goes to the waiting `/lp/handshake` request.
    Handshake(Option<oneshot::Sender<Bytes>>),
    Open,
    Closed(Closed),
}

#[derive(Debug)]
struct State {
    phase: Phase,
    inbound: VecDeque<Bytes>,
    inbound_bytes: usize,
    /// The messages for the client: numbered, bounded, kept until
    /// acknowledged (the sequence machine, bijou-proto's).
    outbound: Outbox<Bytes>,
    /// The transport's maximum message length, both ways.
    max_message_length: usize,
    /// An `/lp/recv` is waiting.
    recv_held: bool,
    /// An `/lp/send` is reading its body or waiting for room (one at a
    /// time, so a session holds at most one body beyond its queue).
    send_held: bool,
    /// The server side's stream, waiting for a message.
    stream_waker: Option<Waker>,
    /// The stream has yielded its end.
    stream_done: bool,
}

impl State {
    fn is_closed(&self) -> bool {
        matches!(self.phase, Phase::Closed(_))
    }
}

/// The state a session's requests and its [`LongPollSession`] share.
#[derive(Debug)]
pub(super) struct Shared {
    state: Mutex<State>,
    /// Woken when a message is queued for the client or the session
    /// closes: the held `/lp/recv`.
    to_client: Notify,
    /// Woken when the inbound queue has room or the session closes: the
    /// held `/lp/send` requests.
    room: Notify,
    /// When the last request started or ended, in milliseconds from the
    /// server's epoch.
    last_seen: AtomicU64,
    /// Requests of this session in progress.
    active: AtomicU32,
    config: Arc<ServerConfig>,
}

/// What an `/lp/recv` gets.
#[derive(Debug)]
pub(super) enum Collected {
    /// A message and its sequence number.
    Message(u64, Bytes),
    /// Nothing within the poll timeout.
    Nothing,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the session is closed and holds nothing more for the
    /// client: it can leave the server's table.
    pub(super) fn is_finished(&self) -> bool {
        let state = self.lock();
        state.is_closed() && state.outbound.is_empty()
    }

    /// Whether the session is closed (it may still hold messages for the
    /// client).
    pub(super) fn is_closed(&self) -> bool {
        self.lock().is_closed()
    }

    /// Milliseconds since the last request started or ended, and whether
    /// one is in progress.
    pub(super) fn idle_ms(&self, now_ms: u64) -> Option<u64> {
        if self.active.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(now_ms.saturating_sub(self.last_seen.load(Ordering::Acquire)))
    }

    /// Records a request starting.
    pub(super) fn begin_request(&self, now_ms: u64) {
        self.active.fetch_add(1, Ordering::AcqRel);
        self.last_seen.fetch_max(now_ms, Ordering::AcqRel);
    }

    /// Records a request ending.
    pub(super) fn end_request(&self, now_ms: u64) {
        self.last_seen.fetch_max(now_ms, Ordering::AcqRel);
        self.active.fetch_sub(1, Ordering::AcqRel);
    }

    /// Ends the session (the first reason stays). What the client has not
    /// collected is dropped, except when the server side closed: then the
    /// client still collects it.
    pub(super) fn close(&self, why: Closed) {
        let waker = {
            let mut state = self.lock();
            if state.is_closed() {
                return;
            }
            state.phase = Phase::Closed(why);
            if why != Closed::ByServer {
                state.outbound.clear();
            }
            state.stream_waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        self.to_client.notify_waiters();
        self.room.notify_waiters();
    }

    /// The longest `/lp/send` body the session takes now.
    pub(super) fn max_message_length(&self) -> usize {
        self.lock().max_message_length
    }

    /// Marks an `/lp/recv` as waiting; the guard unmarks it.
    pub(super) fn hold_recv(&self) -> Result<RecvHeld<'_>, Refusal> {
        let mut state = self.lock();
        if state.recv_held {
            return Err(Refusal::RecvInProgress);
        }
        state.recv_held = true;
        Ok(RecvHeld(self))
    }

    /// Marks an `/lp/send` as reading or waiting; the guard unmarks it.
    pub(super) fn hold_send(&self) -> Result<SendHeld<'_>, Refusal> {
        let mut state = self.lock();
        if state.send_held {
            return Err(Refusal::SendInProgress);
        }
        state.send_held = true;
        Ok(SendHeld(self))
    }

    /// Queues a message from the client for the server side's stream,
    /// waiting for room until `deadline`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the message is queued whole or not at all.
    pub(super) async fn deliver(&self, message: Bytes, deadline: Instant) -> Result<(), Refusal> {
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let mut state = self.lock();
                if state.is_closed() {
                    return Err(Refusal::SessionGone);
                }
                let config = &self.config;
                let fits = state.inbound.is_empty()
                    || (state.inbound.len() < config.inbound_messages
                        && state.inbound_bytes.saturating_add(message.len())
                            <= config.inbound_bytes);
                if fits {
                    state.inbound_bytes = state.inbound_bytes.saturating_add(message.len());
                    state.inbound.push_back(message);
                    let waker = state.stream_waker.take();
                    drop(state);
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                    return Ok(());
                }
            }
            if tokio::time::timeout_at(deadline, room).await.is_err() {
                return Err(Refusal::InboundFull {
                    after: self.config.send_timeout,
                });
            }
        }
    }

    /// The message for an `/lp/recv`: after dropping what `ack`
    /// acknowledges (and keeping the answer queued until acknowledged),
    /// or taken off the queue without `ack` (the outbox's rules). Waits
    /// until `deadline`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a message leaves the queue only in the step that
    /// returns it.
    pub(super) async fn collect(
        &self,
        ack: Option<u64>,
        deadline: Instant,
    ) -> Result<Collected, Refusal> {
        let recv = ack.map_or(Recv::Unacknowledged, Recv::Acknowledging);
        loop {
            let ready = self.to_client.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            {
                let mut state = self.lock();
                // The same acknowledgement each time round: only the first
                // drops anything, or is refused.
                if let Some(next) = state.outbound.recv(recv)? {
                    return Ok(Collected::Message(next.seq, next.message));
                }
                if state.is_closed() {
                    return Err(Refusal::SessionGone);
                }
            }
            if tokio::time::timeout_at(deadline, ready).await.is_err() {
                return Ok(Collected::Nothing);
            }
        }
    }
}

/// An `/lp/recv` waiting on a session (at most one).
#[derive(Debug)]
pub(super) struct RecvHeld<'a>(&'a Shared);

impl Drop for RecvHeld<'_> {
    fn drop(&mut self) {
        self.0.lock().recv_held = false;
    }
}

/// An `/lp/send` reading its body or waiting for room (at most one).
#[derive(Debug)]
pub(super) struct SendHeld<'a>(&'a Shared);

impl Drop for SendHeld<'_> {
    fn drop(&mut self) {
        self.0.lock().send_held = false;
    }
}

/// The server side of one long-poll session, a [`Transport`]: its stream
/// yields the client's messages (first the handshake challenge, the
/// `/lp/handshake` body), its sink queues messages for the client's
/// `/lp/recv`. Taken from
/// [`IncomingSessions::accept`](super::IncomingSessions::accept); run the
/// handshake on it ([`Connection::accept`](crate::Connection::accept)).
///
/// ```text
///   POST /lp/handshake (its body: the stream's first message)
///       │
///       ▼
///   Handshake ── the sink's first message is a Response: 200 + x-session-id ──► Open
///       │                                                                        │
///       │ a Rejection (401), dropped unanswered (401),                          │
///       │ no answer in time (503), the client gone                              │
///       ▼                                                                        │
///   Closed ◄─────────────── /lp/disconnect, idle, outbound full, sink closed ───┘
///
///   client ── /lp/send ──► inbound  (≤ inbound_messages, ≤ inbound_bytes)  ──► Stream
///   client ◄── /lp/recv ── outbound (≤ outbound_messages, ≤ outbound_bytes) ◄── Sink
///                          numbered from 1 (x-bijou-seq)
/// ```
///
/// | Closed by | the stream, after the messages queued | the sink | the client |
/// |---|---|---|---|
/// | `/lp/disconnect` | ends | [`LongPollError::Closed`] | `410` |
/// | no request for the idle timeout | [`LongPollError::Expired`], then ends | [`LongPollError::Expired`] | `410` |
/// | the outbound queue full | [`LongPollError::Backpressure`], then ends | [`LongPollError::Backpressure`] | `410` |
/// | closing or dropping this | ends | [`LongPollError::Closed`] | what was queued, then `410` |
///
/// A full inbound queue holds `/lp/send` requests back (each up to the
/// send timeout); a full outbound queue refuses the message and ends the
/// session, so a client that never polls pins at most the bound.
///
/// With acknowledgements (`x-bijou-ack: n` on `/lp/recv`), the messages
/// up to `n` are dropped and the oldest one left is answered and kept
/// until a later acknowledgement covers it: a response that was lost is
/// answered again, with the same sequence number. Without, the message
/// leaves the queue as its response is handed to the HTTP connection, as
/// in Subduction.
///
///
/// - The first message sent is the handshake's answer, the body of the
///   `/lp/handshake` response: a `Response` opens the session (`200` with
///   its id), a `Rejection` refuses it (`401`).
/// - Sending queues the message and does not wait for the client:
///   `poll_flush` is ready at once, as delivery happens when the client
///   polls. The queue is bounded (see
///   [`ServerConfig`](super::ServerConfig)); when it is full the sink
///   refuses with [`LongPollError::Backpressure`] and the session ends.
/// - [`set_max_message_length`](Transport::set_max_message_length) caps the
///   `/lp/send` bodies the server reads (`413` beyond), and the messages
///   sent (clamped to [`LONGPOLL_MAX_MESSAGE_LENGTH`]).
/// - The stream ends (`None`) after the messages queued when the client
///   disconnects; after them it yields [`LongPollError::Expired`] when the
///   client stopped making requests, and [`LongPollError::Backpressure`]
///   when it stopped collecting.
/// - Closing or dropping it closes the session: the client collects what
///   was queued, then gets `410`.
///
/// # Memory
///
/// An idle session holds about 380 bytes on the server, its
/// [`Connection`](crate::Connection) included: its state (drained queues
/// give their buffers back), its entry in the server's table, and no task
/// or timer of its own (one sweeper per server ends idle sessions). A
/// client that polls adds its HTTP connection, about 20 KiB with a held
/// `/lp/recv`, most of it hyper's two 8 KiB buffers per connection.
/// Measured over 2,000 sessions in `net/tests/longpoll_idle_memory.rs`.
#[derive(Debug)]
pub struct LongPollSession {
    shared: Arc<Shared>,
}

impl LongPollSession {
    /// A session in its handshake: its stream yields `challenge` first;
    /// the receiver gets the first message sent.
    pub(super) fn pending(
        challenge: Bytes,
        config: Arc<ServerConfig>,
        now_ms: u64,
    ) -> (Self, oneshot::Receiver<Bytes>) {
        let (reply, replied) = oneshot::channel();
        let inbound_bytes = challenge.len();
        let shared = Shared {
            state: Mutex::new(State {
                phase: Phase::Handshake(Some(reply)),
                inbound: VecDeque::from([challenge]),
                inbound_bytes,
                outbound: Outbox::new(OutboxLimits {
                    max_messages: config.outbound_messages,
                    max_bytes: config.outbound_bytes,
                }),
                max_message_length: MAX_HANDSHAKE_BODY,
                recv_held: false,
                send_held: false,
                stream_waker: None,
                stream_done: false,
            }),
            to_client: Notify::new(),
            room: Notify::new(),
            last_seen: AtomicU64::new(now_ms),
            active: AtomicU32::new(0),
            config,
        };
        (
            Self {
                shared: Arc::new(shared),
            },
            replied,
        )
    }

    /// The state it shares with its requests.
    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Whether the session has ended (the client disconnected, expired,
    /// stopped collecting, or this side closed it).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// Messages queued for the client and not yet collected (with
    /// acknowledgements: not yet acknowledged), and their bytes.
    #[must_use]
    pub fn queued_for_client(&self) -> (usize, usize) {
        let state = self.shared.lock();
        (state.outbound.len(), state.outbound.queued_bytes())
    }

    fn closed_error(&self, why: Closed) -> TransportError {
        let config = &self.shared.config;
        TransportError::LongPoll(match why {
            Closed::Expired => LongPollError::Expired {
                idle: config.idle_timeout,
            },
            Closed::Backpressure { queued, bytes } => LongPollError::Backpressure {
                queued,
                bytes,
                max_messages: config.outbound_messages,
                max_bytes: config.outbound_bytes,
            },
            Closed::ByServer | Closed::ByClient | Closed::Handshake => LongPollError::Closed,
        })
    }
}

impl Drop for LongPollSession {
    fn drop(&mut self) {
        self.shared.close(Closed::ByServer);
    }
}

impl Stream for LongPollSession {
    type Item = Result<Bytes, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let mut state = this.shared.lock();
        if state.stream_done {
            return Poll::Ready(None);
        }
        if let Some(message) = state.inbound.pop_front() {
            state.inbound_bytes = state.inbound_bytes.saturating_sub(message.len());
            if state.inbound.is_empty() {
                // An idle session holds no buffer.
                state.inbound = VecDeque::new();
            }
            let max = state.max_message_length;
            if message.len() > max {
                state.stream_done = true;
            }
            drop(state);
            this.shared.room.notify_waiters();
            if message.len() > max {
                return Poll::Ready(Some(Err(TransportError::TooLarge {
                    len: message.len() as u64,
                    max,
                })));
            }
            return Poll::Ready(Some(Ok(message)));
        }
        match state.phase {
            Phase::Closed(why) => {
                state.stream_done = true;
                drop(state);
                Poll::Ready(match why {
                    Closed::Expired | Closed::Backpressure { .. } => {
                        Some(Err(this.closed_error(why)))
                    }
                    Closed::ByServer | Closed::ByClient | Closed::Handshake => None,
                })
            }
            Phase::Handshake(_) | Phase::Open => {
                state.stream_waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Sink<Bytes> for LongPollSession {
    type Error = TransportError;

    fn poll_ready(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let why = match self.shared.lock().phase {
            Phase::Closed(why) => why,
            Phase::Handshake(_) | Phase::Open => return Poll::Ready(Ok(())),
        };
        Poll::Ready(Err(self.closed_error(why)))
    }

    /// Queues `message` for the client (the first one answers the
    /// handshake); refuses one over the maximum, and one that does not
    /// fit the queue, which ends the session.
    fn start_send(self: Pin<&mut Self>, message: Bytes) -> Result<(), TransportError> {
        let this = self.get_mut();
        let mut state = this.shared.lock();
        if let Phase::Closed(why) = state.phase {
            drop(state);
            return Err(this.closed_error(why));
        }
        let max = state.max_message_length;
        if message.len() > max {
            return Err(TransportError::TooLarge {
                len: message.len() as u64,
                max,
            });
        }
        if let Phase::Handshake(reply) = &mut state.phase {
            let reply = reply.take();
            state.phase = Phase::Open;
            drop(state);
            if reply.and_then(|reply| reply.send(message).ok()).is_none() {
                // The handshake request is gone (the client left, or it
                // timed out): so is the session.
                this.shared.close(Closed::Handshake);
                return Err(TransportError::LongPoll(LongPollError::Closed));
            }
            return Ok(());
        }
        if let Err(full) = state.outbound.push(message) {
            let why = Closed::Backpressure {
                queued: full.queued,
                bytes: full.bytes,
            };
            drop(state);
            this.shared.close(why);
            return Err(this.closed_error(why));
        }
        drop(state);
        this.shared.to_client.notify_waiters();
        Ok(())
    }

    /// Ready at once: queued messages wait for the client's `/lp/recv`,
    /// which the sink cannot hurry.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Poll::Ready(Ok(()))
    }

    /// Closes the session: the client collects what was queued, then gets
    /// `410`.
    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        self.shared.close(Closed::ByServer);
        Poll::Ready(Ok(()))
    }
}

impl Transport for LongPollSession {
    /// Caps the `/lp/send` bodies read from now on (`413` beyond) and the
    /// messages sent, clamped to [`LONGPOLL_MAX_MESSAGE_LENGTH`].
    fn set_max_message_length(&mut self, max: usize) {
        self.shared.lock().max_message_length = max.min(LONGPOLL_MAX_MESSAGE_LENGTH);
    }

    fn max_message_length(&self) -> usize {
        self.shared.lock().max_message_length
    }
}
