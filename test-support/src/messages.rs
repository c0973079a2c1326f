//! Fixed messages and keys: deterministic inputs for tests and benchmarks
//! that need one message of a known shape rather than many random ones
//! (those are in `strategy`, behind the `proptest` feature).
//!
//! - [`key`]: the small key pool the message tests sign with;
//! - [`fixed_commit_message`] and [`signed_item_offset`]: a LooseCommit
//!   message of a given shape, and where its signed item starts;
//! - [`chain_commit`] and [`frame`]: the `n`th commit of an honest chain,
//!   and its frame bytes (the echo tests and benchmarks);
//! - [`batch_response`]: a `BatchSyncResponse` carrying many commits from
//!   many signers (the message and session benchmarks);
//! - [`ephemeral_control_wire`]: `SUE\0` control messages written by hand;
//! - [`fix_total_size`]: a SUM message's `TotalSize` set to its length,
//!   after a test or a mutator changed its length.

use bijou_codec::Wire;
use bijou_proto::message::{
    BatchSyncResponse, BlobMessage, CommitId, LooseCommit, Message, RemoteHeads, SedimentreeId,
    SignedItem, SyncDiff, SyncMessage, SyncResult,
};
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity as _, PeerId, Signed};
use bytes::Bytes;

/// A deterministic key from a small pool (sealing is the slow part).
pub fn key(i: u8) -> SigningKey {
    SigningKey::from_bytes(&[i.wrapping_mul(7).wrapping_add(1); 32])
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
        item: SignedItem::new(
            Signed::seal(&key(0), &commit).expect("seal"),
            Blob::from(blob),
        ),
    })
}

/// Offsets in a LooseCommit/Fragment message: where the sender heads end
/// (the signed item starts). Header 9 + tree 32 + counter 8 + count 4 + n*32.
pub fn signed_item_offset(heads: usize) -> usize {
    9 + 32 + 8 + 4 + heads * 32
}

/// Sets a SUM or SUK message's `TotalSize` to its length (`u32::MAX` if
/// it is longer). Anything that does not start with `SUM\0` or `SUK\0` is
/// left alone, so a mutator can call it on whatever it made.
pub fn fix_total_size(bytes: &mut [u8]) {
    if bytes.len() >= 8 && (bytes.starts_with(b"SUM\0") || bytes.starts_with(b"SUK\0")) {
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        bytes[4..8].copy_from_slice(&len.to_be_bytes());
    }
}

/// The `n`th honest commit message of a chain in `tree`, signed by `key`,
/// with a `blob_len`-byte blob derived from `n`: its head is BLAKE3 of `n`
/// (big-endian), its parent that of `n - 1`, and its sender heads are
/// `(n, [head])`.
pub fn chain_commit(key: &SigningKey, tree: SedimentreeId, n: u64, blob_len: usize) -> SyncMessage {
    let blob: Vec<u8> = (0..blob_len)
        .map(|i| (n as u8).wrapping_mul(31).wrapping_add(i as u8))
        .collect();
    let blob = Blob::new(blob);
    let head = CommitId::new(*blake3::hash(&n.to_be_bytes()).as_bytes());
    let parents = n
        .checked_sub(1)
        .map(|p| CommitId::new(*blake3::hash(&p.to_be_bytes()).as_bytes()));
    let commit = LooseCommit::new(tree, head, parents, blob.meta());
    let item = SignedItem::new(Signed::seal(key, &commit).expect("seal"), blob);
    SyncMessage::LooseCommit(BlobMessage {
        id: tree,
        sender_heads: RemoteHeads::new(n, [head]),
        item,
    })
}

/// Commit `i` of [`batch_response`]: head `i` (big-endian, zero-padded),
/// no parents, a 64-byte blob made of `i`, signed by one of 251 keys.
pub fn batch_commit(tree: SedimentreeId, i: u32) -> SignedItem<LooseCommit> {
    let blob = Blob::from(i.to_be_bytes().repeat(16));
    let mut head = [0u8; 32];
    head[..4].copy_from_slice(&i.to_be_bytes());
    let commit = LooseCommit::new(tree, CommitId::new(head), [], blob.meta());
    // Many signers, as a real response has.
    let key = SigningKey::from_bytes(&[(i % 251) as u8 + 1; 32]);
    SignedItem::new(Signed::seal(&key, &commit).expect("seal"), blob)
}

/// A `BatchSyncResponse` for `tree` carrying `commits` commits made by
/// [`batch_commit`], no fragments, and default responder heads.
pub fn batch_response(tree: SedimentreeId, commits: u32) -> SyncMessage {
    SyncMessage::BatchSyncResponse(BatchSyncResponse {
        requestor: PeerId::from_bytes([5; 32]),
        nonce: 1,
        id: tree,
        result: SyncResult::Ok(SyncDiff::new(
            (0..commits).map(|i| batch_commit(tree, i)).collect(),
            vec![],
            [],
            [],
        )),
        responder_heads: RemoteHeads::default(),
    })
}

/// A sync message's frame bytes (the message, without a length prefix).
pub fn frame(msg: &SyncMessage) -> Bytes {
    Message::Sync(msg.clone()).encode().expect("encode")
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
