//! Bad ephemeral (`SUE\0`) input gets a typed error (or, where it is still
//! well-formed, a verification failure), never a panic, never a second
//! encoding.
//!
//! Properties over generated valid messages, the signed message and all
//! three control kinds: truncation at every offset, every single-bit flip,
//! random bytes behind a valid header, trailing bytes, and oversize
//! `PayloadLen` and topic counts. Then one named test per strictness check
//! (count 0, duplicate topic, unknown tag, trailing bytes after the
//! signature and after the topics, non-canonical issuer, the discriminant
//! that is the tag, the encoder's count limit): each fails if its check is
//! removed from the decoder or encoder. The comparison with Subduction's
//! own decoder is `ephemeral_differential.rs`.

use bijou_codec::{ReadError, Wire, WriteError};
use bijou_proto::message::{
    EphemeralMessage, EphemeralPayload, Message, MessageError, SignedEphemeral, Topic, Topics,
    EPHEMERAL_SCHEMA,
};
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::strict::FIELD_PRIME;
use bijou_signing::{Signed, SignedDecodeError};
use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;

use bijou_test_support::messages::ephemeral_control;

/// Where the fields of a signed message start: schema, tag, issuer.
const FIELDS_AT: usize = 4 + 1 + 32;
/// Where `PayloadLen` starts: fields + topic, nonce, timestamp.
const PAYLOAD_LEN_AT: usize = FIELDS_AT + 32 + 8 + 8;
/// Where a control message's topics start: schema, tag, count.
const TOPICS_AT: usize = 4 + 1 + 2;

fn decode(bytes: &[u8]) -> Result<EphemeralMessage, MessageError> {
    match Message::decode(Bytes::copy_from_slice(bytes))? {
        Message::Ephemeral(msg) => Ok(msg),
        other => panic!("a SUE\\0 message decoded as {other:?}"),
    }
}

/// Accepted input must be the one encoding of what it decodes to.
fn assert_injective(bytes: &[u8]) -> Option<EphemeralMessage> {
    let msg = decode(bytes).ok()?;
    assert_eq!(
        msg.encode().expect("encode").as_ref(),
        bytes,
        "accepted a second encoding"
    );
    Some(msg)
}

/// `needed` and `have` of a truncation error, wherever it was found.
fn truncation(err: &MessageError) -> Option<(usize, usize)> {
    match err {
        MessageError::Read(ReadError::Truncated { needed, have, .. })
        | MessageError::Signed {
            source: SignedDecodeError::Read(ReadError::Truncated { needed, have, .. }),
            ..
        } => Some((*needed, *have)),
        _ => None,
    }
}

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n.wrapping_mul(7).wrapping_add(1); 32])
}

fn seal(n: u8, topic: [u8; 32], nonce: u64, timestamp: u64, payload: &[u8]) -> Vec<u8> {
    let fields = EphemeralPayload::new(
        Topic::new(topic),
        nonce,
        timestamp,
        Bytes::copy_from_slice(payload),
    );
    SignedEphemeral::seal(&key(n), &fields)
        .expect("seal")
        .as_bytes()
        .to_vec()
}

fn bijou64(value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    bijoux::u64::encode(value, &mut out);
    out
}

fn topic() -> impl Strategy<Value = [u8; 32]> {
    // Mostly small alphabets so that near-collisions happen.
    prop_oneof![any::<[u8; 32]>(), (0u8..4).prop_map(|b| [b; 32])]
}

/// A signed message with a payload of up to `max` bytes (and sometimes
/// one at the bijou64 one-byte/two-byte boundary).
fn signed_wire(max: usize) -> impl Strategy<Value = Vec<u8>> {
    (
        0u8..4,
        topic(),
        any::<u64>(),
        any::<u64>(),
        prop_oneof![4 => vec(any::<u8>(), 0..max), 1 => vec(any::<u8>(), 246..250)],
    )
        .prop_map(|(n, t, nonce, ts, payload)| seal(n, t, nonce, ts, &payload))
}

