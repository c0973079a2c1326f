//! Differential tests of the ephemeral messages (`SUE\0`) against the
//! published `subduction_ephemeral` =0.10.0 (signing through
//! `subduction_crypto` 0.11), which is the oracle here, never the
//! implementation:
//!
//! - agreement, both directions: messages sealed by their code (their
//!   `Signed::seal` with a `MemorySigner`) decode with ours to the same
//!   fields, verify, and re-encode to the same bytes; ours decode and
//!   verify with theirs; the same key bytes give byte-identical signed
//!   messages on both sides (Ed25519 is deterministic); the three control
//!   kinds agree byte for byte, in any topic order;
//! - a table of every place where the two decoders differ (or might be
//!   expected to), each row showing both behaviours side by side;
//! - a mutation property: whenever ours accepts a mutant of a valid
//!   message, theirs accepts it too and reads the same thing (ours is a
//!   subset of theirs), with one documented exception (an issuer that is
//!   not a curve point: they refuse it when decoding, we when verifying);
//!   the mutants they accept and we refuse are counted by reason and must
//!   exist, so the test shows the difference instead of assuming it.

use std::collections::BTreeMap;

use bijou_codec::{ReadError, Wire, WriteError};
use bijou_proto::message::{
    EphemeralMessage, EphemeralPayload, Message, MessageError, SignedEphemeral, Topic, Topics,
    EPHEMERAL_SCHEMA,
};
use bijou_signing::ed25519_dalek::{SigningKey, VerifyingKey};
use bijou_signing::strict::FIELD_PRIME;
use bijou_signing::{SignedDecodeError, VerifyError};
use bytes::Bytes;
use future_form::Sendable;
use futures::executor::block_on;
use nonempty::NonEmpty;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestRunner};

use sedimentree_core::codec::decode::Decode;
use sedimentree_core::codec::encode::Encode;
use sedimentree_core::codec::error::{
    DecodeError as TDecodeError, InvalidDiscriminant, InvalidEnumTag, SizeMismatch,
};
use subduction_core::timestamp::TimestampSeconds;
use subduction_crypto::signed::Signed as TSigned;
use subduction_crypto::signer::memory::MemorySigner;
use subduction_ephemeral::message::{
    EphemeralMessage as TheirMessage, EphemeralPayload as TheirPayload,
};
use subduction_ephemeral::topic::Topic as TTopic;

use bijou_test_support::messages::ephemeral_control;

/// Payload sizes for the agreement tests: a one-byte `PayloadLen` (0, 1,
/// 64) and multi-byte ones (4096, and 65,537: more than 64 KiB).
const SIZES: [usize; 5] = [0, 1, 64, 4096, 65_537];

/// Where the fields of a signed message start: schema, tag, issuer.
const FIELDS_AT: usize = 4 + 1 + 32;
/// Where `PayloadLen` starts: fields + topic, nonce, timestamp.
const PAYLOAD_LEN_AT: usize = FIELDS_AT + 32 + 8 + 8;
/// Where a control message's topics start: schema, tag, count.
const TOPICS_AT: usize = 4 + 1 + 2;

// ---- both sides' constructors -------------------------------------------

fn our_key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

fn payload_bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Sealed by us with the key `[n; 32]`.
fn our_seal(n: u8, topic: [u8; 32], nonce: u64, timestamp: u64, payload: &[u8]) -> SignedEphemeral {
    let fields = EphemeralPayload::new(
        Topic::new(topic),
        nonce,
        timestamp,
        Bytes::copy_from_slice(payload),
    );
    SignedEphemeral::seal(&our_key(n), &fields).expect("seal")
}

/// Sealed by their code with the key `[n; 32]`.
fn their_seal(
    n: u8,
    topic: [u8; 32],
    nonce: u64,
    timestamp: u64,
    payload: &[u8],
) -> TSigned<TheirPayload> {
    let fields = TheirPayload {
        id: TTopic::new(topic),
        nonce,
        timestamp: TimestampSeconds::new(timestamp),
        payload: payload.to_vec(),
    };
    block_on(TSigned::seal::<Sendable, _>(
        &MemorySigner::from_bytes(&[n; 32]),
        fields,
    ))
    .into_signed()
}

fn their_control(tag: u8, topics: &[[u8; 32]]) -> TheirMessage {
    let topics = NonEmpty::from_vec(topics.iter().map(|t| TTopic::new(*t)).collect())
        .expect("at least one topic");
    match tag {
        1 => TheirMessage::Subscribe { topics },
        2 => TheirMessage::Unsubscribe { topics },
        3 => TheirMessage::SubscribeRejected { topics },
        _ => unreachable!("control tags are 1..=3"),
    }
}

fn our_control(tag: u8, topics: Topics) -> EphemeralMessage {
    match tag {
        1 => EphemeralMessage::Subscribe(topics),
        2 => EphemeralMessage::Unsubscribe(topics),
        3 => EphemeralMessage::SubscribeRejected(topics),
        _ => unreachable!("control tags are 1..=3"),
    }
}

