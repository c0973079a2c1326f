//! The single-value bijou64 decoder (`bijou64::decode`, and
//! `Reader::bijou64` on top of it) against `bijoux`, exhaustively where the
//! input space is small and at random where it is not.
//!
//! The decoder has two paths: a window path when at least 9 bytes are
//! available (one bounds check, one 8-byte load, a branch per tier) and a
//! short path near the end of the input. Every test here feeds each input
//! both ways: as it is, and followed by filler bytes that put it on the
//! window path without changing its meaning.

use bijou_codec::bijou64::{self, Bijou64Error, MAX_LEN, OFFSETS};
use bijou_codec::{ReadError, Reader};
use rand::{rngs::SmallRng, Rng, SeedableRng};

const SEED: u64 = 0x5EED_0FB1_0064;

/// What `bijoux` says about `bytes`, in our error type. `bijoux` has no
/// missing count, so an `Incomplete` carries the count computed from the
/// first byte (the spec's: the first byte fixes the length).
fn oracle(bytes: &[u8]) -> Result<(u64, usize), Bijou64Error> {
    match bijoux::u64::decode(bytes) {
        Ok(decoded) => Ok(decoded),
        Err(bijoux::u64::DecodeError::Overflow) => Err(Bijou64Error::Overflow),
        Err(bijoux::u64::DecodeError::BufferTooShort) => {
            let len = bytes
                .first()
                .map_or(1, |&tag| bijou64::len_from_first_byte(tag));
            assert!(len > bytes.len(), "bijoux: too short at {bytes:02X?}");
            Err(Bijou64Error::Incomplete {
                missing: len - bytes.len(),
            })
        }
    }
}

/// `bytes` decoded by `decode` alone, by `decode` with each amount of
/// filler behind it (0 to 9 bytes, so both paths and their border), and
/// by `Reader::bijou64`: all must agree with the oracle.
fn check(bytes: &[u8]) {
    let expected = oracle(bytes);
    assert_eq!(bijou64::decode(bytes), expected, "{bytes:02X?}");
    let mut padded = bytes.to_vec();
    for filler in 1..=MAX_LEN {
        padded.push(0xA5 ^ filler as u8);
        let with_filler = bijou64::decode(&padded);
        match expected {
            // A complete value ignores what follows it.
            Ok(_) | Err(Bijou64Error::Overflow) => {
                assert_eq!(with_filler, expected, "{bytes:02X?} + {filler}")
            }
            // An incomplete one now reads the filler as its payload: the
            // oracle decides on the padded bytes.
            Err(Bijou64Error::Incomplete { .. }) => {
                assert_eq!(with_filler, oracle(&padded), "{padded:02X?}")
            }
        }
    }
    check_reader(bytes, expected);
}

/// `Reader::bijou64` reports what `decode` does, with the field, the
/// absolute offset and the exact need; it advances exactly on success.
fn check_reader(bytes: &[u8], expected: Result<(u64, usize), Bijou64Error>) {
    // Behind a 3-byte header, so that offsets are not zero.
    let mut framed = vec![0x01, 0x02, 0x03];
    framed.extend_from_slice(bytes);
    let frame = bytes::Bytes::from(framed);
    let mut r = Reader::new(&frame);
    r.bytes("header", 3).unwrap();
    let read = r.bijou64("v");
    match expected {
        Ok((value, used)) => {
            assert_eq!(read, Ok(value), "{bytes:02X?}");
            assert_eq!(r.offset(), 3 + used);
        }
        Err(Bijou64Error::Overflow) => {
            assert_eq!(
                read,
                Err(ReadError::Bijou64Overflow {
                    field: "v",
                    offset: 3
                })
            );
            assert_eq!(r.offset(), 3, "no advance on error");
        }
        Err(Bijou64Error::Incomplete { missing }) => {
            assert_eq!(
                read,
                Err(ReadError::Truncated {
                    field: "v",
                    offset: 3,
                    needed: bytes.len() + missing,
                    have: bytes.len(),
                }),
                "{bytes:02X?}"
            );
            assert_eq!(r.offset(), 3, "no advance on error");
        }
    }
}

#[test]
fn every_input_of_at_most_two_bytes() {
    check(&[]);
    for a in 0..=u8::MAX {
        check(&[a]);
        for b in 0..=u8::MAX {
            check(&[a, b]);
        }
    }
}

/// Every tag followed by every 2-byte payload start, padded to the window
/// path with bytes that vary: each tier's shift and offset meet every
/// leading payload byte pair.
#[test]
fn every_tag_with_every_leading_payload_pair_on_the_window_path() {
    let mut rng = SmallRng::seed_from_u64(SEED);
    for tag in 0xF8..=u8::MAX {
        for pair in 0..=u16::MAX {
            let mut bytes = [0u8; MAX_LEN + 1];
            bytes[0] = tag;
            bytes[1..3].copy_from_slice(&pair.to_be_bytes());
            rng.fill(&mut bytes[3..]);
            assert_eq!(bijou64::decode(&bytes), oracle(&bytes), "{bytes:02X?}");
        }
    }
}

