//! Strict CBOR reading over [`minicbor`]'s decoder: only the definite-length
//! forms keyhive's encoder (ciborium) writes, every item checked against
//! the layout before it is read, lengths checked against the bytes that
//! remain before anything is sliced or allocated, offsets absolute in the
//! `SUK\0` message. Shortest form is checked by the callers, which
//! re-encode what they read against the input ([`cbor_difference`]).
//!
//! ```text
//!   initial byte:  major type (3 bits) | additional info (5 bits)
//!                  info 0..=23: the value itself; 24/25/26/27: a 1/2/4/8-byte
//!                  big-endian argument follows; 28..=30 reserved; 31
//!                  indefinite length (refused here)
//! ```

use alloc::vec::Vec;
use core::convert::Infallible;

use bijou_codec::Writer;
use bytes::BufMut;
use minicbor::Decoder;

use super::error::KeyhiveError;

const MAJOR_UNSIGNED: u8 = 0;
const MAJOR_BYTES: u8 = 2;
const MAJOR_TEXT: u8 = 3;
const MAJOR_ARRAY: u8 = 4;
const MAJOR_MAP: u8 = 5;
/// `null` (major 7, simple value 22).
const NULL: u8 = 0xF6;

/// What an initial byte says is there, for errors.
fn describe(initial: u8) -> &'static str {
    match (initial >> 5, initial & 31) {
        (_, 28..=30) => "a reserved initial byte",
        (2, 31) => "an indefinite-length byte string",
        (3, 31) => "an indefinite-length text string",
        (4, 31) => "an indefinite-length array",
        (5, 31) => "an indefinite-length map",
        (0, _) => "an unsigned integer",
        (1, _) => "a negative integer",
        (2, _) => "a byte string",
        (3, _) => "a text string",
        (4, _) => "an array",
        (5, _) => "a map",
        (6, _) => "a tag",
        (7, 20 | 21) => "a boolean",
        (7, 22) => "null",
        (7, 31) => "a break",
        _ => "a float or simple value",
    }
}

/// A strict cursor over one CBOR item sequence.
pub(crate) struct CborReader<'b> {
    d: Decoder<'b>,
    base: usize,
}

impl<'b> CborReader<'b> {
    /// A reader over `input`, which starts at absolute offset `base`.
    pub(crate) fn new(input: &'b [u8], base: usize) -> Self {
        Self {
            d: Decoder::new(input),
            base,
        }
    }

    /// Absolute offset of the next unread byte.
    pub(crate) fn offset(&self) -> usize {
        self.base.saturating_add(self.d.position())
    }

    /// Position relative to the reader's input.
    pub(crate) fn position(&self) -> usize {
        self.d.position()
    }

    fn remaining(&self) -> usize {
        self.d.input().len().saturating_sub(self.d.position())
    }

    /// Checks that the next item has major type `major` with a definite
    /// argument that is all there; returns the argument and the head's
    /// length.
    fn head(
        &self,
        field: &'static str,
        major: u8,
        expected: &'static str,
    ) -> Result<(u64, usize), KeyhiveError> {
        let input = self.d.input();
        let pos = self.d.position();
        let have = self.remaining();
        let Some(&initial) = input.get(pos) else {
            return Err(KeyhiveError::CborTruncated {
                field,
                offset: self.offset(),
                needed: 1,
                have,
            });
        };
        let info = initial & 31;
        if initial >> 5 != major || info > 27 {
            return Err(KeyhiveError::CborType {
                field,
                offset: self.offset(),
                expected,
                found: describe(initial),
            });
        }
        let extra = match info {
            24 => 1,
            25 => 2,
            26 => 4,
            27 => 8,
            _ => 0,
        };
        let Some(arg_bytes) = input.get(pos + 1..pos + 1 + extra) else {
            return Err(KeyhiveError::CborTruncated {
                field,
                offset: self.offset(),
                needed: 1 + extra as u64,
                have,
            });
        };
        let arg = if extra == 0 {
            u64::from(info)
        } else {
            arg_bytes
                .iter()
                .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
        };
        Ok((arg, 1 + extra))
    }

    /// A definite-length map of exactly `len` entries.
    pub(crate) fn map(&mut self, field: &'static str, len: u64) -> Result<(), KeyhiveError> {
        let offset = self.offset();
        let (found, _) = self.head(field, MAJOR_MAP, "a map")?;
        if found != len {
            return Err(KeyhiveError::CborMapLen {
                field,
                offset,
                expected: len,
                found,
            });
        }
        self.d.map().map_err(|_| self.internal(field))?;
        Ok(())
    }

