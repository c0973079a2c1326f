//! `--connect` and `--transport`, the same for every subcommand: where to
//! connect and how messages travel.
//!
//! `--connect` takes `HOST:PORT` (`127.0.0.1:7878`, `localhost:7878`,
//! `[::1]:7878`), or a URL whose scheme picks the transport: `ws://HOST:PORT[/path]`
//! (one binary WebSocket message per message, as Subduction's servers
//! speak), `http://HOST:PORT[/path]` (HTTP long-poll, which Subduction's
//! servers also speak) or `tcp://HOST:PORT` (length-prefixed frames). A
//! bare `HOST:PORT` uses `--transport`.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use bijou_frame::framing::prefix::{Bijou64, Leb128, PrefixKind, U32Be};
use bijou_frame::net::handshake::ConnectConfig;
use bijou_frame::net::handshake::ConnectError;
#[cfg(feature = "iroh")]
use bijou_frame::net::transport::iroh;
use bijou_frame::net::transport::{longpoll, websocket, FramedTransport, Transport};
use bijou_frame::net::Connection;
use bijou_frame::proto::message::Audience;
use bijou_frame::signing::ed25519_dalek::SigningKey;
use tokio::net::{TcpSocket, TcpStream};

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
    /// HTTP long-poll, as Subduction's servers also speak it (POST
    /// /lp/handshake, /lp/send, /lp/recv): for networks that pass plain
    /// HTTP but not WebSocket.
    Longpoll,
    /// QUIC through iroh, as `subduction_cli server --iroh` speaks:
    /// --connect NODE_ID@IP:PORT (needs a bijou built with the `iroh`
    /// feature).
    Iroh,
}

/// Where to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A `ws://` URL.
    Ws(String),
    /// An `http://` URL: HTTP long-poll.
    LongPoll(String),
    /// `HOST:PORT`, framed TCP behind `prefix`.
    Tcp {
        /// `HOST:PORT`.
        addr: String,
        /// The length prefix.
        prefix: PrefixKind,
    },
    /// `NODE_ID@IP:PORT[,IP:PORT...]`: an iroh node (QUIC).
    #[cfg_attr(not(feature = "iroh"), allow(dead_code))]
    Iroh(String),
}

