//! Operations through the async shell: `Connection::run`/`finish` await a
//! session operation over a real transport (framed, in-memory pipe) while
//! a server connection answers. Messages received meanwhile are kept for
//! `recv` in order, bounded; deadlines, unknown ids, a closed peer and a
//! cancelled wait each end the way their docs say.
//!
//! On paused tokio time, the connections reading tokio's clock
//! (`TokioClock`): the clock moves only when both sides wait, straight to
//! the next deadline, so deadlines end exactly when due and take no wall
//! time.

use std::time::Duration;

use bijou_net::handshake::ConnectConfig;
use bijou_net::{RunError, TokioClock, HELD_MESSAGES};
use bijou_proto::message::{
    CommitId, DataRequestRejected, HeadsUpdate, RemoteHeads, SedimentreeId, SyncMessage,
};
use bijou_proto::session::Delivered;
use bijou_proto::session::{Operation, OperationError, Outcome};
use bijou_signing::{ed25519_dalek::SigningKey, Blob};
use bijou_test_support::connections::{duplex_pair, DuplexConnection};
use tokio::time::timeout;

type Conn = DuplexConnection;

const LIMIT: Duration = Duration::from_secs(20);

fn keys() -> (SigningKey, SigningKey) {
    (
        SigningKey::from_bytes(&[1; 32]),
        SigningKey::from_bytes(&[2; 32]),
    )
}

async fn pair() -> (Conn, Conn) {
    let (client, server) = keys();
    let (client, server) = duplex_pair(&client, &server, &ConnectConfig::default()).await;
    (
        client.with_clock(TokioClock::system()),
        server.with_clock(TokioClock::system()),
    )
}

fn tree() -> SedimentreeId {
    SedimentreeId::new([9; 32])
}

fn commit(n: u8) -> (SyncMessage, CommitId) {
    let head = CommitId::new([n; 32]);
    let message = SyncMessage::loose_commit(&keys().0, tree(), head, None, Blob::new(vec![n; 32]))
        .expect("commit");
    (message, head)
}

fn unrelated(n: u8) -> SyncMessage {
    SyncMessage::from(DataRequestRejected {
        id: SedimentreeId::new([n; 32]),
    })
}

fn ack(head: CommitId) -> SyncMessage {
    SyncMessage::HeadsUpdate(HeadsUpdate {
        id: tree(),
        heads: RemoteHeads::new(1, [head]),
    })
}

#[tokio::test(start_paused = true)]
async fn a_push_is_run_to_its_acknowledgement_and_other_messages_wait_for_recv_in_order() {
    timeout(LIMIT, async {
        let (mut client, mut server) = pair().await;
        let (message, head) = commit(1);
        let serving = tokio::spawn(async move {
            let received = server.recv().await.expect("recv").expect("the commit");
            assert!(matches!(received.result, Ok(Delivered::Sync(_))));
            for n in 0..3 {
                server.send(unrelated(n)).await.expect("send");
            }
            server.send(ack(head)).await.expect("ack");
            server.send(unrelated(3)).await.expect("send");
            server
        });
        let (client_key, _) = keys();
        let outcome = client
            .run(&client_key, Operation::Push(message), LIMIT)
            .await
            .expect("pushed");
        assert!(
            matches!(outcome, Outcome::Pushed { head: h, .. } if h == head),
            "{outcome:?}"
        );
        let _server = serving.await.expect("task");
        // The three messages before the acknowledgement, then the one
        // after it: in order, none lost, the acknowledgement not among them.
        for n in 0..4 {
            let received = client.recv().await.expect("recv").expect("a message");
            let expected = unrelated(n);
            let Ok(Delivered::Sync(verified)) = received.result else {
                panic!("{received:?}")
            };
            assert_eq!(verified.message, expected);
        }
    })
    .await
    .expect("bounded");
}

