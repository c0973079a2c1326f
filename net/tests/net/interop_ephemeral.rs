//! Ephemeral (`SUE\0`) interoperability with real Subduction code, in
//! process, over loopback WebSocket, through a Subduction node that relays
//! ephemeral messages: subduction_core =0.20.0's `Subduction` built with
//! `build_composed` around `subduction_ephemeral` =0.10.0's
//! `EphemeralHandler` (open policy, 64 KiB, 30 s), accepting connections
//! with `subduction_websocket` =0.14.0's WebSocket and handshake. Its stock
//! `TokioWebSocketServer` cannot be used: its handler type is fixed to the
//! sync handler, which drops a peer that sends `SUE\0`.
//!
//! Both directions, each with the other side's client being
//! `subduction_websocket`'s `TokioWebSocketClient`:
//! - our `Connection` subscribes, their client publishes, we receive the
//!   message verified and byte for byte;
//! - their client subscribes, our `Connection` publishes, they receive it
//!   byte for byte and their code decodes and verifies it.
//!
//! The Subduction crates are the oracle and the relay, never our
//! implementation. Their node acknowledges neither a connection nor a
//! Subscribe, and handles each message of a peer as a task of its own, so
//! the tests wait on reports from the node as this file wires it: a
//! connection added, a message their ephemeral handler has finished with.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::{websocket, Transport};
use bijou_net::Connection;
use bijou_proto::ephemeral::EphemeralRejected;
use bijou_proto::handshake::HandshakeConfig;
use bijou_proto::message::{Audience, Topic, Topics};
use bijou_proto::session::{Delivered, Received, Rejected};
use bijou_signing::{ed25519_dalek::SigningKey, Identity, PeerId};
use future_form::Sendable;
use futures::future::BoxFuture;
use futures::StreamExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::timeout;

use sedimentree_core::codec::{
    decode::Decode,
    encode::Encode,
    error::{DecodeError, InvalidSchema},
};
use sedimentree_core::depth::CountLeadingZeroBytes;
use sedimentree_core::id::SedimentreeId as TheirTreeId;
use subduction_core::authenticated::Authenticated;
use subduction_core::connection::message::{
    BatchSyncResponse, SyncMessage as TheirSyncMessage, TryAsBatchSyncResponse,
    TryAsSubscribeRequest, MESSAGE_SCHEMA,
};
use subduction_core::handler::{sync::SyncHandler, Handler};
use subduction_core::policy::open::OpenPolicy;
use subduction_core::storage::memory::MemoryStorage;
use subduction_core::subduction::{builder::SubductionBuilder, Subduction};
use subduction_core::timestamp::TimestampSeconds;
use subduction_core::transport::message::MessageTransport;
use subduction_crypto::signed::Signed as TheirSigned;
use subduction_crypto::signer::memory::MemorySigner;
use subduction_ephemeral::clock::std_clock::StdClock;
use subduction_ephemeral::composed::{ComposedHandler, Dispatched, WireEnvelope};
use subduction_ephemeral::config::EphemeralConfig as TheirConfig;
use subduction_ephemeral::handler::EphemeralHandler;
use subduction_ephemeral::message::{
    EphemeralMessage as TheirMessage, EphemeralPayload as TheirPayload, EPHEMERAL_SCHEMA,
};
use subduction_ephemeral::policy::OpenEphemeralPolicy;
use subduction_ephemeral::topic::Topic as TheirTopic;
use subduction_websocket::handshake::WebSocketHandshake;
use subduction_websocket::sleep::TokioSleeper;
use subduction_websocket::tokio::client::TokioWebSocketClient;
use subduction_websocket::tokio::{unified::UnifiedWebSocket, TimeoutTokio, TrackedTokioSpawn};
use subduction_websocket::websocket::{KeepAlive, WebSocket};
use tokio_util::task::TaskTracker;

type TheirClient = TokioWebSocketClient<MemorySigner>;

/// Bound on each test.
const LIMIT: Duration = Duration::from_secs(60);
/// Bound on waiting for one message, or for one report from the node.
const REPLY: Duration = Duration::from_secs(5);

// ---- the node: their code, wired together ---------------------------------

