//! Bad input gets a typed error (or, where it is still well-formed, a
//! verification failure), never a panic, never a second encoding.
//!
//! Properties over every message type: truncation at every offset, every
//! single-bit flip, structure-aware mutations of valid messages (with a
//! deterministic run that measures how deep the mutants get), trailing
//! bytes, tampered counts and `TotalSize`, schema and tag swaps. Then one
//! named test per strictness check (sorted arrays, `TotalSize` exactness,
//! retired tags, scope binding, trailing bytes, count overflow, huge blob
//! lengths): each fails if its check is removed from the decoder or
//! encoder.

mod messages_support;

use bijou_codec::{ReadError, Wire, WriteError};
use bijou_framing::message::{
    BlobMessage, CommitId, DataRequestRejected, Fingerprint, FingerprintSeed, HandshakeMessage,
    HeadsUpdate, LooseCommit, Message, MessageError, RemoteHeads, SedimentreeId, SignedItem,
    SyncDiff, SyncMessage, SyncResult, VerifyItemError,
};
use bijou_signing::{Blob, DecodeError, SealError, Signed, VerifyError};
use bytes::Bytes;
use messages_support::*;
use proptest::prelude::*;

fn decode(bytes: &[u8]) -> Result<Message, MessageError> {
    Message::decode(Bytes::copy_from_slice(bytes))
}

/// Accepted input must be the one encoding of what it decodes to.
fn assert_injective(bytes: &[u8]) {
    if let Ok(msg) = decode(bytes) {
        assert_eq!(
            &msg.encode().unwrap()[..],
            bytes,
            "accepted a second encoding"
        );
    }
}

fn any_message() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => sync_message().prop_map(|m| m.encode().unwrap().to_vec()),
        1 => handshake_message().prop_map(|m| m.encode().unwrap().to_vec()),
    ]
}

