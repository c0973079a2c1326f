//! Deterministic simulation of two hosts, each driving one session with
//! one `poll` loop, over a simulated byte stream: virtual time, seeded
//! randomness, random schedules of who sends what, who reads when, who
//! signs when and how far the clock moves, and a journal of every choice.
//!
//! # A run
//!
//! Each seed makes two keys and connects them: one host is the client
//! (`Session::client`), the other the server (`Session::server`, with a
//! responder whose replay cache outlives its connections), chosen anew for
//! each connection. The handshake runs inside the sessions over the
//! stream, like everything after it. Then a few hundred steps of sync
//! messages (good, forged, malformed), batch responses with forged items,
//! subscriptions, unsubscriptions, ephemeral publishes
//! (`Session::publish`) and their replays both ways, pushes and fetches
//! (`Session::start`), snapshots, lost connections and reconnections, under
//! small verification budgets (so steps wait on the virtual clock) and
//! random verification steps. Each host's only way into its session is:
//!
//! ```text
//!   loop { match session.poll(now) {
//!       Transmit(bytes) => onto the stream, as one frame
//!       Sign(request)   => signed at once, or a few turns later (a delayed signer),
//!                          sometimes first with the wrong key (refused, still open)
//!       Event(..)       => Established, Received (judged), Completed, Closed
//!       Continue        => go on, or yield to the schedule
//!       Wait { read, until } => if read: hand in the next whole frame, if any;
//!                          at the end of the stream: handle_close
//!   } }
//! ```
//!
//! and its own calls: `send`, `publish`, `start`, `close`, `snapshot` and
//! `restore`, and bytes written raw to the stream (forged, junk, replays).
//! A host starts operations and writes raw bytes only once it saw
//! `Established`; it reads on its turns, and on every step while its
//! connection opens or after its peer's end of the stream ended.
//!
//! # Faults
//!
//! A connection may carry one fault, chosen by the seed:
//!
//! - a host's first message is not its session's: oversized (over the
//!   256-byte pre-authentication limit: the session closes with
//!   `HandshakeError::TooLarge`, or, where the reader's transport enforces
//!   `max_message_len`, the frame is refused as `FrameError::TooLarge`
//!   before the session sees it), junk (`Malformed`), a well-formed sync
//!   message (`Unexpected`), or the client's challenge of an earlier
//!   connection replayed (the server refuses it with a rejection:
//!   `ReplayedNonce`, or `ClockDrift` once it is too old; the client
//!   reads `Rejected` with the same reason);
//! - the client addresses another key (`InvalidAudience`, both ways);
//! - a handshake message is lost, or the clock jumps past the handshake
//!   deadlines: `HandshakeTimedOut`, waiting for exactly what the host saw
//!   it wait for (`"signer"`, `"challenge"` or `"response"`);
//! - and at any step: the connection is cut (each direction at a random
//!   byte), or a host closes its session (`close`).
//!
//! Every connection ends with both sessions `Closed`; the hosts then
//! connect anew with what they stored.
//!
//! # Invariants, checked every seed
//!
//! - no panic, and no session busy for 100,000 outputs in a row;
//! - every message a side sent is received by the other exactly once, in
//!   order, with its exact bytes, and judged as what it was (a good commit
//!   delivered with its item, a forged one refused, junk malformed, a batch
//!   delivered with exactly its forged items named), unless its connection
//!   ended first: then it is lost whole, never cut into a message, and a
//!   message the receiver had already taken is still delivered (or taken
//!   by its operation), except after the receiver's own `close`;
//! - every message handed to `Session::send` is transmitted once, in
//!   order, unless its connection ends first; a session transmits nothing
//!   but handshake messages before `Established`, and nothing at all a
//!   host did not ask for;
//! - an ephemeral message is delivered at most once per (issuer, nonce),
//!   only for a topic the receiver was subscribed to on its arrival;
//! - operations (pushes and fetches started at random, answered or not,
//!   some answers arriving after their deadline): every operation ends
//!   exactly once (its answer, its deadline, or its connection's close),
//!   an answer is taken by its operation or delivered as an ordinary
//!   message (never both), and every push the peer acknowledged is in the
//!   final fetch, across every lost connection;
//! - snapshot and restore at random steps (a host evicted between two
//!   messages, coming back with another monotonic origin and a fresh
//!   seed): the restored session snapshots to the same bytes and every
//!   invariant holds across it; a snapshot is refused only with a typed
//!   `Busy` (during the handshake, while a message or a signature is
//!   under way);
//! - the byte stream: every message travels as a bijou64-prefixed frame
//!   through the real `FrameCodec`, arriving in random pieces (one byte to
//!   everything in flight); a cut makes the frame it splits a typed
//!   `FrameError::Truncated` at the end of the stream, never a message;
//! - the handshake: an undisturbed connection without a fault always
//!   establishes both sides, each with the other's key, the 256-byte limit
//!   lifted only then; a session handed a faulty first message never
//!   establishes and closes with exactly the error its fault causes; a
//!   timeout comes only at its deadline, carrying the configured timeout;
//!   nothing establishes after its deadline;
//! - signing: a request answered with the wrong key is refused
//!   (`DoesNotVerify`) and stays open; a request still held when its
//!   session closes is refused as `Unknown`;
//! - a session that takes no message now gives the bytes back (`Busy`);
//!   after `Closed` it only waits, reading nothing, with no deadline;
//!   every wait's deadline is ahead of `now`, except a verification
//!   budget's polled exactly at its instant, which is rounded down to the
//!   nanosecond and can then be `now` itself (counted as "budget waits
//!   until now");
//! - a seed replays exactly: run twice, it gives the same journal, the
//!   same transcript of bytes and events, and the same counts.
//!
//! # The journal
//!
//! Every random choice goes through one place ([`journal::Journal`]),
//! which records (label, value), with the step and the virtual clock. A
//! failing seed prints `SIM_SEED=S cargo test -p bijou-proto --test
//! simulation`, which replays it exactly, and the journal's last choices.
//!
//! `SIM_SEEDS=N` runs N seeds (default 1,000); `SIM_SEED=S` replays one
//! (twice, checking that the two runs are the same).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use bijou_codec::Wire;
use bijou_frame::framing::{FrameCodec, FrameError};
use bijou_proto::handshake::{
    ChallengeError, HandshakeConfig, HandshakeError, Responder, DEFAULT_MAX_DRIFT,
    DEFAULT_MAX_MESSAGE_LENGTH, HANDSHAKE_MAX_MESSAGE_LENGTH,
};
use bijou_proto::message::{
    Audience, BatchSyncResponse, BlobMessage, CommitId, EphemeralMessage, Fragment, HeadsUpdate,
    LooseCommit, Message, RejectionReason, RemoteHeads, SedimentreeId, SignedItem, SyncDiff,
    SyncMessage, SyncResult, Topic, Topics, VerifiedItem,
};
use bijou_proto::nonce_cache::NonceCache;
use bijou_proto::session::snapshot::SnapshotError;
use bijou_proto::session::{
    Close, Completed, Delivered, Event, Operation, OperationError, Outcome, Output, Received,
    Rejected, SendRefused, Session, SessionConfig, SignRequest, SignatureRefused,
};
use bijou_proto::time::{Now, Timestamp};
use bijou_proto::verify_budget::VerifyBudget;
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, PeerId, Signed};
use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use journal::Journal;

/// The virtual wall clock at the start, unix seconds.
const T0: u64 = 1_800_000_000;
/// Seeds run by default.
const DEFAULT_SEEDS: u64 = 1_000;
/// Outputs one turn may take before the session counts as stuck.
const POLL_LIMIT: usize = 100_000;
/// Turns the drain and each final fetch may take.
const DRAIN_LIMIT: usize = 100_000;
/// Journal entries a failure prints.
const JOURNAL_TAIL: usize = 40;
const MS: u64 = 1_000_000;

/// The journal: the one place randomness comes from.
mod journal {
    use bijou_proto::rng::SeededRng;
    use std::fmt::Write as _;

    /// One random choice: at which step and virtual instant, what for,
    /// and what was drawn (for bytes, their first eight, little-endian).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Choice {
        pub step: u64,
        pub clock_ns: u64,
        pub label: &'static str,
        pub value: u64,
    }

    /// Every random choice of a run, drawn from the seed and recorded in
    /// order. The generator is private to this module: nothing else can
    /// draw a number without it being journaled.
    pub struct Journal {
        rng: SeededRng,
        choices: Vec<Choice>,
    }

    impl Journal {
        pub fn new(seed: u64) -> Self {
            let mut bytes = [0u8; 32];
            bytes[..8].copy_from_slice(&seed.to_le_bytes());
            Self {
                rng: SeededRng::from_seed(bytes),
                choices: Vec::new(),
            }
        }

        /// A number below `n` (at least 1), journaled.
        pub fn below(&mut self, label: &'static str, n: u64, step: u64, clock_ns: u64) -> u64 {
            let value = self.rng.next_u64() % n.max(1);
            self.choices.push(Choice {
                step,
                clock_ns,
                label,
                value,
            });
            value
        }

        /// `len` random bytes, journaled.
        pub fn fill(
            &mut self,
            label: &'static str,
            len: usize,
            step: u64,
            clock_ns: u64,
        ) -> Vec<u8> {
            let mut bytes = vec![0; len];
            self.rng.fill_bytes(&mut bytes);
            let mut first = [0u8; 8];
            let n = len.min(8);
            first[..n].copy_from_slice(&bytes[..n]);
            self.choices.push(Choice {
                step,
                clock_ns,
                label,
                value: u64::from_le_bytes(first),
            });
            bytes
        }

        pub fn choices(&self) -> &[Choice] {
            &self.choices
        }

        /// The last `n` choices, one a line.
        pub fn tail(&self, n: usize) -> String {
            let from = self.choices.len().saturating_sub(n);
            let mut out = String::new();
            for (i, c) in self.choices.iter().enumerate().skip(from) {
                let _ = writeln!(
                    out,
                    "  #{i} step {} at {:.3} ms: {} = {}",
                    c.step,
                    c.clock_ns as f64 / 1e6,
                    c.label,
                    c.value
                );
            }
            out
        }
    }
}

