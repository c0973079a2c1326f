//! The session driven with no runtime: bytes and `Now` in, events out.

use std::time::Duration;

use bijou_codec::Wire;
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, PeerId, Signed};
use bytes::Bytes;

use super::{Busy, Delivered, Received, Rejected, SendRefused, Session, SessionConfig, Work};
use crate::ephemeral::EphemeralRejected;
use crate::handshake::{HandshakeConfig, Initiator, Responder};
use crate::message::{
    Audience, BatchSyncResponse, CommitId, EphemeralMessage, Fragment, HandshakeMessage,
    LooseCommit, Message, RemoteHeads, SedimentreeId, SignedItem, SyncDiff, SyncMessage,
    SyncResult, Topic, Topics, VerifyItemError,
};
use crate::time::{Now, Timestamp};
use crate::verify_budget::VerifyBudget;

const NOW: u64 = 1_700_000_000;

pub(super) fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

fn now_at(t0: Timestamp, secs: f64) -> Now {
    Now::new(NOW, t0.saturating_add(Duration::from_secs_f64(secs)))
}

/// What `session` sends until it waits, signing with `key`.
fn pump(session: &mut Session, key: &SigningKey, now: Now) -> Vec<Bytes> {
    let mut sent = Vec::new();
    loop {
        match session.poll(now) {
            super::Output::Transmit(bytes) => sent.push(bytes),
            super::Output::Sign(request) => session.sign_with(&request, key).expect("our key"),
            super::Output::Event(_) | super::Output::Continue => {}
            super::Output::Wait { .. } => return sent,
        }
    }
}

/// Two sessions after their own handshake, run through `poll` (the
/// shared test kit's `Pair` cannot reach a crate's own unit tests).
fn pair_with(a: SessionConfig, b: SessionConfig) -> (Session, Session) {
    let (alice, bob) = (key(1), key(2));
    let now = Now::from_secs(NOW);
    let audience = Audience::Known(bob.peer_id());
    let mut a = Session::client(alice.verifying_key(), audience, now, a);
    let responder = Responder::new(HandshakeConfig::default());
    let mut b = Session::server(bob.verifying_key(), responder, now, b);
    for _ in 0..3 {
        for bytes in pump(&mut a, &alice, now) {
            b.handle_message(bytes, now).expect("takes it");
        }
        for bytes in pump(&mut b, &bob, now) {
            a.handle_message(bytes, now).expect("takes it");
        }
    }
    assert!(a.is_established() && b.is_established());
    (a, b)
}

/// [`pair_with`] the default settings.
fn pair() -> (Session, Session) {
    pair_with(SessionConfig::new([1; 32]), SessionConfig::new([2; 32]))
}

pub(super) fn tree() -> SedimentreeId {
    SedimentreeId::new([9; 32])
}

pub(super) fn commit(i: u32, signer: &SigningKey) -> SignedItem<LooseCommit> {
    let blob = Blob::from(i.to_be_bytes().to_vec());
    let mut head = [0; 32];
    head[..4].copy_from_slice(&i.to_be_bytes());
    let commit = LooseCommit::new(tree(), CommitId::new(head), [], blob.meta());
    SignedItem::new(Signed::seal(signer, &commit).expect("seal"), blob)
}

pub(super) fn response(commits: Vec<SignedItem<LooseCommit>>) -> Message {
    Message::Sync(SyncMessage::BatchSyncResponse(BatchSyncResponse {
        requestor: PeerId::from_bytes([5; 32]),
        nonce: 1,
        id: tree(),
        result: SyncResult::Ok(SyncDiff::new(
            commits,
            Vec::<SignedItem<Fragment>>::new(),
            [],
            [],
        )),
        responder_heads: RemoteHeads::default(),
    }))
}

/// `item` with its signature's `S` changed in the lowest bit: it passes
/// every byte check and fails only the equation (the dearest forgery).
pub(super) fn forged<T: bijou_signing::Payload>(item: &SignedItem<T>) -> SignedItem<T> {
    let mut wire = item.signed().as_bytes().to_vec();
    let s = wire.len() - 32;
    wire[s] ^= 1;
    SignedItem::new(
        Signed::decode(Bytes::from(wire)).expect("decodes"),
        item.blob().clone(),
    )
}

/// Runs the session's work to the end at `now`, counting steps.
fn drain(session: &mut Session, now: Now) -> (Received, usize) {
    let mut steps = 0;
    loop {
        match session.poll_work(now) {
            Work::More => steps += 1,
            Work::Idle => break,
            Work::Wait(at) => panic!("unexpected wait until {at:?}"),
        }
    }
    (session.poll_event().expect("an event"), steps + 1)
}