    /// The text key `key`, exactly.
    pub(crate) fn key(&mut self, key: &'static str) -> Result<(), KeyhiveError> {
        let offset = self.offset();
        let found = self.text(key, 64)?;
        if found != key {
            return Err(KeyhiveError::CborKey {
                expected: key,
                offset,
            });
        }
        Ok(())
    }

    /// A definite-length byte string of at most `max` bytes, borrowed;
    /// with its content's absolute offset.
    pub(crate) fn bytes(
        &mut self,
        field: &'static str,
        max: u64,
    ) -> Result<(&'b [u8], usize), KeyhiveError> {
        let offset = self.offset();
        let (len, head) = self.head(field, MAJOR_BYTES, "a byte string")?;
        self.check_len(field, offset, len, head, max)?;
        let content = offset + head;
        let bytes = self.d.bytes().map_err(|_| self.internal(field))?;
        Ok((bytes, content))
    }

    /// A byte string of exactly `N` bytes.
    pub(crate) fn byte_array<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], KeyhiveError> {
        let offset = self.offset();
        let (bytes, _) = self.bytes(field, u64::MAX)?;
        bytes.try_into().map_err(|_| KeyhiveError::WrongLength {
            field,
            offset,
            len: bytes.len(),
            expected: N,
        })
    }

    /// A definite-length UTF-8 text string of at most `max` bytes.
    pub(crate) fn text(&mut self, field: &'static str, max: u64) -> Result<&'b str, KeyhiveError> {
        let offset = self.offset();
        let (len, head) = self.head(field, MAJOR_TEXT, "a text string")?;
        self.check_len(field, offset, len, head, max)?;
        self.d
            .str()
            .map_err(|_| KeyhiveError::Utf8 { field, offset })
    }

    fn check_len(
        &self,
        field: &'static str,
        offset: usize,
        len: u64,
        head: usize,
        max: u64,
    ) -> Result<(), KeyhiveError> {
        if len > max {
            return Err(KeyhiveError::TooLong {
                field,
                offset,
                len,
                max,
            });
        }
        let have = self.remaining();
        if len > (have - head) as u64 {
            return Err(KeyhiveError::CborTruncated {
                field,
                offset,
                needed: len.saturating_add(head as u64),
                have,
            });
        }
        Ok(())
    }

    /// A definite-length array's count, refused if even `min_item` bytes
    /// per element could not fit in what remains (so a caller may reserve
    /// `count` elements).
    pub(crate) fn array(
        &mut self,
        field: &'static str,
        min_item: usize,
    ) -> Result<usize, KeyhiveError> {
        let offset = self.offset();
        let (count, head) = self.head(field, MAJOR_ARRAY, "an array")?;
        let have = self.remaining();
        let needed = count
            .saturating_mul(min_item as u64)
            .saturating_add(head as u64);
        if needed > have as u64 {
            return Err(KeyhiveError::CborTruncated {
                field,
                offset,
                needed,
                have,
            });
        }
        self.d.array().map_err(|_| self.internal(field))?;
        // `needed <= have`, so the count fits a usize.
        usize::try_from(count).map_err(|_| KeyhiveError::CborTruncated {
            field,
            offset,
            needed,
            have,
        })
    }

    /// An unsigned integer.
    pub(crate) fn u64(&mut self, field: &'static str) -> Result<u64, KeyhiveError> {
        let (value, _) = self.head(field, MAJOR_UNSIGNED, "an unsigned integer")?;
        self.d.u64().map_err(|_| self.internal(field))?;
        Ok(value)
    }

    /// Whether the next item is `null`.
    pub(crate) fn at_null(&self) -> bool {
        self.d.input().get(self.d.position()) == Some(&NULL)
    }

    /// Consumes a `null`.
    pub(crate) fn null(&mut self, field: &'static str) -> Result<(), KeyhiveError> {
        self.d.null().map_err(|_| self.internal(field))
    }

    /// Every byte read, or [`ReadError::TrailingBytes`](bijou_codec::ReadError::TrailingBytes).
    pub(crate) fn finish(&self) -> Result<(), KeyhiveError> {
        let count = self.remaining();
        if count == 0 {
            Ok(())
        } else {
            Err(bijou_codec::ReadError::TrailingBytes {
                offset: self.offset(),
                count,
            }
            .into())
        }
    }

    /// An error for a read the checks above said would succeed (never
    /// reached; kept typed rather than a panic).
    fn internal(&self, field: &'static str) -> KeyhiveError {
        let found = self
            .d
            .input()
            .get(self.d.position())
            .map_or("the end of the message", |&b| describe(b));
        KeyhiveError::CborType {
            field,
            offset: self.offset(),
            expected: "a well-formed CBOR item",
            found,
        }
    }
}

