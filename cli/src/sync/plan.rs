//! The commits `bijou sync` pushes, made and signed before the clock
//! starts: a chain in one tree, each with a random blob.

use bijou_frame::codec::Wire;
use bijou_frame::proto::message::{
    BlobMessage, CommitId, Message, RemoteHeads, SedimentreeId, SyncMessage,
};
use bijou_frame::signing::ed25519_dalek::SigningKey;
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::chain::CommitChain;
use crate::AnyError;

/// The commits to push, made and signed before the clock starts.
pub(crate) struct Plan {
    pub(crate) tree: SedimentreeId,
    /// Where the commit ids and blobs came from.
    pub(crate) seed: u64,
    pub(crate) commits: Vec<Planned>,
}

/// One commit of the plan.
pub(crate) struct Planned {
    pub(crate) head: CommitId,
    /// The LooseCommit message.
    pub(crate) message: SyncMessage,
    /// Its encoded length.
    pub(crate) len: usize,
    /// The signed commit's bytes.
    pub(crate) signed: Bytes,
    pub(crate) blob: Bytes,
}

impl Plan {
    /// `count` chained commits into `tree`, signed by `key`, each with
    /// `blob_size` random bytes from `seed`.
    pub(crate) fn new(
        key: &SigningKey,
        tree: SedimentreeId,
        seed: u64,
        count: usize,
        blob_size: usize,
    ) -> Result<Self, AnyError> {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut chain = CommitChain::new(tree);
        let mut commits = Vec::with_capacity(count);
        for counter in 1..=count as u64 {
            let (head, item) = chain.next_commit(&mut rng, key, blob_size)?;
            let (signed, blob) = (item.signed().clone(), item.blob().clone());
            let msg = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
                id: tree,
                sender_heads: RemoteHeads::new(counter, [head]),
                item,
            }));
            let len = msg.wire_len()?;
            let Message::Sync(message) = msg else {
                return Err("a LooseCommit is a sync message".into());
            };
            commits.push(Planned {
                head,
                message,
                len,
                signed: signed.into_bytes(),
                blob: blob.into_bytes(),
            });
        }
        Ok(Self {
            tree,
            seed,
            commits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keygen::new_key;
    use crate::serve::{Store, Stored};
    use bijou_frame::proto::keyhive::DocumentKey;
    use bijou_frame::proto::message::{BatchSyncRequest, Fingerprint, FingerprintSeed};
    use bijou_frame::signing::Identity;

    #[test]
    fn heads_follow_the_chain_and_duplicates_are_not_new() {
        let key = new_key().expect("key");
        let tree = DocumentKey::from_seed([4; 32]).tree_id();
        let plan = Plan::new(&key, tree, 1, 3, 8).expect("plan");
        let mut store = Store::default();
        let decode = |p: &Planned| {
            let SyncMessage::LooseCommit(m) = p.message.clone() else {
                panic!("a LooseCommit")
            };
            m
        };
        let mut parent: Option<CommitId> = None;
        for p in &plan.commits {
            let m = decode(p);
            let parents: Vec<CommitId> = parent.into_iter().collect();
            let stored = store.insert(plan.tree, p.head, &parents, m.item);
            assert!(matches!(stored, Stored::New { ref heads, .. } if heads == &[p.head]));
            parent = Some(p.head);
        }
        let again = decode(&plan.commits[0]);
        assert!(matches!(
            store.insert(plan.tree, plan.commits[0].head, &[], again.item),
            Stored::Duplicate
        ));
        // A request listing the first commit's fingerprint gets the other two.
        let seed = FingerprintSeed::new(1, 2);
        let listed = [
            seed.fingerprint(&plan.commits[0].head),
            Fingerprint::from_u64(9),
        ];
        let request = BatchSyncRequest::new(plan.tree, key.peer_id(), 5, false, seed, listed, []);
        let (missing, requested, heads) = store.diff(&request);
        assert_eq!(missing.len(), 2);
        assert_eq!(requested, vec![Fingerprint::from_u64(9)]);
        assert_eq!(heads, vec![plan.commits[2].head]);
    }
}
