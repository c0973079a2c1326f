//! Bad input against the WebSocket transport, over loopback TCP: a raw
//! peer (the socket under our own client or server, taken apart after the
//! upgrade) writes broken frames by hand. Each one gets a typed error
//! ([`WsFrameError`], or `TooLarge`/`TextMessage`), a close frame with the
//! right code, and the end of the stream; never a panic or a reservation
//! ahead of the bytes received. The stall timer's tests run on an
//! in-memory pipe under paused tokio time instead.

use std::future::Future;
use std::time::Duration;

use bijou_framing::websocket::{
    encode_frame, encode_header, parse_close, FrameDecoder, OpCode, Role, WsFrameError,
};
use bijou_net::transport::websocket::{self, WebSocketTransport};
use bijou_net::transport::{Transport, TransportError};
use bytes::BytesMut;
use futures::{FutureExt, SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::net::{TcpListener, TcpStream};

const LIMIT: Duration = Duration::from_secs(20);
const MASK: [u8; 4] = [9, 8, 7, 6];

type Ws = WebSocketTransport<TcpStream>;

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f).await.expect("test bounded")
}

/// Our side and the raw socket of the other side, after the upgrade.
/// `our_role`: which side is ours.
async fn pair(our_role: Role) -> (Ws, TcpStream) {
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
    match our_role {
        Role::Server => (server, client.into_parts().0),
        Role::Client => (client, server.into_parts().0),
    }
}

/// The close code the raw side receives (frames from `our_role`), or
/// `None` if the socket ends without a close frame.
async fn close_code<S: AsyncRead + Unpin>(raw: &mut S, our_role: Role) -> Option<u16> {
    let peer_role = match our_role {
        Role::Server => Role::Client,
        Role::Client => Role::Server,
    };
    let mut decoder = FrameDecoder::new(peer_role, 1 << 20);
    let mut buf = BytesMut::new();
    loop {
        while let Some(frame) = decoder.decode(&mut buf).expect("our frames are valid") {
            if frame.opcode == OpCode::Close {
                return parse_close(&frame.payload).expect("valid close").code;
            }
        }
        if raw.read_buf(&mut buf).await.ok()? == 0 {
            return None;
        }
    }
}

/// Writes `bytes` from the raw side, expects our side to fail with an
/// error `check` accepts, then the end of the stream, and the raw side to
/// receive a close with `code`.
async fn expect_failure(
    our_role: Role,
    bytes: &[u8],
    check: impl Fn(&TransportError) -> bool,
    code: u16,
) {
    bounded(async {
        let (mut ours, mut raw) = pair(our_role).await;
        raw.write_all(bytes).await.expect("write");
        let err = match ours.next().await {
            Some(Err(err)) => err,
            other => panic!("expected an error, got {other:?}"),
        };
        assert!(check(&err), "unexpected error {err:?}");
        assert!(ours.next().await.is_none());
        assert!(ours.next().await.is_none());
        assert_eq!(close_code(&mut raw, our_role).await, Some(code), "{err}");
    })
    .await;
}

fn frame_err(expected: WsFrameError) -> impl Fn(&TransportError) -> bool {
    move |err| matches!(err, TransportError::WebSocket(e) if *e == expected)
}

fn client_frame(fin: bool, opcode: OpCode, payload: &[u8]) -> Vec<u8> {
    let mut buf = BytesMut::new();
    encode_frame(&mut buf, fin, opcode, payload, Some(MASK));
    buf.to_vec()
}

// ---- lying lengths ------------------------------------------------------------

/// A header announcing `len` bytes (in the given form), then 10 bytes, then
/// the end of the stream: the bytes are buffered (no more than a step
/// reserved), and the end is `Truncated` with a 1002 close.
async fn lying_length(len: usize) {
    bounded(async {
        let (mut ours, mut raw) = pair(Role::Server).await;
        let mut bytes = BytesMut::new();
        encode_header(&mut bytes, true, OpCode::Binary, len, Some(MASK));
        bytes.extend_from_slice(&[0xEE; 10]);
        raw.write_all(&bytes).await.expect("write");
        while ours.buffered_len() < 10 {
            assert!(ours.next().now_or_never().is_none(), "no message yet");
            tokio::task::yield_now().await;
        }
        let reserved = ours.buffered_capacity();
        assert!(
            reserved <= 64 * 1024 + 4096,
            "{reserved} B reserved for {len}"
        );
        raw.shutdown().await.expect("shutdown");
        let err = ours.next().await.expect("an item").expect_err("an error");
        assert!(
            matches!(
                err,
                TransportError::WebSocket(WsFrameError::Truncated { needed, have: 10 })
                    if needed == len as u64
            ),
            "{err:?}"
        );
        assert!(ours.next().await.is_none());
        assert_eq!(close_code(&mut raw, Role::Server).await, Some(1002));
    })
    .await;
}

