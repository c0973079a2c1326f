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
//!   Connection<T: Transport>  ── handle_message / poll_work / poll_event ──►  bijou_frame::proto::Session
//!        │  Sink<Bytes> + Stream<Bytes>
//!        ▼
//!   transport::FramedTransport  (bijou64 / LEB128 / u32-BE prefix over AsyncRead + AsyncWrite)
//!   transport::WebSocketTransport (feature `websocket`)   transport::LengthChecked (anything else)
//! ```
//!
//! - [`transport`]: the [`Transport`] trait (bytes only) and its
//!   implementations, each with a maximum message length the handshake
//!   lowers to 256 bytes until the peer is authenticated.
//! - [`handshake`]: [`initiate`](handshake::initiate) and
//!   [`respond`](handshake::respond), with [`ConnectError`].
//! - [`connection`]: [`Connection`], its split halves, and what it
//!   delivers.
//! - [`message_codec`]: [`MessageCodec`], tokio-util's `Decoder`/`Encoder`
//!   of typed messages over a [`FrameCodec`].
//!
//! The protocol's modules are re-exported here ([`message`],
//! [`ephemeral`], [`nonce_cache`], [`verify_budget`], [`time`]) and so are
//! the length prefixes ([`prefix`]), so one crate names everything a
//! connection needs.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod budget_timer;
pub mod connection;
pub mod handshake;
pub mod keyhive;
pub mod message_codec;
mod tokio_clock;
pub mod transport;

pub use bijou_framing::{
    frame_codec, prefix, Builder, FrameCodec, FrameError, DEFAULT_MAX_FRAME_LENGTH,
};
pub use bijou_proto::{ephemeral, message, nonce_cache, rng, session, time, verify_budget};

pub use bijou_codec::Wire;
pub use bijou_proto::handshake::{HandshakeConfig, HandshakeError, Responder};
pub use bijou_proto::message::{
    HandshakeMessage, Message, MessageError, MessageFrame, SyncMessage,
};
pub use bijou_proto::VerifyBudget;
pub use connection::{
    Connection, Delivered, Received, Rejected, RejectedItem, RunError, Shutdown, VerifiedMessage,
    HELD_BYTES, HELD_MESSAGES,
};
pub use handshake::ConnectConfig;
pub use handshake::ConnectError;
pub use message_codec::{MessageCodec, SendError};
pub use tokio_clock::TokioClock;
pub use transport::{Transport, TransportError};
