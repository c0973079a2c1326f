//! The handshake drivers: bijou-proto's [`Session`] runs the handshake
//! itself (from the first byte, as one machine); these drive it over any
//! [`Transport`], bounded by a timeout.
//!
//! ```text
//!   initiate(transport, signer, audience, config)        respond(transport, signer, responder, config)
//!     Session::client(.., clock.now(), seed)               Session::server(responder, clock.now(), seed)
//!     max message = session's (256 B)                      max message = session's (256 B)
//!     poll: Sign ─► signer; Transmit challenge ─────────►  handle_message(challenge)
//!     handle_message(reply) ◄───────────────────────────   poll: Sign ─► signer; Transmit reply
//!     Event::Established                                   Event::Established
//!     max message = configured                             max message = configured
//!   the whole exchange bounded by config.timeout (the session's deadline, and the runtime's timer
//!   for a clock that does not move), else ConnectError::Timeout
//! ```
//!
//! The session takes the protocol's settings ([`HandshakeConfig`], the
//! responder's) and the seed; the drivers take the shell's
//! ([`ConnectConfig`]: the timeout, the clock, the message length after
//! the handshake, the seed).
//!
//! The handshake's own refusals are [`HandshakeError`]s, wrapped in
//! [`ConnectError::Handshake`]; what only a driver meets (the transport
//! failed, the peer closed, the time ran out) has its own variants.
//!
//! [`HandshakeConfig`]: bijou_proto::handshake::HandshakeConfig

use std::time::Duration;

use bijou_proto::handshake::{
    Authenticated, HandshakeError, Responder, DEFAULT_MAX_MESSAGE_LENGTH,
};
use bijou_proto::message::{Audience, RejectionReason};
use bijou_proto::replay_table::ReplayTable;
use bijou_proto::session::{Close, Event, Output, Session, SessionConfig, SignatureRefused};
use bijou_proto::time::Clock;
use bijou_signing::Identity;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};

use bijou_framing::prefix::PrefixKind;

use crate::transport::peer_framing::{sniff, PeerFraming};
use crate::transport::{Transport, TransportError};

/// Default bound on the whole handshake: 10 s (the session's own
/// default).
pub use bijou_proto::session::DEFAULT_HANDSHAKE_TIMEOUT;

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
/// config.seed = Some([7; 32]); // reproducible: the same seed, the same bytes
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
    /// Seeds every random number the connection's session draws: the
    /// handshake nonce, ephemeral nonces, the de-duplication window's
    /// hash key (see [`SessionConfig::seed`]). `None` (the default): 32
    /// bytes from the operating system, fresh for each connection. A
    /// seeded connection is reproducible byte for byte under the same
    /// clock; give each connection its own seed, since a reused one
    /// reuses the handshake nonce, which a server refuses as a replay.
    pub seed: Option<[u8; 32]>,
    /// The ephemeral de-duplication windows kept per remote peer across
    /// its connections ([`ReplayTable`]): give every connection of a
    /// server (or a client) the same table, and a message replayed on a
    /// peer's next connection within its age window is refused. `None`
    /// (the default): each connection has its own window.
    pub replay_table: Option<ReplayTable>,
}

impl Default for ConnectConfig {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            max_message_length: DEFAULT_MAX_MESSAGE_LENGTH,
            clock: Clock::system(),
            seed: None,
            replay_table: None,
        }
    }
}

impl ConnectConfig {
    /// The session settings these make: the seed (drawn from the
    /// operating system when none is set), the handshake timeout, the
    /// message length after the handshake, the replay table.
    #[must_use]
    pub fn session_config(&self) -> SessionConfig {
        let mut config = SessionConfig::new(self.seed.unwrap_or_else(os_seed));
        config.handshake_timeout = self.timeout;
        config.max_message_len = self.max_message_length;
        config.replay_table.clone_from(&self.replay_table);
        config
    }
}

