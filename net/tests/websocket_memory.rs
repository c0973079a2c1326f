//! Hostile peers against the WebSocket transport, measured with a
//! counting allocator (`cap`), over loopback TCP: what a connection holds
//! when a peer announces more than it sends, before and after
//! authentication, and the peak while a 20 MiB single-frame message
//! arrives. (The idle figure is `websocket_idle_memory.rs`, run alone.)
//!
//! The allocator is process-wide, so the tests take a lock; the peers
//! write raw frames from buffers allocated before the measurement starts,
//! so only the receiving side is counted.

use std::alloc::System;
use std::future::poll_fn;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use bijou_framing::websocket::{encode_header, OpCode};
use bijou_net::transport::websocket::{self, WebSocketTransport, WEBSOCKET_MAX_MESSAGE_LENGTH};
use bijou_net::transport::{Transport, TransportError};
use bytes::Bytes;
use cap::Cap;
use futures::{FutureExt, StreamExt};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// The documented receive step of the frame decoders: 64 KiB
/// (`FrameCodec`'s memory section, which the WebSocket codec shares).
const RESERVE_STEP: usize = 64 * 1024;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `test` alone (the allocator is process-wide) on a runtime of its
/// own.
fn run_alone<F: std::future::Future>(test: F) -> F::Output {
    let _guard = serial();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(test)
}

/// Connections per test (each has two sockets; only the server side
/// allocates after the measurement starts).
const CONNECTIONS: usize = 500;
/// The pre-authentication limit the session sets.
const PRE_AUTH: usize = 256;
const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;
const MASK: [u8; 4] = [0x11, 0x22, 0x33, 0x44];

type Server = WebSocketTransport<TcpStream>;

/// `CONNECTIONS` upgraded connections: our server transport and the raw
/// TCP socket under our client, which writes frames by hand.
async fn pairs(n: usize) -> Vec<(Server, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let url = format!("ws://{addr}/");
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let (server, client) = tokio::join!(
            async {
                let (tcp, _) = listener.accept().await.expect("accept");
                websocket::accept(tcp).await.expect("upgrade")
            },
            async {
                let tcp = TcpStream::connect(addr).await.expect("connect");
                websocket::client(tcp, url.as_str()).await.expect("upgrade")
            }
        );
        let (raw, unread) = client.into_parts();
        assert!(unread.is_empty());
        out.push((server, raw));
    }
    out
}

/// A masked binary frame header announcing `len` bytes.
fn header(len: usize) -> Vec<u8> {
    let mut buf = bytes::BytesMut::new();
    encode_header(&mut buf, true, OpCode::Binary, len, Some(MASK));
    buf.to_vec()
}

/// Polls `server` until it yields, sampling the allocator after each poll;
/// returns the item and the largest growth over `before` seen.
async fn next_sampled(
    server: &mut Server,
    before: usize,
) -> (Option<Result<Bytes, TransportError>>, usize) {
    let mut peak = 0;
    let item = poll_fn(|cx| {
        let poll = server.poll_next_unpin(cx);
        peak = peak.max(ALLOCATOR.allocated().saturating_sub(before));
        poll
    })
    .await;
    (item, peak)
}

