//! Operations on a [`Session`], no runtime: a client session runs push,
//! fetch, probe, keyhive registration and subscribe against a server
//! played here (a second session plus the answers a Subduction server
//! gives), on virtual time. Each operation ends exactly once; the message
//! that ends it is not also delivered; bad answers are refused or
//! delivered as ordinary messages, never twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::time::Duration;

use bijou_codec::Wire;
use bijou_proto::keyhive::{
    Access, DocumentKey, Grantee, KeyhiveError, KeyhiveMessage, KeyhivePeer, SignedKeyhive,
    SukMessage,
};
use bijou_proto::message::EphemeralMessage;
use bijou_proto::message::{
    BatchSyncResponse, CommitId, Fragment, HeadsUpdate, LooseCommit, Message, RemoteHeads,
    SedimentreeId, SignedItem, SyncDiff, SyncMessage, SyncResult, Topic, Topics, VerifiedItem,
};
use bijou_proto::session::{
    Completed, Delivered, Operation, OperationError, OperationId, Outcome, Received, Session,
    SessionConfig, StartError, TreeAccess, Work, WrongSigner,
};
use bijou_proto::time::{Now, Timestamp};
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity};
use bijou_test_support::pair as kit;
use bytes::Bytes;

const T0: u64 = 1_800_000_000;
const WAIT: Duration = Duration::from_secs(10);

fn at(secs: u64) -> Now {
    Now::new(T0 + secs, Timestamp::from_secs(secs))
}

/// What the played server does with each kind of request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// Acknowledges commits, answers fetches and keyhive.
    Answers,
    /// Drops everything (a refused push, an open server and keyhive).
    Silent,
}

struct Pair {
    client_key: SigningKey,
    server_key: SigningKey,
    client: Session,
    server: Session,
    /// The server's side, played.
    played: Played,
    /// Messages from client to server, encoded, not yet read.
    to_server: Vec<Bytes>,
    /// Messages from server to client, encoded, not yet read.
    to_client: Vec<Bytes>,
    /// What the client delivered as ordinary messages.
    delivered: Vec<Received>,
    /// Snapshot and restore both sessions after every message (taking
    /// the ended operations into `completions` first), and how many times.
    restore: bool,
    restores: u32,
    completions: Vec<Completed>,
}

/// The server's settings: at most two remote topics.
fn server_config() -> SessionConfig {
    let mut config = SessionConfig::new([2; 32]);
    config.ephemeral.max_remote_topics = 2;
    config
}

impl Pair {
    /// The shared kit's connected pair, driven here step by step.
    fn new(mode: Server) -> Self {
        let kit = kit::Pair::connected_with(SessionConfig::new([1; 32]), server_config());
        Self {
            client: kit.client.session,
            server: kit.server.session,
            client_key: kit.client.key,
            server_key: kit.server.key,
            played: Played::new(mode),
            to_server: Vec::new(),
            to_client: Vec::new(),
            delivered: Vec::new(),
            restore: false,
            restores: 0,
            completions: Vec::new(),
        }
    }

    fn start(&mut self, operation: Operation, now: Now) -> OperationId {
        let id = self
            .client
            .start(operation, now.monotonic.saturating_add(WAIT))
            .unwrap();
        self.client_sends();
        id
    }

    fn client_sends(&mut self) {
        if self.client.needs_signer() {
            self.client.sign_pending_with(&self.client_key).unwrap();
        }
        while let Some(message) = self.client.poll_transmit() {
            self.to_server.push(message.encode().unwrap());
        }
    }

    /// Runs until nothing moves: the server reads and answers, the client
    /// reads (and signs what it must).
    fn run(&mut self, now: Now) {
        loop {
            let mut moved = false;
            for bytes in std::mem::take(&mut self.to_server) {
                moved = true;
                let received = receive(&mut self.server, bytes, now);
                self.serve(received);
                self.restore_both(now);
                while let Some(message) = self.server.poll_transmit() {
                    self.to_client.push(message.encode().unwrap());
                }
            }
            for bytes in std::mem::take(&mut self.to_client) {
                moved = true;
                if let Some(received) = receive(&mut self.client, bytes, now) {
                    self.delivered.push(received);
                }
                self.restore_both(now);
                self.client_sends();
                self.restore_both(now);
            }
            if !moved {
                return;
            }
        }
    }

