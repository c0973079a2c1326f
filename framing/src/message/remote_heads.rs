//! [`RemoteHeads`]: a peer's current heads for a document, with a counter
//! that orders its updates.
//!
//! ```text
//!   +-------------+-----------+----------------------------+
//!   | Counter u64 | Count u32 | Heads: Count x CommitId 32 |
//!   +-------------+-----------+----------------------------+
//!      8 bytes      4 bytes      strictly ascending
//! ```
//!
//! ```
//! use bijou_codec::Wire;
//! use bijou_framing::message::{CommitId, RemoteHeads};
//!
//! let heads = RemoteHeads::new(7, [CommitId::new([2; 32]), CommitId::new([1; 32])]);
//! let wire = heads.encode()?;
//! assert_eq!(wire.len(), 8 + 4 + 64);
//! assert_eq!(&wire[..12], &[0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 2]);
//! assert_eq!(RemoteHeads::decode(wire), Ok(heads));
//! # Ok::<(), bijou_codec::WriteError>(())
//! ```

use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bytes::BufMut;

use super::{
    fields::{read_sorted, sorted_unique, write_ids},
    CommitId,
};

/// A peer's heads for one document; see the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct RemoteHeads {
    counter: u64,
    heads: Vec<CommitId>,
}

impl RemoteHeads {
    /// Heads at `counter`; `heads` are sorted and deduplicated.
    #[must_use]
    pub fn new(counter: u64, heads: impl IntoIterator<Item = CommitId>) -> Self {
        Self {
            counter,
            heads: sorted_unique(heads),
        }
    }

    /// The sender's counter: a receiver ignores updates not above the last.
    #[must_use]
    pub const fn counter(&self) -> u64 {
        self.counter
    }

    /// The heads, strictly ascending.
    #[must_use]
    pub fn heads(&self) -> &[CommitId] {
        &self.heads
    }
}

impl Wire for RemoteHeads {
    type Error = ReadError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.u64(self.counter);
        w.count_u32("heads", self.heads.len())?;
        write_ids(w, &self.heads);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let counter = r.u64("heads_counter")?;
        let count = r.u32("heads_count")?;
        let heads = read_sorted::<32, _>(r, "heads", count.into())?;
        Ok(Self { counter, heads })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_beyond_the_input_is_refused_before_allocating() {
        let mut wire = vec![0u8; 8];
        wire.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            RemoteHeads::decode(wire.into()),
            Err(ReadError::Truncated { field: "heads", .. })
        ));
    }

    #[test]
    fn duplicate_heads_are_rejected() {
        let mut wire = vec![0u8; 8];
        wire.extend_from_slice(&2u32.to_be_bytes());
        wire.extend_from_slice(&[5; 64]);
        assert!(matches!(
            RemoteHeads::decode(wire.into()),
            Err(ReadError::NotAscending {
                field: "heads",
                index: 1,
                ..
            })
        ));
    }
}
