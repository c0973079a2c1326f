use alloc::vec::Vec;
use bijou_codec::{count, ReadError, Reader, Wire, WriteError, Writer};
use bijou_signing::{Schema, Verified, VerifiedBlob};
use bytes::BufMut;

use super::{
    Fragment, LooseCommit, MessageError, Scoped, SedimentreeId, SignedItem, VerifyItemError,
};

mod batch_sync_request;
mod batch_sync_response;
mod blob_message;
mod data_request_rejected;
mod heads_update;
mod remove_subscriptions;

pub use batch_sync_request::BatchSyncRequest;
pub use batch_sync_response::{BatchSyncResponse, SyncResult};
pub use blob_message::BlobMessage;
pub use data_request_rejected::DataRequestRejected;
pub use heads_update::HeadsUpdate;
pub use remove_subscriptions::RemoveSubscriptions;

/// The sync envelope's schema.
pub const SYNC_SCHEMA: [u8; 4] = *b"SUM\0";

/// Envelope header: schema, TotalSize, tag.
pub const SYNC_HEADER_LEN: usize = 9;

/// Tag bytes of the sync variants, and the retired ones.
pub mod tag {
    /// [`SyncMessage::LooseCommit`](super::SyncMessage::LooseCommit).
    pub const LOOSE_COMMIT: u8 = 0x00;
    /// [`SyncMessage::Fragment`](super::SyncMessage::Fragment).
    pub const FRAGMENT: u8 = 0x01;
    /// Retired; rejected when decoding.
    pub const RETIRED_02: u8 = 0x02;
    /// Retired; rejected when decoding.
    pub const RETIRED_03: u8 = 0x03;
    /// [`SyncMessage::BatchSyncRequest`](super::SyncMessage::BatchSyncRequest).
    pub const BATCH_SYNC_REQUEST: u8 = 0x04;
    /// [`SyncMessage::BatchSyncResponse`](super::SyncMessage::BatchSyncResponse).
    pub const BATCH_SYNC_RESPONSE: u8 = 0x05;
    /// [`SyncMessage::RemoveSubscriptions`](super::SyncMessage::RemoveSubscriptions).
    pub const REMOVE_SUBSCRIPTIONS: u8 = 0x06;
    /// [`SyncMessage::DataRequestRejected`](super::SyncMessage::DataRequestRejected).
    pub const DATA_REQUEST_REJECTED: u8 = 0x07;
    /// [`SyncMessage::HeadsUpdate`](super::SyncMessage::HeadsUpdate).
    pub const HEADS_UPDATE: u8 = 0x08;
}