    /// With `restore`: both sessions go through a snapshot, as a host
    /// evicted after every message would (another monotonic origin and a
    /// fresh seed each time).
    fn restore_both(&mut self, now: Now) {
        if !self.restore {
            return;
        }
        self.completions.extend(all_completed(&mut self.client));
        self.restores += 1;
        let n = self.restores;
        let elsewhere = Now::new(
            now.unix_secs,
            Timestamp::from_nanos(now.monotonic.as_nanos() + u64::from(n) * 1_000_000_007),
        );
        let mut seed = [0; 32];
        seed[..4].copy_from_slice(&n.to_le_bytes());
        for session in [&mut self.client, &mut self.server] {
            let bytes = session.snapshot(now).expect("between messages");
            *session = Session::restore(&bytes, elsewhere, seed).expect("restores");
            // Back on this test's clock: a snapshot keeps times as ages.
            let bytes = session.snapshot(elsewhere).expect("between messages");
            *session = Session::restore(&bytes, now, seed).expect("restores");
        }
    }

    fn reply(&mut self, message: impl Into<Message>) {
        let bytes = self.server.encode(&message.into()).unwrap();
        self.to_client.push(bytes);
    }

    /// The played server's answer to what it received.
    fn serve(&mut self, received: Option<Received>) {
        let Some(received) = received else { return };
        if let Some(answer) = self.played.answer(received) {
            self.reply(answer);
        }
    }
}

/// The server's side of the protocol, played: what it stores and answers.
struct Played {
    client_key: SigningKey,
    server_key: SigningKey,
    /// Commits the server holds.
    stored: Vec<SignedItem<LooseCommit>>,
    /// Keyhive events the server holds (a registration is then known).
    known_events: usize,
    mode: Server,
}

impl Played {
    fn new(mode: Server) -> Self {
        Self {
            client_key: SigningKey::from_bytes(&[1; 32]),
            server_key: SigningKey::from_bytes(&[2; 32]),
            stored: Vec::new(),
            known_events: 0,
            mode,
        }
    }

    /// The answer to what the server received, if any.
    fn answer(&mut self, received: Received) -> Option<Message> {
        if self.mode == Server::Silent {
            return None;
        }
        match received.result {
            Ok(Delivered::Sync(verified)) => match verified.message {
                SyncMessage::LooseCommit(commit) => {
                    let Some(VerifiedItem::Commit(payload, _)) = verified.items.first() else {
                        return None;
                    };
                    let head = payload.payload().head();
                    self.stored.push(commit.item);
                    Some(
                        SyncMessage::HeadsUpdate(HeadsUpdate {
                            id: commit.id,
                            heads: RemoteHeads::new(self.stored.len() as u64, [head]),
                        })
                        .into(),
                    )
                }
                SyncMessage::BatchSyncRequest(request) => {
                    let result = if request.id == tree() {
                        SyncResult::Ok(SyncDiff::new(
                            self.stored.clone(),
                            Vec::<SignedItem<Fragment>>::new(),
                            [],
                            [],
                        ))
                    } else if request.id == SedimentreeId::new([0xaa; 32]) {
                        SyncResult::Unauthorized
                    } else {
                        SyncResult::NotFound
                    };
                    Some(
                        SyncMessage::BatchSyncResponse(BatchSyncResponse {
                            requestor: request.requestor,
                            nonce: request.nonce,
                            id: request.id,
                            result,
                            responder_heads: RemoteHeads::default(),
                        })
                        .into(),
                    )
                }
                _ => None,
            },
            Ok(Delivered::Keyhive(suk)) => {
                let me = KeyhivePeer::new(self.server_key.peer_id());
                let them = KeyhivePeer::new(self.client_key.peer_id());
                let answer = match &suk.message().signed.message {
                    KeyhiveMessage::RequestContactCard { .. } => {
                        KeyhiveMessage::MissingContactCard {
                            sender: me,
                            target: them,
                        }
                    }
                    KeyhiveMessage::SyncRequest { found, .. } => KeyhiveMessage::SyncResponse {
                        sender: me,
                        target: them,
                        requested: if self.known_events > 0 {
                            Vec::new()
                        } else {
                            found.clone()
                        },
                        found: Vec::new(),
                        responder_total: self.known_events as u64,
                        requester_total: found.len() as u64,
                    },
                    KeyhiveMessage::SyncOps { ops, .. } => {
                        self.known_events += ops.len();
                        KeyhiveMessage::SyncConfirmation {
                            sender: me,
                            target: them,
                            confirmer_total: self.known_events as u64,
                        }
                    }
                    _ => return None,
                };
                Some(keyhive(&self.server_key, answer).into())
            }
            _ => None,
        }
    }
}

