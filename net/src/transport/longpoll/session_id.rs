use core::fmt;
use core::str::FromStr;

use bijou_signing::hex::{self, ParseHexError};

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
        hex::write(f, &self.0)
    }
}

impl FromStr for SessionId {
    type Err = ParseHexError;

    /// 32 lower-case hex digits: the one text form, as our server writes
    /// it and Subduction's client sends it back.
    fn from_str(text: &str) -> Result<Self, ParseHexError> {
        hex::parse::<16>(text).map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_their_one_text_form() {
        let id = SessionId::from([0xAB; 16]);
        assert_eq!(id.to_string(), "ab".repeat(16));
        assert_eq!("ab".repeat(16).parse::<SessionId>(), Ok(id));
        assert_eq!(format!("{id:?}"), "SessionId(..)");
    }

    #[test]
    fn a_wrong_length_or_a_non_hex_digit_is_refused() {
        assert_eq!(
            "ab".repeat(15).parse::<SessionId>(),
            Err(ParseHexError::Length {
                expected: 32,
                found: 30
            })
        );
        assert!("AB".repeat(16).parse::<SessionId>().is_err());
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
