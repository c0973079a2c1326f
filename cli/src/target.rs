//! `--connect` and `--transport`, the same for every subcommand: where to
//! connect and how messages travel.
//!
//! `--connect` takes `HOST:PORT` (`127.0.0.1:7878`, `localhost:7878`,
//! `[::1]:7878`), or a URL whose scheme picks the transport: `ws://HOST:PORT[/path]`
//! (one binary WebSocket message per message, as Subduction's servers
//! speak) or `tcp://HOST:PORT` (length-prefixed frames). A bare
//! `HOST:PORT` uses `--transport`.

use std::fmt;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bijou_frame::framing::prefix::{Bijou64, Leb128, PrefixKind, U32Be};
use bijou_frame::net::handshake::{HandshakeConfig, HandshakeError};
use bijou_frame::net::message::{Audience, RejectionReason};
use bijou_frame::net::transport::{websocket, FramedTransport, Transport};
use bijou_frame::net::{ConnectError, Connection};
use bijou_frame::signing::ed25519_dalek::SigningKey;
use tokio::net::TcpStream;

use crate::exit::Failure;

/// Whichever transport a run uses, boxed, so one `Connection<Carrier>`
/// type serves them all.
pub type Carrier = Box<dyn Transport + Send>;

/// Bound on a TCP connect plus a WebSocket upgrade.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How messages travel over the TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TransportArg {
    /// One binary WebSocket message per message, no prefix (Subduction's
    /// servers speak this).
    Ws,
    /// Length-prefixed frames over TCP (see --prefix).
    Tcp,
}

/// Where to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A `ws://` URL.
    Ws(String),
    /// `HOST:PORT`, framed TCP behind `prefix`.
    Tcp {
        /// `HOST:PORT`.
        addr: String,
        /// The length prefix.
        prefix: PrefixKind,
    },
}

impl Target {
    /// Parses `--connect`; see the [module docs](self).
    pub fn parse(spec: &str, transport: TransportArg, prefix: PrefixKind) -> Result<Self, Failure> {
        let bad = |why: &str| {
            Failure::input(format!(
                "--connect {spec:?}: {why}; expected HOST:PORT (127.0.0.1:7878, localhost:7878), ws://HOST:PORT[/path] or tcp://HOST:PORT"
            ))
        };
        let (scheme, rest) = match spec.split_once("://") {
            Some((scheme, rest)) => (Some(scheme.to_ascii_lowercase()), rest),
            None => (None, spec),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
        let Some((host, port)) = authority.rsplit_once(':') else {
            return Err(bad("no port"));
        };
        if host.is_empty() || host == "[]" {
            return Err(bad("no host"));
        }
        if port.parse::<u16>().is_err() {
            return Err(bad(&format!(
                "port {port:?} is not a number from 0 to 65535"
            )));
        }
        match scheme.as_deref() {
            Some("ws") => Ok(Self::Ws(spec.to_owned())),
            Some("wss") => Err(bad("wss:// (TLS) is not supported; put a TLS proxy in front, or use ws:// on a trusted network")),
            Some("tcp") => Ok(Self::Tcp { addr: authority.to_owned(), prefix }),
            Some(other) => Err(bad(&format!("unknown scheme {other}://"))),
            None if rest.contains('/') => Err(bad("a path needs a ws:// URL")),
            None => Ok(match transport {
                TransportArg::Ws => Self::Ws(format!("ws://{authority}/")),
                TransportArg::Tcp => Self::Tcp { addr: authority.to_owned(), prefix },
            }),
        }
    }

    /// The target for a server we started on `addr`.
    pub fn local(addr: SocketAddr, transport: TransportArg, prefix: PrefixKind) -> Self {
        match transport {
            TransportArg::Ws => Self::Ws(format!("ws://{addr}/")),
            TransportArg::Tcp => Self::Tcp {
                addr: addr.to_string(),
                prefix,
            },
        }
    }

    /// `HOST:PORT`: what `subduction_cli server` answers to by default as
    /// its service name.
    pub fn authority(&self) -> String {
        match self {
            Self::Ws(url) => {
                let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
                rest.split(['/', '?', '#'])
                    .next()
                    .unwrap_or(rest)
                    .to_owned()
            }
            Self::Tcp { addr, .. } => addr.clone(),
        }
    }

    /// A TCP connection to the target's host, `TCP_NODELAY` set; errors
    /// name the address.
    pub async fn tcp(&self) -> Result<TcpStream, Failure> {
        let addr = self.authority();
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr.as_str()))
            .await
            .map_err(|_| {
                Failure::network(format!(
                    "connecting to {addr} timed out after {CONNECT_TIMEOUT:?}"
                ))
            })?
            .map_err(|e| {
                Failure::network(format!(
                    "cannot connect to {addr}: {e}; is the server running, and on this port?"
                ))
            })?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// Connects and, for WebSocket, upgrades: a transport ready for the
    /// handshake.
    pub async fn carrier(&self) -> Result<Carrier, Failure> {
        match self {
            Self::Ws(url) => {
                let ws = tokio::time::timeout(CONNECT_TIMEOUT, websocket::connect(url))
                    .await
                    .map_err(|_| {
                        Failure::network(format!(
                            "connecting to {url} timed out after {CONNECT_TIMEOUT:?}"
                        ))
                    })?
                    .map_err(|e| Failure::network(format!("cannot open {url}: {e}")))?;
                Ok(Box::new(ws))
            }
            Self::Tcp { prefix, .. } => Ok(framed(self.tcp().await?, *prefix)),
        }
    }