/// Whether a decoded message still verifies (all its signed items, scope
/// included). Messages without signed items "verify" trivially.
fn verifies(msg: &Message) -> bool {
    match msg {
        Message::Sync(sync) => sync.verify().is_ok(),
        Message::Handshake(HandshakeMessage::Challenge(s)) => s.verify_strict().is_ok(),
        Message::Handshake(HandshakeMessage::Response(s)) => s.verify_strict().is_ok(),
        Message::Handshake(_) => true,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn truncation_at_every_offset_is_an_error(wire in any_message()) {
        for len in 0..wire.len() {
            prop_assert!(decode(&wire[..len]).is_err(), "prefix of {} bytes accepted", len);
            // Also with TotalSize claiming the shorter length: the payload
            // itself must be found short.
            if len >= 9 && wire.starts_with(b"SUM\0") {
                let mut short = wire[..len].to_vec();
                fix_total_size(&mut short);
                prop_assert!(decode(&short).is_err(), "re-sized prefix of {} bytes accepted", len);
            }
        }
    }

    #[test]
    fn every_single_bit_flip_is_rejected_or_fails_verification(wire in any_message()) {
        for bit in 0..wire.len() * 8 {
            let mut flipped = wire.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let Ok(msg) = decode(&flipped) else { continue };
            // Accepted: it must be the only encoding of what it decoded to...
            prop_assert_eq!(&msg.encode().unwrap()[..], &flipped[..]);
            // ...and a flip in signed bytes, a blob or the outer tree id of a
            // commit/fragment message must not verify. Only unsigned
            // metadata (sender heads, request ids, ...) may change freely.
            if let Message::Sync(SyncMessage::LooseCommit(_) | SyncMessage::Fragment(_)) = &msg {
                let heads = u32::from_be_bytes(wire[49..53].try_into().unwrap()) as usize;
                let in_heads = (41..signed_item_offset(heads)).contains(&(bit / 8));
                prop_assert_eq!(verifies(&msg), in_heads, "flip at bit {}", bit);
            }
            if let Message::Handshake(HandshakeMessage::Challenge(_) | HandshakeMessage::Response(_)) = &msg {
                prop_assert!(!verifies(&msg), "flip at bit {} still verifies", bit);
            }
        }
    }

    #[test]
    fn random_payloads_behind_a_valid_header_never_panic(
        tag in 0u8..=9,
        payload in proptest::collection::vec(prop_oneof![any::<u8>(), 0u8..3], 0..300),
    ) {
        let mut bytes = b"SUM\0\0\0\0\0".to_vec();
        bytes.push(tag);
        bytes.extend_from_slice(&payload);
        fix_total_size(&mut bytes);
        assert_injective(&bytes);
        let mut hs = b"SUH\0".to_vec();
        hs.push(tag % 4);
        hs.extend_from_slice(&payload);
        assert_injective(&hs);
    }

    #[test]
    fn trailing_bytes_are_rejected(wire in any_message(), extra in proptest::collection::vec(any::<u8>(), 1..4)) {
        let mut longer = wire.clone();
        longer.extend_from_slice(&extra);
        prop_assert!(decode(&longer).is_err());
        if wire.starts_with(b"SUM\0") {
            fix_total_size(&mut longer);
            let err = decode(&longer).unwrap_err();
            prop_assert!(matches!(err, MessageError::Read(ReadError::TrailingBytes { .. })), "{:?}", err);
        }
    }

    #[test]
    fn every_wrong_total_size_is_rejected(msg in sync_message(), delta in prop_oneof![Just(1i64), Just(-1), any::<i32>().prop_map(i64::from)]) {
        let mut wire = msg.encode().unwrap().to_vec();
        let declared = u32::try_from(wire.len() as i64 + delta).unwrap_or(u32::MAX);
        prop_assume!(declared as usize != wire.len());
        wire[4..8].copy_from_slice(&declared.to_be_bytes());
        prop_assert_eq!(
            decode(&wire).unwrap_err(),
            MessageError::TotalSize { declared, actual: wire.len() }
        );
    }

    #[test]
    fn tag_swaps_are_rejected(msg in sync_message(), tag in any::<u8>()) {
        prop_assume!(tag != msg.tag());
        let mut wire = msg.encode().unwrap().to_vec();
        wire[8] = tag;
        prop_assert!(decode(&wire).is_err(), "tag {:#04x} accepted for {:?}", tag, msg.tag());
    }

    #[test]
    fn schema_swaps_are_rejected(wire in any_message(), schema in prop_oneof![
        Just(*b"STC\0"), Just(*b"STF\0"), Just(*b"SUH\0"), Just(*b"SUM\0"),
        Just(*b"SUM\x01"), Just(*b"SUH\x01"), any::<[u8; 4]>(),
    ]) {
        prop_assume!(wire[..4] != schema);
        let mut swapped = wire.clone();
        swapped[..4].copy_from_slice(&schema);
        prop_assert!(decode(&swapped).is_err());
    }

    #[test]
    fn handshake_kind_swaps_are_rejected(msg in handshake_message(), kind in any::<u8>()) {
        let mut wire = msg.encode().unwrap().to_vec();
        prop_assume!(wire[4] != kind);
        wire[4] = kind;
        prop_assert!(decode(&wire).is_err());
    }
}

// ---- tampered counts ----------------------------------------------------

#[test]
fn tampered_heads_count_is_rejected_either_way() {
    let wire = fixed_commit_message(1, 2, 16).encode().unwrap().to_vec();
    for count in [0u32, 1, 3, 4, u32::MAX] {
        let mut bad = wire.clone();
        bad[49..53].copy_from_slice(&count.to_be_bytes());
        assert!(decode(&bad).is_err(), "heads count {count} accepted");
    }
}

#[test]
fn tampered_remove_subscriptions_count_is_rejected() {
    let ids = (0..3).map(|i| SedimentreeId::new([i; 32]));
    let wire = SyncMessage::remove_subscriptions(ids)
        .encode()
        .unwrap()
        .to_vec();
    for count in [0u16, 2, 4, u16::MAX] {
        let mut bad = wire.clone();
        bad[9..11].copy_from_slice(&count.to_be_bytes());
        let err = decode(&bad).unwrap_err();
        assert!(
            matches!(
                err,
                MessageError::Read(ReadError::Truncated { .. } | ReadError::TrailingBytes { .. })
            ),
            "{err:?}"
        );
    }
}

#[test]
fn tampered_sync_diff_counts_are_rejected() {
    let tree = SedimentreeId::new([0x11; 32]);
    let SyncMessage::LooseCommit(m) = fixed_commit_message(0, 0, 4) else {
        unreachable!()
    };
    let diff = SyncDiff::new(
        vec![m.item.clone()],
        vec![],
        [1, 2].map(Fingerprint::from_u64),
        [],
    );
    let msg = SyncMessage::BatchSyncResponse(bijou_framing::message::BatchSyncResponse {
        requestor: peer_of(1),
        nonce: 7,
        id: tree,
        result: SyncResult::Ok(diff),
        responder_heads: RemoteHeads::default(),
    });
    let wire = msg.encode().unwrap().to_vec();
    let counts_at = 9 + 32 + 8 + 32 + 1;
    for field in 0..4 {
        for delta in [1i32, -1] {
            let at = counts_at + 2 * field;
            let old = u16::from_be_bytes([wire[at], wire[at + 1]]);
            let Some(new) = u16::try_from(i32::from(old) + delta).ok() else {
                continue;
            };
            let mut bad = wire.clone();
            bad[at..at + 2].copy_from_slice(&new.to_be_bytes());
            assert!(decode(&bad).is_err(), "count {field} = {new} accepted");
        }
    }
}

// ---- one test per strictness check --------------------------------------

#[test]
fn strict_total_size_must_equal_the_message_length() {
    let wire = fixed_commit_message(0, 0, 8).encode().unwrap().to_vec();
    for declared in [wire.len() - 1, wire.len() + 1] {
        let mut bad = wire.clone();
        bad[4..8].copy_from_slice(&(declared as u32).to_be_bytes());
        assert_eq!(
            decode(&bad),
            Err(MessageError::TotalSize {
                declared: declared as u32,
                actual: wire.len()
            })
        );
    }
}

#[test]
fn strict_retired_tags_02_and_03_are_rejected() {
    // A payload that would parse as a DataRequestRejected under tag 07.
    for tag in [0x02, 0x03] {
        let mut wire = b"SUM\0\0\0\0\0".to_vec();
        wire.push(tag);
        wire.extend_from_slice(&[5; 32]);
        fix_total_size(&mut wire);
        assert_eq!(
            decode(&wire),
            Err(MessageError::RetiredTag { tag, offset: 8 })
        );
    }
    for tag in 0x09..=0xFF {
        let mut wire = b"SUM\0\0\0\0\0".to_vec();
        wire.push(tag);
        wire.extend_from_slice(&[5; 32]);
        fix_total_size(&mut wire);
        assert!(matches!(
            decode(&wire),
            Err(MessageError::Read(ReadError::UnknownValue {
                field: "tag",
                offset: 8,
                ..
            }))
        ));
    }
}

#[test]
fn strict_trailing_bytes_inside_total_size_are_rejected() {
    for msg in [
        fixed_commit_message(1, 1, 3),
        SyncMessage::DataRequestRejected(DataRequestRejected {
            id: SedimentreeId::new([1; 32]),
        }),
        SyncMessage::HeadsUpdate(HeadsUpdate {
            id: SedimentreeId::new([1; 32]),
            heads: RemoteHeads::new(1, []),
        }),
    ] {
        let mut wire = msg.encode().unwrap().to_vec();
        wire.push(0);
        fix_total_size(&mut wire);
        assert!(matches!(
            decode(&wire),
            Err(MessageError::Read(ReadError::TrailingBytes {
                count: 1,
                ..
            }))
        ));
    }
    let mut rejection = HandshakeMessage::Rejection(bijou_framing::message::Rejection {
        reason: bijou_framing::message::RejectionReason::ClockDrift,
        timestamp: 5,
    })
    .encode()
    .unwrap()
    .to_vec();
    rejection.push(0);
    assert!(matches!(
        decode(&rejection),
        Err(MessageError::Read(ReadError::TrailingBytes {
            offset: 14,
            count: 1
        }))
    ));
}

#[test]
fn strict_unsorted_or_duplicate_heads_are_rejected() {
    let wire = fixed_commit_message(0, 2, 0).encode().unwrap().to_vec();
    let (a, b) = (53, 53 + 32);
    let mut swapped = wire.clone();
    swapped[a..b].copy_from_slice(&wire[b..b + 32]);
    swapped[b..b + 32].copy_from_slice(&wire[a..b]);
    let mut duplicated = wire.clone();
    duplicated[b..b + 32].copy_from_slice(&wire[a..b]);
    for bad in [swapped, duplicated] {
        assert!(matches!(
            decode(&bad),
            Err(MessageError::Read(ReadError::NotAscending {
                field: "heads",
                index: 1,
                ..
            }))
        ));
    }
}

#[test]
fn strict_unsorted_parents_are_rejected_even_when_validly_signed() {
    // Build the signed bytes by hand with parents out of order and sign
    // them: a decoder that skipped the order check would accept them.
    use bijou_signing::ed25519_dalek::Signer as _;
    let k = key(0);
    let mut signed = b"STC\0".to_vec();
    signed.extend_from_slice(k.verifying_key().as_bytes());
    signed.extend_from_slice(&[0x11; 32]); // tree
    signed.extend_from_slice(&[0x22; 32]); // head
    signed.extend_from_slice(blake3::hash(b"").as_bytes());
    signed.push(2);
    signed.push(0); // blob size 0
    signed.extend_from_slice(&[0x39; 32]);
    signed.extend_from_slice(&[0x31; 32]);
    let sig = k.sign(&signed);
    signed.extend_from_slice(&sig.to_bytes());
    // The second parent starts after schema, issuer, tree, head, digest,
    // count, blob size and the first parent.
    let second_parent = 4 + 32 + 96 + 1 + 1 + 32;
    let err = Signed::<LooseCommit>::decode(Bytes::from(signed.clone())).unwrap_err();
    assert_eq!(
        err,
        DecodeError::Read(ReadError::NotAscending {
            field: "parents",
            offset: second_parent,
            index: 1,
        })
    );

    let mut wire = b"SUM\0\0\0\0\0\0".to_vec();
    wire.extend_from_slice(&[0x11; 32]);
    wire.extend_from_slice(&[0; 12]); // heads: counter 0, none
    wire.extend_from_slice(&signed);
    wire.push(0); // blob len 0
    fix_total_size(&mut wire);
    // Inside a message, the offset in the source is absolute in the frame:
    // the signed item starts at 53.
    assert_eq!(
        decode(&wire),
        Err(MessageError::Signed {
            offset: 53,
            source: DecodeError::Read(ReadError::NotAscending {
                field: "parents",
                offset: 53 + second_parent,
                index: 1,
            })
        })
    );
}

#[test]
fn strict_unsorted_fingerprints_and_ids_are_rejected() {
    let req = SyncMessage::BatchSyncRequest(bijou_framing::message::BatchSyncRequest::new(
        SedimentreeId::new([1; 32]),
        peer_of(0),
        1,
        true,
        FingerprintSeed::new(1, 2),
        [1, 2].map(Fingerprint::from_u64),
        [3, 4].map(Fingerprint::from_u64),
    ));
    let wire = req.encode().unwrap().to_vec();
    let fps_at = 9 + 32 + 32 + 8 + 1 + 16 + 4;
    for (field, at) in [
        ("commit_fingerprints", fps_at),
        ("fragment_fingerprints", fps_at + 16),
    ] {
        let mut bad = wire.clone();
        bad[at..at + 8].copy_from_slice(&wire[at + 8..at + 16]); // duplicate
        assert!(matches!(
            decode(&bad),
            Err(MessageError::Read(ReadError::NotAscending { field: f, .. })) if f == field
        ));
    }

    let unsub = SyncMessage::remove_subscriptions([1, 2].map(|b| SedimentreeId::new([b; 32])));
    let mut bad = unsub.encode().unwrap().to_vec();
    bad[11..43].copy_from_slice(&[3; 32]); // 3 > 2
    assert!(matches!(
        decode(&bad),
        Err(MessageError::Read(ReadError::NotAscending {
            field: "ids",
            index: 1,
            ..
        }))
    ));

    let diff = SyncDiff::new(vec![], vec![], [1, 2].map(Fingerprint::from_u64), []);
    let resp = SyncMessage::BatchSyncResponse(bijou_framing::message::BatchSyncResponse {
        requestor: peer_of(1),
        nonce: 0,
        id: SedimentreeId::new([1; 32]),
        result: SyncResult::Ok(diff),
        responder_heads: RemoteHeads::default(),
    });
    let mut bad = resp.encode().unwrap().to_vec();
    let at = 9 + 32 + 8 + 32 + 1 + 8;
    bad[at..at + 8].copy_from_slice(&9u64.to_be_bytes()); // 9, 2: unsorted
    assert!(matches!(
        decode(&bad),
        Err(MessageError::Read(ReadError::NotAscending {
            field: "requested_commits",
            ..
        }))
    ));
}

#[test]
fn strict_scope_a_commit_signed_for_another_tree_is_rejected_when_verified() {
    let SyncMessage::LooseCommit(m) = fixed_commit_message(1, 1, 32) else {
        unreachable!()
    };
    let other = SedimentreeId::new([0x99; 32]);
    let replayed = SyncMessage::LooseCommit(BlobMessage {
        id: other,
        ..m.clone()
    });
    // It decodes (the outer id is not signed)...
    let wire = replayed.encode().unwrap().to_vec();
    let Ok(Message::Sync(SyncMessage::LooseCommit(got))) = decode(&wire) else {
        panic!()
    };
    // ...but does not verify: the signature is good, the scope is not.
    assert_eq!(
        got.verify().unwrap_err(),
        VerifyItemError::ScopeMismatch {
            outer: other,
            signed: m.id
        }
    );
    assert!(m.verify().is_ok());
    assert!(matches!(
        replayed.verify(),
        Err(VerifyItemError::ScopeMismatch { .. })
    ));
    // Same for items inside a sync diff: a response for `other` carrying a
    // commit signed for `m.id`.
    let diff = SyncDiff::new(vec![m.item.clone()], vec![], [], []);
    let resp = SyncMessage::BatchSyncResponse(bijou_framing::message::BatchSyncResponse {
        requestor: peer_of(1),
        nonce: 0,
        id: other,
        result: SyncResult::Ok(diff.clone()),
        responder_heads: RemoteHeads::default(),
    });
    let Ok(Message::Sync(got)) = decode(&resp.encode().unwrap()) else {
        panic!()
    };
    assert!(matches!(
        got.verify(),
        Err(VerifyItemError::ScopeMismatch { .. })
    ));
    let honest = SyncMessage::BatchSyncResponse(bijou_framing::message::BatchSyncResponse {
        requestor: peer_of(1),
        nonce: 0,
        id: m.id,
        result: SyncResult::Ok(diff),
        responder_heads: RemoteHeads::default(),
    });
    assert_eq!(honest.verify().unwrap().len(), 1);
}

#[test]
fn strict_blob_must_match_the_signed_meta() {
    let SyncMessage::LooseCommit(m) = fixed_commit_message(0, 0, 32) else {
        unreachable!()
    };
    let mut wire = SyncMessage::LooseCommit(m).encode().unwrap().to_vec();
    let last = wire.len() - 1;
    wire[last] ^= 1;
    let Ok(Message::Sync(SyncMessage::LooseCommit(got))) = decode(&wire) else {
        panic!()
    };
    assert!(matches!(got.verify(), Err(VerifyItemError::Blob(_))));
}

#[test]
fn strict_bad_signature_is_rejected_when_verified() {
    let SyncMessage::LooseCommit(m) = fixed_commit_message(0, 0, 1) else {
        unreachable!()
    };
    let mut wire = SyncMessage::LooseCommit(m).encode().unwrap().to_vec();
    let sig_end = wire.len() - 2; // before BlobLen(1) + blob(1)
    wire[sig_end - 1] ^= 0x01;
    let Ok(Message::Sync(SyncMessage::LooseCommit(got))) = decode(&wire) else {
        panic!()
    };
    assert!(matches!(
        got.verify(),
        Err(VerifyItemError::Signature(
            VerifyError::BadSignature { .. } | VerifyError::NonCanonicalS
        ))
    ));
}

#[test]
fn strict_blob_length_u64_max_after_a_valid_commit_is_a_typed_error() {
    let wire = fixed_commit_message(0, 0, 0).encode().unwrap().to_vec();
    let mut bad = wire[..wire.len() - 1].to_vec(); // drop BlobLen 0
    bad.extend_from_slice(&[0xFF, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0x07]); // u64::MAX
    fix_total_size(&mut bad);
    assert!(matches!(
        decode(&bad),
        Err(MessageError::Read(ReadError::Truncated {
            field: "blob",
            need: usize::MAX,
            have: 0,
            ..
        }))
    ));
    // And a bijou64 that overflows.
    let mut bad = wire[..wire.len() - 1].to_vec();
    bad.extend_from_slice(&[0xFF; 9]);
    fix_total_size(&mut bad);
    assert!(matches!(
        decode(&bad),
        Err(MessageError::Read(ReadError::Bijou64Overflow {
            field: "blob_len",
            ..
        }))
    ));
}

#[test]
fn strict_encoder_never_truncates_counts() {
    let ids = (0..=u16::MAX as u32).map(|i| {
        let mut id = [0u8; 32];
        id[..4].copy_from_slice(&i.to_be_bytes());
        SedimentreeId::new(id)
    });
    let too_many = SyncMessage::remove_subscriptions(ids);
    assert_eq!(
        too_many.encode(),
        Err(WriteError::CountTooLarge {
            field: "ids",
            len: 65_536,
            max: 65_535
        })
    );
    let mut out = vec![1, 2, 3];
    assert!(too_many.encode_into(&mut out).is_err());
    assert_eq!(out, [1, 2, 3], "nothing written on error");

    let fps = (0..=u16::MAX as u64).map(Fingerprint::from_u64);
    let diff = SyncDiff::new(vec![], vec![], fps, []);
    let resp = SyncMessage::BatchSyncResponse(bijou_framing::message::BatchSyncResponse {
        requestor: peer_of(1),
        nonce: 0,
        id: SedimentreeId::new([1; 32]),
        result: SyncResult::Ok(diff),
        responder_heads: RemoteHeads::default(),
    });
    assert!(matches!(
        resp.encode(),
        Err(WriteError::CountTooLarge {
            field: "requested_commits",
            ..
        })
    ));

    let parents = (0..256u32).map(|i| {
        let mut id = [0u8; 32];
        id[..4].copy_from_slice(&i.to_be_bytes());
        CommitId::new(id)
    });
    let commit = LooseCommit::new(
        SedimentreeId::new([1; 32]),
        CommitId::new([2; 32]),
        parents,
        Blob::default().meta(),
    );
    assert!(matches!(
        Signed::seal(&key(0), &commit),
        Err(SealError::Encode(WriteError::CountTooLarge {
            field: "parents",
            len: 256,
            max: 255
        }))
    ));
}

#[test]
fn strict_unknown_enum_bytes_are_rejected() {
    let req = SyncMessage::BatchSyncRequest(bijou_framing::message::BatchSyncRequest::new(
        SedimentreeId::new([1; 32]),
        peer_of(0),
        1,
        false,
        FingerprintSeed::new(1, 2),
        [],
        [],
    ));
    let mut bad = req.encode().unwrap().to_vec();
    bad[9 + 32 + 32 + 8] = 2; // subscribe must be 00/01
    assert!(matches!(
        decode(&bad),
        Err(MessageError::Read(ReadError::UnknownValue {
            field: "subscribe",
            value: 2,
            ..
        }))
    ));

    let resp = SyncMessage::BatchSyncResponse(bijou_framing::message::BatchSyncResponse {
        requestor: peer_of(1),
        nonce: 0,
        id: SedimentreeId::new([1; 32]),
        result: SyncResult::NotFound,
        responder_heads: RemoteHeads::default(),
    });
    let mut bad = resp.encode().unwrap().to_vec();
    bad[9 + 32 + 8 + 32] = 3; // result 00/01/02
    assert!(matches!(
        decode(&bad),
        Err(MessageError::Read(ReadError::UnknownValue {
            field: "result",
            value: 3,
            ..
        }))
    ));

    let mut rejection = HandshakeMessage::Rejection(bijou_framing::message::Rejection {
        reason: bijou_framing::message::RejectionReason::InvalidSignature,
        timestamp: 1,
    })
    .encode()
    .unwrap()
    .to_vec();
    assert_eq!(rejection[5], 3);
    rejection[5] = 4;
    assert!(matches!(
        decode(&rejection),
        Err(MessageError::Read(ReadError::UnknownValue {
            field: "rejection_reason",
            value: 4,
            ..
        }))
    ));
}

#[test]
fn a_signed_item_whose_blob_is_not_its_own_still_decodes_but_does_not_verify() {
    let SyncMessage::LooseCommit(m) = fixed_commit_message(0, 0, 4) else {
        unreachable!()
    };
    let swapped = SignedItem::new(m.item.signed().clone(), Blob::from_static(b"other"));
    let msg = SyncMessage::LooseCommit(BlobMessage { item: swapped, ..m });
    let Ok(Message::Sync(SyncMessage::LooseCommit(got))) = decode(&msg.encode().unwrap()) else {
        panic!()
    };
    assert!(matches!(got.verify(), Err(VerifyItemError::Blob(_))));
}

// ---- structure-aware mutation fuzzing -----------------------------------
//
// Random bytes almost never get past the 4-byte schema check, so they
// cannot find a bug deeper in. These tests start from valid messages of
// every kind (every sync variant, with signed commits, fragments and
// diffs; every handshake kind), apply 1 to 8 mutations that know where the
// count, length and tag fields are, and, half of the time, repair
// `TotalSize` so the mutant gets past the envelope check.

/// Width of a count, length or tag field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Width {
    U8,
    U16,
    U32,
    Bijou64,
}