/// One of the two hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    A,
    B,
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::A => "a",
            Self::B => "b",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Client,
    Server,
}

/// A host's first message in place of its session's (a fault).
#[derive(Debug, Clone, PartialEq, Eq)]
enum FirstMessage {
    /// Over the pre-authentication limit.
    Oversized { len: usize },
    /// Not a message.
    Junk,
    /// A well-formed sync message.
    Unexpected,
    /// The client's challenge of an earlier connection, which the server
    /// accepted then, stamped `stamp`.
    Replay { stamp: u64 },
}

/// What a connection's handshake is put through.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fault {
    None,
    /// `from`'s host writes this before its session's first message.
    First {
        from: Who,
        first: FirstMessage,
    },
    /// `from`'s session's first handshake message is lost on the way.
    Lost {
        from: Who,
    },
    /// A few steps in, the clock jumps past both handshake deadlines.
    ClockJump,
    /// The client addresses its challenge to a stranger's key.
    WrongAudience,
}

/// What a sent message should come out as at the other end.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    Commit,
    Forged,
    Junk,
    /// A batch of `good` items and forged ones at these indices.
    Batch {
        good: usize,
        forged: Vec<usize>,
    },
    /// An ephemeral control message or publish: judged by the receiver's
    /// subscriptions, checked separately.
    Ephemeral,
    /// A push operation's commit: delivered, stored, and maybe
    /// acknowledged.
    Push,
    /// A fetch operation's request: answered with what was stored.
    Request,
    /// An answer to an operation: taken by it, or delivered if it ended.
    Answer,
    /// The session's own handshake message (challenge, response,
    /// rejection).
    Handshake,
    /// A host's faulty first message.
    Fault(FirstMessage),
}

/// The current connection, as the simulation sees it.
struct Link {
    number: u64,
    client: Who,
    fault: Fault,
    /// Cut, or closed by a host: the handshake may then end in any close.
    disturbed: bool,
    /// Steps until the clock jumps (`Fault::ClockJump`).
    jump_in: Option<u64>,
    /// The client's challenge stamp, unix seconds, and once its session
    /// sent it, its bytes.
    client_stamp: u64,
    client_challenge: Option<Bytes>,
    /// The reason the server refused the challenge with, once it did.
    rejected: Option<RejectionReason>,
}

/// What one side's reader does with the next piece of the stream.
enum Read {
    Frame(Bytes, Expect),
    /// No whole frame yet.
    Nothing,
    /// The writer is done and everything kept was read.
    End,
    /// The reader's transport refused a frame over its session's limit.
    TooLarge,
}

/// One direction of the connection: frames on a byte stream.
struct Stream {
    /// Framed bytes sent, not yet arrived.
    in_flight: BytesMut,
    /// Arrived at the reader, not yet a whole frame.
    arrived: BytesMut,
    encoder: FrameCodec,
    /// The reader's frame decoder.
    decoder: FrameCodec,
    /// Each frame sent and not yet decoded: its bytes and what it is.
    frames: VecDeque<(Bytes, Expect)>,
    /// The writer is done (its session closed, or the connection was
    /// cut): what is sent from now on goes nowhere; what is in flight
    /// still arrives.
    ended: bool,
    /// The reader is gone: what it did not read is lost, and what is sent
    /// from now on goes nowhere.
    abandoned: bool,
    /// The reader's transport reads no frame longer than its session's
    /// `max_message_len` (else the session checks the length itself).
    strict: bool,
}

impl Stream {
    fn new(strict: bool) -> Self {
        Self {
            in_flight: BytesMut::new(),
            arrived: BytesMut::new(),
            encoder: FrameCodec::new(),
            decoder: FrameCodec::new(),
            frames: VecDeque::new(),
            ended: false,
            abandoned: false,
            strict,
        }
    }

    /// Nothing sent is still to arrive or to be decoded.
    fn is_empty(&self) -> bool {
        self.frames.is_empty() && self.in_flight.is_empty() && self.arrived.is_empty()
    }

    fn push(&mut self, sim: &mut Sim, bytes: Bytes, expect: Expect) {
        if self.ended || self.abandoned {
            sim.count("frames lost");
            sim.record(b"lost", &bytes);
            return;
        }
        self.encoder
            .encode(bytes.clone(), &mut self.in_flight)
            .expect("a message fits a frame");
        self.frames.push_back((bytes, expect));
    }

    /// Moves a random piece of what is in flight to the reader (from one
    /// byte to all of it) and decodes the next frame if it is whole,
    /// reading no frame over `max` if the transport is strict.
    fn read(&mut self, sim: &mut Sim, max: usize) -> Read {
        assert!(!self.abandoned, "a reader reads a stream it left");
        if !self.in_flight.is_empty() {
            let len = self.in_flight.len() as u64;
            let piece = match sim.below("piece size", 4) {
                0 => 1 + sim.below("piece bytes", 8),
                1 => 1 + sim.below("piece bytes", 256),
                2 => 1 + sim.below("piece bytes", 4_096),
                _ => len,
            };
            let piece = self
                .in_flight
                .split_to(usize::try_from(piece.min(len)).expect("small"));
            self.arrived.extend_from_slice(&piece);
        }
        if self.strict {
            self.decoder.set_max_frame_length(max);
        }
        match self.decoder.decode(&mut self.arrived) {
            Ok(Some(frame)) => {
                let (bytes, expect) = self.frames.pop_front().expect("a frame that was sent");
                assert_eq!(frame, bytes, "a frame carries exactly the bytes sent");
                Read::Frame(bytes, expect)
            }
            Ok(None) if self.ended && self.in_flight.is_empty() => {
                self.end(sim);
                Read::End
            }
            Ok(None) => Read::Nothing,
            Err(FrameError::TooLarge { len, max: refused }) if self.strict => {
                assert_eq!(refused, max, "refused at the session's limit");
                let (bytes, _) = self.frames.front().expect("a frame that was sent");
                assert_eq!(len, bytes.len() as u64, "the refused frame's length");
                Read::TooLarge
            }
            Err(other) => panic!("an honest stream decodes, but: {other}"),
        }
    }

    /// The connection is lost: only the first `keep` bytes still in
    /// flight will arrive.
    fn cut_at(&mut self, keep: usize) {
        self.in_flight.truncate(keep);
        self.ended = true;
    }

    /// After the writer ended, once everything kept has arrived and been
    /// decoded: the end of the stream. A frame cut in two must be a typed
    /// truncation, never a message; the frames after it are lost.
    fn end(&mut self, sim: &mut Sim) {
        assert!(self.in_flight.is_empty(), "everything kept has arrived");
        match self.decoder.decode_eof(&mut self.arrived) {
            Ok(None) => assert!(self.arrived.is_empty(), "leftover bytes are a truncation"),
            Ok(Some(_)) => panic!("a whole frame was left undecoded"),
            Err(FrameError::Truncated { .. }) => {
                assert!(!self.frames.is_empty(), "a partial frame is one sent");
                sim.count("frames cut in two");
            }
            Err(other) => panic!("a cut stream is a truncation, not {other}"),
        }
        self.abandon(sim);
    }

    /// The reader is gone: what it did not read is lost.
    fn abandon(&mut self, sim: &mut Sim) {
        for _ in 0..self.frames.len() {
            sim.count("frames lost");
        }
        self.frames.clear();
        self.in_flight.clear();
        self.arrived.clear();
        self.abandoned = true;
    }
}

/// A host's identity: which one, its key, and (as a server) its
/// responder, whose replay cache outlives connections, as a server's does.
struct Host {
    who: Who,
    key: SigningKey,
    responder: Responder,
}

/// One connection, as its host sees it: the session and everything the
/// host keeps about it. A new one for each connection.
struct Connection {
    session: Session,
    role: Role,
    timeout: Duration,
    /// The handshake's deadline, virtual nanoseconds.
    deadline: u64,
    established: bool,
    closed: bool,
    /// The host called `close`.
    closed_locally: bool,
    /// The session transmitted its handshake message (the client's
    /// challenge, the server's response or rejection).
    sent_handshake: bool,
    /// The session was handed its peer's handshake message.
    read_handshake: bool,
    /// A first message that was not its peer's session's handshake
    /// message (a fault, or the peer's traffic after its own handshake
    /// message was lost): its bytes, what it was, and the wall clock when
    /// it was handed in.
    handed_fault: Option<(Bytes, Expect, u64)>,
    /// The transport refused a frame over the session's limit.
    transport_refused: bool,
    /// The session's next handshake message is lost (`Fault::Lost`).
    lose_handshake: bool,
    /// What this host writes.
    out: Stream,
    /// The message handed to the session and not yet judged: its bytes,
    /// what it was, and (for an ephemeral message) whether the session
    /// was subscribed to its topic on arrival.
    inbound: Option<(Bytes, Expect, bool)>,
    /// Messages handed to `Session::send`, not yet transmitted.
    queued: VecDeque<(Bytes, Expect)>,
    /// Sign requests a delayed signer holds, each with the turn it
    /// answers at.
    signer: Vec<(SignRequest, u64)>,
    /// The last wait's deadline.
    until: Option<Timestamp>,
    /// The last turn ended in a wait that reads.
    reads: bool,
    /// The last publish sent (replays are tested within a connection).
    last_publish: Option<Bytes>,
    /// Publishes made and not yet sent, oldest first: their topic,
    /// payload and stamp.
    publishing: VecDeque<(Topic, Vec<u8>, u64)>,
}