#[test]
fn handshake_sync_and_ephemeral_with_no_runtime() {
    let (mut a, mut b) = pair();
    let t0 = Timestamp::from_secs(1_000);
    let now = now_at(t0, 0.0);

    // Sync: a commit from A, delivered verified at B with its exact bytes.
    let msg = SyncMessage::loose_commit(
        &key(1),
        tree(),
        CommitId::new([3; 32]),
        [],
        Blob::from_static(b"hello"),
    )
    .expect("seal");
    let bytes = a.encode(&msg.clone().into()).expect("encode");
    b.handle_message(bytes.clone(), now).expect("wants it");
    let (received, _) = drain(&mut b, now);
    assert_eq!(received.bytes, bytes);
    let verified = received.result.expect("ok").into_sync().expect("sync");
    assert_eq!(verified.message, msg);
    assert_eq!(verified.items.len(), 1);

    // Ephemeral: B subscribes (recorded by encoding it), A sees the
    // Subscribe, publishes, B delivers it.
    let topic = Topic::new([4; 32]);
    let subscribe = Message::Ephemeral(EphemeralMessage::Subscribe(Topics::one(topic)));
    let wire = b.encode(&subscribe).expect("encode");
    assert!(b
        .ephemeral()
        .expect("ephemeral state")
        .is_subscribed(&topic));
    a.handle_message(wire, now).expect("wants it");
    match a.poll_event().expect("answered at once").result {
        Ok(Delivered::Subscribed(outcome)) => assert_eq!(outcome.accepted, vec![topic]),
        other => panic!("{other:?}"),
    }
    assert!(a
        .ephemeral()
        .expect("ephemeral state")
        .remote_is_subscribed(&topic));
    let sealed = a
        .sign_ephemeral(&key(1), topic, &b"cursor"[..], now)
        .expect("publish");
    let wire = a
        .encode(&Message::Ephemeral(sealed.into()))
        .expect("encode");
    b.handle_message(wire.clone(), now).expect("wants it");
    let (received, _) = drain(&mut b, now);
    let delivered = received.result.expect("ok").into_ephemeral().expect("eph");
    assert_eq!(delivered.payload().payload().as_ref(), b"cursor");
    // The same bytes again: a duplicate, refused before verification.
    b.handle_message(wire, now).expect("wants it");
    assert!(matches!(
        b.poll_event().expect("answered at once").result,
        Err(Rejected::Ephemeral(EphemeralRejected::Duplicate { .. }))
    ));
}

#[test]
fn a_large_response_is_verified_in_bounded_steps_and_bad_items_are_named() {
    let (_, mut b) = pair();
    b.set_verify_step(16);
    let signer = key(1);
    let mut commits: Vec<_> = (0..100).map(|i| commit(i, &signer)).collect();
    // Item 37's signature is forged; item 80 is scoped to another tree.
    let mut forged = commits[37].signed().as_bytes().to_vec();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    commits[37] = SignedItem::new(
        Signed::decode(Bytes::from(forged)).expect("decodes"),
        commits[37].blob().clone(),
    );
    let other = LooseCommit::new(
        SedimentreeId::new([8; 32]),
        CommitId::new([0xEE; 32]),
        [],
        commits[80].blob().meta(),
    );
    commits[80] = SignedItem::new(
        Signed::seal(&signer, &other).expect("seal"),
        commits[80].blob().clone(),
    );
    let bytes = response(commits).encode().expect("encode");
    let now = now_at(Timestamp::from_secs(1_000), 0.0);
    b.handle_message(bytes, now).expect("wants it");
    assert!(!b.wants_message());
    assert!(matches!(
        b.handle_message(Bytes::from_static(b"x"), now),
        Err(Busy(_))
    ));
    let (received, steps) = drain(&mut b, now);
    // ceil(100 / 16) = 7 steps, each at most 16 items.
    assert_eq!(steps, 7);
    let verified = received.result.expect("ok").into_sync().expect("sync");
    assert_eq!(verified.items.len(), 98);
    let rejected: Vec<_> = verified
        .rejected
        .iter()
        .map(|r| (r.index, r.error))
        .collect();
    assert_eq!(rejected.len(), 2);
    assert_eq!(rejected[0].0, 37);
    assert!(matches!(rejected[0].1, VerifyItemError::Signature(_)));
    assert_eq!(rejected[1].0, 80);
    assert!(matches!(
        rejected[1].1,
        VerifyItemError::ScopeMismatch { .. }
    ));
    assert!(b.wants_message());
    // The forgery's batch failed: the peer is verified one by one now.
    assert!(b.verifies_one_by_one());
}

