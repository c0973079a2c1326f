//! Handshake and connection tests over in-memory duplex streams: what the
//! shell adds to the handshake's rules (an honest handshake raising the
//! limit, a refusal carried to both ends, the pre-handshake frame limit,
//! the timeout and an early close) and the connection's
//! report-and-continue handling of bad signed items. The rules themselves
//! (every responder and initiator check, the drift bound, replays, a full
//! replay cache, the order of the checks) are tested without a runtime in
//! `proto/tests/proto/handshake_sans_io.rs`.

use bijou_net::handshake::ConnectError;
use bijou_proto::session::SendRefused;
use std::time::Duration;

use bijou_codec::Wire;
use bijou_framing::prefix::Bijou64;
use bijou_framing::{FrameCodec, FrameError};
use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::TransportError;
use bijou_net::transport::{FramedTransport, Transport};
use bijou_net::{Connection, SendError};
use bijou_proto::handshake::{
    ChallengeError, HandshakeConfig, HandshakeError, Responder, HANDSHAKE_MAX_MESSAGE_LENGTH,
};
use bijou_proto::message::{
    Audience, BlobMessage, Challenge, CommitId, HandshakeMessage, LooseCommit, Message,
    RejectionReason, RemoteHeads, SedimentreeId, SignedItem, SyncMessage, VerifyItemError,
};
use bijou_proto::session::Rejected;
use bijou_proto::time::Clock;
use bijou_signing::Blob;
use bijou_signing::{ed25519_dalek::SigningKey, BlobMismatch, Identity, Signed};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio::io::DuplexStream;
use tokio::time::timeout;
use tokio_util::codec::Framed;

const LIMIT: Duration = Duration::from_secs(10);
const NOW: u64 = 1_800_000_000;

fn config() -> ConnectConfig {
    let mut c = ConnectConfig::default();
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

#[tokio::test]
async fn honest_handshake_authenticates_both_sides_and_raises_the_limit() {
    timeout(LIMIT, async {
        let (a, b) = tokio::io::duplex(4096);
        let responder = Responder::new(HandshakeConfig::default());
        let server = tokio::spawn(async move {
            Connection::accept(
                FramedTransport::new(b, Bijou64),
                &key(2),
                &responder,
                &config(),
            )
            .await
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
            client
                .authenticated()
                .expect("authenticated")
                .challenge_digest(),
            server
                .authenticated()
                .expect("authenticated")
                .challenge_digest()
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
async fn wrong_audience_is_refused_and_the_initiator_learns_why() {
    timeout(LIMIT, async {
        let (a, b) = tokio::io::duplex(4096);
        let responder = Responder::new(HandshakeConfig::default());
        let server = tokio::spawn(async move {
            Connection::accept(
                FramedTransport::new(b, Bijou64),
                &key(2),
                &responder,
                &config(),
            )
            .await
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
        // What a program asks to say which of its settings to change.
        assert!(client
            .as_ref()
            .is_err_and(ConnectError::is_audience_refused));
        let refused_here = server.await.expect("join");
        assert!(matches!(
            refused_here,
            Err(ConnectError::Handshake(HandshakeError::Refused(
                ChallengeError::InvalidAudience { .. }
            )))
        ));
        // The responder refused; it was not refused.
        assert!(!refused_here.is_err_and(|e| e.is_audience_refused()));
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
async fn oversize_frame_before_the_handshake_is_a_framing_error() {
    timeout(LIMIT, async {
        // Toward the responder: a 300-byte frame instead of a challenge.
        let (a, b) = tokio::io::duplex(4096);
        let responder = Responder::new(HandshakeConfig::default());
        let server = tokio::spawn(async move {
            Connection::accept(
                FramedTransport::new(b, Bijou64),
                &key(2),
                &responder,
                &config(),
            )
            .await
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
            &Responder::new(HandshakeConfig::default()),
            &config(),
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
        let responder = Responder::new(HandshakeConfig::default());
        let server = tokio::spawn(async move {
            Connection::accept(
                FramedTransport::new(b, Bijou64),
                &key(2),
                &responder,
                &config(),
            )
            .await
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
        let responder = Responder::new(HandshakeConfig::default());
        let server = tokio::spawn(async move {
            Connection::accept(
                FramedTransport::new(b, Bijou64),
                &key(2),
                &responder,
                &config(),
            )
            .await
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

/// The client's first message (its challenge) under `seed`, read off the
/// wire by a raw peer that answers nothing.
async fn first_challenge(seed: Option<[u8; 32]>) -> Bytes {
    let (a, b) = tokio::io::duplex(4096);
    let mut config = config();
    config.seed = seed;
    config.timeout = Duration::from_millis(200);
    let client = tokio::spawn(async move {
        Connection::connect(
            FramedTransport::new(a, Bijou64),
            &key(1),
            Audience::Known(key(2).peer_id()),
            &config,
        )
        .await
        .map(|_| ())
    });
    let mut raw = raw(b);
    let frame = raw.next().await.expect("a frame").expect("well framed");
    let result = client.await.expect("join");
    assert!(
        matches!(
            &result,
            Err(ConnectError::Timeout {
                waiting_for: "response",
                ..
            })
        ),
        "{result:?}"
    );
    frame
}

#[tokio::test]
async fn a_seeded_connection_sends_the_same_bytes_and_an_unseeded_one_does_not() {
    timeout(LIMIT, async {
        let seeded = first_challenge(Some([7; 32])).await;
        assert_eq!(seeded, first_challenge(Some([7; 32])).await);
        assert_ne!(seeded, first_challenge(Some([8; 32])).await);
        // Unseeded: 32 bytes from the operating system each time.
        assert_ne!(first_challenge(None).await, first_challenge(None).await);
    })
    .await
    .expect("in time");
}
