//! [`IrohTransport`]: Subduction over QUIC through the [`iroh`] crate, as
//! `subduction_iroh` 0.12 and `subduction_cli server --iroh` speak it
//! (feature `iroh`).
//!
//! One QUIC connection per peer, negotiated with ALPN [`ALPN`]
//! (`subduction/0`), carries **one bidirectional stream**, opened by the
//! connecting side. Both directions of that stream are a sequence of
//! messages, each behind its length as a big-endian u32 (the
//! [`U32Be`] prefix); the Subduction handshake runs on the same stream,
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
//!   [`FramedTransport`]'s with the [`U32Be`] prefix, so a length over the
//!   limit is refused from its four bytes, before anything is reserved
//!   ([`TransportError::TooLarge`]), and memory grows with the bytes
//!   received, never with the length a peer announces (a pending message
//!   reserves at most `2 × received + 64 KiB`). An idle connection holds
//!   no buffer of ours.
//! - The iroh **node id** (the QUIC/TLS key, [`NodeId`]) is not the
//!   Subduction **peer id** (the key that signs the handshake): a server
//!   has both, and `subduction_cli --ready-file` writes the node id as
//!   `iroh_node_id=<64 hex digits>`. Dial a server with a [`NodeAddr`],
//!   `<node-id>@<ip:port>`; authenticate it with the handshake as on every
//!   transport.
//! - Errors of the QUIC connection are [`TransportError::Quic`] holding an
//!   [`IrohStreamError`] ([`stream_error_of`] finds it).
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

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::str::FromStr;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use ::iroh::endpoint::{
    presets, Builder, Connection as QuicConnection, ConnectionError, Incoming, PortmapperConfig,
    QuicTransportConfig, ReadError, RecvStream, SendStream, VarInt, WriteError,
};
use ::iroh::{EndpointAddr, NetReportConfig, PublicKey, RelayMode};
use bijou_framing::prefix::U32Be;
use bijou_framing::DEFAULT_MAX_FRAME_LENGTH;
use bijou_signing::hex::{self, ParseHexError};
use bytes::Bytes;
use futures::{Sink, Stream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use super::{FramedTransport, Transport, TransportError, WriteInPlace};
use crate::SendError;

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

// ---------------------------------------------------------------------------
// Node ids and addresses
// ---------------------------------------------------------------------------

/// An iroh node id: the Ed25519 public key of an endpoint's QUIC/TLS
/// identity, as 64 lower-case hex digits (the form `subduction_cli`
/// writes as `iroh_node_id=` in its `--ready-file`). Not a Subduction
/// peer id.
///
/// ```
/// use bijou_net::transport::iroh::NodeId;
///
/// let text = "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29";
/// let id: NodeId = text.parse()?;
/// assert_eq!(id.to_string(), text);
/// assert!("3B6A".parse::<NodeId>().is_err());
/// # Ok::<(), bijou_net::transport::iroh::ParseNodeIdError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(PublicKey);

impl NodeId {
    /// The node id of these 32 bytes.
    ///
    /// # Errors
    ///
    /// [`ParseNodeIdError::NotAKey`] if they are not an Ed25519 point.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, ParseNodeIdError> {
        PublicKey::from_bytes(bytes)
            .map(Self)
            .map_err(|_| ParseNodeIdError::NotAKey)
    }

    /// The 32 key bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        self.0.as_bytes()
    }

    /// iroh's type for it.
    pub fn public_key(&self) -> PublicKey {
        self.0
    }
}

impl From<PublicKey> for NodeId {
    fn from(key: PublicKey) -> Self {
        Self(key)
    }
}

impl From<NodeId> for PublicKey {
    fn from(id: NodeId) -> Self {
        id.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex::write(f, self.as_bytes())
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({self})")
    }
}

impl FromStr for NodeId {
    type Err = ParseNodeIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_bytes(&hex::parse::<32>(s)?)
    }
}

