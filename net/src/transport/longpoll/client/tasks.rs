//! The client's two tasks: the sender (handshake, sends, disconnect) and
//! the poller (`/lp/recv`), each on its own HTTP connection.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use bijou_codec::Wire;
use bijou_proto::longpoll_seq::{Accepted, Inbox};
use bijou_proto::message::Rejection;
use bytes::Bytes;
use hyper::header::RETRY_AFTER;
use hyper::StatusCode;
use tokio::time::Instant;

use super::super::{
    LongPollError, SessionId, MAX_HANDSHAKE_BODY, SEQUENCE_HEADER, SESSION_ID_HEADER,
};
use super::http::{self, Failure, Fields, HttpConn};
use super::url::{BaseUrl, Endpoint};
use super::{ClientConfig, Close, End, Phase, Shared, Wake};
use crate::transport::TransportError;

/// What the sender does next.
enum Job {
    /// Post the challenge to `/lp/handshake`.
    Handshake(Bytes),
    /// Post a message to `/lp/send`.
    Send(Bytes, SessionId),
    /// Post `/lp/disconnect` (if there is a session) and stop.
    Close(Option<SessionId>),
    /// The handshake failed: the rest of the queue is dropped.
    Drop,
}

/// Waits for the next job: the message at the front of the queue (it stays
/// there until answered, so a flush waits for it), else the close.
async fn next_job(shared: &Shared) -> Job {
    loop {
        let notified = shared.to_sender.notified();
        {
            let st = shared.lock();
            if let Some(message) = st.outgoing.front() {
                return match st.phase {
                    Phase::New => Job::Handshake(message.clone()),
                    Phase::Open(session) => Job::Send(message.clone(), session),
                    Phase::Failed => Job::Drop,
                };
            }
            if st.close == Close::Asked {
                return Job::Close(match st.phase {
                    Phase::Open(session) => Some(session),
                    Phase::New | Phase::Failed => None,
                });
            }
        }
        notified.await;
    }
}

/// The sender: the challenge, then each message in order, one request at
/// a time on `conn` (re-opened after a failure), then the disconnect.
pub(super) async fn run_sender(
    shared: Arc<Shared>,
    base: Arc<BaseUrl>,
    config: ClientConfig,
    first: HttpConn,
) {
    let mut conn = Some(first);
    loop {
        match next_job(&shared).await {
            Job::Handshake(challenge) => {
                let max = shared.lock().max;
                let outcome = handshake(&mut conn, &base, &config, challenge, max).await;
                let mut wake = Wake::default();
                let mut st = shared.lock();
                st.sent(&mut wake);
                match outcome {
                    Handshake::Open { session, reply } => {
                        st.phase = Phase::Open(session);
                        match reply {
                            Ok(reply) => st.push_received(reply, &mut wake),
                            Err(e) => st.end_stream(End::Error(e), &mut wake),
                        }
                    }
                    Handshake::Rejected(rejection) => {
                        // The challenge was answered (its flush succeeds);
                        // nothing more can be sent.
                        st.phase = Phase::Failed;
                        st.close_sink(&mut wake);
                        st.push_received(rejection, &mut wake);
                        st.end_stream(End::Done, &mut wake);
                    }
                    Handshake::Failed(e) => {
                        st.phase = Phase::Failed;
                        st.fail_sink(e, &mut wake);
                        st.end_stream(End::Done, &mut wake);
                    }
                }
                drop(st);
                wake.wake();
            }
            Job::Send(message, session) => {
                let outcome = send(&mut conn, &base, &config, message, session).await;
                let mut wake = Wake::default();
                let mut st = shared.lock();
                match outcome {
                    Ok(()) => st.sent(&mut wake),
                    Err(e) => st.fail_sink(e, &mut wake),
                }
                drop(st);
                wake.wake();
            }
            Job::Drop => {
                let mut wake = Wake::default();
                let mut st = shared.lock();
                st.fail_sink(TransportError::LongPoll(LongPollError::Closed), &mut wake);
                drop(st);
                wake.wake();
            }
            Job::Close(session) => {
                if let Some(session) = session {
                    shared.lock().disconnected = true;
                    let deadline = Instant::now() + config.disconnect_timeout;
                    let _ = post_disconnect(&mut conn, &base, &config, session, deadline).await;
                }
                let mut wake = Wake::default();
                let mut st = shared.lock();
                st.close = Close::Done;
                st.wake_writers(&mut wake);
                drop(st);
                wake.wake();
                return;
            }
        }
    }
}

