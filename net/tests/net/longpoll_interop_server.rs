//! Their client against our server, in process, over loopback HTTP:
//! `subduction_http_longpoll` =0.13.0's `HttpLongPollClient` over its
//! `HttpClient` trait implemented over a plain hyper client (`HyperPost`), against our [`LongPollServer`] with a bijou
//! [`Connection`] accepted on each session. Their code encodes what they
//! send and decodes what we send; ours verifies theirs.
//!
//! - the handshake by key and by service name, their client reading our
//!   session id;
//! - a sync exchange: they push 20 commits, each acknowledged by our
//!   `HeadsUpdate`; they fetch, and our `BatchSyncResponse` carries their
//!   commits back, byte for byte;
//! - ephemeral messages both ways;
//! - our refusals, as their client reports them (`401` + a rejection);
//! - our side closing: their client collects what was queued, gets `410`
//!   and closes;
//! - their client never sends `/lp/disconnect`: once it stops polling, our
//!   side of the session expires.
//!
//! The Subduction crates are oracles here, never the implementation.

use crate::lp_http;

use std::net::SocketAddr;
use std::time::Duration;

use bijou_codec::Wire;
use bijou_net::handshake::{ConnectConfig, ConnectError};
use bijou_net::transport::longpoll::{
    LongPollError, LongPollServer, LongPollSession, ServerConfig,
};
use bijou_net::transport::TransportError;
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, HandshakeError, Responder};
use bijou_proto::message::{
    BatchSyncResponse, HeadsUpdate, Message, RejectionReason, RemoteHeads, SedimentreeId, SyncDiff,
    SyncMessage, SyncResult, Topic, Topics,
};
use bijou_proto::session::{Delivered, Received};
use bijou_signing::{ed25519_dalek::SigningKey, Identity, PeerId};
use future_form::Sendable;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::timeout;

use bijou_test_support::longpoll_oracle::HyperPost;
use sedimentree_core::codec::{decode::Decode, encode::Encode};
use subduction_core::connection::message::SyncMessage as TheirSyncMessage;
use subduction_core::timestamp::TimestampSeconds;
use subduction_crypto::signed::Signed as TheirSigned;
use subduction_crypto::signer::memory::MemorySigner;
use subduction_ephemeral::message::{
    EphemeralMessage as TheirMessage, EphemeralPayload as TheirPayload,
};
use subduction_ephemeral::topic::Topic as TheirTopic;
use subduction_http_longpoll::client::{ConnectResult, HttpLongPollClient};
use subduction_http_longpoll::error::ClientError;
use subduction_http_longpoll::transport::HttpLongPollTransport;

/// The service name our server answers `Discover` for.
const SERVICE: &str = "bijou.longpoll.interop";
/// Bound on each test.
const LIMIT: Duration = Duration::from_secs(60);
/// Bound on waiting for one message.
const REPLY: Duration = Duration::from_secs(5);
/// Our server's key.
const SERVER: u8 = 0x0E;

type Outcome = Result<Connection<LongPollSession>, ConnectError>;

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

/// Their peer id for one of our keys.
fn their_peer_id(key: &SigningKey) -> subduction_core::peer::id::PeerId {
    subduction_core::peer::id::PeerId::from(key.verifying_key())
}

/// Our server on a loopback port, with `config`; every session's
/// handshake outcome arrives on the receiver.
async fn start_our_server(config: ServerConfig) -> (SocketAddr, mpsc::UnboundedReceiver<Outcome>) {
    let (server, mut sessions) = LongPollServer::new(config);
    let addr = lp_http::listen(&server).await;
    let (events, outcomes) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let _server = server;
        let responder =
            Responder::new(HandshakeConfig::default()).with_service_name(SERVICE.as_bytes());
        while let Some(session) = sessions.accept().await {
            let (responder, events) = (responder.clone(), events.clone());
            tokio::spawn(async move {
                let outcome = Connection::accept(
                    session,
                    &key(SERVER),
                    &responder,
                    &ConnectConfig::default(),
                )
                .await;
                let _ = events.send(outcome);
            });
        }
    });
    (addr, outcomes)
}

fn quick_polls() -> ServerConfig {
    let mut c = ServerConfig::default();
    c.poll_timeout = Duration::from_secs(2);
    c
}

