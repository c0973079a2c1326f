//! The iroh (QUIC) transport between two in-process endpoints on loopback
//! (direct only: no relays, no address lookup, no port mapping): the
//! handshake, sync, ephemeral messages and a clean close over one QUIC
//! stream; a lying u32 length refused before anything is reserved, before
//! and after authentication; and a peer that vanishes.

use std::time::Duration;

use bijou_codec::Wire;
use bijou_net::handshake::ConnectConfig;
use bijou_net::handshake::ConnectError;
use bijou_net::transport::iroh::{
    self as quic, IrohStreamError, IrohTransport, NodeAddr, CLOSE_NORMAL, CLOSE_TOO_LARGE,
    IROH_MAX_MESSAGE_LENGTH,
};
use bijou_net::transport::{Transport, TransportError};
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, HandshakeError, Responder};
use bijou_proto::message::{
    Audience, BatchSyncRequest, BatchSyncResponse, BlobMessage, CommitId, FingerprintSeed,
    LooseCommit, Message, RemoteHeads, SedimentreeId, SignedItem, SyncDiff, SyncMessage,
    SyncResult, Topic, Topics,
};
use bijou_proto::session::{Delivered, Received};
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
use bytes::Bytes;
use futures::StreamExt;
use iroh::endpoint::{ConnectionError, QuicTransportConfig};
use iroh::Endpoint;
use tokio::time::timeout;

use crate::iroh_support::{accept_soon, endpoint, key, loopback, RawPeer, LIMIT, REPLY};

type Conn = Connection<IrohTransport>;

/// A client and a server connection over two fresh endpoints (returned too:
/// keep them alive while the connections are).
async fn pair() -> (Conn, Conn, Endpoint, Endpoint) {
    let (client_ep, server_ep) = (endpoint().await, endpoint().await);
    let server = serve_one(&server_ep);
    let client = connect_as(&client_ep, &server_ep, key(0xC1)).await;
    let server = server.await.expect("server task");
    (client, server, client_ep, server_ep)
}

/// Our server's side of the next connection to `server_ep`, as key 0x5E.
fn serve_one(server_ep: &Endpoint) -> tokio::task::JoinHandle<Conn> {
    let accepting = accept_soon(server_ep);
    tokio::spawn(async move {
        let transport = accepting.await.expect("accept task");
        let responder = Responder::new(HandshakeConfig::default());
        Connection::accept(transport, &key(0x5E), &responder, &ConnectConfig::default())
            .await
            .expect("server handshake")
    })
}

/// Our client's connection from `client_ep` to the server at `server_ep`.
async fn connect_as(client_ep: &Endpoint, server_ep: &Endpoint, me: SigningKey) -> Conn {
    let transport = quic::connect(client_ep, &NodeAddr::of(server_ep))
        .await
        .expect("connect");
    Connection::connect(
        transport,
        &me,
        Audience::Known(key(0x5E).peer_id()),
        &ConnectConfig::default(),
    )
    .await
    .expect("client handshake")
}

async fn next(conn: &mut Conn) -> Received {
    timeout(REPLY, conn.next())
        .await
        .expect("a message in time")
        .expect("connection open")
        .expect("transport ok")
}