#[tokio::test]
async fn lying_7_bit_length_is_truncated() {
    lying_length(100).await;
}

#[tokio::test]
async fn lying_16_bit_length_is_truncated() {
    lying_length(60_000).await;
}

#[tokio::test]
async fn lying_64_bit_length_is_truncated_with_one_step_reserved() {
    lying_length(40 << 20).await;
}

#[tokio::test]
async fn a_64_bit_length_with_the_top_bit_set_is_refused() {
    let mut bytes = vec![0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1];
    bytes.extend_from_slice(&MASK);
    expect_failure(
        Role::Server,
        &bytes,
        frame_err(WsFrameError::LengthTopBit {
            len: 0x8000_0000_0000_0001,
        }),
        1002,
    )
    .await;
}

#[tokio::test]
async fn a_length_in_a_longer_form_than_needed_is_refused() {
    let mut bytes = vec![0x82, 0xFE, 0x00, 0x05];
    bytes.extend_from_slice(&MASK);
    bytes.extend_from_slice(&[0; 5]);
    expect_failure(
        Role::Server,
        &bytes,
        frame_err(WsFrameError::NonMinimalLength {
            len: 5,
            header_len: 2,
        }),
        1002,
    )
    .await;
}

#[tokio::test]
async fn a_length_over_the_limit_is_too_large_before_its_payload() {
    let mut bytes = BytesMut::new();
    encode_header(&mut bytes, true, OpCode::Binary, 257, Some(MASK));
    bounded(async {
        let (mut ours, mut raw) = pair(Role::Server).await;
        ours.set_max_message_length(256);
        raw.write_all(&bytes).await.expect("write");
        assert!(matches!(
            ours.next().await,
            Some(Err(TransportError::TooLarge { len: 257, max: 256 }))
        ));
        assert!(ours.next().await.is_none());
        assert_eq!(close_code(&mut raw, Role::Server).await, Some(1009));
    })
    .await;
}

#[tokio::test]
async fn fragments_adding_up_over_the_limit_are_too_large() {
    let mut bytes = client_frame(false, OpCode::Binary, &[1; 200]);
    bytes.extend(client_frame(true, OpCode::Continuation, &[2; 57]));
    bounded(async {
        let (mut ours, mut raw) = pair(Role::Server).await;
        ours.set_max_message_length(256);
        raw.write_all(&bytes).await.expect("write");
        assert!(matches!(
            ours.next().await,
            Some(Err(TransportError::TooLarge { len: 257, max: 256 }))
        ));
        assert_eq!(close_code(&mut raw, Role::Server).await, Some(1009));
    })
    .await;
}

// ---- header rules -------------------------------------------------------------

#[tokio::test]
async fn a_reserved_opcode_is_refused() {
    let mut bytes = client_frame(true, OpCode::Binary, b"x");
    bytes[0] = 0x80 | 0x3;
    expect_failure(
        Role::Server,
        &bytes,
        frame_err(WsFrameError::ReservedOpcode { opcode: 3 }),
        1002,
    )
    .await;
}

#[tokio::test]
async fn reserved_bits_are_refused() {
    let mut bytes = client_frame(true, OpCode::Binary, b"x");
    bytes[0] |= 0x40; // RSV1: no compression was negotiated
    expect_failure(
        Role::Server,
        &bytes,
        frame_err(WsFrameError::ReservedBits { bits: 0b100 }),
        1002,
    )
    .await;
}

