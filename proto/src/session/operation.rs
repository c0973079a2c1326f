//! Operations: the exchanges a session runs to their end (see
//! [`Operation`]).

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::format;
use alloc::vec::Vec;
use core::fmt;

use bijou_codec::{Wire, WriteError};
#[cfg(feature = "keyhive")]
use bijou_signing::Identity;
use bijou_signing::PeerId;

use crate::keyhive::KeyhiveError;
#[cfg(feature = "keyhive")]
use crate::keyhive::{self, Registration, RootDelegation, Step, SukMessage, VerifiedSuk};
#[cfg(feature = "keyhive")]
use crate::message::MessageError;
use crate::message::{
    BatchSyncRequest, BatchSyncResponse, CommitId, EphemeralMessage, FingerprintSeed, Message,
    RemoteHeads, SedimentreeId, SyncMessage, SyncResult, Topics,
};
use crate::rng::SeededRng;
use crate::time::Timestamp;

#[cfg(feature = "keyhive")]
use super::received::Rejected;
use super::received::{Delivered, Received, VerifiedMessage};
use super::signing::Owner as Asker;
#[cfg(feature = "keyhive")]
use super::signing::Replay;
use super::snapshot::{nanos, read_topics, write_topics, RestoreError, SnapshotError};

/// An operation's id: unique within its session, counting from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OperationId(u64);

impl OperationId {
    /// The number (1 for a session's first operation).
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "operation #{}", self.0)
    }
}

/// An exchange a [`Session`](super::Session) runs to its end: started
/// with [`Session::start`](super::Session::start), it gets an id and ends
/// in exactly one [`Completed`].
///
/// ```text
///   start(Operation, deadline) ──► OperationId; what it sends waits in poll_transmit()
///
///   Push(LooseCommit)   ── the commit ──►             ◄── HeadsUpdate naming its head
///                                                         (or a later push's, same tree)
///   Fetch(tree)         ── BatchSyncRequest{nonce} ──► ◄── BatchSyncResponse{nonce, tree}
///   Probe(tree)         ── BatchSyncRequest{nonce} ──► ◄── BatchSyncResponse{nonce, tree}
///   Register(document)  ── RequestContactCard ──► ... ◄── SyncConfirmation   (keyhive)
///   Subscribe(topics)   ── Subscribe ──►               ◄── SubscribeRejected (or silence)
///
///   the answer ──► poll_completed() / completed(id):
///                  Completed { id, result: Ok(Outcome) | Err(OperationError) }
///   the deadline passes ──► handle_timeout(now) ──► Err(TimedOut { waiting_for })
///                           (a Subscribe nobody refused: Ok(Subscribed { refused: None }))
/// ```
///
/// A received message that ends an operation is consumed by it: it is in
/// the outcome, never also in [`poll_event`](super::Session::poll_event).
/// Anything else (a response to an operation never started, a second
/// response to a finished one) is delivered as an ordinary message; no
/// operation ends twice.
///
/// # Signing as an effect
///
/// A keyhive registration signs four messages, three of them only once
/// the server's answer says what they hold. The session holds no key:
/// while [`needs_signer`](super::Session::needs_signer) is true it reads
/// nothing, and [`sign_with`](super::Session::sign_with) resumes it with
/// the connection's own key (an in-memory key, or any
/// [`Identity`](bijou_signing::Identity), which may be a hardware or
/// remote signer that the caller awaited first).
// Passed once to `start`, never stored: boxing the commit would cost
// every push an allocation for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Operation {
    /// Sends a commit (a [`SyncMessage::LooseCommit`]) and waits for the
    /// peer's `HeadsUpdate` for its tree naming its head, or the head of a
    /// push started after it on the same tree (a server acknowledges in
    /// order). A Subduction server answers a commit it refuses with
    /// silence: the push then times out.
    Push(SyncMessage),
    /// Asks for the whole tree (a `BatchSyncRequest` with no fingerprints
    /// and no subscription) and waits for the response with its nonce.
    Fetch(SedimentreeId),
    /// A fetch whose answer is reduced to what it says about access
    /// ([`TreeAccess`]): what to tell a user whose pushes go unanswered.
    Probe(SedimentreeId),
    /// Registers a keyhive document with the peer (see
    /// [`keyhive::Registration`](crate::keyhive::Registration)); push to
    /// it only once this is done. With the `keyhive` feature (on by
    /// default).
    #[cfg(feature = "keyhive")]
    Register(RootDelegation),
    /// Subscribes to ephemeral topics (recorded at once, as
    /// [`Session::on_send`](super::Session::on_send) does) and waits for a
    /// refusal until the deadline: a peer answers a Subscribe only to
    /// refuse topics.
    Subscribe(Topics),
}