/// A control message (tag 01-03) with 1 to 6 distinct topics, in the
/// generated (unsorted) order.
fn control_wire() -> impl Strategy<Value = Vec<u8>> {
    (1u8..=3, vec(topic(), 1..7)).prop_map(|(tag, mut topics)| {
        let mut seen = std::collections::BTreeSet::new();
        topics.retain(|t| seen.insert(*t));
        ephemeral_control(tag, &topics)
    })
}

fn any_wire() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![signed_wire(120), control_wire()]
}

/// Non-canonical issuer encodings: `y = p + k` for `k` in `0..19`, with
/// either sign bit, and a sign bit on the two points with `x = 0`.
fn non_canonical_issuers() -> Vec<[u8; 32]> {
    let mut out = Vec::new();
    for k in 0u8..19 {
        let mut y = FIELD_PRIME;
        y[0] += k; // 0xED + 18 = 0xFF: no carry
        out.push(y);
        y[31] |= 0x80;
        out.push(y);
    }
    let mut minus_identity = [0u8; 32];
    minus_identity[0] = 1;
    minus_identity[31] = 0x80;
    out.push(minus_identity);
    let mut minus_order_2 = FIELD_PRIME;
    minus_order_2[0] -= 1;
    minus_order_2[31] |= 0x80;
    out.push(minus_order_2);
    out
}

// ---- properties ----------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn truncation_at_every_offset_is_an_error(wire in any_wire()) {
        prop_assert!(assert_injective(&wire).is_some());
        for len in 0..wire.len() {
            let err = decode(&wire[..len]).unwrap_err();
            let (need, have) = truncation(&err)
                .ok_or_else(|| TestCaseError::fail(format!("prefix of {len}: {err:?}")))?;
            prop_assert!(need > have, "{:?}", err);
        }
    }

    #[test]
    fn every_single_bit_flip_of_a_control_message_is_rejected_or_re_encodes_exactly(
        wire in control_wire(),
    ) {
        let mut accepted = 0;
        for bit in 0..wire.len() * 8 {
            let mut flipped = wire.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            if let Some(msg) = assert_injective(&flipped) {
                accepted += 1;
                // A flip that still decodes changed a topic or the kind. A
                // flip of the tag byte to 00 can also make the topics read
                // as a signed message's layout (decoding checks no
                // signature), as with 6 topics (194 bytes after the tag).
                prop_assert!(
                    matches!(
                        msg,
                        EphemeralMessage::Subscribe(_)
                            | EphemeralMessage::Unsubscribe(_)
                            | EphemeralMessage::SubscribeRejected(_)
                    ) || (bit / 8 == 4 && matches!(msg, EphemeralMessage::Ephemeral(_))),
                    "bit {bit}: {msg:?}"
                );
            }
        }
        // Not vacuous: most flips inside a topic keep the list distinct.
        prop_assert!(accepted > 0);
    }

    #[test]
    fn trailing_bytes_are_rejected_where_they_start(
        wire in any_wire(),
        extra in vec(any::<u8>(), 1..40),
    ) {
        let mut longer = wire.clone();
        longer.extend_from_slice(&extra);
        prop_assert_eq!(
            decode(&longer).unwrap_err(),
            MessageError::Read(ReadError::TrailingBytes { offset: wire.len(), count: extra.len() })
        );
    }

    /// `PayloadLen` claiming more than the message holds, up to
    /// `u64::MAX`: a truncation error with need and have, found before
    /// anything is allocated for the payload.
    #[test]
    fn oversize_payload_len_is_a_truncation(
        wire in signed_wire(64),
        extra in prop_oneof![1u64..=64, 65u64..100_000, any::<u64>(), Just(u64::MAX)],
    ) {
        let (actual, used) = bijoux::u64::decode(&wire[PAYLOAD_LEN_AT..]).expect("valid");
        let claim = actual.saturating_add(extra);
        let len_field = bijou64(claim);
        let mut bad = wire[..PAYLOAD_LEN_AT].to_vec();
        bad.extend_from_slice(&len_field);
        bad.extend_from_slice(&wire[PAYLOAD_LEN_AT + used..]);
        let payload_at = PAYLOAD_LEN_AT + len_field.len();
        // The payload and the signature remain.
        let remaining = wire.len() - PAYLOAD_LEN_AT - used;
        let expected = match usize::try_from(claim) {
            // The payload fits only by eating into the signature.
            Ok(claim) if claim <= remaining => ReadError::Truncated {
                field: "signature",
                offset: payload_at + claim,
                needed: 64,
                have: remaining - claim,
            },
            claim => ReadError::Truncated {
                field: "payload",
                offset: payload_at,
                needed: claim.unwrap_or(usize::MAX),
                have: remaining,
            },
        };
        prop_assert_eq!(
            decode(&bad).unwrap_err(),
            MessageError::Signed { offset: 0, source: SignedDecodeError::Read(expected) }
        );
    }

    /// A topic count above the topics present is a truncation (checked
    /// before the list is allocated); below, the rest is trailing bytes.
    #[test]
    fn wrong_topic_counts_are_rejected(wire in control_wire(), count in 1u16..=u16::MAX) {
        let present = (wire.len() - TOPICS_AT) / 32;
        prop_assume!(usize::from(count) != present);
        let mut bad = wire.clone();
        bad[5..TOPICS_AT].copy_from_slice(&count.to_be_bytes());
        let count = usize::from(count);
        let expected = if count > present {
            ReadError::Truncated {
                field: "topics",
                offset: TOPICS_AT,
                needed: count * 32,
                have: present * 32,
            }
        } else {
            ReadError::TrailingBytes {
                offset: TOPICS_AT + count * 32,
                count: (present - count) * 32,
            }
        };
        prop_assert_eq!(decode(&bad).unwrap_err(), MessageError::Read(expected));
    }
}

