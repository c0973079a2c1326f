//! The fuzz oracles (the `fuzz` feature): one check per cargo-fuzz target,
//! shared by the CI-scale mutation fuzz (`net/tests/net/mutation_fuzz.rs`), the
//! regression replay (`net/tests/net/regressions.rs`) and the cargo-fuzz
//! targets (`fuzz/fuzz_targets/`). It uses nothing but the library crates,
//! `bytes` and `tokio-util`: the fuzz targets build no proptest and no
//! tokio networking for it.
//!
//! Every check decodes its input and asserts what must hold for *any*
//! input: no panic, and every accepted input is the one encoding of what it
//! decoded to (it re-encodes to exactly the same bytes). A failed assertion
//! is a bug in the decoders (or in this oracle), never a property of the
//! input.

use bijou_codec::Wire;
use bijou_framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_framing::{FrameCodec, FrameError};
use bijou_net::MessageCodec;
use bijou_proto::keyhive::MIN_EVENT_LEN;
use bijou_proto::keyhive::{KeyhiveError, KeyhiveMessage, SukMessage};
use bijou_proto::message::{
    BlobMessage, Challenge, EphemeralMessage, Fragment, HandshakeMessage, LooseCommit, Message,
    MessageError, Response, Scoped, SyncMessage, SyncResult,
};
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::{HasBlobMeta, Payload, Signed, SignedDecodeError, SIGNATURE_LEN};
use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// How far a decoder got with an input (for the depth statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Decoded.
    Accepted,
    /// Rejected by a field after the envelope (schema, size, tag or kind,
    /// issuer).
    Deep,
    /// Rejected in the envelope.
    Shallow,
}

