use bytes::{BufMut, Bytes, BytesMut};

use crate::{BufferTooSmall, ReadError, Reader, WriteError, Writer};

/// The most heap, per input byte, a decoder uses while decoding and holds
/// in its result; see [`Wire`'s memory section](Wire#memory).
pub const DECODE_HEAP_PER_BYTE: usize = 4;

/// The heap a decoder may use whatever its input (fixed-size parts, the
/// allocator's rounding); see [`Wire`'s memory section](Wire#memory).
pub const DECODE_HEAP_CONSTANT: usize = 4096;

/// The [`Wire`] trait: one type, one wire form, read from a [`Reader`] and
/// written into any [`BufMut`].
///
/// Every wire type of bijou-frame implements this one trait: integers and
/// arrays here, ids and digests, signed payloads (whose `Wire` form is
/// their fields), `Signed<T>`, and each message. An implementation gives
/// two things, side by side:
///
/// ```text
///   write_to(&self)  the fields, in order, into a Writer over any BufMut
///   read_from(r)     the fields, in order, strictly, from a Reader
/// ```
///
/// and gets the rest:
///
/// ```text
///   wire_len(&self)      -> Result<usize, WriteError>   write_to, counting only (override if cheaper)
///   encode(&self)        -> Result<Bytes, WriteError>   one allocation, exact size
///   encode_into(&self,b) -> Result<usize, WriteError>   in place, into any BufMut
///   decode(Bytes)        -> Result<Self, Self::Error>   must use all of the input
/// ```
///
/// Because the length is known before anything is written, a message is
/// written straight into a frame buffer behind its length prefix, and a
/// count that does not fit is an error before the first byte is written.
/// [`Wire::decode`] adds the rule every canonical decoder needs: the value
/// must use its input exactly. With strict `read_from` implementations,
/// `encode(decode(b)) == b` for every accepted `b`.
///
/// The names avoid tokio-util's codec vocabulary (`Decoder`, `Encoder`):
/// a [`Wire`] type describes bytes, a tokio-util codec moves them.
///
/// ```
/// use bijou_frame::codec::{Reader, ReadError, Wire, WriteError, Writer};
/// use bytes::{BufMut, Bytes};
///
/// /// `BlobLen bijou64 | Blob`, the blob a zero-copy slice of the frame.
/// #[derive(Debug, PartialEq)]
/// struct Blob(Bytes);
///
/// impl Wire for Blob {
///     type Error = ReadError;
///     fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
///         w.bijou64_len(self.0.len());
///         w.bytes(&self.0);
///         Ok(())
///     }
///     fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
///         let len = r.bijou64("blob_len")?;
///         Ok(Blob(r.shared_u64("blob", len)?))
///     }
/// }
///
/// let wire = Blob(Bytes::from_static(b"hi")).encode()?;
/// assert_eq!(wire, [0x02, b'h', b'i'][..]);
/// assert_eq!(Blob::decode(wire), Ok(Blob(Bytes::from_static(b"hi"))));
/// assert!(Blob::decode(Bytes::from_static(&[0x02, b'h', b'i', 0x00])).is_err()); // trailing
/// # Ok::<(), WriteError>(())
/// ```
///
/// # Memory
///
/// Every decoder of bijou-frame that a peer or a file can reach (`SUM\0`,
/// `SUH\0`, `SUE\0`, `SUK\0` with every keyhive message, `Signed<T>`,
/// signature files) uses at most [`DECODE_HEAP_PER_BYTE`] bytes of heap
/// per input byte plus [`DECODE_HEAP_CONSTANT`], while decoding and held
/// by its result (which mostly borrows the input: blobs, signed bytes and
/// events are slices of it). Lists are sized by what the remaining bytes
/// can hold *in memory*: an element's shortest wire form sets the most
/// elements the input can carry, and an element too short to be valid
/// (an empty keyhive event) is refused rather than stored. Measured on
/// inputs built to hold the most elements of each kind in
/// `proto/tests/decode_memory.rs`: the worst is a batch response of
/// 30,000 fragments with no boundary, no checkpoint and an empty blob,
/// whose decoding peaks at 2.0x its bytes (the diff's items and the
/// duplicate check's table) and whose result holds 1.55x.
pub trait Wire: Sized {
    /// What [`Wire::read_from`] fails with: the codec's [`ReadError`] or a
    /// richer error that wraps it.
    type Error: From<ReadError>;

