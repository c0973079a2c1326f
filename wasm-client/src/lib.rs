//! A minimal Subduction client on `bijou-proto` without std: the handshake,
//! a push and a fetch, and verified delivery of the answers, sans-IO.
//!
//! ```text
//!   connect(key, server, now, seed)      ──► (Handshaking, challenge bytes) ──► send
//!   Handshaking::finish(reply)            ──► Client                         ◄── receive
//!   Client::push(tree, head, blob, now)   ──► (id, LooseCommit bytes)        ──► send
//!   Client::fetch(tree, now)              ──► (id, BatchSyncRequest bytes)   ──► send
//!   Client::receive(bytes, now)           ──► Received, or an operation's end ◄── receive
//! ```
//!
//! Push and fetch are session operations: the acknowledgement and the
//! response end them ([`Client::completed`]), matched by the session.
//!
//! It is what a browser or a Worker would compile: its size for
//! `wasm32-unknown-unknown` is the protocol's cost there
//! (`scripts/wasm-size.sh`).

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

use bijou_proto::handshake::{HandshakeError, Initiator};
use core::time::Duration;

use bijou_codec::Wire;
use bijou_proto::message::{Audience, CommitId, SedimentreeId, SyncMessage};
use bijou_proto::rng::SeededRng;
use bijou_proto::session::{
    Completed, Operation, OperationId, Received, Session, SessionConfig, StartError, Work,
};
use bijou_proto::time::Now;
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::{Blob, Identity, PeerId, SealError};
use bytes::Bytes;

/// Why the client could not go on.
#[derive(Debug)]
pub enum ClientError {
    /// The handshake failed.
    Handshake(HandshakeError),
    /// A message could not be signed.
    Seal(SealError),
    /// The session refused to start an operation.
    Start(StartError),
    /// A message arrived while the last one was still being verified.
    Busy,
}

impl From<HandshakeError> for ClientError {
    fn from(e: HandshakeError) -> Self {
        Self::Handshake(e)
    }
}

impl From<SealError> for ClientError {
    fn from(e: SealError) -> Self {
        Self::Seal(e)
    }
}

impl From<StartError> for ClientError {
    fn from(e: StartError) -> Self {
        Self::Start(e)
    }
}

/// How long a push or a fetch may wait for its answer.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(30);

/// A handshake under way: the challenge was sent, the reply is awaited.
pub struct Handshaking {
    key: SigningKey,
    initiator: Initiator,
    rng: SeededRng,
}

/// Starts the handshake with `server` as `key` at `now`; every random draw
/// comes from `seed`. Returns the challenge to send.
///
/// # Errors
///
/// [`ClientError::Handshake`] if the challenge cannot be signed.
pub fn connect(
    key: [u8; 32],
    server: [u8; 32],
    now: Now,
    seed: [u8; 32],
) -> Result<(Handshaking, Bytes), ClientError> {
    let key = SigningKey::from_bytes(&key);
    let mut rng = SeededRng::from_seed(seed);
    let audience = Audience::Known(PeerId::from_bytes(server));
    let initiator = Initiator::new(&key, audience, now, rng.bytes())?;
    let challenge = initiator.challenge().clone();
    Ok((
        Handshaking {
            key,
            initiator,
            rng,
        },
        challenge,
    ))
}

impl Handshaking {
    /// Takes the server's reply: the authenticated client.
    ///
    /// # Errors
    ///
    /// [`ClientError::Handshake`]: refused, or not the server's answer.
    pub fn finish(mut self, reply: Bytes) -> Result<Client, ClientError> {
        let remote = self.initiator.receive(reply)?;
        let session = Session::new(
            self.key.peer_id(),
            remote,
            SessionConfig::new(self.rng.bytes()),
        );
        Ok(Client {
            key: self.key,
            session,
        })
    }
}

/// An authenticated client.
pub struct Client {
    key: SigningKey,
    session: Session,
}

impl Client {
    /// The session under the client.
    #[must_use]
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Starts pushing a commit of `blob` to `tree`, signed, at `now`: the
    /// operation's id and the message to send. It ends when the server's
    /// HeadsUpdate names the commit ([`Client::completed`]).
    ///
    /// # Errors
    ///
    /// [`ClientError::Seal`] or [`ClientError::Start`].
    pub fn push(
        &mut self,
        tree: [u8; 32],
        head: [u8; 32],
        blob: &[u8],
        now: Now,
    ) -> Result<(OperationId, Bytes), ClientError> {
        let message = SyncMessage::loose_commit(
            &self.key,
            SedimentreeId::new(tree),
            CommitId::new(head),
            [],
            Blob::from(bytes::Bytes::copy_from_slice(blob)),
        )?;
        self.start(Operation::Push(message), now)
    }

    /// Starts fetching everything in `tree` (nothing known yet) at `now`:
    /// the operation's id and the request to send.
    ///
    /// # Errors
    ///
    /// [`ClientError::Start`].
    pub fn fetch(&mut self, tree: [u8; 32], now: Now) -> Result<(OperationId, Bytes), ClientError> {
        self.start(Operation::Fetch(SedimentreeId::new(tree)), now)
    }

    fn start(
        &mut self,
        operation: Operation,
        now: Now,
    ) -> Result<(OperationId, Bytes), ClientError> {
        let deadline = now.monotonic.saturating_add(OPERATION_TIMEOUT);
        let id = self.session.start(operation, deadline)?;
        // A push or a fetch sends one message, checked by `start`.
        let message = self.session.poll_transmit();
        let bytes = message.map(|m| m.encode()).transpose();
        let bytes = bytes.map_err(StartError::Encode)?;
        Ok((id, bytes.unwrap_or_default()))
    }

    /// The next operation that ended (its outcome, or why not), oldest
    /// first.
    pub fn completed(&mut self) -> Option<Completed> {
        self.session.poll_completed()
    }

    /// Takes one received message at `now` and verifies it: what it
    /// delivered, or `None` when an operation took it ([`Client::completed`])
    /// or while the verification budget makes it wait (call again with a
    /// later `now`). Operations past their deadline end here too.
    ///
    /// # Errors
    ///
    /// [`ClientError::Busy`] if a message is still waiting for its turn.
    pub fn receive(&mut self, bytes: Bytes, now: Now) -> Result<Option<Received>, ClientError> {
        let _ = self.session.handle_timeout(now);
        if !bytes.is_empty() {
            self.session
                .handle_message(bytes, now)
                .map_err(|_| ClientError::Busy)?;
        }
        loop {
            match self.session.poll_work(now) {
                Work::More => continue,
                Work::Wait(_) => return Ok(None),
                Work::Idle => return Ok(self.session.poll_event()),
            }
        }
    }
}
