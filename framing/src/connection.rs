//! [`Connection`]: an authenticated peer connection over any
//! `AsyncRead + AsyncWrite`.
//!
//! ```text
//!   Connection::connect / accept  ── handshake (256-byte frame limit) ──► Connection
//!
//!   send(&Message)      ──encode──► frame ──► wire
//!   send_frame(Bytes)   ───────────► frame ──► wire        (forward received bytes untouched)
//!
//!   recv() ──► Ok(Some(Received { frame, result }))
//!                 result = Ok(VerifiedMessage)   every signed item passed verify_strict,
//!                                                the scope check and the blob check
//!                        = Err(Rejected)         malformed, bad signature, blob mismatch, ...:
//!                                                reported, and the connection stays up
//!          ──► Ok(None)                          the peer closed cleanly
//!          ──► Err(FrameError)                   framing error: the connection is over
//! ```
//!
//! Each received item keeps the exact frame bytes, so a relay or an echo
//! server can forward what it received byte for byte after verifying it.
//!
//! ```
//! use bijou_framing::handshake::{HandshakeConfig, Responder};
//! use bijou_framing::message::*;
//! use bijou_framing::{prefix::Bijou64, Connection};
//! use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let alice = SigningKey::from_bytes(&[1; 32]);
//! let bob = SigningKey::from_bytes(&[2; 32]);
//! let (a, b) = tokio::io::duplex(64 * 1024);
//! let responder = Responder::new(HandshakeConfig::default());
//! let bob_id = bob.peer_id();
//! let server = tokio::spawn(async move { Connection::accept(b, Bijou64, &bob, &responder).await });
//! let mut client =
//!     Connection::connect(a, Bijou64, &alice, Audience::Known(bob_id), &HandshakeConfig::default()).await?;
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
//! let received = server.recv().await?.expect("one message");
//! let verified = received.result?;
//! assert_eq!(verified.message, msg);
//! assert_eq!(verified.items.len(), 1);
//! # Ok(())
//! # }
//! ```

use bijou_codec::Wire;
use bijou_signing::{Identity, PeerId};
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::framed_io::FramedIo;
use crate::handshake::{self, Authenticated, HandshakeConfig, HandshakeError, Responder};
use crate::message::{
    Audience, HandshakeMessage, Message, MessageError, SyncMessage, VerifiedItem, VerifyItemError,
};
use crate::verify_budget::Bucket;
use crate::{
    prefix::LengthPrefix, FrameError, MessageCodec, MessageFrame, SendError, VerifyBudget,
};

/// A sync message whose signed items all verified.
#[derive(Debug, Clone)]
pub struct VerifiedMessage {
    /// The message as decoded.
    pub message: SyncMessage,
    /// Its signed items, verified (`verify_strict`, scope, blob), in wire
    /// order; empty for messages without signed items.
    pub items: Vec<VerifiedItem>,
}

