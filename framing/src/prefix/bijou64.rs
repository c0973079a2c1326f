//! The bijou64 length prefix (the default).

use bijou_codec::bijou64;

use super::{sealed, LengthPrefix, PrefixError, MAX_PREFIX_LEN};

/// bijou64 length prefix: 1 to 9 bytes, length known from the first byte.
///
/// Lengths up to 247 take one byte; the first byte of a longer prefix is a
/// tag `0xF8..=0xFF` that says how many big-endian bytes follow. Each length
/// has exactly one prefix, so there is nothing non-canonical to reject; the
/// only malformed prefix is a tier-8 value past `u64::MAX`.
///
/// ```text
/// len 0..=247:   +------+----------+
///                | len  | payload  |
///                +------+----------+
///
/// len >= 248:    +------------+------------------------+----------+
///                | 0xF7 + t   | len - OFFSET[t], t B BE | payload  |
///                +------------+------------------------+----------+
///                 t = 1..=8, known from the first byte
/// ```
///
/// ```
/// use bijou_frame::framing::prefix::{Bijou64, LengthPrefix};
/// let (bytes, n) = Bijou64::encode(1000).unwrap();
/// assert_eq!(&bytes[..n], &[0xF9, 0x01, 0xF0]);
/// assert_eq!(Bijou64::decode(&bytes[..n]), Ok((1000, 3)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Bijou64;

impl sealed::Sealed for Bijou64 {}

impl LengthPrefix for Bijou64 {
    const NAME: &'static str = "bijou64";
    const KIND: super::PrefixKind = super::PrefixKind::Bijou64;
    const MAX_LEN: usize = bijou64::MAX_LEN;
    const MAX_VALUE: u64 = u64::MAX;

    #[inline]
    fn encoded_len(len: u64) -> Option<usize> {
        Some(bijou64::encoded_len(len))
    }

    #[inline]
    fn encode(len: u64) -> Option<([u8; MAX_PREFIX_LEN], usize)> {
        let ([a, b, c, d, e, f, g, h, i], n) = bijou64::encode_array(len);
        Some(([a, b, c, d, e, f, g, h, i, 0], n))
    }

    /// The tag fixes the length, so an incomplete prefix reports exactly
    /// how many bytes are missing and is never scanned.
    #[inline]
    fn decode(src: &[u8]) -> Result<(u64, usize), PrefixError> {
        match bijou64::decode(src) {
            Ok(decoded) => Ok(decoded),
            Err(bijou64::Bijou64Error::Incomplete { missing }) => {
                Err(PrefixError::Incomplete { needed: missing })
            }
            Err(bijou64::Bijou64Error::Overflow) => Err(PrefixError::Overflow),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_byte_fast_path_agrees_with_the_codec() {
        for byte in 0..=u8::MAX {
            let ours = Bijou64::decode(&[byte]);
            match bijou64::decode(&[byte]) {
                Ok(decoded) => assert_eq!(ours, Ok(decoded)),
                Err(bijou64::Bijou64Error::Incomplete { missing }) => {
                    assert_eq!(ours, Err(PrefixError::Incomplete { needed: missing }));
                }
                Err(other) => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn encode_matches_codec_for_every_tier() {
        for &offset in &bijou64::OFFSETS {
            for len in [offset, offset.saturating_add(1), offset.saturating_sub(1)] {
                let (bytes, n) = Bijou64::encode(len).unwrap();
                let mut expected = Vec::new();
                bijou64::encode_to_vec(len, &mut expected);
                assert_eq!(&bytes[..n], expected.as_slice());
                assert_eq!(Bijou64::encoded_len(len), Some(n));
                assert_eq!(Bijou64::decode(&bytes[..n]), Ok((len, n)));
            }
        }
    }
}