fn ours(bytes: &[u8]) -> Result<EphemeralMessage, MessageError> {
    let decoded = EphemeralMessage::decode(Bytes::copy_from_slice(bytes));
    // Behind the schema, the top-level dispatcher must say exactly the
    // same (a mutated schema is another message kind).
    if bytes.starts_with(&EPHEMERAL_SCHEMA) {
        let top = Message::decode(Bytes::copy_from_slice(bytes));
        assert_eq!(
            top,
            decoded.clone().map(Message::Ephemeral),
            "Message::decode and EphemeralMessage::decode disagree"
        );
    }
    decoded
}

fn theirs(bytes: &[u8]) -> Result<TheirMessage, TDecodeError> {
    TheirMessage::try_decode(bytes)
}

// ---- what a message says, in plain data ---------------------------------

/// The content of a decoded message, for comparing the two sides.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Content {
    Signed {
        issuer: [u8; 32],
        topic: [u8; 32],
        nonce: u64,
        timestamp: u64,
        payload: Vec<u8>,
        signature: [u8; 64],
        /// The whole message as held (both sides keep the received bytes).
        bytes: Vec<u8>,
    },
    Control {
        tag: u8,
        topics: Vec<[u8; 32]>,
    },
}

fn our_content(msg: &EphemeralMessage) -> Content {
    match msg {
        EphemeralMessage::Ephemeral(signed) => {
            let header = signed.header();
            let bytes = signed.as_bytes();
            // Unverified, the payload is reachable only as bytes: it sits
            // right before the signature, `payload_len` long.
            let end = bytes.len() - 64;
            let len = usize::try_from(header.payload_len).expect("decoded, so it fits");
            Content::Signed {
                issuer: *signed.issuer().as_bytes(),
                topic: *header.topic.as_bytes(),
                nonce: header.nonce,
                timestamp: header.timestamp,
                payload: bytes[end - len..end].to_vec(),
                signature: signed.signed().signature().to_bytes(),
                bytes: bytes.to_vec(),
            }
        }
        EphemeralMessage::Subscribe(t)
        | EphemeralMessage::Unsubscribe(t)
        | EphemeralMessage::SubscribeRejected(t) => Content::Control {
            tag: msg.tag(),
            topics: t.iter().map(|topic| *topic.as_bytes()).collect(),
        },
    }
}

fn their_content(msg: &TheirMessage) -> Content {
    let control = |tag: u8, topics: &NonEmpty<TTopic>| Content::Control {
        tag,
        topics: topics.iter().map(|t| *t.as_bytes()).collect(),
    };
    match msg {
        TheirMessage::Ephemeral(signed) => {
            let fields = signed
                .try_decode_trusted_payload()
                .expect("their decode already parsed the fields");
            Content::Signed {
                issuer: signed.issuer().to_bytes(),
                topic: *fields.id.as_bytes(),
                nonce: fields.nonce,
                timestamp: fields.timestamp.as_secs(),
                payload: fields.payload,
                signature: signed.signature().to_bytes(),
                bytes: signed.as_bytes().to_vec(),
            }
        }
        TheirMessage::Subscribe { topics } => control(1, topics),
        TheirMessage::Unsubscribe { topics } => control(2, topics),
        TheirMessage::SubscribeRejected { topics } => control(3, topics),
    }
}

/// Whether their decoded message verifies (`None` for control messages).
fn their_verdict(msg: &TheirMessage) -> Option<bool> {
    match msg {
        TheirMessage::Ephemeral(signed) => Some(signed.try_verify().is_ok()),
        _ => None,
    }
}

/// Whether our decoded message verifies (`None` for control messages).
fn our_verdict(msg: &EphemeralMessage) -> Option<bool> {
    match msg {
        EphemeralMessage::Ephemeral(signed) => Some(signed.verify_strict().is_ok()),
        _ => None,
    }
}

// ---- issuers: canonical or not, points or not ----------------------------

/// `y = p + k` (little-endian; `FIELD_PRIME[0] + 18` does not carry).
fn y_above_p(k: u8, sign: bool) -> [u8; 32] {
    let mut y = FIELD_PRIME;
    y[0] += k;
    if sign {
        y[31] |= 0x80;
    }
    y
}

/// The canonical encoding of `y = k`.
fn y_small(k: u8) -> [u8; 32] {
    let mut y = [0; 32];
    y[0] = k;
    y
}

/// A `k` in `2..19` for which `y = k` is a point of large order, so that
/// `y = p + k` is a non-canonical encoding of a key that is neither weak
/// nor invalid.
fn large_order_k() -> u8 {
    (2..19)
        .find(|&k| VerifyingKey::from_bytes(&y_small(k)).is_ok_and(|key| !key.is_weak()))
        .expect("some y below 19 is a point of large order")
}

/// A canonical encoding (`y < p`) that is not a curve point.
fn not_a_point() -> [u8; 32] {
    (2..=u8::MAX)
        .map(y_small)
        .find(|y| VerifyingKey::from_bytes(y).is_err())
        .expect("about half of all y are not on the curve")
}

fn with_issuer(wire: &[u8], issuer: [u8; 32]) -> Vec<u8> {
    let mut out = wire.to_vec();
    out[5..FIELDS_AT].copy_from_slice(&issuer);
    out
}