impl Connection {
    /// A connection whose session is `session`, in `role`, with the
    /// handshake deadline `timeout` after `clock`.
    fn new(session: Session, role: Role, timeout: Duration, clock: u64, out: Stream) -> Self {
        Self {
            session,
            role,
            timeout,
            deadline: clock + u64::try_from(timeout.as_nanos()).expect("small"),
            established: false,
            closed: false,
            closed_locally: false,
            sent_handshake: false,
            read_handshake: false,
            handed_fault: None,
            transport_refused: false,
            lose_handshake: false,
            out,
            inbound: None,
            queued: VecDeque::new(),
            signer: Vec::new(),
            until: None,
            reads: false,
            last_publish: None,
            publishing: VecDeque::new(),
        }
    }

    /// What the handshake waits for, as the host saw it.
    fn waiting_for(&self) -> &'static str {
        match (self.role, self.sent_handshake, self.read_handshake) {
            (Role::Client, false, _) => "signer",
            (Role::Client, true, _) => "response",
            (Role::Server, _, false) => "challenge",
            (Role::Server, _, true) => "signer",
        }
    }

    /// The connection is open and stays so (this host's stream is not
    /// ended), everything sent was read and judged, nothing waits
    /// anywhere, and the session reads.
    fn settled(&self) -> bool {
        self.established
            && !self.closed
            && !self.out.ended
            && self.out.is_empty()
            && self.inbound.is_none()
            && self.queued.is_empty()
            && self.signer.is_empty()
            && self.publishing.is_empty()
            && self.reads
    }
}

/// A host: its identity, its connection, and what it keeps across
/// connections.
struct Side {
    host: Host,
    conn: Connection,
    /// Turns this host has had.
    turns: u64,
    /// Ephemeral (issuer, nonce) pairs delivered here.
    seen: BTreeSet<(Vec<u8>, u64)>,
    topics: Vec<Topic>,
    /// Operations started here, by connection and id: the pushed head
    /// (None for a fetch).
    started: BTreeMap<(u64, u64), Option<CommitId>>,
    /// Operations that ended here, by connection and id.
    ended: BTreeSet<(u64, u64)>,
    /// Heads of our pushes the peer acknowledged.
    acknowledged: BTreeSet<CommitId>,
    /// Heads the last fetch returned.
    fetched: Option<BTreeSet<CommitId>>,
    /// Commits the peer pushed to us, kept to answer its fetches.
    stored: Vec<SignedItem<LooseCommit>>,
}

struct Sim {
    journal: Journal,
    step: u64,
    /// Virtual monotonic nanoseconds.
    clock: u64,
    transcript: blake3::Hasher,
    counts: Counts,
    link: Link,
    connections: u64,
    /// A client's challenge a server accepted: which client, its bytes,
    /// its stamp.
    accepted_challenge: Option<(Who, Bytes, u64)>,
    /// No faults, cuts or closes: the drain and the final fetches.
    calm: bool,
    /// A key neither side has: the wrong signer, the wrong audience.
    stranger: SigningKey,
}

/// What happened in a run, by name (deterministic order).
type Counts = BTreeMap<&'static str, u64>;

impl Sim {
    fn new(seed: u64) -> Self {
        let mut journal = Journal::new(seed);
        let stranger = SigningKey::from_bytes(&array(journal.fill("stranger key", 32, 0, 0)));
        Self {
            journal,
            step: 0,
            clock: 0,
            transcript: blake3::Hasher::new(),
            counts: Counts::new(),
            link: Link {
                number: 0,
                client: Who::A,
                fault: Fault::None,
                disturbed: false,
                jump_in: None,
                client_stamp: 0,
                client_challenge: None,
                rejected: None,
            },
            connections: 0,
            accepted_challenge: None,
            calm: false,
            stranger,
        }
    }

    fn now(&self) -> Now {
        Now::new(
            T0 + self.clock / 1_000_000_000,
            Timestamp::from_nanos(self.clock),
        )
    }

    /// A number below `n`: every random choice comes through here or
    /// [`Sim::bytes`].
    fn below(&mut self, label: &'static str, n: u64) -> u64 {
        self.journal.below(label, n, self.step, self.clock)
    }

    fn bytes<const N: usize>(&mut self, label: &'static str) -> [u8; N] {
        array(self.journal.fill(label, N, self.step, self.clock))
    }

    fn fill(&mut self, label: &'static str, len: usize) -> Vec<u8> {
        self.journal.fill(label, len, self.step, self.clock)
    }

    fn record(&mut self, label: &[u8], bytes: &[u8]) {
        self.transcript.update(label);
        self.transcript.update(&(bytes.len() as u64).to_le_bytes());
        self.transcript.update(bytes);
    }

    fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_default() += 1;
    }
}

/// The other host.
fn peer_of(who: Who) -> Who {
    match who {
        Who::A => Who::B,
        Who::B => Who::A,
    }
}

fn array<const N: usize>(bytes: Vec<u8>) -> [u8; N] {
    bytes.try_into().expect("drawn at this length")
}

fn host(sim: &mut Sim, who: Who) -> Host {
    let key = SigningKey::from_bytes(&sim.bytes("key"));
    let config = HandshakeConfig::default();
    let cache = NonceCache::keyed(config.max_drift, 1_024, sim.bytes("replay cache key"));
    Host {
        who,
        key,
        responder: Responder::with_nonce_cache(config, Arc::new(cache)),
    }
}

/// The two hosts, connected.
fn sides(sim: &mut Sim) -> (Side, Side) {
    let (a, b) = (host(sim, Who::A), host(sim, Who::B));
    let (at_a, at_b) = connect(sim, &a, &b);
    let side = |host, conn| Side {
        host,
        conn,
        turns: 0,
        seen: BTreeSet::new(),
        topics: (0..4u8).map(|i| Topic::new([i; 32])).collect(),
        started: BTreeMap::new(),
        ended: BTreeSet::new(),
        acknowledged: BTreeSet::new(),
        fetched: None,
        stored: Vec::new(),
    };
    (side(a, at_a), side(b, at_b))
}

/// A new connection between `a` and `b`: fresh sessions at both ends (the
/// client's challenge goes out once signed), fresh streams, and maybe a
/// fault.
fn connect(sim: &mut Sim, a: &Host, b: &Host) -> (Connection, Connection) {
    let client = if sim.below("client", 2) == 0 {
        Who::A
    } else {
        Who::B
    };
    let now = sim.now();
    sim.link = Link {
        number: sim.connections,
        client,
        fault: Fault::None,
        disturbed: false,
        jump_in: None,
        client_stamp: now.unix_secs,
        client_challenge: None,
        rejected: None,
    };
    sim.connections += 1;
    let server = peer_of(client);
    let fault = if sim.calm {
        Fault::None
    } else {
        match sim.below("fault", 24) {
            0 => Fault::First {
                from: client,
                first: first_message(sim, client),
            },
            1 => Fault::First {
                from: server,
                first: first_message(sim, server),
            },
            2 => Fault::Lost { from: client },
            3 => Fault::Lost { from: server },
            4 => Fault::ClockJump,
            5 => Fault::WrongAudience,
            _ => Fault::None,
        }
    };
    if fault == Fault::ClockJump {
        sim.link.jump_in = Some(sim.below("clock jump after steps", 4));
    }
    sim.record(b"connect", format!("{client} {fault:?}").as_bytes());
    let open = |sim: &mut Sim, host: &Host, peer: &Host| {
        let mut config = SessionConfig::new(sim.bytes("session seed"));
        let per_second = 20 + u32::try_from(sim.below("budget per second", 200)).expect("small");
        config.verify_budget = VerifyBudget::new(per_second, 1 + per_second / 4);
        config.verify_step = 1 + usize::try_from(sim.below("verify step", 8)).expect("small");
        config.ephemeral.max_remote_topics = 3;
        config.handshake_timeout =
            Duration::from_millis(5_000 + sim.below("handshake timeout ms", 5_000));
        let timeout = config.handshake_timeout;
        let (role, session) = if host.who == client {
            let audience = if fault == Fault::WrongAudience {
                Audience::Known(sim.stranger.peer_id())
            } else {
                Audience::Known(peer.key.peer_id())
            };
            let session = Session::client(host.key.verifying_key(), audience, now, config);
            (Role::Client, session)
        } else {
            let responder = host.responder.clone();
            let session = Session::server(host.key.verifying_key(), responder, now, config);
            (Role::Server, session)
        };
        assert_eq!(session.max_message_len(), HANDSHAKE_MAX_MESSAGE_LENGTH);
        let out = Stream::new(sim.below("strict transport", 2) == 0);
        let mut conn = Connection::new(session, role, timeout, sim.clock, out);
        conn.lose_handshake = fault == Fault::Lost { from: host.who };
        conn
    };
    let mut at_a = open(sim, a, b);
    let mut at_b = open(sim, b, a);
    if let Fault::First { from, first } = &fault {
        let bytes = match first {
            FirstMessage::Oversized { len } => Bytes::from(sim.fill("oversized message", *len)),
            FirstMessage::Junk => {
                // Exactly at the limit one time in eight.
                let len = match sim.below("junk at the limit", 8) {
                    0 => HANDSHAKE_MAX_MESSAGE_LENGTH - 4,
                    _ => usize::try_from(sim.below("junk length", 200)).expect("small"),
                };
                let mut junk = b"JUNK".to_vec();
                junk.extend(sim.fill("junk", len));
                Bytes::from(junk)
            }
            FirstMessage::Unexpected => {
                let head = CommitId::new(sim.bytes("head"));
                let message = Message::Sync(SyncMessage::HeadsUpdate(HeadsUpdate {
                    id: SedimentreeId::new([7; 32]),
                    heads: RemoteHeads::new(1, [head]),
                }));
                message.encode().expect("encode")
            }
            FirstMessage::Replay { .. } => {
                let (_, bytes, _) = sim.accepted_challenge.clone().expect("chosen only if one");
                bytes
            }
        };
        assert!(
            bytes.len() <= HANDSHAKE_MAX_MESSAGE_LENGTH
                || matches!(first, FirstMessage::Oversized { .. })
        );
        let writer = if *from == Who::A {
            &mut at_a
        } else {
            &mut at_b
        };
        writer.out.push(sim, bytes, Expect::Fault(first.clone()));
    }
    sim.link.fault = fault;
    (at_a, at_b)
}