/// Generates [`SyncMessage`], its tag, and the dispatch of the payload's
/// length, write and read to the variant's own [`Wire`] impl.
macro_rules! sync_messages {
    ($($(#[$doc:meta])* $tag:path => $variant:ident($ty:ty),)*) => {
        /// A `SUM\0` sync message: the envelope and the tag dispatch over its
        /// seven live variants.
        ///
        /// ```text
        ///   0        4               8       9
        ///   +--------+---------------+-------+--------------------------------------+
        ///   | "SUM\0"| TotalSize u32 | Tag u8| payload                              |
        ///   +--------+---------------+-------+--------------------------------------+
        ///   \__________________ TotalSize bytes, exactly ___________________________/
        ///
        ///   Tag  Variant              Payload
        ///   00   LooseCommit          TreeId 32 · RemoteHeads · Signed<LooseCommit> · BlobLen bijou64 · Blob
        ///   01   Fragment             TreeId 32 · RemoteHeads · Signed<Fragment>    · BlobLen bijou64 · Blob
        ///   02   (retired)            rejected
        ///   03   (retired)            rejected
        ///   04   BatchSyncRequest     TreeId 32 · Requestor 32 · Nonce u64 · Subscribe u8 (00|01)
        ///                             · SeedKey0 u64 · SeedKey1 u64 · CFP u16 · FFP u16
        ///                             · CFP x Fingerprint 8 · FFP x Fingerprint 8
        ///   05   BatchSyncResponse    Requestor 32 · Nonce u64 · TreeId 32 · Result u8
        ///                             (00 Ok · SyncDiff | 01 NotFound | 02 Unauthorized) · RemoteHeads
        ///   06   RemoveSubscriptions  Count u16 · Count x TreeId 32
        ///   07   DataRequestRejected  TreeId 32
        ///   08   HeadsUpdate          TreeId 32 · RemoteHeads
        ///
        ///   RemoteHeads = Counter u64 · Count u32 · Count x CommitId 32
        /// ```
        ///
        /// Decoding is strict: `TotalSize` must equal the message's length exactly
        /// (a message is always a whole frame), retired and unknown tags are
        /// errors, every array of ids or fingerprints must be strictly ascending,
        /// and the payload must end exactly where the message ends. So for every
        /// accepted `b`, `encode(decode(b)) == b`.
        ///
        /// | Tag | Type |
        /// |---|---|
        /// | 00, 01 | [`BlobMessage<LooseCommit>`], [`BlobMessage<Fragment>`] |
        /// | 04 | [`BatchSyncRequest`] |
        /// | 05 | [`BatchSyncResponse`], [`SyncResult`] |
        /// | 06 | [`RemoveSubscriptions`] |
        /// | 07 | [`DataRequestRejected`] |
        /// | 08 | [`HeadsUpdate`] |
        ///
        /// ```
        /// use bijou_frame::codec::Wire;
        /// use bijou_frame::proto::message::{CommitId, HeadsUpdate, RemoteHeads, SedimentreeId, SyncMessage};
        /// use bytes::Bytes;
        ///
        /// let msg = SyncMessage::HeadsUpdate(HeadsUpdate {
        ///     id: SedimentreeId::new([1; 32]),
        ///     heads: RemoteHeads::new(3, [CommitId::new([2; 32])]),
        /// });
        /// let wire = msg.encode()?;
        /// assert_eq!(&wire[..9], b"SUM\0\x00\x00\x00\x55\x08"); // 85 bytes, tag 08
        /// assert_eq!(SyncMessage::decode(wire.clone())?, msg);
        ///
        /// let mut longer = wire.to_vec();
        /// longer.push(0); // TotalSize no longer matches
        /// assert!(SyncMessage::decode(Bytes::from(longer)).is_err());
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum SyncMessage {
            $($(#[$doc])* $variant($ty),)*
        }

        impl SyncMessage {
            /// The wire tag of this variant.
            #[must_use]
            pub const fn tag(&self) -> u8 {
                match self {
                    $(Self::$variant(_) => $tag,)*
                }
            }

            /// The variant's name (`"HeadsUpdate"`), for errors and logs.
            #[must_use]
            pub const fn kind_name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => stringify!($variant),)*
                }
            }

            fn payload_len(&self) -> Result<usize, WriteError> {
                match self {
                    $(Self::$variant(m) => m.wire_len(),)*
                }
            }

            fn write_payload<B: BufMut + ?Sized>(
                &self,
                w: &mut Writer<'_, B>,
            ) -> Result<(), WriteError> {
                match self {
                    $(Self::$variant(m) => m.write_to(w),)*
                }
            }

            /// The payload of a live tag, or `None` for any other byte.
            fn read_payload(tag: u8, r: &mut Reader<'_>) -> Option<Result<Self, MessageError>> {
                match tag {
                    $($tag => Some(<$ty>::read_from(r).map(Self::$variant)),)*
                    _ => None,
                }
            }
        }

        $(impl From<$ty> for SyncMessage {
            fn from(msg: $ty) -> Self {
                Self::$variant(msg)
            }
        })*
    };
}

// A new variant is one file (its type, implementing `Wire`) and one line
// here; the macro generates the enum, the tag and the dispatch both ways.
sync_messages! {
    /// Tag 00: one signed commit and its blob.
    tag::LOOSE_COMMIT => LooseCommit(BlobMessage<LooseCommit>),
    /// Tag 01: one signed fragment and its blob.
    tag::FRAGMENT => Fragment(BlobMessage<Fragment>),
    /// Tag 04: a batch sync request.
    tag::BATCH_SYNC_REQUEST => BatchSyncRequest(BatchSyncRequest),
    /// Tag 05: the response to a batch sync request.
    tag::BATCH_SYNC_RESPONSE => BatchSyncResponse(BatchSyncResponse),
    /// Tag 06: stop sending updates for these documents.
    tag::REMOVE_SUBSCRIPTIONS => RemoveSubscriptions(RemoveSubscriptions),
    /// Tag 07: a data request was refused.
    tag::DATA_REQUEST_REJECTED => DataRequestRejected(DataRequestRejected),
    /// Tag 08: the sender's heads changed.
    tag::HEADS_UPDATE => HeadsUpdate(HeadsUpdate),
}

/// A signed commit or fragment that passed [`SyncMessage::verify`]: the
/// verified payload and the blob checked against it.
#[derive(Debug, Clone)]
pub enum VerifiedItem {
    /// A commit and its blob.
    Commit(Verified<LooseCommit>, VerifiedBlob),
    /// A fragment and its blob.
    Fragment(Verified<Fragment>, VerifiedBlob),
}

impl SyncMessage {
    /// A `LooseCommit` message in one call: the commit `head` of `tree`
    /// with `parents`, describing `blob`, signed by `signer`, with empty
    /// sender heads.
    ///
    /// ```
    /// use bijou_frame::proto::message::{CommitId, SedimentreeId, SyncMessage};
    /// use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob};
    ///
    /// let key = SigningKey::from_bytes(&[1; 32]);
    /// let tree = SedimentreeId::new([9; 32]);
    /// let msg = SyncMessage::loose_commit(&key, tree, CommitId::new([3; 32]), [], Blob::from_static(b"hi"))?;
    /// assert_eq!(msg.verify()?.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`SealError`](bijou_signing::SealError): the signer failed, or
    /// more than 255 parents.
    pub fn loose_commit<S: bijou_signing::Identity + ?Sized>(
        signer: &S,
        tree: SedimentreeId,
        head: super::CommitId,
        parents: impl IntoIterator<Item = super::CommitId>,
        blob: bijou_signing::Blob,
    ) -> Result<Self, bijou_signing::SealError> {
        let commit = LooseCommit::new(tree, head, parents, blob.meta());
        let signed = bijou_signing::Signed::seal(signer, &commit)?;
        Ok(Self::LooseCommit(BlobMessage {
            id: tree,
            sender_heads: super::RemoteHeads::default(),
            item: SignedItem::new(signed, blob),
        }))
    }

    /// A `RemoveSubscriptions` message with `ids` sorted and deduplicated
    /// (the only form the decoder accepts).
    #[must_use]
    pub fn remove_subscriptions(ids: impl IntoIterator<Item = SedimentreeId>) -> Self {
        Self::RemoveSubscriptions(RemoveSubscriptions::new(ids))
    }

    /// Verifies every signed item the message carries (the commit or
    /// fragment of tags 00/01, the diff items of a `BatchSyncResponse`),
    /// each bound to the message's tree id, and returns them verified, in
    /// wire order. Messages without signed items give an empty list.
    ///
    /// ```
    /// use bijou_frame::proto::message::*;
    /// use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Signed};
    ///
    /// let tree = SedimentreeId::new([1; 32]);
    /// let blob = Blob::from_static(b"data");
    /// let commit = LooseCommit::new(tree, CommitId::new([2; 32]), [], blob.meta());
    /// let item = SignedItem::new(Signed::seal(&SigningKey::from_bytes(&[3; 32]), &commit)?, blob);
    /// let msg = SyncMessage::LooseCommit(BlobMessage { id: tree, sender_heads: RemoteHeads::default(), item });
    /// assert_eq!(msg.verify()?.len(), 1);
    ///
    /// // The same signed commit, sent for another tree: refused.
    /// let SyncMessage::LooseCommit(m) = msg else { unreachable!() };
    /// let replay = SyncMessage::LooseCommit(BlobMessage { id: SedimentreeId::new([9; 32]), ..m });
    /// assert!(matches!(replay.verify(), Err(VerifyItemError::ScopeMismatch { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The first item's [`VerifyItemError`]: bad signature,
    /// [`VerifyItemError::ScopeMismatch`], or a blob that does not match.
    pub fn verify(&self) -> Result<Vec<VerifiedItem>, VerifyItemError> {
        self.verify_each().collect()
    }

    /// How many signed items the message carries: the number of
    /// `verify_strict` calls verifying it costs (duplicates are refused when
    /// decoding, so each is distinct).
    #[must_use]
    pub fn signed_item_count(&self) -> usize {
        match self {
            Self::LooseCommit(_) | Self::Fragment(_) => 1,
            Self::BatchSyncResponse(BatchSyncResponse {
                result: SyncResult::Ok(diff),
                ..
            }) => diff.commits().len() + diff.fragments().len(),
            _ => 0,
        }
    }

    /// The length of the blob carried with the signed item at `index`
    /// (wire order, as [`SyncMessage::verify_item`]): what checking that
    /// item's blob hashes. `None` past the last item.
    #[must_use]
    pub fn signed_item_blob_len(&self, index: usize) -> Option<usize> {
        match self {
            Self::LooseCommit(m) if index == 0 => Some(m.item.blob().len()),
            Self::Fragment(m) if index == 0 => Some(m.item.blob().len()),
            Self::BatchSyncResponse(BatchSyncResponse {
                result: SyncResult::Ok(diff),
                ..
            }) => match diff.commits().get(index) {
                Some(item) => Some(item.blob().len()),
                None => diff
                    .fragments()
                    .get(index.checked_sub(diff.commits().len())?)
                    .map(|item| item.blob().len()),
            },
            _ => None,
        }
    }

    /// Verifies the signed items at `range` (wire order, as
    /// [`SyncMessage::verify_item`]) together: the signatures of a
    /// `BatchSyncResponse`'s items with one
    /// [`verify_batch`](bijou_signing::batch::verify_batch) per kind, which falls
    /// back to single strict checks only to isolate the bad items, so each
    /// failure is still named with its reason. Then each item's scope and
    /// blob, as [`SyncMessage::verify_item`]. One result per index of
    /// `range` that holds an item, in order.
    ///
    /// ```
    /// use bijou_frame::proto::message::*;
    /// use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Signed};
    ///
    /// let key = SigningKey::from_bytes(&[1; 32]);
    /// let tree = SedimentreeId::new([9; 32]);
    /// let commits = (0..4u8)
    ///     .map(|i| {
    ///         let blob = Blob::from(vec![i; 10]);
    ///         let commit = LooseCommit::new(tree, CommitId::new([i; 32]), [], blob.meta());
    ///         Ok(SignedItem::new(Signed::seal(&key, &commit)?, blob))
    ///     })
    ///     .collect::<Result<Vec<_>, bijou_frame::signing::SealError>>()?;
    /// let diff = SyncDiff::new(commits, vec![], vec![], vec![]);
    /// let msg = SyncMessage::BatchSyncResponse(BatchSyncResponse {
    ///     requestor: bijou_frame::signing::PeerId::from_bytes([2; 32]),
    ///     nonce: 1,
    ///     id: tree,
    ///     result: SyncResult::Ok(diff),
    ///     responder_heads: RemoteHeads::default(),
    /// });
    /// let results = msg.verify_items(1..3);
    /// assert_eq!(results.len(), 2);
    /// assert!(results.iter().all(Result::is_ok));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn verify_items(
        &self,
        range: core::ops::Range<usize>,
    ) -> Vec<Result<VerifiedItem, VerifyItemError>> {
        let Self::BatchSyncResponse(BatchSyncResponse {
            id,
            result: SyncResult::Ok(diff),
            ..
        }) = self
        else {
            return range.filter_map(|i| self.verify_item(i)).collect();
        };
        let (commits, fragments) = (diff.commits(), diff.fragments());
        let (commit_range, fragment_range) = split(range, commits.len(), fragments.len());
        let mut out = Vec::with_capacity(commit_range.len() + fragment_range.len());
        out.extend(
            verify_chunk(commits.get(commit_range).unwrap_or(&[]), *id)
                .map(|r| r.map(|(v, b)| VerifiedItem::Commit(v, b))),
        );
        out.extend(
            verify_chunk(fragments.get(fragment_range).unwrap_or(&[]), *id)
                .map(|r| r.map(|(v, b)| VerifiedItem::Fragment(v, b))),
        );
        out
    }

    /// [`SyncMessage::verify_items`] with one all-or-none batch per kind
    /// ([`verify_batch_all_or_none`](bijou_signing::batch::verify_batch_all_or_none)):
    /// `None` if some signature at `range` fails its batch (a bad one, or a
    /// key or `R` the strict checks refuse), and nothing says which; verify
    /// those items one by one ([`SyncMessage::verify_item`]) to name it. A
    /// failed batch is never split, so it costs one batch and no more.
    /// Otherwise each item's scope and blob, as
    /// [`SyncMessage::verify_item`]: one result per index of `range` that
    /// holds an item, in order. A message of one item (a LooseCommit or a
    /// Fragment) is checked singly, `None` for a bad signature.
    ///
    /// ```
    /// use bijou_frame::proto::message::*;
    /// use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Signed};
    ///
    /// let key = SigningKey::from_bytes(&[1; 32]);
    /// let tree = SedimentreeId::new([9; 32]);
    /// let commits = (0..4u8)
    ///     .map(|i| {
    ///         let blob = Blob::from(vec![i; 10]);
    ///         let commit = LooseCommit::new(tree, CommitId::new([i; 32]), [], blob.meta());
    ///         Ok(SignedItem::new(Signed::seal(&key, &commit)?, blob))
    ///     })
    ///     .collect::<Result<Vec<_>, bijou_frame::signing::SealError>>()?;
    /// let diff = SyncDiff::new(commits, vec![], vec![], vec![]);
    /// let msg = SyncMessage::BatchSyncResponse(BatchSyncResponse {
    ///     requestor: bijou_frame::signing::PeerId::from_bytes([2; 32]),
    ///     nonce: 1,
    ///     id: tree,
    ///     result: SyncResult::Ok(diff),
    ///     responder_heads: RemoteHeads::default(),
    /// });
    /// let results = msg.verify_items_all_or_none(1..3).expect("every signature holds");
    /// assert_eq!(results.len(), 2);
    /// assert!(results.iter().all(Result::is_ok));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn verify_items_all_or_none(
        &self,
        range: core::ops::Range<usize>,
    ) -> Option<Vec<Result<VerifiedItem, VerifyItemError>>> {
        let Self::BatchSyncResponse(BatchSyncResponse {
            id,
            result: SyncResult::Ok(diff),
            ..
        }) = self
        else {
            let results: Vec<_> = range.filter_map(|i| self.verify_item(i)).collect();
            let bad_signature = results
                .iter()
                .any(|r| matches!(r, Err(VerifyItemError::Signature(_))));
            return (!bad_signature).then_some(results);
        };
        let (commits, fragments) = (diff.commits(), diff.fragments());
        let (commit_range, fragment_range) = split(range, commits.len(), fragments.len());
        let len = commit_range.len() + fragment_range.len();
        let commits = check_chunk(commits.get(commit_range).unwrap_or(&[]), *id)?;
        let fragments = check_chunk(fragments.get(fragment_range).unwrap_or(&[]), *id)?;
        let mut out = Vec::with_capacity(len);
        out.extend(commits.map(|r| r.map(|(v, b)| VerifiedItem::Commit(v, b))));
        out.extend(fragments.map(|r| r.map(|(v, b)| VerifiedItem::Fragment(v, b))));
        Some(out)
    }

    /// Verifies the signed item at `index` (wire order: the commit or
    /// fragment of tags 00/01, or the diff's commits then fragments), bound
    /// to the message's tree id; `None` past the last one.
    #[must_use]
    pub fn verify_item(&self, index: usize) -> Option<Result<VerifiedItem, VerifyItemError>> {
        match self {
            Self::LooseCommit(m) if index == 0 => {
                Some(m.verify().map(|(v, b)| VerifiedItem::Commit(v, b)))
            }
            Self::Fragment(m) if index == 0 => {
                Some(m.verify().map(|(v, b)| VerifiedItem::Fragment(v, b)))
            }
            Self::BatchSyncResponse(BatchSyncResponse {
                id,
                result: SyncResult::Ok(diff),
                ..
            }) => match diff.commits().get(index) {
                Some(item) => Some(item.verify_in(*id).map(|(v, b)| VerifiedItem::Commit(v, b))),
                None => diff
                    .fragments()
                    .get(index - diff.commits().len())
                    .map(|item| {
                        item.verify_in(*id)
                            .map(|(v, b)| VerifiedItem::Fragment(v, b))
                    }),
            },
            _ => None,
        }
    }

    /// Verifies the signed items one at a time, in wire order (see
    /// [`SyncMessage::verify_item`]): a caller can stop early, or pace the
    /// work, as a [`Session`](crate::session::Session) does (in steps of
    /// [`SyncMessage::verify_items`]) with its
    /// [`VerifyBudget`](crate::verify_budget::VerifyBudget).
    pub fn verify_each(
        &self,
    ) -> impl Iterator<Item = Result<VerifiedItem, VerifyItemError>> + Send + '_ {
        (0..self.signed_item_count()).filter_map(|index| self.verify_item(index))
    }
}

