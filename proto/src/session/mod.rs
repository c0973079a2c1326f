//! [`Session`]: one peer connection as a state machine, sans-IO, from the
//! first byte of the handshake to its close.
//!
//! Whole received messages, the time and signatures go in; one queue comes
//! out ([`Session::poll`]): bytes to send (encoded already), bytes to
//! sign, events for the application, and when to poll again, in the style
//! of quinn-proto's `Connection` and Subduction's sans-IO machine. Nothing
//! here reads a clock, blocks, holds a key or does I/O, so an async shell
//! (`bijou-net`'s `Connection`), a browser, a test or a simulation drives
//! it the same way:
//!
//! ```text
//!   Session::client(our key, audience, now, config)   Session::server(our key, responder, now, config)
//!        │ the handshake runs inside: at most 256 B a message, a deadline, then Established or Closed
//!        ▼
//!   loop {
//!       match session.poll(now) {
//!           Output::Transmit(bytes)    ──► write them to the transport, in order
//!           Output::Sign(request)      ──► sign request.message() (now or later) ──► handle_signature(id, sig)
//!           Output::Event(event)       ──► Established | Received | Completed | Closed(why)
//!           Output::Continue           ──► one bounded verification step done: poll again
//!           Output::Wait { read, until } ──► read one message if `read` ──► handle_message(bytes, now);
//!                                          poll again by `until`, or on any input
//!       }
//!   }
//!
//!   the application ── start(Operation, deadline) ──► its messages in Transmit, its end in Completed
//!                   ── publish(topic, payload, now) ──► Sign, then Transmit
//!                   ── send(message) ──► Transmit after what is queued (the send rules of on_send)
//!                   ── close() / handle_close() (the transport ended) ──► ... Closed
//! ```
//!
//! A message handed in while the session takes none (`read` was false) is
//! given back ([`Busy`]), never dropped. The lower-level calls the loop is
//! made of (`poll_transmit`, `poll_work`, `poll_event`, `poll_completed`,
//! `handle_timeout`, `sign_pending_with`) remain for hosts that ran the
//! handshake elsewhere ([`Session::new`]); a driver of `poll` needs none.
//!
//! # Bounded work per step
//!
//! A `BatchSyncResponse` can carry 131,070 signed items. The session never
//! verifies them in one go: each step ([`Output::Continue`]) verifies at
//! most [`Session::verify_step`] items ([`DEFAULT_VERIFY_STEP`], 32: about
//! 0.5 ms of one core with batch verification, twice that one by one,
//! and three times that for the one step whose batch fails), after paying
//! for them from the [`VerifyBudget`] (when it is spent, [`Output::Wait`]'s
//! `until` says when the next step may run). Items are verified in batches
//! of up to 32 ([`verify_batch_all_or_none`](bijou_signing::batch::verify_batch_all_or_none)).
//! The first batch that fails turns the session to
//! [`verify_strict`](bijou_signing::Signed::verify_strict) one item at a
//! time, for that batch's items and every later one
//! ([`Session::verifies_one_by_one`]): a cheating peer pays one failed
//! batch, once, and then one `verify_strict` per item, never the cost of
//! splitting batches to find its forgeries. Each bad item is named by
//! index and reason, and the accept set is `verify_strict`'s (see
//! `bijou_signing::batch` for the one documented difference, on keys with
//! a small-order component). The shell decides when to yield between
//! steps; `bijou-net` yields once a poll has run 0.5 ms, so no poll of a
//! connection holds its thread for much more than one step.
//!
//! A message being verified lives in the session, not in a future: a
//! cancelled receive loses nothing. While one is pending (or its event
//! waits to be polled out), `Wait` says `read: false`: read nothing more,
//! so the transport pushes back on the peer.
//!
//! # Example: two sessions, no runtime
//!
//! ```
//! use bijou_frame::proto::handshake::{HandshakeConfig, Responder};
//! use bijou_frame::proto::message::*;
//! use bijou_frame::proto::session::{Event, Output, Session, SessionConfig};
//! use bijou_frame::proto::time::Now;
//! use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Identity};
//! use bytes::Bytes;
//!
//! let (alice, bob) = (SigningKey::from_bytes(&[1; 32]), SigningKey::from_bytes(&[2; 32]));
//! let now = Now::from_secs(1_700_000_000);
//! let mut a = Session::client(alice.verifying_key(), Audience::Known(bob.peer_id()), now, SessionConfig::new([1; 32]));
//! let mut b = Session::server(bob.verifying_key(), Responder::new(HandshakeConfig::default()), now, SessionConfig::new([2; 32]));
//!
//! // One driver for both: sign with the key, carry the bytes, keep the events.
//! fn drive(s: &mut Session, key: &SigningKey, inbox: &mut Vec<Bytes>, out: &mut Vec<Bytes>, now: Now) -> Vec<Event> {
//!     let mut events = Vec::new();
//!     loop {
//!         match s.poll(now) {
//!             Output::Transmit(bytes) => out.push(bytes),
//!             Output::Sign(request) => s.sign_with(&request, key).expect("our own key"),
//!             Output::Event(event) => events.push(event),
//!             Output::Continue => {}
//!             Output::Wait { read: true, .. } if !inbox.is_empty() => {
//!                 s.handle_message(inbox.remove(0), now).expect("read said so")
//!             }
//!             Output::Wait { .. } => return events,
//!         }
//!     }
//! }
//! let (mut to_a, mut to_b) = (Vec::new(), Vec::new());
//! for _ in 0..3 {
//!     drive(&mut a, &alice, &mut to_a, &mut to_b, now);
//!     drive(&mut b, &bob, &mut to_b, &mut to_a, now);
//! }
//! assert!(a.is_established() && b.is_established());
//!
//! // A signed commit from A to B.
//! let tree = SedimentreeId::new([9; 32]);
//! let msg = SyncMessage::loose_commit(&alice, tree, CommitId::new([3; 32]), [], Blob::from_static(b"hello"))?;
//! a.send(msg.clone().into())?;
//! drive(&mut a, &alice, &mut to_a, &mut to_b, now);
//! let events = drive(&mut b, &bob, &mut to_b, &mut to_a, now);
//! let Some(Event::Received(received)) = events.into_iter().next() else { panic!("delivered") };
//! let verified = received.result?.into_sync().expect("a sync message");
//! assert_eq!(verified.message, msg);
//! assert_eq!(verified.items.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::boxed::Box;
mod config;
mod opening;
mod operation;
mod output;
mod pending;
mod received;
mod signing;
pub mod snapshot;

use alloc::collections::VecDeque;

use bijou_codec::{Wire, WriteError};
use bijou_signing::ed25519_dalek::{Signature, VerifyingKey};
use bijou_signing::{Identity, PeerId};
use bytes::Bytes;

