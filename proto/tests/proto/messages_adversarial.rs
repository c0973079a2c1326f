//! Bad input gets a typed error (or, where it is still well-formed, a
//! verification failure), never a panic, never a second encoding.
//!
//! Properties over every message type: truncation at every offset, every
//! single-bit flip, trailing bytes, tampered counts and `TotalSize`, schema
//! and tag swaps (the structure-aware mutation fuzz is `mutation_fuzz.rs`).
//! Then one named test per strictness check (sorted arrays, `TotalSize` exactness,
//! retired tags, scope binding, trailing bytes, count overflow, huge blob
//! lengths): each fails if its check is removed from the decoder or
//! encoder.

use bijou_codec::{ReadError, Wire, WriteError};
use bijou_proto::message::{
    BlobMessage, CommitId, DataRequestRejected, EphemeralMessage, Fingerprint, FingerprintSeed,
    HandshakeMessage, HeadsUpdate, LooseCommit, Message, MessageError, RemoteHeads, SedimentreeId,
    SignedItem, SyncDiff, SyncMessage, SyncResult, VerifyItemError,
};
use bijou_signing::{Blob, SealError, Signed, SignedDecodeError, VerifyError};
use bijou_test_support::messages::*;
use bijou_test_support::strategy::*;
use bytes::Bytes;
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
        Message::Ephemeral(EphemeralMessage::Ephemeral(s)) => s.verify_strict().is_ok(),
        Message::Ephemeral(_) => true,
        Message::Keyhive(k) => k.as_ref().clone().verify(k.signed.issuer).is_ok(),
    }
}

/// Whether `msg` carries at least one signature and all of them verify.
fn carries_a_valid_signature(msg: &Message) -> bool {
    match msg {
        Message::Sync(sync) => sync.signed_item_count() > 0 && sync.verify().is_ok(),
        Message::Handshake(HandshakeMessage::Challenge(s)) => s.verify_strict().is_ok(),
        Message::Handshake(HandshakeMessage::Response(s)) => s.verify_strict().is_ok(),
        Message::Handshake(_) => false,
        Message::Ephemeral(EphemeralMessage::Ephemeral(s)) => s.verify_strict().is_ok(),
        Message::Ephemeral(_) => false,
        Message::Keyhive(k) => k.as_ref().clone().verify(k.signed.issuer).is_ok(),
    }
}

/// The case the schema-swap property found: a 158-byte BatchSyncRequest
/// with its schema swapped to `SUH\0` has exactly a challenge's length
/// and layout (discriminant 00 from `TotalSize`'s first byte, a canonical
/// issuer encoding). It decodes as an unverified challenge, re-encodes to
/// the same bytes, and fails verification.
#[test]
fn a_sync_message_swapped_to_a_challenge_decodes_but_never_verifies() {
    let request = SyncMessage::BatchSyncRequest(bijou_proto::message::BatchSyncRequest::new(
        SedimentreeId::new([0; 32]),
        bijou_signing::PeerId::from_bytes([0; 32]),
        0,
        false,
        FingerprintSeed::new(0, 0),
        (1..=7).map(Fingerprint::from_u64),
        [],
    ));
    let mut wire = request.encode().unwrap().to_vec();
    assert_eq!(wire.len(), 158);
    wire[..4].copy_from_slice(b"SUH\0");
    let msg = decode(&wire).expect("well-formed as a challenge");
    let Message::Handshake(HandshakeMessage::Challenge(challenge)) = &msg else {
        panic!("{msg:?}")
    };
    assert_eq!(msg.encode().unwrap().to_vec(), wire);
    assert!(challenge.verify_strict().is_err());
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
        // Usually refused outright. Rarely the swapped bytes are a
        // well-formed message of the other kind (a 158-byte sync message
        // read as a challenge: decoding keeps the issuer key's bytes and
        // leaves the point to verification); then they must still be the
        // only encoding of it, and no signature in it may verify.
        if let Ok(msg) = decode(&swapped) {
            prop_assert_eq!(msg.encode().unwrap().to_vec(), swapped);
            prop_assert!(!carries_a_valid_signature(&msg));
        }
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
    let msg = SyncMessage::BatchSyncResponse(bijou_proto::message::BatchSyncResponse {
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
    let mut rejection = HandshakeMessage::Rejection(bijou_proto::message::Rejection {
        reason: bijou_proto::message::RejectionReason::ClockDrift,
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

/// Heads are the one array Subduction writes unsorted (hash-set order),
/// so any order is accepted and kept, and re-encodes to the same bytes;
/// a duplicate is still refused.
#[test]
fn heads_in_any_order_are_kept_but_duplicate_heads_are_rejected() {
    let wire = fixed_commit_message(0, 2, 0).encode().unwrap().to_vec();
    let (a, b) = (53, 53 + 32);
    let mut swapped = wire.clone();
    swapped[a..b].copy_from_slice(&wire[b..b + 32]);
    swapped[b..b + 32].copy_from_slice(&wire[a..b]);
    let message = decode(&swapped).expect("heads in any order");
    assert_eq!(message.encode().unwrap().as_ref(), swapped.as_slice());
    assert_ne!(message, decode(&wire).expect("sorted"), "the order is kept");
    let mut duplicated = wire.clone();
    duplicated[b..b + 32].copy_from_slice(&wire[a..b]);
    assert!(matches!(
        decode(&duplicated),
        Err(MessageError::Read(ReadError::Duplicate {
            field: "heads",
            index: 1,
            ..
        }))
    ));
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
        SignedDecodeError::Read(ReadError::NotAscending {
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
            source: SignedDecodeError::Read(ReadError::NotAscending {
                field: "parents",
                offset: 53 + second_parent,
                index: 1,
            })
        })
    );
}

#[test]
fn strict_unsorted_fingerprints_and_ids_are_rejected() {
    let req = SyncMessage::BatchSyncRequest(bijou_proto::message::BatchSyncRequest::new(
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
    let resp = SyncMessage::BatchSyncResponse(bijou_proto::message::BatchSyncResponse {
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
    let resp = SyncMessage::BatchSyncResponse(bijou_proto::message::BatchSyncResponse {
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
    let honest = SyncMessage::BatchSyncResponse(bijou_proto::message::BatchSyncResponse {
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
            needed: usize::MAX,
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
    let resp = SyncMessage::BatchSyncResponse(bijou_proto::message::BatchSyncResponse {
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
    let req = SyncMessage::BatchSyncRequest(bijou_proto::message::BatchSyncRequest::new(
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

    let resp = SyncMessage::BatchSyncResponse(bijou_proto::message::BatchSyncResponse {
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

    let mut rejection = HandshakeMessage::Rejection(bijou_proto::message::Rejection {
        reason: bijou_proto::message::RejectionReason::InvalidSignature,
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

// Structure-aware mutation fuzzing (valid messages of every kind, mutated
// with knowledge of their layouts, 208,000 inputs per run) lives in
// `net/tests/net/mutation_fuzz.rs`, with its support in the test-support
// crate (`bijou_test_support::fuzz` and `checks`).
