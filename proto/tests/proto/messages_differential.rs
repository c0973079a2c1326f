//! Differential tests against the published Subduction crates
//! (`subduction_core` 0.20, `sedimentree_core` 0.16, `subduction_crypto`
//! 0.11), both directions, over generated messages of every variant:
//!
//! - bytes we encode decode with theirs, to the same content, and they
//!   re-encode them to the identical bytes;
//! - bytes they encode (their encoders, signed over their own field
//!   encoding) decode with ours to the same content and re-encode
//!   identically;
//! - signatures sealed by one side verify on the other;
//! - the handshake challenge digests agree.
//!
//! Their signing API (`Signed::seal`) is async over a `future_form` type
//! we cannot name without another dependency; their `MemorySigner` is a
//! plain `ed25519_dalek::SigningKey::sign` of the bytes before the
//! signature, so "sealed by them" here means: their `encode_fields` writes
//! the payload, dalek signs exactly those bytes, and their
//! `Signed::from_parts`/`try_decode` builds the value.
//!
//! The `theirs_accept_ours_reject_*` tests show each place where we
//! deliberately reject input they accept, with the reason in the name.

use std::collections::BTreeSet;

use bijou_codec::{ReadError, Wire, WriteError};
use bijou_proto::message as ours;
use bijou_proto::message::{HandshakeMessage, Message, MessageError, SyncMessage};
use bijou_signing::{ed25519_dalek, Identity as _, Payload as _};
use bijou_test_support::messages::*;
use bijou_test_support::strategy::*;
use bytes::Bytes;
use ed25519_dalek::Signer as _;
use proptest::prelude::*;

use sedimentree_core::blob::{Blob as TBlob, BlobMeta as TBlobMeta};
use sedimentree_core::codec::{encode::EncodeFields, schema::Schema};
use sedimentree_core::crypto::digest::Digest as TDigest;
use sedimentree_core::crypto::fingerprint::{Fingerprint as TFp, FingerprintSeed as TSeed};
use sedimentree_core::fragment::{checkpoint::Checkpoint as TCheckpoint, Fragment as TFragment};
use sedimentree_core::id::SedimentreeId as TTree;
use sedimentree_core::loose_commit::{id::CommitId as TCommitId, LooseCommit as TCommit};
use sedimentree_core::sedimentree::FingerprintSummary;
use subduction_core::connection::message as theirs;
use subduction_core::handshake::{
    audience::{Audience as TAudience, DiscoveryId},
    challenge::Challenge as TChallenge,
    rejection::{Rejection as TRejection, RejectionReason as TReason},
    response::Response as TResponse,
    HandshakeMessage as THandshake,
};
use subduction_core::peer::id::PeerId as TPeer;
use subduction_core::remote_heads::RemoteHeads as TRemoteHeads;
use subduction_core::timestamp::TimestampSeconds;
use subduction_crypto::nonce::Nonce;
use subduction_crypto::signed::Signed as TSigned;

// ---- conversions: our content -> their types ----------------------------

fn t_tree(id: ours::SedimentreeId) -> TTree {
    TTree::new(*id.as_bytes())
}

fn t_commit_id(id: &ours::CommitId) -> TCommitId {
    TCommitId::new(*id.as_bytes())
}

fn t_meta(meta: bijou_signing::BlobMeta) -> TBlobMeta {
    TBlobMeta::from_digest_size(
        TDigest::force_from_bytes(*meta.digest().as_bytes()),
        meta.size(),
    )
}

fn t_fps(fps: &[ours::Fingerprint]) -> Vec<TFp<TCommitId>> {
    fps.iter().map(|f| TFp::from_u64(f.as_u64())).collect()
}

fn t_heads(h: &ours::RemoteHeads) -> TRemoteHeads {
    TRemoteHeads {
        counter: h.counter(),
        heads: h.heads().iter().map(t_commit_id).collect(),
    }
}

fn t_loose_commit(c: &ours::LooseCommit) -> TCommit {
    TCommit::new(
        t_tree(c.sedimentree_id()),
        t_commit_id(&c.head()),
        c.parents().iter().map(t_commit_id).collect(),
        t_meta(c.blob_meta()),
    )
}

