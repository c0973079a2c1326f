//! [`SyncMessage`]: the `SUM\0` sync envelope and its seven live variants.
//!
//! ```text
//!   0        4               8       9
//!   +--------+---------------+-------+--------------------------------------+
//!   | "SUM\0"| TotalSize u32 | Tag u8| payload                              |
//!   +--------+---------------+-------+--------------------------------------+
//!   \__________________ TotalSize bytes, exactly ___________________________/
//!
//!   Tag  Variant              Payload
//!   00   LooseCommit          TreeId 32 · RemoteHeads · Signed<LooseCommit> · BlobLen bijou64 · Blob
//!   01   Fragment             TreeId 32 · RemoteHeads · Signed<Fragment>    · BlobLen bijou64 · Blob
//!   02   (retired)            rejected
//!   03   (retired)            rejected
//!   04   BatchSyncRequest     TreeId 32 · Requestor 32 · Nonce u64 · Subscribe u8 (00|01)
//!                             · SeedKey0 u64 · SeedKey1 u64 · CFP u16 · FFP u16
//!                             · CFP x Fingerprint 8 · FFP x Fingerprint 8
//!   05   BatchSyncResponse    Requestor 32 · Nonce u64 · TreeId 32 · Result u8
//!                             (00 Ok · SyncDiff | 01 NotFound | 02 Unauthorized) · RemoteHeads
//!   06   RemoveSubscriptions  Count u16 · Count x TreeId 32
//!   07   DataRequestRejected  TreeId 32
//!   08   HeadsUpdate          TreeId 32 · RemoteHeads
//!
//!   RemoteHeads = Counter u64 · Count u32 · Count x CommitId 32
//! ```
//!
//! Decoding is strict: `TotalSize` must equal the input length exactly,
//! retired and unknown tags are errors, every array of ids or fingerprints
//! must be strictly ascending, and the payload must end exactly where the
//! message ends. So for every accepted `b`, `encode(decode(b)) == b`.
//!
//! ```
//! use bijou_framing::message::{CommitId, RemoteHeads, SedimentreeId, SyncMessage};
//! use bytes::Bytes;
//!
//! let msg = SyncMessage::HeadsUpdate {
//!     id: SedimentreeId::new([1; 32]),
//!     heads: RemoteHeads::new(3, [CommitId::new([2; 32])]),
//! };
//! let wire = msg.encode()?;
//! assert_eq!(&wire[..9], b"SUM\0\x00\x00\x00\x55\x08"); // 85 bytes, tag 08
//! assert_eq!(SyncMessage::decode(Bytes::from(wire.clone()))?, msg);
//!
//! let mut longer = wire.clone();
//! longer.push(0); // TotalSize no longer matches
//! assert!(SyncMessage::decode(Bytes::from(longer)).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use bijou_codec::{Codec, ReadError, Reader, WriteError, Writer};
use bijou_signing::{PeerId, Verified, VerifiedBlob};
use bytes::Bytes;

use super::{
    fields::{read_fingerprints, read_ids, sorted_unique, write_fingerprints},
    Fingerprint, FingerprintSeed, Fragment, LooseCommit, MessageError, RemoteHeads, Scoped,
    SedimentreeId, SignedItem, SyncDiff, VerifyItemError,
};

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

/// A signed commit or fragment pushed to a peer, with the sender's heads.
/// The outer `id` must equal the signed payload's tree id, which
/// [`BlobMessage::verify`] checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobMessage<T> {
    /// The document the message is sent for.
    pub id: SedimentreeId,
    /// The sender's heads for that document after this item.
    pub sender_heads: RemoteHeads,
    /// The signed payload and its blob.
    pub item: SignedItem<T>,
}

impl<T> BlobMessage<T>
where
    T: bijou_signing::Payload + Scoped + bijou_signing::HasBlobMeta,
{
    /// Verifies the signature (strict), that the signed tree id is the
    /// message's `id`, and the blob; returns the verified payload and blob.
    ///
    /// # Errors
    ///
    /// [`VerifyItemError`]; a payload signed for another document is
    /// [`VerifyItemError::ScopeMismatch`].
    pub fn verify(&self) -> Result<(Verified<T>, VerifiedBlob), VerifyItemError> {
        self.item.verify_in(self.id)
    }
}

