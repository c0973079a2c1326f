//! proptest properties of the codec: bijectivity, order, exact
//! incompleteness, and no panics on adversarial input.

use bijou_codec::bijou64::{self, Bijou64Error, OFFSETS};
use bijou_codec::{leb128, ReadError, Reader};
use proptest::prelude::*;

/// Values spread evenly over the nine tiers (a plain `any::<u64>()` would
/// be tier 8 almost always).
fn any_tier_value() -> impl Strategy<Value = u64> {
    (0usize..=8).prop_flat_map(|tier| OFFSETS[tier]..=last_of_tier(tier))
}

/// The largest value of `tier`.
fn last_of_tier(tier: usize) -> u64 {
    OFFSETS.get(tier + 1).map_or(u64::MAX, |next| next - 1)
}

fn encode(value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    bijou64::encode_to_vec(value, &mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn decode_inverts_encode(value in any_tier_value()) {
        let bytes = encode(value);
        prop_assert_eq!(bytes.len(), bijou64::encoded_len(value));
        prop_assert_eq!(bijou64::decode(&bytes), Ok((value, bijou64::encoded_len(value))));
    }

    #[test]
    fn every_accepted_byte_string_is_the_encoding_of_its_value(
        bytes in prop::collection::vec(any::<u8>(), 0..12),
        tag in 0xF8u8..=0xFF,
        force_tag in any::<bool>(),
    ) {
        let mut bytes = bytes;
        if force_tag && !bytes.is_empty() {
            bytes[0] = tag;
        }
        if let Ok((value, used)) = bijou64::decode(&bytes) {
            prop_assert_eq!(encode(value), &bytes[..used]);
            prop_assert_eq!(used, bijou64::len_from_first_byte(bytes[0]));
        }
    }

    #[test]
    fn byte_order_is_numeric_order(a in any_tier_value(), b in any_tier_value()) {
        prop_assert_eq!(encode(a).cmp(&encode(b)), a.cmp(&b));
    }

    #[test]
    fn every_prefix_is_incomplete_with_the_exact_missing_count(value in any_tier_value()) {
        let bytes = encode(value);
        // With no bytes at all only the tag is known to be missing; from the
        // tag on, the missing count is exact.
        prop_assert_eq!(bijou64::decode(&[]), Err(Bijou64Error::Incomplete { missing: 1 }));
        for cut in 1..bytes.len() {
            prop_assert_eq!(
                bijou64::decode(&bytes[..cut]),
                Err(Bijou64Error::Incomplete { missing: bytes.len() - cut })
            );
            let frame = bytes::Bytes::copy_from_slice(&bytes[..cut]);
            let mut r = Reader::new(&frame);
            prop_assert_eq!(
                r.bijou64("v"),
                Err(ReadError::Truncated { field: "v", offset: 0, needed: bytes.len(), have: cut })
            );
        }
    }

    #[test]
    fn every_single_bit_flip_changes_the_value_or_fails(value in any_tier_value()) {
        let bytes = encode(value);
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            match bijou64::decode(&flipped) {
                Ok((other, used)) => {
                    prop_assert_ne!(other, value, "bit {} flip kept the value", bit);
                    prop_assert_eq!(encode(other), &flipped[..used]);
                }
                Err(Bijou64Error::Incomplete { missing }) => {
                    prop_assert_eq!(
                        missing,
                        bijou64::len_from_first_byte(flipped[0]) - flipped.len()
                    );
                }
                Err(_) => {}
            }
        }
    }

    #[test]
    fn trailing_bytes_are_reported_not_swallowed(value in any_tier_value(), extra in 1usize..4) {
        let mut bytes = encode(value);
        let used = bytes.len();
        bytes.extend(std::iter::repeat_n(0u8, extra));
        prop_assert_eq!(
            bijou64::decode_exact(&bytes),
            Err(bijou64::ExactError::TrailingBytes { offset: used, count: extra })
        );
        let frame = bytes::Bytes::copy_from_slice(&bytes);
        let mut r = Reader::new(&frame);
        prop_assert_eq!(r.bijou64("v"), Ok(value));
        prop_assert_eq!(r.finish(), Err(ReadError::TrailingBytes { offset: used, count: extra }));
    }

    #[cfg(feature = "bulk")]
    #[test]
    fn streams_round_trip_through_every_encoder(values in prop::collection::vec(any_tier_value(), 0..64)) {
        let mut vec = Vec::new();
        let mut bytes_mut = bytes::BytesMut::new();
        for &v in &values {
            bijou64::encode_to_vec(v, &mut vec);
            bijou64::encode(v, &mut bytes_mut);
        }
        prop_assert_eq!(&vec[..], &bytes_mut[..]);
        let mut batch = vec![0u8; values.len() * bijou64::MAX_LEN];
        let n = bijou64::encode_slice(&values, &mut batch).unwrap();
        prop_assert_eq!(&batch[..n], &vec[..]);
        let exact_len: usize = values.iter().map(|&v| bijou64::encoded_len(v)).sum();
        let mut exact = vec![0u8; exact_len];
        prop_assert_eq!(bijou64::encode_slice(&values, &mut exact), Ok(exact_len));
        let decoded: Result<Vec<u64>, _> = bijou64::decode_iter(&vec).collect();
        prop_assert_eq!(decoded, Ok(values));
    }

    /// Streams made of runs (the shapes the adaptive decoders and encoders
    /// specialise for), then mutated: every decoder of the iterator agrees
    /// with the single-value decoder, and `encode_slice` with
    /// `encode_to_vec`, whatever the room.
    #[cfg(feature = "bulk")]
    #[test]
    fn runs_decode_and_encode_alike_on_every_path(
        segments in prop::collection::vec((0usize..=8, 1usize..80), 1..6),
        seed in any::<u64>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
        extra_room in 0usize..12,
    ) {
        let mut values = Vec::new();
        let mut state = seed;
        for &(tier, len) in &segments {
            for _ in 0..len {
                values.push(value_in_tier(tier, &mut state));
            }
        }
        let mut vec = Vec::new();
        for &v in &values {
            bijou64::encode_to_vec(v, &mut vec);
        }
        let mut out = vec![0xEE; vec.len() + extra_room];
        prop_assert_eq!(bijou64::encode_slice(&values, &mut out), Ok(vec.len()));
        prop_assert_eq!(&out[..vec.len()], &vec[..]);

        let mut bytes = vec;
        set_bytes(&mut bytes, &flips);
        fold_and_next_agree_with_decode(&bytes)?;
    }

    /// Streams whose lengths follow a cycle of 2 to 33 tiers (the cycle
    /// decoder's shape, and one period too long for it), then mutated (bytes
    /// set to tags or one-byte values, and a value replaced by a tier-8
    /// overflow): `fold` and `next` agree with the single-value decoder.
    #[cfg(feature = "bulk")]
    #[test]
    fn cycles_decode_alike_on_every_path(
        cycle in prop::collection::vec(0usize..=8, 2..=33),
        repeats in 1usize..40,
        seed in any::<u64>(),
        flips in prop::collection::vec(
            (any::<prop::sample::Index>(), prop_oneof![0xF8u8..=0xFF, 0u8..0xF8]),
            0..3,
        ),
        overflow_at in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let mut values = Vec::new();
        let mut state = seed;
        for &tier in cycle.iter().cycle().take(cycle.len() * repeats) {
            values.push(value_in_tier(tier, &mut state));
        }
        let mut bytes = encode_with_overflow(&values, overflow_at);
        set_bytes(&mut bytes, &flips);
        fold_and_next_agree_with_decode(&bytes)?;
    }

    /// Streams whose tier changes at random (the two-lane decoder's shape,
    /// long enough for several of its rounds), then mutated: bytes set to
    /// tags or one-byte values (which move where the second lane lands),
    /// a run of `0xFF` (an overflow wherever a lane reads it as a tag), and
    /// a value replaced by a tier-8 overflow. `fold` and `next` agree with
    /// the single-value decoder.
    #[cfg(feature = "bulk")]
    #[test]
    fn changing_streams_decode_alike_on_every_path(
        tiers in prop::collection::vec(0usize..=8, 150..700),
        seed in any::<u64>(),
        flips in prop::collection::vec(
            (any::<prop::sample::Index>(), prop_oneof![0xF8u8..=0xFF, 0u8..0xF8]),
            0..6,
        ),
        ff_run in proptest::option::of((any::<prop::sample::Index>(), 9usize..20)),
        overflow_at in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let mut state = seed;
        let values: Vec<u64> = tiers.iter().map(|&tier| value_in_tier(tier, &mut state)).collect();
        let mut bytes = encode_with_overflow(&values, overflow_at);
        set_bytes(&mut bytes, &flips);
        if let Some((at, len)) = ff_run {
            let at = at.index(bytes.len());
            let end = (at + len).min(bytes.len());
            bytes[at..end].fill(0xFF);
        }
        fold_and_next_agree_with_decode(&bytes)?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = bijou64::decode(&bytes);
        let _ = bijou64::decode_exact(&bytes);
        #[cfg(feature = "bulk")]
        prop_assert!(bijou64::decode_iter(&bytes).count() <= bytes.len());
        let _ = leb128::decode(&bytes);
        let _ = leb128::decode_lax(&bytes);
        prop_assert!(leb128::decode_iter(&bytes).count() <= bytes.len());
        let frame = bytes::Bytes::copy_from_slice(&bytes);
        let mut r = Reader::new(&frame);
        while !r.is_empty() {
            if r.bijou64("v").is_err() {
                break;
            }
        }
    }

    #[test]
    fn leb128_accepts_only_canonical_forms(bytes in prop::collection::vec(any::<u8>(), 0..12)) {
        if let Ok((value, used)) = leb128::decode(&bytes) {
            let mut canonical = Vec::new();
            leb128::encode_to_vec(value, &mut canonical);
            prop_assert_eq!(&canonical[..], &bytes[..used]);
            prop_assert_eq!(leb128::decode_lax(&bytes), Ok((value, used)));
        }
    }

    #[test]
    fn leb128_round_trips(value in any::<u64>(), small in any::<u16>()) {
        for v in [value, u64::from(small), value >> (value % 64)] {
            let mut enc = Vec::new();
            leb128::encode_to_vec(v, &mut enc);
            prop_assert_eq!(leb128::decode(&enc), Ok((v, enc.len())));
            let mut out = [0u8; 10];
            prop_assert_eq!(leb128::encode_to_slice(v, &mut out), Ok(enc.len()));
        }
    }
}