#[test]
fn the_budget_says_when_and_the_deadline_comes_out() {
    let (_, mut b) = pair();
    b.set_verify_budget(VerifyBudget::new(10, 10));
    b.set_verify_step(5);
    let signer = key(1);
    let bytes = response((0..30).map(|i| commit(i, &signer)).collect())
        .encode()
        .expect("encode");
    let t0 = Timestamp::from_secs(1_000);
    b.handle_message(bytes, now_at(t0, 0.0)).expect("wants it");
    // Two steps of 5 spend the burst of 10; the third waits half a second.
    assert_eq!(b.poll_work(now_at(t0, 0.0)), Work::More);
    assert_eq!(b.poll_work(now_at(t0, 0.0)), Work::More);
    let Work::Wait(at) = b.poll_work(now_at(t0, 0.0)) else {
        panic!("expected a wait")
    };
    assert_eq!(b.poll_timeout(), Some(at));
    let wait = at.saturating_duration_since(t0);
    assert!(
        wait >= Duration::from_millis(499) && wait <= Duration::from_millis(501),
        "{wait:?}"
    );
    // Too early: still waiting. At the deadline: one more step.
    assert!(matches!(b.handle_timeout(now_at(t0, 0.2)), Work::Wait(_)));
    assert_eq!(b.handle_timeout(Now::new(NOW, at)), Work::More);
    assert_eq!(b.poll_timeout(), None);
    assert!(b.poll_event().is_none());
}

#[test]
fn the_send_side_rules_hold_however_a_message_is_sent() {
    let (mut a, _) = pair();
    let topic = Topic::new([6; 32]);
    // A Subscribe sent as a plain message is recorded, as is one forwarded
    // as encoded bytes; an Unsubscribe likewise.
    a.on_send(&Message::Ephemeral(EphemeralMessage::Subscribe(
        Topics::one(topic),
    )))
    .expect("ok");
    assert!(a
        .ephemeral()
        .expect("ephemeral state")
        .is_subscribed(&topic));
    let unsubscribe = Message::Ephemeral(EphemeralMessage::Unsubscribe(Topics::one(topic)))
        .encode()
        .expect("encode");
    a.on_send_encoded(&unsubscribe).expect("ok");
    assert!(!a
        .ephemeral()
        .expect("ephemeral state")
        .is_subscribed(&topic));
    // Handshake messages are refused both ways.
    let challenge = Initiator::new(
        &key(3),
        Audience::Known(key(4).peer_id()),
        Now::from_secs(NOW),
        [1; 16],
    )
    .expect("challenge")
    .challenge()
    .clone();
    assert_eq!(
        a.on_send_encoded(&challenge),
        Err(SendRefused::HandshakeAfterHandshake {
            kind: "handshake message"
        })
    );
    let decoded = Message::decode(challenge).expect("decodes");
    assert!(matches!(
        decoded,
        Message::Handshake(HandshakeMessage::Challenge(_))
    ));
    assert_eq!(
        a.encode(&decoded),
        Err(SendRefused::HandshakeAfterHandshake { kind: "challenge" })
    );
}

#[test]
fn a_bad_loose_commit_rejects_the_whole_message() {
    let (_, mut b) = pair();
    let signer = key(1);
    let item = commit(1, &signer);
    let mut forged = item.signed().as_bytes().to_vec();
    let last = forged.len() - 1;
    forged[last] ^= 0x40;
    let msg = Message::Sync(SyncMessage::LooseCommit(crate::message::BlobMessage {
        id: tree(),
        sender_heads: RemoteHeads::default(),
        item: SignedItem::new(
            Signed::decode(Bytes::from(forged)).expect("decodes"),
            item.blob().clone(),
        ),
    }));
    let now = now_at(Timestamp::from_secs(1_000), 0.0);
    b.handle_message(msg.encode().expect("encode"), now)
        .expect("wants it");
    assert!(!b.verifies_one_by_one());
    let (received, _) = drain(&mut b, now);
    assert!(matches!(
        received.result,
        Err(Rejected::Verify(VerifyItemError::Signature(_)))
    ));
    // A single item is checked singly; its bad signature counts all the
    // same.
    assert!(b.verifies_one_by_one());
}

