//! The long-poll server, session by session, over in-memory pipes on
//! paused tokio time: the handshake's answers (200 with an id, 401 with a
//! rejection or a text, 503 at each bound), messages both ways with their
//! sequence numbers, acknowledgements and redelivery, one `/lp/recv` at a
//! time, the poll and idle timeouts, both queues' bounds, disconnecting
//! and closing. Each test is bounded by [`LIMIT`] of (virtual) time.
//!
//! Malformed requests over real TCP are `longpoll_bad_input.rs`; their
//! client against this server is `longpoll_interop_server.rs`.

use crate::lp_http;

use std::future::Future;
use std::time::Duration;

use bijou_codec::Wire;
use bijou_net::handshake::{respond, ConnectConfig};
use bijou_net::transport::longpoll::{
    IncomingSessions, LongPollError, LongPollServer, LongPollSession, ServerConfig,
};
use bijou_net::transport::{Transport, TransportError};
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{Audience, HandshakeMessage, RejectionReason};
use bijou_proto::time::Clock;
use bijou_signing::{ed25519_dalek::SigningKey, Identity};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use lp_http::{next_session, pipe, Http};
use tokio::io::DuplexStream;
use tokio::time::Instant;

/// Bound on each test, in virtual time.
const LIMIT: Duration = Duration::from_secs(600);
const NOW: u64 = 1_800_000_000;
const CLIENT: u8 = 1;
const SERVER: u8 = 2;

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

fn connect_config() -> ConnectConfig {
    let mut c = ConnectConfig::default();
    c.clock = Clock::fixed(NOW);
    c
}

/// The tests' settings: short timeouts, and a header read timeout long
/// enough for a pipe to stay open while virtual time runs.
fn config() -> ServerConfig {
    let mut c = ServerConfig::default();
    c.poll_timeout = Duration::from_secs(5);
    c.idle_timeout = Duration::from_secs(20);
    c.header_read_timeout = Duration::from_secs(3600);
    c
}

async fn bounded<F: Future>(test: F) -> F::Output {
    tokio::time::timeout(LIMIT, test).await.expect("in time")
}

/// A server with `config` and the client's first pipe to it.
fn server(config: ServerConfig) -> (LongPollServer, IncomingSessions, Http<DuplexStream>) {
    let (server, sessions) = LongPollServer::new(config);
    let http = pipe(&server);
    (server, sessions, http)
}

/// A handshake on `http`, answered by `respond` on the server side; the
/// session id and the server side's session.
async fn open(
    http: &mut Http<DuplexStream>,
    sessions: &mut IncomingSessions,
) -> (String, LongPollSession) {
    let me = key(CLIENT);
    let ((sid, peer), session) = tokio::join!(
        http.handshake(&me, Audience::Known(key(SERVER).peer_id()), NOW),
        async {
            let mut session = next_session(sessions, LIMIT).await;
            let authenticated = respond(
                &mut session,
                &key(SERVER),
                &Responder::new(HandshakeConfig::default()),
                &connect_config(),
            )
            .await
            .expect("our responder accepts");
            assert_eq!(authenticated.peer(), key(CLIENT).peer_id());
            session
        }
    );
    assert_eq!(peer.peer(), key(SERVER).peer_id());
    (sid, session)
}

/// The message the server side's stream yields next.
async fn next_inbound(session: &mut LongPollSession) -> Bytes {
    session.next().await.expect("a message").expect("no error")
}

fn assert_message(reply: &lp_http::Reply, seq: u64, body: &[u8]) {
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("x-bijou-seq"), Some(seq.to_string().as_str()));
    assert_eq!(
        reply.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(reply.body, body);
}

