//! [`Connection`]: an authenticated peer connection over any
//! [`Transport`]: a framed byte stream (TCP, pipes, QUIC streams) or a
//! WebSocket.
//!
//! ```text
//!   Connection::connect / accept  ── handshake (256-byte limit) ──► Connection
//!
//!   Sink<Message>, Sink<&Message>   ──encode──► message ──► transport
//!   send_bytes / feed_bytes (Bytes) ───────────► message ──► transport
//!                                    (forward received bytes untouched)
//!   handshake messages after the handshake: refused (SendError::HandshakeAfterHandshake)
//!
//!   subscribe / unsubscribe (Topics), publish (signer, topic, payload)  ── SUE\0 ──►
//!
//!   Stream ──► Some(Ok(Received { bytes, result }))
//!                 result = Ok(Delivered::Sync(VerifiedMessage))
//!                                                items: every signed item that passed
//!                                                verify_strict, the scope and the blob check;
//!                                                rejected: the BatchSyncResponse items that
//!                                                did not, by index and reason
//!                        = Ok(Delivered::Ephemeral(Verified<EphemeralPayload>))
//!                                                a topic we subscribed to, in time, fresh,
//!                                                verified (see crate::ephemeral)
//!                        = Ok(Delivered::Subscribed | Unsubscribed | SubscribeRejected)
//!                                                the peer's control messages, applied
//!                        = Err(Rejected)         malformed, a bad LooseCommit/Fragment, an
//!                                                ephemeral message that failed a check,
//!                                                a handshake message: reported, and the
//!                                                connection stays up
//!          ──► Some(Err(TransportError))         the transport failed: the stream ends
//!          ──► None                              the peer closed
//! ```
//!
//! Each received item keeps the exact message bytes, so a relay or an echo
//! server can forward what it received byte for byte after verifying it.
//! Verification is paced by a [`VerifyBudget`], and a message being
//! verified lives in the connection, not in a future: a cancelled `next`
//! or [`recv`](Connection::recv) loses nothing. When the peer disconnects,
//! every message the transport had already received is still delivered
//! before the end.
//!
//! ```
//! use bijou_framing::handshake::{HandshakeConfig, Responder};
//! use bijou_framing::message::*;
//! use bijou_framing::{prefix::Bijou64, transport::FramedTransport, Connection};
//! use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
//! use futures::{SinkExt, StreamExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let alice = SigningKey::from_bytes(&[1; 32]);
//! let bob = SigningKey::from_bytes(&[2; 32]);
//! let (a, b) = tokio::io::duplex(64 * 1024);
//! let responder = Responder::new(HandshakeConfig::default());
//! let bob_id = bob.peer_id();
//! let server = tokio::spawn(async move {
//!     Connection::accept(FramedTransport::new(b, Bijou64), &bob, &responder).await
//! });
//! let a = FramedTransport::new(a, Bijou64);
//! let mut client =
//!     Connection::connect(a, &alice, Audience::Known(bob_id), &HandshakeConfig::default()).await?;
//! let mut server = server.await??;
//! assert_eq!(server.remote_peer(), alice.peer_id());
//!
//! let tree = SedimentreeId::new([9; 32]);
//! let blob = Blob::from_static(b"hello");
//! let commit = LooseCommit::new(tree, CommitId::new([3; 32]), [], blob.meta());
//! let item = SignedItem::new(Signed::seal(&alice, &commit)?, blob);
//! let msg = SyncMessage::LooseCommit(BlobMessage { id: tree, sender_heads: RemoteHeads::default(), item });
//! client.send(&msg.clone().into()).await?;
//!
//! let received = server.next().await.expect("one message")?;
//! let verified = received.result?.into_sync().expect("a sync message");
//! assert_eq!(verified.message, msg);
//! assert_eq!(verified.items.len(), 1);
//! # Ok(())
//! # }
//! ```

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bijou_signing::{Identity, PeerId, Verified};
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{Sink, SinkExt, Stream, StreamExt};

use crate::ephemeral::{
    EphemeralConfig, EphemeralRejected, EphemeralSession, PublishError, SubscribeOutcome,
};
use crate::handshake::{self, Authenticated, HandshakeConfig, HandshakeError, Responder};
use crate::message::{
    Audience, EphemeralMessage, EphemeralPayload, HandshakeMessage, Message, MessageError,
    SignedEphemeral, SyncMessage, Topic, Topics, VerifiedItem, VerifyItemError, HANDSHAKE_SCHEMA,
};
use crate::transport::{Transport, TransportError};
use crate::verify_budget::Bucket;
use crate::{MessageFrame, SendError, VerifyBudget};