    /// The exact number of bytes [`Wire::write_to`] writes: by default,
    /// `write_to` run on a writer that only counts (and checks every count,
    /// so nothing is written for a value that cannot be encoded). Override
    /// it where the length is known without walking the fields.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if a count does not fit its field.
    fn wire_len(&self) -> Result<usize, WriteError> {
        let mut counter = Writer::counting();
        self.write_to(&mut counter)?;
        Ok(counter.len())
    }

    /// Writes the wire form. Called by [`Wire::encode_into`] once
    /// [`Wire::wire_len`] succeeded and the buffer has room.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if a count does not fit its field (the
    /// encoder never truncates).
    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError>;

    /// [`Wire::write_to`] for a caller that already has
    /// [`Wire::wire_len`]'s answer for this value, `len`: a type whose
    /// wire form states its own length (a `TotalSize` field) writes it
    /// from `len` instead of walking the value a second time. By default,
    /// `write_to`.
    ///
    /// `len` must be what `wire_len` returned for this very value; any
    /// other number makes a type that uses it write a wrong length field.
    ///
    /// # Errors
    ///
    /// As [`Wire::write_to`].
    fn write_sized<B: BufMut + ?Sized>(
        &self,
        w: &mut Writer<'_, B>,
        len: usize,
    ) -> Result<(), WriteError> {
        let _ = len;
        self.write_to(w)
    }

    /// Reads one value from the front of `r`, strictly, leaving the rest.
    ///
    /// # Errors
    ///
    /// [`Wire::Error`] for malformed or truncated input.
    fn read_from(r: &mut Reader<'_>) -> Result<Self, Self::Error>;

    /// Appends the wire form to `out` in place and returns its length.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if a count does not fit, or
    /// [`WriteError::BufferTooSmall`] if `out` cannot grow to take the
    /// value. Either way nothing is written.
    fn encode_into<B: BufMut + ?Sized>(&self, out: &mut B) -> Result<usize, WriteError> {
        let len = self.wire_len()?;
        let have = out.remaining_mut();
        if have < len {
            return Err(BufferTooSmall { needed: len, have }.into());
        }
        self.write_sized(&mut Writer::new(out), len)?;
        debug_assert_eq!(
            have - out.remaining_mut(),
            len,
            "wire_len disagrees with write_to"
        );
        Ok(len)
    }

    /// The wire form as a new [`Bytes`] of exactly [`Wire::wire_len`]
    /// bytes.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] if a count does not fit its field.
    fn encode(&self) -> Result<Bytes, WriteError> {
        let len = self.wire_len()?;
        let mut out = BytesMut::with_capacity(len);
        // The length is known and a `BytesMut` grows: no second count.
        self.write_sized(&mut Writer::growing(&mut out), len)?;
        debug_assert_eq!(out.len(), len, "wire_len disagrees with write_to");
        Ok(out.freeze())
    }

    /// Decodes a value that must use all of `bytes`. Variable-length parts
    /// may keep zero-copy slices of `bytes`.
    ///
    /// # Errors
    ///
    /// As [`Wire::read_from`], plus [`ReadError::TrailingBytes`].
    fn decode(bytes: Bytes) -> Result<Self, Self::Error> {
        let mut r = Reader::new(&bytes);
        let value = Self::read_from(&mut r)?;
        r.finish()?;
        Ok(value)
    }
}

impl<const N: usize> Wire for [u8; N] {
    type Error = ReadError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(self);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        r.array("array")
    }
}

macro_rules! big_endian_wire {
    ($($ty:ident),*) => {$(
        impl Wire for $ty {
            type Error = ReadError;

            fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
                w.$ty(*self);
                Ok(())
            }

            fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
                r.$ty(stringify!($ty))
            }
        }
    )*};
}

big_endian_wire!(u8, u16, u32, u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_buffer_too_small_is_an_error_and_nothing_is_written() {
        let mut out = [0u8; 3];
        let mut slot: &mut [u8] = &mut out;
        assert_eq!(
            0x0102_0304_u32.encode_into(&mut slot),
            Err(WriteError::BufferTooSmall(BufferTooSmall {
                needed: 4,
                have: 3
            }))
        );
        assert_eq!(out, [0; 3]);
    }

    #[test]
    fn integers_are_big_endian_and_must_use_all_input() {
        assert_eq!(0x0102_u16.encode(), Ok(Bytes::from_static(&[1, 2])));
        assert_eq!(u16::decode(Bytes::from_static(&[1, 2])), Ok(0x0102));
        assert_eq!(
            u16::decode(Bytes::from_static(&[1, 2, 3])),
            Err(ReadError::TrailingBytes {
                offset: 2,
                count: 1
            })
        );
    }
}