fn keyhive(signer: &SigningKey, message: KeyhiveMessage) -> SukMessage {
    SukMessage {
        contact_card: None,
        signed: SignedKeyhive::sign(signer, message).unwrap(),
    }
}

/// Hands `bytes` to `session` and runs it to its event (`None` when an
/// operation took the message).
fn receive(session: &mut Session, bytes: Bytes, now: Now) -> Option<Received> {
    session.handle_message(bytes, now).unwrap();
    while session.poll_work(now) != Work::Idle {}
    session.poll_event()
}

fn tree() -> SedimentreeId {
    SedimentreeId::new([9; 32])
}

fn commit(key: &SigningKey, n: u8, parent: Option<CommitId>) -> (SyncMessage, CommitId) {
    let head = CommitId::new([n; 32]);
    let blob = Blob::new(vec![n; 64]);
    (
        SyncMessage::loose_commit(key, tree(), head, parent, blob).unwrap(),
        head,
    )
}

fn all_completed(session: &mut Session) -> Vec<Completed> {
    std::iter::from_fn(|| session.poll_completed()).collect()
}

#[test]
fn a_push_ends_when_the_server_acknowledges_it_and_the_ack_is_not_delivered_twice() {
    let mut pair = Pair::new(Server::Answers);
    let (message, head) = commit(&pair.client_key, 1, None);
    let id = pair.start(Operation::Push(message), at(0));
    assert!(pair.client.is_in_flight(id));
    pair.run(at(1));
    let done = all_completed(&mut pair.client);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].id, id);
    match &done[0].result {
        Ok(Outcome::Pushed {
            tree: t,
            head: h,
            heads,
        }) => {
            assert_eq!((*t, *h), (tree(), head));
            assert_eq!(heads.heads(), &[head]);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        pair.delivered.is_empty(),
        "the HeadsUpdate went to the push"
    );
    assert!(!pair.client.is_in_flight(id));
    assert_eq!(pair.client.operations_in_flight(), 0);
    // Nothing more ends, ever.
    let _ = pair.client.handle_timeout(at(100));
    assert!(pair.client.poll_completed().is_none());
}

#[test]
fn a_heads_update_for_a_later_push_acknowledges_the_earlier_ones_on_that_tree() {
    let mut pair = Pair::new(Server::Silent);
    let mut parent = None;
    let mut ids = Vec::new();
    let mut heads = Vec::new();
    for n in 1..=3 {
        let (message, head) = commit(&pair.client_key, n, parent);
        ids.push(pair.start(Operation::Push(message), at(0)));
        heads.push(head);
        parent = Some(head);
    }
    // A push on another tree is not acknowledged by this tree's update.
    let other_tree = SedimentreeId::new([3; 32]);
    let blob = Blob::new(vec![0; 8]);
    let other = SyncMessage::loose_commit(
        &pair.client_key,
        other_tree,
        CommitId::new([4; 32]),
        None,
        blob,
    )
    .unwrap();
    let other_id = pair.start(Operation::Push(other), at(0));
    pair.run(at(1));
    assert!(all_completed(&mut pair.client).is_empty());
    // The server names only the second commit.
    pair.reply(SyncMessage::HeadsUpdate(HeadsUpdate {
        id: tree(),
        heads: RemoteHeads::new(2, [heads[1]]),
    }));
    pair.run(at(2));
    let done = all_completed(&mut pair.client);
    let ended: Vec<OperationId> = done.iter().map(|d| d.id).collect();
    assert_eq!(ended, ids[..2].to_vec());
    assert!(pair.client.is_in_flight(ids[2]));
    assert!(pair.client.is_in_flight(other_id));
    // At the deadline the rest time out, once each.
    let _ = pair.client.handle_timeout(at(10));
    let done = all_completed(&mut pair.client);
    assert_eq!(done.len(), 2);
    for d in &done {
        assert!(
            matches!(
                d.result,
                Err(OperationError::TimedOut {
                    waiting_for: "HeadsUpdate naming the commit"
                })
            ),
            "{d:?}"
        );
    }
    assert_eq!(pair.client.operations_in_flight(), 0);
}