/// `"SUM\0" · TotalSize u32 · Tag u8 · payload`, the whole message.
impl Wire for SyncMessage {
    type Error = MessageError;

    fn wire_len(&self) -> Result<usize, WriteError> {
        let total = SYNC_HEADER_LEN.saturating_add(self.payload_len()?);
        count::u32("total_size", total)?;
        Ok(total)
    }

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        self.write_sized(w, self.wire_len()?)
    }

    /// `TotalSize` is `len`: the payload is walked once, not twice.
    fn write_sized<B: BufMut + ?Sized>(
        &self,
        w: &mut Writer<'_, B>,
        len: usize,
    ) -> Result<(), WriteError> {
        w.bytes(&SYNC_SCHEMA);
        w.count_u32("total_size", len)?;
        w.u8(self.tag());
        self.write_payload(w)
    }

    /// Reads a message that is the rest of `r`: `TotalSize` must equal the
    /// bytes remaining at its start.
    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        let start_remaining = r.remaining();
        let schema = r.array::<4>("schema")?;
        if schema != SYNC_SCHEMA {
            return Err(MessageError::UnknownSchema {
                found: Schema(schema),
            });
        }
        let declared = r.u32("total_size")?;
        if usize::try_from(declared).ok() != Some(start_remaining) {
            return Err(MessageError::TotalSize {
                declared,
                actual: start_remaining,
            });
        }
        let tag_offset = r.offset();
        let tag = r.u8("tag")?;
        if tag == tag::RETIRED_02 || tag == tag::RETIRED_03 {
            return Err(MessageError::RetiredTag {
                tag,
                offset: tag_offset,
            });
        }
        Self::read_payload(tag, r).unwrap_or_else(|| {
            Err(ReadError::UnknownValue {
                field: "tag",
                offset: tag_offset,
                value: tag.into(),
            }
            .into())
        })
    }
}

