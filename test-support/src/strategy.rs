//! Proptest strategies for every sync and handshake message (the
//! `proptest` feature): ids drawn mostly from small alphabets so that
//! duplicates and near-collisions happen, blobs around the first bijou64
//! tier boundary, items signed by the small key pool of
//! [`messages::key`](crate::messages::key).

use bijou_proto::message::{
    Audience, BatchSyncRequest, BatchSyncResponse, BlobMessage, Challenge, Checkpoint, CommitId,
    DataRequestRejected, Fingerprint, FingerprintSeed, Fragment, HandshakeMessage, HeadsUpdate,
    LooseCommit, Rejection, RejectionReason, RemoteHeads, Response, SedimentreeId, SignedItem,
    SyncDiff, SyncMessage, SyncResult,
};
use bijou_signing::{Blob, PeerId, Signed};
use proptest::collection::vec;
use proptest::prelude::*;

use crate::messages::key;

/// A 32-byte id: any, or one of four repeated bytes.
pub fn id32() -> impl Strategy<Value = [u8; 32]> {
    // Mostly small alphabets so duplicates and near-collisions happen.
    prop_oneof![any::<[u8; 32]>(), (0u8..4).prop_map(|b| [b; 32])]
}

/// A commit id from [`id32`].
pub fn commit_id() -> impl Strategy<Value = CommitId> {
    id32().prop_map(CommitId::new)
}

/// A tree id from [`id32`].
pub fn tree_id() -> impl Strategy<Value = SedimentreeId> {
    id32().prop_map(SedimentreeId::new)
}

/// Blob bytes: under 48, or 240 to 299 (around the first bijou64 tier
/// boundary of the blob length).
pub fn blob() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![vec(any::<u8>(), 0..48), vec(any::<u8>(), 240..300)]
}

/// A commit in `tree` (up to 3 parents) and its blob.
pub fn loose_commit(tree: SedimentreeId) -> impl Strategy<Value = (LooseCommit, Vec<u8>)> {
    (commit_id(), vec(commit_id(), 0..4), blob()).prop_map(move |(head, parents, blob)| {
        let meta = Blob::from(blob.clone()).meta();
        (LooseCommit::new(tree, head, parents, meta), blob)
    })
}

/// A fragment in `tree` (up to 2 boundary ids, 3 checkpoints) and its blob.
pub fn fragment(tree: SedimentreeId) -> impl Strategy<Value = (Fragment, Vec<u8>)> {
    (
        commit_id(),
        vec(commit_id(), 0..3),
        vec(any::<[u8; 12]>(), 0..4),
        blob(),
    )
        .prop_map(move |(head, boundary, checkpoints, blob)| {
            let meta = Blob::from(blob.clone()).meta();
            let cps = checkpoints.into_iter().map(Checkpoint::from_bytes);
            (Fragment::new(tree, head, boundary, cps, meta), blob)
        })
}

/// A [`loose_commit`] signed by one of three keys, with its blob.
pub fn commit_item(tree: SedimentreeId) -> impl Strategy<Value = SignedItem<LooseCommit>> {
    (loose_commit(tree), 0u8..3).prop_map(|((c, blob), k)| {
        SignedItem::new(Signed::seal(&key(k), &c).expect("seal"), Blob::from(blob))
    })
}

/// A [`fragment`] signed by one of three keys, with its blob.
pub fn fragment_item(tree: SedimentreeId) -> impl Strategy<Value = SignedItem<Fragment>> {
    (fragment(tree), 0u8..3).prop_map(|((f, blob), k)| {
        SignedItem::new(Signed::seal(&key(k), &f).expect("seal"), Blob::from(blob))
    })
}

/// Remote heads: any counter, up to 3 heads.
pub fn remote_heads() -> impl Strategy<Value = RemoteHeads> {
    (any::<u64>(), vec(commit_id(), 0..4)).prop_map(|(c, h)| RemoteHeads::new(c, h))
}

/// Up to 4 fingerprints, often small values (duplicates happen).
pub fn fingerprints() -> impl Strategy<Value = Vec<Fingerprint>> {
    vec(
        prop_oneof![any::<u64>(), 0u64..4].prop_map(Fingerprint::from_u64),
        0..5,
    )
}