#[test]
fn a_fetch_returns_every_pushed_commit_verified() {
    let mut pair = Pair::new(Server::Answers);
    let mut parent = None;
    for n in 1..=5 {
        let (message, head) = commit(&pair.client_key, n, parent);
        pair.start(Operation::Push(message), at(0));
        parent = Some(head);
    }
    pair.run(at(0));
    assert_eq!(all_completed(&mut pair.client).len(), 5);
    let id = pair.start(Operation::Fetch(tree()), at(1));
    pair.run(at(1));
    let done = pair.client.completed(id).expect("fetched");
    let Ok(Outcome::Fetched(verified)) = done.result else {
        panic!("{:?}", done.result)
    };
    assert_eq!(verified.items.len(), 5);
    assert!(verified.rejected.is_empty());
    assert!(pair.delivered.is_empty());
}

#[test]
fn fetches_answered_out_of_order_are_matched_by_nonce() {
    let mut pair = Pair::new(Server::Answers);
    let first = pair.start(Operation::Fetch(tree()), at(0));
    let second = pair.start(Operation::Fetch(SedimentreeId::new([5; 32])), at(0));
    // Let the server answer both, then hand the client the answers in
    // reverse order.
    for bytes in std::mem::take(&mut pair.to_server) {
        let received = receive(&mut pair.server, bytes, at(0));
        pair.serve(received);
    }
    pair.to_client.reverse();
    pair.run(at(0));
    let done = all_completed(&mut pair.client);
    assert_eq!(
        done.iter().map(|d| d.id).collect::<Vec<_>>(),
        [second, first]
    );
    assert!(matches!(
        done[0].result,
        Err(OperationError::Refused {
            reason: "not found",
            ..
        })
    ));
    assert!(matches!(done[1].result, Ok(Outcome::Fetched(_))));
}

#[test]
fn responses_nobody_asked_for_are_delivered_as_ordinary_messages_and_end_nothing() {
    let mut pair = Pair::new(Server::Answers);
    let id = pair.start(Operation::Fetch(tree()), at(0));
    // Keep the server's answer to send it twice.
    for bytes in std::mem::take(&mut pair.to_server) {
        let received = receive(&mut pair.server, bytes, at(0));
        pair.serve(received);
    }
    let answer = pair.to_client[0].clone();
    pair.run(at(0));
    assert_eq!(all_completed(&mut pair.client).len(), 1);
    // A second response to the finished fetch.
    pair.to_client.push(answer);
    // A response to a fetch never started (another nonce).
    pair.reply(SyncMessage::BatchSyncResponse(BatchSyncResponse {
        requestor: pair.client_key.peer_id(),
        nonce: 12345,
        id: tree(),
        result: SyncResult::NotFound,
        responder_heads: RemoteHeads::default(),
    }));
    // An acknowledgement of a push never started.
    pair.reply(SyncMessage::HeadsUpdate(HeadsUpdate {
        id: tree(),
        heads: RemoteHeads::new(1, [CommitId::new([1; 32])]),
    }));
    pair.run(at(1));
    assert!(pair.client.poll_completed().is_none(), "{id} ended once");
    assert_eq!(pair.delivered.len(), 3);
    for received in &pair.delivered {
        assert!(matches!(received.result, Ok(Delivered::Sync(_))));
    }
}

