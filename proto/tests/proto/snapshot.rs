//! `Session::snapshot` / `Session::restore`: a session resumed from its
//! bytes, in another "process" (another monotonic clock origin, a fresh
//! seed), keeps its peer, subscriptions, operations in flight, budgets and
//! replay window: nothing delivered twice, every replay refused as before.
//! Every corrupt, truncated, extended or foreign snapshot is a typed
//! error, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use bijou_codec::Wire;
use bijou_proto::message::{
    CommitId, EphemeralMessage, HeadsUpdate, Message, RemoteHeads, SedimentreeId, SyncMessage,
    Topic, Topics,
};
use bijou_proto::session::snapshot::{
    RestoreError, SnapshotError, OLDEST_SNAPSHOT_VERSION, SNAPSHOT_VERSION,
};
use bijou_proto::session::{
    Delivered, Operation, OperationError, Outcome, Received, Rejected, Session, Work,
};
use bijou_proto::time::{Now, Timestamp};
use bijou_proto::verify_budget::VerifyBudget;
use bijou_signing::{ed25519_dalek::SigningKey, Blob};
use bijou_test_support::pair as kit;
use bytes::Bytes;
use proptest::prelude::*;

const T0: u64 = 1_800_000_000;

fn at(secs: u64) -> Now {
    Now::new(T0 + secs, Timestamp::from_secs(secs))
}

/// The same instant seen by a process whose monotonic clock started
/// `offset` seconds earlier (a restored host: another origin).
fn elsewhere(secs: u64, offset: u64) -> Now {
    Now::new(T0 + secs, Timestamp::from_secs(secs + offset))
}

fn keys() -> (SigningKey, SigningKey) {
    (
        SigningKey::from_bytes(&[1; 32]),
        SigningKey::from_bytes(&[2; 32]),
    )
}

/// Alice's session and Bob's, authenticated (the shared kit's pair).
fn pair() -> (Session, Session) {
    kit::Pair::connected().into_sessions()
}

fn receive(session: &mut Session, bytes: Bytes, now: Now) -> Option<Received> {
    session.handle_message(bytes, now).unwrap();
    while session.poll_work(now) != Work::Idle {}
    session.poll_event()
}

fn topics(range: std::ops::Range<u8>) -> Topics {
    Topics::new(range.map(|i| Topic::new([i; 32]))).unwrap()
}

#[test]
fn an_idle_session_fits_256_bytes_and_restores_to_the_same_bytes() {
    let (alice, _) = pair();
    let bytes = alice.snapshot(at(5)).unwrap();
    eprintln!("idle authenticated session: {} bytes", bytes.len());
    assert!(bytes.len() <= 256, "{}", bytes.len());
    let restored = Session::restore(&bytes, elsewhere(5, 1_000), [9; 32]).unwrap();
    assert_eq!(restored.local_peer(), alice.local_peer());
    assert_eq!(restored.remote_peer(), alice.remote_peer());
    assert_eq!(restored.authenticated(), alice.authenticated());
    assert_eq!(
        restored.snapshot(elsewhere(5, 1_000)).unwrap(),
        bytes,
        "canonical: the same state, the same bytes"
    );
    // No key in it: neither party's secret bytes appear.
    let (a, b) = keys();
    for secret in [a.to_bytes(), b.to_bytes()] {
        assert!(!bytes.windows(32).any(|w| w == secret));
    }
}

#[test]
fn thirty_two_subscriptions_fit_a_websocket_attachment() {
    let (mut alice, mut bob) = pair();
    let ours = topics(0..32);
    alice
        .on_send(&Message::Ephemeral(EphemeralMessage::Subscribe(
            ours.clone(),
        )))
        .unwrap();
    let bytes = alice.snapshot(at(2)).unwrap();
    eprintln!(
        "32 subscriptions: {} bytes (Cloudflare's WebSocket attachment: 2,048)",
        bytes.len()
    );
    assert!(bytes.len() <= 2_048, "{}", bytes.len());
    // And 32 of the peer's besides: 64 topics of 32 bytes are 2,048 bytes
    // on their own.
    let theirs = bob
        .encode(&Message::Ephemeral(EphemeralMessage::Subscribe(topics(
            100..132,
        ))))
        .unwrap();
    assert!(matches!(
        receive(&mut alice, theirs, at(1)).unwrap().result,
        Ok(Delivered::Subscribed(_))
    ));
    let bytes = alice.snapshot(at(2)).unwrap();
    eprintln!("32 subscriptions each way: {} bytes", bytes.len());
    let restored = Session::restore(&bytes, at(2), [9; 32]).unwrap();
    let ephemeral = restored.ephemeral().unwrap();
    for topic in ours.iter() {
        assert!(ephemeral.is_subscribed(topic));
    }
    for i in 100..132u8 {
        assert!(ephemeral.remote_is_subscribed(&Topic::new([i; 32])));
    }
}

