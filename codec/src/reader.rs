use bytes::Bytes;

use crate::bijou64;

/// Why a field could not be read. Every variant carries the field name and
/// the absolute byte offset at which the field starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Fewer bytes remain than the field needs.
    #[error(
        "truncated reading {field} at offset {offset}: it needs {needed} bytes, {have} remain"
    )]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Where the field starts.
        offset: usize,
        /// Bytes the field needs (saturating at `usize::MAX`).
        needed: usize,
        /// Bytes that remain.
        have: usize,
    },
    /// A bijou64 field whose tier-8 payload exceeds `u64::MAX`.
    #[error("bijou64 overflow reading {field} at offset {offset}")]
    Bijou64Overflow {
        /// The field being read.
        field: &'static str,
        /// Where the field starts.
        offset: usize,
    },
    /// Bytes are left after the last field.
    #[error("{count} trailing byte(s) at offset {offset}")]
    TrailingBytes {
        /// Where the unread bytes start.
        offset: usize,
        /// How many there are.
        count: usize,
    },
    /// An array that must be strictly ascending (sorted, no duplicates) is
    /// not; `index` is the first element that is not above its predecessor.
    #[error("{field} at offset {offset} is not strictly ascending at element {index}")]
    NotAscending {
        /// The array field.
        field: &'static str,
        /// Where the offending element starts.
        offset: usize,
        /// Its index in the array.
        index: usize,
    },
    /// An array that may come in any order holds an element twice;
    /// `index` is the second occurrence.
    #[error("{field} at offset {offset} repeats an earlier element at element {index}")]
    Duplicate {
        /// The array field.
        field: &'static str,
        /// Where the repeated element starts.
        offset: usize,
        /// Its index in the array.
        index: usize,
    },
    /// A tag, flag or enum byte with no defined meaning.
    #[error("unknown value {value:#x} for {field} at offset {offset}")]
    UnknownValue {
        /// The field being read.
        field: &'static str,
        /// Where the field starts.
        offset: usize,
        /// The value found.
        value: u64,
    },
}

impl ReadError {
    /// The absolute offset every variant carries: where the field (or the
    /// trailing bytes, or the offending element) starts.
    ///
    /// ```
    /// use bijou_frame::codec::Reader;
    /// let frame = bytes::Bytes::from_static(&[1, 2, 3]);
    /// let mut r = Reader::new(&frame);
    /// r.u16("kind")?;
    /// assert_eq!(r.u16("len").map_err(|e| e.offset()), Err(2));
    /// # Ok::<(), bijou_frame::codec::ReadError>(())
    /// ```
    #[must_use]
    pub fn offset(&self) -> usize {
        match *self {
            Self::Truncated { offset, .. }
            | Self::Bijou64Overflow { offset, .. }
            | Self::TrailingBytes { offset, .. }
            | Self::NotAscending { offset, .. }
            | Self::Duplicate { offset, .. }
            | Self::UnknownValue { offset, .. } => offset,
        }
    }
}