/// Any peer id.
pub fn peer() -> impl Strategy<Value = PeerId> {
    any::<[u8; 32]>().prop_map(PeerId::from_bytes)
}

/// A diff in `tree`: up to 2 commits, 1 fragment, and requested
/// fingerprints.
pub fn sync_diff(tree: SedimentreeId) -> impl Strategy<Value = SyncDiff> {
    (
        vec(commit_item(tree), 0..3),
        vec(fragment_item(tree), 0..2),
        fingerprints(),
        fingerprints(),
    )
        .prop_map(|(c, f, rc, rf)| SyncDiff::new(c, f, rc, rf))
}

/// Any sync message (every tag; responses `Ok` half of the time).
pub fn sync_message() -> impl Strategy<Value = SyncMessage> {
    prop_oneof![
        tree_id().prop_flat_map(|tree| (remote_heads(), commit_item(tree)).prop_map(
            move |(sender_heads, item)| SyncMessage::LooseCommit(BlobMessage {
                id: tree,
                sender_heads,
                item
            })
        )),
        tree_id().prop_flat_map(|tree| (remote_heads(), fragment_item(tree)).prop_map(
            move |(sender_heads, item)| SyncMessage::Fragment(BlobMessage {
                id: tree,
                sender_heads,
                item
            })
        )),
        (
            tree_id(),
            peer(),
            any::<u64>(),
            any::<bool>(),
            any::<(u64, u64)>(),
            fingerprints(),
            fingerprints()
        )
            .prop_map(
                |(id, p, n, s, (k0, k1), c, f)| SyncMessage::BatchSyncRequest(
                    BatchSyncRequest::new(id, p, n, s, FingerprintSeed::new(k0, k1), c, f)
                )
            ),
        tree_id().prop_flat_map(|tree| (
            peer(),
            any::<u64>(),
            prop_oneof![
                2 => sync_diff(tree).prop_map(SyncResult::Ok),
                1 => Just(SyncResult::NotFound),
                1 => Just(SyncResult::Unauthorized),
            ],
            remote_heads()
        )
            .prop_map(move |(requestor, nonce, result, responder_heads)| {
                SyncMessage::BatchSyncResponse(BatchSyncResponse {
                    requestor,
                    nonce,
                    id: tree,
                    result,
                    responder_heads,
                })
            })),
        vec(tree_id(), 0..4).prop_map(SyncMessage::remove_subscriptions),
        tree_id().prop_map(|id| SyncMessage::DataRequestRejected(DataRequestRejected { id })),
        (tree_id(), remote_heads())
            .prop_map(|(id, heads)| SyncMessage::HeadsUpdate(HeadsUpdate { id, heads })),
    ]
}

/// Any rejection reason.
pub fn reason() -> impl Strategy<Value = RejectionReason> {
    prop_oneof![
        Just(RejectionReason::ClockDrift),
        Just(RejectionReason::InvalidAudience),
        Just(RejectionReason::ReplayedNonce),
        Just(RejectionReason::InvalidSignature),
    ]
}

/// A challenge to a known peer or a discovery audience.
pub fn challenge() -> impl Strategy<Value = Challenge> {
    (
        any::<bool>(),
        any::<[u8; 32]>(),
        any::<u64>(),
        any::<[u8; 16]>(),
    )
        .prop_map(|(known, a, ts, nonce)| {
            let audience = if known {
                Audience::Known(PeerId::from_bytes(a))
            } else {
                Audience::Discover(a)
            };
            Challenge::new(audience, ts, nonce)
        })
}

/// Any handshake message: a signed challenge or response, or a rejection.
pub fn handshake_message() -> impl Strategy<Value = HandshakeMessage> {
    prop_oneof![
        (challenge(), 0u8..3).prop_map(|(c, k)| HandshakeMessage::Challenge(
            Signed::seal(&key(k), &c).expect("seal")
        )),
        (challenge(), any::<u64>(), 0u8..3).prop_map(|(c, ts, k)| HandshakeMessage::Response(
            Signed::seal(&key(k), &Response::for_challenge(&c, ts).unwrap()).unwrap()
        )),
        (reason(), any::<u64>()).prop_map(|(reason, timestamp)| HandshakeMessage::Rejection(
            Rejection { reason, timestamp }
        )),
    ]
}
