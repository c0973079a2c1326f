use bytes::{Buf, BufMut};

use crate::bijou64::{self, Bijou64Error};

/// Reads bijou64 values from any [`Buf`], including non-contiguous ones.
///
/// ```
/// use bijou_frame::codec::{BufExt, BufMutExt};
/// use bytes::{Buf, BytesMut};
///
/// let mut buf = BytesMut::new();
/// buf.put_bijou64(1000);
/// buf.put_bijou64(7);
/// let mut bytes = buf.freeze();
/// assert_eq!(bytes.try_get_bijou64(), Ok(1000));
/// assert_eq!(bytes.try_get_bijou64(), Ok(7));
/// assert!(!bytes.has_remaining());
/// ```
pub trait BufExt: Buf {
    /// Reads one bijou64 value.
    ///
    /// On [`Bijou64Error::Incomplete`] nothing is consumed, so a streaming
    /// caller can retry once more bytes arrive. On
    /// [`Bijou64Error::Overflow`] the nine offending bytes are consumed
    /// (the input is malformed; there is nothing to retry).
    ///
    /// # Errors
    ///
    /// [`Bijou64Error::Incomplete`] with the exact missing count, or
    /// [`Bijou64Error::Overflow`].
    fn try_get_bijou64(&mut self) -> Result<u64, Bijou64Error> {
        let chunk = self.chunk();
        let Some(&first) = chunk.first() else {
            return Err(Bijou64Error::Incomplete { missing: 1 });
        };
        let len = bijou64::len_from_first_byte(first);
        if chunk.len() >= len {
            let result = bijou64::decode(chunk).map(|(value, _)| value);
            self.advance(len);
            return result;
        }
        if self.remaining() < len {
            return Err(Bijou64Error::Incomplete {
                missing: len - self.remaining(),
            });
        }
        // The encoding straddles chunks: gather it (at most 9 bytes).
        let mut scratch = [0u8; bijou64::MAX_LEN];
        let (head, _) = scratch.split_at_mut(len);
        self.copy_to_slice(head);
        bijou64::decode(head).map(|(value, _)| value)
    }
}

impl<B: Buf + ?Sized> BufExt for B {}

/// Writes bijou64 values to any [`BufMut`].
pub trait BufMutExt: BufMut {
    /// Appends one bijou64 value (1 to 9 bytes).
    ///
    /// # Panics
    ///
    /// As every `BufMut::put_*`: if the buffer lacks room and cannot grow.
    fn put_bijou64(&mut self, value: u64) {
        bijou64::encode(value, self);
    }
}

impl<B: BufMut + ?Sized> BufMutExt for B {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn straddling_values_decode_and_incomplete_consumes_nothing() {
        let mut enc = alloc::vec::Vec::new();
        bijou64::encode_to_vec(u64::MAX, &mut enc);
        for split in 1..enc.len() {
            let (a, b) = enc.split_at(split);
            let mut chain = a.chain(b);
            assert_eq!(chain.try_get_bijou64(), Ok(u64::MAX), "split {split}");
            let mut short = a.chain(&b[..b.len() - 1]);
            assert_eq!(
                short.try_get_bijou64(),
                Err(Bijou64Error::Incomplete { missing: 1 })
            );
            assert_eq!(short.remaining(), enc.len() - 1);
        }
    }

    #[test]
    fn overflow_consumes_the_bad_value_in_both_layouts() {
        let bad = [0xFF; 10];
        let mut flat = &bad[..];
        assert_eq!(flat.try_get_bijou64(), Err(Bijou64Error::Overflow));
        assert_eq!(flat.remaining(), 1);
        let mut chain = bad[..3].chain(&bad[3..]);
        assert_eq!(chain.try_get_bijou64(), Err(Bijou64Error::Overflow));
        assert_eq!(chain.remaining(), 1);
    }
}