fn t_fragment(f: &ours::Fragment) -> TFragment {
    TFragment::from_parts(
        t_tree(f.sedimentree_id()),
        t_commit_id(&f.head()),
        f.boundary().iter().map(t_commit_id).collect(),
        f.checkpoints()
            .iter()
            .map(|c| TCheckpoint::from_bytes(*c.as_bytes()))
            .collect(),
        t_meta(f.blob_meta()),
    )
}

/// Their wire bytes for a signed payload: SCHEMA, discriminant, issuer,
/// their `encode_fields`, and the signature over all of that.
fn their_signed_bytes<T: Schema + EncodeFields>(
    signer: &ed25519_dalek::SigningKey,
    payload: &T,
) -> Vec<u8> {
    let mut bytes = T::SCHEMA.to_vec();
    if let Some(d) = T::DISCRIMINANT {
        bytes.push(d);
    }
    bytes.extend_from_slice(signer.verifying_key().as_bytes());
    payload.encode_fields(&mut bytes);
    let signature = signer.sign(&bytes);
    bytes.extend_from_slice(&signature.to_bytes());
    bytes
}

/// Which of the test keys issued an item (our items are sealed with them).
fn signer_of(issuer: &ed25519_dalek::VerifyingKey) -> ed25519_dalek::SigningKey {
    (0..3)
        .map(key)
        .find(|k| k.verifying_key() == *issuer)
        .expect("a test key")
}

/// Re-seals one of our signed items with their encoder (after verifying it
/// with ours, which is how we learn its content).
fn t_commit_item(item: &ours::SignedItem<ours::LooseCommit>) -> (TSigned<TCommit>, TBlob) {
    let verified = item.signed().verify_strict().unwrap();
    let theirs = t_loose_commit(verified.payload());
    let signer = signer_of(&verified.issuer());
    let signed = TSigned::try_decode(&their_signed_bytes(&signer, &theirs)).unwrap();
    (signed, TBlob::new(item.blob().as_bytes().to_vec()))
}

fn t_fragment_item(item: &ours::SignedItem<ours::Fragment>) -> (TSigned<TFragment>, TBlob) {
    let verified = item.signed().verify_strict().unwrap();
    let theirs = t_fragment(verified.payload());
    let signer = signer_of(&verified.issuer());
    let signed = TSigned::try_decode(&their_signed_bytes(&signer, &theirs)).unwrap();
    (signed, TBlob::new(item.blob().as_bytes().to_vec()))
}

/// Their message with our message's content, built (and signed) by them.
fn t_sync(msg: &SyncMessage) -> theirs::SyncMessage {
    match msg {
        SyncMessage::LooseCommit(m) => {
            let (commit, blob) = t_commit_item(&m.item);
            theirs::SyncMessage::LooseCommit {
                id: t_tree(m.id),
                commit,
                blob,
                sender_heads: t_heads(&m.sender_heads),
            }
        }
        SyncMessage::Fragment(m) => {
            let (fragment, blob) = t_fragment_item(&m.item);
            theirs::SyncMessage::Fragment {
                id: t_tree(m.id),
                fragment,
                blob,
                sender_heads: t_heads(&m.sender_heads),
            }
        }
        SyncMessage::BatchSyncRequest(r) => {
            theirs::SyncMessage::BatchSyncRequest(theirs::BatchSyncRequest {
                id: t_tree(r.id),
                req_id: theirs::RequestId {
                    requestor: TPeer::new(*r.requestor.as_bytes()),
                    nonce: r.nonce,
                },
                fingerprint_summary: FingerprintSummary::new(
                    TSeed::new(r.seed.key0(), r.seed.key1()),
                    t_fps(r.commit_fingerprints())
                        .into_iter()
                        .collect::<BTreeSet<_>>(),
                    t_fps(r.fragment_fingerprints())
                        .into_iter()
                        .collect::<BTreeSet<_>>(),
                ),
                subscribe: r.subscribe,
            })
        }
        SyncMessage::BatchSyncResponse(r) => {
            theirs::SyncMessage::BatchSyncResponse(theirs::BatchSyncResponse {
                req_id: theirs::RequestId {
                    requestor: TPeer::new(*r.requestor.as_bytes()),
                    nonce: r.nonce,
                },
                id: t_tree(r.id),
                result: match &r.result {
                    ours::SyncResult::Ok(diff) => theirs::SyncResult::Ok(theirs::SyncDiff {
                        missing_commits: diff.commits().iter().map(t_commit_item).collect(),
                        missing_fragments: diff.fragments().iter().map(t_fragment_item).collect(),
                        requesting: theirs::RequestedData {
                            commit_fingerprints: t_fps(diff.requested_commits()),
                            fragment_fingerprints: t_fps(diff.requested_fragments()),
                        },
                    }),
                    ours::SyncResult::NotFound => theirs::SyncResult::NotFound,
                    ours::SyncResult::Unauthorized => theirs::SyncResult::Unauthorized,
                },
                responder_heads: t_heads(&r.responder_heads),
            })
        }
        SyncMessage::RemoveSubscriptions(r) => {
            theirs::SyncMessage::RemoveSubscriptions(theirs::RemoveSubscriptions {
                ids: r.ids().iter().map(|id| t_tree(*id)).collect(),
            })
        }
        SyncMessage::DataRequestRejected(ours::DataRequestRejected { id }) => {
            theirs::SyncMessage::DataRequestRejected(theirs::DataRequestRejected {
                id: t_tree(*id),
            })
        }
        SyncMessage::HeadsUpdate(ours::HeadsUpdate { id, heads }) => {
            theirs::SyncMessage::HeadsUpdate {
                id: t_tree(*id),
                heads: t_heads(heads),
            }
        }
        _ => unreachable!("all variants covered"),
    }
}

