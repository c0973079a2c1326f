//! Bad input for the keyhive decoders (`SUK\0` envelope, signed envelope,
//! keyhive messages, root delegation): truncation at every offset, every
//! single-bit flip, random bytes, trailing bytes, lying sizes and lengths,
//! deep nesting, an unknown kind, the wrong signer; and proptest mutations
//! of valid messages. Each bad input is a typed error, nothing panics, and
//! every accepted input re-encodes to exactly its bytes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use bijou_proto::keyhive::MIN_EVENT_LEN;
use bijou_proto::keyhive::{
    Access, ContactCardJson, DocumentKey, Grantee, KeyhiveError, KeyhiveMessage, KeyhivePeer,
    RootDelegation, SignedKeyhive, SukMessage,
};
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::{Identity, PeerId};
use bytes::Bytes;
use proptest::prelude::*;

fn key() -> SigningKey {
    SigningKey::from_bytes(&[0x21; 32])
}

fn peer(n: u8) -> KeyhivePeer {
    KeyhivePeer::new(PeerId::from_bytes([n; 32]))
}

fn suk(message: KeyhiveMessage, card: bool) -> Bytes {
    let signer = key();
    SukMessage {
        contact_card: card.then(|| bijou_proto::keyhive::contact_card(&signer).unwrap()),
        signed: SignedKeyhive::sign(&signer, message).unwrap(),
    }
    .to_bytes()
    .unwrap()
}

/// Valid messages of every kind.
fn samples() -> Vec<Bytes> {
    let me = KeyhivePeer::new(key().peer_id());
    let other = KeyhivePeer {
        key: PeerId::from_bytes([3; 32]),
        suffix: Some("s".into()),
    };
    vec![
        suk(
            KeyhiveMessage::RequestContactCard {
                sender: me.clone(),
                target: peer(2),
            },
            true,
        ),
        suk(
            KeyhiveMessage::SyncRequest {
                sender: me.clone(),
                target: other.clone(),
                found: vec![[1; 32], [2; 32]],
                pending: vec![],
            },
            false,
        ),
        suk(
            KeyhiveMessage::SyncResponse {
                sender: me.clone(),
                target: peer(2),
                requested: vec![[5; 32]],
                found: vec![
                    Bytes::from(vec![0x11; MIN_EVENT_LEN]),
                    Bytes::from(vec![0x22; 300]),
                ],
                responder_total: 300,
                requester_total: 1,
            },
            false,
        ),
        suk(
            KeyhiveMessage::SyncOps {
                sender: me.clone(),
                target: peer(2),
                ops: vec![Bytes::from(vec![7; 140])],
                responder_total: 0,
                requester_total: 70_000,
            },
            false,
        ),
        suk(
            KeyhiveMessage::MissingContactCard {
                sender: me.clone(),
                target: other,
            },
            true,
        ),
        suk(
            KeyhiveMessage::SyncCheck {
                sender: me.clone(),
                target: peer(2),
                sender_total: u64::MAX,
                sender_syncpoint: 24,
                sender_digest: [9; 32],
            },
            false,
        ),
        suk(
            KeyhiveMessage::SyncConfirmation {
                sender: me,
                target: peer(2),
                confirmer_total: 23,
            },
            false,
        ),
    ]
}

/// Decodes; if accepted, the re-encoding must be the input.
fn check(bytes: &Bytes) -> Result<SukMessage, KeyhiveError> {
    let result = SukMessage::from_bytes(bytes);
    if let Ok(message) = &result {
        assert_eq!(
            &message.to_bytes().unwrap(),
            bytes,
            "accepted but re-encodes differently"
        );
    }
    result
}

#[test]
fn every_sample_round_trips_and_verifies() {
    for bytes in samples() {
        let message = check(&bytes).unwrap();
        message.verify(key().peer_id()).unwrap();
    }
}

#[test]
fn truncation_at_every_offset_is_a_typed_error() {
    for bytes in samples() {
        for len in 0..bytes.len() {
            let err = check(&bytes.slice(..len)).unwrap_err();
            if len >= 8 {
                assert!(
                    matches!(err, KeyhiveError::TotalSize { .. }),
                    "cut at {len}: {err}"
                );
            }
        }
    }
}

