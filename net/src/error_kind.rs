use std::io;

use bijou_framing::FrameError;
use bijou_proto::ephemeral::PublishError;
use bijou_proto::handshake::HandshakeError;
use bijou_proto::session::OperationError;

use crate::handshake::ConnectError;
use crate::transport::TransportError;
use crate::{RunError, SendError};

/// What kind of failure an error of this crate is, for an application that
/// decides what to do next (retry, reconfigure, drop the peer, fix its own
/// code) without matching every variant of [`ConnectError`],
/// [`SendError`], [`RunError`] and [`TransportError`]: each has a `kind()`.
/// The errors themselves keep the details (what was sent, what was
/// expected, what to try).
///
/// ```
/// use bijou_frame::net::handshake::ConnectError;
/// use bijou_frame::net::transport::TransportError;
/// use bijou_frame::net::ErrorKind;
/// use std::time::Duration;
///
/// let timeout = ConnectError::Timeout { after: Duration::from_secs(10), waiting_for: "response" };
/// assert_eq!(timeout.kind(), ErrorKind::TimedOut);
/// let too_large = TransportError::TooLarge { len: 300, max: 256 };
/// assert_eq!(too_large.kind(), ErrorKind::TooLarge);
/// assert!(ErrorKind::TimedOut.is_transient());
/// assert!(!ErrorKind::Rejected.is_transient());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The network, the operating system or the link failed (I/O, a QUIC
    /// connection lost, an HTTP exchange broken off). Trying again later
    /// may work.
    Io,
    /// A time bound ran out: the handshake's, a peer stalled inside a
    /// frame, an idle long-poll session, an operation's deadline.
    TimedOut,
    /// The peer ended the connection or session first (possibly in the
    /// middle of a frame).
    Closed,
    /// A message over a length limit, ours or the peer's.
    TooLarge,
    /// The peer sent what the protocol does not allow (a malformed frame,
    /// prefix, upgrade or message, a bad signature, another framing than
    /// ours): a bug or an attack on its side; the same peer will fail the
    /// same way.
    Protocol,
    /// The peer refused us: our audience, clock, signature or request was
    /// not accepted. Change what we send (the error says what).
    Rejected,
    /// We asked for what cannot be done: a message that does not encode, a
    /// send after close, a signer that is not the connection's key, an
    /// operation that is not running. A bug in the calling code.
    Usage,
}

impl ErrorKind {
    /// Whether the same attempt may succeed later (I/O, a timeout, a
    /// closed connection), as opposed to failing the same way again.
    #[must_use]
    pub fn is_transient(self) -> bool {
        matches!(self, Self::Io | Self::TimedOut | Self::Closed)
    }
}

impl TransportError {
    /// The kind of failure; see [`ErrorKind`].
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::TooLarge { .. } => ErrorKind::TooLarge,
            Self::Frame(FrameError::Truncated { .. }) => ErrorKind::Closed,
            Self::Frame(FrameError::Io(e)) | Self::Io(e) => io_kind(e),
            #[cfg(feature = "websocket")]
            Self::WebSocket(bijou_framing::websocket::WsFrameError::Truncated { .. }) => {
                ErrorKind::Closed
            }
            #[cfg(feature = "websocket")]
            Self::Stalled { .. } => ErrorKind::TimedOut,
            #[cfg(feature = "websocket")]
            Self::SendAfterClose => ErrorKind::Usage,
            #[cfg(feature = "websocket")]
            Self::Upgrade(e) => upgrade_kind(e),
            #[cfg(feature = "iroh")]
            Self::Quic(e) => quic_kind(e),
            #[cfg(feature = "longpoll")]
            Self::LongPoll(e) => longpoll_kind(e),
            Self::LengthMismatch { .. } => ErrorKind::Usage,
            Self::Other(_) => ErrorKind::Io,
            // Malformed prefixes and frames, failed upgrades.
            _ => ErrorKind::Protocol,
        }
    }
}

#[cfg(feature = "websocket")]
fn upgrade_kind(err: &crate::transport::websocket::UpgradeError) -> ErrorKind {
    use crate::transport::websocket::UpgradeError;
    match err {
        // Our own URL.
        UpgradeError::UnsupportedScheme { .. } => ErrorKind::Usage,
        UpgradeError::Status { status } => status_kind(*status),
        UpgradeError::HeadIncomplete { .. } | UpgradeError::NotAnswered { .. } => ErrorKind::Closed,
        _ => ErrorKind::Protocol,
    }
}