/// Every tier boundary, plus and minus two (and the top of the range),
/// decoded whole, with filler behind it, through the reader, and cut at
/// every offset: each prefix is `Incomplete` with the exact missing count.
#[test]
fn every_tier_boundary_whole_and_truncated_at_every_offset() {
    let mut edges = Vec::new();
    for &offset in &OFFSETS {
        for delta in -2i64..=2 {
            edges.push(offset.wrapping_add_signed(delta));
        }
    }
    edges.extend([u64::MAX - 2, u64::MAX - 1, u64::MAX]);
    for value in edges {
        let mut bytes = Vec::new();
        bijoux::u64::encode(value, &mut bytes);
        assert_eq!(bijou64::decode(&bytes), Ok((value, bytes.len())));
        check(&bytes);
        for cut in 0..bytes.len() {
            let prefix = &bytes[..cut];
            // Without its first byte the length is unknown: one more byte.
            let missing = if cut == 0 { 1 } else { bytes.len() - cut };
            assert_eq!(
                bijou64::decode(prefix),
                Err(Bijou64Error::Incomplete { missing }),
                "{value} cut at {cut}"
            );
            check(prefix);
        }
    }
}

/// Tier 8 is the only tier that can overflow: every payload past
/// `u64::MAX - OFFSETS[8]` fails, on both paths, and the last one that does
/// not is `u64::MAX`.
#[test]
fn tier_8_overflows_exactly_past_u64_max() {
    let limit = u64::MAX - OFFSETS[8];
    let mut rng = SmallRng::seed_from_u64(SEED ^ 8);
    let mut payloads = vec![limit, limit + 1, limit + 2, u64::MAX - 1, u64::MAX];
    payloads.extend((0..10_000).map(|_| rng.random_range(limit - 1_000..=u64::MAX)));
    for payload in payloads {
        let mut bytes = vec![0xFF];
        bytes.extend_from_slice(&payload.to_be_bytes());
        let expected = if payload <= limit {
            Ok((OFFSETS[8] + payload, MAX_LEN))
        } else {
            Err(Bijou64Error::Overflow)
        };
        assert_eq!(oracle(&bytes), expected, "bijoux on {bytes:02X?}");
        check(&bytes);
    }
    assert_eq!(
        bijou64::decode(&[0xFF, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0x07]),
        Ok((u64::MAX, MAX_LEN))
    );
    assert_eq!(
        bijou64::decode(&[0xFF, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0x08, 0x00]),
        Err(Bijou64Error::Overflow)
    );
}

/// Ten million seeded values, a ninth of them in each tier, encoded by
/// `bijoux` into one stream and read back one at a time by `decode` (the
/// window path, and the short path for the last values) and by a
/// `Reader`.
#[test]
fn ten_million_seeded_values_read_back_one_at_a_time() {
    const COUNT: usize = 10_000_000;
    let mut rng = SmallRng::seed_from_u64(SEED ^ 10);
    let mut values = Vec::with_capacity(COUNT);
    let mut stream = Vec::with_capacity(COUNT * 5);
    for _ in 0..COUNT {
        let tier = rng.random_range(0..=8usize);
        let high = OFFSETS.get(tier + 1).map_or(u64::MAX, |next| next - 1);
        let value = rng.random_range(OFFSETS[tier]..=high);
        bijoux::u64::encode(value, &mut stream);
        values.push(value);
    }
    let mut rest = &stream[..];
    for &value in &values {
        let (decoded, used) = bijou64::decode(rest).unwrap();
        assert_eq!(decoded, value);
        assert_eq!(used, bijou64::encoded_len(value));
        rest = &rest[used..];
    }
    assert!(rest.is_empty());

    let frame = bytes::Bytes::from(stream);
    let mut r = Reader::new(&frame);
    for &value in &values {
        assert_eq!(r.bijou64("v"), Ok(value));
    }
    assert_eq!(r.finish(), Ok(()));
}

/// Random byte strings of every length up to 12, biased to multi-byte
/// tags, against the oracle (with exact missing counts).
#[test]
fn random_byte_strings_agree_with_bijoux() {
    let mut rng = SmallRng::seed_from_u64(SEED ^ 12);
    for _ in 0..500_000 {
        let len = rng.random_range(0..=12usize);
        let mut bytes = vec![0u8; len];
        rng.fill(&mut bytes[..]);
        if len > 0 && rng.random_bool(0.8) {
            bytes[0] = rng.random_range(0xF8..=0xFF);
        }
        assert_eq!(bijou64::decode(&bytes), oracle(&bytes), "{bytes:02X?}");
        if len <= MAX_LEN {
            check_reader(&bytes, oracle(&bytes));
        }
    }
}