fn t_challenge(c: &ours::Challenge) -> TChallenge {
    let audience = match c.audience {
        ours::Audience::Known(p) => TAudience::Known(TPeer::new(*p.as_bytes())),
        ours::Audience::Discover(d) => TAudience::Discover(DiscoveryId::from_raw(d)),
    };
    TChallenge::new(
        audience,
        TimestampSeconds::new(c.timestamp),
        Nonce::from_bytes(c.nonce),
    )
}

fn t_reason(r: ours::RejectionReason) -> TReason {
    match r {
        ours::RejectionReason::ClockDrift => TReason::ClockDrift,
        ours::RejectionReason::InvalidAudience => TReason::InvalidAudience,
        ours::RejectionReason::ReplayedNonce => TReason::ReplayedNonce,
        ours::RejectionReason::InvalidSignature => TReason::InvalidSignature,
        _ => unreachable!(),
    }
}

/// Their handshake message with our content, encoded and signed by them.
fn t_handshake_bytes(msg: &HandshakeMessage) -> Vec<u8> {
    match msg {
        HandshakeMessage::Challenge(s) => {
            let v = s.verify_strict().unwrap();
            their_signed_bytes(&signer_of(&v.issuer()), &t_challenge(v.payload()))
        }
        HandshakeMessage::Response(s) => {
            let v = s.verify_strict().unwrap();
            let r = TResponse::new(
                TDigest::force_from_bytes(*v.payload().challenge_digest().as_bytes()),
                TimestampSeconds::new(v.payload().server_timestamp),
            );
            their_signed_bytes(&signer_of(&v.issuer()), &r)
        }
        HandshakeMessage::Rejection(r) => THandshake::Rejection(TRejection::new(
            t_reason(r.reason),
            TimestampSeconds::new(r.timestamp),
        ))
        .encode(),
    }
}