impl Depth {
    /// Accepted or rejected beyond the envelope.
    pub fn is_deep(self) -> bool {
        self != Self::Shallow
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---- messages -------------------------------------------------------------

fn decode_error_offset(e: &SignedDecodeError, fallback: usize) -> usize {
    match e {
        SignedDecodeError::Read(r) => r.offset(),
        SignedDecodeError::WrongSchema { offset, .. }
        | SignedDecodeError::WrongDiscriminant { offset, .. }
        | SignedDecodeError::NonCanonicalIssuer { offset } => *offset,
        _ => fallback,
    }
}

/// Where in the message decoding failed (absolute offset).
pub fn message_error_offset(e: &MessageError) -> Option<usize> {
    match e {
        MessageError::Read(r) => Some(r.offset()),
        MessageError::UnknownSchema { .. } => Some(0),
        MessageError::TotalSize { .. } => Some(4),
        MessageError::RetiredTag { offset, .. } => Some(*offset),
        MessageError::Signed { offset, source } => Some(decode_error_offset(source, *offset)),
        _ => None,
    }
}

/// `SUM\0 · TotalSize · Tag` (9) or `SUH\0 · Kind` (5).
fn envelope_len(bytes: &[u8]) -> usize {
    if bytes.starts_with(b"SUH\0") || bytes.starts_with(b"SUE\0") {
        5
    } else {
        9
    }
}

fn message_depth(bytes: &[u8], result: &Result<Message, MessageError>) -> Depth {
    match result {
        Ok(_) => Depth::Accepted,
        Err(e) if message_error_offset(e).is_some_and(|at| at >= envelope_len(bytes)) => {
            Depth::Deep
        }
        Err(_) => Depth::Shallow,
    }
}

/// Decodes `bytes` as one message. Accepted: it re-encodes to exactly
/// `bytes`, `wire_len` agrees, the schema-specific decoder agrees, and (if
/// `verify`) verifying it does not panic, and what verifies re-encodes
/// field for field.
pub fn check_message(bytes: &[u8], verify: bool) -> (Result<Message, MessageError>, Depth) {
    let input = Bytes::copy_from_slice(bytes);
    let result = Message::decode(input.clone());
    match &result {
        Ok(msg) => {
            let again = msg
                .encode()
                .unwrap_or_else(|e| panic!("accepted {} but cannot encode it: {e}", hex(bytes)));
            assert_eq!(
                &again[..],
                bytes,
                "accepted a second encoding: {}",
                hex(bytes)
            );
            assert_eq!(msg.wire_len(), Ok(bytes.len()), "{}", hex(bytes));
            match msg {
                Message::Sync(sync) => {
                    assert_eq!(SyncMessage::decode(input).as_ref(), Ok(sync));
                    if verify {
                        verify_sync(sync);
                    }
                }
                Message::Handshake(h) => {
                    assert_eq!(HandshakeMessage::decode(input).as_ref(), Ok(h));
                    if verify {
                        verify_handshake(h);
                    }
                }
                Message::Ephemeral(e) => {
                    assert_eq!(EphemeralMessage::decode(input).as_ref(), Ok(e));
                    if verify {
                        verify_ephemeral(e);
                    }
                }
                Message::Keyhive(k) => {
                    assert_eq!(SukMessage::from_bytes(&input).as_ref(), Ok(k.as_ref()));
                    if verify {
                        verify_keyhive(k);
                    }
                }
            }
        }
        Err(e) => {
            // The schema-specific decoders refuse it too.
            if bytes.starts_with(b"SUM\0") {
                assert_eq!(SyncMessage::decode(input).err().as_ref(), Some(e));
            } else if bytes.starts_with(b"SUH\0") {
                assert_eq!(HandshakeMessage::decode(input).err().as_ref(), Some(e));
            } else if bytes.starts_with(b"SUE\0") {
                assert_eq!(EphemeralMessage::decode(input).err().as_ref(), Some(e));
            } else if bytes.starts_with(b"SUK\0") {
                let alone = SukMessage::from_bytes(&input).err();
                assert_eq!(alone.map(MessageError::Keyhive).as_ref(), Some(e));
            }
            let _ = e.to_string();
        }
    }
    let depth = message_depth(bytes, &result);
    (result, depth)
}

/// The signed payload's fields re-encode to the bytes they came from.
fn assert_fields_canonical<T: Payload + PartialEq + std::fmt::Debug>(
    signed: &Signed<T>,
    payload: &T,
) {
    let bytes = signed.as_bytes();
    let header = 4 + usize::from(T::DISCRIMINANT.is_some()) + 32;
    let fields = &bytes[header..bytes.len() - SIGNATURE_LEN];
    assert_eq!(
        &payload.encode().expect("a decoded payload encodes")[..],
        fields,
        "verified payload re-encodes differently: {}",
        hex(bytes)
    );
}

fn verify_blob_message<T>(m: &BlobMessage<T>)
where
    T: Payload + Scoped + HasBlobMeta + PartialEq + std::fmt::Debug,
{
    // What `BlobMessage::verify` does (signature, scope, blob), in steps,
    // so that a good signature gets its payload checked field for field.
    if let Ok(verified) = m.item.signed().verify_strict() {
        assert_fields_canonical(m.item.signed(), verified.payload());
        if verified.payload().sedimentree_id() == m.id {
            let _ = verified.verify_blob(m.item.blob().clone());
        }
    }
}

fn verify_sync(sync: &SyncMessage) {
    match sync {
        SyncMessage::LooseCommit(m) => verify_blob_message(m),
        SyncMessage::Fragment(m) => verify_blob_message(m),
        SyncMessage::BatchSyncResponse(r) => {
            if let Ok(items) = sync.verify() {
                let expected = match &r.result {
                    SyncResult::Ok(diff) => diff.commits().len() + diff.fragments().len(),
                    _ => 0,
                };
                assert_eq!(items.len(), expected);
            }
        }
        other => assert!(matches!(other.verify().as_deref(), Ok([]))),
    }
}

fn verify_handshake(h: &HandshakeMessage) {
    match h {
        HandshakeMessage::Challenge(s) => {
            let _ = s.digest();
            if let Ok(v) = s.verify_strict() {
                assert_fields_canonical(s, v.payload());
            }
        }
        HandshakeMessage::Response(s) => {
            if let Ok(v) = s.verify_strict() {
                assert_fields_canonical(s, v.payload());
            }
        }
        HandshakeMessage::Rejection(_) => {}
    }
}

/// An ephemeral message: what verifies re-encodes field for field, and its
/// unverified header agrees with the verified payload.
fn verify_ephemeral(e: &EphemeralMessage) {
    if let EphemeralMessage::Ephemeral(signed) = e {
        if let Ok(v) = signed.verify_strict() {
            assert_fields_canonical(signed.signed(), v.payload());
            let header = signed.header();
            let payload = v.payload();
            assert_eq!(
                (
                    header.topic,
                    header.nonce,
                    header.timestamp,
                    header.payload_len
                ),
                (
                    payload.topic(),
                    payload.nonce(),
                    payload.timestamp(),
                    payload.payload().len() as u64
                )
            );
        }
    }
}

/// The `sue` target: a `SUE\0` ephemeral message.
pub fn check_sue(bytes: &[u8], verify: bool) -> Depth {
    check_message(bytes, verify).1
}

/// A keyhive message verified against the key it names: what verifies
/// says it is from its signer.
fn verify_keyhive(message: &SukMessage) {
    let issuer = message.signed.issuer;
    if let Ok(verified) = message.clone().verify(issuer) {
        assert_eq!(verified.keyhive().sender().key, issuer);
    }
}

/// The `suk` target: a `SUK\0` keyhive message, through [`check_message`]
/// (it re-encodes exactly, `SukMessage` reads it as `Message` does, what
/// verifies names its signer as sender), and: its keyhive payload decodes
/// alone to the same message, and no event is shorter than any keyhive
/// event.
pub fn check_suk(bytes: &[u8], verify: bool) -> Depth {
    match check_message(bytes, verify).0 {
        Ok(Message::Keyhive(message)) => {
            let signed = &message.signed;
            let alone = KeyhiveMessage::from_cbor(&signed.payload, 0)
                .unwrap_or_else(|e| panic!("payload does not decode alone ({e}): {}", hex(bytes)));
            assert_eq!(alone, signed.message);
            let events = match &signed.message {
                KeyhiveMessage::SyncResponse { found, .. } => &found[..],
                KeyhiveMessage::SyncOps { ops, .. } => &ops[..],
                _ => &[],
            };
            assert!(events.iter().all(|e| e.len() >= MIN_EVENT_LEN));
            Depth::Accepted
        }
        // A mutant that became another kind of message.
        Ok(_) => Depth::Accepted,
        Err(MessageError::Keyhive(
            KeyhiveError::Schema { .. } | KeyhiveError::TotalSize { .. },
        ))
        | Err(MessageError::UnknownSchema { .. }) => Depth::Shallow,
        Err(_) if bytes.len() < 8 => Depth::Shallow,
        Err(_) => Depth::Deep,
    }
}

/// The `sum` target: a `SUM\0` sync message.
pub fn check_sum(bytes: &[u8], verify: bool) -> Depth {
    check_message(bytes, verify).1
}

/// The `suh` target: a `SUH\0` handshake message.
pub fn check_suh(bytes: &[u8], verify: bool) -> Depth {
    check_message(bytes, verify).1
}

// ---- signed items ---------------------------------------------------------

/// Decodes a standalone `Signed<T>`. Accepted: the wire form is the input,
/// the fields between issuer and signature decode on their own as a `T`
/// that re-encodes to exactly those bytes, and verification does not panic.
///
/// With `key` (the input was signed with it, issuer unchanged): an accepted
/// input must verify, and sealing the verified payload with the same key
/// must give exactly the input.
pub fn check_signed<T>(bytes: &[u8], key: Option<&SigningKey>, verify: bool) -> Depth
where
    T: Payload + PartialEq + std::fmt::Debug,
{
    let header = 4 + usize::from(T::DISCRIMINANT.is_some()) + 32;
    match Signed::<T>::decode(Bytes::copy_from_slice(bytes)) {
        Ok(signed) => {
            assert_eq!(signed.as_bytes(), bytes);
            assert_eq!(&signed.encode().expect("signed bytes encode")[..], bytes);
            let fields = &bytes[header..bytes.len() - SIGNATURE_LEN];
            let payload = T::decode(Bytes::copy_from_slice(fields)).unwrap_or_else(|e| {
                panic!(
                    "Signed accepted fields that do not decode alone ({e}): {}",
                    hex(bytes)
                )
            });
            assert_eq!(
                &payload.encode().expect("payload encodes")[..],
                fields,
                "accepted fields that re-encode differently: {}",
                hex(bytes)
            );
            let _ = signed.digest();
            if let Some(key) = key {
                let verified = signed.verify_strict().unwrap_or_else(|e| {
                    panic!("re-signed input does not verify ({e}): {}", hex(bytes))
                });
                assert_eq!(verified.payload(), &payload);
                let resealed = Signed::seal(key, verified.payload()).expect("seal");
                assert_eq!(
                    resealed.as_bytes(),
                    bytes,
                    "decode, verify, re-seal gave other bytes: {}",
                    hex(bytes)
                );
            } else if verify {
                if let Ok(verified) = signed.verify_strict() {
                    assert_eq!(verified.payload(), &payload);
                }
            }
            Depth::Accepted
        }
        Err(e) => {
            let _ = e.to_string();
            if decode_error_offset(&e, 0) >= header {
                Depth::Deep
            } else {
                Depth::Shallow
            }
        }
    }
}

/// The `signed_commit` target.
pub fn check_signed_commit(bytes: &[u8], verify: bool) -> Depth {
    check_signed::<LooseCommit>(bytes, None, verify)
}

/// The `signed_fragment` target.
pub fn check_signed_fragment(bytes: &[u8], verify: bool) -> Depth {
    check_signed::<Fragment>(bytes, None, verify)
}

/// A standalone signed challenge or response (the handshake's signed
/// payloads, decoded on their own).
pub fn check_signed_handshake(bytes: &[u8], key: Option<&SigningKey>) -> Depth {
    match bytes.get(4) {
        Some(1) => check_signed::<Response>(bytes, key, key.is_none()),
        _ => check_signed::<Challenge>(bytes, key, key.is_none()),
    }
}

// ---- frame streams --------------------------------------------------------

/// What feeding a stream to the codecs gave.
#[derive(Debug, Clone, Default)]
pub struct StreamReport {
    /// Frames delivered before the stream ended or failed.
    pub frames: Vec<Bytes>,
    /// Frames whose contents decoded as a message.
    pub messages: usize,
    /// The framing error that ended the stream, if any (as text).
    pub error: Option<String>,
}

/// A frame codec with prefix `P` and maximum `max`.
pub fn frame_codec<P: LengthPrefix>(max: usize) -> FrameCodec<P> {
    let mut builder = FrameCodec::builder().prefix(P::default());
    builder.max_frame_length(max);
    builder.new_codec()
}

/// Feeds the whole stream at once to a `FrameCodec<P>`: the reference.
fn whole_stream<P: LengthPrefix>(stream: &[u8], max: usize) -> (Vec<Bytes>, Option<String>) {
    let mut codec = frame_codec::<P>(max);
    let mut buf = BytesMut::from(stream);
    let mut frames = Vec::new();
    let mut eof = false;
    loop {
        let step = if eof {
            codec.decode_eof(&mut buf)
        } else {
            codec.decode(&mut buf)
        };
        match step {
            Ok(Some(frame)) => {
                assert!(frame.len() <= max, "a frame over the maximum");
                frames.push(frame);
            }
            Ok(None) if eof => return (frames, None),
            Ok(None) => eof = true,
            Err(e) => {
                let text = e.to_string();
                // Terminal: nothing is consumed, the same error again.
                let left = buf.len();
                let again = if eof {
                    codec.decode_eof(&mut buf)
                } else {
                    codec.decode(&mut buf)
                };
                assert_eq!(
                    again.err().map(|e| e.to_string()),
                    Some(text.clone()),
                    "a framing error did not repeat: {}",
                    hex(stream)
                );
                assert_eq!(buf.len(), left, "a framing error consumed bytes");
                return (frames, Some(text));
            }
        }
    }
}

/// Feeds `stream` to a `MessageCodec<P>` in chunks of the given sizes (the
/// last chunk takes the rest), then ends it. Checks:
///
/// - the frames are the ones the whole stream gives at once, and so is
///   the error that ends it, whatever the split points;
/// - a framing error is terminal (it repeats, consumes nothing, and the
///   stream is not read further);
/// - the frames, framed again with `P`, are exactly the bytes consumed
///   (canonical prefixes), and the whole stream if it did not fail;
/// - every frame's message is what `Message::decode` gives, and an accepted
///   one re-encodes to the frame's bytes;
/// - with `expect` (an unmutated stream), the frames are exactly those.
pub fn check_stream<P: LengthPrefix>(
    stream: &[u8],
    chunks: &[usize],
    max: usize,
    expect: Option<&[Bytes]>,
) -> StreamReport {
    let (reference, reference_error) = whole_stream::<P>(stream, max);

    let mut codec = MessageCodec::from_frame_codec(frame_codec::<P>(max));
    let mut buf = BytesMut::new();
    let mut report = StreamReport::default();
    let mut rest = stream;
    let mut sizes = chunks.iter().copied();
    let mut failed: Option<FrameError> = None;
    let mut at_eof = false;
    'feed: while !rest.is_empty() {
        let n = sizes.next().unwrap_or(rest.len()).clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        buf.extend_from_slice(chunk);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => check_frame(frame, &mut report),
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break 'feed;
                }
            }
        }
    }
    if failed.is_none() {
        at_eof = true;
        loop {
            match codec.decode_eof(&mut buf) {
                Ok(Some(frame)) => check_frame(frame, &mut report),
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
    }
    if let Some(e) = &failed {
        let left = buf.len();
        let again = if at_eof {
            codec.decode_eof(&mut buf)
        } else {
            codec.decode(&mut buf)
        };
        assert_eq!(
            again.err().map(|e| e.to_string()),
            Some(e.to_string()),
            "a framing error did not repeat: {}",
            hex(stream)
        );
        assert_eq!(buf.len(), left, "a framing error consumed bytes");
        report.error = Some(e.to_string());
    }

    assert_eq!(
        report.frames,
        reference,
        "split feed {chunks:?} gave other frames than the whole stream: {}",
        hex(stream)
    );
    assert_eq!(
        report.error,
        reference_error,
        "split feed {chunks:?} ended differently: {}",
        hex(stream)
    );

    // Framing the frames again gives back the bytes they were read from.
    let mut again = BytesMut::new();
    let mut encoder = frame_codec::<P>(max);
    for frame in &report.frames {
        encoder
            .encode(frame.clone(), &mut again)
            .expect("a decoded frame encodes");
    }
    assert!(
        stream.starts_with(&again),
        "frames re-framed differ from the stream ({}): {}",
        P::NAME,
        hex(stream)
    );
    if report.error.is_none() {
        assert_eq!(
            again.len(),
            stream.len(),
            "bytes left over without an error"
        );
    }

    if let Some(expect) = expect {
        assert_eq!(report.error, None, "a valid stream failed: {}", hex(stream));
        assert_eq!(report.frames, expect, "a valid stream's frames changed");
    }
    report
}

/// A frame from `MessageCodec`: an accepted message re-encodes to the
/// frame's bytes.
fn check_frame(frame: bijou_proto::message::MessageFrame, report: &mut StreamReport) {
    if let Ok(msg) = &frame.message {
        assert_eq!(
            msg.encode().expect("encodes"),
            frame.bytes,
            "accepted a second encoding: {}",
            hex(&frame.bytes)
        );
        report.messages += 1;
    }
    report.frames.push(frame.bytes);
}

/// Chunk sizes for a stream of `len` bytes from a seed: every byte alone,
/// small random chunks, larger random chunks, one split point, or none.
pub fn split_sizes(seed: u64, len: usize) -> Vec<usize> {
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        // SplitMix64.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let bound = |x: u64, n: usize| (x % n.max(1) as u64) as usize;
    let mut sizes = Vec::new();
    match seed % 5 {
        0 => sizes.resize(len, 1),
        1 | 2 => {
            let top = if seed % 5 == 1 { 8 } else { 80 };
            let mut done = 0;
            while done < len {
                let n = 1 + bound(next(), top);
                sizes.push(n);
                done += n;
            }
        }
        3 => {
            let cut = bound(next(), len + 1);
            sizes.extend([cut.max(1), len]);
        }
        _ => sizes.push(len),
    }
    sizes
}

/// The `stream_*` targets: `stream` under prefix `P`, fed whole and in
/// several deterministic split patterns; the default maximum and a small
/// one (256 bytes, so `TooLarge` is reached).
pub fn check_stream_all_splits<P: LengthPrefix>(stream: &[u8]) {
    for seed in 0..5 {
        let sizes = split_sizes(seed, stream.len());
        check_stream::<P>(
            stream,
            &sizes,
            bijou_framing::DEFAULT_MAX_FRAME_LENGTH,
            None,
        );
        check_stream::<P>(stream, &sizes, 256, None);
    }
}

// ---- the inspector --------------------------------------------------------

/// What the inspector made of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InspectReport {
    /// Frames cut.
    pub frames: usize,
    /// Frames that did not decode or verify.
    pub bad: usize,
    /// The stream itself is malformed (the inspector stopped early).
    pub broken: bool,
}

