//! Differential tests against oracles: `bijoux` (the reference bijou64) and
//! `prost` / `unsigned-varint` / gimli's `leb128` for our LEB128.
//!
//! The oracles are dev-dependencies only; the implementation is ours.

use bijou_codec::{bijou64, leb128};
use rand::{rngs::SmallRng, Rng, SeedableRng};

const SEED: u64 = 0xBEEF_CAFE_DEAD_F00D;

/// A value in a uniformly chosen bijou64 tier, uniform within the tier, so
/// every tier is exercised equally rather than almost only tier 8.
fn value_in_random_tier(rng: &mut SmallRng) -> u64 {
    let tier = rng.random_range(0..=8usize);
    let low = bijou64::OFFSETS[tier];
    let high = bijou64::OFFSETS
        .get(tier + 1)
        .map_or(u64::MAX, |next| next - 1);
    rng.random_range(low..=high)
}

fn tier_edges() -> Vec<u64> {
    let mut edges = Vec::new();
    for &offset in &bijou64::OFFSETS {
        for delta in -2i64..=2 {
            edges.push(offset.wrapping_add_signed(delta));
        }
    }
    edges.extend([u64::MAX - 2, u64::MAX - 1, u64::MAX]);
    edges
}

fn assert_agrees_with_bijoux(value: u64) {
    let mut ours = Vec::new();
    bijou64::encode_to_vec(value, &mut ours);
    let mut theirs = Vec::new();
    bijoux::u64::encode(value, &mut theirs);
    assert_eq!(ours, theirs, "encoding of {value}");
    assert_eq!(bijou64::encoded_len(value), bijoux::u64::encoded_len(value));
    assert_eq!(bijou64::decode(&theirs), Ok((value, theirs.len())));
    assert_eq!(bijoux::u64::decode(&ours), Ok((value, ours.len())));
}

#[test]
fn bijou64_matches_bijoux_on_every_tier_edge_plus_minus_two() {
    for value in tier_edges() {
        assert_agrees_with_bijoux(value);
    }
}

#[test]
fn bijou64_matches_bijoux_on_a_million_seeded_values_across_all_tiers() {
    let mut rng = SmallRng::seed_from_u64(SEED);
    let mut per_tier = [0usize; 9];
    let mut ours_stream = Vec::new();
    let mut theirs_stream = Vec::new();
    let mut values = Vec::with_capacity(1_000_000);
    for _ in 0..1_000_000 {
        let value = value_in_random_tier(&mut rng);
        per_tier[bijou64::encoded_len(value) - 1] += 1;
        bijou64::encode_to_vec(value, &mut ours_stream);
        bijoux::u64::encode(value, &mut theirs_stream);
        values.push(value);
    }
    assert_eq!(ours_stream, theirs_stream);
    assert!(per_tier.iter().all(|&n| n > 100_000), "{per_tier:?}");

    let mut rest = &theirs_stream[..];
    for &value in &values {
        let (decoded, used) = bijou64::decode(rest).unwrap();
        assert_eq!(decoded, value);
        rest = &rest[used..];
    }
    assert!(rest.is_empty());
    #[cfg(feature = "bulk")]
    {
        let decoded: Vec<u64> = bijou64::decode_iter(&theirs_stream)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(decoded, values);
        let mut batch = vec![0u8; values.len() * bijou64::MAX_LEN];
        let n = bijou64::encode_slice(&values, &mut batch).unwrap();
        assert_eq!(&batch[..n], &theirs_stream[..]);
    }
}

#[test]
fn bijou64_decode_agrees_with_bijoux_on_random_bytes() {
    let mut rng = SmallRng::seed_from_u64(SEED ^ 1);
    for _ in 0..200_000 {
        let len = rng.random_range(0..=10usize);
        let mut bytes = vec![0u8; len];
        rng.fill(&mut bytes[..]);
        if len > 0 && rng.random_bool(0.7) {
            bytes[0] = rng.random_range(0xF8..=0xFF); // bias to multi-byte tags
        }
        let ours = bijou64::decode(&bytes);
        match bijoux::u64::decode(&bytes) {
            Ok(theirs) => assert_eq!(ours, Ok(theirs), "{bytes:02X?}"),
            Err(bijoux::u64::DecodeError::Overflow) => {
                assert_eq!(ours, Err(bijou64::Bijou64Error::Overflow))
            }
            Err(_) => assert!(
                matches!(ours, Err(bijou64::Bijou64Error::Incomplete { .. })),
                "{bytes:02X?}: {ours:?}"
            ),
        }
    }
}

fn prost_encode(value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::encode_varint(value, &mut out);
    out
}

#[test]
fn leb128_matches_prost_unsigned_varint_and_gimli_encoders() {
    let mut rng = SmallRng::seed_from_u64(SEED ^ 2);
    let mut values: Vec<u64> = (0..64).flat_map(|s| [(1u64 << s) - 1, 1u64 << s]).collect();
    values.push(u64::MAX);
    values.extend((0..200_000).map(|_| value_in_random_tier(&mut rng)));
    let mut uv_buf = unsigned_varint::encode::u64_buffer();
    for value in values {
        let mut ours = Vec::new();
        leb128::encode_to_vec(value, &mut ours);
        assert_eq!(ours, prost_encode(value), "prost {value}");
        assert_eq!(
            ours,
            unsigned_varint::encode::u64(value, &mut uv_buf),
            "uv {value}"
        );
        let mut gimli = Vec::new();
        ::leb128::write::unsigned(&mut gimli, value).unwrap();
        assert_eq!(ours, gimli, "gimli {value}");
        assert_eq!(leb128::encoded_len(value), ours.len());
        assert_eq!(leb128::decode(&ours), Ok((value, ours.len())));
        let mut padded = ours.clone();
        padded.extend_from_slice(&[0x80; 11]);
        assert_eq!(leb128::decode(&padded), Ok((value, ours.len())));
    }
}

#[test]
fn leb128_canonical_decode_accepts_exactly_what_prost_would_re_encode_identically() {
    let mut rng = SmallRng::seed_from_u64(SEED ^ 3);
    for _ in 0..200_000 {
        let len = rng.random_range(1..=11usize);
        let mut bytes = vec![0u8; len];
        rng.fill(&mut bytes[..]);
        // Mostly continuation bits, so long and overlong forms are common.
        for byte in bytes.iter_mut().take(len - 1) {
            if rng.random_bool(0.8) {
                *byte |= 0x80;
            }
        }
        if rng.random_bool(0.3) {
            *bytes.last_mut().unwrap() = rng.random_range(0..=2);
        }
        let theirs = prost::encoding::decode_varint(&mut &bytes[..]);
        match leb128::decode(&bytes) {
            Ok((value, used)) => {
                assert_eq!(theirs.ok(), Some(value), "{bytes:02X?}");
                assert_eq!(prost_encode(value), &bytes[..used], "{bytes:02X?}");
            }
            Err(_) => {
                // We reject only what is truncated, overflowing, too long, or
                // non-canonical: anything prost accepts must re-encode differently.
                if let Ok(value) = theirs {
                    let canonical = prost_encode(value);
                    assert!(!bytes.starts_with(&canonical), "{bytes:02X?}");
                }
            }
        }
    }
}