/// 32 bytes from the operating system's random source: the seed of an
/// unseeded connection.
fn os_seed() -> [u8; 32] {
    rand::random()
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
    #[error("peer closed the stream during the handshake (waiting for {waiting_for}){hint}", hint = closed_hint(waiting_for))]
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
    #[error("handshake timed out after {after:?} (waiting for the {waiting_for}); check the peer speaks this protocol on this transport, or raise ConnectConfig::timeout")]
    Timeout {
        /// The configured bound.
        after: Duration,
        /// What the handshake waited for: `"challenge"`, `"response"` or
        /// `"signer"`.
        waiting_for: &'static str,
    },
    /// Our signer's answer to the handshake's sign request was refused
    /// (it failed, or signed with another key): nothing was sent.
    #[error("our signer could not sign the handshake: {0}")]
    Signer(#[source] SignatureRefused),
}

/// What a close during the handshake suggests, by the side that saw it.
///
/// The client (waiting for the `"response"`) may have sent frames a
/// WebSocket server closes on: that is a transport mismatch it can fix.
/// The server (waiting for the `"challenge"`) has no such mismatch to
/// blame: a WebSocket peer got this far only by upgrading, and a peer that
/// sent another framing is reported as [`ConnectError::OtherFraming`]. Its
/// peer went away before authenticating: a client that gave up waiting
/// (for instance in the accept backlog of a server at its connection
/// cap), or a probe.
fn closed_hint(waiting_for: &str) -> &'static str {
    if waiting_for == "response" {
        "; is it a Subduction peer speaking the same transport and length prefix? If this side sent length-prefixed frames, the server may be a WebSocket server (Subduction's default), which closes like this: connect to it with a ws:// URL"
    } else {
        "; the peer went away before authenticating (a client that gave up waiting, for instance while this server was at its connection cap, or a probe)"
    }
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

/// The client session `initiate` drives: `signer`'s key, addressed to
/// `audience`, at `config.clock`'s time, seeded by `config`.
pub(crate) fn client_session<S: Identity + ?Sized>(
    signer: &S,
    audience: Audience,
    config: &ConnectConfig,
) -> Session {
    Session::client(
        signer.verifying_key(),
        audience,
        config.clock.now(),
        config.session_config(),
    )
}

/// The server session `respond` drives, checking challenges with
/// `responder`.
pub(crate) fn server_session<S: Identity + ?Sized>(
    signer: &S,
    responder: &Responder,
    config: &ConnectConfig,
) -> Session {
    Session::server(
        signer.verifying_key(),
        responder.clone(),
        config.clock.now(),
        config.session_config(),
    )
}

/// Runs `session`'s handshake over `transport`: one poll loop, signing
/// with `signer` what the session asks, reading while it takes a message.
/// The transport's maximum message length follows the session's (256
/// bytes until the peer is authenticated, `config.max_message_length`
/// after). `waiting_for` names the peer's message, for errors.
pub(crate) async fn open<T, S>(
    transport: &mut T,
    session: &mut Session,
    signer: &S,
    config: &ConnectConfig,
    waiting_for: &'static str,
) -> Result<Authenticated, ConnectError>
where
    T: Transport,
    S: Identity + ?Sized,
{
    let exchange = async {
        // The last message handed in, to tell another framing apart.
        let mut last: Option<Bytes> = None;
        loop {
            transport.set_max_message_length(session.max_message_len());
            match session.poll(config.clock.now()) {
                Output::Transmit(bytes) => transport.send(bytes).await?,
                Output::Sign(request) => session
                    .sign_with(&request, signer)
                    .map_err(ConnectError::Signer)?,
                Output::Event(Event::Established(authenticated)) => {
                    transport.set_max_message_length(session.max_message_len());
                    return Ok(authenticated);
                }
                Output::Event(Event::Closed(close)) => {
                    return Err(closed(&*transport, last.as_ref(), close, config.timeout))
                }
                // Nothing else comes before the peer is authenticated.
                Output::Event(_) | Output::Continue => {}
                Output::Wait { read, until } => {
                    let pause = until.map_or(config.timeout, |at| {
                        at.saturating_duration_since(config.clock.monotonic())
                    });
                    if !read {
                        tokio::time::sleep(pause).await;
                        continue;
                    }
                    let Ok(next) = tokio::time::timeout(pause, transport.next()).await else {
                        // The deadline: the next poll ends the handshake.
                        continue;
                    };
                    let bytes = match next {
                        None => {
                            let error = ConnectError::Closed { waiting_for };
                            return Err(other_framing(&*transport, None, error));
                        }
                        Some(Err(e)) => {
                            let error = ConnectError::from(e);
                            return Err(other_framing(&*transport, None, error));
                        }
                        Some(Ok(bytes)) => bytes,
                    };
                    last = Some(bytes.clone());
                    // `read` said the session takes it: never refused.
                    if session.handle_message(bytes, config.clock.now()).is_err() {
                        return Err(ConnectError::Closed { waiting_for });
                    }
                }
            }
        }
    };
    // The session's deadline ends the handshake on the connection's
    // clock; the runtime's timer ends it on a clock that does not move.
    match tokio::time::timeout(config.timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(ConnectError::Timeout {
            after: config.timeout,
            waiting_for,
        }),
    }
}

/// The error a handshake that closed ends with.
fn closed<T: Transport + ?Sized>(
    transport: &T,
    delivered: Option<&Bytes>,
    close: Close,
    timeout: Duration,
) -> ConnectError {
    match close {
        Close::Handshake(
            e @ (HandshakeError::Malformed(_) | HandshakeError::Unexpected { .. }),
        ) => other_framing(transport, delivered, e.into()),
        Close::Handshake(e) => e.into(),
        Close::HandshakeTimedOut { waiting_for, .. } => ConnectError::Timeout {
            after: timeout,
            waiting_for,
        },
        // Neither is handed in by `open`.
        _ => ConnectError::Closed {
            waiting_for: "the handshake",
        },
    }
}

/// Runs the client's handshake over `transport`: a challenge for
/// `audience` signed by `signer` (time from `config.clock`, the nonce
/// from `config.seed`), then the reply checked ([`Session::client`]). The
/// transport's maximum message length is
/// [`HANDSHAKE_MAX_MESSAGE_LENGTH`](bijou_proto::handshake::HANDSHAKE_MAX_MESSAGE_LENGTH)
/// meanwhile, and `config.max_message_length` after a success.
/// [`Connection::connect`](crate::Connection::connect) does this and
/// keeps the session.
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
    let mut session = client_session(signer, audience, config);
    open(transport, &mut session, signer, config, "response").await
}

/// Runs the server's handshake over `transport`: receives a challenge,
/// checks it with `responder`, answers it signed by `signer`
/// ([`Session::server`]). The transport's maximum message length is
/// [`HANDSHAKE_MAX_MESSAGE_LENGTH`](bijou_proto::handshake::HANDSHAKE_MAX_MESSAGE_LENGTH)
/// meanwhile, and `config.max_message_length` after a success; the time
/// is `config.clock`'s. [`Connection::accept`](crate::Connection::accept)
/// does this and keeps the session.
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
    let mut session = server_session(signer, responder, config);
    open(transport, &mut session, signer, config, "challenge").await
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
