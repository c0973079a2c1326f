//! A raw HTTP/1.1 client for the long-poll server's tests: requests are
//! written as bytes and answers parsed by hand, so that a test can also
//! write what no client would (a lying `Content-Length`, a body that never
//! ends, a head that trickles in). Plus the handshake, done with
//! bijou-proto's sans-IO initiator, and the ways to reach a server (an
//! in-memory pipe, loopback TCP).
#![allow(dead_code)]

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bijou_net::transport::longpoll::{IncomingSessions, LongPollServer, LongPollSession};
use bijou_proto::handshake::{Authenticated, Initiator};
use bijou_proto::message::Audience;
use bijou_proto::time::Now;
use bijou_signing::ed25519_dalek::SigningKey;
use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::net::{TcpListener, TcpStream};

/// An HTTP answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 connection, request after request.
pub struct Http<S> {
    io: S,
    buf: Vec<u8>,
}

/// The bytes of a request with a `Content-Length` matching `body`.
pub fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: test\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

impl<S: AsyncRead + AsyncWrite + Unpin> Http<S> {
    pub fn new(io: S) -> Self {
        Self {
            io,
            buf: Vec::new(),
        }
    }

    pub async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.io.write_all(bytes).await?;
        self.io.flush().await
    }

    /// `POST path` with `headers` and `body`, and its answer.
    pub async fn post(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<Reply> {
        self.write(&request("POST", path, headers, body)).await?;
        self.read_reply().await
    }

    pub fn into_inner(self) -> S {
        self.io
    }

    /// The next answer on the connection.
    pub async fn read_reply(&mut self) -> io::Result<Reply> {
        let head_end = loop {
            if let Some(at) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at;
            }
            self.fill().await?;
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other(format!("bad status line {status_line:?}")))?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let body_start = head_end + 4;
        while self.buf.len() < body_start + len {
            self.fill().await?;
        }
        let body = self.buf[body_start..body_start + len].to_vec();
        self.buf.drain(..body_start + len);
        if self.buf.is_empty() {
            // Hold nothing between answers (the memory tests count it).
            self.buf = Vec::new();
        }
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    /// Whether the server closed the connection (reads to its end, or
    /// fails).
    pub async fn closed(&mut self) -> bool {
        let mut scratch = [0u8; 1024];
        loop {
            match self.io.read(&mut scratch).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    }

    async fn fill(&mut self) -> io::Result<()> {
        let mut scratch = [0u8; 4096];
        let n = self.io.read(&mut scratch).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.buf.extend_from_slice(&scratch[..n]);
        Ok(())
    }

    /// The handshake as our client runs it: `me` addresses `audience`;
    /// the session id and the authenticated peer.
    pub async fn handshake(
        &mut self,
        me: &SigningKey,
        audience: Audience,
        now: u64,
    ) -> (String, Authenticated) {
        let initiator =
            Initiator::new(me, audience, Now::from_secs(now), rand::random()).expect("sign");
        let reply = self
            .post("/lp/handshake", &[], initiator.challenge())
            .await
            .expect("handshake answered");
        assert_eq!(reply.status, 200, "{}", reply.text());
        let sid = reply
            .header("x-session-id")
            .expect("x-session-id")
            .to_owned();
        let peer = initiator
            .receive(Bytes::from(reply.body))
            .expect("the response verifies");
        (sid, peer)
    }

    /// `POST /lp/recv` for `sid`, acknowledging `ack` if given.
    pub async fn recv(&mut self, sid: &str, ack: Option<u64>) -> io::Result<Reply> {
        let ack = ack.map(|n| n.to_string());
        let mut headers = vec![("x-session-id", sid)];
        if let Some(ack) = &ack {
            headers.push(("x-bijou-ack", ack.as_str()));
        }
        self.post("/lp/recv", &headers, b"").await
    }

    /// `POST /lp/send` of `body` for `sid`.
    pub async fn send(&mut self, sid: &str, body: &[u8]) -> io::Result<Reply> {
        self.post("/lp/send", &[("x-session-id", sid)], body).await
    }
}

/// A connection to `server` over an in-memory pipe (served on a task).
pub fn pipe(server: &LongPollServer) -> Http<DuplexStream> {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    tokio::spawn(server.clone().serve_connection(theirs));
    Http::new(ours)
}

/// Serves `server` on a loopback TCP port (an accept loop on a task).
pub async fn listen(server: &LongPollServer) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = server.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(server.clone().serve_connection(tcp));
        }
    });
    addr
}

/// A TCP connection to `addr`.
pub async fn connect(addr: SocketAddr) -> Http<TcpStream> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    Http::new(tcp)
}

/// The next session, within `limit`.
pub async fn next_session(sessions: &mut IncomingSessions, limit: Duration) -> LongPollSession {
    tokio::time::timeout(limit, sessions.accept())
        .await
        .expect("a session in time")
        .expect("the server is up")
}