use crate::ephemeral::{EphemeralConfig, EphemeralSession, PublishError};
use crate::handshake::{Authenticated, Responder, HANDSHAKE_MAX_MESSAGE_LENGTH};
use crate::message::{
    Audience, EphemeralMessage, EphemeralPayload, Message, MessageFrame, MessageKind,
    SignedEphemeral, Topic,
};
use crate::replay_table::ReplayTable;
use crate::rng::SeededRng;
use crate::time::{Now, Timestamp};
use crate::verify_budget::{Bucket, VerifyBudget};

pub use config::{SessionConfig, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_VERIFY_STEP};
use opening::{Opening, Progress};
use operation::Operations;
pub use operation::{
    Completed, Operation, OperationError, OperationId, Outcome, StartError, TreeAccess, WrongSigner,
};
pub use output::{Close, Event, Output};
use pending::{Pending, Start};
pub use received::{Delivered, Received, Rejected, RejectedItem, VerifiedMessage};
use signing::{Owner, Replay, SignBook};
pub use signing::{SignId, SignRequest, SignatureRefused};

/// What [`Session::poll_work`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Work {
    /// Nothing is pending: read the next message (after taking the event
    /// that may be waiting in [`Session::poll_event`]).
    Idle,
    /// One step was done and more remain: yield to other work, then call
    /// again.
    More,
    /// The verification budget is spent: call again at this instant (also
    /// [`Session::poll_timeout`]).
    Wait(Timestamp),
}

/// [`Session::handle_message`] called while the session takes no
/// message ([`Output::Wait`] said `read: false`): a message is still being
/// verified or waits to be polled out, the handshake waits for its
/// signer, or the session is closed. The bytes, given back: nothing was
/// dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the session takes no message now ({} bytes given back): poll until Output::Wait says read, then hand it in again", .0.len())]
pub struct Busy(pub Bytes);

/// Why the session refused to send a message. Nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendRefused {
    /// A handshake message after the handshake.
    #[error("refused to send a {kind} after the handshake")]
    HandshakeAfterHandshake {
        /// What it was.
        kind: &'static str,
    },
    /// The message cannot be encoded (a count does not fit its field).
    #[error(transparent)]
    Encode(#[from] WriteError),
    /// [`Session::send`] before the peer is authenticated, or after the
    /// session closed.
    #[error("refused to send a {kind}: the session is not open (wait for Event::Established; after Event::Closed, connect again)")]
    NotOpen {
        /// What it was.
        kind: &'static str,
    },
}

/// An authenticated connection's protocol state; see the
/// [module docs](self).
#[derive(Debug)]
pub struct Session {
    local: PeerId,
    /// The peer, once the handshake authenticated it.
    remote: Option<Authenticated>,
    /// From the first byte to close.
    phase: Phase,
    /// The largest message taken once authenticated.
    max_message_len: usize,
    budget: Bucket,
    step: usize,
    /// Set once a batch of the peer's signatures fails (a bad signature,
    /// see [`Session::verifies_one_by_one`]): its items are verified one
    /// by one from then on, for the rest of the session. Kept in
    /// snapshots (flags bit 0).
    verify_one_by_one: bool,
    /// Where the ephemeral deduplication window is kept: the peer's
    /// window in this table, or (`None`) the session's own.
    replay_table: Option<ReplayTable>,
    /// The received message being verified or waiting in
    /// [`Session::poll_event`]; boxed, so an idle session holds a pointer,
    /// not a message's worth of inline space.
    inbound: Option<Box<Inbound>>,
    /// The ephemeral state and the protocol's own messages, made on first
    /// use: most connections never carry an ephemeral message, and an idle
    /// one then holds a pointer, not the state.
    extras: Option<Box<Extras>>,
    /// The seed of the ephemeral state's generator, the session's only
    /// random draws (kept, not a generator, until it is made).
    seed: [u8; 32],
}

/// Where a session stands, from the first byte to close.
#[derive(Debug)]
enum Phase {
    /// The handshake runs.
    Opening(Box<Opening>),
    /// Authenticated: the reply (a server's response) goes out, then the
    /// [`Event::Established`], before anything else.
    Opened(Option<Bytes>),
    /// Authenticated, and the application was told.
    Open,
    /// Ending: the reply (a rejection) goes out, what was received is
    /// delivered (the peer closed), the operations end, then
    /// [`Event::Closed`].
    Closing(Box<(Close, Option<Bytes>)>),
    /// Ended, and the application was told.
    Closed,
}

/// The parts of a session an idle connection does without.
#[derive(Debug, Default)]
struct Extras {
    /// What waits for the host's signer, and its answers.
    book: SignBook,
    /// Publishes waiting for their signature, oldest first, by their
    /// place in the sequence.
    publishing: VecDeque<(u64, EphemeralPayload)>,
    /// Publishes made so far (the sequence's next place).
    published: u64,
    ephemeral: Option<EphemeralSession>,
    /// Messages the protocol sends on its own ([`Session::poll_transmit`]),
    /// oldest first; its buffer is freed once drained.
    outbound: VecDeque<Message>,
    /// Operations in flight and ended ones not yet taken, made on the
    /// first [`Session::start`].
    operations: Option<Operations>,
}

/// The one received message a session holds at a time.
#[derive(Debug)]
enum Inbound {
    /// Being verified, and when the budget allows its next step if a step
    /// is waiting for it.
    Verifying {
        pending: Pending,
        wait: Option<Timestamp>,
    },
    /// Done: waiting in [`Session::poll_event`].
    Ready(Received),
}

impl Session {
    /// The session of a completed handshake: `local` is our peer id,
    /// `remote` what the handshake established (only a handshake can make
    /// one), with `config`'s settings and seed.
    #[must_use]
    pub fn new(local: PeerId, remote: Authenticated, config: SessionConfig) -> Self {
        Self::build(local, Some(remote), Phase::Open, config)
    }

    fn build(
        local: PeerId,
        remote: Option<Authenticated>,
        phase: Phase,
        config: SessionConfig,
    ) -> Self {
        let seed = config.seed;
        // Made on first use unless its limits were set.
        let extras = (config.ephemeral != EphemeralConfig::default()).then(|| {
            Box::new(Extras {
                ephemeral: Some(EphemeralSession::new(config.ephemeral, ephemeral_rng(seed))),
                ..Extras::default()
            })
        });
        Self {
            local,
            remote,
            phase,
            max_message_len: config.max_message_len,
            budget: Bucket::new(config.verify_budget),
            step: config.verify_step.max(1),
            verify_one_by_one: false,
            replay_table: config.replay_table,
            inbound: None,
            extras,
            seed,
        }
    }

