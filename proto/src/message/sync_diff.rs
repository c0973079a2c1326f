use alloc::collections::btree_map::Entry;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use bijou_codec::{count, Reader, Wire, WriteError, Writer};

use bytes::{BufMut, Bytes};

use super::{
    fields::{read_sorted, sorted_unique, write_fingerprints},
    Fingerprint, Fragment, LooseCommit, MessageError, SignedItem,
};

/// Smallest `Signed<LooseCommit>` plus a one-byte blob length.
const MIN_COMMIT_ITEM: usize = 4 + 32 + 32 * 3 + 1 + 1 + 64 + 1;
/// Smallest `Signed<Fragment>` plus a one-byte blob length.
const MIN_FRAGMENT_ITEM: usize = 4 + 32 + 32 * 3 + 1 + 2 + 1 + 64 + 1;

/// Commits and fragments the requester lacks, and fingerprints of what the
/// responder wants in return (below).
///
/// ```text
///   +-----------+-----------+-----------+-----------+
///   | C u16     | F u16     | RC u16    | RF u16    |   four counts
///   +-----------+-----------+-----------+-----------+
///   | C  x (Signed<LooseCommit> · BlobLen bijou64 · Blob)   |
///   | F  x (Signed<Fragment>    · BlobLen bijou64 · Blob)   |
///   | RC x Fingerprint 8 (requested commits, ascending)     |
///   | RF x Fingerprint 8 (requested fragments, ascending)   |
///   +-------------------------------------------------------+
/// ```
///
/// The signed items keep their order (each is one exact byte string), and
/// each signed payload appears at most once: a diff is a set, and every copy
/// would cost the receiver one more signature verification for one
/// signature's worth of sender effort. The decoder rejects a repeat
/// ([`MessageError::DuplicateItem`]) and [`SyncDiff::new`] drops repeats,
/// so verifying a diff costs at most one `verify_strict` per distinct item.
/// The fingerprint lists are sets too and travel strictly ascending.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncDiff {
    commits: Vec<SignedItem<LooseCommit>>,
    fragments: Vec<SignedItem<Fragment>>,
    requested_commits: Vec<Fingerprint>,
    requested_fragments: Vec<Fingerprint>,
}

impl SyncDiff {
    /// A diff; a signed payload given twice is kept once (the first time),
    /// and the fingerprint lists are sorted and deduplicated.
    #[must_use]
    pub fn new(
        commits: Vec<SignedItem<LooseCommit>>,
        fragments: Vec<SignedItem<Fragment>>,
        requested_commits: impl IntoIterator<Item = Fingerprint>,
        requested_fragments: impl IntoIterator<Item = Fingerprint>,
    ) -> Self {
        Self {
            commits: first_of_each(commits),
            fragments: first_of_each(fragments),
            requested_commits: sorted_unique(requested_commits),
            requested_fragments: sorted_unique(requested_fragments),
        }
    }

    /// Commits the requester is missing, with their blobs.
    #[must_use]
    pub fn commits(&self) -> &[SignedItem<LooseCommit>] {
        &self.commits
    }

    /// Fragments the requester is missing, with their blobs.
    #[must_use]
    pub fn fragments(&self) -> &[SignedItem<Fragment>] {
        &self.fragments
    }

    /// Fingerprints of commits the responder asks for, ascending.
    #[must_use]
    pub fn requested_commits(&self) -> &[Fingerprint] {
        &self.requested_commits
    }

    /// Fingerprints of fragments the responder asks for, ascending.
    #[must_use]
    pub fn requested_fragments(&self) -> &[Fingerprint] {
        &self.requested_fragments
    }
}

impl Wire for SyncDiff {
    type Error = MessageError;