#[test]
fn a_replay_after_a_restore_is_refused_as_before() {
    let (mut alice, mut bob) = pair();
    let (_, bob_key) = keys();
    let topic = Topic::new([5; 32]);
    alice
        .on_send(&Message::Ephemeral(EphemeralMessage::Subscribe(
            Topics::one(topic),
        )))
        .unwrap();
    let sealed = bob
        .sign_ephemeral(&bob_key, topic, &b"hello"[..], at(1))
        .unwrap();
    let bytes = bob
        .encode(&Message::Ephemeral(EphemeralMessage::from(sealed)))
        .unwrap();
    assert!(matches!(
        receive(&mut alice, bytes.clone(), at(1)).unwrap().result,
        Ok(Delivered::Ephemeral(_))
    ));
    let snapshot = alice.snapshot(at(2)).unwrap();
    let mut restored = Session::restore(&snapshot, elsewhere(2, 50), [9; 32]).unwrap();
    let replay = receive(&mut restored, bytes.clone(), elsewhere(3, 50)).unwrap();
    assert!(
        matches!(replay.result, Err(Rejected::Ephemeral(_))),
        "{:?}",
        replay.result
    );
    // A restore with a wall clock set back does not reopen the window.
    let mut restored =
        Session::restore(&snapshot, Now::new(T0 - 3_600, Timestamp::ZERO), [9; 32]).unwrap();
    let replay = receive(&mut restored, bytes, Now::new(T0 - 3_600, Timestamp::ZERO)).unwrap();
    assert!(matches!(replay.result, Err(Rejected::Ephemeral(_))));
}

#[test]
fn operations_in_flight_resume_with_their_ids_and_deadlines() {
    let (mut alice, mut bob) = pair();
    let (alice_key, _) = keys();
    let tree = SedimentreeId::new([9; 32]);
    let head = CommitId::new([3; 32]);
    let commit =
        SyncMessage::loose_commit(&alice_key, tree, head, [], Blob::new(vec![1; 8])).unwrap();
    let push = alice
        .start(Operation::Push(commit), Timestamp::from_secs(10))
        .unwrap();
    let fetch = alice
        .start(Operation::Fetch(tree), Timestamp::from_secs(20))
        .unwrap();
    // The two messages are still to send: they are in the snapshot too.
    let snapshot = alice.snapshot(at(4)).unwrap();
    // Another process, whose monotonic clock reads 100 s more than ours.
    let now = elsewhere(4, 100);
    let mut restored = Session::restore(&snapshot, now, [9; 32]).unwrap();
    assert!(restored.is_in_flight(push) && restored.is_in_flight(fetch));
    let sent: Vec<Message> = std::iter::from_fn(|| restored.poll_transmit()).collect();
    assert_eq!(sent.len(), 2, "the queued commit and request");
    // The acknowledgement ends the push, once.
    let ack = bob
        .encode(
            &SyncMessage::HeadsUpdate(HeadsUpdate {
                id: tree,
                heads: RemoteHeads::new(1, [head]),
            })
            .into(),
        )
        .unwrap();
    assert!(receive(&mut restored, ack, now).is_none());
    let done = restored.poll_completed().unwrap();
    assert_eq!(done.id, push);
    assert!(matches!(done.result, Ok(Outcome::Pushed { .. })));
    // The fetch keeps its 16 s left: not over at 19 s, over at 20 s (our
    // clock), whatever the new process's monotonic origin.
    let _ = restored.handle_timeout(elsewhere(19, 100));
    assert!(restored.poll_completed().is_none());
    let _ = restored.handle_timeout(elsewhere(20, 100));
    let done = restored.poll_completed().unwrap();
    assert_eq!(done.id, fetch);
    assert!(matches!(done.result, Err(OperationError::TimedOut { .. })));
    // Ids go on from where they were.
    let next = restored
        .start(Operation::Fetch(tree), Timestamp::from_secs(30))
        .unwrap();
    assert_eq!(next.get(), 3);
}