// ---- (a) agreement -------------------------------------------------------

/// Theirs -> ours and ours -> theirs for the signed message at every size,
/// and the same key bytes give the same message on both sides.
#[test]
fn signed_messages_agree_byte_for_byte_at_every_size() {
    for (i, &size) in SIZES.iter().enumerate() {
        let n = 1 + i as u8;
        let topic = [0x40 + i as u8; 32];
        let (nonce, timestamp) = (
            0x0123_4567_89AB_CDEF ^ size as u64,
            1_700_000_000 + size as u64,
        );
        let payload = payload_bytes(size, n);

        let their_signed = their_seal(n, topic, nonce, timestamp, &payload);
        let our_signed = our_seal(n, topic, nonce, timestamp, &payload);
        let their_wire = TheirMessage::Ephemeral(Box::new(their_signed.clone())).encode();
        let our_wire = EphemeralMessage::from(our_signed.clone())
            .encode()
            .expect("encode");
        assert_eq!(
            our_wire.as_ref(),
            their_wire.as_slice(),
            "size {size}: same key bytes, same message"
        );
        assert_eq!(our_signed.as_bytes(), their_signed.as_bytes());

        // Theirs -> ours: same fields, verifies, re-encodes identically.
        let decoded = ours(&their_wire).expect("ours decodes theirs");
        let EphemeralMessage::Ephemeral(signed) = &decoded else {
            panic!("size {size}: {decoded:?}")
        };
        assert_eq!(
            (
                signed.header().topic,
                signed.header().nonce,
                signed.header().timestamp,
                signed.header().payload_len
            ),
            (Topic::new(topic), nonce, timestamp, size as u64)
        );
        assert_eq!(signed.issuer(), our_key(n).verifying_key().into());
        let verified = signed.verify_strict().expect("their signature verifies");
        assert_eq!(verified.payload().payload().as_ref(), payload.as_slice());
        assert_eq!(
            decoded.encode().expect("encode").as_ref(),
            their_wire.as_slice()
        );
        assert_eq!(
            our_content(&decoded),
            their_content(&TheirMessage::Ephemeral(Box::new(their_signed)))
        );

        // Ours -> theirs: same fields, verifies, re-encodes identically.
        let back = theirs(&our_wire).expect("theirs decodes ours");
        let TheirMessage::Ephemeral(their_back) = &back else {
            panic!("size {size}: {back:?}")
        };
        let verified = their_back.try_verify().expect("our signature verifies");
        assert_eq!(verified.payload().payload, payload);
        assert_eq!(verified.payload().id, TTopic::new(topic));
        assert_eq!(verified.payload().nonce, nonce);
        assert_eq!(verified.payload().timestamp.as_secs(), timestamp);
        assert_eq!(back.encode(), our_wire.to_vec());
        assert_eq!(their_content(&back), our_content(&decoded));
    }
}

/// The three control kinds, with one topic, several sorted, and several
/// in the caller's order (as Subduction sends them).
#[test]
fn control_messages_agree_byte_for_byte_in_any_order() {
    let lists: [&[[u8; 32]]; 4] = [
        &[[7; 32]],
        &[[1; 32], [2; 32], [3; 32]],
        &[[3; 32], [1; 32], [2; 32]],
        &[[0xFF; 32], [0; 32]],
    ];
    for tag in 1..=3 {
        for topics in lists {
            let their_wire = their_control(tag, topics).encode();
            assert_eq!(their_wire, ephemeral_control(tag, topics));

            // Theirs -> ours: decoded in their order, re-encoded identically.
            let decoded = ours(&their_wire).expect("ours decodes theirs");
            assert_eq!(decoded.tag(), tag);
            assert_eq!(
                our_content(&decoded),
                their_content(&their_control(tag, topics))
            );
            assert_eq!(
                decoded.encode().expect("encode").as_ref(),
                their_wire.as_slice()
            );

            // Ours -> theirs: `Topics::new` sorts, and theirs read that.
            let topics_ours =
                Topics::new(topics.iter().map(|t| Topic::new(*t))).expect("non-empty");
            let our_wire = our_control(tag, topics_ours).encode().expect("encode");
            let mut sorted = topics.to_vec();
            sorted.sort_unstable();
            assert_eq!(
                our_wire.as_ref(),
                ephemeral_control(tag, &sorted).as_slice()
            );
            let back = theirs(&our_wire).expect("theirs decodes ours");
            assert_eq!(back, their_control(tag, &sorted));
            assert_eq!(back.encode(), our_wire.to_vec());
        }
    }
}

