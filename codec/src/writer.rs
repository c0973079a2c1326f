use bytes::BufMut;

use crate::{bijou64, BufferTooSmall};

/// Why a value could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A count or length does not fit its wire field.
    #[error("{field} has {len} elements; the wire field holds at most {max}: send fewer (split the value across messages)")]
    CountTooLarge {
        /// The count field.
        field: &'static str,
        /// The count that was asked for.
        len: usize,
        /// The largest the field can carry.
        max: u64,
    },
    /// The output buffer cannot take the encoded value (a fixed-size
    /// `BufMut` such as `&mut [u8]`); nothing was written. The same
    /// [`BufferTooSmall`] the slice encoders return.
    #[error(transparent)]
    BufferTooSmall(#[from] BufferTooSmall),
}

/// The encoding twin of [`Reader`](crate::Reader): writes fields into any
/// [`bytes::BufMut`], big-endian, and never truncates.
///
/// Counts are the one place an encoder could silently lose information
/// (`len as u16`). [`Writer::count_u8`], [`Writer::count_u16`] and
/// [`Writer::count_u32`] check the value fits and fail with
/// [`WriteError::CountTooLarge`] instead.
///
/// A `Writer` is only made by the [`Wire`](crate::Wire) methods. It either
/// counts (for [`Wire::wire_len`](crate::Wire::wire_len): the same
/// `write_to` code computes the exact length and checks every count, so the
/// two cannot disagree), or writes, once the length is known, every count
/// checked and the buffer's capacity confirmed: writing never panics on a
/// short buffer, and an error leaves the buffer untouched.
///
/// ```
/// use bijou_frame::codec::{Reader, ReadError, Wire, WriteError, Writer};
/// use bytes::{BufMut, Bytes};
///
/// /// `Count u16 | bijou64 | byte`.
/// struct Example { ids: Vec<u8>, size: u64 }
///
/// impl Wire for Example {
///     type Error = ReadError;
///     fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
///         w.count_u16("ids", self.ids.len())?;
///         w.bijou64(self.size);
///         w.bytes(&self.ids);
///         Ok(())
///     }
///     fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
///         let count = r.u16("count")?;
///         let size = r.bijou64("size")?;
///         Ok(Example { ids: r.bytes("ids", count.into())?.to_vec(), size })
///     }
/// }
///
/// let wire = Example { ids: vec![0xAA], size: 300 }.encode()?;
/// assert_eq!(wire, [0x00, 0x01, 0xF8, 0x34, 0xAA][..]);
///
/// let mut out = Vec::new();
/// assert_eq!(
///     Example { ids: vec![0; 65_536], size: 0 }.encode_into(&mut out),
///     Err(WriteError::CountTooLarge { field: "ids", len: 65_536, max: 65_535 })
/// );
/// assert!(out.is_empty()); // nothing written on error
/// # Ok::<(), WriteError>(())
/// ```
#[derive(Debug)]
pub struct Writer<'a, B: ?Sized> {
    /// `None` when counting: the writer then only adds up lengths and
    /// checks counts (how [`Wire::wire_len`](crate::Wire::wire_len) is
    /// computed by default).
    out: Option<&'a mut B>,
    /// Counting: the bytes counted so far.
    counted: usize,
    /// Writing: `out`'s `remaining_mut()` when the writer was made, so that
    /// [`Writer::len`] needs no bookkeeping on each write (a batch
    /// response's items are written field by field, and the adds were a
    /// fifth of the work).
    start_remaining: usize,
}

impl Writer<'static, bytes::BytesMut> {
    /// A writer that writes nothing and counts what would be written.
    pub(crate) fn counting() -> Self {
        Self {
            out: None,
            counted: 0,
            start_remaining: 0,
        }
    }
}

impl<'a> Writer<'a, bytes::BytesMut> {
    /// A writer appending to a `BytesMut`. It grows as needed, so unlike a
    /// fixed buffer it cannot run out of room: a caller that already knows
    /// the value's [`Wire::wire_len`](crate::Wire::wire_len) (to reserve it,
    /// or to write a length prefix first) writes without counting again.
    ///
    /// ```
    /// use bijou_frame::codec::{Wire, Writer};
    /// use bytes::BytesMut;
    ///
    /// let value = 0x0102_u16;
    /// let mut frame = BytesMut::new();
    /// frame.extend_from_slice(&[value.wire_len()? as u8]); // a length prefix
    /// value.write_to(&mut Writer::growing(&mut frame))?;
    /// assert_eq!(&frame[..], [2, 1, 2]);
    /// # Ok::<(), bijou_frame::codec::WriteError>(())
    /// ```
    pub fn growing(out: &'a mut bytes::BytesMut) -> Self {
        Self::new(out)
    }
}

impl<'a, B: BufMut + ?Sized> Writer<'a, B> {
    /// Only [`Wire::encode_into`](crate::Wire::encode_into) makes writers,
    /// after checking the buffer can take the whole value.
    pub(crate) fn new(out: &'a mut B) -> Self {
        Self {
            counted: 0,
            start_remaining: out.remaining_mut(),
            out: Some(out),
        }
    }

