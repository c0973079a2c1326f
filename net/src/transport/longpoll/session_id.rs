use core::fmt;
use core::str::FromStr;

/// A long-poll session's token: 16 bytes from the operating system's
/// random source, written as 32 lower-case hex digits in the
/// [`SESSION_ID_HEADER`](super::SESSION_ID_HEADER).
///
/// Comparing two ids takes the same time wherever they differ, and
/// `Debug` does not print the token (it is a credential).
///
/// ```
/// use bijou_frame::net::transport::longpoll::SessionId;
///
/// let id = SessionId::random()?;
/// let text = id.to_string();
/// assert_eq!(text.len(), 32);
/// assert_eq!(text.parse::<SessionId>()?, id);
/// assert!("not hex".parse::<SessionId>().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy)]
pub struct SessionId([u8; 16]);

impl SessionId {
    /// A fresh id from the operating system's random source.
    ///
    /// # Errors
    ///
    /// The operating system could not provide random bytes.
    pub fn random() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        Ok(Self(bytes))
    }

    /// The id's 16 bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The BLAKE3 hash of the id: what a server keys its sessions by, so
    /// that a lookup's timing says nothing about the token itself.
    #[must_use]
    pub fn digest(&self) -> blake3::Hash {
        blake3::hash(&self.0)
    }
}

impl From<[u8; 16]> for SessionId {
    fn from(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }
}

impl PartialEq for SessionId {
    /// Constant time: every byte is compared.
    fn eq(&self, other: &Self) -> bool {
        self.0
            .iter()
            .zip(other.0.iter())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
    }
}

impl Eq for SessionId {}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionId(..)")
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

/// A session id header that is not 32 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a session id is 32 hex digits (16 bytes); got {len} characters{}", if *.hex { "" } else { ", not all hex" })]
pub struct ParseSessionIdError {
    /// The text's length.
    pub len: usize,
    /// Whether every character was a hex digit.
    pub hex: bool,
}

impl FromStr for SessionId {
    type Err = ParseSessionIdError;

    /// 32 hex digits, either case (Subduction writes lower case).
    fn from_str(text: &str) -> Result<Self, ParseSessionIdError> {
        let hex = text.bytes().all(|b| b.is_ascii_hexdigit());
        let error = ParseSessionIdError {
            len: text.len(),
            hex,
        };
        if text.len() != 32 || !hex {
            return Err(error);
        }
        let mut bytes = [0u8; 16];
        for (byte, pair) in bytes.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
            let digits = core::str::from_utf8(pair).map_err(|_| error.clone())?;
            *byte = u8::from_str_radix(digits, 16).map_err(|_| error.clone())?;
        }
        Ok(Self(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_text_in_either_case() {
        let id = SessionId::from([0xAB; 16]);
        assert_eq!(id.to_string(), "ab".repeat(16));
        assert_eq!("AB".repeat(16).parse::<SessionId>(), Ok(id));
        assert_eq!(format!("{id:?}"), "SessionId(..)");
    }

    #[test]
    fn a_wrong_length_or_a_non_hex_digit_is_refused() {
        assert_eq!(
            "ab".repeat(15).parse::<SessionId>(),
            Err(ParseSessionIdError { len: 30, hex: true })
        );
        let mut text = "ab".repeat(16);
        text.replace_range(31.., "g");
        assert_eq!(
            text.parse::<SessionId>(),
            Err(ParseSessionIdError {
                len: 32,
                hex: false
            })
        );
        assert!("é".repeat(16).parse::<SessionId>().is_err());
    }

    #[test]
    fn ids_differing_in_any_byte_are_different() {
        let a = SessionId::from([7; 16]);
        for i in 0..16 {
            let mut bytes = [7; 16];
            bytes[i] ^= 1;
            assert_ne!(a, SessionId::from(bytes));
        }
        assert_eq!(a, SessionId::from([7; 16]));
    }
}
