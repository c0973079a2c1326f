//! A Subduction node with keyhive, in process, over loopback WebSocket
//! (the `keyhive` feature), shared by bijou-net's keyhive interop tests and
//! the keyhive benchmark: `subduction_websocket` =0.14.0's server with the
//! storage policy `subduction_cli` 0.21 runs under `--auth keyhive` (its
//! `CliKeyhivePolicyHandle`: `subduction_keyhive`'s `authorize_*_with` over
//! one shared keyhive, legacy ids let through), and `subduction_keyhive`
//! =0.12.0's protocol over that same keyhive (`keyhive_core` =0.7.0, the
//! CLI's runtime types: content references are `Vec<u8>`). [`open_node`]
//! is the same node under `--auth open`.
//!
//! `subduction_websocket`'s server carries only sync messages, so the
//! client's transport ([`Routing`]) sends its `SUK\0` messages to their
//! keyhive protocol in process (the bytes as they would cross the wire,
//! answered with the bytes their protocol sends) and everything else over
//! the socket; the CLI's own composition of the two (its private wire type
//! and handler) is not reproduced here.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::{websocket, Transport, TransportError};
use bijou_net::Connection;
use bijou_net::RunError;
use bijou_proto::keyhive::{Outcome, RootDelegation};
use bijou_proto::message::{
    Audience, BatchSyncRequest, BlobMessage, CommitId, FingerprintSeed, LooseCommit, Message,
    RemoteHeads, SedimentreeId, SignedItem, SyncMessage, SyncResult,
};
use bijou_proto::session::VerifiedMessage;
use bijou_proto::session::{self, Operation, TreeAccess};
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, PeerId, Signed};
use bytes::Bytes;
use future_form::Sendable;
use futures::future::BoxFuture;
use futures::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use keyhive_core::keyhive::Keyhive;
use keyhive_core::listener::no_listener::NoListener;
use keyhive_core::store::ciphertext::memory::MemoryCiphertextStore;
use keyhive_crypto::signer::memory::MemorySigner as KeyhiveSigner;
use sedimentree_core::codec::{decode::Decode, encode::Encode};
use sedimentree_core::depth::CountLeadingZeroBytes;
use subduction_core::nonce_cache::NonceCache;
use subduction_core::policy::connection::ConnectionPolicy;
use subduction_core::policy::open::OpenPolicy;
use subduction_core::policy::storage::StoragePolicy;
use subduction_core::storage::memory::MemoryStorage;
use subduction_crypto::signer::memory::MemorySigner;
use subduction_crypto::verified_author::VerifiedAuthor;
use subduction_keyhive::policy::{
    authorize_connect_with, authorize_fetch_with, authorize_put_with, filter_authorized_fetch_with,
    ConnectionDisallowedError, FetchDisallowedError, PutDisallowedError,
};
use subduction_keyhive::{
    KeyhiveConnection, KeyhiveMessage as TheirFrame, KeyhivePeerId, MemoryKeyhiveStorage,
    SignedMessage,
};
use subduction_websocket::tokio::{server::TokioWebSocketServer, TimeoutTokio};
use tokio::sync::mpsc;
use tokio::time::timeout;

const SERVICE: &str = "bijou.keyhive";
const DRIFT: Duration = Duration::from_secs(60);
/// Bound on waiting for one answer (a fetch's, a probe's).
pub const REPLY: Duration = Duration::from_secs(5);
const SERVER_SEED: [u8; 32] = [0x5E; 32];

/// `subduction_keyhive::runtime::SendableRuntimeKeyhive`, spelled out.
type ServerKeyhive = Keyhive<
    Sendable,
    KeyhiveSigner,
    Vec<u8>,
    Vec<u8>,
    MemoryCiphertextStore<Vec<u8>, Vec<u8>>,
    NoListener,
    rand08::rngs::OsRng,
>;
type Shared = Arc<async_lock::Mutex<ServerKeyhive>>;

type ServerProtocol = subduction_keyhive::KeyhiveProtocol<
    KeyhiveSigner,
    Vec<u8>,
    Vec<u8>,
    MemoryCiphertextStore<Vec<u8>, Vec<u8>>,
    NoListener,
    rand08::rngs::OsRng,
    ToClient,
    MemoryKeyhiveStorage,
    Sendable,
