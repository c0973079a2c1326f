//! Requests no client should send, written as raw bytes to our long-poll
//! server: each is answered with its status and a text saying what was
//! wrong (or, for a head that never completes, the connection is cut
//! off), never a panic, and the server allocates in step with the bytes
//! it receives, never with what a `Content-Length` announces (measured
//! with a counting allocator, `cap`).
//!
//! Loopback TCP for the requests and for a client that stops reading; in-memory
//! pipes on paused time for the timeouts (a body that never ends or trickles, a
//! head that trickles in). The
//! allocator is process-wide, so the tests run one at a time, each on a
//! runtime of its own.

#[path = "support/lp_http.rs"]
mod lp_http;

use std::alloc::System;
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use bijou_net::handshake::{respond, ConnectConfig};
use bijou_net::transport::longpoll::{
    IncomingSessions, LongPollError, LongPollServer, LongPollSession, ServerConfig,
};
use bijou_net::transport::Transport;
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::Audience;
use bijou_signing::{ed25519_dalek::SigningKey, Identity};
use bytes::Bytes;
use cap::Cap;
use futures::SinkExt;
use lp_http::{connect, listen, next_session, pipe, request, Http, Reply};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::time::Instant;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

static SERIAL: Mutex<()> = Mutex::new(());

const KIB: usize = 1024;
/// Bound on each test (real or virtual time).
const LIMIT: Duration = Duration::from_secs(60);

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `test` alone (the allocator is process-wide) on a runtime of its
/// own, on paused time if `paused`.
fn run_alone<F: std::future::Future>(paused: bool, test: F) -> F::Output {
    let _guard = serial();
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all();
    if paused {
        builder.start_paused(true);
    }
    let runtime = builder.build().expect("runtime");
    runtime.block_on(async { tokio::time::timeout(LIMIT, test).await.expect("in time") })
}

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

/// An open session over `http`; the server side's end of it.
async fn open<S>(http: &mut Http<S>, sessions: &mut IncomingSessions) -> (String, LongPollSession)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let me = key(1);
    let now = bijou_proto::time::Clock::system().unix_secs();
    let ((sid, _), session) = tokio::join!(
        http.handshake(&me, Audience::Known(key(2).peer_id()), now),
        async {
            let mut session = next_session(sessions, LIMIT).await;
            respond(
                &mut session,
                &key(2),
                &Responder::new(HandshakeConfig::default()),
                &ConnectConfig::default(),
            )
            .await
            .expect("accepted");
            session
        }
    );
    (sid, session)
}

/// A server on loopback TCP with `config`.
async fn tcp_server(config: ServerConfig) -> (LongPollServer, IncomingSessions, SocketAddr) {
    let (server, sessions) = LongPollServer::new(config);
    let addr = listen(&server).await;
    (server, sessions, addr)
}

/// Writes `bytes` on a new connection and reads the answer.
async fn raw(addr: SocketAddr, bytes: &[u8]) -> Reply {
    let mut http = connect(addr).await;
    http.write(bytes).await.expect("write");
    http.read_reply().await.expect("an answer")
}

fn assert_refused(reply: &Reply, status: u16, says: &str) {
    assert_eq!(reply.status, status, "{}", reply.text());
    assert!(
        reply
            .header("content-type")
            .is_some_and(|v| v.starts_with("text/plain")),
        "{:?}",
        reply.headers
    );
    assert!(
        reply.text().contains(says),
        "{:?} lacks {says:?}",
        reply.text()
    );
}

