//! [`PrefixKind`]: the three length prefixes as a value, for code that
//! picks one at run time (a command-line flag, a capture of unknown
//! origin) rather than as a type parameter.
//!
//! ```
//! use bijou_frame::framing::prefix::PrefixKind;
//!
//! let kind: PrefixKind = "leb128".parse()?;
//! assert_eq!(kind.decode(&[0xAC, 0x02]), Ok((300, 2)));
//! assert_eq!(PrefixKind::Bijou64.decode(&[0xF8, 0x34]), Ok((300, 2)));
//! assert_eq!(PrefixKind::U32Be.to_string(), "u32-be");
//! assert!("varint".parse::<PrefixKind>().is_err());
//! # Ok::<(), bijou_frame::framing::prefix::UnknownPrefix>(())
//! ```

use core::fmt;
use core::str::FromStr;

use super::{Bijou64, Leb128, LengthPrefix, PrefixError, U32Be};

/// One of the three [`LengthPrefix`] encodings, chosen at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum PrefixKind {
    /// [`Bijou64`], the default.
    #[default]
    Bijou64,
    /// [`Leb128`], canonical.
    Leb128,
    /// [`U32Be`], Subduction's QUIC framing.
    U32Be,
}

impl PrefixKind {
    /// All three, the default first.
    pub const ALL: [PrefixKind; 3] = [PrefixKind::Bijou64, PrefixKind::Leb128, PrefixKind::U32Be];

    /// The name used in messages and accepted by [`FromStr`]: `"bijou64"`,
    /// `"leb128"` or `"u32-be"` ([`LengthPrefix::NAME`]).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            PrefixKind::Bijou64 => Bijou64::NAME,
            PrefixKind::Leb128 => Leb128::NAME,
            PrefixKind::U32Be => U32Be::NAME,
        }
    }

    /// The longest prefix of this kind, in bytes.
    #[must_use]
    pub const fn max_len(self) -> usize {
        match self {
            PrefixKind::Bijou64 => Bijou64::MAX_LEN,
            PrefixKind::Leb128 => Leb128::MAX_LEN,
            PrefixKind::U32Be => U32Be::MAX_LEN,
        }
    }

    /// [`LengthPrefix::encode`] of this kind: a scratch array and how many
    /// of its bytes are the prefix; `None` if `len` does not fit.
    #[must_use]
    pub fn encode(self, len: u64) -> Option<([u8; super::MAX_PREFIX_LEN], usize)> {
        match self {
            PrefixKind::Bijou64 => Bijou64::encode(len),
            PrefixKind::Leb128 => Leb128::encode(len),
            PrefixKind::U32Be => U32Be::encode(len),
        }
    }

    /// [`LengthPrefix::decode`] of this kind.
    ///
    /// # Errors
    ///
    /// As [`LengthPrefix::decode`].
    pub fn decode(self, src: &[u8]) -> Result<(u64, usize), PrefixError> {
        match self {
            PrefixKind::Bijou64 => Bijou64::decode(src),
            PrefixKind::Leb128 => Leb128::decode(src),
            PrefixKind::U32Be => U32Be::decode(src),
        }
    }
}

impl fmt::Display for PrefixKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A prefix name that is none of `bijou64`, `leb128`, `u32-be` (or `u32`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown length prefix {given:?}: expected bijou64, leb128 or u32-be")]
pub struct UnknownPrefix {
    /// The text given (at most 32 bytes of it).
    pub given: String,
}

impl FromStr for PrefixKind {
    type Err = UnknownPrefix;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "bijou64" => Ok(PrefixKind::Bijou64),
            "leb128" => Ok(PrefixKind::Leb128),
            "u32-be" | "u32be" | "u32" => Ok(PrefixKind::U32Be),
            _ => Err(UnknownPrefix {
                given: s.chars().take(32).collect(),
            }),
        }
    }
}
