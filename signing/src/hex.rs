//! Lower-case hex for ids, keys and digests: formatting (no allocation),
//! parsing for `FromStr`, and the optional `serde` form.
//!
//! ```
//! use bijou_frame::signing::hex::{parse, ParseHexError};
//!
//! assert_eq!(parse::<2>("0aff"), Ok([0x0a, 0xff]));
//! assert_eq!(parse::<2>("0AFF"), Err(ParseHexError::InvalidDigit { index: 1, found: 'A' }));
//! assert_eq!(parse::<2>("0af"), Err(ParseHexError::Length { expected: 4, found: 3 }));
//! ```

use core::fmt;

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Writes `bytes` as lower-case hex.
///
/// # Errors
///
/// Whatever the formatter returns.
pub fn write(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for &byte in bytes {
        let hi = DIGITS.get(usize::from(byte >> 4)).copied().unwrap_or(b'?');
        let lo = DIGITS
            .get(usize::from(byte & 0x0F))
            .copied()
            .unwrap_or(b'?');
        write!(f, "{}{}", char::from(hi), char::from(lo))?;
    }
    Ok(())
}

/// Why a string is not the lower-case hex of `N` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseHexError {
    /// The string has the wrong number of characters.
    #[error("expected {expected} hex digits, found {found} characters")]
    Length {
        /// `2 * N`.
        expected: usize,
        /// The string's length in characters.
        found: usize,
    },
    /// A character that is not a lower-case hex digit (`0-9`, `a-f`):
    /// ids have exactly one text form, as they have one byte form.
    #[error("invalid hex digit {found:?} at index {index}")]
    InvalidDigit {
        /// Its index (in characters).
        index: usize,
        /// The character.
        found: char,
    },
}

fn digit(index: usize, c: char) -> Result<u8, ParseHexError> {
    match c {
        '0'..='9' => Ok(c as u8 - b'0'),
        'a'..='f' => Ok(c as u8 - b'a' + 10),
        found => Err(ParseHexError::InvalidDigit { index, found }),
    }
}

/// Parses exactly `2 * N` lower-case hex digits.
///
/// # Errors
///
/// [`ParseHexError`]: wrong length, or a character that is not a
/// lower-case hex digit.
pub fn parse<const N: usize>(s: &str) -> Result<[u8; N], ParseHexError> {
    let found = s.chars().count();
    if found != 2 * N {
        return Err(ParseHexError::Length {
            expected: 2 * N,
            found,
        });
    }
    let mut out = [0u8; N];
    let mut chars = s.chars().enumerate();
    for byte in &mut out {
        let (Some((i, hi)), Some((j, lo))) = (chars.next(), chars.next()) else {
            return Err(ParseHexError::Length {
                expected: 2 * N,
                found,
            });
        };
        *byte = (digit(i, hi)? << 4) | digit(j, lo)?;
    }
    Ok(out)
}

/// `serde` support: lower-case hex strings in human-readable formats
/// (JSON, TOML), raw bytes in binary ones.
#[cfg(feature = "serde")]
pub mod serde {
    use core::fmt;

    use serde::de::{Error, Visitor};
    use serde::{Deserializer, Serializer};

    /// Serializes `bytes` as hex text or raw bytes, by the format's kind.
    ///
    /// # Errors
    ///
    /// The serializer's.
    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        struct Hex<'a>(&'a [u8]);
        impl fmt::Display for Hex<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                super::write(f, self.0)
            }
        }
        if serializer.is_human_readable() {
            serializer.collect_str(&Hex(bytes))
        } else {
            serializer.serialize_bytes(bytes)
        }
    }

    /// Deserializes `N` bytes from hex text or raw bytes.
    ///
    /// # Errors
    ///
    /// The deserializer's, or a custom error for bad hex or a wrong length.
    pub fn deserialize<'de, D: Deserializer<'de>, const N: usize>(
        deserializer: D,
    ) -> Result<[u8; N], D::Error> {
        struct ArrayVisitor<const N: usize>;
        impl<const N: usize> Visitor<'_> for ArrayVisitor<N> {
            type Value = [u8; N];
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{} lower-case hex digits or {} bytes", 2 * N, N)
            }
            fn visit_str<E: Error>(self, s: &str) -> Result<[u8; N], E> {
                super::parse(s).map_err(E::custom)
            }
            fn visit_bytes<E: Error>(self, bytes: &[u8]) -> Result<[u8; N], E> {
                <[u8; N]>::try_from(bytes).map_err(|_| E::invalid_length(bytes.len(), &self))
            }
        }
        if deserializer.is_human_readable() {
            deserializer.deserialize_str(ArrayVisitor::<N>)
        } else {
            deserializer.deserialize_bytes(ArrayVisitor::<N>)
        }
    }
}