/// An HTTP status a server answered with: 408, 429 and 5xx say "later",
/// the rest that the request was wrong for this server.
#[cfg(any(feature = "websocket", feature = "longpoll"))]
fn status_kind(status: u16) -> ErrorKind {
    match status {
        408 | 429 | 500..=599 => ErrorKind::Io,
        _ => ErrorKind::Protocol,
    }
}

fn io_kind(err: &io::Error) -> ErrorKind {
    match err.kind() {
        io::ErrorKind::TimedOut => ErrorKind::TimedOut,
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => ErrorKind::Closed,
        _ => ErrorKind::Io,
    }
}

#[cfg(feature = "iroh")]
fn quic_kind(err: &crate::transport::iroh::IrohStreamError) -> ErrorKind {
    use crate::transport::iroh::IrohStreamError;
    use ::iroh::endpoint::ConnectionError;
    match err {
        IrohStreamError::PeerClosed { .. }
        | IrohStreamError::Reset { .. }
        | IrohStreamError::Stopped { .. }
        | IrohStreamError::ClosedStream => ErrorKind::Closed,
        IrohStreamError::ConnectionLost {
            source: ConnectionError::TimedOut,
        } => ErrorKind::TimedOut,
        _ => ErrorKind::Io,
    }
}

#[cfg(feature = "longpoll")]
fn longpoll_kind(err: &crate::transport::longpoll::LongPollError) -> ErrorKind {
    use crate::transport::longpoll::LongPollError;
    match err {
        LongPollError::Url { .. } => ErrorKind::Usage,
        // The session ended: the client disconnected, the server closed
        // it, or (backpressure) the client stopped collecting messages.
        LongPollError::SessionGone | LongPollError::Closed | LongPollError::Backpressure { .. } => {
            ErrorKind::Closed
        }
        LongPollError::Expired { .. } => ErrorKind::TimedOut,
        LongPollError::Status { status, .. } => status_kind(*status),
        LongPollError::Http(_) => ErrorKind::Io,
        // A missing session id.
        _ => ErrorKind::Protocol,
    }
}

impl ConnectError {
    /// The kind of failure; see [`ErrorKind`].
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Handshake(e) => handshake_kind(e),
            Self::Transport(e) => e.kind(),
            Self::Closed { .. } => ErrorKind::Closed,
            Self::Timeout { .. } => ErrorKind::TimedOut,
            // Our own signer: the program's to fix.
            Self::Signer(_) => ErrorKind::Usage,
            // `OtherFraming`: the peer speaks another framing.
            _ => ErrorKind::Protocol,
        }
    }
}

fn handshake_kind(err: &HandshakeError) -> ErrorKind {
    match err {
        HandshakeError::TooLarge { .. } => ErrorKind::TooLarge,
        HandshakeError::Rejected { .. } => ErrorKind::Rejected,
        // Our own signer failed.
        HandshakeError::Seal(_) | HandshakeError::OwnSignature(_) => ErrorKind::Usage,
        // A malformed or unexpected message, a bad signature, the wrong
        // responder, a challenge we refused.
        _ => ErrorKind::Protocol,
    }
}

impl SendError {
    /// The kind of failure; see [`ErrorKind`].
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Transport(e) => e.kind(),
            Self::Publish(PublishError::TooLarge { .. }) => ErrorKind::TooLarge,
            // A message that does not encode, a handshake message on an
            // established connection, a signer that failed.
            _ => ErrorKind::Usage,
        }
    }
}

impl RunError {
    /// The kind of failure; see [`ErrorKind`].
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Operation { error, .. } => match error {
                OperationError::TimedOut { .. } => ErrorKind::TimedOut,
                OperationError::Refused { .. } => ErrorKind::Rejected,
                // A keyhive exchange that failed on the peer's side.
                _ => ErrorKind::Protocol,
            },
            Self::Closed { .. } => ErrorKind::Closed,
            Self::Transport(e) => e.kind(),
            // Could not start, a wrong signer, an unknown operation.
            _ => ErrorKind::Usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bijou_framing::prefix::PrefixKind;

