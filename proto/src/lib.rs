//! # bijou-proto
//!
//! The Subduction protocol without a runtime: wire types and state
//! machines that take bytes and the time and give back what to send, what
//! was delivered and when to call again, like quinn-proto under quinn or
//! rustls under tokio-rustls. This crate names no async or I/O crate;
//! `bijou-net` is the async shell around it.
//!
//! ```text
//!   bijou-net (async shell)   transports · handshake drivers with timeouts · Connection
//!        │  bytes, Now                                 ▲ Received, bytes to send, deadlines
//!        ▼                                             │
//!   bijou-proto (sans-IO)     message      SUM/SUH/SUE/SUK: one Message type (decode strict, encode exact)
//!                             handshake    Initiator, Responder (+ NonceCache, the replay cache)
//!                             session      Session: the connection after the handshake, with
//!                                          VerifyBudget pacing and EphemeralSession
//!                             time         Clock / TimeProvider: one injectable time source
//! ```
//!
//! - [`message`]: Subduction-compatible messages: the `SUM\0` sync
//!   envelope ([`SyncMessage`]) with its signed
//!   `STC\0`/`STF\0` payloads, the `SUH\0` handshake, the `SUE\0`
//!   ephemeral messages and the `SUK\0` keyhive messages ([`keyhive`]), all
//!   decoded through one [`Message`]. Decoding is injective, bounded and
//!   panic-free; encoding never truncates.
//! - [`handshake`]: the mutual handshake's two sides, [`Initiator`] and
//!   [`Responder`], and the replay cache ([`nonce_cache`]).
//! - [`session`]: [`Session`], an authenticated connection's state:
//!   received messages decoded and verified in bounded steps
//!   ([`verify_budget`] paces them), ephemeral subscriptions
//!   ([`ephemeral`]), and the send-side rules.
//! - [`time`]: [`Clock`], the one time source a driver reads
//!   and passes in as [`Now`].
//!
//! [`Initiator`]: handshake::Initiator
//! [`Responder`]: handshake::Responder
//! [`Session`]: session::Session
// `no_std` + `alloc` without the `std` feature (checked by CI's wasm32
// build); tests and std builds keep std's prelude.
#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

extern crate alloc;

pub mod ephemeral;
pub mod handshake;
pub mod keyhive;
mod lock;
pub mod message;
pub mod nonce_cache;
pub mod rng;
pub mod session;
pub mod time;
pub mod verify_budget;

pub use bijou_codec::Wire;
pub use handshake::{Authenticated, HandshakeConfig, HandshakeError, Initiator, Responder};
pub use message::{HandshakeMessage, Message, MessageError, MessageFrame, SyncMessage};
pub use session::{Delivered, Received, Rejected, Session, SessionConfig};
pub use time::{Clock, Now, TimeProvider, Timestamp};
pub use verify_budget::VerifyBudget;
