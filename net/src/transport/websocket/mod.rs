//! [`WebSocketTransport`]: the transport Subduction's server speaks, one
//! binary WebSocket message per Subduction message (feature `websocket`).
//!
//! ```text
//!   +--------------------------+   +--------------------------+
//!   | WS frame header (2-14 B) |   | SUH\0 / SUM\0 message    |   one binary message
//!   +--------------------------+   +--------------------------+   per Subduction message,
//!                                                                  no length prefix
//!
//!   the frame header (RFC 6455), as read and written here:
//!   byte 0: FIN | RSV1 RSV2 RSV3 (0 0 0) | opcode (4 bits)
//!   byte 1: MASK | payload len (7 bits): 0..=125 the length,
//!           126 -> a 16-bit BE length follows (126..=65535),
//!           127 -> a 64-bit BE length follows (65536.., top bit 0)
//!   then:   masking key (4 B, client -> server frames only), payload
//!
//!   +----+----+-------------------+-------------+------------------+
//!   | b0 | b1 | 0 / 2 / 8 B len   | 0 / 4 B key | payload          |
//!   +----+----+-------------------+-------------+------------------+
//! ```
//!
//! - [`connect`] opens a client connection by URL (`ws://host:port/...`;
//!   TLS is not built in), [`client`] runs the upgrade over any stream,
//!   [`accept`] answers a client on any accepted stream. tungstenite does
//!   the HTTP upgrade only (its request, response and accept-key pieces);
//!   the bytes a peer sent right behind the HTTP head are kept and read as
//!   frames. Frames are read and written here
//!   ([`bijou_framing::websocket`], the sans-IO codec).
//! - Messages are at most [`WEBSOCKET_MAX_MESSAGE_LENGTH`] (50 MiB, as in
//!   Subduction), for a message and for a single frame alike, and at most
//!   the limit the session sets: 256 bytes before the handshake completes.
//!   A longer one is [`TransportError::TooLarge`], refused from the frame
//!   header that announces it (counting the fragments before it), before
//!   its payload is buffered; the peer gets a 1009 close.
//! - A text message is [`TransportError::WebSocket`] holding
//!   [`WsFrameError::TextMessage`], refused at its first header; the peer
//!   gets a 1003 close.
//! - Fragmented messages are reassembled. Pings are answered as they are
//!   read (only the latest one if the socket cannot take the pong yet:
//!   it then goes out with the next read or write), pongs ignored.
//! - A close from the peer is answered (its code echoed) and ends the
//!   stream after every message that came before it; a socket dropped
//!   between frames ends it too. Our side of the socket is then shut down.
//!   Closing the sink sends a close (1000) and the stream keeps delivering
//!   until the peer's close arrives.
//! - Every other violation is [`TransportError::WebSocket`] holding the
//!   [`WsFrameError`], and a close with [`WsFrameError::close_code`] (1002
//!   protocol error, 1007 bad UTF-8 in a close reason); a peer that stalls
//!   inside a frame for longer than [`DEFAULT_STALL_TIMEOUT`] is
//!   [`TransportError::Stalled`] and a 1008 close. A failed upgrade is
//!   [`TransportError::Upgrade`]. Errors end the stream.
//!
//! # Memory
//!
//! The same buffered I/O as [`FramedTransport`](super::FramedTransport), and
//! the same receive-buffer policy (`bijou_framing`'s, in one place):
//!
//! ```text
//!   read:  buffer empty  -> read into a 4 KiB stack scratch, copy what came
//!          frame pending -> read straight into the spare capacity the
//!                           decoder made: at most min(len, 2 x received
//!                           + 64 KiB) for a frame announcing len bytes
//!          buffer drained -> dropped (messages handed out keep their bytes)
//!   fragments:              appended to one buffer, as they arrive whole
//!   write: frames are written into the write buffer (client frames masked
//!          there); once flushed, the buffer is dropped
//!   stall timer:            allocated only while inside a frame
//! ```
//!
//! A header announcing more than the limit in force is refused before
//! anything is reserved: with the 256-byte limit before authentication, a
//! peer cannot make the connection hold more than a few kilobytes, whatever
//! it announces. An idle connection holds no heap buffer at all.
//!
//! ```no_run
//! use bijou_frame::net::handshake::ConnectConfig;
//! use bijou_frame::proto::message::Audience;
//! use bijou_frame::net::{transport::websocket, Connection};
//! use bijou_frame::signing::ed25519_dalek::SigningKey;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let me = SigningKey::from_bytes(&[1; 32]);
//! let transport = websocket::connect("ws://127.0.0.1:8080").await?;
//! let service = Audience::discover(b"subduction");
//! let conn = Connection::connect(transport, &me, service, &ConnectConfig::default()).await?;
//! println!("connected to {}", conn.remote_peer());
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

#[cfg(doc)]
use bijou_framing::websocket::WsFrameError;
use bijou_framing::DEFAULT_MAX_FRAME_LENGTH;

#[cfg(doc)]
use super::TransportError;

mod stall;
mod transport;
mod upgrade;

pub use transport::WebSocketTransport;
pub use upgrade::{accept, client, connect, UpgradeError};

/// The largest message either side accepts: 50 MiB, as in Subduction.
pub const WEBSOCKET_MAX_MESSAGE_LENGTH: usize = DEFAULT_MAX_FRAME_LENGTH;

/// How long a peer may pause inside a frame (or a fragmented message)
/// before the transport gives up with [`TransportError::Stalled`]: 30 s.
/// Between messages a peer may be silent for as long as it likes.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest HTTP head the upgrade reads: 16 KiB.
pub const MAX_HTTP_HEAD: usize = 16 * 1024;
