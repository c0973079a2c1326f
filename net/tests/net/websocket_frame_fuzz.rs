//! Mutation fuzzing of the WebSocket frame reader
//! ([`FrameDecoder`](bijou_framing::websocket::FrameDecoder)):
//! valid frame sequences (fragmented messages with control frames between
//! the fragments, every length form), then truncation at every offset,
//! every single-bit flip, and random bytes. The decoder never panics,
//! gives back exactly the frames of a valid input however it is cut, and
//! never holds a buffer larger than `2 x bytes given + 64 KiB` (plus the
//! input's own allocation) whatever a header announces.

use bijou_framing::websocket::{encode_frame, Frame, FrameDecoder, OpCode, Role, WsFrameError};
use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

/// The documented receive step of the frame decoders: 64 KiB
/// (`FrameCodec`'s memory section, which the WebSocket codec shares).
const RESERVE_STEP: usize = 64 * 1024;

const MAX: usize = 1 << 20;

/// One message: its fragments' payloads, and control frames to put after
/// fragment `i`.
#[derive(Debug, Clone)]
struct MessagePlan {
    fragments: Vec<Vec<u8>>,
    pings_after: Vec<Vec<u8>>,
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..20),
        1 => proptest::collection::vec(any::<u8>(), 120..300),
        1 => Just(vec![0x5A; 70_000]),
    ]
}

fn message() -> impl Strategy<Value = MessagePlan> {
    (
        proptest::collection::vec(payload(), 1..4),
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..126), 0..3),
    )
        .prop_map(|(fragments, pings_after)| MessagePlan {
            fragments,
            pings_after,
        })
}

/// The wire bytes (client frames, masked) and the frames they hold.
fn build(plans: &[MessagePlan], close: bool) -> (BytesMut, Vec<Frame>) {
    let mut wire = BytesMut::new();
    let mut frames = Vec::new();
    let mut push = |wire: &mut BytesMut, fin, opcode, payload: &[u8], key: u8| {
        encode_frame(wire, fin, opcode, payload, Some([key, 0x3C, key ^ 0xFF, 7]));
        frames.push(Frame {
            fin,
            opcode,
            payload: Bytes::copy_from_slice(payload),
        });
    };
    for (m, plan) in plans.iter().enumerate() {
        let last = plan.fragments.len() - 1;
        for (i, fragment) in plan.fragments.iter().enumerate() {
            let opcode = if i == 0 {
                OpCode::Binary
            } else {
                OpCode::Continuation
            };
            push(&mut wire, i == last, opcode, fragment, (m + i) as u8);
            if i < last {
                if let Some(ping) = plan.pings_after.get(i) {
                    push(&mut wire, true, OpCode::Ping, ping, 0x99);
                }
            }
        }
    }
    if close {
        let mut payload = 1000u16.to_be_bytes().to_vec();
        payload.extend_from_slice(b"bye");
        push(&mut wire, true, OpCode::Close, &payload, 0x42);
    }
    (wire, frames)
}