impl Target {
    /// Parses `--connect`; see the [module docs](self).
    pub fn parse(spec: &str, transport: TransportArg, prefix: PrefixKind) -> Result<Self, Failure> {
        let bad = |why: &str| {
            Failure::input(format!(
                "--connect {spec:?}: {why}; expected HOST:PORT (127.0.0.1:7878, localhost:7878), ws://HOST:PORT[/path], http://HOST:PORT[/path] or tcp://HOST:PORT"
            ))
        };
        let (scheme, rest) = match spec.split_once("://") {
            Some((scheme, rest)) => (Some(scheme.to_ascii_lowercase()), rest),
            None => (None, spec),
        };
        let iroh = match scheme.as_deref() {
            Some("iroh") => true,
            None => transport == TransportArg::Iroh || rest.contains('@'),
            Some(_) => false,
        };
        if iroh {
            return iroh_target(rest).map_err(|why| {
                Failure::input(format!(
                    "--connect {spec:?}: {why}; iroh addresses are NODE_ID@IP:PORT (the node id as `subduction_cli --ready-file` writes it after iroh_node_id=)"
                ))
            });
        }
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
            Some("http") => Ok(Self::LongPoll(spec.to_owned())),
            Some("https") => Err(bad("https:// (TLS) is not supported; put a TLS proxy in front, or use http:// on a trusted network")),
            Some("tcp") => Ok(Self::Tcp { addr: authority.to_owned(), prefix }),
            Some(other) => Err(bad(&format!("unknown scheme {other}://"))),
            None if rest.contains('/') => Err(bad("a path needs a ws:// or http:// URL")),
            None => Ok(match transport {
                TransportArg::Ws => Self::Ws(format!("ws://{authority}/")),
                TransportArg::Longpoll => Self::LongPoll(format!("http://{authority}")),
                TransportArg::Tcp | TransportArg::Iroh => Self::Tcp { addr: authority.to_owned(), prefix },
            }),
        }
    }

    /// The target for a server we started on `addr`.
    pub fn local(addr: SocketAddr, transport: TransportArg, prefix: PrefixKind) -> Self {
        match transport {
            TransportArg::Ws => Self::Ws(format!("ws://{addr}/")),
            TransportArg::Longpoll => Self::LongPoll(format!("http://{addr}")),
            TransportArg::Tcp | TransportArg::Iroh => Self::Tcp {
                addr: addr.to_string(),
                prefix,
            },
        }
    }

    /// `HOST:PORT`: what `subduction_cli server` answers to by default as
    /// its service name.
    pub fn authority(&self) -> String {
        match self {
            Self::Ws(url) | Self::LongPoll(url) => {
                let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
                rest.split(['/', '?', '#'])
                    .next()
                    .unwrap_or(rest)
                    .to_owned()
            }
            Self::Tcp { addr, .. } => addr.clone(),
            // The first direct address.
            Self::Iroh(spec) => {
                let addrs = spec.split_once('@').map_or(spec.as_str(), |(_, a)| a);
                addrs.split(',').next().unwrap_or(addrs).to_owned()
            }
        }
    }

    /// The transport this target speaks.
    pub fn transport(&self) -> TransportArg {
        match self {
            Self::Ws(_) => TransportArg::Ws,
            Self::LongPoll(_) => TransportArg::Longpoll,
            Self::Tcp { .. } => TransportArg::Tcp,
            Self::Iroh(_) => TransportArg::Iroh,
        }
    }

    /// A TCP connection to the target's host, `TCP_NODELAY` set; errors
    /// name the address.
    pub async fn tcp(&self) -> Result<TcpStream, Failure> {
        self.tcp_from(None).await
    }

    /// [`Target::tcp`] from the local address `source` (any port), where
    /// given: a crowd spreads its connections over loopback addresses so
    /// that no one address runs out of ports.
    pub async fn tcp_from(&self, source: Option<IpAddr>) -> Result<TcpStream, Failure> {
        let addr = self.authority();
        let connect = async {
            let Some(source) = source else {
                return TcpStream::connect(addr.as_str()).await;
            };
            let mut last = None;
            for to in tokio::net::lookup_host(addr.as_str()).await? {
                let socket = match to {
                    SocketAddr::V4(_) => TcpSocket::new_v4()?,
                    SocketAddr::V6(_) => TcpSocket::new_v6()?,
                };
                // The source only where it can be one: a loopback target
                // of the same family (`localhost` may resolve to ::1
                // first; a remote host needs a routable source).
                let same_family = source.is_ipv4() == to.is_ipv4();
                if same_family && to.ip().is_loopback() {
                    if let Err(e) = socket.bind(SocketAddr::new(source, 0)) {
                        last = Some(e);
                        continue;
                    }
                }
                match socket.connect(to).await {
                    Ok(stream) => return Ok(stream),
                    Err(e) => last = Some(e),
                }
            }
            Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address")))
        };
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, connect)
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
        self.carrier_from(None).await
    }

    /// [`Target::carrier`] over TCP from `source` ([`Target::tcp_from`]).
    pub async fn carrier_from(&self, source: Option<IpAddr>) -> Result<Carrier, Failure> {
        match self {
            Self::Ws(url) => {
                // TCP first, so a refused connection gets the same hint on
                // every transport; then the upgrade.
                let io = self.tcp_from(source).await?;
                let ws = tokio::time::timeout(CONNECT_TIMEOUT, websocket::client(io, url))
                    .await
                    .map_err(|_| {
                        Failure::network(format!(
                            "WebSocket upgrade at {url} timed out after {CONNECT_TIMEOUT:?}"
                        ))
                    })?
                    .map_err(|e| Failure::network(format!("cannot open {url}: {e}")))?;
                Ok(Box::new(ws))
            }
            Self::LongPoll(url) => {
                // `connect` opens the first TCP connection: a refused one
                // gets the same hint as on every transport.
                self.tcp().await?;
                let transport = longpoll::connect(url)
                    .await
                    .map_err(|e| Failure::network(format!("cannot open {url}: {e}")))?;
                Ok(Box::new(transport))
            }
            Self::Tcp { prefix, .. } => Ok(framed(self.tcp_from(source).await?, *prefix)),
            Self::Iroh(spec) => iroh_carrier(spec).await,
        }
    }

    /// Connects and runs the handshake; also returns how long both took.
    /// `addressed` names the audience for the error text (`the service
    /// name "HOST:PORT"`), `retry` the command's own flags that address
    /// another (see [`Target::refused`]).
    pub async fn open(
        &self,
        key: &SigningKey,
        audience: Audience,
        addressed: &str,
        retry: &str,
    ) -> Result<(Connection<Carrier>, Duration), Failure> {
        self.open_from(None, key, audience, addressed, retry).await
    }

    /// [`Target::open`] over TCP from `source` ([`Target::tcp_from`]).
    pub async fn open_from(
        &self,
        source: Option<IpAddr>,
        key: &SigningKey,
        audience: Audience,
        addressed: &str,
        retry: &str,
    ) -> Result<(Connection<Carrier>, Duration), Failure> {
        let t0 = Instant::now();
        let carrier = self.carrier_from(source).await?;
        let conn = Connection::connect(carrier, key, audience, &ConnectConfig::default())
            .await
            .map_err(|e| self.refused(&e, addressed, retry))?;
        Ok((conn, t0.elapsed()))
    }

    /// The audience of a handshake with this target: `--server-id`'s key,
    /// else `--service-name`, else the target's `HOST:PORT` as a service
    /// name (what `subduction_cli server` answers to by default).
    pub fn audience(
        &self,
        server_id: Option<bijou_frame::signing::PeerId>,
        service_name: Option<&str>,
    ) -> Audience {
        match (server_id, service_name) {
            (Some(id), _) => Audience::Known(id),
            (None, Some(name)) => Audience::discover(name.as_bytes()),
            (None, None) => Audience::discover(self.authority().as_bytes()),
        }
    }

    /// The handshake failure as the user should read it: what we sent,
    /// and what to try: for an audience refusal, `retry` (the command's
    /// own flags, such as "give the server's peer id with --server-id");
    /// for a framed server that closed on us, the other length prefixes.
    pub fn refused(&self, err: &ConnectError, addressed: &str, retry: &str) -> Failure {
        if let (true, Some(rejected)) = (err.is_audience_refused(), err.handshake()) {
            // The refusal itself, and this command's flags: not the
            // library's hint, which speaks of its API.
            return Failure::network(format!(
                "handshake with {self} failed: {rejected} [we addressed {addressed}: {retry}]"
            ));
        }
        let tip = match (self, err) {
            // A framed server reading another prefix takes our first
            // frame's length for garbage and closes without a word.
            (Self::Tcp { prefix, .. }, ConnectError::Closed { .. }) => {
                let others: Vec<&str> = PrefixKind::ALL
                    .iter()
                    .filter(|other| *other != prefix)
                    .map(|other| other.name())
                    .collect();
                format!(
                    " [we framed with --prefix {}; a server on another prefix closes like this too: try --prefix {}]",
                    prefix.name(),
                    others.join(" or --prefix ")
                )
            }
            _ => String::new(),
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
            Self::LongPoll(url) => write!(f, "long-poll {url}"),
            Self::Tcp { addr, prefix } => write!(f, "TCP {addr} ({prefix} prefix)"),
            Self::Iroh(spec) => write!(f, "iroh {spec}"),
        }
    }
}

