//! Interoperability over iroh (QUIC) with real Subduction code, in process,
//! on loopback with direct-only endpoints: `subduction_iroh` =0.12.0's
//! server (`accept_one`) in front of a Subduction node (subduction_core
//! =0.20.0, `MemoryStorage`, open policy) as the server our client pushes
//! to and fetches from; and `subduction_iroh`'s client against our
//! accepting side. Both directions, with the close each side sees.
//!
//! The Subduction crates are oracles here, never the implementation: our
//! side is only `bijou_net` (`iroh` transport, sans-IO handshake,
//! `Connection`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::iroh::{self as quic, IrohTransport, NodeAddr};
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{
    Audience, BatchSyncRequest, BlobMessage, CommitId, FingerprintSeed, LooseCommit, Message,
    RemoteHeads, SedimentreeId, SignedItem, SyncMessage, SyncResult,
};
use bijou_proto::session::VerifiedMessage;
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, PeerId, Signed};
use future_form::Sendable;
use futures::StreamExt;
use iroh::Endpoint;
use tokio::time::timeout;

use subduction_core::handshake::audience::DiscoveryId;
use subduction_core::nonce_cache::NonceCache;
use subduction_core::policy::open::OpenPolicy;
use subduction_core::storage::memory::MemoryStorage;
use subduction_core::subduction::builder::SubductionBuilder;
use subduction_core::transport::message::MessageTransport;
use subduction_core::transport::Transport as _;
use subduction_crypto::signer::memory::MemorySigner;
use subduction_websocket::tokio::{TimeoutTokio, TokioSpawn};

/// The service name their server offers for `Discover`.
const SERVICE: &str = "bijou.iroh.interop";
/// Their server's maximum clock drift (60 s as in their own tests).
const THEIR_DRIFT: Duration = Duration::from_secs(60);
use crate::iroh_support::{endpoint, key, LIMIT, REPLY};

/// Starts their server: a Subduction node behind `subduction_iroh`'s
/// accept loop on a direct loopback endpoint. Returns the endpoint (keep
/// it) and the server's Subduction peer id in our terms.
async fn start_their_server() -> (Endpoint, PeerId) {
    let signer = MemorySigner::from_bytes(&[0x5E; 32]);
    let their_id = subduction_core::peer::id::PeerId::from(signer.verifying_key());
    let discovery = DiscoveryId::new(SERVICE.as_bytes());
    let builder: SubductionBuilder = SubductionBuilder::new();
    let (subduction, _handler, listener, manager) = builder
        .signer(signer.clone())
        .storage(MemoryStorage::default(), Arc::new(OpenPolicy))
        .spawner(TokioSpawn)
        .timer(TimeoutTokio)
        .discovery_id(discovery)
        .build::<Sendable, MessageTransport<subduction_iroh::transport::IrohTransport>>();
    tokio::spawn(listener);
    tokio::spawn(manager);

    let ep = endpoint().await;
    let accepting = ep.clone();
    tokio::spawn(async move {
        let nonce_cache = NonceCache::default();
        loop {
            let accepted = subduction_iroh::server::accept_one(
                &accepting,
                &signer,
                &nonce_cache,
                their_id,
                Some(subduction_core::handshake::audience::Audience::discover_id(
                    discovery,
                )),
                THEIR_DRIFT,
            )
            .await;
            match accepted {
                Ok(accepted) => {
                    tokio::spawn(accepted.listener_task);
                    tokio::spawn(accepted.sender_task);
                    let auth = accepted.authenticated.map(MessageTransport::new);
                    subduction
                        .add_connection(auth)
                        .await
                        .expect("their node adds our connection");
                }
                Err(subduction_iroh::error::AcceptError::NoIncoming) => break,
                Err(e) => eprintln!("their accept failed: {e}"),
            }
        }
    });
    (ep, key(0x5E).peer_id())
}

async fn connect(
    ep: &Endpoint,
    server: &NodeAddr,
    me: &SigningKey,
    audience: Audience,
) -> Connection<IrohTransport> {
    let transport = quic::connect(ep, server).await.expect("QUIC connect");
    Connection::connect(transport, me, audience, &ConnectConfig::default())
        .await
        .expect("handshake with their server")
}

async fn next_verified(conn: &mut Connection<IrohTransport>) -> VerifiedMessage {
    let received = timeout(REPLY, conn.next())
        .await
        .expect("a reply in time")
        .expect("connection open")
        .expect("transport ok");
    let verified = received
        .result
        .expect("the reply verifies")
        .into_sync()
        .expect("a sync message");
    assert!(verified.rejected.is_empty(), "{:?}", verified.rejected);
    verified
}