// ---- the properties -----------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Ours -> theirs: our bytes decode with theirs to the same content
    /// (their own re-sealing of that content is byte-equal), re-encode
    /// identically, and our signatures verify under their verifier.
    #[test]
    fn ours_decode_with_theirs(msg in sync_message()) {
        let wire = msg.encode().unwrap();
        let decoded = theirs::SyncMessage::try_decode(&wire).unwrap();
        prop_assert_eq!(decoded.encode(), wire.clone());
        prop_assert_eq!(&decoded, &t_sync(&msg));
        match &decoded {
            theirs::SyncMessage::LooseCommit { commit, .. } => {
                commit.try_verify().unwrap();
            }
            theirs::SyncMessage::Fragment { fragment, .. } => {
                fragment.try_verify().unwrap();
            }
            theirs::SyncMessage::BatchSyncResponse(r) => {
                if let theirs::SyncResult::Ok(diff) = &r.result {
                    for (c, _) in &diff.missing_commits { c.try_verify().unwrap(); }
                    for (f, _) in &diff.missing_fragments { f.try_verify().unwrap(); }
                }
            }
            _ => {}
        }
    }

    /// Theirs -> ours: bytes their encoder writes (with items they signed)
    /// decode with ours to the same content, re-encode identically, and
    /// their signatures verify under our strict verifier.
    #[test]
    fn theirs_decode_with_ours(msg in sync_message()) {
        let wire = t_sync(&msg).encode();
        let decoded = SyncMessage::decode(Bytes::from(wire.clone())).unwrap();
        prop_assert_eq!(&decoded, &msg);
        prop_assert_eq!(decoded.encode().unwrap(), wire);
        match &decoded {
            SyncMessage::LooseCommit(m) => { m.verify().unwrap(); }
            SyncMessage::Fragment(m) => { m.verify().unwrap(); }
            _ => {}
        }
    }

    #[test]
    fn handshakes_agree_both_ways(msg in handshake_message()) {
        // Ours -> theirs.
        let wire = msg.encode().unwrap();
        let decoded = THandshake::try_decode(&wire).unwrap();
        prop_assert_eq!(decoded.encode(), wire.to_vec());
        match &decoded {
            THandshake::SignedChallenge(s) => { s.try_verify().unwrap(); }
            THandshake::SignedResponse(s) => { s.try_verify().unwrap(); }
            THandshake::Rejection(_) => {}
        }
        // Theirs -> ours.
        let theirs_wire = t_handshake_bytes(&msg);
        prop_assert_eq!(&theirs_wire[..], &wire[..]);
        let ours_back = HandshakeMessage::decode(Bytes::from(theirs_wire)).unwrap();
        prop_assert_eq!(&ours_back, &msg);
        match &ours_back {
            HandshakeMessage::Challenge(s) => { s.verify_strict().unwrap(); }
            HandshakeMessage::Response(s) => { s.verify_strict().unwrap(); }
            HandshakeMessage::Rejection(_) => {}
        }
    }

    #[test]
    fn challenge_digests_agree(c in challenge(), ts in any::<u64>()) {
        let t = t_challenge(&c);
        let digest = TDigest::<TChallenge>::hash(&t);
        prop_assert_eq!(*c.digest().unwrap().as_bytes(), *digest.as_bytes());
        // And the digest is BLAKE3("SUH\0" || 57 field bytes), as DESIGN.md says.
        let mut fields = Vec::new();
        t.encode_fields(&mut fields);
        prop_assert_eq!(fields.len(), 57);
        let mut hashed = b"SUH\0".to_vec();
        hashed.extend_from_slice(&fields);
        prop_assert_eq!(*digest.as_bytes(), *blake3::hash(&hashed).as_bytes());
        // Responses built either way agree.
        let ours_r = ours::Response::for_challenge(&c, ts).unwrap();
        let theirs_r = TResponse::for_challenge(&t, TimestampSeconds::new(ts));
        prop_assert_eq!(*ours_r.challenge_digest().as_bytes(), *theirs_r.challenge_digest.as_bytes());
    }

    #[test]
    fn fingerprints_agree(k0 in any::<u64>(), k1 in any::<u64>(), id in any::<[u8; 32]>()) {
        let ours_fp = ours::FingerprintSeed::new(k0, k1).fingerprint(&ours::CommitId::new(id));
        let theirs_fp = TFp::<TCommitId>::new(&TSeed::new(k0, k1), &TCommitId::new(id));
        prop_assert_eq!(ours_fp.as_u64(), theirs_fp.as_u64());
    }

    /// The bare signed payloads, both directions.
    #[test]
    fn signed_payloads_agree(
        (commit, _) in tree_id().prop_flat_map(loose_commit),
        (fragment, _) in tree_id().prop_flat_map(fragment),
        k in 0u8..3,
    ) {
        let signer = key(k);
        let ours_c = bijou_signing::Signed::seal(&signer, &commit).unwrap();
        let theirs_c = their_signed_bytes(&signer, &t_loose_commit(&commit));
        prop_assert_eq!(ours_c.as_bytes(), &theirs_c[..]);
        let t = TSigned::<TCommit>::try_decode(ours_c.as_bytes()).unwrap();
        prop_assert_eq!(t.try_verify().unwrap().payload().clone(), t_loose_commit(&commit));
        // Their digest of the payload = ours.
        prop_assert_eq!(*TDigest::<TCommit>::hash(&t_loose_commit(&commit)).as_bytes(), *commit.digest().unwrap().as_bytes());

        let ours_f = bijou_signing::Signed::seal(&signer, &fragment).unwrap();
        let theirs_f = their_signed_bytes(&signer, &t_fragment(&fragment));
        prop_assert_eq!(ours_f.as_bytes(), &theirs_f[..]);
        let back = bijou_signing::Signed::<ours::Fragment>::decode(Bytes::from(theirs_f)).unwrap();
        let verified = back.verify_strict().unwrap();
        prop_assert_eq!(verified.payload(), &fragment);
    }
}