/// Validates an iroh address (`NODE_ID@IP:PORT`).
#[cfg(feature = "iroh")]
fn iroh_target(spec: &str) -> Result<Target, String> {
    spec.parse::<iroh::NodeAddr>()
        .map(|addr| Target::Iroh(addr.to_string()))
        .map_err(|e| e.to_string())
}

#[cfg(not(feature = "iroh"))]
fn iroh_target(_: &str) -> Result<Target, String> {
    Err(NO_IROH.to_owned())
}

/// What a bijou built without the `iroh` feature says to `--transport
/// iroh` or an iroh address.
#[cfg(not(feature = "iroh"))]
pub fn no_iroh() -> Failure {
    Failure::input(NO_IROH)
}

#[cfg(not(feature = "iroh"))]
const NO_IROH: &str =
    "this bijou was built without iroh (reinstall with `cargo install --path cli --locked --features iroh`)";

/// Connects to an iroh node from this process's client endpoint.
#[cfg(feature = "iroh")]
async fn iroh_carrier(spec: &str) -> Result<Carrier, Failure> {
    let addr: iroh::NodeAddr = spec.parse().map_err(Failure::input)?;
    let endpoint = iroh_client().await?;
    let transport = iroh::connect(endpoint, &addr)
        .await
        .map_err(|e| Failure::network(format!("cannot open iroh {spec}: {e}")))?;
    Ok(Box::new(transport))
}