#[tokio::test]
async fn an_unmasked_client_frame_is_refused() {
    let mut bytes = BytesMut::new();
    encode_frame(&mut bytes, true, OpCode::Binary, b"plain", None);
    expect_failure(
        Role::Server,
        &bytes,
        frame_err(WsFrameError::UnmaskedClientFrame {
            opcode: OpCode::Binary,
            len: 5,
        }),
        1002,
    )
    .await;
}

#[tokio::test]
async fn a_masked_server_frame_is_refused() {
    let bytes = client_frame(true, OpCode::Binary, b"masked");
    expect_failure(
        Role::Client,
        &bytes,
        frame_err(WsFrameError::MaskedServerFrame {
            opcode: OpCode::Binary,
            len: 6,
        }),
        1002,
    )
    .await;
}

#[tokio::test]
async fn a_control_frame_over_125_bytes_is_refused() {
    let bytes = client_frame(true, OpCode::Ping, &[0; 126]);
    expect_failure(
        Role::Server,
        &bytes,
        frame_err(WsFrameError::ControlTooLong {
            opcode: OpCode::Ping,
            len: 126,
        }),
        1002,
    )
    .await;
}

#[tokio::test]
async fn a_fragmented_control_frame_is_refused() {
    let bytes = client_frame(false, OpCode::Pong, b"half");
    expect_failure(
        Role::Server,
        &bytes,
        frame_err(WsFrameError::FragmentedControl {
            opcode: OpCode::Pong,
        }),
        1002,
    )
    .await;
}

#[tokio::test]
async fn a_continuation_without_a_start_is_refused() {
    let bytes = client_frame(true, OpCode::Continuation, b"orphan");
    expect_failure(
        Role::Server,
        &bytes,
        frame_err(WsFrameError::ContinuationWithoutStart { len: 6 }),
        1002,
    )
    .await;
}

#[tokio::test]
async fn a_new_message_inside_a_fragmented_one_is_refused() {
    let mut bytes = client_frame(false, OpCode::Binary, b"first half");
    bytes.extend(client_frame(true, OpCode::Binary, b"intruder"));
    expect_failure(
        Role::Server,
        &bytes,
        frame_err(WsFrameError::MessageInsideFragmented {
            opcode: OpCode::Binary,
            received: 10,
        }),
        1002,
    )
    .await;
}

#[tokio::test]
async fn a_text_message_is_refused_at_its_header_with_1003() {
    let mut bytes = BytesMut::new();
    encode_header(&mut bytes, true, OpCode::Text, 1 << 20, Some(MASK));
    expect_failure(
        Role::Server,
        &bytes,
        |err| {
            matches!(err, TransportError::WebSocket(WsFrameError::TextMessage { len }) if *len == 1 << 20)
        },
        1003,
    )
    .await;
}

// ---- close frames -------------------------------------------------------------

#[tokio::test]
async fn a_close_with_an_invalid_code_is_refused() {
    for code in [0u16, 999, 1004, 1005, 1006, 1015, 2999, 5000, u16::MAX] {
        let bytes = client_frame(true, OpCode::Close, &code.to_be_bytes());
        expect_failure(
            Role::Server,
            &bytes,
            frame_err(WsFrameError::InvalidCloseCode { code }),
            1002,
        )
        .await;
    }
}

#[tokio::test]
async fn a_close_with_a_reason_that_is_not_utf8_is_refused_with_1007() {
    let mut payload = 1000u16.to_be_bytes().to_vec();
    payload.extend_from_slice(b"ok\xFF\xFE");
    let bytes = client_frame(true, OpCode::Close, &payload);
    expect_failure(
        Role::Server,
        &bytes,
        frame_err(WsFrameError::CloseReasonNotUtf8 {
            valid_up_to: 2,
            len: 4,
        }),
        1007,
    )
    .await;
}

#[tokio::test]
async fn a_close_with_a_one_byte_payload_is_refused() {
    let bytes = client_frame(true, OpCode::Close, &[0x03]);
    expect_failure(
        Role::Server,
        &bytes,
        frame_err(WsFrameError::CloseOneByte),
        1002,
    )
    .await;
}