/// How the handshake went.
enum Handshake {
    /// `200` with a session id; the reply, or why it was refused.
    Open {
        session: SessionId,
        reply: Result<Bytes, TransportError>,
    },
    /// `401` with a Rejection: the stream yields it.
    Rejected(Bytes),
    /// Anything else: the sink reports it.
    Failed(TransportError),
}

async fn handshake(
    conn: &mut Option<HttpConn>,
    base: &BaseUrl,
    config: &ClientConfig,
    challenge: Bytes,
    max: usize,
) -> Handshake {
    let endpoint = Endpoint::Handshake;
    let fields = Fields {
        body: Some(challenge),
        ..Fields::default()
    };
    let (response, deadline) = match post_until_sent(conn, base, config, endpoint, &fields).await {
        Ok(answer) => answer,
        Err(e) => return Handshake::Failed(e),
    };
    match response.status() {
        StatusCode::OK => {
            let session = response
                .headers()
                .get(SESSION_ID_HEADER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| SessionId::from_str(v).ok());
            let Some(session) = session else {
                *conn = None;
                return Handshake::Failed(TransportError::LongPoll(
                    LongPollError::MissingSessionId,
                ));
            };
            let reply = match http::read_body(response, max, endpoint, deadline).await {
                Ok(reply) => Ok(reply),
                Err(e) => {
                    *conn = None;
                    Err(e.into())
                }
            };
            Handshake::Open { session, reply }
        }
        StatusCode::UNAUTHORIZED => {
            let (body, complete) = http::read_prefix(response, MAX_HANDSHAKE_BODY, deadline).await;
            if complete && Rejection::decode(body.clone()).is_ok() {
                Handshake::Rejected(body)
            } else {
                Handshake::Failed(http::status_from_text(endpoint, 401, &body))
            }
        }
        _ => Handshake::Failed(http::status_error(endpoint, response, deadline).await),
    }
}

async fn send(
    conn: &mut Option<HttpConn>,
    base: &BaseUrl,
    config: &ClientConfig,
    message: Bytes,
    session: SessionId,
) -> Result<(), TransportError> {
    let endpoint = Endpoint::Send;
    let fields = Fields {
        session: Some(session),
        body: Some(message),
        ..Fields::default()
    };
    let mut busy = 0u32;
    loop {
        let (response, deadline) = post_until_sent(conn, base, config, endpoint, &fields).await?;
        let status = response.status();
        if status.is_success() {
            // Read what there is (nothing, from a 204) so the connection
            // can carry the next request.
            let _ = http::read_prefix(response, 0, deadline).await;
            return Ok(());
        }
        if status == StatusCode::GONE {
            return Err(TransportError::LongPoll(LongPollError::SessionGone));
        }
        if status != StatusCode::SERVICE_UNAVAILABLE {
            return Err(http::status_error(endpoint, response, deadline).await);
        }
        // 503: the server is busy and did not take the message (ours
        // queues one whole or not at all), so sending it again cannot
        // deliver it twice; it stays at the front of the queue, so nothing
        // overtakes it.
        busy = busy.saturating_add(1);
        let asked = retry_after(response.headers());
        let too_long = asked.filter(|pause| *pause > config.max_busy_pause);
        let body = http::answer_text(response, deadline).await;
        if busy > config.busy_retries || too_long.is_some() {
            return Err(TransportError::LongPoll(LongPollError::Busy {
                endpoint: endpoint.path(),
                times: busy,
                retry_after: too_long,
                body,
            }));
        }
        tokio::time::sleep(asked.unwrap_or_else(|| config.pause(busy))).await;
    }
}