/// A faulty first message from `from`'s host: a replay only from a client
/// whose challenge the other side accepted before.
fn first_message(sim: &mut Sim, from: Who) -> FirstMessage {
    // A client whose challenge this server accepted before replays it one
    // time in two.
    if let Some((client, _, stamp)) = &sim.accepted_challenge {
        if *client == from && sim.link.client == from {
            let stamp = *stamp;
            if sim.below("replay the accepted challenge", 2) == 0 {
                return FirstMessage::Replay { stamp };
            }
        }
    }
    match sim.below("first message", 3) {
        // One byte over the limit one time in eight.
        0 => FirstMessage::Oversized {
            len: HANDSHAKE_MAX_MESSAGE_LENGTH
                + 1
                + match sim.below("oversized by one byte", 8) {
                    0 => 0,
                    _ => usize::try_from(sim.below("oversized by", 768)).expect("small"),
                },
        },
        1 => FirstMessage::Unexpected,
        _ => FirstMessage::Junk,
    }
}

fn commit(sim: &mut Sim, key: &SigningKey) -> SignedItem<LooseCommit> {
    let blob = Blob::from(sim.bytes::<24>("blob").to_vec());
    let commit = LooseCommit::new(
        SedimentreeId::new([7; 32]),
        CommitId::new(sim.bytes("commit id")),
        [],
        blob.meta(),
    );
    SignedItem::new(Signed::seal(key, &commit).expect("seal"), blob)
}

fn forge(bytes: &Bytes, at_end: usize) -> Bytes {
    let mut forged = bytes.to_vec();
    let i = forged.len() - at_end;
    forged[i] ^= 0x40;
    forged.into()
}

/// Hands `message` to `from`'s session to send (refused unless it is
/// open), expecting it to arrive as `expect`.
fn queue(sim: &mut Sim, from: &mut Side, message: Message, expect: Expect) {
    let bytes = message.encode().expect("encode");
    match from.conn.session.send(message) {
        Ok(()) => {
            assert!(from.conn.established, "sent before Established");
            sim.record(b"queue", &bytes);
            from.conn.queued.push_back((bytes, expect));
        }
        Err(SendRefused::NotOpen { .. }) => {
            assert!(!from.conn.session.is_established());
            sim.count("sends refused while not open");
        }
        Err(other) => panic!("send refused: {other}"),
    }
}

/// Writes `bytes` to the stream directly (forged, junk, a replay): only
/// once the host saw its session established.
fn write_raw(sim: &mut Sim, from: &mut Side, bytes: Bytes, expect: Expect) {
    if !from.conn.established || from.conn.closed {
        return;
    }
    sim.record(b"raw", &bytes);
    from.conn.out.push(sim, bytes, expect);
}

/// One thing `from` sends to the other side.
fn send(sim: &mut Sim, from: &mut Side) {
    if from.conn.closed {
        return;
    }
    let now = sim.now();
    match sim.below("message", 10) {
        9 => {
            // A replay of the last ephemeral message: never delivered twice.
            if let Some(replay) = from.conn.last_publish.clone() {
                write_raw(sim, from, replay, Expect::Ephemeral);
            }
        }
        0..=2 => {
            let item = commit(sim, &from.host.key);
            let message = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
                id: SedimentreeId::new([7; 32]),
                sender_heads: RemoteHeads::default(),
                item,
            }));
            if sim.below("forge the commit", 4) == 0 {
                // A flipped bit in the signature (the last 64 bytes before
                // the blob's length and bytes).
                let bytes = message.encode().expect("encode");
                write_raw(sim, from, forge(&bytes, 24 + 1 + 10), Expect::Forged);
            } else {
                queue(sim, from, message, Expect::Commit);
            }
        }
        3 => {
            let n = 1 + usize::try_from(sim.below("batch size", 12)).expect("small");
            let mut items = Vec::new();
            let mut forged = Vec::new();
            for i in 0..n {
                let item = commit(sim, &from.host.key);
                if sim.below("forge the item", 5) == 0 {
                    let bytes = forge(&item.signed().to_bytes(), 10);
                    let signed = Signed::<LooseCommit>::decode(bytes).expect("still well formed");
                    items.push(SignedItem::new(signed, item.blob().clone()));
                    forged.push(i);
                } else {
                    items.push(item);
                }
            }
            let message = Message::Sync(SyncMessage::BatchSyncResponse(BatchSyncResponse {
                requestor: from.host.key.peer_id(),
                nonce: sim.below("batch nonce", u64::MAX),
                id: SedimentreeId::new([7; 32]),
                result: SyncResult::Ok(SyncDiff::new(
                    items,
                    Vec::<SignedItem<Fragment>>::new(),
                    [],
                    [],
                )),
                responder_heads: RemoteHeads::default(),
            }));
            let good = n - forged.len();
            queue(sim, from, message, Expect::Batch { good, forged });
        }
        4 => {
            let len = usize::try_from(sim.below("junk length", 64)).expect("small");
            let mut junk = b"SUM\0".to_vec();
            junk.extend(sim.fill("junk", len));
            write_raw(sim, from, Bytes::from(junk), Expect::Junk);
        }
        5 | 6 => {
            let count = 1 + usize::try_from(sim.below("topics", 4)).expect("small");
            let topics = Topics::new(from.topics[..count].to_vec()).expect("topics");
            let control = if sim.below("unsubscribe", 3) == 0 {
                EphemeralMessage::Unsubscribe(topics)
            } else {
                EphemeralMessage::Subscribe(topics)
            };
            queue(sim, from, Message::Ephemeral(control), Expect::Ephemeral);
        }
        _ => {
            // Signed through Output::Sign, sent once signed.
            let topic = from.topics[usize::try_from(sim.below("topic", 4)).expect("small")];
            let payload = sim.bytes::<8>("payload").to_vec();
            match from.conn.session.publish(topic, payload.clone(), now) {
                Ok(()) => {
                    from.conn
                        .publishing
                        .push_back((topic, payload, now.unix_secs));
                    sim.count("publishes made");
                }
                Err(e) => panic!("publish refused: {e}"),
            }
        }
    }
}

/// The trees of operations: apart from the random traffic's.
fn operations_tree() -> SedimentreeId {
    SedimentreeId::new([8; 32])
}

/// `from` starts a push or a fetch, with a deadline from 0.1 to 2 s away:
/// only once the host saw its session established.
fn start_operation(sim: &mut Sim, from: &mut Side) {
    if !from.conn.established || from.conn.closed {
        return;
    }
    let now = sim.now();
    let deadline = now
        .monotonic
        .saturating_add(Duration::from_millis(100 + sim.below("deadline ms", 1_900)));
    let (operation, head) = if sim.below("fetch", 4) == 0 {
        (Operation::Fetch(operations_tree()), None)
    } else {
        let head = CommitId::new(sim.bytes("head"));
        let blob = Blob::from(sim.bytes::<16>("blob").to_vec());
        let commit = SyncMessage::loose_commit(&from.host.key, operations_tree(), head, [], blob)
            .expect("commit");
        (Operation::Push(commit), Some(head))
    };
    let id = from
        .conn
        .session
        .start(operation, deadline)
        .expect("starts");
    sim.record(b"start", &id.get().to_le_bytes());
    assert!(
        from.started
            .insert((sim.link.number, id.get()), head)
            .is_none(),
        "ids are unique"
    );
}