proptest! {
    // Cheap cases; a few in ten are accepted, so run many.
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_behind_a_valid_header_never_panic(
        tag in prop_oneof![4 => 0u8..=3, 1 => any::<u8>()],
        body in prop_oneof![
            1 => vec(any::<u8>(), 0..300),
            // Count-shaped: topics from a small alphabet, usually the
            // right count, sometimes a wrong one or a stray byte.
            2 => (
                vec((0u8..8).prop_map(|b| [b; 32]), 0..5),
                prop_oneof![3 => Just(None), 1 => (0u16..6).prop_map(Some)],
                prop_oneof![3 => Just(vec![]), 1 => vec(any::<u8>(), 1..3)],
            )
                .prop_map(|(topics, count, extra)| {
                    let count = count.unwrap_or(u16::try_from(topics.len()).expect("small"));
                    let mut body = count.to_be_bytes().to_vec();
                    topics.iter().for_each(|t| body.extend_from_slice(t));
                    body.extend_from_slice(&extra);
                    body
                }),
            // Signed-shaped: a canonical issuer, fields, usually the right
            // declared length, 64 signature bytes.
            2 => (
                0u8..0x7F,
                vec(any::<u8>(), 48),
                vec(any::<u8>(), 0..20),
                prop_oneof![3 => Just(None), 1 => (0u64..24).prop_map(Some)],
                vec(any::<u8>(), 64),
            )
                .prop_map(|(issuer, fields, payload, len, sig)| {
                    let mut body = vec![issuer; 32];
                    body.extend_from_slice(&fields);
                    body.extend_from_slice(&bijou64(len.unwrap_or(payload.len() as u64)));
                    body.extend_from_slice(&payload);
                    body.extend_from_slice(&sig);
                    body
                }),
        ],
    ) {
        let mut bytes = EPHEMERAL_SCHEMA.to_vec();
        bytes.push(tag);
        bytes.extend_from_slice(&body);
        if let Some(EphemeralMessage::Ephemeral(signed)) = assert_injective(&bytes) {
            prop_assert!(signed.verify_strict().is_err());
        }
    }
}