/// Tag 04: "here is what I have (as fingerprints); send me the rest".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSyncRequest {
    /// The document.
    pub id: SedimentreeId,
    /// Who asks (with `nonce`, the request id).
    pub requestor: PeerId,
    /// Request nonce, echoed by the response.
    pub nonce: u64,
    /// Whether to subscribe to the document's updates.
    pub subscribe: bool,
    /// Key of the fingerprints.
    pub seed: FingerprintSeed,
    commit_fingerprints: Vec<Fingerprint>,
    fragment_fingerprints: Vec<Fingerprint>,
}

impl BatchSyncRequest {
    /// A request; the fingerprint lists are sorted and deduplicated.
    #[must_use]
    pub fn new(
        id: SedimentreeId,
        requestor: PeerId,
        nonce: u64,
        subscribe: bool,
        seed: FingerprintSeed,
        commit_fingerprints: impl IntoIterator<Item = Fingerprint>,
        fragment_fingerprints: impl IntoIterator<Item = Fingerprint>,
    ) -> Self {
        Self {
            id,
            requestor,
            nonce,
            subscribe,
            seed,
            commit_fingerprints: sorted_unique(commit_fingerprints),
            fragment_fingerprints: sorted_unique(fragment_fingerprints),
        }
    }

    /// Fingerprints of the requester's commits, ascending.
    #[must_use]
    pub fn commit_fingerprints(&self) -> &[Fingerprint] {
        &self.commit_fingerprints
    }

    /// Fingerprints of the requester's fragments, ascending.
    #[must_use]
    pub fn fragment_fingerprints(&self) -> &[Fingerprint] {
        &self.fragment_fingerprints
    }
}

/// The outcome carried by a [`BatchSyncResponse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncResult {
    /// `00`: the diff.
    Ok(SyncDiff),
    /// `01`: the responder does not have the document.
    NotFound,
    /// `02`: the requester may not read it.
    Unauthorized,
}

/// Tag 05: the answer to a [`BatchSyncRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSyncResponse {
    /// The requester, from the request.
    pub requestor: PeerId,
    /// The nonce, from the request.
    pub nonce: u64,
    /// The document.
    pub id: SedimentreeId,
    /// The diff, or why there is none.
    pub result: SyncResult,
    /// The responder's heads.
    pub responder_heads: RemoteHeads,
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

/// A sync message; see the [module docs](self) for the layouts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SyncMessage {
    /// Tag 00: one signed commit and its blob.
    LooseCommit(BlobMessage<LooseCommit>),
    /// Tag 01: one signed fragment and its blob.
    Fragment(BlobMessage<Fragment>),
    /// Tag 04.
    BatchSyncRequest(BatchSyncRequest),
    /// Tag 05.
    BatchSyncResponse(BatchSyncResponse),
    /// Tag 06: stop sending updates for these documents (strictly
    /// ascending; see [`SyncMessage::remove_subscriptions`]).
    RemoveSubscriptions {
        /// The documents.
        ids: Vec<SedimentreeId>,
    },
    /// Tag 07: a data request was refused.
    DataRequestRejected {
        /// The document.
        id: SedimentreeId,
    },
    /// Tag 08: the sender's heads changed.
    HeadsUpdate {
        /// The document.
        id: SedimentreeId,
        /// The new heads.
        heads: RemoteHeads,
    },
}

impl SyncMessage {
    /// A `RemoveSubscriptions` message with `ids` sorted and deduplicated
    /// (the only form the decoder accepts).
    #[must_use]
    pub fn remove_subscriptions(ids: impl IntoIterator<Item = SedimentreeId>) -> Self {
        Self::RemoveSubscriptions {
            ids: sorted_unique(ids),
        }
    }

