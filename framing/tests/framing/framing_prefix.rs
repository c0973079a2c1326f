//! The length-prefix decoders on their own: published vectors, truncation
//! at every offset, every single-bit flip, random bytes, trailing bytes,
//! overlong LEB128 and bijou64 overflow, and the same rules through
//! `FrameCodec`.

use bijou_framing::prefix::{Bijou64, Leb128, LengthPrefix, PrefixError, U32Be, MAX_PREFIX_LEN};
use bijou_framing::{FrameCodec, FrameError};
use bytes::BytesMut;
use proptest::prelude::*;
use tokio_util::codec::Decoder;

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn encoded<P: LengthPrefix>(len: u64) -> Vec<u8> {
    let (bytes, n) = P::encode(len).unwrap();
    bytes[..n].to_vec()
}

/// The design reference's bijou64 vectors, used as frame-length prefixes.
const BIJOU64_VECTORS: [(u64, &str); 18] = [
    (0, "00"),
    (1, "01"),
    (42, "2A"),
    (247, "F7"),
    (248, "F8 00"),
    (300, "F8 34"),
    (503, "F8 FF"),
    (504, "F9 00 00"),
    (1000, "F9 01 F0"),
    (65535, "F9 FE 07"),
    (66039, "F9 FF FF"),
    (66040, "FA 00 00 00"),
    (67000, "FA 00 03 C0"),
    (16843255, "FA FF FF FF"),
    (16843256, "FB 00 00 00 00"),
    (4311810551, "FB FF FF FF FF"),
    (72340172838076920, "FF 00 00 00 00 00 00 00 00"),
    (18446744073709551615, "FF FE FE FE FE FE FE FE 07"),
];

#[test]
fn bijou64_vectors() {
    for (len, wire) in BIJOU64_VECTORS {
        let wire = hex(wire);
        assert_eq!(encoded::<Bijou64>(len), wire, "{len}");
        assert_eq!(Bijou64::encoded_len(len), Some(wire.len()));
        assert_eq!(Bijou64::decode(&wire), Ok((len, wire.len())), "{len}");
    }
    assert_eq!(
        Bijou64::decode(&[]),
        Err(PrefixError::Incomplete { needed: 1 })
    );
    assert_eq!(
        Bijou64::decode(&hex("F9 00")),
        Err(PrefixError::Incomplete { needed: 1 })
    );
    assert_eq!(
        Bijou64::decode(&hex("FF FF FF FF FF FF FF FF FF")),
        Err(PrefixError::Overflow)
    );
}

#[test]
fn leb128_and_u32_be_vectors() {
    for (len, wire) in [
        (0, "00"),
        (127, "7F"),
        (128, "80 01"),
        (300, "AC 02"),
        (16_384, "80 80 01"),
        (u64::MAX, "FF FF FF FF FF FF FF FF FF 01"),
    ] {
        let wire = hex(wire);
        assert_eq!(encoded::<Leb128>(len), wire, "{len}");
        assert_eq!(Leb128::decode(&wire), Ok((len, wire.len())));
    }
    for (len, wire) in [
        (0, "00 00 00 00"),
        (300, "00 00 01 2C"),
        (u32::MAX as u64, "FF FF FF FF"),
    ] {
        let wire = hex(wire);
        assert_eq!(encoded::<U32Be>(len), wire, "{len}");
        assert_eq!(U32Be::decode(&wire), Ok((len, 4)));
    }
    assert_eq!(U32Be::encode(u32::MAX as u64 + 1), None);
    assert_eq!(U32Be::encoded_len(u32::MAX as u64 + 1), None);
}

#[test]
fn overlong_leb128_prefixes_are_rejected() {
    // Every value that fits, padded with redundant zero groups up to 10 bytes.
    for len in [0u64, 1, 5, 127, 128, 300, 16_383, 1 << 20, 50 << 20] {
        let canonical = encoded::<Leb128>(len);
        let mut padded = canonical.clone();
        while padded.len() < MAX_PREFIX_LEN {
            *padded.last_mut().unwrap() |= 0x80;
            padded.push(0x00);
            assert_eq!(
                Leb128::decode(&padded),
                Err(PrefixError::NonCanonical {
                    prefix_len: padded.len()
                }),
                "{len} as {padded:02X?}"
            );
            let mut codec = FrameCodec::with_prefix(Leb128);
            let mut buf = BytesMut::from(&padded[..]);
            assert!(matches!(
                codec.decode(&mut buf),
                Err(FrameError::NonCanonical { prefix: "leb128", prefix_len }) if prefix_len == padded.len()
            ));
        }
    }
}