#[test]
fn requests_without_a_valid_session_id_are_400_and_unknown_ones_410() {
    run_alone(false, async {
        let (_server, _sessions, addr) = tcp_server(ServerConfig::default()).await;
        let unknown = "0123456789abcdef".repeat(2);
        for path in ["/lp/send", "/lp/recv", "/lp/disconnect"] {
            let reply = raw(addr, &request("POST", path, &[], b"")).await;
            assert_refused(&reply, 400, "no x-session-id header");
            for bad in ["xyz", &"a".repeat(31), &"g".repeat(32), &"a".repeat(33)] {
                let reply = raw(addr, &request("POST", path, &[("x-session-id", bad)], b"")).await;
                assert_refused(&reply, 400, "bad x-session-id header");
            }
        }
        // Not even text.
        let mut bytes = b"POST /lp/recv HTTP/1.1\r\nhost: t\r\nx-session-id: ".to_vec();
        bytes.extend_from_slice(&[0xFF; 32]);
        bytes.extend_from_slice(b"\r\ncontent-length: 0\r\n\r\n");
        assert_refused(&raw(addr, &bytes).await, 400, "bad x-session-id header");
        for path in ["/lp/send", "/lp/recv", "/lp/recv?wait=1"] {
            let reply = raw(
                addr,
                &request("POST", path, &[("x-session-id", &unknown)], b""),
            )
            .await;
            assert_refused(&reply, 410, "open a new one with POST /lp/handshake");
        }
        // An id has one text form, lower case (as the handshake writes it):
        // upper case is malformed.
        let reply = raw(
            addr,
            &request(
                "POST",
                "/lp/send",
                &[("x-session-id", &unknown.to_uppercase())],
                b"x",
            ),
        )
        .await;
        assert_eq!(reply.status, 400);
        // Disconnecting an unknown session is not an error.
        let reply = raw(
            addr,
            &request("POST", "/lp/disconnect", &[("x-session-id", &unknown)], b""),
        )
        .await;
        assert_eq!(reply.status, 204);
    });
}

#[test]
fn unknown_paths_are_404_and_other_methods_405_with_allow_post() {
    run_alone(false, async {
        let (_server, _sessions, addr) = tcp_server(ServerConfig::default()).await;
        for (method, path) in [
            ("POST", "/"),
            ("POST", "/lp/recv/"),
            ("POST", "/lp/RECV"),
            ("POST", "/lp"),
            ("GET", "/"),
            ("OPTIONS", "/lp/nothing"),
        ] {
            let reply = raw(addr, &request(method, path, &[], b"")).await;
            assert_refused(
                &reply,
                404,
                "POST /lp/handshake, /lp/send, /lp/recv and /lp/disconnect",
            );
        }
        for (method, path) in [
            ("GET", "/lp/recv"),
            ("PUT", "/lp/send"),
            ("DELETE", "/lp/disconnect"),
            ("OPTIONS", "/lp/handshake"),
        ] {
            let reply = raw(addr, &request(method, path, &[], b"")).await;
            assert_refused(&reply, 405, &format!("{method} is not allowed"));
            assert_eq!(reply.header("allow"), Some("POST"));
        }
        // Not HTTP at all: hyper's own 400, and the connection closes.
        let mut http = connect(addr).await;
        http.write(b"\x00\x05hello, not HTTP\r\n\r\n")
            .await
            .expect("write");
        let reply = http.read_reply().await.expect("an answer");
        assert_eq!(reply.status, 400);
        assert!(http.closed().await);
    });
}

#[test]
fn a_handshake_body_over_256_bytes_is_413_and_costs_no_more_than_its_bytes() {
    run_alone(false, async {
        let (server, _sessions, addr) = tcp_server(ServerConfig::default()).await;
        const CONNECTIONS: usize = 50;
        let mut conns = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            conns.push(connect(addr).await);
        }
        let announce_1_gib = b"POST /lp/handshake HTTP/1.1\r\nhost: t\r\ncontent-length: 1073741824\r\n\r\n0123456789".to_vec();
        let before = ALLOCATOR.allocated();
        for http in &mut conns {
            http.write(&announce_1_gib).await.expect("write");
            let reply = http.read_reply().await.expect("an answer");
            assert_refused(&reply, 413, "over this endpoint's limit of 256 bytes");
        }
        let held = ALLOCATOR.allocated().saturating_sub(before) / CONNECTIONS;
        eprintln!("handshake announcing 1 GiB: {held} B held per connection after the 413");
        assert!(held <= 64 * KIB, "{held} B per connection");
        drop(conns);

        // Exactly over, announced.
        let reply = raw(addr, &request("POST", "/lp/handshake", &[], &[0; 257])).await;
        assert_refused(&reply, 413, "limit of 256 bytes");
        // Chunked, no length announced: read up to the cap, then refused.
        let mut chunked =
            b"POST /lp/handshake HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n"
                .to_vec();
        for _ in 0..3 {
            chunked.extend_from_slice(b"64\r\n");
            chunked.extend_from_slice(&[0xAB; 100]);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\n\r\n");
        let reply = raw(addr, &chunked).await;
        assert_refused(&reply, 413, "300 bytes or more");
        assert_eq!(server.session_count(), 0);
    });
}