/// The wire envelope `subduction_ephemeral` asks the application to
/// provide: `SUM\0` to the sync handler, `SUE\0` to the ephemeral one,
/// with no bytes of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
enum WireMessage {
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

type NodeConn = MessageTransport<UnifiedWebSocket>;
type TheirPeerId = subduction_core::peer::id::PeerId;
type SyncH = SyncHandler<
    Sendable,
    MemoryStorage,
    NodeConn,
    OpenPolicy,
    CountLeadingZeroBytes,
    TrackedTokioSpawn,
>;
type EphH = EphemeralHandler<Sendable, NodeConn, OpenEphemeralPolicy, StdClock, TrackedTokioSpawn>;

/// What the node reports, as it happens.
#[derive(Debug)]
enum Report {
    /// A connection from this peer is in the node's connection map (their
    /// node reads its messages from then on).
    Added(TheirPeerId),
    /// Their ephemeral handler has finished with this message from this
    /// peer: a Subscribe or Unsubscribe is in its subscription map, a
    /// published message's relay has its recipients.
    Handled(TheirPeerId, TheirMessage),
}

/// Their ephemeral handler, unchanged, reporting each message once it has
/// finished with it. Their node acknowledges no Subscribe and runs each
/// message of a peer as a task of its own (a publish sent right after a
/// Subscribe can overtake it), so the tests wait on these reports.
#[derive(Clone)]
struct Reporting {
    inner: EphH,
    reports: mpsc::UnboundedSender<Report>,
}

impl Handler<Sendable, NodeConn> for Reporting {
    type Message = TheirMessage;
    type HandlerError = <EphH as Handler<Sendable, NodeConn>>::HandlerError;

    fn handle<'a>(
        &'a self,
        conn: &'a Authenticated<NodeConn, Sendable>,
        message: TheirMessage,
    ) -> BoxFuture<'a, Result<(), Self::HandlerError>> {
        Box::pin(async move {
            let handled = message.clone();
            let result = self.inner.handle(conn, message).await;
            let _ = self.reports.send(Report::Handled(conn.peer_id(), handled));
            result
        })
    }

    fn on_peer_disconnect(&self, peer: TheirPeerId) -> BoxFuture<'_, ()> {
        Handler::<Sendable, NodeConn>::on_peer_disconnect(&self.inner, peer)
    }
}

type Node = Arc<
    Subduction<
        'static,
        Sendable,
        MemoryStorage,
        NodeConn,
        ComposedHandler<SyncH, Reporting, WireMessage>,
        OpenPolicy,
        MemorySigner,
        TimeoutTokio,
        TrackedTokioSpawn,
        CountLeadingZeroBytes,
    >,
>;

/// A running node: its address, its peer id, its ephemeral handler (to
/// make it publish or subscribe itself) and its reports.
struct RunningNode {
    addr: SocketAddr,
    id: PeerId,
    ephemeral: EphH,
    reports: mpsc::UnboundedReceiver<Report>,
    accept: tokio::task::JoinHandle<()>,
}

impl RunningNode {
    /// Waits for a report `wanted` accepts, passing over the others.
    async fn reported(&mut self, what: &str, wanted: impl Fn(&Report) -> bool) {
        let wait = async {
            loop {
                match self.reports.recv().await {
                    Some(report) if wanted(&report) => return,
                    Some(_) => {}
                    None => panic!("the node stopped reporting"),
                }
            }
        };
        timeout(REPLY, wait)
            .await
            .unwrap_or_else(|_| panic!("the node reports {what} in time"));
    }

    /// Waits until a connection of `peer`'s is in the node's map.
    async fn added(&mut self, peer: &SigningKey) {
        let peer = their_peer_id(peer);
        self.reported(
            "the connection added",
            |report| matches!(report, Report::Added(added) if *added == peer),
        )
        .await;
    }

    /// Waits until the node has handled `message` from `peer`.
    async fn handled(&mut self, peer: &SigningKey, message: &TheirMessage) {
        let peer = their_peer_id(peer);
        let what = format!("{message:?} handled");
        self.reported(&what, |report| {
            matches!(report, Report::Handled(from, handled) if *from == peer && handled == message)
        })
        .await;
    }
}