/// Why a string is not an iroh node id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseNodeIdError {
    /// Not 64 lower-case hex digits.
    #[error("an iroh node id is 64 lower-case hex digits (as `iroh_node_id=` in subduction_cli's --ready-file): {0}")]
    Hex(#[from] ParseHexError),
    /// 32 bytes that are not an Ed25519 public key.
    #[error("an iroh node id is an Ed25519 public key, and these 32 bytes are not one")]
    NotAKey,
}

/// Where to reach an iroh node directly: its [`NodeId`] and one or more
/// UDP socket addresses, written `<node-id>@<ip:port>[,<ip:port>...]`
/// (IPv6 as `[::1]:port`).
///
/// ```
/// use bijou_net::transport::iroh::{NodeAddr, ParseNodeAddrError};
///
/// let id = "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29";
/// let addr: NodeAddr = format!("{id}@127.0.0.1:4433,[::1]:4433").parse()?;
/// assert_eq!(addr.addrs.len(), 2);
/// assert_eq!(addr.to_string(), format!("{id}@127.0.0.1:4433,[::1]:4433"));
///
/// let err = id.parse::<NodeAddr>().unwrap_err();
/// assert!(matches!(err, ParseNodeAddrError::MissingAt));
/// assert!(err.to_string().contains("<node-id>@<ip:port>"));
/// # Ok::<(), ParseNodeAddrError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAddr {
    /// The node's id.
    pub id: NodeId,
    /// Its direct UDP addresses.
    pub addrs: Vec<SocketAddr>,
}

impl NodeAddr {
    /// The id and direct addresses.
    pub fn new(id: NodeId, addrs: impl IntoIterator<Item = SocketAddr>) -> Self {
        Self {
            id,
            addrs: addrs.into_iter().collect(),
        }
    }

    /// The direct address of one of our endpoints: its node id and the
    /// addresses its sockets are bound to (an endpoint bound to
    /// `127.0.0.1:0` gives `127.0.0.1:<port>`). An unspecified address
    /// (`0.0.0.0`, `[::]`) is given as the loopback of its family, so the
    /// result dials this endpoint from the same machine.
    pub fn of(endpoint: &Endpoint) -> Self {
        let addrs = endpoint.bound_sockets().into_iter().map(|mut addr| {
            if addr.ip().is_unspecified() {
                addr.set_ip(match addr {
                    SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            addr
        });
        Self::new(endpoint.id().into(), addrs)
    }
}

impl From<&NodeAddr> for EndpointAddr {
    fn from(addr: &NodeAddr) -> Self {
        addr.addrs
            .iter()
            .fold(EndpointAddr::new(addr.id.0), |a, ip| a.with_ip_addr(*ip))
    }
}

impl fmt::Display for NodeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@", self.id)?;
        for (i, addr) in self.addrs.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{addr}")?;
        }
        Ok(())
    }
}

