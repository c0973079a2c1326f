//! Bad input gets a typed error, never a panic, never a `Verified`.
//!
//! One test (or property) per item of the issue's list: truncation at
//! every offset, every single-bit flip, invalid and non-canonical issuer
//! keys, the eight small-order issuer keys and `R` values, non-canonical
//! `R` and `S`, schema/discriminant mix-ups and a tag swap between two
//! types sharing a schema, trailing bytes, lax field decoders, and blobs
//! that do not match their meta. Each strictness check has a test here
//! (or in `signing/tests/signing/crafted.rs`) that fails if the check is removed.

use crate::signing_support::*;
use bijou_codec::{ReadError, Reader, Wire};
use bijou_signing::{
    batch::verify_batch, ed25519_dalek::Signer as _, strict, Blob, BlobMismatch, Payload, Signed,
    SignedDecodeError, VerifyError,
};
use proptest::prelude::*;

/// Layout of `commit(2)` sealed: 4 + 1 + 32 + 130 + 64.
const ISSUER_AT: usize = 5;
const FIELDS_AT: usize = 37;
const SIG_AT: usize = 167;
const LEN: usize = 231;

fn fixed() -> Vec<u8> {
    let wire = sealed(1, &commit(2)).as_bytes().to_vec();
    assert_eq!(wire.len(), LEN);
    wire
}

fn decode(wire: &[u8]) -> Result<Signed<Commit>, SignedDecodeError> {
    Signed::decode(wire.to_vec().into())
}

/// Decodes and verifies `wire`, singly; must not verify.
/// Reads one `Signed<Commit>` from the front of `wire` (as an embedded
/// item is read) and returns it with the bytes it used.
fn read_prefix(wire: bytes::Bytes) -> Result<(Signed<Commit>, usize), SignedDecodeError> {
    let mut r = Reader::new(&wire);
    let signed = Signed::<Commit>::read_from(&mut r)?;
    Ok((signed, r.offset()))
}

fn verdict(wire: &[u8]) -> Result<Result<(), VerifyError>, SignedDecodeError> {
    decode(wire).map(|s| s.verify_strict().map(|_| ()))
}

// ----- truncation -----------------------------------------------------------

#[test]
fn truncation_at_every_offset_is_a_typed_truncation() {
    let wire = fixed();
    for len in 0..wire.len() {
        let cut = &wire[..len];
        let error = decode(cut).expect_err("a truncated message must not decode");
        let SignedDecodeError::Read(ReadError::Truncated {
            field,
            offset,
            have,
            ..
        }) = error
        else {
            panic!("cut at {len}: {error:?}");
        };
        assert_eq!(offset + have, len, "cut at {len}: {field}");
        let expected_field = match len {
            0..4 => "schema",
            4 => "discriminant",
            5..37 => "issuer",
            SIG_AT..LEN => "signature",
            _ => field, // one of the payload's own fields
        };
        assert_eq!(field, expected_field, "cut at {len}");
        assert!(read_prefix(cut.to_vec().into()).is_err());
    }
}

proptest! {
    #[test]
    fn truncation_of_any_payload_is_an_error(c in arb_commit(), seed in 1u8..4, cut in 0.0..1.0f64) {
        let wire = sealed(seed, &c).into_bytes();
        let len = (wire.len() as f64 * cut) as usize;
        let result = Signed::<Commit>::decode(wire.slice(..len));
        prop_assert!(
            matches!(result, Err(SignedDecodeError::Read(ReadError::Truncated { .. }))),
            "cut at {}: {:?}", len, result
        );
        prop_assert!(read_prefix(wire.slice(..len)).is_err());
    }
}

// ----- bit flips ------------------------------------------------------------

