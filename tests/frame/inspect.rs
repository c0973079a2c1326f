//! The public inspection API (`bijou_frame::inspect`): reports, offsets,
//! stream errors, and prefix/hex detection on real captures.

use bijou_frame::codec::Wire;
use bijou_frame::framing::prefix::{Bijou64, Leb128, LengthPrefix, PrefixKind, U32Be};
use bijou_frame::framing::FrameCodec;
use bijou_frame::inspect::{detect, hex::parse_hex, inspect, scan, Status, StreamError};
use bijou_frame::proto::message::{
    Audience, BlobMessage, Challenge, CommitId, HandshakeMessage, LooseCommit, Message,
    RemoteHeads, SedimentreeId, SignedItem, SyncMessage,
};
use bijou_frame::signing::Identity;
use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Signed};
use bytes::BytesMut;
use tokio_util::codec::Encoder;

fn messages() -> [bytes::Bytes; 2] {
    let key = SigningKey::from_bytes(&[1; 32]);
    let hello = Challenge::new(Audience::Known(key.peer_id()), 1_700_000_000, [2; 16]);
    let tree = SedimentreeId::new([3; 32]);
    let blob = Blob::new(vec![4u8; 300]);
    let commit = LooseCommit::new(tree, CommitId::new([5; 32]), [], blob.meta());
    let msg = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
        id: tree,
        sender_heads: RemoteHeads::default(),
        item: SignedItem::new(Signed::seal(&key, &commit).expect("seal"), blob),
    }));
    let challenge = HandshakeMessage::Challenge(Signed::seal(&key, &hello).expect("seal"));
    [
        challenge.encode().expect("encode"),
        msg.encode().expect("encode"),
    ]
}

fn capture() -> Vec<u8> {
    let mut wire = BytesMut::new();
    let mut codec = FrameCodec::new();
    for m in messages() {
        codec.encode(m, &mut wire).expect("frame");
    }
    wire.to_vec()
}

fn run(input: &[u8]) -> (String, bijou_frame::inspect::Summary) {
    let mut out = Vec::new();
    let summary = inspect(input, PrefixKind::Bijou64, &mut out).expect("write");
    (String::from_utf8(out).expect("utf8"), summary)
}

#[test]
fn a_clean_capture_decodes_and_verifies() {
    let (text, summary) = run(&capture());
    assert_eq!(summary.status(), Status::Clean, "{text}");
    assert!(text.contains("#0 @0 (0x000000)  prefix 9e (bijou64, 158 bytes)"));
    assert!(text.contains("SUH\\0 Challenge"));
    assert!(text.contains("#1 @159"));
    assert!(text.contains("LooseCommit (tag 00)"));
    assert_eq!(text.matches("valid (verify_strict)").count(), 2);
    assert!(text.contains("300 B, digest"));
    assert_eq!(summary.to_string(), "2 frame(s), 2 ok, 0 with problems");
}

#[test]
fn a_tampered_blob_is_reported_and_the_next_frame_still_read() {
    let mut wire = capture();
    let last = wire.len() - 1;
    wire[last] ^= 1;
    wire.extend_from_slice(&capture());
    let (text, summary) = run(&wire);
    assert_eq!(summary.status(), Status::BadFrames, "{text}");
    assert!(text.contains("MISMATCH: blob digest"));
    assert_eq!(summary.to_string(), "4 frame(s), 3 ok, 1 with problems");
}

#[test]
fn truncation_and_bad_prefixes_are_reported_at_their_offset() {
    let wire = capture();
    let (_, summary) = run(&wire[..200]);
    assert_eq!(summary.status(), Status::BadStream);
    let error = summary.stream_error.expect("broken").to_string();
    assert!(
        error.contains("error at offset 159 (0x00009f): prefix f9 "),
        "{error}"
    );
    assert!(error.contains("but only 38 byte(s) follow"), "{error}");

    let mut overflow = wire.clone();
    overflow.extend_from_slice(&[0xFF; 9]);
    let (_, summary) = run(&overflow);
    assert!(matches!(
        summary.stream_error,
        Some(StreamError::BadPrefix { offset, .. }) if offset == wire.len()
    ));
    let error = summary.stream_error.expect("broken").to_string();
    assert!(error.contains("overflows u64"), "{error}");

    let (_, summary) = run(&[0xF9, 0x00]);
    let error = summary.stream_error.expect("broken").to_string();
    assert!(error
        .contains("error at offset 0 (0x000000): the stream ends inside a bijou64 length prefix"));
}