/// A `Retry-After` in delta-seconds (digits; too many for a u64 is as
/// long as can be); `None` without one, or for an HTTP date, which is not
/// read (the pause of a failed poll is taken instead).
fn retry_after(headers: &hyper::HeaderMap) -> Option<Duration> {
    let text = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.parse().map_or(Duration::MAX, Duration::from_secs))
}

/// Posts to `endpoint` until the request is sent: a request that
/// certainly did not leave (no connection) is tried again after a pause,
/// at most [`ClientConfig::max_failures`] times in all. Returns the
/// response and the deadline its body must be read by.
async fn post_until_sent(
    conn: &mut Option<HttpConn>,
    base: &BaseUrl,
    config: &ClientConfig,
    endpoint: Endpoint,
    fields: &Fields,
) -> Result<(hyper::Response<hyper::body::Incoming>, Instant), TransportError> {
    let mut failures = 0u32;
    loop {
        let deadline = Instant::now() + config.request_timeout;
        match http::post(
            conn,
            base,
            config.connect_timeout,
            endpoint,
            fields,
            deadline,
        )
        .await
        {
            Ok(response) => return Ok((response, deadline)),
            Err(Failure::NotSent(e)) => {
                failures = failures.saturating_add(1);
                if failures >= config.max_failures {
                    return Err(e);
                }
                tokio::time::sleep(config.pause(failures)).await;
            }
            Err(Failure::Failed(e)) => return Err(e),
        }
    }
}

async fn post_disconnect(
    conn: &mut Option<HttpConn>,
    base: &BaseUrl,
    config: &ClientConfig,
    session: SessionId,
    deadline: Instant,
) -> Result<(), Failure> {
    let fields = Fields {
        session: Some(session),
        ..Fields::default()
    };
    let response = http::post(
        conn,
        base,
        config.connect_timeout,
        Endpoint::Disconnect,
        &fields,
        deadline,
    )
    .await?;
    let _ = http::read_prefix(response, 0, deadline).await;
    Ok(())
}

/// `/lp/disconnect` for a dropped transport, on a new connection, at most
/// [`ClientConfig::disconnect_timeout`].
pub(super) async fn disconnect(base: Arc<BaseUrl>, config: ClientConfig, session: SessionId) {
    let deadline = Instant::now() + config.disconnect_timeout;
    let _ = tokio::time::timeout_at(
        deadline,
        post_disconnect(&mut None, &base, &config, session, deadline),
    )
    .await;
}

/// What one poll brought.
enum Polled {
    /// A message, with its sequence number if the server numbers them.
    Message(Bytes, Option<u64>),
    /// `204`: nothing within the server's hold.
    Empty,
    /// `410`: the session is closed and drained.
    Gone,
}

/// The poller: one `/lp/recv` at a time while the stream's queue has room,
/// acknowledging the highest sequence number received (the [`Inbox`]
/// judges each answer: new, a repeat, or a jump that ends the stream);
/// what ends it is in `LongPollTransport`'s docs.
pub(super) async fn run_poller(
    shared: Arc<Shared>,
    base: Arc<BaseUrl>,
    config: ClientConfig,
    session: SessionId,
) {
    let mut conn = None;
    let mut inbox = Inbox::new();
    let mut failures = 0u32;
    loop {
        // Backpressure: wait for room in the queue.
        let max = loop {
            let notified = shared.to_poller.notified();
            {
                let st = shared.lock();
                if !st.received_full() {
                    break st.max;
                }
            }
            notified.await;
        };
        let error = match poll(&mut conn, &base, &config, session, inbox.ack(), max).await {
            Ok(Polled::Message(message, seq)) => {
                failures = 0;
                match inbox.accept(seq) {
                    Ok(Accepted::New) => {
                        let mut wake = Wake::default();
                        shared.lock().push_received(message, &mut wake);
                        wake.wake();
                        continue;
                    }
                    Ok(Accepted::Repeat) => continue,
                    Err(jump) => Some(TransportError::LongPoll(LongPollError::Sequence(jump))),
                }
            }
            Ok(Polled::Empty) => {
                failures = 0;
                continue;
            }
            Ok(Polled::Gone) => None,
            Err(
                e @ (TransportError::TooLarge { .. }
                | TransportError::LongPoll(LongPollError::MalformedSequence { .. })),
            ) => Some(e),
            Err(e) => {
                conn = None;
                failures = failures.saturating_add(1);
                if shared.lock().disconnected {
                    None
                } else if failures >= config.max_failures {
                    Some(e)
                } else {
                    tokio::time::sleep(config.pause(failures)).await;
                    continue;
                }
            }
        };
        let mut wake = Wake::default();
        shared
            .lock()
            .end_stream(error.map_or(End::Done, End::Error), &mut wake);
        wake.wake();
        return;
    }
}

