//! Interoperability with real Subduction code, in process, over loopback
//! WebSocket: `subduction_websocket` =0.14.0's `TokioWebSocketServer` over
//! subduction_core =0.20.0's `MemoryStorage` as the server our client talks
//! to, and its `TokioWebSocketClient` as the client of our server. Both
//! directions, and every rejection reason on both sides.
//!
//! The Subduction crates are oracles here, never the implementation: our
//! side is only `bijou_net` (`websocket` transport, sans-IO handshake,
//! `Connection`).

use bijou_net::handshake::ConnectError;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use bijou_codec::Wire;
use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::{websocket, Transport};
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, HandshakeError, Initiator, Responder};
use bijou_proto::message::{
    Audience, BatchSyncRequest, BlobMessage, CommitId, FingerprintSeed, Fragment, HandshakeMessage,
    LooseCommit, Message, RejectionReason, RemoteHeads, SedimentreeId, SignedItem, SyncMessage,
    SyncResult,
};
use bijou_proto::session::VerifiedMessage;
use bijou_proto::time::Clock;
use bijou_proto::time::Now;
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, PeerId, Signed};
use bytes::Bytes;
use future_form::Sendable;
use futures::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::timeout;

use sedimentree_core::depth::CountLeadingZeroBytes;
use subduction_core::handshake as their_handshake;
use subduction_core::nonce_cache::NonceCache;
use subduction_core::policy::open::OpenPolicy;
use subduction_core::storage::memory::MemoryStorage;
use subduction_crypto::signer::memory::MemorySigner;
use subduction_websocket::tokio::{
    client::TokioWebSocketClient, server::TokioWebSocketServer, TimeoutTokio,
};

/// The service name both kinds of server offer for `Discover`.
const SERVICE: &str = "bijou.interop";
/// Their server's maximum clock drift (a required setting; 60 s as in their
/// own tests).
const THEIR_DRIFT: Duration = Duration::from_secs(60);
/// Bound on each test.
const LIMIT: Duration = Duration::from_secs(60);
/// Bound on waiting for one reply.
const REPLY: Duration = Duration::from_secs(5);

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

fn config() -> ConnectConfig {
    ConnectConfig::default()
}

fn now() -> u64 {
    bijou_proto::time::Clock::system().unix_secs()
}

fn random_tree() -> SedimentreeId {
    SedimentreeId::new(rand::random())
}

/// Their peer id for one of our keys.
fn their_peer_id(key: &SigningKey) -> subduction_core::peer::id::PeerId {
    subduction_core::peer::id::PeerId::from(key.verifying_key())
}

/// Starts their server on an ephemeral loopback port; returns it (keep it
/// alive), its address and its peer id in our terms.
async fn start_their_server() -> (impl Sized, SocketAddr, PeerId) {
    let signer = MemorySigner::from_bytes(&[0x5E; 32]);
    let server = TokioWebSocketServer::setup(
        "127.0.0.1:0".parse().expect("addr"),
        TimeoutTokio,
        THEIR_DRIFT,
        subduction_websocket::DEFAULT_MAX_MESSAGE_SIZE,
        signer,
        Some(SERVICE),
        MemoryStorage::new(),
        OpenPolicy,
        NonceCache::default(),
        CountLeadingZeroBytes,
    )
    .await
    .expect("their server starts");
    let addr = server.address();
    (server, addr, key(0x5E).peer_id())
}

async fn connect(
    addr: SocketAddr,
    me: &SigningKey,
    audience: Audience,
    config: &ConnectConfig,
) -> Result<Connection<impl Transport>, ConnectError> {
    let transport = websocket::connect(&format!("ws://{addr}/"))
        .await
        .expect("WebSocket upgrade");
    Connection::connect(transport, me, audience, config).await
}

/// The next received message, verified (every signed item included).
async fn next_verified<T: Transport>(conn: &mut Connection<T>) -> VerifiedMessage {
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
    assert!(
        verified.rejected.is_empty(),
        "items rejected: {:?}",
        verified.rejected
    );
    verified
}

/// A signed commit on `tree` with a small blob. Its id never starts with a
/// zero byte: under their depth metric (`CountLeadingZeroBytes`) such an
/// id is a fragment boundary, and a fragment headed by one makes their
/// server leave the commits it covers out of a fetch (about one run in 256
/// when the first byte was random).
fn commit(
    author: &SigningKey,
    tree: SedimentreeId,
    n: u8,
    parent: Option<CommitId>,
) -> (CommitId, SignedItem<LooseCommit>) {
    let mut head = [n; 32];
    head[..8].copy_from_slice(&rand::random::<[u8; 8]>());
    head[0] |= 1;
    let head = CommitId::new(head);
    let blob = Blob::new(format!("commit {n} on the interop tree").into_bytes());
    let commit = LooseCommit::new(tree, head, parent, blob.meta());
    let signed = Signed::seal(author, &commit).expect("seal");
    (head, SignedItem::new(signed, blob))
}