#[test]
fn truncation_at_every_offset_is_a_stream_error_or_fewer_frames() {
    let wire = capture();
    for end in 0..wire.len() {
        let summary = scan(&wire[..end], PrefixKind::Bijou64);
        let whole_frames = usize::from(end >= 159);
        assert_eq!(summary.frames, whole_frames as u64, "{end}");
        assert_eq!(
            summary.stream_error.is_some(),
            end != 0 && end != 159,
            "{end}"
        );
    }
}

#[test]
fn a_malformed_message_in_a_good_frame_is_reported_with_its_payload_offset() {
    let mut wire = vec![8];
    wire.extend_from_slice(b"SUM\0junk");
    let (text, summary) = run(&wire);
    assert_eq!(summary.status(), Status::BadFrames);
    assert!(text.contains("MALFORMED message (payload starts at offset 1"));
}

#[test]
fn detection_finds_each_prefix_and_hex_text() {
    let [challenge, commit] = messages();
    for prefix in PrefixKind::ALL {
        let mut wire = Vec::new();
        for m in [&challenge, &commit] {
            let len = u64::try_from(m.len()).expect("small");
            let (bytes, n) = match prefix {
                PrefixKind::U32Be => U32Be::encode(len),
                PrefixKind::Leb128 => Leb128::encode(len),
                _ => Bijou64::encode(len),
            }
            .expect("fits");
            wire.extend_from_slice(&bytes[..n]);
            wire.extend_from_slice(m);
        }
        let found = detect(&wire).expect("a reading");
        assert_eq!((found.hex, found.prefix), (false, prefix));
        assert_eq!(found.summary.status(), Status::Clean);

        let text: String = wire.iter().map(|b| format!("{b:02x} ")).collect();
        let found = detect(text.as_bytes()).expect("a reading");
        assert_eq!((found.hex, found.prefix), (true, prefix));
        assert_eq!(parse_hex(text.as_bytes()).expect("hex"), wire);
    }
    assert!(detect(b"").is_none());
    assert!(detect(&[0xFF; 64]).is_none());
}

/// What the `inspect` fuzz target asserts, over every truncation, every
/// single-bit flip and pseudo-random bytes: the inspector agrees with the
/// shared oracle (same frames, same verdicts, same summary) under each
/// prefix, and never panics.
fn agrees_with_the_oracle(data: &[u8]) {
    use bijou_test_support::checks::check_inspect;
    fn one<P: LengthPrefix>(data: &[u8]) {
        let summary = scan(data, P::KIND);
        let report = check_inspect::<P>(data);
        assert_eq!(summary.status() == Status::BadStream, report.broken);
        assert_eq!(
            (summary.frames as usize, summary.bad as usize),
            (report.frames, report.bad)
        );
    }
    one::<Bijou64>(data);
    one::<Leb128>(data);
    one::<U32Be>(data);
    if let Some(found) = detect(data) {
        // A reading is chosen for a good frame, or for a message cut short
        // under a prefix that read no bad frame.
        assert!(
            found.summary.good() > 0
                || (found.summary.bad == 0
                    && matches!(
                        found.summary.stream_error,
                        Some(StreamError::TruncatedFrame { .. })
                    ))
        );
    }
}

#[test]
fn mutated_captures_agree_with_the_fuzz_oracle() {
    let wire = capture();
    for end in 0..=wire.len() {
        agrees_with_the_oracle(&wire[..end]);
    }
    for bit in 0..wire.len() * 8 {
        let mut flipped = wire.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        agrees_with_the_oracle(&flipped);
    }
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for len in 0..200 {
        let random: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        agrees_with_the_oracle(&random);
    }
}

/// A capture of three messages (a challenge, then commits with 100-byte
/// and 300-byte blobs, as `bijou echo --capture` writes) behind `prefix`,
/// with the offset each frame starts at and the prefix's length there.
fn framed_capture(prefix: PrefixKind) -> (Vec<u8>, Vec<(usize, usize)>) {
    let key = SigningKey::from_bytes(&[1; 32]);
    let tree = SedimentreeId::new([3; 32]);
    let [challenge, commit] = messages();
    let blob = Blob::new(vec![6u8; 100]);
    let small = LooseCommit::new(tree, CommitId::new([7; 32]), [], blob.meta());
    let small = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
        id: tree,
        sender_heads: RemoteHeads::default(),
        item: SignedItem::new(Signed::seal(&key, &small).expect("seal"), blob),
    }))
    .encode()
    .expect("encode");
    let mut wire = Vec::new();
    let mut frames = Vec::new();
    for m in [challenge, small, commit] {
        let (bytes, n) = prefix.encode(m.len() as u64).expect("fits");
        frames.push((wire.len(), n));
        wire.extend_from_slice(&bytes[..n]);
        wire.extend_from_slice(&m);
    }
    (wire, frames)
}