>;

// ── subduction_cli 0.21's `CliKeyhivePolicyHandle`, as it is ──────────────

fn is_legacy(id: &sedimentree_core::id::SedimentreeId) -> bool {
    id.as_bytes()[16..].iter().all(|&b| b == 0)
}

/// The CLI's policy over the shared keyhive, and where to report a push
/// it refuses (the one addition: it observes, and decides nothing).
#[derive(Clone)]
struct KeyhivePolicy(Shared, mpsc::UnboundedSender<RefusedPush>);

/// A push the keyhive policy refused: their node drops it without an
/// answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefusedPush {
    /// Who pushed.
    pub peer: PeerId,
    /// Into which tree.
    pub tree: SedimentreeId,
}

impl ConnectionPolicy<Sendable> for KeyhivePolicy {
    type ConnectionDisallowed = ConnectionDisallowedError;
    fn authorize_connect(
        &self,
        peer: subduction_core::peer::id::PeerId,
    ) -> BoxFuture<'_, Result<(), ConnectionDisallowedError>> {
        async move { authorize_connect_with(&*self.0.lock().await, peer).await }.boxed()
    }
}

impl StoragePolicy<Sendable> for KeyhivePolicy {
    type FetchDisallowed = FetchDisallowedError;
    type PutDisallowed = PutDisallowedError;

    fn authorize_fetch(
        &self,
        peer: subduction_core::peer::id::PeerId,
        id: sedimentree_core::id::SedimentreeId,
    ) -> BoxFuture<'_, Result<(), FetchDisallowedError>> {
        if is_legacy(&id) {
            return async { Ok(()) }.boxed();
        }
        async move { authorize_fetch_with(&*self.0.lock().await, peer, id).await }.boxed()
    }

    fn authorize_put(
        &self,
        requestor: subduction_core::peer::id::PeerId,
        author: VerifiedAuthor,
        id: sedimentree_core::id::SedimentreeId,
    ) -> BoxFuture<'_, Result<(), PutDisallowedError>> {
        if is_legacy(&id) {
            return async { Ok(()) }.boxed();
        }
        async move {
            let decided = authorize_put_with(&*self.0.lock().await, requestor, author, id).await;
            if decided.is_err() {
                let _ = self.1.send(RefusedPush {
                    peer: PeerId::from_bytes(*requestor.as_bytes()),
                    tree: SedimentreeId::new(*id.as_bytes()),
                });
            }
            decided
        }
        .boxed()
    }

    fn filter_authorized_fetch(
        &self,
        peer: subduction_core::peer::id::PeerId,
        ids: Vec<sedimentree_core::id::SedimentreeId>,
    ) -> BoxFuture<'_, Vec<sedimentree_core::id::SedimentreeId>> {
        let (legacy, keyhive_ids): (Vec<_>, Vec<_>) = ids.into_iter().partition(is_legacy);
        async move {
            let mut allowed =
                filter_authorized_fetch_with(&*self.0.lock().await, peer, keyhive_ids).await;
            allowed.extend(legacy);
            allowed
        }
        .boxed()
    }
}

// ── Their keyhive protocol, on a thread of its own ─────────────────────────

#[derive(Debug)]
struct Gone;

impl std::fmt::Display for Gone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the client's channel is closed")
    }
}

impl std::error::Error for Gone {}

/// Their protocol's connection to one client: what it sends becomes `SUK`
/// bytes for that client's transport.
#[derive(Clone)]
struct ToClient {
    peer: KeyhivePeerId,
    tx: mpsc::UnboundedSender<Bytes>,
}

impl KeyhiveConnection<Sendable> for ToClient {
    type SendError = Gone;
    type RecvError = Gone;
    type DisconnectError = Gone;

    fn peer_id(&self) -> KeyhivePeerId {
        self.peer.clone()
    }

    fn send(&self, message: SignedMessage) -> BoxFuture<'_, Result<(), Gone>> {
        let bytes = TheirFrame::from_signed(&message).map(|f| Bytes::from(f.encode()));
        async move { self.tx.send(bytes.map_err(|_| Gone)?).map_err(|_| Gone) }.boxed()
    }

    fn recv(&self) -> BoxFuture<'_, Result<SignedMessage, Gone>> {
        async { Err(Gone) }.boxed()
    }

    fn disconnect(&self) -> BoxFuture<'_, Result<(), Gone>> {
        async { Ok(()) }.boxed()
    }
}

