//! Error paths of `FrameCodec`: truncation at EOF with exact counts,
//! over-max frames refused before their payload (decode) or before writing
//! anything (encode), terminal errors, and the error conversions.

use bijou_framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_framing::{FrameCodec, FrameError, DEFAULT_MAX_FRAME_LENGTH};
use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

fn codec<P: LengthPrefix>(max: usize) -> FrameCodec<P> {
    FrameCodec::builder()
        .prefix(P::default())
        .max_frame_length(max)
        .new_codec()
}

fn prefix_of<P: LengthPrefix>(len: u64) -> Vec<u8> {
    let (bytes, n) = P::encode(len).unwrap();
    bytes[..n].to_vec()
}

/// Decodes every frame of `wire` at EOF; returns the frames and the error.
fn decode_at_eof<P: LengthPrefix>(wire: &[u8]) -> (Vec<Bytes>, Option<FrameError>) {
    let mut codec = codec::<P>(1 << 20);
    let mut buf = BytesMut::from(wire);
    let mut frames = Vec::new();
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(frame)) => frames.push(frame),
            Ok(None) => return (frames, None),
            Err(err) => return (frames, Some(err)),
        }
    }
}

/// Cuts `first ++ second` at every offset inside `second`: the first frame
/// still comes out, then `Truncated` reports `second`'s own counts.
fn truncation_counts<P: LengthPrefix>() {
    let first = Bytes::from_static(b"complete");
    for payload_len in [0usize, 5, 127, 128, 247, 248, 300, 1000, 70_000] {
        let second = Bytes::from(vec![0x3C; payload_len]);
        let mut wire = BytesMut::new();
        let mut enc = codec::<P>(1 << 20);
        enc.encode(first.clone(), &mut wire).unwrap();
        let first_len = wire.len();
        enc.encode(second.clone(), &mut wire).unwrap();
        let prefix_len = P::encoded_len(payload_len as u64).unwrap();
        let frame_len = wire.len() - first_len;
        assert_eq!(frame_len, prefix_len + payload_len);

        let (frames, err) = decode_at_eof::<P>(&wire);
        assert_eq!(frames, vec![first.clone(), second.clone()]);
        assert!(err.is_none());

        // Large payloads: every prefix offset and a spread of payload offsets.
        let cuts: Vec<usize> = (1..frame_len)
            .filter(|&cut| cut <= prefix_len + 300 || cut % 997 == 0 || cut + 3 >= frame_len)
            .collect();
        for cut in cuts {
            let (frames, err) = decode_at_eof::<P>(&wire[..first_len + cut]);
            assert_eq!(frames, vec![first.clone()], "{} cut {cut}", P::NAME);
            let Some(FrameError::Truncated { needed, have }) = err else {
                panic!("{} len {payload_len} cut {cut}: {err:?}", P::NAME);
            };
            assert_eq!(have, cut, "{} len {payload_len} cut {cut}", P::NAME);
            let expected_needed = if cut >= prefix_len {
                // The prefix was read: the whole frame's length is known.
                frame_len
            } else if P::NAME == Leb128::NAME {
                // LEB128 only knows one more byte is needed.
                cut + 1
            } else {
                // bijou64 and u32-be know the prefix length from its start.
                prefix_len
            };
            assert_eq!(
                needed,
                expected_needed as u64,
                "{} len {payload_len} cut {cut}",
                P::NAME
            );
        }
    }
}

#[test]
fn eof_inside_a_prefix_or_payload_is_truncated_with_exact_counts() {
    truncation_counts::<Bijou64>();
    truncation_counts::<Leb128>();
    truncation_counts::<U32Be>();
}

#[test]
fn clean_eof_between_frames_is_not_an_error() {
    let mut codec = FrameCodec::new();
    let mut empty = BytesMut::new();
    assert_eq!(codec.decode_eof(&mut empty).unwrap(), None);
    let mut one = BytesMut::from(&b"\x01x"[..]);
    assert_eq!(
        codec.decode_eof(&mut one).unwrap().as_deref(),
        Some(&b"x"[..])
    );
    assert_eq!(codec.decode_eof(&mut one).unwrap(), None);
}