    /// The four counts checked, then the items' lengths added (no walk of
    /// their fields).
    fn wire_len(&self) -> Result<usize, WriteError> {
        count::u16("commits", self.commits.len())?;
        count::u16("fragments", self.fragments.len())?;
        count::u16("requested_commits", self.requested_commits.len())?;
        count::u16("requested_fragments", self.requested_fragments.len())?;
        let mut len = 4 * 2 + 8 * (self.requested_commits.len() + self.requested_fragments.len());
        for commit in &self.commits {
            len = len.saturating_add(commit.wire_len()?);
        }
        for fragment in &self.fragments {
            len = len.saturating_add(fragment.wire_len()?);
        }
        Ok(len)
    }

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.count_u16("commits", self.commits.len())?;
        w.count_u16("fragments", self.fragments.len())?;
        w.count_u16("requested_commits", self.requested_commits.len())?;
        w.count_u16("requested_fragments", self.requested_fragments.len())?;
        self.commits.iter().try_for_each(|c| c.write_to(w))?;
        self.fragments.iter().try_for_each(|f| f.write_to(w))?;
        write_fingerprints(w, &self.requested_commits);
        write_fingerprints(w, &self.requested_fragments);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        let commit_count = r.u16("commit_count")?;
        let fragment_count = r.u16("fragment_count")?;
        let requested_commit_count = r.u16("requested_commit_count")?;
        let requested_fragment_count = r.u16("requested_fragment_count")?;
        let commits = read_items(r, "commits", commit_count, MIN_COMMIT_ITEM)?;
        let fragments = read_items(r, "fragments", fragment_count, MIN_FRAGMENT_ITEM)?;
        let requested_commits =
            read_sorted::<8, _>(r, "requested_commits", requested_commit_count.into())?;
        let requested_fragments =
            read_sorted::<8, _>(r, "requested_fragments", requested_fragment_count.into())?;
        Ok(Self {
            commits,
            fragments,
            requested_commits,
            requested_fragments,
        })
    }
}

/// Reads `count` signed items, refusing a signed payload seen before in
/// the list. Each item needs at least `min_len` bytes, so the capacity is
/// bounded by what the remaining input could hold.
fn read_items<T: bijou_signing::Payload>(
    r: &mut Reader<'_>,
    field: &'static str,
    count: u16,
    min_len: usize,
) -> Result<Vec<SignedItem<T>>, MessageError> {
    let capacity = usize::from(count).min(r.remaining() / min_len);
    let mut items = Vec::with_capacity(capacity);
    // Ordered, not hashed: no key to choose, and a peer cannot aim
    // collisions at it (O(log n) whatever the items).
    let mut seen: BTreeMap<Bytes, usize> = BTreeMap::new();
    for index in 0..usize::from(count) {
        let offset = r.offset();
        let item = SignedItem::<T>::read_from(r)?;
        // One lookup that also inserts.
        match seen.entry(item.signed().to_bytes()) {
            Entry::Occupied(first) => {
                return Err(MessageError::DuplicateItem {
                    field,
                    index,
                    first: *first.get(),
                    offset,
                })
            }
            Entry::Vacant(slot) => {
                slot.insert(index);
            }
        }
        items.push(item);
    }
    Ok(items)
}

/// Keeps the first item of each distinct signed payload, in order.
fn first_of_each<T>(items: Vec<SignedItem<T>>) -> Vec<SignedItem<T>> {
    let mut seen = BTreeSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(item.signed().to_bytes()))
        .collect()
}

#[cfg(test)]
mod tests {
    use bijou_codec::Wire;
    use bijou_signing::{ed25519_dalek::SigningKey, Blob, Signed};

    use super::*;
    use crate::message::{
        BatchSyncResponse, CommitId, RemoteHeads, SedimentreeId, SyncMessage, SyncResult,
    };
    use bijou_signing::Identity;

    fn item(head: u8) -> SignedItem<LooseCommit> {
        let blob = Blob::from_static(b"blob");
        let commit = LooseCommit::new(
            SedimentreeId::new([1; 32]),
            CommitId::new([head; 32]),
            [],
            blob.meta(),
        );
        SignedItem::new(
            Signed::seal(&SigningKey::from_bytes(&[2; 32]), &commit).unwrap(),
            blob,
        )
    }

