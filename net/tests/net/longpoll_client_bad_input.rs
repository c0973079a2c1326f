//! The long-poll client against a scripted HTTP server (hyper, loopback):
//! every answer the protocol does not expect, the failures it recovers
//! from, and each bound that `LongPollTransport`'s docs state.
//!
//! The fake server logs every request (path, our headers, body) and
//! answers from a script: a full response, a body that breaks off, a body
//! sent in chunks without a length, no answer at all (held), or a dropped
//! connection.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bijou_codec::Wire;
use bijou_net::handshake::{ConnectConfig, ConnectError};
use bijou_net::transport::longpoll::{
    self, ClientConfig, LongPollError, LongPollTransport, ACK_HEADER, RECV_QUEUE_BYTES,
    RECV_QUEUE_MESSAGES, SEND_QUEUE_BYTES, SEND_QUEUE_MESSAGES, SEQUENCE_HEADER, SESSION_ID_HEADER,
};
use bijou_net::transport::{Transport, TransportError};
use bijou_net::Connection;
use bijou_proto::handshake::HandshakeError;
use bijou_proto::longpoll_seq::SequenceError;
use bijou_proto::message::{Audience, HandshakeMessage, Rejection, RejectionReason};
use bijou_signing::{ed25519_dalek::SigningKey, Identity};
use bytes::Bytes;
use futures::{Sink, SinkExt, StreamExt};
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::timeout;

/// Bound on each test.
const LIMIT: Duration = Duration::from_secs(30);
/// The session id the fake server hands out.
const SESSION: &str = "0123456789abcdef0123456789abcdef";
/// The maximum message length the tests set after the handshake.
const MAX: usize = 64 * 1024;

// ---- the scripted server ---------------------------------------------------------

/// One request the fake server received.
#[derive(Debug, Clone)]
struct Req {
    path: String,
    host: Option<String>,
    session: Option<String>,
    ack: Option<String>,
    content_type: Option<String>,
    content_length: Option<String>,
    body: Bytes,
}

