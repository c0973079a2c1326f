use alloc::vec::Vec;
use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bytes::BufMut;

use super::{
    fields::{sorted_unique, write_ids},
    CommitId,
};

/// A peer's current heads for a document, with a counter
/// that orders its updates.
///
/// ```text
///   +-------------+-----------+----------------------------+
///   | Counter u64 | Count u32 | Heads: Count x CommitId 32 |
///   +-------------+-----------+----------------------------+
///      8 bytes      4 bytes      distinct, in the sender's order
/// ```
///
/// Heads are a set, but Subduction writes them in hash-set order, so a
/// real server's `HeadsUpdate` with two heads comes in any order. Decoding
/// accepts any order without duplicates and keeps the wire order, so the
/// bytes still re-encode exactly; [`RemoteHeads::new`] sorts, so what we
/// write is canonical. This is the one array we do not require sorted.
///
/// ```
/// use bijou_frame::codec::Wire;
/// use bijou_frame::proto::message::{CommitId, RemoteHeads};
///
/// let heads = RemoteHeads::new(7, [CommitId::new([2; 32]), CommitId::new([1; 32])]);
/// let wire = heads.encode()?;
/// assert_eq!(wire.len(), 8 + 4 + 64);
/// assert_eq!(&wire[..12], &[0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 2]);
/// assert_eq!(RemoteHeads::decode(wire), Ok(heads));
/// # Ok::<(), bijou_frame::codec::WriteError>(())
/// ```
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

    /// The heads: strictly ascending if built with [`RemoteHeads::new`],
    /// in the sender's order (distinct) if decoded.
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
        let heads = r
            .distinct_arrays::<32>("heads", count.into())?
            .into_iter()
            .map(CommitId::from)
            .collect();
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
            Err(ReadError::Duplicate {
                field: "heads",
                index: 1,
                offset: 44,
            })
        ));
    }

    #[test]
    fn heads_in_any_order_decode_and_re_encode_to_the_same_bytes() {
        let mut wire = vec![0u8; 8];
        wire.extend_from_slice(&3u32.to_be_bytes());
        for b in [9u8, 2, 5] {
            wire.extend_from_slice(&[b; 32]);
        }
        let heads = RemoteHeads::decode(wire.clone().into()).expect("any order");
        assert_eq!(heads.heads()[0], CommitId::new([9; 32]));
        assert_eq!(heads.encode().expect("encode").as_ref(), wire.as_slice());
        // A duplicate anywhere is still refused.
        wire.extend_from_slice(&[2; 32]);
        wire[11] = 4;
        assert!(matches!(
            RemoteHeads::decode(wire.into()),
            Err(ReadError::Duplicate { index: 3, .. })
        ));
    }
}