/// Sends a BatchSyncRequest for `tree` (knowing `known` commits) and
/// returns the verified response's diff items.
async fn fetch<T: Transport>(
    conn: &mut Connection<T>,
    tree: SedimentreeId,
    nonce: u64,
    seed: FingerprintSeed,
    known: &[CommitId],
) -> (
    Vec<SignedItem<LooseCommit>>,
    Vec<SignedItem<Fragment>>,
    VerifiedMessage,
) {
    let request = BatchSyncRequest::new(
        tree,
        conn.local_peer(),
        nonce,
        false,
        seed,
        known.iter().map(|id| seed.fingerprint(id)),
        [],
    );
    conn.send(Message::from(SyncMessage::BatchSyncRequest(request)))
        .await
        .expect("send request");
    let verified = next_verified(conn).await;
    let SyncMessage::BatchSyncResponse(response) = &verified.message else {
        panic!("expected a BatchSyncResponse, got {:?}", verified.message);
    };
    assert_eq!((response.id, response.nonce), (tree, nonce));
    let SyncResult::Ok(diff) = &response.result else {
        panic!("expected Ok, got {:?}", response.result);
    };
    assert_eq!(
        verified.items.len(),
        diff.commits().len() + diff.fragments().len(),
        "every item verified"
    );
    (diff.commits().to_vec(), diff.fragments().to_vec(), verified)
}

