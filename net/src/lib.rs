//! # bijou-net
//!
//! The async shell around [`bijou_proto`]'s sans-IO protocol: transports
//! that carry whole messages, handshake drivers with timeouts, and
//! [`Connection`], a [`Session`](bijou_proto::session::Session) plus a
//! transport. Everything protocol (checks, verification, budgets,
//! ephemeral state) happens in `bijou-proto`; this crate reads the clock,
//! moves bytes, waits on timers and decides when to yield.
//!
//! ```text
//!   Connection<T: Transport>  ── handle_message / poll_work / poll_event ──►  bijou_frame::proto::session::Session
//!        │  Sink<Bytes> + Stream<Bytes>
//!        ▼
//!   transport::FramedTransport  (bijou64 / LEB128 / u32-BE prefix over AsyncRead + AsyncWrite)
//!   transport::websocket::WebSocketTransport (feature `websocket`)
//!   transport::iroh::IrohTransport (feature `iroh`)   transport::LengthChecked (anything else)
//! ```
//!
//! - [`transport`]: the [`Transport`](transport::Transport) trait (bytes only) and its
//!   implementations, each with a maximum message length the handshake
//!   lowers to 256 bytes until the peer is authenticated.
//! - [`handshake`]: the session's own handshake driven over a transport
//!   ([`initiate`](handshake::initiate), [`respond`](handshake::respond),
//!   and what [`Connection::connect`]/[`Connection::accept`] run), with
//!   [`ConnectConfig`](handshake::ConnectConfig) (its optional seed) and
//!   [`ConnectError`](handshake::ConnectError).
//! - [`Connection`], its split halves ([`ConnectionSender`],
//!   [`ConnectionReceiver`]), and why it stops ([`RunError`]).
//! - [`MessageCodec`], tokio-util's `Decoder`/`Encoder` of typed messages
//!   over bijou-framing's `FrameCodec`.
//!
//! Protocol types keep their one path in the crate that defines them: the
//! messages in `bijou_proto::message`, what a connection delivers in
//! `bijou_proto::session`, the length prefixes in `bijou_framing::prefix`
//! (`bijou_frame::proto::...` and `bijou_frame::framing::...` through the
//! facade).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod budget_timer;
mod connection;
mod error_kind;
pub mod handshake;
pub mod keyhive;
mod message_codec;
mod tokio_clock;
pub mod transport;

pub use connection::{
    Connection, ConnectionReceiver, ConnectionSender, ReuniteError, RunError, Shutdown, HELD_BYTES,
    HELD_MESSAGES, YIELD_AFTER,
};
pub use error_kind::ErrorKind;
pub use message_codec::{MessageCodec, SendError};
pub use tokio_clock::TokioClock;
