//! The handshake drivers: bijou-proto's sans-IO [`Initiator`] and
//! [`Responder`] over any [`Transport`], bounded by a timeout.
//!
//! ```text
//!   initiate(transport, signer, audience, config)        respond(transport, signer, responder, config)
//!     max message = 256 B                                  max message = 256 B
//!     Initiator::new(.., clock.now(), random nonce)
//!     send challenge ──────────────────────────────────►   Responder::answer(.., clock.now())
//!     Initiator::receive(reply)  ◄──────────────────────   send reply (response or rejection)
//!     max message = configured                             max message = configured
//!   the whole exchange bounded by config.timeout, else ConnectError::Timeout
//! ```
//!
//! The state machines (bijou-proto's `handshake` module) take the
//! protocol's settings ([`HandshakeConfig`], the responder's); the
//! drivers take the shell's ([`ConnectConfig`]: the timeout, the clock,
//! the message length after the handshake).
//!
//! The state machines' own refusals are [`HandshakeError`]s, wrapped in
//! [`ConnectError::Handshake`]; what only a driver meets (the transport
//! failed, the peer closed, the time ran out) has its own variants.
//!
//! [`HandshakeConfig`]: bijou_proto::handshake::HandshakeConfig

use std::time::Duration;

use bijou_proto::handshake::{
    Authenticated, HandshakeError, Initiator, Responder, DEFAULT_MAX_MESSAGE_LENGTH,
    HANDSHAKE_MAX_MESSAGE_LENGTH,
};
use bijou_proto::message::{Audience, RejectionReason};
use bijou_proto::time::Clock;
use bijou_signing::Identity;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};

use bijou_framing::prefix::PrefixKind;

use crate::transport::peer_framing::{sniff, PeerFraming};
use crate::transport::{Transport, TransportError};

/// Default bound on the whole handshake: 10 s.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The shell's settings for opening or accepting a connection: what no
/// state machine reads. The protocol's are the responder's
/// [`HandshakeConfig`](bijou_proto::handshake::HandshakeConfig).
///
/// ```
/// use bijou_frame::net::handshake::ConnectConfig;
/// use bijou_frame::proto::time::Clock;
/// use std::time::Duration;
///
/// let mut config = ConnectConfig::default();
/// config.timeout = Duration::from_secs(3);
/// config.clock = Clock::fixed(1_700_000_000);
/// assert_eq!(config.max_message_length, 50 * 1024 * 1024);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectConfig {
    /// Bound on the whole handshake ([`DEFAULT_HANDSHAKE_TIMEOUT`]).
    pub timeout: Duration,
    /// The transport's maximum message length after the handshake
    /// ([`DEFAULT_MAX_MESSAGE_LENGTH`], 50 MiB, as in Subduction).
    pub max_message_length: usize,
    /// The time source of the handshake and of the connection after it:
    /// challenge stamps, the drift check, ephemeral ages, the verification
    /// budget, operation deadlines ([`Clock::system`]).
    pub clock: Clock,
}

impl Default for ConnectConfig {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            max_message_length: DEFAULT_MAX_MESSAGE_LENGTH,
            clock: Clock::system(),
        }
    }
}