impl Operation {
    /// The operation's name, for errors: `"push"`, `"fetch"`, `"probe"`,
    /// `"registration"` or `"subscribe"`.
    #[must_use]
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::Push(_) => "push",
            Self::Fetch(_) => "fetch",
            Self::Probe(_) => "probe",
            #[cfg(feature = "keyhive")]
            Self::Register(_) => "registration",
            Self::Subscribe(_) => "subscribe",
        }
    }
}

/// What a finished operation established.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Outcome {
    /// The peer acknowledged the commit.
    Pushed {
        /// The tree.
        tree: SedimentreeId,
        /// The commit pushed.
        head: CommitId,
        /// The heads of the `HeadsUpdate` that acknowledged it.
        heads: RemoteHeads,
    },
    /// The tree, its items verified (bad ones named in `rejected`).
    Fetched(Box<VerifiedMessage>),
    /// What the peer's answer to a probe says.
    Probed(TreeAccess),
    /// The document is registered.
    #[cfg(feature = "keyhive")]
    Registered(keyhive::Outcome),
    /// The subscription holds, except for the topics the peer refused:
    /// it will not send those (they stay in our subscriptions; subscribe
    /// again later, or unsubscribe).
    Subscribed {
        /// The topics the peer refused, if any.
        refused: Option<Topics>,
    },
}

/// What a probe found out about a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeAccess {
    /// The peer answered the fetch: this key may read the tree (a server
    /// that enforces keyhive may still refuse pushes from a key that may
    /// only read).
    Readable {
        /// How many heads the peer has.
        heads: usize,
    },
    /// The peer enforces access control (keyhive) and this key may not
    /// read the tree: no document with that id, or none granting this key
    /// anything. Pushes to it are dropped.
    Unauthorized,
    /// The peer does not have the tree.
    NotFound,
    /// No answer by the deadline: the silence is not an access refusal
    /// (the peer is overloaded, hung, or not a Subduction node).
    Silent,
}

impl TreeAccess {
    /// A sentence for a user whose pushes to `tree` as `key` went
    /// unacknowledged.
    #[must_use]
    pub fn explain(self, tree: SedimentreeId, key: PeerId) -> alloc::string::String {
        match self {
            Self::Readable { .. } => format!("the server lets {key} read tree {tree}; unacknowledged pushes have another cause (the server is slow, or this key may read but not write)"),
            Self::Unauthorized => format!("the server enforces keyhive access control: tree {tree} is not a document {key} may write (register it first, or use a document this key was granted Edit on)"),
            Self::NotFound => format!("the server does not have tree {tree}, and did not take the pushes"),
            Self::Silent => format!("the server answered no fetch of tree {tree} either: the silence is not an access refusal (the server is overloaded, hung, or not a Subduction server)"),
        }
    }
}

/// Why an operation ended without its outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OperationError {
    /// The deadline passed first.
    #[error("no {waiting_for} from the peer by the operation's deadline (a Subduction server answers what it refuses with silence)")]
    TimedOut {
        /// What the operation waited for.
        waiting_for: &'static str,
    },
    /// The peer answered a fetch with a refusal.
    #[error("the peer refused to send tree {tree}: {reason} (unauthorized: this key may not read it, so register the document or fetch with a key it grants; not found: the peer has no such tree)")]
    Refused {
        /// The tree asked for.
        tree: SedimentreeId,
        /// `"not found"` or `"unauthorized"` (the `SyncResult`).
        reason: &'static str,
    },
    /// A keyhive registration failed: the peer's keyhive message was
    /// malformed, badly signed or out of turn, or signing ours failed.
    #[error("keyhive registration failed: {0}")]
    Keyhive(#[source] KeyhiveError),
    /// The connection closed before the answer came.
    #[error("the connection closed while the operation waited for {waiting_for}; reconnect and start it again")]
    Closed {
        /// What the operation waited for.
        waiting_for: &'static str,
    },
}

