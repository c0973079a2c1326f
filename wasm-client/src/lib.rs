//! A minimal Subduction client on `bijou-proto` without std: the handshake,
//! a push and a fetch, and verified delivery of the answers, sans-IO.
//!
//! ```text
//!   connect(key, server, now, seed) ──► (Handshaking, challenge bytes)  ──► send
//!   Handshaking::finish(reply)       ──► Client                          ◄── receive
//!   Client::push(tree, head, blob)   ──► LooseCommit bytes               ──► send
//!   Client::fetch(tree)              ──► (nonce, BatchSyncRequest bytes) ──► send
//!   Client::receive(bytes, now)      ──► Received (decoded, verified)    ◄── receive
//! ```
//!
//! It is what a browser or a Worker would compile: its size for
//! `wasm32-unknown-unknown` is the protocol's cost there
//! (`scripts/wasm-size.sh`).

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

use bijou_proto::handshake::{HandshakeError, Initiator};
use bijou_proto::message::{
    Audience, BatchSyncRequest, CommitId, FingerprintSeed, Message, SedimentreeId, SyncMessage,
};
use bijou_proto::rng::SeededRng;
use bijou_proto::session::{Received, SendRefused, Session, SessionConfig, Work};
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
    /// The session refused to send a message.
    Send(SendRefused),
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

impl From<SendRefused> for ClientError {
    fn from(e: SendRefused) -> Self {
        Self::Send(e)
    }
}

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
            rng: self.rng,
        })
    }
}

/// An authenticated client.
pub struct Client {
    key: SigningKey,
    session: Session,
    rng: SeededRng,
}

impl Client {
    /// The session under the client.
    #[must_use]
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// A commit of `blob` to `tree`, signed: the message to send.
    ///
    /// # Errors
    ///
    /// [`ClientError::Seal`] or [`ClientError::Send`].
    pub fn push(
        &mut self,
        tree: [u8; 32],
        head: [u8; 32],
        blob: &[u8],
    ) -> Result<Bytes, ClientError> {
        let message = SyncMessage::loose_commit(
            &self.key,
            SedimentreeId::new(tree),
            CommitId::new(head),
            [],
            Blob::from(bytes::Bytes::copy_from_slice(blob)),
        )?;
        Ok(self.session.encode(&Message::Sync(message))?)
    }

    /// A request for everything in `tree` (nothing known yet): its nonce,
    /// which the response echoes, and the message to send.
    ///
    /// # Errors
    ///
    /// [`ClientError::Send`].
    pub fn fetch(&mut self, tree: [u8; 32]) -> Result<(u64, Bytes), ClientError> {
        let nonce = self.rng.next_u64();
        let seed = FingerprintSeed::new(self.rng.next_u64(), self.rng.next_u64());
        let request = BatchSyncRequest::new(
            SedimentreeId::new(tree),
            self.key.peer_id(),
            nonce,
            false,
            seed,
            [],
            [],
        );
        let bytes = self
            .session
            .encode(&Message::Sync(SyncMessage::BatchSyncRequest(request)))?;
        Ok((nonce, bytes))
    }

    /// Takes one received message at `now` and verifies it: what it
    /// delivered, or `None` while the verification budget makes it wait
    /// (call again with a later `now`).
    ///
    /// # Errors
    ///
    /// [`ClientError::Busy`] if a message is still waiting for its turn.
    pub fn receive(&mut self, bytes: Bytes, now: Now) -> Result<Option<Received>, ClientError> {
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
