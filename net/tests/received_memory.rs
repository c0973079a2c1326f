//! What one message from an authenticated peer costs the receiving
//! `Connection`, on each transport: the peak heap while `recv` reads the
//! message, decodes it and verifies it, against the message's bytes.
//!
//! The input is the one that multiplied memory most: a correctly signed
//! keyhive `SyncOps` of 1,000,000 empty events (1,000,343 bytes), which a
//! `Connection` delivered as verified while its side peaked at 32.47 MiB
//! (33x). Its events are shorter than any keyhive event, so it is refused
//! now, and the peak is the transport's receive buffer plus the decoder's
//! bound (`bijou_codec::DECODE_HEAP_PER_BYTE` x input +
//! `DECODE_HEAP_CONSTANT`). A valid `SyncOps` of 9,000 of the shortest
//! events (about 1 MB too) is delivered within the same bound.
//!
//! Below the connection, the RFC 6455 frame reader alone (`bijou_framing::websocket`),
//! over streams of any shape, many empty frames included: at most twice
//! the bytes received plus one receive step, as the frame codecs
//! (`framing/tests/decode_memory.rs`).
//!
//! `cargo test -p bijou-net --test received_memory -- --nocapture` prints
//! the figures.

use bijou_codec::{DECODE_HEAP_CONSTANT, DECODE_HEAP_PER_BYTE};
use bijou_framing::prefix::Bijou64;
use bijou_framing::websocket::{encode_header, FrameDecoder, OpCode, Role};
use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::websocket::{self, WebSocketTransport};
use bijou_net::transport::FramedTransport;
use bijou_net::transport::Transport;
use bijou_net::{Connection, TokioClock};
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::keyhive::MIN_EVENT_LEN;
use bijou_proto::keyhive::{KeyhiveError, KeyhiveMessage, KeyhivePeer, SignedKeyhive, SukMessage};
use bijou_proto::message::{Audience, MessageError};
use bijou_proto::session::{Received, Rejected};
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::{Identity, PeerId};
use bijou_test_support::heap::{self, read_loop, Alone, Bound, PeakAlloc, READ_RESERVE};
use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tokio::net::{TcpListener, TcpStream};

/// The documented receive step of the frame decoders: 64 KiB
/// (`FrameCodec`'s memory section, which the WebSocket codec shares).
const RESERVE_STEP: usize = 64 * 1024;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

const NOW: u64 = 1_800_000_000;

/// The decoder's bound, plus one receive-buffer step of the transport
/// (64 KiB) and what a connection allocates per message (its step
/// bookkeeping, the `Received`): a 1 MB message must stay under 4x + 128
/// KiB; before, it took 33x.
const BOUND: Bound = Bound {
    per_byte: DECODE_HEAP_PER_BYTE,
    constant: DECODE_HEAP_CONSTANT + 128 * 1024,
};

fn client_key() -> SigningKey {
    SigningKey::from_bytes(&[1; 32])
}

fn config() -> ConnectConfig {
    let mut c = ConnectConfig::default();
    c.clock = TokioClock::fixed(NOW);
    c
}

/// A `SUK\0` SyncOps from the client, signed by it, of `count` events of
/// `len` bytes.
fn sync_ops(count: usize, len: usize) -> Bytes {
    let message = KeyhiveMessage::SyncOps {
        sender: KeyhivePeer::new(client_key().peer_id()),
        target: KeyhivePeer::new(PeerId::from_bytes([2; 32])),
        ops: vec![Bytes::from(vec![0xE7; len]); count],
        responder_total: 1,
        requester_total: 2,
    };
    SukMessage {
        contact_card: None,
        signed: SignedKeyhive::sign(&client_key(), message).expect("sign"),
    }
    .to_bytes()
    .expect("encode")
}

/// Client and server over `transports`, authenticated.
async fn handshake<T: Transport + Send + 'static>(
    client: T,
    server: T,
) -> (Connection<T>, Connection<T>) {
    let server_key = SigningKey::from_bytes(&[2; 32]);
    let server_id = server_key.peer_id();
    let responder = Responder::new(HandshakeConfig::default());
    let accepted = tokio::spawn(async move {
        Connection::accept(server, &server_key, &responder, &config()).await
    });
    let client = Connection::connect(client, &client_key(), Audience::Known(server_id), &config())
        .await
        .expect("handshake");
    (client, accepted.await.expect("join").expect("handshake"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Sends `wire` from the client, waits until the server's transport can
/// read it all, then measures the server's `recv` of it.
fn receive<T: Transport + Send + 'static>(
    heap: &Alone,
    rt: &tokio::runtime::Runtime,
    pair: (Connection<T>, Connection<T>),
    wire: &Bytes,
    what: &str,
) -> Received {
    let (mut client, mut server) = pair;
    rt.block_on(async {
        client.send_bytes(wire.clone()).await.expect("send");
    });
    let (received, usage) = heap.measure(|| rt.block_on(server.recv()));
    let received = received.expect("recv").expect("a message");
    let ratio = BOUND.check(what, wire.len(), usage);
    println!(
        "{what}: {} B in, peak {} B, held {} B: {ratio:.2}x",
        wire.len(),
        usage.peak,
        usage.held
    );
    drop(client);
    received
}

fn framed(rt: &tokio::runtime::Runtime) -> impl FnOnce() -> FramedPair + '_ {
    move || {
        rt.block_on(async {
            // Room for the whole message, so the send completes first.
            let (a, b) = tokio::io::duplex(4 << 20);
            handshake(
                FramedTransport::new(a, Bijou64),
                FramedTransport::new(b, Bijou64),
            )
            .await
        })
    }
}

type FramedPair = (
    Connection<FramedTransport<tokio::io::DuplexStream, Bijou64>>,
    Connection<FramedTransport<tokio::io::DuplexStream, Bijou64>>,
);

type WsPair = (
    Connection<WebSocketTransport<TcpStream>>,
    Connection<WebSocketTransport<TcpStream>>,
);

fn over_websocket(rt: &tokio::runtime::Runtime) -> WsPair {
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let url = format!("ws://{addr}/");
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
        handshake(client, server).await
    })
}