/// A prefix announcing more than the maximum fails as soon as the prefix is
/// complete, with no payload byte sent; one announcing exactly the maximum
/// is accepted and waits.
fn over_max_fails_before_payload<P: LengthPrefix>() {
    let max = 1000;
    for announced in [1001u64, 4096, 70_000, u32::MAX as u64, u64::MAX] {
        let Some(prefix) = P::encode(announced).map(|(b, n)| b[..n].to_vec()) else {
            continue;
        };
        let mut codec = codec::<P>(max);
        let mut buf = BytesMut::new();
        // Byte by byte: incomplete until the last prefix byte, then refused.
        for (i, &byte) in prefix.iter().enumerate() {
            buf.extend_from_slice(&[byte]);
            let result = codec.decode(&mut buf);
            if i + 1 < prefix.len() {
                assert!(
                    matches!(result, Ok(None)),
                    "{} {announced}: {result:?}",
                    P::NAME
                );
            } else {
                assert!(
                    matches!(result, Err(FrameError::TooLarge { len, max: 1000 }) if len == announced),
                    "{} {announced}: {result:?}",
                    P::NAME
                );
            }
        }
        assert_eq!(buf.len(), prefix.len(), "nothing consumed");
        assert!(buf.capacity() < 64, "nothing reserved for the payload");
    }
    let mut codec = codec::<P>(max);
    let mut buf = BytesMut::from(&prefix_of::<P>(max as u64)[..]);
    assert!(matches!(codec.decode(&mut buf), Ok(None)));
    buf.extend_from_slice(&vec![7; max]);
    assert_eq!(codec.decode(&mut buf).unwrap().map(|f| f.len()), Some(max));
}

#[test]
fn over_max_prefixes_fail_before_any_payload_arrives() {
    over_max_fails_before_payload::<Bijou64>();
    over_max_fails_before_payload::<Leb128>();
    over_max_fails_before_payload::<U32Be>();
}

#[test]
fn default_maximum_is_50_mib_on_decode() {
    assert_eq!(DEFAULT_MAX_FRAME_LENGTH, 50 * 1024 * 1024);
    let mut codec = FrameCodec::new();
    assert_eq!(codec.max_frame_length(), DEFAULT_MAX_FRAME_LENGTH);
    let mut buf = BytesMut::from(&prefix_of::<Bijou64>(DEFAULT_MAX_FRAME_LENGTH as u64 + 1)[..]);
    assert!(matches!(
        codec.decode(&mut buf),
        Err(FrameError::TooLarge { len, max: DEFAULT_MAX_FRAME_LENGTH })
            if len == DEFAULT_MAX_FRAME_LENGTH as u64 + 1
    ));
    let mut codec = FrameCodec::new();
    let mut buf = BytesMut::from(&prefix_of::<Bijou64>(DEFAULT_MAX_FRAME_LENGTH as u64)[..]);
    assert!(matches!(codec.decode(&mut buf), Ok(None)));
}

fn oversize_encode_writes_nothing<P: LengthPrefix>() {
    let mut codec = codec::<P>(100);
    let mut dst = BytesMut::from(&b"earlier"[..]);
    let too_big = vec![1u8; 101];
    let err = codec.encode(&too_big[..], &mut dst).unwrap_err();
    assert!(
        matches!(err, FrameError::TooLarge { len: 101, max: 100 }),
        "{err:?}"
    );
    let err = codec.encode(Bytes::from(too_big), &mut dst).unwrap_err();
    assert!(
        matches!(err, FrameError::TooLarge { len: 101, max: 100 }),
        "{err:?}"
    );
    assert_eq!(&dst[..], b"earlier");
    codec.encode(&[2u8; 100][..], &mut dst).unwrap();
    assert_eq!(dst.len(), 7 + P::encoded_len(100).unwrap() + 100);
}

