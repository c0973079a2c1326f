//! Keyhive against a real Subduction node, in process, over loopback
//! WebSocket: `bijou_test_support::keyhive_node`, `subduction_websocket`
//! =0.14.0's server with the storage policy `subduction_cli` 0.21 runs
//! under `--auth keyhive` and `subduction_keyhive` =0.12.0's protocol over
//! the same keyhive (its `SUK\0` messages reach that protocol in process,
//! not over the socket; see the module).
//!
//! - before registering, their policy refuses a push (their node drops it
//!   in silence) and a probe says Unauthorized; after `register_document`,
//!   pushes are acknowledged and a second client fetches them back byte
//!   for byte;
//! - a key-only document: its key pushes, another key can neither push
//!   nor fetch;
//! - an open node ignores registration (the registration's own 500 ms
//!   deadline ends it: wall time, over real sockets).
//!
//! A refused push gets no answer, so the tests wait for the node's report
//! of the refusal (`Node::refused`) rather than for a silence.
//!
//! The round-trip figure (keyhive against open auth) is a benchmark:
//! `cargo bench -p bijou-frame-benches --bench keyhive`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::time::Duration;

use bijou_net::RunError;
use bijou_proto::keyhive::{check_tree_id, Access, DocumentKey, Grantee, KeyhiveError, Outcome};
use bijou_proto::message::{CommitId, SyncMessage};
use bijou_proto::message::{SedimentreeId, SyncResult};
use bijou_proto::session::{Delivered, Received, VerifiedMessage};
use bijou_proto::session::{OperationError, TreeAccess};
use bijou_signing::{ed25519_dalek::SigningKey, Identity};
use bijou_test_support::keyhive_node::{
    commit, connect, fetch, keyhive_node, open_node, probe, push, register, same_items,
    send_commit, RefusedPush, REPLY,
};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(120);

/// Whether `received` is a HeadsUpdate naming `head`.
fn acknowledges(received: &Received, head: CommitId) -> bool {
    matches!(
        &received.result,
        Ok(Delivered::Sync(VerifiedMessage {
            message: SyncMessage::HeadsUpdate(update),
            ..
        })) if update.heads.heads().contains(&head)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_document_is_registered_then_pushed_to_and_fetched_back_byte_for_byte() {
    timeout(LIMIT, async {
        let node = keyhive_node().await;
        let alice = SigningKey::from_bytes(&[1; 32]);
        let mut a = connect(&node, &alice).await;
        let doc = DocumentKey::from_seed([0x42; 32]);
        let tree = doc.tree_id();
        check_tree_id(tree).expect("a document's tree id is a point");

        // Not registered: their policy refuses the push (their node then
        // drops it in silence: nothing names it before the probe's
        // answer), and the probe tells why.
        let (head, item) = commit(&alice, tree, 0, None);
        send_commit(&mut a, tree, 0, head, item).await;
        node.refused(RefusedPush {
            peer: alice.peer_id(),
            tree,
        })
        .await;
        let access = probe(&mut a, &alice, tree).await;
        assert!(!a.drain_held().any(|r| acknowledges(&r, head)));
        assert_eq!(access, TreeAccess::Unauthorized);
        assert!(access
            .explain(tree, alice.peer_id())
            .contains("enforces keyhive access control"));

        // Register (public Edit), then push 20 commits, each acknowledged.
        let delegation = doc.root_delegation(Grantee::Public, Access::Edit).unwrap();
        assert_eq!(delegation.tree_id(), tree);
        let registered = register(&mut a, &alice, delegation, REPLY)
            .await
            .expect("registered");
        assert_eq!(registered, Outcome::Registered);
        assert_eq!(
            probe(&mut a, &alice, tree).await,
            TreeAccess::Readable { heads: 0 }
        );
        let mut pushed = Vec::new();
        let mut parent = None;
        for n in 0..20u32 {
            let (head, item) = commit(&alice, tree, n, parent);
            push(&mut a, tree, u64::from(n), head, item.clone(), REPLY)
                .await
                .unwrap_or_else(|| panic!("commit {n} acknowledged"));
            pushed.push(item);
            parent = Some(head);
        }

        // Anyone may read a public document: a second key fetches them.
        let bob = SigningKey::from_bytes(&[2; 32]);
        let mut b = connect(&node, &bob).await;
        let fetched = fetch(&mut b, tree).await.expect("bob may read");
        same_items(&fetched, &pushed);
        // And write (public Edit): bob's commit is acknowledged.
        let (head, item) = commit(&bob, tree, 99, parent);
        assert!(push(&mut b, tree, 99, head, item, REPLY).await.is_some());

        // Registering again (a client reopening the document) works.
        let delegation = doc.root_delegation(Grantee::Public, Access::Edit).unwrap();
        register(&mut b, &bob, delegation, REPLY)
            .await
            .expect("registered again");
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_only_document_admits_its_key_and_refuses_others() {
    timeout(LIMIT, async {
        let node = keyhive_node().await;
        let alice = SigningKey::from_bytes(&[1; 32]);
        let mut a = connect(&node, &alice).await;
        let doc = DocumentKey::from_seed([0x43; 32]);
        let tree = doc.tree_id();
        let delegation = doc
            .root_delegation(Grantee::Key(alice.peer_id()), Access::Edit)
            .unwrap();
        register(&mut a, &alice, delegation, REPLY)
            .await
            .expect("registered");
        let (head, item) = commit(&alice, tree, 0, None);
        assert!(push(&mut a, tree, 0, head, item.clone(), REPLY)
            .await
            .is_some());
        same_items(&fetch(&mut a, tree).await.expect("alice reads"), &[item]);

        let bob = SigningKey::from_bytes(&[2; 32]);
        let mut b = connect(&node, &bob).await;
        assert_eq!(
            fetch(&mut b, tree).await.unwrap_err(),
            SyncResult::Unauthorized
        );
        let (head, item) = commit(&bob, tree, 1, Some(head));
        send_commit(&mut b, tree, 1, head, item).await;
        node.refused(RefusedPush {
            peer: bob.peer_id(),
            tree,
        })
        .await;
        assert_eq!(probe(&mut b, &bob, tree).await, TreeAccess::Unauthorized);
        assert!(!b.drain_held().any(|r| acknowledges(&r, head)));

        // A wrong signer is refused locally.
        let delegation = doc.root_delegation(Grantee::Public, Access::Edit).unwrap();
        let err = register(&mut b, &alice, delegation, REPLY)
            .await
            .unwrap_err();
        assert!(matches!(err, RunError::WrongSigner(_)), "{err}");
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_node_ignores_registration_and_a_bad_tree_id_is_refused_locally() {
    timeout(LIMIT, async {
        let node = open_node().await;
        let alice = SigningKey::from_bytes(&[1; 32]);
        let mut a = connect(&node, &alice).await;
        let doc = DocumentKey::from_seed([0x44; 32]);
        let delegation = doc.root_delegation(Grantee::Public, Access::Edit).unwrap();
        let err = register(&mut a, &alice, delegation, Duration::from_millis(500))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                RunError::Operation {
                    error: OperationError::TimedOut {
                        waiting_for: "MissingContactCard"
                    },
                    ..
                }
            ),
            "{err}"
        );
        let mut bad = [0; 32];
        bad[0] = 2;
        let err = check_tree_id(SedimentreeId::new(bad)).unwrap_err();
        assert!(matches!(err, KeyhiveError::TreeNotAPoint { .. }));
    })
    .await
    .expect("bounded");
}