impl FromStr for NodeAddr {
    type Err = ParseNodeAddrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (id, addrs) = s.split_once('@').ok_or(ParseNodeAddrError::MissingAt)?;
        let id = id.parse().map_err(ParseNodeAddrError::NodeId)?;
        if addrs.is_empty() {
            return Err(ParseNodeAddrError::NoAddr);
        }
        let addrs = addrs
            .split(',')
            .enumerate()
            .map(|(index, text)| {
                text.parse().map_err(|source| ParseNodeAddrError::Addr {
                    index,
                    text: text.into(),
                    source,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { id, addrs })
    }
}

/// Why a string is not `<node-id>@<ip:port>[,<ip:port>...]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseNodeAddrError {
    /// No `@` between the node id and the addresses.
    #[error("expected <node-id>@<ip:port> (the node id as 64 hex digits, as `iroh_node_id=` in subduction_cli's --ready-file, then `@` and its UDP address), found no `@`")]
    MissingAt,
    /// The part before `@` is not a node id.
    #[error("in <node-id>@<ip:port>, the node id: {0}")]
    NodeId(#[source] ParseNodeIdError),
    /// Nothing after `@`.
    #[error("expected <node-id>@<ip:port>, found no address after `@` (relays and discovery are not used: give the node's direct UDP address)")]
    NoAddr,
    /// An address after `@` is not `ip:port`.
    #[error("in <node-id>@<ip:port>, address {index} ({text:?}) is not an ip:port (IPv6 as [::1]:4433; host names are not resolved)")]
    Addr {
        /// Its position in the comma-separated list, from 0.
        index: usize,
        /// The text.
        text: Box<str>,
        /// Why it does not parse.
        #[source]
        source: std::net::AddrParseError,
    },
}

// ---------------------------------------------------------------------------
// Endpoints, connect, accept
// ---------------------------------------------------------------------------

/// Why an endpoint could not be bound, or a connection opened or accepted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IrohError {
    /// The endpoint could not be bound.
    #[error("could not bind an iroh endpoint on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// iroh's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The QUIC connection to `node` failed.
    #[error("could not connect to iroh node {node}: {source}; check the node id (`iroh_node_id=` in subduction_cli's --ready-file, not its peer_id) and the address, and that the server runs with --iroh")]
    Connect {
        /// Where we dialled.
        node: NodeAddr,
        /// iroh's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// No QUIC connection to `node` in time ([`CONNECT_TIMEOUT`] unless
    /// given to [`connect_within`]).
    #[error("no answer from iroh node {node} within {after:?}; is the server running with --iroh, is its UDP address right, and does no firewall drop UDP?")]
    ConnectTimeout {
        /// Where we dialled.
        node: NodeAddr,
        /// How long we waited.
        after: Duration,
    },
    /// An incoming connection failed during the QUIC handshake.
    #[error("an incoming iroh connection failed during the QUIC handshake: {source}")]
    Incoming {
        /// iroh's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A connection negotiated another protocol than [`ALPN`].
    #[error("the connection negotiated ALPN {found:?}, not subduction/0; give the endpoint's connections for other protocols to their own handlers")]
    WrongAlpn {
        /// The ALPN negotiated (lossy UTF-8).
        found: Box<str>,
    },
    /// The stream could not be opened or accepted.
    #[error("could not {} the Subduction stream of the QUIC connection with {node}: {source}", if *.opening { "open" } else { "accept" })]
    Stream {
        /// The remote node.
        node: NodeId,
        /// Opening (client) rather than accepting (server).
        opening: bool,
        /// Why.
        #[source]
        source: ConnectionError,
    },
    /// The endpoint is closed: no more incoming connections.
    #[error("the iroh endpoint is closed: no more incoming connections")]
    EndpointClosed,
}

fn boxed<E: std::error::Error + Send + Sync + 'static>(
    e: E,
) -> Box<dyn std::error::Error + Send + Sync> {
    Box::new(e)
}

/// An endpoint [`Builder`] for direct connections only, on `bind` (for
/// example `127.0.0.1:0` for tests, `0.0.0.0:4433` on a LAN): offers
/// [`ALPN`]; one UDP socket, on `bind` only; no relays; no address lookup
/// (no DNS, no pkarr); no port mapping (no UPnP, PCP or NAT-PMP probes);
/// no network report probes; and a peer may open one bidirectional stream
/// and no unidirectional one. Adjust it further before
/// [`Builder::bind`] (a [`SecretKey`] for a stable node id, a transport
/// config for other timeouts; set the stream limits again then).
///
/// # Errors
///
/// [`IrohError::Bind`] if iroh refuses the address.
pub fn direct_endpoint_builder(bind: SocketAddr) -> Result<Builder, IrohError> {
    let builder = Endpoint::builder(presets::Minimal)
        .clear_ip_transports()
        .bind_addr(bind)
        .map_err(|e| IrohError::Bind {
            addr: bind,
            source: boxed(e),
        })?;
    Ok(builder
        .relay_mode(RelayMode::Disabled)
        .clear_address_lookup()
        .portmapper_config(PortmapperConfig::Disabled)
        .net_report_config(NetReportConfig::minimal())
        .transport_config(one_stream(QuicTransportConfig::builder()).build())
        .alpns(vec![ALPN.to_vec()]))
}

/// A transport config letting a peer open one bidirectional stream (ours)
/// and nothing else: what it makes us buffer is one stream's window.
pub fn one_stream(
    config: ::iroh::endpoint::QuicTransportConfigBuilder,
) -> ::iroh::endpoint::QuicTransportConfigBuilder {
    config
        .max_concurrent_bidi_streams(VarInt::from_u32(1))
        .max_concurrent_uni_streams(VarInt::from_u32(0))
}

/// Binds a direct-only endpoint on `bind` ([`direct_endpoint_builder`]),
/// with `secret_key` as its identity (a fresh one if `None`).
///
/// # Errors
///
/// [`IrohError::Bind`].
///
/// # Cancel safety
///
/// Cancel safe: a cancelled bind leaves nothing behind.
pub async fn direct_endpoint(
    bind: SocketAddr,
    secret_key: Option<SecretKey>,
) -> Result<Endpoint, IrohError> {
    let mut builder = direct_endpoint_builder(bind)?;
    if let Some(key) = secret_key {
        builder = builder.secret_key(key);
    }
    builder.bind().await.map_err(|e| IrohError::Bind {
        addr: bind,
        source: boxed(e),
    })
}

/// Connects to `node` from `endpoint` (ALPN [`ALPN`]) and opens the
/// stream, within [`CONNECT_TIMEOUT`]. Run the handshake on the result
/// ([`Connection::connect`](crate::Connection::connect)).
///
/// # Errors
///
/// [`IrohError::Connect`] (refused, or not the node we named: iroh's TLS
/// checks the node id), [`IrohError::ConnectTimeout`],
/// [`IrohError::Stream`].
///
/// # Cancel safety
///
/// Cancel safe in the sense that nothing is left behind: a cancelled
/// connect drops the half-open connection.
pub async fn connect(endpoint: &Endpoint, node: &NodeAddr) -> Result<IrohTransport, IrohError> {
    connect_within(endpoint, node, CONNECT_TIMEOUT).await
}

/// [`connect`], waiting at most `timeout` for the QUIC connection.
///
/// # Errors
///
/// As [`connect`].
///
/// # Cancel safety
///
/// As [`connect`].
pub async fn connect_within(
    endpoint: &Endpoint,
    node: &NodeAddr,
    timeout: Duration,
) -> Result<IrohTransport, IrohError> {
    let opened = tokio::time::timeout(timeout, async {
        let conn = endpoint
            .connect(EndpointAddr::from(node), ALPN)
            .await
            .map_err(|e| IrohError::Connect {
                node: node.clone(),
                source: boxed(e),
            })?;
        // Opening is local: the peer learns of the stream with its first
        // bytes, our handshake challenge.
        let (send, recv) = conn.open_bi().await.map_err(|source| IrohError::Stream {
            node: node.id,
            opening: true,
            source,
        })?;
        Ok(IrohTransport::new(conn, send, recv))
    })
    .await;
    opened.unwrap_or_else(|_| {
        Err(IrohError::ConnectTimeout {
            node: node.clone(),
            after: timeout,
        })
    })
}

/// Accepts the next incoming connection on `endpoint` and its stream
/// ([`accept_incoming`]). A server accepting many peers should rather take
/// each [`Endpoint::accept`] result to its own task and call
/// [`accept_incoming`] there, so one slow peer does not hold up the others.
///
/// # Errors
///
/// [`IrohError::EndpointClosed`], and [`accept_incoming`]'s.
///
/// # Cancel safety
///
/// Cancel safe while waiting for a connection; after that, a cancelled
/// accept drops the connection.
pub async fn accept(endpoint: &Endpoint) -> Result<IrohTransport, IrohError> {
    let incoming = endpoint.accept().await.ok_or(IrohError::EndpointClosed)?;
    accept_incoming(incoming).await
}

/// Completes an incoming connection's QUIC handshake, then
/// [`accept_connection`]. Bound it with a timeout: it waits for the peer.
///
/// # Errors
///
/// [`IrohError::Incoming`], and [`accept_connection`]'s.
///
/// # Cancel safety
///
/// Cancel safe in the sense that nothing is left behind: the connection is
/// dropped.
pub async fn accept_incoming(incoming: Incoming) -> Result<IrohTransport, IrohError> {
    let conn = incoming
        .await
        .map_err(|e| IrohError::Incoming { source: boxed(e) })?;
    accept_connection(conn).await
}

/// Checks that `conn` negotiated [`ALPN`] and accepts the stream its
/// client opens (which happens with the client's first bytes, its
/// handshake challenge). For a server whose endpoint also serves other
/// protocols: route connections by [`QuicConnection::alpn`] and give the
/// Subduction ones here. Bound it with a timeout.
///
/// # Errors
///
/// [`IrohError::WrongAlpn`] (the connection is closed with
/// [`CLOSE_INTERNAL`]), [`IrohError::Stream`].
///
/// # Cancel safety
///
/// Cancel safe in the sense that nothing is left behind: the connection is
/// dropped.
pub async fn accept_connection(conn: QuicConnection) -> Result<IrohTransport, IrohError> {
    if conn.alpn() != ALPN {
        let found = String::from_utf8_lossy(conn.alpn()).into();
        conn.close(VarInt::from_u32(CLOSE_INTERNAL), b"not subduction/0");
        return Err(IrohError::WrongAlpn { found });
    }
    let (send, recv) = conn.accept_bi().await.map_err(|source| IrohError::Stream {
        node: conn.remote_id().into(),
        opening: false,
        source,
    })?;
    Ok(IrohTransport::new(conn, send, recv))
}

// ---------------------------------------------------------------------------
// Stream errors
// ---------------------------------------------------------------------------

/// What went wrong with the QUIC connection or its stream, inside
/// [`TransportError::Quic`] (see [`stream_error_of`]).
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

    fn into_io(self) -> io::Error {
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

/// The [`IrohStreamError`] inside a transport error, if it holds one.
///
/// ```
/// use bijou_net::transport::iroh::{stream_error_of, IrohStreamError};
/// use bijou_net::transport::TransportError;
///
/// let err = TransportError::Quic(Box::new(IrohStreamError::Reset { code: 7 }));
/// assert_eq!(stream_error_of(&err), Some(&IrohStreamError::Reset { code: 7 }));
/// ```
#[must_use]
pub fn stream_error_of(err: &TransportError) -> Option<&IrohStreamError> {
    match err {
        TransportError::Quic(inner) => inner.downcast_ref(),
        _ => None,
    }
}

/// The transport error for an I/O error of [`QuicStream`]: the
/// [`IrohStreamError`] it carries as [`TransportError::Quic`], anything
/// else as it is.
fn quic_error(err: TransportError) -> TransportError {
    match err {
        TransportError::Io(io) if io.get_ref().is_some_and(|e| e.is::<IrohStreamError>()) => {
            match io.into_inner().map(|e| e.downcast::<IrohStreamError>()) {
                Some(Ok(stream)) => TransportError::Quic(stream),
                Some(Err(other)) => TransportError::Io(io::Error::other(other)),
                None => TransportError::Io(io::Error::other("QUIC stream error")),
            }
        }
        other => other,
    }
}

// ---------------------------------------------------------------------------
// The stream as AsyncRead + AsyncWrite
// ---------------------------------------------------------------------------

/// The one bidirectional stream as a byte stream for [`FramedTransport`]:
/// errors carry an [`IrohStreamError`], and a close with code 0 reads as
/// the end of the stream (Subduction closes with 0 when it is done, and
/// the framing then tells whether that came between messages).
#[derive(Debug)]
pub struct QuicStream {
    send: SendStream,
    recv: RecvStream,
}

impl QuicStream {
    /// The two halves of one stream.
    pub fn new(send: SendStream, recv: RecvStream) -> Self {
        Self { send, recv }
    }

    /// The two halves.
    pub fn into_inner(self) -> (SendStream, RecvStream) {
        (self.send, self.recv)
    }
}

impl AsyncRead for QuicStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let recv = Pin::new(&mut self.get_mut().recv);
        match ready!(AsyncRead::poll_read(recv, cx, buf)) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(e) => {
                let read = e
                    .into_inner()
                    .and_then(|inner| inner.downcast::<ReadError>().ok());
                match read.map(|read| *read) {
                    // A close with code 0 reads as the end of the stream.
                    Some(ReadError::ConnectionLost(ConnectionError::ApplicationClosed(close)))
                        if close.error_code.into_inner() == u64::from(CLOSE_NORMAL) =>
                    {
                        Poll::Ready(Ok(()))
                    }
                    Some(read) => Poll::Ready(Err(IrohStreamError::from_read(read).into_io())),
                    None => Poll::Ready(Err(io::Error::other("QUIC read failed"))),
                }
            }
        }
    }
}