/// One operation's end: exactly one per started operation.
#[derive(Debug, Clone)]
pub struct Completed {
    /// Which operation.
    pub id: OperationId,
    /// How it ended.
    pub result: Result<Outcome, OperationError>,
}

/// Why an operation could not start. Nothing was sent or recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A push of something other than a LooseCommit message.
    #[error("a push sends one LooseCommit message, not a {kind}")]
    NotACommit {
        /// What was given.
        kind: &'static str,
    },
    /// The operation's message cannot be encoded: a count does not fit
    /// its field (a Subscribe of more than 65,535 topics, say).
    #[error(transparent)]
    Encode(#[from] WriteError),
    /// The session is not open: the peer is not authenticated yet, or the
    /// session closed.
    #[error("refused to start a {kind}: the session is not open (wait for Event::Established; after Event::Closed, connect again)")]
    NotOpen {
        /// What it was.
        kind: &'static str,
    },
}

/// [`Session::sign_with`](super::Session::sign_with) was given another
/// key than the one that ran the handshake; nothing was signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the signer {signer} is not the key that ran the handshake ({local}); sign with the connection's own key")]
pub struct WrongSigner {
    /// The key given.
    pub signer: PeerId,
    /// The connection's key.
    pub local: PeerId,
}

/// An operation in flight.
#[derive(Debug)]
struct InFlight {
    id: OperationId,
    deadline: Timestamp,
    state: State,
}

#[derive(Debug)]
enum State {
    Push {
        tree: SedimentreeId,
        head: CommitId,
    },
    Fetch {
        tree: SedimentreeId,
        nonce: u64,
        probe: bool,
    },
    /// Not started: the first message needs the signer.
    #[cfg(feature = "keyhive")]
    RegisterUnsigned(RootDelegation),
    #[cfg(feature = "keyhive")]
    Register(Registration),
    /// The peer's next message, waiting for the signer to answer it.
    #[cfg(feature = "keyhive")]
    RegisterAnswer(Registration, Box<VerifiedSuk>),
    Subscribe(Topics),
}

impl State {
    fn waiting_for(&self) -> &'static str {
        match self {
            Self::Push { .. } => "HeadsUpdate naming the commit",
            Self::Fetch { .. } => "BatchSyncResponse",
            #[cfg(feature = "keyhive")]
            Self::RegisterUnsigned(_) | Self::RegisterAnswer(..) => "signer",
            #[cfg(feature = "keyhive")]
            Self::Register(registration) => registration.waiting_for(),
            Self::Subscribe(_) => "SubscribeRejected",
        }
    }

    fn needs_signer(&self) -> bool {
        #[cfg(feature = "keyhive")]
        return matches!(self, Self::RegisterUnsigned(_) | Self::RegisterAnswer(..));
        #[cfg(not(feature = "keyhive"))]
        false
    }
}

/// The operations of one session.
#[derive(Debug)]
pub(super) struct Operations {
    last_id: u64,
    in_flight: Vec<InFlight>,
    completed: VecDeque<Completed>,
    rng: SeededRng,
}

impl Operations {
    pub(super) fn new(rng: SeededRng) -> Self {
        Self {
            last_id: 0,
            in_flight: Vec::new(),
            completed: VecDeque::new(),
            rng,
        }
    }

