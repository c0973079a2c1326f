//! [`IrohTransport`]: Subduction over QUIC through the [`iroh`] crate, as
//! `subduction_iroh` 0.12 and `subduction_cli server --iroh` speak it
//! (feature `iroh`).
//!
//! One QUIC connection per peer, negotiated with ALPN [`ALPN`]
//! (`subduction/0`), carries **one bidirectional stream**, opened by the
//! connecting side. Both directions of that stream are a sequence of
//! messages, each behind its length as a big-endian u32 (the
//! [`U32Be`](bijou_framing::prefix::U32Be) prefix); the Subduction handshake runs on the same stream,
//! first:
//!
//! ```text
//!   client (connect)                                   server (accept)
//!     |== QUIC + TLS 1.3, ALPN "subduction/0" (iroh node ids) ==|
//!     |-- open_bi: the one stream ------------------------------>|
//!
//!   each message, both directions:
//!   +-----------+-----------+-----------+-----------+----------------------+
//!   | len >> 24 | len >> 16 | len >> 8  | len       | message (len bytes)  |
//!   +-----------+-----------+-----------+-----------+----------------------+
//!    \______ u32 big-endian, the message only ____/  SUH\0 / SUM\0 / SUE\0 / SUK\0
//!
//!   stream:  | 00 00 00 9E | Challenge (158 B) |            client -> server
//!            | 00 00 00 8D | Response  (141 B) |            server -> client
//!            | len | SUM\0 ... | len | SUE\0 ... | ...       both ways
//!            FIN                                           each side, when done
//! ```
//!
//! - Messages are at most [`IROH_MAX_MESSAGE_LENGTH`] (50 MiB, as in
//!   Subduction) and at most the limit the session sets: **256 bytes until
//!   the handshake completes**. The framing is
//!   [`FramedTransport`](crate::transport::FramedTransport)'s with the [`U32Be`](bijou_framing::prefix::U32Be) prefix, so a length over the
//!   limit is refused from its four bytes, before anything is reserved
//!   ([`TransportError::TooLarge`](crate::transport::TransportError::TooLarge)), and memory grows with the bytes
//!   received, never with the length a peer announces (a pending message
//!   reserves at most `2 × received + 64 KiB`). An idle connection holds
//!   no buffer of ours.
//! - The iroh **node id** (the QUIC/TLS key, [`NodeId`]) is not the
//!   Subduction **peer id** (the key that signs the handshake): a server
//!   has both, and `subduction_cli --ready-file` writes the node id as
//!   `iroh_node_id=<64 hex digits>`. Dial a server with a [`NodeAddr`],
//!   `<node-id>@<ip:port>`; authenticate it with the handshake as on every
//!   transport.
//! - Errors of the QUIC connection are [`TransportError::Quic`](crate::transport::TransportError::Quic) holding an
//!   [`IrohStreamError`].
//!
//! # Closing
//!
//! The QUIC connection closes with an application code, as Subduction's
//! does: [`CLOSE_NORMAL`] (0), [`CLOSE_TOO_LARGE`] (1009, a message over
//! the limit) or [`CLOSE_INTERNAL`] (1011, any other error of ours or of
//! the stream).
//!
//! ```text
//!   sink close:  flush, finish our side of the stream (FIN), then wait at
//!                most the close linger (1 s) for the peer to acknowledge
//!                every byte; if it did and has finished its side too,
//!                close the connection with code 0. The stream keeps
//!                delivering what the peer sends until its FIN.
//!   peer's FIN:  the stream ends (None) after every message before it; if
//!                we have finished and the peer acknowledged it all, the
//!                connection closes with code 0.
//!   peer closes with code 0 between messages: the same as its FIN.
//!   dropped:     the connection closes with code 0 if it is still open;
//!                what the peer had not received yet is lost (close first).
//! ```
//!
//! Keep the [`Endpoint`] alive until its connections are closed (QUIC
//! sends the close from the endpoint), and call
//! [`Endpoint::close`] when shutting down.
//!
//! # Endpoints
//!
//! [`connect`] and [`accept`] work on any [`Endpoint`] the caller owns
//! ([`accept`] needs it to offer [`ALPN`]). [`direct_endpoint`] binds one
//! for tests and LANs: one UDP socket on the given address, no relays, no
//! address lookup (no DNS, no pkarr), no port mapping (no UPnP, PCP or
//! NAT-PMP probes), no network report probes, and at most one incoming
//! stream per connection.
//!
//! ```
//! use bijou_net::handshake::ConnectConfig;
//! use bijou_proto::handshake::HandshakeConfig;
//! use bijou_proto::message::Audience;
//! use bijou_net::transport::iroh::{self, NodeAddr};
//! use bijou_net::Connection;
//! use bijou_proto::handshake::Responder;
//! use bijou_signing::{ed25519_dalek::SigningKey, Identity};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let loopback = "127.0.0.1:0".parse()?;
//! let server_endpoint = iroh::direct_endpoint(loopback, None).await?;
//! let client_endpoint = iroh::direct_endpoint(loopback, None).await?;
//! // What a server prints for its clients: `<node-id>@<ip:port>`.
//! let addr: NodeAddr = NodeAddr::of(&server_endpoint).to_string().parse()?;
//!
//! let server_key = SigningKey::from_bytes(&[2; 32]);
//! let server_id = server_key.peer_id();
//! let server = tokio::spawn(async move {
//!     let transport = iroh::accept(&server_endpoint).await?;
//!     let responder = Responder::new(HandshakeConfig::default());
//!     let mut conn = Connection::accept(transport, &server_key, &responder, &ConnectConfig::default()).await?;
//!     let first = conn.recv().await?.map(|received| received.bytes);
//!     conn.close().await?;
//!     Ok::<_, Box<dyn std::error::Error + Send + Sync>>((first, server_endpoint))
//! });
//!
//! let me = SigningKey::from_bytes(&[1; 32]);
//! let transport = iroh::connect(&client_endpoint, &addr).await?;
//! let mut conn =
//!     Connection::connect(transport, &me, Audience::Known(server_id), &ConnectConfig::default())
//!         .await?;
//! assert_eq!(conn.remote_peer(), server_id); // the Subduction peer id, not the node id
//! conn.close().await?;
//! let (first, _server_endpoint) = server.await?.map_err(|e| e.to_string())?;
//! assert_eq!(first, None); // we closed without sending
//! client_endpoint.close().await;
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use bijou_framing::DEFAULT_MAX_FRAME_LENGTH;