#[test]
fn a_push_answered_with_something_else_times_out_and_the_other_message_is_delivered() {
    let mut pair = Pair::new(Server::Silent);
    let (message, _) = commit(&pair.client_key, 1, None);
    let id = pair.start(Operation::Push(message), at(0));
    pair.run(at(0));
    assert_eq!(
        pair.client.poll_timeout(),
        Some(Timestamp::from_secs(10)),
        "the push's deadline"
    );
    pair.reply(SyncMessage::HeadsUpdate(HeadsUpdate {
        id: tree(),
        heads: RemoteHeads::new(1, [CommitId::new([0xee; 32])]),
    }));
    pair.run(at(1));
    assert_eq!(pair.delivered.len(), 1, "the unrelated update");
    let _ = pair.client.handle_timeout(at(9));
    assert!(pair.client.poll_completed().is_none(), "not yet");
    let _ = pair.client.handle_timeout(at(10));
    let done = pair.client.poll_completed().unwrap();
    assert_eq!(done.id, id);
    assert!(matches!(done.result, Err(OperationError::TimedOut { .. })));
    assert_eq!(pair.client.poll_timeout(), None);
}

#[test]
fn a_probe_reports_access_and_silence() {
    let mut pair = Pair::new(Server::Answers);
    let readable = pair.start(Operation::Probe(tree()), at(0));
    let missing = pair.start(Operation::Probe(SedimentreeId::new([5; 32])), at(0));
    let refused = pair.start(Operation::Probe(SedimentreeId::new([0xaa; 32])), at(0));
    pair.run(at(0));
    let access = |session: &mut Session, id| match session.completed(id).unwrap().result {
        Ok(Outcome::Probed(access)) => access,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        access(&mut pair.client, readable),
        TreeAccess::Readable { heads: 0 }
    );
    assert_eq!(access(&mut pair.client, missing), TreeAccess::NotFound);
    assert_eq!(access(&mut pair.client, refused), TreeAccess::Unauthorized);

    let mut silent = Pair::new(Server::Silent);
    let id = silent.start(Operation::Probe(tree()), at(0));
    silent.run(at(0));
    let _ = silent.client.handle_timeout(at(10));
    assert_eq!(access(&mut silent.client, id), TreeAccess::Silent);
}

#[test]
fn a_registration_runs_keyhive_to_its_confirmation_signing_as_it_goes() {
    let mut pair = Pair::new(Server::Answers);
    let doc = DocumentKey::from_seed([3; 32]);
    let delegation = doc.root_delegation(Grantee::Public, Access::Edit).unwrap();
    let id = pair
        .client
        .start(
            Operation::Register(delegation.clone()),
            Timestamp::from_secs(10),
        )
        .unwrap();
    // The first message waits for the signer; meanwhile nothing is read.
    assert!(pair.client.needs_signer());
    assert!(!pair.client.wants_message());
    assert!(pair.client.poll_transmit().is_none());
    assert_eq!(
        pair.client.sign_pending_with(&pair.server_key),
        Err(WrongSigner {
            signer: pair.server_key.peer_id(),
            local: pair.client_key.peer_id()
        })
    );
    assert!(pair.client.needs_signer(), "nothing was signed");
    pair.client_sends();
    pair.run(at(1));
    let done = pair.client.completed(id).unwrap();
    assert!(
        matches!(
            done.result,
            Ok(Outcome::Registered(
                bijou_proto::keyhive::Outcome::Registered
            ))
        ),
        "{done:?}"
    );
    assert!(pair.delivered.is_empty(), "every keyhive answer was taken");
    assert_eq!(pair.played.known_events, 1);

    // Again: the server knows the event already.
    let again = pair.start(Operation::Register(delegation), at(2));
    pair.run(at(2));
    let done = pair.client.completed(again).unwrap();
    assert!(matches!(
        done.result,
        Ok(Outcome::Registered(
            bijou_proto::keyhive::Outcome::AlreadyKnown
        ))
    ));
}

#[test]
fn a_registration_refuses_an_answer_out_of_turn_and_times_out_on_silence() {
    let mut pair = Pair::new(Server::Silent);
    let doc = DocumentKey::from_seed([3; 32]);
    let delegation = doc.root_delegation(Grantee::Public, Access::Edit).unwrap();
    let id = pair.start(Operation::Register(delegation.clone()), at(0));
    pair.run(at(0));
    // The server skips MissingContactCard and confirms.
    let me = KeyhivePeer::new(pair.server_key.peer_id());
    let them = KeyhivePeer::new(pair.client_key.peer_id());
    let confirmation = keyhive(
        &pair.server_key,
        KeyhiveMessage::SyncConfirmation {
            sender: me,
            target: them,
            confirmer_total: 1,
        },
    );
    pair.reply(confirmation);
    pair.run(at(1));
    let done = pair.client.completed(id).unwrap();
    assert!(
        matches!(
            done.result,
            Err(OperationError::Keyhive(KeyhiveError::UnexpectedMessage {
                found: "SyncConfirmation",
                expected: "MissingContactCard"
            }))
        ),
        "{done:?}"
    );

    let id = pair.start(Operation::Register(delegation), at(2));
    pair.run(at(2));
    let _ = pair.client.handle_timeout(at(12));
    let done = pair.client.completed(id).unwrap();
    assert!(matches!(
        done.result,
        Err(OperationError::TimedOut {
            waiting_for: "MissingContactCard"
        })
    ));
}