proptest! {
    // Each case verifies a signature per bit (about 1,500 of them).
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Every single-bit flip of a signed message either fails decoding, or
    /// decodes to a message that re-encodes to exactly the flipped bytes
    /// and does not verify. Flips in the topic, nonce, timestamp, payload
    /// and signature always decode (decoding does not look at them), so
    /// this is not vacuous.
    #[test]
    fn every_single_bit_flip_of_a_signed_message_is_rejected_or_fails_verification(
        wire in signed_wire(24),
    ) {
        let (len, used) = bijoux::u64::decode(&wire[PAYLOAD_LEN_AT..]).expect("valid");
        let payload_end = PAYLOAD_LEN_AT + used + usize::try_from(len).expect("small");
        let opaque = |byte: usize| {
            (FIELDS_AT..PAYLOAD_LEN_AT).contains(&byte) || byte >= PAYLOAD_LEN_AT + used
        };
        prop_assert_eq!(payload_end + 64, wire.len());
        for bit in 0..wire.len() * 8 {
            let byte = bit / 8;
            let mut flipped = wire.clone();
            flipped[byte] ^= 1 << (bit % 8);
            match assert_injective(&flipped) {
                Some(EphemeralMessage::Ephemeral(signed)) => {
                    prop_assert!(
                        signed.verify_strict().is_err(),
                        "flip at bit {} (byte {}) still verifies",
                        bit,
                        byte
                    );
                }
                // The tag turned it into a control message: only possible
                // if the length happens to fit, and then it is unsigned.
                Some(_) => prop_assert_eq!(byte, 4),
                None => prop_assert!(!opaque(byte), "flip in opaque byte {} refused", byte),
            }
        }
    }
}

// ---- one test per strictness check ---------------------------------------

#[test]
fn strict_count_0_is_rejected() {
    for tag in 1..=3 {
        // Nothing after the count: a decoder without the check would read
        // an empty list and accept.
        assert_eq!(
            decode(&ephemeral_control(tag, &[])),
            Err(MessageError::EmptyList {
                field: "topics",
                offset: 5
            })
        );
        let mut with_a_topic = ephemeral_control(tag, &[[1; 32]]);
        with_a_topic[5..7].copy_from_slice(&[0, 0]);
        assert_eq!(
            decode(&with_a_topic),
            Err(MessageError::EmptyList {
                field: "topics",
                offset: 5
            })
        );
    }
}

#[test]
fn strict_duplicate_topics_are_rejected_and_distinct_ones_kept_in_wire_order() {
    let (a, b, c) = ([1; 32], [2; 32], [3; 32]);
    for tag in 1..=3 {
        assert_eq!(
            decode(&ephemeral_control(tag, &[a, a])),
            Err(MessageError::Read(ReadError::Duplicate {
                field: "topics",
                offset: TOPICS_AT + 32,
                index: 1
            }))
        );
        // Not adjacent, and not sorted: the duplicate is still found.
        assert_eq!(
            decode(&ephemeral_control(tag, &[c, a, b, a])),
            Err(MessageError::Read(ReadError::Duplicate {
                field: "topics",
                offset: TOPICS_AT + 96,
                index: 3
            }))
        );
        // Distinct topics in any order are kept as sent.
        let wire = ephemeral_control(tag, &[c, a, b]);
        let msg = assert_injective(&wire).expect("distinct topics in any order");
        let topics = match &msg {
            EphemeralMessage::Subscribe(t)
            | EphemeralMessage::Unsubscribe(t)
            | EphemeralMessage::SubscribeRejected(t) => t.as_slice().to_vec(),
            EphemeralMessage::Ephemeral(_) => panic!("{msg:?}"),
        };
        assert_eq!(topics, [c, a, b].map(Topic::new));
    }
}

#[test]
fn strict_unknown_tags_are_rejected() {
    for tag in 0x04..=0xFF {
        // A valid topic list behind it: only the tag is wrong.
        let wire = ephemeral_control(tag, &[[1; 32]]);
        assert_eq!(
            decode(&wire),
            Err(MessageError::Read(ReadError::UnknownValue {
                field: "ephemeral tag",
                offset: 4,
                value: u64::from(tag)
            }))
        );
    }
}