    /// Verifies every signed item the message carries (the commit or
    /// fragment of tags 00/01, the diff items of a `BatchSyncResponse`),
    /// each bound to the message's tree id, and returns them verified, in
    /// wire order. Messages without signed items give an empty list.
    ///
    /// ```
    /// use bijou_framing::message::*;
    /// use bijou_signing::{ed25519_dalek::SigningKey, Blob, Signed};
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
        match self {
            Self::LooseCommit(m) => {
                let (v, b) = m.verify()?;
                Ok(vec![VerifiedItem::Commit(v, b)])
            }
            Self::Fragment(m) => {
                let (v, b) = m.verify()?;
                Ok(vec![VerifiedItem::Fragment(v, b)])
            }
            Self::BatchSyncResponse(BatchSyncResponse {
                id,
                result: SyncResult::Ok(diff),
                ..
            }) => {
                let commits = diff
                    .commits()
                    .iter()
                    .map(|item| item.verify_in(*id).map(|(v, b)| VerifiedItem::Commit(v, b)));
                let fragments = diff.fragments().iter().map(|item| {
                    item.verify_in(*id)
                        .map(|(v, b)| VerifiedItem::Fragment(v, b))
                });
                commits.chain(fragments).collect()
            }
            _ => Ok(Vec::new()),
        }
    }

    /// The wire tag of this variant.
    #[must_use]
    pub const fn tag(&self) -> u8 {
        match self {
            Self::LooseCommit(_) => tag::LOOSE_COMMIT,
            Self::Fragment(_) => tag::FRAGMENT,
            Self::BatchSyncRequest(_) => tag::BATCH_SYNC_REQUEST,
            Self::BatchSyncResponse(_) => tag::BATCH_SYNC_RESPONSE,
            Self::RemoveSubscriptions { .. } => tag::REMOVE_SUBSCRIPTIONS,
            Self::DataRequestRejected { .. } => tag::DATA_REQUEST_REJECTED,
            Self::HeadsUpdate { .. } => tag::HEADS_UPDATE,
        }
    }

    /// Encodes the whole message, envelope included.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if a count does not fit its field, or
    /// the message exceeds `u32::MAX` bytes (`total_size`). Never truncates.
    pub fn encode(&self) -> Result<Vec<u8>, WriteError> {
        let mut out = Vec::new();
        self.encode_into(&mut out)?;
        Ok(out)
    }

    /// Appends the encoded message to `out`. On error, `out` keeps its
    /// original length.
    ///
    /// # Errors
    ///
    /// As [`SyncMessage::encode`].
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), WriteError> {
        let start = out.len();
        let result = self.write(&mut Writer::new(out), start);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn write(&self, w: &mut Writer<'_>, start: usize) -> Result<(), WriteError> {
        w.bytes(&SYNC_SCHEMA);
        w.u32(0); // TotalSize, patched below
        w.u8(self.tag());
        match self {
            Self::LooseCommit(m) => write_blob_message(w, m)?,
            Self::Fragment(m) => write_blob_message(w, m)?,
            Self::BatchSyncRequest(req) => {
                w.bytes(req.id.as_bytes());
                w.bytes(req.requestor.as_bytes());
                w.u64(req.nonce);
                w.u8(u8::from(req.subscribe));
                w.u64(req.seed.key0());
                w.u64(req.seed.key1());
                w.count_u16("commit_fingerprints", req.commit_fingerprints.len())?;
                w.count_u16("fragment_fingerprints", req.fragment_fingerprints.len())?;
                write_fingerprints(w, &req.commit_fingerprints);
                write_fingerprints(w, &req.fragment_fingerprints);
            }
            Self::BatchSyncResponse(resp) => {
                w.bytes(resp.requestor.as_bytes());
                w.u64(resp.nonce);
                w.bytes(resp.id.as_bytes());
                match &resp.result {
                    SyncResult::Ok(diff) => {
                        w.u8(0x00);
                        diff.write(w)?;
                    }
                    SyncResult::NotFound => w.u8(0x01),
                    SyncResult::Unauthorized => w.u8(0x02),
                }
                resp.responder_heads.write_to(w)?;
            }
            Self::RemoveSubscriptions { ids } => {
                w.count_u16("ids", ids.len())?;
                ids.iter().for_each(|id| w.bytes(id.as_bytes()));
            }
            Self::DataRequestRejected { id } => w.bytes(id.as_bytes()),
            Self::HeadsUpdate { id, heads } => {
                w.bytes(id.as_bytes());
                heads.write_to(w)?;
            }
        }
        let total = w.len().saturating_sub(start);
        let at = start.saturating_add(4);
        w.patch_u32("total_size", at, total)?;
        Ok(())
    }

    /// Decodes a message that must be all of `frame`. Signed items and blobs
    /// are zero-copy slices of `frame`.
    ///
    /// # Errors
    ///
    /// [`MessageError`] with the field and absolute offset that failed.
    pub fn decode(frame: Bytes) -> Result<Self, MessageError> {
        let mut r = Reader::new(&frame);
        let schema = r.array::<4>("schema")?;
        if schema != SYNC_SCHEMA {
            return Err(MessageError::UnknownSchema { found: schema });
        }
        let declared = r.u32("total_size")?;
        if usize::try_from(declared).ok() != Some(frame.len()) {
            return Err(MessageError::TotalSize {
                declared,
                actual: frame.len(),
            });
        }
        let tag_offset = r.offset();
        let tag = r.u8("tag")?;
        let msg = match tag {
            tag::LOOSE_COMMIT => Self::LooseCommit(read_blob_message(&frame, &mut r)?),
            tag::FRAGMENT => Self::Fragment(read_blob_message(&frame, &mut r)?),
            tag::RETIRED_02 | tag::RETIRED_03 => {
                return Err(MessageError::RetiredTag {
                    tag,
                    offset: tag_offset,
                })
            }
            tag::BATCH_SYNC_REQUEST => Self::BatchSyncRequest(read_request(&mut r)?),
            tag::BATCH_SYNC_RESPONSE => Self::BatchSyncResponse(read_response(&frame, &mut r)?),
            tag::REMOVE_SUBSCRIPTIONS => {
                let count = r.u16("ids_count")?;
                Self::RemoveSubscriptions {
                    ids: read_ids(&mut r, "ids", count.into())?,
                }
            }
            tag::DATA_REQUEST_REJECTED => Self::DataRequestRejected {
                id: SedimentreeId::new(r.array("sedimentree_id")?),
            },
            tag::HEADS_UPDATE => Self::HeadsUpdate {
                id: SedimentreeId::new(r.array("sedimentree_id")?),
                heads: RemoteHeads::read_from(&mut r)?,
            },
            value => {
                return Err(ReadError::UnknownValue {
                    field: "tag",
                    offset: tag_offset,
                    value: value.into(),
                }
                .into())
            }
        };
        r.finish()?;
        Ok(msg)
    }
}