/// Why opening or accepting a connection failed. Every variant ends the
/// connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The handshake itself failed: refused, rejected, malformed, a bad
    /// signature, a message over the 256-byte pre-authentication limit, ...
    #[error("{0}{hint}", hint = handshake_hint(.0))]
    Handshake(#[source] HandshakeError),
    /// The transport failed (I/O, a malformed frame, a WebSocket text
    /// message, ...).
    #[error("transport failed during the handshake: {0}")]
    Transport(#[source] TransportError),
    /// The peer closed the stream before the handshake completed.
    #[error("peer closed the stream during the handshake (waiting for {waiting_for}); is it a Subduction peer speaking the same transport and length prefix? If this side sent length-prefixed frames, the server may be a WebSocket server (Subduction's default), which closes like this: connect to it with a ws:// URL")]
    Closed {
        /// The message we were waiting for.
        waiting_for: &'static str,
    },
    /// The peer's reply did not parse, and its bytes show why: it frames
    /// its messages differently (HTTP, another length prefix).
    #[error("{error}; the peer speaks another framing than ours ({ours} prefix): {theirs}")]
    OtherFraming {
        /// What failed first.
        #[source]
        error: Box<ConnectError>,
        /// Our length prefix.
        ours: PrefixKind,
        /// What the peer's bytes look like.
        theirs: PeerFraming,
    },
    /// The handshake did not complete in time.
    #[error("handshake timed out after {after:?}")]
    Timeout {
        /// The configured bound.
        after: Duration,
    },
}

/// What to try, for the refusals a user can fix.
fn handshake_hint(err: &HandshakeError) -> &'static str {
    match err {
        HandshakeError::Rejected {
            reason: RejectionReason::InvalidAudience,
            ..
        } => "; the server is neither the peer nor the service we addressed: address its own key (Audience::Known) or the service name it was started with (Audience::discover; a Subduction server's --service-name, by default the host:port it listens on)",
        HandshakeError::Rejected {
            reason: RejectionReason::ClockDrift,
            ..
        } => "; the clocks of the two machines differ by more than the allowed drift",
        _ => "",
    }
}