#[test]
fn truncation_with_a_matching_total_size_is_a_typed_error() {
    // The size header rewritten to match the cut: the CBOR or the signed
    // envelope must notice.
    for bytes in samples() {
        for len in 8..bytes.len() {
            let mut cut = bytes.slice(..len).to_vec();
            cut[4..8].copy_from_slice(&(len as u32).to_be_bytes());
            assert!(check(&Bytes::from(cut)).is_err(), "cut at {len} accepted");
        }
    }
}

#[test]
fn every_single_bit_flip_is_refused_or_still_exact() {
    let signer = key().peer_id();
    for bytes in samples() {
        let card = SukMessage::from_bytes(&bytes)
            .unwrap()
            .contact_card
            .map(|c| {
                let start = bytes
                    .windows(c.as_str().len())
                    .position(|w| w == c.as_str().as_bytes())
                    .unwrap();
                start..start + c.as_str().len()
            });
        for i in 0..bytes.len() * 8 {
            let mut flipped = bytes.to_vec();
            flipped[i / 8] ^= 1 << (i % 8);
            let flipped = Bytes::from(flipped);
            // Accepted only if exact; and then the signature (or the
            // signer) must fail, unless the flip is inside the contact
            // card: keyhive does not sign the card into the envelope (it
            // carries its own signature, for the receiver's keyhive).
            if let Ok(message) = check(&flipped) {
                let in_card = card.as_ref().is_some_and(|r| r.contains(&(i / 8)));
                assert!(
                    in_card || message.verify(signer).is_err(),
                    "bit {i} flipped and still verifies"
                );
            }
        }
    }
}

#[test]
fn trailing_bytes_are_refused_even_with_a_matching_size() {
    for bytes in samples() {
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(matches!(
            check(&Bytes::from(longer.clone())).unwrap_err(),
            KeyhiveError::TotalSize { .. }
        ));
        let len = longer.len() as u32;
        longer[4..8].copy_from_slice(&len.to_be_bytes());
        let err = check(&Bytes::from(longer)).unwrap_err();
        assert!(
            matches!(
                err,
                KeyhiveError::Read(bijou_codec::ReadError::TrailingBytes { .. })
            ),
            "{err}"
        );
    }
}

/// An envelope whose CBOR is `cbor`, with a correct size.
fn with_cbor(cbor: &[u8]) -> Bytes {
    let mut out = b"SUK\0".to_vec();
    out.extend_from_slice(&((8 + cbor.len()) as u32).to_be_bytes());
    out.extend_from_slice(cbor);
    Bytes::from(out)
}

fn cbor_text(s: &str) -> Vec<u8> {
    assert!(s.len() < 24);
    let mut out = vec![0x60 | s.len() as u8];
    out.extend_from_slice(s.as_bytes());
    out
}