mod address;
mod endpoint;
mod quic_stream;
mod stream_error;
mod transport;

pub use address::{NodeAddr, NodeId, ParseNodeAddrError, ParseNodeIdError};
pub use endpoint::{
    accept, accept_connection, accept_incoming, connect, connect_within, direct_endpoint,
    direct_endpoint_builder, one_stream, IrohError,
};
pub use quic_stream::QuicStream;
pub use stream_error::IrohStreamError;
pub use transport::IrohTransport;

/// iroh's endpoint and its secret key (the node id's private half),
/// re-exported so that a user of this module needs no `iroh` dependency
/// of their own, and gets the same version.
pub use ::iroh::{Endpoint, SecretKey};

/// The ALPN both sides negotiate: `subduction/0`, as `subduction_iroh`'s
/// `ALPN`.
pub const ALPN: &[u8] = b"subduction/0";

/// The largest message either side accepts: 50 MiB, as in Subduction.
pub const IROH_MAX_MESSAGE_LENGTH: usize = DEFAULT_MAX_FRAME_LENGTH;

/// Close code of a normal close.
pub const CLOSE_NORMAL: u32 = 0;
/// Close code when the peer sent a message over the limit (as WebSocket's
/// 1009 "message too big").
pub const CLOSE_TOO_LARGE: u32 = 1009;
/// Close code for any other error (as WebSocket's 1011 "internal error").
pub const CLOSE_INTERNAL: u32 = 1011;

/// How long closing the sink waits for the peer to acknowledge what we
/// sent: 1 s.
pub const DEFAULT_CLOSE_LINGER: Duration = Duration::from_secs(1);

/// How long [`connect`] waits for the QUIC connection and the stream: 15 s.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