/// Operation ids in a snapshot must ascend (each compared with the one
/// before it): a repeated id is refused, whatever the checksum says.
#[test]
fn operation_ids_that_do_not_ascend_are_refused() {
    let (mut alice, _) = pair();
    let tree = SedimentreeId::new([9; 32]);
    for _ in 0..2 {
        alice
            .start(Operation::Fetch(tree), Timestamp::from_secs(20))
            .unwrap();
    }
    let snapshot = alice.snapshot(at(4)).unwrap();
    let mut body = snapshot[..snapshot.len() - 16].to_vec();
    // The operations: last id 2, count 2, then the first id, 1.
    let starts: Vec<usize> = body
        .windows(3)
        .enumerate()
        .filter(|(_, w)| *w == [2, 2, 1])
        .map(|(at, _)| at)
        .collect();
    assert_eq!(starts.len(), 1, "the operations section is found");
    assert!(Session::restore(&resealed(body.clone()), at(4), [9; 32]).is_ok());
    body[starts[0] + 2] = 2; // ids 2, 2
    assert!(matches!(
        Session::restore(&resealed(body), at(4), [9; 32]),
        Err(RestoreError::Invalid {
            field: "operation id",
            ..
        })
    ));
}

#[test]
fn a_spent_budget_stays_spent() {
    let (mut alice, _) = pair();
    alice.set_verify_budget(VerifyBudget::new(10, 10));
    let (bob_key, _) = (keys().1, ());
    let tree = SedimentreeId::new([9; 32]);
    // Ten single-item commits spend the burst.
    for i in 0..10u8 {
        let msg = SyncMessage::loose_commit(
            &bob_key,
            tree,
            CommitId::new([i; 32]),
            [],
            Blob::new(vec![i]),
        )
        .unwrap();
        assert!(receive(&mut alice, msg.encode().unwrap(), at(1)).is_some());
    }
    let snapshot = alice.snapshot(at(1)).unwrap();
    let mut restored = Session::restore(&snapshot, elsewhere(1, 7), [9; 32]).unwrap();
    let msg = SyncMessage::loose_commit(
        &bob_key,
        tree,
        CommitId::new([99; 32]),
        [],
        Blob::new(vec![0]),
    )
    .unwrap();
    restored
        .handle_message(msg.encode().unwrap(), elsewhere(1, 7))
        .unwrap();
    assert!(
        matches!(restored.poll_work(elsewhere(1, 7)), Work::Wait(_)),
        "the budget is as spent as it was"
    );
}

#[test]
fn a_snapshot_waits_for_the_session_to_be_between_messages() {
    let (mut alice, mut bob) = pair();
    let (_, bob_key) = keys();
    let msg = SyncMessage::loose_commit(
        &bob_key,
        SedimentreeId::new([9; 32]),
        CommitId::new([1; 32]),
        [],
        Blob::new(vec![1]),
    )
    .unwrap();
    alice
        .handle_message(bob.encode(&msg.into()).unwrap(), at(1))
        .unwrap();
    assert!(matches!(
        alice.snapshot(at(1)),
        Err(SnapshotError::Busy { what }) if what.contains("being verified")
    ));
    while alice.poll_work(at(1)) != Work::Idle {}
    assert!(alice.snapshot(at(1)).is_err(), "the event waits");
    assert!(alice.poll_event().is_some());
    assert!(alice.snapshot(at(1)).is_ok());
    let _ = alice
        .start(
            Operation::Fetch(SedimentreeId::new([9; 32])),
            Timestamp::from_secs(2),
        )
        .unwrap();
    let _ = alice.handle_timeout(at(3));
    assert!(matches!(
        alice.snapshot(at(3)),
        Err(SnapshotError::Busy { what }) if what.contains("poll_completed")
    ));
    assert!(alice.poll_completed().is_some());
    let doc = bijou_proto::keyhive::DocumentKey::from_seed([3; 32]);
    let delegation = doc
        .root_delegation(
            bijou_proto::keyhive::Grantee::Public,
            bijou_proto::keyhive::Access::Edit,
        )
        .unwrap();
    let _ = alice
        .start(Operation::Register(delegation), Timestamp::from_secs(10))
        .unwrap();
    // A registration is kept (its exchange resumes where it was; see
    // tests/operations.rs).
    let bytes = alice.snapshot(at(3)).unwrap();
    assert!(Session::restore(&bytes, at(3), [9; 32])
        .unwrap()
        .needs_signer());
}