    use super::*;

    #[test]
    fn every_layer_sorts_its_failures() {
        let io = |kind| TransportError::Io(io::Error::from(kind));
        assert_eq!(io(io::ErrorKind::ConnectionRefused).kind(), ErrorKind::Io);
        assert_eq!(io(io::ErrorKind::ConnectionReset).kind(), ErrorKind::Closed);
        assert_eq!(io(io::ErrorKind::TimedOut).kind(), ErrorKind::TimedOut);
        assert_eq!(
            TransportError::Frame(FrameError::Truncated { needed: 9, have: 3 }).kind(),
            ErrorKind::Closed
        );
        assert_eq!(
            TransportError::Frame(FrameError::Overflow { prefix: "bijou64" }).kind(),
            ErrorKind::Protocol
        );
        assert_eq!(
            TransportError::LengthMismatch {
                announced: 3,
                written: 2
            }
            .kind(),
            ErrorKind::Usage
        );
        let closed = ConnectError::Closed {
            waiting_for: "the response",
        };
        assert_eq!(closed.kind(), ErrorKind::Closed);
        assert!(closed.kind().is_transient());
        let other = ConnectError::OtherFraming {
            error: Box::new(closed),
            ours: PrefixKind::Bijou64,
            theirs: crate::transport::peer_framing::PeerFraming::Http,
        };
        assert_eq!(other.kind(), ErrorKind::Protocol);
        assert_eq!(
            ConnectError::Handshake(HandshakeError::TooLarge { len: 300, max: 256 }).kind(),
            ErrorKind::TooLarge
        );
        assert_eq!(
            ConnectError::Transport(io(io::ErrorKind::TimedOut)).kind(),
            ErrorKind::TimedOut
        );
        assert_eq!(
            ConnectError::Timeout {
                after: Duration::from_secs(1),
                waiting_for: "challenge",
            }
            .kind(),
            ErrorKind::TimedOut
        );
        assert_eq!(
            SendError::Transport(TransportError::TooLarge { len: 9, max: 8 }).kind(),
            ErrorKind::TooLarge
        );
        assert!(!ErrorKind::Protocol.is_transient());
    }

    #[cfg(feature = "websocket")]
    #[test]
    fn upgrade_failures_are_sorted_by_whose_they_are() {
        use crate::transport::websocket::UpgradeError;
        let upgrade = |e| TransportError::Upgrade(e).kind();
        assert_eq!(
            upgrade(UpgradeError::UnsupportedScheme {
                url: "wss://x".into()
            }),
            ErrorKind::Usage
        );
        assert_eq!(upgrade(UpgradeError::Status { status: 503 }), ErrorKind::Io);
        assert_eq!(
            upgrade(UpgradeError::Status { status: 404 }),
            ErrorKind::Protocol
        );
        assert_eq!(
            upgrade(UpgradeError::NotAnswered { have: 0 }),
            ErrorKind::Closed
        );
    }

    #[cfg(feature = "longpoll")]
    #[test]
    fn long_poll_failures_are_sorted_by_whose_they_are() {
        use crate::transport::longpoll::LongPollError;
        let lp = |e| TransportError::LongPoll(e).kind();
        let status = |status| LongPollError::Status {
            endpoint: "/lp/send",
            status,
            body: String::new(),
        };
        assert_eq!(lp(status(503)), ErrorKind::Io);
        assert_eq!(lp(status(408)), ErrorKind::Io);
        assert_eq!(lp(status(400)), ErrorKind::Protocol);
        assert_eq!(lp(LongPollError::Closed), ErrorKind::Closed);
        assert_eq!(lp(LongPollError::SessionGone), ErrorKind::Closed);
        assert_eq!(
            lp(LongPollError::Expired {
                idle: Duration::from_secs(90)
            }),
            ErrorKind::TimedOut
        );
        assert_eq!(
            lp(LongPollError::Url {
                url: "https://x".into(),
                reason: "TLS is not built in"
            }),
            ErrorKind::Usage
        );
        assert_eq!(lp(LongPollError::MissingSessionId), ErrorKind::Protocol);
    }
}
