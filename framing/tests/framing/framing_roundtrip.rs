//! Frame streams round-trip through `FrameCodec` for every prefix, however
//! the bytes are split, and every accepted stream re-encodes to itself.

use bijou_framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_framing::{FrameCodec, FrameError};
use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

/// Small maximum so that max-size frames are cheap; lengths of the
/// boundary table below that exceed it are clamped to it.
const MAX: usize = 70_000;

/// Payload lengths where some prefix changes size, plus the extremes.
const BOUNDARIES: [usize; 12] = [
    0, 1, 127, 128, 247, 248, 503, 504, 16_383, 16_384, 66_039, 66_040,
];

fn codec<P: LengthPrefix>(max: usize) -> FrameCodec<P> {
    FrameCodec::builder()
        .prefix(P::default())
        .max_frame_length(max)
        .new_codec()
}

fn encode_stream<P: LengthPrefix>(frames: &[Bytes], max: usize) -> BytesMut {
    let mut codec = codec::<P>(max);
    let mut wire = BytesMut::new();
    for (i, frame) in frames.iter().enumerate() {
        // Alternate the two encoder impls; they must agree.
        if i % 2 == 0 {
            codec.encode(frame.clone(), &mut wire).unwrap();
        } else {
            codec.encode(&frame[..], &mut wire).unwrap();
        }
    }
    wire
}

/// Feeds `wire` to a fresh decoder in the given chunk sizes (cycled), then
/// signals EOF. Returns the frames and the final result of `decode_eof`.
fn decode_chunked<P: LengthPrefix>(
    wire: &[u8],
    chunks: &[usize],
    max: usize,
) -> (Vec<Bytes>, Result<(), FrameError>) {
    let mut codec = codec::<P>(max);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut rest = wire;
    let mut sizes = chunks.iter().copied().cycle();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(rest.len()).clamp(1, rest.len());
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => break,
                Err(err) => return (frames, Err(err)),
            }
        }
    }
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(frame)) => frames.push(frame),
            Ok(None) => return (frames, Ok(())),
            Err(err) => return (frames, Err(err)),
        }
    }
}

fn frame_strategy() -> impl Strategy<Value = Bytes> {
    let len = prop_oneof![
        3 => 0usize..300,
        1 => proptest::sample::select(BOUNDARIES.to_vec()).prop_map(|l| l.min(MAX)),
        1 => Just(MAX),
        1 => 300usize..5_000,
    ];
    (len, any::<u8>()).prop_map(|(len, seed)| {
        Bytes::from(
            (0..len)
                .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
                .collect::<Vec<u8>>(),
        )
    })
}

fn streams() -> impl Strategy<Value = Vec<Bytes>> {
    proptest::collection::vec(frame_strategy(), 0..12)
}

fn round_trip<P: LengthPrefix>(frames: &[Bytes], chunks: &[usize]) -> Result<(), TestCaseError> {
    let wire = encode_stream::<P>(frames, MAX);
    let expected_len: usize = frames
        .iter()
        .map(|f| P::encoded_len(f.len() as u64).unwrap() + f.len())
        .sum();
    prop_assert_eq!(wire.len(), expected_len);
    let (decoded, end) = decode_chunked::<P>(&wire, chunks, MAX);
    prop_assert!(end.is_ok(), "{}: {:?}", P::NAME, end);
    prop_assert_eq!(&decoded, &frames.to_vec(), "{}", P::NAME);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_streams_round_trip_for_every_prefix(
        frames in streams(),
        chunks in proptest::collection::vec(1usize..4096, 1..8),
    ) {
        round_trip::<Bijou64>(&frames, &chunks)?;
        round_trip::<Leb128>(&frames, &chunks)?;
        round_trip::<U32Be>(&frames, &chunks)?;
    }

    /// The same stream split at every byte offset, and fed one byte at a
    /// time, decodes to identical frames.
    #[test]
    fn every_split_yields_identical_frames(
        frames in proptest::collection::vec(
            (0usize..600).prop_map(|len| Bytes::from(vec![0xA5; len])), 0..6),
    ) {
        split_everywhere::<Bijou64>(&frames)?;
        split_everywhere::<Leb128>(&frames)?;
        split_everywhere::<U32Be>(&frames)?;
    }

    /// Decoding arbitrary bytes never panics, and whatever frames it accepts
    /// re-encode to exactly the bytes they came from.
    #[test]
    fn accepted_streams_re_encode_to_themselves(
        wire in proptest::collection::vec(
            prop_oneof![4 => 0u8..8, 1 => any::<u8>()], 0..200),
        chunks in proptest::collection::vec(1usize..16, 1..4),
    ) {
        re_encodes::<Bijou64>(&wire, &chunks)?;
        re_encodes::<Leb128>(&wire, &chunks)?;
        re_encodes::<U32Be>(&wire, &chunks)?;
    }
}