#[test]
fn strict_trailing_bytes_after_the_signature_are_rejected() {
    let wire = seal(1, [5; 32], 6, 7, b"payload");
    for tail in [&[0u8][..], &[0xFF; 3], &wire] {
        let longer = [wire.as_slice(), tail].concat();
        let expected = ReadError::TrailingBytes {
            offset: wire.len(),
            count: tail.len(),
        };
        assert_eq!(decode(&longer), Err(MessageError::Read(expected)));
        assert_eq!(
            SignedEphemeral::decode(Bytes::from(longer.clone())),
            Err(MessageError::Read(expected))
        );
        assert_eq!(
            Signed::<EphemeralPayload>::decode(Bytes::from(longer)).map(|_| ()),
            Err(SignedDecodeError::Read(expected))
        );
    }
}

#[test]
fn strict_trailing_bytes_after_the_last_topic_are_rejected() {
    for tag in 1..=3 {
        let wire = ephemeral_control(tag, &[[1; 32], [2; 32]]);
        for tail in [&[0u8][..], &[1; 31], &[2; 32]] {
            assert_eq!(
                decode(&[wire.as_slice(), tail].concat()),
                Err(MessageError::Read(ReadError::TrailingBytes {
                    offset: wire.len(),
                    count: tail.len()
                }))
            );
        }
    }
}

#[test]
fn strict_non_canonical_issuers_are_rejected() {
    let wire = seal(2, [6; 32], 7, 8, b"x");
    let issuers = non_canonical_issuers();
    assert_eq!(issuers.len(), 40);
    for issuer in issuers {
        let mut bad = wire.clone();
        bad[5..FIELDS_AT].copy_from_slice(&issuer);
        assert_eq!(
            decode(&bad),
            Err(MessageError::Signed {
                offset: 0,
                source: SignedDecodeError::NonCanonicalIssuer { offset: 5 }
            }),
            "issuer {issuer:02x?}"
        );
        // Only the issuer check refuses it: the canonical encoding of the
        // same y (reduced mod p, sign bit cleared) decodes, and fails
        // verification.
        let mut unsigned = issuer;
        unsigned[31] &= 0x7F;
        let canonical = reduce_mod_p(unsigned);
        bad[5..FIELDS_AT].copy_from_slice(&canonical);
        let Some(EphemeralMessage::Ephemeral(signed)) = assert_injective(&bad) else {
            panic!("canonical {canonical:02x?} refused")
        };
        assert!(signed.verify_strict().is_err());
    }
}

/// `y mod p`, for `y < 2^255` (so `y < 2p`); little-endian.
fn reduce_mod_p(y: [u8; 32]) -> [u8; 32] {
    let ge_p = y.iter().rev().cmp(FIELD_PRIME.iter().rev()).is_ge();
    if !ge_p {
        return y;
    }
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for i in 0..32 {
        let d = i16::from(y[i]) - i16::from(FIELD_PRIME[i]) - borrow;
        out[i] = d.rem_euclid(256) as u8;
        borrow = i16::from(d < 0);
    }
    out
}

/// Tag 00 *is* the signed payload's discriminant: the message decoder
/// reads byte 4 once, and any other value goes to the control messages
/// or is an unknown tag, so `WrongDiscriminant` cannot come out of it.
/// The signed decoder on its own still checks it.
#[test]
fn strict_the_discriminant_is_the_tag_so_a_wrong_one_never_reaches_the_signed_decoder() {
    let wire = seal(3, [7; 32], 8, 9, b"y");
    for byte in 0x01..=0xFF {
        let mut bad = wire.clone();
        bad[4] = byte;
        let err = decode(&bad).unwrap_err();
        if byte <= 3 {
            // Read as a topic list: the issuer's first two bytes are the
            // count, and the length does not fit it.
            assert!(
                matches!(
                    err,
                    MessageError::Read(
                        ReadError::Truncated { .. } | ReadError::TrailingBytes { .. }
                    ) | MessageError::EmptyList { .. }
                ),
                "{err:?}"
            );
        } else {
            assert_eq!(
                err,
                MessageError::Read(ReadError::UnknownValue {
                    field: "ephemeral tag",
                    offset: 4,
                    value: u64::from(byte)
                })
            );
        }
        let wrong = SignedDecodeError::WrongDiscriminant {
            expected: 0,
            found: byte,
            offset: 4,
        };
        assert_eq!(
            SignedEphemeral::decode(Bytes::from(bad.clone())),
            Err(MessageError::Signed {
                offset: 0,
                source: wrong
            })
        );
        assert_eq!(
            Signed::<EphemeralPayload>::decode(Bytes::from(bad)).map(|_| ()),
            Err(wrong)
        );
    }
}