#[tokio::test(start_paused = true)]
async fn a_handshake_opens_a_session_and_messages_flow_both_ways() {
    bounded(async {
        let (server, mut sessions, mut http) = server(config());
        let session = {
            let initiator = bijou_proto::handshake::Initiator::new(
                &key(CLIENT),
                Audience::Known(key(SERVER).peer_id()),
                bijou_proto::time::Now::from_secs(NOW),
                [9; 16],
            )
            .expect("sign");
            let (reply, mut session) = tokio::join!(
                http.post("/lp/handshake", &[], initiator.challenge()),
                async {
                    let mut session = next_session(&mut sessions, LIMIT).await;
                    respond(
                        &mut session,
                        &key(SERVER),
                        &Responder::new(HandshakeConfig::default()),
                        &connect_config(),
                    )
                    .await
                    .expect("accepted");
                    session
                }
            );
            let reply = reply.expect("answered");
            assert_eq!(reply.status, 200);
            let sid = reply.header("x-session-id").expect("an id").to_owned();
            assert_eq!(sid.len(), 32);
            assert!(sid
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            assert_eq!(
                reply.header("content-type"),
                Some("application/octet-stream")
            );
            assert!(matches!(
                HandshakeMessage::decode(Bytes::from(reply.body.clone())),
                Ok(HandshakeMessage::Response(_))
            ));
            initiator
                .receive(Bytes::from(reply.body))
                .expect("verifies");
            assert_eq!(server.session_count(), 1);

            session
                .send(Bytes::from_static(b"to the client"))
                .await
                .expect("queued");
            assert_message(
                &http.recv(&sid, None).await.expect("recv"),
                1,
                b"to the client",
            );
            let sent = http.send(&sid, b"to the server").await.expect("send");
            assert_eq!(sent.status, 204);
            assert!(sent.body.is_empty());
            assert_eq!(next_inbound(&mut session).await, &b"to the server"[..]);
            session
        };
        assert_eq!(
            session.max_message_length(),
            connect_config().max_message_length
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_refused_challenge_is_401_with_the_rejection_bytes() {
    bounded(async {
        let (server, mut sessions, mut http) = server(config());
        let initiator = bijou_proto::handshake::Initiator::new(
            &key(CLIENT),
            Audience::Known(key(77).peer_id()),
            bijou_proto::time::Now::from_secs(NOW),
            [1; 16],
        )
        .expect("sign");
        let (reply, refused) = tokio::join!(
            http.post("/lp/handshake", &[], initiator.challenge()),
            async {
                let mut session = next_session(&mut sessions, LIMIT).await;
                respond(
                    &mut session,
                    &key(SERVER),
                    &Responder::new(HandshakeConfig::default()),
                    &connect_config(),
                )
                .await
            }
        );
        let reply = reply.expect("answered");
        assert_eq!(reply.status, 401);
        assert_eq!(reply.header("x-session-id"), None);
        assert_eq!(
            reply.header("content-type"),
            Some("application/octet-stream")
        );
        match HandshakeMessage::decode(Bytes::from(reply.body)) {
            Ok(HandshakeMessage::Rejection(r)) => {
                assert_eq!(r.reason, RejectionReason::InvalidAudience);
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
        assert!(refused.is_err());
        assert_eq!(server.session_count(), 0);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_session_dropped_without_an_answer_is_401_with_a_text() {
    bounded(async {
        let (server, mut sessions, mut http) = server(config());
        let initiator = bijou_proto::handshake::Initiator::new(
            &key(CLIENT),
            Audience::Known(key(SERVER).peer_id()),
            bijou_proto::time::Now::from_secs(NOW),
            [2; 16],
        )
        .expect("sign");
        let (reply, ()) = tokio::join!(
            http.post("/lp/handshake", &[], initiator.challenge()),
            async {
                drop(next_session(&mut sessions, LIMIT).await);
            }
        );
        let reply = reply.expect("answered");
        assert_eq!(reply.status, 401);
        assert!(reply
            .header("content-type")
            .is_some_and(|v| v.starts_with("text/plain")));
        assert!(
            reply.text().contains("without answering"),
            "{}",
            reply.text()
        );
        assert_eq!(server.session_count(), 0);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_handshake_nobody_answers_is_503_after_the_handshake_timeout() {
    bounded(async {
        let mut c = config();
        c.handshake_timeout = Duration::from_secs(3);
        let (server, mut sessions, mut http) = server(c);
        let initiator = bijou_proto::handshake::Initiator::new(
            &key(CLIENT),
            Audience::Known(key(SERVER).peer_id()),
            bijou_proto::time::Now::from_secs(NOW),
            [3; 16],
        )
        .expect("sign");
        let start = Instant::now();
        let reply = http
            .post("/lp/handshake", &[], initiator.challenge())
            .await
            .expect("answered");
        assert_eq!(reply.status, 503, "{}", reply.text());
        assert!(reply.text().contains("within 3s"), "{}", reply.text());
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        assert_eq!(server.session_count(), 0);
        // Taken too late: already closed, its sink refuses.
        let mut late = next_session(&mut sessions, LIMIT).await;
        assert!(late.is_closed());
        assert!(late.send(Bytes::from_static(b"x")).await.is_err());
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn handshakes_beyond_max_sessions_are_503_until_one_ends() {
    bounded(async {
        let mut c = config();
        c.max_sessions = 2;
        let (server, mut sessions, mut http) = server(c);
        let (first, _a) = open(&mut http, &mut sessions).await;
        let (_second, _b) = open(&mut http, &mut sessions).await;
        assert_eq!(server.session_count(), 2);
        let initiator = bijou_proto::handshake::Initiator::new(
            &key(CLIENT),
            Audience::Known(key(SERVER).peer_id()),
            bijou_proto::time::Now::from_secs(NOW),
            [4; 16],
        )
        .expect("sign");
        let reply = http
            .post("/lp/handshake", &[], initiator.challenge())
            .await
            .expect("answered");
        assert_eq!(reply.status, 503);
        assert!(reply.text().contains("2 sessions"), "{}", reply.text());
        let bye = http
            .post("/lp/disconnect", &[("x-session-id", &first)], b"")
            .await
            .expect("disconnect");
        assert_eq!(bye.status, 204);
        assert_eq!(server.session_count(), 1);
        let (_third, _c) = open(&mut http, &mut sessions).await;
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_full_accept_queue_is_503() {
    bounded(async {
        let mut c = config();
        c.accept_queue = 1;
        let (server, _sessions, mut http) = server(c);
        let challenge = |n| {
            bijou_proto::handshake::Initiator::new(
                &key(CLIENT),
                Audience::Known(key(SERVER).peer_id()),
                bijou_proto::time::Now::from_secs(NOW),
                [n; 16],
            )
            .expect("sign")
            .challenge()
            .clone()
        };
        // The first waits in the queue (nobody accepts).
        let mut waiting = pipe(&server);
        let first = challenge(5);
        let held = tokio::spawn(async move { waiting.post("/lp/handshake", &[], &first).await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let reply = http
            .post("/lp/handshake", &[], &challenge(6))
            .await
            .expect("answered");
        assert_eq!(reply.status, 503);
        assert!(
            reply.text().contains("handshakes waiting"),
            "{}",
            reply.text()
        );
        let first = held.await.expect("task").expect("answered");
        assert_eq!(first.status, 503, "the handshake timeout: {}", first.text());
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn without_acknowledgements_each_message_is_taken_once_in_order() {
    bounded(async {
        let (_server, mut sessions, mut http) = server(config());
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        for m in [&b"one"[..], b"two", b"three"] {
            session
                .feed(Bytes::copy_from_slice(m))
                .await
                .expect("queued");
        }
        session.flush().await.expect("flushed at once");
        assert_eq!(session.queued_for_client(), (3, 11));
        for (seq, m) in [(1, &b"one"[..]), (2, b"two"), (3, b"three")] {
            assert_message(&http.recv(&sid, None).await.expect("recv"), seq, m);
        }
        assert_eq!(session.queued_for_client(), (0, 0));
        let start = Instant::now();
        let nothing = http.recv(&sid, None).await.expect("recv");
        assert_eq!(nothing.status, 204);
        assert!(nothing.body.is_empty());
        assert_eq!(start.elapsed(), config().poll_timeout);
        // A message arriving during a held recv answers it at once.
        let (reply, ()) = tokio::join!(http.recv(&sid, None), async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            session
                .send(Bytes::from_static(b"four"))
                .await
                .expect("queued");
        });
        assert_message(&reply.expect("recv"), 4, b"four");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_recv_that_acknowledges_less_gets_the_same_message_again() {
    bounded(async {
        let (_server, mut sessions, mut http) = server(config());
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        session
            .feed(Bytes::from_static(b"A"))
            .await
            .expect("queued");
        session
            .feed(Bytes::from_static(b"BB"))
            .await
            .expect("queued");
        session.flush().await.expect("flushed");

        assert_message(&http.recv(&sid, Some(0)).await.expect("recv"), 1, b"A");
        // That answer was "lost": the client acknowledges nothing yet.
        assert_message(&http.recv(&sid, Some(0)).await.expect("recv"), 1, b"A");
        assert_eq!(
            session.queued_for_client(),
            (2, 3),
            "kept until acknowledged"
        );
        assert_message(&http.recv(&sid, Some(1)).await.expect("recv"), 2, b"BB");
        assert_eq!(session.queued_for_client(), (1, 2));
        let start = Instant::now();
        let nothing = http.recv(&sid, Some(2)).await.expect("recv");
        assert_eq!(nothing.status, 204);
        assert_eq!(start.elapsed(), config().poll_timeout);
        assert_eq!(session.queued_for_client(), (0, 0), "acknowledged, dropped");

        // Acknowledging more than was sent, or not a number: 400.
        let beyond = http.recv(&sid, Some(3)).await.expect("recv");
        assert_eq!(beyond.status, 400);
        assert!(beyond.text().contains("up to 2"), "{}", beyond.text());
        for bad in ["-1", "1.0", "x", "18446744073709551616"] {
            let reply = http
                .post(
                    "/lp/recv",
                    &[("x-session-id", &sid), ("x-bijou-ack", bad)],
                    b"",
                )
                .await
                .expect("recv");
            assert_eq!(reply.status, 400, "{bad}");
            assert!(reply.text().contains("x-bijou-ack"), "{}", reply.text());
        }
        // Still usable.
        session
            .send(Bytes::from_static(b"C"))
            .await
            .expect("queued");
        assert_message(&http.recv(&sid, Some(2)).await.expect("recv"), 3, b"C");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_second_concurrent_recv_is_409_and_the_first_still_gets_its_message() {
    bounded(async {
        let (server, mut sessions, mut http) = server(config());
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        let mut other = pipe(&server);
        let (first, second) = tokio::join!(http.recv(&sid, None), async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let second = other.recv(&sid, None).await.expect("recv");
            session
                .send(Bytes::from_static(b"one"))
                .await
                .expect("queued");
            second
        });
        assert_eq!(second.status, 409);
        assert!(second.text().contains("one at a time"), "{}", second.text());
        assert_message(&first.expect("recv"), 1, b"one");
        // Once the first is answered, another may wait.
        session
            .send(Bytes::from_static(b"two"))
            .await
            .expect("queued");
        assert_message(&other.recv(&sid, None).await.expect("recv"), 2, b"two");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn an_idle_session_expires_and_its_stream_says_so_after_what_was_queued() {
    bounded(async {
        let (server, mut sessions, mut http) = server(config());
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        assert_eq!(http.send(&sid, b"late").await.expect("send").status, 204);
        let idle = config().idle_timeout;
        tokio::time::sleep(idle + idle / 4 + Duration::from_secs(1)).await;
        assert_eq!(server.session_count(), 0, "swept");
        assert!(session.is_closed());
        assert_eq!(next_inbound(&mut session).await, &b"late"[..]);
        match session.next().await {
            Some(Err(TransportError::LongPoll(LongPollError::Expired { idle: i }))) => {
                assert_eq!(i, idle);
            }
            other => panic!("expected Expired, got {other:?}"),
        }
        assert!(session.next().await.is_none());
        assert!(matches!(
            session.send(Bytes::from_static(b"x")).await,
            Err(TransportError::LongPoll(LongPollError::Expired { .. }))
        ));
        let gone = http.recv(&sid, None).await.expect("recv");
        assert_eq!(gone.status, 410);
        // The same answer as for an id that never existed.
        let never = http.recv(&"0".repeat(32), None).await.expect("recv");
        assert_eq!((never.status, never.body), (410, gone.body));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_held_recv_keeps_a_session_alive_past_the_idle_timeout() {
    bounded(async {
        let mut c = config();
        c.poll_timeout = Duration::from_secs(60);
        c.idle_timeout = Duration::from_secs(10);
        let (server, mut sessions, mut http) = server(c);
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        let start = Instant::now();
        let nothing = http.recv(&sid, None).await.expect("recv");
        assert_eq!(nothing.status, 204);
        assert_eq!(start.elapsed(), Duration::from_secs(60));
        assert_eq!(server.session_count(), 1);
        assert!(!session.is_closed());
        assert_eq!(
            http.send(&sid, b"still here").await.expect("send").status,
            204
        );
        assert_eq!(next_inbound(&mut session).await, &b"still here"[..]);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_client_that_never_polls_pins_at_most_the_outbound_bound() {
    bounded(async {
        let mut c = config();
        c.outbound_messages = 4;
        c.outbound_bytes = 1000;
        let (server, mut sessions, mut http) = server(c);

        // The message bound.
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        for _ in 0..4 {
            session
                .send(Bytes::from(vec![7; 10]))
                .await
                .expect("queued");
        }
        match session.send(Bytes::from(vec![7; 10])).await {
            Err(TransportError::LongPoll(LongPollError::Backpressure {
                queued,
                bytes,
                max_messages,
                max_bytes,
            })) => assert_eq!((queued, bytes, max_messages, max_bytes), (4, 40, 4, 1000)),
            other => panic!("expected Backpressure, got {other:?}"),
        }
        assert!(session.is_closed());
        assert_eq!(session.queued_for_client(), (0, 0), "dropped");
        assert!(matches!(
            session.next().await,
            Some(Err(TransportError::LongPoll(
                LongPollError::Backpressure { .. }
            )))
        ));
        assert!(session.next().await.is_none());
        assert_eq!(http.recv(&sid, None).await.expect("recv").status, 410);
        assert_eq!(server.session_count(), 0);

        // The byte bound; one message always fits an empty queue.
        let (_sid, mut session) = open(&mut http, &mut sessions).await;
        session
            .send(Bytes::from(vec![1; 5000]))
            .await
            .expect("one always fits");
        assert!(matches!(
            session.send(Bytes::from(vec![1; 1])).await,
            Err(TransportError::LongPoll(LongPollError::Backpressure {
                queued: 1,
                bytes: 5000,
                ..
            }))
        ));
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        session
            .send(Bytes::from(vec![1; 900]))
            .await
            .expect("queued");
        session
            .send(Bytes::from(vec![1; 100]))
            .await
            .expect("exactly the bound");
        assert!(session.send(Bytes::from(vec![1; 1])).await.is_err());
        assert_eq!(http.recv(&sid, None).await.expect("recv").status, 410);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_full_inbound_queue_holds_a_send_until_there_is_room_or_the_send_timeout() {
    bounded(async {
        let mut c = config();
        c.inbound_messages = 2;
        c.inbound_bytes = 100;
        c.send_timeout = Duration::from_secs(4);
        let (server, mut sessions, mut http) = server(c);
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        assert_eq!(http.send(&sid, b"a").await.expect("send").status, 204);
        assert_eq!(http.send(&sid, b"b").await.expect("send").status, 204);
        // Full by count: held, then 503.
        let start = Instant::now();
        let held = http.send(&sid, b"c").await.expect("send");
        assert_eq!(held.status, 503, "{}", held.text());
        assert!(held.text().contains("send again later"), "{}", held.text());
        assert_eq!(start.elapsed(), Duration::from_secs(4));
        // Held until the server side takes one.
        let (sent, taken) = tokio::join!(http.send(&sid, b"c"), async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            next_inbound(&mut session).await
        });
        assert_eq!(sent.expect("send").status, 204);
        assert_eq!(taken, &b"a"[..]);
        assert_eq!(next_inbound(&mut session).await, &b"b"[..]);
        assert_eq!(next_inbound(&mut session).await, &b"c"[..]);
        // Full by bytes: 80 then 30 (over 100) waits.
        assert_eq!(http.send(&sid, &[0; 80]).await.expect("send").status, 204);
        let mut other = pipe(&server);
        let (sent, taken) = tokio::join!(other.send(&sid, &[1; 30]), async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            next_inbound(&mut session).await
        });
        assert_eq!(sent.expect("send").status, 204);
        assert_eq!(taken.len(), 80);
        assert_eq!(next_inbound(&mut session).await.len(), 30);
        // One message over the byte bound still goes into an empty queue.
        assert_eq!(http.send(&sid, &[2; 500]).await.expect("send").status, 204);
        assert_eq!(next_inbound(&mut session).await.len(), 500);
    })
    .await;
}

/// A session takes one `/lp/send` at a time: a second one while the first
/// reads or waits for room is 409, so a session holds at most one body
/// beyond its queue, whatever a client sends at once.
#[tokio::test(start_paused = true)]
async fn a_second_concurrent_send_is_409_and_the_first_still_goes_in() {
    bounded(async {
        let mut c = config();
        c.inbound_messages = 1;
        c.send_timeout = Duration::from_secs(4);
        let (server, mut sessions, mut http) = server(c);
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        assert_eq!(http.send(&sid, b"a").await.expect("send").status, 204);
        let mut other = pipe(&server);
        let (first, second, taken) = tokio::join!(
            // Waits for room: the queue holds "a".
            http.send(&sid, b"b"),
            async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                other.send(&sid, b"c").await
            },
            async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                next_inbound(&mut session).await
            }
        );
        let second = second.expect("send");
        assert_eq!(second.status, 409, "{}", second.text());
        assert!(
            second.text().contains("send one at a time"),
            "{}",
            second.text()
        );
        assert_eq!(first.expect("send").status, 204);
        assert_eq!(taken, &b"a"[..]);
        assert_eq!(next_inbound(&mut session).await, &b"b"[..]);
        // Once the first is done, the next send is taken.
        assert_eq!(other.send(&sid, b"c").await.expect("send").status, 204);
        assert_eq!(next_inbound(&mut session).await, &b"c"[..]);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn disconnect_ends_the_stream_after_what_was_queued() {
    bounded(async {
        let (server, mut sessions, mut http) = server(config());
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        assert_eq!(http.send(&sid, b"x").await.expect("send").status, 204);
        assert_eq!(http.send(&sid, b"y").await.expect("send").status, 204);
        session
            .send(Bytes::from_static(b"never collected"))
            .await
            .expect("queued");
        let bye = http
            .post("/lp/disconnect", &[("x-session-id", &sid)], b"")
            .await
            .expect("disconnect");
        assert_eq!(bye.status, 204);
        assert_eq!(server.session_count(), 0);
        assert_eq!(next_inbound(&mut session).await, &b"x"[..]);
        assert_eq!(next_inbound(&mut session).await, &b"y"[..]);
        assert!(session.next().await.is_none());
        assert!(matches!(
            session.send(Bytes::from_static(b"z")).await,
            Err(TransportError::LongPoll(LongPollError::Closed))
        ));
        assert_eq!(http.recv(&sid, None).await.expect("recv").status, 410);
        assert_eq!(http.send(&sid, b"z").await.expect("send").status, 410);
        let again = http
            .post("/lp/disconnect", &[("x-session-id", &sid)], b"")
            .await
            .expect("disconnect");
        assert_eq!(again.status, 204, "idempotent");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn closing_the_sink_lets_the_client_collect_what_was_queued_then_410() {
    bounded(async {
        let (server, mut sessions, mut http) = server(config());
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        session
            .feed(Bytes::from_static(b"last"))
            .await
            .expect("queued");
        session
            .feed(Bytes::from_static(b"words"))
            .await
            .expect("queued");
        session.close().await.expect("closed");
        assert!(session.is_closed());
        assert_message(&http.recv(&sid, Some(0)).await.expect("recv"), 1, b"last");
        assert_message(&http.recv(&sid, Some(1)).await.expect("recv"), 2, b"words");
        assert_eq!(http.recv(&sid, Some(2)).await.expect("recv").status, 410);
        assert_eq!(server.session_count(), 0);
        assert_eq!(http.send(&sid, b"late").await.expect("send").status, 410);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn send_bodies_over_the_session_maximum_are_413() {
    bounded(async {
        let (_server, mut sessions, mut http) = server(config());
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        session.set_max_message_length(16);
        let over = http.send(&sid, &[0; 17]).await.expect("send");
        assert_eq!(over.status, 413);
        assert!(over.text().contains("at most 16"), "{}", over.text());
        assert_eq!(http.send(&sid, &[0; 16]).await.expect("send").status, 204);
        assert_eq!(next_inbound(&mut session).await.len(), 16);
        assert!(matches!(
            session.send(Bytes::from(vec![0; 17])).await,
            Err(TransportError::TooLarge { len: 17, max: 16 })
        ));
        assert!(
            !session.is_closed(),
            "a refused message leaves the session open"
        );
    })
    .await;
}