#[tokio::test]
async fn a_valid_close_is_answered_with_its_code_after_the_messages_before_it() {
    let mut bytes = client_frame(true, OpCode::Binary, b"one");
    bytes.extend(client_frame(true, OpCode::Binary, b"two"));
    let mut payload = 4001u16.to_be_bytes().to_vec();
    payload.extend_from_slice("bye é".as_bytes());
    bytes.extend(client_frame(true, OpCode::Close, &payload));
    bounded(async {
        let (mut ours, mut raw) = pair(Role::Server).await;
        raw.write_all(&bytes).await.expect("write");
        assert_eq!(&ours.next().await.unwrap().unwrap()[..], b"one");
        assert_eq!(&ours.next().await.unwrap().unwrap()[..], b"two");
        assert!(ours.next().await.is_none());
        assert_eq!(close_code(&mut raw, Role::Server).await, Some(4001));
        // And our side of the socket was shut down.
        let mut rest = Vec::new();
        raw.read_to_end(&mut rest).await.expect("read to end");
        assert!(rest.is_empty());
        // Sending after the close is refused.
        let err = ours
            .send(bytes::Bytes::from_static(b"late"))
            .await
            .expect_err("after close");
        assert!(matches!(err, TransportError::SendAfterClose), "{err:?}");
    })
    .await;
}

// ---- a peer that stops mid-frame ----------------------------------------------
//
// The stall timer is tokio time, so these run on an in-memory pipe (the
// frames need no TCP) under paused time: the clock moves only when every
// task waits, straight to the next timer, and the timings are exact.

/// Our side over an in-memory pipe (no upgrade: frames from the first
/// byte), and the other end of the pipe.
fn memory_pair(our_role: Role) -> (WebSocketTransport<DuplexStream>, DuplexStream) {
    let (ours, raw) = tokio::io::duplex(1 << 16);
    (
        WebSocketTransport::from_partially_read(ours, our_role, BytesMut::new()),
        raw,
    )
}

#[tokio::test(start_paused = true)]
async fn a_peer_that_stalls_mid_frame_times_out_with_1008() {
    bounded(async {
        let (mut ours, mut raw) = memory_pair(Role::Server);
        ours.set_stall_timeout(Some(Duration::from_millis(200)));
        let bytes = client_frame(true, OpCode::Binary, &[7; 100]);
        raw.write_all(&bytes[..50]).await.expect("write");
        let started = tokio::time::Instant::now();
        let err = ours.next().await.expect("an item").expect_err("an error");
        assert_eq!(started.elapsed(), Duration::from_millis(200));
        assert!(
            matches!(err, TransportError::Stalled { after_ms: 200, .. }),
            "{err:?}"
        );
        assert!(ours.next().await.is_none());
        assert_eq!(close_code(&mut raw, Role::Server).await, Some(1008));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_peer_silent_between_messages_does_not_time_out() {
    bounded(async {
        let (mut ours, mut raw) = memory_pair(Role::Server);
        ours.set_stall_timeout(Some(Duration::from_millis(50)));
        // Six stall timeouts of silence: a timer armed between messages
        // would end the stream with an error before this one fires.
        let silent = tokio::time::timeout(Duration::from_millis(300), ours.next()).await;
        assert!(silent.is_err(), "no item while the peer is silent");
        raw.write_all(&client_frame(true, OpCode::Binary, b"late"))
            .await
            .expect("write");
        assert_eq!(&ours.next().await.unwrap().unwrap()[..], b"late");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_peer_that_trickles_within_the_timeout_is_not_stalled() {
    bounded(async {
        let (mut ours, mut raw) = memory_pair(Role::Server);
        ours.set_stall_timeout(Some(Duration::from_millis(300)));
        let bytes = client_frame(true, OpCode::Binary, &[3; 40]);
        let writer = tokio::spawn(async move {
            for chunk in bytes.chunks(5) {
                raw.write_all(chunk).await.expect("write");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            raw
        });
        // 10 chunks 100 ms apart: 900 ms from the first byte to the last,
        // never 300 ms without bytes. A timer that counted from the first
        // byte (not the last) would fire at 300 ms, mid-frame.
        let started = tokio::time::Instant::now();
        assert_eq!(ours.next().await.unwrap().unwrap().len(), 40);
        assert_eq!(started.elapsed(), Duration::from_millis(900));
        drop(writer.await.expect("writer"));
    })
    .await;
}
