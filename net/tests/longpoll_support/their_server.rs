//! Subduction's long-poll server in process, for the long-poll client's
//! tests: `subduction_http_longpoll` =0.13.0's `LongPollHandler` behind a
//! hyper accept loop, registering each authenticated session with a
//! Subduction node (subduction_core =0.20.0, sync and
//! `subduction_ephemeral` =0.10.0 composed), as `subduction_cli` wires
//! them. Each test file uses what it needs of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bijou_net::transport::longpoll::{self, ACK_HEADER, SESSION_ID_HEADER};
use bijou_signing::{ed25519_dalek::SigningKey, Identity, PeerId};
use future_form::Sendable;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use sedimentree_core::codec::{
    decode::Decode,
    encode::Encode,
    error::{DecodeError, InvalidSchema},
};
use sedimentree_core::depth::CountLeadingZeroBytes;
use sedimentree_core::id::SedimentreeId as TheirTreeId;
use subduction_core::connection::message::{
    BatchSyncResponse, SyncMessage as TheirSyncMessage, TryAsBatchSyncResponse,
    TryAsSubscribeRequest, MESSAGE_SCHEMA,
};
use subduction_core::handler::sync::SyncHandler;
use subduction_core::handshake::audience::{Audience as TheirAudience, DiscoveryId};
use subduction_core::nonce_cache::NonceCache;
use subduction_core::policy::open::OpenPolicy;
use subduction_core::storage::memory::MemoryStorage;
use subduction_core::subduction::{builder::SubductionBuilder, Subduction};
use subduction_core::transport::message::MessageTransport;
use subduction_crypto::signer::memory::MemorySigner;
use subduction_ephemeral::clock::std_clock::StdClock;
use subduction_ephemeral::composed::{ComposedHandler, Dispatched, WireEnvelope};
use subduction_ephemeral::config::EphemeralConfig as TheirConfig;
use subduction_ephemeral::handler::EphemeralHandler;
use subduction_ephemeral::message::{EphemeralMessage as TheirMessage, EPHEMERAL_SCHEMA};
use subduction_ephemeral::policy::OpenEphemeralPolicy;
use subduction_http_longpoll::server::LongPollHandler;
use subduction_http_longpoll::session::SessionId as TheirSessionId;
use subduction_http_longpoll::transport::HttpLongPollTransport;
use subduction_websocket::tokio::{TimeoutTokio, TrackedTokioSpawn};
use tokio_util::task::TaskTracker;

/// The service name their server answers `Discover` for.
pub const SERVICE: &str = "bijou.longpoll.interop";
/// Their node's key.
pub const NODE_KEY: [u8; 32] = [0x5E; 32];

/// The wire envelope `subduction_ephemeral` asks the application for:
/// `SUM\0` to the sync handler, `SUE\0` to the ephemeral one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireMessage {
    Sync(Box<TheirSyncMessage>),
    Ephemeral(TheirMessage),
}

impl From<TheirSyncMessage> for WireMessage {
    fn from(m: TheirSyncMessage) -> Self {
        Self::Sync(Box::new(m))
    }
}

impl Encode for WireMessage {
    fn encode(&self) -> Vec<u8> {
        match self {
            Self::Sync(m) => m.encode(),
            Self::Ephemeral(m) => m.encode(),
        }
    }

    fn encoded_size(&self) -> usize {
        match self {
            Self::Sync(m) => m.encoded_size(),
            Self::Ephemeral(m) => m.encoded_size(),
        }
    }
}

impl Decode for WireMessage {
    const MIN_SIZE: usize = 5;

    fn try_decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let schema: [u8; 4] =
            buf.get(..4)
                .and_then(|s| s.try_into().ok())
                .ok_or(DecodeError::MessageTooShort {
                    type_name: "schema",
                    need: 4,
                    have: buf.len(),
                })?;
        match schema {
            MESSAGE_SCHEMA => TheirSyncMessage::try_decode(buf).map(Self::from),
            EPHEMERAL_SCHEMA => TheirMessage::try_decode(buf).map(Self::Ephemeral),
            got => Err(InvalidSchema {
                expected: MESSAGE_SCHEMA,
                got,
            }
            .into()),
        }
    }
}

impl TryAsBatchSyncResponse for WireMessage {
    fn try_as_batch_sync_response(&self) -> Option<&BatchSyncResponse> {
        match self {
            Self::Sync(m) => m.try_as_batch_sync_response(),
            Self::Ephemeral(_) => None,
        }
    }
}

impl TryAsSubscribeRequest for WireMessage {
    fn try_as_subscribe_request(&self) -> Option<TheirTreeId> {
        match self {
            Self::Sync(m) => m.try_as_subscribe_request(),
            Self::Ephemeral(_) => None,
        }
    }
}

impl WireEnvelope for WireMessage {
    fn dispatch(self) -> Dispatched {
        match self {
            Self::Sync(m) => Dispatched::Sync(m),
            Self::Ephemeral(m) => Dispatched::Ephemeral(m),
        }
    }
}

