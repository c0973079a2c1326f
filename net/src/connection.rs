use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use bijou_codec::Wire;
use bijou_proto::ephemeral::{EphemeralConfig, EphemeralSession};
use bijou_proto::handshake::{Authenticated, Responder};
use bijou_proto::message::{Audience, EphemeralMessage, Message, SignedEphemeral, Topic, Topics};
use bijou_proto::session::{
    Completed, Event, Operation, OperationError, OperationId, Outcome, Output, Session,
    SessionConfig, SignRequest, SignatureRefused, StartError, WrongSigner,
};
use bijou_proto::time::{Clock, Timestamp};
use bijou_proto::verify_budget::VerifyBudget;
use bijou_signing::{Identity, PeerId};
use bytes::Bytes;
use futures::{Sink, SinkExt, Stream, StreamExt};

use bijou_proto::session::Received;

use crate::budget_timer::BudgetTimer;
use crate::handshake::{self, ConnectConfig, ConnectError};
use crate::transport::{Transport, TransportError};
use crate::SendError;

/// How long one poll of a connection verifies before it yields.
pub const YIELD_AFTER: Duration = Duration::from_micros(500);

/// An authenticated peer connection: bijou-proto's sans-IO
/// [`Session`] plus a [`Transport`] (a framed byte stream, a WebSocket).
///
/// ```text
///   Connection::connect / accept  ── handshake (256-byte limit, timeout) ──► Connection
///
///   send(impl Into<Message>), Sink<Message>  ── Session::on_send ──► written in place ──► transport
///   send_bytes / feed_bytes (Bytes)          ── Session::on_send_encoded ──────────────► transport
///   subscribe / unsubscribe / publish        ── recorded in the session, then sent
///
///   transport ──► Session::handle_message(bytes, now)
///                 Session::poll_work(now)  one bounded step (<= 32 items, verify_batch), then
///                                          yield if this poll has run for 0.5 ms; the budget's
///                                          waits are a timer held here (tokio's inside a
///                                          runtime, a sleeping thread on other executors)
///   Stream ◄── Session::poll_event()  Some(Ok(Received { bytes, result }))
///          ◄── Some(Err(TransportError))   the transport failed: the stream ends
///          ◄── None                        the peer closed
///
///   transport ◄── Session::poll_transmit()  the protocol's own answers (a SubscribeRejected),
///                                           written before anything of the caller's, and
///                                           written and flushed by the receive loop too
/// ```
///
/// Each received item keeps the exact message bytes, so a relay or an echo
/// server can forward what it received byte for byte after verifying it.
///
/// **Never stalls its executor.** Verification runs in steps of at most
/// [`Session::verify_step`] items; after each step the connection checks
/// how long this poll has run and yields (`Pending`, woken again as
/// `tokio::task::yield_now` wakes, after the runtime has polled its I/O
/// driver) once one more step as long as the last would take it past
/// [`YIELD_AFTER`]: steps are sized by time, not only by count. No poll
/// runs past that by more than a step's misprediction, apart from the
/// poll that decodes a large message. The time counts from when the
/// receive loop last waited, not from each poll: a caller that takes
/// message after message from a full buffer (a server's loop over a
/// flood) yields after [`YIELD_AFTER`] all the same, before verifying the
/// next one.
///
/// **Nothing is lost on cancellation.** A message being verified, and a
/// verified one not yet handed out, live in the session, not in a future:
/// a cancelled `next` or [`recv`](Connection::recv) loses nothing. When the
/// peer disconnects, every message the transport had already received is
/// still delivered before the end.
///
/// **Split halves share the session.** [`Connection::split`] gives a
/// sending and a receiving half over one shared connection, so ephemeral
/// subscriptions made on either half (or sent as a `Subscribe` through the
/// sink) hold for the messages the other receives.
///
/// ```
/// use bijou_frame::net::handshake::ConnectConfig;
/// use bijou_frame::proto::handshake::HandshakeConfig;
/// use bijou_frame::proto::message::*;
/// use bijou_frame::framing::prefix::Bijou64;
/// use bijou_frame::net::transport::FramedTransport;
/// use bijou_frame::net::Connection;
/// use bijou_frame::proto::handshake::Responder;
/// use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Identity};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let alice = SigningKey::from_bytes(&[1; 32]);
/// let bob = SigningKey::from_bytes(&[2; 32]);
/// let (a, b) = tokio::io::duplex(64 * 1024);
/// let responder = Responder::new(HandshakeConfig::default());
/// let bob_id = bob.peer_id();
/// let server = tokio::spawn(async move {
///     Connection::accept(FramedTransport::new(b, Bijou64), &bob, &responder, &ConnectConfig::default()).await
/// });
/// let a = FramedTransport::new(a, Bijou64);
/// let mut client =
///     Connection::connect(a, &alice, Audience::Known(bob_id), &ConnectConfig::default()).await?;
/// let mut server = server.await??;
/// assert_eq!(server.remote_peer(), alice.peer_id());
///
/// let tree = SedimentreeId::new([9; 32]);
/// let msg = SyncMessage::loose_commit(&alice, tree, CommitId::new([3; 32]), [], Blob::from_static(b"hello"))?;
/// client.send(msg.clone()).await?;
///
/// let received = server.recv().await?.expect("one message");
/// let verified = received.result?.into_sync().expect("a sync message");
/// assert_eq!(verified.message, msg);
/// assert_eq!(verified.items.len(), 1);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Connection<T> {
    transport: T,
    session: Session,
    /// The authenticated peer.
    remote: PeerId,
    clock: Clock,
    ended: bool,
    /// The session's own messages were written and not flushed yet.
    transmits_unflushed: bool,
    /// The timers and the messages held for `recv`, made when first
    /// needed and freed once idle: an idle connection holds a pointer.
    waits: Option<Box<Waits>>,
    /// When the receive loop last started running without giving the
    /// thread back: a caller that takes message after message without
    /// waiting (a server's loop over a flood) still yields after
    /// [`YIELD_AFTER`], counted across its polls.
    running_since: Option<Instant>,
}