#[test]
fn strict_encoder_refuses_65536_topics_instead_of_truncating_the_count() {
    let topic = |i: u32| {
        let mut t = [0u8; 32];
        t[..4].copy_from_slice(&i.to_be_bytes());
        Topic::new(t)
    };
    let too_many = Topics::new((0..=u32::from(u16::MAX)).map(topic)).expect("non-empty");
    assert_eq!(too_many.len(), 65_536);
    let error = WriteError::CountTooLarge {
        field: "topics",
        len: 65_536,
        max: 65_535,
    };
    for msg in [
        EphemeralMessage::Subscribe(too_many.clone()),
        EphemeralMessage::Unsubscribe(too_many.clone()),
        EphemeralMessage::SubscribeRejected(too_many),
    ] {
        assert_eq!(msg.wire_len(), Err(error));
        assert_eq!(msg.encode(), Err(error));
        let mut out = vec![1, 2, 3];
        assert_eq!(msg.encode_into(&mut out), Err(error));
        assert_eq!(out, [1, 2, 3], "nothing written on error");
    }
    // One fewer fits, with count FFFF, and comes back equal.
    let most = Topics::new((0..u32::from(u16::MAX)).map(topic)).expect("non-empty");
    let msg = EphemeralMessage::Subscribe(most);
    let wire = msg.encode().expect("65,535 topics fit");
    assert_eq!(&wire[..TOPICS_AT], b"SUE\0\x01\xFF\xFF");
    assert_eq!(wire.len(), TOPICS_AT + 65_535 * 32);
    assert_eq!(decode(&wire), Ok(msg));
}

#[test]
fn strict_payload_len_u64_max_and_overflow_are_typed_errors() {
    let wire = seal(1, [1; 32], 1, 1, b"");
    assert_eq!(wire[PAYLOAD_LEN_AT], 0);
    let rest = &wire[PAYLOAD_LEN_AT + 1..];
    let max = [&wire[..PAYLOAD_LEN_AT], &bijou64(u64::MAX), rest].concat();
    assert_eq!(
        decode(&max),
        Err(MessageError::Signed {
            offset: 0,
            source: SignedDecodeError::Read(ReadError::Truncated {
                field: "payload",
                offset: PAYLOAD_LEN_AT + 9,
                needed: usize::MAX,
                have: 64
            })
        })
    );
    let overflow = [&wire[..PAYLOAD_LEN_AT], &[0xFF; 9], rest].concat();
    assert_eq!(
        decode(&overflow),
        Err(MessageError::Signed {
            offset: 0,
            source: SignedDecodeError::Read(ReadError::Bijou64Overflow {
                field: "payload_len",
                offset: PAYLOAD_LEN_AT
            })
        })
    );
}

#[test]
fn a_valid_signed_message_verifies_and_its_issuer_is_the_sealer() {
    // The baseline the flips are measured against.
    let wire = seal(4, [8; 32], 9, 10, b"z");
    let Some(EphemeralMessage::Ephemeral(signed)) = assert_injective(&wire) else {
        panic!()
    };
    let verified = signed.verify_strict().expect("verifies");
    assert_eq!(verified.issuer(), key(4).verifying_key());
    assert_eq!(verified.payload().payload().as_ref(), b"z");
}