#[test]
fn a_handshake_body_that_is_no_challenge_is_refused_with_a_text() {
    run_alone(false, async {
        let (server, mut sessions, addr) = tcp_server(ServerConfig::default()).await;
        // The server side runs the handshake; garbage makes it give up
        // without an answer.
        tokio::spawn(async move {
            while let Some(mut session) = sessions.accept().await {
                let _ = respond(
                    &mut session,
                    &key(2),
                    &Responder::new(HandshakeConfig::default()),
                    &ConnectConfig::default(),
                )
                .await;
            }
        });
        for body in [&b""[..], b"SUH\0", &[0xEE; 200]] {
            let reply = raw(addr, &request("POST", "/lp/handshake", &[], body)).await;
            assert_refused(&reply, 401, "without answering the handshake");
        }
        assert_eq!(server.session_count(), 0);
    });
}

#[test]
fn send_bodies_over_the_cap_are_413_and_memory_follows_the_bytes_received() {
    run_alone(false, async {
        let mut config = ServerConfig::default();
        config.body_stall_timeout = Duration::from_millis(500);
        let (_server, mut sessions, addr) = tcp_server(config).await;
        let mut http = connect(addr).await;
        let (sid, mut session) = open(&mut http, &mut sessions).await;

        // Over 50 MiB announced: refused before a byte is read.
        let head = format!(
            "POST /lp/send HTTP/1.1\r\nhost: t\r\nx-session-id: {sid}\r\ncontent-length: 60000000\r\n\r\n"
        );
        let before = ALLOCATOR.allocated();
        let reply = raw(addr, head.as_bytes()).await;
        assert_refused(&reply, 413, "limit of 52428800 bytes");
        let held = ALLOCATOR.allocated().saturating_sub(before);
        eprintln!("send announcing 60 MB: {held} B held after the 413");
        assert!(held <= 64 * KIB, "{held} B");

        // 50 MB announced (under the cap), 64 KiB sent, on 20 sessions (a
        // session takes one send at a time): what the server holds follows
        // the 64 KiB, then the body stalls: 408.
        const CONNECTIONS: usize = 20;
        let body = vec![0x5A; 64 * KIB];
        let mut conns: Vec<(Http<TcpStream>, String)> = Vec::with_capacity(CONNECTIONS);
        let mut open_sessions = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            let mut conn = connect(addr).await;
            let (id, session) = open(&mut conn, &mut sessions).await;
            open_sessions.push(session);
            conns.push((conn, id));
        }
        let before = ALLOCATOR.allocated();
        for (http, id) in &mut conns {
            let head = format!(
                "POST /lp/send HTTP/1.1\r\nhost: t\r\nx-session-id: {id}\r\ncontent-length: 50000000\r\n\r\n"
            );
            http.write(head.as_bytes()).await.expect("head");
            http.write(&body).await.expect("body");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let held = ALLOCATOR.allocated().saturating_sub(before) / CONNECTIONS;
        let bound = 2 * body.len() + 64 * KIB;
        eprintln!("send announcing 50 MB, 64 KiB sent: {held} B held per request (bound {bound})");
        assert!(held <= bound, "{held} B per request");
        for (http, _) in &mut conns {
            let reply = http.read_reply().await.expect("an answer");
            assert_refused(&reply, 408, "stopped for 500ms after 65536 bytes");
            assert!(http.closed().await, "the connection is closed");
        }

        // The session's own limit, lowered: announced or chunked, 413.
        session.set_max_message_length(KIB);
        let reply = http.send(&sid, &[0; KIB + 1]).await.expect("send");
        assert_refused(&reply, 413, "limit of 1024 bytes");
        let mut chunked = format!(
            "POST /lp/send HTTP/1.1\r\nhost: t\r\nx-session-id: {sid}\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        .into_bytes();
        for _ in 0..3 {
            chunked.extend_from_slice(b"200\r\n");
            chunked.extend_from_slice(&[0xCD; 512]);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\n\r\n");
        assert_refused(&raw(addr, &chunked).await, 413, "1536 bytes or more");
        // Nothing of them reached the session; it is still open.
        let mut http = connect(addr).await;
        assert_eq!(http.send(&sid, b"fine").await.expect("send").status, 204);
        assert_eq!(
            futures::StreamExt::next(&mut session)
                .await
                .expect("a message")
                .expect("ok"),
            &b"fine"[..]
        );
    });
}

#[test]
fn a_body_that_lies_about_its_content_length_is_refused() {
    run_alone(false, async {
        let (_server, mut sessions, addr) = tcp_server(ServerConfig::default()).await;
        let mut http = connect(addr).await;
        let (sid, mut session) = open(&mut http, &mut sessions).await;

        // Shorter than announced, then the client stops writing (its
        // half of the connection shut): 400.
        let tcp = TcpStream::connect(addr).await.expect("connect");
        let mut short = Http::new(tcp);
        let head = format!(
            "POST /lp/send HTTP/1.1\r\nhost: t\r\nx-session-id: {sid}\r\ncontent-length: 100\r\n\r\n0123456789"
        );
        short.write(head.as_bytes()).await.expect("write");
        let tcp = short_into_half_closed(short).await;
        let mut short = Http::new(tcp);
        let reply = short.read_reply().await.expect("an answer");
        assert_refused(&reply, 400, "broke off after 10 bytes");

        // Longer than announced: the rest is read as the next request,
        // which is not HTTP: hyper's 400, and the connection closes.
        let mut long = connect(addr).await;
        let head = format!(
            "POST /lp/send HTTP/1.1\r\nhost: t\r\nx-session-id: {sid}\r\ncontent-length: 4\r\n\r\nfour and more"
        );
        long.write(head.as_bytes()).await.expect("write");
        assert_eq!(long.read_reply().await.expect("answer").status, 204);
        assert_eq!(long.read_reply().await.expect("answer").status, 400);
        assert!(long.closed().await);
        // Only the four announced bytes were a message.
        assert_eq!(
            futures::StreamExt::next(&mut session)
                .await
                .expect("a message")
                .expect("ok"),
            &b"four"[..]
        );
        assert!(!session.is_closed());
    });
}

/// Shuts the writing half of `http`'s stream; the stream, to read on.
async fn short_into_half_closed(http: Http<TcpStream>) -> TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut tcp = http.into_inner();
    tcp.shutdown().await.expect("shutdown");
    tcp
}

#[test]
fn a_second_concurrent_recv_is_409() {
    run_alone(false, async {
        let (_server, mut sessions, addr) = tcp_server(ServerConfig::default()).await;
        let mut http = connect(addr).await;
        let (sid, _session) = open(&mut http, &mut sessions).await;
        let held = request("POST", "/lp/recv", &[("x-session-id", &sid)], b"");
        http.write(&held).await.expect("first recv");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut second = connect(addr).await;
        let reply = second.recv(&sid, None).await.expect("answer");
        assert_refused(&reply, 409, "poll one at a time");
        let reply = second.recv(&sid, Some(0)).await.expect("answer");
        assert_refused(&reply, 409, "poll one at a time");
    });
}

#[test]
fn a_chunked_body_that_never_ends_is_cut_off_with_408() {
    run_alone(true, async {
        let mut config = ServerConfig::default();
        config.body_stall_timeout = Duration::from_secs(5);
        config.header_read_timeout = Duration::from_secs(3600);
        let (server, mut sessions) = LongPollServer::new(config);
        let mut http = pipe(&server);
        let (sid, _session) = open(&mut http, &mut sessions).await;
        for (path, sid) in [("/lp/send", Some(&sid)), ("/lp/handshake", None)] {
            let mut http = pipe(&server);
            let mut head =
                format!("POST {path} HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n");
            if let Some(sid) = sid {
                head.push_str(&format!("x-session-id: {sid}\r\n"));
            }
            head.push_str("\r\n5\r\nhello\r\n");
            let start = Instant::now();
            http.write(head.as_bytes()).await.expect("write");
            let reply = http.read_reply().await.expect("an answer");
            assert_refused(&reply, 408, "stopped for 5s after 5 bytes");
            assert_eq!(start.elapsed(), Duration::from_secs(5));
            assert!(http.closed().await, "{path}: the connection is closed");
        }
        // A body that keeps coming, but slowly, is bounded as a whole by
        // the handshake timeout before authentication.
        let mut http = pipe(&server);
        http.write(b"POST /lp/handshake HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n")
            .await
            .expect("head");
        let start = Instant::now();
        let mut sent = 0;
        let reply = loop {
            tokio::select! {
                reply = http.read_reply() => break reply.expect("an answer"),
                () = tokio::time::sleep(Duration::from_secs(2)) => {}
            }
            http.write(b"1\r\nx\r\n").await.expect("a chunk");
            sent += 1;
        };
        assert_refused(&reply, 408, "did not arrive within 10s");
        assert_eq!(start.elapsed(), Duration::from_secs(10));
        assert!((4..=5).contains(&sent), "{sent} chunks");
    });
}

#[test]
fn headers_that_trickle_in_are_cut_off() {
    run_alone(true, async {
        let mut config = ServerConfig::default();
        config.header_read_timeout = Duration::from_secs(3);
        let (server, _sessions) = LongPollServer::new(config);
        let mut http = pipe(&server);
        let start = Instant::now();
        http.write(b"POST /lp/recv HTTP/1.1\r\n")
            .await
            .expect("write");
        let header = b"x-session-id: 0123456789abcdef0123456789abcdef\r\n";
        let mut cut_at = None;
        for (i, byte) in header.iter().enumerate() {
            tokio::time::sleep(Duration::from_millis(500)).await;
            if http.write(&[*byte]).await.is_err() {
                cut_at = Some(i);
                break;
            }
        }
        assert!(http.closed().await, "cut off");
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_secs(3) && elapsed <= Duration::from_secs(4),
            "{elapsed:?}, cut at byte {cut_at:?}"
        );
        // A keep-alive connection left idle is closed by the same timeout.
        let mut http = pipe(&server);
        let reply = http
            .post("/lp/recv", &[("x-session-id", &"a".repeat(32))], b"")
            .await
            .expect("answer");
        assert_eq!(reply.status, 410);
        let start = Instant::now();
        assert!(http.closed().await);
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        // A head over 16 KiB is refused.
        let mut http = pipe(&server);
        let big = format!(
            "POST /lp/recv HTTP/1.1\r\nx-filler: {}\r\n\r\n",
            "f".repeat(20 * KIB)
        );
        let _ = http.write(big.as_bytes()).await;
        match http.read_reply().await {
            Ok(reply) => assert_eq!(reply.status, 431, "{}", reply.text()),
            Err(e) => panic!("expected 431, got {e}"),
        }
    });
}