impl AsyncWrite for QuicStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().send)
            .poll_write(cx, buf)
            .map_err(|e| IrohStreamError::from_write(e).into_io())
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // QUIC sends what was written as the connection can.
        Poll::Ready(Ok(()))
    }

    /// Finishes our side of the stream (FIN); finishing twice is fine.
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let _already_finished = self.get_mut().send.finish();
        Poll::Ready(Ok(()))
    }
}

// ---------------------------------------------------------------------------
// The transport
// ---------------------------------------------------------------------------

/// A [`Transport`] over an iroh QUIC connection's one stream; see the
/// [module docs](self).
pub struct IrohTransport {
    framed: FramedTransport<QuicStream, U32Be>,
    conn: QuicConnection,
    /// Our side is finished (the sink closed).
    finished: bool,
    /// The peer acknowledged everything we sent, FIN included (or the
    /// connection is gone: nothing more to deliver).
    acked: bool,
    /// The peer's side ended between messages.
    peer_finished: bool,
    /// The stream has ended (peer's end, or an error was returned).
    ended: bool,
    /// We closed the connection.
    closed: bool,
    close_linger: Duration,
    /// While closing: the peer's acknowledgement of everything we sent,
    /// and how long we wait for it.
    linger: Option<Linger>,
}

struct Linger {
    ack: Pin<Box<dyn Future<Output = ()> + Send>>,
    deadline: Pin<Box<Sleep>>,
}

