//! What the other end speaks, guessed from the bytes of a handshake reply
//! that did not parse: HTTP (a WebSocket server answering a framed
//! client), or another length prefix (a framed peer set up differently).
//!
//! ```text
//!   we frame with bijou64, the peer with u32-be:
//!     00 00 00 9e  53 55 48 00 ...      bijou64 reads an empty frame (00),
//!     \_ u32 158_/ \_ "SUH\0" _/        then junk; u32-be reads 158 bytes
//!                                       starting "SUH\0": that is the peer's
//!   a WebSocket server answers a framed client:
//!     48 54 54 50 2f 31 2e 31 20 34 30 30 ...   "HTTP/1.1 400 ..."
//! ```
//!
//! Only a reply that failed to parse is examined: a reply that parses is
//! the peer's answer, whatever else it might also look like.

use core::fmt;

use bijou_framing::prefix::PrefixKind;
use bijou_proto::message::{Message, MessageKind};

/// How the peer frames its messages, when it differs from us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerFraming {
    /// It answered with an HTTP response: a WebSocket (or other HTTP)
    /// server.
    Http,
    /// Its reply is a handshake message behind this other length prefix.
    Prefix(PrefixKind),
}

impl fmt::Display for PeerFraming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http => f.write_str(
                "it answered with HTTP, so it is a WebSocket server (Subduction's default): connect with a ws:// URL",
            ),
            Self::Prefix(kind) => write!(
                f,
                "its reply is a handshake message behind a {kind} length prefix: frame with {kind} too (--prefix {kind})"
            ),
        }
    }
}

/// Guesses the peer's framing from the raw bytes it sent, as far as we
/// have them: `raw` starts where its reply started. `ours` is excluded:
/// the reply did not parse under it.
///
/// ```
/// use bijou_frame::framing::prefix::PrefixKind;
/// use bijou_frame::net::transport::peer_framing::{sniff, PeerFraming};
///
/// assert_eq!(sniff(b"HTTP/1.1 400 Bad Request\r\n", PrefixKind::Bijou64), Some(PeerFraming::Http));
/// assert_eq!(
///     sniff(b"\x00\x00\x00\x9eSUH\x00\x01", PrefixKind::Bijou64),
///     Some(PeerFraming::Prefix(PrefixKind::U32Be))
/// );
/// assert_eq!(sniff(b"\x9eSUH\x00", PrefixKind::Bijou64), None); // ours: not a mismatch
/// ```
#[must_use]
pub fn sniff(raw: &[u8], ours: PrefixKind) -> Option<PeerFraming> {
    // The prefix byte may already be consumed: look a few bytes in.
    let head = raw.get(..raw.len().min(12)).unwrap_or_default();
    if head.windows(6).any(|w| w == b"TTP/1.") {
        return Some(PeerFraming::Http);
    }
    PrefixKind::ALL
        .into_iter()
        .filter(|&kind| kind != ours)
        .find(|kind| {
            kind.decode(raw)
                .ok()
                .and_then(|(_, n)| raw.get(n..))
                .and_then(Message::peek_kind)
                == Some(MessageKind::Handshake)
        })
        .map(PeerFraming::Prefix)
}
