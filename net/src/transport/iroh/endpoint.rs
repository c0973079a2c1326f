use std::net::SocketAddr;
use std::time::Duration;

use ::iroh::endpoint::{
    presets, Builder, Connection as QuicConnection, ConnectionError, Incoming, PortmapperConfig,
    QuicTransportConfig, VarInt,
};
use ::iroh::{EndpointAddr, NetReportConfig, RelayMode};

use super::*;

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