impl fmt::Debug for IrohTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IrohTransport")
            .field("remote", &self.remote_node_id())
            .field("max_message_length", &self.framed.max_message_length())
            .field("finished", &self.finished)
            .field("acked", &self.acked)
            .field("peer_finished", &self.peer_finished)
            .field("ended", &self.ended)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl IrohTransport {
    /// A transport over `conn`'s stream (`send`, `recv`), at most
    /// [`IROH_MAX_MESSAGE_LENGTH`] per message until
    /// [`Transport::set_max_message_length`]. [`connect`] and [`accept`]
    /// build it; this is for streams opened otherwise.
    pub fn new(conn: QuicConnection, send: SendStream, recv: RecvStream) -> Self {
        Self {
            framed: FramedTransport::new(QuicStream::new(send, recv), U32Be),
            conn,
            finished: false,
            acked: false,
            peer_finished: false,
            ended: false,
            closed: false,
            close_linger: DEFAULT_CLOSE_LINGER,
            linger: None,
        }
    }

    /// The remote endpoint's iroh node id (its TLS key, not its
    /// Subduction peer id).
    pub fn remote_node_id(&self) -> NodeId {
        self.conn.remote_id().into()
    }

    /// The QUIC connection (statistics, paths, round-trip time).
    pub fn connection(&self) -> &QuicConnection {
        &self.conn
    }

    /// Heap bytes held by our read and write buffers right now (their
    /// capacities; QUIC's own stream buffers are iroh's).
    pub fn buffered_capacity(&self) -> usize {
        self.framed.buffered_capacity()
    }

    /// How long closing the sink waits for the peer to acknowledge what we
    /// sent ([`DEFAULT_CLOSE_LINGER`] unless set).
    pub fn set_close_linger(&mut self, linger: Duration) {
        self.close_linger = linger;
    }

    /// Closes the QUIC connection now with `code` and `reason`, without
    /// waiting for anything: what was not delivered yet is lost. The
    /// stream then ends.
    pub fn abort(&mut self, code: u32, reason: &[u8]) {
        self.close_connection(code, reason);
    }

    fn close_connection(&mut self, code: u32, reason: &[u8]) {
        if !self.closed {
            self.closed = true;
            self.linger = None;
            self.conn.close(VarInt::from_u32(code), reason);
        }
    }

    /// The close code for an error the stream returns, if we are the one
    /// to close.
    fn close_for(err: &TransportError) -> Option<(u32, &'static [u8])> {
        match err {
            TransportError::TooLarge { .. } => Some((CLOSE_TOO_LARGE, b"message too large")),
            // The connection is gone already.
            TransportError::Quic(_) => None,
            _ => Some((CLOSE_INTERNAL, b"internal error")),
        }
    }
}

