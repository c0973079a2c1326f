//! The ephemeral rules between two sessions, with no runtime and virtual
//! time: the cheap checks come before verification and cost no budget, a
//! nonce is recorded only after verification, and subscriptions work both
//! ways under the remote-topic cap (the refusal sent by the session
//! itself).

use bijou_proto::ephemeral::{EphemeralRejected, PublishError};
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{
    EphemeralMessage, EphemeralPayload, Message, SignedEphemeral, Topic, Topics,
};
use bijou_proto::session::{Delivered, Rejected, Session, SessionConfig, Work};
use bijou_proto::time::Now;
use bijou_proto::verify_budget::VerifyBudget;
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_test_support::pair as kit;
use bytes::Bytes;

const NOW: u64 = 1_700_000_000;

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

fn now() -> Now {
    Now::from_secs(NOW)
}

/// Two sessions after their own handshake (the shared kit's pair, keys
/// 0xA0 and 0xB0): (a, b).
fn pair() -> (Session, Session) {
    let configs = (SessionConfig::new([1; 32]), SessionConfig::new([2; 32]));
    let responder = Responder::new(HandshakeConfig::default());
    kit::Pair::between((key(0xA0), key(0xB0)), configs, responder, now())
        .established()
        .into_sessions()
}

/// `to` takes `bytes` and judges them without waiting on its budget: the
/// result and its own answers (`poll_transmit`).
fn receive(to: &mut Session, bytes: Bytes) -> (Result<Delivered, Rejected>, Vec<Message>) {
    to.handle_message(bytes.clone(), now()).expect("wants it");
    loop {
        match to.poll_work(now()) {
            Work::More => {}
            Work::Idle => break,
            Work::Wait(at) => panic!("waited for the budget (until {at:?})"),
        }
    }
    let received = to.poll_event().expect("an event");
    assert_eq!(received.bytes, bytes, "the exact bytes are reported");
    let mut answers = Vec::new();
    while let Some(message) = to.poll_transmit() {
        answers.push(message);
    }
    (received.result, answers)
}

fn sealed(signer: u8, topic: Topic, nonce: u64, timestamp: u64, payload: Vec<u8>) -> Bytes {
    SignedEphemeral::seal(
        &key(signer),
        &EphemeralPayload::new(topic, nonce, timestamp, payload),
    )
    .expect("seal")
    .to_bytes()
}

fn with_bad_signature(bytes: &Bytes) -> Bytes {
    let mut bad = bytes.to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 0x01;
    bad.into()
}

/// `from` subscribes to `topics`; `to` hears it.
fn subscribe(from: &mut Session, to: &mut Session, topics: Topics) -> (Delivered, Vec<Message>) {
    let bytes = from
        .encode(&Message::Ephemeral(EphemeralMessage::Subscribe(topics)))
        .expect("encode");
    let (result, answers) = receive(to, bytes);
    (result.expect("accepted"), answers)
}

/// Size, age, topic and duplicate checks come first: a message failing one
/// of them is refused for that reason even with a bad signature, and it
/// costs no verification. With the budget spent (one verification per
/// second, none left) and the clock standing still, 200 such messages are
/// all answered at once: none waits.
#[test]
fn cheap_checks_run_before_verification_and_cost_no_budget() {
    let (mut a, mut b) = pair();
    let topic = Topic::new([1; 32]);
    subscribe(&mut b, &mut a, Topics::one(topic));
    let good = sealed(1, topic, 100, NOW, vec![1]);
    assert!(matches!(
        receive(&mut b, good).0,
        Ok(Delivered::Ephemeral(_))
    ));
    b.set_verify_budget(VerifyBudget::new(1, 1));
    // Spend the one token.
    assert!(matches!(
        receive(&mut b, sealed(1, topic, 101, NOW, vec![1])).0,
        Ok(Delivered::Ephemeral(_))
    ));
    for i in 0..50u64 {
        let forged = [
            with_bad_signature(&sealed(1, topic, 1_000 + i, NOW, vec![0; 64 * 1024 + 1])),
            with_bad_signature(&sealed(1, topic, 2_000 + i, NOW - 3_600, vec![1])),
            with_bad_signature(&sealed(1, Topic::new([9; 32]), 3_000 + i, NOW, vec![1])),
            with_bad_signature(&sealed(1, topic, 100, NOW, vec![i as u8])),
        ];
        for (bytes, want) in
            forged
                .into_iter()
                .zip(["TooLarge", "Stale", "NotSubscribed", "Duplicate"])
        {
            let (result, _) = receive(&mut b, bytes);
            let Err(Rejected::Ephemeral(e)) = &result else {
                panic!("{want}: {result:?}");
            };
            assert!(format!("{e:?}").starts_with(want), "{want}: {e:?}");
        }
    }
    // And a message that does need a signature check now waits.
    b.handle_message(sealed(1, topic, 102, NOW, vec![1]), now())
        .expect("wants it");
    assert!(matches!(b.poll_work(now()), Work::Wait(_)));
}