/// A CBOR writer into a `Vec` (infallible: `Vec` grows).
pub(crate) type CborWriter = minicbor::Encoder<Vec<u8>>;

/// What the write functions return: writing into memory, or comparing,
/// cannot fail.
pub(crate) type WriteResult = Result<(), minicbor::encode::Error<Infallible>>;

/// Runs `f` on a fresh writer and returns the bytes.
pub(crate) fn write_cbor(f: impl FnOnce(&mut CborWriter) -> WriteResult) -> Vec<u8> {
    let mut w = minicbor::Encoder::new(Vec::new());
    // Writing into a `Vec` cannot fail (its error type is `Infallible`).
    let _ = f(&mut w);
    w.into_writer()
}

/// A [`minicbor::encode::Write`] that only counts: the length of what a
/// write function would write, with nothing allocated.
pub(crate) struct Count(usize);

impl minicbor::encode::Write for Count {
    type Error = Infallible;

    fn write_all(&mut self, buf: &[u8]) -> Result<(), Infallible> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(())
    }
}

/// The number of bytes `f` writes.
pub(crate) fn cbor_len(f: impl FnOnce(&mut minicbor::Encoder<Count>) -> WriteResult) -> usize {
    let mut w = minicbor::Encoder::new(Count(0));
    // Counting cannot fail.
    let _ = f(&mut w);
    w.into_writer().0
}

/// A [`minicbor::encode::Write`] into the codec's [`Writer`]: CBOR written
/// in place, behind the fields before it, with no buffer of its own.
pub(crate) struct ToWriter<'w, 'a, B: ?Sized>(pub(crate) &'w mut Writer<'a, B>);

impl<B: BufMut + ?Sized> minicbor::encode::Write for ToWriter<'_, '_, B> {
    type Error = Infallible;

    fn write_all(&mut self, buf: &[u8]) -> Result<(), Infallible> {
        self.0.bytes(buf);
        Ok(())
    }
}

/// A [`minicbor::encode::Write`] that writes nothing: it compares what it
/// is given with `expected`, and remembers where they first differ. The
/// decoders check shortest form this way, by "re-encoding" what they read
/// against the input, without allocating a second copy of it.
pub(crate) struct Compare<'a> {
    expected: &'a [u8],
    written: usize,
    first_difference: Option<usize>,
}

impl minicbor::encode::Write for Compare<'_> {
    type Error = Infallible;

    fn write_all(&mut self, buf: &[u8]) -> Result<(), Infallible> {
        if self.first_difference.is_none() {
            let here = self.expected.get(self.written..).unwrap_or_default();
            let same = here.iter().zip(buf).take_while(|(a, b)| a == b).count();
            if same < buf.len() {
                self.first_difference = Some(self.written + same);
            }
        }
        self.written = self.written.saturating_add(buf.len());
        Ok(())
    }
}

/// Where the bytes `f` writes first differ from `expected` (the shorter
/// length if one is a prefix of the other), or `None` if they are the
/// same bytes.
pub(crate) fn cbor_difference(
    expected: &[u8],
    f: impl FnOnce(&mut minicbor::Encoder<Compare<'_>>) -> WriteResult,
) -> Option<usize> {
    let mut w = minicbor::Encoder::new(Compare {
        expected,
        written: 0,
        first_difference: None,
    });
    // Comparing cannot fail.
    let _ = f(&mut w);
    let c = w.into_writer();
    c.first_difference
        .or((c.written != expected.len()).then(|| c.written.min(expected.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(expected: &[u8], chunks: &[&[u8]]) -> Option<usize> {
        cbor_difference(expected, |w| {
            for chunk in chunks {
                let Ok(()) = minicbor::encode::Write::write_all(w.writer_mut(), chunk);
            }
            Ok(())
        })
    }

    #[test]
    fn compare_finds_the_first_difference_across_writes() {
        assert_eq!(diff(b"abcdef", &[b"ab", b"cd", b"ef"]), None);
        assert_eq!(diff(b"abcdef", &[b"ab", b"cX", b"ef"]), Some(3));
        assert_eq!(diff(b"abcdef", &[b"ab", b"cX", b"eY"]), Some(3));
        assert_eq!(diff(b"abcdef", &[b"ab", b"cd"]), Some(4));
        assert_eq!(diff(b"abcd", &[b"ab", b"cd", b"ef"]), Some(4));
        assert_eq!(diff(b"", &[]), None);
        assert_eq!(diff(b"", &[b"a"]), Some(0));
    }
}
