//! The [`Codec`] trait: one type, one wire form, read and written through
//! [`Reader`] and [`Writer`].
//!
//! Implementations read their fields in order from a [`Reader`] and write
//! them in the same order to a [`Writer`]. [`Codec::from_bytes`] adds the
//! rule every canonical decoder needs: the value must use its input
//! exactly, so `to_bytes(from_bytes(b)) == b` for every accepted `b`.
//!
//! ```
//! use bijou_codec::{Codec, Reader, ReadError, Writer, WriteError};
//!
//! #[derive(Debug, PartialEq)]
//! struct Blob<'a> { bytes: &'a [u8] }
//!
//! impl<'a> Codec<'a> for Blob<'a> {
//!     fn write_to(&self, w: &mut Writer<'_>) -> Result<(), WriteError> {
//!         w.bijou64_len(self.bytes.len());
//!         w.bytes(self.bytes);
//!         Ok(())
//!     }
//!     fn read_from(r: &mut Reader<'a>) -> Result<Self, ReadError> {
//!         let len = r.bijou64("blob_len")?;
//!         Ok(Blob { bytes: r.bytes_u64("blob", len)? })
//!     }
//! }
//!
//! let wire = Blob { bytes: b"hi" }.to_bytes()?;
//! assert_eq!(wire, [0x02, b'h', b'i']);
//! assert_eq!(Blob::from_bytes(&wire), Ok(Blob { bytes: b"hi" }));
//! assert!(Blob::from_bytes(&[0x02, b'h', b'i', 0x00]).is_err()); // trailing byte
//! # Ok::<(), WriteError>(())
//! ```

use alloc::vec::Vec;

use crate::{ReadError, Reader, WriteError, Writer};

/// A type with exactly one wire form; see the [module docs](self).
pub trait Codec<'a>: Sized {
    /// Appends the wire form of `self`.
    ///
    /// # Errors
    ///
    /// [`WriteError`] if a count does not fit its field; the encoder never
    /// truncates.
    fn write_to(&self, w: &mut Writer<'_>) -> Result<(), WriteError>;

    /// Reads one value from the front of `r`, leaving the rest.
    ///
    /// # Errors
    ///
    /// [`ReadError`] for malformed or truncated input.
    fn read_from(r: &mut Reader<'a>) -> Result<Self, ReadError>;

    /// The wire form of `self` as a new vector.
    ///
    /// # Errors
    ///
    /// As [`Codec::write_to`].
    fn to_bytes(&self) -> Result<Vec<u8>, WriteError> {
        let mut out = Vec::new();
        self.write_to(&mut Writer::new(&mut out))?;
        Ok(out)
    }

    /// Decodes a value that must use all of `bytes`.
    ///
    /// # Errors
    ///
    /// As [`Codec::read_from`], plus [`ReadError::TrailingBytes`].
    fn from_bytes(bytes: &'a [u8]) -> Result<Self, ReadError> {
        let mut r = Reader::new(bytes);
        let value = Self::read_from(&mut r)?;
        r.finish()?;
        Ok(value)
    }
}

impl<'a, const N: usize> Codec<'a> for [u8; N] {
    fn write_to(&self, w: &mut Writer<'_>) -> Result<(), WriteError> {
        w.bytes(self);
        Ok(())
    }

    fn read_from(r: &mut Reader<'a>) -> Result<Self, ReadError> {
        r.array("array")
    }
}

macro_rules! big_endian_codec {
    ($($ty:ident),*) => {$(
        impl<'a> Codec<'a> for $ty {
            fn write_to(&self, w: &mut Writer<'_>) -> Result<(), WriteError> {
                w.$ty(*self);
                Ok(())
            }

            fn read_from(r: &mut Reader<'a>) -> Result<Self, ReadError> {
                r.$ty(stringify!($ty))
            }
        }
    )*};
}

big_endian_codec!(u8, u16, u32, u64);