/// Their client's connection to `addr` for `audience`, its tasks running.
async fn their_connect(
    addr: SocketAddr,
    signer: &MemorySigner,
    audience: Option<subduction_core::peer::id::PeerId>,
) -> Result<(HttpLongPollTransport, String), ClientError> {
    let client = HttpLongPollClient::new(&format!("http://{addr}/"), HyperPost::default());
    let result: ConnectResult<Sendable> = match audience {
        Some(peer) => {
            client
                .connect::<Sendable, _>(signer, peer, TimestampSeconds::now())
                .await?
        }
        None => {
            client
                .connect_discover::<Sendable, _>(signer, SERVICE, TimestampSeconds::now())
                .await?
        }
    };
    tokio::spawn(result.poll_task);
    tokio::spawn(result.send_task);
    Ok((
        result.authenticated.inner().clone(),
        result.session_id.to_hex(),
    ))
}

/// Our accepted connection, in time.
async fn accepted(outcomes: &mut mpsc::UnboundedReceiver<Outcome>) -> Connection<LongPollSession> {
    timeout(REPLY, outcomes.recv())
        .await
        .expect("an outcome in time")
        .expect("the server runs")
        .expect("our responder accepted them")
}

/// The next message our connection delivers, in time.
async fn next(conn: &mut Connection<LongPollSession>) -> Received {
    timeout(REPLY, conn.next())
        .await
        .expect("a message in time")
        .expect("connection open")
        .expect("transport ok")
}

/// The next bytes their transport receives, in time.
async fn their_next(conn: &HttpLongPollTransport) -> Vec<u8> {
    timeout(
        REPLY,
        subduction_core::transport::Transport::<Sendable>::recv_bytes(conn),
    )
    .await
    .expect("a message in time")
    .expect("their receive")
}

