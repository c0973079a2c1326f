//! Tag `06`: [`RemoveSubscriptions`], "stop sending me updates for these
//! documents".
//!
//! ```text
//!   +-----------+---------------------------------------+
//!   | Count u16 | Count x TreeId 32 (strictly ascending) |
//!   +-----------+---------------------------------------+
//! ```

use alloc::vec::Vec;
use bijou_codec::{Reader, Wire, WriteError, Writer};
use bytes::BufMut;

use crate::message::{
    fields::{read_sorted, sorted_unique, write_ids},
    MessageError, SedimentreeId,
};

/// Tag 06: stop sending updates for these documents.
///
/// ```
/// use bijou_frame::proto::message::{RemoveSubscriptions, SedimentreeId};
/// let msg = RemoveSubscriptions::new([SedimentreeId::new([2; 32]), SedimentreeId::new([1; 32])]);
/// assert_eq!(msg.ids()[0], SedimentreeId::new([1; 32])); // sorted: the only wire order
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoveSubscriptions {
    ids: Vec<SedimentreeId>,
}

impl RemoveSubscriptions {
    /// The message for `ids`, sorted and deduplicated (the only form the
    /// decoder accepts).
    #[must_use]
    pub fn new(ids: impl IntoIterator<Item = SedimentreeId>) -> Self {
        Self {
            ids: sorted_unique(ids),
        }
    }

    /// The documents, strictly ascending.
    #[must_use]
    pub fn ids(&self) -> &[SedimentreeId] {
        &self.ids
    }
}

impl Wire for RemoveSubscriptions {
    type Error = MessageError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.count_u16("ids", self.ids.len())?;
        write_ids(w, &self.ids);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        let count = r.u16("ids_count")?;
        Ok(Self {
            ids: read_sorted::<32, _>(r, "ids", count.into())?,
        })
    }
}