fn commit(
    author: &SigningKey,
    tree: SedimentreeId,
    n: u8,
    parent: Option<CommitId>,
) -> (CommitId, SignedItem<LooseCommit>) {
    let mut head = [n; 32];
    head[..8].copy_from_slice(&rand::random::<[u8; 8]>());
    let head = CommitId::new(head);
    let blob = Blob::new(format!("commit {n} over iroh").into_bytes());
    let commit = LooseCommit::new(tree, head, parent, blob.meta());
    (
        head,
        SignedItem::new(Signed::seal(author, &commit).expect("seal"), blob),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_pushes_to_their_iroh_server_and_fetches_back() {
    timeout(LIMIT, async {
        let (server_ep, server_id) = start_their_server().await;
        let server = NodeAddr::of(&server_ep);
        // The address as a user would type it.
        let server: NodeAddr = server.to_string().parse().expect("round trip");
        let client_ep = endpoint().await;

        // By service name, and by key.
        let alice = key(1);
        let mut a = connect(
            &client_ep,
            &server,
            &alice,
            Audience::discover(SERVICE.as_bytes()),
        )
        .await;
        assert_eq!(a.remote_peer(), server_id);
        assert_eq!(a.get_ref().remote_node_id().public_key(), server_ep.id());
        assert_ne!(
            a.get_ref().remote_node_id().as_bytes(),
            server_id.as_bytes(),
            "node id and peer id are different keys"
        );

        // Ten chained commits, each acknowledged by a HeadsUpdate.
        let tree = SedimentreeId::new(rand::random());
        let mut pushed = Vec::new();
        let mut parent = None;
        for n in 0..10u8 {
            let (head, item) = commit(&alice, tree, n, parent);
            a.send(Message::from(SyncMessage::LooseCommit(BlobMessage {
                id: tree,
                sender_heads: RemoteHeads::new(u64::from(n), [head]),
                item: item.clone(),
            })))
            .await
            .expect("push");
            match next_verified(&mut a).await.message {
                SyncMessage::HeadsUpdate(update) => {
                    assert_eq!(update.id, tree);
                    assert_eq!(update.heads.heads(), &[head]);
                }
                other => panic!("commit {n}: expected a HeadsUpdate, got {other:?}"),
            }
            pushed.push(item);
            parent = Some(head);
        }

        // A second client fetches them all, byte for byte.
        let mut b = connect(&client_ep, &server, &key(2), Audience::Known(server_id)).await;
        let seed = FingerprintSeed::new(rand::random(), rand::random());
        let request = BatchSyncRequest::new(tree, b.local_peer(), 1, false, seed, [], []);
        b.send(Message::from(SyncMessage::BatchSyncRequest(request)))
            .await
            .expect("request");
        let verified = next_verified(&mut b).await;
        let SyncMessage::BatchSyncResponse(response) = verified.message else {
            panic!("expected a BatchSyncResponse");
        };
        let SyncResult::Ok(diff) = response.result else {
            panic!("expected Ok");
        };
        assert_eq!(verified.items.len(), 10, "every item verified");
        let bytes = |i: &SignedItem<LooseCommit>| (i.signed().to_bytes(), i.blob().to_bytes());
        let fetched: BTreeSet<_> = diff.commits().iter().map(bytes).collect();
        let sent: BTreeSet<_> = pushed.iter().map(bytes).collect();
        assert_eq!(fetched, sent);

        // Our close: their listener reads our FIN and closes with code 0,
        // which our stream reads as its end.
        b.close().await.expect("close");
        assert!(timeout(REPLY, b.next()).await.expect("in time").is_none());
        a.close().await.expect("close");
        assert!(timeout(REPLY, a.next()).await.expect("in time").is_none());
        client_ep.close().await;
    })
    .await
    .expect("bounded");
}

/// Connects their client to our server at `server` (handshake included),
/// with its tasks spawned; returns their transport and our connection.
async fn their_client(
    their_ep: &Endpoint,
    server: &NodeAddr,
    signer: &MemorySigner,
    audience: subduction_core::handshake::audience::Audience,
    accepted: &mut Accepted,
) -> (
    subduction_iroh::transport::IrohTransport,
    Connection<IrohTransport>,
) {
    let connected = subduction_iroh::client::connect(
        their_ep,
        iroh::EndpointAddr::from(server),
        signer,
        audience,
    )
    .await
    .expect("their client's handshake with our responder");
    assert_eq!(
        connected.authenticated.peer_id().as_bytes(),
        key(0x0E).peer_id().as_bytes()
    );
    tokio::spawn(connected.listener_task);
    tokio::spawn(connected.sender_task);
    let ours = timeout(REPLY, accepted.recv())
        .await
        .expect("in time")
        .expect("an outcome")
        .expect("our responder accepted them");
    (connected.authenticated.inner().clone(), ours)
}

type Accepted = tokio::sync::mpsc::UnboundedReceiver<
    Result<Connection<IrohTransport>, bijou_net::handshake::ConnectError>,
>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn their_iroh_client_talks_to_our_server_both_ways() {
    timeout(LIMIT, async {
        let server_ep = endpoint().await;
        let server_addr = NodeAddr::of(&server_ep);
        let server_key = key(0x0E);
        let accepting = server_ep.clone();
        let (events, mut outcomes) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let responder =
                Responder::new(HandshakeConfig::default()).with_service_name(SERVICE.as_bytes());
            loop {
                let transport = match quic::accept(&accepting).await {
                    Ok(t) => t,
                    Err(_) => break,
                };
                let conn = Connection::accept(
                    transport,
                    &server_key,
                    &responder,
                    &ConnectConfig::default(),
                )
                .await;
                let _ = events.send(conn);
            }
        });

        let signer = MemorySigner::from_bytes(&[0x33; 32]);
        let their_ep = endpoint().await;
        for audience in [
            subduction_core::handshake::audience::Audience::known(
                subduction_core::peer::id::PeerId::from(key(0x0E).verifying_key()),
            ),
            subduction_core::handshake::audience::Audience::discover(SERVICE.as_bytes()),
        ] {
            let (theirs, mut ours) =
                their_client(&their_ep, &server_addr, &signer, audience, &mut outcomes).await;
            assert_eq!(
                ours.remote_peer().as_bytes(),
                subduction_core::peer::id::PeerId::from(signer.verifying_key()).as_bytes()
            );

            // They push a commit built and encoded by their code.
            let tree = sedimentree_core::id::SedimentreeId::new(rand::random());
            let head = sedimentree_core::loose_commit::id::CommitId::new(rand::random());
            let blob = sedimentree_core::blob::Blob::new(b"their blob over iroh".to_vec());
            let meta = subduction_crypto::verified_meta::VerifiedMeta::<
                sedimentree_core::loose_commit::LooseCommit,
            >::seal::<Sendable, _>(
                &signer,
                (tree, head, BTreeSet::new()),
                sedimentree_core::blob::verified::VerifiedBlobMeta::new(blob.clone()),
            )
            .await;
            let msg = subduction_core::connection::message::SyncMessage::LooseCommit {
                id: tree,
                commit: meta.signed().clone(),
                blob,
                sender_heads: subduction_core::remote_heads::RemoteHeads {
                    counter: 1,
                    heads: vec![head],
                },
            };
            theirs.send_bytes(&msg.encode()).await.expect("their send");
            let received = timeout(REPLY, ours.next())
                .await
                .expect("in time")
                .expect("open")
                .expect("transport ok");
            assert_eq!(received.bytes.as_ref(), msg.encode().as_slice());
            let verified = received
                .result
                .expect("verified")
                .into_sync()
                .expect("a sync message");
            assert_eq!(verified.items.len(), 1);

            // We answer with a HeadsUpdate their code decodes.
            let ours_tree = SedimentreeId::new(*tree.as_bytes());
            let ours_head = CommitId::new(*head.as_bytes());
            ours.send(Message::from(SyncMessage::HeadsUpdate(
                bijou_proto::message::HeadsUpdate {
                    id: ours_tree,
                    heads: RemoteHeads::new(1, [ours_head]),
                },
            )))
            .await
            .expect("our send");
            let bytes = timeout(REPLY, theirs.recv_bytes())
                .await
                .expect("in time")
                .expect("their recv");
            match subduction_core::connection::message::SyncMessage::try_decode(&bytes) {
                Ok(subduction_core::connection::message::SyncMessage::HeadsUpdate {
                    id,
                    heads,
                }) => {
                    assert_eq!(id, tree);
                    assert_eq!(heads.heads, vec![head]);
                }
                other => panic!("their decoding of our HeadsUpdate: {other:?}"),
            }

            // Their close (code 0) ends our stream cleanly.
            theirs.close();
            assert!(timeout(REPLY, ours.next())
                .await
                .expect("in time")
                .is_none());
        }

        // Our close: their listener reads our FIN and closes with code 0.
        let audience = subduction_core::handshake::audience::Audience::discover(SERVICE.as_bytes());
        let (theirs, mut ours) =
            their_client(&their_ep, &server_addr, &signer, audience, &mut outcomes).await;
        ours.close().await.expect("our close");
        assert!(
            timeout(REPLY, theirs.recv_bytes())
                .await
                .expect("in time")
                .is_err(),
            "their side sees the end"
        );
        match timeout(REPLY, theirs.quic_connection().closed())
            .await
            .expect("in time")
        {
            iroh::endpoint::ConnectionError::LocallyClosed => {}
            iroh::endpoint::ConnectionError::ApplicationClosed(c) => {
                assert_eq!(c.error_code.into_inner(), 0);
            }
            other => panic!("expected a close with code 0, got {other:?}"),
        }
        assert!(timeout(REPLY, ours.next())
            .await
            .expect("in time")
            .is_none());
    })
    .await
    .expect("bounded");
}