/// Decodes everything `buf` holds, checking the memory bound after each
/// call; stops at the first error.
fn decode_all(
    decoder: &mut FrameDecoder,
    buf: &mut BytesMut,
    given: usize,
    out: &mut Vec<Frame>,
) -> Result<(), WsFrameError> {
    loop {
        let step = decoder.decode(buf);
        let bound = 2 * given + RESERVE_STEP + 64;
        assert!(
            buf.capacity() <= bound.max(given + 64),
            "capacity {} after {given} bytes",
            buf.capacity()
        );
        match step? {
            Some(frame) => out.push(frame),
            None => return Ok(()),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Cut anywhere: the first part gives a prefix of the frames, the rest
    /// the others; the first part alone at the end of the stream is
    /// `Truncated` unless the cut is between frames.
    #[test]
    fn truncation_at_every_offset(plans in proptest::collection::vec(message(), 1..4), close in any::<bool>()) {
        let (wire, frames) = build(&plans, close);
        // Every offset for small inputs, a spread of them for large ones.
        let step = (wire.len() / 400).max(1);
        for cut in (0..=wire.len()).step_by(step) {
            let mut decoder = FrameDecoder::new(Role::Server, MAX);
            let mut got = Vec::new();
            let mut buf = BytesMut::from(&wire[..cut]);
            decode_all(&mut decoder, &mut buf, cut, &mut got).expect("valid prefix");
            prop_assert!(frames.starts_with(&got));
            let mut eof_decoder = decoder.clone();
            let mut eof_buf = buf.clone();
            let at_boundary = eof_buf.is_empty() && eof_decoder.is_at_boundary();
            match eof_decoder.decode_eof(&mut eof_buf) {
                Ok(None) => prop_assert!(at_boundary),
                Err(WsFrameError::Truncated { .. }) => prop_assert!(!at_boundary),
                other => prop_assert!(false, "{other:?} at the end of {cut} bytes"),
            }
            buf.extend_from_slice(&wire[cut..]);
            decode_all(&mut decoder, &mut buf, wire.len(), &mut got).expect("valid rest");
            prop_assert_eq!(&got, &frames);
            prop_assert!(buf.is_empty());
        }
    }

    /// Every single-bit flip of a valid input: no panic, the bound holds,
    /// and whatever is decoded before an error is a valid frame.
    #[test]
    fn every_single_bit_flip(plans in proptest::collection::vec(message(), 1..3)) {
        let (wire, _) = build(&plans, true);
        let bits = wire.len().min(2_000) * 8;
        for bit in 0..bits {
            let mut mutated = wire.clone();
            mutated[bit / 8] ^= 1 << (bit % 8);
            let given = mutated.len();
            let mut decoder = FrameDecoder::new(Role::Server, MAX);
            let mut got = Vec::new();
            let _ = decode_all(&mut decoder, &mut mutated, given, &mut got);
            let _ = decoder.decode_eof(&mut mutated);
            for frame in &got {
                prop_assert!(!frame.opcode.is_control() || frame.payload.len() <= 125);
            }
        }
    }

    /// Random bytes, fed in random pieces, in either role.
    #[test]
    fn random_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..4_000),
        pieces in proptest::collection::vec(1usize..600, 1..20),
        server in any::<bool>(),
    ) {
        let role = if server { Role::Server } else { Role::Client };
        let mut decoder = FrameDecoder::new(role, MAX);
        let mut buf = BytesMut::new();
        let mut given = 0;
        let mut rest = &bytes[..];
        let mut got = Vec::new();
        for piece in pieces.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (now, later) = rest.split_at((*piece).min(rest.len()));
            rest = later;
            given += now.len();
            buf.extend_from_slice(now);
            if decode_all(&mut decoder, &mut buf, given, &mut got).is_err() {
                break;
            }
        }
        let total: usize = got.iter().map(|f| f.payload.len()).sum();
        prop_assert!(total <= given);
    }
}

/// A lying length in every header form, on a decoder alone: one step
/// reserved at most, whatever is announced; `Truncated` at the end.
#[test]
fn lying_lengths_in_every_form_reserve_one_step_at_most() {
    for (len, form) in [(100usize, "7-bit"), (60_000, "16-bit"), (MAX, "64-bit")] {
        let mut wire = BytesMut::new();
        bijou_framing::websocket::encode_header(
            &mut wire,
            true,
            OpCode::Binary,
            len,
            Some([1, 2, 3, 4]),
        );
        wire.extend_from_slice(&[0; 10]);
        let mut decoder = FrameDecoder::new(Role::Server, MAX);
        assert_eq!(decoder.decode(&mut wire), Ok(None), "{form}");
        assert!(
            wire.capacity() <= RESERVE_STEP + 64,
            "{form}: {}",
            wire.capacity()
        );
        assert!(matches!(
            decoder.decode_eof(&mut wire),
            Err(WsFrameError::Truncated { needed, have: 10 }) if needed == len as u64
        ));
    }
    // 64-bit with the top bit set: refused from the header.
    let mut wire = BytesMut::from(&[0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4][..]);
    let mut decoder = FrameDecoder::new(Role::Server, MAX);
    assert_eq!(
        decoder.decode(&mut wire),
        Err(WsFrameError::LengthTopBit { len: 1 << 63 })
    );
}