    /// Bytes written (or counted) so far. While writing, this is how much
    /// the buffer's `remaining_mut()` dropped since the writer was made:
    /// exact for `BytesMut`, `Vec<u8>`, `&mut [u8]` and bytes' other
    /// buffers, whose room shrinks by one for each byte put.
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.out {
            Some(out) => self.start_remaining.saturating_sub(out.remaining_mut()),
            None => self.counted,
        }
    }

    /// Whether nothing was written yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Raw bytes, as they are.
    #[inline]
    pub fn bytes(&mut self, bytes: &[u8]) {
        match &mut self.out {
            Some(out) => out.put_slice(bytes),
            None => self.counted = self.counted.saturating_add(bytes.len()),
        }
    }

    /// One byte.
    #[inline]
    pub fn u8(&mut self, value: u8) {
        match &mut self.out {
            Some(out) => out.put_u8(value),
            None => self.counted = self.counted.saturating_add(1),
        }
    }

    /// A big-endian `u16`.
    #[inline]
    pub fn u16(&mut self, value: u16) {
        self.bytes(&value.to_be_bytes());
    }

    /// A big-endian `u32`.
    #[inline]
    pub fn u32(&mut self, value: u32) {
        self.bytes(&value.to_be_bytes());
    }

    /// A big-endian `u64`.
    #[inline]
    pub fn u64(&mut self, value: u64) {
        self.bytes(&value.to_be_bytes());
    }

    /// A bijou64 value.
    #[inline]
    pub fn bijou64(&mut self, value: u64) {
        match &mut self.out {
            Some(out) => bijou64::encode(value, *out),
            None => self.counted = self.counted.saturating_add(bijou64::encoded_len(value)),
        }
    }

    /// A length as bijou64 (`usize` always fits in `u64` on supported
    /// targets; a wider `usize` saturates, which no real buffer reaches).
    #[inline]
    pub fn bijou64_len(&mut self, len: usize) {
        self.bijou64(u64::try_from(len).unwrap_or(u64::MAX));
    }

    /// A count that must fit one byte.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if `len > 255`; nothing is written.
    pub fn count_u8(&mut self, field: &'static str, len: usize) -> Result<(), WriteError> {
        let value = count::u8(field, len)?;
        self.u8(value);
        Ok(())
    }

    /// A count that must fit a big-endian `u16`.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if `len > 65535`; nothing is written.
    pub fn count_u16(&mut self, field: &'static str, len: usize) -> Result<(), WriteError> {
        let value = count::u16(field, len)?;
        self.u16(value);
        Ok(())
    }

    /// A count that must fit a big-endian `u32`.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if `len > u32::MAX`; nothing is written.
    pub fn count_u32(&mut self, field: &'static str, len: usize) -> Result<(), WriteError> {
        let value = count::u32(field, len)?;
        self.u32(value);
        Ok(())
    }
}

/// Count checks without writing, for [`Wire::wire_len`](crate::Wire::wire_len)
/// implementations, which validate every count before anything is written.
///
/// ```
/// use bijou_frame::codec::{count, WriteError};
/// assert_eq!(count::u8("parents", 255), Ok(255));
/// assert_eq!(
///     count::u16("ids", 70_000),
///     Err(WriteError::CountTooLarge { field: "ids", len: 70_000, max: 65_535 })
/// );
/// ```
pub mod count {
    use super::{too_large, WriteError};

    /// `len` as a one-byte count.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if `len > 255`.
    pub fn u8(field: &'static str, len: usize) -> Result<u8, WriteError> {
        u8::try_from(len).map_err(|_| too_large(field, len, u8::MAX.into()))
    }

    /// `len` as a `u16` count.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if `len > 65535`.
    pub fn u16(field: &'static str, len: usize) -> Result<u16, WriteError> {
        u16::try_from(len).map_err(|_| too_large(field, len, u16::MAX.into()))
    }

    /// `len` as a `u32` count.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if `len > u32::MAX`.
    pub fn u32(field: &'static str, len: usize) -> Result<u32, WriteError> {
        u32::try_from(len).map_err(|_| too_large(field, len, u32::MAX.into()))
    }
}

fn too_large(field: &'static str, len: usize, max: u64) -> WriteError {
    WriteError::CountTooLarge { field, len, max }
}

#[cfg(test)]
mod tests {
    use alloc::{vec, vec::Vec};

    use bytes::BytesMut;

    use super::*;

    /// The same fields through a counting writer, a growing one over a
    /// buffer that already holds bytes, and one over a fixed slice: each
    /// reports the same length after every field, and the bijou64 fields
    /// are their canonical encodings on both sides of the one-byte path.
    #[test]
    fn every_writer_reports_what_it_wrote_and_bijou64_is_canonical_at_every_tier() {
        for &value in &bijou64::OFFSETS {
            for value in [
                value.saturating_sub(1),
                value,
                value.saturating_add(1),
                u64::MAX,
            ] {
                let (canonical, tier_len) = bijou64::encode_array(value);
                fn write<B: BufMut + ?Sized>(w: &mut Writer<'_, B>, value: u64) -> Vec<usize> {
                    let mut lens = vec![];
                    w.u8(7);
                    lens.push(w.len());
                    w.bijou64(value);
                    lens.push(w.len());
                    w.bytes(b"abc");
                    lens.push(w.len());
                    lens
                }
                let mut counter = Writer::counting();
                let counted = write(&mut counter, value);

                let mut grown = BytesMut::from(&b"earlier"[..]);
                let grown_lens = write(&mut Writer::growing(&mut grown), value);

                let mut fixed = [0u8; 16];
                let mut slot: &mut [u8] = &mut fixed;
                let fixed_lens = write(&mut Writer::new(&mut slot), value);

                assert_eq!(counted, [1, 1 + tier_len, 4 + tier_len], "value {value}");
                assert_eq!(grown_lens, counted, "value {value}");
                assert_eq!(fixed_lens, counted, "value {value}");
                let mut expected = b"earlier\x07".to_vec();
                expected.extend_from_slice(&canonical[..tier_len]);
                expected.extend_from_slice(b"abc");
                assert_eq!(&grown[..], &expected[..], "value {value}");
                assert_eq!(&fixed[..4 + tier_len], &expected[7..], "value {value}");
            }
        }
    }
}
