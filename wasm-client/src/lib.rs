//! A minimal Subduction client on `bijou-proto` without std: the handshake,
//! a push and a fetch, and verified delivery of the answers, sans-IO.
//!
//! One session from the first byte to close, driven by one loop over its
//! one output queue:
//!
//! ```text
//!   let mut client = connect(key, server, now, seed);
//!   loop {
//!       match client.poll(now) {
//!           Output::Sign(request)          => client.sign(&request)?,   // the handshake's challenge
//!           Output::Transmit(bytes)        => send the bytes to the server, as one message
//!           Output::Event(Established(_))  => client.push(..)?, client.fetch(..)?
//!           Output::Event(Completed(done)) => a push acknowledged, a fetch answered (verified)
//!           Output::Event(Received(msg))   => anything else the server sent, verified
//!           Output::Event(Closed(why))     => the end
//!           Output::Continue               => (yield to the host first if it has run long)
//!           Output::Wait { read, until }   => client.receive(next message, now) if `read`;
//!                                             poll again by `until`
//!       }
//!   }
//! ```
//!
//! Push and fetch are session operations: the acknowledgement and the
//! response end them ([`Event::Completed`]), matched by the session, and
//! are not also delivered.
//!
//! It is what a browser or a Worker would compile: its size for
//! `wasm32-unknown-unknown` is the protocol's cost there
//! (`scripts/wasm-size.sh`).

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

use core::time::Duration;

use bijou_proto::message::{Audience, CommitId, SedimentreeId, SyncMessage};
use bijou_proto::session::{
    Busy, Operation, OperationId, Output, Session, SessionConfig, SignRequest, SignatureRefused,
    StartError,
};
use bijou_proto::time::Now;
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::{Blob, PeerId, SealError};
use bytes::Bytes;

#[cfg(doc)]
use bijou_proto::session::Event;

/// Why the client could not go on.
#[derive(Debug)]
pub enum ClientError {
    /// A commit could not be signed.
    Seal(SealError),
    /// The session refused to start an operation.
    Start(StartError),
    /// The session refused our signature (it is not over what it asked,
    /// or not by its key).
    Sign(SignatureRefused),
    /// A message was handed in while the session takes none
    /// ([`Output::Wait`] said `read: false`); the bytes are in it.
    Busy(Busy),
    /// A push or a fetch before [`Event::Established`] or after
    /// [`Event::Closed`].
    NotOpen,
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

impl From<SignatureRefused> for ClientError {
    fn from(e: SignatureRefused) -> Self {
        Self::Sign(e)
    }
}

impl From<Busy> for ClientError {
    fn from(e: Busy) -> Self {
        Self::Busy(e)
    }
}

/// How long a push or a fetch may wait for its answer.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(30);

/// A client's session with its key.
pub struct Client {
    key: SigningKey,
    session: Session,
}

/// Opens a session with `server` as `key` at `now`; every random draw
/// comes from `seed`. Nothing is sent yet: the first [`Client::poll`]s
/// ask for the challenge to be signed, then hand it out to send.
#[must_use]
pub fn connect(key: [u8; 32], server: [u8; 32], now: Now, seed: [u8; 32]) -> Client {
    let key = SigningKey::from_bytes(&key);
    let audience = Audience::Known(PeerId::from_bytes(server));
    let session = Session::client(key.verifying_key(), audience, now, SessionConfig::new(seed));
    Client { key, session }
}

impl Client {
    /// The session under the client.
    #[must_use]
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The next thing to do, at `now`: the session's [`Output`], in the
    /// order the protocol decided (see the [crate docs](crate)).
    pub fn poll(&mut self, now: Now) -> Output {
        self.session.poll(now)
    }

    /// Answers an [`Output::Sign`] with the client's key.
    ///
    /// # Errors
    ///
    /// [`ClientError::Sign`]: not a request of this session's, or already
    /// answered.
    pub fn sign(&mut self, request: &SignRequest) -> Result<(), ClientError> {
        Ok(self.session.sign_with(request, &self.key)?)
    }

    /// Hands in one message received from the server at `now` (only
    /// while [`Output::Wait`] says `read`): what it leads to comes out
    /// of [`Client::poll`].
    ///
    /// # Errors
    ///
    /// [`ClientError::Busy`], with the bytes, if the session takes no
    /// message now.
    pub fn receive(&mut self, bytes: Bytes, now: Now) -> Result<(), ClientError> {
        Ok(self.session.handle_message(bytes, now)?)
    }

    /// The connection to the server ended: what was received is still
    /// delivered, the operations in flight end, then [`Event::Closed`].
    pub fn handle_close(&mut self) {
        self.session.handle_close();
    }

    /// Starts pushing a commit of `blob` to `tree`, signed, at `now`: the
    /// operation's id. The commit comes out of [`Client::poll`] to send;
    /// the push ends ([`Event::Completed`]) when the server's HeadsUpdate
    /// names it.
    ///
    /// # Errors
    ///
    /// [`ClientError::NotOpen`], [`ClientError::Seal`] or
    /// [`ClientError::Start`].
    pub fn push(
        &mut self,
        tree: [u8; 32],
        head: [u8; 32],
        blob: &[u8],
        now: Now,
    ) -> Result<OperationId, ClientError> {
        self.check_open()?;
        let message = SyncMessage::loose_commit(
            &self.key,
            SedimentreeId::new(tree),
            CommitId::new(head),
            [],
            Blob::from(Bytes::copy_from_slice(blob)),
        )?;
        self.start(Operation::Push(message), now)
    }

    /// Starts fetching everything in `tree` (nothing known yet) at `now`:
    /// the operation's id. The request comes out of [`Client::poll`] to
    /// send; the fetch ends ([`Event::Completed`]) with the verified
    /// response.
    ///
    /// # Errors
    ///
    /// [`ClientError::NotOpen`] or [`ClientError::Start`].
    pub fn fetch(&mut self, tree: [u8; 32], now: Now) -> Result<OperationId, ClientError> {
        self.check_open()?;
        self.start(Operation::Fetch(SedimentreeId::new(tree)), now)
    }

    fn check_open(&self) -> Result<(), ClientError> {
        if self.session.is_established() {
            Ok(())
        } else {
            Err(ClientError::NotOpen)
        }
    }

    fn start(&mut self, operation: Operation, now: Now) -> Result<OperationId, ClientError> {
        let deadline = now.monotonic.saturating_add(OPERATION_TIMEOUT);
        Ok(self.session.start(operation, deadline)?)
    }
}