/// A count, length or tag field of a valid message: where it is, and the
/// value the valid message has there.
#[derive(Debug, Clone, Copy)]
struct Field {
    at: usize,
    width: Width,
    value: u64,
}

/// A valid message's wire bytes, with the positions of its count, length
/// and tag fields.
#[derive(Debug, Clone)]
struct Specimen {
    wire: Vec<u8>,
    fields: Vec<Field>,
}

fn field(at: usize, width: Width, value: impl TryInto<u64>) -> Field {
    let value = value.try_into().ok().expect("fits u64");
    Field { at, width, value }
}

/// `Counter u64 · Count u32 · Count x 32` at `at`; returns where it ends.
fn heads_fields(out: &mut Vec<Field>, at: usize, heads: &RemoteHeads) -> usize {
    out.push(field(at + 8, Width::U32, heads.heads().len()));
    at + 12 + 32 * heads.heads().len()
}

/// Offset of the first count inside a signed commit or fragment: schema,
/// issuer, tree id, head, blob digest.
const SIGNED_COUNTS_AT: usize = 4 + 32 + 32 * 3;

/// A `Signed<LooseCommit> · BlobLen · Blob` at `at`; returns where it ends.
fn commit_item_fields(out: &mut Vec<Field>, at: usize, item: &SignedItem<LooseCommit>) -> usize {
    let verified = item.signed().verify_strict().expect("valid specimen");
    let commit = verified.payload();
    let counts = at + SIGNED_COUNTS_AT;
    out.push(field(counts, Width::U8, commit.parents().len()));
    out.push(field(counts + 1, Width::Bijou64, commit.blob_meta().size()));
    let blob_len = at + item.signed().len();
    out.push(field(blob_len, Width::Bijou64, item.blob().len()));
    at + item.wire_len().unwrap()
}