    /// Records `operation` and returns what it sends first (`None` while
    /// it waits for the signer).
    pub(super) fn start(
        &mut self,
        operation: Operation,
        local: PeerId,
        deadline: Timestamp,
    ) -> Result<(OperationId, Option<Message>), StartError> {
        let (state, first) = match operation {
            Operation::Push(message) => {
                let SyncMessage::LooseCommit(commit) = &message else {
                    return Err(StartError::NotACommit {
                        kind: message.kind_name(),
                    });
                };
                let (tree, head) = commit.item.claimed_head().ok_or(StartError::NotACommit {
                    kind: "truncated LooseCommit",
                })?;
                let message = Message::Sync(message);
                message.wire_len()?;
                (State::Push { tree, head }, Some(message))
            }
            Operation::Fetch(tree) | Operation::Probe(tree) => {
                let probe = matches!(operation, Operation::Probe(_));
                let nonce = self.fresh_nonce();
                let seed = FingerprintSeed::new(self.rng.next_u64(), self.rng.next_u64());
                let request = BatchSyncRequest::new(tree, local, nonce, false, seed, [], []);
                (
                    State::Fetch { tree, nonce, probe },
                    Some(Message::Sync(request.into())),
                )
            }
            #[cfg(feature = "keyhive")]
            Operation::Register(delegation) => (State::RegisterUnsigned(delegation), None),
            Operation::Subscribe(topics) => {
                let message = Message::Ephemeral(EphemeralMessage::Subscribe(topics.clone()));
                message.wire_len()?;
                (State::Subscribe(topics), Some(message))
            }
        };
        self.last_id += 1;
        let id = OperationId(self.last_id);
        self.in_flight.push(InFlight {
            id,
            deadline,
            state,
        });
        Ok((id, first))
    }

    /// A nonce no fetch in flight uses, so each response has one owner.
    fn fresh_nonce(&mut self) -> u64 {
        loop {
            let nonce = self.rng.next_u64();
            let taken = self
                .in_flight
                .iter()
                .any(|op| matches!(op.state, State::Fetch { nonce: n, .. } if n == nonce));
            if !taken {
                return nonce;
            }
        }
    }

    pub(super) fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    pub(super) fn is_in_flight(&self, id: OperationId) -> bool {
        self.in_flight.iter().any(|op| op.id == id)
    }