fn distinct_topics() -> impl Strategy<Value = Vec<[u8; 32]>> {
    proptest::collection::vec(
        prop_oneof![any::<[u8; 32]>(), (0u8..6).prop_map(|b| [b; 32])],
        1..8,
    )
    .prop_map(|mut topics| {
        let mut seen = std::collections::BTreeSet::new();
        topics.retain(|t| seen.insert(*t));
        topics
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random fields, both sealers, both decoders, both verifiers.
    #[test]
    fn signed_messages_agree_on_random_fields(
        n in any::<u8>(),
        topic in any::<[u8; 32]>(),
        nonce in any::<u64>(),
        timestamp in any::<u64>(),
        payload in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let their_signed = their_seal(n, topic, nonce, timestamp, &payload);
        let our_signed = our_seal(n, topic, nonce, timestamp, &payload);
        prop_assert_eq!(our_signed.as_bytes(), their_signed.as_bytes());
        let wire = their_signed.as_bytes().to_vec();
        let decoded = ours(&wire).expect("ours decodes theirs");
        let back = theirs(&wire).expect("theirs decodes ours");
        prop_assert_eq!(our_content(&decoded), their_content(&back));
        prop_assert_eq!(our_verdict(&decoded), Some(true));
        prop_assert_eq!(their_verdict(&back), Some(true));
        prop_assert_eq!(decoded.encode().expect("encode").to_vec(), back.encode());
    }

    #[test]
    fn control_messages_agree_on_random_topics(tag in 1u8..=3, topics in distinct_topics()) {
        let wire = their_control(tag, &topics).encode();
        let decoded = ours(&wire).expect("ours decodes theirs");
        let back = theirs(&wire).expect("theirs decodes theirs");
        prop_assert_eq!(our_content(&decoded), their_content(&back));
        prop_assert_eq!(decoded.encode().expect("encode").to_vec(), wire);
    }
}

// ---- (b) where they are lax and we are strict, side by side -------------

/// One row: an input, and what each side does with it.
struct Case {
    name: &'static str,
    wire: Vec<u8>,
    /// Their decode: `Ok(bytes)` if they accept, with the bytes their
    /// decoded value re-encodes to (what they keep).
    theirs: Result<Vec<u8>, TDecodeError>,
    /// Whether their decoded signed message verifies (`None` if not
    /// decoded or not signed).
    theirs_verify: Option<bool>,
    /// Our decode: `Ok(())` if we accept (and then the bytes must
    /// re-encode identically).
    ours: Result<(), MessageError>,
    /// Whether our decoded signed message verifies.
    ours_verify: Option<bool>,
}

fn table() -> Vec<Case> {
    let topic = |b: u8| [b; 32];
    let signed = our_seal(1, topic(9), 5, 1_700_000_000, b"cursor 3:14")
        .as_bytes()
        .to_vec();
    let n = signed.len();
    let with_tail = |tail: &[u8]| [signed.as_slice(), tail].concat();
    let sub = |topics: &[[u8; 32]]| ephemeral_control(1, topics);
    let k = large_order_k();
    let big = our_seal(2, topic(8), 6, 1_700_000_001, &payload_bytes(65_537, 2))
        .as_bytes()
        .to_vec();
    let mut count_too_big = sub(&[topic(1), topic(2)]);
    count_too_big[5..7].copy_from_slice(&3u16.to_be_bytes());
    let mut len_u64_max = signed[..PAYLOAD_LEN_AT].to_vec();
    bijoux::u64::encode(u64::MAX, &mut len_u64_max);
    len_u64_max.extend_from_slice(&signed[PAYLOAD_LEN_AT + 1..]);
    let mut wrong_tag = sub(&[topic(1)]);
    let mut tag_ff = wrong_tag.clone();
    wrong_tag[4] = 0x04;
    tag_ff[4] = 0xFF;
    let mut control_as_signed = sub(&[topic(1)]);
    control_as_signed[4] = 0x00;

    vec![
        Case {
            name: "3 trailing bytes after the signature",
            wire: with_tail(&[0xAA, 0xBB, 0xCC]),
            theirs: Ok(signed.clone()),
            theirs_verify: Some(true),
            ours: Err(MessageError::Read(ReadError::TrailingBytes {
                offset: n,
                count: 3,
            })),
            ours_verify: None,
        },
        Case {
            name: "a whole second message after the signature",
            wire: with_tail(&signed),
            theirs: Ok(signed.clone()),
            theirs_verify: Some(true),
            ours: Err(MessageError::Read(ReadError::TrailingBytes {
                offset: n,
                count: n,
            })),
            ours_verify: None,
        },
        Case {
            name: "1 trailing byte after the last topic",
            wire: [sub(&[topic(1)]).as_slice(), &[0]].concat(),
            theirs: Err(SizeMismatch {
                declared: 2 + 32,
                actual: 2 + 32 + 1,
            }
            .into()),
            theirs_verify: None,
            ours: Err(MessageError::Read(ReadError::TrailingBytes {
                offset: TOPICS_AT + 32,
                count: 1,
            })),
            ours_verify: None,
        },
        Case {
            name: "a duplicate topic (a, b, a)",
            wire: sub(&[topic(1), topic(2), topic(1)]),
            theirs: Ok(sub(&[topic(1), topic(2), topic(1)])),
            theirs_verify: None,
            ours: Err(MessageError::Read(ReadError::Duplicate {
                field: "topics",
                offset: TOPICS_AT + 64,
                index: 2,
            })),
            ours_verify: None,
        },
        Case {
            name: "unsorted distinct topics (b, a)",
            wire: sub(&[topic(2), topic(1)]),
            theirs: Ok(sub(&[topic(2), topic(1)])),
            theirs_verify: None,
            ours: Ok(()),
            ours_verify: None,
        },
        Case {
            name: "count 0, nothing after it",
            wire: sub(&[]),
            theirs: Err(TDecodeError::MessageTooShort {
                type_name: "EphemeralSubscribe",
                need: TOPICS_AT + 32,
                have: TOPICS_AT,
            }),
            theirs_verify: None,
            ours: Err(MessageError::EmptyList {
                field: "topics",
                offset: 5,
            }),
            ours_verify: None,
        },
        Case {
            name: "count 0, one topic after it",
            wire: {
                let mut w = sub(&[topic(1)]);
                w[5..7].copy_from_slice(&[0, 0]);
                w
            },
            theirs: Err(TDecodeError::MessageTooShort {
                type_name: "EphemeralTopicList",
                need: 2 + 32,
                have: 2 + 32,
            }),
            theirs_verify: None,
            ours: Err(MessageError::EmptyList {
                field: "topics",
                offset: 5,
            }),
            ours_verify: None,
        },
        Case {
            name: "count 3, two topics present",
            wire: count_too_big,
            theirs: Err(TDecodeError::MessageTooShort {
                type_name: "array",
                need: 2 + 96,
                have: 2 + 64,
            }),
            theirs_verify: None,
            ours: Err(MessageError::Read(ReadError::Truncated {
                field: "topics",
                offset: TOPICS_AT,
                needed: 96,
                have: 64,
            })),
            ours_verify: None,
        },
        Case {
            name: "unknown tag 04",
            wire: wrong_tag,
            theirs: Err(InvalidEnumTag {
                tag: 0x04,
                type_name: "EphemeralMessage",
            }
            .into()),
            theirs_verify: None,
            ours: Err(MessageError::Read(ReadError::UnknownValue {
                field: "ephemeral tag",
                offset: 4,
                value: 0x04,
            })),
            ours_verify: None,
        },
        Case {
            name: "unknown tag ff",
            wire: tag_ff,
            theirs: Err(InvalidEnumTag {
                tag: 0xFF,
                type_name: "EphemeralMessage",
            }
            .into()),
            theirs_verify: None,
            ours: Err(MessageError::Read(ReadError::UnknownValue {
                field: "ephemeral tag",
                offset: 4,
                value: 0xFF,
            })),
            ours_verify: None,
        },
        Case {
            name: "tag 00 (the signed discriminant) on a control body",
            wire: control_as_signed,
            theirs: Err(TDecodeError::MessageTooShort {
                type_name: std::any::type_name::<TheirPayload>(),
                need: 150,
                have: TOPICS_AT + 32,
            }),
            theirs_verify: None,
            ours: Err(MessageError::Signed {
                offset: 0,
                // The count and 30 topic bytes make a canonical issuer;
                // the topic field is what is missing.
                source: SignedDecodeError::Read(ReadError::Truncated {
                    field: "topic",
                    offset: FIELDS_AT,
                    needed: 32,
                    have: 2,
                }),
            }),
            ours_verify: None,
        },
        Case {
            name: "non-canonical issuer y = p + k (a large-order point)",
            wire: with_issuer(&signed, y_above_p(k, false)),
            theirs: Ok(with_issuer(&signed, y_above_p(k, false))),
            theirs_verify: Some(false),
            ours: Err(MessageError::Signed {
                offset: 0,
                source: SignedDecodeError::NonCanonicalIssuer { offset: 5 },
            }),
            ours_verify: None,
        },
        Case {
            name: "non-canonical issuer y = p (the order-4 point y = 0)",
            wire: with_issuer(&signed, y_above_p(0, false)),
            theirs: Ok(with_issuer(&signed, y_above_p(0, false))),
            theirs_verify: Some(false),
            ours: Err(MessageError::Signed {
                offset: 0,
                source: SignedDecodeError::NonCanonicalIssuer { offset: 5 },
            }),
            ours_verify: None,
        },
        Case {
            name: "non-canonical issuer (-0, 1): sign bit on the identity",
            wire: with_issuer(&signed, {
                let mut y = y_small(1);
                y[31] = 0x80;
                y
            }),
            theirs: Ok(with_issuer(&signed, {
                let mut y = y_small(1);
                y[31] = 0x80;
                y
            })),
            theirs_verify: Some(false),
            ours: Err(MessageError::Signed {
                offset: 0,
                source: SignedDecodeError::NonCanonicalIssuer { offset: 5 },
            }),
            ours_verify: None,
        },
        Case {
            name: "canonical issuer that is not a curve point (they are stricter)",
            wire: with_issuer(&signed, not_a_point()),
            theirs: Err(TDecodeError::InvalidVerifyingKey),
            theirs_verify: None,
            ours: Ok(()),
            ours_verify: Some(false),
        },
        Case {
            name: "payload_len u64::MAX",
            wire: len_u64_max,
            theirs: Err(TDecodeError::MessageTooShort {
                type_name: "EphemeralPayloadHeader payload data",
                need: usize::MAX,
                have: 32 + 8 + 8 + 9 + 11 + 64,
            }),
            theirs_verify: None,
            ours: Err(MessageError::Signed {
                offset: 0,
                source: SignedDecodeError::Read(ReadError::Truncated {
                    field: "payload",
                    offset: PAYLOAD_LEN_AT + 9,
                    needed: usize::MAX,
                    have: 11 + 64,
                }),
            }),
            ours_verify: None,
        },
        Case {
            name: "payload of 64 KiB + 1 (the limit is the session's)",
            wire: big.clone(),
            theirs: Ok(big),
            theirs_verify: Some(true),
            ours: Ok(()),
            ours_verify: Some(true),
        },
    ]
}

fn show<T, E: std::fmt::Debug>(result: &Result<T, E>, verify: Option<bool>) -> String {
    let verdict = match verify {
        Some(true) => ", verifies",
        Some(false) => ", does not verify",
        None => "",
    };
    match result {
        Ok(_) => format!("accepts{verdict}"),
        Err(e) => format!("rejects: {e:?}"),
    }
}

#[test]
fn lax_and_strict_side_by_side() {
    for case in table() {
        let their_result = theirs(&case.wire);
        let our_result = ours(&case.wire);
        eprintln!(
            "{}\n    theirs: {}\n    ours:   {}",
            case.name,
            show(
                &their_result,
                their_result.as_ref().ok().and_then(their_verdict)
            ),
            show(&our_result, our_result.as_ref().ok().and_then(our_verdict)),
        );

        // Theirs.
        match (&their_result, &case.theirs) {
            (Ok(msg), Ok(keeps)) => {
                assert_eq!(&msg.encode(), keeps, "{}: what theirs keeps", case.name);
                assert_eq!(
                    their_verdict(msg),
                    case.theirs_verify,
                    "{}: their verify",
                    case.name
                );
            }
            (Err(got), Err(want)) => assert_eq!(got, want, "{}: their error", case.name),
            (got, _) => panic!("{}: theirs {got:?}", case.name),
        }

        // Ours.
        match (&our_result, &case.ours) {
            (Ok(msg), Ok(())) => {
                assert_eq!(
                    msg.encode().expect("encode").as_ref(),
                    case.wire.as_slice(),
                    "{}: ours re-encodes identically",
                    case.name
                );
                assert_eq!(
                    our_verdict(msg),
                    case.ours_verify,
                    "{}: our verify",
                    case.name
                );
                // Where both accept, both read the same.
                if let Ok(their_msg) = &their_result {
                    assert_eq!(our_content(msg), their_content(their_msg), "{}", case.name);
                }
            }
            (Err(got), Err(want)) => assert_eq!(got, want, "{}: our error", case.name),
            (got, _) => panic!("{}: ours {got:?}", case.name),
        }
    }
}

/// The one place where theirs is stricter at decode time: an issuer that
/// is canonically encoded but not a curve point. Ours decodes it (decoding
/// only checks the encoding) and refuses it at verification, before any
/// curve arithmetic on the signature.
#[test]
fn an_issuer_off_the_curve_is_refused_by_their_decoder_and_by_our_verifier() {
    let wire = with_issuer(our_seal(3, [1; 32], 1, 2, b"x").as_bytes(), not_a_point());
    assert_eq!(
        theirs(&wire).unwrap_err(),
        TDecodeError::InvalidVerifyingKey
    );
    let Ok(EphemeralMessage::Ephemeral(signed)) = ours(&wire) else {
        panic!("ours decodes it")
    };
    assert!(matches!(
        signed.verify_strict(),
        Err(VerifyError::InvalidIssuer { .. })
    ));
}

/// Their `Signed::try_decode` reads one signed value and drops the rest,
/// so a relay forwarding their re-encoding would forward a different
/// message than it received.
#[test]
fn theirs_drop_trailing_bytes_silently() {
    let signed = their_seal(4, [2; 32], 3, 4, b"hi");
    let mut wire = signed.as_bytes().to_vec();
    wire.extend_from_slice(b"junk");
    let TheirMessage::Ephemeral(decoded) = theirs(&wire).expect("theirs accept") else {
        panic!()
    };
    assert_eq!(decoded.as_bytes(), signed.as_bytes());
    assert!(decoded.try_verify().is_ok());
    assert!(matches!(
        ours(&wire),
        Err(MessageError::Read(ReadError::TrailingBytes {
            count: 4,
            ..
        }))
    ));
    // Their discriminant check never fires through their message decoder
    // either: byte 4 is the tag.
    let mut not_signed = signed.as_bytes().to_vec();
    not_signed[4] = 1;
    let as_control = theirs(&not_signed);
    assert!(as_control.is_err());
    assert!(!matches!(
        as_control,
        Err(TDecodeError::InvalidDiscriminant(
            InvalidDiscriminant { .. }
        ))
    ));
}

/// Their encoder casts the topic count (`len() as u16`, with only a
/// `debug_assert`); ours refuses. Not run against their encoder: in this
/// debug-assertion test profile it would panic.
#[test]
fn ours_refuse_to_encode_65536_topics() {
    let topics = Topics::new((0..=u32::from(u16::MAX)).map(|i| {
        let mut t = [0u8; 32];
        t[..4].copy_from_slice(&i.to_be_bytes());
        Topic::new(t)
    }))
    .expect("non-empty");
    assert_eq!(
        EphemeralMessage::Subscribe(topics).encode(),
        Err(WriteError::CountTooLarge {
            field: "topics",
            len: 65_536,
            max: 65_535
        })
    );
}

// ---- (c) mutation: ours is a subset of theirs ----------------------------

#[derive(Debug, Clone)]
enum Mutation {
    FlipBit(Index, u8),
    SetByte(Index, u8),
    Truncate(Index),
    Insert(Index, Vec<u8>),
    Delete(Index, usize),
    Append(Vec<u8>),
    /// The control count, or the signed `PayloadLen` (re-encoded).
    SetCount(u64),
    /// Copy one topic over another (a duplicate), or for a signed message
    /// one 32-byte chunk over the issuer.
    CopyTopic(Index, Index),
    SwapTopics(Index, Index),
    /// A non-canonical issuer (`y = p + k`, either sign).
    NonCanonicalIssuer(u8, bool),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        2 => (any::<Index>(), prop_oneof![any::<u8>(), Just(0), Just(0xFF)])
            .prop_map(|(i, v)| Mutation::SetByte(i, v)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        1 => (any::<Index>(), proptest::collection::vec(any::<u8>(), 1..4))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => (any::<Index>(), 1usize..4).prop_map(|(i, n)| Mutation::Delete(i, n)),
        1 => proptest::collection::vec(any::<u8>(), 1..40).prop_map(Mutation::Append),
        2 => prop_oneof![0u64..8, any::<u16>().prop_map(u64::from), any::<u64>()]
            .prop_map(Mutation::SetCount),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::CopyTopic(a, b)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapTopics(a, b)),
        1 => (0u8..19, any::<bool>()).prop_map(|(k, s)| Mutation::NonCanonicalIssuer(k, s)),
    ]
}

fn apply(wire: &mut Vec<u8>, m: &Mutation) {
    let signed = wire.get(4) == Some(&0);
    let topics = wire.len().saturating_sub(TOPICS_AT) / 32;
    let len = wire.len();
    match m {
        Mutation::FlipBit(i, b) if len > 0 => wire[i.index(len)] ^= 1 << b,
        Mutation::SetByte(i, v) if len > 0 => wire[i.index(len)] = *v,
        Mutation::Truncate(i) => wire.truncate(i.index(len + 1)),
        Mutation::Insert(i, bytes) => {
            let at = i.index(len + 1);
            wire.splice(at..at, bytes.iter().copied());
        }
        Mutation::Delete(i, n) if len > 0 => {
            let at = i.index(len);
            wire.drain(at..(at + n).min(len));
        }
        Mutation::Append(bytes) => wire.extend_from_slice(bytes),
        Mutation::SetCount(v) if signed && len > PAYLOAD_LEN_AT => {
            let Ok((_, used)) = bijoux::u64::decode(&wire[PAYLOAD_LEN_AT..]) else {
                return;
            };
            let mut encoded = Vec::new();
            bijoux::u64::encode(*v, &mut encoded);
            wire.splice(PAYLOAD_LEN_AT..PAYLOAD_LEN_AT + used, encoded);
        }
        Mutation::SetCount(v) if !signed && len >= TOPICS_AT => {
            wire[5..7].copy_from_slice(&(*v as u16).to_be_bytes());
        }
        Mutation::CopyTopic(a, b) if !signed && topics > 0 => {
            let (from, to) = (
                TOPICS_AT + 32 * a.index(topics),
                TOPICS_AT + 32 * b.index(topics),
            );
            wire.copy_within(from..from + 32, to);
        }
        Mutation::CopyTopic(a, _) if signed && len >= FIELDS_AT + 32 => {
            let from = a.index(len - 31);
            wire.copy_within(from..from + 32, 5);
        }
        Mutation::SwapTopics(a, b) if !signed && topics > 0 => {
            let (x, y) = (
                TOPICS_AT + 32 * a.index(topics),
                TOPICS_AT + 32 * b.index(topics),
            );
            for j in 0..32 {
                wire.swap(x + j, y + j);
            }
        }
        Mutation::NonCanonicalIssuer(k, sign) if signed && len >= FIELDS_AT => {
            wire[5..FIELDS_AT].copy_from_slice(&y_above_p(*k, *sign));
        }
        _ => {}
    }
}

fn valid_message() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (
            0u8..4,
            prop_oneof![any::<[u8; 32]>(), (0u8..4).prop_map(|b| [b; 32])],
            any::<u64>(),
            any::<u64>(),
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..80),
                proptest::collection::vec(any::<u8>(), 120..260),
            ],
        )
            .prop_map(|(n, topic, nonce, ts, payload)| {
                our_seal(n, topic, nonce, ts, &payload).as_bytes().to_vec()
            }),
        (1u8..=3, distinct_topics()).prop_map(|(tag, topics)| ephemeral_control(tag, &topics)),
    ]
}

