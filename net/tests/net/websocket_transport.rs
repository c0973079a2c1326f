//! The WebSocket transport over real loopback sockets: our client and
//! server end to end, and a raw tungstenite peer that breaks the rules
//! (text messages, oversized messages before and after authentication, a
//! close or a silence in the middle of the handshake, pings mid-session, an
//! abrupt disconnect), each met with a typed error and a clean end of the
//! stream. Then the [`Connection`] API (split/reunite, `into_inner`,
//! refusing handshake messages, `send_all`) and a `BatchSyncResponse` with
//! good and bad items.
//!
//! Every test is bounded by [`tokio::time::timeout`]. The two silences in
//! the handshake wait for a timer, so they run on an in-memory pipe under
//! paused tokio time instead of sockets: the timeout fires exactly when
//! due, in no wall time.

use bijou_net::handshake::ConnectError;
use bijou_proto::session::SendRefused;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use bijou_codec::Wire;
use bijou_framing::websocket::WsFrameError;
use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::websocket::{self, WebSocketTransport, WEBSOCKET_MAX_MESSAGE_LENGTH};
use bijou_net::transport::{Transport, TransportError};
use bijou_net::{Connection, SendError};
use bijou_proto::handshake::{
    HandshakeConfig, HandshakeError, Initiator, Responder, HANDSHAKE_MAX_MESSAGE_LENGTH,
};
use bijou_proto::message::{
    Audience, BatchSyncResponse, BlobMessage, Challenge, CommitId, Fragment, HandshakeMessage,
    LooseCommit, Message, RemoteHeads, SedimentreeId, SignedItem, SyncDiff, SyncMessage,
    SyncResult, VerifiedItem, VerifyItemError,
};
use bijou_proto::session::Received;
use bijou_proto::session::{RejectedItem, VerifiedMessage};
use bijou_proto::time::Clock;
use bijou_proto::time::Now;
use bijou_signing::{ed25519_dalek::SigningKey, Blob, BlobMismatch, Identity, Signed};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

/// Bound on every test.
const LIMIT: Duration = Duration::from_secs(20);
const NOW: u64 = 1_800_000_000;
const SERVICE: &[u8] = b"bijou-websocket-tests";
const TREE: SedimentreeId = SedimentreeId::new([0x5e; 32]);
const OTHER_TREE: SedimentreeId = SedimentreeId::new([0x07; 32]);
/// Key seeds: the client and the server.
const CLIENT: u8 = 1;
const SERVER: u8 = 2;

type Ws = WebSocketTransport<TcpStream>;
type Conn = Connection<Ws>;
/// A raw tungstenite peer (client or server side), no rules enforced.
type Raw = WebSocketStream<TcpStream>;

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

fn config() -> ConnectConfig {
    let mut c = ConnectConfig::default();
    c.clock = Clock::fixed(NOW);
    c.timeout = Duration::from_secs(5);
    c
}

fn short_timeout() -> ConnectConfig {
    let mut c = config();
    c.timeout = Duration::from_millis(300);
    c
}

fn responder() -> Responder {
    Responder::new(HandshakeConfig::default()).with_service_name(SERVICE)
}

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f).await.expect("test bounded")
}

async fn bind() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    (listener, addr)
}

fn url(addr: SocketAddr) -> String {
    format!("ws://{addr}/")
}

/// Our server: one TCP connection, the WebSocket upgrade, then
/// `Connection::accept`.
fn serve(listener: TcpListener, responder: Responder) -> JoinHandle<Result<Conn, ConnectError>> {
    serve_with(listener, responder, config())
}

fn serve_with(
    listener: TcpListener,
    responder: Responder,
    config: ConnectConfig,
) -> JoinHandle<Result<Conn, ConnectError>> {
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("tcp accept");
        let ws = websocket::accept(tcp).await.expect("websocket upgrade");
        Connection::accept(ws, &key(SERVER), &responder, &config).await
    })
}

/// Our client and our server, connected over loopback.
async fn pair_with(audience: Audience) -> (Conn, Conn) {
    let (listener, addr) = bind().await;
    let server = serve(listener, responder());
    let transport = websocket::connect(&url(addr)).await.expect("connect");
    let client = Connection::connect(transport, &key(CLIENT), audience, &config())
        .await
        .expect("client handshake");
    let server = server.await.expect("join").expect("server handshake");
    (client, server)
}

async fn pair() -> (Conn, Conn) {
    pair_with(Audience::Known(key(SERVER).peer_id())).await
}

/// A raw client, upgraded, that has sent nothing yet.
async fn raw_client(addr: SocketAddr) -> Raw {
    let tcp = TcpStream::connect(addr).await.expect("tcp connect");
    tokio_tungstenite::client_async(url(addr), tcp)
        .await
        .expect("raw upgrade")
        .0
}