/// Implements `Display`/`Debug` (hex), `FromStr` (strict lower-case hex)
/// and, with the `serde` feature, `Serialize`/`Deserialize` for a type
/// with `as_bytes() -> &[u8; N]` and a constructor `fn([u8; N]) -> Self`.
#[doc(hidden)]
#[macro_export]
macro_rules! impl_hex_text {
    ($name:ident $(<$param:ident>)?, $len:expr, $from:ident) => {
        impl$(<$param: ?Sized>)? ::core::fmt::Display for $name$(<$param>)? {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                $crate::hex::write(f, self.as_bytes())
            }
        }

        impl$(<$param: ?Sized>)? ::core::fmt::Debug for $name$(<$param>)? {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(concat!(stringify!($name), "("))?;
                $crate::hex::write(f, self.as_bytes())?;
                f.write_str(")")
            }
        }

        impl$(<$param: ?Sized>)? ::core::str::FromStr for $name$(<$param>)? {
            type Err = $crate::hex::ParseHexError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $crate::hex::parse::<{ $len }>(s).map(Self::$from)
            }
        }

        $crate::__impl_hex_serde!($name $(<$param>)?, $len, $from);
    };
}

#[cfg(feature = "serde")]
#[doc(hidden)]
#[macro_export]
macro_rules! __impl_hex_serde {
    ($name:ident $(<$param:ident>)?, $len:expr, $from:ident) => {
        impl$(<$param: ?Sized>)? $crate::__serde::Serialize for $name$(<$param>)? {
            fn serialize<S: $crate::__serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $crate::hex::serde::serialize(self.as_bytes(), s)
            }
        }

        impl<'de $(, $param: ?Sized)?> $crate::__serde::Deserialize<'de> for $name$(<$param>)? {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::hex::serde::deserialize::<D, { $len }>(d).map(Self::$from)
            }
        }
    };
}

#[cfg(not(feature = "serde"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __impl_hex_serde {
    ($($tt:tt)*) => {};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_only_lower_case_hex_of_the_exact_length() {
        assert_eq!(parse::<1>("7f"), Ok([0x7f]));
        assert_eq!(parse::<0>(""), Ok([]));
        assert_eq!(
            parse::<1>("7g"),
            Err(ParseHexError::InvalidDigit {
                index: 1,
                found: 'g'
            })
        );
        assert_eq!(
            parse::<1>("é7"),
            Err(ParseHexError::InvalidDigit {
                index: 0,
                found: 'é'
            })
        );
        assert_eq!(
            parse::<1>("7f0"),
            Err(ParseHexError::Length {
                expected: 2,
                found: 3
            })
        );
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serde_is_hex_text_in_json_and_strict_on_the_way_back() {
        use crate::{Blob, Digest, PeerId};
        let id = PeerId::from_bytes([0xab; 32]);
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, alloc::format!("\"{}\"", "ab".repeat(32)));
        assert_eq!(serde_json::from_str::<PeerId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<PeerId>("\"AB\"").is_err());
        let digest = Blob::from_static(b"x").digest();
        let json = serde_json::to_string(&digest).unwrap();
        assert_eq!(serde_json::from_str::<Digest<Blob>>(&json).unwrap(), digest);
    }
}