#[cfg(not(feature = "iroh"))]
async fn iroh_carrier(_: &str) -> Result<Carrier, Failure> {
    Err(no_iroh())
}

/// One direct-only client endpoint per process (relays off, no
/// discovery), kept for its connections' lifetime.
#[cfg(feature = "iroh")]
async fn iroh_client() -> Result<&'static iroh::Endpoint, Failure> {
    static CLIENT: tokio::sync::OnceCell<iroh::Endpoint> = tokio::sync::OnceCell::const_new();
    CLIENT
        .get_or_try_init(|| async {
            let any = SocketAddr::from(([0, 0, 0, 0], 0));
            iroh::direct_endpoint(any, None)
                .await
                .map_err(|e| Failure::network(format!("cannot start an iroh endpoint: {e}")))
        })
        .await
}

/// A direct-only iroh endpoint listening on `bind`, and the address
/// clients dial (`NODE_ID@IP:PORT`).
#[cfg(feature = "iroh")]
pub async fn iroh_listener(bind: SocketAddr) -> Result<(iroh::Endpoint, String), Failure> {
    let endpoint = iroh::direct_endpoint(bind, None)
        .await
        .map_err(|e| Failure::input(format!("cannot listen on {bind} (iroh): {e}")))?;
    let addr = iroh::NodeAddr::of(&endpoint).to_string();
    Ok((endpoint, addr))
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
        // http:// is long-poll, whatever --transport says; a bare address
        // with --transport longpoll too.
        assert_eq!(
            parse("http://localhost:7878/base", TransportArg::Tcp),
            Ok(Target::LongPoll("http://localhost:7878/base".to_owned()))
        );
        assert_eq!(
            parse("localhost:7878", TransportArg::Longpoll),
            Ok(Target::LongPoll("http://localhost:7878".to_owned()))
        );
        assert_eq!(
            parse("http://localhost:7878/base", TransportArg::Ws).map(|t| t.authority()),
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
            ("https://localhost:443/", "https:// (TLS) is not supported"),
            ("ftp://localhost:21/", "unknown scheme ftp://"),
            ("localhost:80/x", "needs a ws:// or http:// URL"),
        ] {
            let err = parse(spec, TransportArg::Ws).expect_err(spec);
            assert!(err.contains(why), "{spec}: {err}");
            assert!(err.contains("expected HOST:PORT"), "{spec}: {err}");
        }
    }
}
