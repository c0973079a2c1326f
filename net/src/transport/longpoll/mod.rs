//! HTTP long-poll: the transport Subduction's server opens beside
//! WebSocket (`subduction_http_longpoll` 0.13), for clients behind proxies
//! and firewalls that do not pass WebSocket (feature `longpoll`).
//!
//! ```text
//!   client                                   server
//!     | POST /lp/handshake   body: challenge    |
//!     |---------------------------------------->|  (at most 256 bytes)
//!     | 200  x-session-id: <32 hex>  body: response
//!     |<----------------------------------------|  (401 + a Rejection when refused)
//!     | POST /lp/send  x-session-id  body: one message
//!     |---------------------------------------->|
//!     | 204                                     |
//!     |<----------------------------------------|
//!     | POST /lp/recv  x-session-id  [x-bijou-ack: n]
//!     |---------------------------------------->|  held until a message is ready
//!     | 200 [x-bijou-seq: n+1]  body: one message    (204 after the poll timeout,
//!     |<----------------------------------------|   410 once the session is closed)
//!     | POST /lp/disconnect  x-session-id       |
//!     |---------------------------------------->|
//!     | 204                                     |
//! ```
//!
//! Every body that carries a message is exactly that message's bytes, as
//! one binary WebSocket message carries it: no prefix, no encoding. The
//! session id is 16 bytes from the operating system, written as 32
//! lower-case hex digits: the one credential for a session's requests.
//!
//! # Nothing lost
//!
//! Subduction's server takes a message off its queue before the `/lp/recv`
//! response is written: if that response never reaches the client (a proxy
//! drops it, the client's request times out, the connection resets), the
//! message is gone. Ours numbers each message it delivers
//! ([`SEQUENCE_HEADER`]) and keeps it until the client acknowledges it
//! ([`ACK_HEADER`] on its next `/lp/recv`): a poll that acknowledges less
//! gets the unacknowledged message again. Our client acknowledges every
//! message, drops a repeat by its number, and ends its stream with
//! [`LongPollError::Sequence`] on a number that jumps. Both sides' rules
//! are bijou-proto's sans-IO [`longpoll_seq`](bijou_proto::longpoll_seq)
//! machines (the server's `Outbox`, the client's `Inbox`); this module
//! moves the HTTP around them. A client that sends no
//! acknowledgement (Subduction's) gets Subduction's behaviour: a message
//! counts as delivered once its response is handed to the connection.
//! Against Subduction's server our client cannot recover a lost response;
//! a push or fetch whose answer never comes ends by its operation's
//! deadline, and says so.
//!
//! # Server
//!
//! [`LongPollServer`] serves HTTP/1.1 on the streams the caller accepts
//! and hands each new session to [`IncomingSessions::accept`] as a
//! [`LongPollSession`], a [`Transport`](super::Transport) on which
//! `Connection::accept` runs the handshake. Its bounds are
//! [`ServerConfig`]'s.

use std::time::Duration;

use bijou_framing::DEFAULT_MAX_FRAME_LENGTH;

mod body;
mod client;
mod config;
mod error;
mod refusal;
mod registry;
mod server;
mod session;
mod session_id;
mod write_deadline;

pub use client::{
    connect, connect_with, ClientConfig, LongPollTransport, RECV_QUEUE_BYTES, RECV_QUEUE_MESSAGES,
    SEND_QUEUE_BYTES, SEND_QUEUE_MESSAGES,
};
pub use config::{ServerConfig, DEFAULT_IDLE_TIMEOUT};
pub use error::LongPollError;
pub use server::{IncomingSessions, LongPollServer};
pub use session::LongPollSession;
pub use session_id::SessionId;

/// The request header carrying the session id (HTTP header names are case
/// insensitive; Subduction writes `x-session-id`).
pub const SESSION_ID_HEADER: &str = "x-session-id";

/// The response header of a `200` to `/lp/recv` from our server: the
/// message's sequence number, from 1, counted per session.
pub const SEQUENCE_HEADER: &str = "x-bijou-seq";

/// The request header of an `/lp/recv` from our client: the highest
/// sequence number it has received (0 before the first message). Its
/// presence turns acknowledgements on for the session.
pub const ACK_HEADER: &str = "x-bijou-ack";

/// How long the server holds an `/lp/recv` before answering `204`: 30 s,
/// as Subduction's `DEFAULT_POLL_TIMEOUT_SECS`.
pub const DEFAULT_POLL_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest body either side accepts: 50 MiB, the message limit of
/// every transport (Subduction's `DEFAULT_MAX_BODY_SIZE` is 50 MB).
pub const LONGPOLL_MAX_MESSAGE_LENGTH: usize = DEFAULT_MAX_FRAME_LENGTH;

/// The longest `/lp/handshake` body the server reads: 256 bytes, as every
/// transport caps a peer that has not authenticated (a challenge is 158).
pub const MAX_HANDSHAKE_BODY: usize = bijou_proto::handshake::HANDSHAKE_MAX_MESSAGE_LENGTH;

/// The paths, under the server's base URL.
pub mod path {
    /// Opens a session: the body is the signed challenge.
    pub const HANDSHAKE: &str = "/lp/handshake";
    /// One message from the client.
    pub const SEND: &str = "/lp/send";
    /// One message to the client, when there is one.
    pub const RECV: &str = "/lp/recv";
    /// Ends the session.
    pub const DISCONNECT: &str = "/lp/disconnect";
}
