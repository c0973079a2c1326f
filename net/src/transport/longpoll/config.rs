use std::time::Duration;

use super::DEFAULT_POLL_TIMEOUT;
use crate::handshake::DEFAULT_HANDSHAKE_TIMEOUT;

/// How long a session may go without any request before the server ends
/// it: 90 s, twice [`DEFAULT_POLL_TIMEOUT`] and 30 s more. A client that
/// keeps polling is never idle (a held `/lp/recv` counts as activity for
/// as long as it is held, and it is answered within the poll timeout);
/// one whose poll failed waits a second before the next (Subduction's
/// client) and stays far inside the bound.
pub const DEFAULT_IDLE_TIMEOUT: Duration =
    Duration::from_secs(2 * DEFAULT_POLL_TIMEOUT.as_secs() + 30);

/// The bounds and timeouts of a [`LongPollServer`](super::LongPollServer).
///
/// | Setting | Default | At the bound | Tested in `net/tests/` |
/// |---|---|---|---|
/// | `max_sessions` | 10,000 | `/lp/handshake` answers `503` | `longpoll_server.rs`: `handshakes_beyond_max_sessions_are_503_until_one_ends` |
/// | `accept_queue` | 64 sessions | `/lp/handshake` answers `503` | `longpoll_server.rs`: `a_full_accept_queue_is_503` |
/// | `handshake_timeout` | 10 s | `/lp/handshake` answers `503` (no answer), `408` (a body still coming) | `longpoll_server.rs`: `a_handshake_nobody_answers_is_503_after_the_handshake_timeout`; `longpoll_bad_input.rs`: `a_chunked_body_that_never_ends_is_cut_off_with_408` |
/// | `poll_timeout` | 30 s | `/lp/recv` answers `204` | `longpoll_server.rs`: `without_acknowledgements_each_message_is_taken_once_in_order` |
/// | `idle_timeout` | 90 s | the session ends ([`Expired`](super::LongPollError::Expired)); a request in progress keeps it | `longpoll_server.rs`: `an_idle_session_expires_and_its_stream_says_so_after_what_was_queued`, `a_held_recv_keeps_a_session_alive_past_the_idle_timeout`; `longpoll_interop_server.rs`: `a_client_that_stops_polling_expires_on_our_side` |
/// | `header_read_timeout` | 10 s | the HTTP connection is closed | `longpoll_bad_input.rs`: `headers_that_trickle_in_are_cut_off` |
/// | `body_stall_timeout` | 30 s | `408`, the HTTP connection is closed | `longpoll_bad_input.rs`: `a_chunked_body_that_never_ends_is_cut_off_with_408` |
/// | `send_body_timeout` | 60 s | `408`, the HTTP connection is closed (an `/lp/send` body that keeps coming, too slowly) | `longpoll_bad_input.rs`: `a_send_body_that_trickles_past_the_send_body_timeout_is_408` |
/// | `write_timeout` | 30 s | the HTTP connection is dropped (a client that stopped reading its answer) | `longpoll_bad_input.rs`: `a_client_that_stops_reading_its_answer_is_dropped_after_the_write_timeout` |
/// | `send_timeout` | 10 s | `/lp/send` answers `503` | `longpoll_server.rs`: `a_full_inbound_queue_holds_a_send_until_there_is_room_or_the_send_timeout` |
/// | `inbound_messages`, `inbound_bytes` | 128, 8 MiB | `/lp/send` is held (then `send_timeout`) | the same |
/// | `outbound_messages`, `outbound_bytes` | 1,024, 64 MiB | the sink refuses ([`Backpressure`](super::LongPollError::Backpressure)), the session ends | `longpoll_server.rs`: `a_client_that_never_polls_pins_at_most_the_outbound_bound` |
///
/// Fixed bounds: an `/lp/handshake` body is at most
/// [`MAX_HANDSHAKE_BODY`](super::MAX_HANDSHAKE_BODY) (256 bytes, `413`
/// beyond; `longpoll_bad_input.rs`:
/// `a_handshake_body_over_256_bytes_is_413_and_costs_no_more_than_its_bytes`),
/// an `/lp/send` body at most the session's maximum message length (`413`;
/// `send_bodies_over_the_cap_are_413_and_memory_follows_the_bytes_received`),
/// a request head at most 16 KiB (`431`, `headers_that_trickle_in_are_cut_off`).
/// An idle session holds about 380 bytes (`longpoll_idle_memory.rs`; see
/// [`LongPollSession`](super::LongPollSession)).
///
/// Both queues always take one message when they are empty, whatever its
/// length (up to the session's maximum message length), so the byte
/// bounds hold messages back and never refuse a single one: a queue holds
/// at most its byte bound, or one message.
///
/// ```
/// use bijou_frame::net::transport::longpoll::{ServerConfig, DEFAULT_IDLE_TIMEOUT};
/// use std::time::Duration;
///
/// let mut config = ServerConfig::default();
/// assert_eq!(config.idle_timeout, DEFAULT_IDLE_TIMEOUT);
/// config.poll_timeout = Duration::from_secs(20);
/// config.idle_timeout = 2 * config.poll_timeout + Duration::from_secs(30);
/// config.max_sessions = 1_000;
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// How long an `/lp/recv` is held for a message before it is answered
    /// `204` ([`DEFAULT_POLL_TIMEOUT`], 30 s, Subduction's). Keep it under
    /// the clients' request timeout.
    pub poll_timeout: Duration,
    /// How long a session may go without a request before it ends
    /// ([`DEFAULT_IDLE_TIMEOUT`]). A request in progress (a held
    /// `/lp/recv`, a long upload) counts as activity. Keep it well above
    /// `poll_timeout`. Sessions are swept four times per idle timeout, so
    /// one ends between 1 and 1¼ idle timeouts after its last request.
    pub idle_timeout: Duration,
    /// Bound on an `/lp/handshake` request: its body read, and the wait
    /// for the answer of whoever took the session from
    /// [`IncomingSessions::accept`](super::IncomingSessions::accept)
    /// ([`DEFAULT_HANDSHAKE_TIMEOUT`], 10 s).
    pub handshake_timeout: Duration,
    /// Bound on reading a request's head, and on an idle keep-alive
    /// connection's wait for the next one (10 s).
    pub header_read_timeout: Duration,
    /// The longest pause inside a request body (30 s): a body that stops
    /// coming is answered `408` and its connection closed.
    pub body_stall_timeout: Duration,
    /// Bound on a whole `/lp/send` body, from the end of its head (60 s):
    /// a body that keeps coming, but too slowly to finish (a byte every
    /// 29 s meets the stall timeout for ever), is answered `408` and its
    /// connection closed. 60 s is above our client's request timeout (45
    /// s, after which it has given up anyway) and takes 50 MiB at 1 MB/s;
    /// raise it for larger messages over slower links.
    pub send_body_timeout: Duration,
    /// Bound on draining an answer (30 s): from the first write the
    /// connection cannot take (the client stopped reading, and the socket's
    /// buffers are full) until everything hyper holds for it is written.
    /// Past it the connection is dropped, as if the client had gone: its
    /// session stays until the idle timeout, and with acknowledgements the
    /// message in the lost answer is answered again on the next
    /// `/lp/recv`. An answer the socket takes at once arms nothing. Raise
    /// it for messages of many MiB over slow links (50 MiB at 1 MB/s takes
    /// 50 s).
    pub write_timeout: Duration,
    /// How long an `/lp/send` waits for room in a full inbound queue before
    /// it is answered `503` (10 s).
    pub send_timeout: Duration,
    /// Sessions open or in their handshake at once (10,000).
    pub max_sessions: usize,
    /// Sessions whose handshake arrived, waiting to be taken from
    /// [`IncomingSessions::accept`](super::IncomingSessions::accept) (64;
    /// at least 1).
    pub accept_queue: usize,
    /// Messages from the client waiting for the server side's stream (128,
    /// as Subduction's).
    pub inbound_messages: usize,
    /// Their bytes (8 MiB).
    pub inbound_bytes: usize,
    /// Messages waiting for the client's `/lp/recv` (1,024, as
    /// Subduction's), acknowledged ones excluded.
    pub outbound_messages: usize,
    /// Their bytes (64 MiB: more than one message of the largest length).
    pub outbound_bytes: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            poll_timeout: DEFAULT_POLL_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            header_read_timeout: Duration::from_secs(10),
            body_stall_timeout: Duration::from_secs(30),
            send_body_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(30),
            send_timeout: Duration::from_secs(10),
            max_sessions: 10_000,
            accept_queue: 64,
            inbound_messages: 128,
            inbound_bytes: 8 * 1024 * 1024,
            outbound_messages: 1024,
            outbound_bytes: 64 * 1024 * 1024,
        }
    }
}