#[test]
fn a_send_body_that_trickles_past_the_send_body_timeout_is_408() {
    run_alone(true, async {
        let mut config = ServerConfig::default();
        config.body_stall_timeout = Duration::from_secs(5);
        config.send_body_timeout = Duration::from_secs(20);
        config.header_read_timeout = Duration::from_secs(3600);
        let (server, mut sessions) = LongPollServer::new(config);
        let mut http = pipe(&server);
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        // A byte every 4 s: never a stall of 5 s, but not whole after 20 s.
        let mut http = pipe(&server);
        let head = format!(
            "POST /lp/send HTTP/1.1\r\nhost: t\r\nx-session-id: {sid}\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        http.write(head.as_bytes()).await.expect("head");
        let start = Instant::now();
        let mut sent = 0;
        let reply = loop {
            tokio::select! {
                reply = http.read_reply() => break reply.expect("an answer"),
                () = tokio::time::sleep(Duration::from_secs(4)) => {}
            }
            http.write(b"1\r\nx\r\n").await.expect("a chunk");
            sent += 1;
        };
        assert_refused(&reply, 408, "did not arrive within 20s");
        assert_eq!(start.elapsed(), Duration::from_secs(20));
        assert!((4..=5).contains(&sent), "{sent} chunks");
        assert!(http.closed().await, "the connection is closed");
        // Nothing of it reached the session, which is still open.
        let mut http = pipe(&server);
        assert_eq!(http.send(&sid, b"whole").await.expect("send").status, 204);
        assert_eq!(
            futures::StreamExt::next(&mut session)
                .await
                .expect("a message")
                .expect("ok"),
            &b"whole"[..]
        );
    });
}

#[test]
fn a_client_that_stops_reading_its_answer_is_dropped_after_the_write_timeout() {
    run_alone(false, async {
        let mut config = ServerConfig::default();
        config.write_timeout = Duration::from_millis(300);
        let (server, mut sessions) = LongPollServer::new(config);
        // Each served connection's end, by the client's address.
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (ended, mut ends) = tokio::sync::mpsc::unbounded_channel();
        let serving = server.clone();
        tokio::spawn(async move {
            while let Ok((tcp, peer)) = listener.accept().await {
                let (serving, ended) = (serving.clone(), ended.clone());
                tokio::spawn(async move {
                    let _ = ended.send((peer, serving.serve_connection(tcp).await));
                });
            }
        });
        let mut http = connect(addr).await;
        let (sid, mut session) = open(&mut http, &mut sessions).await;
        // More than the kernel buffers on both ends hold (the client's
        // receive buffer is made small).
        const LEN: usize = 16 * 1024 * KIB;
        session.set_max_message_length(LEN);
        session
            .send(Bytes::from(vec![0x42; LEN]))
            .await
            .expect("queued");

        let socket = TcpSocket::new_v4().expect("socket");
        socket.set_recv_buffer_size(4 * KIB as u32).expect("rcvbuf");
        let tcp = socket.connect(addr).await.expect("connect");
        let me = tcp.local_addr().expect("addr");
        let mut stalled = Http::new(tcp);
        stalled
            .write(&request(
                "POST",
                "/lp/recv",
                &[("x-session-id", &sid), ("x-bijou-ack", "0")],
                b"",
            ))
            .await
            .expect("the poll");
        // Never read: the server gives up on the answer and drops the
        // connection, well before TCP would.
        let (_, result) = loop {
            let end = tokio::time::timeout(Duration::from_secs(20), ends.recv())
                .await
                .expect("the stalled connection is dropped in time")
                .expect("served");
            if end.0 == me {
                break end;
            }
        };
        match result {
            Err(LongPollError::WriteTimeout { after }) => {
                assert_eq!(after, Duration::from_millis(300));
            }
            other => panic!("expected a write timeout, got {other:?}"),
        }
        drop(stalled);
        // The session is as a gone client leaves it: open, no poll held,
        // and the unacknowledged message is answered again.
        assert!(!session.is_closed());
        let reply = connect(addr)
            .await
            .recv(&sid, Some(0))
            .await
            .expect("answer");
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.header("x-bijou-seq"), Some("1"));
        assert!(reply.body.len() == LEN && reply.body.iter().all(|&b| b == 0x42));
    });
}