impl Drop for IrohTransport {
    fn drop(&mut self) {
        self.close_connection(CLOSE_NORMAL, b"");
    }
}

impl Stream for IrohTransport {
    type Item = Result<Bytes, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        match ready!(Pin::new(&mut this.framed).poll_next(cx)) {
            Some(Ok(message)) => Poll::Ready(Some(Ok(message))),
            None => {
                this.ended = true;
                this.peer_finished = true;
                if this.acked {
                    // Both sides are done, and the peer has all we sent.
                    // (While our close still waits for that, it closes.)
                    this.close_connection(CLOSE_NORMAL, b"");
                }
                Poll::Ready(None)
            }
            Some(Err(err)) => {
                this.ended = true;
                let err = quic_error(err);
                if let Some((code, reason)) = Self::close_for(&err) {
                    this.close_connection(code, reason);
                }
                Poll::Ready(Some(Err(err)))
            }
        }
    }
}

impl Sink<Bytes> for IrohTransport {
    type Error = TransportError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Pin::new(&mut self.get_mut().framed)
            .poll_ready(cx)
            .map_err(quic_error)
    }

    fn start_send(self: Pin<&mut Self>, message: Bytes) -> Result<(), TransportError> {
        Pin::new(&mut self.get_mut().framed).start_send(message)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Pin::new(&mut self.get_mut().framed)
            .poll_flush(cx)
            .map_err(quic_error)
    }

    /// Flushes, finishes our side of the stream, and waits (at most the
    /// close linger) for the peer to acknowledge it; then closes the
    /// connection with code 0 if the peer has finished too and has
    /// acknowledged everything.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        if !this.finished {
            ready!(Pin::new(&mut this.framed).poll_close(cx)).map_err(quic_error)?;
            this.finished = true;
            if !this.closed {
                let stopped = this.framed.get_ref().send.stopped();
                this.linger = Some(Linger {
                    ack: Box::pin(async move {
                        let _ = stopped.await;
                    }),
                    deadline: Box::pin(tokio::time::sleep(this.close_linger)),
                });
            }
        }
        if let Some(linger) = &mut this.linger {
            if linger.ack.as_mut().poll(cx).is_ready() {
                this.acked = true;
            } else if linger.deadline.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            // Acknowledged, or waited long enough: without the
            // acknowledgement the connection stays open (the peer may
            // still be reading) until the peer's end or the drop.
            this.linger = None;
        }
        if this.peer_finished && this.acked {
            this.close_connection(CLOSE_NORMAL, b"");
        }
        Poll::Ready(Ok(()))
    }
}

