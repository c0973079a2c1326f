//! Length prefixes: how a frame announces the length of its payload.
//!
//! Every frame on the wire is a length prefix followed by exactly that many
//! payload bytes:
//!
//! ```text
//! +----------------+--------------------------------+
//! | length prefix  |  payload (length bytes)        |
//! +----------------+--------------------------------+
//!   1..=10 bytes,
//!   depends on P
//! ```
//!
//! [`FrameCodec`](crate::FrameCodec) is written once and is generic over a
//! [`LengthPrefix`]. Three are provided:
//!
//! | prefix        | bytes  | length known from | notes                                  |
//! |---------------|--------|-------------------|----------------------------------------|
//! | [`Bijou64`]   | 1..=9  | the first byte    | the default; canonical by construction |
//! | [`Leb128`]    | 1..=10 | the last byte     | canonical: overlong forms are rejected |
//! | [`U32Be`]     | 4      | always 4          | Subduction's QUIC framing              |
//!
//! [`PrefixKind`] names one of them at run time (a flag, a capture).
//!
//! The trait is sealed: the codec's guarantees (canonical prefixes, exact
//! error reporting) rest on these three implementations.
//!
//! ```
//! use bijou_frame::framing::prefix::{Bijou64, LengthPrefix, Leb128, PrefixError, U32Be};
//!
//! assert_eq!(Bijou64::decode(&[0xF8, 0x34, 0xAA]), Ok((300, 2)));
//! assert_eq!(Leb128::decode(&[0xAC, 0x02]), Ok((300, 2)));
//! assert_eq!(U32Be::decode(&[0, 0, 1, 0x2C]), Ok((300, 4)));
//! assert_eq!(Bijou64::decode(&[0xF9, 0x01]), Err(PrefixError::Incomplete { needed: 1 }));
//! ```

use core::fmt::Debug;

mod bijou64;
mod kind;
mod leb128;
mod u32_be;

pub use self::bijou64::Bijou64;
pub use self::kind::{PrefixKind, UnknownPrefix};
pub use self::leb128::Leb128;
pub use self::u32_be::U32Be;

/// The longest prefix any [`LengthPrefix`] writes (a 10-byte LEB128 `u64`).
pub const MAX_PREFIX_LEN: usize = 10;

/// Why bytes at the front of a buffer are not (yet) a length prefix.
///
/// ```
/// use bijou_frame::framing::prefix::{LengthPrefix, Leb128, PrefixError};
/// assert_eq!(Leb128::decode(&[0x80, 0x00]), Err(PrefixError::NonCanonical { prefix_len: 2 }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PrefixError {
    /// The prefix is not complete: at least `needed` more bytes are required.
    /// Exact for [`Bijou64`] and [`U32Be`]; a lower bound (always 1) for
    /// [`Leb128`], whose length is only known at its last byte.
    #[error("length prefix incomplete: at least {needed} more byte(s) needed")]
    Incomplete {
        /// At least this many more bytes are needed.
        needed: usize,
    },
    /// The prefix encodes a value beyond `u64::MAX` (bijou64 tier 8, or a
    /// LEB128 10th byte above `0x01` or with its continuation bit set).
    #[error("length prefix overflows u64")]
    Overflow,
    /// A LEB128 prefix of `prefix_len` bytes that has a shorter spelling.
    #[error("non-canonical length prefix: the {prefix_len}-byte form has a shorter one")]
    NonCanonical {
        /// Length of the rejected prefix.
        prefix_len: usize,
    },
}

mod sealed {
    pub trait Sealed {}
}

/// A length-prefix encoding; see the [module docs](self).
///
/// Implemented by [`Bijou64`], [`Leb128`] and [`U32Be`] (sealed). The
/// implementors are zero-sized unit structs; [`FrameCodec`](crate::FrameCodec)
/// takes one as a type parameter.
pub trait LengthPrefix:
    sealed::Sealed + Copy + Default + Debug + Send + Sync + Unpin + 'static
{
    /// A short name for messages (`"bijou64"`, `"leb128"`, `"u32-be"`).
    const NAME: &'static str;

    /// This prefix as a run-time value.
    const KIND: PrefixKind;

    /// The longest prefix this encoding writes, in bytes.
    const MAX_LEN: usize;

    /// The largest length this encoding can express.
    const MAX_VALUE: u64;

    /// Length in bytes of the prefix for `len`, or `None` if `len` exceeds
    /// [`LengthPrefix::MAX_VALUE`].
    ///
    /// ```
    /// use bijou_frame::framing::prefix::{Bijou64, LengthPrefix, U32Be};
    /// assert_eq!(Bijou64::encoded_len(247), Some(1));
    /// assert_eq!(Bijou64::encoded_len(248), Some(2));
    /// assert_eq!(U32Be::encoded_len(1 << 32), None);
    /// ```
    fn encoded_len(len: u64) -> Option<usize>;

    /// Encodes `len` into a scratch array; the prefix is its first `.1`
    /// bytes. `None` if `len` exceeds [`LengthPrefix::MAX_VALUE`].
    ///
    /// ```
    /// use bijou_frame::framing::prefix::{Leb128, LengthPrefix};
    /// let (bytes, n) = Leb128::encode(300).unwrap();
    /// assert_eq!(&bytes[..n], &[0xAC, 0x02]);
    /// ```
    fn encode(len: u64) -> Option<([u8; MAX_PREFIX_LEN], usize)>;

    /// Decodes the prefix at the front of `src`, returning the announced
    /// payload length and the prefix's own length in bytes. Bytes after the
    /// prefix are ignored.
    ///
    /// # Errors
    ///
    /// [`PrefixError::Incomplete`] if `src` ends inside the prefix (retry
    /// with more bytes), otherwise a terminal [`PrefixError`].
    ///
    /// ```
    /// use bijou_frame::framing::prefix::{Bijou64, LengthPrefix, PrefixError};
    /// assert_eq!(Bijou64::decode(&[0x05, 0xAA]), Ok((5, 1)));
    /// assert_eq!(Bijou64::decode(&[0xFF; 9]), Err(PrefixError::Overflow));
    /// ```
    fn decode(src: &[u8]) -> Result<(u64, usize), PrefixError>;
}