async fn poll(
    conn: &mut Option<HttpConn>,
    base: &BaseUrl,
    config: &ClientConfig,
    session: SessionId,
    ack: u64,
    max: usize,
) -> Result<Polled, TransportError> {
    let endpoint = Endpoint::Recv;
    let fields = Fields {
        session: Some(session),
        ack: Some(ack),
        body: None,
    };
    let deadline = Instant::now() + config.request_timeout;
    let response = http::post(
        conn,
        base,
        config.connect_timeout,
        endpoint,
        &fields,
        deadline,
    )
    .await
    .map_err(Failure::into_error)?;
    match response.status() {
        StatusCode::OK => {
            let seq = match response.headers().get(SEQUENCE_HEADER) {
                None => None,
                Some(value) => Some(parse_seq(value.as_bytes())?),
            };
            let message = http::read_body(response, max, endpoint, deadline).await?;
            Ok(Polled::Message(message, seq))
        }
        StatusCode::NO_CONTENT => {
            let _ = http::read_prefix(response, 0, deadline).await;
            Ok(Polled::Empty)
        }
        StatusCode::GONE => Ok(Polled::Gone),
        _ => Err(http::status_error(endpoint, response, deadline).await),
    }
}

/// An `x-bijou-seq` value: a decimal u64 (spaces around it allowed, as
/// HTTP allows).
fn parse_seq(value: &[u8]) -> Result<u64, TransportError> {
    std::str::from_utf8(value)
        .ok()
        .map(str::trim)
        .filter(|text| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|text| text.parse::<u64>().ok())
        .ok_or_else(|| {
            let shown = &value[..value.len().min(32)];
            TransportError::LongPoll(LongPollError::MalformedSequence {
                value: String::from_utf8_lossy(shown).into_owned(),
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_read_in_seconds_and_a_date_or_garbage_is_no_pause() {
        let read = |value: &'static str| {
            let mut headers = hyper::HeaderMap::new();
            headers.insert(RETRY_AFTER, hyper::header::HeaderValue::from_static(value));
            retry_after(&headers)
        };
        assert_eq!(read("0"), Some(Duration::ZERO));
        assert_eq!(read(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(read("99999999999999999999999"), Some(Duration::MAX));
        for ignored in ["", "Wed, 21 Oct 2015 07:28:00 GMT", "-1", "1.5", "soon"] {
            assert_eq!(read(ignored), None, "{ignored:?}");
        }
        assert_eq!(retry_after(&hyper::HeaderMap::new()), None);
    }

    #[test]
    fn sequence_headers_are_decimal_u64s_and_anything_else_is_malformed() {
        assert_eq!(parse_seq(b"7").ok(), Some(7));
        assert_eq!(parse_seq(b" 18446744073709551615 ").ok(), Some(u64::MAX));
        for bad in [
            &b""[..],
            b"+7",
            b"-1",
            b"0x10",
            b"1.0",
            b"18446744073709551616",
            b"\xff",
        ] {
            let err = parse_seq(bad).expect_err("malformed");
            assert!(
                matches!(
                    err,
                    TransportError::LongPoll(LongPollError::MalformedSequence { .. })
                ),
                "{bad:?}: {err}"
            );
        }
        let long = [b'9'; 100];
        let Err(TransportError::LongPoll(LongPollError::MalformedSequence { value })) =
            parse_seq(&long)
        else {
            panic!("a 100-digit number is malformed");
        };
        assert_eq!(value.len(), 32, "shown cut to 32 bytes");
    }
}