fn commit(author: &SigningKey, tree: SedimentreeId, n: u8) -> SignedItem<LooseCommit> {
    let blob = Blob::new(format!("commit {n} over QUIC").into_bytes());
    let commit = LooseCommit::new(tree, CommitId::new([n; 32]), [], blob.meta());
    SignedItem::new(Signed::seal(author, &commit).expect("seal"), blob)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_sync_ephemeral_and_a_clean_close() {
    timeout(LIMIT, async {
        let (mut client, mut server, client_ep, server_ep) = pair().await;

        // The Subduction peer ids are the handshake's keys; the iroh node
        // ids are the endpoints' TLS keys: different keys.
        assert_eq!(client.remote_peer(), key(0x5E).peer_id());
        assert_eq!(server.remote_peer(), key(0xC1).peer_id());
        assert_eq!(
            client.get_ref().remote_node_id().public_key(),
            server_ep.id()
        );
        assert_eq!(
            server.get_ref().remote_node_id().public_key(),
            client_ep.id()
        );
        assert_ne!(
            client.get_ref().remote_node_id().as_bytes(),
            client.remote_peer().as_bytes()
        );
        assert_eq!(client.get_ref().connection().alpn(), quic::ALPN);
        assert_eq!(
            client.get_ref().max_message_length(),
            IROH_MAX_MESSAGE_LENGTH
        );

        // Sync: five signed commits pushed, then fetched back.
        let tree = SedimentreeId::new([7; 32]);
        let author = key(0xA7);
        let mut stored = Vec::new();
        for n in 0..5u8 {
            let item = commit(&author, tree, n);
            client
                .send(SyncMessage::LooseCommit(BlobMessage {
                    id: tree,
                    sender_heads: RemoteHeads::new(u64::from(n), [CommitId::new([n; 32])]),
                    item: item.clone(),
                }))
                .await
                .expect("push");
            let verified = next(&mut server)
                .await
                .result
                .expect("verified")
                .into_sync()
                .expect("sync");
            assert_eq!(verified.items.len(), 1);
            let SyncMessage::LooseCommit(m) = verified.message else {
                panic!("expected the commit");
            };
            assert_eq!(m.item, item);
            stored.push(m.item);
        }
        let seed = FingerprintSeed::new(1, 2);
        let request = BatchSyncRequest::new(tree, client.local_peer(), 9, false, seed, [], []);
        client
            .send(SyncMessage::BatchSyncRequest(request.clone()))
            .await
            .expect("request");
        let asked = next(&mut server).await.result.expect("verified");
        assert!(matches!(
            asked.into_sync().map(|v| v.message),
            Some(SyncMessage::BatchSyncRequest(r)) if r == request
        ));
        server
            .send(SyncMessage::BatchSyncResponse(BatchSyncResponse {
                requestor: request.requestor,
                nonce: request.nonce,
                id: tree,
                result: SyncResult::Ok(SyncDiff::new(stored.clone(), vec![], [], [])),
                responder_heads: RemoteHeads::new(5, [CommitId::new([4; 32])]),
            }))
            .await
            .expect("answer");
        let fetched = next(&mut client)
            .await
            .result
            .expect("verified")
            .into_sync()
            .expect("sync");
        assert_eq!(fetched.items.len(), 5, "every fetched commit verified");
        let SyncMessage::BatchSyncResponse(response) = fetched.message else {
            panic!("expected the response");
        };
        let SyncResult::Ok(diff) = response.result else {
            panic!("expected Ok");
        };
        let mut got: Vec<_> = diff.commits().to_vec();
        got.sort_by_key(|i| i.signed().to_bytes());
        stored.sort_by_key(|i| i.signed().to_bytes());
        assert_eq!(got, stored, "the commits come back byte for byte");

        // Ephemeral: the server subscribes, the client publishes.
        let topic = Topic::new([3; 32]);
        server
            .subscribe(Topics::one(topic))
            .await
            .expect("subscribe");
        assert!(matches!(
            next(&mut client).await.result,
            Ok(Delivered::Subscribed(_))
        ));
        client
            .publish(&author, topic, &b"cursor at 42"[..])
            .await
            .expect("publish");
        match next(&mut server).await.result {
            Ok(Delivered::Ephemeral(payload)) => {
                assert_eq!(payload.payload().payload().as_ref(), b"cursor at 42");
            }
            other => panic!("expected the ephemeral message, got {other:?}"),
        }

        // Idle: no buffer of ours on either side.
        assert_eq!(client.get_ref().buffered_capacity(), 0);
        assert_eq!(server.get_ref().buffered_capacity(), 0);

        // Close: the client finishes; the server's stream ends, it closes
        // too, and the connection closes with code 0.
        client.close().await.expect("client close");
        assert!(timeout(REPLY, server.next()).await.expect("in time").is_none());
        server.close().await.expect("server close");
        assert!(timeout(REPLY, client.next()).await.expect("in time").is_none());
        let reason = timeout(REPLY, client.get_ref().connection().closed())
            .await
            .expect("closed in time");
        assert!(
            matches!(
                &reason,
                ConnectionError::LocallyClosed
            ) || matches!(&reason, ConnectionError::ApplicationClosed(c) if c.error_code.into_inner() == 0),
            "closed with code 0: {reason:?}"
        );
        let reason = timeout(REPLY, server.get_ref().connection().closed())
            .await
            .expect("closed in time");
        assert!(
            matches!(&reason, ConnectionError::LocallyClosed)
                || matches!(&reason, ConnectionError::ApplicationClosed(c) if c.error_code.into_inner() == 0),
            "closed with code 0: {reason:?}"
        );
        client_ep.close().await;
        server_ep.close().await;
    })
    .await
    .expect("bounded");
}

/// The client sends 300 messages and closes at once; the server echoes each
/// and closes when the client's side ends: every echo arrives before the
/// client's stream ends (the close waits for the peer, nothing is cut).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_right_after_sending_loses_nothing() {
    timeout(LIMIT, async {
        let (client, mut server, _client_ep, _server_ep) = pair().await;
        let echo = tokio::spawn(async move {
            let mut n = 0;
            while let Some(received) = server.recv().await.expect("server recv") {
                server.send_bytes(received.bytes).await.expect("echo");
                n += 1;
            }
            server.close().await.expect("server close");
            n
        });
        let (mut tx, mut rx) = client.split();
        let tree = SedimentreeId::new([8; 32]);
        let author = key(0xA8);
        let sent: Vec<Bytes> = (0..300u16)
            .map(|n| {
                let blob = Blob::new(vec![n as u8; usize::from(n) * 97]);
                let c = LooseCommit::new(tree, CommitId::new([n as u8; 32]), [], blob.meta());
                let msg = Message::from(SyncMessage::LooseCommit(BlobMessage {
                    id: tree,
                    sender_heads: RemoteHeads::new(u64::from(n), []),
                    item: SignedItem::new(Signed::seal(&author, &c).expect("seal"), blob),
                }));
                msg.encode().expect("encode")
            })
            .collect();
        let to_send = sent.clone();
        let sender = tokio::spawn(async move {
            for bytes in to_send {
                tx.feed_bytes(bytes).await.expect("send");
            }
            tx.close().await.expect("client close");
        });
        let mut echoed = Vec::new();
        while let Some(received) = timeout(REPLY, rx.recv())
            .await
            .expect("in time")
            .expect("recv")
        {
            echoed.push(received.bytes);
        }
        sender.await.expect("sender");
        assert_eq!(echo.await.expect("echo task"), 300);
        assert_eq!(echoed, sent, "every echo, in order, byte for byte");
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_length_before_the_handshake_is_refused_from_its_four_bytes() {
    timeout(LIMIT, async {
        let server_ep = endpoint().await;

        // The transport alone: 4 GiB announced, three bytes sent.
        let accepting = accept_soon(&server_ep);
        let mut peer = RawPeer::connect(&server_ep).await;
        peer.write(&[0xFF, 0xFF, 0xFF, 0xFF, b'S', b'U', b'H'])
            .await;
        let mut transport = accepting.await.expect("accept task");
        transport.set_max_message_length(256);
        match timeout(REPLY, transport.next()).await.expect("in time") {
            Some(Err(TransportError::TooLarge { len, max })) => {
                assert_eq!((len, max), (u64::from(u32::MAX), 256));
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        assert!(
            transport.buffered_capacity() < 64,
            "nothing reserved for the announced length: {} bytes held",
            transport.buffered_capacity()
        );
        assert!(transport.next().await.is_none(), "the stream has ended");
        assert_eq!(peer.close_code().await, u64::from(CLOSE_TOO_LARGE));

        // Through the handshake: 257 bytes announced is already too many.
        let accepting = accept_soon(&server_ep);
        let mut peer = RawPeer::connect(&server_ep).await;
        peer.write(&257u32.to_be_bytes()).await;
        let transport = accepting.await.expect("accept task");
        let responder = Responder::new(HandshakeConfig::default());
        match Connection::accept(transport, &key(1), &responder, &ConnectConfig::default()).await {
            Err(ConnectError::Handshake(HandshakeError::TooLarge { len: 257, max: 256 })) => {}
            other => panic!(
                "expected the handshake's TooLarge, got {:?}",
                other.map(|_| ())
            ),
        }
        assert_eq!(peer.close_code().await, u64::from(CLOSE_TOO_LARGE));
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_handshake_memory_follows_the_bytes_received_not_the_length() {
    timeout(LIMIT, async {
        let server_ep = endpoint().await;
        let (server_key, me) = (key(0x5E), key(0xC2));

        // 40 MiB announced (under the 50 MiB limit), 100 KiB sent.
        let (mut peer, mut server) = RawPeer::authenticated(&server_ep, &server_key, &me).await;
        peer.write(&(40u32 << 20).to_be_bytes()).await;
        peer.write(&vec![0x55; 100 * 1024]).await;
        assert!(
            timeout(Duration::from_millis(500), server.next())
                .await
                .is_err(),
            "the message is incomplete: nothing delivered"
        );
        let held = server.get_ref().buffered_capacity();
        assert!(
            held <= 2 * 100 * 1024 + 64 * 1024 + 4096,
            "at most 2 x received + 64 KiB, not 40 MiB: {held} bytes held"
        );

        // A length over the 50 MiB limit: refused, the peer told 1009.
        let (mut peer, mut server) = RawPeer::authenticated(&server_ep, &server_key, &me).await;
        let over = u32::try_from(IROH_MAX_MESSAGE_LENGTH).expect("fits") + 1;
        peer.write(&over.to_be_bytes()).await;
        match timeout(REPLY, server.next()).await.expect("in time") {
            Some(Err(TransportError::TooLarge { len, max })) => {
                assert_eq!((len, max), (u64::from(over), IROH_MAX_MESSAGE_LENGTH));
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        assert!(server.get_ref().buffered_capacity() < 64);
        assert_eq!(peer.close_code().await, u64::from(CLOSE_TOO_LARGE));
    })
    .await
    .expect("bounded");
}

/// A server endpoint the user owns, offering another protocol too: a
/// connection on the other ALPN is refused by our accept (and told 1011);
/// dialling a wrong node id or a silent address are typed errors that say
/// what to check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_protocol_wrong_node_and_no_answer_are_typed_errors() {
    timeout(LIMIT, async {
        let server_ep = quic::direct_endpoint_builder(loopback())
            .expect("builder")
            .alpns(vec![quic::ALPN.to_vec(), b"other/1".to_vec()])
            .bind()
            .await
            .expect("bind");
        let accepting = server_ep.clone();
        let refused = tokio::spawn(async move { quic::accept(&accepting).await });
        let client_ep = endpoint().await;
        let other = client_ep
            .connect(
                iroh::EndpointAddr::from(&NodeAddr::of(&server_ep)),
                b"other/1",
            )
            .await
            .expect("QUIC accepts the other ALPN");
        match refused.await.expect("task") {
            Err(err @ quic::IrohError::WrongAlpn { .. }) => {
                assert!(err.to_string().contains("\"other/1\""), "{err}");
            }
            other => panic!("expected WrongAlpn, got {other:?}"),
        }
        match timeout(REPLY, other.closed())
            .await
            .expect("closed in time")
        {
            ConnectionError::ApplicationClosed(close) => {
                assert_eq!(
                    close.error_code.into_inner(),
                    u64::from(quic::CLOSE_INTERNAL)
                );
            }
            other => panic!("expected a 1011 close, got {other:?}"),
        }

        // The right address, another node's id: iroh's TLS refuses it.
        let fresh_id = || quic::NodeId::from(quic::SecretKey::generate().public());
        let mut wrong = NodeAddr::of(&server_ep);
        wrong.id = fresh_id();
        let _accepting = tokio::spawn({
            let ep = server_ep.clone();
            async move { quic::accept(&ep).await }
        });
        let err = quic::connect_within(&client_ep, &wrong, Duration::from_secs(3))
            .await
            .expect_err("not that node");
        eprintln!("{err}");
        assert!(
            matches!(
                err,
                quic::IrohError::Connect { .. } | quic::IrohError::ConnectTimeout { .. }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("iroh_node_id="), "{err}");

        // Nobody at the address.
        let silent = std::net::UdpSocket::bind(loopback()).expect("a port nobody answers on");
        let nobody = NodeAddr::new(fresh_id(), [silent.local_addr().expect("addr")]);
        let err = quic::connect_within(&client_ep, &nobody, Duration::from_secs(1))
            .await
            .expect_err("no answer");
        eprintln!("{err}");
        assert!(
            matches!(err, quic::IrohError::ConnectTimeout { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("--iroh"), "{err}");
    })
    .await
    .expect("bounded");
}

#[test]
fn a_peer_that_vanishes_is_a_clear_error_within_the_idle_timeout() {
    // The server runtime; the client lives in a runtime of its own, shut
    // down without closing anything, as a killed process would.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        timeout(LIMIT, async {
            let idle = Duration::from_secs(2);
            let server_ep = quic::direct_endpoint_builder(loopback())
                .expect("builder")
                .transport_config(
                    quic::one_stream(QuicTransportConfig::builder())
                        .max_idle_timeout(Some(idle.try_into().expect("idle timeout")))
                        .keep_alive_interval(Duration::from_millis(500))
                        .build(),
                )
                .bind()
                .await
                .expect("bind");
            let server = serve_one(&server_ep);
            let (connected_tx, connected_rx) = tokio::sync::oneshot::channel();
            let dialled = server_ep.clone();
            client_rt.spawn(async move {
                let ep = endpoint().await;
                let conn = connect_as(&ep, &dialled, key(0xC3)).await;
                let _ = connected_tx.send(());
                // Hold everything until the runtime goes away.
                let _keep = (ep, conn);
                std::future::pending::<()>().await;
            });
            let mut server = server.await.expect("server task");
            connected_rx.await.expect("client connected");
            client_rt.shutdown_background();
            let vanished = std::time::Instant::now();

            let outcome = timeout(Duration::from_secs(15), server.next())
                .await
                .expect("the server learns within the bound");
            let waited = vanished.elapsed();
            eprintln!("after {waited:?}: {outcome:?}");
            match outcome {
                Some(Err(err)) => {
                    let text = err.to_string();
                    eprintln!("{text}");
                    assert!(
                        matches!(
                            &err,
                            TransportError::Quic(IrohStreamError::ConnectionLost {
                                source: ConnectionError::TimedOut
                            })
                        ),
                        "a timeout: {err:?}"
                    );
                    assert!(text.contains("stopped answering"), "{text}");
                }
                other => panic!("expected an error, got {other:?}"),
            }
            assert!(waited < Duration::from_secs(10), "{waited:?}");
            let _ = CLOSE_NORMAL;
            server_ep.close().await;
        })
        .await
    })
    .expect("bounded");
}