#[test]
fn leb128_overflow_and_overlength_are_rejected() {
    // unsigned-varint 0.8 accepts this as 2^63; it is not canonical.
    let bad = hex("80 80 80 80 80 80 80 80 80 03");
    assert_eq!(Leb128::decode(&bad), Err(PrefixError::Overflow));
    assert_eq!(
        Leb128::decode(&hex("FF FF FF FF FF FF FF FF FF 02")),
        Err(PrefixError::Overflow)
    );
    assert_eq!(Leb128::decode(&[0x80; 11]), Err(PrefixError::Overflow));
    assert_eq!(Leb128::decode(&[0xFF; 10]), Err(PrefixError::Overflow));
    for wire in [bad, vec![0x80; 10]] {
        let mut codec = FrameCodec::with_prefix(Leb128);
        let mut buf = BytesMut::from(&wire[..]);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(FrameError::Overflow { prefix: "leb128" })
        ));
    }
}

#[test]
fn bijou64_tier8_overflow_is_rejected() {
    let max = hex("FF FE FE FE FE FE FE FE 07");
    assert_eq!(Bijou64::decode(&max), Ok((u64::MAX, 9)));
    let mut over = max.clone();
    over[8] = 0x08;
    assert_eq!(Bijou64::decode(&over), Err(PrefixError::Overflow));
    let mut codec = FrameCodec::new();
    let mut buf = BytesMut::from(&over[..]);
    assert!(matches!(
        codec.decode(&mut buf),
        Err(FrameError::Overflow { prefix: "bijou64" })
    ));
    // Even with the largest maximum the codec allows.
    let mut codec = FrameCodec::builder()
        .max_frame_length(usize::MAX)
        .new_codec();
    let mut buf = BytesMut::from(&hex("FF FF FF FF FF FF FF FF FF AA")[..]);
    assert!(matches!(
        codec.decode(&mut buf),
        Err(FrameError::Overflow { .. })
    ));
}

/// Checks one decoder outcome against the rules every prefix obeys.
fn check_outcome<P: LengthPrefix>(bytes: &[u8]) -> Result<(), TestCaseError> {
    match P::decode(bytes) {
        Ok((len, used)) => {
            prop_assert!(used >= 1 && used <= P::MAX_LEN && used <= bytes.len());
            // Canonical: the value re-encodes to exactly the bytes it used.
            prop_assert_eq!(encoded::<P>(len), &bytes[..used], "{}", P::NAME);
            // Trailing bytes are not part of the prefix.
            let mut extended = bytes.to_vec();
            extended.extend_from_slice(&[0xEE; 11]);
            prop_assert_eq!(P::decode(&extended), Ok((len, used)));
        }
        Err(PrefixError::Incomplete { needed }) => {
            prop_assert!(needed >= 1);
            prop_assert!(
                bytes.len() + needed <= P::MAX_LEN,
                "{} {:02X?}",
                P::NAME,
                bytes
            );
        }
        Err(PrefixError::NonCanonical { prefix_len }) => {
            prop_assert_eq!(P::NAME, Leb128::NAME);
            prop_assert!(prefix_len >= 2 && bytes[prefix_len - 1] == 0);
        }
        Err(PrefixError::Overflow) => prop_assert!(P::NAME != U32Be::NAME),
        Err(other) => prop_assert!(false, "unexpected {:?}", other),
    }
    Ok(())
}