#[test]
fn every_single_bit_flip_fails_decoding_or_verification() {
    let wire = fixed();
    let mut decodable = Vec::new();
    for bit in 0..wire.len() * 8 {
        let mut flipped = wire.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let at = bit / 8;
        match verdict(&flipped) {
            Ok(Ok(())) => panic!("bit {bit} flipped and still verified"),
            Ok(Err(error)) => {
                let expected = match at {
                    ISSUER_AT..FIELDS_AT => matches!(
                        error,
                        VerifyError::BadSignature { .. }
                            | VerifyError::WeakIssuer { .. }
                            | VerifyError::InvalidIssuer { .. }
                    ),
                    FIELDS_AT..SIG_AT => matches!(error, VerifyError::BadSignature { .. }),
                    _ if at < SIG_AT + 32 => matches!(
                        error,
                        VerifyError::BadSignature { .. }
                            | VerifyError::NonCanonicalR
                            | VerifyError::SmallOrderR
                            | VerifyError::InvalidR
                    ),
                    _ => matches!(
                        error,
                        VerifyError::BadSignature { .. } | VerifyError::NonCanonicalS
                    ),
                };
                assert!(expected, "bit {bit}: {error:?}");
                decodable.push(decode(&flipped).unwrap());
            }
            Err(error) => {
                let expected = match at {
                    0..4 => matches!(error, SignedDecodeError::WrongSchema { .. }),
                    4 => matches!(
                        error,
                        SignedDecodeError::WrongDiscriminant { offset: 4, .. }
                    ),
                    ISSUER_AT..FIELDS_AT => {
                        matches!(error, SignedDecodeError::NonCanonicalIssuer { offset: 5 })
                    }
                    FIELDS_AT..SIG_AT => matches!(error, SignedDecodeError::Read(_)),
                    _ => false, // the signature bytes are not parsed
                };
                assert!(expected, "bit {bit}: {error:?}");
            }
        }
    }
    // The issuer flips reach verification about half the time (a random y
    // is a point half the time); most field flips do.
    assert!(decodable.len() > 1200, "only {} decoded", decodable.len());

    // In batches (with good items around), each gets its single verdict.
    let good = sealed(1, &commit(2));
    for chunk in decodable.chunks(31) {
        let mut items = chunk.to_vec();
        items.insert(chunk.len() / 2, good.clone());
        let results = verify_batch(&items);
        for (item, result) in items.iter().zip(&results) {
            assert_eq!(
                result.as_ref().err(),
                item.verify_strict().as_ref().err(),
                "{item:?}"
            );
        }
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn a_bit_flip_anywhere_never_verifies(c in arb_commit(), seed in 1u8..4, pick in any::<prop::sample::Index>()) {
        let wire = sealed(seed, &c).as_bytes().to_vec();
        let bit = pick.index(wire.len() * 8);
        let mut flipped = wire;
        flipped[bit / 8] ^= 1 << (bit % 8);
        if let Ok(signed) = decode(&flipped) {
            prop_assert!(signed.verify_strict().is_err());
            prop_assert!(verify_batch(&[signed.clone(), signed])[0].is_err());
        }
    }

    #[test]
    fn a_bit_flip_in_a_plain_payload_never_verifies(p in arb_plain(), pick in any::<prop::sample::Index>()) {
        let wire = sealed(2, &p).as_bytes().to_vec();
        let bit = pick.index(wire.len() * 8);
        let mut flipped = wire;
        flipped[bit / 8] ^= 1 << (bit % 8);
        if let Ok(signed) = Signed::<Plain>::decode(flipped.clone().into()) {
            prop_assert_eq!(signed.as_bytes(), &flipped[..]);
            prop_assert!(signed.verify_strict().is_err());
        }
    }

    /// Arbitrary bytes behind a valid header: never a panic; whatever
    /// decodes is its own input; nothing verifies.
    #[test]
    fn arbitrary_bytes_never_panic(tail in prop::collection::vec(any::<u8>(), 0..300), header in any::<bool>()) {
        let mut wire = Vec::new();
        if header {
            wire.extend_from_slice(b"TST\x00\x00");
            wire.extend_from_slice(key(1).verifying_key().as_bytes());
        }
        wire.extend_from_slice(&tail);
        if let Ok(signed) = decode(&wire) {
            prop_assert_eq!(signed.as_bytes(), &wire[..]);
            prop_assert!(signed.verify_strict().is_err());
        }
        let frame = bytes::Bytes::from(wire);
        let _ = Signed::<Plain>::read_from(&mut Reader::new(&frame));
    }

    /// `encode(decode(b)) == b` for every accepted `b`, from seal to
    /// decode to verify and back.
    #[test]
    fn accepted_bytes_round_trip(c in arb_commit(), seed in 1u8..4) {
        let wire = sealed(seed, &c).into_bytes();
        let decoded = Signed::<Commit>::decode(wire.clone()).unwrap();
        prop_assert_eq!(decoded.as_bytes(), &wire[..]);
        let verified = decoded.verify_strict().unwrap();
        prop_assert_eq!(verified.payload(), &c);
        let again = Signed::seal(&key(seed), verified.payload()).unwrap();
        prop_assert_eq!(again.as_bytes(), &wire[..]);
        prop_assert_eq!(verified.digest(), c.digest().unwrap());
    }
}

// ----- issuer keys ----------------------------------------------------------

#[test]
fn an_issuer_that_is_not_a_point_decodes_but_is_refused_before_the_payload_is_handed_out() {
    let wire = fixed();
    let mut y2 = [0u8; 32];
    y2[0] = 2; // no point has y = 2 (a canonical encoding, so decoding keeps it)
    let signed = decode(&patched(&wire, ISSUER_AT, &y2)).unwrap();
    let refused = VerifyError::InvalidIssuer {
        issuer: bijou_signing::PeerId::from_bytes(y2),
    };
    // Verification is the only way to the payload, and it refuses the key
    // first, alone and in a batch.
    assert_eq!(signed.verify_strict().unwrap_err(), refused);
    assert_eq!(verify_batch(&[signed])[0].as_ref().unwrap_err(), &refused);
}

#[test]
fn a_non_canonical_issuer_is_rejected_at_decode() {
    // Alternative encodings of points: y = p (the order-4 point y = 0),
    // y = p + 1 (the identity), x = -0 (sign bit on the identity).
    let mut p_plus_one = strict::FIELD_PRIME;
    p_plus_one[0] += 1;
    let mut minus_zero = strict::SMALL_ORDER_POINTS[0];
    minus_zero[31] |= 0x80;
    let wire = fixed();
    for encoding in [strict::FIELD_PRIME, p_plus_one, minus_zero] {
        assert!(
            bijou_signing::PeerId::from_bytes(encoding)
                .verifying_key()
                .is_ok(),
            "dalek accepts {encoding:02x?}; we must not"
        );
        assert_eq!(
            decode(&patched(&wire, ISSUER_AT, &encoding)).unwrap_err(),
            SignedDecodeError::NonCanonicalIssuer { offset: ISSUER_AT }
        );
    }
}

#[test]
fn small_order_issuers_are_weak_keys() {
    let wire = fixed();
    for encoding in strict::SMALL_ORDER_POINTS {
        let signed = decode(&patched(&wire, ISSUER_AT, &encoding)).unwrap();
        let expected = VerifyError::WeakIssuer {
            issuer: bijou_signing::PeerId::from_bytes(encoding),
        };
        assert_eq!(signed.verify_strict().unwrap_err(), expected);
        let results = verify_batch(&[sealed(1, &commit(0)), signed.clone(), sealed(2, &commit(1))]);
        assert_eq!(results[1].as_ref().unwrap_err(), &expected);
        assert!(results[0].is_ok() && results[2].is_ok());
    }
}

// ----- R and S --------------------------------------------------------------

fn assert_rejected(wire: &[u8], expected: VerifyError) {
    let signed = decode(wire).unwrap();
    assert_eq!(signed.verify_strict().unwrap_err(), expected);
    let good = sealed(3, &commit(1));
    let results = verify_batch(&[good.clone(), signed, good]);
    assert_eq!(results[1].as_ref().unwrap_err(), &expected);
    assert!(results[0].is_ok() && results[2].is_ok());
}

#[test]
fn small_order_r_is_rejected() {
    let wire = fixed();
    let s = *signature_of(&decode(&wire).unwrap()).s_bytes();
    for r in strict::SMALL_ORDER_POINTS {
        assert_rejected(&with_signature(&wire, &r, &s), VerifyError::SmallOrderR);
    }
}

#[test]
fn non_canonical_r_is_rejected() {
    let wire = fixed();
    let signature = signature_of(&decode(&wire).unwrap());
    let mut p_plus_one = strict::FIELD_PRIME;
    p_plus_one[0] += 1;
    let mut minus_zero = strict::SMALL_ORDER_POINTS[1]; // (0, -1) with x = -0
    minus_zero[31] |= 0x80;
    // y = p (the order-4 point y = 0), y = p + 1 (identity), x = -0.
    for r in [strict::FIELD_PRIME, p_plus_one, minus_zero] {
        assert_rejected(
            &with_signature(&wire, &r, signature.s_bytes()),
            VerifyError::NonCanonicalR,
        );
    }
}

#[test]
fn r_that_is_not_a_point_is_rejected() {
    let wire = fixed();
    let signature = signature_of(&decode(&wire).unwrap());
    let mut y2 = [0u8; 32];
    y2[0] = 2;
    assert_rejected(
        &with_signature(&wire, &y2, signature.s_bytes()),
        VerifyError::InvalidR,
    );
}

#[test]
fn non_canonical_s_is_rejected() {
    let wire = fixed();
    let signature = signature_of(&decode(&wire).unwrap());
    let r = signature.r_bytes();
    // S + L: the same signature to a verifier that reduces S.
    let s_plus_l = plus_group_order(signature.s_bytes());
    assert_rejected(
        &with_signature(&wire, r, &s_plus_l),
        VerifyError::NonCanonicalS,
    );
    // L itself, and the largest 256-bit value.
    assert_rejected(
        &with_signature(&wire, r, &strict::GROUP_ORDER),
        VerifyError::NonCanonicalS,
    );
    assert_rejected(
        &with_signature(&wire, r, &[0xFF; 32]),
        VerifyError::NonCanonicalS,
    );
}

#[test]
fn a_signature_over_other_bytes_is_a_bad_signature() {
    let wire = fixed();
    let other = sealed(1, &commit(3));
    let signature = signature_of(&other);
    assert_rejected(
        &with_signature(&wire, signature.r_bytes(), signature.s_bytes()),
        VerifyError::BadSignature {
            issuer: key(1).verifying_key().into(),
        },
    );
}

// ----- schema, discriminant, tag swap -----------------------------------------

#[test]
fn schema_and_discriminant_are_checked_first_with_distinct_errors() {
    let wire = fixed();
    assert_eq!(
        Signed::<Plain>::decode(wire.clone().into()).unwrap_err(),
        SignedDecodeError::WrongSchema {
            expected: bijou_signing::Schema(*b"TPL\x00"),
            found: bijou_signing::Schema(*b"TST\x00"),
            offset: 0,
        }
    );
    assert_eq!(
        Signed::<Twin>::decode(wire.clone().into()).unwrap_err(),
        SignedDecodeError::WrongDiscriminant {
            expected: 1,
            found: 0,
            offset: 4,
        }
    );
    // Checked before anything else: a bad issuer or missing fields behind a
    // wrong schema still report the schema.
    let mut junk = b"XXXX".to_vec();
    junk.extend_from_slice(&[0xFF; 10]);
    assert!(matches!(
        decode(&junk),
        Err(SignedDecodeError::WrongSchema { found, .. }) if found == *b"XXXX"
    ));
    assert!(matches!(
        decode(b"TST\x00\x07"),
        Err(SignedDecodeError::WrongDiscriminant { found: 7, .. })
    ));
}

#[test]
fn a_tag_swap_between_types_sharing_a_schema_fails_verification() {
    let key = key(4);
    let c = commit(2);
    let as_commit = Signed::seal(&key, &c).unwrap();
    let as_twin = Signed::seal(&key, &Twin(c.clone())).unwrap();
    assert_eq!(as_commit.len(), as_twin.len());

    // Rewrite the discriminant: decodes as the other type, fails to verify.
    let swapped = patched(as_commit.as_bytes(), 4, &[1]);
    let swapped = Signed::<Twin>::decode(swapped.into()).unwrap();
    let expected = VerifyError::BadSignature {
        issuer: key.verifying_key().into(),
    };
    assert_eq!(swapped.verify_strict().unwrap_err(), expected);
    assert_eq!(
        verify_batch(&[as_twin.clone(), swapped])[1]
            .as_ref()
            .unwrap_err(),
        &expected
    );

    // Move the signature from one type's message to the other's.
    let moved = with_signature(
        as_twin.as_bytes(),
        as_commit.signature().r_bytes(),
        as_commit.signature().s_bytes(),
    );
    let moved = Signed::<Twin>::decode(moved.into()).unwrap();
    assert_eq!(moved.verify_strict().unwrap_err(), expected);
    assert!(as_twin.verify_strict().is_ok());
}

// ----- trailing bytes, lax decoders, arrays -----------------------------------

#[test]
fn trailing_bytes_are_rejected_but_read_from_stops_before_them() {
    let wire = fixed();
    for extra in [&[0u8][..], &[0xFF; 64], &wire[..]] {
        let mut longer = wire.clone();
        longer.extend_from_slice(extra);
        assert_eq!(
            decode(&longer).unwrap_err(),
            SignedDecodeError::Read(ReadError::TrailingBytes {
                offset: LEN,
                count: extra.len(),
            })
        );
        let (signed, used) = read_prefix(longer.into()).unwrap();
        assert_eq!(used, LEN);
        assert_eq!(signed.as_bytes(), &wire[..]);
        assert!(signed.verify_strict().is_ok());
    }
}

#[test]
fn a_lax_field_decoder_is_caught_by_the_strict_reader_property() {
    // A validly *signed* message whose flag byte is 2: the lax decoder reads
    // `true`, which encodes as 1. `Signed` no longer re-encodes on every
    // decode: strictness is the payload reader's job, and the property
    // check that every payload type's tests run catches this one.
    let key = key(5);
    let mut message = b"TSL\x00".to_vec();
    message.extend_from_slice(key.verifying_key().as_bytes());
    message.push(2);
    let mut wire = message.clone();
    wire.extend_from_slice(&key.sign(&message).to_bytes());
    assert!(!fields_are_canonical::<Sloppy>(&[2]));
    assert!(fields_are_canonical::<Sloppy>(&[1]));
    // What a lax reader would cost: the message decodes and verifies (its
    // signature covers the bytes sent), and re-encoding its payload gives
    // other bytes than were signed.
    let verified = Signed::<Sloppy>::decode(wire.clone().into())
        .unwrap()
        .verify_strict()
        .unwrap();
    assert_eq!(verified.as_bytes(), &wire[..]);
    assert_ne!(verified.payload().encode().unwrap()[..], [2]);
    // The strict payload types here pass the property on every field byte
    // string the proptests produce (see `accepted_bytes_round_trip`).
    assert!(fields_are_canonical::<Commit>(&commit(3).encode().unwrap()));
}

#[test]
fn unsorted_or_duplicate_parents_are_rejected_by_the_payload_decoder() {
    let key = key(6);
    for parents in [vec![[2; 32], [1; 32]], vec![[1; 32], [1; 32]]] {
        let mut message = b"TST\x00\x00".to_vec();
        message.extend_from_slice(key.verifying_key().as_bytes());
        message.extend_from_slice(&[0x11; 32]);
        message.extend_from_slice(&[0x22; 32]);
        message.extend_from_slice(&[2, 0]);
        parents.iter().for_each(|p| message.extend_from_slice(p));
        let mut wire = message.clone();
        wire.extend_from_slice(&key.sign(&message).to_bytes());
        assert!(matches!(
            decode(&wire),
            Err(SignedDecodeError::Read(ReadError::NotAscending {
                field: "parents",
                index: 1,
                ..
            }))
        ));
    }
}

// ----- blobs ------------------------------------------------------------------

proptest! {
    #[test]
    fn a_blob_verifies_against_a_meta_iff_it_is_the_same_blob(
        a in prop::collection::vec(any::<u8>(), 0..200),
        b in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let meta = Blob::new(a.clone()).meta();
        match meta.verify(Blob::new(b.clone())) {
            Ok(verified) => prop_assert_eq!(verified.blob().as_bytes(), &a[..]),
            Err(BlobMismatch::Size { expected, actual }) => {
                prop_assert_eq!((expected, actual), (a.len() as u64, b.len() as u64));
                prop_assert_ne!(a.len(), b.len());
            }
            Err(BlobMismatch::Digest { expected, actual }) => {
                prop_assert_eq!(a.len(), b.len());
                prop_assert_ne!(&a, &b);
                prop_assert_eq!(*expected.as_bytes(), *blake3::hash(&a).as_bytes());
                prop_assert_eq!(*actual.as_bytes(), *blake3::hash(&b).as_bytes());
            }
            Err(other) => prop_assert!(false, "{other:?}"),
        }
        prop_assert_eq!(meta.verify(Blob::new(b.clone())).is_ok(), a == b);
    }

    #[test]
    fn a_signed_meta_rejects_a_swapped_blob(c in arb_commit(), other in prop::collection::vec(any::<u8>(), 0..48)) {
        let verified = sealed(2, &c).verify_strict().unwrap();
        let result = verified.verify_blob(Blob::new(other.clone()));
        prop_assert_eq!(result.is_ok(), Blob::new(other).meta() == c.blob);
    }
}

#[test]
fn payload_digest_of_local_value_matches_received_digest() {
    let c = commit(4);
    assert_eq!(
        sealed(7, &c).verify_strict().unwrap().digest(),
        Payload::digest(&c).unwrap()
    );
}
