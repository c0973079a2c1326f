use std::time::Duration;

use bijou_proto::longpoll_seq::SequenceError;

/// What went wrong with a long-poll session (inside
/// [`TransportError::LongPoll`](crate::transport::TransportError::LongPoll)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LongPollError {
    /// Not an `http://host:port[/base]` URL (TLS, `https://`, is not built
    /// in: put a TLS-terminating proxy in front, or use another transport).
    #[error("long-poll URL {url:?}: {reason}")]
    Url {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The server answered an endpoint with a status the protocol does not
    /// expect there (its body's first bytes, as text, say why).
    #[error("POST {endpoint} answered {status}{}{body}", if .body.is_empty() { "" } else { ": " })]
    Status {
        /// The endpoint's path.
        endpoint: &'static str,
        /// The HTTP status code.
        status: u16,
        /// The start of the response body, as text.
        body: String,
    },
    /// A `200` to the handshake without a valid session id header: the
    /// server is not a long-poll server, or not a compatible one.
    #[error("the handshake was answered 200 without a valid x-session-id header: is this a Subduction long-poll server (its /lp/handshake)?")]
    MissingSessionId,
    /// The server answered `503` (busy) to one request, sent again
    /// [`ClientConfig::busy_retries`](super::ClientConfig::busy_retries)
    /// times, every time; or it asked for a pause (`Retry-After`) longer
    /// than [`ClientConfig::max_busy_pause`](super::ClientConfig::max_busy_pause):
    /// the message was not taken.
    #[error("POST {endpoint} answered 503 (server busy) {times} time{} in a row{}{}{body}: the server takes no more messages of this session now; send later, or connect again", if *.times == 1 { "" } else { "s" }, busy_pause(*.retry_after), if .body.is_empty() { "" } else { "; it said: " })]
    Busy {
        /// The endpoint's path.
        endpoint: &'static str,
        /// The `503` answers to it in a row.
        times: u32,
        /// The pause the last one asked for (`Retry-After`), when it was
        /// longer than the client waits.
        retry_after: Option<Duration>,
        /// The start of the last answer's body, as text.
        body: String,
    },
    /// The server no longer knows the session (`410`): it closed it, or it
    /// expired. Open a new connection.
    #[error("the server no longer knows this long-poll session (410): it was closed or expired; connect again")]
    SessionGone,
    /// The client polled nothing for longer than the server's idle
    /// timeout, and the server ended the session.
    #[error("the client polled nothing for {idle:?}: session expired")]
    Expired {
        /// The idle timeout.
        idle: Duration,
    },
    /// The client does not collect its messages: the session's queue to it
    /// is full. Nothing more is queued; the session ends.
    #[error("the long-poll client does not collect its messages: {queued} messages ({bytes} bytes) wait, at most {max_messages} messages or {max_bytes} bytes are kept")]
    Backpressure {
        /// Messages waiting.
        queued: usize,
        /// Their bytes.
        bytes: usize,
        /// The queue's bound in messages.
        max_messages: usize,
        /// The queue's bound in bytes.
        max_bytes: usize,
    },
    /// The session is closed: a message handed to the sink after it
    /// ended.
    #[error("the long-poll session is closed")]
    Closed,
    /// An `/lp/recv` answer's `x-bijou-seq` cannot come from a server that
    /// numbers its messages and answers the oldest one unacknowledged (a
    /// jump past the next number, or 0): messages are missing, so the
    /// stream ends with this rather than deliver out of order or take
    /// later messages for repeats.
    #[error(transparent)]
    Sequence(#[from] SequenceError),
    /// An `/lp/recv` answer's `x-bijou-seq` is not a decimal u64.
    #[error("x-bijou-seq {value:?} is not a decimal u64: is this a bijou long-poll server, or a proxy rewriting its headers?")]
    MalformedSequence {
        /// The header's value (its first 32 bytes).
        value: String,
    },
    /// A client of the server did not take the rest of an answer within
    /// the write timeout (it stopped reading; the socket's buffers are
    /// full): the server dropped the connection
    /// ([`ServerConfig::write_timeout`](super::ServerConfig::write_timeout)).
    #[error("the client did not take the rest of an answer within {after:?} (it stopped reading): the connection was dropped (raise ServerConfig::write_timeout for clients on slow links)")]
    WriteTimeout {
        /// The write timeout.
        after: Duration,
    },
    /// The HTTP exchange failed (connection refused or reset, a malformed
    /// response, a body that broke off).
    #[error("HTTP: {0}")]
    Http(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// The part of [`LongPollError::Busy`]'s text on a pause not waited for.
fn busy_pause(retry_after: Option<Duration>) -> String {
    retry_after.map_or_else(String::new, |pause| {
        format!(", the last asking for a pause of {pause:?}, over ClientConfig::max_busy_pause")
    })
}