/// A snapshot with subscriptions, a window entry, operations and a
/// queued message: every part of the format present.
fn full_snapshot() -> Bytes {
    let (mut alice, mut bob) = pair();
    let (alice_key, bob_key) = keys();
    let topic = Topic::new([5; 32]);
    alice
        .start(
            Operation::Subscribe(Topics::one(topic)),
            Timestamp::from_secs(30),
        )
        .unwrap();
    assert!(alice.poll_transmit().is_some(), "the Subscribe, sent");
    let theirs = bob
        .encode(&Message::Ephemeral(EphemeralMessage::Subscribe(topics(
            1..5,
        ))))
        .unwrap();
    let _ = receive(&mut alice, theirs, at(1));
    let sealed = bob
        .sign_ephemeral(&bob_key, topic, &b"hi"[..], at(1))
        .unwrap();
    let bytes = bob
        .encode(&Message::Ephemeral(EphemeralMessage::from(sealed)))
        .unwrap();
    let _ = receive(&mut alice, bytes, at(1));
    let tree = SedimentreeId::new([9; 32]);
    let commit = SyncMessage::loose_commit(
        &alice_key,
        tree,
        CommitId::new([3; 32]),
        [],
        Blob::new(vec![1]),
    )
    .unwrap();
    alice
        .start(Operation::Push(commit), Timestamp::from_secs(10))
        .unwrap();
    alice
        .start(Operation::Probe(tree), Timestamp::from_secs(10))
        .unwrap();
    alice.snapshot(at(2)).unwrap()
}

#[test]
fn every_truncation_bit_flip_and_extension_is_a_typed_error() {
    let bytes = full_snapshot();
    assert!(Session::restore(&bytes, at(2), [9; 32]).is_ok());
    for len in 0..bytes.len() {
        assert!(
            Session::restore(&bytes[..len], at(2), [9; 32]).is_err(),
            "cut at {len}"
        );
    }
    for i in 0..bytes.len() * 8 {
        let mut flipped = bytes.to_vec();
        flipped[i / 8] ^= 1 << (i % 8);
        let err = Session::restore(&flipped, at(2), [9; 32]).unwrap_err();
        let expected = match i / 8 {
            0..=3 => matches!(err, RestoreError::NotASnapshot { .. }),
            4 => matches!(
                err,
                RestoreError::NewerVersion { .. } | RestoreError::OlderVersion { .. }
            ),
            _ => matches!(err, RestoreError::Checksum { .. }),
        };
        assert!(expected, "bit {i}: {err}");
    }
    let mut extended = bytes.to_vec();
    extended.push(0);
    assert!(matches!(
        Session::restore(&extended, at(2), [9; 32]),
        Err(RestoreError::Checksum { .. })
    ));
    // A newer release's snapshot: refused, saying what to do, whatever
    // its body.
    let mut future = bytes.to_vec();
    future[4] = SNAPSHOT_VERSION + 1;
    let err = Session::restore(&future, at(2), [9; 32]).unwrap_err();
    assert!(
        matches!(err, RestoreError::NewerVersion { found, oldest: 1, newest }
            if found == SNAPSHOT_VERSION + 1 && newest == SNAPSHOT_VERSION),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("newer release") && message.contains("connect again"),
        "{message}"
    );
    let mut ancient = bytes.to_vec();
    ancient[4] = 0;
    assert!(matches!(
        Session::restore(&ancient, at(2), [9; 32]),
        Err(RestoreError::OlderVersion { found: 0, .. })
    ));
    assert!(matches!(
        Session::restore(b"SUM\0 a message, not a snapshot", at(2), [9; 32]),
        Err(RestoreError::NotASnapshot { .. })
    ));
}