/// Why a mutant that theirs accepts was refused by ours.
fn reason(err: &MessageError) -> &'static str {
    match err {
        MessageError::Read(ReadError::TrailingBytes { .. }) => "trailing bytes",
        MessageError::Read(ReadError::Duplicate { .. }) => "duplicate topic",
        MessageError::Signed {
            source: SignedDecodeError::NonCanonicalIssuer { .. },
            ..
        } => "non-canonical issuer",
        _ => "other",
    }
}

#[derive(Debug, Default)]
struct Tally {
    mutants: usize,
    both_accept: usize,
    both_reject: usize,
    /// Accepted by theirs, refused by ours, by our reason.
    theirs_only: BTreeMap<&'static str, usize>,
    /// Accepted by ours, refused by theirs: issuers off the curve.
    ours_only_off_curve: usize,
}

/// Checks one mutant, and counts it.
fn compare(wire: &[u8], tally: &mut Tally) -> Result<(), TestCaseError> {
    tally.mutants += 1;
    match (ours(wire), theirs(wire)) {
        (Ok(msg), their_result) => {
            let again = msg.encode().expect("encode");
            prop_assert_eq!(again.as_ref(), wire, "ours is injective");
            match their_result {
                Ok(their_msg) => {
                    tally.both_accept += 1;
                    prop_assert_eq!(our_content(&msg), their_content(&their_msg));
                    prop_assert_eq!(their_msg.encode(), wire.to_vec());
                    // Same bytes, same verdict: both verifiers are strict.
                    prop_assert_eq!(our_verdict(&msg), their_verdict(&their_msg));
                }
                Err(err) => {
                    // The one documented exception.
                    prop_assert_eq!(err, TDecodeError::InvalidVerifyingKey, "{:02x?}", wire);
                    let EphemeralMessage::Ephemeral(signed) = &msg else {
                        return Err(TestCaseError::fail("a control message only theirs refuse"));
                    };
                    let verdict = signed.verify_strict();
                    prop_assert!(
                        matches!(verdict, Err(VerifyError::InvalidIssuer { .. })),
                        "{:?}",
                        verdict
                    );
                    tally.ours_only_off_curve += 1;
                }
            }
        }
        (Err(err), Ok(their_msg)) => {
            let why = reason(&err);
            *tally.theirs_only.entry(why).or_default() += 1;
            match err {
                // Trailing bytes: only after a signed message (a topic
                // list's tail is refused by theirs too), and theirs keep
                // exactly the prefix that ours accepts.
                MessageError::Read(ReadError::TrailingBytes { offset, .. }) => {
                    let prefix = &wire[..offset];
                    let ours_prefix = ours(prefix).expect("the prefix is a message");
                    prop_assert!(matches!(ours_prefix, EphemeralMessage::Ephemeral(_)));
                    prop_assert_eq!(their_msg.encode(), prefix.to_vec());
                    prop_assert_eq!(our_content(&ours_prefix), their_content(&their_msg));
                }
                MessageError::Read(ReadError::Duplicate { .. }) => {
                    prop_assert_eq!(their_msg.encode(), wire.to_vec());
                    let Content::Control { topics, .. } = their_content(&their_msg) else {
                        return Err(TestCaseError::fail("duplicate in a signed message"));
                    };
                    let mut distinct = topics.clone();
                    distinct.sort_unstable();
                    distinct.dedup();
                    prop_assert!(distinct.len() < topics.len());
                }
                MessageError::Signed {
                    source: SignedDecodeError::NonCanonicalIssuer { .. },
                    ..
                } => {
                    // Theirs accepts the encoding; it never verifies.
                    prop_assert_eq!(their_verdict(&their_msg), Some(false));
                }
                other => {
                    return Err(TestCaseError::fail(format!(
                        "theirs accept, ours refuse for an undocumented reason: {other:?}, \
                         input {wire:02x?}"
                    )))
                }
            }
        }
        (Err(_), Err(_)) => tally.both_reject += 1,
    }
    Ok(())
}