#[test]
fn lying_lengths_are_refused_before_allocation() {
    // A byte string of 2^64 - 1 bytes.
    let mut cbor = vec![0xA2];
    cbor.extend(cbor_text("contactCard"));
    cbor.push(0x60);
    cbor.extend(cbor_text("signed"));
    cbor.extend([0x5B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
    let err = check(&with_cbor(&cbor)).unwrap_err();
    assert!(
        matches!(
            err,
            KeyhiveError::CborTruncated {
                field: "signed",
                needed: u64::MAX,
                ..
            }
        ),
        "{err}"
    );
    // A text of 2^64 - 1 bytes.
    let mut cbor = vec![0xA2];
    cbor.extend(cbor_text("contactCard"));
    cbor.extend([0x7B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
    let err = check(&with_cbor(&cbor)).unwrap_err();
    assert!(
        matches!(
            err,
            KeyhiveError::TooLong {
                field: "contactCard",
                ..
            }
        ),
        "{err}"
    );
    // TotalSize of 4 GiB - 1 on a short message.
    let mut bytes = samples()[0].to_vec();
    bytes[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        check(&Bytes::from(bytes)).unwrap_err(),
        KeyhiveError::TotalSize {
            declared: u32::MAX,
            ..
        }
    ));
    // A signed payload length of 2^64 - 1 inside a well-formed envelope.
    let message = SukMessage::from_bytes(&samples()[1]).unwrap();
    let mut bytes = samples()[1].to_vec();
    let at = bytes.len() - message.signed.wire_len();
    bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    let err = check(&Bytes::from(bytes)).unwrap_err();
    assert!(
        matches!(
            err,
            KeyhiveError::Read(bijou_codec::ReadError::Truncated { .. })
        ),
        "{err}"
    );
}

#[test]
fn an_array_count_of_2_pow_64_in_a_keyhive_message_is_refused_before_allocation() {
    // { "SyncRequest": { "sender_id": P, "target_id": P, "found": [2^64-1 items] } }
    let message = KeyhiveMessage::SyncRequest {
        sender: KeyhivePeer::new(key().peer_id()),
        target: peer(2),
        found: vec![],
        pending: vec![],
    };
    let mut cbor = message.to_cbor();
    // `found` is the first empty array (0x80) after the key "found".
    let at = cbor.windows(6).position(|w| w == b"found\x80").unwrap() + 5;
    cbor.splice(
        at..=at,
        [0x9B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
    );
    let err = KeyhiveMessage::from_cbor(&Bytes::from(cbor), 0).unwrap_err();
    assert!(
        matches!(err, KeyhiveError::CborTruncated { field: "found", .. }),
        "{err}"
    );
}

#[test]
fn cbor_nested_10000_deep_is_refused_at_once() {
    let mut cbor = vec![0xA2];
    cbor.extend(cbor_text("contactCard"));
    cbor.extend(std::iter::repeat_n(0x81, 10_000));
    cbor.push(0x00);
    let err = check(&with_cbor(&cbor)).unwrap_err();
    assert!(
        matches!(
            err,
            KeyhiveError::CborType {
                field: "contactCard",
                offset: 21,
                ..
            }
        ),
        "{err}"
    );
    // The same nesting as the keyhive message.
    let mut cbor = vec![0xA1];
    cbor.extend(std::iter::repeat_n(0xA1, 10_000));
    let err = KeyhiveMessage::from_cbor(&Bytes::from(cbor), 0).unwrap_err();
    assert!(matches!(err, KeyhiveError::CborType { .. }), "{err}");
}

#[test]
fn an_unknown_kind_and_non_shortest_forms_are_refused() {
    let message = KeyhiveMessage::SyncConfirmation {
        sender: peer(1),
        target: peer(2),
        confirmer_total: 5,
    };
    let cbor = message.to_cbor();
    let mut renamed = cbor.clone();
    let at = renamed
        .windows(16)
        .position(|w| w == b"SyncConfirmation")
        .unwrap();
    renamed[at + 15] = b'N';
    let err = KeyhiveMessage::from_cbor(&Bytes::from(renamed), 0).unwrap_err();
    assert!(
        matches!(err, KeyhiveError::UnknownKind { offset: 1, len: 16 }),
        "{err}"
    );
    // confirmer_total 5 written as a one-byte argument (18 05): valid CBOR,
    // not keyhive's bytes.
    let mut long = cbor.clone();
    let last = long.len() - 1;
    assert_eq!(long[last], 0x05);
    long.splice(last..=last, [0x18, 0x05]);
    let err = KeyhiveMessage::from_cbor(&Bytes::from(long), 0).unwrap_err();
    assert!(matches!(err, KeyhiveError::NonCanonical { .. }), "{err}");
    // An indefinite-length map.
    let mut indefinite = cbor.clone();
    indefinite[0] = 0xBF;
    indefinite.push(0xFF);
    let err = KeyhiveMessage::from_cbor(&Bytes::from(indefinite), 0).unwrap_err();
    assert!(
        matches!(err, KeyhiveError::CborType { offset: 0, .. }),
        "{err}"
    );
}

#[test]
fn a_message_signed_by_another_key_than_the_handshake_is_refused() {
    let bytes = samples()[2].clone();
    let err = check(&bytes)
        .unwrap()
        .verify(PeerId::from_bytes([0x77; 32]))
        .unwrap_err();
    assert!(matches!(err, KeyhiveError::WrongSigner { .. }), "{err}");
    // Signed by another key that claims our sender id.
    let other = SigningKey::from_bytes(&[0x99; 32]);
    let forged = SukMessage {
        contact_card: None,
        signed: SignedKeyhive::sign(
            &other,
            KeyhiveMessage::SyncConfirmation {
                sender: KeyhivePeer::new(key().peer_id()),
                target: peer(2),
                confirmer_total: 0,
            },
        )
        .unwrap(),
    };
    let err = forged.clone().verify(other.peer_id()).unwrap_err();
    assert!(matches!(err, KeyhiveError::SenderMismatch { .. }), "{err}");
    // And with the issuer field rewritten to the expected key, the
    // signature fails.
    let mut bytes = forged.to_bytes().unwrap().to_vec();
    let at = bytes.len() - 64 - 32;
    bytes[at..at + 32].copy_from_slice(key().peer_id().as_bytes());
    let err = check(&Bytes::from(bytes))
        .unwrap()
        .verify(key().peer_id())
        .unwrap_err();
    assert!(matches!(err, KeyhiveError::Signature { .. }), "{err}");
}

#[test]
fn a_root_delegation_signed_by_the_wrong_key_or_damaged_is_refused() {
    let doc = DocumentKey::from_seed([5; 32]);
    let good = doc.root_delegation(Grantee::Public, Access::Edit).unwrap();
    assert_eq!(RootDelegation::decode(good.event.clone()).unwrap(), good);
    // Issued (and correctly signed) by another key for this document.
    let other = DocumentKey::from_seed([6; 32]);
    let theirs = other
        .root_delegation(Grantee::Public, Access::Edit)
        .unwrap();
    let mut bytes = theirs.event.to_vec();
    let doc_at = 4 + 4 + 1 + 8 + 32 + 8 + 8 + 8;
    bytes[doc_at..doc_at + 32].copy_from_slice(doc.id().as_bytes());
    let err = RootDelegation::decode(Bytes::from(bytes)).unwrap_err();
    assert!(matches!(err, KeyhiveError::WrongSigner { .. }), "{err}");
    // The issuer rewritten as well: the signature fails.
    let mut bytes = theirs.event.to_vec();
    bytes[doc_at..doc_at + 32].copy_from_slice(doc.id().as_bytes());
    let issuer_at = bytes.len() - 64 - 32;
    bytes[issuer_at..issuer_at + 32].copy_from_slice(doc.id().as_bytes());
    let err = RootDelegation::decode(Bytes::from(bytes)).unwrap_err();
    assert!(matches!(err, KeyhiveError::Signature { .. }), "{err}");
    for len in 0..good.event.len() {
        assert!(RootDelegation::decode(good.event.slice(..len)).is_err());
    }
    for i in 0..good.event.len() * 8 {
        let mut flipped = good.event.to_vec();
        flipped[i / 8] ^= 1 << (i % 8);
        assert!(
            RootDelegation::decode(Bytes::from(flipped)).is_err(),
            "bit {i}"
        );
    }
}

#[test]
fn the_contact_card_is_kept_as_sent() {
    let bytes = samples()[0].clone();
    let message = check(&bytes).unwrap();
    let card: &ContactCardJson = message.contact_card.as_ref().unwrap();
    assert!(card
        .as_str()
        .contains(r#""issuer":[ "#.trim_end_matches(' ')));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = check(&Bytes::from(bytes.clone()));
        let mut framed = b"SUK\0".to_vec();
        framed.extend_from_slice(&((bytes.len() + 8) as u32).to_be_bytes());
        framed.extend_from_slice(&bytes);
        let _ = check(&Bytes::from(framed));
        let _ = KeyhiveMessage::from_cbor(&Bytes::from(bytes.clone()), 0);
        let _ = RootDelegation::decode(Bytes::from(bytes));
    }

    #[test]
    fn mutated_valid_messages_are_refused_or_exact(
        which in 0usize..7,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
        fix_size in any::<bool>(),
    ) {
        let mut bytes = samples()[which].to_vec();
        for (at, value, op) in edits {
            if bytes.is_empty() { break; }
            let i = at.index(bytes.len());
            match op {
                0 => bytes[i] = value,
                1 => bytes.insert(i, value),
                _ => { bytes.remove(i); }
            }
        }
        if fix_size && bytes.len() >= 8 {
            let len = bytes.len() as u32;
            bytes[4..8].copy_from_slice(&len.to_be_bytes());
        }
        let _ = check(&Bytes::from(bytes));
    }
}