    /// A client's session, from the first byte: it asks for its
    /// challenge to be signed by `local`'s key ([`Output::Sign`]), sends
    /// it to `audience`, checks the response, and is
    /// [`Event::Established`] or [`Event::Closed`] by
    /// `config.handshake_timeout` after `now`. Its handshake nonce is
    /// drawn from `config.seed`.
    ///
    /// ```
    /// use bijou_frame::proto::handshake::{HandshakeConfig, Responder};
    /// use bijou_frame::proto::message::Audience;
    /// use bijou_frame::proto::session::{Event, Output, Session, SessionConfig};
    /// use bijou_frame::proto::time::Now;
    /// use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity};
    ///
    /// let (alice, bob) = (SigningKey::from_bytes(&[1; 32]), SigningKey::from_bytes(&[2; 32]));
    /// let now = Now::from_secs(1_700_000_000);
    /// let mut a = Session::client(alice.verifying_key(), Audience::Known(bob.peer_id()), now, SessionConfig::new([1; 32]));
    /// let mut b = Session::server(bob.verifying_key(), Responder::new(HandshakeConfig::default()), now, SessionConfig::new([2; 32]));
    ///
    /// // One loop per side: sign what is asked, carry what is sent.
    /// fn drive(me: &mut Session, key: &SigningKey, peer: &mut Session, now: Now) -> Result<usize, Box<dyn std::error::Error>> {
    ///     let mut established = 0;
    ///     loop {
    ///         match me.poll(now) {
    ///             Output::Sign(request) => me.sign_with(&request, key)?,
    ///             Output::Transmit(bytes) => peer.handle_message(bytes, now)?,
    ///             Output::Event(Event::Established(_)) => established += 1,
    ///             Output::Event(other) => panic!("{other:?}"),
    ///             Output::Continue => {}
    ///             Output::Wait { .. } => return Ok(established),
    ///         }
    ///     }
    /// }
    /// let mut established = 0;
    /// for _ in 0..3 {
    ///     established += drive(&mut a, &alice, &mut b, now)?;
    ///     established += drive(&mut b, &bob, &mut a, now)?;
    /// }
    /// assert_eq!(established, 2);
    /// assert_eq!(a.remote_peer(), Some(bob.peer_id()));
    /// assert_eq!(b.remote_peer(), Some(alice.peer_id()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn client(
        local: VerifyingKey,
        audience: Audience,
        now: Now,
        config: SessionConfig,
    ) -> Self {
        let nonce = handshake_nonce(config.seed);
        let deadline = now.monotonic.saturating_add(config.handshake_timeout);
        let timeout = config.handshake_timeout;
        let opening = Opening::client(local, audience, now, nonce, deadline, timeout);
        Self::opening(PeerId::from(local), opening, config)
    }

    /// A server's session, from the first byte: it waits for the peer's
    /// challenge (at most 256 bytes), checks it with `responder` (shared
    /// by every connection the server accepts: its replay cache is), asks
    /// for the response to be signed by `local`'s key, sends it (or the
    /// rejection, then closes), and is [`Event::Established`] or
    /// [`Event::Closed`] by `config.handshake_timeout` after `now`. See
    /// [`Session::client`] for an example.
    #[must_use]
    pub fn server(
        local: VerifyingKey,
        responder: Responder,
        now: Now,
        config: SessionConfig,
    ) -> Self {
        let deadline = now.monotonic.saturating_add(config.handshake_timeout);
        let opening = Opening::server(responder, deadline, config.handshake_timeout);
        Self::opening(PeerId::from(local), Ok(opening), config)
    }

    fn opening(
        local: PeerId,
        opening: Result<Opening, crate::handshake::HandshakeError>,
        config: SessionConfig,
    ) -> Self {
        let phase = match opening {
            Ok(opening) => Phase::Opening(Box::new(opening)),
            Err(e) => Phase::Closing(Box::new((Close::Handshake(e), None))),
        };
        let mut session = Self::build(local, None, phase, config);
        if let Phase::Opening(opening) = &mut session.phase {
            // Asks for the client's challenge to be signed.
            let book = &mut session.extras.get_or_insert_with(Box::default).book;
            let _ = opening.on_signature(book);
        }
        session
    }

    /// Our own peer id.
    #[must_use]
    pub fn local_peer(&self) -> PeerId {
        self.local
    }

    /// The authenticated remote peer, once the handshake completed.
    #[must_use]
    pub fn remote_peer(&self) -> Option<PeerId> {
        self.remote.map(|remote| remote.peer())
    }

    /// What the handshake established, once it completed.
    #[must_use]
    pub fn authenticated(&self) -> Option<&Authenticated> {
        self.remote.as_ref()
    }

    /// Whether the peer is authenticated and the session not closed.
    #[must_use]
    pub fn is_established(&self) -> bool {
        matches!(self.phase, Phase::Opened(_) | Phase::Open)
    }

    /// Whether the session has ended ([`Event::Closed`] handed out, or
    /// about to be).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        matches!(self.phase, Phase::Closing(_) | Phase::Closed)
    }

    /// The largest message [`Session::handle_message`] takes now: 256
    /// bytes ([`HANDSHAKE_MAX_MESSAGE_LENGTH`]) until the peer is
    /// authenticated, then `config.max_message_len`. A transport reads no
    /// more than this for one message.
    #[must_use]
    pub fn max_message_len(&self) -> usize {
        match self.phase {
            Phase::Opening(_) => HANDSHAKE_MAX_MESSAGE_LENGTH,
            _ => self.max_message_len,
        }
    }

    /// Replaces the verification budget ([`VerifyBudget::DEFAULT`] unless
    /// set).
    pub fn set_verify_budget(&mut self, budget: VerifyBudget) {
        self.budget.set_budget(budget);
    }

    /// The verification budget in force.
    #[must_use]
    pub fn verify_budget(&self) -> VerifyBudget {
        self.budget.budget()
    }

    /// Signed items verified per [`Session::poll_work`] step.
    #[must_use]
    pub fn verify_step(&self) -> usize {
        self.step
    }

    /// Sets the items verified per step (at least 1). Smaller steps bound
    /// each poll tighter. A step's items are batched 32 at a time at
    /// most, so steps larger than that do not batch better.
    pub fn set_verify_step(&mut self, items: usize) {
        self.step = items.max(1);
    }

    /// Whether the peer's signed items are verified one by one
    /// (`verify_strict` each) rather than in batches: once a batch of its
    /// items fails (it sent a bad signature, or a key or `R` that only a
    /// cheating signer makes), for the rest of the session. An honest
    /// peer never sends a bad signature, so its items stay batched.
    ///
    /// What a peer can make us pay is bounded either way. Honest items
    /// cost about half a `verify_strict` each (batches of up to 32). A
    /// cheating peer costs at most one `verify_strict` per item plus,
    /// once per session, the failed batch: at most 32 items, about 16
    /// `verify_strict`s. Counted in instructions
    /// (`scripts/verify-cost.sh`), a 1,024-item response costs 1.02
    /// `verify_strict`s per item whatever its forgeries (one in seven,
    /// one in 32, all) and whatever the step size, where splitting each
    /// failed batch in halves cost 1.4 to 2.3; 1.12 for a first response
    /// of 128 items, 1.49 for one of 32 (the 16 extra, paid once). The
    /// verdicts are the same either way: every good item is accepted,
    /// every bad one refused and named.
    ///
    /// ```
    /// use bijou_frame::proto::handshake::{HandshakeConfig, Initiator, Responder};
    /// use bijou_frame::proto::message::*;
    /// use bijou_frame::proto::session::{Session, SessionConfig, Work};
    /// use bijou_frame::proto::time::Now;
    /// use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
    /// use bijou_frame::codec::Wire;
    ///
    /// let (alice, bob) = (SigningKey::from_bytes(&[1; 32]), SigningKey::from_bytes(&[2; 32]));
    /// let now = Now::from_secs(1_700_000_000);
    /// let initiator = Initiator::new(&alice, Audience::Known(bob.peer_id()), now, [7; 16])?;
    /// let answer = Responder::new(HandshakeConfig::default()).answer(&bob, initiator.challenge().clone(), now);
    /// let mut b = Session::new(bob.peer_id(), answer.outcome?, SessionConfig::new([2; 32]));
    /// assert!(!b.verifies_one_by_one());
    ///
    /// // A commit carrying another commit's signature: a forgery.
    /// let (tree, blob) = (SedimentreeId::new([9; 32]), Blob::from_static(b"hi"));
    /// let seal = |i| Signed::seal(&alice, &LooseCommit::new(tree, CommitId::new([i; 32]), [], blob.meta()));
    /// let (three, four) = (seal(3)?, seal(4)?);
    /// let mut forged = three.as_bytes().to_vec();
    /// let at = forged.len() - 64;
    /// forged[at..].copy_from_slice(&four.as_bytes()[at..]);
    /// let item = SignedItem::new(Signed::decode(forged.into())?, blob);
    /// let msg = SyncMessage::LooseCommit(BlobMessage { id: tree, sender_heads: RemoteHeads::default(), item });
    /// b.handle_message(Message::Sync(msg).encode()?, now)?;
    /// while let Work::More = b.poll_work(now) {}
    /// assert!(b.poll_event().expect("answered").result.is_err());
    /// assert!(b.verifies_one_by_one());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn verifies_one_by_one(&self) -> bool {
        self.verify_one_by_one
    }

    /// The ephemeral state (our subscriptions, the peer's, the limits), or
    /// `None` while the connection has carried no ephemeral message and no
    /// ephemeral limits were set: no subscriptions either way.
    #[must_use]
    pub fn ephemeral(&self) -> Option<&EphemeralSession> {
        self.extras.as_ref()?.ephemeral.as_ref()
    }

    /// The ephemeral state, made if need be; once the peer is known, with
    /// its window from the replay table if the session has one.
    fn ephemeral_mut(&mut self) -> &mut EphemeralSession {
        let seed = self.seed;
        let ephemeral = self
            .extras
            .get_or_insert_with(Box::default)
            .ephemeral
            .get_or_insert_with(|| {
                EphemeralSession::new(EphemeralConfig::default(), ephemeral_rng(seed))
            });
        if let (Some(table), Some(remote)) = (&self.replay_table, &self.remote) {
            if !ephemeral.window_is_shared() {
                ephemeral.share_window(table.window(remote.peer()));
            }
        }
        ephemeral
    }

    /// Replaces the ephemeral limits; subscriptions are kept, the
    /// session's own deduplication window starts empty (its peer's, from
    /// a replay table, is kept).
    pub fn set_ephemeral_config(&mut self, config: EphemeralConfig) {
        self.ephemeral_mut().set_config(config);
    }

    /// Whether the session takes another received message now: nothing is
    /// being verified, no event waits, and nothing waits in
    /// [`Session::poll_transmit`] (so a peer that does not read what we
    /// answer stops being read: at most one answer is ever queued).
    #[must_use]
    pub fn wants_message(&self) -> bool {
        match &self.phase {
            Phase::Opening(opening) => opening.wants_message(),
            Phase::Open => self.inbound.is_none() && !self.has_transmit() && !self.needs_signer(),
            Phase::Opened(_) | Phase::Closing(_) | Phase::Closed => false,
        }
    }

    /// The next message the protocol sends on its own, oldest first: write
    /// it before any message of the caller's, so the peer sees them in the
    /// order they were decided. Today: the `SubscribeRejected` answering
    /// the topics of a peer's Subscribe beyond
    /// [`EphemeralConfig::max_remote_topics`].
    pub fn poll_transmit(&mut self) -> Option<Message> {
        let queue = &mut self.extras.as_mut()?.outbound;
        let message = queue.pop_front();
        if queue.is_empty() {
            // Nothing held while idle.
            *queue = VecDeque::new();
        }
        message
    }

    /// Whether [`Session::poll_transmit`] has a message.
    #[must_use]
    pub fn has_transmit(&self) -> bool {
        self.extras
            .as_ref()
            .is_some_and(|extras| !extras.outbound.is_empty())
    }

    fn transmit(&mut self, message: Message) {
        self.extras
            .get_or_insert_with(Box::default)
            .outbound
            .push_back(message);
    }

    fn operations(&self) -> Option<&Operations> {
        self.extras.as_ref()?.operations.as_ref()
    }

    fn operations_mut(&mut self) -> &mut Operations {
        let seed = self.seed;
        self.extras
            .get_or_insert_with(Box::default)
            .operations
            .get_or_insert_with(|| Operations::new(operations_rng(seed)))
    }

    /// Starts `operation` (see [`Operation`]), to end by
    /// `deadline` at the latest: what it sends waits in
    /// [`Session::poll_transmit`], and its end in
    /// [`Session::poll_completed`]. A registration's first message waits
    /// for [`Session::sign_with`].
    ///
    /// ```
    /// # use bijou_frame::proto::handshake::{HandshakeConfig, Initiator, Responder};
    /// # use bijou_frame::proto::message::*;
    /// # use bijou_frame::proto::session::*;
    /// # use bijou_frame::proto::time::Now;
    /// # use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity};
    /// # let (alice, bob) = (SigningKey::from_bytes(&[1; 32]), SigningKey::from_bytes(&[2; 32]));
    /// # let now = Now::from_secs(1_700_000_000);
    /// # let initiator = Initiator::new(&alice, Audience::Known(bob.peer_id()), now, [7; 16])?;
    /// # let answer = Responder::new(HandshakeConfig::default()).answer(&bob, initiator.challenge().clone(), now);
    /// # let at_alice = initiator.receive(answer.reply.expect("a response"))?;
    /// let mut session = Session::new(alice.peer_id(), at_alice, SessionConfig::new([1; 32]));
    /// let tree = SedimentreeId::new([9; 32]);
    /// let deadline = now.monotonic.saturating_add(core::time::Duration::from_secs(10));
    /// let id = session.start(Operation::Fetch(tree), deadline)?;
    /// let request = session.poll_transmit().expect("the BatchSyncRequest");
    /// assert_eq!(request.kind_name(), "sync message");
    ///
    /// // Nobody answers: at the deadline the fetch ends, once.
    /// session.handle_timeout(Now::new(now.unix_secs + 10, deadline));
    /// let done = session.poll_completed().expect("ended");
    /// assert_eq!(done.id, id);
    /// assert!(matches!(done.result, Err(OperationError::TimedOut { .. })));
    /// assert!(session.poll_completed().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`StartError`]: a push of something other than a LooseCommit, a
    /// message that cannot be encoded, or a session not open (before
    /// [`Event::Established`], after close). Nothing is sent or recorded.
    pub fn start(
        &mut self,
        operation: Operation,
        deadline: Timestamp,
    ) -> Result<OperationId, StartError> {
        if !self.is_established() {
            return Err(StartError::NotOpen {
                kind: operation.kind_name(),
            });
        }
        let local = self.local;
        let (id, first) = self.operations_mut().start(operation, local, deadline)?;
        if let Some(first) = first {
            // A Subscribe is recorded as it is sent, as `on_send` records
            // the caller's.
            if let Message::Ephemeral(EphemeralMessage::Subscribe(topics)) = &first {
                self.ephemeral_mut().subscribe(topics);
            }
            self.transmit(first);
        }
        Ok(id)
    }

    /// Whether an operation waits for [`Session::sign_with`] (a keyhive
    /// registration's next message). Meanwhile the session reads nothing.
    #[must_use]
    pub fn needs_signer(&self) -> bool {
        self.operations().is_some_and(Operations::needs_signer)
    }

    /// Signs what the operations waiting for a signer send next, as
    /// `signer` (the key that ran the handshake), and queues it in
    /// [`Session::poll_transmit`]. An operation whose signing fails ends
    /// with [`OperationError::Keyhive`].
    ///
    /// # Errors
    ///
    /// [`WrongSigner`]: another key; nothing was signed.
    pub fn sign_pending_with<S: Identity + ?Sized>(
        &mut self,
        signer: &S,
    ) -> Result<(), WrongSigner> {
        if signer.peer_id() != self.local {
            return Err(WrongSigner {
                signer: signer.peer_id(),
                local: self.local,
            });
        }
        if !self.needs_signer() {
            return Ok(());
        }
        #[cfg(feature = "keyhive")]
        if let Some(server) = self.remote_peer() {
            for message in self.operations_mut().sign_with(signer, server, None) {
                self.transmit(message);
            }
        }
        Ok(())
    }

    /// The next ended operation, oldest first: each started operation
    /// ends here exactly once.
    pub fn poll_completed(&mut self) -> Option<Completed> {
        self.extras.as_mut()?.operations.as_mut()?.poll_completed()
    }

    /// The end of operation `id`, if it has ended and was not taken yet.
    pub fn completed(&mut self, id: OperationId) -> Option<Completed> {
        self.extras.as_mut()?.operations.as_mut()?.completed(id)
    }

    /// Whether an ended operation waits in [`Session::poll_completed`].
    #[must_use]
    pub fn has_completed(&self) -> bool {
        self.operations().is_some_and(Operations::has_completed)
    }

    /// Whether operation `id` is still running.
    #[must_use]
    pub fn is_in_flight(&self, id: OperationId) -> bool {
        self.operations().is_some_and(|ops| ops.is_in_flight(id))
    }

    /// What operation `id` waits for (`"BatchSyncResponse"`), while it
    /// runs.
    #[must_use]
    pub fn waiting_for(&self, id: OperationId) -> Option<&'static str> {
        self.operations()?.waiting_for(id)
    }

    /// How many operations are running.
    #[must_use]
    pub fn operations_in_flight(&self) -> usize {
        self.operations().map_or(0, Operations::in_flight)
    }

    /// A received message, done: an operation takes it if it is its
    /// answer, else it waits in [`Session::poll_event`].
    fn settle(&mut self, received: Received) {
        let received = match self.extras.as_mut().and_then(|e| e.operations.as_mut()) {
            Some(ops) => ops.offer(received),
            None => Some(received),
        };
        // The operations stay once made (their ids and random draws go
        // on; their queues hold nothing while idle).
        self.inbound = received.map(|received| Box::new(Inbound::Ready(received)));
    }

    /// Whether verification work is pending ([`Session::poll_work`]).
    #[must_use]
    pub fn has_work(&self) -> bool {
        matches!(self.inbound.as_deref(), Some(Inbound::Verifying { .. }))
    }

    /// Takes one whole received message (no frame prefix) at `now`: decodes
    /// it and answers what needs no signature check at once (malformed, a
    /// handshake message, ephemeral control messages and the cheap
    /// ephemeral checks); anything else waits for [`Session::poll_work`].
    ///
    /// # Errors
    ///
    /// [`Busy`], with the bytes, unless [`Session::wants_message`].
    pub fn handle_message(&mut self, bytes: Bytes, now: Now) -> Result<(), Busy> {
        if !self.wants_message() {
            return Err(Busy(bytes));
        }
        if let Phase::Opening(opening) = &mut self.phase {
            let key = match self.local.verifying_key() {
                Ok(key) => key,
                Err(_) => return Err(Busy(bytes)),
            };
            let book = &mut self.extras.get_or_insert_with(Box::default).book;
            let progress = opening.on_message(key, bytes, now, book);
            self.progress(progress);
            return Ok(());
        }
        let Some(peer) = self.remote_peer() else {
            return Err(Busy(bytes));
        };
        let frame = MessageFrame::decode(bytes);
        let ephemeral = match frame.message {
            Ok(Message::Ephemeral(_)) => Some(self.ephemeral_mut()),
            _ => None,
        };
        match Pending::start(frame, ephemeral, Some(peer), now) {
            Start::Answered(received) => {
                // The part of a Subscribe over the cap is answered by the
                // protocol, not the caller.
                if let Ok(Delivered::Subscribed(outcome)) = &received.result {
                    if let Some(rejected) = outcome.rejected.clone() {
                        self.transmit(EphemeralMessage::SubscribeRejected(rejected).into());
                    }
                }
                self.settle(received);
            }
            Start::Verify(pending) => {
                self.inbound = Some(Box::new(Inbound::Verifying {
                    pending,
                    wait: None,
                }));
            }
        }
        Ok(())
    }

    /// Does one bounded step of the pending verification at `now`: pays for
    /// at most [`Session::verify_step`] items from the budget and verifies
    /// them. When the message is done, its [`Received`] waits in
    /// [`Session::poll_event`].
    pub fn poll_work(&mut self, now: Now) -> Work {
        let Some(inbound) = self.inbound.as_mut() else {
            return Work::Idle;
        };
        let Inbound::Verifying { pending, wait } = &mut **inbound else {
            return Work::Idle;
        };
        match pending.step(
            &mut self.budget,
            self.extras
                .as_mut()
                .and_then(|extras| extras.ephemeral.as_mut()),
            self.step,
            &mut self.verify_one_by_one,
            now,
        ) {
            pending::Step::More => {
                *wait = None;
                Work::More
            }
            pending::Step::Wait(at) => {
                *wait = Some(at);
                Work::Wait(at)
            }
            pending::Step::Done(received) => {
                self.settle(*received);
                Work::Idle
            }
            pending::Step::Finished => {
                let done = match self.inbound.take().map(|inbound| *inbound) {
                    Some(Inbound::Verifying { pending, .. }) => pending.finish(),
                    _ => None,
                };
                if let Some(received) = done {
                    self.settle(received);
                }
                Work::Idle
            }
        }
    }

    /// When [`Session::handle_timeout`] should be called: the instant the
    /// budget allows the next step if a step is waiting for it, or the
    /// earliest deadline of an operation, whichever comes first.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        let budget = match self.inbound.as_deref() {
            Some(Inbound::Verifying { wait, .. }) => *wait,
            _ => None,
        };
        let operation = self.operations().and_then(Operations::next_deadline);
        match (budget, operation) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A deadline from [`Session::poll_timeout`] passed: ends the
    /// operations whose deadline is `now` or earlier (each with its
    /// [`Completed`]), then does what [`Session::poll_work`] does.
    pub fn handle_timeout(&mut self, now: Now) -> Work {
        if let Some(ops) = self.extras.as_mut().and_then(|e| e.operations.as_mut()) {
            ops.expire(now.monotonic);
        }
        self.poll_work(now)
    }

    /// The next received message, once decoded and verified.
    pub fn poll_event(&mut self) -> Option<Received> {
        if !matches!(self.inbound.as_deref(), Some(Inbound::Ready(_))) {
            return None;
        }
        match self.inbound.take().map(|inbound| *inbound) {
            Some(Inbound::Ready(received)) => Some(received),
            _ => None,
        }
    }

    /// The send-side rules, before `message` is written by the caller:
    /// refuses a handshake message, and records our own Subscribe and
    /// Unsubscribe (once they are known to encode), so the peer's messages
    /// for those topics are accepted (or refused) from now on, however the
    /// message was sent.
    ///
    /// # Errors
    ///
    /// [`SendRefused::HandshakeAfterHandshake`]; [`SendRefused::Encode`]
    /// for a Subscribe or Unsubscribe of more than 65,535 topics (nothing
    /// recorded).
    pub fn on_send(&mut self, message: &Message) -> Result<(), SendRefused> {
        match message {
            Message::Handshake(h) => Err(SendRefused::HandshakeAfterHandshake {
                kind: h.kind_name(),
            }),
            Message::Ephemeral(EphemeralMessage::Subscribe(topics)) => {
                message.wire_len()?;
                self.ephemeral_mut().subscribe(topics);
                Ok(())
            }
            Message::Ephemeral(EphemeralMessage::Unsubscribe(topics)) => {
                message.wire_len()?;
                self.ephemeral_mut().unsubscribe(topics);
                Ok(())
            }
            Message::Sync(_) | Message::Ephemeral(_) | Message::Keyhive(_) => Ok(()),
        }
    }

    /// [`Session::on_send`] for encoded message bytes (a received message,
    /// forwarded untouched): a handshake message is refused; an ephemeral
    /// Subscribe or Unsubscribe is decoded and recorded.
    ///
    /// # Errors
    ///
    /// [`SendRefused::HandshakeAfterHandshake`].
    pub fn on_send_encoded(&mut self, bytes: &Bytes) -> Result<(), SendRefused> {
        match Message::peek_kind(bytes) {
            Some(MessageKind::Handshake) => Err(SendRefused::HandshakeAfterHandshake {
                kind: "handshake message",
            }),
            // Only a Subscribe or an Unsubscribe changes the session: decode
            // those (a few topics), not every forwarded message.
            Some(MessageKind::SubscriptionChange) => match Message::decode(bytes.clone()) {
                Ok(message @ Message::Ephemeral(_)) => self.on_send(&message),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// [`Session::on_send`], then the message's bytes to send.
    ///
    /// # Errors
    ///
    /// [`SendRefused`].
    pub fn encode(&mut self, message: &Message) -> Result<Bytes, SendRefused> {
        // Check the encoding before recording anything.
        let bytes = message.encode()?;
        self.on_send(message)?;
        Ok(bytes)
    }

    /// Signs `payload` for `topic` as `signer`, stamped `now` with a fresh
    /// nonce: the message to publish.
    ///
    /// # Errors
    ///
    /// [`PublishError`]: too large, or the signer failed.
    pub fn sign_ephemeral<S: Identity + ?Sized>(
        &mut self,
        signer: &S,
        topic: Topic,
        payload: impl Into<Bytes>,
        now: Now,
    ) -> Result<SignedEphemeral, PublishError> {
        self.ephemeral_mut().seal(signer, topic, payload, now)
    }

    /// Publishes `payload` for `topic`, stamped `now` with a fresh nonce:
    /// its signature is asked for ([`Output::Sign`]) and the message sent
    /// ([`Output::Transmit`]) once it is given, publishes in the order
    /// they were made. At most [`MAX_UNSIGNED_PUBLISHES`] wait for their
    /// signature at once. Published during the handshake, it waits for
    /// [`Event::Established`].
    ///
    /// # Errors
    ///
    /// [`PublishError::TooLarge`] above the payload limit;
    /// [`PublishError::Backlog`] while [`MAX_UNSIGNED_PUBLISHES`] wait
    /// for the signer; [`PublishError::Closed`] once the session closed.
    /// Nothing was queued.
    pub fn publish(
        &mut self,
        topic: Topic,
        payload: impl Into<Bytes>,
        now: Now,
    ) -> Result<(), PublishError> {
        if self.is_closed() {
            return Err(PublishError::Closed);
        }
        let waiting = self.extras.as_ref().map_or(0, |e| e.publishing.len());
        if waiting >= MAX_UNSIGNED_PUBLISHES {
            return Err(PublishError::Backlog {
                waiting,
                max: MAX_UNSIGNED_PUBLISHES,
            });
        }
        let payload = self.ephemeral_mut().payload(topic, payload, now)?;
        let extras = self.extras.get_or_insert_with(Box::default);
        extras.published += 1;
        let place = extras.published;
        extras.publishing.push_back((place, payload));
        Ok(())
    }

    /// Queues `message` to send ([`Output::Transmit`]) after what is
    /// queued already, under the send-side rules of [`Session::on_send`].
    ///
    /// # Errors
    ///
    /// [`SendRefused`]; also before the peer is authenticated and after
    /// close ([`SendRefused::NotOpen`]). Nothing was queued.
    pub fn send(&mut self, message: Message) -> Result<(), SendRefused> {
        if !self.is_established() {
            return Err(SendRefused::NotOpen {
                kind: message.kind_name(),
            });
        }
        message.wire_len()?;
        self.on_send(&message)?;
        self.transmit(message);
        Ok(())
    }

    /// Hands in the signature for `id` (a [`SignRequest`] from
    /// [`Session::poll`]), made by the session's key over
    /// [`SignRequest::message`]. It is checked (`verify_strict`) before
    /// anything is sealed; what it completes goes out at the next poll.
    ///
    /// # Errors
    ///
    /// [`SignatureRefused`]: no such open request, or a signature that
    /// does not verify; nothing changed and the request stays open.
    pub fn handle_signature(
        &mut self,
        id: SignId,
        signature: Signature,
    ) -> Result<(), SignatureRefused> {
        let key = self
            .local
            .verifying_key()
            .map_err(|_| SignatureRefused::Unknown { id })?;
        let Some(extras) = self.extras.as_mut() else {
            return Err(SignatureRefused::Unknown { id });
        };
        extras.book.answer(id, signature, &key)
    }

    /// Signs `request` with `key` (an in-memory key, or any signer that
    /// answers at once) and hands the signature in: the one-line answer
    /// to [`Output::Sign`].
    ///
    /// # Errors
    ///
    /// [`SignatureRefused::SignerFailed`] if `key` could not sign;
    /// otherwise as [`Session::handle_signature`].
    pub fn sign_with<S: Identity + ?Sized>(
        &mut self,
        request: &SignRequest,
        key: &S,
    ) -> Result<(), SignatureRefused> {
        let signature = key
            .sign_message(request.message())
            .map_err(|_| SignatureRefused::SignerFailed { id: request.id() })?;
        self.handle_signature(request.id(), signature)
    }

    /// The transport ended (the peer closed it, or it failed): what was
    /// already handed in is still verified and delivered, the operations
    /// in flight end with [`OperationError::Closed`], then
    /// [`Event::Closed`] with [`Close::PeerClosed`], during the handshake
    /// too ([`Session::authenticated`] says whether it had completed).
    pub fn handle_close(&mut self) {
        self.end(Close::PeerClosed);
    }

    /// Closes the session from our side: nothing more is read, what is
    /// queued to send still goes out, the operations in flight end with
    /// [`OperationError::Closed`], then [`Event::Closed`] with
    /// [`Close::Local`].
    pub fn close(&mut self) {
        self.end(Close::Local);
    }

    fn end(&mut self, close: Close) {
        if self.is_closed() {
            return;
        }
        if let Close::Local = close {
            // Nothing more for the application.
            self.inbound = None;
        }
        self.phase = Phase::Closing(Box::new((close, None)));
    }

    /// The next output, at `now`: call it in a loop until
    /// [`Output::Wait`], carry out each output in the order given, and
    /// call again when a message or a signature arrives or the wait's
    /// deadline passes. See [`Output`] for each case and
    /// [`Session::client`] for a whole driver.
    ///
    /// Each call does at most one bounded step of verification
    /// ([`Output::Continue`] when more remain), ends what `now` has
    /// passed (the handshake's deadline, operations' deadlines), and
    /// hands out, in this order: bytes to send, sign requests, then
    /// events.
    pub fn poll(&mut self, now: Now) -> Output {
        self.expire(now);
        self.seal();
        // The handshake's own reply goes first.
        let reply = match &mut self.phase {
            Phase::Opening(opening) => opening.take_send(),
            Phase::Opened(reply) => reply.take(),
            Phase::Closing(closing) => closing.1.take(),
            Phase::Open | Phase::Closed => None,
        };
        if let Some(bytes) = reply {
            return Output::Transmit(bytes);
        }
        if let Phase::Opened(None) = self.phase {
            self.phase = Phase::Open;
            if let Some(remote) = self.remote {
                self.tidy_extras();
                return Output::Event(Event::Established(remote));
            }
        }
        let closing_by_peer =
            matches!(&self.phase, Phase::Closing(c) if matches!(c.0, Close::PeerClosed));
        if !closing_by_peer {
            if let Some(message) = self.poll_transmit() {
                match message.encode() {
                    Ok(bytes) => return Output::Transmit(bytes),
                    // What the session queues was checked to encode.
                    Err(_) => return Output::Continue,
                }
            }
        } else if let Some(extras) = self.extras.as_mut() {
            extras.outbound = VecDeque::new();
        }
        if !self.is_closed() {
            if let Some(request) = self.extras.as_mut().and_then(|e| e.book.next_request()) {
                return Output::Sign(request);
            }
        }
        if let Some(completed) = self.poll_completed() {
            return Output::Event(Event::Completed(completed));
        }
        if let Some(received) = self.poll_event() {
            return Output::Event(Event::Received(received));
        }
        if self.has_work() {
            match self.poll_work(now) {
                Work::More => return Output::Continue,
                Work::Idle => return self.poll(now),
                Work::Wait(_) => {}
            }
        }
        if let Phase::Closing(_) = self.phase {
            if !self.has_work() {
                if let Some(ops) = self.extras.as_mut().and_then(|e| e.operations.as_mut()) {
                    ops.close_all();
                }
                if let Some(completed) = self.poll_completed() {
                    return Output::Event(Event::Completed(completed));
                }
                if let Phase::Closing(closing) = core::mem::replace(&mut self.phase, Phase::Closed)
                {
                    self.release();
                    return Output::Event(Event::Closed(closing.0));
                }
            }
        }
        self.tidy_extras();
        Output::Wait {
            read: self.wants_message(),
            until: self.deadline(),
        }
    }

    /// Frees the extras' box once it holds nothing (an idle connection
    /// keeps none; sign ids may start again from 1 then, as no request is
    /// open).
    fn tidy_extras(&mut self) {
        let empty = self.extras.as_ref().is_some_and(|e| {
            e.book.is_empty()
                && e.publishing.is_empty()
                && e.ephemeral.is_none()
                && e.outbound.is_empty()
                && e.operations.is_none()
        });
        if empty {
            self.extras = None;
        }
    }

    /// When the session needs polling again without input.
    fn deadline(&self) -> Option<Timestamp> {
        match &self.phase {
            Phase::Opening(opening) => Some(opening.deadline),
            Phase::Closed => None,
            _ => self.poll_timeout(),
        }
    }

    /// Ends what `now` has passed.
    fn expire(&mut self, now: Now) {
        match &self.phase {
            Phase::Opening(opening) if opening.deadline <= now.monotonic => {
                let close = Close::HandshakeTimedOut {
                    after: opening.timeout,
                    waiting_for: opening.waiting_for(),
                };
                self.phase = Phase::Closing(Box::new((close, None)));
            }
            Phase::Open => {
                if let Some(ops) = self.extras.as_mut().and_then(|e| e.operations.as_mut()) {
                    ops.expire(now.monotonic);
                }
            }
            _ => {}
        }
    }

    /// Seals what the signatures handed in complete: the handshake's
    /// message, registrations' next messages, publishes (see
    /// [`signing`]).
    fn seal(&mut self) {
        let Some(extras) = self.extras.as_mut() else {
            return;
        };
        if extras.book.is_empty() && extras.publishing.is_empty() && !self.needs_signer() {
            return;
        }
        let Ok(key) = self.local.verifying_key() else {
            return;
        };
        if let Phase::Opening(opening) = &mut self.phase {
            if let Some(extras) = self.extras.as_mut() {
                let progress = opening.on_signature(&mut extras.book);
                self.progress(progress);
            }
            return;
        }
        if !self.is_established() {
            return;
        }
        #[cfg(feature = "keyhive")]
        let server = self.remote_peer();
        let Some(extras) = self.extras.as_mut() else {
            return;
        };
        let mut sealed = VecDeque::new();
        {
            let replay = Replay::new(key, &mut extras.book);
            #[cfg(feature = "keyhive")]
            if let (Some(ops), Some(server)) = (extras.operations.as_mut(), server) {
                if ops.needs_signer() {
                    sealed.extend(ops.sign_with(&replay, server, Some(&replay)));
                }
            }
            while let Some((place, payload)) = extras.publishing.front() {
                let owner = Owner::Publish(*place);
                replay.start(owner);
                match SignedEphemeral::seal(&replay, payload) {
                    Err(_) if replay.missing() => break,
                    Ok(signed) => sealed.push_back(EphemeralMessage::from(signed).into()),
                    // Cannot happen: the payload was checked as it was
                    // made, and the signature as it was handed in.
                    Err(_) => {}
                }
                replay.done(owner);
                extras.publishing.pop_front();
            }
        }
        // Requests nobody waits for any more (an operation that timed
        // out) go.
        let ops = extras.operations.as_ref();
        let publishing = &extras.publishing;
        extras.book.retain(|owner| match owner {
            Owner::Handshake => false,
            Owner::Operation(_) => ops.is_some_and(|ops| ops.owns(owner)),
            Owner::Publish(place) => publishing.iter().any(|(p, _)| *p == place),
        });
        for message in sealed {
            self.transmit(message);
        }
    }

    /// The authenticated peer for a snapshot: `None` while the handshake
    /// runs.
    pub(crate) fn snapshot_remote(&self) -> Result<Option<Authenticated>, snapshot::SnapshotError> {
        let busy = |what| Err(snapshot::SnapshotError::Busy { what });
        match self.phase {
            Phase::Open => {}
            Phase::Opening(_) => return Ok(None),
            Phase::Opened(_) => return busy("the Established event waits in poll"),
            Phase::Closing(_) | Phase::Closed => return busy("the session is closed"),
        }
        if self
            .extras
            .as_ref()
            .is_some_and(|e| !e.publishing.is_empty())
        {
            return busy("a publish waits for its signature");
        }
        Ok(self.remote)
    }

    /// Applies what a step of the handshake led to.
    fn progress(&mut self, progress: Progress) {
        match progress {
            Progress::Waiting => {}
            Progress::Send(bytes) => {
                if let Phase::Opening(opening) = &mut self.phase {
                    opening.send(bytes);
                }
            }
            Progress::Established(remote, reply) => {
                self.remote = Some(remote);
                self.phase = Phase::Opened(reply);
                if let Some(extras) = self.extras.as_mut() {
                    extras.book.release(Owner::Handshake);
                }
            }
            Progress::Failed(error, reply) => {
                self.phase = Phase::Closing(Box::new((Close::Handshake(error), reply)));
            }
        }
    }

    /// Frees what a closed session no longer needs.
    fn release(&mut self) {
        if let Some(extras) = self.extras.as_mut() {
            extras.book.retain(|_| false);
            extras.publishing = VecDeque::new();
            extras.outbound = VecDeque::new();
        }
        self.inbound = None;
    }
}

/// How many publishes may wait for their signature at once
/// ([`Session::publish`]).
pub const MAX_UNSIGNED_PUBLISHES: usize = 64;

/// The handshake nonce: the seed's own, domain-separated stream.
fn handshake_nonce(seed: [u8; 32]) -> [u8; 16] {
    let hash = blake3::keyed_hash(&seed, b"bijou handshake nonce");
    let mut nonce = [0; 16];
    nonce.copy_from_slice(&hash.as_bytes()[..16]);
    nonce
}

/// The ephemeral state's generator: the seed's own stream.
fn ephemeral_rng(seed: [u8; 32]) -> SeededRng {
    SeededRng::from_seed(seed)
}

/// The operations' generator: a stream of its own, split from the seed's.
fn operations_rng(seed: [u8; 32]) -> SeededRng {
    SeededRng::from_seed(seed).split()
}

/// Decodes and verifies one received message, all at once (what a
/// [`Session`] does with each message, without the pacing or the steps).
/// With no session to hold subscriptions, an ephemeral message is only
/// verified (no age, topic or duplicate check), and a Subscribe is
/// accepted whole.
///
/// ```
/// use bijou_frame::proto::session::{verify_message, Rejected};
/// let received = verify_message(bytes::Bytes::from_static(b"SUM\0junk"));
/// assert!(matches!(received.result, Err(Rejected::Malformed(_))));
/// ```
///
/// A keyhive (`SUK\0`) message is checked against the key it names (no
/// handshake says whose it should be).
#[must_use]
pub fn verify_message(bytes: Bytes) -> Received {
    pending::verify_at_once(bytes)
}

#[cfg(test)]
mod tests;