/// Polls `server` until it has buffered `len` bytes (it yields nothing:
/// the frame is unfinished).
async fn until_buffered(server: &mut Server, len: usize) {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Some(item) = server.next().now_or_never() {
                panic!("unexpected item {item:?}");
            }
            if server.buffered_len() >= len {
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("bytes arrive");
}

fn report(case: &str, held: usize, peak: usize) -> (usize, usize) {
    let (held, peak) = (held / CONNECTIONS, peak / CONNECTIONS);
    eprintln!("{case}: {held} B held per connection, peak {peak} B per connection ({CONNECTIONS} connections)");
    (held, peak)
}

/// Row 1: an unauthenticated client sends one 4 MiB binary message
/// (header and the first 16 KiB). Refused from the header, before any
/// payload is buffered. Bound: 64 KiB per connection.
#[test]
fn unauthenticated_4_mib_message_costs_at_most_64_kib_per_connection() {
    run_alone(async {
        let mut conns = pairs(CONNECTIONS).await;
        let head = header(4 * MIB);
        let body = vec![0xA5u8; 16 * KIB];
        for (server, _) in &mut conns {
            server.set_max_message_length(PRE_AUTH);
        }
        let before = ALLOCATOR.allocated();
        for (_, raw) in &mut conns {
            raw.write_all(&head).await.expect("header");
            raw.write_all(&body).await.expect("body");
        }
        let mut peak = 0;
        for (server, _) in &mut conns {
            let (item, grown) = next_sampled(server, before).await;
            peak = peak.max(grown);
            match item {
                Some(Err(TransportError::TooLarge { len, max })) => {
                    assert_eq!((len, max), ((4 * MIB) as u64, PRE_AUTH));
                }
                other => panic!("expected TooLarge, got {other:?}"),
            }
        }
        let held = ALLOCATOR.allocated().saturating_sub(before);
        let (held, peak) = report("unauthenticated 4 MiB message", held, peak);
        assert!(peak <= 64 * KIB, "{peak} B per connection");
        assert!(held <= 64 * KIB, "{held} B per connection");
    });
}

/// Row 2: an unauthenticated client sends a header announcing 50 MiB,
/// then trickles 100 x 64 B. Bound: 64 KiB per connection.
#[test]
fn unauthenticated_50_mib_header_then_trickle_costs_at_most_64_kib_per_connection() {
    run_alone(async {
        let mut conns = pairs(CONNECTIONS).await;
        let head = header(WEBSOCKET_MAX_MESSAGE_LENGTH);
        let trickle = [0x5Au8; 64];
        for (server, _) in &mut conns {
            server.set_max_message_length(PRE_AUTH);
        }
        let before = ALLOCATOR.allocated();
        let mut peak = 0;
        for (server, raw) in &mut conns {
            raw.write_all(&head).await.expect("header");
            let (item, grown) = next_sampled(server, before).await;
            peak = peak.max(grown);
            assert!(
                matches!(item, Some(Err(TransportError::TooLarge { len, max: PRE_AUTH })) if len == WEBSOCKET_MAX_MESSAGE_LENGTH as u64),
                "{item:?}"
            );
            for _ in 0..100 {
                // The server closed; its socket may refuse the trickle.
                if raw.write_all(&trickle).await.is_err() {
                    break;
                }
            }
            let (item, grown) = next_sampled(server, before).await;
            peak = peak.max(grown);
            assert!(item.is_none());
        }
        let held = ALLOCATOR.allocated().saturating_sub(before);
        let (held, peak) = report("unauthenticated 50 MiB header, trickle", held, peak);
        assert!(peak <= 64 * KIB, "{peak} B per connection");
        assert!(held <= 64 * KIB, "{held} B per connection");
    });
}

/// Row 3: an authenticated client (the limit raised from 256 bytes to
/// 50 MiB, as the session does) sends a header announcing 50 MiB, then
/// 100 x 64 B, each read by the server as it comes. Bound: 2 x bytes
/// received + 64 KiB per connection.
#[test]
fn authenticated_50_mib_header_then_100_x_64_b_costs_2x_received_plus_64_kib() {
    run_alone(async {
        let mut conns = pairs(CONNECTIONS).await;
        let head = header(WEBSOCKET_MAX_MESSAGE_LENGTH);
        let trickle = [0x5Au8; 64];
        for (server, _) in &mut conns {
            server.set_max_message_length(PRE_AUTH);
            server.set_max_message_length(WEBSOCKET_MAX_MESSAGE_LENGTH);
        }
        let before = ALLOCATOR.allocated();
        for (server, raw) in &mut conns {
            raw.write_all(&head).await.expect("header");
            for i in 1..=100 {
                raw.write_all(&trickle).await.expect("trickle");
                until_buffered(server, 64 * i).await;
            }
        }
        let received = 100 * 64;
        let held = ALLOCATOR.allocated().saturating_sub(before);
        let buffers: usize = conns.iter().map(|(s, _)| s.buffered_capacity()).sum();
        eprintln!("buffers: {} B per connection", buffers / CONNECTIONS);
        let (held, _) = report("authenticated 50 MiB header, 100 x 64 B", held, held);
        let bound = 2 * received + RESERVE_STEP;
        assert!(held <= bound, "{held} B per connection (bound {bound})");
        // Not vacuous: each connection did reserve its step.
        assert!(held >= RESERVE_STEP - received, "{held}");
    });
}

/// Receiving a 20 MiB message sent as one frame: the peak is at most
/// 2 x 20 MiB + 64 KiB (sampled after every poll of the transport; the
/// counting allocator sees a reallocation as its net growth).
#[test]
fn a_20_mib_single_frame_message_peaks_below_2x_plus_64_kib() {
    run_alone(async {
        let len = 20 * MIB;
        let mut conns = pairs(1).await;
        let (mut server, raw) = conns.pop().expect("one");
        let head = header(len);
        let chunk = Bytes::from(vec![0xC3u8; MIB]);
        // Kept until the end, so that the writer's buffer is in the
        // baseline throughout.
        let chunk_kept = chunk.clone();
        let before = ALLOCATOR.allocated();
        let writer = tokio::spawn(async move {
            let mut raw = raw;
            raw.write_all(&head).await.expect("header");
            for _ in 0..20 {
                raw.write_all(&chunk).await.expect("chunk");
            }
            raw
        });
        let (item, peak) = next_sampled(&mut server, before).await;
        let message = item.expect("a message").expect("no error");
        assert_eq!(message.len(), len);
        // Unmasked: every byte is 0xC3 ^ the key byte at its position.
        assert!(message
            .iter()
            .enumerate()
            .all(|(i, &b)| b == 0xC3 ^ MASK[i % 4]));
        drop(writer.await.expect("writer"));
        drop(chunk_kept);
        let bound = 2 * len + 64 * KIB;
        eprintln!("20 MiB single-frame message: peak {peak} B over the baseline (bound {bound})");
        assert!(peak <= bound, "{peak} > {bound}");
    });
}