/// Asserts the fetched items are byte for byte the ones pushed (signed
/// bytes and blob), in any order.
fn assert_same_items<T>(fetched: &[SignedItem<T>], pushed: &[&SignedItem<T>]) {
    let key = |item: &SignedItem<T>| (item.signed().to_bytes(), item.blob().to_bytes());
    let fetched: BTreeSet<_> = fetched.iter().map(key).collect();
    let pushed: BTreeSet<_> = pushed.iter().map(|item| key(item)).collect();
    assert_eq!(fetched, pushed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_pushes_commits_and_a_fragment_to_their_server_and_fetches_them_back() {
    timeout(LIMIT, async {
        let (_server, addr, server_id) = start_their_server().await;

        // Handshake by service name, and by the server's key.
        let alice = key(1);
        let mut a = connect(
            addr,
            &alice,
            Audience::discover(SERVICE.as_bytes()),
            &config(),
        )
        .await
        .expect("Discover handshake");
        assert_eq!(a.remote_peer(), server_id);
        let known = connect(addr, &key(9), Audience::Known(server_id), &config())
            .await
            .expect("Known handshake");
        assert_eq!(known.remote_peer(), server_id);
        drop(known);

        // 20 chained commits, each acknowledged by a HeadsUpdate naming it.
        let tree = random_tree();
        let mut pushed = Vec::new();
        let mut parent = None;
        for n in 0..20u8 {
            let (head, item) = commit(&alice, tree, n, parent);
            let msg = SyncMessage::LooseCommit(BlobMessage {
                id: tree,
                sender_heads: RemoteHeads::new(u64::from(n), [head]),
                item: item.clone(),
            });
            a.send(Message::from(msg)).await.expect("push");
            let ack = next_verified(&mut a).await;
            match ack.message {
                SyncMessage::HeadsUpdate(update) => {
                    assert_eq!(update.id, tree);
                    assert_eq!(update.heads.heads(), &[head], "commit {n} is the new head");
                }
                other => panic!("commit {n}: expected a HeadsUpdate, got {other:?}"),
            }
            pushed.push((head, item));
            parent = Some(head);
        }

        // One fragment over the chain: from the last head back to the first.
        let blob = Blob::new(b"a fragment of the interop tree".to_vec());
        let fragment = Fragment::new(tree, pushed[19].0, [pushed[0].0], [], blob.meta());
        let fragment = SignedItem::new(Signed::seal(&alice, &fragment).expect("seal"), blob);
        let msg = SyncMessage::Fragment(BlobMessage {
            id: tree,
            sender_heads: RemoteHeads::new(20, [pushed[19].0]),
            item: fragment.clone(),
        });
        a.send(Message::from(msg)).await.expect("push fragment");
        let ack = next_verified(&mut a).await;
        assert!(
            matches!(&ack.message, SyncMessage::HeadsUpdate(u) if u.id == tree),
            "the fragment is acknowledged: {:?}",
            ack.message
        );

        // A second client of ours fetches everything...
        let mut b = connect(addr, &key(2), Audience::Known(server_id), &config())
            .await
            .expect("second client");
        let seed = FingerprintSeed::new(rand::random(), rand::random());
        // Their server stores a push before acknowledging it, so one fetch
        // after the last acknowledgement sees everything.
        let (commits, fragments, _) = fetch(&mut b, tree, 1, seed, &[]).await;
        let all: Vec<_> = pushed.iter().map(|(_, item)| item).collect();
        assert_same_items(&commits, &all);
        assert_same_items(&fragments, &[&fragment]);

        // ...then, knowing half the commits, gets the other half.
        let known: Vec<CommitId> = pushed[..10].iter().map(|(head, _)| *head).collect();
        let (commits, fragments, _) = fetch(&mut b, tree, 2, seed, &known).await;
        let other_half: Vec<_> = pushed[10..].iter().map(|(_, item)| item).collect();
        assert_same_items(&commits, &other_half);
        assert_same_items(&fragments, &[&fragment]);
    })
    .await
    .expect("bounded");
}

/// Two unrelated commits make two heads, which their server writes in
/// hash-set order: the acknowledgement decodes whatever the order, and
/// names both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn their_heads_update_with_several_heads_in_their_order_is_accepted() {
    timeout(LIMIT, async {
        let (_server, addr, server_id) = start_their_server().await;
        let alice = key(3);
        let mut a = connect(addr, &alice, Audience::Known(server_id), &config())
            .await
            .expect("handshake");
        let mut unsorted_seen = 0;
        for _ in 0..6 {
            let tree = random_tree();
            let mut heads = Vec::new();
            for n in 0..3u8 {
                let (head, item) = commit(&alice, tree, n, None);
                let msg = SyncMessage::LooseCommit(BlobMessage {
                    id: tree,
                    sender_heads: RemoteHeads::new(u64::from(n), [head]),
                    item,
                });
                a.send(Message::from(msg)).await.expect("push");
                heads.push(head);
                let ack = next_verified(&mut a).await;
                let SyncMessage::HeadsUpdate(update) = ack.message else {
                    panic!("expected a HeadsUpdate");
                };
                let mut got = update.heads.heads().to_vec();
                if !got.is_sorted() {
                    unsorted_seen += 1;
                }
                got.sort();
                let mut want = heads.clone();
                want.sort();
                assert_eq!(got, want, "every unrelated commit is a head");
            }
        }
        eprintln!("{unsorted_seen} of 18 acknowledgements came with unsorted heads");
    })
    .await
    .expect("bounded");
}

/// Our server: accepts WebSocket connections, answers the handshake, and
/// reports each outcome (and, for accepted peers, the first message).
async fn start_our_server(
    responder: Responder,
    config: ConnectConfig,
) -> (
    SocketAddr,
    PeerId,
    mpsc::UnboundedReceiver<Result<(PeerId, Option<bijou_proto::session::Received>), ConnectError>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server_key = key(0x0E);
    let id = server_key.peer_id();
    let (events, outcomes) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (server_key, responder, events, config) = (
                server_key.clone(),
                responder.clone(),
                events.clone(),
                config.clone(),
            );
            tokio::spawn(async move {
                let Ok(transport) = websocket::accept(stream).await else {
                    return;
                };
                match Connection::accept(transport, &server_key, &responder, &config).await {
                    Err(e) => {
                        let _ = events.send(Err(e));
                    }
                    Ok(mut conn) => {
                        let peer = conn.remote_peer();
                        let first = timeout(REPLY, conn.next()).await.ok().flatten();
                        let _ = events.send(Ok((peer, first.and_then(Result::ok))));
                    }
                }
            });
        }
    });
    (addr, id, outcomes)
}

