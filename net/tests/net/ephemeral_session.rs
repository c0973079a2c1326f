//! Ephemeral messages on a `Connection`: every bad input of the issue's
//! list gets a typed error and the connection stays up, and a peer that
//! never reads the session's answers is no longer read. The rules behind
//! them (cheap checks before verification, nonces recorded only after it,
//! subscriptions and the topic cap) are tested without a runtime in
//! `proto/tests/proto/ephemeral_rules.rs`.

use std::time::Duration;

use bijou_codec::ReadError;
use bijou_framing::prefix::Bijou64;
use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::FramedTransport;
use bijou_net::Connection;
use bijou_proto::ephemeral::{EphemeralConfig, EphemeralRejected};
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{
    Audience, EphemeralPayload, MessageError, SignedEphemeral, Topic, Topics,
};
use bijou_proto::replay_table::{ReplayTable, ReplayTableConfig};
use bijou_proto::session::{Delivered, Received, Rejected, SessionConfig};
use bijou_proto::time::Clock;
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::Identity;
use bytes::Bytes;
use futures::StreamExt;
use tokio::io::DuplexStream;
use tokio::time::timeout;

const NOW: u64 = 1_700_000_000;
const REPLY: Duration = Duration::from_secs(5);

type Conn = Connection<FramedTransport<DuplexStream, Bijou64>>;

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

fn fixed_clock_config() -> EphemeralConfig {
    EphemeralConfig::default()
}

/// Both sides read a clock fixed at `NOW` (wall time; monotonic time is
/// the system's).
fn handshake_config() -> ConnectConfig {
    let mut config = ConnectConfig::default();
    config.clock = Clock::fixed(NOW);
    config
}

/// A connected pair over an in-memory pipe: (a, b), b's ephemeral clock at
/// `NOW`.
async fn pair() -> (Conn, Conn) {
    let (mut a, mut b) = pair_sharing(None).await;
    a.set_ephemeral_config(fixed_clock_config());
    b.set_ephemeral_config(fixed_clock_config());
    (a, b)
}

async fn next(conn: &mut Conn) -> Received {
    timeout(REPLY, conn.next())
        .await
        .expect("in time")
        .expect("open")
        .expect("transport")
}

fn sealed(signer: u8, topic: Topic, nonce: u64, timestamp: u64, payload: Vec<u8>) -> Bytes {
    SignedEphemeral::seal(
        &key(signer),
        &EphemeralPayload::new(topic, nonce, timestamp, payload),
    )
    .expect("seal")
    .to_bytes()
}

fn control(tag: u8, count: u16, topics: &[Topic]) -> Bytes {
    let topics: Vec<[u8; 32]> = topics.iter().map(|topic| *topic.as_bytes()).collect();
    bijou_test_support::messages::ephemeral_control_wire(tag, count, &topics).into()
}

fn with_bad_signature(bytes: &Bytes) -> Bytes {
    let mut bad = bytes.to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 0x01;
    bad.into()
}

/// What a case expects of the result.
type Expect = Box<dyn Fn(&Result<Delivered, Rejected>) -> bool>;

/// Sends raw bytes from `a` and returns what `b` made of them.
async fn send_raw(a: &mut Conn, b: &mut Conn, bytes: Bytes) -> Result<Delivered, Rejected> {
    a.send_bytes(bytes.clone()).await.expect("send");
    let received = next(b).await;
    assert_eq!(received.bytes, bytes, "the exact bytes are reported");
    received.result
}

