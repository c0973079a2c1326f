//! What [`Session::poll`](super::Session::poll) hands the driver: one
//! queue, in the order the protocol decided.

use core::fmt;
use core::time::Duration;

use bytes::Bytes;

use crate::handshake::{Authenticated, HandshakeError};
use crate::time::Timestamp;

use super::operation::Completed;
use super::received::Received;
use super::signing::SignRequest;

/// The session's next output (see [`Session::poll`](super::Session::poll)).
///
/// ```text
///   Transmit(bytes)   write these bytes to the peer as one message (encoded already)
///   Sign(request)     sign request.message() with our key; handle_signature(id, sig)
///   Event(event)      for the application: established, a message, an operation's end, closed
///   Continue          one bounded step of verification done: poll again (yield first if the
///                     thread has run long)
///   Wait { read, until }  nothing to do now: hand in the next message if `read`, and poll
///                     again by `until` (or when a message or a signature arrives)
/// ```
#[derive(Debug)]
#[must_use]
#[expect(
    clippy::large_enum_variant,
    reason = "an output is moved once, straight to the driver's match; boxing would allocate for every event"
)]
pub enum Output {
    /// One whole message to send, encoded (no frame prefix: the transport
    /// adds its own). Write it before anything polled after it.
    Transmit(Bytes),
    /// Bytes to sign with the session's key (see [`SignRequest`]).
    Sign(SignRequest),
    /// Something for the application.
    Event(Event),
    /// One bounded step of verification was done and more remain: poll
    /// again. A shell sharing its thread yields to its other work first
    /// once it has run long (`bijou-net` yields after 0.5 ms).
    Continue,
    /// Nothing more to do now.
    Wait {
        /// Whether [`Session::handle_message`](super::Session::handle_message)
        /// takes a message now: read the transport only while this is
        /// true, at most [`Session::max_message_len`](super::Session::max_message_len)
        /// bytes a message.
        read: bool,
        /// Poll again at this instant at the latest (a deadline, or when
        /// the verification budget allows the next step); `None`: only
        /// when a message or a signature arrives.
        until: Option<Timestamp>,
    },
}

/// What the session tells the application, each exactly once.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "an event is moved once, straight to the driver's match; boxing would allocate for every message"
)]
pub enum Event {
    /// The handshake completed: the peer is authenticated, and the
    /// session now takes messages up to the configured maximum.
    Established(Authenticated),
    /// A received message, decoded and verified (or rejected, with why).
    Received(Received),
    /// An operation ended (see [`Operation`](super::Operation)).
    Completed(Completed),
    /// The session ended; nothing more will be read, sent or polled out.
    Closed(Close),
}

/// Why a session ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum Close {
    /// The handshake failed: our checks refused the peer (a rejection was
    /// sent to it first where the protocol has one), the peer refused us,
    /// or a message came out of turn.
    Handshake(HandshakeError),
    /// The handshake did not complete by its deadline
    /// ([`SessionConfig::handshake_timeout`](super::SessionConfig::handshake_timeout)).
    HandshakeTimedOut {
        /// The timeout that passed.
        after: Duration,
        /// What we waited for: `"challenge"`, `"response"` or `"signer"`.
        waiting_for: &'static str,
    },
    /// The transport ended (the peer closed, or the host reported the
    /// connection gone with [`Session::handle_close`](super::Session::handle_close)).
    PeerClosed,
    /// We closed it ([`Session::close`](super::Session::close)).
    Local,
}

impl Close {
    /// Whether the handshake ended the session (it failed or timed out);
    /// a transport closed during the handshake is [`Close::PeerClosed`].
    #[must_use]
    pub fn is_handshake(&self) -> bool {
        matches!(self, Self::Handshake(_) | Self::HandshakeTimedOut { .. })
    }
}

impl fmt::Display for Close {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Handshake(e) => write!(f, "the handshake failed: {e}"),
            Self::HandshakeTimedOut { after, waiting_for } => write!(
                f,
                "the handshake did not complete within {after:?} (waiting for the {waiting_for}); check the peer speaks this protocol on this transport, or raise the timeout"
            ),
            Self::PeerClosed => f.write_str("the peer closed the connection"),
            Self::Local => f.write_str("closed by us"),
        }
    }
}