#[test]
fn their_from_parts_and_our_seal_agree_on_a_fixed_commit() {
    let SyncMessage::LooseCommit(m) = fixed_commit_message(3, 2, 100) else {
        unreachable!()
    };
    let verified = m.item.signed().verify_strict().unwrap();
    let t = t_loose_commit(verified.payload());
    let from_parts = TSigned::from_parts(verified.issuer(), *m.item.signed().signature(), &t);
    assert_eq!(from_parts.as_bytes(), m.item.signed().as_bytes());
    assert_eq!(*key(0).peer_id().as_bytes(), *verified.issuer().as_bytes());
    assert_eq!(m.item.signed().peer_id(), key(0).peer_id());
    assert_eq!(verified.peer_id(), key(0).peer_id());
}

// ---- where we deliberately reject what they accept ----------------------

fn decode_ours(bytes: &[u8]) -> Result<Message, MessageError> {
    Message::decode(Bytes::copy_from_slice(bytes))
}

/// Heads are a set, and their encoder writes it in hash-set order: a real
/// server's HeadsUpdate with two heads comes unsorted. Ours accepts any
/// order, keeps it (so the bytes re-encode exactly), and refuses only a
/// duplicate, which theirs accepts.
#[test]
fn unsorted_heads_are_accepted_by_both_and_a_duplicate_head_only_by_theirs() {
    let unsorted = TRemoteHeads {
        counter: 1,
        heads: vec![TCommitId::new([2; 32]), TCommitId::new([1; 32])],
    };
    let wire = theirs::SyncMessage::HeadsUpdate {
        id: TTree::new([1; 32]),
        heads: unsorted,
    }
    .encode();
    assert!(theirs::SyncMessage::try_decode(&wire).is_ok());
    let ours = decode_ours(&wire).expect("ours accepts their order");
    assert_eq!(ours.encode().expect("encode").as_ref(), wire.as_slice());

    let duplicate = TRemoteHeads {
        counter: 1,
        heads: vec![TCommitId::new([2; 32]), TCommitId::new([2; 32])],
    };
    let wire = theirs::SyncMessage::HeadsUpdate {
        id: TTree::new([1; 32]),
        heads: duplicate,
    }
    .encode();
    assert!(theirs::SyncMessage::try_decode(&wire).is_ok());
    assert!(matches!(
        decode_ours(&wire),
        Err(MessageError::Read(ReadError::Duplicate {
            field: "heads",
            ..
        }))
    ));
}

/// Their decoder stops reading when the variant's fields are done and
/// ignores whatever else `TotalSize` covers: junk inside a declared size.
#[test]
fn theirs_accept_ours_reject_junk_inside_total_size_because_it_would_not_re_encode() {
    let msg = theirs::SyncMessage::DataRequestRejected(theirs::DataRequestRejected {
        id: TTree::new([1; 32]),
    });
    let mut wire = msg.encode();
    wire.extend_from_slice(b"junk");
    fix_total_size(&mut wire);
    let decoded = theirs::SyncMessage::try_decode(&wire).unwrap();
    assert_ne!(
        decoded.encode(),
        wire,
        "theirs re-encodes to different bytes"
    );
    assert!(matches!(
        decode_ours(&wire),
        Err(MessageError::Read(ReadError::TrailingBytes {
            count: 4,
            ..
        }))
    ));
}

