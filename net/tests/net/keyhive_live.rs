//! A live check against a real `subduction_cli server` (default
//! `--auth keyhive`), run by hand; ignored otherwise (no test needs the
//! server installed):
//!
//! ```sh
//! subduction_cli server --socket 127.0.0.1:PORT --ephemeral-key --data-dir DIR --service-name NAME
//! BIJOU_KEYHIVE_SERVER=ws://127.0.0.1:PORT BIJOU_KEYHIVE_SERVICE=NAME \
//!   cargo test -p bijou-net --features websocket --test net keyhive_live:: -- --ignored --nocapture
//! ```
//!
//! It pushes one commit before registering (expecting silence and a probe
//! that says Unauthorized), registers a public-Edit document, pushes 20
//! commits (each acknowledged), and fetches them back byte for byte on a
//! second connection with another key.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::{websocket, Transport};
use bijou_net::Connection;
use bijou_proto::keyhive::{Access, DocumentKey, Grantee};
use bijou_proto::message::{
    Audience, BatchSyncRequest, BlobMessage, CommitId, FingerprintSeed, LooseCommit, Message,
    RemoteHeads, SedimentreeId, SignedItem, SyncMessage, SyncResult,
};
use bijou_proto::session::{Delivered, VerifiedMessage};
use bijou_proto::session::{Operation, Outcome, TreeAccess};
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
use futures::StreamExt;
use tokio::time::timeout;

const REPLY: Duration = Duration::from_secs(10);

async fn connect(url: &str, service: &str, me: &SigningKey) -> Connection<impl Transport> {
    let transport = websocket::connect(url).await.expect("WebSocket upgrade");
    Connection::connect(
        transport,
        me,
        Audience::discover(service.as_bytes()),
        &ConnectConfig::default(),
    )
    .await
    .expect("handshake")
}

fn commit(
    author: &SigningKey,
    tree: SedimentreeId,
    n: u32,
    parent: Option<CommitId>,
) -> (CommitId, SignedItem<LooseCommit>) {
    let mut head = [0; 32];
    head[..4].copy_from_slice(&n.to_be_bytes());
    head[4..12].copy_from_slice(&rand::random::<[u8; 8]>());
    let head = CommitId::new(head);
    let blob = Blob::new(format!("live commit {n}").into_bytes());
    let commit = LooseCommit::new(tree, head, parent, blob.meta());
    (
        head,
        SignedItem::new(Signed::seal(author, &commit).expect("seal"), blob),
    )
}

async fn push<T: Transport>(
    conn: &mut Connection<T>,
    tree: SedimentreeId,
    n: u32,
    head: CommitId,
    item: SignedItem<LooseCommit>,
    wait: Duration,
) -> bool {
    let msg = SyncMessage::LooseCommit(BlobMessage {
        id: tree,
        sender_heads: RemoteHeads::new(u64::from(n), [head]),
        item,
    });
    conn.send(Message::from(msg)).await.expect("push");
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(received) = timeout(left, conn.next()).await else {
            return false;
        };
        let received = received.expect("open").expect("transport ok");
        if let Ok(Delivered::Sync(VerifiedMessage {
            message: SyncMessage::HeadsUpdate(update),
            ..
        })) = received.result
        {
            if update.id == tree && update.heads.heads().contains(&head) {
                return true;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a running subduction_cli server: set BIJOU_KEYHIVE_SERVER and BIJOU_KEYHIVE_SERVICE"]
async fn live_subduction_cli_with_keyhive() {
    let url = std::env::var("BIJOU_KEYHIVE_SERVER").expect("BIJOU_KEYHIVE_SERVER=ws://HOST:PORT");
    let service = std::env::var("BIJOU_KEYHIVE_SERVICE").expect("BIJOU_KEYHIVE_SERVICE=NAME");
    let alice = SigningKey::from_bytes(&rand::random());
    let mut a = connect(&url, &service, &alice).await;
    let doc = DocumentKey::from_seed(rand::random());
    let tree = doc.tree_id();
    println!("server {} tree {tree}", a.remote_peer());

    let (head, item) = commit(&alice, tree, 0, None);
    let acked = push(&mut a, tree, 0, head, item, Duration::from_secs(2)).await;
    let Outcome::Probed(access) = a
        .run(&alice, Operation::Probe(tree), REPLY)
        .await
        .expect("probe")
    else {
        panic!("a probe ends probed")
    };
    println!(
        "before registering: push acknowledged = {acked}; probe: {access:?}: {}",
        access.explain(tree, alice.peer_id())
    );
    assert!(!acked);
    assert_eq!(access, TreeAccess::Unauthorized);

    let start = Instant::now();
    let delegation = doc.root_delegation(Grantee::Public, Access::Edit).unwrap();
    let registered = a
        .run(&alice, Operation::Register(delegation), REPLY)
        .await
        .expect("registered");
    println!("registered: {registered:?} in {:?}", start.elapsed());

    let mut pushed = Vec::new();
    let mut parent = None;
    for n in 0..20u32 {
        let (head, item) = commit(&alice, tree, n, parent);
        assert!(
            push(&mut a, tree, n, head, item.clone(), REPLY).await,
            "commit {n} acknowledged"
        );
        pushed.push(item);
        parent = Some(head);
    }
    println!("pushed 20 commits, each acknowledged");

    let bob = SigningKey::from_bytes(&rand::random());
    let mut b = connect(&url, &service, &bob).await;
    let nonce = rand::random();
    let seed = FingerprintSeed::new(rand::random(), rand::random());
    let request = BatchSyncRequest::new(tree, bob.peer_id(), nonce, false, seed, [], []);
    b.send(Message::from(SyncMessage::BatchSyncRequest(request)))
        .await
        .expect("fetch");
    let fetched = loop {
        let received = timeout(REPLY, b.next())
            .await
            .expect("answer")
            .expect("open")
            .expect("transport");
        if let Ok(Delivered::Sync(VerifiedMessage {
            message: SyncMessage::BatchSyncResponse(response),
            ..
        })) = received.result
        {
            if response.nonce == nonce {
                let SyncResult::Ok(diff) = response.result else {
                    panic!("fetch refused: {:?}", response.result);
                };
                break diff.commits().to_vec();
            }
        }
    };
    let key = |i: &SignedItem<LooseCommit>| (i.signed().to_bytes(), i.blob().to_bytes());
    assert_eq!(
        fetched.iter().map(key).collect::<BTreeSet<_>>(),
        pushed.iter().map(key).collect::<BTreeSet<_>>()
    );
    println!("fetched 20 commits back byte for byte with another key");
}