/// A zero-copy cursor over a frame.
///
/// It borrows the frame's [`Bytes`] handle, so a field can come out either
/// borrowed ([`Reader::bytes`]) or as a zero-copy, reference-counted slice
/// of the frame ([`Reader::shared`]), without the caller passing the frame
/// alongside.
///
/// ```text
///   buf: | already read | remaining ........................ |
///        0              ^ offset()                           len
///                       |-- u16 --|-- bijou64 --|-- [u8;32] --| ...
/// ```
///
/// The reader borrows the whole frame's [`Bytes`]. Every read names the
/// field it is reading, so an error says *what* failed and *where*:
/// `truncated reading blob_size at offset 97: it needs 3 bytes, 1 remain`.
/// Offsets are absolute in the frame, also inside embedded values and
/// sub-readers made with [`Reader::sub`]. Variable-length fields come out
/// borrowed ([`Reader::bytes`]) or as zero-copy slices of the frame
/// ([`Reader::shared`]). [`Reader::finish`] rejects trailing bytes; call it
/// whenever a message must use its input exactly.
///
/// Fixed-width integers are big-endian, as in every Subduction layout.
///
/// ```
/// use bijou_frame::codec::{Reader, ReadError};
/// use bytes::Bytes;
///
/// let frame = Bytes::from_static(&[0x00, 0x02, 0xF8, 0x34, 0xAA, 0xBB]);
/// let mut r = Reader::new(&frame);
/// assert_eq!(r.u16("count")?, 2);
/// assert_eq!(r.bijou64("size")?, 300);
/// let blob: Bytes = r.shared("blob", 2)?; // zero-copy slice of `frame`
/// assert_eq!(blob, [0xAA, 0xBB][..]);
/// r.finish()?;
///
/// let short = frame.slice(..3);
/// let mut r = Reader::new(&short);
/// r.u16("count")?;
/// assert_eq!(
///     r.bijou64("size"),
///     Err(ReadError::Truncated { field: "size", offset: 2, needed: 2, have: 1 })
/// );
/// # Ok::<(), ReadError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    frame: &'a Bytes,
    /// The frame's bytes up to the end of this reader's region (all of
    /// them, or fewer for a [`Reader::sub`] reader): indexes stay absolute,
    /// and the unread bytes are `buf[pos..]`, one bounds check away.
    buf: &'a [u8],
    /// Absolute index of the next unread byte in `frame`.
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader over all of `frame`, at offset 0.
    #[inline]
    #[must_use]
    pub fn new(frame: &'a Bytes) -> Self {
        Self {
            frame,
            buf: frame.as_ref(),
            pos: 0,
        }
    }

    /// Absolute offset of the next unread byte in the frame.
    #[inline]
    #[must_use]
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    #[inline]
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// Whether every byte has been read.
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// The unread bytes, without consuming them.
    #[inline]
    #[must_use]
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// The frame bytes from absolute offset `start` up to the next unread
    /// byte, as a zero-copy slice of the frame: the exact bytes of a value
    /// read since `start` (a signed payload keeps its received bytes this
    /// way). Empty if `start` is not behind the cursor.
    #[must_use]
    pub fn shared_since(&self, start: usize) -> Bytes {
        if start <= self.pos {
            self.frame.slice(start..self.pos)
        } else {
            Bytes::new()
        }
    }

    /// The next `N` bytes as an array, without consuming them (`None` if
    /// fewer remain). For dispatching on a schema or tag.
    #[must_use]
    pub fn peek_array<const N: usize>(&self) -> Option<[u8; N]> {
        self.rest()
            .get(..N)
            .and_then(|bytes| <[u8; N]>::try_from(bytes).ok())
    }

    /// Consumes the reader; fails if any byte is left unread.
    ///
    /// # Errors
    ///
    /// [`ReadError::TrailingBytes`] with where they start and how many.
    pub fn finish(self) -> Result<(), ReadError> {
        match self.remaining() {
            0 => Ok(()),
            count => Err(ReadError::TrailingBytes {
                offset: self.offset(),
                count,
            }),
        }
    }

    fn truncated(&self, field: &'static str, needed: usize) -> ReadError {
        ReadError::Truncated {
            field,
            offset: self.offset(),
            needed,
            have: self.remaining(),
        }
    }

    /// Advances by `len` bytes and returns the absolute range they cover.
    #[inline]
    fn advance(&mut self, field: &'static str, len: usize) -> Result<(usize, usize), ReadError> {
        match self.pos.checked_add(len) {
            Some(end) if end <= self.buf.len() => {
                let start = self.pos;
                self.pos = end;
                Ok((start, end))
            }
            _ => Err(self.truncated(field, len)),
        }
    }

    /// The next `len` bytes, borrowed from the frame.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] if fewer than `len` bytes remain; the reader
    /// does not advance then.
    #[inline]
    pub fn bytes(&mut self, field: &'static str, len: usize) -> Result<&'a [u8], ReadError> {
        let (start, end) = self.advance(field, len)?;
        Ok(self.buf.get(start..end).unwrap_or_default())
    }

    /// The next `len` bytes as a zero-copy [`Bytes`] slice of the frame
    /// (a reference count, no copy): for blobs and embedded payloads that
    /// outlive the decode.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] if fewer than `len` bytes remain.
    #[inline]
    pub fn shared(&mut self, field: &'static str, len: usize) -> Result<Bytes, ReadError> {
        let (start, end) = self.advance(field, len)?;
        Ok(self.frame.slice(start..end))
    }

    /// Like [`Reader::shared`] with a length read off the wire as `u64`.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] if fewer than `len` bytes remain (a `len`
    /// beyond `usize` reports `needed: usize::MAX`).
    #[inline]
    pub fn shared_u64(&mut self, field: &'static str, len: u64) -> Result<Bytes, ReadError> {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        self.shared(field, len)
    }

    /// Like [`Reader::bytes`] with a length read off the wire as `u64`.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] if fewer than `len` bytes remain (a `len`
    /// beyond `usize` reports `needed: usize::MAX`).
    #[inline]
    pub fn bytes_u64(&mut self, field: &'static str, len: u64) -> Result<&'a [u8], ReadError> {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        self.bytes(field, len)
    }

    /// A reader over the next `len` bytes, consumed from this one. Offsets
    /// stay absolute in the frame. Use it for a size-delimited region whose
    /// contents must be used exactly (call `finish` on it).
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] if fewer than `len` bytes remain.
    pub fn sub(&mut self, field: &'static str, len: usize) -> Result<Reader<'a>, ReadError> {
        let (start, end) = self.advance(field, len)?;
        Ok(Reader {
            frame: self.frame,
            buf: self.buf.get(..end).unwrap_or_default(),
            pos: start,
        })
    }

    /// The next `N` bytes as a borrowed array.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] if fewer than `N` bytes remain.
    #[inline]
    pub fn array_ref<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<&'a [u8; N], ReadError> {
        let start = self.offset();
        let have = self.remaining();
        let bytes = self.bytes(field, N)?;
        <&[u8; N]>::try_from(bytes).map_err(|_| ReadError::Truncated {
            field,
            offset: start,
            needed: N,
            have,
        })
    }

    /// The next `N` bytes, copied into an array.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] if fewer than `N` bytes remain.
    #[inline]
    pub fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], ReadError> {
        self.array_ref::<N>(field).copied()
    }

    /// One byte.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] at end of input.
    #[inline]
    pub fn u8(&mut self, field: &'static str) -> Result<u8, ReadError> {
        self.array::<1>(field).map(|[b]| b)
    }

    /// A big-endian `u16`.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] if fewer than 2 bytes remain.
    #[inline]
    pub fn u16(&mut self, field: &'static str) -> Result<u16, ReadError> {
        self.array(field).map(u16::from_be_bytes)
    }

    /// A big-endian `u32`.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] if fewer than 4 bytes remain.
    #[inline]
    pub fn u32(&mut self, field: &'static str) -> Result<u32, ReadError> {
        self.array(field).map(u32::from_be_bytes)
    }

    /// A big-endian `u64`.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] if fewer than 8 bytes remain.
    #[inline]
    pub fn u64(&mut self, field: &'static str) -> Result<u64, ReadError> {
        self.array(field).map(u64::from_be_bytes)
    }

    /// A bijou64 value (canonical by construction).
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] with the exact bytes the encoding needs, or
    /// [`ReadError::Bijou64Overflow`].
    #[inline]
    pub fn bijou64(&mut self, field: &'static str) -> Result<u64, ReadError> {
        match bijou64::decode(self.rest()) {
            Ok((value, used)) => {
                // `used` is at most the unread length, so `pos` stays
                // within the region (no overflow, no saturation needed).
                self.pos += used;
                Ok(value)
            }
            Err(error) => Err(bijou64_error(field, self.pos, self.remaining(), error)),
        }
    }

    /// Checks that `count` elements of `elem_size` bytes each can still be
    /// present, *before* anything is allocated for them, and returns
    /// `count` as a safe `Vec` capacity. This is how decoders keep
    /// allocation bounded by the input: a count claiming more than the
    /// remaining bytes is refused outright.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] with `needed = count * elem_size` (saturating).
    ///
    /// ```
    /// let frame = bytes::Bytes::from_static(&[0u8; 64]);
    /// let mut r = bijou_frame::codec::Reader::new(&frame);
    /// assert_eq!(r.capacity_for("parents", 2, 32), Ok(2));
    /// assert!(r.capacity_for("parents", 3, 32).is_err());
    /// ```
    pub fn capacity_for(
        &self,
        field: &'static str,
        count: u64,
        elem_size: usize,
    ) -> Result<usize, ReadError> {
        let count_usize = usize::try_from(count).unwrap_or(usize::MAX);
        match count_usize.checked_mul(elem_size) {
            Some(needed) if needed <= self.remaining() => Ok(count_usize),
            needed => Err(self.truncated(field, needed.unwrap_or(usize::MAX))),
        }
    }

    /// Reads `count` fixed-size elements that must be strictly ascending
    /// (byte-wise: sorted, no duplicates), such as sorted id lists.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] before allocating if the input cannot hold
    /// them, or [`ReadError::NotAscending`] at the first offender.
    pub fn ascending_arrays<const N: usize>(
        &mut self,
        field: &'static str,
        count: u64,
    ) -> Result<alloc::vec::Vec<[u8; N]>, ReadError> {
        let capacity = self.capacity_for(field, count, N)?;
        let mut out: alloc::vec::Vec<[u8; N]> = alloc::vec::Vec::with_capacity(capacity);
        for index in 0..capacity {
            let offset = self.offset();
            let item = self.array::<N>(field)?;
            if out.last().is_some_and(|prev| *prev >= item) {
                return Err(ReadError::NotAscending {
                    field,
                    offset,
                    index,
                });
            }
            out.push(item);
        }
        Ok(out)
    }

    /// Reads `count` fixed-size elements in any order, with no element
    /// twice (a set whose senders do not sort it), kept in wire order so
    /// that they re-encode to the same bytes.
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] before allocating if the input cannot hold
    /// them, or [`ReadError::Duplicate`] at the second occurrence of an
    /// element.
    pub fn distinct_arrays<const N: usize>(
        &mut self,
        field: &'static str,
        count: u64,
    ) -> Result<alloc::vec::Vec<[u8; N]>, ReadError> {
        let capacity = self.capacity_for(field, count, N)?;
        let start = self.offset();
        let mut out: alloc::vec::Vec<[u8; N]> = alloc::vec::Vec::with_capacity(capacity);
        for _ in 0..capacity {
            out.push(self.array::<N>(field)?);
        }
        // Sort a list of indices (O(n log n)), then look at neighbours.
        let mut order: alloc::vec::Vec<usize> = (0..out.len()).collect();
        order.sort_unstable_by(|&a, &b| out[a].cmp(&out[b]).then(a.cmp(&b)));
        let second = order
            .windows(2)
            .filter(|pair| out[pair[0]] == out[pair[1]])
            .map(|pair| pair[1])
            .min();
        match second {
            None => Ok(out),
            Some(index) => Err(ReadError::Duplicate {
                field,
                offset: start + index * N,
                index,
            }),
        }
    }
}