    /// Connects and runs the handshake; also returns how long both took.
    /// `addressed` names the audience for the error text (`the service
    /// name "HOST:PORT"`).
    pub async fn open(
        &self,
        key: &SigningKey,
        audience: Audience,
        addressed: &str,
    ) -> Result<(Connection<Carrier>, Duration), Failure> {
        let t0 = Instant::now();
        let carrier = self.carrier().await?;
        let conn = Connection::connect(carrier, key, audience, &HandshakeConfig::default())
            .await
            .map_err(|e| self.refused(&e, addressed))?;
        Ok((conn, t0.elapsed()))
    }

    /// The handshake failure as the user should read it: what we sent,
    /// and, for an audience refusal, which flags to try.
    pub fn refused(&self, err: &ConnectError, addressed: &str) -> Failure {
        let audience_refused = matches!(
            err.handshake(),
            Some(HandshakeError::Rejected {
                reason: RejectionReason::InvalidAudience,
                ..
            })
        );
        let tip = if audience_refused {
            format!(
                " [we addressed {addressed}: give the server's own --service-name, or its peer id with --server-id]"
            )
        } else {
            String::new()
        };
        Failure::network(format!("handshake with {self} failed: {err}{tip}"))
    }
}

/// `stream` framed behind `prefix`.
pub fn framed<S>(stream: S, prefix: PrefixKind) -> Carrier
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    match prefix {
        PrefixKind::Leb128 => Box::new(FramedTransport::new(stream, Leb128)),
        PrefixKind::U32Be => Box::new(FramedTransport::new(stream, U32Be)),
        _ => Box::new(FramedTransport::new(stream, Bijou64)),
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ws(url) => write!(f, "WebSocket {url}"),
            Self::Tcp { addr, prefix } => write!(f, "TCP {addr} ({prefix} prefix)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(spec: &str, transport: TransportArg) -> Result<Target, String> {
        Target::parse(spec, transport, PrefixKind::Bijou64).map_err(|e| e.message)
    }

    #[test]
    fn every_spelling_of_an_address_is_accepted_the_same_way() {
        let tcp = |a: &str| Target::Tcp {
            addr: a.to_owned(),
            prefix: PrefixKind::Bijou64,
        };
        assert_eq!(
            parse("localhost:7878", TransportArg::Tcp),
            Ok(tcp("localhost:7878"))
        );
        assert_eq!(
            parse("127.0.0.1:7878", TransportArg::Tcp),
            Ok(tcp("127.0.0.1:7878"))
        );
        assert_eq!(
            parse("[::1]:7878", TransportArg::Tcp),
            Ok(tcp("[::1]:7878"))
        );
        assert_eq!(
            parse("tcp://localhost:7878", TransportArg::Ws),
            Ok(tcp("localhost:7878"))
        );
        assert_eq!(
            parse("localhost:7878", TransportArg::Ws),
            Ok(Target::Ws("ws://localhost:7878/".to_owned()))
        );
        assert_eq!(
            parse("ws://localhost:7878/sync", TransportArg::Tcp),
            Ok(Target::Ws("ws://localhost:7878/sync".to_owned()))
        );
        assert_eq!(
            parse("ws://localhost:7878/sync", TransportArg::Tcp).map(|t| t.authority()),
            Ok("localhost:7878".to_owned())
        );
    }

    #[test]
    fn a_bad_address_says_what_is_expected() {
        for (spec, why) in [
            ("localhost", "no port"),
            (":7878", "no host"),
            ("localhost:http", "is not a number"),
            ("localhost:70000", "is not a number"),
            ("wss://example.org:443/", "not supported"),
            ("http://localhost:80/", "unknown scheme http://"),
            ("localhost:80/x", "needs a ws:// URL"),
        ] {
            let err = parse(spec, TransportArg::Ws).expect_err(spec);
            assert!(err.contains(why), "{spec}: {err}");
            assert!(err.contains("expected HOST:PORT"), "{spec}: {err}");
        }
    }
}