/// `bytes` with its checksum made right again: what reaches the parser
/// when only a writer's bug could have made it.
fn resealed(mut body: Vec<u8>) -> Vec<u8> {
    let checksum = blake3::hash(&body);
    body.extend_from_slice(&checksum.as_bytes()[..16]);
    body
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Mutated bodies under a valid checksum: the parser itself answers
    /// every one with a typed error or a session, never a panic, and a
    /// session it restores snapshots again.
    #[test]
    fn mutated_snapshots_with_a_valid_checksum_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        cut_it in any::<bool>(),
    ) {
        let bytes = full_snapshot();
        let mut body = bytes[..bytes.len() - 16].to_vec();
        for (at_index, value) in edits {
            let i = 5 + at_index.index(body.len() - 5);
            body[i] = value;
        }
        if cut_it {
            body.truncate(5 + cut.index(body.len() - 5));
        }
        if let Ok(session) = Session::restore(&resealed(body), at(2), [9; 32]) {
            prop_assert!(session.snapshot(at(2)).is_ok());
        }
    }

    /// Random bytes behind a valid header (of every version read) and
    /// checksum.
    #[test]
    fn random_bodies_never_panic(
        version in OLDEST_SNAPSHOT_VERSION..=SNAPSHOT_VERSION,
        body in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        let mut bytes = b"BJS\0".to_vec();
        bytes.push(version);
        bytes.extend(body);
        let _ = Session::restore(&resealed(bytes), at(2), [9; 32]);
    }

    /// The same mutations on the stored version 1 snapshots (read by the
    /// version 1 parser; between them, every part of the format): a typed
    /// error or a session, and a session it restores snapshots again.
    #[test]
    fn mutated_version_1_snapshots_never_panic(
        shape in prop::sample::select(vec!["idle", "ephemeral", "pending", "registration"]),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        cut_it in any::<bool>(),
    ) {
        let bytes = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!("tests/data/snapshot/v1/{shape}.bin")),
        )
        .unwrap();
        let mut body = bytes[..bytes.len() - 16].to_vec();
        for (at_index, value) in edits {
            let i = 5 + at_index.index(body.len() - 5);
            body[i] = value;
        }
        if cut_it {
            body.truncate(5 + cut.index(body.len() - 5));
        }
        if let Ok(session) = Session::restore(&resealed(body), at(4), [9; 32]) {
            prop_assert!(session.snapshot(at(4)).is_ok());
        }
    }
}

/// Prints the time a snapshot and its restore take (a figure, not a
/// bound) while checking every round trip gives the same bytes.
#[test]
fn snapshot_and_restore_round_trip_and_their_time() {
    let bytes = full_snapshot();
    let (alice, _) = pair();
    let runs = 2_000;
    let started = std::time::Instant::now();
    for _ in 0..runs {
        let restored = Session::restore(&bytes, at(2), [9; 32]).unwrap();
        assert_eq!(restored.snapshot(at(2)).unwrap(), bytes);
    }
    let full = started.elapsed() / runs;
    let started = std::time::Instant::now();
    for _ in 0..runs {
        let snapshot = alice.snapshot(at(2)).unwrap();
        let restored = Session::restore(&snapshot, at(2), [9; 32]).unwrap();
        assert_eq!(restored.remote_peer(), alice.remote_peer());
    }
    let idle = started.elapsed() / runs;
    eprintln!(
        "snapshot + restore: idle session {idle:?}, with subscriptions, a window entry, \
         three operations and a queued message ({} bytes) {full:?}",
        bytes.len()
    );
}