/// What `to` answers to an operation's message: a push is stored and
/// acknowledged three times in four, a fetch answered with the store.
fn answer(sim: &mut Sim, to: &mut Side, message: &SyncMessage, items: &[VerifiedItem]) {
    let reply = match message {
        SyncMessage::LooseCommit(commit) => {
            to.stored.push(commit.item.clone());
            let Some(VerifiedItem::Commit(verified, _)) = items.first() else {
                return;
            };
            if sim.below("refuse the push", 4) == 0 {
                return; // a refusal: silence
            }
            SyncMessage::HeadsUpdate(HeadsUpdate {
                id: commit.id,
                heads: RemoteHeads::new(to.stored.len() as u64, [verified.payload().head()]),
            })
        }
        SyncMessage::BatchSyncRequest(request) => {
            SyncMessage::BatchSyncResponse(BatchSyncResponse {
                requestor: request.requestor,
                nonce: request.nonce,
                id: request.id,
                result: SyncResult::Ok(SyncDiff::new(
                    to.stored.clone(),
                    Vec::<SignedItem<Fragment>>::new(),
                    [],
                    [],
                )),
                responder_heads: RemoteHeads::default(),
            })
        }
        _ => return,
    };
    queue(sim, to, reply.into(), Expect::Answer);
}

/// A host's turn: its one poll loop, until the session waits (or the
/// schedule moves on after a verification step). With `read`, the host
/// hands in the next whole frame its transport has, if the session
/// reads.
fn drive(sim: &mut Sim, me: &mut Side, peer: &mut Side, mut read: bool) {
    if me.conn.closed {
        return;
    }
    me.turns += 1;
    me.conn.reads = false;
    answer_delayed_signatures(sim, me);
    for _ in 0..POLL_LIMIT {
        let now = sim.now();
        match me.conn.session.poll(now) {
            Output::Transmit(bytes) => transmit(sim, me, bytes),
            Output::Sign(request) => sign(sim, me, request),
            Output::Event(event) => {
                on_event(sim, me, peer, event);
                if me.conn.closed {
                    return;
                }
            }
            Output::Continue => {
                sim.count("verification steps");
                if sim.below("yield after a step", 4) == 0 {
                    return;
                }
            }
            Output::Wait { read: reads, until } => {
                me.conn.until = until;
                // Every wait is ahead: the verification budget's instant
                // is rounded up, so a host never spins on a wait until now
                // (59,879 of them in 100,000 seeds when it was rounded
                // down).
                if let Some(at) = until {
                    assert!(
                        at > now.monotonic,
                        "a wait until {at:?} at {now:?} is not in the future"
                    );
                }
                if !reads {
                    if me.conn.inbound.is_some() && until.is_some() {
                        sim.count("budget waits");
                    }
                    if sim.below("busy probe", 8) == 0 {
                        let probe = Bytes::from_static(b"a message the session does not take now");
                        let busy = me.conn.session.handle_message(probe.clone(), now);
                        assert_eq!(busy.map_err(|b| b.0), Err(probe), "given back whole");
                        sim.count("busy messages given back");
                    }
                    return;
                }
                if let Some((_, expect, _)) = me.conn.inbound.take() {
                    // Done with it and nothing handed out: an operation
                    // took it.
                    assert_eq!(expect, Expect::Answer, "only an answer is taken");
                    sim.count("answers taken by operations");
                }
                me.conn.reads = true;
                if !read {
                    return;
                }
                // One message a turn.
                read = false;
                match peer.conn.out.read(sim, me.conn.session.max_message_len()) {
                    Read::Nothing => return,
                    Read::Frame(bytes, expect) => hand_in(sim, me, bytes, expect, now),
                    Read::End => {
                        sim.count("streams ended");
                        me.conn.session.handle_close();
                    }
                    Read::TooLarge => {
                        sim.count("oversized first message refused by the transport");
                        me.conn.transport_refused = true;
                        me.conn.session.handle_close();
                    }
                }
                me.conn.reads = false;
            }
        }
    }
    panic!(
        "{}'s session gave {POLL_LIMIT} outputs in one turn without waiting",
        me.host.who
    );
}

/// The next whole frame, to the session.
fn hand_in(sim: &mut Sim, me: &mut Side, bytes: Bytes, expect: Expect, now: Now) {
    sim.record(b"read", &bytes);
    if !me.conn.established {
        match &expect {
            Expect::Handshake => me.conn.read_handshake = true,
            Expect::Fault(_) => {
                me.conn.handed_fault = Some((bytes.clone(), expect.clone(), now.unix_secs))
            }
            // The server established, and its response was lost: the
            // client takes what the server sends next for the response.
            _ if me.conn.role == Role::Client
                && sim.link.fault
                    == (Fault::Lost {
                        from: peer_of(me.host.who),
                    }) =>
            {
                me.conn.handed_fault = Some((bytes.clone(), expect.clone(), now.unix_secs));
            }
            other => panic!(
                "{} read a {other:?} before its handshake completed",
                me.host.who
            ),
        }
        me.conn
            .session
            .handle_message(bytes, now)
            .expect("the session said it reads");
        return;
    }
    assert!(
        !matches!(expect, Expect::Handshake | Expect::Fault(_)),
        "{} read a handshake message ({expect:?}) after Established",
        me.host.who
    );
    // An ephemeral message is judged by the subscriptions on arrival.
    let subscribed = match Message::decode(bytes.clone()) {
        Ok(Message::Ephemeral(EphemeralMessage::Ephemeral(signed))) => me
            .conn
            .session
            .ephemeral()
            .is_some_and(|e| e.is_subscribed(&signed.header().topic)),
        _ => false,
    };
    me.conn
        .session
        .handle_message(bytes.clone(), now)
        .expect("the session said it reads");
    me.conn.inbound = Some((bytes, expect, subscribed));
}

/// A message the session transmits, onto the stream: one the host handed
/// to `send` (in order), or one of the session's own.
fn transmit(sim: &mut Sim, me: &mut Side, bytes: Bytes) {
    let expect = if me.conn.queued.front().is_some_and(|(q, _)| *q == bytes) {
        me.conn.queued.pop_front().expect("just seen").1
    } else {
        own_message(sim, me, &bytes)
    };
    if expect == Expect::Handshake {
        assert!(
            !me.conn.established,
            "{}: a handshake message after Established",
            me.host.who
        );
        me.conn.sent_handshake = true;
        if me.conn.role == Role::Client && sim.link.client_challenge.is_none() {
            sim.link.client_challenge = Some(bytes.clone());
        }
        if me.conn.lose_handshake {
            me.conn.lose_handshake = false;
            sim.count("handshake messages lost");
            sim.record(b"lost", &bytes);
            return;
        }
    } else {
        assert!(
            me.conn.established,
            "{} transmitted a {expect:?} before its handshake completed",
            me.host.who
        );
    }
    sim.record(b"transmit", &bytes);
    me.conn.out.push(sim, bytes, expect);
}

/// What a message the session sent on its own is: a handshake message,
/// an operation's, a SubscribeRejected, or a publish of ours; nothing
/// else.
fn own_message(sim: &mut Sim, me: &mut Side, bytes: &Bytes) -> Expect {
    match Message::decode(bytes.clone()) {
        Ok(Message::Handshake(_)) => Expect::Handshake,
        Ok(Message::Sync(SyncMessage::LooseCommit(c))) if c.id == operations_tree() => Expect::Push,
        Ok(Message::Sync(SyncMessage::BatchSyncRequest(_))) => Expect::Request,
        Ok(Message::Ephemeral(EphemeralMessage::SubscribeRejected(_))) => Expect::Ephemeral,
        Ok(Message::Ephemeral(EphemeralMessage::Ephemeral(signed))) => {
            // Our oldest publish not yet sent, as made, signed by us.
            let verified = signed.verify_strict().expect("signed by its issuer");
            assert_eq!(
                verified.peer_id(),
                me.host.key.peer_id(),
                "a publish of ours"
            );
            let (topic, payload, stamp) = me
                .conn
                .publishing
                .pop_front()
                .expect("a publish that was made");
            let sent = verified.payload();
            assert_eq!(
                (sent.topic(), &sent.payload()[..], sent.timestamp()),
                (topic, &payload[..], stamp),
                "publishes go out in the order they were made, as made"
            );
            me.conn.last_publish = Some(bytes.clone());
            sim.count("publishes sent");
            Expect::Ephemeral
        }
        other => panic!(
            "{}'s session sent {other:?}, which nobody asked for (queued next: {:?})",
            me.host.who,
            me.conn.queued.front().map(|(_, e)| e)
        ),
    }
}

/// A sign request: answered now, or held for a few turns; sometimes first
/// answered with the wrong key.
fn sign(sim: &mut Sim, me: &mut Side, request: SignRequest) {
    sim.record(b"sign", request.message());
    if sim.below("wrong signer first", 16) == 0 {
        let refused = me.conn.session.sign_with(&request, &sim.stranger);
        match refused {
            Err(SignatureRefused::DoesNotVerify { id, len, key }) => {
                assert_eq!(
                    (id, len, key),
                    (request.id(), request.message().len(), me.host.key.peer_id())
                );
            }
            other => panic!("a signature by another key: {other:?}"),
        }
        sim.count("wrong signatures refused");
    }
    match sim.below("signer delay", 4) {
        0 | 1 => me
            .conn
            .session
            .sign_with(&request, &me.host.key)
            .expect("our key signs our request"),
        delay => {
            // The next turn, or the third from now.
            let turns = if delay == 2 { 1 } else { 3 };
            sim.count("signatures delayed");
            me.conn.signer.push((request, me.turns + turns));
        }
    }
}