fn write_blob_message<T>(w: &mut Writer<'_>, m: &BlobMessage<T>) -> Result<(), WriteError> {
    w.bytes(m.id.as_bytes());
    m.sender_heads.write_to(w)?;
    m.item.write(w)
}

fn read_blob_message<T: bijou_signing::Payload>(
    frame: &Bytes,
    r: &mut Reader<'_>,
) -> Result<BlobMessage<T>, MessageError> {
    let id = SedimentreeId::new(r.array("sedimentree_id")?);
    let sender_heads = RemoteHeads::read_from(r)?;
    let item = SignedItem::read(frame, r)?;
    Ok(BlobMessage {
        id,
        sender_heads,
        item,
    })
}

fn read_request(r: &mut Reader<'_>) -> Result<BatchSyncRequest, MessageError> {
    let id = SedimentreeId::new(r.array("sedimentree_id")?);
    let requestor = PeerId::from_bytes(r.array("requestor")?);
    let nonce = r.u64("nonce")?;
    let offset = r.offset();
    let subscribe = match r.u8("subscribe")? {
        0x00 => false,
        0x01 => true,
        value => {
            return Err(ReadError::UnknownValue {
                field: "subscribe",
                offset,
                value: value.into(),
            }
            .into())
        }
    };
    let seed = FingerprintSeed::new(r.u64("seed_key0")?, r.u64("seed_key1")?);
    let commit_count = r.u16("commit_fingerprint_count")?;
    let fragment_count = r.u16("fragment_fingerprint_count")?;
    let commit_fingerprints = read_fingerprints(r, "commit_fingerprints", commit_count.into())?;
    let fragment_fingerprints =
        read_fingerprints(r, "fragment_fingerprints", fragment_count.into())?;
    Ok(BatchSyncRequest {
        id,
        requestor,
        nonce,
        subscribe,
        seed,
        commit_fingerprints,
        fragment_fingerprints,
    })
}

fn read_response(frame: &Bytes, r: &mut Reader<'_>) -> Result<BatchSyncResponse, MessageError> {
    let requestor = PeerId::from_bytes(r.array("requestor")?);
    let nonce = r.u64("nonce")?;
    let id = SedimentreeId::new(r.array("sedimentree_id")?);
    let offset = r.offset();
    let result = match r.u8("result")? {
        0x00 => SyncResult::Ok(SyncDiff::read(frame, r)?),
        0x01 => SyncResult::NotFound,
        0x02 => SyncResult::Unauthorized,
        value => {
            return Err(ReadError::UnknownValue {
                field: "result",
                offset,
                value: value.into(),
            }
            .into())
        }
    };
    let responder_heads = RemoteHeads::read_from(r)?;
    Ok(BatchSyncResponse {
        requestor,
        nonce,
        id,
        result,
        responder_heads,
    })
}