/// Duplicate or unsorted request fingerprints collapse into their
/// `BTreeSet`: accepted, then re-encoded differently.
#[test]
fn theirs_accept_ours_reject_unsorted_request_fingerprints_because_they_collapse() {
    let req = SyncMessage::BatchSyncRequest(ours::BatchSyncRequest::new(
        ours::SedimentreeId::new([1; 32]),
        peer_of(0),
        1,
        false,
        ours::FingerprintSeed::new(3, 4),
        [1, 2].map(ours::Fingerprint::from_u64),
        [],
    ));
    let mut wire = req.encode().unwrap().to_vec();
    let at = 9 + 32 + 32 + 8 + 1 + 16 + 4;
    let (first, second) = (wire[at..at + 8].to_vec(), wire[at + 8..at + 16].to_vec());
    wire[at..at + 8].copy_from_slice(&second);
    wire[at + 8..at + 16].copy_from_slice(&first);
    let decoded = theirs::SyncMessage::try_decode(&wire).unwrap();
    assert_ne!(decoded.encode(), wire);
    assert!(matches!(
        decode_ours(&wire),
        Err(MessageError::Read(ReadError::NotAscending {
            field: "commit_fingerprints",
            ..
        }))
    ));
}

/// Their diff keeps fingerprints as a `Vec` in wire order, so any order is
/// accepted; a diff's requested fingerprints are a set, so we require the
/// one canonical order. (Interop note: a Subduction responder that sends
/// them unsorted is refused by us.)
#[test]
fn theirs_accept_ours_reject_unsorted_diff_fingerprints_because_they_are_a_set() {
    let resp = theirs::SyncMessage::BatchSyncResponse(theirs::BatchSyncResponse {
        req_id: theirs::RequestId {
            requestor: TPeer::new([1; 32]),
            nonce: 2,
        },
        id: TTree::new([3; 32]),
        result: theirs::SyncResult::Ok(theirs::SyncDiff {
            missing_commits: vec![],
            missing_fragments: vec![],
            requesting: theirs::RequestedData {
                commit_fingerprints: vec![TFp::from_u64(9), TFp::from_u64(1)],
                fragment_fingerprints: vec![],
            },
        }),
        responder_heads: TRemoteHeads::default(),
    });
    let wire = resp.encode();
    assert!(theirs::SyncMessage::try_decode(&wire).is_ok());
    assert!(matches!(
        decode_ours(&wire),
        Err(MessageError::Read(ReadError::NotAscending {
            field: "requested_commits",
            ..
        }))
    ));
}

/// Same for the ids of a RemoveSubscriptions.
#[test]
fn theirs_accept_ours_reject_unsorted_unsubscribe_ids_because_they_are_a_set() {
    let msg = theirs::SyncMessage::RemoveSubscriptions(theirs::RemoveSubscriptions {
        ids: vec![TTree::new([2; 32]), TTree::new([2; 32])],
    });
    let wire = msg.encode();
    assert!(theirs::SyncMessage::try_decode(&wire).is_ok());
    assert!(matches!(
        decode_ours(&wire),
        Err(MessageError::Read(ReadError::NotAscending {
            field: "ids",
            ..
        }))
    ));
}

/// Their Rejection decoder reads 9 bytes and ignores the rest.
#[test]
fn theirs_accept_ours_reject_a_rejection_with_trailing_bytes() {
    let mut wire = THandshake::Rejection(TRejection::new(
        TReason::ReplayedNonce,
        TimestampSeconds::new(5),
    ))
    .encode();
    wire.push(0xAA);
    assert!(THandshake::try_decode(&wire).is_ok());
    assert!(matches!(
        decode_ours(&wire),
        Err(MessageError::Read(ReadError::TrailingBytes {
            offset: 14,
            count: 1
        }))
    ));
}

/// Their codec has no notion of scope: a commit signed for tree A inside a
/// message for tree B decodes and its signature verifies. Ours decodes it
/// too, but `verify` refuses it (cross-document replay).
#[test]
fn theirs_accept_ours_reject_a_commit_replayed_into_another_tree() {
    let SyncMessage::LooseCommit(m) = fixed_commit_message(1, 0, 8) else {
        unreachable!()
    };
    let replay = SyncMessage::LooseCommit(ours::BlobMessage {
        id: ours::SedimentreeId::new([0xEE; 32]),
        ..m
    });
    let wire = replay.encode().unwrap();
    let theirs::SyncMessage::LooseCommit { commit, .. } =
        theirs::SyncMessage::try_decode(&wire).unwrap()
    else {
        unreachable!()
    };
    assert!(commit.try_verify().is_ok());
    let Ok(Message::Sync(SyncMessage::LooseCommit(got))) = decode_ours(&wire) else {
        panic!()
    };
    assert!(matches!(
        got.verify(),
        Err(ours::VerifyItemError::ScopeMismatch { .. })
    ));
}

