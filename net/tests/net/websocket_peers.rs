//! Our WebSocket transport against tokio-tungstenite as the peer, in both
//! directions: fragmented messages with a ping between the fragments,
//! multi-megabyte messages both ways, and the close handshake started by
//! either side.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use bijou_net::transport::websocket::{self, WebSocketTransport};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

const LIMIT: Duration = Duration::from_secs(20);

type Ours = WebSocketTransport<TcpStream>;
type Theirs = WebSocketStream<TcpStream>;

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f).await.expect("test bounded")
}

async fn bind() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    (listener, addr)
}

/// Our server, their client.
async fn our_server() -> (Ours, Theirs) {
    let (listener, addr) = bind().await;
    let (ours, theirs) = tokio::join!(
        async {
            let (tcp, _) = listener.accept().await.expect("accept");
            websocket::accept(tcp).await.expect("our upgrade")
        },
        async {
            let tcp = TcpStream::connect(addr).await.expect("connect");
            tokio_tungstenite::client_async(format!("ws://{addr}/"), tcp)
                .await
                .expect("their upgrade")
                .0
        }
    );
    (ours, theirs)
}

/// Our client, their server.
async fn our_client() -> (Ours, Theirs) {
    let (listener, addr) = bind().await;
    let url = format!("ws://{addr}/");
    let (theirs, ours) = tokio::join!(
        async {
            let (tcp, _) = listener.accept().await.expect("accept");
            tokio_tungstenite::accept_async(tcp)
                .await
                .expect("their upgrade")
        },
        websocket::connect(&url)
    );
    (ours.expect("our upgrade"), theirs)
}

fn fragment(data: &'static [u8], first: bool, last: bool) -> WsMessage {
    let opcode = if first { Data::Binary } else { Data::Continue };
    WsMessage::Frame(Frame::message(data, OpCode::Data(opcode), last))
}