#[test]
fn a_subscribe_ends_with_the_topics_refused_or_at_its_deadline() {
    let mut pair = Pair::new(Server::Answers);
    let topics = Topics::new((1..=3u8).map(|i| Topic::new([i; 32]))).unwrap();
    let id = pair.start(Operation::Subscribe(topics.clone()), at(0));
    assert!(
        pair.client
            .ephemeral()
            .unwrap()
            .is_subscribed(&Topic::new([1; 32])),
        "recorded at once"
    );
    pair.run(at(0));
    let done = pair.client.completed(id).unwrap();
    let Ok(Outcome::Subscribed {
        refused: Some(refused),
    }) = done.result
    else {
        panic!("{done:?}")
    };
    assert_eq!(refused.len(), 1, "the server takes 2 topics");
    assert!(pair.delivered.is_empty());

    let mut quiet = Pair::new(Server::Answers);
    let one = Topics::one(Topic::new([1; 32]));
    let id = quiet.start(Operation::Subscribe(one), at(0));
    quiet.run(at(0));
    assert!(quiet.client.completed(id).is_none());
    let _ = quiet.client.handle_timeout(at(10));
    assert!(matches!(
        quiet.client.completed(id).unwrap().result,
        Ok(Outcome::Subscribed { refused: None })
    ));
}

#[test]
fn what_cannot_start_is_refused_before_anything_is_sent() {
    let mut pair = Pair::new(Server::Answers);
    let not_a_commit = SyncMessage::HeadsUpdate(HeadsUpdate {
        id: tree(),
        heads: RemoteHeads::default(),
    });
    assert_eq!(
        pair.client
            .start(Operation::Push(not_a_commit), Timestamp::from_secs(1))
            .unwrap_err(),
        StartError::NotACommit {
            kind: "HeadsUpdate"
        }
    );
    assert!(pair.client.poll_transmit().is_none());
    assert_eq!(pair.client.operations_in_flight(), 0);
}

#[test]
fn ids_count_up_and_each_operation_ends_exactly_once() {
    let mut pair = Pair::new(Server::Answers);
    let mut ids = Vec::new();
    for n in 1..=20u8 {
        let op = match n % 4 {
            0 => Operation::Push(commit(&pair.client_key, n, None).0),
            1 => Operation::Fetch(tree()),
            2 => Operation::Probe(SedimentreeId::new([n; 32])),
            _ => Operation::Subscribe(Topics::one(Topic::new([n; 32]))),
        };
        ids.push(pair.start(op, at(0)));
    }
    assert_eq!(
        ids.iter().map(|id| id.get()).collect::<Vec<_>>(),
        (1..=20).collect::<Vec<_>>()
    );
    pair.run(at(0));
    let _ = pair.client.handle_timeout(at(10));
    let mut ended: Vec<u64> = all_completed(&mut pair.client)
        .iter()
        .map(|d| d.id.get())
        .collect();
    ended.sort_unstable();
    assert_eq!(ended, (1..=20).collect::<Vec<_>>());
    assert_eq!(pair.client.operations_in_flight(), 0);
    assert!(!pair.client.has_completed());
}