    pub(super) fn waiting_for(&self, id: OperationId) -> Option<&'static str> {
        let op = self.in_flight.iter().find(|op| op.id == id)?;
        Some(op.state.waiting_for())
    }

    pub(super) fn needs_signer(&self) -> bool {
        self.in_flight.iter().any(|op| op.state.needs_signer())
    }

    /// Whether a registration running as `owner` still waits for its
    /// signer (else its sign requests are stale).
    pub(super) fn owns(&self, owner: Asker) -> bool {
        match owner {
            Asker::Operation(id) => self
                .in_flight
                .iter()
                .any(|op| op.id == id && op.state.needs_signer()),
            Asker::Handshake | Asker::Publish(_) => false,
        }
    }

    /// The earliest deadline of an operation in flight.
    pub(super) fn next_deadline(&self) -> Option<Timestamp> {
        self.in_flight.iter().map(|op| op.deadline).min()
    }

    pub(super) fn poll_completed(&mut self) -> Option<Completed> {
        let done = self.completed.pop_front();
        if self.completed.is_empty() {
            self.completed = VecDeque::new();
        }
        done
    }

    pub(super) fn completed(&mut self, id: OperationId) -> Option<Completed> {
        let at = self.completed.iter().position(|done| done.id == id)?;
        let done = self.completed.remove(at);
        if self.completed.is_empty() {
            self.completed = VecDeque::new();
        }
        done
    }

    pub(super) fn has_completed(&self) -> bool {
        !self.completed.is_empty()
    }

    fn finish(&mut self, at: usize, result: Result<Outcome, OperationError>) {
        let op = self.in_flight.remove(at);
        if self.in_flight.is_empty() {
            self.in_flight = Vec::new();
        }
        self.completed.push_back(Completed { id: op.id, result });
    }

    /// Ends every operation whose deadline is at or before `now`.
    pub(super) fn expire(&mut self, now: Timestamp) {
        while let Some(at) = self.in_flight.iter().position(|op| op.deadline <= now) {
            let result = match &self.in_flight[at].state {
                State::Subscribe(_) => Ok(Outcome::Subscribed { refused: None }),
                State::Fetch { probe: true, .. } => Ok(Outcome::Probed(TreeAccess::Silent)),
                state => Err(OperationError::TimedOut {
                    waiting_for: state.waiting_for(),
                }),
            };
            self.finish(at, result);
        }
    }

    /// Offers a received message to the operations in flight: `None` if
    /// one consumed it (its end is in the completed queue, or a keyhive
    /// answer now waits for the signer), else the message back.
    pub(super) fn offer(&mut self, received: Received) -> Option<Received> {
        if self.in_flight.is_empty() {
            return Some(received);
        }
        let Some(owner) = self.owner(&received) else {
            return Some(received);
        };
        match (owner, received.result) {
            (Owner::Pushes(newest), Ok(Delivered::Sync(verified))) => {
                if let SyncMessage::HeadsUpdate(update) = verified.message {
                    self.acknowledge(update.id, newest, &update.heads);
                }
            }
            (Owner::Fetch(at), Ok(Delivered::Sync(verified))) => {
                let probe = matches!(self.in_flight[at].state, State::Fetch { probe: true, .. });
                let result = match &verified.message {
                    SyncMessage::BatchSyncResponse(response) => fetched(response, probe),
                    _ => Ok(None),
                };
                let result = result
                    .map(|outcome| outcome.unwrap_or_else(|| Outcome::Fetched(Box::new(verified))));
                self.finish(at, result);
            }
            #[cfg(feature = "keyhive")]
            (Owner::Register(at), Ok(Delivered::Keyhive(answer))) => {
                let op = &mut self.in_flight[at];
                if let State::Register(registration) = &op.state {
                    op.state = State::RegisterAnswer(registration.clone(), answer);
                }
            }
            #[cfg(feature = "keyhive")]
            (
                Owner::Register(at),
                Err(Rejected::Keyhive(e) | Rejected::Malformed(MessageError::Keyhive(e))),
            ) => {
                self.finish(at, Err(OperationError::Keyhive(e)));
            }
            (Owner::Subscribe(at, refused), _) => {
                self.finish(at, Ok(Outcome::Subscribed { refused }));
            }
            // `owner` pairs each owner with the result it matched.
            (_, _) => {}
        }
        None
    }

    /// Which operation `received` ends or advances, if any.
    fn owner(&self, received: &Received) -> Option<Owner> {
        let first = |f: &dyn Fn(&State) -> bool| self.in_flight.iter().position(|op| f(&op.state));
        match &received.result {
            Ok(Delivered::Sync(verified)) => match &verified.message {
                SyncMessage::HeadsUpdate(update) => self
                    .newest_named(update.id, &update.heads)
                    .map(Owner::Pushes),
                SyncMessage::BatchSyncResponse(response) => first(&|state| {
                    matches!(state, State::Fetch { tree, nonce, .. }
                        if *nonce == response.nonce && *tree == response.id)
                })
                .map(Owner::Fetch),
                _ => None,
            },
            #[cfg(feature = "keyhive")]
            Ok(Delivered::Keyhive(_))
            | Err(Rejected::Keyhive(_) | Rejected::Malformed(MessageError::Keyhive(_))) => {
                first(&|state| matches!(state, State::Register(_))).map(Owner::Register)
            }
            Ok(Delivered::SubscribeRejected(topics)) => {
                if !self
                    .in_flight
                    .iter()
                    .any(|op| matches!(op.state, State::Subscribe(_)))
                {
                    return None;
                }
                // Received topics keep their wire order: sort a copy once.
                let mut theirs = topics.as_slice().to_vec();
                theirs.sort_unstable();
                let refused = |ours: &Topics| {
                    Topics::new(
                        ours.iter()
                            .filter(|t| theirs.binary_search(t).is_ok())
                            .copied(),
                    )
                };
                self.in_flight
                    .iter()
                    .enumerate()
                    .find_map(|(at, op)| match &op.state {
                        State::Subscribe(ours) => {
                            refused(ours).map(|r| Owner::Subscribe(at, Some(r)))
                        }
                        _ => None,
                    })
            }
            _ => None,
        }
    }

    /// The newest push on `tree` whose head `heads` names. The peer's
    /// heads are scanned once (an update may name a million; they come in
    /// any order), each looked up among our pushes on the tree (as many as
    /// the caller started): work bounded by the bytes received.
    fn newest_named(&self, tree: SedimentreeId, heads: &RemoteHeads) -> Option<OperationId> {
        let mut ours: Vec<(CommitId, OperationId)> = self
            .in_flight
            .iter()
            .filter_map(|op| match op.state {
                State::Push { tree: t, head } if t == tree => Some((head, op.id)),
                _ => None,
            })
            .collect();
        if ours.is_empty() {
            return None;
        }
        ours.sort_unstable();
        heads
            .heads()
            .iter()
            .filter_map(|named| {
                let at = ours.binary_search_by(|(head, _)| head.cmp(named)).ok()?;
                Some(ours[at].1)
            })
            .max()
    }

    /// Ends the pushes a `HeadsUpdate` for `tree` acknowledges: `newest`
    /// (whose head it names) and every push on the tree started before it.
    fn acknowledge(&mut self, tree: SedimentreeId, newest: OperationId, heads: &RemoteHeads) {
        let mut at = 0;
        while let Some(op) = self.in_flight.get(at) {
            match op.state {
                State::Push { tree: t, head } if t == tree && op.id <= newest => self.finish(
                    at,
                    Ok(Outcome::Pushed {
                        tree,
                        head,
                        heads: heads.clone(),
                    }),
                ),
                _ => at += 1,
            }
        }
    }

    /// Signs what the registrations waiting for the signer send next:
    /// their messages to send, in order. With `replay` (the session's
    /// signer of sign requests, which `signer` then is), a registration
    /// whose signature has not been given yet stays as it was.
    #[cfg(feature = "keyhive")]
    pub(super) fn sign_with<S: Identity + ?Sized>(
        &mut self,
        signer: &S,
        server: PeerId,
        replay: Option<&Replay<'_>>,
    ) -> Vec<Message> {
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(op) = self.in_flight.get(at) {
            if !op.state.needs_signer() {
                at += 1;
                continue;
            }
            let owner = Asker::Operation(op.id);
            if let Some(replay) = replay {
                replay.start(owner);
            }
            let mut op = self.in_flight.remove(at);
            let pending = || replay.is_some_and(Replay::missing);
            let step = match op.state {
                State::RegisterUnsigned(delegation) => {
                    match Registration::start(signer, server, delegation.clone()) {
                        Err(_) if pending() => {
                            op.state = State::RegisterUnsigned(delegation);
                            self.in_flight.insert(at, op);
                            at += 1;
                            continue;
                        }
                        step => step.map(|(registration, first)| {
                            (registration, Step::Send(Box::new(first)))
                        }),
                    }
                }
                State::RegisterAnswer(mut registration, answer) => {
                    match registration.handle(signer, &answer) {
                        Err(_) if pending() => {
                            op.state = State::RegisterAnswer(registration, answer);
                            self.in_flight.insert(at, op);
                            at += 1;
                            continue;
                        }
                        step => step.map(|step| (registration, step)),
                    }
                }
                // needs_signer() holds only for the two above; put any
                // other back as it was.
                other => {
                    op.state = other;
                    self.in_flight.insert(at, op);
                    at += 1;
                    continue;
                }
            };
            if let Some(replay) = replay {
                replay.done(owner);
            }
            let result = match step {
                Ok((registration, Step::Send(next))) => {
                    out.push(Message::Keyhive(next));
                    op.state = State::Register(registration);
                    self.in_flight.insert(at, op);
                    at += 1;
                    continue;
                }
                Ok((_, Step::SendAndDone(last, outcome))) => {
                    out.push(Message::Keyhive(last));
                    Ok(Outcome::Registered(outcome))
                }
                Ok((_, Step::Done(outcome))) => Ok(Outcome::Registered(outcome)),
                Err(e) => Err(OperationError::Keyhive(e)),
            };
            self.completed.push_back(Completed { id: op.id, result });
        }
        out
    }

    /// Ends every operation in flight: the connection closed under them.
    pub(super) fn close_all(&mut self) {
        for op in core::mem::take(&mut self.in_flight) {
            let waiting_for = op.state.waiting_for();
            self.completed.push_back(Completed {
                id: op.id,
                result: Err(OperationError::Closed { waiting_for }),
            });
        }
    }
}