/// The delayed signer answers what is due.
fn answer_delayed_signatures(sim: &mut Sim, me: &mut Side) {
    let turns = me.turns;
    let due: Vec<SignRequest> = me
        .conn
        .signer
        .iter()
        .filter(|(_, at)| *at <= turns)
        .map(|(r, _)| r.clone())
        .collect();
    me.conn.signer.retain(|(_, at)| *at > turns);
    for request in due {
        sim.record(b"signed", &request.id().get().to_le_bytes());
        me.conn
            .session
            .sign_with(&request, &me.host.key)
            .expect("our key signs our open request");
    }
}

fn on_event(sim: &mut Sim, me: &mut Side, peer: &mut Side, event: Event) {
    match event {
        Event::Established(authenticated) => {
            assert!(
                !me.conn.established && !me.conn.closed,
                "{} established twice",
                me.host.who
            );
            assert_eq!(
                authenticated.peer(),
                peer.host.key.peer_id(),
                "the peer it connected to"
            );
            assert_eq!(me.conn.session.remote_peer(), Some(peer.host.key.peer_id()));
            assert_eq!(
                me.conn.session.max_message_len(),
                DEFAULT_MAX_MESSAGE_LENGTH
            );
            assert!(
                me.conn.handed_fault.is_none(),
                "established on a faulty first message"
            );
            assert!(
                sim.clock < me.conn.deadline,
                "established after its deadline"
            );
            let never = match &sim.link.fault {
                Fault::WrongAudience
                | Fault::First {
                    first: FirstMessage::Replay { .. },
                    ..
                } => true,
                Fault::Lost { from } => *from == sim.link.client || me.conn.role == Role::Client,
                _ => false,
            };
            assert!(
                !never,
                "{} established through {:?}",
                me.host.who, sim.link.fault
            );
            me.conn.established = true;
            sim.record(b"established", me.host.key.peer_id().as_bytes());
            if me.conn.role == Role::Server {
                if let Some(challenge) = sim.link.client_challenge.clone() {
                    sim.accepted_challenge =
                        Some((peer.host.who, challenge, sim.link.client_stamp));
                }
            }
            if peer.conn.established {
                sim.count("handshakes completed");
            }
        }
        Event::Received(received) => judge(sim, me, received),
        Event::Completed(done) => completed(sim, me, done),
        Event::Closed(close) => closed(sim, me, peer, close),
    }
}

/// A received message, against what was sent.
fn judge(sim: &mut Sim, to: &mut Side, received: Received) {
    let (bytes, expect, subscribed) = to.conn.inbound.take().expect("an event for a message sent");
    assert_eq!(received.bytes, bytes, "received in order, exact bytes");
    sim.record(
        b"event",
        format!("{:?}", received.result.as_ref().map(|_| ())).as_bytes(),
    );
    match (expect, received.result) {
        (Expect::Commit, Ok(Delivered::Sync(v))) => {
            assert_eq!(v.items.len(), 1);
            sim.count("delivered");
        }
        (Expect::Forged, Err(Rejected::Verify(_)))
        | (Expect::Junk, Err(Rejected::Malformed(_))) => sim.count("refused"),
        (Expect::Batch { good, forged }, Ok(Delivered::Sync(v))) => {
            assert_eq!(v.items.len(), good);
            let named: Vec<usize> = v.rejected.iter().map(|r| r.index).collect();
            assert_eq!(named, forged, "every forged item named, nothing else");
            sim.count("delivered");
        }
        (Expect::Ephemeral, Ok(Delivered::Ephemeral(verified))) => {
            let payload = verified.payload();
            assert!(
                subscribed,
                "delivered only on a topic subscribed to on arrival"
            );
            let id = (verified.peer_id().as_bytes().to_vec(), payload.nonce());
            assert!(to.seen.insert(id), "an ephemeral message delivered twice");
            sim.count("delivered");
        }
        (Expect::Ephemeral, Ok(_)) => {}
        (Expect::Ephemeral, Err(Rejected::Ephemeral(_))) => sim.count("refused"),
        (Expect::Push | Expect::Request, Ok(Delivered::Sync(v))) => {
            answer(sim, to, &v.message, &v.items);
            sim.count("delivered");
        }
        // Its operation had ended: an ordinary message.
        (Expect::Answer, Ok(Delivered::Sync(_))) => {
            sim.count("answers delivered after their operation ended")
        }
        (expect, result) => panic!("sent {expect:?}, received {result:?}"),
    }
}

/// An operation ended at `side`: exactly once.
fn completed(sim: &mut Sim, side: &mut Side, done: Completed) {
    let id = (sim.link.number, done.id.get());
    assert!(side.started.contains_key(&id), "{id:?} was started here");
    assert!(side.ended.insert(id), "operation {id:?} ended twice");
    sim.record(
        b"completed",
        format!("{id:?} {:?}", done.result.as_ref().map(|_| ())).as_bytes(),
    );
    match done.result {
        Ok(Outcome::Pushed { head, .. }) => {
            assert_eq!(side.started[&id], Some(head));
            side.acknowledged.insert(head);
        }
        Ok(Outcome::Fetched(verified)) => {
            assert!(verified.rejected.is_empty());
            let heads = verified.items.iter().filter_map(|item| match item {
                VerifiedItem::Commit(commit, _) => Some(commit.payload().head()),
                VerifiedItem::Fragment(..) => None,
            });
            side.fetched = Some(heads.collect());
        }
        Ok(other) => panic!("no such operation was started: {other:?}"),
        Err(OperationError::TimedOut { .. }) => sim.count("operations timed out"),
        Err(OperationError::Closed { .. }) => {
            assert!(side.conn.session.is_closed(), "ended by a close while open");
            sim.count("operations ended by their connection's close");
        }
        Err(other) => panic!("a push or fetch ended with {other}"),
    }
}

/// `me`'s session closed: the close is the one its connection's fault (or
/// disturbance) allows; the host ends its side of the connection.
fn closed(sim: &mut Sim, me: &mut Side, peer: &mut Side, close: Close) {
    assert!(!me.conn.closed, "{} closed twice", me.host.who);
    sim.record(b"closed", close.to_string().as_bytes());
    check_close(sim, me, peer.host.key.peer_id(), &close);
    me.conn.closed = true;
    if let Some((_, expect, _)) = me.conn.inbound.take() {
        if matches!(close, Close::Local) {
            // Nothing more for the application after our own close.
            sim.count("messages dropped by a local close");
        } else {
            assert_eq!(expect, Expect::Answer, "only an answer is taken");
            sim.count("answers taken by operations");
        }
    }
    let number = sim.link.number;
    let started = me.started.keys().filter(|(c, _)| *c == number);
    let ended = me.ended.iter().filter(|(c, _)| *c == number);
    assert!(
        started.eq(ended),
        "every operation of a closed connection ended exactly once"
    );
    assert_eq!(me.conn.session.operations_in_flight(), 0);
    // A signature for a closed session is refused.
    for (request, _) in std::mem::take(&mut me.conn.signer) {
        let refused = me.conn.session.sign_with(&request, &me.host.key);
        assert_eq!(refused, Err(SignatureRefused::Unknown { id: request.id() }));
        sim.count("sign requests refused after the close");
    }
    for _ in me.conn.queued.drain(..) {
        sim.count("sends lost with their connection");
    }
    for _ in me.conn.publishing.drain(..) {
        sim.count("publishes dropped with their connection");
    }
    // The host ends the connection: its last bytes still arrive, it reads
    // nothing more.
    me.conn.out.ended = true;
    peer.conn.out.abandon(sim);
    let now = sim.now();
    match me.conn.session.poll(now) {
        Output::Wait {
            read: false,
            until: None,
        } => {}
        other => panic!("a closed session only waits, but gave {other:?}"),
    }
}

fn check_close(sim: &mut Sim, me: &Side, peer: PeerId, close: &Close) {
    let who = me.host.who;
    let link_fault = sim.link.fault.clone();
    if me.conn.established {
        match close {
            Close::PeerClosed => sim.count("closed by the peer after the handshake"),
            Close::Local if me.conn.closed_locally => sim.count("closed locally"),
            other => panic!("{who} was established, then closed with: {other}"),
        }
        return;
    }
    if let Some((bytes, expect, now_secs)) = &me.conn.handed_fault {
        check_first_message_close(sim, me, peer, bytes, expect, *now_secs, close);
        return;
    }
    match close {
        Close::PeerClosed if me.conn.transport_refused => {}
        Close::Handshake(HandshakeError::Rejected { reason, .. }) => {
            assert_eq!(me.conn.role, Role::Client);
            assert_eq!(Some(*reason), sim.link.rejected, "rejected for the server's reason");
            sim.count("rejections read");
        }
        Close::Handshake(HandshakeError::Refused(ChallengeError::InvalidAudience {
            audience,
            me: server,
        })) => {
            assert_eq!(link_fault, Fault::WrongAudience);
            assert_eq!(
                (*audience, *server),
                (Audience::Known(sim.stranger.peer_id()), me.host.key.peer_id())
            );
            sim.link.rejected = Some(RejectionReason::InvalidAudience);
            sim.count("wrong audience refused");
        }
        Close::HandshakeTimedOut { after, waiting_for } => {
            assert_eq!(*after, me.conn.timeout, "the configured timeout");
            assert!(sim.clock >= me.conn.deadline, "timed out before its deadline");
            assert_eq!(*waiting_for, me.conn.waiting_for(), "waiting for what the host saw");
            assert!(
                link_fault != Fault::None || sim.link.disturbed,
                "{who}'s honest handshake timed out"
            );
            sim.count(match *waiting_for {
                "signer" => "handshakes timed out waiting for the signer",
                "challenge" => "handshakes timed out waiting for the challenge",
                _ => "handshakes timed out waiting for the response",
            });
        }
        Close::PeerClosed => {
            assert!(
                link_fault != Fault::None || sim.link.disturbed,
                "{who}'s honest handshake was closed by its peer"
            );
            sim.count("handshakes closed by the peer");
        }
        Close::Local if me.conn.closed_locally => sim.count("handshakes closed locally"),
        other => panic!(
            "{who} closed its handshake with {other}, which nothing in this connection ({link_fault:?}) causes"
        ),
    }
}