/// A `Signed<Fragment> · BlobLen · Blob` at `at`; returns where it ends.
fn fragment_item_fields(
    out: &mut Vec<Field>,
    at: usize,
    item: &SignedItem<bijou_framing::message::Fragment>,
) -> usize {
    let verified = item.signed().verify_strict().expect("valid specimen");
    let fragment = verified.payload();
    let counts = at + SIGNED_COUNTS_AT;
    out.push(field(counts, Width::U8, fragment.boundary().len()));
    out.push(field(counts + 1, Width::U16, fragment.checkpoints().len()));
    out.push(field(
        counts + 3,
        Width::Bijou64,
        fragment.blob_meta().size(),
    ));
    let blob_len = at + item.signed().len();
    out.push(field(blob_len, Width::Bijou64, item.blob().len()));
    at + item.wire_len().unwrap()
}

/// Every count, length and tag field of `msg`, walked from the layouts.
fn fields_of(msg: &Message, len: usize) -> Vec<Field> {
    let mut out = Vec::new();
    match msg {
        Message::Handshake(h) => {
            let kind = match h {
                HandshakeMessage::Challenge(_) => 0,
                HandshakeMessage::Response(_) => 1,
                HandshakeMessage::Rejection(_) => 2,
            };
            out.push(field(4, Width::U8, kind));
            match h {
                HandshakeMessage::Challenge(signed) => {
                    let verified = signed.verify_strict().expect("valid specimen");
                    let tag = match verified.payload().audience {
                        bijou_framing::message::Audience::Known(_) => 0,
                        bijou_framing::message::Audience::Discover(_) => 1,
                    };
                    out.push(field(4 + 1 + 32, Width::U8, tag));
                }
                HandshakeMessage::Rejection(r) => {
                    out.push(field(5, Width::U8, r.reason.to_u8()));
                }
                HandshakeMessage::Response(_) => {}
            }
        }
        Message::Sync(sync) => {
            out.push(field(4, Width::U32, len));
            out.push(field(8, Width::U8, sync.tag()));
            let body = 9;
            match sync {
                SyncMessage::LooseCommit(m) => {
                    let at = heads_fields(&mut out, body + 32, &m.sender_heads);
                    commit_item_fields(&mut out, at, &m.item);
                }
                SyncMessage::Fragment(m) => {
                    let at = heads_fields(&mut out, body + 32, &m.sender_heads);
                    fragment_item_fields(&mut out, at, &m.item);
                }
                SyncMessage::BatchSyncRequest(r) => {
                    let subscribe = body + 32 + 32 + 8;
                    out.push(field(subscribe, Width::U8, u8::from(r.subscribe)));
                    let counts = subscribe + 1 + 16;
                    out.push(field(counts, Width::U16, r.commit_fingerprints().len()));
                    let fragments = r.fragment_fingerprints().len();
                    out.push(field(counts + 2, Width::U16, fragments));
                }
                SyncMessage::BatchSyncResponse(r) => {
                    let result = body + 32 + 8 + 32;
                    let mut at = result + 1;
                    let code = match &r.result {
                        SyncResult::Ok(diff) => {
                            let counts = [
                                diff.commits().len(),
                                diff.fragments().len(),
                                diff.requested_commits().len(),
                                diff.requested_fragments().len(),
                            ];
                            for (i, count) in counts.into_iter().enumerate() {
                                out.push(field(at + 2 * i, Width::U16, count));
                            }
                            at += 8;
                            for item in diff.commits() {
                                at = commit_item_fields(&mut out, at, item);
                            }
                            for item in diff.fragments() {
                                at = fragment_item_fields(&mut out, at, item);
                            }
                            at += 8 * (counts[2] + counts[3]);
                            0
                        }
                        SyncResult::NotFound => 1,
                        SyncResult::Unauthorized => 2,
                    };
                    out.push(field(result, Width::U8, code));
                    heads_fields(&mut out, at, &r.responder_heads);
                }
                SyncMessage::RemoveSubscriptions(r) => {
                    out.push(field(body, Width::U16, r.ids().len()));
                }
                SyncMessage::DataRequestRejected(_) => {}
                SyncMessage::HeadsUpdate(h) => {
                    heads_fields(&mut out, body + 32, &h.heads);
                }
                other => panic!("a sync variant without a field map: {other:?}"),
            }
        }
    }
    out
}

