//! # bijou-framing
//!
//! Length-prefixed framing over any `AsyncRead`/`AsyncWrite`, built on
//! tokio-util's `Decoder`/`Encoder`.
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
//!   lengths a peer announces. Its docs draw the wire
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
//! use bijou_frame::framing::FrameCodec;
//! use futures::{SinkExt, StreamExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), bijou_frame::framing::FrameError> {
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
//! ## Where the rest lives
//!
//! This crate is the tokio-util layer only. The Subduction messages and the
//! sans-IO protocol state machines are `bijou-proto`; transports and
//! connections are `bijou-net`; the `bijou-frame` facade re-exports all of
//! them.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

// Length prefixes and the tokio-util codec.
mod builder;
mod error;
mod frame_codec;
pub mod prefix;
mod recv_buffer;
pub mod websocket;

pub use builder::Builder;
pub use error::FrameError;
pub use frame_codec::{FrameCodec, DEFAULT_MAX_FRAME_LENGTH};

/// `n` as a `u64` (saturating on a platform where `usize` is wider).
#[inline]
pub(crate) fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