/// The close of a session handed something other than its peer's
/// session's handshake message first: a fault, or (after its peer's own
/// handshake message was lost) the peer's traffic. A challenge replayed
/// is refused by the replay cache (or as too old); anything else by its
/// bytes: over 256 bytes too large, else malformed, else unexpected.
fn check_first_message_close(
    sim: &mut Sim,
    me: &Side,
    peer: PeerId,
    bytes: &Bytes,
    expect: &Expect,
    now_secs: u64,
    close: &Close,
) {
    let who = me.host.who;
    if let Expect::Fault(FirstMessage::Replay { stamp }) = expect {
        let Close::Handshake(HandshakeError::Refused(refused)) = close else {
            panic!("{who} handed a replayed challenge closed with: {close}");
        };
        let too_old = stamp.abs_diff(now_secs) > DEFAULT_MAX_DRIFT.as_secs();
        match refused {
            ChallengeError::ReplayedNonce { issuer, .. } if !too_old => {
                assert_eq!(*issuer, peer, "the replaying client");
                sim.count("replayed challenge refused");
            }
            ChallengeError::ClockDrift { .. } if too_old => {
                sim.count("replayed challenge refused as too old");
            }
            other => panic!("a replay stamped {stamp} at {now_secs} refused as {other}"),
        }
        sim.link.rejected = Some(refused.reason());
        return;
    }
    let step = match me.conn.role {
        Role::Server => "challenge",
        Role::Client => "response",
    };
    let what = match expect {
        Expect::Fault(FirstMessage::Oversized { .. }) => {
            "first message oversized: refused by the session"
        }
        Expect::Fault(FirstMessage::Junk) => "first message junk: malformed",
        Expect::Fault(FirstMessage::Unexpected) => "first message unexpected",
        _ => "peer's traffic read as the response",
    };
    let decoded = Message::decode(bytes.clone());
    match close {
        Close::Handshake(HandshakeError::TooLarge { len, max }) => {
            assert_eq!(
                (*len, *max),
                (bytes.len() as u64, HANDSHAKE_MAX_MESSAGE_LENGTH)
            );
            assert!(bytes.len() > HANDSHAKE_MAX_MESSAGE_LENGTH);
        }
        Close::Handshake(HandshakeError::Malformed(_)) => {
            assert!(bytes.len() <= HANDSHAKE_MAX_MESSAGE_LENGTH && decoded.is_err());
        }
        Close::Handshake(HandshakeError::Unexpected { expected, found }) => {
            assert!(bytes.len() <= HANDSHAKE_MAX_MESSAGE_LENGTH);
            let kind = decoded.expect("well formed").kind_name();
            assert_eq!((*expected, *found), (step, kind));
        }
        other => panic!("{who} handed {expect:?} first closed with: {other}"),
    }
    sim.count(what);
}

/// Both sessions closed: an undisturbed connection without a fault
/// established both sides first (who may establish under a fault is
/// checked as each side establishes); then a new connection.
fn reconnect(sim: &mut Sim, a: &mut Side, b: &mut Side) {
    if !sim.link.disturbed && sim.link.fault == Fault::None {
        assert!(
            a.conn.established && b.conn.established,
            "an undisturbed connection without a fault established both sides"
        );
    }
    sim.count("connections");
    (a.conn, b.conn) = connect(sim, &a.host, &b.host);
}

/// The side's host is evicted and comes back: its session from a
/// snapshot, on another monotonic origin with a fresh seed. Only between
/// messages: otherwise the snapshot is refused, typed, and nothing
/// happens.
fn evict(sim: &mut Sim, side: &mut Side) {
    if side.conn.closed {
        return;
    }
    let now = sim.now();
    let bytes = match side.conn.session.snapshot(now) {
        Ok(bytes) => bytes,
        Err(SnapshotError::Busy { what }) => {
            sim.record(b"snapshot refused", what.as_bytes());
            sim.count("snapshots refused");
            return;
        }
        Err(other) => panic!("a snapshot refused with {other}"),
    };
    assert!(side.conn.established, "no snapshot during the handshake");
    assert!(
        side.conn.signer.is_empty(),
        "no snapshot while a signature is open"
    );
    sim.record(b"snapshot", &bytes);
    // Another origin, then back to the simulation's clock (times are
    // kept as ages, so both hops keep every deadline).
    let origin = sim.below("origin", 1 << 40);
    let elsewhere = Now::new(
        now.unix_secs,
        Timestamp::from_nanos(now.monotonic.as_nanos() + origin),
    );
    let restored =
        Session::restore(&bytes, elsewhere, sim.bytes("restore seed")).expect("restores");
    let again = restored.snapshot(elsewhere).expect("between messages");
    assert_eq!(
        again, bytes,
        "a restored session snapshots to the same bytes"
    );
    side.conn.session = Session::restore(&again, now, sim.bytes("restore seed")).expect("restores");
    sim.count("restores");
}

/// The connection is lost: each direction's stream is cut at a random
/// byte of what is in flight. What came before the cut still arrives.
fn cut(sim: &mut Sim, a: &mut Side, b: &mut Side) {
    for side in [&mut *a, &mut *b] {
        let in_flight = side.conn.out.in_flight.len() as u64;
        let keep = usize::try_from(sim.below("cut at", in_flight + 1)).expect("small");
        sim.record(b"cut", &(keep as u64).to_le_bytes());
        side.conn.out.cut_at(keep);
    }
    sim.link.disturbed = true;
    sim.count("cuts");
}

/// Time passes: a little, or (once the handshake is done, or when it is
/// faulty or disturbed) up to the next deadline either session waits for,
/// or up to 2 s. A handshake that cannot complete is waited out sooner.
fn pass_time(sim: &mut Sim, a: &Side, b: &Side) {
    let open = a.conn.established && b.conn.established;
    let far = open || sim.link.fault != Fault::None || sim.link.disturbed;
    let sleep_one_in = if open { 8 } else { 2 };
    if far && sim.below("sleep until the next deadline", sleep_one_in) == 0 {
        let next = [a.conn.until, b.conn.until]
            .into_iter()
            .flatten()
            .map(Timestamp::as_nanos)
            .min();
        if let Some(next) = next {
            sim.clock = sim.clock.max(next);
        }
    } else if far && sim.below("far", 8) == 0 {
        sim.clock += sim.below("far ms", 2_000) * MS;
    } else {
        sim.clock += sim.below("near ns", 50 * MS);
    }
}

/// One seed's run, from the first connection to the final checks;
/// returns its transcript's digest.
fn simulate(sim: &mut Sim) -> [u8; 32] {
    let (mut a, mut b) = sides(sim);
    let steps = 200 + sim.below("steps", 200);
    for step in 0..steps {
        sim.step = step;
        act(sim, &mut a, &mut b);
        jump_clock_if_due(sim, &a, &b);
        count_step(sim, &a, &b);
        // The sessions' own outputs go out; a host whose connection opens
        // or whose peer is gone also reads.
        let read = !a.conn.established || b.conn.out.ended;
        drive(sim, &mut a, &mut b, read);
        let read = !b.conn.established || a.conn.out.ended;
        drive(sim, &mut b, &mut a, read);
        if a.conn.closed && b.conn.closed {
            reconnect(sim, &mut a, &mut b);
        }
    }
    drain(sim, &mut a, &mut b);

    // A last fetch each way, then every deadline passes: every operation
    // has ended exactly once, and every acknowledged push came back.
    final_fetch(sim, &mut a, &mut b);
    final_fetch(sim, &mut b, &mut a);
    sim.clock += 3_700_000 * MS;
    drive(sim, &mut a, &mut b, false);
    drive(sim, &mut b, &mut a, false);
    for side in [&a, &b] {
        let started: BTreeSet<(u64, u64)> = side.started.keys().copied().collect();
        assert_eq!(started, side.ended, "every operation ended exactly once");
        assert_eq!(side.conn.session.operations_in_flight(), 0);
    }
    *sim.transcript.finalize().as_bytes()
}

/// One step's action, chosen by the seed.
fn act(sim: &mut Sim, a: &mut Side, b: &mut Side) {
    match sim.below("action", 14) {
        0 | 1 => send(sim, a),
        2 | 3 => send(sim, b),
        4 | 5 => drive(sim, a, b, true),
        6 | 7 => drive(sim, b, a, true),
        8 => start_operation(sim, a),
        9 => start_operation(sim, b),
        10 => {
            if sim.below("evict", 2) == 0 {
                evict(sim, a);
            } else {
                evict(sim, b);
            }
        }
        11 => match sim.below("connection end", 24) {
            0 => cut(sim, a, b),
            1 => {
                let side = if sim.below("who closes", 2) == 0 {
                    a
                } else {
                    b
                };
                if !side.conn.closed {
                    side.conn.session.close();
                    side.conn.closed_locally = true;
                    sim.link.disturbed = true;
                    sim.count("local closes");
                }
            }
            _ => {}
        },
        _ => pass_time(sim, a, b),
    }
}