/// The bad-input list, one after the other on one connection:
/// each is a typed error, and a good message still gets through at the end.
#[tokio::test]
async fn every_bad_input_is_a_typed_error_and_the_connection_stays_up() {
    let (mut a, mut b) = pair().await;
    let topic = Topic::new([1; 32]);
    let unsubscribed = Topic::new([2; 32]);
    b.subscribe(Topics::one(topic)).await.expect("subscribe");
    let Ok(Delivered::Subscribed(outcome)) = next(&mut a).await.result else {
        panic!("a sees the Subscribe");
    };
    assert_eq!(outcome.accepted, vec![topic]);
    assert!(a
        .ephemeral()
        .expect("ephemeral state")
        .remote_is_subscribed(&topic));

    let max = 64 * 1024;
    let cases: Vec<(&str, Bytes, Expect)> = vec![
        (
            "oversize payload",
            sealed(1, topic, 1, NOW, vec![0; max + 1]),
            Box::new(move |r| {
                matches!(r, Err(Rejected::Ephemeral(EphemeralRejected::TooLarge { len, max: m }))
                    if *len == (max + 1) as u64 && *m == max)
            }),
        ),
        (
            "payload of exactly the maximum",
            sealed(1, topic, 2, NOW, vec![0; max]),
            Box::new(|r| matches!(r, Ok(Delivered::Ephemeral(_)))),
        ),
        (
            "stale timestamp",
            sealed(1, topic, 3, NOW - 31, vec![1]),
            Box::new(|r| {
                matches!(r, Err(Rejected::Ephemeral(EphemeralRejected::Stale { timestamp, now: NOW, max_age_secs: 30 }))
                    if *timestamp == NOW - 31)
            }),
        ),
        (
            "oldest accepted timestamp",
            sealed(1, topic, 4, NOW - 30, vec![1]),
            Box::new(|r| matches!(r, Ok(Delivered::Ephemeral(_)))),
        ),
        (
            "future timestamp",
            sealed(1, topic, 5, NOW + 31, vec![1]),
            Box::new(|r| {
                matches!(r, Err(Rejected::Ephemeral(EphemeralRejected::Future { timestamp, now: NOW, max_age_secs: 30 }))
                    if *timestamp == NOW + 31)
            }),
        ),
        (
            "furthest accepted future timestamp",
            sealed(1, topic, 6, NOW + 30, vec![1]),
            Box::new(|r| matches!(r, Ok(Delivered::Ephemeral(_)))),
        ),
        (
            "duplicate nonce (the same message again)",
            sealed(1, topic, 6, NOW + 30, vec![1]),
            Box::new(|r| {
                matches!(r, Err(Rejected::Ephemeral(EphemeralRejected::Duplicate { nonce: 6, issuer }))
                    if *issuer == key(1).peer_id())
            }),
        ),
        (
            "duplicate nonce (same issuer, other payload and time)",
            sealed(1, topic, 4, NOW, vec![9, 9]),
            Box::new(|r| {
                matches!(
                    r,
                    Err(Rejected::Ephemeral(EphemeralRejected::Duplicate {
                        nonce: 4,
                        ..
                    }))
                )
            }),
        ),
        (
            "the same nonce from another issuer is fresh",
            sealed(2, topic, 4, NOW, vec![1]),
            Box::new(|r| matches!(r, Ok(Delivered::Ephemeral(_)))),
        ),
        (
            "unknown control tag",
            control(0x04, 1, &[topic]),
            Box::new(|r| {
                matches!(
                    r,
                    Err(Rejected::Malformed(MessageError::Read(
                        ReadError::UnknownValue {
                            field: "ephemeral tag",
                            offset: 4,
                            value: 4
                        }
                    )))
                )
            }),
        ),
        (
            "count 0",
            control(0x01, 0, &[]),
            Box::new(|r| {
                matches!(
                    r,
                    Err(Rejected::Malformed(MessageError::EmptyList {
                        field: "topics",
                        offset: 5
                    }))
                )
            }),
        ),
        (
            "trailing bytes after the signature",
            {
                let mut wire = sealed(1, topic, 7, NOW, vec![1]).to_vec();
                wire.push(0);
                wire.into()
            },
            Box::new(|r| {
                matches!(
                    r,
                    Err(Rejected::Malformed(MessageError::Read(
                        ReadError::TrailingBytes { count: 1, .. }
                    )))
                )
            }),
        ),
        (
            "trailing bytes after the last topic",
            {
                let mut wire = control(0x02, 1, &[topic]).to_vec();
                wire.extend_from_slice(&[0; 3]);
                wire.into()
            },
            Box::new(|r| {
                matches!(
                    r,
                    Err(Rejected::Malformed(MessageError::Read(
                        ReadError::TrailingBytes {
                            offset: 39,
                            count: 3
                        }
                    )))
                )
            }),
        ),
        (
            "a topic we did not subscribe to",
            sealed(1, unsubscribed, 8, NOW, vec![1]),
            Box::new(move |r| {
                matches!(r, Err(Rejected::Ephemeral(EphemeralRejected::NotSubscribed { topic: t }))
                    if *t == unsubscribed)
            }),
        ),
        (
            "a bad signature",
            with_bad_signature(&sealed(1, topic, 9, NOW, vec![1])),
            Box::new(|r| matches!(r, Err(Rejected::Ephemeral(EphemeralRejected::Signature(_))))),
        ),
    ];
    for (name, bytes, expected) in cases {
        let result = send_raw(&mut a, &mut b, bytes).await;
        assert!(expected(&result), "{name}: {result:?}");
        let _ = result.map_err(|e| e.to_string()); // every error displays
    }

    // Still up: a good message, published through the API, is delivered
    // verified, byte for byte.
    let publisher = key(3);
    let sent = a
        .publish(&publisher, topic, &b"still up"[..])
        .await
        .expect("publish");
    let received = next(&mut b).await;
    assert_eq!(received.bytes, sent.to_bytes());
    let verified = received
        .result
        .expect("delivered")
        .into_ephemeral()
        .expect("ephemeral");
    assert_eq!(verified.payload().payload().as_ref(), b"still up");
    assert_eq!(verified.peer_id(), publisher.peer_id());
}

/// A sink that never takes anything: a peer that stopped reading.
struct Stuck;