/// The shell's waits and what the session handed out that the shell
/// still holds: made when first needed, freed once idle.
#[derive(Debug, Default)]
struct Waits {
    /// Messages the session sent ([`Output::Transmit`]) that the
    /// transport has not taken yet, oldest first: written before anything
    /// else, and nothing is read while one waits (so they stay as few as
    /// one received message can cause).
    unsent: VecDeque<Bytes>,
    /// Sign requests ([`Output::Sign`]) waiting for `finish`'s signer.
    asked: VecDeque<SignRequest>,
    /// Operations that ended ([`Event::Completed`]), until `finish`
    /// takes them.
    completed: Vec<Completed>,
    /// Messages received while [`Connection::finish`] waited, for
    /// [`Connection::recv`] (at most [`HELD_MESSAGES`] and about
    /// [`HELD_BYTES`]).
    held: VecDeque<Received>,
    held_bytes: usize,
    /// The timer for when the session must be polled again (an operation's
    /// deadline, the verification budget), and that instant.
    timer: Option<(Timestamp, BudgetTimer)>,
}

/// How many received messages [`Connection::finish`] keeps for
/// [`Connection::recv`] while it waits; past this it reads nothing more
/// until the operation ends (its deadline still ends it).
pub const HELD_MESSAGES: usize = 256;

/// How many bytes of received messages [`Connection::finish`] keeps for
/// [`Connection::recv`] while it waits (the last message may pass it).
pub const HELD_BYTES: usize = 4 << 20;