/// `Fault::ClockJump`: when its step comes, the clock jumps past both
/// handshake deadlines.
fn jump_clock_if_due(sim: &mut Sim, a: &Side, b: &Side) {
    match sim.link.jump_in {
        Some(0) => {
            let longest = a.conn.timeout.max(b.conn.timeout);
            let past = u64::try_from(longest.as_nanos()).expect("small");
            sim.clock += past + 1 + sim.below("jump past by ns", 1_000 * MS);
            sim.link.jump_in = None;
            sim.count("clock jumps");
        }
        Some(steps) => sim.link.jump_in = Some(steps - 1),
        None => {}
    }
}

/// Where the step was spent: on an open connection, or opening or closing
/// one.
fn count_step(sim: &mut Sim, a: &Side, b: &Side) {
    let (a, b) = (&a.conn, &b.conn);
    sim.count(if a.closed || b.closed {
        "steps closing"
    } else if a.established && b.established {
        "steps open"
    } else if sim.link.fault != Fault::None {
        "steps in a faulty handshake"
    } else if sim.link.disturbed {
        "steps in a disturbed handshake"
    } else {
        "steps in an honest handshake"
    });
}

/// No more faults: the hosts go on until they are connected and
/// established, and everything sent was received and judged, exactly
/// once.
fn drain(sim: &mut Sim, a: &mut Side, b: &mut Side) {
    sim.calm = true;
    for _ in 0..DRAIN_LIMIT {
        if a.conn.settled() && b.conn.settled() {
            break;
        }
        sim.step += 1;
        drive(sim, a, b, true);
        drive(sim, b, a, true);
        if a.conn.closed && b.conn.closed {
            reconnect(sim, a, b);
        }
        sim.clock += 10 * MS;
    }
    assert!(
        a.conn.settled() && b.conn.settled(),
        "everything was read and judged"
    );
}

/// `from` fetches the operations' tree from `to` and checks that every
/// push `to` acknowledged came back.
fn final_fetch(sim: &mut Sim, from: &mut Side, to: &mut Side) {
    let deadline = sim
        .now()
        .monotonic
        .saturating_add(Duration::from_secs(3_600));
    let id = from
        .conn
        .session
        .start(Operation::Fetch(operations_tree()), deadline)
        .expect("starts");
    from.started.insert((sim.link.number, id.get()), None);
    from.fetched = None;
    for _ in 0..DRAIN_LIMIT {
        if from.fetched.is_some() || from.conn.closed || to.conn.closed {
            break;
        }
        sim.step += 1;
        drive(sim, from, to, true);
        drive(sim, to, from, true);
        sim.clock += 10 * MS;
    }
    assert!(
        !from.conn.closed && !to.conn.closed,
        "no connection ends when calm"
    );
    let fetched = from.fetched.clone().expect("the last fetch was answered");
    let lost: Vec<_> = from.acknowledged.difference(&fetched).collect();
    assert!(
        lost.is_empty(),
        "acknowledged pushes not fetched back: {lost:?}"
    );
}

/// One seed's result: its transcript's digest, its journal, its counts.
struct Run {
    digest: [u8; 32],
    journal: Vec<journal::Choice>,
    counts: Counts,
}

/// What a failing seed prints: what failed, how to replay it, where (the
/// connection), and the journal's tail.
fn failure_report(seed: u64, failure: &str, place: &str, journal: &Journal) -> String {
    let total = journal.choices().len();
    format!(
        "simulation seed {seed} failed: {failure}\n\
         replay it exactly with\n  \
         SIM_SEED={seed} cargo test -p bijou-proto --test proto simulation:: -- --nocapture\n\
         {place}\n\
         the journal's last {} of {total} choices:\n{}",
        total.min(JOURNAL_TAIL),
        journal.tail(JOURNAL_TAIL)
    )
}

/// Runs `seed`: its result, or (on any panic) the failure report.
fn run(seed: u64) -> Result<Run, String> {
    let mut sim = Sim::new(seed);
    match catch_unwind(AssertUnwindSafe(|| simulate(&mut sim))) {
        Ok(digest) => Ok(Run {
            digest,
            journal: sim.journal.choices().to_vec(),
            counts: sim.counts,
        }),
        Err(panic) => {
            let failure = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic without a message");
            let link = &sim.link;
            let place = format!(
                "at step {}, {:.3} ms, in connection {} (client {}, fault {:?}{})",
                sim.step,
                sim.clock as f64 / 1e6,
                link.number,
                link.client,
                link.fault,
                if link.disturbed { ", disturbed" } else { "" }
            );
            Err(failure_report(seed, failure, &place, &sim.journal))
        }
    }
}

/// Runs `seed`, failing the test with the report if it fails.
fn run_or_fail(seed: u64) -> Run {
    run(seed).unwrap_or_else(|report| panic!("{report}"))
}

/// What every run of many seeds must have exercised.
const EXERCISED: &[&str] = &[
    "delivered",
    "refused",
    "budget waits",
    "verification steps",
    "answers taken by operations",
    "answers delivered after their operation ended",
    "operations timed out",
    "operations ended by their connection's close",
    "publishes sent",
    "publishes dropped with their connection",
    "restores",
    "snapshots refused",
    "cuts",
    "local closes",
    "frames lost",
    "frames cut in two",
    "streams ended",
    "handshakes completed",
    "connections",
    "first message oversized: refused by the session",
    "oversized first message refused by the transport",
    "first message junk: malformed",
    "first message unexpected",
    "replayed challenge refused",
    "rejections read",
    "wrong audience refused",
    "handshake messages lost",
    "clock jumps",
    "handshakes timed out waiting for the signer",
    "handshakes timed out waiting for the challenge",
    "handshakes timed out waiting for the response",
    "handshakes closed by the peer",
    "closed by the peer after the handshake",
    "closed locally",
    "signatures delayed",
    "wrong signatures refused",
    "sign requests refused after the close",
    "sends refused while not open",
    "busy messages given back",
];

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("SIM_SEED") {
        return vec![seed.parse().expect("SIM_SEED is a number")];
    }
    let n = std::env::var("SIM_SEEDS")
        .ok()
        .map_or(DEFAULT_SEEDS, |n| n.parse().expect("SIM_SEEDS is a number"));
    (0..n).collect()
}

/// The same journal, transcript and counts: a seed replays exactly.
fn assert_same_run(seed: u64, first: &Run, again: &Run) {
    assert!(!first.journal.is_empty());
    assert!(
        first.journal == again.journal,
        "seed {seed}: another journal"
    );
    assert_eq!(
        first.digest, again.digest,
        "seed {seed}: another transcript"
    );
    assert_eq!(first.counts, again.counts, "seed {seed}: other counts");
}

#[test]
fn random_schedules_keep_every_invariant() {
    let seeds = seeds();
    let started = std::time::Instant::now();
    let mut total = Counts::new();
    let mut failed = Vec::new();
    for &seed in &seeds {
        let first = match run(seed) {
            Ok(run) => run,
            Err(report) => {
                eprintln!("{report}");
                failed.push(seed);
                continue;
            }
        };
        // A replay (and one seed in a hundred): exactly the same run again.
        if seeds.len() == 1 || seed % 100 == 0 {
            assert_same_run(seed, &first, &run_or_fail(seed));
        }
        for (what, n) in first.counts {
            *total.entry(what).or_default() += n;
        }
    }
    let elapsed = started.elapsed();
    eprintln!(
        "{} seeds in {elapsed:.1?}, {} failed:",
        seeds.len(),
        failed.len()
    );
    for (what, n) in &total {
        eprintln!("  {what}: {n}");
    }
    assert!(failed.is_empty(), "failing seeds: {failed:?}");
    if seeds.len() >= 100 {
        let missing: Vec<_> = EXERCISED
            .iter()
            .filter(|what| total.get(*what).copied().unwrap_or(0) == 0)
            .collect();
        assert!(missing.is_empty(), "never exercised: {missing:?}");
    }
}

#[test]
fn a_seed_runs_twice_to_the_same_journal_and_transcript() {
    for seed in [0, 1, 7, 519] {
        assert_same_run(seed, &run_or_fail(seed), &run_or_fail(seed));
    }
}

#[test]
fn different_seeds_give_different_runs() {
    let (one, two) = (run_or_fail(1), run_or_fail(2));
    assert_ne!(one.digest, two.digest);
    assert!(one.journal != two.journal);
}

#[test]
fn a_failure_report_names_the_replay_command_and_the_journal_tail() {
    let mut journal = Journal::new(42);
    for step in 0..100 {
        journal.below("action", 14, step, step * MS);
    }
    journal.below("the last choice", 3, 100, 100 * MS);
    let report = failure_report(42, "the invariant", "at the place", &journal);
    assert!(report.starts_with("simulation seed 42 failed: the invariant\n"));
    assert!(report.contains("SIM_SEED=42 cargo test -p bijou-proto --test proto simulation::"));
    assert!(report.contains("\nat the place\n"));
    assert!(report.contains(&format!("last {JOURNAL_TAIL} of 101 choices")));
    assert!(report.contains("#100 step 100 at 100.000 ms: the last choice = "));
    assert!(report.contains("#61 step 61"));
    assert!(!report.contains("#60 step"), "only the tail");
}
