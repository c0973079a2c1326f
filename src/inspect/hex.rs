//! Hex text (as `xxd -p` or a log prints it) to bytes, with errors that
//! name the text position.
//!
//! ```
//! use bijou_frame::inspect::hex::{parse_hex, HexError};
//!
//! assert_eq!(parse_hex(b"0a FF\n10"), Ok(vec![0x0a, 0xff, 0x10]));
//! assert_eq!(
//!     parse_hex(b"0a zz"),
//!     Err(HexError::InvalidDigit { digit: 'z', position: 3, byte_offset: 1 })
//! );
//! ```

/// Why text is not hex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HexError {
    /// A character that is neither a hex digit nor whitespace.
    #[error("invalid hex digit {digit:?} at text position {position} (byte offset {byte_offset})")]
    InvalidDigit {
        /// The character (a byte above 0x7F shows as its Latin-1 value).
        digit: char,
        /// Its position in the text, in bytes.
        position: usize,
        /// How many bytes had been decoded before it.
        byte_offset: usize,
    },
    /// An odd number of digits: the last one has no pair.
    #[error("odd number of hex digits: the last one, at text position {position}, has no pair")]
    OddDigits {
        /// The unpaired digit's position in the text.
        position: usize,
    },
}

/// Hex text to bytes; ASCII whitespace is ignored anywhere.
///
/// # Errors
///
/// [`HexError`], with the position of the offending character.
pub fn parse_hex(text: &[u8]) -> Result<Vec<u8>, HexError> {
    let mut out = Vec::with_capacity(text.len() / 2);
    let mut high: Option<(u8, usize)> = None;
    for (position, &c) in text.iter().enumerate() {
        if c.is_ascii_whitespace() {
            continue;
        }
        let Some(nibble) = char::from(c)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
        else {
            return Err(HexError::InvalidDigit {
                digit: char::from(c),
                position,
                byte_offset: out.len(),
            });
        };
        high = match high {
            None => Some((nibble, position)),
            Some((h, _)) => {
                out.push(h << 4 | nibble);
                None
            }
        };
    }
    match high {
        Some((_, position)) => Err(HexError::OddDigits { position }),
        None => Ok(out),
    }
}

/// Whether `text` looks like hex text: at least two digits, nothing but
/// hex digits and ASCII whitespace. A binary capture never does (its
/// messages start with `SUM\0`, `SUH\0` or `SUE\0`).
#[must_use]
pub fn looks_like_hex(text: &[u8]) -> bool {
    let mut digits = 0usize;
    for &c in text {
        if c.is_ascii_hexdigit() {
            digits += 1;
        } else if !c.is_ascii_whitespace() {
            return false;
        }
    }
    digits >= 2 && digits.is_multiple_of(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_position() {
        assert_eq!(parse_hex(b"0a f"), Err(HexError::OddDigits { position: 3 }));
        assert!(looks_like_hex(b"f8 34\n"));
        assert!(!looks_like_hex(b"\x05SUM\0"));
        assert!(!looks_like_hex(b"abc"));
        assert!(!looks_like_hex(b""));
    }
}