/// A raw server side: accepts one connection and upgrades it.
async fn raw_server(listener: &TcpListener) -> Raw {
    let (tcp, _) = listener.accept().await.expect("tcp accept");
    tokio_tungstenite::accept_async(tcp)
        .await
        .expect("raw upgrade")
}

/// The next binary message a raw peer receives.
async fn next_binary<S>(raw: &mut WebSocketStream<S>) -> Bytes
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        match raw.next().await {
            Some(Ok(WsMessage::Binary(b))) => return b,
            Some(Ok(WsMessage::Ping(_) | WsMessage::Pong(_))) => {}
            other => panic!("expected a binary message, got {other:?}"),
        }
    }
}

/// A raw client that completed an honest handshake (sans-IO initiator)
/// with our server, and our server's connection: the raw side may now
/// misbehave after authentication.
async fn authenticated_raw() -> (Raw, Conn) {
    let (listener, addr) = bind().await;
    let server = serve(listener, responder());
    let mut raw = raw_client(addr).await;
    let initiator = Initiator::new(
        &key(CLIENT),
        Audience::Known(key(SERVER).peer_id()),
        Now::from_secs(NOW),
        [7; 16],
    )
    .expect("challenge");
    raw.send(WsMessage::Binary(initiator.challenge().clone()))
        .await
        .expect("send challenge");
    let reply = next_binary(&mut raw).await;
    initiator.receive(reply).expect("raw side authenticated");
    let server = server.await.expect("join").expect("server handshake");
    assert_eq!(server.remote_peer(), key(CLIENT).peer_id());
    (raw, server)
}

/// What a raw peer sees after our side failed: the close frame's code, or
/// how the connection ended without one.
#[derive(Debug, PartialEq)]
enum Observed {
    Close(Option<CloseCode>),
    Ended,
    Error(String),
}

async fn observe_end<S>(raw: &mut S) -> Observed
where
    S: futures::Stream<Item = Result<WsMessage, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        match raw.next().await {
            Some(Ok(WsMessage::Close(frame))) => return Observed::Close(frame.map(|f| f.code)),
            Some(Ok(_)) => {}
            Some(Err(e)) => return Observed::Error(e.to_string()),
            None => return Observed::Ended,
        }
    }
}

fn commit_item(signer: u8, tree: SedimentreeId, i: u32, blob: Blob) -> SignedItem<LooseCommit> {
    let mut head = [0u8; 32];
    head[..4].copy_from_slice(&i.to_be_bytes());
    head[4] = signer;
    let commit = LooseCommit::new(tree, CommitId::new(head), [], blob.meta());
    SignedItem::new(Signed::seal(&key(signer), &commit).expect("seal"), blob)
}

fn blob(i: u32) -> Blob {
    Blob::from(format!("blob number {i:04}").into_bytes())
}

/// A signed LooseCommit message for `TREE`.
fn commit_msg(signer: u8, i: u32) -> Message {
    Message::Sync(SyncMessage::LooseCommit(BlobMessage {
        id: TREE,
        sender_heads: RemoteHeads::default(),
        item: commit_item(signer, TREE, i, blob(i)),
    }))
}

/// Asserts `received` is exactly `sent`, byte for byte, with its one
/// commit verified as signed by `signer` over `blob(i)`.
fn assert_commit(received: Received, sent: &Message, signer: u8, i: u32) {
    assert_eq!(received.bytes, sent.encode().expect("encode"));
    let verified = received
        .result
        .expect("verified")
        .into_sync()
        .expect("a sync message");
    assert_eq!(&Message::Sync(verified.message.clone()), sent);
    assert!(verified.rejected.is_empty());
    match verified.items.as_slice() {
        [VerifiedItem::Commit(commit, b)] => {
            assert_eq!(commit.peer_id(), key(signer).peer_id());
            assert_eq!(commit.payload().sedimentree_id(), TREE);
            assert_eq!(b.blob().as_bytes(), blob(i).as_bytes());
        }
        other => panic!("expected one verified commit, got {other:?}"),
    }
}

async fn recv_commit(conn: &mut Conn, sent: &Message, signer: u8, i: u32) {
    let received = conn.next().await.expect("a message").expect("transport");
    assert_commit(received, sent, signer, i);
}

fn challenge_message() -> Message {
    let challenge = Challenge::new(Audience::Known(key(SERVER).peer_id()), NOW, [9; 16]);
    Message::Handshake(HandshakeMessage::Challenge(
        Signed::seal(&key(CLIENT), &challenge).expect("seal"),
    ))
}

// ---- 1. happy path ---------------------------------------------------------