/// What a response's items verify to, one by one (the reference).
fn verdicts_one_by_one(message: &Message) -> Vec<Result<(), VerifyItemError>> {
    let Message::Sync(message) = message else {
        panic!("a sync message");
    };
    message
        .verify_each()
        .map(|r| r.map(|_| ()))
        .collect::<Vec<_>>()
}

/// What the session delivered for a response: each item's verdict, in
/// wire order.
fn verdicts_delivered(received: Received, count: usize) -> Vec<Result<(), VerifyItemError>> {
    let verified = received.result.expect("ok").into_sync().expect("sync");
    let mut verdicts = vec![Ok(()); count];
    for rejected in &verified.rejected {
        verdicts[rejected.index] = Err(rejected.error);
    }
    assert_eq!(verified.items.len() + verified.rejected.len(), count);
    verdicts
}

/// One forged signature switches the session to one-by-one verification
/// for the rest of the session; the verdicts stay exactly
/// `verify_strict`'s, in the message that switched it and in the next.
#[test]
fn a_peer_that_sent_a_bad_signature_is_verified_one_by_one_with_the_same_verdicts() {
    let (_, mut b) = pair();
    let signer = key(1);
    let now = now_at(Timestamp::from_secs(1_000), 0.0);
    assert!(!b.verifies_one_by_one());

    // 100 items, the 50th forged: the steps before it batch, its own
    // batch fails.
    let mut commits: Vec<_> = (0..100).map(|i| commit(i, &signer)).collect();
    commits[50] = forged(&commits[50]);
    let first = response(commits);
    b.handle_message(first.encode().expect("encode"), now)
        .expect("wants it");
    let (received, _) = drain(&mut b, now);
    let want = verdicts_one_by_one(&first);
    assert_eq!(want.iter().filter(|v| v.is_err()).count(), 1);
    assert_eq!(verdicts_delivered(received, 100), want);
    assert!(b.verifies_one_by_one());

    // The next response, one by one: good items accepted, two forgeries
    // and an item of another tree refused, each with its reason.
    let mut commits: Vec<_> = (100..170).map(|i| commit(i, &signer)).collect();
    commits[3] = forged(&commits[3]);
    commits[64] = forged(&commits[64]);
    let other = LooseCommit::new(
        SedimentreeId::new([8; 32]),
        CommitId::new([0xEE; 32]),
        [],
        commits[20].blob().meta(),
    );
    commits[20] = SignedItem::new(
        Signed::seal(&signer, &other).expect("seal"),
        commits[20].blob().clone(),
    );
    let second = response(commits);
    b.handle_message(second.encode().expect("encode"), now)
        .expect("wants it");
    let (received, _) = drain(&mut b, now);
    let want = verdicts_one_by_one(&second);
    assert!(matches!(want[3], Err(VerifyItemError::Signature(_))));
    assert!(matches!(
        want[20],
        Err(VerifyItemError::ScopeMismatch { .. })
    ));
    assert!(matches!(want[64], Err(VerifyItemError::Signature(_))));
    assert_eq!(want.iter().filter(|v| v.is_err()).count(), 3);
    assert_eq!(verdicts_delivered(received, 70), want);
    assert!(b.verifies_one_by_one());
}

/// An honest peer's items stay batched: good responses, a loose commit,
/// and items refused for their scope or blob (not their signature) never
/// switch the session to one-by-one verification.
#[test]
fn honest_traffic_stays_batched() {
    let (_, mut b) = pair();
    let signer = key(1);
    let now = now_at(Timestamp::from_secs(1_000), 0.0);
    for round in 0..3u32 {
        let commits = (0..100).map(|i| commit(round * 100 + i, &signer)).collect();
        b.handle_message(response(commits).encode().expect("encode"), now)
            .expect("wants it");
        let (received, _) = drain(&mut b, now);
        assert_eq!(verdicts_delivered(received, 100), vec![Ok(()); 100]);
        assert!(!b.verifies_one_by_one(), "round {round}");
    }
    let msg = SyncMessage::loose_commit(
        &signer,
        tree(),
        CommitId::new([3; 32]),
        [],
        Blob::from_static(b"hello"),
    )
    .expect("seal");
    b.handle_message(Message::Sync(msg).encode().expect("encode"), now)
        .expect("wants it");
    assert!(drain(&mut b, now).0.result.is_ok());
    assert!(!b.verifies_one_by_one());

    // A wrong blob and another tree's commit: refused, but their
    // signatures hold, so the batches hold too.
    let mut commits: Vec<_> = (0..40).map(|i| commit(500 + i, &signer)).collect();
    commits[7] = SignedItem::new(commits[7].signed().clone(), Blob::from(vec![0xAB; 4]));
    let other = LooseCommit::new(
        SedimentreeId::new([8; 32]),
        CommitId::new([0xEE; 32]),
        [],
        commits[33].blob().meta(),
    );
    commits[33] = SignedItem::new(
        Signed::seal(&signer, &other).expect("seal"),
        commits[33].blob().clone(),
    );
    let message = response(commits);
    b.handle_message(message.encode().expect("encode"), now)
        .expect("wants it");
    let (received, _) = drain(&mut b, now);
    let want = verdicts_one_by_one(&message);
    assert_eq!(want.iter().filter(|v| v.is_err()).count(), 2);
    assert_eq!(verdicts_delivered(received, 40), want);
    assert!(!b.verifies_one_by_one());
}

