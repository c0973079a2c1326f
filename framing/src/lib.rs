//! # bijou-framing
//!
//! Length-prefixed framing for Subduction-style sync messages over any
//! `AsyncRead`/`AsyncWrite`, built on tokio-util's `Decoder`/`Encoder`.
//!
//! ## Transport
//!
//! - [`prefix`]: the [`LengthPrefix`](prefix::LengthPrefix) encodings:
//!   [`Bijou64`](prefix::Bijou64) (the default; length known from the first
//!   byte, one encoding per length), canonical [`Leb128`](prefix::Leb128)
//!   (the comparison variant) and [`U32Be`](prefix::U32Be) (Subduction's
//!   QUIC framing).
//! - [`FrameCodec`]: the tokio-util codec, generic over the prefix, with
//!   zero-copy decoding, a maximum frame length checked both ways (50 MiB by
//!   default) and memory that grows with the bytes received, not with the
//!   lengths a peer announces. Its [module docs](frame_codec) draw the wire
//!   format and state the memory bound.
//! - [`Builder`]: configuration, and `Framed`/`FramedRead`/`FramedWrite`
//!   constructors.
//! - [`FrameError`]: what can go wrong. Framing errors are terminal: drop the
//!   connection.
//!
//! ```text
//! +---------------+-----------+---------------+-----------+---- ...
//! | prefix (len0) | payload 0 | prefix (len1) | payload 1 |
//! +---------------+-----------+---------------+-----------+---- ...
//! ```
//!
//! ```
//! use bijou_framing::FrameCodec;
//! use futures::{SinkExt, StreamExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), bijou_framing::FrameError> {
//! let (client, server) = tokio::io::duplex(4096);
//! let mut client = FrameCodec::builder().new_framed(client);
//! let mut server = FrameCodec::builder().new_framed(server);
//!
//! client.send(bytes::Bytes::from_static(b"sync please")).await?;
//! let request = server.next().await.transpose()?;
//! assert_eq!(request.as_deref(), Some(&b"sync please"[..]));
//! # Ok(())
//! # }
//! ```
//!
//! ## Messages
//!
//! - [`message`]: Subduction-compatible messages: the `SUM\0` sync envelope
//!   ([`SyncMessage`]) with its signed `STC\0`/`STF\0` payloads, and the
//!   `SUH\0` handshake ([`HandshakeMessage`]), and the `SUE\0` ephemeral
//!   messages ([`EphemeralMessage`](message::EphemeralMessage)). Decoding is injective,
//!   bounded and panic-free; encoding never truncates.
//! - [`MessageCodec`]: [`FrameCodec`] plus typed [`Message`] decode/encode.
//!   Framing errors end the stream; an undecodable message in a good frame
//!   is an `Err` item and the stream stays in sync.
//!
//! ## Peers
//!
//! - [`transport`]: what carries whole messages: a [`Transport`] is a
//!   `Sink<Bytes>` and a `Stream` of messages with a maximum length.
//!   [`FramedTransport`](transport::FramedTransport) frames any
//!   `AsyncRead + AsyncWrite` with a length prefix; `WebSocketTransport`
//!   (feature `websocket`) speaks Subduction's WebSocket transport.
//! - [`handshake`]: the Subduction-style mutual `SUH\0` handshake (signed
//!   challenge and response, audience, clock drift, replay cache) as sans-IO
//!   state machines plus async drivers, with a 256-byte message limit until
//!   it completes, on every transport.
//! - [`Connection`]: an authenticated connection over any [`Transport`]: a
//!   `Stream` of received messages, verified (`verify_strict` plus the
//!   scope and blob checks) together with their exact bytes, and a `Sink`
//!   of messages. Bad signatures and blob mismatches are reported and the
//!   connection stays up; transport errors end it.
//! - [`ephemeral`]: non-persisted messages on a connection: subscriptions
//!   both ways, and the size, age, topic and duplicate checks run before a
//!   signature is verified, in bounded memory
//!   ([`nonce_cache`]).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

// Transport: length prefixes and the tokio-util codec.
mod builder;
mod error;
pub mod frame_codec;
pub mod prefix;

// Messages: Subduction-compatible sync and handshake messages, and the
// typed codec over FrameCodec.
pub mod message;
pub mod message_codec;

// Peers: message transports, the sans-IO handshake and authenticated
// connections.
pub mod connection;
pub mod ephemeral;
pub mod handshake;
pub mod nonce_cache;
pub mod transport;
pub mod verify_budget;

pub use bijou_codec::Wire;
pub use builder::Builder;
pub use connection::{Connection, Delivered, Received, Rejected, RejectedItem, VerifiedMessage};
pub use error::FrameError;
pub use frame_codec::{FrameCodec, DEFAULT_MAX_FRAME_LENGTH};
pub use handshake::{HandshakeConfig, HandshakeError, Responder};
pub use message::{HandshakeMessage, Message, MessageError, SyncMessage};
pub use message_codec::{MessageCodec, MessageFrame, SendError};
pub use transport::{Transport, TransportError};
pub use verify_budget::VerifyBudget;