/// The [`ReadError`] for a bijou64 field at `offset`, with `have` bytes
/// left, that did not decode. It takes plain values, not the reader, so
/// that the reader's cursor stays in a register in the decoders
/// [`Reader::bijou64`] is inlined into (a cold path that borrowed the
/// reader kept it in memory on every value).
///
/// `#[cold]` keeps it off the fast path; `#[inline]`, not
/// `#[inline(never)]`, gives each crate that reads bijou64 fields its own
/// copy, called directly. As one out-of-line function it was called
/// through the GOT from other crates, and a caller's loop kept its
/// address, the field name and the error's slot in three registers. The
/// decoder's tier offsets then no longer fitted in registers, and the
/// tier-8 path took a third taken branch: a loop of `Reader::bijou64` ran
/// at up to 1.9x a loop of [`bijou64::decode`] on `large` and `uniform`
/// (`benches/DECODERS.md`, "Across code layouts"). Now the two loops
/// compile to the same instructions.
#[cold]
#[inline]
fn bijou64_error(
    field: &'static str,
    offset: usize,
    have: usize,
    error: bijou64::Bijou64Error,
) -> ReadError {
    match error {
        bijou64::Bijou64Error::Incomplete { missing } => ReadError::Truncated {
            field,
            offset,
            needed: have.saturating_add(missing),
            have,
        },
        bijou64::Bijou64Error::Overflow => ReadError::Bijou64Overflow { field, offset },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_reader_reports_absolute_offsets() {
        let bytes = Bytes::from_static(&[1, 2, 3, 4, 5]);
        let mut r = Reader::new(&bytes);
        r.u8("a").unwrap();
        let mut inner = r.sub("inner", 3).unwrap();
        inner.u16("b").unwrap();
        assert_eq!(
            inner.u16("c"),
            Err(ReadError::Truncated {
                field: "c",
                offset: 3,
                needed: 2,
                have: 1
            })
        );
        assert_eq!(
            inner.finish(),
            Err(ReadError::TrailingBytes {
                offset: 3,
                count: 1
            })
        );
        assert_eq!(r.remaining(), 1);
    }

    #[test]
    fn bijou64_in_a_sub_reader_never_reads_past_its_region() {
        // A tier-2 value (3 bytes) whose region holds only 2 of them, in a
        // frame long enough for the decoder's 9-byte window: the window
        // must come from the region, not the frame.
        let frame = Bytes::from_static(&[0xAA, 0xF9, 0x01, 0xF0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let mut r = Reader::new(&frame);
        r.u8("header").unwrap();
        let mut inner = r.sub("inner", 2).unwrap();
        assert_eq!(
            inner.bijou64("v"),
            Err(ReadError::Truncated {
                field: "v",
                offset: 1,
                needed: 3,
                have: 2
            })
        );
        assert_eq!(inner.offset(), 1, "no advance on error");
        // The same bytes in a region that holds them decode, and the
        // cursor moves by exactly the encoding's length.
        let mut whole = Reader::new(&frame);
        whole.u8("header").unwrap();
        let mut inner = whole.sub("inner", 3).unwrap();
        assert_eq!(inner.bijou64("v"), Ok(1000));
        assert!(inner.is_empty());
        inner.finish().unwrap();
    }

    #[test]
    fn failed_reads_do_not_advance() {
        let frame = Bytes::from_static(&[0xF9, 0x00]);
        let mut r = Reader::new(&frame);
        assert!(r.bijou64("v").is_err());
        assert!(r.u32("v").is_err());
        assert_eq!(r.offset(), 0);
        assert_eq!(r.u16("v"), Ok(0xF900));
    }

    #[test]
    fn huge_counts_are_refused_before_allocation() {
        let frame = Bytes::from_static(&[0u8; 10]);
        let mut r = Reader::new(&frame);
        assert_eq!(
            r.ascending_arrays::<32>("parents", u64::MAX),
            Err(ReadError::Truncated {
                field: "parents",
                offset: 0,
                needed: usize::MAX,
                have: 10
            })
        );
        assert!(r.bytes_u64("blob", u64::MAX).is_err());
    }

    #[test]
    fn ascending_arrays_reject_duplicates_and_disorder() {
        let frame = Bytes::from_static(&[1, 2, 2]);
        let mut r = Reader::new(&frame);
        assert_eq!(
            r.ascending_arrays::<1>("ids", 3),
            Err(ReadError::NotAscending {
                field: "ids",
                offset: 2,
                index: 2
            })
        );
        let frame = Bytes::from_static(&[1, 3, 2]);
        let mut r = Reader::new(&frame);
        assert!(r.ascending_arrays::<1>("ids", 3).is_err());
        let frame = Bytes::from_static(&[1, 2, 3]);
        let mut r = Reader::new(&frame);
        assert_eq!(
            r.ascending_arrays::<1>("ids", 3),
            Ok(alloc::vec![[1], [2], [3]])
        );
    }
}
