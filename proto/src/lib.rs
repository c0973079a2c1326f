//! # bijou-proto
//!
//! The Subduction protocol without a runtime: wire types and state
//! machines that take bytes and the time and give back what to send, what
//! was delivered and when to call again, like quinn-proto under quinn or
//! rustls under tokio-rustls. This crate names no async or I/O crate,
//! reads no clock and draws no randomness of its own; `bijou-net` is the
//! async shell around it. Without its default `std` feature it is
//! `no_std` + `alloc` (it builds for `wasm32-unknown-unknown`): the driver
//! then supplies the time and the seeds.
//!
//! ```text
//!   bijou-net (async shell)   transports · handshake drivers with timeouts · Connection
//!        │  bytes, Now, seeds                          ▲ Received, poll_transmit, deadlines
//!        ▼                                             │
//!   bijou-proto (sans-IO)     message      SUM/SUH/SUE/SUK: one Message type (decode strict, encode exact)
//!                             handshake    Initiator, Responder
//!                             nonce_cache  NonceCache: the responder's replay cache
//!                             replay_table ReplayTable: each peer's ephemeral window, across connections
//!                             session      Session: one connection from its first byte to close
//!                                          (handshake, poll loop, signing as an effect)
//!                             longpoll_seq Outbox, Inbox: long-poll sequence numbers and acknowledgements
//!                             time         Now, Timestamp, Clock / TimeProvider: one time source
//!                             rng          SeededRng: every random draw, from the driver's seed
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
//! - [`session`]: [`Session`], one connection from its first byte to its
//!   close, driven by one `poll` loop (the handshake, signing as an
//!   effect): received messages decoded and verified in bounded steps
//!   ([`verify_budget`] paces them), ephemeral subscriptions
//!   ([`ephemeral`]; a [`replay_table`] keeps each peer's deduplication
//!   window across its connections), and the send-side rules.
//! - [`longpoll_seq`]: the HTTP long-poll transport's sequence numbers
//!   (`x-bijou-seq`) and acknowledgements (`x-bijou-ack`): the server's
//!   [`Outbox`](longpoll_seq::Outbox) keeps each message until
//!   acknowledged, the client's [`Inbox`](longpoll_seq::Inbox) drops
//!   repeats and refuses a jump; `bijou-net`'s long-poll transport moves
//!   the HTTP around them.
//! - [`time`]: [`Clock`], the one time source a driver reads
//!   and passes in as [`Now`].
//! - [`rng`]: [`SeededRng`](rng::SeededRng), from which every random
//!   number is drawn (seeded by [`SessionConfig`] for a session).
//!
//! [`Initiator`]: handshake::Initiator
//! [`SyncMessage`]: message::SyncMessage
//! [`Message`]: message::Message
//! [`Clock`]: time::Clock
//! [`Now`]: time::Now
//! [`SessionConfig`]: session::SessionConfig
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
pub mod longpoll_seq;
pub mod message;
pub mod nonce_cache;
pub mod replay_table;
pub mod rng;
pub mod session;
pub mod time;
pub mod verify_budget;