impl futures::Sink<Bytes> for Stuck {
    type Error = std::io::Error;

    fn poll_ready(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Pending
    }

    fn start_send(self: std::pin::Pin<&mut Self>, _: Bytes) -> Result<(), Self::Error> {
        Ok(())
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Pending
    }

    fn poll_close(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Pending
    }
}

/// The session answers topics over the cap itself, and a peer that sends
/// Subscribes over the cap without reading our answers can make us hold
/// one answer: the connection stops reading until it is written.
#[test]
fn a_peer_that_never_reads_our_answers_is_no_longer_read() {
    use bijou_net::transport::LengthChecked;
    use bijou_proto::handshake::Initiator;
    use bijou_proto::time::Now;
    use futures::FutureExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let (alice, bob) = (key(1), key(2));
    let initiator = Initiator::new(
        &alice,
        Audience::Known(bob.peer_id()),
        Now::from_secs(NOW),
        [3; 16],
    )
    .expect("challenge");
    let answer = Responder::new(HandshakeConfig::default()).answer(
        &bob,
        initiator.challenge().clone(),
        Now::from_secs(NOW),
    );
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, std::io::Error>>();
    let taken = Arc::new(AtomicUsize::new(0));
    let counted = rx.inspect({
        let taken = taken.clone();
        move |_| {
            taken.fetch_add(1, Ordering::Relaxed);
        }
    });
    let mut conn = Connection::established(
        LengthChecked::new(counted, Stuck),
        bob.peer_id(),
        answer.outcome.expect("accepted"),
        SessionConfig::new([2; 32]),
    );
    let mut limits = EphemeralConfig::default();
    limits.max_remote_topics = 1;
    conn.set_ephemeral_config(limits);
    let topics: Vec<Topic> = (1..=3u8).map(|i| Topic::new([i; 32])).collect();
    for _ in 0..100 {
        tx.unbounded_send(Ok(control(0x01, 3, &topics)))
            .expect("queued");
    }
    let first = conn.next().now_or_never().expect("delivered at once");
    assert!(matches!(
        first.expect("one").expect("transport").result,
        Ok(Delivered::Subscribed(outcome)) if outcome.rejected.as_ref().map(|r| r.len()) == Some(2)
    ));
    for _ in 0..10 {
        assert!(conn.next().now_or_never().is_none(), "waits for the write");
    }
    assert_eq!(taken.load(Ordering::Relaxed), 1, "nothing more was read");
    assert!(conn.has_unsent(), "the one answer, held");
}

/// A pair over an in-memory pipe whose server keeps its peers' ephemeral
/// windows in `table` (`None`: each connection its own).
async fn pair_sharing(table: Option<&ReplayTable>) -> (Conn, Conn) {
    let (x, y) = tokio::io::duplex(1 << 20);
    let responder = Responder::new(HandshakeConfig::default());
    let b_key = key(0xB0);
    let b_id = b_key.peer_id();
    let mut accept = handshake_config();
    accept.replay_table = table.cloned();
    let server = tokio::spawn(async move {
        Connection::accept(
            FramedTransport::new(y, Bijou64),
            &b_key,
            &responder,
            &accept,
        )
        .await
        .expect("accept")
    });
    let a: Conn = Connection::connect(
        FramedTransport::new(x, Bijou64),
        &key(0xA0),
        Audience::Known(b_id),
        &handshake_config(),
    )
    .await
    .expect("connect");
    (a, server.await.expect("task"))
}

#[tokio::test]
async fn a_replay_on_the_peers_next_connection_is_refused_with_a_shared_table() {
    let table = ReplayTable::new(ReplayTableConfig::default(), [3; 32]);
    let topic = Topic::new([4; 32]);
    let message = sealed(0xA0, topic, 77, NOW, b"once".to_vec());
    let (mut a, mut b) = pair_sharing(Some(&table)).await;
    b.subscribe(Topics::one(topic)).await.expect("subscribe");
    let first = send_raw(&mut a, &mut b, message.clone()).await;
    assert!(matches!(first, Ok(Delivered::Ephemeral(_))), "{first:?}");
    drop((a, b));
    // The same peer, a new connection, the same bytes: refused.
    let (mut a, mut b) = pair_sharing(Some(&table)).await;
    b.subscribe(Topics::one(topic)).await.expect("subscribe");
    let again = send_raw(&mut a, &mut b, message).await;
    assert!(
        matches!(
            again,
            Err(Rejected::Ephemeral(EphemeralRejected::Duplicate {
                nonce: 77,
                ..
            }))
        ),
        "{again:?}"
    );
    // Without the table, the second connection would have delivered it:
    // a fresh message still is.
    let fresh = sealed(0xA0, topic, 78, NOW, b"new".to_vec());
    let fresh = send_raw(&mut a, &mut b, fresh).await;
    assert!(matches!(fresh, Ok(Delivered::Ephemeral(_))), "{fresh:?}");
}