/// `verify_items` over any range agrees with `verify_item` one index at a
/// time, across the commit/fragment boundary and past the end, with a bad
/// item on each side of it.
#[test]
fn batch_verification_over_any_range_agrees_with_single_verification() {
    let signer = key(1);
    let mut commits: Vec<_> = (0..5).map(|i| commit(i, &signer)).collect();
    let mut forged = commits[3].signed().as_bytes().to_vec();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    commits[3] = SignedItem::new(
        Signed::decode(Bytes::from(forged)).expect("decodes"),
        commits[3].blob().clone(),
    );
    let mut fragments: Vec<_> = (0..3u8)
        .map(|i| {
            let blob = Blob::from(vec![i; 3]);
            let fragment = Fragment::new(tree(), CommitId::new([i; 32]), [], [], blob.meta());
            SignedItem::new(Signed::seal(&signer, &fragment).expect("seal"), blob)
        })
        .collect();
    // Fragment 1's blob does not match its signed digest.
    fragments[1] = SignedItem::new(fragments[1].signed().clone(), Blob::from(vec![9; 3]));
    let msg = SyncMessage::BatchSyncResponse(BatchSyncResponse {
        requestor: PeerId::from_bytes([5; 32]),
        nonce: 1,
        id: tree(),
        result: SyncResult::Ok(SyncDiff::new(commits, fragments, [], [])),
        responder_heads: RemoteHeads::default(),
    });
    let verdict = |r: &Result<crate::message::VerifiedItem, VerifyItemError>| {
        r.as_ref().map(|_| ()).map_err(|e| *e)
    };
    let single: Vec<_> = (0..8)
        .map(|i| verdict(&msg.verify_item(i).expect("an item")))
        .collect();
    assert!(single[3].is_err() && single[6].is_err());
    assert_eq!(single.iter().filter(|r| r.is_err()).count(), 2);
    for start in 0..=10 {
        for end in start..=10 {
            let batch: Vec<_> = msg.verify_items(start..end).iter().map(verdict).collect();
            let want = single.get(start.min(8)..end.min(8)).unwrap_or(&[]).to_vec();
            assert_eq!(batch, want, "range {start}..{end}");
        }
    }
}

/// A step also ends once its blobs reach 1 MiB: checking a blob hashes
/// it, so ten 512 KiB blobs take five steps, not one.
#[test]
fn a_step_ends_early_at_a_mebibyte_of_blobs() {
    let (_, mut b) = pair();
    let signer = key(1);
    let commits: Vec<_> = (0..10u32)
        .map(|i| {
            let blob = Blob::from(vec![i as u8; 512 * 1024]);
            let mut head = [0; 32];
            head[..4].copy_from_slice(&i.to_be_bytes());
            let commit = LooseCommit::new(tree(), CommitId::new(head), [], blob.meta());
            SignedItem::new(Signed::seal(&signer, &commit).expect("seal"), blob)
        })
        .collect();
    let now = now_at(Timestamp::from_secs(1_000), 0.0);
    b.handle_message(response(commits).encode().expect("encode"), now)
        .expect("wants it");
    let (received, steps) = drain(&mut b, now);
    assert_eq!(steps, 5);
    let verified = received.result.expect("ok").into_sync().expect("sync");
    assert_eq!(verified.items.len(), 10);
}