fn their_uri(addr: SocketAddr) -> async_tungstenite::tungstenite::http::Uri {
    format!("ws://{addr}/").parse().expect("uri")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn their_client_handshakes_with_our_server_and_its_commit_arrives_verified() {
    timeout(LIMIT, async {
        let responder =
            Responder::new(HandshakeConfig::default()).with_service_name(SERVICE.as_bytes());
        let (addr, server_id, mut outcomes) = start_our_server(responder, config()).await;
        let signer = MemorySigner::from_bytes(&[0x33; 32]);
        let their_me = their_peer_id(&key(0x33));

        for audience in [
            subduction_core::handshake::audience::Audience::known(their_peer_id(&key(0x0E))),
            subduction_core::handshake::audience::Audience::discover(SERVICE.as_bytes()),
        ] {
            let (client, listen, send, _keepalive) =
                TokioWebSocketClient::new(their_uri(addr), signer.clone(), audience)
                    .await
                    .expect("their handshake succeeds against our responder");
            assert_eq!(client.peer_id().as_bytes(), server_id.as_bytes());
            tokio::spawn(std::future::IntoFuture::into_future(listen));
            tokio::spawn(std::future::IntoFuture::into_future(send));

            // They push a commit, built and encoded by their code.
            let tree = sedimentree_core::id::SedimentreeId::new(rand::random());
            let head = sedimentree_core::loose_commit::id::CommitId::new(rand::random());
            let blob = sedimentree_core::blob::Blob::new(b"their blob".to_vec());
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
            subduction_core::connection::Connection::<Sendable, _>::send(client.inner(), &msg)
                .await
                .expect("their send");

            let (peer, first) = timeout(REPLY, outcomes.recv())
                .await
                .expect("in time")
                .expect("an outcome")
                .expect("our responder accepted them");
            assert_eq!(peer.as_bytes(), their_me.as_bytes());
            let received = first.expect("their commit arrived");
            assert_eq!(
                received.bytes.as_ref(),
                msg.encode().as_slice(),
                "their exact bytes"
            );
            let verified = received
                .result
                .expect("verified")
                .into_sync()
                .expect("a sync message");
            assert_eq!(verified.items.len(), 1);
            match verified.message {
                SyncMessage::LooseCommit(m) => {
                    assert_eq!(m.id.as_bytes(), tree.as_bytes());
                    assert_eq!(m.item.blob().as_bytes(), b"their blob");
                }
                other => panic!("expected their LooseCommit, got {other:?}"),
            }
        }
    })
    .await
    .expect("bounded");
}

/// Sends one handshake message on a fresh WebSocket to `addr` and returns
/// the reply.
async fn raw_exchange(addr: SocketAddr, message: Bytes) -> Bytes {
    let mut transport = websocket::connect(&format!("ws://{addr}/"))
        .await
        .expect("upgrade");
    transport.send(message).await.expect("send");
    timeout(REPLY, transport.next())
        .await
        .expect("reply in time")
        .expect("a reply")
        .expect("transport ok")
}

fn flip_last_byte(message: &Bytes) -> Bytes {
    let mut bytes = message.to_vec();
    if let Some(last) = bytes.last_mut() {
        *last ^= 0x01;
    }
    Bytes::from(bytes)
}

fn rejection_reason(reply: Bytes) -> RejectionReason {
    match Message::decode(reply).expect("decodes") {
        Message::Handshake(HandshakeMessage::Rejection(r)) => r.reason,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn their_server_refuses_our_bad_challenges_for_every_reason() {
    timeout(LIMIT, async {
        let (_server, addr, server_id) = start_their_server().await;
        let me = key(4);
        let refused = |result: Result<_, ConnectError>| match result {
            Err(ConnectError::Handshake(HandshakeError::Rejected { reason, .. })) => reason,
            Err(other) => panic!("expected a rejection, got {other}"),
            Ok(_) => panic!("expected a rejection, the handshake succeeded"),
        };

        // Wrong audience: someone else's key, or another service.
        let r = connect(addr, &me, Audience::Known(key(77).peer_id()), &config()).await;
        assert_eq!(refused(r.map(|_| ())), RejectionReason::InvalidAudience);
        let r = connect(
            addr,
            &me,
            Audience::discover(b"not.this.service"),
            &config(),
        )
        .await;
        assert_eq!(refused(r.map(|_| ())), RejectionReason::InvalidAudience);

        // Clock drift: our clock an hour behind theirs.
        let mut behind = config();
        behind.clock = Clock::fixed(now() - 3600);
        let r = connect(addr, &me, Audience::Known(server_id), &behind).await;
        assert_eq!(refused(r.map(|_| ())), RejectionReason::ClockDrift);

        // Replayed challenge: the same signed bytes twice (the sans-IO
        // initiator with a fixed nonce; Ed25519 is deterministic).
        let t = now();
        let first = Initiator::new(&me, Audience::Known(server_id), Now::from_secs(t), [5; 16])
            .expect("sign");
        let reply = raw_exchange(addr, first.challenge().clone()).await;
        first.receive(reply).expect("the first one is accepted");
        let again = Initiator::new(&me, Audience::Known(server_id), Now::from_secs(t), [5; 16])
            .expect("sign");
        let reply = raw_exchange(addr, again.challenge().clone()).await;
        match again.receive(reply) {
            Err(HandshakeError::Rejected { reason, .. }) => {
                assert_eq!(reason, RejectionReason::ReplayedNonce);
            }
            other => panic!("expected ReplayedNonce, got {other:?}"),
        }

        // Bad signature: the challenge with one signature bit flipped.
        let challenge = Initiator::new(
            &me,
            Audience::Known(server_id),
            Now::from_secs(now()),
            rand::random(),
        )
        .expect("sign");
        let reply = raw_exchange(addr, flip_last_byte(challenge.challenge())).await;
        assert_eq!(rejection_reason(reply), RejectionReason::InvalidSignature);
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_server_refuses_their_bad_challenges_for_every_reason() {
    timeout(LIMIT, async {
        let their_signer = MemorySigner::from_bytes(&[0x44; 32]);
        let our_id = their_peer_id(&key(0x0E));
        let their_known = subduction_core::handshake::audience::Audience::known(our_id);
        let our_refusal = |outcome: Option<Result<_, ConnectError>>| match outcome {
            Some(Err(ConnectError::Handshake(HandshakeError::Refused(why)))) => why.reason(),
            other => panic!("expected our responder to refuse, got {other:?}"),
        };
        let their_reason = |err: subduction_websocket::tokio::client::ClientConnectError| match err
        {
            subduction_websocket::tokio::client::ClientConnectError::Handshake(
                their_handshake::AuthenticateError::Rejected { reason, .. },
            ) => reason as u8,
            other => panic!("expected their client to see a rejection, got {other}"),
        };

        // Wrong audience: their client addresses someone else.
        let responder =
            Responder::new(HandshakeConfig::default()).with_service_name(SERVICE.as_bytes());
        let (addr, _, mut outcomes) = start_our_server(responder, config()).await;
        let other = subduction_core::handshake::audience::Audience::known(their_peer_id(&key(78)));
        let Err(err) =
            TokioWebSocketClient::new(their_uri(addr), their_signer.clone(), other).await
        else {
            panic!("their client must be refused");
        };
        assert_eq!(their_reason(err), RejectionReason::InvalidAudience as u8);
        assert_eq!(
            our_refusal(timeout(REPLY, outcomes.recv()).await.expect("in time")),
            RejectionReason::InvalidAudience
        );

        // Clock drift: our responder's clock an hour ahead of theirs.
        let mut ahead = config();
        ahead.clock = Clock::fixed(now() + 3600);
        let responder = Responder::new(HandshakeConfig::default());
        let (addr, _, mut outcomes) = start_our_server(responder, ahead).await;
        let Err(err) =
            TokioWebSocketClient::new(their_uri(addr), their_signer.clone(), their_known).await
        else {
            panic!("their client must be refused");
        };
        assert_eq!(their_reason(err), RejectionReason::ClockDrift as u8);
        assert_eq!(
            our_refusal(timeout(REPLY, outcomes.recv()).await.expect("in time")),
            RejectionReason::ClockDrift
        );

        // Replay and bad signature: challenges built by their code, sent
        // as raw WebSocket messages.
        let responder = Responder::new(HandshakeConfig::default());
        let (addr, _, mut outcomes) = start_our_server(responder, config()).await;
        let signed = their_handshake::create_challenge::<Sendable, _>(
            &their_signer,
            their_known,
            subduction_core::timestamp::TimestampSeconds::new(now()),
            subduction_crypto::nonce::Nonce::from_u128(rand::random()),
        )
        .await;
        let challenge =
            Bytes::from(their_handshake::HandshakeMessage::SignedChallenge(signed).encode());
        let reply = raw_exchange(addr, challenge.clone()).await;
        assert!(matches!(
            their_handshake::HandshakeMessage::try_decode(&reply),
            Ok(their_handshake::HandshakeMessage::SignedResponse(_))
        ));
        assert!(matches!(
            timeout(REPLY, outcomes.recv()).await.expect("in time"),
            Some(Ok(_))
        ));
        for (message, reason) in [
            (challenge.clone(), RejectionReason::ReplayedNonce),
            (
                flip_last_byte(&challenge),
                RejectionReason::InvalidSignature,
            ),
        ] {
            let reply = raw_exchange(addr, message).await;
            match their_handshake::HandshakeMessage::try_decode(&reply) {
                Ok(their_handshake::HandshakeMessage::Rejection(r)) => {
                    assert_eq!(
                        r.reason as u8, reason as u8,
                        "their decoding of our rejection"
                    );
                }
                other => panic!("expected a rejection their code decodes, got {other:?}"),
            }
            assert_eq!(
                our_refusal(timeout(REPLY, outcomes.recv()).await.expect("in time")),
                reason
            );
        }
    })
    .await
    .expect("bounded");
}