impl Drop for RunningNode {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

const NODE_KEY: [u8; 32] = [0x4E; 32];

async fn start_node() -> RunningNode {
    let spawner = TrackedTokioSpawn::new(TaskTracker::new());
    let ephemeral_spawner = spawner.clone();
    let (reports, reports_rx) = mpsc::unbounded_channel();
    let handler_reports = reports.clone();
    let (node, listener, manager, ephemeral) = SubductionBuilder::new()
        .signer(MemorySigner::from_bytes(&NODE_KEY))
        .storage(MemoryStorage::default(), Arc::new(OpenPolicy))
        .spawner(spawner)
        .timer(TimeoutTokio)
        .roundtrip_timeout(Duration::from_secs(5))
        .build_composed::<Sendable, NodeConn, ComposedHandler<SyncH, Reporting, WireMessage>, _>(
            move |sync: Arc<SyncH>| {
                // There is no `Handler for Arc<H>`; a SyncHandler clone
                // shares its state.
                let sync: SyncH = Arc::try_unwrap(sync).unwrap_or_else(|shared| (*shared).clone());
                let (ephemeral, _events) = EphemeralHandler::new(
                    sync.connections(),
                    OpenEphemeralPolicy,
                    TheirConfig::default(),
                    StdClock,
                    ephemeral_spawner,
                );
                let reporting = Reporting {
                    inner: ephemeral.clone(),
                    reports: handler_reports,
                };
                (Arc::new(ComposedHandler::new(sync, reporting)), ephemeral)
            },
        );
    tokio::spawn(async move { listener.await.ok() });
    tokio::spawn(async move { manager.await.ok() });

    let tcp = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = tcp.local_addr().expect("addr");
    let accept = tokio::spawn(async move {
        while let Ok((stream, _)) = tcp.accept().await {
            tokio::spawn(accept_one(node.clone(), stream, reports.clone()));
        }
    });
    RunningNode {
        addr,
        id: SigningKey::from_bytes(&NODE_KEY).peer_id(),
        ephemeral,
        reports: reports_rx,
        accept,
    }
}

/// What their `TokioWebSocketServer` does for one connection: WebSocket
/// upgrade, their handshake as responder, then the node takes over; the
/// connection reported once the node has it.
async fn accept_one(node: Node, stream: TcpStream, reports: mpsc::UnboundedSender<Report>) {
    let Ok(ws) = async_tungstenite::tokio::accept_async(stream).await else {
        return;
    };
    let handshake = subduction_core::handshake::respond::<Sendable, _, _, _, _>(
        WebSocketHandshake::new(ws),
        |hs, peer_id| {
            let (ws, sender, keepalive) = WebSocket::new_with_keepalive(
                hs.into_inner(),
                peer_id,
                KeepAlive::balanced(),
                TokioSleeper,
            );
            let listen = ws.clone();
            tokio::spawn(async move { listen.listen().await.ok() });
            tokio::spawn(async move { sender.await.ok() });
            tokio::spawn(async move {
                keepalive.await;
            });
            (UnifiedWebSocket::Accepted(ws), ())
        },
        node.signer(),
        node.nonce_cache(),
        node.peer_id(),
        None,
        TimestampSeconds::now(),
        Duration::from_secs(60),
    )
    .await;
    if let Ok((auth, ())) = handshake {
        let peer = auth.peer_id();
        if let Ok(true) = node.add_connection(auth.map(MessageTransport::new)).await {
            let _ = reports.send(Report::Added(peer));
        }
    }
}

// ---- the two kinds of client ------------------------------------------------

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

/// Their peer id for one of our keys.
fn their_peer_id(key: &SigningKey) -> TheirPeerId {
    TheirPeerId::new(*key.peer_id().as_bytes())
}

/// Our client: a `Connection` over our WebSocket transport.
async fn our_client(node: &RunningNode, me: &SigningKey) -> Connection<impl Transport> {
    let transport = websocket::connect(&format!("ws://{}/", node.addr))
        .await
        .expect("WebSocket upgrade");
    Connection::connect(
        transport,
        me,
        Audience::Known(node.id),
        &ConnectConfig::default(),
    )
    .await
    .expect("handshake with their node")
}

/// Their client, its tasks running.
async fn their_client(node: &RunningNode, signer: &MemorySigner) -> TheirClient {
    let audience = subduction_core::handshake::audience::Audience::known(
        subduction_core::peer::id::PeerId::new(*node.id.as_bytes()),
    );
    let uri = format!("ws://{}/", node.addr).parse().expect("uri");
    let (client, listen, send, _keepalive) =
        TokioWebSocketClient::new(uri, signer.clone(), audience)
            .await
            .expect("their handshake with their node");
    tokio::spawn(std::future::IntoFuture::into_future(listen));
    tokio::spawn(std::future::IntoFuture::into_future(send));
    client.into_inner()
}

/// The next message our connection delivers, in time.
async fn next<T: Transport>(conn: &mut Connection<T>) -> Received {
    timeout(REPLY, conn.next())
        .await
        .expect("a message in time")
        .expect("connection open")
        .expect("transport ok")
}

fn their_topic(topic: Topic) -> TheirTopic {
    TheirTopic::new(*topic.as_bytes())
}

fn subscribe(topic: Topic) -> TheirMessage {
    TheirMessage::Subscribe {
        topics: nonempty::NonEmpty::new(their_topic(topic)),
    }
}

fn unsubscribe(topic: Topic) -> TheirMessage {
    TheirMessage::Unsubscribe {
        topics: nonempty::NonEmpty::new(their_topic(topic)),
    }
}

/// A message the node itself publishes (signed with its key).
async fn node_message(topic: Topic, nonce: u64, payload: &[u8]) -> TheirMessage {
    let sealed = TheirSigned::seal::<Sendable, _>(
        &MemorySigner::from_bytes(&NODE_KEY),
        TheirPayload {
            id: their_topic(topic),
            nonce,
            timestamp: TimestampSeconds::now(),
            payload: payload.to_vec(),
        },
    )
    .await;
    TheirMessage::Ephemeral(Box::new(sealed.into_signed()))
}

/// Their client publishes `payload` on `topic`; returns the bytes their
/// encoder wrote.
async fn their_publish(
    client: &TheirClient,
    signer: &MemorySigner,
    topic: Topic,
    payload: &[u8],
) -> Vec<u8> {
    let sealed = TheirSigned::seal::<Sendable, _>(
        signer,
        TheirPayload {
            id: their_topic(topic),
            nonce: rand::random(),
            timestamp: TimestampSeconds::now(),
            payload: payload.to_vec(),
        },
    )
    .await;
    let wire = TheirMessage::Ephemeral(Box::new(sealed.into_signed())).encode();
    subduction_core::transport::Transport::<Sendable>::send_bytes(client, &wire)
        .await
        .expect("their send");
    wire
}

// ---- the tests ----------------------------------------------------------------

/// We subscribe; their client publishes through their node; we receive it
/// verified, byte for byte. A message on a topic we did not subscribe to
/// never reaches us (their node filters it), and after we unsubscribe
/// nothing more arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn we_subscribe_their_client_publishes_we_receive_it_verified() {
    timeout(LIMIT, async {
        let mut node = start_node().await;
        let me = key(1);
        let mut ours = our_client(&node, &me).await;
        let topic = Topic::new(rand::random());
        let other = Topic::new(rand::random());
        ours.subscribe(Topics::one(topic)).await.expect("subscribe");
        node.handled(&me, &subscribe(topic)).await;

        // Their node reads their client's messages once it has the
        // connection, after our Subscribe: nothing to wait for.
        let their_signer = MemorySigner::from_bytes(&[2; 32]);
        let theirs = their_client(&node, &their_signer).await;

        for round in 0..10u8 {
            let payload = [round; 100];
            let wire = their_publish(&theirs, &their_signer, topic, &payload).await;
            let received = next(&mut ours).await;
            assert_eq!(&received.bytes[..], &wire[..], "their exact bytes");
            let Ok(Delivered::Ephemeral(verified)) = received.result else {
                panic!(
                    "expected a verified ephemeral message: {:?}",
                    received.result
                );
            };
            assert_eq!(verified.payload().topic(), topic);
            assert_eq!(verified.payload().payload().as_ref(), &payload[..]);
            assert_eq!(
                verified.peer_id(),
                key(2).peer_id(),
                "the originator, not the relay"
            );
        }

        // Another topic: their node does not forward it, so the next thing
        // we receive is the next message on ours.
        their_publish(&theirs, &their_signer, other, b"not for us").await;
        let wire = their_publish(&theirs, &their_signer, topic, b"for us").await;
        assert_eq!(&next(&mut ours).await.bytes[..], &wire[..]);

        // Unsubscribed: nothing arrives any more. `keep` stays subscribed,
        // for a message that must come first.
        let keep = Topic::new(rand::random());
        ours.subscribe(Topics::one(keep)).await.expect("subscribe");
        node.handled(&me, &subscribe(keep)).await;
        ours.unsubscribe(Topics::one(topic))
            .await
            .expect("unsubscribe");
        node.handled(&me, &unsubscribe(topic)).await;
        // Their client publishes on `topic`; once the node has handled it,
        // its relay has chosen its recipients (the relay's sends are a task
        // of their own, so this alone proves no order).
        let after = their_publish(&theirs, &their_signer, topic, b"after").await;
        let after = TheirMessage::try_decode(&after).expect("their own bytes");
        node.handled(&key(2), &after).await;
        // The node itself publishes on `topic`, then on `keep`. Its publish
        // has queued its sends when it returns, so were we still a
        // recipient on `topic`, that message would come first on our
        // connection. The first thing we receive is the one on `keep`.
        let on_topic = node_message(topic, rand::random(), b"after, from the node").await;
        node.ephemeral.publish(on_topic).await;
        let on_keep = node_message(keep, rand::random(), b"still subscribed").await;
        node.ephemeral.publish(on_keep.clone()).await;
        assert_eq!(
            &next(&mut ours).await.bytes[..],
            &on_keep.encode()[..],
            "nothing on the topic after unsubscribing"
        );
    })
    .await
    .expect("in time");
}

