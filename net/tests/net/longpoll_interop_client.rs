//! Our long-poll client against Subduction's long-poll server, in process
//! over loopback: `subduction_http_longpoll` =0.13.0's `LongPollHandler`
//! behind a hyper accept loop (as `subduction_cli` wires it), registering
//! each authenticated session with a Subduction node (subduction_core
//! =0.20.0, sync and `subduction_ephemeral` =0.10.0 composed, as in
//! `interop_ephemeral.rs`; `longpoll_support/their_server.rs`). On our
//! side only `bijou_net`: the long-poll transport with a `Connection` on
//! top.
//!
//! - handshakes by the node's key and by service name, a rejection for a
//!   wrong audience;
//! - a sync exchange: commits and a fragment pushed, acknowledged, and
//!   fetched back byte for byte by another client;
//! - ephemeral messages relayed by their node between two of our clients;
//! - closing posts `/lp/disconnect` (their server forgets the session) and
//!   ends our stream; dropping a transport disconnects it too.
//!
//! The Subduction crates are the oracle, never the implementation.

use std::collections::BTreeSet;
use std::time::Duration;

use bijou_net::handshake::{ConnectConfig, ConnectError};
use bijou_net::transport::longpoll::{self, LongPollTransport};
use bijou_net::Connection;
use bijou_proto::handshake::HandshakeError;
use bijou_proto::message::{
    Audience, BatchSyncRequest, BlobMessage, CommitId, FingerprintSeed, Fragment, LooseCommit,
    Message, RejectionReason, RemoteHeads, SedimentreeId, SignedItem, SyncMessage, SyncResult,
    Topic, Topics,
};
use bijou_proto::session::{Delivered, VerifiedMessage};
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
use futures::StreamExt;
use tokio::time::timeout;

use crate::their_server::{start_their_server, Seen, TheirServer, SERVICE};

/// Bound on each test.
const LIMIT: Duration = Duration::from_secs(60);
/// Bound on waiting for one reply.
const REPLY: Duration = Duration::from_secs(5);
/// Their server's hold of an `/lp/recv` (30 s by default): short, so idle
/// polls come back as 204 during the tests.
const THEIR_POLL_HOLD: Duration = Duration::from_secs(1);
/// Their node handles a peer's messages concurrently and does not
/// acknowledge a Subscribe: subscribers wait this long before anything is
/// published.
const SETTLE: Duration = Duration::from_millis(200);

// ---- our side ----------------------------------------------------------------

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

async fn connect(
    server: &TheirServer,
    me: &SigningKey,
    audience: Audience,
) -> Result<Connection<LongPollTransport>, ConnectError> {
    let transport = longpoll::connect(&format!("{}/", server.url))
        .await
        .expect("TCP connection to their server");
    Connection::connect(transport, me, audience, &ConnectConfig::default()).await
}

/// The next received message, verified, as a sync message.
async fn next_verified(conn: &mut Connection<LongPollTransport>) -> VerifiedMessage {
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
    let blob = Blob::new(format!("commit {n} over long-poll").into_bytes());
    let commit = LooseCommit::new(tree, head, parent, blob.meta());
    let signed = Signed::seal(author, &commit).expect("seal");
    (head, SignedItem::new(signed, blob))
}

/// Fetches `tree` (knowing nothing) and returns the diff's items.
async fn fetch(
    conn: &mut Connection<LongPollTransport>,
    tree: SedimentreeId,
    nonce: u64,
) -> (Vec<SignedItem<LooseCommit>>, Vec<SignedItem<Fragment>>) {
    let seed = FingerprintSeed::new(rand::random(), rand::random());
    let request = BatchSyncRequest::new(tree, conn.local_peer(), nonce, false, seed, [], []);
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
    (diff.commits().to_vec(), diff.fragments().to_vec())
}

fn same_items<T>(fetched: &[SignedItem<T>], pushed: &[&SignedItem<T>]) -> bool {
    let key = |item: &SignedItem<T>| (item.signed().to_bytes(), item.blob().to_bytes());
    let fetched: BTreeSet<_> = fetched.iter().map(key).collect();
    let pushed: BTreeSet<_> = pushed.iter().map(|item| key(item)).collect();
    fetched == pushed
}