/// Our client and server over real loopback sockets, addressed by
/// discovery (service name) and by key: signed commits both ways, through
/// `send` and `send_all`, verified and byte-identical; then a clean close.
#[tokio::test]
async fn signed_commits_flow_both_ways_over_loopback_websocket() {
    bounded(async {
        for audience in [
            Audience::discover(SERVICE),
            Audience::Known(key(SERVER).peer_id()),
        ] {
            let (mut client, mut server) = pair_with(audience).await;
            assert_eq!(client.remote_peer(), key(SERVER).peer_id());
            assert_eq!(server.remote_peer(), key(CLIENT).peer_id());
            assert_eq!(
                client
                    .authenticated()
                    .expect("authenticated")
                    .challenge_digest(),
                server
                    .authenticated()
                    .expect("authenticated")
                    .challenge_digest()
            );
            for conn in [&client, &server] {
                assert_eq!(
                    conn.get_ref().max_message_length(),
                    WEBSOCKET_MAX_MESSAGE_LENGTH
                );
            }

            // Client to server: one with `send`, three with `send_all`.
            let first = commit_msg(CLIENT, 0);
            client.send(&first).await.expect("send");
            recv_commit(&mut server, &first, CLIENT, 0).await;
            let batch: Vec<Message> = (1..4).map(|i| commit_msg(CLIENT, i)).collect();
            client
                .send_all(&mut futures::stream::iter(
                    batch.clone().into_iter().map(Ok::<_, SendError>),
                ))
                .await
                .expect("send_all");
            for (i, sent) in (1..4).zip(&batch) {
                recv_commit(&mut server, sent, CLIENT, i).await;
            }

            // Server to client, and the received bytes forwarded back untouched.
            let reply = commit_msg(SERVER, 10);
            server.send(reply.clone()).await.expect("send");
            let received = client.next().await.expect("a message").expect("transport");
            let bytes = received.bytes.clone();
            assert_commit(received, &reply, SERVER, 10);
            client.send_bytes(bytes).await.expect("forward");
            recv_commit(&mut server, &reply, SERVER, 10).await;

            // A clean close ends the other side's stream. The client's own
            // stream ends when the server drops the socket (tungstenite's
            // client waits for the TCP end after the close handshake).
            client.close().await.expect("close");
            assert!(server.next().await.is_none());
            assert!(server.next().await.is_none());
            drop(server);
            assert!(client.next().await.is_none());
        }
    })
    .await;
}

// ---- 2a. text messages -----------------------------------------------------

/// A text message after the handshake ends the stream with
/// `TextMessage { len }`, then `None`; the peer gets a 1003 close.
#[tokio::test]
async fn text_message_after_handshake_is_a_typed_error_and_a_1003_close() {
    bounded(async {
        let (mut raw, mut server) = authenticated_raw().await;
        raw.send(WsMessage::Text("not binary".into()))
            .await
            .expect("send text");
        assert!(matches!(
            server.next().await,
            Some(Err(TransportError::WebSocket(WsFrameError::TextMessage {
                len: 10
            })))
        ));
        assert!(server.next().await.is_none());
        assert!(server.next().await.is_none());
        assert_eq!(
            observe_end(&mut raw).await,
            Observed::Close(Some(CloseCode::Unsupported))
        );
    })
    .await;
}

/// A text message as the challenge: the responder fails with
/// `Transport(WebSocket(TextMessage))`, and the peer gets a 1003 close.
#[tokio::test]
async fn text_message_as_the_challenge_is_a_typed_handshake_error() {
    bounded(async {
        let (listener, addr) = bind().await;
        let server = serve(listener, responder());
        let mut raw = raw_client(addr).await;
        raw.send(WsMessage::Text("hello".into()))
            .await
            .expect("send text");
        let result = server.await.expect("join");
        assert!(
            matches!(
                result,
                Err(ConnectError::Transport(TransportError::WebSocket(
                    WsFrameError::TextMessage { len: 5 }
                )))
            ),
            "{:?}",
            result.map(|_| ())
        );
        assert_eq!(
            observe_end(&mut raw).await,
            Observed::Close(Some(CloseCode::Unsupported))
        );
    })
    .await;
}

// ---- 2b. over 50 MiB after the handshake ----------------------------------