#[test]
fn mutants_ours_accepts_are_accepted_by_theirs_with_the_same_content() {
    let mut runner = TestRunner::new(Config {
        cases: 256,
        source_file: Some(file!()),
        ..Config::default()
    });
    let tally = std::cell::RefCell::new(Tally::default());
    let strategy = (
        valid_message(),
        proptest::collection::vec(proptest::collection::vec(mutation(), 1..4), 24),
    );
    runner
        .run(&strategy, |(wire, mutant_ops)| {
            let mut tally = tally.borrow_mut();
            // The unmutated message: both accept, same content.
            compare(&wire, &mut tally)?;
            for ops in &mutant_ops {
                let mut mutant = wire.clone();
                for m in ops {
                    apply(&mut mutant, m);
                }
                compare(&mutant, &mut tally)?;
            }
            Ok(())
        })
        .unwrap();
    let tally = tally.into_inner();
    let theirs_only: usize = tally.theirs_only.values().sum();
    eprintln!(
        "{} mutants: both accept {}, both reject {}, theirs accept and ours refuse {} {:?}, \
         ours decode and theirs refuse {} (issuer off the curve; our verify refuses it)",
        tally.mutants,
        tally.both_accept,
        tally.both_reject,
        theirs_only,
        tally.theirs_only,
        tally.ours_only_off_curve,
    );
    assert!(theirs_only > 0, "the mutants show no difference: {tally:?}");
}