/// Cut at every offset, raw and as hex text, a capture is read under its
/// own prefix and the truncation is reported at the offset of the frame it
/// cut (the u32-BE capture cut at 250 bytes used to read as 8 bijou64
/// frames, 7 of them malformed). Cuts on a frame boundary read clean. Only
/// a cut before the first frame's schema is complete says nothing of the
/// prefix: no reading at all.
#[test]
fn a_capture_cut_anywhere_is_read_under_its_prefix_with_the_cut_reported() {
    let mut cuts = 0;
    for prefix in PrefixKind::ALL {
        let (wire, frames) = framed_capture(prefix);
        for cut in 0..=wire.len() {
            let bytes = &wire[..cut];
            let text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            // The frame the cut falls in (or the number of whole frames,
            // on a boundary).
            let inside = frames.iter().rposition(|&(at, _)| at < cut);
            let boundary = cut == wire.len() || frames.iter().any(|&(at, _)| at == cut);
            let (first_at, first_prefix) = frames[0];
            let knowable = cut >= first_at + first_prefix + 4;
            for (hex, input) in [(false, bytes), (true, text.as_bytes())] {
                cuts += 1;
                let found = detect(input);
                if !knowable {
                    assert_eq!(found, None, "{prefix} cut at {cut}, hex {hex}");
                    continue;
                }
                let found =
                    found.unwrap_or_else(|| panic!("{prefix} cut at {cut}, hex {hex}: no reading"));
                assert_eq!(
                    (found.hex, found.prefix),
                    (hex, prefix),
                    "{prefix} cut at {cut}: {:?}",
                    found.summary
                );
                assert_eq!(found.summary.bad, 0, "{prefix} cut at {cut}");
                let whole =
                    frames.iter().filter(|&&(at, _)| at < cut).count() - usize::from(!boundary);
                assert_eq!(found.summary.frames, whole as u64, "{prefix} cut at {cut}");
                match (&found.summary.stream_error, boundary) {
                    (None, true) => {}
                    (Some(StreamError::TruncatedFrame { offset, .. }), false)
                    | (Some(StreamError::TruncatedPrefix { offset, .. }), false) => {
                        let (at, _) = frames[inside.expect("inside a frame")];
                        assert_eq!(*offset, at, "{prefix} cut at {cut}");
                    }
                    (other, _) => panic!("{prefix} cut at {cut}, hex {hex}: {other:?}"),
                }
            }
        }
    }
    println!("{cuts} cut points read under the right prefix");
    assert!(cuts > 6 * 900, "{cuts}");
}

/// A keyhive (`SUK\0`) frame is read like any other: its kind, signer and
/// card, its fields once its signature verifies; a forged one is a bad
/// frame.
#[test]
fn a_keyhive_frame_is_described_and_verified() {
    use bijou_frame::proto::keyhive::{
        ContactCardJson, KeyhiveMessage, KeyhivePeer, SignedKeyhive, SukMessage,
    };
    let key = SigningKey::from_bytes(&[1; 32]);
    let suk = SukMessage {
        contact_card: Some(ContactCardJson::from_json("{}".into())),
        signed: SignedKeyhive::sign(
            &key,
            KeyhiveMessage::SyncOps {
                sender: KeyhivePeer::new(key.peer_id()),
                target: KeyhivePeer::new(key.peer_id()),
                ops: vec![vec![7; 140].into()],
                responder_total: 1,
                requester_total: 2,
            },
        )
        .expect("sign"),
    };
    let mut wire = BytesMut::new();
    FrameCodec::new()
        .encode(suk.to_bytes().expect("encode"), &mut wire)
        .expect("frame");
    let (text, summary) = run(&wire);
    assert_eq!(summary.status(), Status::Clean, "{text}");
    assert!(text.contains("SUK\\0 SyncOps from "), "{text}");
    assert!(text.contains("card       2 B of JSON"), "{text}");
    assert!(text.contains("carries    1 event(s)"), "{text}");
    assert!(text.contains("signature  valid (verify_strict)"), "{text}");

    let mut forged = wire.to_vec();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    let (text, summary) = run(&forged);
    assert_eq!(summary.status(), Status::BadFrames, "{text}");
    assert!(text.contains("signature  INVALID"), "{text}");
}