pub type NodeConn = MessageTransport<HttpLongPollTransport>;
pub type SyncH = SyncHandler<
    Sendable,
    MemoryStorage,
    NodeConn,
    OpenPolicy,
    CountLeadingZeroBytes,
    TrackedTokioSpawn,
>;
pub type EphH =
    EphemeralHandler<Sendable, NodeConn, OpenEphemeralPolicy, StdClock, TrackedTokioSpawn>;
pub type Node = Arc<
    Subduction<
        'static,
        Sendable,
        MemoryStorage,
        NodeConn,
        ComposedHandler<SyncH, EphH, WireMessage>,
        OpenPolicy,
        MemorySigner,
        TimeoutTokio,
        TrackedTokioSpawn,
        CountLeadingZeroBytes,
    >,
>;
pub type Handler = LongPollHandler<MemorySigner, TimeoutTokio>;

/// One request their server received: its path and our two headers.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub session: Option<String>,
    pub ack: Option<String>,
}

/// Their node behind their long-poll server; aborts its accept loop when
/// dropped.
pub struct TheirServer {
    pub url: String,
    pub id: PeerId,
    pub handler: Handler,
    pub node: Node,
    seen: Arc<Mutex<Vec<Seen>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for TheirServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl TheirServer {
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }

    /// Whether their server still holds the session `ours`.
    pub async fn has_session(&self, ours: longpoll::SessionId) -> bool {
        let id = TheirSessionId::from_hex(&ours.to_string()).expect("same format");
        self.handler.sessions().get(&id).await.is_some()
    }
}

/// Starts their node and server on a loopback port; `poll_hold` is how
/// long their server holds an `/lp/recv` (30 s by default).
pub async fn start_their_server(poll_hold: Duration) -> TheirServer {
    let signer = MemorySigner::from_bytes(&NODE_KEY);
    let their_id = subduction_core::peer::id::PeerId::from(signer.verifying_key());
    let spawner = TrackedTokioSpawn::new(TaskTracker::new());
    let ephemeral_spawner = spawner.clone();
    let (node, listener, manager, _ephemeral): (Node, _, _, EphH) = SubductionBuilder::new()
        .signer(signer.clone())
        .storage(MemoryStorage::default(), Arc::new(OpenPolicy))
        .spawner(spawner)
        .timer(TimeoutTokio)
        .discovery_id(DiscoveryId::new(SERVICE.as_bytes()))
        .roundtrip_timeout(Duration::from_secs(5))
        .build_composed::<Sendable, NodeConn, ComposedHandler<SyncH, EphH, WireMessage>, _>(
            move |sync: Arc<SyncH>| {
                let sync: SyncH = Arc::try_unwrap(sync).unwrap_or_else(|shared| (*shared).clone());
                let (ephemeral, _events) = EphemeralHandler::new(
                    sync.connections(),
                    OpenEphemeralPolicy,
                    TheirConfig::default(),
                    StdClock,
                    ephemeral_spawner,
                );
                (
                    Arc::new(ComposedHandler::new(sync, ephemeral.clone())),
                    ephemeral,
                )
            },
        );
    tokio::spawn(async move { listener.await.ok() });
    tokio::spawn(async move { manager.await.ok() });

    let handler: Handler = LongPollHandler::new(
        signer,
        Arc::new(NonceCache::default()),
        their_id,
        Some(TheirAudience::discover(SERVICE.as_bytes())),
        Duration::from_secs(60),
        TimeoutTokio,
    )
    .with_poll_timeout(poll_hold);

    let tcp = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr: SocketAddr = tcp.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let accept = {
        let (handler, node, seen) = (handler.clone(), node.clone(), seen.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = tcp.accept().await {
                let (handler, node, seen) = (handler.clone(), node.clone(), seen.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let (handler, node, seen) = (handler.clone(), node.clone(), seen.clone());
                        async move {
                            let header = |name: &str| {
                                req.headers()
                                    .get(name)
                                    .and_then(|v| v.to_str().ok())
                                    .map(str::to_owned)
                            };
                            seen.lock().expect("log").push(Seen {
                                path: req.uri().path().to_owned(),
                                session: header(SESSION_ID_HEADER),
                                ack: header(ACK_HEADER),
                            });
                            // What subduction_cli does: a 200 handshake
                            // registers the session with the node before the
                            // answer goes out.
                            let resp = handler.handle(req).await?;
                            if resp.status() == hyper::StatusCode::OK {
                                let sid = resp
                                    .headers()
                                    .get(subduction_http_longpoll::SESSION_ID_HEADER)
                                    .and_then(|v| v.to_str().ok())
                                    .and_then(TheirSessionId::from_hex);
                                if let Some(sid) = sid {
                                    if let Some(auth) = handler.take_authenticated(&sid).await {
                                        node.add_connection(auth.map(MessageTransport::new))
                                            .await
                                            .ok();
                                    }
                                }
                            }
                            Ok::<_, subduction_http_longpoll::error::ServerError>(resp)
                        }
                    });
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                        .ok();
                });
            }
        })
    };
    TheirServer {
        url: format!("http://{addr}"),
        id: SigningKey::from_bytes(&NODE_KEY).peer_id(),
        handler,
        node,
        seen,
        accept,
    }
}