fn split_everywhere<P: LengthPrefix>(frames: &[Bytes]) -> Result<(), TestCaseError> {
    let wire = encode_stream::<P>(frames, MAX);
    let (whole, end) = decode_chunked::<P>(&wire, &[usize::MAX], MAX);
    prop_assert!(end.is_ok());
    prop_assert_eq!(&whole, &frames.to_vec());
    for at in 0..=wire.len() {
        let (split, end) = decode_chunked::<P>(&wire, &[at, usize::MAX], MAX);
        prop_assert!(end.is_ok(), "{} split at {}: {:?}", P::NAME, at, end);
        prop_assert_eq!(&split, &whole, "{} split at {}", P::NAME, at);
    }
    let (bytewise, end) = decode_chunked::<P>(&wire, &[1], MAX);
    prop_assert!(end.is_ok());
    prop_assert_eq!(&bytewise, &whole, "{} one byte at a time", P::NAME);
    Ok(())
}

fn re_encodes<P: LengthPrefix>(wire: &[u8], chunks: &[usize]) -> Result<(), TestCaseError> {
    let (frames, end) = decode_chunked::<P>(wire, chunks, 64);
    let again = encode_stream::<P>(&frames, 64);
    prop_assert!(
        wire.starts_with(&again),
        "{}: accepted frames re-encode differently",
        P::NAME
    );
    match end {
        // Fully accepted: the re-encoding is the input, byte for byte.
        Ok(()) => prop_assert_eq!(&again[..], wire, "{}", P::NAME),
        Err(FrameError::Truncated { needed, have }) => {
            prop_assert_eq!(have, wire.len() - again.len(), "{}", P::NAME);
            prop_assert!(needed > have as u64);
        }
        Err(FrameError::TooLarge { len, max: 64 }) => prop_assert!(len > 64),
        Err(FrameError::Overflow { prefix }) | Err(FrameError::NonCanonical { prefix, .. }) => {
            prop_assert_eq!(prefix, P::NAME);
        }
        Err(other) => prop_assert!(false, "{}: unexpected {:?}", P::NAME, other),
    }
    // Split differently, the same bytes give the same verdict.
    let (bytewise, _) = decode_chunked::<P>(wire, &[1], 64);
    prop_assert_eq!(bytewise, frames);
    Ok(())
}

#[test]
fn empty_and_max_size_frames_round_trip() {
    let frames = [
        Bytes::new(),
        Bytes::from(vec![1; MAX]),
        Bytes::new(),
        Bytes::from(vec![2; MAX]),
    ];
    round_trip::<Bijou64>(&frames, &[usize::MAX]).unwrap();
    round_trip::<Leb128>(&frames, &[7]).unwrap();
    round_trip::<U32Be>(&frames, &[4096]).unwrap();
    // And a frame of exactly the default maximum, 50 MiB, once.
    let big = Bytes::from(vec![0x42; bijou_framing::DEFAULT_MAX_FRAME_LENGTH]);
    let mut codec = FrameCodec::new();
    let mut wire = BytesMut::new();
    codec.encode(big.clone(), &mut wire).unwrap();
    assert_eq!(&wire[..5], &[0xFB, 0x02, 0x1E, 0xFE, 0x08]); // 16843256 + 0x021EFE08
    assert_eq!(codec.decode(&mut wire).unwrap(), Some(big));
}

#[test]
fn u32_be_is_wire_compatible_with_length_delimited_codec() {
    let frames: Vec<Bytes> = [0usize, 1, 300, 70_000]
        .iter()
        .map(|&n| Bytes::from(vec![9; n]))
        .collect();
    let ours = encode_stream::<U32Be>(&frames, MAX);
    let mut ldc = LengthDelimitedCodec::new();
    let mut theirs = BytesMut::new();
    for frame in &frames {
        ldc.encode(frame.clone(), &mut theirs).unwrap();
    }
    assert_eq!(ours, theirs);
    let (decoded, end) = decode_chunked::<U32Be>(&theirs, &[13], MAX);
    end.unwrap();
    assert_eq!(decoded, frames);
}

#[test]
fn prefixes_match_the_reference_encoders() {
    for len in BOUNDARIES
        .iter()
        .map(|&l| l as u64)
        .chain([u32::MAX as u64, u64::MAX])
    {
        let mut oracle = Vec::new();
        bijoux::u64::encode(len, &mut oracle);
        let (ours, n) = Bijou64::encode(len).unwrap();
        assert_eq!(&ours[..n], oracle.as_slice(), "bijou64 {len}");

        let mut buf = unsigned_varint::encode::u64_buffer();
        let oracle = unsigned_varint::encode::u64(len, &mut buf);
        let (ours, n) = Leb128::encode(len).unwrap();
        assert_eq!(&ours[..n], oracle, "leb128 {len}");
    }
}

#[test]
fn a_stream_of_many_tiny_frames_round_trips() {
    let frames: Vec<Bytes> = (0..5_000)
        .map(|i| Bytes::from(vec![i as u8; i % 250]))
        .collect();
    round_trip::<Bijou64>(&frames, &[1500]).unwrap();
    round_trip::<Leb128>(&frames, &[1500]).unwrap();
    round_trip::<U32Be>(&frames, &[1500]).unwrap();
}