/// The value of a field in `bytes`, if it is all there.
fn read_field(bytes: &[u8], at: usize, width: Width) -> Option<u64> {
    let rest = bytes.get(at..)?;
    let fixed = |n: usize| -> Option<u64> {
        let b = rest.get(..n)?;
        Some(b.iter().fold(0u64, |v, &byte| (v << 8) | u64::from(byte)))
    };
    match width {
        Width::U8 => fixed(1),
        Width::U16 => fixed(2),
        Width::U32 => fixed(4),
        Width::Bijou64 => bijou_codec::bijou64::decode(rest).ok().map(|(v, _)| v),
    }
}

fn specimen(msg: Message) -> Specimen {
    let wire = msg.encode().unwrap().to_vec();
    let fields = fields_of(&msg, wire.len());
    // The field map is right: every field holds the value the message has.
    for f in &fields {
        assert_eq!(
            read_field(&wire, f.at, f.width),
            Some(f.value),
            "field map of {msg:?} at {f:?}"
        );
    }
    Specimen { wire, fields }
}

fn any_specimen() -> impl Strategy<Value = Specimen> {
    prop_oneof![
        3 => sync_message().prop_map(Message::Sync),
        1 => handshake_message().prop_map(Message::Handshake),
    ]
    .prop_map(specimen)
}