enum Command {
    Add(ToClient),
    Handle(KeyhivePeerId, Bytes),
}

/// Runs their protocol; returns where to send commands.
fn start_keyhive_protocol(
    keyhive: Shared,
    id: KeyhivePeerId,
    card: keyhive_core::contact_card::ContactCard,
) -> std::sync::mpsc::Sender<Command> {
    let (tx, rx) = std::sync::mpsc::channel::<Command>();
    std::thread::spawn(move || {
        let protocol = ServerProtocol::new(keyhive, MemoryKeyhiveStorage::new(), id, card);
        futures::executor::block_on(async move {
            while let Ok(command) = rx.recv() {
                match command {
                    Command::Add(conn) => protocol.add_peer(conn.peer.clone(), conn).await,
                    Command::Handle(from, bytes) => {
                        // As the CLI's handler: decode, hand over, log errors.
                        let result = match TheirFrame::try_decode(&bytes) {
                            Ok(frame) => match frame.into_signed() {
                                Ok(signed) => protocol
                                    .handle_message(&from, signed, None)
                                    .await
                                    .map_err(|e| e.to_string()),
                                Err(e) => Err(e.to_string()),
                            },
                            Err(e) => Err(e.to_string()),
                        };
                        if let Err(e) = result {
                            eprintln!("their keyhive handler: {e}");
                        }
                    }
                }
            }
        });
    });
    tx
}

// ── Our client's transport: SUK to their protocol, the rest to the socket ──

/// A client's transport: `SUK\0` messages to their keyhive protocol (if
/// the node has one), the rest to the socket.
pub struct Routing<T> {
    inner: T,
    me: KeyhivePeerId,
    to_keyhive: std::sync::mpsc::Sender<Command>,
    from_keyhive: mpsc::UnboundedReceiver<Bytes>,
}

impl<T: Transport> Stream for Routing<T> {
    type Item = Result<Bytes, TransportError>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Poll::Ready(Some(bytes)) = self.from_keyhive.poll_recv(cx) {
            return Poll::Ready(Some(Ok(bytes)));
        }
        self.inner.poll_next_unpin(cx)
    }
}

impl<T: Transport> Sink<Bytes> for Routing<T> {
    type Error = TransportError;
    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready_unpin(cx)
    }
    fn start_send(mut self: Pin<&mut Self>, bytes: Bytes) -> Result<(), Self::Error> {
        if bytes.starts_with(b"SUK\0") {
            let me = self.me.clone();
            let _ = self.to_keyhive.send(Command::Handle(me, bytes));
            Ok(())
        } else {
            self.inner.start_send_unpin(bytes)
        }
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_flush_unpin(cx)
    }
    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_close_unpin(cx)
    }
}

impl<T: Transport> Transport for Routing<T> {
    fn set_max_message_length(&mut self, max: usize) {
        self.inner.set_max_message_length(max);
    }
    fn max_message_length(&self) -> usize {
        self.inner.max_message_length()
    }
}

// ── The node ───────────────────────────────────────────────────────────────

/// A running node; dropping it stops its server.
pub struct Node {
    _server: Box<dyn std::any::Any + Send>,
    addr: SocketAddr,
    id: PeerId,
    keyhive: Option<std::sync::mpsc::Sender<Command>>,
    refused: Option<tokio::sync::Mutex<mpsc::UnboundedReceiver<RefusedPush>>>,
}

impl Node {
    /// Waits (at most [`REPLY`]) until the keyhive policy has refused
    /// `push`, passing over other refusals. Their node answers a refused
    /// push with silence; this is the event to wait on instead.
    ///
    /// # Panics
    ///
    /// On an open node (no policy refuses anything), or if the refusal does
    /// not come in time.
    pub async fn refused(&self, push: RefusedPush) {
        let mut refusals = self
            .refused
            .as_ref()
            .expect("a keyhive node refuses pushes, an open one does not")
            .lock()
            .await;
        let wait = async {
            while let Some(refused) = refusals.recv().await {
                if refused == push {
                    return;
                }
            }
            panic!("the node stopped");
        };
        timeout(REPLY, wait)
            .await
            .unwrap_or_else(|_| panic!("{push:?} refused in time"));
    }
}