/// Their client subscribes; our `Connection` publishes through their node;
/// their client receives our exact bytes, and their decoder and verifier
/// accept them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn their_client_subscribes_we_publish_they_receive_it_verified() {
    timeout(LIMIT, async {
        let mut node = start_node().await;
        let their_signer = MemorySigner::from_bytes(&[3; 32]);
        let theirs = their_client(&node, &their_signer).await;
        let topic = Topic::new(rand::random());
        subduction_core::connection::Connection::<Sendable, TheirMessage>::send(
            &MessageTransport::new(theirs.clone()),
            &subscribe(topic),
        )
        .await
        .expect("their subscribe");
        node.handled(&key(3), &subscribe(topic)).await;

        // Their node reads our messages once it has our connection, after
        // their Subscribe: nothing to wait for.
        let me = key(4);
        let mut ours = our_client(&node, &me).await;

        for round in 0..10u8 {
            let payload = vec![round; 4096];
            let sent = ours
                .publish(&me, topic, payload.clone())
                .await
                .expect("publish");
            let got = timeout(
                REPLY,
                subduction_core::transport::Transport::<Sendable>::recv_bytes(&theirs),
            )
            .await
            .expect("relayed in time")
            .expect("their receive");
            assert_eq!(&got[..], sent.as_bytes(), "our exact bytes");
            let TheirMessage::Ephemeral(signed) =
                TheirMessage::try_decode(&got).expect("their decoder")
            else {
                panic!("expected an ephemeral message");
            };
            let verified = signed.try_verify().expect("their verifier");
            let payload_back = verified.into_payload();
            assert_eq!(payload_back.id, their_topic(topic));
            assert_eq!(payload_back.payload, payload);
            assert_eq!(payload_back.nonce, sent.header().nonce);
        }
    })
    .await
    .expect("in time");
}