async fn their_send(conn: &HttpLongPollTransport, bytes: &[u8]) {
    subduction_core::transport::Transport::<Sendable>::send_bytes(conn, bytes)
        .await
        .expect("their send");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn their_client_handshakes_by_key_and_by_service_name() {
    timeout(LIMIT, async {
        let (addr, mut outcomes) = start_our_server(quick_polls()).await;
        let signer = MemorySigner::from_bytes(&[0x33; 32]);
        for audience in [Some(their_peer_id(&key(SERVER))), None] {
            let (_conn, sid) = their_connect(addr, &signer, audience)
                .await
                .expect("their handshake succeeds against our server");
            assert_eq!(sid.len(), 32);
            let ours = accepted(&mut outcomes).await;
            assert_eq!(ours.remote_peer(), key(0x33).peer_id());
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn they_push_commits_and_fetch_them_back_from_our_server() {
    timeout(LIMIT, async {
        let (addr, mut outcomes) = start_our_server(quick_polls()).await;
        let signer = MemorySigner::from_bytes(&[0x34; 32]);
        let (theirs, _) = their_connect(addr, &signer, Some(their_peer_id(&key(SERVER))))
            .await
            .expect("handshake");
        let mut ours = accepted(&mut outcomes).await;

        // 20 commits, built and encoded by their code, each acknowledged
        // by our HeadsUpdate, which their code decodes.
        let tree = sedimentree_core::id::SedimentreeId::new(rand::random());
        let our_tree = SedimentreeId::new(*tree.as_bytes());
        let mut pushed = Vec::new();
        let mut received_items = Vec::new();
        for n in 0..20u64 {
            let head = sedimentree_core::loose_commit::id::CommitId::new(rand::random());
            let blob = sedimentree_core::blob::Blob::new(format!("their commit {n}").into_bytes());
            let meta = subduction_crypto::verified_meta::VerifiedMeta::<
                sedimentree_core::loose_commit::LooseCommit,
            >::seal::<Sendable, _>(
                &signer,
                (tree, head, std::collections::BTreeSet::new()),
                sedimentree_core::blob::verified::VerifiedBlobMeta::new(blob.clone()),
            )
            .await;
            let msg = TheirSyncMessage::LooseCommit {
                id: tree,
                commit: meta.signed().clone(),
                blob: blob.clone(),
                sender_heads: subduction_core::remote_heads::RemoteHeads {
                    counter: n,
                    heads: vec![head],
                },
            };
            let wire = msg.encode();
            their_send(&theirs, &wire).await;
            pushed.push((meta.signed().clone(), blob));

            let received = next(&mut ours).await;
            assert_eq!(
                received.bytes.as_ref(),
                wire.as_slice(),
                "their exact bytes"
            );
            let verified = received
                .result
                .expect("verified")
                .into_sync()
                .expect("a sync message");
            assert_eq!(verified.items.len(), 1);
            let SyncMessage::LooseCommit(commit) = verified.message else {
                panic!("expected their LooseCommit");
            };
            assert_eq!(commit.id, our_tree);
            received_items.push(commit.item);

            let our_head = bijou_proto::message::CommitId::new(*head.as_bytes());
            let update = Message::from(SyncMessage::HeadsUpdate(HeadsUpdate {
                id: our_tree,
                heads: RemoteHeads::new(n + 1, [our_head]),
            }));
            ours.send(&update).await.expect("our HeadsUpdate");
            let got = their_next(&theirs).await;
            assert_eq!(
                got,
                update.encode().expect("encode").to_vec(),
                "our exact bytes"
            );
            match TheirSyncMessage::try_decode(&got).expect("their decoder") {
                TheirSyncMessage::HeadsUpdate { id, heads } => {
                    assert_eq!(id, tree);
                    assert_eq!((heads.counter, heads.heads), (n + 1, vec![head]));
                }
                other => panic!("expected a HeadsUpdate, got {other:?}"),
            }
        }

        // They fetch: a BatchSyncRequest by their code; our answer carries
        // every commit they pushed.
        let nonce: u64 = rand::random();
        let request = TheirSyncMessage::BatchSyncRequest(
            subduction_core::connection::message::BatchSyncRequest {
                id: tree,
                req_id: subduction_core::connection::message::RequestId {
                    requestor: their_peer_id(&key(0x34)),
                    nonce,
                },
                fingerprint_summary: sedimentree_core::sedimentree::FingerprintSummary::new(
                    sedimentree_core::crypto::fingerprint::FingerprintSeed::new(
                        rand::random(),
                        rand::random(),
                    ),
                    Default::default(),
                    Default::default(),
                ),
                subscribe: false,
            },
        );
        their_send(&theirs, &request.encode()).await;
        let received = next(&mut ours).await;
        let verified = received
            .result
            .expect("verified")
            .into_sync()
            .expect("a sync message");
        let SyncMessage::BatchSyncRequest(request) = verified.message else {
            panic!("expected their BatchSyncRequest");
        };
        assert_eq!((request.id, request.nonce), (our_tree, nonce));
        let response = Message::from(SyncMessage::BatchSyncResponse(BatchSyncResponse {
            requestor: request.requestor,
            nonce: request.nonce,
            id: request.id,
            result: SyncResult::Ok(SyncDiff::new(received_items, vec![], [], [])),
            responder_heads: RemoteHeads::default(),
        }));
        ours.send(&response).await.expect("our response");
        let got = their_next(&theirs).await;
        assert_eq!(got, response.encode().expect("encode").to_vec());
        let TheirSyncMessage::BatchSyncResponse(response) =
            TheirSyncMessage::try_decode(&got).expect("their decoder")
        else {
            panic!("expected a BatchSyncResponse");
        };
        assert_eq!(response.req_id.nonce, nonce);
        let subduction_core::connection::message::SyncResult::Ok(diff) = response.result else {
            panic!("expected Ok");
        };
        let mut fetched = diff.missing_commits;
        fetched.sort_by_key(|(signed, _)| signed.as_bytes().to_vec());
        pushed.sort_by_key(|(signed, _)| signed.as_bytes().to_vec());
        assert_eq!(fetched, pushed, "their commits, byte for byte");
    })
    .await
    .expect("bounded");
}

fn their_topic(topic: Topic) -> TheirTopic {
    TheirTopic::new(*topic.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemeral_messages_go_both_ways() {
    timeout(LIMIT, async {
        let (addr, mut outcomes) = start_our_server(quick_polls()).await;
        let signer = MemorySigner::from_bytes(&[0x35; 32]);
        let (theirs, _) = their_connect(addr, &signer, Some(their_peer_id(&key(SERVER))))
            .await
            .expect("handshake");
        let mut ours = accepted(&mut outcomes).await;
        let topic = Topic::new(rand::random());

        // We subscribe; they see our Subscribe, then publish; we receive
        // it verified, their exact bytes.
        ours.subscribe(Topics::one(topic)).await.expect("subscribe");
        match TheirMessage::try_decode(&their_next(&theirs).await).expect("their decoder") {
            TheirMessage::Subscribe { topics } => assert_eq!(topics.head, their_topic(topic)),
            other => panic!("expected our Subscribe, got {other:?}"),
        }
        for round in 0..5u8 {
            let sealed = TheirSigned::seal::<Sendable, _>(
                &signer,
                TheirPayload {
                    id: their_topic(topic),
                    nonce: rand::random(),
                    timestamp: TimestampSeconds::now(),
                    payload: vec![round; 300],
                },
            )
            .await;
            let wire = TheirMessage::Ephemeral(Box::new(sealed.into_signed())).encode();
            their_send(&theirs, &wire).await;
            let received = next(&mut ours).await;
            assert_eq!(&received.bytes[..], &wire[..]);
            let Ok(Delivered::Ephemeral(verified)) = received.result else {
                panic!(
                    "expected a verified ephemeral message: {:?}",
                    received.result
                );
            };
            assert_eq!(verified.payload().payload().as_ref(), &[round; 300][..]);
            assert_eq!(verified.peer_id(), key(0x35).peer_id());
        }

        // They subscribe; we publish; they receive our exact bytes, and
        // their decoder and verifier accept them.
        let their_subscribe = TheirMessage::Subscribe {
            topics: nonempty::NonEmpty::new(their_topic(topic)),
        };
        their_send(&theirs, &their_subscribe.encode()).await;
        assert!(matches!(
            next(&mut ours).await.result,
            Ok(Delivered::Subscribed(_))
        ));
        for round in 0..5u8 {
            let payload = vec![round; 2048];
            let sent = ours
                .publish(&key(SERVER), topic, payload.clone())
                .await
                .expect("publish");
            let got = their_next(&theirs).await;
            assert_eq!(&got[..], sent.as_bytes());
            let TheirMessage::Ephemeral(signed) =
                TheirMessage::try_decode(&got).expect("their decoder")
            else {
                panic!("expected an ephemeral message");
            };
            let back = signed.try_verify().expect("their verifier").into_payload();
            assert_eq!((back.id, back.payload), (their_topic(topic), payload));
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn their_client_reads_our_refusals() {
    timeout(LIMIT, async {
        let (addr, mut outcomes) = start_our_server(quick_polls()).await;
        let signer = MemorySigner::from_bytes(&[0x36; 32]);
        let Err(err) = their_connect(addr, &signer, Some(their_peer_id(&key(78)))).await else {
            panic!("their client must be refused");
        };
        let text = err.to_string();
        assert!(
            matches!(err, ClientError::Authentication(_)) && text.contains("InvalidAudience"),
            "{text}"
        );
        match timeout(REPLY, outcomes.recv()).await.expect("in time") {
            Some(Err(ConnectError::Handshake(HandshakeError::Refused(refused)))) => {
                assert_eq!(refused.reason(), RejectionReason::InvalidAudience);
            }
            other => panic!(
                "expected our refusal, got {:?}",
                other.map(|o| o.map(|_| ()))
            ),
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_close_reaches_their_client_after_what_was_queued() {
    timeout(LIMIT, async {
        let (addr, mut outcomes) = start_our_server(quick_polls()).await;
        let signer = MemorySigner::from_bytes(&[0x38; 32]);
        let (theirs, _) = their_connect(addr, &signer, Some(their_peer_id(&key(SERVER))))
            .await
            .expect("handshake");
        let mut ours = accepted(&mut outcomes).await;
        let update = Message::from(SyncMessage::HeadsUpdate(HeadsUpdate {
            id: SedimentreeId::new([9; 32]),
            heads: RemoteHeads::default(),
        }));
        ours.send(&update).await.expect("queued");
        drop(ours);
        // Their poll collects the last message, then gets 410 and closes
        // their transport.
        assert_eq!(
            their_next(&theirs).await,
            update.encode().expect("encode").to_vec()
        );
        let after = timeout(
            REPLY,
            subduction_core::transport::Transport::<Sendable>::recv_bytes(&theirs),
        )
        .await
        .expect("their transport closes in time");
        assert!(after.is_err(), "closed, not another message");
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_polling_expires_on_our_side() {
    timeout(LIMIT, async {
        let mut config = ServerConfig::default();
        config.poll_timeout = Duration::from_millis(300);
        config.idle_timeout = Duration::from_secs(1);
        let (addr, mut outcomes) = start_our_server(config).await;
        let signer = MemorySigner::from_bytes(&[0x37; 32]);
        let (theirs, _) = their_connect(addr, &signer, Some(their_peer_id(&key(SERVER))))
            .await
            .expect("handshake");
        let mut ours = accepted(&mut outcomes).await;
        // Polling (a recv held, answered 204, again) keeps it alive.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!ours.get_ref().is_closed(), "alive while they poll");
        // Their close never reaches us (no /lp/disconnect): it expires.
        subduction_core::transport::Transport::<Sendable>::disconnect(&theirs)
            .await
            .expect("their close");
        let started = std::time::Instant::now();
        match timeout(REPLY, ours.next()).await.expect("in time") {
            Some(Err(TransportError::LongPoll(LongPollError::Expired { idle }))) => {
                assert_eq!(idle, Duration::from_secs(1));
            }
            other => panic!("expected Expired, got {:?}", other.map(|r| r.map(|_| ()))),
        }
        let waited = started.elapsed();
        assert!(waited < Duration::from_millis(2500), "{waited:?}");
        let _: PeerId = ours.remote_peer();
    })
    .await
    .expect("bounded");
}