/// A Subduction server acknowledges in order, and one `HeadsUpdate` may
/// name only the newest of several pushes in flight: it ends them all at
/// once, and `finish` then returns each one's end in turn (found live
/// against `subduction_cli` 0.21 with `bijou sync --window 4`: the second
/// `finish` said its push was not running).
#[tokio::test(start_paused = true)]
async fn one_acknowledgement_of_the_newest_push_ends_every_push_before_it_for_finish() {
    timeout(LIMIT, async {
        let (mut client, mut server) = pair().await;
        let (client_key, _) = keys();
        let mut pushes = Vec::new();
        for n in 1..=3 {
            let (message, head) = commit(n);
            let id = client
                .start(Operation::Push(message), LIMIT)
                .expect("start");
            pushes.push((id, head));
        }
        let newest = pushes[2].1;
        let serving = tokio::spawn(async move {
            for _ in 0..3 {
                server.recv().await.expect("recv").expect("a commit");
            }
            server.send(ack(newest)).await.expect("ack");
            server
        });
        for (id, pushed) in pushes {
            let outcome = client.finish(id, &client_key).await;
            assert!(
                matches!(&outcome, Ok(Outcome::Pushed { head, heads, .. })
                    if *head == pushed && heads.heads() == [newest]),
                "{id}: {outcome:?}"
            );
        }
        let _server = serving.await.expect("task");
    })
    .await
    .expect("bounded");
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_push_times_out_and_its_id_is_then_unknown() {
    timeout(LIMIT, async {
        let (mut client, _server) = pair().await;
        let (client_key, _) = keys();
        let (message, _) = commit(1);
        let id = client
            .start(Operation::Push(message), Duration::from_millis(200))
            .expect("started");
        let started = tokio::time::Instant::now();
        let err = client.finish(id, &client_key).await.unwrap_err();
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(200) && elapsed < Duration::from_millis(210),
            "ended at its deadline: {elapsed:?}"
        );
        assert!(
            matches!(
                err,
                RunError::Operation {
                    id: failed,
                    error: OperationError::TimedOut { .. }
                } if failed == id
            ),
            "{err}"
        );
        // Its end was taken: a second finish knows it no more.
        assert!(matches!(
            client.finish(id, &client_key).await,
            Err(RunError::Unknown(unknown)) if unknown == id
        ));
    })
    .await
    .expect("bounded");
}

#[tokio::test(start_paused = true)]
async fn a_peer_that_closes_ends_the_wait_with_closed() {
    timeout(LIMIT, async {
        let (mut client, mut server) = pair().await;
        let (client_key, _) = keys();
        let serving = tokio::spawn(async move {
            let _ = server.recv().await;
            server.close().await.expect("close");
            drop(server);
        });
        let err = client
            .run(&client_key, Operation::Fetch(tree()), LIMIT)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                RunError::Closed {
                    waiting_for: "BatchSyncResponse",
                    ..
                }
            ),
            "{err}"
        );
        serving.await.expect("task");
    })
    .await
    .expect("bounded");
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_wait_loses_nothing_and_finishing_again_carries_on() {
    timeout(LIMIT, async {
        let (mut client, mut server) = pair().await;
        let (client_key, _) = keys();
        let (message, head) = commit(1);
        let id = client
            .start(Operation::Push(message), LIMIT)
            .expect("start");
        // Cancelled before any answer.
        assert!(
            timeout(Duration::from_millis(50), client.finish(id, &client_key))
                .await
                .is_err()
        );
        let serving = tokio::spawn(async move {
            let _ = server.recv().await;
            server.send(unrelated(7)).await.expect("send");
            server.send(ack(head)).await.expect("ack");
            server
        });
        let outcome = client.finish(id, &client_key).await.expect("pushed");
        assert!(matches!(outcome, Outcome::Pushed { .. }));
        let _server = serving.await.expect("task");
        let held: Vec<_> = client.drain_held().collect();
        assert_eq!(held.len(), 1, "the message before the ack");
    })
    .await
    .expect("bounded");
}