/// A record of every Reader field kind, with its field boundaries.
fn record(
    a: u8,
    b: u16,
    c: u32,
    d: u64,
    e: u64,
    blob: &[u8],
) -> (Vec<u8>, Vec<(&'static str, usize)>) {
    let mut out = Vec::new();
    let mut starts = Vec::new();
    starts.push(("a", out.len()));
    out.push(a);
    starts.push(("b", out.len()));
    out.extend_from_slice(&b.to_be_bytes());
    starts.push(("c", out.len()));
    out.extend_from_slice(&c.to_be_bytes());
    starts.push(("d", out.len()));
    out.extend_from_slice(&d.to_be_bytes());
    starts.push(("e", out.len()));
    bijou64::encode_to_vec(e, &mut out);
    starts.push(("len", out.len()));
    bijou64::encode_to_vec(blob.len() as u64, &mut out);
    starts.push(("blob", out.len()));
    out.extend_from_slice(blob);
    starts.push(("tail", out.len()));
    out.extend_from_slice(&[1, 2, 3, 4]);
    (out, starts)
}

/// The record's fields, in order.
type Record = (u8, u16, u32, u64, u64, Vec<u8>);

fn read_record(bytes: &[u8]) -> Result<Record, ReadError> {
    let frame = bytes::Bytes::copy_from_slice(bytes);
    let mut r = Reader::new(&frame);
    let a = r.u8("a")?;
    let b = r.u16("b")?;
    let c = r.u32("c")?;
    let d = r.u64("d")?;
    let e = r.bijou64("e")?;
    let len = r.bijou64("len")?;
    let blob = r.bytes_u64("blob", len)?.to_vec();
    let _tail: [u8; 4] = r.array("tail")?;
    r.finish()?;
    Ok((a, b, c, d, e, blob))
}

proptest! {
    #[test]
    fn reader_names_the_field_and_offset_at_every_truncation(
        a in any::<u8>(), b in any::<u16>(), c in any::<u32>(), d in any::<u64>(),
        e in any_tier_value(), blob in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        let (bytes, starts) = record(a, b, c, d, e, &blob);
        prop_assert_eq!(read_record(&bytes), Ok((a, b, c, d, e, blob.clone())));
        for cut in 0..bytes.len() {
            let (field, start) = *starts.iter().rev().find(|(_, s)| *s <= cut).unwrap();
            match read_record(&bytes[..cut]) {
                Err(ReadError::Truncated { field: f, offset, needed, have }) => {
                    prop_assert_eq!(f, field);
                    prop_assert_eq!(offset, start);
                    prop_assert_eq!(have, cut - start);
                    prop_assert!(needed > have);
                }
                other => prop_assert!(false, "cut {}: {:?}", cut, other),
            }
        }
        let mut long = bytes.clone();
        long.push(0);
        prop_assert_eq!(
            read_record(&long),
            Err(ReadError::TrailingBytes { offset: bytes.len(), count: 1 })
        );
    }
}

/// A stream's values, then its first error if there is one.
#[cfg(feature = "bulk")]
type Decoded = Vec<Result<u64, Bijou64Error>>;

/// The stream decoded with the single-value decoder: every value, then the
/// first error if there is one.
#[cfg(feature = "bulk")]
fn decode_one_at_a_time(mut rest: &[u8]) -> Decoded {
    let mut out = Vec::new();
    while !rest.is_empty() {
        match bijou64::decode(rest) {
            Ok((v, n)) => {
                out.push(Ok(v));
                rest = &rest[n..];
            }
            Err(e) => {
                out.push(Err(e));
                break;
            }
        }
    }
    out
}

/// The iterator's `fold` (through `for_each`) and its `next`, one call at
/// a time (adapters such as `collect` would fold), decode `bytes` as the
/// single-value decoder does.
#[cfg(feature = "bulk")]
fn fold_and_next_agree_with_decode(bytes: &[u8]) -> Result<(), TestCaseError> {
    let reference = decode_one_at_a_time(bytes);
    let mut by_fold = Vec::new();
    bijou64::decode_iter(bytes).for_each(|item| by_fold.push(item));
    let mut by_next = Vec::new();
    for item in bijou64::decode_iter(bytes) {
        by_next.push(item);
    }
    prop_assert_eq!(&by_fold, &reference);
    prop_assert_eq!(&by_next, &reference);
    Ok(())
}

/// A pseudo-random value of `tier`, stepping the LCG `state`.
#[cfg(feature = "bulk")]
fn value_in_tier(tier: usize, state: &mut u64) -> u64 {
    let high = last_of_tier(tier);
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    OFFSETS[tier] + *state % (high - OFFSETS[tier]).saturating_add(1).max(1)
}

/// `values` encoded back to back, the one at `overflow_at` (if any)
/// replaced by a tier-8 overflow (nine `0xFF`).
#[cfg(feature = "bulk")]
fn encode_with_overflow(values: &[u64], overflow_at: Option<prop::sample::Index>) -> Vec<u8> {
    let overflow_at = overflow_at.map(|index| index.index(values.len()));
    let mut bytes = Vec::new();
    for (i, &v) in values.iter().enumerate() {
        if Some(i) == overflow_at {
            bytes.extend_from_slice(&[0xFF; 9]);
        } else {
            bijou64::encode_to_vec(v, &mut bytes);
        }
    }
    bytes
}

/// Sets each chosen byte of `bytes` to its new value.
#[cfg(feature = "bulk")]
fn set_bytes(bytes: &mut [u8], changes: &[(prop::sample::Index, u8)]) {
    for (index, byte) in changes {
        let i = index.index(bytes.len());
        bytes[i] = *byte;
    }
}