/// Why a received frame was not accepted. The frame was consumed whole and
/// the connection stays up.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Rejected {
    /// The frame does not hold a well-formed message.
    #[error("malformed message: {0}")]
    Malformed(#[source] MessageError),
    /// A signed item failed verification: bad signature
    /// ([`VerifyItemError::Signature`]), wrong document, or a blob that does
    /// not match its signed size and digest ([`VerifyItemError::Blob`]).
    #[error("signed item rejected: {0}")]
    Verify(#[source] VerifyItemError),
    /// A handshake message after the handshake completed.
    #[error("unexpected handshake message after the handshake")]
    UnexpectedHandshake(Box<HandshakeMessage>),
}

/// One received frame: its exact bytes and what it held.
#[derive(Debug, Clone)]
pub struct Received {
    /// The frame's payload bytes, exactly as received (no prefix).
    pub frame: Bytes,
    /// The verified message, or why it was rejected.
    pub result: Result<VerifiedMessage, Rejected>,
}

/// Decodes and verifies one received frame (what [`Connection::recv`] does
/// with each frame).
///
/// ```
/// use bijou_framing::connection::{verify_frame, Rejected};
/// let received = verify_frame(bytes::Bytes::from_static(b"SUM\0junk"));
/// assert!(matches!(received.result, Err(Rejected::Malformed(_))));
/// ```
#[must_use]
pub fn verify_frame(frame: Bytes) -> Received {
    verify(MessageFrame::decode(frame))
}

/// Verifies a decoded frame's signed items.
fn verify(frame: MessageFrame) -> Received {
    let result = match frame.message {
        Err(e) => Err(Rejected::Malformed(e)),
        Ok(Message::Handshake(h)) => Err(Rejected::UnexpectedHandshake(Box::new(h))),
        Ok(Message::Sync(message)) => match message.verify() {
            Ok(items) => Ok(VerifiedMessage { message, items }),
            Err(e) => Err(Rejected::Verify(e)),
        },
    };
    Received {
        frame: frame.bytes,
        result,
    }
}

/// Signed items verified between two looks at the budget.
const VERIFY_CHUNK: usize = 256;

/// A sync message taken off the stream whose signed items are being
/// verified. It lives in the connection, not in the `recv` future, so a
/// cancelled `recv` loses nothing: the next call carries on where it
/// stopped.
#[derive(Debug)]
struct Pending {
    bytes: Bytes,
    message: SyncMessage,
    items: Vec<VerifiedItem>,
    /// The next item to verify.
    next: usize,
    /// Items already paid for from the budget.
    paid: usize,
}

/// The receiving side's state: the verification budget and the message
/// being verified.
#[derive(Debug)]
struct Receiving {
    budget: Bucket,
    pending: Option<Pending>,
}

impl Receiving {
    fn new() -> Self {
        Self {
            budget: Bucket::new(VerifyBudget::DEFAULT),
            pending: None,
        }
    }

    /// The next received frame, verified with the budget's pacing: before
    /// each chunk of signed items, waits until the budget allows it. Cancel
    /// safe: every await leaves the state consistent.
    async fn next<S>(&mut self, stream: &mut S) -> Result<Option<Received>, FrameError>
    where
        S: Stream<Item = Result<MessageFrame, FrameError>> + Unpin,
    {
        if self.pending.is_none() {
            let frame = match stream.next().await {
                None => return Ok(None),
                Some(frame) => frame?,
            };
            match frame.message {
                Ok(Message::Sync(message)) => {
                    let count = message.signed_item_count();
                    self.pending = Some(Pending {
                        bytes: frame.bytes,
                        items: Vec::with_capacity(count),
                        message,
                        next: 0,
                        paid: 0,
                    });
                }
                message => {
                    return Ok(Some(verify(MessageFrame {
                        bytes: frame.bytes,
                        message,
                    })))
                }
            }
        }
        while let Some(pending) = self.pending.as_mut() {
            let total = pending.message.signed_item_count();
            if pending.next >= total {
                break;
            }
            let end = total.min(pending.next.saturating_add(VERIFY_CHUNK));
            if pending.paid < end {
                self.budget.spend(end - pending.paid).await;
                pending.paid = end;
            }
            for index in pending.next..end {
                match pending.message.verify_item(index) {
                    Some(Ok(item)) => pending.items.push(item),
                    Some(Err(e)) => {
                        let bytes = std::mem::take(&mut pending.bytes);
                        self.pending = None;
                        return Ok(Some(Received {
                            frame: bytes,
                            result: Err(Rejected::Verify(e)),
                        }));
                    }
                    None => break,
                }
            }
            pending.next = end;
        }
        Ok(self.pending.take().map(|pending| Received {
            frame: pending.bytes,
            result: Ok(VerifiedMessage {
                message: pending.message,
                items: pending.items,
            }),
        }))
    }
}

/// An authenticated connection; see the [module docs](self).
#[derive(Debug)]
pub struct Connection<T, P> {
    framed: FramedIo<T, P>,
    local: PeerId,
    remote: Authenticated,
    receiving: Receiving,
}

impl<T, P> Connection<T, P>
where
    T: AsyncRead + AsyncWrite + Unpin,
    P: LengthPrefix,
{
    /// Opens a connection as the initiator: frames `io` with `prefix`, and
    /// runs the handshake with `signer`, addressed to `audience`.
    ///
    /// # Errors
    ///
    /// [`HandshakeError`].
    pub async fn connect<S: Identity + ?Sized>(
        io: T,
        prefix: P,
        signer: &S,
        audience: Audience,
        config: &HandshakeConfig,
    ) -> Result<Self, HandshakeError> {
        let mut framed = FramedIo::new(io, MessageCodec::with_prefix(prefix));
        let remote = handshake::initiate(&mut framed, signer, audience, config).await?;
        Ok(Self {
            framed,
            local: signer.peer_id(),
            remote,
            receiving: Receiving::new(),
        })
    }

    /// Accepts a connection as the responder: frames `io` with `prefix`,
    /// and answers the peer's challenge with `signer`.
    ///
    /// # Errors
    ///
    /// [`HandshakeError`]; a refused challenge is
    /// [`HandshakeError::Refused`].
    pub async fn accept<S: Identity + ?Sized>(
        io: T,
        prefix: P,
        signer: &S,
        responder: &Responder,
    ) -> Result<Self, HandshakeError> {
        let mut framed = FramedIo::new(io, MessageCodec::with_prefix(prefix));
        let remote = handshake::respond(&mut framed, signer, responder).await?;
        Ok(Self {
            framed,
            local: signer.peer_id(),
            remote,
            receiving: Receiving::new(),
        })
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

    /// The maximum frame length now in force.
    #[must_use]
    pub fn max_frame_length(&self) -> usize {
        self.framed.codec().max_frame_length()
    }

    /// Encodes and sends `msg`, and flushes.
    ///
    /// # Errors
    ///
    /// [`SendError`]: the message does not encode, is too large, or the
    /// transport failed.
    pub async fn send(&mut self, msg: &Message) -> Result<(), SendError> {
        SinkExt::<&Message>::send(&mut self.framed, msg).await
    }

    /// Sends one frame's bytes as they are (for example a received frame,
    /// forwarded untouched), and flushes.
    ///
    /// # Errors
    ///
    /// [`FrameError`]: too large, or the transport failed.
    pub async fn send_frame(&mut self, frame: Bytes) -> Result<(), FrameError> {
        SinkExt::<Bytes>::send(&mut self.framed, frame).await
    }

    /// Queues one frame without flushing (see [`Connection::flush`]).
    ///
    /// # Errors
    ///
    /// [`FrameError`]: too large, or the transport failed.
    pub async fn feed_frame(&mut self, frame: Bytes) -> Result<(), FrameError> {
        SinkExt::<Bytes>::feed(&mut self.framed, frame).await
    }

    /// Flushes queued frames.
    ///
    /// # Errors
    ///
    /// [`FrameError::Io`].
    pub async fn flush(&mut self) -> Result<(), FrameError> {
        SinkExt::<Bytes>::flush(&mut self.framed).await
    }

    /// Flushes and shuts down the write side; the peer's
    /// [`recv`](Connection::recv) then returns `Ok(None)`.
    ///
    /// # Errors
    ///
    /// [`FrameError::Io`].
    pub async fn close(&mut self) -> Result<(), FrameError> {
        SinkExt::<Bytes>::close(&mut self.framed).await
    }

    /// Receives the next frame and verifies it ([`verify_frame`]).
    /// `Ok(None)` when the peer closed cleanly.
    ///
    /// # Errors
    ///
    /// [`FrameError`]: the stream cannot continue; drop the connection.
    ///
    /// Cancel safe: if the future is dropped (in `select!`, under a
    /// timeout), a message already taken off the stream is kept, and the
    /// next call returns it.
    pub async fn recv(&mut self) -> Result<Option<Received>, FrameError> {
        self.receiving.next(&mut self.framed).await
    }

    /// Heap bytes the connection's read and write buffers hold right now
    /// (none while it is idle; see [`FramedIo`]).
    #[must_use]
    pub fn buffered_capacity(&self) -> usize {
        self.framed.buffered_capacity()
    }

    /// Replaces the verification budget ([`VerifyBudget::DEFAULT`] unless
    /// set): how many signatures this connection's peer may make us verify
    /// per second.
    pub fn set_verify_budget(&mut self, budget: VerifyBudget) {
        self.receiving.budget.set_budget(budget);
    }

    /// Splits into a sending and a receiving half that can be used from two
    /// tasks.
    #[must_use]
    pub fn split(self) -> (ConnectionSender<T, P>, ConnectionReceiver<T, P>) {
        let (sink, stream) = self.framed.split();
        (
            ConnectionSender { sink },
            ConnectionReceiver {
                stream,
                remote: self.remote,
                receiving: self.receiving,
            },
        )
    }
}

/// The sending half of a [`Connection`].
#[derive(Debug)]
pub struct ConnectionSender<T, P> {
    sink: SplitSink<FramedIo<T, P>, Bytes>,
}

impl<T, P> ConnectionSender<T, P>
where
    T: AsyncRead + AsyncWrite + Unpin,
    P: LengthPrefix,
{
    /// See [`Connection::send`].
    ///
    /// # Errors
    ///
    /// [`SendError`].
    pub async fn send(&mut self, msg: &Message) -> Result<(), SendError> {
        let frame = msg.encode()?;
        self.sink.send(frame).await?;
        Ok(())
    }

    /// See [`Connection::send_frame`].
    ///
    /// # Errors
    ///
    /// [`FrameError`].
    pub async fn send_frame(&mut self, frame: Bytes) -> Result<(), FrameError> {
        self.sink.send(frame).await
    }

    /// See [`Connection::feed_frame`].
    ///
    /// # Errors
    ///
    /// [`FrameError`].
    pub async fn feed_frame(&mut self, frame: Bytes) -> Result<(), FrameError> {
        self.sink.feed(frame).await
    }

    /// See [`Connection::flush`].
    ///
    /// # Errors
    ///
    /// [`FrameError`].
    pub async fn flush(&mut self) -> Result<(), FrameError> {
        self.sink.flush().await
    }

    /// Flushes and shuts down the write side.
    ///
    /// # Errors
    ///
    /// [`FrameError`].
    pub async fn close(&mut self) -> Result<(), FrameError> {
        self.sink.close().await
    }
}

/// The receiving half of a [`Connection`].
#[derive(Debug)]
pub struct ConnectionReceiver<T, P> {
    stream: SplitStream<FramedIo<T, P>>,
    remote: Authenticated,
    receiving: Receiving,
}

impl<T, P> ConnectionReceiver<T, P>
where
    T: AsyncRead + AsyncWrite + Unpin,
    P: LengthPrefix,
{
    /// The authenticated remote peer.
    #[must_use]
    pub fn remote_peer(&self) -> PeerId {
        self.remote.peer
    }

    /// See [`Connection::set_verify_budget`].
    pub fn set_verify_budget(&mut self, budget: VerifyBudget) {
        self.receiving.budget.set_budget(budget);
    }

    /// See [`Connection::recv`].
    ///
    /// # Errors
    ///
    /// [`FrameError`]: drop the connection.
    pub async fn recv(&mut self) -> Result<Option<Received>, FrameError> {
        self.receiving.next(&mut self.stream).await
    }
}
