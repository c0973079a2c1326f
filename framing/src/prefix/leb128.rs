//! The canonical LEB128 length prefix (the comparison variant).

use bijou_codec::leb128;

use super::{sealed, LengthPrefix, PrefixError, MAX_PREFIX_LEN};

/// Canonical unsigned LEB128 length prefix: 1 to 10 bytes, seven bits per
/// byte, least significant group first, high bit = "more bytes follow".
///
/// Its length is only known at its last byte, and one length has many
/// spellings (`05`, `85 00`, `85 80 00`, ...). Only the shortest is
/// accepted: overlong forms are [`PrefixError::NonCanonical`], and a 10th
/// byte above `0x01` (or an 11th byte) is [`PrefixError::Overflow`].
///
/// ```text
/// +-+-------+-+-------+     +-+-------+----------+
/// |1| g0    |1| g1    | ... |0| gk    | payload  |   len = g0 | g1<<7 | ... | gk<<7k
/// +-+-------+-+-------+     +-+-------+----------+   gk != 0 unless k = 0
/// ```
///
/// ```
/// use bijou_frame::framing::prefix::{Leb128, LengthPrefix, PrefixError};
/// assert_eq!(Leb128::decode(&[0xE8, 0x07]), Ok((1000, 2)));
/// assert_eq!(Leb128::decode(&[0xE8, 0x87, 0x00]), Err(PrefixError::NonCanonical { prefix_len: 3 }));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Leb128;

impl sealed::Sealed for Leb128 {}

impl LengthPrefix for Leb128 {
    const NAME: &'static str = "leb128";
    const KIND: super::PrefixKind = super::PrefixKind::Leb128;
    const MAX_LEN: usize = leb128::MAX_LEN;
    const MAX_VALUE: u64 = u64::MAX;

    #[inline]
    fn encoded_len(len: u64) -> Option<usize> {
        Some(leb128::encoded_len(len))
    }

    #[inline]
    fn encode(len: u64) -> Option<([u8; MAX_PREFIX_LEN], usize)> {
        Some(leb128::encode_array(len))
    }

    #[inline]
    fn decode(src: &[u8]) -> Result<(u64, usize), PrefixError> {
        match leb128::decode(src) {
            Ok(decoded) => Ok(decoded),
            // LEB128 cannot say how many bytes are missing: at least one.
            Err(leb128::Leb128Error::Incomplete { .. }) => {
                Err(PrefixError::Incomplete { needed: 1 })
            }
            Err(leb128::Leb128Error::Overlong { len }) => {
                Err(PrefixError::NonCanonical { prefix_len: len })
            }
            // A 10th byte above 0x01 and an 11th byte both spell a value past
            // `u64::MAX`.
            Err(leb128::Leb128Error::Overflow { .. } | leb128::Leb128Error::TooLong) => {
                Err(PrefixError::Overflow)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_byte_fast_path_agrees_with_the_codec() {
        for byte in 0..=u8::MAX {
            let ours = Leb128::decode(&[byte]);
            match leb128::decode(&[byte]) {
                Ok(decoded) => assert_eq!(ours, Ok(decoded)),
                Err(leb128::Leb128Error::Incomplete { .. }) => {
                    assert_eq!(ours, Err(PrefixError::Incomplete { needed: 1 }));
                }
                Err(other) => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn errors_map_to_prefix_errors() {
        assert_eq!(
            Leb128::decode(&[0x80, 0x80, 0x00]),
            Err(PrefixError::NonCanonical { prefix_len: 3 })
        );
        let overflow = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02];
        assert_eq!(Leb128::decode(&overflow), Err(PrefixError::Overflow));
        assert_eq!(Leb128::decode(&[0x80; 11]), Err(PrefixError::Overflow));
        assert_eq!(
            Leb128::decode(&[0x80, 0x80]),
            Err(PrefixError::Incomplete { needed: 1 })
        );
    }
}