#[tokio::test(start_paused = true)]
async fn a_flood_while_waiting_is_held_up_to_the_bound_then_left_on_the_transport() {
    timeout(LIMIT, async {
        let (mut client, mut server) = pair().await;
        let (client_key, _) = keys();
        let flood = HELD_MESSAGES + 44;
        let serving = tokio::spawn(async move {
            let _ = server.recv().await; // the commit: never acknowledged
            for n in 0..flood {
                server.feed(unrelated((n % 251) as u8)).await.expect("feed");
            }
            server.flush().await.expect("flush");
            server
        });
        let (message, _) = commit(1);
        let err = client
            .run(
                &client_key,
                Operation::Push(message),
                Duration::from_millis(1500),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, RunError::Operation { .. }), "{err}");
        let _server = serving.await.expect("task");
        let held: Vec<_> = client.drain_held().collect();
        assert_eq!(held.len(), HELD_MESSAGES, "held up to the bound, no more");
        // The rest waited on the transport, in order after the held ones.
        for n in HELD_MESSAGES..flood {
            let received = client.recv().await.expect("recv").expect("message");
            let Ok(Delivered::Sync(verified)) = received.result else {
                panic!("{received:?}")
            };
            assert_eq!(verified.message, unrelated((n % 251) as u8));
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test(start_paused = true)]
async fn a_registration_left_waiting_for_its_signer_ends_at_its_deadline_under_recv() {
    timeout(LIMIT, async {
        let (mut client, _server) = pair().await;
        let (client_key, _) = keys();
        let doc = bijou_proto::keyhive::DocumentKey::from_seed([3; 32]);
        let delegation = doc
            .root_delegation(
                bijou_proto::keyhive::Grantee::Public,
                bijou_proto::keyhive::Access::Edit,
            )
            .expect("delegation");
        let id = client
            .start(Operation::Register(delegation), Duration::from_millis(100))
            .expect("start");
        // recv cannot sign: it waits, reading nothing, and the deadline
        // ends the registration meanwhile.
        assert!(timeout(Duration::from_millis(400), client.recv())
            .await
            .is_err());
        let err = client.finish(id, &client_key).await.unwrap_err();
        assert!(
            matches!(
                err,
                RunError::Operation {
                    error: OperationError::TimedOut {
                        waiting_for: "signer"
                    },
                    ..
                }
            ),
            "{err}"
        );
    })
    .await
    .expect("bounded");
}

/// The client's key, unable to sign (a hardware key unplugged).
struct Unplugged(SigningKey);

impl bijou_signing::Identity for Unplugged {
    fn verifying_key(&self) -> bijou_signing::ed25519_dalek::VerifyingKey {
        self.0.verifying_key()
    }

    fn sign_message(
        &self,
        _: &[u8],
    ) -> Result<bijou_signing::ed25519_dalek::Signature, bijou_signing::ed25519_dalek::SignatureError>
    {
        Err(bijou_signing::ed25519_dalek::SignatureError::new())
    }
}

#[tokio::test(start_paused = true)]
async fn a_signer_that_fails_is_said_and_the_registration_waits_for_a_working_one() {
    timeout(LIMIT, async {
        let (mut client, _server) = pair().await;
        let (client_key, _) = keys();
        let doc = bijou_proto::keyhive::DocumentKey::from_seed([3; 32]);
        let delegation = doc
            .root_delegation(
                bijou_proto::keyhive::Grantee::Public,
                bijou_proto::keyhive::Access::Edit,
            )
            .expect("delegation");
        let id = client
            .start(Operation::Register(delegation), Duration::from_millis(100))
            .expect("start");
        let err = client
            .finish(id, &Unplugged(client_key.clone()))
            .await
            .unwrap_err();
        assert!(matches!(err, RunError::Signer(_)), "{err}");
        // The request stayed open: a working signer signs it, and the
        // registration goes on to wait for the peer (which never answers).
        let err = client.finish(id, &client_key).await.unwrap_err();
        assert!(
            matches!(
                err,
                RunError::Operation {
                    error: OperationError::TimedOut { waiting_for },
                    ..
                } if waiting_for != "signer"
            ),
            "{err}"
        );
    })
    .await
    .expect("bounded");
}