/// The part of a peer's Subscribe over the topic cap is answered by the
/// session itself, in `poll_transmit`, and nothing more is read until it
/// is taken: the queue never holds more than that one answer.
#[test]
fn topics_over_the_cap_are_refused_by_the_session_itself() {
    let mut config = SessionConfig::new([1; 32]);
    config.ephemeral.max_remote_topics = 2;
    let (mut a, mut b) = pair_with(config, SessionConfig::new([2; 32]));
    let now = Now::from_secs(NOW);
    let topics: Vec<Topic> = (1..=5u8).map(|i| Topic::new([i; 32])).collect();
    let subscribe = Message::Ephemeral(EphemeralMessage::Subscribe(
        Topics::new(topics.clone()).expect("topics"),
    ));
    assert!(!a.has_transmit());
    a.handle_message(b.encode(&subscribe).expect("encode"), now)
        .expect("wants it");
    match a.poll_event().expect("answered at once").result {
        Ok(Delivered::Subscribed(outcome)) => assert_eq!(outcome.accepted, topics[..2]),
        other => panic!("{other:?}"),
    }
    // The answer waits, and holds the reading back.
    assert!(a.has_transmit());
    assert!(!a.wants_message());
    let again = b.encode(&subscribe).expect("encode");
    assert!(matches!(a.handle_message(again.clone(), now), Err(Busy(bytes)) if bytes == again));
    let answer = a.poll_transmit().expect("the refusal");
    assert_eq!(
        answer,
        Message::Ephemeral(EphemeralMessage::SubscribeRejected(
            Topics::new(topics[2..].to_vec()).expect("topics")
        ))
    );
    assert!(a.poll_transmit().is_none());
    assert!(!a.has_transmit());
    assert!(a.wants_message());
    // B learns which topics A will not send.
    b.handle_message(a.encode(&answer).expect("encode"), now)
        .expect("wants it");
    match b.poll_event().expect("answered at once").result {
        Ok(Delivered::SubscribeRejected(rejected)) => assert_eq!(rejected.as_slice(), &topics[2..]),
        other => panic!("{other:?}"),
    }
    // The same Subscribe again: the three over the cap are refused again;
    // one within the cap is answered by nobody.
    a.handle_message(b.encode(&subscribe).expect("encode"), now)
        .expect("wants it");
    assert!(a.poll_event().is_some());
    let Some(Message::Ephemeral(EphemeralMessage::SubscribeRejected(rest))) = a.poll_transmit()
    else {
        panic!("the same three topics are over the cap again");
    };
    assert_eq!(rest.len(), 3);
    let within = Message::Ephemeral(EphemeralMessage::Subscribe(Topics::one(topics[0])));
    a.handle_message(b.encode(&within).expect("encode"), now)
        .expect("wants it");
    assert!(a.poll_event().is_some());
    assert!(a.poll_transmit().is_none());
}

/// `verify_one_by_one` is kept in a snapshot's flags byte (bit 0) and
/// comes back as it was; a flag this version does not define is refused.
#[test]
fn verify_one_by_one_survives_a_snapshot_and_unknown_flags_are_refused() {
    use super::snapshot::RestoreError;
    let now = Now::from_secs(NOW);
    let (mut a, _) = pair();
    assert!(!a.verify_one_by_one, "off by default");
    let batched = a.snapshot(now).expect("idle");
    a.verify_one_by_one = true;
    let one_by_one = a.snapshot(now).expect("idle");
    let restored = Session::restore(&one_by_one, now, [9; 32]).expect("restores");
    assert!(restored.verify_one_by_one);
    assert_eq!(restored.snapshot(now).expect("idle"), one_by_one);
    assert!(
        !Session::restore(&batched, now, [9; 32])
            .expect("restores")
            .verify_one_by_one
    );
    // The two differ in the flags byte alone (the checksum aside).
    let body = one_by_one.len() - 16;
    let differ: Vec<usize> = (0..body).filter(|&i| batched[i] != one_by_one[i]).collect();
    assert_eq!(differ.len(), 1);
    let flags = differ[0];
    assert_eq!((batched[flags], one_by_one[flags]), (0, 1));
    for unknown in [2u8, 0x80, 0xFF] {
        let mut bytes = one_by_one[..body].to_vec();
        bytes[flags] = unknown;
        let checksum = blake3::hash(&bytes);
        bytes.extend_from_slice(&checksum.as_bytes()[..16]);
        assert!(
            matches!(
                Session::restore(&bytes, now, [9; 32]),
                Err(RestoreError::Invalid { field: "flags", .. })
            ),
            "flags {unknown:#x}"
        );
    }
}
