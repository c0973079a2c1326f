//! The published bijou64 vectors (tests/data/bijou64_vectors.txt), run as
//! data against every entry point of the codec, plus tier boundaries ±1.

use bijou_codec::bijou64::{self, Bijou64Error, OFFSETS};
use bijou_codec::{BufExt, BufMutExt, ReadError, Reader};

enum Vector {
    Ok { value: u64, bytes: Vec<u8> },
    Err { bytes: Vec<u8>, error: Bijou64Error },
}

fn hex(text: &str) -> Vec<u8> {
    if text == "-" {
        return Vec::new();
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn vectors() -> Vec<Vector> {
    include_str!("../data/bijou64_vectors.txt")
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                ["ok", value, bytes] => Vector::Ok {
                    value: value.parse().unwrap(),
                    bytes: hex(bytes),
                },
                ["err", bytes, kind] => {
                    let bytes = hex(bytes);
                    let error = match *kind {
                        "too-short" => Bijou64Error::Incomplete {
                            missing: bijou64::len_from_first_byte(*bytes.first().unwrap_or(&0))
                                - bytes.len(),
                        },
                        "overflow" => Bijou64Error::Overflow,
                        other => panic!("unknown error kind {other}"),
                    };
                    Vector::Err { bytes, error }
                }
                other => panic!("malformed vector line {other:?}"),
            }
        })
        .collect()
}

#[test]
fn the_data_file_holds_all_published_vectors() {
    let all = vectors();
    let ok = all
        .iter()
        .filter(|v| matches!(v, Vector::Ok { .. }))
        .count();
    assert_eq!((ok, all.len() - ok), (18, 3));
}

#[test]
fn every_encoder_produces_the_published_bytes() {
    for vector in vectors() {
        let Vector::Ok { value, bytes } = vector else {
            continue;
        };
        assert_eq!(bijou64::encoded_len(value), bytes.len(), "{value}");
        assert_eq!(bijou64::len_from_first_byte(bytes[0]), bytes.len());

        let mut vec = Vec::new();
        bijou64::encode_to_vec(value, &mut vec);
        assert_eq!(vec, bytes, "encode_to_vec {value}");

        let mut buf = bytes::BytesMut::new();
        bijou64::encode(value, &mut buf);
        assert_eq!(&buf[..], &bytes[..], "encode {value}");

        let mut ext = Vec::new();
        ext.put_bijou64(value);
        assert_eq!(ext, bytes, "put_bijou64 {value}");

        let mut exact = vec![0u8; bytes.len()];
        assert_eq!(bijou64::encode_to_slice(value, &mut exact), Ok(bytes.len()));
        assert_eq!(exact, bytes);
        let mut short = vec![0u8; bytes.len() - 1];
        assert!(bijou64::encode_to_slice(value, &mut short).is_err());
        assert!(short.iter().all(|&b| b == 0), "nothing written on error");

        #[cfg(feature = "bulk")]
        {
            let mut batch = [0u8; 2 * bijou64::MAX_LEN];
            let n = bijou64::encode_slice(&[value, value], &mut batch).unwrap();
            assert_eq!(
                &batch[..n],
                [bytes.clone(), bytes.clone()].concat().as_slice()
            );
        }
    }
}

#[test]
fn every_decoder_reads_the_published_bytes() {
    for vector in vectors() {
        let Vector::Ok { value, bytes } = vector else {
            continue;
        };
        assert_eq!(bijou64::decode(&bytes), Ok((value, bytes.len())), "{value}");
        assert_eq!(bijou64::decode_exact(&bytes), Ok(value));
        let mut padded = bytes.clone();
        padded.extend_from_slice(&[0xEE; 12]);
        assert_eq!(bijou64::decode(&padded), Ok((value, bytes.len())));
        assert_eq!(
            Reader::new(&bytes::Bytes::copy_from_slice(&bytes)).bijou64("v"),
            Ok(value)
        );
        assert_eq!((&bytes[..]).try_get_bijou64(), Ok(value));
        #[cfg(feature = "bulk")]
        {
            let stream = [bytes.clone(), bytes.clone()].concat();
            let values: Result<Vec<u64>, _> = bijou64::decode_iter(&stream).collect();
            assert_eq!(values, Ok(vec![value, value]));
        }
    }
}

#[test]
fn every_error_vector_fails_as_published() {
    for vector in vectors() {
        let Vector::Err { bytes, error } = vector else {
            continue;
        };
        assert_eq!(bijou64::decode(&bytes), Err(error), "{bytes:02X?}");
        #[cfg(feature = "bulk")]
        {
            let mut iter = bijou64::decode_iter(&bytes);
            if !bytes.is_empty() {
                assert_eq!(iter.next(), Some(Err(error)));
            }
            assert_eq!(iter.next(), None, "fused after error");
        }
        let read = Reader::new(&bytes::Bytes::copy_from_slice(&bytes)).bijou64("v");
        match error {
            Bijou64Error::Overflow => assert_eq!(
                read,
                Err(ReadError::Bijou64Overflow {
                    field: "v",
                    offset: 0
                })
            ),
            _ => assert!(matches!(read, Err(ReadError::Truncated { field: "v", .. }))),
        }
    }
    // The exact missing counts of the two too-short vectors.
    assert_eq!(
        bijou64::decode(&[]),
        Err(Bijou64Error::Incomplete { missing: 1 })
    );
    assert_eq!(
        bijou64::decode(&[0xF9, 0x00]),
        Err(Bijou64Error::Incomplete { missing: 1 })
    );
}

#[test]
fn every_tier_boundary_plus_minus_one_round_trips() {
    let mut edges: Vec<u64> = Vec::new();
    for &offset in &OFFSETS {
        edges.extend([offset.wrapping_sub(1), offset, offset.wrapping_add(1)]);
    }
    edges.extend([u64::MAX - 1, u64::MAX]);
    for value in edges {
        let mut enc = Vec::new();
        bijou64::encode_to_vec(value, &mut enc);
        assert_eq!(bijou64::decode(&enc), Ok((value, enc.len())), "{value}");
        assert_eq!(enc.len(), bijou64::encoded_len(value));
    }
    // Each tier's first value is its tag followed by zeros; its last, by 0xFF.
    for tier in 1..=8usize {
        let mut enc = Vec::new();
        bijou64::encode_to_vec(OFFSETS[tier], &mut enc);
        let mut expected = vec![0xF7 + tier as u8];
        expected.resize(tier + 1, 0);
        assert_eq!(enc, expected, "first of tier {tier}");
        if tier < 8 {
            enc.clear();
            bijou64::encode_to_vec(OFFSETS[tier + 1] - 1, &mut enc);
            let mut expected = vec![0xF7 + tier as u8];
            expected.resize(tier + 1, 0xFF);
            assert_eq!(enc, expected, "last of tier {tier}");
        }
    }
}
