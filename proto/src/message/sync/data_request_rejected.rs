//! Tag `07`: [`DataRequestRejected`], a data request was refused.
//!
//! ```text
//!   +-----------+
//!   | TreeId 32 |
//!   +-----------+
//! ```

use bijou_codec::{Reader, Wire, WriteError, Writer};
use bytes::BufMut;

use crate::message::{MessageError, SedimentreeId};

/// Tag 07: a data request for `id` was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataRequestRejected {
    /// The document.
    pub id: SedimentreeId,
}

impl Wire for DataRequestRejected {
    type Error = MessageError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        self.id.write_to(w)
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        Ok(Self {
            id: SedimentreeId::read_from(r)?,
        })
    }
}