/// `range` of a response's items in wire order (its `commits` commits,
/// then its `fragments` fragments), clamped to them: the commits' part and
/// the fragments' part, each as indices into its own list.
fn split(
    range: core::ops::Range<usize>,
    commits: usize,
    fragments: usize,
) -> (core::ops::Range<usize>, core::ops::Range<usize>) {
    let end = range.end.min(commits + fragments);
    let start = range.start.min(end);
    (
        start.min(commits)..end.min(commits),
        start.saturating_sub(commits)..end.saturating_sub(commits),
    )
}

/// Batch-verifies the signatures of `items`, then checks each one's scope
/// and blob.
fn verify_chunk<T>(
    items: &[SignedItem<T>],
    scope: SedimentreeId,
) -> impl Iterator<Item = Result<(Verified<T>, VerifiedBlob), VerifyItemError>> + '_
where
    T: bijou_signing::Payload + Scoped + bijou_signing::HasBlobMeta,
{
    let signed: Vec<_> = items.iter().map(SignedItem::signed).collect();
    let verified = bijou_signing::batch::verify_batch_refs(&signed);
    items
        .iter()
        .zip(verified)
        .map(move |(item, verified)| item.check_verified_in(verified?, scope))
}

/// [`verify_chunk`] with one all-or-none batch: `None` if it fails.
fn check_chunk<T>(
    items: &[SignedItem<T>],
    scope: SedimentreeId,
) -> Option<impl Iterator<Item = Result<(Verified<T>, VerifiedBlob), VerifyItemError>> + '_>
where
    T: bijou_signing::Payload + Scoped + bijou_signing::HasBlobMeta,
{
    let signed: Vec<_> = items.iter().map(SignedItem::signed).collect();
    let verified = bijou_signing::batch::verify_batch_all_or_none(&signed)?;
    Some(
        items
            .iter()
            .zip(verified)
            .map(move |(item, verified)| item.check_verified_in(verified, scope)),
    )
}
