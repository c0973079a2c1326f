//! Our long-poll client and server, end to end over loopback TCP, through a
//! proxy that breaks the connection right after the server has written a
//! `/lp/recv` response, so the response never reaches the client: the
//! message is delivered anyway, once, in order (the acknowledgement
//! protocol of `net::transport::longpoll`). Subduction's server would have
//! lost it: it takes a message off its queue when it writes the response.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bijou_codec::Wire;
use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::longpoll::{self, LongPollServer, ServerConfig};
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{Audience, CommitId, Message, SedimentreeId, SyncMessage};
use bijou_proto::session::Delivered;
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::{Blob, Identity};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const LIMIT: Duration = Duration::from_secs(30);
const MESSAGES: u8 = 10;
/// The sequence number whose response the proxy drops.
const DROPPED: &[u8] = b"x-bijou-seq: 4\r\n";

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

/// Our server on an ephemeral port: each TCP connection served as HTTP.
async fn our_server() -> (std::net::SocketAddr, longpoll::IncomingSessions) {
    let (server, sessions) = LongPollServer::new(ServerConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(server.clone().serve_connection(tcp));
        }
    });
    (addr, sessions)
}

/// A proxy to `upstream` that forwards everything, except that the first
/// time the server's bytes hold the response head carrying [`DROPPED`], it
/// resets both connections instead of forwarding them. Counts the heads
/// carrying [`DROPPED`] it saw.
async fn dropping_proxy(
    upstream: std::net::SocketAddr,
) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let dropped = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&dropped);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(upstream).await else {
                continue;
            };
            tokio::spawn(pipe(client, server, Arc::clone(&counter)));
        }
    });
    (addr, dropped)
}

/// Forwards both ways; see [`dropping_proxy`].
async fn pipe(mut client: TcpStream, mut server: TcpStream, dropped: Arc<AtomicUsize>) {
    let mut up = vec![0u8; 16 * 1024];
    let mut down = vec![0u8; 64 * 1024];
    // The server's last bytes, in case a head arrives in pieces.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        tokio::select! {
            read = client.read(&mut up) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if server.write_all(&up[..n]).await.is_err() {
                        return;
                    }
                }
            },
            read = server.read(&mut down) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    tail.extend_from_slice(&down[..n]);
                    let found = tail.windows(DROPPED.len()).any(|w| w == DROPPED);
                    // Counts every head carrying it; drops the first.
                    if found && dropped.fetch_add(1, Ordering::SeqCst) == 0 {
                        // The server wrote the response; reset both sides
                        // instead of forwarding it.
                        let _ = client.set_zero_linger();
                        let _ = server.set_zero_linger();
                        return;
                    }
                    if client.write_all(&down[..n]).await.is_err() {
                        return;
                    }
                    let keep = tail.len().saturating_sub(DROPPED.len());
                    tail.drain(..keep);
                }
            },
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recv_response_lost_on_its_way_is_delivered_again_once_in_order() {
    tokio::time::timeout(LIMIT, async {
        let (server_addr, mut sessions) = our_server().await;
        let (proxy, dropped) = dropping_proxy(server_addr).await;
        let server_key = key(1);
        let responder = Responder::new(HandshakeConfig::default());
        let config = ConnectConfig::default();
        let (client, server) = tokio::join!(
            async {
                let transport = longpoll::connect(&format!("http://{proxy}"))
                    .await
                    .expect("connect");
                Connection::connect(
                    transport,
                    &key(2),
                    Audience::Known(key(1).peer_id()),
                    &config,
                )
                .await
                .expect("handshake")
            },
            async {
                let session = sessions.accept().await.expect("a session");
                Connection::accept(session, &server_key, &responder, &config)
                    .await
                    .expect("accepted")
            }
        );
        let (mut client, mut server) = (client, server);

        // The server sends MESSAGES commits; the client must receive each
        // exactly once, in order, although one response was lost.
        let tree = SedimentreeId::new([9; 32]);
        let mut sent = Vec::new();
        for n in 1..=MESSAGES {
            let blob = Blob::new(vec![n; 64]);
            let msg =
                SyncMessage::loose_commit(&server_key, tree, CommitId::new([n; 32]), [], blob)
                    .expect("sealed");
            let message = Message::from(msg);
            sent.push(message.encode().expect("encodes"));
            server.send(message).await.expect("sent");
        }
        let mut received = Vec::new();
        while received.len() < sent.len() {
            let got = client.recv().await.expect("no error").expect("a message");
            assert!(
                matches!(got.result, Ok(Delivered::Sync(_))),
                "verified: {:?}",
                got.result
            );
            received.push(got.bytes);
        }
        assert_eq!(received, sent, "each message once, in order");
        // The response of sequence 4 went out twice: lost, then sent again
        // with the same number (and forwarded).
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            2,
            "one response lost, then delivered again"
        );

        // Nothing delivered twice: the next message is a new one.
        let blob = Blob::new(vec![0xEE; 64]);
        let last =
            SyncMessage::loose_commit(&server_key, tree, CommitId::new([0xEE; 32]), [], blob)
                .expect("sealed");
        let last = Message::from(last);
        let last_bytes = last.encode().expect("encodes");
        server.send(last).await.expect("sent");
        let got = client.recv().await.expect("no error").expect("a message");
        assert_eq!(got.bytes, last_bytes, "the next message, not a repeat");
    })
    .await
    .expect("in time");
}
