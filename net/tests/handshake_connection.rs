//! Handshake and connection tests over in-memory duplex streams: every
//! responder check (signature, audience, clock drift, replayed nonce), every
//! initiator check (response signature, responder identity, challenge
//! digest), the pre-handshake frame limit, the timeout, and the
//! connection's report-and-continue handling of bad signed items.

use bijou_net::session::SendRefused;
use bijou_net::ConnectError;
use std::time::Duration;

use bijou_codec::Wire;
use bijou_net::connection::Rejected;
use bijou_net::handshake::{
    Clock, HandshakeConfig, HandshakeError, Responder, HANDSHAKE_MAX_MESSAGE_LENGTH,
};
use bijou_net::message::{
    Audience, BlobMessage, Challenge, CommitId, HandshakeMessage, LooseCommit, Message,
    RejectionReason, RemoteHeads, Response, SedimentreeId, SignedItem, SyncMessage,
    VerifyItemError,
};
use bijou_net::transport::{FramedTransport, Transport};
use bijou_net::{prefix::Bijou64, Connection, FrameCodec, FrameError, SendError, TransportError};
use bijou_signing::Blob;
use bijou_signing::{
    ed25519_dalek::SigningKey, BlobMismatch, Digest, Identity, Signed, VerifyError,
};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio::io::DuplexStream;
use tokio::time::timeout;
use tokio_util::codec::Framed;

const LIMIT: Duration = Duration::from_secs(10);
const NOW: u64 = 1_800_000_000;

fn config() -> HandshakeConfig {
    let mut c = HandshakeConfig::default();
    c.clock = Clock::fixed(NOW);
    c.timeout = Duration::from_secs(5);
    c
}

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

type Raw = Framed<DuplexStream, FrameCodec<Bijou64>>;

fn raw(io: DuplexStream) -> Raw {
    Framed::new(io, FrameCodec::new())
}

async fn recv_handshake(raw: &mut Raw) -> HandshakeMessage {
    let frame = raw.next().await.expect("a frame").expect("well framed");
    match Message::decode(frame).expect("decodes") {
        Message::Handshake(h) => h,
        other => panic!("expected a handshake message, got {}", other.kind_name()),
    }
}

fn challenge_bytes(signer: &SigningKey, audience: Audience, ts: u64, nonce: [u8; 16]) -> Bytes {
    let c = Challenge::new(audience, ts, nonce);
    HandshakeMessage::Challenge(Signed::seal(signer, &c).expect("seal"))
        .encode()
        .expect("encode")
}

/// Sends `challenge` as a raw initiator to a fresh `accept` on `responder`;
/// returns what the raw side received and the responder's result.
async fn raw_challenge(
    responder: &Responder,
    challenge: Bytes,
) -> (HandshakeMessage, Result<(), ConnectError>) {
    let (a, b) = tokio::io::duplex(4096);
    let responder = responder.clone();
    let server = tokio::spawn(async move {
        Connection::accept(FramedTransport::new(b, Bijou64), &key(2), &responder)
            .await
            .map(|_| ())
    });
    let mut client = raw(a);
    client.send(challenge).await.expect("send");
    let answer = recv_handshake(&mut client).await;
    (answer, server.await.expect("join"))
}