#[test]
fn a_budget_in_debt_is_kept_as_it_is() {
    // A step larger than the burst spends past zero: the debt is part of
    // the state, and a restore keeps it.
    let (mut alice, _) = pair();
    alice.set_verify_budget(VerifyBudget::new(10, 4));
    alice.set_verify_step(8);
    let (_, bob_key) = keys();
    let tree = SedimentreeId::new([9; 32]);
    let items = (0..8u8)
        .map(|i| {
            let Ok(SyncMessage::LooseCommit(m)) = SyncMessage::loose_commit(
                &bob_key,
                tree,
                CommitId::new([i; 32]),
                [],
                Blob::new(vec![i]),
            ) else {
                panic!("a commit")
            };
            m.item
        })
        .collect();
    let response = SyncMessage::BatchSyncResponse(bijou_proto::message::BatchSyncResponse {
        requestor: alice.local_peer(),
        nonce: 1,
        id: tree,
        result: bijou_proto::message::SyncResult::Ok(bijou_proto::message::SyncDiff::new(
            items,
            Vec::new(),
            [],
            [],
        )),
        responder_heads: RemoteHeads::default(),
    });
    let received = receive(&mut alice, response.encode().unwrap(), at(1)).unwrap();
    assert_eq!(received.result.unwrap().into_sync().unwrap().items.len(), 8);
    let bytes = alice.snapshot(at(1)).unwrap();
    let restored = Session::restore(&bytes, at(1), [9; 32]).expect("a debt restores");
    assert_eq!(restored.snapshot(at(1)).unwrap(), bytes, "the same debt");
}

#[test]
fn a_fetch_in_flight_costs_a_few_dozen_bytes() {
    // Mid-fetch of a large tree: the request sent, the response (8,192
    // commits, say) not arrived or not yet taken: the operation is what
    // the snapshot holds; the response itself never is (a snapshot waits
    // for the session to be between messages).
    let (mut alice, _) = pair();
    let idle = alice.snapshot(at(1)).unwrap().len();
    let fetch = alice
        .start(
            Operation::Fetch(SedimentreeId::new([9; 32])),
            Timestamp::from_secs(61),
        )
        .unwrap();
    assert!(alice.poll_transmit().is_some(), "the request, sent");
    let bytes = alice.snapshot(at(1)).unwrap();
    eprintln!("a fetch in flight: {} bytes ({} idle)", bytes.len(), idle);
    assert!(bytes.len() <= idle + 64);
    let restored = Session::restore(&bytes, at(1), [9; 32]).unwrap();
    assert!(restored.is_in_flight(fetch));
}

#[test]
fn a_peer_verified_one_by_one_stays_so_across_a_snapshot() {
    use bijou_proto::message::{
        BatchSyncResponse, Fragment, LooseCommit, SignedItem, SyncDiff, SyncMessage, SyncResult,
    };
    use bijou_signing::{PeerId, Signed};

    let (mut alice, mut bob) = pair();
    let signer = SigningKey::from_bytes(&[1; 32]);
    let tree = SedimentreeId::new([9; 32]);
    let blob = Blob::from_static(b"forged");
    let commit = LooseCommit::new(tree, CommitId::new([3; 32]), [], blob.meta());
    let mut forged = Signed::seal(&signer, &commit).unwrap().as_bytes().to_vec();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    let item = SignedItem::new(Signed::decode(Bytes::from(forged)).unwrap(), blob);
    let response = Message::Sync(SyncMessage::BatchSyncResponse(BatchSyncResponse {
        requestor: PeerId::from_bytes([5; 32]),
        nonce: 1,
        id: tree,
        result: SyncResult::Ok(SyncDiff::new(
            vec![item],
            Vec::<SignedItem<Fragment>>::new(),
            [],
            [],
        )),
        responder_heads: RemoteHeads::default(),
    }));
    assert!(!bob.verifies_one_by_one());
    let received = receive(&mut bob, alice.encode(&response).unwrap(), at(1)).unwrap();
    assert!(received.result.is_ok(), "delivered with its bad item named");
    assert!(bob.verifies_one_by_one());
    let bytes = bob.snapshot(at(2)).unwrap();
    let restored = Session::restore(&bytes, at(2), [9; 32]).unwrap();
    assert!(restored.verifies_one_by_one(), "flags bit 0 kept");
    let (_, fresh) = pair();
    let fresh = Session::restore(&fresh.snapshot(at(2)).unwrap(), at(2), [9; 32]).unwrap();
    assert!(!fresh.verifies_one_by_one());
}