// ---- the tests -----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_handshakes_pushes_commits_and_a_fragment_and_fetches_them_back() {
    timeout(LIMIT, async {
        let server = start_their_server(THEIR_POLL_HOLD).await;

        // By the node's key, and by service name.
        let alice = key(1);
        let mut a = connect(&server, &alice, Audience::Known(server.id))
            .await
            .expect("Known handshake");
        assert_eq!(a.remote_peer(), server.id);
        let session = a.get_ref().session_id().expect("a session id");
        assert!(server.has_session(session).await);
        let b = connect(&server, &key(2), Audience::discover(SERVICE.as_bytes()))
            .await
            .expect("Discover handshake");
        assert_eq!(b.remote_peer(), server.id);
        let mut b = b;

        // 20 chained commits, each acknowledged by a HeadsUpdate naming it.
        let tree = SedimentreeId::new(rand::random());
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
            match next_verified(&mut a).await.message {
                SyncMessage::HeadsUpdate(update) => {
                    assert_eq!(update.id, tree);
                    assert_eq!(update.heads.heads(), &[head], "commit {n} is the head");
                }
                other => panic!("commit {n}: expected a HeadsUpdate, got {other:?}"),
            }
            pushed.push((head, item));
            parent = Some(head);
        }
        let blob = Blob::new(vec![0xF5; 100 * 1024]);
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
            "{:?}",
            ack.message
        );

        // The other client fetches all of it (their node may acknowledge a
        // push before every connection sees it: ask again until it does).
        let all: Vec<_> = pushed.iter().map(|(_, item)| item).collect();
        let mut nonce = 0;
        loop {
            nonce += 1;
            let (commits, fragments) = fetch(&mut b, tree, nonce).await;
            if same_items(&commits, &all) && same_items(&fragments, &[&fragment]) {
                break;
            }
            assert!(nonce < 50, "{} commits fetched", commits.len());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }

        // Every poll carried our acknowledgement header, from 0 (their
        // server numbers nothing, so it stays 0), and the session id.
        let polls: Vec<Seen> = server
            .seen()
            .into_iter()
            .filter(|s| s.path == "/lp/recv")
            .collect();
        assert!(polls.len() > 20, "{} polls", polls.len());
        assert!(polls.iter().all(|s| s.ack.as_deref() == Some("0")));
        assert!(polls
            .iter()
            .all(|s| s.session.as_ref().is_some_and(|id| id.len() == 32)));
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_audience_is_the_handshakes_rejection() {
    timeout(LIMIT, async {
        let server = start_their_server(THEIR_POLL_HOLD).await;
        for audience in [
            Audience::Known(key(77).peer_id()),
            Audience::discover(b"not.this.service"),
        ] {
            match connect(&server, &key(3), audience).await {
                Err(ConnectError::Handshake(HandshakeError::Rejected { reason, .. })) => {
                    assert_eq!(reason, RejectionReason::InvalidAudience);
                }
                Err(other) => panic!("expected the rejection, got {other}"),
                Ok(_) => panic!("expected the rejection, the handshake succeeded"),
            }
        }
        assert!(server.node.connected_peer_ids().await.is_empty());
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemeral_messages_cross_their_node_between_two_of_our_clients() {
    timeout(LIMIT, async {
        let server = start_their_server(THEIR_POLL_HOLD).await;
        let (me, other) = (key(4), key(5));
        let mut subscriber = connect(&server, &me, Audience::Known(server.id))
            .await
            .expect("handshake");
        let mut publisher = connect(&server, &other, Audience::Known(server.id))
            .await
            .expect("handshake");
        let topic = Topic::new(rand::random());
        subscriber
            .subscribe(Topics::one(topic))
            .await
            .expect("subscribe");
        tokio::time::sleep(SETTLE).await;
        for round in 0..10u8 {
            let payload = vec![round; 2000];
            let sent = publisher
                .publish(&other, topic, payload.clone())
                .await
                .expect("publish");
            let received = timeout(REPLY, subscriber.next())
                .await
                .expect("relayed in time")
                .expect("open")
                .expect("transport ok");
            assert_eq!(received.bytes, sent.to_bytes(), "our exact bytes");
            let Ok(Delivered::Ephemeral(verified)) = received.result else {
                panic!(
                    "expected a verified ephemeral message: {:?}",
                    received.result
                );
            };
            assert_eq!(verified.payload().payload().as_ref(), &payload[..]);
            assert_eq!(verified.peer_id(), other.peer_id());
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_disconnects_and_ends_the_stream_and_dropping_disconnects_too() {
    timeout(LIMIT, async {
        let server = start_their_server(THEIR_POLL_HOLD).await;
        let mut conn = connect(&server, &key(6), Audience::Known(server.id))
            .await
            .expect("handshake");
        let session = conn.get_ref().session_id().expect("session");
        // Let the poller start, then close: the disconnect removes the
        // session, the held poll gets 410, and our stream ends.
        assert!(timeout(Duration::from_millis(100), conn.next())
            .await
            .is_err());
        conn.close().await.expect("close");
        assert!(!server.has_session(session).await, "their server forgot it");
        let end = timeout(REPLY, conn.next())
            .await
            .expect("the stream ends in time");
        assert!(end.is_none(), "{end:?}");
        let disconnects = server
            .seen()
            .iter()
            .filter(|s| s.path == "/lp/disconnect")
            .count();
        assert_eq!(disconnects, 1);

        // Dropped without closing: the transport disconnects on its own.
        let conn = connect(&server, &key(7), Audience::Known(server.id))
            .await
            .expect("handshake");
        let session = conn.get_ref().session_id().expect("session");
        drop(conn);
        let mut gone = false;
        for _ in 0..100 {
            if !server.has_session(session).await {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone, "the dropped transport's session was disconnected");
    })
    .await
    .expect("bounded");
}