/// One binary message of 50 MiB + 1 after the handshake is refused from its
/// frame header (`TooLarge` with the announced length), before its payload
/// is buffered; the stream ends and the peer gets a 1009 close.
#[tokio::test]
async fn message_over_50_mib_after_handshake_is_too_large() {
    bounded(async {
        let (raw, mut server) = authenticated_raw().await;
        let (mut tx, mut rx) = raw.split();
        let big = Bytes::from(vec![0u8; WEBSOCKET_MAX_MESSAGE_LENGTH + 1]);
        // The send cannot finish (we stop reading); it ends with an error
        // once our side drops the socket.
        let sender = tokio::spawn(async move { tx.send(WsMessage::Binary(big)).await });
        match server.next().await {
            Some(Err(TransportError::TooLarge { len, max })) => {
                assert_eq!(len, WEBSOCKET_MAX_MESSAGE_LENGTH as u64 + 1);
                assert_eq!(max, WEBSOCKET_MAX_MESSAGE_LENGTH);
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        assert!(server.next().await.is_none());
        let observed = observe_end(&mut rx).await;
        assert_eq!(observed, Observed::Close(Some(CloseCode::Size)));
        drop(server);
        // The sender task ends (with a write error or after the close); we
        // only need it not to hang.
        let _ = sender.await.expect("join");
    })
    .await;
}

// ---- 2c. over 256 bytes before authentication ------------------------------

/// A 300-byte challenge: `ConnectError::Handshake(HandshakeError::TooLarge { len: 300, max: 256 })`,
/// and a 1009 close.
#[tokio::test]
async fn challenge_over_256_bytes_is_too_large() {
    bounded(async {
        let (listener, addr) = bind().await;
        let server = serve(listener, responder());
        let mut raw = raw_client(addr).await;
        raw.send(WsMessage::Binary(Bytes::from(vec![0x53; 300])))
            .await
            .expect("send");
        let result = server.await.expect("join");
        assert!(
            matches!(
                result,
                Err(ConnectError::Handshake(HandshakeError::TooLarge {
                    len: 300,
                    max: HANDSHAKE_MAX_MESSAGE_LENGTH
                }))
            ),
            "{:?}",
            result.map(|_| ())
        );
        assert_eq!(
            observe_end(&mut raw).await,
            Observed::Close(Some(CloseCode::Size))
        );
    })
    .await;
}

/// A 4 MiB binary message before authentication: `TooLarge` too, refused
/// from its frame header (`len` is the announced 4 MiB) before any of its
/// payload is buffered, and a 1009 close.
#[tokio::test]
async fn four_mib_before_authentication_is_refused_at_the_frame_header() {
    bounded(async {
        let (listener, addr) = bind().await;
        let server = serve(listener, responder());
        let raw = raw_client(addr).await;
        let (mut tx, mut rx) = raw.split();
        let sender =
            tokio::spawn(
                async move { tx.send(WsMessage::Binary(vec![1u8; 4 << 20].into())).await },
            );
        let result = server.await.expect("join");
        match result {
            Err(ConnectError::Handshake(HandshakeError::TooLarge { len, max })) => {
                assert_eq!(max, HANDSHAKE_MAX_MESSAGE_LENGTH);
                assert_eq!(len, 4 << 20);
            }
            other => panic!("expected TooLarge, got {:?}", other.map(|_| ())),
        }
        assert_eq!(
            observe_end(&mut rx).await,
            Observed::Close(Some(CloseCode::Size))
        );
        let _ = sender.await.expect("join");
    })
    .await;
}

/// A fake server answering the challenge with 300 bytes: the initiator
/// fails with `TooLarge { len: 300, max: 256 }`.
#[tokio::test]
async fn response_over_256_bytes_is_too_large_at_the_initiator() {
    bounded(async {
        let (listener, addr) = bind().await;
        let fake = tokio::spawn(async move {
            let mut raw = raw_server(&listener).await;
            let challenge = next_binary(&mut raw).await;
            raw.send(WsMessage::Binary(Bytes::from(vec![0x53; 300])))
                .await
                .expect("send");
            (raw, challenge)
        });
        let transport = websocket::connect(&url(addr)).await.expect("connect");
        let result = Connection::connect(
            transport,
            &key(CLIENT),
            Audience::Known(key(SERVER).peer_id()),
            &config(),
        )
        .await;
        assert!(
            matches!(
                result,
                Err(ConnectError::Handshake(HandshakeError::TooLarge {
                    len: 300,
                    max: HANDSHAKE_MAX_MESSAGE_LENGTH
                }))
            ),
            "{:?}",
            result.map(|_| ())
        );
        let (mut raw, challenge) = fake.await.expect("join");
        assert!(matches!(
            HandshakeMessage::decode(challenge),
            Ok(HandshakeMessage::Challenge(_))
        ));
        assert_eq!(
            observe_end(&mut raw).await,
            Observed::Close(Some(CloseCode::Size))
        );
    })
    .await;
}

// ---- 2d. a close in the middle of the handshake -----------------------------

/// The peer upgrades, then closes, with a close frame or by dropping the
/// socket: `Closed { waiting_for: "challenge" }` either way.
#[tokio::test]
async fn close_before_the_challenge_at_the_responder() {
    bounded(async {
        // A close frame.
        let (listener, addr) = bind().await;
        let server = serve(listener, responder());
        let mut raw = raw_client(addr).await;
        raw.close(None).await.expect("close");
        let result = server.await.expect("join");
        assert!(
            matches!(
                result,
                Err(ConnectError::Closed {
                    waiting_for: "challenge"
                })
            ),
            "{:?}",
            result.map(|_| ())
        );

        // The socket dropped, no close frame.
        let (listener, addr) = bind().await;
        let server = serve(listener, responder());
        drop(raw_client(addr).await);
        // A socket dropped without a close frame ends the stream like a
        // close: the handshake names what it was waiting for.
        match server.await.expect("join") {
            Err(ConnectError::Closed {
                waiting_for: "challenge",
            }) => {}
            other => panic!("expected Closed, got {:?}", other.map(|_| ())),
        }
    })
    .await;
}

/// A fake server reads the challenge, then closes, with a close frame or
/// by dropping the socket: `Closed { waiting_for: "response" }` at the
/// initiator either way.
#[tokio::test]
async fn close_before_the_response_at_the_initiator() {
    bounded(async {
        for with_close_frame in [true, false] {
            let (listener, addr) = bind().await;
            let fake = tokio::spawn(async move {
                let mut raw = raw_server(&listener).await;
                let _challenge = next_binary(&mut raw).await;
                if with_close_frame {
                    raw.close(None).await.expect("close");
                }
            });
            let transport = websocket::connect(&url(addr)).await.expect("connect");
            let result = Connection::connect(
                transport,
                &key(CLIENT),
                Audience::Known(key(SERVER).peer_id()),
                &config(),
            )
            .await;
            match result {
                Err(ConnectError::Closed {
                    waiting_for: "response",
                }) => {}
                other => panic!(
                    "close frame {with_close_frame}: unexpected {:?}",
                    other.map(|_| ())
                ),
            }
            fake.await.expect("join");
        }
    })
    .await;
}

// ---- 2e. silence ------------------------------------------------------------

/// An in-memory pipe for the silence tests: (our end, the raw peer's end).
fn memory_pipe() -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
    tokio::io::duplex(1 << 16)
}

/// The URL the in-memory upgrades ask for (nothing resolves it).
const MEMORY_URL: &str = "ws://bijou.test/";

/// A peer that upgrades and never sends a challenge: `Timeout` after the
/// configured 300 ms.
#[tokio::test(start_paused = true)]
async fn silent_initiator_times_out_at_the_responder() {
    bounded(async {
        let (ours, theirs) = memory_pipe();
        let server = tokio::spawn(async move {
            let ws = websocket::accept(ours).await.expect("websocket upgrade");
            Connection::accept(ws, &key(SERVER), &responder(), &short_timeout()).await
        });
        let (raw, _) = tokio_tungstenite::client_async(MEMORY_URL, theirs)
            .await
            .expect("raw upgrade");
        let started = tokio::time::Instant::now();
        let result = server.await.expect("join");
        assert!(
            matches!(result, Err(ConnectError::Timeout { after, .. }) if after == Duration::from_millis(300)),
            "{:?}",
            result.map(|_| ())
        );
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(300) && elapsed < Duration::from_millis(310),
            "timed out when due: {elapsed:?}"
        );
        drop(raw);
    })
    .await;
}

