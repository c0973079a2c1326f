//! `SUK\0` messages through a [`Session`]: delivered as their own kind,
//! verified against the handshake's peer, and a bad one rejected with a
//! typed error while the session goes on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::keyhive::{KeyhiveError, KeyhiveMessage, KeyhivePeer, SignedKeyhive, SukMessage};
use bijou_proto::message::MessageError;
use bijou_proto::session::{verify_message, Delivered, Rejected, Session, SessionConfig, Work};
use bijou_proto::time::Clock;
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::Identity;
use bijou_test_support::pair as kit;
use bytes::Bytes;

/// Alice, Bob, and Bob's session with Alice after their handshake (the
/// shared kit's pair).
fn sessions() -> (SigningKey, SigningKey, Session) {
    let (alice, bob) = (
        SigningKey::from_bytes(&[1; 32]),
        SigningKey::from_bytes(&[2; 32]),
    );
    let configs = (SessionConfig::new([3; 32]), SessionConfig::new([4; 32]));
    let responder = Responder::new(HandshakeConfig::default());
    let pair = kit::Pair::between(
        (alice.clone(), bob.clone()),
        configs,
        responder,
        Clock::system().now(),
    );
    let (_, at_bob) = pair.established().into_sessions();
    (alice, bob, at_bob)
}

fn suk_from(signer: &SigningKey, to: &SigningKey) -> Bytes {
    SukMessage {
        contact_card: None,
        signed: SignedKeyhive::sign(
            signer,
            KeyhiveMessage::RequestContactCard {
                sender: KeyhivePeer::new(signer.peer_id()),
                target: KeyhivePeer::new(to.peer_id()),
            },
        )
        .unwrap(),
    }
    .to_bytes()
    .unwrap()
}

#[test]
fn keyhive_messages_are_delivered_verified_and_bad_ones_rejected_without_ending_the_session() {
    let (alice, bob, mut at_bob) = sessions();
    let now = Clock::system().now();

    // Signed by the handshake's peer: delivered.
    at_bob.handle_message(suk_from(&alice, &bob), now).unwrap();
    assert!(
        at_bob.poll_event().is_none(),
        "the signature waits for poll_work"
    );
    assert_eq!(at_bob.poll_work(now), Work::Idle);
    let received = at_bob.poll_event().expect("verified");
    let verified = received
        .result
        .unwrap()
        .into_keyhive()
        .expect("a keyhive message");
    assert_eq!(verified.keyhive().kind_name(), "RequestContactCard");

    // Signed by someone else: rejected, typed.
    let mallory = SigningKey::from_bytes(&[3; 32]);
    at_bob
        .handle_message(suk_from(&mallory, &bob), now)
        .unwrap();
    let _ = at_bob.poll_work(now);
    let received = at_bob.poll_event().unwrap();
    assert!(matches!(
        received.result,
        Err(Rejected::Keyhive(KeyhiveError::WrongSigner { .. }))
    ));

    // Malformed (a size that disagrees): rejected, typed.
    let mut bad = suk_from(&alice, &bob).to_vec();
    bad.push(0);
    at_bob.handle_message(Bytes::from(bad), now).unwrap();
    let received = at_bob.poll_event().unwrap();
    assert!(matches!(
        received.result,
        Err(Rejected::Malformed(MessageError::Keyhive(
            KeyhiveError::TotalSize { .. }
        )))
    ));

    // The session goes on.
    assert!(at_bob.wants_message());
    at_bob.handle_message(suk_from(&alice, &bob), now).unwrap();
    let _ = at_bob.poll_work(now);
    assert!(matches!(
        at_bob.poll_event().unwrap().result,
        Ok(Delivered::Keyhive(_))
    ));

    // Without a session, checked against the key it names.
    let received = verify_message(suk_from(&mallory, &bob));
    assert!(matches!(received.result, Ok(Delivered::Keyhive(_))));
}
