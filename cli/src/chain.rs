//! The commits `bijou sync` pushes and `bijou echo` sends: a chain in one
//! tree, each the parent of the next, each with a random blob.

use bijou_frame::proto::message::{CommitId, LooseCommit, SedimentreeId, SignedItem};
use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Signed};
use rand::rngs::StdRng;
use rand::{Rng, RngCore};

use crate::AnyError;

/// A chain of commits in one tree: the next one's parent is the last one
/// made.
pub struct CommitChain {
    tree: SedimentreeId,
    parent: Option<CommitId>,
}

impl CommitChain {
    /// A chain starting in `tree` with no parent.
    pub fn new(tree: SedimentreeId) -> Self {
        Self { tree, parent: None }
    }

    /// The next commit, signed by `key`: a random head, and `blob_size`
    /// random bytes (the blob first, then the head, from `rng`).
    pub fn next_commit(
        &mut self,
        rng: &mut StdRng,
        key: &SigningKey,
        blob_size: usize,
    ) -> Result<(CommitId, SignedItem<LooseCommit>), AnyError> {
        let mut blob = vec![0u8; blob_size];
        rng.fill_bytes(&mut blob);
        let blob = Blob::new(blob);
        let head = CommitId::new(rng.random());
        let commit = LooseCommit::new(self.tree, head, self.parent, blob.meta());
        self.parent = Some(head);
        Ok((head, SignedItem::new(Signed::seal(key, &commit)?, blob)))
    }
}