impl ConnectError {
    /// The handshake's own error, if that is what failed.
    #[must_use]
    pub fn handshake(&self) -> Option<&HandshakeError> {
        match self {
            Self::Handshake(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the exchange ran out of time.
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout { .. })
    }

    /// Whether the server refused the audience we addressed: it is neither
    /// the key nor the service name the challenge named. A program says
    /// which of its own settings chooses the audience (a `--service-name`
    /// flag, say).
    #[must_use]
    pub fn is_audience_refused(&self) -> bool {
        matches!(
            self,
            Self::Handshake(HandshakeError::Rejected {
                reason: RejectionReason::InvalidAudience,
                ..
            })
        )
    }
}

impl From<HandshakeError> for ConnectError {
    fn from(err: HandshakeError) -> Self {
        Self::Handshake(err)
    }
}

impl From<TransportError> for ConnectError {
    /// A message over the pre-authentication limit is
    /// [`HandshakeError::TooLarge`] on every transport.
    fn from(err: TransportError) -> Self {
        match err {
            TransportError::TooLarge { len, max } => {
                Self::Handshake(HandshakeError::TooLarge { len, max })
            }
            other => Self::Transport(other),
        }
    }
}

async fn next_message<T: Transport>(
    transport: &mut T,
    waiting_for: &'static str,
) -> Result<Bytes, ConnectError> {
    match transport.next().await {
        None => Err(ConnectError::Closed { waiting_for }),
        Some(message) => Ok(message?),
    }
}

/// `error`, or [`ConnectError::OtherFraming`] if the bytes the peer sent
/// (the reply `delivered`, behind our prefix, then what is still unread)
/// are another framing's.
fn other_framing<T: Transport + ?Sized>(
    transport: &T,
    delivered: Option<&Bytes>,
    error: ConnectError,
) -> ConnectError {
    let Some(diagnostics) = transport.diagnostics() else {
        return error;
    };
    let ours = diagnostics.length_prefix();
    let mut raw = Vec::new();
    if let Some(reply) = delivered {
        if let Some((prefix, n)) = u64::try_from(reply.len())
            .ok()
            .and_then(|len| ours.encode(len))
        {
            raw.extend_from_slice(prefix.get(..n).unwrap_or_default());
        }
        raw.extend_from_slice(reply);
    }
    let unread = diagnostics.unread();
    raw.extend_from_slice(unread.get(..unread.len().min(64)).unwrap_or_default());
    match sniff(&raw, ours) {
        Some(theirs) => ConnectError::OtherFraming {
            error: Box::new(error),
            ours,
            theirs,
        },
        None => error,
    }
}

async fn bounded<F, R>(timeout: Duration, fut: F) -> Result<R, ConnectError>
where
    F: std::future::Future<Output = Result<R, ConnectError>>,
{
    tokio::time::timeout(timeout, fut)
        .await
        .unwrap_or(Err(ConnectError::Timeout { after: timeout }))
}

/// Drives an [`Initiator`] over `transport`: sends a challenge for
/// `audience` signed by `signer` (time from `config.clock`, a fresh random
/// nonce), and checks the reply. The transport's maximum message length is
/// [`HANDSHAKE_MAX_MESSAGE_LENGTH`] meanwhile, and
/// `config.max_message_length` after a success.
///
/// # Cancel safety
///
/// Not cancel safe: a dropped future leaves the handshake half done, and
/// the transport must be dropped too.
///
/// # Errors
///
/// [`ConnectError`]; a refusal is [`HandshakeError::Rejected`].
pub async fn initiate<T, S>(
    transport: &mut T,
    signer: &S,
    audience: Audience,
    config: &ConnectConfig,
) -> Result<Authenticated, ConnectError>
where
    T: Transport,
    S: Identity + ?Sized,
{
    transport.set_max_message_length(HANDSHAKE_MAX_MESSAGE_LENGTH);
    let initiator = Initiator::new(signer, audience, config.clock.now(), rand::random())?;
    let authenticated = bounded(config.timeout, async {
        transport.send(initiator.challenge().clone()).await?;
        let reply = match next_message(transport, "response").await {
            Ok(reply) => reply,
            Err(e) => return Err(other_framing(&*transport, None, e)),
        };
        match initiator.receive(reply.clone()) {
            Ok(authenticated) => Ok(authenticated),
            Err(e @ (HandshakeError::Malformed(_) | HandshakeError::Unexpected { .. })) => {
                Err(other_framing(&*transport, Some(&reply), e.into()))
            }
            Err(e) => Err(e.into()),
        }
    })
    .await?;
    transport.set_max_message_length(config.max_message_length);
    Ok(authenticated)
}

/// Drives the [`Responder`] over `transport`: receives a challenge,
/// answers it ([`Responder::answer`]) with `signer`, and sends the reply.
/// The transport's maximum message length is
/// [`HANDSHAKE_MAX_MESSAGE_LENGTH`] meanwhile, and
/// `config.max_message_length` after a success; the time is
/// `config.clock`'s.
///
/// # Cancel safety
///
/// Not cancel safe: a dropped future leaves the handshake half done, and
/// the transport must be dropped too. A challenge already checked stays in
/// the replay cache.
///
/// # Errors
///
/// [`ConnectError`]; a challenge we refused is
/// [`HandshakeError::Refused`] (the rejection was sent).
pub async fn respond<T, S>(
    transport: &mut T,
    signer: &S,
    responder: &Responder,
    config: &ConnectConfig,
) -> Result<Authenticated, ConnectError>
where
    T: Transport,
    S: Identity + ?Sized,
{
    transport.set_max_message_length(HANDSHAKE_MAX_MESSAGE_LENGTH);
    let authenticated = bounded(config.timeout, async {
        let challenge = match next_message(transport, "challenge").await {
            Ok(challenge) => challenge,
            Err(e) => return Err(other_framing(&*transport, None, e)),
        };
        let answer = responder.answer(signer, challenge.clone(), config.clock.now());
        if let Some(reply) = answer.reply {
            transport.send(reply).await?;
        }
        match answer.outcome {
            Ok(authenticated) => Ok(authenticated),
            Err(e @ (HandshakeError::Malformed(_) | HandshakeError::Unexpected { .. })) => {
                Err(other_framing(&*transport, Some(&challenge), e.into()))
            }
            Err(e) => Err(e.into()),
        }
    })
    .await?;
    transport.set_max_message_length(config.max_message_length);
    Ok(authenticated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bijou_proto::message::Audience;

    #[test]
    fn an_audience_refusal_says_what_was_sent_and_what_to_try() {
        let err = ConnectError::from(HandshakeError::Rejected {
            reason: RejectionReason::InvalidAudience,
            responder_time: 5,
            sent: Audience::discover(b"127.0.0.1:7879"),
        });
        let text = err.to_string();
        assert!(text.contains("we addressed discovery id "), "{text}");
        assert!(text.contains("--service-name"), "{text}");
        assert!(err.handshake().is_some() && !err.is_timeout());
    }
}