    /// The wire form of a diff of one commit per head, with item `from`
    /// copied over item `to`, and the offset item `to` starts at. The items
    /// have equal lengths and follow the header's four `u16` counts.
    fn with_item_repeated(heads: &[u8], from: usize, to: usize) -> (Bytes, usize) {
        const HEADER: usize = 4 * 2;
        let items = heads.iter().map(|&head| item(head)).collect();
        let wire = SyncDiff::new(items, vec![], [], []).encode().unwrap();
        let len = item(heads[0]).encode().unwrap().len();
        let (at, source) = (HEADER + to * len, HEADER + from * len);
        let mut patched = wire.to_vec();
        patched.copy_within(source..source + len, at);
        (patched.into(), at)
    }

    /// Each of the four counts is checked by the length pass, so nothing
    /// is written for a diff that cannot be encoded.
    #[test]
    fn a_count_over_its_field_is_refused_before_anything_is_written() {
        let over = usize::from(u16::MAX) + 1;
        let fingerprints: Vec<Fingerprint> = (0..over as u64).map(Fingerprint::from_u64).collect();
        let empty = SyncDiff::new(vec![], vec![], [], []);
        let fragment = |i: u8| {
            let blob = Blob::from_static(b"blob");
            let payload = Fragment::new(
                SedimentreeId::new([1; 32]),
                CommitId::new([i; 32]),
                [],
                [],
                blob.meta(),
            );
            SignedItem::new(
                Signed::seal(&SigningKey::from_bytes(&[2; 32]), &payload).unwrap(),
                blob,
            )
        };
        let cases = [
            (
                "commits",
                SyncDiff {
                    commits: vec![item(1); over],
                    ..empty.clone()
                },
            ),
            (
                "fragments",
                SyncDiff {
                    fragments: vec![fragment(1); over],
                    ..empty.clone()
                },
            ),
            (
                "requested_commits",
                SyncDiff {
                    requested_commits: fingerprints.clone(),
                    ..empty.clone()
                },
            ),
            (
                "requested_fragments",
                SyncDiff {
                    requested_fragments: fingerprints,
                    ..empty.clone()
                },
            ),
        ];
        for (field, diff) in cases {
            let refused = Err(WriteError::CountTooLarge {
                field,
                len: over,
                max: u16::MAX.into(),
            });
            assert_eq!(diff.wire_len(), refused);
            // In a message, whose fields before the diff would otherwise
            // be written first.
            let message = SyncMessage::BatchSyncResponse(BatchSyncResponse {
                requestor: SigningKey::from_bytes(&[2; 32]).peer_id(),
                nonce: 7,
                id: SedimentreeId::new([1; 32]),
                result: SyncResult::Ok(diff),
                responder_heads: RemoteHeads::default(),
            });
            let mut out = bytes::BytesMut::new();
            assert_eq!(message.encode_into(&mut out), refused);
            assert!(out.is_empty(), "{field}: nothing written");
        }
    }

    #[test]
    fn repeats_are_dropped_by_the_constructor_and_refused_by_the_decoder() {
        let diff = SyncDiff::new(vec![item(1), item(2), item(1)], vec![], [], []);
        assert_eq!(diff.commits(), &[item(1), item(2)]);
        // The wire form of [item(1), item(2)] patched into [item(1), item(1)].
        let (twice, offset) = with_item_repeated(&[1, 2], 0, 1);
        assert_eq!(
            SyncDiff::decode(twice),
            Err(MessageError::DuplicateItem {
                field: "commits",
                index: 1,
                first: 0,
                offset,
            })
        );
    }

    #[test]
    fn a_repeat_names_where_its_payload_first_appeared() {
        // [item(1), item(2), item(3)] patched into [item(1), item(2),
        // item(1)]: the error points at index 0, not at the previous item.
        let (repeat, offset) = with_item_repeated(&[1, 2, 3], 0, 2);
        assert_eq!(
            SyncDiff::decode(repeat.clone()),
            Err(MessageError::DuplicateItem {
                field: "commits",
                index: 2,
                first: 0,
                offset,
            })
        );
        let message = SyncDiff::decode(repeat).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!(
                "commits item 2 at offset {offset} repeats the signed payload of item 0; "
            )),
            "{message}"
        );
        assert!(message.contains("drop the repeat"), "{message}");
    }
}