/// A node as `subduction_cli server` (default `--auth keyhive`) builds it:
/// one seed for the Subduction and the keyhive identity, the keyhive
/// policy over the shared keyhive, their keyhive protocol over the same.
pub async fn keyhive_node() -> Node {
    let keyhive_signer: KeyhiveSigner = SigningKey::from_bytes(&SERVER_SEED).into();
    let keyhive: ServerKeyhive = Keyhive::generate(
        keyhive_signer,
        MemoryCiphertextStore::new(),
        NoListener,
        rand08::rngs::OsRng,
    )
    .await
    .expect("keyhive");
    let card = keyhive.generate_contact_card().await.expect("contact card");
    let id = KeyhivePeerId::from_bytes(SigningKey::from_bytes(&SERVER_SEED).peer_id().into());
    let shared: Shared = Arc::new(async_lock::Mutex::new(keyhive));
    let commands = start_keyhive_protocol(shared.clone(), id, card);
    let (refusals, refused) = mpsc::unbounded_channel();
    let server = TokioWebSocketServer::setup(
        "127.0.0.1:0".parse().expect("addr"),
        TimeoutTokio,
        DRIFT,
        subduction_websocket::DEFAULT_MAX_MESSAGE_SIZE,
        MemorySigner::from_bytes(&SERVER_SEED),
        Some(SERVICE),
        MemoryStorage::new(),
        KeyhivePolicy(shared, refusals),
        NonceCache::default(),
        CountLeadingZeroBytes,
    )
    .await
    .expect("their server starts");
    Node {
        addr: server.address(),
        _server: Box::new(server),
        id: SigningKey::from_bytes(&SERVER_SEED).peer_id(),
        keyhive: Some(commands),
        refused: Some(tokio::sync::Mutex::new(refused)),
    }
}

/// The same node with `--auth open`: no keyhive at all.
pub async fn open_node() -> Node {
    let server = TokioWebSocketServer::setup(
        "127.0.0.1:0".parse().expect("addr"),
        TimeoutTokio,
        DRIFT,
        subduction_websocket::DEFAULT_MAX_MESSAGE_SIZE,
        MemorySigner::from_bytes(&SERVER_SEED),
        Some(SERVICE),
        MemoryStorage::new(),
        OpenPolicy,
        NonceCache::default(),
        CountLeadingZeroBytes,
    )
    .await
    .expect("their server starts");
    Node {
        addr: server.address(),
        _server: Box::new(server),
        id: SigningKey::from_bytes(&SERVER_SEED).peer_id(),
        keyhive: None,
        refused: None,
    }
}

/// A client of a [`Node`].
pub type Client = Connection<Routing<websocket::WebSocketTransport<tokio::net::TcpStream>>>;

/// Connects to `node` as `me` (WebSocket upgrade and handshake).
pub async fn connect(node: &Node, me: &SigningKey) -> Client {
    let inner = websocket::connect(&format!("ws://{}/", node.addr))
        .await
        .expect("WebSocket upgrade");
    let (tx, rx) = mpsc::unbounded_channel();
    let my_id = KeyhivePeerId::from_bytes(me.peer_id().into());
    let to_keyhive = match &node.keyhive {
        Some(commands) => {
            commands
                .send(Command::Add(ToClient {
                    peer: my_id.clone(),
                    tx,
                }))
                .expect("their protocol runs");
            commands.clone()
        }
        // An open node drops SUK: a channel nobody reads.
        None => std::sync::mpsc::channel().0,
    };
    let transport = Routing {
        inner,
        me: my_id,
        to_keyhive,
        from_keyhive: rx,
    };
    Connection::connect(
        transport,
        me,
        Audience::Known(node.id),
        &ConnectConfig::default(),
    )
    .await
    .expect("handshake")
}

/// Commit `n` on `tree` by `author`, a random head and a small blob:
/// its head and the signed item.
pub fn commit(
    author: &SigningKey,
    tree: SedimentreeId,
    n: u32,
    parent: Option<CommitId>,
) -> (CommitId, SignedItem<LooseCommit>) {
    let mut head = [0; 32];
    head[..4].copy_from_slice(&n.to_be_bytes());
    head[4..12].copy_from_slice(&rand::random::<[u8; 8]>());
    let head = CommitId::new(head);
    let blob = Blob::new(format!("commit {n} of a keyhive document").into_bytes());
    let commit = LooseCommit::new(tree, head, parent, blob.meta());
    let signed = Signed::seal(author, &commit).expect("seal");
    (head, SignedItem::new(signed, blob))
}