/// Every strict prefix of an encoding is incomplete (exactly how much is
/// missing, where the format knows), the whole of it decodes.
fn truncations<P: LengthPrefix>(len: u64) -> Result<(), TestCaseError> {
    let Some(wire) = P::encode(len).map(|(b, n)| b[..n].to_vec()) else {
        return Ok(());
    };
    for cut in 0..wire.len() {
        match P::decode(&wire[..cut]) {
            Err(PrefixError::Incomplete { needed }) => {
                // LEB128 never knows; bijou64 knows once it has the tag.
                if P::NAME == Leb128::NAME || (P::NAME == Bijou64::NAME && cut == 0) {
                    prop_assert_eq!(needed, 1);
                } else {
                    prop_assert_eq!(needed, wire.len() - cut, "{} {} cut {}", P::NAME, len, cut);
                }
            }
            other => prop_assert!(false, "{} {} cut at {}: {:?}", P::NAME, len, cut, other),
        }
    }
    prop_assert_eq!(P::decode(&wire), Ok((len, wire.len())));
    Ok(())
}

/// Flipping any one bit gives an error or a *different* canonical prefix.
fn bit_flips<P: LengthPrefix>(len: u64) -> Result<(), TestCaseError> {
    let Some(wire) = P::encode(len).map(|(b, n)| b[..n].to_vec()) else {
        return Ok(());
    };
    for bit in 0..wire.len() * 8 {
        let mut flipped = wire.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        check_outcome::<P>(&flipped)?;
        if let Ok((other, used)) = P::decode(&flipped) {
            prop_assert!(
                other != len || used != wire.len(),
                "{}: flipping bit {} of {:02X?} still decodes to {}",
                P::NAME,
                bit,
                wire,
                len
            );
            prop_assert!(other != len, "{}: two spellings of {}", P::NAME, len);
        }
    }
    Ok(())
}

fn any_len() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        (0u32..64).prop_flat_map(|bits| 0..=(u64::MAX >> bits)),
        proptest::sample::select(bijou_codec::bijou64::OFFSETS.to_vec()),
        0u64..70_000,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn truncation_at_every_offset(len in any_len()) {
        truncations::<Bijou64>(len)?;
        truncations::<Leb128>(len)?;
        truncations::<U32Be>(len)?;
    }

    #[test]
    fn every_single_bit_flip(len in any_len()) {
        bit_flips::<Bijou64>(len)?;
        bit_flips::<Leb128>(len)?;
        bit_flips::<U32Be>(len)?;
    }

    #[test]
    fn random_bytes_never_panic_and_accepted_prefixes_are_canonical(
        bytes in proptest::collection::vec(any::<u8>(), 0..16),
    ) {
        check_outcome::<Bijou64>(&bytes)?;
        check_outcome::<Leb128>(&bytes)?;
        check_outcome::<U32Be>(&bytes)?;
    }

    #[test]
    fn bijou64_agrees_with_the_reference_decoder(
        bytes in proptest::collection::vec(
            prop_oneof![1 => 0xF8u8..=0xFF, 1 => any::<u8>()], 0..12),
    ) {
        let ours = Bijou64::decode(&bytes);
        let reference = bijoux::u64::decode(&bytes);
        prop_assert_eq!(ours.ok(), reference.ok());
    }

    #[test]
    fn leb128_accepts_exactly_unsigned_varints_canonical_subset(
        bytes in proptest::collection::vec(
            prop_oneof![2 => 0x80u8..=0xFF, 1 => any::<u8>()], 1..12),
    ) {
        // unsigned-varint rejects overlong forms too but accepts a 10th
        // byte of up to 0x7F (wrapping past u64::MAX); we accept the
        // subset that is a real u64.
        let reference = unsigned_varint::decode::u64(&bytes)
            .map(|(value, rest)| (value, bytes.len() - rest.len()));
        match Leb128::decode(&bytes) {
            Ok(decoded) => prop_assert_eq!(reference.ok(), Some(decoded)),
            Err(PrefixError::Incomplete { .. }) => prop_assert!(reference.is_err()),
            Err(PrefixError::Overflow) => {
                prop_assert!(reference.map_or(true, |(_, used)| used == 10));
            }
            Err(PrefixError::NonCanonical { .. }) => prop_assert!(reference.is_err()),
            Err(other) => prop_assert!(false, "unexpected {:?}", other),
        }
    }
}