/// The inspector's decode path (`examples/inspect.rs`: `inspect`,
/// `describe` and the verdicts), step for step: read a prefix with
/// `P::decode`, cut the frame with checked arithmetic, decode the message,
/// verify what the inspector verifies (handshake signatures; a commit or
/// fragment's signature, scope and blob; a response's items). Stops at the
/// first malformed prefix or a frame longer than what follows. Then checks
/// that the frames it cut are the ones `FrameCodec<P>` delivers, and that
/// it stops iff the codec fails.
pub fn check_inspect<P: LengthPrefix>(input: &[u8]) -> InspectReport {
    let mut offset = 0usize;
    let mut frames = Vec::new();
    let mut report = InspectReport::default();
    while offset < input.len() {
        let rest = &input[offset..];
        let (len, prefix_len) = match P::decode(rest) {
            Ok(ok) => ok,
            // Incomplete or malformed: the inspector stops here.
            Err(_) => {
                report.broken = true;
                break;
            }
        };
        assert!(prefix_len >= 1 && prefix_len <= rest.len().min(P::MAX_LEN));
        let start = offset + prefix_len;
        let Some(end) = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|&end| end <= input.len())
        else {
            report.broken = true;
            break;
        };
        let frame = Bytes::copy_from_slice(&input[start..end]);
        let good = match check_message(&frame, false) {
            (Ok(msg), _) => inspector_verdict(&msg),
            (Err(_), _) => false,
        };
        report.bad += usize::from(!good);
        frames.push(frame);
        offset = end;
    }
    report.frames = frames.len();
    let (codec_frames, codec_error) = whole_stream::<P>(input, usize::MAX);
    assert_eq!(
        frames,
        codec_frames,
        "the inspector and FrameCodec<{}> cut different frames: {}",
        P::NAME,
        hex(input)
    );
    assert_eq!(
        report.broken,
        codec_error.is_some(),
        "the inspector and FrameCodec<{}> disagree on the stream ({codec_error:?}): {}",
        P::NAME,
        hex(input)
    );
    report
}

/// The inspector's verdict on a decoded message (with the oracle's checks
/// of what verifies).
pub fn inspector_verdict(msg: &Message) -> bool {
    match msg {
        Message::Handshake(h) => {
            verify_handshake(h);
            match h {
                HandshakeMessage::Challenge(s) => s.verify_strict().is_ok(),
                HandshakeMessage::Response(s) => s.verify_strict().is_ok(),
                HandshakeMessage::Rejection(_) => true,
            }
        }
        Message::Sync(s) => {
            verify_sync(s);
            s.verify().is_ok()
        }
        Message::Ephemeral(e) => {
            verify_ephemeral(e);
            match e {
                EphemeralMessage::Ephemeral(s) => s.verify_strict().is_ok(),
                _ => true,
            }
        }
        Message::Keyhive(k) => {
            verify_keyhive(k);
            k.as_ref().clone().verify(k.signed.issuer).is_ok()
        }
    }
}

/// The `inspect` target: a capture, inspected under each of the three
/// prefixes; returns the report under bijou64, the inspector's default.
pub fn check_inspect_all(input: &[u8]) -> InspectReport {
    check_inspect::<Leb128>(input);
    check_inspect::<U32Be>(input);
    check_inspect::<Bijou64>(input)
}