/// Their node itself subscribes us to topics in its caller's order (and
/// re-subscribes new peers in hash-set order): we accept a Subscribe with
/// unsorted topics and record it. It also publishes itself, and we receive
/// that verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn their_node_subscribes_us_in_its_own_order_and_publishes() {
    timeout(LIMIT, async {
        let mut node = start_node().await;
        let me = key(5);
        let mut ours = our_client(&node, &me).await;
        // The node subscribes the connections it has: ours, once added.
        node.added(&me).await;

        let (high, low) = (Topic::new([0xF0; 32]), Topic::new([0x0F; 32]));
        let mut topics = nonempty::NonEmpty::new(their_topic(high));
        topics.push(their_topic(low));
        node.ephemeral.subscribe(topics).await;
        let received = next(&mut ours).await;
        assert_eq!(&received.bytes[5..7], &[0, 2]);
        assert_eq!(
            &received.bytes[7..39],
            high.as_bytes(),
            "unsorted on the wire"
        );
        let Ok(Delivered::Subscribed(outcome)) = received.result else {
            panic!("expected a Subscribe: {:?}", received.result);
        };
        assert_eq!(outcome.accepted, vec![high, low]);
        assert!(ours
            .ephemeral()
            .expect("ephemeral state")
            .remote_is_subscribed(&low));

        // The node publishes on a topic we subscribed to.
        ours.subscribe(Topics::one(low)).await.expect("subscribe");
        node.handled(&me, &subscribe(low)).await;
        let wire = node_message(low, 7, b"from the node").await;
        node.ephemeral.publish(wire.clone()).await;
        let received = next(&mut ours).await;
        assert_eq!(&received.bytes[..], &wire.encode()[..]);
        let Ok(Delivered::Ephemeral(verified)) = received.result else {
            panic!(
                "expected a verified ephemeral message: {:?}",
                received.result
            );
        };
        assert_eq!(verified.peer_id(), node.id);
    })
    .await
    .expect("in time");
}