/// A forged message does not burn its nonce: the honest message with the
/// same issuer and nonce, sent after it, is delivered, once.
#[test]
fn a_nonce_is_recorded_only_after_verification() {
    let (mut a, mut b) = pair();
    let topic = Topic::new([1; 32]);
    subscribe(&mut b, &mut a, Topics::one(topic));
    let honest = sealed(1, topic, 77, NOW, b"honest".to_vec());
    for _ in 0..3 {
        assert!(matches!(
            receive(&mut b, with_bad_signature(&honest)).0,
            Err(Rejected::Ephemeral(EphemeralRejected::Signature(_)))
        ));
    }
    assert_eq!(b.ephemeral().expect("subscribed").dedup_len(), 0);
    assert!(matches!(
        receive(&mut b, honest.clone()).0,
        Ok(Delivered::Ephemeral(_))
    ));
    assert_eq!(b.ephemeral().expect("subscribed").dedup_len(), 1);
    assert!(matches!(
        receive(&mut b, honest).0,
        Err(Rejected::Ephemeral(EphemeralRejected::Duplicate {
            nonce: 77,
            ..
        }))
    ));
}

/// Subscriptions and unsubscriptions both ways, the remote-topic cap (its
/// refusal sent by the session on its own), and a publish over the
/// maximum, which makes nothing to send.
#[test]
fn subscriptions_both_ways_and_the_remote_topic_cap() {
    let (mut a, mut b) = pair();
    let topics: Vec<Topic> = (0..1_500u32)
        .map(|i| {
            let mut t = [0u8; 32];
            t[..4].copy_from_slice(&i.to_be_bytes());
            Topic::new(t)
        })
        .collect();
    let (heard, answers) = subscribe(&mut b, &mut a, Topics::new(topics.clone()).expect("topics"));
    let Delivered::Subscribed(outcome) = heard else {
        panic!("a Subscribe: {heard:?}");
    };
    assert_eq!(outcome.accepted, topics[..1024].to_vec());
    assert_eq!(
        outcome.rejected.expect("over the cap").as_slice(),
        &topics[1024..]
    );
    assert_eq!(
        a.ephemeral().expect("state").remote_subscriptions().count(),
        1024
    );
    // a's session answered on its own: b learns which topics a refused.
    let [answer] = &answers[..] else {
        panic!("one answer: {answers:?}");
    };
    let (result, _) = receive(&mut b, a.encode(answer).expect("encode"));
    let Ok(Delivered::SubscribeRejected(rejected)) = result else {
        panic!("a SubscribeRejected: {result:?}");
    };
    assert_eq!(rejected.as_slice(), &topics[1024..]);

    let bytes = b
        .encode(&Message::Ephemeral(EphemeralMessage::Unsubscribe(
            Topics::new(topics[..10].to_vec()).expect("topics"),
        )))
        .expect("encode");
    assert!(matches!(
        receive(&mut a, bytes).0,
        Ok(Delivered::Unsubscribed(t)) if t.len() == 10
    ));
    assert_eq!(
        a.ephemeral().expect("state").remote_subscriptions().count(),
        1014
    );
    assert!(!b.ephemeral().expect("state").is_subscribed(&topics[0]));
    assert!(b.ephemeral().expect("state").is_subscribed(&topics[10]));

    // Too large to publish: an error, and nothing to send.
    let err = a
        .sign_ephemeral(&key(1), topics[10], vec![0; 64 * 1024 + 1], now())
        .expect_err("too large");
    assert!(matches!(
        err,
        PublishError::TooLarge {
            len: 65_537,
            max: 65_536
        }
    ));
    assert!(!a.has_transmit());
    let sealed = a
        .sign_ephemeral(&key(1), topics[10], vec![0; 8], now())
        .expect("publish");
    let bytes = a
        .encode(&Message::Ephemeral(EphemeralMessage::from(sealed)))
        .expect("encode");
    assert_eq!(bytes.len(), 4 + 1 + 32 + 32 + 8 + 8 + 1 + 8 + 64);
    assert!(matches!(
        receive(&mut b, bytes).0,
        Ok(Delivered::Ephemeral(_))
    ));
}