/// A fake server that reads the challenge and never answers: `Timeout` at
/// the initiator.
#[tokio::test(start_paused = true)]
async fn silent_responder_times_out_at_the_initiator() {
    bounded(async {
        let (ours, theirs) = memory_pipe();
        let fake = tokio::spawn(async move {
            let mut raw = tokio_tungstenite::accept_async(theirs)
                .await
                .expect("raw upgrade");
            let challenge = next_binary(&mut raw).await;
            // Keep the pipe open and silent until the initiator gives up.
            let end = observe_end(&mut raw).await;
            (challenge, end)
        });
        let transport = websocket::client(ours, MEMORY_URL)
            .await
            .expect("upgrade");
        let started = tokio::time::Instant::now();
        let result = Connection::connect(
            transport,
            &key(CLIENT),
            Audience::Known(key(SERVER).peer_id()),
            &short_timeout(),
        )
        .await;
        assert!(
            matches!(result, Err(ConnectError::Timeout { after, .. }) if after == Duration::from_millis(300)),
            "{:?}",
            result.map(|_| ())
        );
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(300) && elapsed < Duration::from_millis(310),
            "timed out when due: {elapsed:?}"
        );
        drop(result);
        let (challenge, _end) = fake.await.expect("join");
        assert!(matches!(
            HandshakeMessage::decode(challenge),
            Ok(HandshakeMessage::Challenge(_))
        ));
    })
    .await;
}