impl Operations {
    /// The operations in flight, for a snapshot at `now` (see
    /// [`snapshot`](super::snapshot)).
    pub(super) fn write_snapshot(
        &self,
        w: &mut bijou_codec::Writer<'_, bytes::BytesMut>,
        now: Timestamp,
    ) -> Result<(), SnapshotError> {
        if !self.completed.is_empty() {
            return Err(SnapshotError::Busy {
                what: "an ended operation waits in poll_completed",
            });
        }
        w.bijou64(self.last_id);
        w.bijou64_len(self.in_flight.len());
        for op in &self.in_flight {
            w.bijou64(op.id.0);
            w.bijou64(nanos(op.deadline.saturating_duration_since(now)));
            match &op.state {
                State::Push { tree, head } => {
                    w.u8(0);
                    w.bytes(tree.as_bytes());
                    w.bytes(head.as_bytes());
                }
                State::Fetch { tree, nonce, probe } => {
                    w.u8(1);
                    w.bytes(tree.as_bytes());
                    w.u64(*nonce);
                    w.u8(u8::from(*probe));
                }
                State::Subscribe(topics) => {
                    w.u8(2);
                    write_topics(w, topics.iter());
                }
                #[cfg(feature = "keyhive")]
                State::RegisterUnsigned(delegation) => {
                    w.u8(3);
                    w.bijou64_len(delegation.event.len());
                    w.bytes(&delegation.event);
                }
                #[cfg(feature = "keyhive")]
                State::Register(registration) => {
                    w.u8(4);
                    w.u8(registration.stage());
                    let event = &registration.delegation().event;
                    w.bijou64_len(event.len());
                    w.bytes(event);
                }
                #[cfg(feature = "keyhive")]
                State::RegisterAnswer(registration, answer) => {
                    // The answer goes in as received; a restore checks its
                    // signature again.
                    let answer =
                        answer
                            .message()
                            .to_bytes()
                            .map_err(|_| SnapshotError::Unsupported {
                                what: "a keyhive answer does not encode",
                            })?;
                    w.u8(5);
                    w.u8(registration.stage());
                    let event = &registration.delegation().event;
                    w.bijou64_len(event.len());
                    w.bytes(event);
                    w.bijou64_len(answer.len());
                    w.bytes(&answer);
                }
            }
        }
        Ok(())
    }