impl Transport for IrohTransport {
    fn set_max_message_length(&mut self, max: usize) {
        self.framed.set_max_message_length(max);
    }

    fn max_message_length(&self) -> usize {
        self.framed.max_message_length()
    }

    fn length_prefix(&self) -> Option<bijou_framing::prefix::PrefixKind> {
        self.framed.length_prefix()
    }

    fn unread(&self) -> &[u8] {
        self.framed.unread()
    }

    /// Writes the prefix and the message straight into the write buffer
    /// ([`FramedTransport`]'s).
    fn start_send_in_place(&mut self, message: &dyn WriteInPlace) -> Result<(), SendError> {
        self.framed.start_send_in_place(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29";

    #[test]
    fn node_ids_are_64_lower_case_hex_digits_of_a_key() {
        let id: NodeId = ID.parse().expect("a node id");
        assert_eq!(id.to_string(), ID);
        assert_eq!(format!("{id:?}"), format!("NodeId({ID})"));
        assert_eq!(
            ID[..62].parse::<NodeId>(),
            Err(ParseNodeIdError::Hex(ParseHexError::Length {
                expected: 64,
                found: 62
            }))
        );
        // One text form, as subduction_cli writes it: lower case.
        assert_eq!(
            ID.to_uppercase().parse::<NodeId>(),
            Err(ParseNodeIdError::Hex(ParseHexError::InvalidDigit {
                index: 1,
                found: 'B'
            }))
        );
        let err = "zz".parse::<NodeId>().expect_err("not hex");
        assert!(err.to_string().contains("iroh_node_id="), "{err}");
    }

    #[test]
    fn a_node_address_says_what_was_expected() {
        // The text, the error it must give, and words its message must hold.
        type Case = (String, fn(&ParseNodeAddrError) -> bool, &'static str);
        let cases: [Case; 5] = [
            (
                ID.into(),
                |e| matches!(e, ParseNodeAddrError::MissingAt),
                "<node-id>@<ip:port>",
            ),
            (
                format!("{ID}@"),
                |e| matches!(e, ParseNodeAddrError::NoAddr),
                "direct UDP address",
            ),
            (
                "abc@127.0.0.1:1".into(),
                |e| matches!(e, ParseNodeAddrError::NodeId(ParseNodeIdError::Hex(_))),
                "64 lower-case hex digits",
            ),
            (
                format!("{ID}@127.0.0.1:1,localhost:4433"),
                |e| matches!(e, ParseNodeAddrError::Addr { index: 1, .. }),
                "\"localhost:4433\"",
            ),
            (
                format!("{ID}@::1:4433"),
                |e| matches!(e, ParseNodeAddrError::Addr { index: 0, .. }),
                "[::1]:4433",
            ),
        ];
        for (text, is, says) in cases {
            let err = text.parse::<NodeAddr>().expect_err(&text);
            assert!(is(&err), "{text}: {err:?}");
            assert!(err.to_string().contains(says), "{text}: {err}");
        }
        let addr: NodeAddr = format!("{ID}@[::1]:4433").parse().expect("IPv6");
        assert_eq!(addr.addrs, vec!["[::1]:4433".parse().expect("addr")]);
        assert_eq!(addr.to_string(), format!("{ID}@[::1]:4433"));
    }

    #[test]
    fn close_codes_and_errors_say_what_happened() {
        let err = IrohStreamError::from(ConnectionError::TimedOut);
        assert!(err.to_string().contains("stopped answering"), "{err}");
        let err = IrohStreamError::PeerClosed {
            code: u64::from(CLOSE_TOO_LARGE),
            reason: Bytes::from_static(b"frame exceeds size limit"),
        };
        assert_eq!(err.peer_close_code(), Some(1009));
        let text = err.to_string();
        assert!(
            text.contains("code 1009 (a message we sent was over its size limit)"),
            "{text}"
        );
        assert!(text.contains("frame exceeds size limit"), "{text}");
        let io = IrohStreamError::Reset { code: 3 }.into_io();
        let transport = quic_error(TransportError::Io(io));
        assert_eq!(
            stream_error_of(&transport),
            Some(&IrohStreamError::Reset { code: 3 })
        );
        assert!(matches!(
            IrohTransport::close_for(&TransportError::TooLarge { len: 300, max: 256 }),
            Some((CLOSE_TOO_LARGE, _))
        ));
        assert!(IrohTransport::close_for(&transport).is_none());
    }
}
