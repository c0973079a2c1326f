use std::io;

use ::iroh::endpoint::{ConnectionError, ReadError, WriteError};
use bytes::Bytes;

use crate::transport::TransportError;

/// What went wrong with the QUIC connection or its stream, inside
/// [`TransportError::Quic`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IrohStreamError {
    /// The peer closed the connection with a code other than 0 (or with
    /// 0 in the middle of a message).
    #[error("the peer closed the QUIC connection with code {code} ({}){}", close_code_meaning(*.code), reason_suffix(.reason))]
    PeerClosed {
        /// The application close code.
        code: u64,
        /// The peer's reason text.
        reason: Bytes,
    },
    /// The connection ended otherwise: timed out, aborted by the peer's
    /// QUIC stack, reset, or closed by us.
    #[error("the QUIC connection is gone: {source}{}", lost_hint(.source))]
    ConnectionLost {
        /// QUIC's reason.
        #[source]
        source: ConnectionError,
    },
    /// The peer reset its side of the stream.
    #[error("the peer reset the Subduction stream (code {code})")]
    Reset {
        /// The reset code.
        code: u64,
    },
    /// The peer stopped reading our side of the stream.
    #[error("the peer stopped reading the Subduction stream (code {code})")]
    Stopped {
        /// The stop code.
        code: u64,
    },
    /// The stream was already finished, reset or stopped on our side.
    #[error("the Subduction stream is already closed on our side")]
    ClosedStream,
    /// A 0-RTT stream the server refused (we do not send 0-RTT data).
    #[error("0-RTT data rejected by the peer")]
    ZeroRttRejected,
}

fn close_code_meaning(code: u64) -> &'static str {
    match code {
        0 => "normal close",
        1009 => "a message we sent was over its size limit",
        1011 => "internal error on its side, or it refused what we sent",
        _ => "a code Subduction does not define",
    }
}

fn reason_suffix(reason: &Bytes) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {:?}", String::from_utf8_lossy(reason))
    }
}

fn lost_hint(err: &ConnectionError) -> &'static str {
    match err {
        ConnectionError::TimedOut => {
            " (the peer stopped answering for longer than the idle timeout: it went away, or the network did)"
        }
        ConnectionError::LocallyClosed => " (we closed it)",
        ConnectionError::Reset => " (the peer no longer knows this connection: did it restart?)",
        _ => "",
    }
}

impl IrohStreamError {
    /// The error of a read.
    pub fn from_read(err: ReadError) -> Self {
        match err {
            ReadError::Reset(code) => Self::Reset {
                code: code.into_inner(),
            },
            ReadError::ConnectionLost(e) => e.into(),
            ReadError::ClosedStream => Self::ClosedStream,
            ReadError::ZeroRttRejected => Self::ZeroRttRejected,
        }
    }

    /// The error of a write.
    pub fn from_write(err: WriteError) -> Self {
        match err {
            WriteError::Stopped(code) => Self::Stopped {
                code: code.into_inner(),
            },
            WriteError::ConnectionLost(e) => e.into(),
            WriteError::ClosedStream => Self::ClosedStream,
            WriteError::ZeroRttRejected => Self::ZeroRttRejected,
        }
    }

    /// The close code of a [`IrohStreamError::PeerClosed`].
    pub fn peer_close_code(&self) -> Option<u64> {
        match self {
            Self::PeerClosed { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub(super) fn into_io(self) -> io::Error {
        let kind = match &self {
            Self::PeerClosed { .. } | Self::Reset { .. } | Self::Stopped { .. } => {
                io::ErrorKind::ConnectionReset
            }
            Self::ConnectionLost {
                source: ConnectionError::TimedOut,
            } => io::ErrorKind::TimedOut,
            _ => io::ErrorKind::NotConnected,
        };
        io::Error::new(kind, self)
    }
}

impl From<ConnectionError> for IrohStreamError {
    fn from(err: ConnectionError) -> Self {
        match err {
            ConnectionError::ApplicationClosed(close) => Self::PeerClosed {
                code: close.error_code.into_inner(),
                reason: close.reason,
            },
            source => Self::ConnectionLost { source },
        }
    }
}

/// The transport error for an I/O error of [`QuicStream`]: the
/// [`IrohStreamError`] it carries as [`TransportError::Quic`], anything
/// else as it is.
pub(super) fn quic_error(err: TransportError) -> TransportError {
    match err {
        TransportError::Io(io) if io.get_ref().is_some_and(|e| e.is::<IrohStreamError>()) => {
            match io.into_inner().map(|e| e.downcast::<IrohStreamError>()) {
                Some(Ok(stream)) => TransportError::Quic(*stream),
                Some(Err(other)) => TransportError::Io(io::Error::other(other)),
                None => TransportError::Io(io::Error::other("QUIC stream error")),
            }
        }
        other => other,
    }
}