    /// The operations a snapshot holds, resumed at `now`.
    #[cfg_attr(not(feature = "keyhive"), allow(unused_variables))]
    pub(super) fn read_snapshot(
        r: &mut bijou_codec::Reader<'_>,
        now: Timestamp,
        rng: SeededRng,
        peers: (PeerId, PeerId),
    ) -> Result<Self, RestoreError> {
        let invalid = |field, reason| RestoreError::Invalid { field, reason };
        let last_id = r.bijou64("last operation id")?;
        let count = r.bijou64("operations in flight")?;
        // Grown as operations are read, each from at least 36 bytes: no
        // reservation sized by the count alone.
        let mut in_flight = Vec::new();
        for _ in 0..count {
            let id = r.bijou64("operation id")?;
            // Ascending, so the last one read is the only one to compare
            // with (a scan of all of them was quadratic in the count).
            if id == 0
                || id > last_id
                || in_flight.last().is_some_and(|op: &InFlight| op.id.0 >= id)
            {
                return Err(invalid(
                    "operation id",
                    "is not ascending up to the last id",
                ));
            }
            let left = r.bijou64("operation time left")?;
            let deadline = Timestamp::from_nanos(now.as_nanos().saturating_add(left));
            let state = match r.u8("operation kind")? {
                0 => State::Push {
                    tree: SedimentreeId::new(r.array("push tree")?),
                    head: CommitId::new(r.array("push head")?),
                },
                1 => State::Fetch {
                    tree: SedimentreeId::new(r.array("fetch tree")?),
                    nonce: r.u64("fetch nonce")?,
                    probe: match r.u8("fetch probe")? {
                        0 => false,
                        1 => true,
                        _ => return Err(invalid("fetch probe", "is neither 00 nor 01")),
                    },
                },
                2 => {
                    let topics = read_topics(r, "subscribe topics")?;
                    State::Subscribe(
                        Topics::new(topics)
                            .ok_or_else(|| invalid("subscribe topics", "are none"))?,
                    )
                }
                #[cfg(feature = "keyhive")]
                3 => State::RegisterUnsigned(read_delegation(r)?),
                #[cfg(feature = "keyhive")]
                4 => {
                    let stage = r.u8("registration stage")?;
                    let delegation = read_delegation(r)?;
                    State::Register(
                        Registration::resume(peers.0, peers.1, delegation, stage)
                            .ok_or_else(|| invalid("registration stage", "is not 0 to 4"))?,
                    )
                }
                #[cfg(feature = "keyhive")]
                5 => {
                    let stage = r.u8("registration stage")?;
                    let delegation = read_delegation(r)?;
                    let registration = Registration::resume(peers.0, peers.1, delegation, stage)
                        .ok_or_else(|| invalid("registration stage", "is not 0 to 4"))?;
                    let len = r.bijou64("keyhive answer length")?;
                    let answer = r.shared_u64("keyhive answer", len)?;
                    let answer = SukMessage::from_bytes(&answer)
                        .and_then(|suk| suk.verify(peers.1))
                        .map_err(|_| {
                            invalid("keyhive answer", "is not a SUK message signed by the peer")
                        })?;
                    State::RegisterAnswer(registration, Box::new(answer))
                }
                #[cfg(not(feature = "keyhive"))]
                3..=5 => {
                    return Err(invalid(
                        "operation kind",
                        "is a keyhive registration, and this build of bijou-proto has no `keyhive` feature",
                    ))
                }
                _ => return Err(invalid("operation kind", "is not 00 to 05")),
            };
            in_flight.push(InFlight {
                id: OperationId(id),
                deadline,
                state,
            });
        }
        Ok(Self {
            last_id,
            in_flight,
            completed: VecDeque::new(),
            rng,
        })
    }
}

