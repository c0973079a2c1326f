//! Tag `08`: [`HeadsUpdate`], the sender's heads for a document changed.
//!
//! ```text
//!   +-----------+------------------------------------------------+
//!   | TreeId 32 | RemoteHeads (Counter u64 · Count u32 · N x 32) |
//!   +-----------+------------------------------------------------+
//! ```

use bijou_codec::{Reader, Wire, WriteError, Writer};
use bytes::BufMut;

use crate::message::{MessageError, RemoteHeads, SedimentreeId};

/// Tag 08: the sender's heads for `id` changed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HeadsUpdate {
    /// The document.
    pub id: SedimentreeId,
    /// The new heads.
    pub heads: RemoteHeads,
}

impl Wire for HeadsUpdate {
    type Error = MessageError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        self.id.write_to(w)?;
        self.heads.write_to(w)
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        Ok(Self {
            id: SedimentreeId::read_from(r)?,
            heads: RemoteHeads::read_from(r)?,
        })
    }
}