/// An extreme value for a count, length or tag field.
#[derive(Debug, Clone, Copy)]
enum Extreme {
    Zero,
    One,
    Max,
    TopBit,
    PlusOne,
    MinusOne,
    /// A bijou64 whose tier-8 payload overflows (`Max` for fixed widths).
    Overflow,
    Random(u64),
}

/// One mutation; positions are resolved against the current length.
#[derive(Debug, Clone)]
enum Mutation {
    FlipBit {
        at: prop::sample::Index,
        bit: u8,
    },
    SetByte {
        at: prop::sample::Index,
        value: u8,
    },
    Insert {
        at: prop::sample::Index,
        value: u8,
    },
    Delete {
        at: prop::sample::Index,
    },
    Truncate {
        len: prop::sample::Index,
    },
    DuplicateRange {
        at: prop::sample::Index,
        len: usize,
    },
    RemoveRange {
        at: prop::sample::Index,
        len: usize,
    },
    /// Bytes of the other valid message, written over or inserted at `at`.
    Splice {
        from: prop::sample::Index,
        len: usize,
        at: prop::sample::Index,
        overwrite: bool,
    },
    /// One of the message's count, length or tag fields set to an extreme.
    SetField {
        field: prop::sample::Index,
        value: Extreme,
    },
}