fn assert_refused(
    (answer, result): (HandshakeMessage, Result<(), ConnectError>),
    want: RejectionReason,
) {
    match answer {
        HandshakeMessage::Rejection(r) => {
            assert_eq!(r.reason, want);
            assert_eq!(r.timestamp, NOW);
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    match result {
        Err(ConnectError::Handshake(HandshakeError::Refused { reason, .. })) => {
            assert_eq!(reason, want)
        }
        other => panic!("expected Refused({want:?}), got {other:?}"),
    }
}

#[tokio::test]
async fn honest_handshake_authenticates_both_sides_and_raises_the_limit() {
    timeout(LIMIT, async {
        let (a, b) = tokio::io::duplex(4096);
        let responder = Responder::new(config());
        let server = tokio::spawn(async move {
            Connection::accept(FramedTransport::new(b, Bijou64), &key(2), &responder).await
        });
        let client = Connection::connect(
            FramedTransport::new(a, Bijou64),
            &key(1),
            Audience::Known(key(2).peer_id()),
            &config(),
        )
        .await
        .expect("client handshake");
        let server = server.await.expect("join").expect("server handshake");
        assert_eq!(client.remote_peer(), key(2).peer_id());
        assert_eq!(server.remote_peer(), key(1).peer_id());
        assert_eq!(client.local_peer(), key(1).peer_id());
        assert_eq!(
            client.authenticated().challenge_digest(),
            server.authenticated().challenge_digest()
        );
        assert_eq!(
            client.get_ref().max_message_length(),
            config().max_message_length
        );
        assert_eq!(
            server.get_ref().max_message_length(),
            config().max_message_length
        );
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn discovery_audience_is_accepted_only_for_the_configured_id() {
    timeout(LIMIT, async {
        let responder = Responder::new(config()).with_discovery_id([5; 32]);
        let ok = challenge_bytes(&key(1), Audience::Discover([5; 32]), NOW, [1; 16]);
        let (answer, result) = raw_challenge(&responder, ok).await;
        assert!(matches!(answer, HandshakeMessage::Response(_)));
        result.expect("accepted");
        let other = challenge_bytes(&key(1), Audience::Discover([6; 32]), NOW, [2; 16]);
        assert_refused(
            raw_challenge(&responder, other).await,
            RejectionReason::InvalidAudience,
        );
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn forged_challenge_signature_is_refused() {
    timeout(LIMIT, async {
        let responder = Responder::new(config());
        let good = challenge_bytes(&key(1), Audience::Known(key(2).peer_id()), NOW, [1; 16]);
        let mut forged = good.to_vec();
        let last = forged.len() - 10;
        forged[last] ^= 0x01; // inside S
        let (answer, result) = raw_challenge(&responder, forged.into()).await;
        assert!(matches!(
            result,
            Err(ConnectError::Handshake(HandshakeError::Refused {
                signature: Some(_),
                ..
            }))
        ));
        assert_refused((answer, result), RejectionReason::InvalidSignature);

        // Another key's signature over the honest issuer's challenge.
        let mut swapped = good.to_vec();
        let sig = challenge_bytes(&key(3), Audience::Known(key(2).peer_id()), NOW, [1; 16]);
        swapped[94..].copy_from_slice(&sig[94..]);
        assert_refused(
            raw_challenge(&responder, swapped.into()).await,
            RejectionReason::InvalidSignature,
        );
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn wrong_audience_is_refused_and_the_initiator_learns_why() {
    timeout(LIMIT, async {
        let (a, b) = tokio::io::duplex(4096);
        let responder = Responder::new(config());
        let server = tokio::spawn(async move {
            Connection::accept(FramedTransport::new(b, Bijou64), &key(2), &responder).await
        });
        // Addressed to key 3, delivered to key 2.
        let client = Connection::connect(
            FramedTransport::new(a, Bijou64),
            &key(1),
            Audience::Known(key(3).peer_id()),
            &config(),
        )
        .await;
        assert!(matches!(
            client,
            Err(ConnectError::Handshake(HandshakeError::Rejected {
                reason: RejectionReason::InvalidAudience,
                responder_time: NOW,
                ..
            }))
        ));
        assert!(matches!(
            server.await.expect("join"),
            Err(ConnectError::Handshake(HandshakeError::Refused {
                reason: RejectionReason::InvalidAudience,
                signature: None
            }))
        ));
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn clock_drift_is_checked_at_the_configured_bound() {
    timeout(LIMIT, async {
        let mut c = config();
        c.max_drift = Duration::from_secs(30);
        let responder = Responder::new(c);
        let to = Audience::Known(key(2).peer_id());
        for (i, (ts, ok)) in [
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
            let nonce = [u8::try_from(i).expect("small"); 16];
            let outcome = raw_challenge(&responder, challenge_bytes(&key(1), to, ts, nonce)).await;
            if ok {
                assert!(
                    matches!(outcome.0, HandshakeMessage::Response(_)),
                    "ts {ts}"
                );
                outcome.1.expect("accepted");
            } else {
                assert_refused(outcome, RejectionReason::ClockDrift);
            }
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn default_drift_is_600_seconds_and_initiator_sees_clock_drift() {
    timeout(LIMIT, async {
        assert_eq!(
            HandshakeConfig::default().max_drift,
            Duration::from_secs(600)
        );
        let mut client_config = config();
        client_config.clock = Clock::fixed(NOW - 601);
        let (a, b) = tokio::io::duplex(4096);
        let responder = Responder::new(config());
        let server = tokio::spawn(async move {
            Connection::accept(FramedTransport::new(b, Bijou64), &key(2), &responder).await
        });
        let client = Connection::connect(
            FramedTransport::new(a, Bijou64),
            &key(1),
            Audience::Known(key(2).peer_id()),
            &client_config,
        )
        .await;
        assert!(matches!(
            client,
            Err(ConnectError::Handshake(HandshakeError::Rejected {
                reason: RejectionReason::ClockDrift,
                ..
            }))
        ));
        assert!(server.await.expect("join").is_err());
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn replayed_challenge_is_refused_across_connections() {
    timeout(LIMIT, async {
        let responder = Responder::new(config());
        let hello = challenge_bytes(&key(1), Audience::Known(key(2).peer_id()), NOW, [9; 16]);
        let (first, result) = raw_challenge(&responder, hello.clone()).await;
        assert!(matches!(first, HandshakeMessage::Response(_)));
        result.expect("first use accepted");
        // The same bytes again (a recording), on a new connection.
        assert_refused(
            raw_challenge(&responder, hello).await,
            RejectionReason::ReplayedNonce,
        );
        // A fresh nonce from the same peer is fine.
        let fresh = challenge_bytes(&key(1), Audience::Known(key(2).peer_id()), NOW, [10; 16]);
        let (answer, result) = raw_challenge(&responder, fresh).await;
        assert!(matches!(answer, HandshakeMessage::Response(_)));
        result.expect("fresh nonce accepted");
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_full_nonce_cache_lets_fresh_challenges_in_and_never_accepts_a_replay() {
    timeout(LIMIT, async {
        // Room for one nonce: the old cache then refused every handshake.
        let responder = Responder::with_nonce_capacity(config(), 1);
        let to = Audience::Known(key(2).peer_id());
        let first = challenge_bytes(&key(1), to, NOW - 1, [1; 16]);
        let (_, result) = raw_challenge(&responder, first.clone()).await;
        result.expect("accepted");
        // A fresh challenge from another peer still gets in: the second
        // stamped NOW - 1 is forgotten and becomes the floor...
        let (answer, result) =
            raw_challenge(&responder, challenge_bytes(&key(3), to, NOW, [2; 16])).await;
        assert!(matches!(answer, HandshakeMessage::Response(_)));
        result.expect("fresh challenge accepted while the cache is full");
        assert_eq!(responder.nonce_cache_state(), (1, Some(NOW - 1)));
        // ...so the replay of the forgotten nonce is refused, not accepted.
        assert_refused(
            raw_challenge(&responder, first).await,
            RejectionReason::ReplayedNonce,
        );
    })
    .await
    .expect("bounded");
}

/// A fake responder that reads the challenge and answers with `reply`.
async fn fake_responder(
    make_reply: impl FnOnce(Signed<Challenge>) -> Bytes + Send + 'static,
) -> Result<Connection<FramedTransport<DuplexStream, Bijou64>>, ConnectError> {
    let (a, b) = tokio::io::duplex(4096);
    let server = tokio::spawn(async move {
        let mut server = raw(b);
        let HandshakeMessage::Challenge(c) = recv_handshake(&mut server).await else {
            panic!("expected a challenge");
        };
        // The client may hang up mid-send (it refuses an oversize prefix).
        let _ = server.send(make_reply(c)).await;
        server // keep the stream open until the client is done
    });
    let result = Connection::connect(
        FramedTransport::new(a, Bijou64),
        &key(1),
        Audience::Known(key(2).peer_id()),
        &config(),
    )
    .await;
    drop(server.await.expect("join"));
    result
}

#[tokio::test]
async fn response_with_the_wrong_challenge_digest_is_refused() {
    timeout(LIMIT, async {
        let result = fake_responder(|_| {
            let wrong = Response::new(Digest::from_bytes([0xAB; 32]), NOW);
            HandshakeMessage::Response(Signed::seal(&key(2), &wrong).expect("seal"))
                .encode()
                .expect("encode")
        })
        .await;
        match result {
            Err(ConnectError::Handshake(HandshakeError::ChallengeDigest { found, .. })) => {
                assert_eq!(found, Digest::from_bytes([0xAB; 32]));
            }
            other => panic!("expected ChallengeDigest, got {other:?}"),
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn response_from_another_key_or_with_a_bad_signature_is_refused() {
    timeout(LIMIT, async {
        let result = fake_responder(|c| {
            let v = c.verify_strict().expect("honest challenge");
            let r = Response::for_challenge(v.payload(), NOW).expect("response");
            HandshakeMessage::Response(Signed::seal(&key(3), &r).expect("seal"))
                .encode()
                .expect("encode")
        })
        .await;
        assert!(matches!(
            result,
            Err(ConnectError::Handshake(
                HandshakeError::WrongResponder { .. }
            ))
        ));

        let result = fake_responder(|c| {
            let v = c.verify_strict().expect("honest challenge");
            let r = Response::for_challenge(v.payload(), NOW).expect("response");
            let mut b = HandshakeMessage::Response(Signed::seal(&key(2), &r).expect("seal"))
                .encode()
                .expect("encode")
                .to_vec();
            let at = b.len() - 20; // inside S, still below L
            b[at] ^= 0x10;
            b.into()
        })
        .await;
        assert!(matches!(
            result,
            Err(ConnectError::Handshake(HandshakeError::ResponseSignature(
                VerifyError::BadSignature { .. }
            )))
        ));

        // A second challenge instead of a response.
        let result =
            fake_responder(|c| HandshakeMessage::Challenge(c).encode().expect("encode")).await;
        assert!(matches!(
            result,
            Err(ConnectError::Handshake(HandshakeError::Unexpected {
                expected: "response",
                found: "challenge"
            }))
        ));
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn oversize_frame_before_the_handshake_is_a_framing_error() {
    timeout(LIMIT, async {
        // Toward the responder: a 300-byte frame instead of a challenge.
        let (a, b) = tokio::io::duplex(4096);
        let responder = Responder::new(config());
        let server = tokio::spawn(async move {
            Connection::accept(FramedTransport::new(b, Bijou64), &key(2), &responder).await
        });
        let mut client = raw(a);
        client
            .send(Bytes::from(vec![0u8; 300]))
            .await
            .expect("send");
        match server.await.expect("join") {
            Err(ConnectError::Handshake(HandshakeError::TooLarge { len, max })) => {
                assert_eq!((len, max), (300, HANDSHAKE_MAX_MESSAGE_LENGTH));
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }

        // Toward the initiator: a megabyte announced as the "response".
        // Only the prefix is sent; the client refuses it from the prefix.
        let result = fake_responder(|_| Bytes::from(vec![0u8; 1 << 20])).await;
        assert!(matches!(
            result,
            Err(ConnectError::Handshake(HandshakeError::TooLarge { .. }))
        ));
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn silent_peer_times_out_and_early_close_is_reported() {
    timeout(LIMIT, async {
        let mut c = config();
        c.timeout = Duration::from_millis(200);
        let (a, _keep_open) = tokio::io::duplex(4096);
        let result = Connection::connect(
            FramedTransport::new(a, Bijou64),
            &key(1),
            Audience::Known(key(2).peer_id()),
            &c,
        )
        .await;
        assert!(matches!(result, Err(ConnectError::Timeout { .. })));

        let (a, b) = tokio::io::duplex(4096);
        drop(a);
        let result = Connection::accept(
            FramedTransport::new(b, Bijou64),
            &key(2),
            &Responder::new(config()),
        )
        .await;
        assert!(matches!(
            result,
            Err(ConnectError::Closed {
                waiting_for: "challenge"
            })
        ));
    })
    .await
    .expect("bounded");
}

fn commit_message(signer: &SigningKey, blob: &[u8], n: u8) -> SyncMessage {
    let tree = SedimentreeId::new([7; 32]);
    let blob = Blob::new(blob.to_vec());
    let commit = LooseCommit::new(tree, CommitId::new([n; 32]), [], blob.meta());
    let item = SignedItem::new(Signed::seal(signer, &commit).expect("seal"), blob);
    SyncMessage::LooseCommit(BlobMessage {
        id: tree,
        sender_heads: RemoteHeads::default(),
        item,
    })
}

#[tokio::test]
async fn bad_items_are_reported_and_the_connection_stays_up() {
    timeout(LIMIT, async {
        let (a, b) = tokio::io::duplex(1 << 20);
        let responder = Responder::new(config());
        let server = tokio::spawn(async move {
            Connection::accept(FramedTransport::new(b, Bijou64), &key(2), &responder).await
        });
        let mut client = Connection::connect(
            FramedTransport::new(a, Bijou64),
            &key(1),
            Audience::Known(key(2).peer_id()),
            &config(),
        )
        .await
        .expect("handshake");
        let mut server = server.await.expect("join").expect("handshake");

        let honest = commit_message(&key(1), b"honest", 1);
        let honest_bytes = Message::from(honest.clone()).encode().expect("encode");
        // Forged signature: flip a bit in S of the signed commit.
        let mut forged = honest_bytes.to_vec();
        let sig_end = forged.len() - 1 - "honest".len(); // before BlobLen + blob
        forged[sig_end - 10] ^= 0x01;
        // Tampered blob: same length, different bytes.
        let mut tampered = honest_bytes.to_vec();
        let last = tampered.len() - 1;
        tampered[last] ^= 0xFF;
        // A large frame, allowed after the handshake.
        let big = Message::from(commit_message(&key(1), &vec![5u8; 64 * 1024], 2));

        let (forged, tampered) = (Bytes::from(forged), Bytes::from(tampered));
        client.send_bytes(forged.clone()).await.expect("send");
        client.send_bytes(tampered.clone()).await.expect("send");
        // A malformed handshake-schema message can only come from a peer
        // that bypasses its Connection: send it through the transport.
        client
            .get_mut()
            .send(Bytes::from_static(b"SUH\0\x07"))
            .await
            .expect("send");
        client.send(honest.clone()).await.expect("send");
        client.send(&big).await.expect("send");

        let r = server.recv().await.expect("frame").expect("open");
        assert_eq!(r.bytes, forged);
        assert!(matches!(
            r.result,
            Err(Rejected::Verify(VerifyItemError::Signature(_)))
        ));
        let r = server.recv().await.expect("frame").expect("open");
        assert_eq!(r.bytes, tampered);
        assert!(matches!(
            r.result,
            Err(Rejected::Verify(VerifyItemError::Blob(
                BlobMismatch::Digest { .. }
            )))
        ));
        let r = server.recv().await.expect("frame").expect("open");
        assert_eq!(&r.bytes[..], b"SUH\0\x07");
        assert!(matches!(r.result, Err(Rejected::Malformed(_))));
        let r = server.recv().await.expect("frame").expect("open");
        assert_eq!(r.bytes, honest_bytes);
        let v = r
            .result
            .expect("honest verifies")
            .into_sync()
            .expect("a sync message");
        assert_eq!(v.message, honest);
        assert_eq!(v.items.len(), 1);
        let r = server.recv().await.expect("frame").expect("open");
        assert_eq!(r.bytes, big.encode().expect("encode"));
        assert!(r.result.is_ok());

        // A handshake message after the handshake: our side refuses to
        // send one, and a peer that sends one anyway (straight through its
        // transport) is reported, not obeyed.
        let again = challenge_bytes(&key(1), Audience::Known(key(2).peer_id()), NOW, [1; 16]);
        assert!(matches!(
            client.send_bytes(again.clone()).await,
            Err(SendError::Refused(
                SendRefused::HandshakeAfterHandshake { .. }
            ))
        ));
        let hello = Message::Handshake(HandshakeMessage::Challenge(
            Signed::decode(again.clone()).expect("challenge"),
        ));
        assert!(matches!(
            client.send(hello).await,
            Err(SendError::Refused(SendRefused::HandshakeAfterHandshake {
                kind: "challenge"
            }))
        ));
        client.get_mut().send(again).await.expect("send");
        let r = server.recv().await.expect("frame").expect("open");
        assert!(matches!(r.result, Err(Rejected::UnexpectedHandshake(_))));

        // Clean close.
        client.close().await.expect("close");
        assert!(server.recv().await.expect("clean").is_none());
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn framing_error_after_the_handshake_closes_the_connection() {
    use tokio::io::AsyncWriteExt;
    timeout(LIMIT, async {
        // Below the framing layer: a hand-framed challenge (bijou64 prefix
        // 158 = 0x9E), then a bijou64 length prefix that overflows u64.
        let (mut client, b) = tokio::io::duplex(4096);
        let responder = Responder::new(config());
        let server = tokio::spawn(async move {
            Connection::accept(FramedTransport::new(b, Bijou64), &key(2), &responder).await
        });
        let hello = challenge_bytes(&key(1), Audience::Known(key(2).peer_id()), NOW, [3; 16]);
        let mut wire = vec![u8::try_from(hello.len()).expect("small")];
        wire.extend_from_slice(&hello);
        client.write_all(&wire).await.expect("write");
        let mut server = server.await.expect("join").expect("handshake");
        client.write_all(&[0xFF; 9]).await.expect("write");
        assert!(matches!(
            server.recv().await,
            Err(TransportError::Frame(FrameError::Overflow { .. }))
        ));
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn checks_run_in_order_and_refused_challenges_do_not_use_up_nonces() {
    timeout(LIMIT, async {
        let responder = Responder::new(config());
        let me = Audience::Known(key(2).peer_id());
        let other = Audience::Known(key(3).peer_id());
        let forge = |b: Bytes| {
            let mut v = b.to_vec();
            let at = v.len() - 10;
            v[at] ^= 1;
            Bytes::from(v)
        };
        // Bad signature + wrong audience + drift: the signature is reported.
        assert_refused(
            raw_challenge(
                &responder,
                forge(challenge_bytes(&key(1), other, 0, [1; 16])),
            )
            .await,
            RejectionReason::InvalidSignature,
        );
        // Wrong audience + drift: the audience is reported.
        assert_refused(
            raw_challenge(&responder, challenge_bytes(&key(1), other, 0, [1; 16])).await,
            RejectionReason::InvalidAudience,
        );
        // Drift with a nonce: reported as drift, and the nonce is not
        // remembered...
        assert_refused(
            raw_challenge(&responder, challenge_bytes(&key(1), me, 0, [1; 16])).await,
            RejectionReason::ClockDrift,
        );
        // ...so the same nonce in a good challenge is accepted once.
        let good = challenge_bytes(&key(1), me, NOW, [1; 16]);
        let (answer, result) = raw_challenge(&responder, good.clone()).await;
        assert!(matches!(answer, HandshakeMessage::Response(_)));
        result.expect("accepted");
        assert_refused(
            raw_challenge(&responder, good).await,
            RejectionReason::ReplayedNonce,
        );
    })
    .await
    .expect("bounded");
}