/// Sends one commit (`counter` its sender heads' counter, `head` its head).
pub async fn send_commit(
    conn: &mut Client,
    tree: SedimentreeId,
    counter: u64,
    head: CommitId,
    item: SignedItem<LooseCommit>,
) {
    let msg = SyncMessage::LooseCommit(BlobMessage {
        id: tree,
        sender_heads: RemoteHeads::new(counter, [head]),
        item,
    });
    conn.send(Message::from(msg)).await.expect("push");
}

/// Pushes one commit; `Some(round trip)` if a HeadsUpdate naming it came
/// within `wait`, `None` on silence.
pub async fn push(
    conn: &mut Client,
    tree: SedimentreeId,
    counter: u64,
    head: CommitId,
    item: SignedItem<LooseCommit>,
    wait: Duration,
) -> Option<Duration> {
    let start = Instant::now();
    send_commit(conn, tree, counter, head, item).await;
    loop {
        let received = match timeout(wait, conn.next()).await {
            Err(_) => return None,
            Ok(received) => received.expect("open").expect("transport ok"),
        };
        if let Ok(bijou_proto::session::Delivered::Sync(VerifiedMessage {
            message: SyncMessage::HeadsUpdate(update),
            ..
        })) = received.result
        {
            if update.id == tree && update.heads.heads().contains(&head) {
                return Some(start.elapsed());
            }
        }
    }
}

/// Fetches `tree`: its commits, or the refusal.
pub async fn fetch(
    conn: &mut Client,
    tree: SedimentreeId,
) -> Result<Vec<SignedItem<LooseCommit>>, SyncResult> {
    let nonce = rand::random();
    let seed = FingerprintSeed::new(rand::random(), rand::random());
    let request = BatchSyncRequest::new(tree, conn.local_peer(), nonce, false, seed, [], []);
    conn.send(Message::from(SyncMessage::BatchSyncRequest(request)))
        .await
        .expect("send request");
    loop {
        let received = timeout(REPLY, conn.next())
            .await
            .expect("an answer in time")
            .expect("open")
            .expect("transport ok");
        let Ok(bijou_proto::session::Delivered::Sync(verified)) = received.result else {
            continue;
        };
        if let SyncMessage::BatchSyncResponse(response) = verified.message {
            if response.nonce != nonce {
                continue;
            }
            assert!(verified.rejected.is_empty());
            return match response.result {
                SyncResult::Ok(diff) => Ok(diff.commits().to_vec()),
                other => Err(other),
            };
        }
    }
}

/// Asserts the fetched items are byte for byte the ones pushed (signed
/// bytes and blob), in any order.
pub fn same_items(fetched: &[SignedItem<LooseCommit>], pushed: &[SignedItem<LooseCommit>]) {
    let key = |item: &SignedItem<LooseCommit>| (item.signed().to_bytes(), item.blob().to_bytes());
    let fetched: BTreeSet<_> = fetched.iter().map(key).collect();
    let pushed: BTreeSet<_> = pushed.iter().map(key).collect();
    assert_eq!(fetched, pushed);
}

/// What a probe of `tree` as `key` finds, run as a session operation.
pub async fn probe<T: Transport>(
    conn: &mut Connection<T>,
    key: &SigningKey,
    tree: SedimentreeId,
) -> TreeAccess {
    match conn.run(key, Operation::Probe(tree), REPLY).await {
        Ok(session::Outcome::Probed(access)) => access,
        other => panic!("a probe ends probed: {other:?}"),
    }
}

/// Registers `delegation` as `key`, a session operation.
pub async fn register<T: Transport>(
    conn: &mut Connection<T>,
    key: &SigningKey,
    delegation: RootDelegation,
    limit: Duration,
) -> Result<Outcome, RunError> {
    match conn
        .run(key, Operation::Register(delegation), limit)
        .await?
    {
        session::Outcome::Registered(outcome) => Ok(outcome),
        other => panic!("a registration ends registered: {other:?}"),
    }
}