// ---- 3. ping / pong ---------------------------------------------------------

/// A ping between two messages: both messages are delivered, the peer
/// receives the pong, and the connection still carries messages back.
#[tokio::test]
async fn ping_mid_session_is_answered_and_messages_keep_flowing() {
    bounded(async {
        let (mut raw, mut server) = authenticated_raw().await;
        let (one, two) = (commit_msg(CLIENT, 1), commit_msg(CLIENT, 2));
        raw.feed(WsMessage::Binary(one.encode().expect("encode")))
            .await
            .expect("feed");
        raw.feed(WsMessage::Ping(Bytes::from_static(b"are you there")))
            .await
            .expect("feed");
        raw.feed(WsMessage::Binary(two.encode().expect("encode")))
            .await
            .expect("feed");
        raw.flush().await.expect("flush");
        recv_commit(&mut server, &one, CLIENT, 1).await;
        recv_commit(&mut server, &two, CLIENT, 2).await;
        // The pong went out while the server read (tungstenite flushes it on
        // the next read or write); a reply follows it.
        let reply = commit_msg(SERVER, 3);
        server.send(&reply).await.expect("send");
        match raw.next().await {
            Some(Ok(WsMessage::Pong(payload))) => assert_eq!(&payload[..], b"are you there"),
            other => panic!("expected a pong, got {other:?}"),
        }
        assert_eq!(next_binary(&mut raw).await, reply.encode().expect("encode"));
    })
    .await;
}

// ---- 4. nothing verified is lost at a disconnect -----------------------------

const K: u32 = 25;

async fn assert_k_commits(server: &mut Conn) {
    for i in 0..K {
        recv_commit(server, &commit_msg(CLIENT, i), CLIENT, i).await;
    }
}

/// The peer sends K messages and closes at once (close frame, then the
/// socket dropped): all K arrive verified, then `None`.
#[tokio::test]
async fn k_messages_then_close_frame_are_all_delivered() {
    bounded(async {
        let (mut raw, mut server) = authenticated_raw().await;
        for i in 0..K {
            raw.feed(WsMessage::Binary(
                commit_msg(CLIENT, i).encode().expect("encode"),
            ))
            .await
            .expect("feed");
        }
        raw.close(None).await.expect("close");
        drop(raw);
        assert_k_commits(&mut server).await;
        assert!(server.next().await.is_none());
        assert!(server.next().await.is_none());
    })
    .await;
}

/// The peer sends K messages and drops the socket without a close frame:
/// all K arrive verified, then the reset error, then `None`.
#[tokio::test]
async fn k_messages_then_abrupt_drop_are_all_delivered() {
    bounded(async {
        let (mut raw, mut server) = authenticated_raw().await;
        for i in 0..K {
            raw.feed(WsMessage::Binary(
                commit_msg(CLIENT, i).encode().expect("encode"),
            ))
            .await
            .expect("feed");
        }
        raw.flush().await.expect("flush");
        drop(raw);
        assert_k_commits(&mut server).await;
        // A dropped socket ends the stream like a close.
        assert!(server.next().await.is_none());
        assert!(server.next().await.is_none());
    })
    .await;
}

/// Our own client sends K messages, closes and is dropped: all K, then
/// `None`.
#[tokio::test]
async fn k_messages_from_our_client_then_close_are_all_delivered() {
    bounded(async {
        let (mut client, mut server) = pair().await;
        let msgs: Vec<Message> = (0..K).map(|i| commit_msg(CLIENT, i)).collect();
        client
            .send_all(&mut futures::stream::iter(
                msgs.iter().map(Ok::<_, SendError>),
            ))
            .await
            .expect("send_all");
        client.close().await.expect("close");
        drop(client);
        assert_k_commits(&mut server).await;
        assert!(server.next().await.is_none());
    })
    .await;
}

// ---- 5. the Connection API --------------------------------------------------