/// A received sync message and its signed items, verified.
#[derive(Debug, Clone)]
pub struct VerifiedMessage {
    /// The message as decoded. Its items are not all verified: use
    /// [`VerifiedMessage::items`].
    pub message: SyncMessage,
    /// The signed items that passed verification (`verify_strict`, scope,
    /// blob), in wire order; empty for messages without signed items.
    pub items: Vec<VerifiedItem>,
    /// The items of a `BatchSyncResponse` that failed, by index (wire order:
    /// the diff's commits, then its fragments) and reason. Always empty for
    /// a LooseCommit or Fragment message, which is rejected whole
    /// ([`Rejected::Verify`]).
    pub rejected: Vec<RejectedItem>,
}

/// A signed item of a `BatchSyncResponse` that failed verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("signed item {index} rejected: {error}")]
pub struct RejectedItem {
    /// Its position in the message ([`SyncMessage::verify_item`] order).
    pub index: usize,
    /// Why.
    #[source]
    pub error: VerifyItemError,
}

/// Why a received message was not accepted. It was consumed whole and the
/// connection stays up.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Rejected {
    /// The bytes do not hold a well-formed message.
    #[error("malformed message: {0}")]
    Malformed(#[source] MessageError),
    /// The signed item of a LooseCommit or Fragment message failed
    /// verification: bad signature ([`VerifyItemError::Signature`]), wrong
    /// document, or a blob that does not match its signed size and digest
    /// ([`VerifyItemError::Blob`]).
    #[error("signed item rejected: {0}")]
    Verify(#[source] VerifyItemError),
    /// A handshake message after the handshake completed.
    #[error("unexpected handshake message after the handshake")]
    UnexpectedHandshake(Box<HandshakeMessage>),
    /// An ephemeral message that failed a check: too large, stale or in
    /// the future, for a topic we did not subscribe to, a duplicate, or a
    /// bad signature (see [`ephemeral`](crate::ephemeral)).
    #[error("ephemeral message rejected: {0}")]
    Ephemeral(#[source] EphemeralRejected),
}

/// What an accepted message delivered.
#[derive(Debug, Clone)]
pub enum Delivered {
    /// A sync message and its verified items.
    Sync(VerifiedMessage),
    /// An ephemeral message for a topic we subscribed to: in time, not
    /// seen before, and verified.
    Ephemeral(Verified<EphemeralPayload>),
    /// The peer subscribed to topics (recorded, up to the cap; answer
    /// the `rejected` ones with a `SubscribeRejected`).
    Subscribed(SubscribeOutcome),
    /// The peer unsubscribed from topics (recorded).
    Unsubscribed(Topics),
    /// The peer refused some of our subscriptions.
    SubscribeRejected(Topics),
}

impl Delivered {
    /// The sync message, if this is one.
    #[must_use]
    pub fn into_sync(self) -> Option<VerifiedMessage> {
        match self {
            Self::Sync(verified) => Some(verified),
            _ => None,
        }
    }

    /// The sync message, if this is one.
    #[must_use]
    pub fn as_sync(&self) -> Option<&VerifiedMessage> {
        match self {
            Self::Sync(verified) => Some(verified),
            _ => None,
        }
    }

    /// The ephemeral message, if this is one.
    #[must_use]
    pub fn into_ephemeral(self) -> Option<Verified<EphemeralPayload>> {
        match self {
            Self::Ephemeral(verified) => Some(verified),
            _ => None,
        }
    }
}

/// One received message: its exact bytes and what it held.
#[derive(Debug, Clone)]
pub struct Received {
    /// The message's bytes, exactly as received (no frame prefix).
    pub bytes: Bytes,
    /// What it delivered, or why it was rejected.
    pub result: Result<Delivered, Rejected>,
}

/// Decodes and verifies one received message, all at once (what a
/// [`Connection`] does with each message, without the pacing). With no
/// session to hold subscriptions, an ephemeral message is only
/// verified (no age, topic or duplicate check), and a Subscribe is
/// accepted whole.
///
/// ```
/// use bijou_framing::connection::{verify_message, Rejected};
/// let received = verify_message(bytes::Bytes::from_static(b"SUM\0junk"));
/// assert!(matches!(received.result, Err(Rejected::Malformed(_))));
/// ```
#[must_use]
pub fn verify_message(bytes: Bytes) -> Received {
    match Pending::start(MessageFrame::decode(bytes), None) {
        Start::Answered(received) => received,
        Start::Verify(Pending::Sync(mut pending)) => {
            let total = pending.message.signed_item_count();
            pending
                .verify_until(total)
                .unwrap_or_else(|| pending.finish())
        }
        Start::Verify(Pending::Ephemeral(pending)) => {
            let result = pending
                .message
                .verify_strict()
                .map(Delivered::Ephemeral)
                .map_err(|e| Rejected::Ephemeral(EphemeralRejected::Signature(e)));
            Received {
                bytes: pending.bytes,
                result,
            }
        }
    }
}

/// A received message: either answered at once (malformed, a handshake
/// message, a control message, an ephemeral message that failed a cheap
/// check), or a message with signatures to verify.
enum Start {
    Answered(Received),
    Verify(Pending),
}

/// A message taken off the transport with signatures still to verify.
/// It lives in the connection, not in a future, so a cancelled receive
/// loses nothing: the next poll carries on where it stopped.
#[derive(Debug)]
enum Pending {
    Sync(PendingSync),
    Ephemeral(PendingEphemeral),
}

/// An ephemeral message that passed the cheap checks at `now`.
#[derive(Debug)]
struct PendingEphemeral {
    bytes: Bytes,
    message: SignedEphemeral,
    now: u64,
    paid: bool,
}

impl Pending {
    /// A message to verify, or the answer for anything else. `session` is
    /// the connection's ephemeral state (`None`: verify only).
    fn start(frame: MessageFrame, session: Option<&mut EphemeralSession>) -> Start {
        let bytes = frame.bytes;
        let answer = |result| {
            Start::Answered(Received {
                bytes: bytes.clone(),
                result,
            })
        };
        let message = match frame.message {
            Ok(Message::Sync(message)) => {
                return Start::Verify(Self::Sync(PendingSync::new(bytes, message)));
            }
            Ok(Message::Ephemeral(message)) => message,
            Err(e) => return answer(Err(Rejected::Malformed(e))),
            Ok(Message::Handshake(h)) => {
                return answer(Err(Rejected::UnexpectedHandshake(Box::new(h))))
            }
        };
        let delivered = match (message, session) {
            (EphemeralMessage::Ephemeral(message), Some(session)) => {
                let now = session.config().clock.now();
                if let Err(e) = session.precheck(&message, now) {
                    return answer(Err(Rejected::Ephemeral(e)));
                }
                return Start::Verify(Self::Ephemeral(PendingEphemeral {
                    bytes,
                    message: *message,
                    now,
                    paid: false,
                }));
            }
            (EphemeralMessage::Ephemeral(message), None) => {
                return Start::Verify(Self::Ephemeral(PendingEphemeral {
                    bytes,
                    message: *message,
                    now: 0,
                    paid: true,
                }));
            }
            (EphemeralMessage::Subscribe(topics), Some(session)) => {
                Delivered::Subscribed(session.remote_subscribe(&topics))
            }
            (EphemeralMessage::Subscribe(topics), None) => {
                Delivered::Subscribed(SubscribeOutcome {
                    accepted: topics.as_slice().to_vec(),
                    rejected: None,
                })
            }
            (EphemeralMessage::Unsubscribe(topics), session) => {
                if let Some(session) = session {
                    session.remote_unsubscribe(&topics);
                }
                Delivered::Unsubscribed(topics)
            }
            (EphemeralMessage::SubscribeRejected(topics), _) => {
                Delivered::SubscribeRejected(topics)
            }
        };
        answer(Ok(delivered))
    }
}

/// Signed items verified between two looks at the budget.
const VERIFY_CHUNK: usize = 256;

/// A sync message whose signed items are being verified.
#[derive(Debug)]
struct PendingSync {
    bytes: Bytes,
    message: SyncMessage,
    items: Vec<VerifiedItem>,
    rejected: Vec<RejectedItem>,
    /// The next item to verify.
    next: usize,
    /// Items already paid for from the budget.
    paid: usize,
}

impl PendingSync {
    fn new(bytes: Bytes, message: SyncMessage) -> Self {
        Self {
            bytes,
            items: Vec::with_capacity(message.signed_item_count()),
            rejected: Vec::new(),
            message,
            next: 0,
            paid: 0,
        }
    }

    /// Whether a bad item rejects only itself (a BatchSyncResponse) or the
    /// whole message (a LooseCommit or Fragment, whose one item it is).
    fn per_item(&self) -> bool {
        !matches!(
            self.message,
            SyncMessage::LooseCommit(_) | SyncMessage::Fragment(_)
        )
    }

    /// Verifies items up to `end` (exclusive); `Some` if the whole message
    /// is rejected.
    fn verify_until(&mut self, end: usize) -> Option<Received> {
        let per_item = self.per_item();
        for index in self.next..end {
            match self.message.verify_item(index) {
                Some(Ok(item)) => self.items.push(item),
                Some(Err(error)) if per_item => {
                    self.rejected.push(RejectedItem { index, error });
                }
                Some(Err(error)) => {
                    return Some(Received {
                        bytes: std::mem::take(&mut self.bytes),
                        result: Err(Rejected::Verify(error)),
                    })
                }
                None => break,
            }
        }
        self.next = end;
        None
    }

    fn finish(self) -> Received {
        Received {
            bytes: self.bytes,
            result: Ok(Delivered::Sync(VerifiedMessage {
                message: self.message,
                items: self.items,
                rejected: self.rejected,
            })),
        }
    }
}

/// The receiving side's state: the verification budget, the message being
/// verified, whether the transport has ended, and the ephemeral state.
#[derive(Debug)]
struct Receiving {
    budget: Bucket,
    pending: Option<Pending>,
    ended: bool,
    ephemeral: EphemeralSession,
}

impl Receiving {
    fn new() -> Self {
        Self {
            budget: Bucket::new(VerifyBudget::DEFAULT),
            pending: None,
            ended: false,
            ephemeral: EphemeralSession::default(),
        }
    }

    /// The next received message, verified with the budget's pacing:
    /// before each chunk of signed items, waits until the budget allows it.
    fn poll_next<S>(
        &mut self,
        cx: &mut Context<'_>,
        transport: &mut S,
    ) -> Poll<Option<Result<Received, TransportError>>>
    where
        S: Stream<Item = Result<Bytes, TransportError>> + Unpin,
    {
        if self.pending.is_none() {
            if self.ended {
                return Poll::Ready(None);
            }
            let bytes = match ready!(transport.poll_next_unpin(cx)) {
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
            match Pending::start(MessageFrame::decode(bytes), Some(&mut self.ephemeral)) {
                Start::Verify(pending) => self.pending = Some(pending),
                Start::Answered(received) => return Poll::Ready(Some(Ok(received))),
            }
        }
        if let Some(Pending::Ephemeral(pending)) = self.pending.as_mut() {
            if !pending.paid {
                ready!(self.budget.poll_spend(cx, 1));
                pending.paid = true;
            }
            let Some(Pending::Ephemeral(pending)) = self.pending.take() else {
                return Poll::Ready(None);
            };
            let result = self
                .ephemeral
                .verify_and_record(&pending.message, pending.now)
                .map(Delivered::Ephemeral)
                .map_err(Rejected::Ephemeral);
            return Poll::Ready(Some(Ok(Received {
                bytes: pending.bytes,
                result,
            })));
        }
        while let Some(Pending::Sync(pending)) = self.pending.as_mut() {
            let total = pending.message.signed_item_count();
            if pending.next >= total {
                break;
            }
            let end = total.min(pending.next.saturating_add(VERIFY_CHUNK));
            if pending.paid < end {
                ready!(self.budget.poll_spend(cx, end - pending.paid));
                pending.paid = end;
            }
            if let Some(rejected) = pending.verify_until(end) {
                self.pending = None;
                return Poll::Ready(Some(Ok(rejected)));
            }
        }
        Poll::Ready(match self.pending.take() {
            Some(Pending::Sync(pending)) => Some(Ok(pending.finish())),
            _ => None,
        })
    }
}

/// What a [`Connection`] sends: a message to encode, or the bytes of one
/// already encoded (for example a received message, forwarded untouched).
#[derive(Debug, Clone)]
pub enum Outgoing {
    /// A message, encoded on the way out.
    Message(Box<Message>),
    /// An encoded message, sent as it is.
    Encoded(Bytes),
}

impl From<Message> for Outgoing {
    fn from(message: Message) -> Self {
        Self::Message(Box::new(message))
    }
}

impl From<Bytes> for Outgoing {
    fn from(bytes: Bytes) -> Self {
        Self::Encoded(bytes)
    }
}

/// Refuses a handshake message after the handshake.
fn check_message(message: &Message) -> Result<(), SendError> {
    match message {
        Message::Handshake(h) => Err(SendError::HandshakeAfterHandshake {
            kind: h.kind_name(),
        }),
        Message::Sync(_) | Message::Ephemeral(_) => Ok(()),
    }
}

/// Checks encoded bytes are not a handshake message.
fn check_encoded(bytes: Bytes) -> Result<Bytes, SendError> {
    if bytes.starts_with(&HANDSHAKE_SCHEMA) {
        return Err(SendError::HandshakeAfterHandshake {
            kind: "handshake message",
        });
    }
    Ok(bytes)
}

/// An authenticated connection over a [`Transport`]; see the
/// [module docs](self).
#[derive(Debug)]
pub struct Connection<T> {
    transport: T,
    local: PeerId,
    remote: Authenticated,
    receiving: Receiving,
}

impl<T: Transport> Connection<T> {
    /// Opens a connection as the initiator: runs the handshake on
    /// `transport` with `signer`, addressed to `audience`
    /// ([`handshake::initiate`]).
    ///
    /// # Errors
    ///
    /// [`HandshakeError`].
    pub async fn connect<S: Identity + ?Sized>(
        mut transport: T,
        signer: &S,
        audience: Audience,
        config: &HandshakeConfig,
    ) -> Result<Self, HandshakeError> {
        let remote = handshake::initiate(&mut transport, signer, audience, config).await?;
        Ok(Self::established(transport, signer.peer_id(), remote))
    }

    /// Accepts a connection as the responder: answers the peer's challenge
    /// on `transport` with `signer` ([`handshake::respond`]).
    ///
    /// # Errors
    ///
    /// [`HandshakeError`]; a refused challenge is
    /// [`HandshakeError::Refused`].
    pub async fn accept<S: Identity + ?Sized>(
        mut transport: T,
        signer: &S,
        responder: &Responder,
    ) -> Result<Self, HandshakeError> {
        let remote = handshake::respond(&mut transport, signer, responder).await?;
        Ok(Self::established(transport, signer.peer_id(), remote))
    }

    /// A connection on a `transport` whose handshake already completed
    /// (for example by driving [`handshake::Initiator`] yourself): `local`
    /// is our peer id, `remote` what the handshake established. Raise the
    /// transport's maximum message length first.
    pub fn established(transport: T, local: PeerId, remote: Authenticated) -> Self {
        Self {
            transport,
            local,
            remote,
            receiving: Receiving::new(),
        }
    }

    /// Our own peer id.
    #[must_use]
    pub fn local_peer(&self) -> PeerId {
        self.local
    }

    /// The authenticated remote peer.
    #[must_use]
    pub fn remote_peer(&self) -> PeerId {
        self.remote.peer
    }

    /// What the handshake established.
    #[must_use]
    pub fn authenticated(&self) -> &Authenticated {
        &self.remote
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

    /// The transport. A message taken off it whose verification had not
    /// finished (only possible under a [`VerifyBudget`] wait) is dropped.
    #[must_use]
    pub fn into_inner(self) -> T {
        self.transport
    }

    /// Receives the next message and verifies it: `Ok(None)` when the
    /// peer closed. The same as the [`Stream`] with `Option` and `Result`
    /// swapped.
    ///
    /// # Errors
    ///
    /// [`TransportError`]: the transport cannot continue; drop the
    /// connection.
    ///
    /// Cancel safe: if the future is dropped (in `select!`, under a
    /// timeout), a message already taken off the transport is kept, and
    /// the next call returns it.
    pub async fn recv(&mut self) -> Result<Option<Received>, TransportError> {
        self.next().await.transpose()
    }

    /// Sends encoded message bytes as they are (a received message,
    /// forwarded untouched), and flushes.
    ///
    /// # Errors
    ///
    /// [`SendError`]: a handshake message, too large, or the transport
    /// failed.
    pub async fn send_bytes(&mut self, bytes: Bytes) -> Result<(), SendError> {
        SinkExt::<Outgoing>::send(self, Outgoing::Encoded(bytes)).await
    }

    /// Queues encoded message bytes without flushing (see
    /// [`Connection::flush`]).
    ///
    /// # Errors
    ///
    /// As [`Connection::send_bytes`].
    pub async fn feed_bytes(&mut self, bytes: Bytes) -> Result<(), SendError> {
        SinkExt::<Outgoing>::feed(self, Outgoing::Encoded(bytes)).await
    }

    /// Flushes queued messages (the same as the sink's flush, without
    /// naming the item type).
    ///
    /// # Errors
    ///
    /// [`SendError::Transport`].
    pub async fn flush(&mut self) -> Result<(), SendError> {
        SinkExt::<Outgoing>::flush(self).await
    }

    /// Flushes and closes the sending side; the peer's stream then ends.
    ///
    /// # Errors
    ///
    /// [`SendError::Transport`].
    pub async fn close(&mut self) -> Result<(), SendError> {
        SinkExt::<Outgoing>::close(self).await
    }

    /// Replaces the verification budget ([`VerifyBudget::DEFAULT`] unless
    /// set): how many signatures this connection's peer may make us verify
    /// per second.
    pub fn set_verify_budget(&mut self, budget: VerifyBudget) {
        self.receiving.budget.set_budget(budget);
    }

    /// The ephemeral state: our subscriptions, the peer's, the limits.
    #[must_use]
    pub fn ephemeral(&self) -> &EphemeralSession {
        &self.receiving.ephemeral
    }

    /// Replaces the ephemeral limits and clock; subscriptions are kept,
    /// the deduplication window starts empty. Call it before receiving.
    pub fn set_ephemeral_config(&mut self, config: EphemeralConfig) {
        self.receiving.ephemeral.set_config(config);
    }

    /// Subscribes to `topics`: from now on, ephemeral messages for them
    /// are delivered, and the peer is asked to send them (a Subscribe).
    ///
    /// # Errors
    ///
    /// [`SendError`]: more than 65,535 topics, or the transport failed.
    pub async fn subscribe(&mut self, topics: Topics) -> Result<(), SendError> {
        self.receiving.ephemeral.subscribe(&topics);
        self.send(Message::Ephemeral(EphemeralMessage::Subscribe(topics)))
            .await
    }

    /// Unsubscribes from `topics`: their messages are refused from now on
    /// ([`EphemeralRejected::NotSubscribed`]), and the peer is told.
    ///
    /// # Errors
    ///
    /// As [`Connection::subscribe`].
    pub async fn unsubscribe(&mut self, topics: Topics) -> Result<(), SendError> {
        self.receiving.ephemeral.unsubscribe(&topics);
        self.send(Message::Ephemeral(EphemeralMessage::Unsubscribe(topics)))
            .await
    }

    /// Signs `payload` for `topic` as `signer`, stamped with the
    /// ephemeral clock and a random nonce, and sends it. Returns what was
    /// sent. Whether the peer subscribed is not checked (a relay forwards
    /// what it is sent); see [`EphemeralSession::remote_is_subscribed`].
    ///
    /// # Errors
    ///
    /// [`PublishError`]: too large, the signer failed, or the send failed.
    pub async fn publish<S: Identity + ?Sized>(
        &mut self,
        signer: &S,
        topic: Topic,
        payload: impl Into<Bytes>,
    ) -> Result<SignedEphemeral, PublishError> {
        let sealed = self.receiving.ephemeral.seal(signer, topic, payload)?;
        self.send(Message::Ephemeral(sealed.clone().into())).await?;
        Ok(sealed)
    }

    /// Splits into a sending and a receiving half for two tasks;
    /// [`ConnectionSender::reunite`] puts them back together.
    #[must_use]
    pub fn split(self) -> (ConnectionSender<T>, ConnectionReceiver<T>) {
        let (local, remote) = (self.local, self.remote);
        let (sink, stream) = StreamExt::split::<Outgoing>(self);
        (
            ConnectionSender {
                sink,
                local,
                remote,
            },
            ConnectionReceiver { stream, remote },
        )
    }

    fn start_send_bytes(&mut self, bytes: Bytes) -> Result<(), SendError> {
        Pin::new(&mut self.transport)
            .start_send(check_encoded(bytes)?)
            .map_err(SendError::Transport)
    }

    /// Encodes `message` into the transport (in place where it can).
    fn start_send_message(&mut self, message: &Message) -> Result<(), SendError> {
        check_message(message)?;
        self.transport.start_send_message(message)
    }
}

impl<T: Transport> Stream for Connection<T> {
    type Item = Result<Received, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        this.receiving.poll_next(cx, &mut this.transport)
    }
}

/// The sink methods every item type shares: readiness, flush and close are
/// the transport's.
macro_rules! connection_sink {
    ($(@$lt:lifetime)? $item:ty, |$this:ident, $msg:ident| $send:expr) => {
        impl<$($lt,)? T: Transport> Sink<$item> for Connection<T> {
            type Error = SendError;

            fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
                Pin::new(&mut self.get_mut().transport)
                    .poll_ready(cx)
                    .map_err(SendError::Transport)
            }

            fn start_send(self: Pin<&mut Self>, $msg: $item) -> Result<(), SendError> {
                let $this = self.get_mut();
                $send
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
                Pin::new(&mut self.get_mut().transport)
                    .poll_flush(cx)
                    .map_err(SendError::Transport)
            }

            fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
                Pin::new(&mut self.get_mut().transport)
                    .poll_close(cx)
                    .map_err(SendError::Transport)
            }
        }
    };
}

connection_sink!(Message, |this, msg| this.start_send_message(&msg));
connection_sink!(@'a &'a Message, |this, msg| this.start_send_message(msg));
connection_sink!(Outgoing, |this, item| match item {
    Outgoing::Message(msg) => this.start_send_message(&msg),
    Outgoing::Encoded(bytes) => this.start_send_bytes(bytes),
});

/// The sending half of a [`Connection`]: a [`Sink`] of [`Message`]s, and
/// of encoded bytes through [`ConnectionSender::send_bytes`].
#[derive(Debug)]
pub struct ConnectionSender<T> {
    sink: SplitSink<Connection<T>, Outgoing>,
    local: PeerId,
    remote: Authenticated,
}

impl<T: Transport> ConnectionSender<T> {
    /// Our own peer id.
    #[must_use]
    pub fn local_peer(&self) -> PeerId {
        self.local
    }

    /// The authenticated remote peer.
    #[must_use]
    pub fn remote_peer(&self) -> PeerId {
        self.remote.peer
    }

    /// See [`Connection::send_bytes`].
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn send_bytes(&mut self, bytes: Bytes) -> Result<(), SendError> {
        self.sink.send(Outgoing::Encoded(bytes)).await
    }

    /// See [`Connection::feed_bytes`].
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn feed_bytes(&mut self, bytes: Bytes) -> Result<(), SendError> {
        self.sink.feed(Outgoing::Encoded(bytes)).await
    }

    /// See [`Connection::flush`].
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn flush(&mut self) -> Result<(), SendError> {
        self.sink.flush().await
    }

    /// See [`Connection::close`].
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn close(&mut self) -> Result<(), SendError> {
        self.sink.close().await
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
        let (local, remote) = (self.local, self.remote);
        self.sink.reunite(receiver.stream).map_err(|e| {
            let futures::stream::ReuniteError(sink, stream) = e;
            Box::new(ReuniteError(
                ConnectionSender {
                    sink,
                    local,
                    remote,
                },
                ConnectionReceiver {
                    stream,
                    remote: receiver.remote,
                },
            ))
        })
    }
}

impl<T: Transport> Sink<Message> for ConnectionSender<T> {
    type Error = SendError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        self.get_mut().sink.poll_ready_unpin(cx)
    }

    fn start_send(self: Pin<&mut Self>, msg: Message) -> Result<(), SendError> {
        self.get_mut().sink.start_send_unpin(Outgoing::from(msg))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        self.get_mut().sink.poll_flush_unpin(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        self.get_mut().sink.poll_close_unpin(cx)
    }
}

/// The receiving half of a [`Connection`]: the same [`Stream`].
#[derive(Debug)]
pub struct ConnectionReceiver<T> {
    stream: SplitStream<Connection<T>>,
    remote: Authenticated,
}

impl<T: Transport> ConnectionReceiver<T> {
    /// The authenticated remote peer.
    #[must_use]
    pub fn remote_peer(&self) -> PeerId {
        self.remote.peer
    }

    /// See [`Connection::recv`].
    ///
    /// # Errors
    ///
    /// [`TransportError`]: drop the connection.
    pub async fn recv(&mut self) -> Result<Option<Received>, TransportError> {
        self.stream.next().await.transpose()
    }
}

impl<T: Transport> Stream for ConnectionReceiver<T> {
    type Item = Result<Received, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().stream.poll_next_unpin(cx)
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
