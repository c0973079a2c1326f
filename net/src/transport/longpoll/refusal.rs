//! Why the server refused a request: one variant per cause, each with its
//! status, and a short text (the response body) that says what was wrong
//! and what to do.

use std::time::Duration;

use hyper::StatusCode;

use super::{MAX_HANDSHAKE_BODY, SESSION_ID_HEADER};
use bijou_proto::longpoll_seq::AckBeyondDelivered;
use bijou_signing::hex::ParseHexError;

/// A request the server did not carry out.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refusal {
    /// 404.
    #[error("no such endpoint: a long-poll server answers POST /lp/handshake, /lp/send, /lp/recv and /lp/disconnect")]
    NotFound,
    /// 405, with `allow: POST`.
    #[error("{method} is not allowed here: the long-poll endpoints take POST")]
    MethodNotAllowed {
        /// The request's method.
        method: hyper::Method,
    },
    /// 400.
    #[error("no {SESSION_ID_HEADER} header: send the id the handshake answered with")]
    MissingSessionId,
    /// 400.
    #[error("bad {SESSION_ID_HEADER} header ({0}): send the id the handshake answered with")]
    MalformedSessionId(ParseHexError),
    /// 410: unknown, expired, closed: the same answer for each, so that an
    /// answer says nothing about ids that are not one's own.
    #[error("no such long-poll session (it ended, expired or never existed): open a new one with POST /lp/handshake")]
    SessionGone,
    /// 400.
    #[error(
        "bad x-bijou-ack header: it is the highest message sequence number received, a decimal u64"
    )]
    MalformedAck,
    /// 400: the session's outbox refused the acknowledgement.
    #[error(transparent)]
    AckBeyondDelivered(#[from] AckBeyondDelivered),
    /// 409.
    #[error("another /lp/recv of this session is waiting: poll one at a time")]
    RecvInProgress,
    /// 409: a session takes one `/lp/send` at a time, so it holds at most
    /// one body beyond its queue.
    #[error("another /lp/send of this session is in progress: send one at a time")]
    SendInProgress,
    /// 413.
    #[error("body of {len} bytes or more is over this endpoint's limit of {max} bytes: send at most {max}")]
    TooLarge {
        /// The length announced, or received so far.
        len: u64,
        /// The limit.
        max: usize,
    },
    /// 400.
    #[error("the request body broke off after {have} bytes, or did not match its Content-Length: send the whole body")]
    BodyBrokenOff {
        /// Bytes received.
        have: usize,
    },
    /// 408.
    #[error(
        "the request body stopped for {after:?} after {have} bytes: send bodies without pausing"
    )]
    BodyStalled {
        /// The stall timeout.
        after: Duration,
        /// Bytes received.
        have: usize,
    },
    /// 408: a body must arrive whole within a deadline: the handshake
    /// timeout before authentication, the send body timeout for
    /// `/lp/send`.
    #[error("the request body did not arrive within {after:?} ({have} bytes came): send it whole, at once")]
    BodyTooSlow {
        /// The handshake timeout, or the send body timeout.
        after: Duration,
        /// Bytes received.
        have: usize,
    },
    /// 503.
    #[error("the server has {max} sessions open or opening, its limit: try again later")]
    SessionsFull {
        /// The limit.
        max: usize,
    },
    /// 503.
    #[error("the server has more handshakes waiting than it takes: try again later")]
    AcceptQueueFull,
    /// 503.
    #[error("the server accepts no new sessions")]
    NotAccepting,
    /// 503.
    #[error("the server did not answer the handshake within {after:?}: try again later")]
    HandshakeTimeout {
        /// The handshake timeout.
        after: Duration,
    },
    /// 401 (text): the server side ended the session without a reply.
    #[error("the server closed the session without answering the handshake: check the challenge (at most {MAX_HANDSHAKE_BODY} bytes, a SUH\\0 challenge)")]
    HandshakeUnanswered,
    /// 500.
    #[error("the server answered the handshake with something other than a handshake reply")]
    NotAHandshakeReply,
    /// 500.
    #[error("the server could not draw a session id from the operating system's random source")]
    NoRandomness,
    /// 503.
    #[error(
        "the server has not taken this session's earlier messages for {after:?}: send again later"
    )]
    InboundFull {
        /// The send timeout.
        after: Duration,
    },
}

impl Refusal {
    /// The HTTP status of the answer.
    pub(super) fn status(&self) -> StatusCode {
        match self {
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::MissingSessionId
            | Self::MalformedSessionId(_)
            | Self::MalformedAck
            | Self::AckBeyondDelivered(_)
            | Self::BodyBrokenOff { .. } => StatusCode::BAD_REQUEST,
            Self::SessionGone => StatusCode::GONE,
            Self::RecvInProgress | Self::SendInProgress => StatusCode::CONFLICT,
            Self::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BodyStalled { .. } | Self::BodyTooSlow { .. } => StatusCode::REQUEST_TIMEOUT,
            Self::SessionsFull { .. }
            | Self::AcceptQueueFull
            | Self::NotAccepting
            | Self::HandshakeTimeout { .. }
            | Self::InboundFull { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::HandshakeUnanswered => StatusCode::UNAUTHORIZED,
            Self::NotAHandshakeReply | Self::NoRandomness => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_has_its_status_and_says_what_to_do() {
        let cases = [
            (Refusal::NotFound, 404, "POST /lp/handshake"),
            (
                Refusal::MethodNotAllowed {
                    method: hyper::Method::GET,
                },
                405,
                "GET is not allowed",
            ),
            (Refusal::MissingSessionId, 400, "x-session-id"),
            (
                Refusal::MalformedSessionId(ParseHexError::Length {
                    expected: 32,
                    found: 3,
                }),
                400,
                "found 3 characters",
            ),
            (Refusal::SessionGone, 410, "open a new one"),
            (Refusal::MalformedAck, 400, "decimal u64"),
            (
                Refusal::AckBeyondDelivered(AckBeyondDelivered {
                    ack: 9,
                    delivered: 2,
                }),
                400,
                "up to 2",
            ),
            (Refusal::RecvInProgress, 409, "one at a time"),
            (Refusal::SendInProgress, 409, "send one at a time"),
            (Refusal::TooLarge { len: 300, max: 256 }, 413, "at most 256"),
            (Refusal::BodyBrokenOff { have: 5 }, 400, "after 5 bytes"),
            (
                Refusal::BodyStalled {
                    after: Duration::from_secs(1),
                    have: 0,
                },
                408,
                "stopped for 1s",
            ),
            (
                Refusal::BodyTooSlow {
                    after: Duration::from_secs(10),
                    have: 3,
                },
                408,
                "within 10s (3 bytes came)",
            ),
            (Refusal::SessionsFull { max: 4 }, 503, "4 sessions"),
            (Refusal::AcceptQueueFull, 503, "try again later"),
            (Refusal::NotAccepting, 503, "no new sessions"),
            (
                Refusal::HandshakeTimeout {
                    after: Duration::from_secs(10),
                },
                503,
                "within 10s",
            ),
            (Refusal::HandshakeUnanswered, 401, "without answering"),
            (Refusal::NotAHandshakeReply, 500, "handshake reply"),
            (Refusal::NoRandomness, 500, "random source"),
            (
                Refusal::InboundFull {
                    after: Duration::from_secs(10),
                },
                503,
                "send again later",
            ),
        ];
        for (refusal, status, text) in cases {
            assert_eq!(refusal.status().as_u16(), status, "{refusal:?}");
            assert!(refusal.to_string().contains(text), "{refusal}");
        }
    }
}