/// Their encoders cast counts (`len() as u16`, `as u8`): 65 536 ids go out
/// with count 0 and 256 parents with count 0. Ours refuses to encode.
#[test]
fn theirs_truncate_counts_ours_refuse_to_encode() {
    let ids: Vec<TTree> = (0..=u16::MAX as u32)
        .map(|i| {
            let mut id = [0u8; 32];
            id[..4].copy_from_slice(&i.to_be_bytes());
            TTree::new(id)
        })
        .collect();
    let wire =
        theirs::SyncMessage::RemoveSubscriptions(theirs::RemoveSubscriptions { ids: ids.clone() })
            .encode();
    assert_eq!(&wire[9..11], &[0, 0], "their count wrapped to 0");
    let ours_msg = SyncMessage::remove_subscriptions(
        ids.iter().map(|t| ours::SedimentreeId::new(*t.as_bytes())),
    );
    assert!(matches!(
        ours_msg.encode(),
        Err(WriteError::CountTooLarge { field: "ids", .. })
    ));
    // What they sent is not what they meant, and we say so on receipt.
    assert!(matches!(
        decode_ours(&wire),
        Err(MessageError::Read(ReadError::TrailingBytes { .. }))
    ));

    let parents: BTreeSet<TCommitId> = (0..256u32)
        .map(|i| {
            let mut id = [0u8; 32];
            id[..4].copy_from_slice(&i.to_be_bytes());
            TCommitId::new(id)
        })
        .collect();
    let commit = TCommit::new(
        TTree::new([1; 32]),
        TCommitId::new([2; 32]),
        parents,
        TBlobMeta::new(&TBlob::new(vec![])),
    );
    let mut fields = Vec::new();
    commit.encode_fields(&mut fields);
    assert_eq!(fields[96], 0, "their parent count wrapped to 0");
}

/// A diff that carries one signed commit twice: theirs accepts it (and
/// would verify the same signature twice); ours refuses the repeat when
/// decoding, so verification work never exceeds the distinct items.
#[test]
fn theirs_accept_ours_reject_a_repeated_signed_item_because_each_copy_costs_a_verification() {
    let msg = fixed_commit_message(1, 1, 16);
    let SyncMessage::LooseCommit(blob_message) = &msg else {
        unreachable!()
    };
    let item = blob_message.item.clone();
    let tree = blob_message.id;
    let one = SyncMessage::BatchSyncResponse(ours::BatchSyncResponse {
        requestor: peer_of(1),
        nonce: 7,
        id: tree,
        result: ours::SyncResult::Ok(ours::SyncDiff::new(vec![item.clone()], vec![], [], [])),
        responder_heads: ours::RemoteHeads::default(),
    });
    // The constructor keeps one copy: a diff is a set of signed items.
    let twice = ours::SyncDiff::new(vec![item.clone(), item.clone()], vec![], [], []);
    assert_eq!(twice.commits().len(), 1);
    // Hand-build the wire form with the item twice: count 2, item, item.
    let wire = one.encode().unwrap().to_vec();
    let counts_at = 9 + 32 + 8 + 32 + 1;
    let item_bytes = item.encode().unwrap();
    let items_at = counts_at + 8;
    let mut doubled = wire[..items_at].to_vec();
    doubled[counts_at..counts_at + 2].copy_from_slice(&2u16.to_be_bytes());
    doubled.extend_from_slice(&item_bytes);
    doubled.extend_from_slice(&wire[items_at..]);
    fix_total_size(&mut doubled);
    let theirs_decoded = theirs::SyncMessage::try_decode(&doubled).expect("theirs accept it");
    assert_eq!(theirs_decoded.encode(), doubled);
    assert_eq!(
        decode_ours(&doubled).unwrap_err(),
        MessageError::DuplicateItem {
            field: "commits",
            index: 1,
            first: 0,
            offset: items_at + item_bytes.len(),
        }
    );
}