/// Split into halves used from two tasks, then reunited into a connection
/// that still works.
#[tokio::test]
async fn split_and_reunite_give_back_a_working_connection() {
    bounded(async {
        let (client, mut server) = pair().await;
        let (mut tx, mut rx) = client.split();
        assert_eq!(tx.remote_peer(), key(SERVER).peer_id());
        assert_eq!(tx.local_peer(), key(CLIENT).peer_id());
        assert_eq!(rx.remote_peer(), key(SERVER).peer_id());
        let sent = commit_msg(CLIENT, 1);
        let sending = tokio::spawn(async move {
            tx.send(commit_msg(CLIENT, 1)).await.expect("send");
            tx.feed_bytes(commit_msg(CLIENT, 2).encode().expect("encode"))
                .await
                .expect("feed");
            tx.flush().await.expect("flush");
            tx
        });
        recv_commit(&mut server, &sent, CLIENT, 1).await;
        recv_commit(&mut server, &commit_msg(CLIENT, 2), CLIENT, 2).await;
        let reply = commit_msg(SERVER, 3);
        server.send(&reply).await.expect("send");
        let received = rx.recv().await.expect("transport").expect("a message");
        assert_commit(received, &reply, SERVER, 3);
        let tx = sending.await.expect("join");

        let mut client = tx.reunite(rx).expect("same connection");
        assert_eq!(client.remote_peer(), key(SERVER).peer_id());
        let again = commit_msg(CLIENT, 4);
        client.send(&again).await.expect("send");
        recv_commit(&mut server, &again, CLIENT, 4).await;
        server.send(&reply).await.expect("send");
        let received = client.recv().await.expect("transport").expect("a message");
        assert_commit(received, &reply, SERVER, 3);
    })
    .await;
}

/// Halves of two different connections do not reunite; the error gives
/// both back, and each reunites with its own half.
#[tokio::test]
async fn reuniting_halves_of_different_connections_is_an_error() {
    bounded(async {
        let (client_a, mut server_a) = pair().await;
        let (client_b, _server_b) = pair().await;
        let (tx_a, rx_a) = client_a.split();
        let (tx_b, rx_b) = client_b.split();
        let err = tx_a.reunite(rx_b).expect_err("different connections");
        assert_eq!(
            err.to_string(),
            "tried to reunite the halves of two different connections"
        );
        let bijou_net::ReuniteError(tx_a, rx_b) = *err;
        let mut client_a = tx_a.reunite(rx_a).expect("same connection a");
        let _client_b = tx_b.reunite(rx_b).expect("same connection b");
        let sent = commit_msg(CLIENT, 5);
        client_a.send(&sent).await.expect("send");
        recv_commit(&mut server_a, &sent, CLIENT, 5).await;
    })
    .await;
}

/// `into_inner` hands back the transport, raised to 50 MiB, still usable
/// as a plain `Sink<Bytes>`.
#[tokio::test]
async fn into_inner_returns_the_working_transport() {
    bounded(async {
        let (client, mut server) = pair().await;
        let local = client.get_ref().get_ref().local_addr().expect("addr");
        let mut transport: Ws = client.into_inner();
        assert_eq!(transport.get_ref().local_addr().expect("addr"), local);
        assert_eq!(transport.max_message_length(), WEBSOCKET_MAX_MESSAGE_LENGTH);
        let sent = commit_msg(CLIENT, 6);
        transport
            .send(sent.encode().expect("encode"))
            .await
            .expect("send");
        recv_commit(&mut server, &sent, CLIENT, 6).await;
    })
    .await;
}

/// A handshake message after the handshake is refused before anything is
/// sent, as a message and as bytes; the connection carries on.
#[tokio::test]
async fn handshake_message_after_the_handshake_is_refused() {
    bounded(async {
        let (mut client, mut server) = pair().await;
        let challenge = challenge_message();
        assert!(matches!(
            client.send(&challenge).await,
            Err(SendError::Refused(SendRefused::HandshakeAfterHandshake {
                kind: "challenge"
            }))
        ));
        assert!(matches!(
            client.send(challenge.clone()).await,
            Err(SendError::Refused(SendRefused::HandshakeAfterHandshake {
                kind: "challenge"
            }))
        ));
        assert!(matches!(
            client.send_bytes(challenge.encode().expect("encode")).await,
            Err(SendError::Refused(SendRefused::HandshakeAfterHandshake {
                kind: "handshake message"
            }))
        ));
        // Nothing of those went out: the next message is the first one the
        // server sees.
        let sent = commit_msg(CLIENT, 7);
        client.send(&sent).await.expect("send");
        recv_commit(&mut server, &sent, CLIENT, 7).await;
    })
    .await;
}

/// `send_all` of messages, and `feed_bytes` + `flush`: nothing is lost or
/// reordered.
#[tokio::test]
async fn send_all_and_feed_then_flush_deliver_in_order() {
    bounded(async {
        let (mut client, mut server) = pair().await;
        let msgs: Vec<Message> = (0..8).map(|i| commit_msg(CLIENT, i)).collect();
        let mut stream = futures::stream::iter(msgs.clone().into_iter().map(Ok::<_, SendError>));
        client.send_all(&mut stream).await.expect("send_all");
        for (i, sent) in (0..8).zip(&msgs) {
            recv_commit(&mut server, sent, CLIENT, i).await;
        }
        for i in 8..12 {
            client
                .feed_bytes(commit_msg(CLIENT, i).encode().expect("encode"))
                .await
                .expect("feed");
        }
        client.flush().await.expect("flush");
        for i in 8..12 {
            recv_commit(&mut server, &commit_msg(CLIENT, i), CLIENT, i).await;
        }
    })
    .await;
}