fn assert_refused(received: &Received, what: &str) {
    match &received.result {
        Err(Rejected::Malformed(MessageError::Keyhive(KeyhiveError::CborTruncated {
            field: "ops",
            ..
        }))) => {}
        other => panic!("{what}: {other:?}"),
    }
}

fn assert_delivered(received: &Received, count: usize, what: &str) {
    match &received.result {
        Ok(delivered) => {
            let suk = delivered.clone().into_keyhive().expect("a keyhive message");
            let KeyhiveMessage::SyncOps { ops, .. } = suk.keyhive() else {
                panic!("{what}: {:?}", suk.keyhive());
            };
            assert_eq!(ops.len(), count, "{what}");
        }
        Err(e) => panic!("{what}: {e}"),
    }
}

#[test]
fn a_million_empty_keyhive_events_cost_no_more_than_their_bytes_on_either_transport() {
    let heap = heap::alone();
    let rt = runtime();
    let hostile = sync_ops(1_000_000, 0);
    assert_eq!(hostile.len(), 1_000_343);
    let honest = sync_ops(9_000, MIN_EVENT_LEN);

    let what = "framed: SyncOps of 1,000,000 empty events (refused)";
    assert_refused(&receive(&heap, &rt, framed(&rt)(), &hostile, what), what);
    let what = "framed: SyncOps of 9,000 shortest events (delivered)";
    assert_delivered(
        &receive(&heap, &rt, framed(&rt)(), &honest, what),
        9_000,
        what,
    );

    let what = "WebSocket: SyncOps of 1,000,000 empty events (refused)";
    assert_refused(
        &receive(&heap, &rt, over_websocket(&rt), &hostile, what),
        what,
    );
    let what = "WebSocket: SyncOps of 9,000 shortest events (delivered)";
    assert_delivered(
        &receive(&heap, &rt, over_websocket(&rt), &honest, what),
        9_000,
        what,
    );
}

/// The frame reader's bound: twice the bytes received, one receive step.
const FRAMES_BOUND: Bound = Bound {
    per_byte: 2,
    constant: RESERVE_STEP + READ_RESERVE + 1024,
};

/// Masked binary frames (as a client sends) of these payload lengths.
fn ws_stream(lens: &[usize]) -> Vec<u8> {
    let mut out = BytesMut::new();
    for (i, &len) in lens.iter().enumerate() {
        encode_header(&mut out, true, OpCode::Binary, len, Some([1, 2, 3, 4]));
        out.extend(std::iter::repeat_n(i as u8, len));
    }
    out.to_vec()
}

/// Feeds `wire` to a server's frame reader in reads of `reads` sizes,
/// keeping every payload in `kept` (allocated by the caller); returns the
/// peak's ratio to the bound.
fn feed_frames(heap: &Alone, lens: &[usize], reads: &[usize]) -> f64 {
    let wire = ws_stream(lens);
    let mut kept: Vec<Bytes> = Vec::with_capacity(lens.len());
    let ((), usage) = heap.measure(|| {
        let mut decoder = FrameDecoder::new(Role::Server, 50 << 20);
        read_loop(&wire, reads, &mut kept, |buf| {
            decoder.decode(buf).map(|f| f.map(|f| f.payload))
        });
    });
    let got: Vec<usize> = kept.iter().map(Bytes::len).collect();
    assert_eq!(got, lens, "the frames fed");
    FRAMES_BOUND.check("WebSocket frames", wire.len(), usage);
    usage.peak as f64 / FRAMES_BOUND.allowed(wire.len()) as f64
}

#[test]
fn the_websocket_frame_reader_holds_at_most_twice_the_bytes_received_plus_a_step() {
    let heap = heap::alone();
    let empty = feed_frames(&heap, &vec![0; 100_000], &[4096]);
    let large = feed_frames(&heap, &[6 << 20], &[1000, 4096, 16 * 1024]);
    let lens = prop_oneof![Just(0usize), 0usize..300, 1_000usize..200_000];
    let inputs = (
        prop::collection::vec(lens, 1..48),
        prop::collection::vec(1usize..70_000, 1..16),
    );
    let mut runner = TestRunner::new(Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    });
    let worst = std::cell::Cell::new(0.0f64);
    runner
        .run(&inputs, |(lens, reads)| {
            worst.set(worst.get().max(feed_frames(&heap, &lens, &reads)));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "WebSocket frame reader, peak as a share of the bound: 100,000 empty frames {empty:.2}, \
         one 6 MiB frame {large:.2}, 64 random streams at most {:.2}",
        worst.get()
    );
}