#[test]
fn encoder_refuses_oversize_frames_and_writes_nothing() {
    oversize_encode_writes_nothing::<Bijou64>();
    oversize_encode_writes_nothing::<Leb128>();
    oversize_encode_writes_nothing::<U32Be>();
    // The default maximum holds on encode too.
    let mut codec = FrameCodec::new();
    let mut dst = BytesMut::new();
    let big = vec![0u8; DEFAULT_MAX_FRAME_LENGTH + 1];
    assert!(matches!(
        codec.encode(&big[..], &mut dst),
        Err(FrameError::TooLarge {
            max: DEFAULT_MAX_FRAME_LENGTH,
            ..
        })
    ));
    assert!(dst.is_empty());
}

#[test]
fn maximum_can_be_changed_and_is_clamped_to_the_prefix() {
    let mut codec = FrameCodec::new();
    codec.set_max_frame_length(3);
    let mut dst = BytesMut::new();
    assert!(codec.encode(&b"four"[..], &mut dst).is_err());
    codec.encode(&b"abc"[..], &mut dst).unwrap();
    let mut wire = BytesMut::from(&b"\x04four"[..]);
    assert!(matches!(
        codec.decode(&mut wire),
        Err(FrameError::TooLarge { len: 4, max: 3 })
    ));

    let u32be = FrameCodec::builder()
        .prefix(U32Be)
        .max_frame_length(usize::MAX)
        .new_codec();
    assert_eq!(u32be.max_frame_length() as u64, u32::MAX as u64);
    let mut u32be = u32be;
    u32be.set_max_frame_length(usize::MAX);
    assert_eq!(u32be.max_frame_length() as u64, u32::MAX as u64);
    let bijou = FrameCodec::builder()
        .max_frame_length(usize::MAX)
        .new_codec();
    assert_eq!(bijou.max_frame_length(), usize::MAX);
    assert_eq!(
        FrameCodec::<Leb128>::default().max_frame_length(),
        DEFAULT_MAX_FRAME_LENGTH
    );
}

#[test]
fn errors_are_terminal_and_repeat_without_consuming() {
    let mut codec = FrameCodec::with_prefix(Leb128);
    let mut buf = BytesMut::from(&b"\x02ok\x80\x00rest"[..]);
    assert_eq!(codec.decode(&mut buf).unwrap().as_deref(), Some(&b"ok"[..]));
    for _ in 0..3 {
        assert!(matches!(
            codec.decode(&mut buf),
            Err(FrameError::NonCanonical {
                prefix: "leb128",
                prefix_len: 2
            })
        ));
        assert_eq!(&buf[..], b"\x80\x00rest");
    }
    let mut codec = FrameCodec::new();
    let mut buf = BytesMut::from(&b"\x05ab"[..]);
    for _ in 0..2 {
        assert!(matches!(
            codec.decode_eof(&mut buf),
            Err(FrameError::Truncated { needed: 6, have: 3 })
        ));
    }
}

#[test]
fn errors_carry_context_and_convert_to_io_errors() {
    let cases = [
        (
            FrameError::TooLarge { len: 70, max: 64 },
            "70",
            std::io::ErrorKind::InvalidData,
        ),
        (
            FrameError::Overflow { prefix: "bijou64" },
            "bijou64",
            std::io::ErrorKind::InvalidData,
        ),
        (
            FrameError::NonCanonical {
                prefix: "leb128",
                prefix_len: 3,
            },
            "3-byte",
            std::io::ErrorKind::InvalidData,
        ),
        (
            FrameError::Truncated { needed: 9, have: 4 },
            "4 of at least 9",
            std::io::ErrorKind::UnexpectedEof,
        ),
        (
            FrameError::from(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "gone")),
            "gone",
            std::io::ErrorKind::BrokenPipe,
        ),
    ];
    for (err, needle, kind) in cases {
        assert!(err.to_string().contains(needle), "{err}");
        assert_eq!(std::io::Error::from(err).kind(), kind);
    }
}