fn range_len() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..=8, 1usize..=200]
}

fn extreme() -> impl Strategy<Value = Extreme> {
    prop_oneof![
        Just(Extreme::Zero),
        Just(Extreme::One),
        Just(Extreme::Max),
        Just(Extreme::TopBit),
        Just(Extreme::PlusOne),
        Just(Extreme::MinusOne),
        Just(Extreme::Overflow),
        any::<u64>().prop_map(Extreme::Random),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    use prop::sample::Index;
    prop_oneof![
        2 => (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        2 => (any::<Index>(), prop_oneof![Just(0x00u8), Just(0xFF), any::<u8>()])
            .prop_map(|(at, value)| Mutation::SetByte { at, value }),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(at, value)| Mutation::Insert { at, value }),
        1 => any::<Index>().prop_map(|at| Mutation::Delete { at }),
        1 => any::<Index>().prop_map(|len| Mutation::Truncate { len }),
        1 => (any::<Index>(), range_len())
            .prop_map(|(at, len)| Mutation::DuplicateRange { at, len }),
        1 => (any::<Index>(), range_len())
            .prop_map(|(at, len)| Mutation::RemoveRange { at, len }),
        1 => (any::<Index>(), range_len(), any::<Index>(), any::<bool>()).prop_map(
            |(from, len, at, overwrite)| Mutation::Splice { from, len, at, overwrite }
        ),
        3 => (any::<Index>(), extreme()).prop_map(|(field, value)| Mutation::SetField { field, value }),
    ]
}

/// `at` resolved in `0..len` (`None` for an empty buffer).
fn pos(at: &prop::sample::Index, len: usize) -> Option<usize> {
    (len > 0).then(|| at.index(len))
}

fn set_field(bytes: &mut Vec<u8>, f: Field, value: Extreme) {
    let current = read_field(bytes, f.at, f.width).unwrap_or(f.value);
    let bits = match f.width {
        Width::U8 => 8,
        Width::U16 => 16,
        Width::U32 => 32,
        Width::Bijou64 => 64,
    };
    let max = u64::MAX >> (64 - bits);
    let new = match value {
        Extreme::Zero => 0,
        Extreme::One => 1,
        Extreme::Max | Extreme::Overflow => max,
        Extreme::TopBit => 1 << (bits - 1),
        Extreme::PlusOne => current.wrapping_add(1) & max,
        Extreme::MinusOne => current.wrapping_sub(1) & max,
        Extreme::Random(v) => v & max,
    };
    let encoded = match (f.width, value) {
        (Width::Bijou64, Extreme::Overflow) => vec![0xFF; 9],
        (Width::Bijou64, _) => {
            let mut out = Vec::new();
            bijou_codec::bijou64::encode_to_vec(new, &mut out);
            out
        }
        _ => new.to_be_bytes()[8 - bits / 8..].to_vec(),
    };
    if f.at >= bytes.len() {
        return;
    }
    // Replace the field's current encoding (a bijou64's length comes from
    // its first byte) with the new one.
    let old_len = match f.width {
        Width::Bijou64 => bijou_codec::bijou64::len_from_first_byte(bytes[f.at]),
        _ => bits / 8,
    };
    let end = (f.at + old_len).min(bytes.len());
    bytes.splice(f.at..end, encoded);
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation, other: &[u8], fields: &[Field]) {
    let len = bytes.len();
    match m {
        Mutation::FlipBit { at, bit } => {
            if let Some(i) = pos(at, len) {
                bytes[i] ^= 1 << bit;
            }
        }
        Mutation::SetByte { at, value } => {
            if let Some(i) = pos(at, len) {
                bytes[i] = *value;
            }
        }
        Mutation::Insert { at, value } => {
            let i = pos(at, len + 1).unwrap_or(0);
            bytes.insert(i, *value);
        }
        Mutation::Delete { at } => {
            if let Some(i) = pos(at, len) {
                bytes.remove(i);
            }
        }
        Mutation::Truncate { len: keep } => {
            if let Some(keep) = pos(keep, len) {
                bytes.truncate(keep);
            }
        }
        Mutation::DuplicateRange { at, len: n } => {
            if let Some(i) = pos(at, len) {
                let end = (i + n).min(len);
                let copy = bytes[i..end].to_vec();
                bytes.splice(end..end, copy);
            }
        }
        Mutation::RemoveRange { at, len: n } => {
            if let Some(i) = pos(at, len) {
                bytes.drain(i..(i + n).min(len));
            }
        }
        Mutation::Splice {
            from,
            len: n,
            at,
            overwrite,
        } => {
            let Some(start) = pos(from, other.len()) else {
                return;
            };
            let piece = &other[start..(start + n).min(other.len())];
            let i = pos(at, len + 1).unwrap_or(0);
            let end = if *overwrite {
                (i + piece.len()).min(len)
            } else {
                i
            };
            bytes.splice(i..end, piece.iter().copied());
        }
        Mutation::SetField { field, value } => {
            if !fields.is_empty() {
                set_field(bytes, *field.get(fields), *value);
            }
        }
    }
}

/// Applies `mutations` to `base`, splicing from `other`; then, if
/// `repair`, sets `TotalSize` to the mutant's length.
fn mutant(base: &Specimen, other: &Specimen, mutations: &[Mutation], repair: bool) -> Vec<u8> {
    let mut bytes = base.wire.clone();
    for m in mutations {
        apply(&mut bytes, m, &other.wire, &base.fields);
    }
    if repair && bytes.len() >= 8 && bytes.starts_with(b"SUM\0") {
        fix_total_size(&mut bytes);
    }
    bytes
}

#[derive(Debug, Clone)]
struct MutationCase {
    base: Specimen,
    other: Specimen,
    mutations: Vec<Mutation>,
    repair: bool,
}

fn mutation_case() -> impl Strategy<Value = MutationCase> {
    (
        any_specimen(),
        any_specimen(),
        proptest::collection::vec(mutation(), 1..=8),
        any::<bool>(),
    )
        .prop_map(|(base, other, mutations, repair)| MutationCase {
            base,
            other,
            mutations,
            repair,
        })
}

/// Decodes a mutant; any accepted one must be the one encoding of what it
/// decoded to, and verifying it must not panic either.
fn check_mutant(bytes: &[u8]) -> Result<Message, MessageError> {
    let result = decode(bytes);
    if let Ok(msg) = &result {
        assert_eq!(
            msg.encode().unwrap(),
            bytes,
            "accepted a second encoding of {msg:?}"
        );
        assert_eq!(msg.wire_len(), Ok(bytes.len()));
        let _ = verifies(msg);
    }
    result
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn mutated_valid_messages_never_panic_and_never_alias(case in mutation_case()) {
        let bytes = mutant(&case.base, &case.other, &case.mutations, case.repair);
        let _ = check_mutant(&bytes);
    }
}

fn read_error_offset(e: &ReadError) -> Option<usize> {
    match *e {
        ReadError::Truncated { offset, .. }
        | ReadError::Bijou64Overflow { offset, .. }
        | ReadError::TrailingBytes { offset, .. }
        | ReadError::NotAscending { offset, .. }
        | ReadError::UnknownValue { offset, .. }
        | ReadError::SizeMismatch { offset, .. } => Some(offset),
        _ => None,
    }
}

/// Where in the frame decoding failed: the failing field's absolute
/// offset (inside a signed item, the inner offset). Envelope errors are
/// at the envelope.
fn error_offset(e: &MessageError) -> Option<usize> {
    match e {
        MessageError::Read(r) => read_error_offset(r),
        MessageError::UnknownSchema { .. } => Some(0),
        MessageError::TotalSize { .. } => Some(4),
        MessageError::RetiredTag { offset, .. } => Some(*offset),
        MessageError::Signed { offset, source } => Some(match source {
            DecodeError::Read(r) => read_error_offset(r).unwrap_or(*offset),
            DecodeError::WrongSchema { offset, .. }
            | DecodeError::WrongDiscriminant { offset, .. }
            | DecodeError::NonCanonicalIssuer { offset } => *offset,
            _ => *offset,
        }),
        _ => None,
    }
}

/// Bytes of the envelope before the first payload field: `SUM\0 ·
/// TotalSize · Tag` (9), or `SUH\0 · Kind` (5).
fn header_len(bytes: &[u8]) -> usize {
    if bytes.starts_with(b"SUH\0") {
        5
    } else {
        9
    }
}

/// The fuzz above is only worth something if mutants get past the
/// envelope. A fixed-seed run of 20 000 mutants measures it: at least 30 %
/// must decode or fail beyond the header, and some must be accepted.
#[test]
fn mutation_fuzz_reaches_deep_into_messages() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    const MUTANTS: usize = 20_000;
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[0x5E; 32]);
    let config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = mutation_case();
    let (mut accepted, mut deep, mut shallow) = (0usize, 0usize, 0usize);
    let (mut repaired, mut repaired_deep) = (0usize, 0usize);
    for _ in 0..MUTANTS {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let bytes = mutant(&case.base, &case.other, &case.mutations, case.repair);
        let is_deep = match check_mutant(&bytes) {
            Ok(_) => {
                accepted += 1;
                true
            }
            Err(e) => {
                let beyond = error_offset(&e).is_some_and(|at| at >= header_len(&bytes));
                if beyond {
                    deep += 1;
                } else {
                    shallow += 1;
                }
                beyond
            }
        };
        if case.repair {
            repaired += 1;
            repaired_deep += usize::from(is_deep);
        }
    }
    let frac = |n: usize, of: usize| n as f64 / of as f64;
    let reached = frac(accepted + deep, MUTANTS);
    eprintln!(
        "{MUTANTS} mutants: accepted {:.2}%, rejected beyond the header {:.2}%, \
         rejected in the header {:.2}%; decoded or deep {:.2}% \
         ({:.2}% of the {repaired} with TotalSize repaired)",
        100.0 * frac(accepted, MUTANTS),
        100.0 * frac(deep, MUTANTS),
        100.0 * frac(shallow, MUTANTS),
        100.0 * reached,
        100.0 * frac(repaired_deep, repaired),
    );
    assert!(
        reached >= 0.30,
        "only {:.2}% got past the header",
        100.0 * reached
    );
    assert!(
        frac(accepted, MUTANTS) > 0.005,
        "only {accepted} of {MUTANTS} mutants were accepted"
    );
}