// ---- 6. a BatchSyncResponse with good and bad items ------------------------

fn fragment_item(tree: SedimentreeId, i: u8, blob: Blob) -> SignedItem<Fragment> {
    let fragment = Fragment::new(
        tree,
        CommitId::new([i; 32]),
        [CommitId::new([i.wrapping_add(1); 32])],
        [],
        blob.meta(),
    );
    SignedItem::new(Signed::seal(&key(9), &fragment).expect("seal"), blob)
}

/// Good and bad items in one diff: the good ones verified in `items`, the
/// bad ones in `rejected` with their wire index and reason.
#[tokio::test]
async fn batch_response_reports_bad_items_by_index_and_keeps_the_good() {
    bounded(async {
        let (mut client, mut server) = pair().await;
        let good0 = commit_item(9, TREE, 0, blob(0));
        // Signed for another document.
        let scoped = commit_item(9, OTHER_TREE, 1, blob(1));
        // Signed over blob(2), carrying a longer blob.
        let mut long = commit_item(9, TREE, 2, blob(2));
        long = SignedItem::new(
            long.signed().clone(),
            Blob::from(b"a longer blob than signed".to_vec()),
        );
        // Signed over blob(3), carrying another blob of the same length.
        let swapped = commit_item(9, TREE, 3, blob(3));
        let swapped = SignedItem::new(swapped.signed().clone(), blob(33));
        let good4 = commit_item(9, TREE, 4, blob(4));
        let good_fragment = fragment_item(TREE, 5, blob(5));
        let bad_fragment = fragment_item(TREE, 6, blob(6));
        let bad_fragment =
            SignedItem::new(bad_fragment.signed().clone(), Blob::from(b"x".to_vec()));
        let diff = SyncDiff::new(
            vec![good0, scoped, long, swapped, good4],
            vec![good_fragment, bad_fragment],
            [],
            [],
        );
        assert_eq!((diff.commits().len(), diff.fragments().len()), (5, 2));
        let msg = Message::Sync(SyncMessage::BatchSyncResponse(BatchSyncResponse {
            requestor: key(SERVER).peer_id(),
            nonce: 42,
            id: TREE,
            result: SyncResult::Ok(diff),
            responder_heads: RemoteHeads::default(),
        }));
        client.send(&msg).await.expect("send");
        let received = server.next().await.expect("a message").expect("transport");
        assert_eq!(received.bytes, msg.encode().expect("encode"));
        let VerifiedMessage {
            message,
            items,
            rejected,
        } = received
            .result
            .expect("delivered, with rejected items")
            .into_sync()
            .expect("a sync message");
        assert_eq!(Message::Sync(message), msg);

        let verified: Vec<(bool, u8)> = items
            .iter()
            .map(|item| match item {
                VerifiedItem::Commit(c, _) => (true, c.payload().head().as_bytes()[3]),
                VerifiedItem::Fragment(f, _) => (false, f.payload().head().as_bytes()[0]),
            })
            .collect();
        assert_eq!(verified, [(true, 0), (true, 4), (false, 5)]);

        let blob_len = |b: &Blob| b.len() as u64;
        assert_eq!(rejected.len(), 4, "{rejected:?}");
        assert_eq!(
            rejected[0],
            RejectedItem {
                index: 1,
                error: VerifyItemError::ScopeMismatch {
                    outer: TREE,
                    signed: OTHER_TREE
                }
            }
        );
        assert_eq!(
            rejected[1],
            RejectedItem {
                index: 2,
                error: VerifyItemError::Blob(BlobMismatch::Size {
                    expected: blob_len(&blob(2)),
                    actual: 25
                })
            }
        );
        assert_eq!(rejected[2].index, 3);
        assert!(
            matches!(
                rejected[2].error,
                VerifyItemError::Blob(BlobMismatch::Digest { expected, actual })
                    if expected == blob(3).digest() && actual == blob(33).digest()
            ),
            "{:?}",
            rejected[2]
        );
        assert_eq!(
            rejected[3],
            RejectedItem {
                index: 6,
                error: VerifyItemError::Blob(BlobMismatch::Size {
                    expected: blob_len(&blob(6)),
                    actual: 1
                })
            }
        );

        // The connection is still up.
        let sent = commit_msg(CLIENT, 8);
        client.send(&sent).await.expect("send");
        recv_commit(&mut server, &sent, CLIENT, 8).await;
    })
    .await;
}
