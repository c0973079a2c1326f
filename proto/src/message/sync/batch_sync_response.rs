//! Tag `05`: [`BatchSyncResponse`], the answer to a batch sync request.
//!
//! ```text
//!   +--------------+-----------+-----------+-----------+---------------------+-------------+
//!   | Requestor 32 | Nonce u64 | TreeId 32 | Result u8 | SyncDiff (if 00 Ok) | RemoteHeads |
//!   +--------------+-----------+-----------+-----------+---------------------+-------------+
//!     Result: 00 Ok (a SyncDiff follows), 01 NotFound, 02 Unauthorized
//! ```

use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bijou_signing::PeerId;
use bytes::BufMut;

use crate::message::{MessageError, RemoteHeads, SedimentreeId, SyncDiff};

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

/// Tag 05: the answer to a [`BatchSyncRequest`](super::BatchSyncRequest).
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

impl Wire for BatchSyncResponse {
    type Error = MessageError;

    /// The fixed fields, then the diff's and the heads' own lengths.
    fn wire_len(&self) -> Result<usize, WriteError> {
        let diff = match &self.result {
            SyncResult::Ok(diff) => diff.wire_len()?,
            SyncResult::NotFound | SyncResult::Unauthorized => 0,
        };
        let fixed = 32 + 8 + 32 + 1;
        Ok(diff
            .saturating_add(fixed)
            .saturating_add(self.responder_heads.wire_len()?))
    }

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(self.requestor.as_bytes());
        w.u64(self.nonce);
        w.bytes(self.id.as_bytes());
        match &self.result {
            SyncResult::Ok(diff) => {
                w.u8(0x00);
                diff.write_to(w)?;
            }
            SyncResult::NotFound => w.u8(0x01),
            SyncResult::Unauthorized => w.u8(0x02),
        }
        self.responder_heads.write_to(w)
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        let requestor = PeerId::from_bytes(r.array("requestor")?);
        let nonce = r.u64("nonce")?;
        let id = SedimentreeId::read_from(r)?;
        let offset = r.offset();
        let result = match r.u8("result")? {
            0x00 => SyncResult::Ok(SyncDiff::read_from(r)?),
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
        Ok(Self {
            requestor,
            nonce,
            id,
            result,
            responder_heads: RemoteHeads::read_from(r)?,
        })
    }
}
