//! The handshake's two state machines with no runtime and no transport:
//! every refusal the responder sends and every check the initiator makes,
//! driven with bytes and the time alone.

use bijou_codec::Wire;
use bijou_proto::handshake::{
    ChallengeError, HandshakeConfig, HandshakeError, Initiator, Responder,
};
use bijou_proto::message::{
    Audience, Challenge, HandshakeMessage, Rejection, RejectionReason, Response,
};
use bijou_proto::nonce_cache::NonceCache;
use bijou_proto::time::Now;
use bijou_signing::{ed25519_dalek::SigningKey, Identity, Signed};
use bytes::Bytes;

const NOW: u64 = 1_800_000_000;

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

fn responder() -> Responder {
    Responder::new(HandshakeConfig::default()).with_service_name(b"sync.example")
}

fn challenge(from: u8, audience: Audience, at: u64, nonce: u8) -> Initiator {
    Initiator::new(&key(from), audience, Now::from_secs(at), [nonce; 16]).expect("challenge")
}

fn refusal(responder: &Responder, message: Bytes, now: u64) -> RejectionReason {
    let answer = responder.answer(&key(2), message, Now::from_secs(now));
    let reply = answer.reply.expect("a rejection is sent");
    match HandshakeMessage::decode(reply).expect("decodes") {
        HandshakeMessage::Rejection(Rejection { reason, timestamp }) => {
            assert_eq!(timestamp, now);
            match answer.outcome {
                Err(HandshakeError::Refused(why)) => assert_eq!(why.reason(), reason),
                other => panic!("{other:?}"),
            }
            reason
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn both_sides_agree_by_key_and_by_service_name() {
    let responder = responder();
    for audience in [
        Audience::Known(key(2).peer_id()),
        Audience::discover(b"sync.example"),
    ] {
        let initiator = challenge(1, audience, NOW, audience_nonce(&audience));
        let answer = responder.answer(
            &key(2),
            initiator.challenge().clone(),
            Now::from_secs(NOW + 5),
        );
        let at_bob = answer.outcome.expect("accepted");
        let at_alice = initiator
            .receive(answer.reply.expect("response"))
            .expect("verified");
        assert_eq!(at_bob.peer(), key(1).peer_id());
        assert_eq!(at_alice.peer(), key(2).peer_id());
        assert_eq!(at_bob.challenge_digest(), at_alice.challenge_digest());
        assert_eq!(
            (at_bob.remote_time(), at_alice.remote_time()),
            (NOW, NOW + 5)
        );
    }
}

fn audience_nonce(audience: &Audience) -> u8 {
    match audience {
        Audience::Known(_) => 1,
        Audience::Discover(_) => 2,
    }
}

#[test]
fn the_responder_refuses_for_every_reason_and_says_which() {
    let responder = responder();
    let me = Audience::Known(key(2).peer_id());
    // Another peer, another service.
    let wrong = challenge(1, Audience::Known(key(3).peer_id()), NOW, 1);
    assert_eq!(
        refusal(&responder, wrong.challenge().clone(), NOW),
        RejectionReason::InvalidAudience
    );
    let wrong = challenge(1, Audience::discover(b"elsewhere"), NOW, 2);
    assert_eq!(
        refusal(&responder, wrong.challenge().clone(), NOW),
        RejectionReason::InvalidAudience
    );
    // Drift: 601 s either way, with the default 600 s.
    for at in [NOW - 601, NOW + 601] {
        let drifted = challenge(1, me, at, 3);
        assert_eq!(
            refusal(&responder, drifted.challenge().clone(), NOW),
            RejectionReason::ClockDrift
        );
    }
    // A forged signature.
    let mut forged = challenge(1, me, NOW, 4).challenge().to_vec();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    assert_eq!(
        refusal(&responder, Bytes::from(forged), NOW),
        RejectionReason::InvalidSignature
    );
    // A replay, at the edge of the window and in the middle.
    let fresh = challenge(1, me, NOW, 5);
    assert!(responder
        .answer(&key(2), fresh.challenge().clone(), Now::from_secs(NOW))
        .outcome
        .is_ok());
    for now in [NOW, NOW + 300, NOW + 600] {
        assert_eq!(
            refusal(&responder, fresh.challenge().clone(), now),
            RejectionReason::ReplayedNonce
        );
    }
}

#[test]
fn the_responder_says_nothing_to_what_is_not_a_challenge() {
    let responder = responder();
    for (message, want) in [
        (Bytes::from(vec![0u8; 257]), "too large"),
        (Bytes::from_static(b"SUH\0\x07"), "malformed"),
        (
            HandshakeMessage::Rejection(Rejection {
                reason: RejectionReason::ClockDrift,
                timestamp: NOW,
            })
            .encode()
            .expect("encode"),
            "unexpected",
        ),
    ] {
        let answer = responder.answer(&key(2), message, Now::from_secs(NOW));
        assert!(answer.reply.is_none(), "{want}");
        let ok = matches!(
            (&answer.outcome, want),
            (
                Err(HandshakeError::TooLarge { len: 257, max: 256 }),
                "too large"
            ) | (Err(HandshakeError::Malformed(_)), "malformed")
                | (
                    Err(HandshakeError::Unexpected {
                        expected: "challenge",
                        found: "rejection",
                    }),
                    "unexpected",
                )
        );
        assert!(ok, "{want}: {:?}", answer.outcome);
    }
}

#[test]
fn the_initiator_checks_the_reply() {
    let me = key(1);
    let bob = key(2);
    let audience = Audience::Known(bob.peer_id());
    let initiator = challenge(1, audience, NOW, 9);
    // A rejection is reported with the responder's reason and time.
    let rejection = HandshakeMessage::Rejection(Rejection {
        reason: RejectionReason::InvalidAudience,
        timestamp: NOW + 1,
    })
    .encode()
    .expect("encode");
    assert!(matches!(
        initiator.clone().receive(rejection),
        Err(HandshakeError::Rejected {
            reason: RejectionReason::InvalidAudience,
            responder_time,
            sent,
        }) if responder_time == NOW + 1 && sent == audience
    ));
    // A response by someone other than the audience.
    let digest = initiator.challenge_digest();
    let sealed = |by: &SigningKey, response: &Response| {
        HandshakeMessage::Response(Signed::seal(by, response).expect("seal"))
            .encode()
            .expect("encode")
    };
    let ours = Response::new(digest, NOW);
    assert!(matches!(
        initiator.clone().receive(sealed(&key(3), &ours)),
        Err(HandshakeError::WrongResponder { .. })
    ));
    // A response naming another challenge.
    let other = Challenge::new(audience, NOW, [8; 16]);
    let other = Response::for_challenge(&other, NOW).expect("response");
    assert!(matches!(
        initiator.clone().receive(sealed(&bob, &other)),
        Err(HandshakeError::ChallengeDigest { expected, .. }) if expected == digest
    ));
    // A forged response signature.
    let mut forged = sealed(&bob, &ours).to_vec();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    assert!(matches!(
        initiator.clone().receive(Bytes::from(forged)),
        Err(HandshakeError::ResponseSignature(_))
    ));
    // A challenge where a response belongs.
    let theirs = challenge(2, Audience::Known(me.peer_id()), NOW, 7);
    assert!(matches!(
        initiator.clone().receive(theirs.challenge().clone()),
        Err(HandshakeError::Unexpected {
            expected: "response",
            found: "challenge"
        })
    ));
    // And the real one passes.
    assert!(initiator.receive(sealed(&bob, &ours)).is_ok());
}

/// A responder over a fixed time with `max_drift` and a nonce cache of
/// `capacity` entries (keyed from a fixed seed: the test is deterministic).
fn responder_with(max_drift: u64, capacity: usize) -> Responder {
    let mut config = HandshakeConfig::default();
    config.max_drift = std::time::Duration::from_secs(max_drift);
    let cache = NonceCache::keyed(config.max_drift, capacity, [3; 16]);
    Responder::with_nonce_cache(config, std::sync::Arc::new(cache))
}

fn accepted(responder: &Responder, message: Bytes, now: u64) -> bool {
    let answer = responder.answer(&key(2), message, Now::from_secs(now));
    match answer.outcome {
        Ok(_) => {
            let reply = answer.reply.expect("a response");
            assert!(matches!(
                HandshakeMessage::decode(reply).expect("decodes"),
                HandshakeMessage::Response(_)
            ));
            true
        }
        Err(_) => false,
    }
}

#[test]
fn a_discovery_id_is_accepted_only_when_it_is_the_configured_one() {
    let responder = Responder::new(HandshakeConfig::default()).with_discovery_id([5; 32]);
    let ok = challenge(1, Audience::Discover([5; 32]), NOW, 1);
    assert!(accepted(&responder, ok.challenge().clone(), NOW));
    let other = challenge(1, Audience::Discover([6; 32]), NOW, 2);
    assert_eq!(
        refusal(&responder, other.challenge().clone(), NOW),
        RejectionReason::InvalidAudience
    );
}

#[test]
fn another_keys_signature_over_an_honest_challenge_is_refused() {
    let responder = responder();
    let me = Audience::Known(key(2).peer_id());
    let honest = challenge(1, me, NOW, 1).challenge().to_vec();
    let theirs = challenge(3, me, NOW, 1).challenge().to_vec();
    // The honest challenge's bytes with key 3's signature (the last 64).
    let mut swapped = honest.clone();
    let at = swapped.len() - 64;
    swapped[at..].copy_from_slice(&theirs[at..]);
    let answer = responder.answer(&key(2), Bytes::from(swapped), Now::from_secs(NOW));
    assert!(matches!(
        answer.outcome,
        Err(HandshakeError::Refused(ChallengeError::InvalidSignature(_)))
    ));
    // Neither used up the nonce: the honest one still gets in once.
    assert!(accepted(&responder, Bytes::from(honest), NOW));
}

#[test]
fn the_drift_check_holds_exactly_at_the_configured_bound() {
    assert_eq!(
        HandshakeConfig::default().max_drift,
        std::time::Duration::from_secs(600)
    );
    let responder = responder_with(30, 1_024);
    let me = Audience::Known(key(2).peer_id());
    for (i, (at, ok)) in [
        (NOW - 30, true),
        (NOW + 30, true),
        (NOW - 31, false),
        (NOW + 31, false),
        (0, false),
        (u64::MAX, false),
    ]
    .into_iter()
    .enumerate()
    {
        let nonce = u8::try_from(i).expect("small");
        let sent = challenge(1, me, at, nonce).challenge().clone();
        if ok {
            assert!(accepted(&responder, sent, NOW), "stamped {at}");
        } else {
            assert_eq!(
                refusal(&responder, sent, NOW),
                RejectionReason::ClockDrift,
                "stamped {at}"
            );
        }
    }
}

#[test]
fn a_replay_is_refused_and_a_fresh_nonce_from_the_same_peer_is_not() {
    let responder = responder();
    let me = Audience::Known(key(2).peer_id());
    let hello = challenge(1, me, NOW, 9).challenge().clone();
    assert!(accepted(&responder, hello.clone(), NOW));
    assert_eq!(
        refusal(&responder, hello, NOW),
        RejectionReason::ReplayedNonce
    );
    assert!(accepted(
        &responder,
        challenge(1, me, NOW, 10).challenge().clone(),
        NOW
    ));
}

/// With room for one nonce, a fresh challenge still gets in (the older
/// entry is forgotten and becomes the floor), and the forgotten one's
/// replay is refused, not accepted.
#[test]
fn a_full_replay_cache_lets_fresh_challenges_in_and_never_a_replay() {
    let responder = responder_with(600, 1);
    let me = Audience::Known(key(2).peer_id());
    let first = challenge(1, me, NOW - 1, 1).challenge().clone();
    assert!(accepted(&responder, first.clone(), NOW));
    assert!(accepted(
        &responder,
        challenge(3, me, NOW, 2).challenge().clone(),
        NOW
    ));
    assert_eq!(responder.nonce_cache_state(), (1, Some(NOW - 1)));
    assert_eq!(
        refusal(&responder, first, NOW),
        RejectionReason::ReplayedNonce
    );
}

/// Signature, then audience, then drift, then the nonce; a challenge
/// refused before the nonce check leaves its nonce unused.
#[test]
fn the_checks_run_in_order_and_a_refusal_uses_up_no_nonce() {
    let responder = responder();
    let me = Audience::Known(key(2).peer_id());
    let other = Audience::Known(key(3).peer_id());
    let forge = |bytes: &Bytes| {
        let mut forged = bytes.to_vec();
        let at = forged.len() - 10;
        forged[at] ^= 1;
        Bytes::from(forged)
    };
    let everything_wrong = challenge(1, other, 0, 1).challenge().clone();
    assert_eq!(
        refusal(&responder, forge(&everything_wrong), NOW),
        RejectionReason::InvalidSignature
    );
    assert_eq!(
        refusal(&responder, everything_wrong, NOW),
        RejectionReason::InvalidAudience
    );
    assert_eq!(
        refusal(&responder, challenge(1, me, 0, 1).challenge().clone(), NOW),
        RejectionReason::ClockDrift
    );
    let good = challenge(1, me, NOW, 1).challenge().clone();
    assert!(accepted(&responder, good.clone(), NOW));
    assert_eq!(
        refusal(&responder, good, NOW),
        RejectionReason::ReplayedNonce
    );
}

/// Both sides with a signer that answers later: the same bytes an
/// in-memory key makes, and a signature that does not verify is refused
/// with nothing to send.
#[test]
fn a_signer_that_answers_later_signs_the_same_handshake() {
    use bijou_proto::handshake::Answering;

    let (client, server) = (key(1), key(2));
    let audience = Audience::Known(server.peer_id());
    let now = Now::from_secs(NOW);
    let unsigned =
        Initiator::unsigned(client.verifying_key(), audience, now, [4; 16]).expect("encodes");
    // Another key's signature, or one over other bytes: refused.
    for wrong in [
        key(3).sign_message(unsigned.message()).expect("sign"),
        client.sign_message(b"something else").expect("sign"),
    ] {
        assert!(matches!(
            unsigned.clone().sign(&wrong),
            Err(HandshakeError::OwnSignature(_))
        ));
    }
    let signature = client.sign_message(unsigned.message()).expect("sign");
    let initiator = unsigned.sign(&signature).expect("verifies");
    let direct = Initiator::new(&client, audience, now, [4; 16]).expect("challenge");
    assert_eq!(initiator.challenge(), direct.challenge());

    // The responder: every check now, the signature later.
    let responder = responder();
    let Answering::Sign(pending) =
        responder.answer_unsigned(server.verifying_key(), initiator.challenge().clone(), now)
    else {
        panic!("accepted");
    };
    let wrong = key(3).sign_message(pending.message()).expect("sign");
    let refused = pending.sign(&wrong);
    assert!(refused.reply.is_none(), "nothing to send");
    assert!(matches!(
        refused.outcome,
        Err(HandshakeError::OwnSignature(_))
    ));
    // The nonce was used by that acceptance: the same challenge again is a
    // replay, refused at once with nothing to sign.
    let Answering::Now(replay) =
        responder.answer_unsigned(server.verifying_key(), initiator.challenge().clone(), now)
    else {
        panic!("a refusal needs no signature");
    };
    assert!(matches!(
        replay.outcome,
        Err(HandshakeError::Refused(
            ChallengeError::ReplayedNonce { .. }
        ))
    ));
    // A fresh challenge, signed properly: the same reply as `answer`.
    let fresh = Initiator::new(&client, audience, now, [5; 16]).expect("challenge");
    let Answering::Sign(pending) =
        responder.answer_unsigned(server.verifying_key(), fresh.challenge().clone(), now)
    else {
        panic!("accepted");
    };
    let signature = server.sign_message(pending.message()).expect("sign");
    let answer = pending.sign(&signature);
    let reply = answer.reply.expect("a response");
    let other = responder_with(600, 16);
    let direct = other.answer(&server, fresh.challenge().clone(), now);
    assert_eq!(
        Some(&reply),
        direct.reply.as_ref(),
        "the same response bytes"
    );
    assert_eq!(answer.outcome.expect("accepted").peer(), client.peer_id());
    assert_eq!(
        fresh.receive(reply).expect("verified").peer(),
        server.peer_id()
    );
}

// The session's own handshake: `Session::client` and `Session::server`
// run it from the first byte, through `poll` alone.

mod session {
    use std::time::Duration;

    use bijou_proto::handshake::HANDSHAKE_MAX_MESSAGE_LENGTH;
    use bijou_proto::handshake::{HandshakeConfig, HandshakeError, Responder};
    use bijou_proto::message::{Audience, RejectionReason};
    use bijou_proto::session::{
        Busy, Close, Event, Output, Session, SessionConfig, DEFAULT_HANDSHAKE_TIMEOUT,
    };
    use bijou_signing::{ed25519_dalek::SigningKey, Identity};
    use bijou_test_support::pair::{at, Pair, Signer};
    use bytes::Bytes;

    #[test]
    fn a_client_and_a_server_session_authenticate_each_other_through_poll_alone() {
        let mut pair = Pair::new(SessionConfig::new([1; 32]), SessionConfig::new([2; 32]));
        for peer in [&pair.client, &pair.server] {
            assert!(!peer.session.is_established());
            assert_eq!(peer.session.max_message_len(), HANDSHAKE_MAX_MESSAGE_LENGTH);
            assert_eq!(peer.session.remote_peer(), None);
        }
        pair.run();
        assert!(pair.client.established() && pair.server.established());
        assert_eq!(
            pair.client.session.remote_peer(),
            Some(pair.server.key.peer_id())
        );
        assert_eq!(
            pair.server.session.remote_peer(),
            Some(pair.client.key.peer_id())
        );
        // One signature each: the challenge, the response.
        assert_eq!((pair.client.signed, pair.server.signed), (1, 1));
        // The maximum rises once the peer is authenticated.
        let configured = SessionConfig::new([0; 32]).max_message_len;
        assert_eq!(pair.client.session.max_message_len(), configured);
        assert_eq!(pair.server.session.max_message_len(), configured);
        assert_eq!(
            pair.client
                .session
                .authenticated()
                .map(|a| a.challenge_digest()),
            pair.server
                .session
                .authenticated()
                .map(|a| a.challenge_digest())
        );
        assert!(pair.client.session.authenticated().is_some());
    }

    #[test]
    fn the_same_seeds_give_the_same_handshake_bytes() {
        let bytes = |seed: u8| {
            let config = SessionConfig::new([seed; 32]);
            let mut pair = Pair::new(config, SessionConfig::new([2; 32]));
            pair.client.drain(at(0));
            pair.client.outbox.clone()
        };
        assert_eq!(bytes(1), bytes(1));
        assert_ne!(bytes(1), bytes(3), "the nonce comes from the seed");
    }

    #[test]
    fn a_signer_that_answers_turns_later_completes_the_handshake() {
        let mut pair = Pair::new(SessionConfig::new([1; 32]), SessionConfig::new([2; 32]));
        pair.client.signer = Signer::After(3);
        pair.server.signer = Signer::After(5);
        pair.turn();
        assert!(pair.client.outbox.is_empty() && pair.server.inbox.is_empty());
        assert_eq!(pair.client.open_requests().len(), 1, "the challenge waits");
        pair.run();
        assert!(pair.client.established() && pair.server.established());
        assert!(pair.client.open_requests().is_empty());
    }

    #[test]
    fn a_signer_that_never_answers_ends_in_the_deadline_waiting_for_it() {
        let mut pair = Pair::new(SessionConfig::new([1; 32]), SessionConfig::new([2; 32]));
        pair.client.signer = Signer::Never;
        pair.run();
        pair.advance(DEFAULT_HANDSHAKE_TIMEOUT - Duration::from_secs(1));
        assert!(pair.client.closed().is_none());
        pair.advance(Duration::from_secs(1));
        match pair.client.closed() {
            Some(Close::HandshakeTimedOut { after, waiting_for }) => {
                assert_eq!(*after, DEFAULT_HANDSHAKE_TIMEOUT);
                assert_eq!(*waiting_for, "signer");
            }
            other => panic!("{other:?}"),
        }
        match pair.server.closed() {
            Some(Close::HandshakeTimedOut { waiting_for, .. }) => {
                assert_eq!(*waiting_for, "challenge");
            }
            other => panic!("{other:?}"),
        }
        assert!(pair.client.session.is_closed() && pair.server.session.is_closed());
    }

    #[test]
    fn a_lost_response_ends_the_client_by_its_own_deadline() {
        let mut config = SessionConfig::new([1; 32]);
        config.handshake_timeout = Duration::from_secs(3);
        let mut pair = Pair::new(config, SessionConfig::new([2; 32]));
        pair.client.drain(at(0));
        pair.deliver();
        pair.server.drain(at(0));
        pair.server.outbox.clear(); // the response is lost
        assert!(pair.server.established());
        pair.advance(Duration::from_secs(3));
        match pair.client.closed() {
            Some(Close::HandshakeTimedOut { after, waiting_for }) => {
                assert_eq!((*after, *waiting_for), (Duration::from_secs(3), "response"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_first_message_over_256_bytes_closes_the_server_before_any_parsing() {
        let mut pair = Pair::new(SessionConfig::new([1; 32]), SessionConfig::new([2; 32]));
        let junk = Bytes::from(vec![0_u8; HANDSHAKE_MAX_MESSAGE_LENGTH + 1]);
        pair.server.inbox.push_back(junk);
        pair.server.drain(at(0));
        match pair.server.closed() {
            Some(Close::Handshake(HandshakeError::TooLarge { len, max })) => {
                assert_eq!((*len, *max), (257, HANDSHAKE_MAX_MESSAGE_LENGTH));
            }
            other => panic!("{other:?}"),
        }
        assert!(pair.server.outbox.is_empty(), "nothing answers junk");
        // Closed: nothing more is taken.
        let late = Bytes::from_static(b"late");
        assert_eq!(
            pair.server.session.handle_message(late.clone(), at(0)),
            Err(Busy(late))
        );
    }

    #[test]
    fn a_refused_challenge_is_answered_with_its_rejection_then_both_close() {
        let (alice, bob) = (
            SigningKey::from_bytes(&[1; 32]),
            SigningKey::from_bytes(&[2; 32]),
        );
        let stranger = SigningKey::from_bytes(&[9; 32]).peer_id();
        let client = Session::client(
            alice.verifying_key(),
            Audience::Known(stranger),
            at(0),
            SessionConfig::new([1; 32]),
        );
        let server = Session::server(
            bob.verifying_key(),
            Responder::new(HandshakeConfig::default()),
            at(0),
            SessionConfig::new([2; 32]),
        );
        let mut pair = Pair::from_sessions(client, server);
        pair.run();
        match pair.server.closed() {
            Some(Close::Handshake(HandshakeError::Refused(why))) => {
                assert_eq!(why.reason(), RejectionReason::InvalidAudience);
            }
            other => panic!("{other:?}"),
        }
        match pair.client.closed() {
            Some(Close::Handshake(HandshakeError::Rejected { reason, sent, .. })) => {
                assert_eq!(*reason, RejectionReason::InvalidAudience);
                assert_eq!(*sent, Audience::Known(stranger));
            }
            other => panic!("{other:?}"),
        }
        assert!(!pair.client.established() && !pair.server.established());
    }

    #[test]
    fn a_message_out_of_turn_is_given_back_never_dropped() {
        let mut client = Session::client(
            SigningKey::from_bytes(&[1; 32]).verifying_key(),
            Audience::Known(SigningKey::from_bytes(&[2; 32]).peer_id()),
            at(0),
            SessionConfig::new([1; 32]),
        );
        // The challenge waits for its signature: no message is taken.
        let Output::Sign(_) = client.poll(at(0)) else {
            panic!("the challenge is signed first")
        };
        let early = Bytes::from_static(b"too early");
        assert!(matches!(
            client.poll(at(0)),
            Output::Wait { read: false, .. }
        ));
        assert_eq!(
            client.handle_message(early.clone(), at(0)),
            Err(Busy(early))
        );
    }

    #[test]
    fn a_peer_that_closes_mid_handshake_ends_it_with_a_typed_close() {
        let mut pair = Pair::new(SessionConfig::new([1; 32]), SessionConfig::new([2; 32]));
        pair.client.drain(at(0));
        pair.client.session.handle_close();
        pair.client.drain(at(0));
        assert!(matches!(pair.client.closed(), Some(Close::PeerClosed)));
        assert!(!pair.client.established());
        assert!(pair
            .client
            .events
            .iter()
            .all(|event| matches!(event, Event::Closed(_))));
    }
}

mod not_open {
    use bijou_proto::ephemeral::PublishError;
    use bijou_proto::message::{SedimentreeId, Topic};
    use bijou_proto::session::{Operation, SessionConfig, StartError};
    use bijou_test_support::pair::{at, Pair};

    #[test]
    fn an_operation_before_the_handshake_or_after_close_is_refused_and_sends_nothing() {
        let mut pair = Pair::new(SessionConfig::new([1; 32]), SessionConfig::new([2; 32]));
        let deadline = at(10).monotonic;
        let fetch = || Operation::Fetch(SedimentreeId::new([9; 32]));
        assert_eq!(
            pair.client.session.start(fetch(), deadline).map(|_| ()),
            Err(StartError::NotOpen { kind: "fetch" })
        );
        pair.client.drain(at(0));
        assert_eq!(pair.client.outbox.len(), 1, "the challenge alone");
        pair.run();
        assert!(pair.client.session.start(fetch(), deadline).is_ok());
        pair.client.session.close();
        pair.client.drain(at(0));
        pair.client.outbox.clear();
        assert_eq!(
            pair.client.session.start(fetch(), deadline).map(|_| ()),
            Err(StartError::NotOpen { kind: "fetch" })
        );
        assert!(matches!(
            pair.client
                .session
                .publish(Topic::new([1; 32]), &b"late"[..], at(1)),
            Err(PublishError::Closed)
        ));
        pair.client.drain(at(1));
        assert!(
            pair.client.outbox.is_empty(),
            "nothing goes out after close"
        );
    }
}
