//! Shared generators and helpers for the `messages_*` integration tests.
#![allow(dead_code)]

use bijou_proto::message::{
    Audience, BatchSyncRequest, BatchSyncResponse, BlobMessage, Challenge, Checkpoint, CommitId,
    DataRequestRejected, Fingerprint, FingerprintSeed, Fragment, HandshakeMessage, HeadsUpdate,
    LooseCommit, Rejection, RejectionReason, RemoteHeads, Response, SedimentreeId, SignedItem,
    SyncDiff, SyncMessage, SyncResult,
};
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity as _, PeerId, Signed};
use proptest::collection::vec;
use proptest::prelude::*;

/// A deterministic key from a small pool (sealing is the slow part).
pub fn key(i: u8) -> SigningKey {
    SigningKey::from_bytes(&[i.wrapping_mul(7).wrapping_add(1); 32])
}

pub fn id32() -> impl Strategy<Value = [u8; 32]> {
    // Mostly small alphabets so duplicates and near-collisions happen.
    prop_oneof![any::<[u8; 32]>(), (0u8..4).prop_map(|b| [b; 32])]
}

pub fn commit_id() -> impl Strategy<Value = CommitId> {
    id32().prop_map(CommitId::new)
}

pub fn tree_id() -> impl Strategy<Value = SedimentreeId> {
    id32().prop_map(SedimentreeId::new)
}

pub fn blob() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![vec(any::<u8>(), 0..48), vec(any::<u8>(), 240..300)]
}

pub fn loose_commit(tree: SedimentreeId) -> impl Strategy<Value = (LooseCommit, Vec<u8>)> {
    (commit_id(), vec(commit_id(), 0..4), blob()).prop_map(move |(head, parents, blob)| {
        let meta = Blob::from(blob.clone()).meta();
        (LooseCommit::new(tree, head, parents, meta), blob)
    })
}

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

pub fn commit_item(tree: SedimentreeId) -> impl Strategy<Value = SignedItem<LooseCommit>> {
    (loose_commit(tree), 0u8..3).prop_map(|((c, blob), k)| {
        SignedItem::new(Signed::seal(&key(k), &c).unwrap(), Blob::from(blob))
    })
}

pub fn fragment_item(tree: SedimentreeId) -> impl Strategy<Value = SignedItem<Fragment>> {
    (fragment(tree), 0u8..3).prop_map(|((f, blob), k)| {
        SignedItem::new(Signed::seal(&key(k), &f).unwrap(), Blob::from(blob))
    })
}

pub fn remote_heads() -> impl Strategy<Value = RemoteHeads> {
    (any::<u64>(), vec(commit_id(), 0..4)).prop_map(|(c, h)| RemoteHeads::new(c, h))
}

pub fn fingerprints() -> impl Strategy<Value = Vec<Fingerprint>> {
    vec(
        prop_oneof![any::<u64>(), 0u64..4].prop_map(Fingerprint::from_u64),
        0..5,
    )
}

pub fn peer() -> impl Strategy<Value = PeerId> {
    any::<[u8; 32]>().prop_map(PeerId::from_bytes)
}

pub fn sync_diff(tree: SedimentreeId) -> impl Strategy<Value = SyncDiff> {
    (
        vec(commit_item(tree), 0..3),
        vec(fragment_item(tree), 0..2),
        fingerprints(),
        fingerprints(),
    )
        .prop_map(|(c, f, rc, rf)| SyncDiff::new(c, f, rc, rf))
}

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

pub fn reason() -> impl Strategy<Value = RejectionReason> {
    prop_oneof![
        Just(RejectionReason::ClockDrift),
        Just(RejectionReason::InvalidAudience),
        Just(RejectionReason::ReplayedNonce),
        Just(RejectionReason::InvalidSignature),
    ]
}

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

pub fn handshake_message() -> impl Strategy<Value = HandshakeMessage> {
    prop_oneof![
        (challenge(), 0u8..3)
            .prop_map(|(c, k)| HandshakeMessage::Challenge(Signed::seal(&key(k), &c).unwrap())),
        (challenge(), any::<u64>(), 0u8..3).prop_map(|(c, ts, k)| HandshakeMessage::Response(
            Signed::seal(&key(k), &Response::for_challenge(&c, ts).unwrap()).unwrap()
        )),
        (reason(), any::<u64>()).prop_map(|(reason, timestamp)| HandshakeMessage::Rejection(
            Rejection { reason, timestamp }
        )),
    ]
}

/// A fixed LooseCommit message with `parents` parents, `heads` heads and a
/// blob of `blob_len` bytes; signed by `key(0)`.
pub fn fixed_commit_message(parents: usize, heads: usize, blob_len: usize) -> SyncMessage {
    let tree = SedimentreeId::new([0x11; 32]);
    let blob = vec![0xB1; blob_len];
    let commit = LooseCommit::new(
        tree,
        CommitId::new([0x22; 32]),
        (0..parents).map(|i| CommitId::new([i as u8 + 0x30; 32])),
        Blob::from(blob.clone()).meta(),
    );
    SyncMessage::LooseCommit(BlobMessage {
        id: tree,
        sender_heads: RemoteHeads::new(9, (0..heads).map(|i| CommitId::new([i as u8 + 0x40; 32]))),
        item: SignedItem::new(Signed::seal(&key(0), &commit).unwrap(), Blob::from(blob)),
    })
}

/// Offsets in a LooseCommit/Fragment message: where the sender heads end
/// (the signed item starts). Header 9 + tree 32 + counter 8 + count 4 + n*32.
pub fn signed_item_offset(heads: usize) -> usize {
    9 + 32 + 8 + 4 + heads * 32
}

/// Sets the TotalSize field to the buffer's length.
pub fn fix_total_size(bytes: &mut [u8]) {
    let len = u32::try_from(bytes.len()).unwrap();
    bytes[4..8].copy_from_slice(&len.to_be_bytes());
}

/// The peer id of `key(i)`.
pub fn peer_of(i: u8) -> PeerId {
    key(i).peer_id()
}

/// An ephemeral control message written by hand, for the `ephemeral_*`
/// tests: `SUE\0 · tag · count · topics`, with the topics in the order
/// given (duplicates and all) and the count given separately, so that a test
/// can also state one that does not match.
pub fn ephemeral_control_wire(tag: u8, count: u16, topics: &[[u8; 32]]) -> Vec<u8> {
    let mut wire = bijou_proto::message::EPHEMERAL_SCHEMA.to_vec();
    wire.push(tag);
    wire.extend_from_slice(&count.to_be_bytes());
    for topic in topics {
        wire.extend_from_slice(topic);
    }
    wire
}

/// [`ephemeral_control_wire`] with the true count.
pub fn ephemeral_control(tag: u8, topics: &[[u8; 32]]) -> Vec<u8> {
    let count = u16::try_from(topics.len()).expect("at most 65,535 topics");
    ephemeral_control_wire(tag, count, topics)
}
