//! The encoding twin of [`Reader`](crate::Reader): appends fields to a
//! `Vec<u8>`, big-endian, and never truncates.
//!
//! Counts are the one place an encoder could silently lose information
//! (`len as u16`). [`Writer::count_u8`], [`Writer::count_u16`] and
//! [`Writer::count_u32`] check the value fits and fail with
//! [`WriteError::CountTooLarge`] instead.
//!
//! ```
//! use bijou_codec::{Writer, WriteError};
//!
//! let mut out = Vec::new();
//! let mut w = Writer::new(&mut out);
//! w.count_u16("parents", 2)?;
//! w.bijou64(300);
//! w.bytes(&[0xAA]);
//! assert_eq!(out, [0x00, 0x02, 0xF8, 0x34, 0xAA]);
//!
//! let mut w = Writer::new(&mut out);
//! assert_eq!(
//!     w.count_u8("parents", 256),
//!     Err(WriteError::CountTooLarge { field: "parents", len: 256, max: 255 })
//! );
//! # Ok::<(), WriteError>(())
//! ```

use alloc::vec::Vec;

use crate::bijou64;

/// Why a message could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A count or length does not fit its wire field.
    #[error("{field} has {len} elements; the wire field holds at most {max}")]
    CountTooLarge {
        /// The count field.
        field: &'static str,
        /// The count that was asked for.
        len: usize,
        /// The largest the field can carry.
        max: u64,
    },
}

/// Appends fields to a borrowed `Vec<u8>`; see the [module docs](self).
#[derive(Debug)]
pub struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    /// A writer appending to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Self { out }
    }

    /// Bytes in the underlying buffer (including any present before).
    #[must_use]
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Whether the underlying buffer is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// Raw bytes, as they are.
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// One byte.
    pub fn u8(&mut self, value: u8) {
        self.out.push(value);
    }

    /// A big-endian `u16`.
    pub fn u16(&mut self, value: u16) {
        self.bytes(&value.to_be_bytes());
    }

    /// A big-endian `u32`.
    pub fn u32(&mut self, value: u32) {
        self.bytes(&value.to_be_bytes());
    }

    /// A big-endian `u64`.
    pub fn u64(&mut self, value: u64) {
        self.bytes(&value.to_be_bytes());
    }

    /// A bijou64 value.
    pub fn bijou64(&mut self, value: u64) {
        bijou64::encode_to_vec(value, self.out);
    }

    /// A length as bijou64 (`usize` always fits in `u64` on supported
    /// targets; a wider `usize` saturates, which no real buffer reaches).
    pub fn bijou64_len(&mut self, len: usize) {
        self.bijou64(u64::try_from(len).unwrap_or(u64::MAX));
    }

    /// A count that must fit one byte.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if `len > 255`; nothing is written.
    pub fn count_u8(&mut self, field: &'static str, len: usize) -> Result<(), WriteError> {
        let value = u8::try_from(len).map_err(|_| too_large(field, len, u8::MAX.into()))?;
        self.u8(value);
        Ok(())
    }

    /// A count that must fit a big-endian `u16`.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if `len > 65535`; nothing is written.
    pub fn count_u16(&mut self, field: &'static str, len: usize) -> Result<(), WriteError> {
        let value = u16::try_from(len).map_err(|_| too_large(field, len, u16::MAX.into()))?;
        self.u16(value);
        Ok(())
    }

    /// A count that must fit a big-endian `u32`.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if `len > u32::MAX`; nothing is written.
    pub fn count_u32(&mut self, field: &'static str, len: usize) -> Result<(), WriteError> {
        let value = u32::try_from(len).map_err(|_| too_large(field, len, u32::MAX.into()))?;
        self.u32(value);
        Ok(())
    }

    /// Overwrites 4 already-written bytes at `at` with a big-endian `u32`,
    /// for size fields known only once the rest is written (such as a
    /// message's total size).
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if `value` does not fit a `u32`.
    /// Returns `Ok(false)` without writing if `at..at + 4` is not inside
    /// the buffer.
    pub fn patch_u32(
        &mut self,
        field: &'static str,
        at: usize,
        value: usize,
    ) -> Result<bool, WriteError> {
        let value = u32::try_from(value).map_err(|_| too_large(field, value, u32::MAX.into()))?;
        let Some(slot) = at.checked_add(4).and_then(|end| self.out.get_mut(at..end)) else {
            return Ok(false);
        };
        slot.copy_from_slice(&value.to_be_bytes());
        Ok(true)
    }
}

fn too_large(field: &'static str, len: usize, max: u64) -> WriteError {
    WriteError::CountTooLarge { field, len, max }
}