fn big(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[tokio::test]
async fn their_fragmented_message_with_a_ping_inside_is_reassembled() {
    bounded(async {
        let (mut ours, mut theirs) = our_server().await;
        theirs.feed(fragment(b"frag", true, false)).await.unwrap();
        theirs
            .feed(WsMessage::Ping(Bytes::from_static(b"mid")))
            .await
            .unwrap();
        theirs.feed(fragment(b"ment", false, false)).await.unwrap();
        theirs.feed(fragment(b"ed", false, true)).await.unwrap();
        theirs
            .feed(WsMessage::Binary(Bytes::from_static(b"whole")))
            .await
            .unwrap();
        theirs.flush().await.unwrap();
        assert_eq!(&ours.next().await.unwrap().unwrap()[..], b"fragmented");
        assert_eq!(&ours.next().await.unwrap().unwrap()[..], b"whole");
        match theirs.next().await {
            Some(Ok(WsMessage::Pong(p))) => assert_eq!(&p[..], b"mid"),
            other => panic!("expected the pong, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn multi_megabyte_messages_both_ways_with_our_server() {
    bounded(async {
        let (mut ours, mut theirs) = our_server().await;
        let up = big(3 << 20, 1);
        let down = big((5 << 20) + 3, 2);
        let (sent, received) =
            tokio::join!(theirs.send(WsMessage::Binary(up.clone())), ours.next());
        sent.unwrap();
        assert_eq!(received.unwrap().unwrap(), up);
        let (sent, received) = tokio::join!(ours.send(down.clone()), theirs.next());
        sent.unwrap();
        match received {
            Some(Ok(WsMessage::Binary(b))) => assert_eq!(b, down),
            other => panic!("{other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn multi_megabyte_messages_both_ways_with_our_client() {
    bounded(async {
        let (mut ours, mut theirs) = our_client().await;
        let up = big((4 << 20) + 1, 3);
        let down = big(2 << 20, 4);
        let (sent, received) = tokio::join!(ours.send(up.clone()), theirs.next());
        sent.unwrap();
        match received {
            Some(Ok(WsMessage::Binary(b))) => assert_eq!(b, up),
            other => panic!("{other:?}"),
        }
        let (sent, received) =
            tokio::join!(theirs.send(WsMessage::Binary(down.clone())), ours.next());
        sent.unwrap();
        assert_eq!(received.unwrap().unwrap(), down);
    })
    .await;
}

#[tokio::test]
async fn their_server_pings_and_our_client_answers() {
    bounded(async {
        let (mut ours, mut theirs) = our_client().await;
        theirs
            .feed(WsMessage::Ping(Bytes::from_static(b"hello?")))
            .await
            .unwrap();
        theirs
            .feed(WsMessage::Binary(Bytes::from_static(b"after the ping")))
            .await
            .unwrap();
        theirs.flush().await.unwrap();
        assert_eq!(&ours.next().await.unwrap().unwrap()[..], b"after the ping");
        match theirs.next().await {
            Some(Ok(WsMessage::Pong(p))) => assert_eq!(&p[..], b"hello?"),
            other => panic!("expected the pong, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn they_close_and_we_answer_after_every_message() {
    bounded(async {
        let (mut ours, mut theirs) = our_server().await;
        for i in 0..10u8 {
            theirs
                .feed(WsMessage::Binary(Bytes::from(vec![i; 100])))
                .await
                .unwrap();
        }
        theirs
            .close(Some(CloseFrame {
                code: CloseCode::Away,
                reason: "done".into(),
            }))
            .await
            .unwrap();
        for i in 0..10u8 {
            assert_eq!(ours.next().await.unwrap().unwrap(), vec![i; 100]);
        }
        assert!(ours.next().await.is_none());
        // Their side sees our answer (their code echoed), then the end.
        loop {
            match theirs.next().await {
                Some(Ok(WsMessage::Close(frame))) => {
                    assert_eq!(frame.map(|f| f.code), Some(CloseCode::Away));
                }
                Some(Ok(other)) => panic!("unexpected {other:?}"),
                Some(Err(_)) | None => break,
            }
        }
    })
    .await;
}

#[tokio::test]
async fn we_close_and_they_answer() {
    bounded(async {
        let (mut ours, mut theirs) = our_client().await;
        ours.send(Bytes::from_static(b"last")).await.unwrap();
        ours.close().await.unwrap();
        match theirs.next().await {
            Some(Ok(WsMessage::Binary(b))) => assert_eq!(&b[..], b"last"),
            other => panic!("{other:?}"),
        }
        // tungstenite answers the close by itself while reading.
        match theirs.next().await {
            Some(Ok(WsMessage::Close(frame))) => {
                assert_eq!(frame.map(|f| f.code), Some(CloseCode::Normal));
            }
            other => panic!("expected our close, got {other:?}"),
        }
        let their_end = tokio::spawn(async move { while theirs.next().await.is_some() {} });
        assert!(ours.next().await.is_none());
        their_end.await.unwrap();
    })
    .await;
}

// ---- frames pipelined right behind the HTTP head ----------------------------

/// A client that writes its upgrade request and two frames in one write:
/// the frames read along with the HTTP head are not lost.
#[tokio::test]
async fn frames_pipelined_behind_the_upgrade_request_are_delivered() {
    use bijou_framing::websocket::{encode_frame, OpCode as Op};
    use tokio::io::AsyncWriteExt;
    bounded(async {
        let (listener, addr) = bind().await;
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.expect("accept");
            websocket::accept(tcp).await.expect("our upgrade")
        });
        let mut bytes = bytes::BytesMut::from(
            &b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\n\
               Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
               Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"[..],
        );
        encode_frame(&mut bytes, true, Op::Binary, b"first", Some([1, 2, 3, 4]));
        encode_frame(&mut bytes, true, Op::Binary, &[9; 3000], Some([5, 6, 7, 8]));
        let mut raw = TcpStream::connect(addr).await.expect("connect");
        raw.write_all(&bytes).await.expect("write");
        let mut ours = server.await.expect("join");
        assert_eq!(&ours.next().await.unwrap().unwrap()[..], b"first");
        assert_eq!(ours.next().await.unwrap().unwrap(), vec![9; 3000]);
    })
    .await;
}

/// A server that writes its 101 answer and a frame in one write: our
/// client delivers the frame.
#[tokio::test]
async fn a_frame_pipelined_behind_the_upgrade_answer_is_delivered() {
    use bijou_framing::websocket::{encode_frame, OpCode as Op};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
    bounded(async {
        let (listener, addr) = bind().await;
        let raw_server = tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.expect("accept");
            let mut head = Vec::new();
            while !head.ends_with(b"\r\n\r\n") {
                let mut byte = [0u8; 1];
                tcp.read_exact(&mut byte).await.expect("read");
                head.push(byte[0]);
            }
            let head = String::from_utf8(head).expect("ascii");
            let key = head
                .lines()
                .find_map(|l| {
                    l.strip_prefix("Sec-WebSocket-Key: ")
                        .or_else(|| l.strip_prefix("sec-websocket-key: "))
                })
                .expect("key");
            let mut bytes = bytes::BytesMut::from(
                format!(
                    "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\
                     Upgrade: websocket\r\nSec-WebSocket-Accept: {}\r\n\r\n",
                    derive_accept_key(key.trim().as_bytes())
                )
                .as_bytes(),
            );
            encode_frame(&mut bytes, true, Op::Binary, b"right behind", None);
            tcp.write_all(&bytes).await.expect("write");
            tcp
        });
        let mut ours = websocket::connect(&format!("ws://{addr}/"))
            .await
            .expect("our upgrade");
        assert_eq!(&ours.next().await.unwrap().unwrap()[..], b"right behind");
        drop(raw_server.await.expect("join"));
    })
    .await;
}
