//! The echo flow over loopback TCP with an honest peer and an adversary
//! talking to the same server at the same time. The adversary sends a
//! forged signature, a tampered blob and a replayed challenge; each is
//! rejected with its typed reason while the honest traffic (and the
//! adversary's own honest frames) keeps flowing, byte for byte.

use bijou_frame::codec::Wire;
use bijou_frame::net::handshake::ConnectError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bijou_frame::framing::prefix::Bijou64;
use bijou_frame::framing::FrameCodec;
use bijou_frame::net::handshake::ConnectConfig;
use bijou_frame::net::transport::FramedTransport;
use bijou_frame::net::Connection;
use bijou_frame::proto::handshake::{ChallengeError, HandshakeError};
use bijou_frame::proto::message::{
    Audience, HandshakeMessage, Message, RejectionReason, SedimentreeId, VerifyItemError,
};
use bijou_frame::proto::session::Rejected;
use bijou_frame::signing::{ed25519_dalek::SigningKey, BlobMismatch, Identity, VerifyError};
use bijou_test_support::echo::{connect, send_and_check, start_server, Event, Tee};
use bijou_test_support::messages::{chain_commit, frame};
use bytes::{Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_util::codec::{Decoder, Framed};

const HONEST_FRAMES: u64 = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adversary_is_rejected_with_typed_reasons_while_honest_traffic_continues() {
    tokio::time::timeout(Duration::from_secs(60), run())
        .await
        .expect("bounded in time");
}

async fn run() {
    let mut server = start_server(SigningKey::from_bytes(&[0xB0; 32])).await;
    let honest_key = SigningKey::from_bytes(&[0xA1; 32]);
    let evil_key = SigningKey::from_bytes(&[0xE1; 32]);
    let tree = SedimentreeId::new([0x42; 32]);

    // The honest peer connects through a wiretap: the adversary records
    // its challenge.
    let tap = Arc::new(Mutex::new(Vec::new()));
    let stream = TcpStream::connect(server.addr).await.expect("connect");
    let honest = Connection::connect(
        FramedTransport::new(
            Tee {
                inner: stream,
                copy: Arc::clone(&tap),
            },
            Bijou64,
        ),
        &honest_key,
        Audience::Known(server.peer),
        &ConnectConfig::default(),
    )
    .await
    .expect("honest handshake");
    let recorded_challenge = {
        let mut wire = BytesMut::from(&tap.lock().expect("lock")[..]);
        FrameCodec::new()
            .decode(&mut wire)
            .expect("well framed")
            .expect("the challenge")
    };
    assert!(matches!(
        Message::decode(recorded_challenge.clone()),
        Ok(Message::Handshake(HandshakeMessage::Challenge(_)))
    ));

    // Honest traffic runs in the background for the whole test.
    let honest_frames: Vec<Bytes> = (0..HONEST_FRAMES)
        .map(|n| {
            frame(&chain_commit(
                &honest_key,
                tree,
                n,
                200 + (n as usize % 7) * 100,
            ))
        })
        .collect();
    let honest_task = tokio::spawn(send_and_check(honest, honest_frames, 8));

    // 1. Replayed challenge on a new connection: refused as a replay.
    let stream = TcpStream::connect(server.addr).await.expect("connect");
    let mut replayer = Framed::new(stream, FrameCodec::new());
    replayer.send(recorded_challenge).await.expect("send");
    let answer = replayer.next().await.expect("an answer").expect("framed");
    match Message::decode(answer).expect("decodes") {
        Message::Handshake(HandshakeMessage::Rejection(r)) => {
            assert_eq!(r.reason, RejectionReason::ReplayedNonce);
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert!(
        replayer.next().await.is_none(),
        "server closes after refusing"
    );

    // 2. The adversary authenticates as itself, then sends bad frames
    // between good ones.
    let mut evil = connect(server.addr, &evil_key, server.peer).await;
    let good = frame(&chain_commit(&evil_key, tree, 1_000, 300));

    // Forged signature: the honest peer's key as issuer over the
    // adversary's signature.
    let mut forged = frame(&chain_commit(&evil_key, tree, 1_001, 300)).to_vec();
    let issuer_at = 9 + 32 + 12 + 4; // envelope, tree id, RemoteHeads(1 head = 12 + 32)..
    let issuer_at = issuer_at + 32; // .. the head, then the STC schema
    assert_eq!(&forged[issuer_at - 4..issuer_at], b"STC\0");
    forged[issuer_at..issuer_at + 32].copy_from_slice(honest_key.peer_id().as_bytes());

    // Tampered blob: a validly signed commit whose blob was changed in
    // flight (same length).
    let mut tampered = frame(&chain_commit(&evil_key, tree, 1_002, 300)).to_vec();
    let last = tampered.len() - 1;
    tampered[last] ^= 0x01;

    evil.send_bytes(good.clone()).await.expect("send");
    evil.send_bytes(forged.into()).await.expect("send");
    evil.send_bytes(tampered.into()).await.expect("send");
    evil.send_bytes(good.clone()).await.expect("send");
    // Only the good frames come back, byte for byte: the connection
    // stayed up.
    for _ in 0..2 {
        let echo = tokio::time::timeout(Duration::from_secs(20), evil.recv())
            .await
            .expect("echo in time")
            .expect("framing ok")
            .expect("still open");
        assert_eq!(echo.bytes, good);
        echo.result.expect("verifies");
    }
    drop(evil);

    // The honest peer got every frame back intact.
    let intact = honest_task.await.expect("honest peer");
    assert_eq!(intact, HONEST_FRAMES);

    // What the server reported, by type.
    let mut replay_refused = 0;
    let mut forged_rejected = 0;
    let mut tampered_rejected = 0;
    let mut closed = Vec::new();
    while closed.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(20), server.events.recv())
            .await
            .expect("event in time")
            .expect("server alive");
        match event {
            Event::HandshakeFailed(ConnectError::Handshake(HandshakeError::Refused(
                ChallengeError::ReplayedNonce { .. },
            ))) => replay_refused += 1,
            Event::Rejected(peer, Rejected::Verify(VerifyItemError::Signature(e))) => {
                assert_eq!(peer, evil_key.peer_id());
                assert_eq!(
                    e,
                    VerifyError::BadSignature {
                        issuer: honest_key.peer_id()
                    }
                );
                forged_rejected += 1;
            }
            Event::Rejected(peer, Rejected::Verify(VerifyItemError::Blob(e))) => {
                assert_eq!(peer, evil_key.peer_id());
                assert!(matches!(e, BlobMismatch::Digest { .. }));
                tampered_rejected += 1;
            }
            Event::Closed { peer, echoed } => closed.push((peer, echoed)),
            other => panic!("unexpected server event {other:?}"),
        }
    }
    assert_eq!(
        (replay_refused, forged_rejected, tampered_rejected),
        (1, 1, 1)
    );
    closed.sort_by_key(|(_, n)| *n);
    assert_eq!(
        closed,
        vec![
            (evil_key.peer_id(), 2),
            (honest_key.peer_id(), HONEST_FRAMES)
        ]
    );
}