/// A root delegation event, checked again (its signature included).
#[cfg(feature = "keyhive")]
fn read_delegation(r: &mut bijou_codec::Reader<'_>) -> Result<RootDelegation, RestoreError> {
    let len = r.bijou64("delegation length")?;
    let event = r.shared_u64("delegation", len)?;
    RootDelegation::decode(event).map_err(|_| RestoreError::Invalid {
        field: "delegation",
        reason: "is not a root delegation signed by its document",
    })
}

/// Which operation a received message belongs to.
enum Owner {
    /// The pushes a `HeadsUpdate` acknowledges, up to this one.
    Pushes(OperationId),
    /// The fetch or probe at this index.
    Fetch(usize),
    /// The registration at this index.
    #[cfg(feature = "keyhive")]
    Register(usize),
    /// The subscription at this index, and the topics refused.
    Subscribe(usize, Option<Topics>),
}

/// What a fetch's response says: `Ok(None)` for the tree itself (the
/// verified message is the outcome), `Ok(Some)` for a probe's answer.
fn fetched(response: &BatchSyncResponse, probe: bool) -> Result<Option<Outcome>, OperationError> {
    let access = match &response.result {
        SyncResult::Ok(_) => TreeAccess::Readable {
            heads: response.responder_heads.heads().len(),
        },
        SyncResult::NotFound => TreeAccess::NotFound,
        SyncResult::Unauthorized => TreeAccess::Unauthorized,
    };
    let reason = match (probe, access) {
        (true, access) => return Ok(Some(Outcome::Probed(access))),
        (false, TreeAccess::NotFound) => "not found",
        (false, TreeAccess::Unauthorized) => "unauthorized",
        (false, _) => return Ok(None),
    };
    Err(OperationError::Refused {
        tree: response.id,
        reason,
    })
}