/// The whole protocol between two sessions, no runtime: keyhive
/// registration, a subscription and ephemeral messages, five pushes and a
/// fetch. What each side ends up with, in a form that does not depend on
/// random draws (nonces).
fn full_protocol(restore: bool) -> (Vec<String>, u32) {
    let mut pair = Pair::new(Server::Answers);
    pair.restore = restore;
    let doc = DocumentKey::from_seed([3; 32]);
    let delegation = doc.root_delegation(Grantee::Public, Access::Edit).unwrap();
    pair.start(Operation::Register(delegation), at(0));
    pair.run(at(0));
    let topic = Topic::new([4; 32]);
    pair.start(Operation::Subscribe(Topics::one(topic)), at(1));
    pair.run(at(1));
    for i in 0..3u8 {
        let key = pair.server_key.clone();
        let sealed = pair
            .server
            .sign_ephemeral(&key, topic, vec![i; 8], at(2))
            .unwrap();
        pair.reply(EphemeralMessage::from(sealed));
    }
    pair.run(at(2));
    let mut parent = None;
    for n in 1..=5 {
        let (message, head) = commit(&pair.client_key, n, parent);
        pair.start(Operation::Push(message), at(3));
        parent = Some(head);
    }
    pair.run(at(3));
    pair.start(Operation::Fetch(tree()), at(4));
    pair.run(at(4));
    // The subscription, refused by no one, ends at its deadline.
    let _ = pair.client.handle_timeout(at(11));
    pair.completions.extend(all_completed(&mut pair.client));

    let mut seen = Vec::new();
    for done in &pair.completions {
        seen.push(match &done.result {
            Ok(Outcome::Fetched(verified)) => {
                let mut heads: Vec<_> = verified
                    .items
                    .iter()
                    .map(|item| match item {
                        VerifiedItem::Commit(c, _) => c.payload().head(),
                        VerifiedItem::Fragment(f, _) => f.payload().head(),
                    })
                    .collect();
                heads.sort_unstable();
                format!("{} fetched {heads:?}", done.id)
            }
            other => format!("{} {other:?}", done.id),
        });
    }
    for received in &pair.delivered {
        seen.push(match &received.result {
            Ok(Delivered::Ephemeral(verified)) => {
                format!("ephemeral {:?}", verified.payload().payload())
            }
            other => format!("delivered {other:?}"),
        });
    }
    seen.push(format!(
        "server stored {} commits",
        pair.played.stored.len()
    ));
    seen.push(format!(
        "server knows {} keyhive events",
        pair.played.known_events
    ));
    (seen, pair.restores)
}

#[test]
fn the_whole_protocol_survives_a_snapshot_and_restore_at_every_step() {
    let (plain, _) = full_protocol(false);
    let (restored, restores) = full_protocol(true);
    eprintln!("{restores} snapshots and restores of both sessions: {plain:#?}");
    assert!(restores >= 30, "restored {restores} times");
    assert_eq!(plain, restored);
    // What the run holds: every operation ended once, in order.
    let expected_ends = [
        "#1 Ok(Registered",
        "#3 Ok(Pushed",
        "#8 fetched",
        "#2 Ok(Subscribed",
    ];
    for end in expected_ends {
        let end = end.replace('#', "operation #");
        assert!(
            plain.iter().any(|line| line.starts_with(&end)),
            "{end}: {plain:#?}"
        );
    }
    assert_eq!(
        plain.iter().filter(|l| l.starts_with("ephemeral")).count(),
        3,
        "{plain:#?}"
    );
    assert!(plain.iter().any(|l| l == "server stored 5 commits"));
    assert!(
        plain
            .iter()
            .any(|l| l.contains("fetched [") && l.matches("CommitId").count() == 5),
        "{plain:#?}"
    );
}

#[test]
fn a_heads_update_naming_many_heads_finds_the_pushes_it_names() {
    let mut pair = Pair::new(Server::Silent);
    let mut heads = Vec::new();
    let mut ids = Vec::new();
    for n in 1..=3 {
        let (message, head) = commit(&pair.client_key, n, None);
        ids.push(pair.start(Operation::Push(message), at(0)));
        heads.push(head);
    }
    pair.run(at(0));
    // 100,000 heads nobody pushed, the second push's among them.
    let mut named: Vec<CommitId> = (0..100_000u32)
        .map(|i| {
            let mut id = [0xf0; 32];
            id[..4].copy_from_slice(&i.to_be_bytes());
            CommitId::new(id)
        })
        .collect();
    named.insert(54_321, heads[1]);
    pair.reply(SyncMessage::HeadsUpdate(HeadsUpdate {
        id: tree(),
        heads: RemoteHeads::new(1, named),
    }));
    pair.run(at(1));
    let ended: Vec<OperationId> = all_completed(&mut pair.client)
        .iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(ended, ids[..2].to_vec());
    assert!(pair.client.is_in_flight(ids[2]));
    assert!(pair.delivered.is_empty(), "the update went to the pushes");
}

