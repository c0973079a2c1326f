//! The fixed 4-byte big-endian length prefix (Subduction's QUIC framing).

use super::{sealed, LengthPrefix, PrefixError, MAX_PREFIX_LEN};

/// Fixed 4-byte big-endian length prefix, as Subduction frames messages on
/// QUIC (and as tokio-util's default `LengthDelimitedCodec` does).
///
/// Lengths above `u32::MAX` cannot be written; every 4-byte string is a
/// valid prefix.
///
/// ```text
/// +--------+--------+--------+--------+----------+
/// | len >> 24       ...      len & FF | payload  |
/// +--------+--------+--------+--------+----------+
/// ```
///
/// ```
/// use bijou_frame::framing::prefix::{LengthPrefix, U32Be};
/// let (bytes, n) = U32Be::encode(1000).unwrap();
/// assert_eq!(&bytes[..n], &[0, 0, 0x03, 0xE8]);
/// assert!(U32Be::encode(1 << 32).is_none());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct U32Be;

impl sealed::Sealed for U32Be {}

impl LengthPrefix for U32Be {
    const NAME: &'static str = "u32-be";
    const KIND: super::PrefixKind = super::PrefixKind::U32Be;
    const MAX_LEN: usize = 4;
    const MAX_VALUE: u64 = u32::MAX as u64;

    #[inline]
    fn encoded_len(len: u64) -> Option<usize> {
        (len <= Self::MAX_VALUE).then_some(Self::MAX_LEN)
    }

    #[inline]
    fn encode(len: u64) -> Option<([u8; MAX_PREFIX_LEN], usize)> {
        let [a, b, c, d] = u32::try_from(len).ok()?.to_be_bytes();
        Some(([a, b, c, d, 0, 0, 0, 0, 0, 0], Self::MAX_LEN))
    }

    #[inline]
    fn decode(src: &[u8]) -> Result<(u64, usize), PrefixError> {
        match *src {
            [a, b, c, d, ..] => Ok((u64::from(u32::from_be_bytes([a, b, c, d])), Self::MAX_LEN)),
            _ => Err(PrefixError::Incomplete {
                needed: Self::MAX_LEN.saturating_sub(src.len()),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_counts_are_exact() {
        for have in 0..4 {
            assert_eq!(
                U32Be::decode(&[0u8; 4][..have]),
                Err(PrefixError::Incomplete { needed: 4 - have })
            );
        }
        assert_eq!(U32Be::decode(&[0xFF; 5]), Ok((u64::from(u32::MAX), 4)));
        assert_eq!(U32Be::encoded_len(u64::from(u32::MAX)), Some(4));
        assert_eq!(U32Be::encoded_len(u64::from(u32::MAX) + 1), None);
    }
}