/// Why [`Connection::run`] or [`Connection::finish`] returned no outcome.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The operation could not start; nothing was sent.
    #[error(transparent)]
    Start(#[from] StartError),
    /// It ended without its outcome: timed out, refused, or a keyhive
    /// failure.
    #[error("{id}: {error}")]
    Operation {
        /// Which.
        id: OperationId,
        /// Why.
        #[source]
        error: OperationError,
    },
    /// The signer given is not the connection's key.
    #[error(transparent)]
    WrongSigner(#[from] WrongSigner),
    /// The signer could not sign what the operation needs signed (a
    /// keyhive registration's message), or signed it wrongly; nothing was
    /// sent, and the request stays open: `finish` again with a working
    /// signer carries on, or the operation's deadline ends it.
    #[error(transparent)]
    Signer(SignatureRefused),
    /// No such operation is running or waiting to be taken (it never
    /// started here, or its end was already taken).
    #[error("{0} is not running here: it never started on this connection, or its end was already returned (finish each operation once)")]
    Unknown(OperationId),
    /// The peer closed the connection first.
    #[error("the peer closed the connection while {id} waited for {waiting_for}")]
    Closed {
        /// Which.
        id: OperationId,
        /// What it waited for.
        waiting_for: &'static str,
    },
    /// The transport failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// What one turn of the receive loop produced.
// A return value, never stored: as large as the `Received` it carries.
#[allow(clippy::large_enum_variant)]
enum Progress {
    Received(Received),
    /// An operation started or ended.
    Operations,
    /// An operation waits for `sign_with`; nothing is read meanwhile.
    NeedsSigner,
}

impl<T: Transport> Connection<T> {
    /// Opens a connection as the initiator: runs the handshake on
    /// `transport` with `signer`, addressed to `audience`
    /// ([`handshake::initiate`]). The connection reads `config.clock`.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: a dropped future drops the transport with it.
    ///
    /// # Errors
    ///
    /// [`ConnectError`].
    pub async fn connect<S: Identity + ?Sized>(
        mut transport: T,
        signer: &S,
        audience: Audience,
        config: &ConnectConfig,
    ) -> Result<Self, ConnectError> {
        let mut session = handshake::client_session(signer, audience, config);
        let remote =
            handshake::open(&mut transport, &mut session, signer, config, "response").await?;
        Ok(Self::with_session(
            transport,
            session,
            remote.peer(),
            config.clock.clone(),
        ))
    }

    /// Accepts a connection as the responder: answers the peer's challenge
    /// on `transport` with `signer` ([`handshake::respond`]), the
    /// protocol's checks `responder`'s, the timeout and the time
    /// `config`'s. The connection reads `config.clock`.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: a dropped future drops the transport with it.
    ///
    /// # Errors
    ///
    /// [`ConnectError`]; a refused challenge is
    /// [`HandshakeError::Refused`](bijou_proto::handshake::HandshakeError::Refused).
    pub async fn accept<S: Identity + ?Sized>(
        mut transport: T,
        signer: &S,
        responder: &Responder,
        config: &ConnectConfig,
    ) -> Result<Self, ConnectError> {
        let mut session = handshake::server_session(signer, responder, config);
        let remote =
            handshake::open(&mut transport, &mut session, signer, config, "challenge").await?;
        Ok(Self::with_session(
            transport,
            session,
            remote.peer(),
            config.clock.clone(),
        ))
    }

    /// A connection on a `transport` whose handshake already completed
    /// elsewhere (a handshake of the host's own, say, batched across
    /// connections): `local` is our peer id, `remote` the proof the
    /// handshake gave, `config` the session's settings (its seed
    /// included). Raise the transport's maximum message length first. The
    /// clock is the system's until [`Connection::with_clock`].
    /// [`connect`](Self::connect) and [`accept`](Self::accept) need none
    /// of this.
    pub fn established(
        transport: T,
        local: PeerId,
        remote: Authenticated,
        config: SessionConfig,
    ) -> Self {
        let session = Session::new(local, remote, config);
        Self::with_session(transport, session, remote.peer(), Clock::system())
    }

    /// A connection around `session`, whose handshake authenticated
    /// `remote`.
    fn with_session(transport: T, session: Session, remote: PeerId, clock: Clock) -> Self {
        Self {
            transport,
            remote,
            session,
            clock,
            ended: false,
            transmits_unflushed: false,
            waits: None,
            running_since: None,
        }
    }

    /// Reads `clock` from now on: ephemeral stamps and ages, and the
    /// verification budget.
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Our own peer id.
    #[must_use]
    pub fn local_peer(&self) -> PeerId {
        self.session.local_peer()
    }

    /// The authenticated remote peer.
    #[must_use]
    pub fn remote_peer(&self) -> PeerId {
        self.remote
    }

    /// What the handshake established (`None` only for a connection made
    /// from a session whose handshake had not completed).
    #[must_use]
    pub fn authenticated(&self) -> Option<&Authenticated> {
        self.session.authenticated()
    }

    /// Whether messages the session sends on its own (answers, an
    /// operation's messages) wait for the transport to take them; while
    /// one does, nothing more is read.
    #[must_use]
    pub fn has_unsent(&self) -> bool {
        self.session.has_transmit()
            || self
                .waits
                .as_ref()
                .is_some_and(|shell| !shell.unsent.is_empty())
    }

    /// The protocol state.
    #[must_use]
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The transport.
    #[must_use]
    pub fn get_ref(&self) -> &T {
        &self.transport
    }

    /// The transport, for example to change its maximum message length.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The transport. A message whose verification had not finished, or a
    /// verified one not yet received, is dropped.
    #[must_use]
    pub fn into_inner(self) -> T {
        self.transport
    }

    /// Receives the next message and verifies it: `Ok(None)` when the
    /// peer closed. The same as the [`Stream`] with `Option` and `Result`
    /// swapped.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the future is dropped (in `select!`, under a
    /// timeout), a message already taken off the transport is kept, and
    /// the next call returns it.
    ///
    /// # Errors
    ///
    /// [`TransportError`]: the transport cannot continue; drop the
    /// connection.
    pub async fn recv(&mut self) -> Result<Option<Received>, TransportError> {
        self.next().await.transpose()
    }

    /// Sends a message (a [`SyncMessage`](bijou_proto::message::SyncMessage), an
    /// [`EphemeralMessage`], a
    /// [`Message`], or a `&Message`, which is cloned), and flushes. A
    /// Subscribe or Unsubscribe is recorded in the session.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: if the future is dropped before it completes, the
    /// message may have been queued, partly written or not at all.
    ///
    /// # Errors
    ///
    /// [`SendError`]: a handshake message, too large, or the transport
    /// failed.
    pub async fn send(&mut self, message: impl Into<Message>) -> Result<(), SendError> {
        SinkExt::<Message>::send(self, message.into()).await
    }

    /// Queues a message without flushing (see [`Connection::flush`]).
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::send`].
    ///
    /// # Errors
    ///
    /// As [`Connection::send`].
    pub async fn feed(&mut self, message: impl Into<Message>) -> Result<(), SendError> {
        SinkExt::<Message>::feed(self, message.into()).await
    }

    /// Sends encoded message bytes as they are (a received message,
    /// forwarded untouched), and flushes.
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::send`].
    ///
    /// # Errors
    ///
    /// [`SendError`]: a handshake message, too large, or the transport
    /// failed.
    pub async fn send_bytes(&mut self, bytes: Bytes) -> Result<(), SendError> {
        self.feed_bytes(bytes).await?;
        self.flush().await
    }

    /// Queues encoded message bytes without flushing (see
    /// [`Connection::flush`]).
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::send`].
    ///
    /// # Errors
    ///
    /// As [`Connection::send_bytes`].
    pub async fn feed_bytes(&mut self, bytes: Bytes) -> Result<(), SendError> {
        futures::future::poll_fn(|cx| self.poll_ready_send(cx)).await?;
        self.start_send_bytes(bytes)
    }

    /// Flushes queued messages.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: what was queued stays queued.
    ///
    /// # Errors
    ///
    /// [`SendError::Transport`].
    pub async fn flush(&mut self) -> Result<(), SendError> {
        SinkExt::<Message>::flush(self).await
    }

    /// Flushes and closes the sending side; the peer's stream then ends.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: calling it again carries on.
    ///
    /// # Errors
    ///
    /// [`SendError::Transport`].
    pub async fn close(&mut self) -> Result<(), SendError> {
        SinkExt::<Message>::close(self).await
    }

    /// Closes gracefully: flushes and closes the sending side (on
    /// WebSocket, our close frame), then keeps reading until the peer ends
    /// its side too (its close frame, or the end of the stream), for at
    /// most `grace`. The peer thus gets to finish what it was sending (an
    /// acknowledgement, its close reply) instead of meeting a reset.
    /// Messages that arrive meanwhile are counted and dropped: read them
    /// with [`recv`](Self::recv) first if they matter.
    ///
    /// ```no_run
    /// # use bijou_frame::framing::prefix::Bijou64;
    /// # use bijou_frame::net::transport::FramedTransport;
    /// # use bijou_frame::net::{Connection, SendError};
    /// # async fn f(mut conn: Connection<FramedTransport<tokio::net::TcpStream, Bijou64>>) -> Result<(), SendError> {
    /// let closed = conn.shutdown(std::time::Duration::from_secs(2)).await?;
    /// if !closed.peer_closed {
    ///     eprintln!("the peer did not close within 2 s");
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: calling it again carries on.
    ///
    /// # Errors
    ///
    /// [`SendError::Transport`] if our side cannot be flushed or closed. A
    /// peer that fails while we wait for its close is not an error (the
    /// connection is over): `peer_closed` is then `false`.
    pub async fn shutdown(&mut self, grace: Duration) -> Result<Shutdown, SendError> {
        self.close().await?;
        let mut drained = 0u64;
        let read = async {
            loop {
                match self.recv().await {
                    Ok(Some(_)) => drained += 1,
                    Ok(None) => return true,
                    Err(_) => return false,
                }
            }
        };
        let peer_closed = tokio::time::timeout(grace, read).await.unwrap_or(false);
        Ok(Shutdown {
            drained,
            peer_closed,
        })
    }

    /// Replaces the verification budget ([`VerifyBudget::DEFAULT`] unless
    /// set): how many signatures this connection's peer may make us verify
    /// per second.
    pub fn set_verify_budget(&mut self, budget: VerifyBudget) {
        self.session.set_verify_budget(budget);
    }

    /// Sets the signed items verified per step (see
    /// [`Session::set_verify_step`]).
    pub fn set_verify_step(&mut self, items: usize) {
        self.session.set_verify_step(items);
    }

    /// The ephemeral state: our subscriptions, the peer's, the limits
    /// (`None` until the connection carried ephemeral messaging or its
    /// limits were set).
    #[must_use]
    pub fn ephemeral(&self) -> Option<&EphemeralSession> {
        self.session.ephemeral()
    }

    /// Replaces the ephemeral limits; subscriptions are kept, the
    /// deduplication window starts empty. Call it before receiving.
    pub fn set_ephemeral_config(&mut self, config: EphemeralConfig) {
        self.session.set_ephemeral_config(config);
    }

    /// Subscribes to `topics`: from now on, ephemeral messages for them
    /// are delivered, and the peer is asked to send them (a Subscribe).
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: the subscription is recorded when the Subscribe is
    /// queued; if the future is dropped before the flush completes, the
    /// peer may not have been told. Subscribe again to be sure.
    ///
    /// # Errors
    ///
    /// [`SendError`]: more than 65,535 topics, or the transport failed.
    pub async fn subscribe(&mut self, topics: Topics) -> Result<(), SendError> {
        self.send(EphemeralMessage::Subscribe(topics)).await
    }

    /// Unsubscribes from `topics`: their messages are refused from now on,
    /// and the peer is told.
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::subscribe`].
    ///
    /// # Errors
    ///
    /// As [`Connection::subscribe`].
    pub async fn unsubscribe(&mut self, topics: Topics) -> Result<(), SendError> {
        self.send(EphemeralMessage::Unsubscribe(topics)).await
    }

    /// Signs `payload` for `topic` as `signer`, stamped with the
    /// connection's clock and a random nonce, and sends it. Returns what was
    /// sent. Whether the peer subscribed is not checked (a relay forwards
    /// what it is sent); see [`EphemeralSession::remote_is_subscribed`].
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::send`].
    ///
    /// # Errors
    ///
    /// [`SendError::Publish`] (too large, the signer failed), or as
    /// [`Connection::send`].
    pub async fn publish<S: Identity + ?Sized>(
        &mut self,
        signer: &S,
        topic: Topic,
        payload: impl Into<Bytes>,
    ) -> Result<SignedEphemeral, SendError> {
        let sealed = self.seal(signer, topic, payload)?;
        self.send(EphemeralMessage::from(sealed.clone())).await?;
        Ok(sealed)
    }

    /// Starts `operation` on the session, to end within `timeout` (see
    /// [`Operation`]): returns
    /// its id at once. What it sends goes out with the next send, receive
    /// or [`finish`](Self::finish); its end waits for
    /// [`finish`](Self::finish). Start several, then finish each: a window
    /// of pushes in flight.
    ///
    /// # Errors
    ///
    /// [`StartError`]: nothing was sent.
    pub fn start(
        &mut self,
        operation: Operation,
        timeout: Duration,
    ) -> Result<OperationId, StartError> {
        let deadline = self.clock.monotonic().saturating_add(timeout);
        let id = self.session.start(operation, deadline)?;
        self.waits.get_or_insert_with(Box::default);
        Ok(id)
    }

    /// Waits for operation `id` to end and returns its outcome: the one
    /// way to await an operation. Meanwhile it sends what the session
    /// sends, signs with `signer` what a keyhive registration needs (the
    /// key that ran the handshake), and keeps every other message received
    /// for [`recv`](Self::recv), in order (at most [`HELD_MESSAGES`] and
    /// about [`HELD_BYTES`]; past that it reads nothing more, and the
    /// operation's deadline still ends it).
    ///
    /// ```no_run
    /// # use bijou_frame::proto::session::{Operation, Outcome};
    /// # use bijou_frame::proto::message::SedimentreeId;
    /// # use bijou_frame::signing::ed25519_dalek::SigningKey;
    /// # async fn f<T: bijou_frame::net::transport::Transport>(conn: &mut bijou_frame::net::Connection<T>, key: &SigningKey) -> Result<(), bijou_frame::net::RunError> {
    /// use std::time::Duration;
    /// let tree = SedimentreeId::new([9; 32]);
    /// let fetch = conn.start(Operation::Fetch(tree), Duration::from_secs(10))?;
    /// let Outcome::Fetched(verified) = conn.finish(fetch, key).await? else { unreachable!() };
    /// println!("{} commits", verified.items.len());
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the operation runs on in the session, what was
    /// received meanwhile stays held for `recv`, and calling `finish`
    /// again carries on.
    ///
    /// # Errors
    ///
    /// [`RunError::Operation`] when it ended without its outcome (timed
    /// out, refused), [`RunError::WrongSigner`], [`RunError::Unknown`],
    /// [`RunError::Closed`], [`RunError::Transport`].
    pub async fn finish<S: Identity + ?Sized>(
        &mut self,
        id: OperationId,
        signer: &S,
    ) -> Result<Outcome, RunError> {
        futures::future::poll_fn(|cx| self.poll_finish(cx, id, signer)).await
    }

    /// [`start`](Self::start), then [`finish`](Self::finish).
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::finish`], once started.
    ///
    /// # Errors
    ///
    /// As [`Connection::start`] and [`Connection::finish`].
    pub async fn run<S: Identity + ?Sized>(
        &mut self,
        signer: &S,
        operation: Operation,
        timeout: Duration,
    ) -> Result<Outcome, RunError> {
        let id = self.start(operation, timeout)?;
        self.finish(id, signer).await
    }

    /// Takes the messages [`finish`](Self::finish) kept while it waited,
    /// oldest first, without waiting for more ([`recv`](Self::recv)
    /// returns them too, before anything newer).
    pub fn drain_held(&mut self) -> std::collections::vec_deque::IntoIter<Received> {
        let held = match self.waits.as_mut() {
            Some(shell) => {
                shell.held_bytes = 0;
                std::mem::take(&mut shell.held)
            }
            None => VecDeque::new(),
        };
        self.tidy();
        held.into_iter()
    }

    fn poll_finish<S: Identity + ?Sized>(
        &mut self,
        cx: &mut Context<'_>,
        id: OperationId,
        signer: &S,
    ) -> Poll<Result<Outcome, RunError>> {
        loop {
            self.sign_asked(signer)?;
            // Ended and polled out already, or ended in the session
            // behind another end this loop took (one acknowledgement ends
            // every push before it).
            let done = self
                .take_completed(id)
                .or_else(|| self.session.completed(id));
            if let Some(done) = done {
                self.tidy();
                return Poll::Ready(
                    done.result
                        .map_err(|error| RunError::Operation { id, error }),
                );
            }
            let Some(waiting_for) = self.session.waiting_for(id) else {
                return Poll::Ready(Err(RunError::Unknown(id)));
            };
            let shell = self.waits.get_or_insert_with(Box::default);
            // Past the held bound, read nothing more: write what the
            // session sends, and let the deadline end the operation.
            let read = shell.held.len() < HELD_MESSAGES && shell.held_bytes < HELD_BYTES;
            match ready!(self.poll_progress(cx, read)) {
                Some(Ok(Progress::Received(received))) => {
                    let shell = self.waits.get_or_insert_with(Box::default);
                    shell.held_bytes += received.bytes.len();
                    shell.held.push_back(received);
                }
                Some(Ok(Progress::Operations | Progress::NeedsSigner)) => {}
                Some(Err(e)) => return Poll::Ready(Err(e.into())),
                None => return Poll::Ready(Err(RunError::Closed { id, waiting_for })),
            }
        }
    }

    /// Signs what the session asked ([`Output::Sign`]) with `signer`, the
    /// key that ran the handshake.
    fn sign_asked<S: Identity + ?Sized>(&mut self, signer: &S) -> Result<(), RunError> {
        let Some(shell) = self.waits.as_mut() else {
            return Ok(());
        };
        if shell.asked.is_empty() {
            return Ok(());
        }
        let local = self.session.local_peer();
        if signer.peer_id() != local {
            return Err(RunError::WrongSigner(WrongSigner {
                signer: signer.peer_id(),
                local,
            }));
        }
        while let Some(request) = shell.asked.pop_front() {
            match self.session.sign_with(&request, signer) {
                // Answered, or no longer asked for (its operation ended).
                Ok(()) | Err(SignatureRefused::Unknown { .. }) => {}
                Err(refused) => {
                    // Still open: the next `finish` signs it again.
                    shell.asked.push_front(request);
                    return Err(RunError::Signer(refused));
                }
            }
        }
        Ok(())
    }

    /// The end of operation `id`, if it ended and was not taken yet.
    fn take_completed(&mut self, id: OperationId) -> Option<Completed> {
        let shell = self.waits.as_mut()?;
        let at = shell.completed.iter().position(|done| done.id == id)?;
        Some(shell.completed.swap_remove(at))
    }

    /// Waits for the instant the session asked to be polled again at
    /// (`until` of its last [`Output::Wait`]).
    fn poll_timer(&mut self, cx: &mut Context<'_>, until: Option<Timestamp>) -> Poll<()> {
        let Some(at) = until else {
            if let Some(shell) = self.waits.as_mut() {
                shell.timer = None;
            }
            return Poll::Pending;
        };
        let clock = &self.clock;
        let shell = self.waits.get_or_insert_with(Box::default);
        let timer = match &mut shell.timer {
            Some((armed, timer)) if *armed == at => timer,
            slot => {
                let wait = at.saturating_duration_since(clock.monotonic());
                &mut slot.insert((at, BudgetTimer::after(wait))).1
            }
        };
        ready!(timer.poll(cx));
        shell.timer = None;
        Poll::Ready(())
    }

    /// Splits into a sending and a receiving half for two tasks, sharing
    /// the connection (and so its session); [`ConnectionSender::reunite`]
    /// puts them back together. The halves take turns on one lock, held
    /// for one poll at a time (a receiving poll verifies for at most
    /// [`YIELD_AFTER`] plus one step), never across an `.await`.
    #[must_use]
    pub fn split(self) -> (ConnectionSender<T>, ConnectionReceiver<T>) {
        let shared = Arc::new(Mutex::new(self));
        (
            ConnectionSender {
                shared: shared.clone(),
            },
            ConnectionReceiver { shared },
        )
    }

    /// The message [`Connection::publish`] sends: signed, stamped with the
    /// connection's clock.
    fn seal<S: Identity + ?Sized>(
        &mut self,
        signer: &S,
        topic: Topic,
        payload: impl Into<Bytes>,
    ) -> Result<SignedEphemeral, SendError> {
        Ok(self
            .session
            .sign_ephemeral(signer, topic, payload, self.clock.now())?)
    }

    /// Ready for a message of the caller's once the session's own
    /// messages are written before it.
    fn poll_ready_send(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        ready!(self.poll_write_transmits(cx))?;
        Pin::new(&mut self.transport)
            .poll_ready(cx)
            .map_err(SendError::Transport)
    }

    /// Writes what the session sends on its own into the transport, each
    /// message once the transport is ready for it: the one the receive
    /// loop polled out first, then those still queued (written in place).
    fn poll_write_transmits(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        while let Some(shell) = self.waits.as_mut().filter(|s| !s.unsent.is_empty()) {
            ready!(Pin::new(&mut self.transport).poll_ready(cx)).map_err(SendError::Transport)?;
            if let Some(bytes) = shell.unsent.pop_front() {
                Pin::new(&mut self.transport)
                    .start_send(bytes)
                    .map_err(SendError::Transport)?;
                self.transmits_unflushed = true;
            }
        }
        while self.session.has_transmit() {
            ready!(Pin::new(&mut self.transport).poll_ready(cx)).map_err(SendError::Transport)?;
            if let Some(message) = self.session.poll_transmit() {
                self.write_in_place(&message)?;
                self.transmits_unflushed = true;
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Writes and flushes what the session sends on its own, for a
    /// connection that may only be receiving: its answers must still reach
    /// the peer. Until they are out, nothing more is read, so a peer that
    /// does not read stalls only itself.
    fn poll_send_transmits(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        ready!(self.poll_write_transmits(cx)).map_err(transport_error)?;
        if self.transmits_unflushed {
            ready!(Pin::new(&mut self.transport).poll_flush(cx))?;
            self.transmits_unflushed = false;
        }
        Poll::Ready(Ok(()))
    }

    fn start_send_bytes(&mut self, bytes: Bytes) -> Result<(), SendError> {
        self.session.on_send_encoded(&bytes)?;
        Pin::new(&mut self.transport)
            .start_send(bytes)
            .map_err(SendError::Transport)
    }

    /// Checks `message` against the session's rules and writes it into the
    /// transport (in place where it can).
    fn start_send_message(&mut self, message: &Message) -> Result<(), SendError> {
        self.session.on_send(message)?;
        self.write_in_place(message)
    }

    /// Writes `message` into the transport in place (its length first, so
    /// a count that does not fit is [`SendError::Encode`] and nothing is
    /// written).
    fn write_in_place(&mut self, message: &Message) -> Result<(), SendError> {
        let len = message.wire_len()?;
        self.transport
            .start_send_in_place(message, len)
            .map_err(SendError::Transport)
    }

    /// The receive stream: the messages `finish` held first, then the
    /// receive loop's.
    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Received, TransportError>>> {
        if let Some(shell) = self.waits.as_mut() {
            if let Some(received) = shell.held.pop_front() {
                shell.held_bytes = shell.held_bytes.saturating_sub(received.bytes.len());
                if shell.held.is_empty() {
                    shell.held = VecDeque::new();
                    self.tidy();
                }
                return Poll::Ready(Some(Ok(received)));
            }
        }
        loop {
            return match ready!(self.poll_progress(cx, true)) {
                Some(Ok(Progress::Received(received))) => {
                    self.tidy();
                    Poll::Ready(Some(Ok(received)))
                }
                // Only `finish` has the signer: the session reads nothing
                // meanwhile, and the operation's deadline (the timer the
                // next turn arms) ends the wait.
                Some(Ok(Progress::Operations | Progress::NeedsSigner)) => continue,
                Some(Err(e)) => Poll::Ready(Some(Err(e))),
                None => Poll::Ready(None),
            };
        }
    }

    /// Frees the shell's box once it holds nothing: nothing unsent, asked
    /// or ended, no held message, no operation running, no wait needed.
    fn tidy(&mut self) {
        let idle = self.waits.as_ref().is_some_and(|shell| {
            shell.unsent.is_empty()
                && shell.asked.is_empty()
                && shell.completed.is_empty()
                && shell.held.is_empty()
                && self.session.operations_in_flight() == 0
                && !self.session.has_work()
        });
        if idle {
            self.waits = None;
        }
    }

    /// The receive loop; see [`Connection`]. Its run is timed from the
    /// first poll after it last returned `Pending` (waiting, or yielding):
    /// what a poll hands out does not restart the clock. A caller that
    /// waited elsewhere meanwhile (on a send) finds the clock run down and
    /// yields once more than it needed to: a yield, never a stall. With
    /// `read` false it takes nothing from the transport.
    fn poll_progress(
        &mut self,
        cx: &mut Context<'_>,
        read: bool,
    ) -> Poll<Option<Result<Progress, TransportError>>> {
        let started = *self.running_since.get_or_insert_with(Instant::now);
        let polled = self.poll_progress_since(cx, started, read);
        if polled.is_pending() {
            self.running_since = None;
        }
        polled
    }

    /// One loop over [`Session::poll`]: what it sends is written, what it
    /// asks to sign waits for `finish`, its events are handed out, and the
    /// transport is read only when the session says it takes a message.
    fn poll_progress_since(
        &mut self,
        cx: &mut Context<'_>,
        started: Instant,
        read: bool,
    ) -> Poll<Option<Result<Progress, TransportError>>> {
        loop {
            if self
                .waits
                .as_ref()
                .is_some_and(|shell| !shell.unsent.is_empty())
                || self.transmits_unflushed
            {
                // Out now if the transport takes it, so the answer does not
                // wait for the next poll; if not, the wait comes before the
                // next read (below).
                if let Poll::Ready(Err(e)) = self.poll_send_transmits(cx) {
                    self.ended = true;
                    return Poll::Ready(Some(Err(e)));
                }
            }
            let step_started = Instant::now();
            let until = match self.session.poll(self.clock.now()) {
                Output::Transmit(bytes) => {
                    // Written at the top of the next turn if the transport
                    // takes it; the events behind it are handed out either
                    // way, and nothing is read until it is out.
                    self.waits
                        .get_or_insert_with(Box::default)
                        .unsent
                        .push_back(bytes);
                    continue;
                }
                Output::Sign(request) => {
                    // A registration or a publish waits for `finish`'s
                    // signer; the receive stream waits for the deadline.
                    self.waits
                        .get_or_insert_with(Box::default)
                        .asked
                        .push_back(request);
                    return Poll::Ready(Some(Ok(Progress::NeedsSigner)));
                }
                Output::Event(Event::Received(received)) => {
                    return Poll::Ready(Some(Ok(Progress::Received(received))));
                }
                Output::Event(Event::Completed(done)) => {
                    self.waits
                        .get_or_insert_with(Box::default)
                        .completed
                        .push(done);
                    return Poll::Ready(Some(Ok(Progress::Operations)));
                }
                Output::Event(Event::Closed(_)) => {
                    self.ended = true;
                    return Poll::Ready(None);
                }
                Output::Event(_) => continue,
                Output::Continue => {
                    // Steps are sized by time, not only by count: if one
                    // more like this one would take the poll past
                    // YIELD_AFTER, yield before it, not after.
                    let step = step_started.elapsed();
                    if started.elapsed() + step >= YIELD_AFTER {
                        return yield_to_runtime(cx);
                    }
                    continue;
                }
                Output::Wait {
                    read: session_reads,
                    until,
                } => {
                    if !(session_reads && read) {
                        if let Err(e) = ready!(self.poll_send_transmits(cx)) {
                            self.ended = true;
                            return Poll::Ready(Some(Err(e)));
                        }
                        ready!(self.poll_timer(cx, until));
                        continue;
                    }
                    until
                }
            };
            if let Err(e) = ready!(self.poll_send_transmits(cx)) {
                self.ended = true;
                return Poll::Ready(Some(Err(e)));
            }
            if self.poll_timer(cx, until).is_ready() {
                continue;
            }
            if self.ended {
                return Poll::Ready(None);
            }
            let bytes = match ready!(self.transport.poll_next_unpin(cx)) {
                Some(Ok(bytes)) => bytes,
                Some(Err(e)) => {
                    self.ended = true;
                    return Poll::Ready(Some(Err(e)));
                }
                None => {
                    self.ended = true;
                    return Poll::Ready(None);
                }
            };
            // The session said it takes a message. Were that ever wrong,
            // the message is not dropped in silence: the stream ends with
            // the session's refusal.
            if let Err(busy) = self.session.handle_message(bytes, self.clock.now()) {
                self.ended = true;
                return Poll::Ready(Some(Err(TransportError::Other(Box::new(busy)))));
            }
            if started.elapsed() >= YIELD_AFTER {
                return yield_to_runtime(cx);
            }
        }
    }
}

/// A failure to send one of the session's own messages, as the receive
/// stream reports it: the transport's own error where it is one.
fn transport_error(err: SendError) -> TransportError {
    match err {
        SendError::Transport(e) => e,
        other => TransportError::Other(Box::new(other)),
    }
}

/// Gives the thread back and asks to be polled again, the way
/// `tokio::task::yield_now` does: on a tokio runtime the wake-up is
/// deferred until the runtime has polled its I/O driver, so other
/// connections' readiness is seen between two steps of a long
/// verification (a plain `wake_by_ref` reschedules at once, and a worker
/// busy with self-waking tasks polls the driver only every 61 tasks:
/// tens of milliseconds here). Elsewhere it is `wake_by_ref`.
fn yield_to_runtime<R>(cx: &mut Context<'_>) -> Poll<R> {
    let yielded = std::pin::pin!(tokio::task::yield_now());
    if yielded.poll(cx).is_ready() {
        cx.waker().wake_by_ref();
    }
    Poll::Pending
}

impl<T: Transport> Stream for Connection<T> {
    type Item = Result<Received, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_receive(cx)
    }
}

/// The sink methods both item types share: readiness, flush and close are
/// the transport's.
macro_rules! connection_sink {
    ($(@$lt:lifetime)? $item:ty, |$this:ident, $msg:ident| $send:expr) => {
        impl<$($lt,)? T: Transport> Sink<$item> for Connection<T> {
            type Error = SendError;

            fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
                self.get_mut().poll_ready_send(cx)
            }

            fn start_send(self: Pin<&mut Self>, $msg: $item) -> Result<(), SendError> {
                let $this = self.get_mut();
                $send
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
                let this = self.get_mut();
                ready!(this.poll_write_transmits(cx))?;
                ready!(Pin::new(&mut this.transport).poll_flush(cx)).map_err(SendError::Transport)?;
                this.transmits_unflushed = false;
                Poll::Ready(Ok(()))
            }

            fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
                let this = self.get_mut();
                ready!(this.poll_write_transmits(cx))?;
                Pin::new(&mut this.transport)
                    .poll_close(cx)
                    .map_err(SendError::Transport)
            }
        }
    };
}

connection_sink!(Message, |this, msg| this.start_send_message(&msg));
connection_sink!(@'a &'a Message, |this, msg| this.start_send_message(msg));

type Shared<T> = Arc<Mutex<Connection<T>>>;

/// Locks the shared connection. A poisoned lock only means another task
/// panicked while holding it; the connection's state is consistent between
/// statements, so carry on.
fn lock<T>(shared: &Shared<T>) -> MutexGuard<'_, Connection<T>> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The sending half of a [`Connection`]: a [`Sink`] of [`Message`]s, plus
/// the connection's send methods (ephemeral ones included), over the
/// connection it shares with its [`ConnectionReceiver`].
#[derive(Debug)]
pub struct ConnectionSender<T> {
    shared: Shared<T>,
}

impl<T: Transport> ConnectionSender<T> {
    /// Our own peer id.
    #[must_use]
    pub fn local_peer(&self) -> PeerId {
        lock(&self.shared).local_peer()
    }

    /// The authenticated remote peer.
    #[must_use]
    pub fn remote_peer(&self) -> PeerId {
        lock(&self.shared).remote_peer()
    }

    /// Reads the ephemeral state (shared with the receiving half; `None` as
    /// in [`Connection::ephemeral`]).
    pub fn with_ephemeral<R>(&self, f: impl FnOnce(Option<&EphemeralSession>) -> R) -> R {
        f(lock(&self.shared).ephemeral())
    }

    /// See [`Connection::send`].
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::send`].
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn send(&mut self, message: impl Into<Message>) -> Result<(), SendError> {
        SinkExt::<Message>::send(self, message.into()).await
    }

    /// See [`Connection::send_bytes`].
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::send`].
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn send_bytes(&mut self, bytes: Bytes) -> Result<(), SendError> {
        self.feed_bytes(bytes).await?;
        self.flush().await
    }

    /// See [`Connection::feed_bytes`].
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::send`].
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn feed_bytes(&mut self, bytes: Bytes) -> Result<(), SendError> {
        futures::future::poll_fn(|cx| lock(&self.shared).poll_ready_send(cx)).await?;
        lock(&self.shared).start_send_bytes(bytes)
    }

    /// See [`Connection::flush`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn flush(&mut self) -> Result<(), SendError> {
        SinkExt::<Message>::flush(self).await
    }

    /// See [`Connection::close`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn close(&mut self) -> Result<(), SendError> {
        SinkExt::<Message>::close(self).await
    }

    /// See [`Connection::subscribe`]; recorded in the shared session.
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::subscribe`].
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn subscribe(&mut self, topics: Topics) -> Result<(), SendError> {
        self.send(EphemeralMessage::Subscribe(topics)).await
    }

    /// See [`Connection::unsubscribe`].
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::subscribe`].
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn unsubscribe(&mut self, topics: Topics) -> Result<(), SendError> {
        self.send(EphemeralMessage::Unsubscribe(topics)).await
    }

    /// See [`Connection::publish`].
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::send`].
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn publish<S: Identity + ?Sized>(
        &mut self,
        signer: &S,
        topic: Topic,
        payload: impl Into<Bytes>,
    ) -> Result<SignedEphemeral, SendError> {
        let sealed = lock(&self.shared).seal(signer, topic, payload)?;
        self.send(EphemeralMessage::from(sealed.clone())).await?;
        Ok(sealed)
    }

    /// Puts the two halves of one connection back together.
    ///
    /// # Errors
    ///
    /// [`ReuniteError`], holding both halves, if they are not of the same
    /// connection.
    pub fn reunite(
        self,
        receiver: ConnectionReceiver<T>,
    ) -> Result<Connection<T>, Box<ReuniteError<T>>> {
        if !Arc::ptr_eq(&self.shared, &receiver.shared) {
            return Err(Box::new(ReuniteError(self, receiver)));
        }
        drop(receiver);
        match Arc::try_unwrap(self.shared) {
            Ok(mutex) => Ok(mutex.into_inner().unwrap_or_else(PoisonError::into_inner)),
            // Both halves were given and are the only owners.
            Err(shared) => Err(Box::new(ReuniteError(
                ConnectionSender {
                    shared: shared.clone(),
                },
                ConnectionReceiver { shared },
            ))),
        }
    }
}

impl<T: Transport> Sink<Message> for ConnectionSender<T> {
    type Error = SendError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        lock(&self.shared).poll_ready_send(cx)
    }

    fn start_send(self: Pin<&mut Self>, msg: Message) -> Result<(), SendError> {
        lock(&self.shared).start_send_message(&msg)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        let mut conn = lock(&self.shared);
        Sink::<Message>::poll_flush(Pin::new(&mut *conn), cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        let mut conn = lock(&self.shared);
        Sink::<Message>::poll_close(Pin::new(&mut *conn), cx)
    }
}

/// The receiving half of a [`Connection`]: the same [`Stream`], over the
/// connection it shares with its [`ConnectionSender`].
#[derive(Debug)]
pub struct ConnectionReceiver<T> {
    shared: Shared<T>,
}

impl<T: Transport> ConnectionReceiver<T> {
    /// The authenticated remote peer.
    #[must_use]
    pub fn remote_peer(&self) -> PeerId {
        lock(&self.shared).remote_peer()
    }

    /// Reads the ephemeral state (shared with the sending half; `None` as
    /// in [`Connection::ephemeral`]).
    pub fn with_ephemeral<R>(&self, f: impl FnOnce(Option<&EphemeralSession>) -> R) -> R {
        f(lock(&self.shared).ephemeral())
    }

    /// See [`Connection::recv`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Connection::recv`].
    ///
    /// # Errors
    ///
    /// [`TransportError`]: drop the connection.
    pub async fn recv(&mut self) -> Result<Option<Received>, TransportError> {
        self.next().await.transpose()
    }
}

impl<T: Transport> Stream for ConnectionReceiver<T> {
    type Item = Result<Received, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        lock(&self.shared).poll_receive(cx)
    }
}

/// Two halves that are not of the same connection, given back.
#[derive(Debug)]
pub struct ReuniteError<T>(pub ConnectionSender<T>, pub ConnectionReceiver<T>);

impl<T> std::fmt::Display for ReuniteError<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("tried to reunite the halves of two different connections")
    }
}

impl<T: std::fmt::Debug> std::error::Error for ReuniteError<T> {}

/// What [`Connection::shutdown`] saw after closing our side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Shutdown {
    /// Messages that arrived while waiting (dropped).
    pub drained: u64,
    /// Whether the peer ended its side within the grace period.
    pub peer_closed: bool,
}