/// The shared kit's pair, its server played: every message the server
/// session delivers is answered as a Subduction server would.
fn serve_kit(pair: &mut kit::Pair, played: &mut Played) {
    for _ in 0..1_000 {
        pair.turn();
        let received = pair.server.take_received();
        if received.is_empty() && !pair.turn() {
            return;
        }
        for received in received {
            if let Some(answer) = played.answer(received) {
                pair.server.session.send(answer).unwrap();
            }
        }
    }
    panic!("the pair never settles");
}

/// One ended operation of the client's, the only one.
fn ended(pair: &mut kit::Pair) -> Completed {
    let mut done = pair.client.take_completed();
    assert_eq!(done.len(), 1, "{done:?}");
    done.remove(0)
}

#[test]
fn a_signer_that_answers_polls_later_runs_the_whole_protocol() {
    // Both keys sign through the session's sign requests, answered three
    // and five turns after each is made: handshake, registration,
    // push, fetch and publish all complete through `poll` alone.
    let mut pair = kit::Pair::new(SessionConfig::new([1; 32]), server_config());
    pair.client.signer = kit::Signer::After(3);
    pair.server.signer = kit::Signer::After(5);
    let mut played = Played::new(Server::Answers);
    serve_kit(&mut pair, &mut played);
    assert!(pair.client.established() && pair.server.established());
    let deadline = |pair: &kit::Pair| pair.now.monotonic.saturating_add(WAIT);

    // Keyhive registration: its messages are signed one request at a time.
    let doc = DocumentKey::from_seed([3; 32]);
    let delegation = doc.root_delegation(Grantee::Public, Access::Edit).unwrap();
    let before = pair.client.signed;
    pair.client
        .session
        .start(Operation::Register(delegation), deadline(&pair))
        .unwrap();
    serve_kit(&mut pair, &mut played);
    let done = ended(&mut pair);
    assert!(
        matches!(
            done.result,
            Ok(Outcome::Registered(
                bijou_proto::keyhive::Outcome::Registered
            ))
        ),
        "{done:?}"
    );
    assert!(pair.client.signed > before + 1, "several signatures asked");
    assert_eq!(played.known_events, 1);

    // Push, then fetch it back.
    let (message, head) = commit(&pair.client.key, 1, None);
    pair.client
        .session
        .start(Operation::Push(message), deadline(&pair))
        .unwrap();
    serve_kit(&mut pair, &mut played);
    assert!(matches!(ended(&mut pair).result, Ok(Outcome::Pushed { head: h, .. }) if h == head));
    pair.client
        .session
        .start(Operation::Fetch(tree()), deadline(&pair))
        .unwrap();
    serve_kit(&mut pair, &mut played);
    match ended(&mut pair).result {
        Ok(Outcome::Fetched(verified)) => assert_eq!(verified.items.len(), 1),
        other => panic!("{other:?}"),
    }

    // Publish: the server subscribes, the client's publish waits for its
    // signature, then arrives verified.
    let topic = Topic::new([5; 32]);
    pair.server
        .session
        .send(EphemeralMessage::Subscribe(Topics::new(vec![topic]).unwrap()).into())
        .unwrap();
    serve_kit(&mut pair, &mut played);
    pair.client
        .session
        .publish(topic, &b"cursor at 42"[..], pair.now)
        .unwrap();
    pair.turn();
    assert_eq!(pair.client.open_requests().len(), 1, "the publish waits");
    assert!(pair.server.take_received().is_empty());
    for _ in 0..10 {
        pair.turn();
    }
    let received = pair.server.take_received();
    assert_eq!(received.len(), 1, "{received:?}");
    let payload = received
        .into_iter()
        .next()
        .and_then(|r| r.result.ok())
        .and_then(Delivered::into_ephemeral)
        .expect("a verified ephemeral message");
    assert_eq!(payload.payload().payload().as_ref(), b"cursor at 42");
    assert!(pair.client.open_requests().is_empty());
    assert!(pair.server.open_requests().is_empty());
}