/// A replay relayed by their node is caught by ours... their node drops
/// exact replays itself, so the replay is sent straight to us by a peer of
/// ours: what their encoder wrote, twice. The second is a typed
/// `Duplicate`, and the connection stays up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn their_bytes_replayed_to_us_are_refused_as_duplicates() {
    timeout(LIMIT, async {
        let mut node = start_node().await;
        let me = key(6);
        let mut ours = our_client(&node, &me).await;
        let topic = Topic::new(rand::random());
        ours.subscribe(Topics::one(topic)).await.expect("subscribe");
        node.handled(&me, &subscribe(topic)).await;
        let their_signer = MemorySigner::from_bytes(&[7; 32]);
        let theirs = their_client(&node, &their_signer).await;
        let wire = their_publish(&theirs, &their_signer, topic, b"once").await;
        let first = next(&mut ours).await;
        assert!(matches!(first.result, Ok(Delivered::Ephemeral(_))));

        // The same bytes through a direct connection of ours.
        let (mut a, mut b) = direct_pair(&me).await;
        b.subscribe(Topics::one(topic)).await.expect("subscribe");
        next(&mut a).await; // their Subscribe, on a's side
        for expect_duplicate in [false, true] {
            a.send_bytes(bytes::Bytes::from(wire.clone()))
                .await
                .expect("send");
            let received = next(&mut b).await;
            match (expect_duplicate, received.result) {
                (false, Ok(Delivered::Ephemeral(_))) => {}
                (true, Err(Rejected::Ephemeral(EphemeralRejected::Duplicate { issuer, .. }))) => {
                    assert_eq!(issuer, key(7).peer_id());
                }
                (_, other) => panic!("unexpected: {other:?}"),
            }
        }
        // Still up.
        let sent = a.publish(&me, topic, &b"after"[..]).await.expect("publish");
        assert_eq!(next(&mut b).await.bytes, sent.to_bytes());
    })
    .await
    .expect("in time");
}

/// Two of our connections over a loopback WebSocket, no node between.
async fn direct_pair(me: &SigningKey) -> (Connection<impl Transport>, Connection<impl Transport>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server_key = key(0x33);
    let server_id = server_key.peer_id();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("accept");
        let transport = websocket::accept(stream).await.expect("upgrade");
        let responder = bijou_proto::handshake::Responder::new(HandshakeConfig::default());
        Connection::accept(
            transport,
            &server_key,
            &responder,
            &ConnectConfig::default(),
        )
        .await
        .expect("accept")
    });
    let transport = websocket::connect(&format!("ws://{addr}/"))
        .await
        .expect("upgrade");
    let client = Connection::connect(
        transport,
        me,
        Audience::Known(server_id),
        &ConnectConfig::default(),
    )
    .await
    .expect("connect");
    (client, server.await.expect("server task"))
}