/// How to answer.
enum Answer {
    /// A complete response.
    Full(u16, Vec<(&'static str, String)>, Bytes),
    /// `200` announcing `announced` bytes, with headers; `sent` of them go
    /// out, then the connection breaks.
    Broken(usize, Vec<(&'static str, String)>, Bytes),
    /// `200` with these chunks and no `content-length`.
    Chunked(Vec<Bytes>),
    /// No answer until the client gives up.
    Hold,
    /// The connection is closed without an answer.
    Reset,
    /// Waits for a permit of the semaphore, then answers.
    Gated(Arc<Semaphore>, Box<Answer>),
}

type Script = Arc<dyn Fn(&Req, usize) -> Answer + Send + Sync>;
type ResponseBody = BoxBody<Bytes, std::io::Error>;

struct Fake {
    url: String,
    log: Arc<Mutex<Vec<Req>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Fake {
    /// Serves `script`: called with each request and its index among the
    /// requests to the same path.
    async fn start(script: impl Fn(&Req, usize) -> Answer + Send + Sync + 'static) -> Self {
        Self::start_at("", Arc::new(script)).await
    }

    async fn start_at(base: &str, script: Script) -> Self {
        let tcp = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = tcp.local_addr().expect("addr");
        let log: Arc<Mutex<Vec<Req>>> = Arc::default();
        let accept = {
            let log = log.clone();
            tokio::spawn(async move {
                while let Ok((stream, _)) = tcp.accept().await {
                    let (log, script) = (log.clone(), script.clone());
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let (log, script) = (log.clone(), script.clone());
                            async move { answer(req, &log, &script).await }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            })
        };
        Self {
            url: format!("http://{addr}{base}"),
            log,
            accept,
        }
    }

    fn requests(&self, path: &str) -> Vec<Req> {
        let log = self.log.lock().expect("log");
        log.iter().filter(|r| r.path == path).cloned().collect()
    }

    fn acks(&self) -> Vec<String> {
        self.requests("/lp/recv")
            .into_iter()
            .map(|r| r.ack.unwrap_or_default())
            .collect()
    }
}

async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
    log: &Mutex<Vec<Req>>,
    script: &Script,
) -> Result<hyper::Response<ResponseBody>, std::io::Error> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let mut seen = Req {
        path: req.uri().path().to_owned(),
        host: header("host"),
        session: header(SESSION_ID_HEADER),
        ack: header(ACK_HEADER),
        content_type: header("content-type"),
        content_length: header("content-length"),
        body: Bytes::new(),
    };
    seen.body = req
        .into_body()
        .collect()
        .await
        .map_err(std::io::Error::other)?
        .to_bytes();
    let index = {
        let mut log = log.lock().expect("log");
        let index = log.iter().filter(|r| r.path == seen.path).count();
        log.push(seen.clone());
        index
    };
    let mut answer = script(&seen, index);
    loop {
        match answer {
            Answer::Gated(gate, then) => {
                gate.acquire().await.expect("gate").forget();
                answer = *then;
            }
            Answer::Full(status, headers, body) => {
                let mut response = hyper::Response::builder().status(status);
                for (name, value) in headers {
                    response = response.header(name, value);
                }
                let body = Full::new(body).map_err(|never: Infallible| match never {});
                return Ok(response.body(body.boxed()).expect("response"));
            }
            Answer::Broken(announced, headers, sent) => {
                let frames = futures::stream::iter([
                    Ok(Frame::data(sent)),
                    Err(std::io::Error::other("broken off")),
                ]);
                let mut response = hyper::Response::builder()
                    .status(200)
                    .header("content-length", announced);
                for (name, value) in headers {
                    response = response.header(name, value);
                }
                return Ok(response
                    .body(BodyExt::boxed(StreamBody::new(frames)))
                    .expect("response"));
            }
            Answer::Chunked(chunks) => {
                let frames = futures::stream::iter(chunks.into_iter().map(|c| Ok(Frame::data(c))));
                return Ok(hyper::Response::builder()
                    .status(200)
                    .body(BodyExt::boxed(StreamBody::new(frames)))
                    .expect("response"));
            }
            Answer::Hold => std::future::pending::<()>().await,
            Answer::Reset => return Err(std::io::Error::other("reset")),
        }
    }
}

fn ok(body: &'static [u8]) -> Answer {
    Answer::Full(200, vec![], Bytes::from_static(body))
}

fn status(code: u16, body: &'static str) -> Answer {
    Answer::Full(code, vec![], Bytes::from_static(body.as_bytes()))
}

/// `200` with the session id and `reply` as the handshake's reply.
fn handshake_ok() -> Answer {
    Answer::Full(
        200,
        vec![(SESSION_ID_HEADER, SESSION.to_owned())],
        Bytes::from_static(b"reply"),
    )
}

/// A numbered `200` to a poll.
fn numbered(seq: u64, body: impl Into<Bytes>) -> Answer {
    Answer::Full(200, vec![(SEQUENCE_HEADER, seq.to_string())], body.into())
}

/// A config whose pauses and timeouts suit a test.
fn fast() -> ClientConfig {
    let mut config = ClientConfig::default();
    config.request_timeout = Duration::from_secs(5);
    config.retry_pause = Duration::from_millis(10);
    config.max_retry_pause = Duration::from_millis(40);
    config.disconnect_timeout = Duration::from_millis(300);
    config
}

/// A transport past the handshake, as the handshake driver leaves it:
/// 256 bytes while it runs, then [`MAX`].
async fn opened(fake: &Fake, config: ClientConfig) -> LongPollTransport {
    let mut t = longpoll::connect_with(&fake.url, config)
        .await
        .expect("connect");
    t.set_max_message_length(256);
    t.send(Bytes::from_static(b"challenge"))
        .await
        .expect("the handshake is answered");
    let reply = t.next().await.expect("a reply").expect("ok");
    assert_eq!(reply, "reply");
    t.set_max_message_length(MAX);
    t
}

async fn next(t: &mut LongPollTransport) -> Option<Result<Bytes, TransportError>> {
    timeout(Duration::from_secs(10), t.next())
        .await
        .expect("the stream moves in time")
}

fn key() -> SigningKey {
    SigningKey::from_bytes(&[9; 32])
}

/// `Connection::connect` over a fresh transport to `fake`.
async fn connect(fake: &Fake) -> Result<Connection<LongPollTransport>, ConnectError> {
    let t = longpoll::connect_with(&fake.url, fast())
        .await
        .expect("connect");
    let audience = Audience::Known(SigningKey::from_bytes(&[2; 32]).peer_id());
    Connection::connect(t, &key(), audience, &ConnectConfig::default()).await
}

fn long_poll(err: &ConnectError) -> &LongPollError {
    match err {
        ConnectError::Transport(TransportError::LongPoll(e)) => e,
        other => panic!("expected a long-poll error, got {other}"),
    }
}

// ---- the handshake ------------------------------------------------------------------

#[tokio::test]
async fn a_200_handshake_without_a_valid_session_id_is_missing_session_id() {
    timeout(LIMIT, async {
        for header in [None, Some("not hex"), Some("abcd")] {
            let fake = Fake::start(move |req, _| match (req.path.as_str(), header) {
                ("/lp/handshake", Some(id)) => {
                    Answer::Full(200, vec![(SESSION_ID_HEADER, id.to_owned())], Bytes::new())
                }
                _ => ok(b"a reply without a session"),
            })
            .await;
            let err = connect(&fake).await.expect_err("refused");
            assert!(
                matches!(long_poll(&err), LongPollError::MissingSessionId),
                "{err}"
            );
            assert!(fake.requests("/lp/recv").is_empty());
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn handshake_answers_other_than_200_and_a_401_rejection_are_status_errors() {
    timeout(LIMIT, async {
        // 500 with a text body, 404 (not a long-poll server), 401 with a
        // text body (their server's AuthenticateError): Status, with the text.
        for (code, text) in [
            (500, "request body too large"),
            (404, "not found"),
            (401, "decode error: unknown schema"),
        ] {
            let fake = Fake::start(move |_, _| status(code, text)).await;
            let err = connect(&fake).await.expect_err("refused");
            match long_poll(&err) {
                LongPollError::Status {
                    endpoint,
                    status,
                    body,
                } => {
                    assert_eq!(
                        (*endpoint, *status, body.as_str()),
                        ("/lp/handshake", code, text)
                    );
                }
                other => panic!("expected a status error, got {other}"),
            }
        }
        // A long body: only its first bytes are kept.
        let fake =
            Fake::start(|_, _| Answer::Full(502, vec![], Bytes::from(vec![b'x'; 100_000]))).await;
        let err = connect(&fake).await.expect_err("refused");
        let LongPollError::Status { body, .. } = long_poll(&err) else {
            panic!("{err}");
        };
        assert_eq!(body.len(), 200);
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_401_carrying_a_rejection_is_the_handshakes_rejection() {
    timeout(LIMIT, async {
        let rejection = HandshakeMessage::Rejection(Rejection {
            reason: RejectionReason::ClockDrift,
            timestamp: 1_800_000_000,
        })
        .encode()
        .expect("encode");
        let fake = Fake::start(move |_, _| {
            Answer::Full(
                401,
                vec![("content-type", "application/octet-stream".to_owned())],
                rejection.clone(),
            )
        })
        .await;
        match connect(&fake).await {
            Err(ConnectError::Handshake(HandshakeError::Rejected { reason, .. })) => {
                assert_eq!(reason, RejectionReason::ClockDrift);
            }
            Err(other) => panic!("expected the rejection, got {other}"),
            Ok(_) => panic!("expected the rejection"),
        }
        // On the transport itself: the challenge's flush succeeds, the
        // stream yields the rejection and ends, the sink takes no more.
        let mut t = longpoll::connect_with(&fake.url, fast())
            .await
            .expect("connect");
        t.send(Bytes::from_static(b"challenge"))
            .await
            .expect("answered");
        assert_eq!(
            next(&mut t)
                .await
                .expect("the rejection")
                .expect("ok")
                .len(),
            14
        );
        assert!(next(&mut t).await.is_none());
        assert!(matches!(
            t.send(Bytes::from_static(b"more")).await,
            Err(TransportError::LongPoll(LongPollError::Closed))
        ));
        assert!(t.session_id().is_none());
        assert_eq!(fake.requests("/lp/send").len(), 0);
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_handshake_reply_over_256_bytes_is_too_large() {
    timeout(LIMIT, async {
        let fake = Fake::start(|_, _| {
            Answer::Full(
                200,
                vec![(SESSION_ID_HEADER, SESSION.to_owned())],
                Bytes::from(vec![7; 300]),
            )
        })
        .await;
        match connect(&fake).await {
            Err(ConnectError::Handshake(HandshakeError::TooLarge { len, max })) => {
                assert_eq!((len, max), (300, 256));
            }
            Err(other) => panic!("expected TooLarge, got {other}"),
            Ok(_) => panic!("expected TooLarge"),
        }
    })
    .await
    .expect("bounded");
}

// ---- receiving ----------------------------------------------------------------------

#[tokio::test]
async fn a_recv_body_over_the_max_is_too_large_announced_or_as_it_arrives() {
    timeout(LIMIT, async {
        // Announced by content-length: refused before the body is read.
        let fake = Fake::start(|req, _| match req.path.as_str() {
            "/lp/handshake" => handshake_ok(),
            _ => Answer::Full(200, vec![], Bytes::from(vec![1; MAX + 1])),
        })
        .await;
        let mut t = opened(&fake, fast()).await;
        match next(&mut t).await {
            Some(Err(TransportError::TooLarge { len, max })) => {
                assert_eq!((len, max), (MAX as u64 + 1, MAX));
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        assert!(next(&mut t).await.is_none(), "the stream ends");

        // No length: counted as the chunks come, refused at the first
        // byte over (1 KiB chunks: at MAX + 1 KiB).
        let fake = Fake::start(|req, _| match req.path.as_str() {
            "/lp/handshake" => handshake_ok(),
            _ => Answer::Chunked(vec![Bytes::from(vec![1; 1024]); 2 * MAX / 1024]),
        })
        .await;
        let mut t = opened(&fake, fast()).await;
        match next(&mut t).await {
            Some(Err(TransportError::TooLarge { len, max })) => {
                assert_eq!((len, max), (MAX as u64 + 1024, MAX));
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        assert!(next(&mut t).await.is_none(), "the stream ends");

        // Exactly the max, in chunks: delivered whole.
        let fake = Fake::start(|req, _| match req.path.as_str() {
            "/lp/handshake" => handshake_ok(),
            _ => Answer::Chunked(vec![Bytes::from(vec![1; 1024]); MAX / 1024]),
        })
        .await;
        let mut t = opened(&fake, fast()).await;
        let message = next(&mut t).await.expect("a message").expect("ok");
        assert_eq!(message.len(), MAX);
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_reset_during_a_recv_is_polled_again_with_the_same_ack_and_nothing_comes_twice() {
    timeout(LIMIT, async {
        let fake = Fake::start(|req, n| match (req.path.as_str(), n) {
            ("/lp/handshake", _) => handshake_ok(),
            ("/lp/recv", 0) => numbered(1, "m1"),
            // The connection drops before an answer.
            ("/lp/recv", 1) => Answer::Reset,
            // The answer breaks off inside its body.
            ("/lp/recv", 2) => Answer::Broken(
                100,
                vec![(SEQUENCE_HEADER, "2".to_owned())],
                Bytes::from_static(b"m2 first b"),
            ),
            // A stale repeat of 1.
            ("/lp/recv", 3) => numbered(1, "m1"),
            ("/lp/recv", 4) => numbered(2, "m2"),
            // 2 again: its answer got lost, says the server.
            ("/lp/recv", 5) => numbered(2, "m2"),
            ("/lp/recv", 6) => numbered(3, "m3"),
            // No number (Subduction's server): delivered, whatever it is.
            ("/lp/recv", 7) => ok(b"m3"),
            _ => status(410, "session closed"),
        })
        .await;
        let mut t = opened(&fake, fast()).await;
        let mut got = Vec::new();
        while let Some(message) = next(&mut t).await {
            got.push(message.expect("no error"));
        }
        assert_eq!(got, ["m1", "m2", "m3", "m3"]);
        assert_eq!(fake.acks(), ["0", "1", "1", "1", "1", "2", "2", "3", "3"]);
    })
    .await
    .expect("bounded");
}

/// Issue 56: an `x-bijou-seq` that jumps must not become the
/// acknowledgement, or every later message looks like a repeat and is
/// dropped without a word.
#[tokio::test]
async fn a_sequence_number_that_jumps_ends_the_stream_with_a_typed_error_not_silent_drops() {
    timeout(LIMIT, async {
        let fake = Fake::start(|req, n| match (req.path.as_str(), n) {
            ("/lp/handshake", _) => handshake_ok(),
            ("/lp/recv", 0) => numbered(1, "m1"),
            // 2..4 never came: a proxy rewrote the number, or the server
            // lost them.
            ("/lp/recv", 1) => numbered(5, "m5"),
            ("/lp/recv", 2) => numbered(2, "m2"),
            ("/lp/recv", 3) => numbered(3, "m3"),
            ("/lp/recv", 4) => numbered(4, "m4"),
            ("/lp/recv", 5) => numbered(5, "m5"),
            _ => status(410, "session closed"),
        })
        .await;
        let mut t = opened(&fake, fast()).await;
        assert_eq!(next(&mut t).await.expect("m1").expect("ok"), "m1");
        let err = next(&mut t)
            .await
            .expect("the jump is reported")
            .expect_err("not delivered");
        assert!(
            matches!(
                err,
                TransportError::LongPoll(LongPollError::Sequence(SequenceError::Jump {
                    highest: 1,
                    got: 5
                }))
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("messages 2..5 are missing"),
            "{err}"
        );
        assert!(next(&mut t).await.is_none(), "the stream ends");
        // Nothing was acknowledged past 1, and nothing polled after the
        // jump.
        assert_eq!(fake.acks(), ["0", "1"]);
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_sequence_number_of_0_or_not_a_number_ends_the_stream_with_its_error() {
    timeout(LIMIT, async {
        for (header, zero) in [("0", true), ("two", false), ("+1", false)] {
            let fake = Fake::start(move |req, n| match (req.path.as_str(), n) {
                ("/lp/handshake", _) => handshake_ok(),
                ("/lp/recv", 0) => {
                    Answer::Full(200, vec![(SEQUENCE_HEADER, header.to_owned())], "m".into())
                }
                _ => numbered(1, "m1"),
            })
            .await;
            let mut t = opened(&fake, fast()).await;
            let err = next(&mut t)
                .await
                .expect("reported")
                .expect_err("not delivered");
            match err {
                TransportError::LongPoll(LongPollError::Sequence(SequenceError::Zero {
                    highest: 0,
                })) => assert!(zero, "{header}"),
                TransportError::LongPoll(LongPollError::MalformedSequence { ref value }) => {
                    assert!(!zero, "{header}");
                    assert_eq!(value, header);
                }
                other => panic!("{header}: {other}"),
            }
            assert!(next(&mut t).await.is_none(), "{header}: the stream ends");
            assert_eq!(fake.acks(), ["0"], "{header}: not polled again");
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn five_failed_polls_in_a_row_end_the_stream_with_the_last_ones_error() {
    timeout(LIMIT, async {
        // Four 500s, a 204 (the count starts again), five 500s.
        let fake = Fake::start(|req, n| match (req.path.as_str(), n) {
            ("/lp/handshake", _) => handshake_ok(),
            ("/lp/recv", 4) => status(204, ""),
            _ => status(500, "session not found"),
        })
        .await;
        // The default pauses: 50, 100, 200, 400 ms before the 2nd..5th try.
        let mut config = ClientConfig::default();
        config.request_timeout = Duration::from_secs(5);
        let mut t = opened(&fake, config).await;
        let started = Instant::now();
        match next(&mut t).await {
            Some(Err(TransportError::LongPoll(LongPollError::Status {
                endpoint,
                status,
                body,
            }))) => {
                assert_eq!(
                    (endpoint, status, body.as_str()),
                    ("/lp/recv", 500, "session not found")
                );
            }
            other => panic!("expected the 500, got {other:?}"),
        }
        let elapsed = started.elapsed();
        assert!(next(&mut t).await.is_none(), "the stream ends");
        assert_eq!(fake.requests("/lp/recv").len(), 10);
        assert!(
            elapsed >= Duration::from_millis(2 * 750),
            "twice 50 + 100 + 200 + 400 ms of pauses, took {elapsed:?}"
        );
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn refused_connections_count_as_failed_polls() {
    timeout(LIMIT, async {
        let fake = Fake::start(|req, _| match req.path.as_str() {
            "/lp/handshake" => handshake_ok(),
            _ => Answer::Hold,
        })
        .await;
        // The poller opens its own connection: make the server vanish
        // first, so every attempt is refused.
        let mut t = opened(&fake, fast()).await;
        drop(fake);
        tokio::time::sleep(Duration::from_millis(50)).await;
        match next(&mut t).await {
            Some(Err(TransportError::Io(e))) => {
                assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
            }
            other => panic!("expected a refused connection, got {other:?}"),
        }
        assert!(next(&mut t).await.is_none());
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_410_ends_the_stream_even_before_any_message() {
    timeout(LIMIT, async {
        let fake = Fake::start(|req, _| match req.path.as_str() {
            "/lp/handshake" => handshake_ok(),
            _ => status(410, "session closed"),
        })
        .await;
        let mut t = opened(&fake, fast()).await;
        assert!(next(&mut t).await.is_none());
        assert!(next(&mut t).await.is_none());
        assert_eq!(fake.requests("/lp/recv").len(), 1);
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_poll_with_no_answer_within_the_request_timeout_is_sent_again() {
    timeout(LIMIT, async {
        let fake = Fake::start(|req, n| match (req.path.as_str(), n) {
            ("/lp/handshake", _) => handshake_ok(),
            ("/lp/recv", 0) => Answer::Hold,
            ("/lp/recv", 1) => numbered(1, "late"),
            _ => Answer::Hold,
        })
        .await;
        let mut config = fast();
        config.request_timeout = Duration::from_millis(300);
        let mut t = opened(&fake, config).await;
        let started = Instant::now();
        assert_eq!(next(&mut t).await.expect("a message").expect("ok"), "late");
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert_eq!(fake.acks()[..2], ["0", "0"]);
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn the_poller_stops_while_16_messages_or_1_mib_wait() {
    timeout(LIMIT, async {
        // 300 KiB messages: three make less than 1 MiB, four more.
        const { assert!(3 * 300 * 1024 < RECV_QUEUE_BYTES && 4 * 300 * 1024 >= RECV_QUEUE_BYTES) };
        for (size, queued) in [(10, RECV_QUEUE_MESSAGES), (300 * 1024, 4)] {
            let fake = Fake::start(move |req, n| match req.path.as_str() {
                "/lp/handshake" => handshake_ok(),
                _ => numbered(n as u64 + 1, vec![n as u8; size]),
            })
            .await;
            let mut t = opened(&fake, fast()).await;
            t.set_max_message_length(1024 * 1024);
            assert_eq!(next(&mut t).await.expect("first").expect("ok")[0], 0);
            tokio::time::sleep(Duration::from_millis(300)).await;
            // One taken, then the queue filled: no poll more.
            assert_eq!(
                fake.requests("/lp/recv").len(),
                1 + queued,
                "{size} B messages"
            );
            for n in 1..=queued {
                let message = next(&mut t).await.expect("queued").expect("ok");
                assert_eq!((message.len(), message[0]), (size, n as u8));
            }
        }
    })
    .await
    .expect("bounded");
}

// ---- sending ------------------------------------------------------------------------

/// Whether the sink is ready now.
fn ready_now(t: &mut LongPollTransport) -> bool {
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    Pin::new(t).poll_ready(&mut cx).is_ready()
}

#[tokio::test]
async fn the_sink_holds_16_messages_or_1_mib_and_flush_waits_for_every_2xx() {
    timeout(LIMIT, async {
        for (size, queued) in [(10, SEND_QUEUE_MESSAGES), (600 * 1024, 2)] {
            let gate = Arc::new(Semaphore::new(0));
            let fake = {
                let gate = gate.clone();
                Fake::start(move |req, _| match req.path.as_str() {
                    "/lp/handshake" => handshake_ok(),
                    "/lp/send" => Answer::Gated(gate.clone(), Box::new(status(204, ""))),
                    _ => Answer::Hold,
                })
                .await
            };
            let mut t = opened(&fake, fast()).await;
            t.set_max_message_length(1024 * 1024);
            for n in 0..queued {
                assert!(ready_now(&mut t), "message {n} is taken");
                t.feed(Bytes::from(vec![n as u8; size]))
                    .await
                    .expect("queued");
            }
            assert!(
                !ready_now(&mut t),
                "{queued} messages of {size} B fill the queue"
            );
            assert!(
                timeout(Duration::from_millis(200), t.flush())
                    .await
                    .is_err(),
                "no 2xx yet: the flush waits"
            );
            assert_eq!(fake.requests("/lp/send").len(), 1, "one send in flight");
            gate.add_permits(queued);
            timeout(Duration::from_secs(5), t.flush())
                .await
                .expect("flushed once all are answered")
                .expect("ok");
            assert!(ready_now(&mut t));
            let sent = fake.requests("/lp/send");
            assert_eq!(sent.len(), queued);
            for (n, req) in sent.iter().enumerate() {
                assert_eq!((req.body.len(), req.body[0]), (size, n as u8), "in order");
            }
        }
        const { assert!(600 * 1024 < SEND_QUEUE_BYTES && SEND_QUEUE_BYTES <= 2 * 600 * 1024) };
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_send_answered_410_or_500_fails_the_sink_and_leaves_the_stream() {
    timeout(LIMIT, async {
        for (code, want) in [(410, "SessionGone"), (500, "Status")] {
            let fake = Fake::start(move |req, _| match req.path.as_str() {
                "/lp/handshake" => handshake_ok(),
                "/lp/send" => status(code, "session not found"),
                _ => numbered(1, "still here"),
            })
            .await;
            let mut t = opened(&fake, fast()).await;
            let err = t
                .send(Bytes::from_static(b"one"))
                .await
                .expect_err("refused");
            match (&err, want) {
                (TransportError::LongPoll(LongPollError::SessionGone), "SessionGone") => {}
                (
                    TransportError::LongPoll(LongPollError::Status {
                        endpoint: "/lp/send",
                        status: 500,
                        body,
                    }),
                    "Status",
                ) => assert_eq!(body, "session not found"),
                _ => panic!("{code}: got {err}"),
            }
            assert!(matches!(
                t.send(Bytes::from_static(b"two")).await,
                Err(TransportError::LongPoll(LongPollError::Closed))
            ));
            assert_eq!(fake.requests("/lp/send").len(), 1);
            assert_eq!(
                next(&mut t).await.expect("a message").expect("ok"),
                "still here"
            );
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_send_answered_503_goes_again_in_order_and_once_until_the_retries_run_out() {
    timeout(LIMIT, async {
        // The second message is answered 503 three times (once asking for
        // a pause of 1 s), then taken.
        let fake = Fake::start(|req, index| match req.path.as_str() {
            "/lp/handshake" => handshake_ok(),
            "/lp/send" => match index {
                1 | 3 => status(503, "inbound full"),
                2 => Answer::Full(
                    503,
                    vec![("retry-after", "1".to_owned())],
                    Bytes::from_static(b"inbound full"),
                ),
                _ => status(204, ""),
            },
            _ => Answer::Hold,
        })
        .await;
        let mut t = opened(&fake, fast()).await;
        let messages = ["m0", "m1", "m2", "m3", "m4"];
        let started = Instant::now();
        for message in messages {
            t.feed(Bytes::from_static(message.as_bytes()))
                .await
                .expect("queued");
        }
        t.flush().await.expect("every message taken in the end");
        let sent: Vec<Bytes> = fake
            .requests("/lp/send")
            .into_iter()
            .map(|r| r.body)
            .collect();
        // The refused one goes again before any later one; each is taken
        // (answered 204) once.
        assert_eq!(sent, ["m0", "m1", "m1", "m1", "m1", "m2", "m3", "m4"]);
        let taken: Vec<&Bytes> = sent
            .iter()
            .enumerate()
            .filter(|(index, _)| !(1..=3).contains(index))
            .map(|(_, body)| body)
            .collect();
        assert_eq!(taken, messages);
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "Retry-After: 1 is waited for"
        );

        // Busy every time: sent again `busy_retries` times, then the sink
        // fails saying so, and refuses more.
        let fake = Fake::start(|req, _| match req.path.as_str() {
            "/lp/handshake" => handshake_ok(),
            "/lp/send" => status(503, "inbound full"),
            _ => Answer::Hold,
        })
        .await;
        let mut config = fast();
        config.busy_retries = 3;
        let mut t = opened(&fake, config).await;
        let err = t
            .send(Bytes::from_static(b"never"))
            .await
            .expect_err("busy");
        match &err {
            TransportError::LongPoll(LongPollError::Busy {
                endpoint: "/lp/send",
                times: 4,
                retry_after: None,
                body,
            }) => assert_eq!(body, "inbound full"),
            other => panic!("expected Busy, got {other}"),
        }
        assert!(
            err.to_string()
                .contains("503 (server busy) 4 times in a row"),
            "{err}"
        );
        assert_eq!(fake.requests("/lp/send").len(), 4);
        assert!(matches!(
            t.send(Bytes::from_static(b"more")).await,
            Err(TransportError::LongPoll(LongPollError::Closed))
        ));

        // A pause asked for over the longest honoured: no retry.
        let fake = Fake::start(|req, _| match req.path.as_str() {
            "/lp/handshake" => handshake_ok(),
            "/lp/send" => Answer::Full(503, vec![("retry-after", "30".to_owned())], Bytes::new()),
            _ => Answer::Hold,
        })
        .await;
        let mut config = fast();
        config.max_busy_pause = Duration::from_secs(2);
        let mut t = opened(&fake, config).await;
        let err = t
            .send(Bytes::from_static(b"later"))
            .await
            .expect_err("busy");
        assert!(
            matches!(
                err,
                TransportError::LongPoll(LongPollError::Busy {
                    times: 1,
                    retry_after: Some(pause),
                    ..
                }) if pause == Duration::from_secs(30)
            ),
            "{err}"
        );
        assert!(err.to_string().contains("a pause of 30s"), "{err}");
        assert_eq!(fake.requests("/lp/send").len(), 1);
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_message_over_the_max_is_refused_by_the_sink() {
    timeout(LIMIT, async {
        let fake = Fake::start(|req, _| match req.path.as_str() {
            "/lp/handshake" => handshake_ok(),
            "/lp/send" => status(204, ""),
            _ => Answer::Hold,
        })
        .await;
        let mut t = opened(&fake, fast()).await;
        assert!(matches!(
            t.send(Bytes::from(vec![0; MAX + 1])).await,
            Err(TransportError::TooLarge { len, max }) if len == MAX as u64 + 1 && max == MAX
        ));
        t.send(Bytes::from(vec![0; MAX]))
            .await
            .expect("the max is fine");
        assert_eq!(fake.requests("/lp/send").len(), 1);
        // No maximum above the transport's own: 50 MiB.
        t.set_max_message_length(usize::MAX);
        assert_eq!(
            t.max_message_length(),
            bijou_net::transport::longpoll::LONGPOLL_MAX_MESSAGE_LENGTH
        );
    })
    .await
    .expect("bounded");
}

// ---- the requests, connecting and closing ----------------------------------------

#[tokio::test]
async fn the_requests_carry_what_the_docs_say_under_the_base_path() {
    timeout(LIMIT, async {
        let fake = Fake::start_at(
            "/base/",
            Arc::new(|req: &Req, n| match (req.path.as_str(), n) {
                ("/base/lp/handshake", _) => handshake_ok(),
                ("/base/lp/send", _) => status(204, ""),
                ("/base/lp/recv", 0) => numbered(1, "m"),
                ("/base/lp/disconnect", _) => status(204, ""),
                _ => Answer::Hold,
            }),
        )
        .await;
        let host = fake
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/base/")
            .to_owned();
        let mut t = opened(&fake, fast()).await;
        assert_eq!(t.session_id().expect("open").to_string(), SESSION);
        t.send(Bytes::from_static(b"hello")).await.expect("sent");
        assert_eq!(next(&mut t).await.expect("m").expect("ok"), "m");
        while fake.requests("/base/lp/recv").len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        t.close().await.expect("closed");

        let one = |path: &str| {
            let reqs = fake.requests(path);
            assert!(!reqs.is_empty(), "{path}");
            reqs[0].clone()
        };
        let handshake = one("/base/lp/handshake");
        assert_eq!(handshake.host.as_deref(), Some(host.as_str()));
        assert_eq!(handshake.body, "challenge");
        assert_eq!(
            handshake.content_type.as_deref(),
            Some("application/octet-stream")
        );
        assert_eq!(handshake.content_length.as_deref(), Some("9"));
        assert_eq!(handshake.session, None);
        let send = one("/base/lp/send");
        assert_eq!(send.body, "hello");
        assert_eq!(
            send.content_type.as_deref(),
            Some("application/octet-stream")
        );
        assert_eq!(send.content_length.as_deref(), Some("5"));
        assert_eq!(send.session.as_deref(), Some(SESSION));
        assert_eq!(send.ack, None);
        let recv = fake.requests("/base/lp/recv");
        assert_eq!(recv[0].ack.as_deref(), Some("0"));
        assert_eq!(recv[1].ack.as_deref(), Some("1"));
        assert_eq!(recv[0].session.as_deref(), Some(SESSION));
        assert_eq!(recv[0].content_length.as_deref(), Some("0"));
        assert_eq!(recv[0].content_type, None);
        let disconnect = one("/base/lp/disconnect");
        assert_eq!(disconnect.session.as_deref(), Some(SESSION));
        assert!(disconnect.body.is_empty());
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn connect_fails_fast_and_refuses_urls_it_cannot_serve() {
    timeout(LIMIT, async {
        let tcp = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = tcp.local_addr().expect("addr");
        drop(tcp);
        match longpoll::connect(&format!("http://{addr}")).await {
            Err(TransportError::Io(e)) => {
                assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
            }
            other => panic!("expected a refused connection, got {other:?}"),
        }
        for url in ["https://127.0.0.1:1/", "ws://127.0.0.1:1/", "127.0.0.1:1"] {
            match longpoll::connect(url).await {
                Err(TransportError::LongPoll(LongPollError::Url { url: got, reason })) => {
                    assert_eq!(got, url);
                    if url.starts_with("https") {
                        assert!(reason.contains("TLS"), "{reason}");
                    }
                }
                other => panic!("{url}: expected a URL error, got {other:?}"),
            }
        }
        // A host name is resolved.
        let fake = Fake::start(|_, _| handshake_ok()).await;
        let url = fake.url.replace("127.0.0.1", "localhost");
        let mut t = longpoll::connect(&url).await.expect("localhost resolves");
        t.send(Bytes::from_static(b"challenge"))
            .await
            .expect("answered");
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_connection_that_is_never_accepted_times_out() {
    timeout(LIMIT, async {
        // A listener with a backlog of 1 that never accepts: once its
        // queue is full, the kernel drops further SYNs.
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .bind("127.0.0.1:0".parse().expect("addr"))
            .expect("bind");
        let addr = socket.local_addr().expect("addr");
        let _listener = socket.listen(1).expect("listen");
        let mut held = Vec::new();
        let mut config = ClientConfig::default();
        config.connect_timeout = Duration::from_millis(300);
        let mut timed_out = false;
        for _ in 0..8 {
            let started = Instant::now();
            match longpoll::connect_with(&format!("http://{addr}"), config.clone()).await {
                Ok(t) => held.push(t),
                Err(TransportError::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut => {
                    assert!(started.elapsed() < Duration::from_secs(2));
                    timed_out = true;
                    break;
                }
                Err(other) => panic!("unexpected: {other}"),
            }
        }
        assert!(timed_out, "{} connections completed", held.len());
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn close_posts_the_disconnect_at_most_for_its_timeout_and_drop_posts_it_too() {
    timeout(LIMIT, async {
        let fake = Fake::start(|req, _| match req.path.as_str() {
            "/lp/handshake" => handshake_ok(),
            _ => Answer::Hold,
        })
        .await;
        let mut t = opened(&fake, fast()).await;
        let started = Instant::now();
        t.close().await.expect("closed, best effort");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(2),
            "{took:?}"
        );
        assert_eq!(fake.requests("/lp/disconnect").len(), 1);
        assert!(matches!(
            t.send(Bytes::from_static(b"late")).await,
            Err(TransportError::LongPoll(LongPollError::Closed))
        ));
        drop(t);

        let t = opened(&fake, fast()).await;
        drop(t);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let disconnects = fake.requests("/lp/disconnect");
        assert_eq!(disconnects.len(), 2, "the dropped transport disconnected");
        assert_eq!(disconnects[1].session.as_deref(), Some(SESSION));
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_dropped_or_closed_transport_leaves_no_task_behind() {
    timeout(LIMIT, async {
        let fake = Fake::start(|req, _| match req.path.as_str() {
            "/lp/handshake" => handshake_ok(),
            "/lp/recv" => Answer::Hold,
            _ => status(204, ""),
        })
        .await;
        let alive = || {
            tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks()
        };
        let baseline = alive();
        for close_first in [false, true] {
            let mut t = opened(&fake, fast()).await;
            t.send(Bytes::from_static(b"one")).await.expect("sent");
            // The poller starts and holds a poll.
            assert!(timeout(Duration::from_millis(100), t.next()).await.is_err());
            assert!(alive() >= baseline + 4, "sender, poller, their connections");
            if close_first {
                t.close().await.expect("closed");
            }
            drop(t);
            // The tasks end; so do the fake server's connections, once
            // ours are closed (and the dropped one's disconnect is done).
            let started = Instant::now();
            while alive() > baseline {
                assert!(
                    started.elapsed() < Duration::from_secs(5),
                    "{} tasks alive, {baseline} before",
                    alive()
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        assert_eq!(fake.requests("/lp/disconnect").len(), 2);
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_send_whose_connection_closed_goes_out_on_a_new_one_or_fails_after_five_tries() {
    timeout(LIMIT, async {
        // The server closes each connection after its answer.
        let closing = || vec![("connection", "close".to_owned())];
        let fake = Fake::start(move |req, _| match req.path.as_str() {
            "/lp/handshake" => Answer::Full(
                200,
                vec![
                    (SESSION_ID_HEADER, SESSION.to_owned()),
                    ("connection", "close".to_owned()),
                ],
                Bytes::from_static(b"reply"),
            ),
            _ => Answer::Full(204, closing(), Bytes::new()),
        })
        .await;
        let mut t = opened(&fake, fast()).await;
        for n in 0..3u8 {
            t.send(Bytes::from(vec![n]))
                .await
                .expect("sent on a new connection");
        }
        assert_eq!(fake.requests("/lp/send").len(), 3);

        // No server any more: the send never leaves, is tried five times,
        // and the sink reports the refused connection.
        let fake = Fake::start(move |req, _| match req.path.as_str() {
            "/lp/handshake" => Answer::Full(
                200,
                vec![
                    (SESSION_ID_HEADER, SESSION.to_owned()),
                    ("connection", "close".to_owned()),
                ],
                Bytes::from_static(b"reply"),
            ),
            _ => Answer::Hold,
        })
        .await;
        let mut t = opened(&fake, fast()).await;
        drop(fake);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        match t.send(Bytes::from_static(b"lost")).await {
            Err(TransportError::Io(e)) => {
                assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
            }
            other => panic!("expected a refused connection, got {other:?}"),
        }
        // Pauses of 10, 20, 40, 40 ms between the five tries.
        assert!(started.elapsed() >= Duration::from_millis(110));
    })
    .await
    .expect("bounded");
}
