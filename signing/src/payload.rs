use core::fmt;

use bijou_codec::{ReadError, Wire, WriteError};

use crate::Digest;

/// Length of the schema header.
pub const SCHEMA_LEN: usize = 4;
/// Length of the issuer's verifying key.
pub const ISSUER_LEN: usize = ed25519_dalek::PUBLIC_KEY_LENGTH;
/// Length of the Ed25519 signature.
pub const SIGNATURE_LEN: usize = ed25519_dalek::SIGNATURE_LENGTH;

/// A type that can be signed; see below for the rules.
///
/// A payload type is a [`Wire`] type (its wire form is its *fields*) with a
/// 4-byte schema and an optional discriminant byte (for types sharing a
/// schema, such as the handshake's Challenge and Response):
///
/// ```text
///   Schema(4) | Discriminant(0 or 1) | IssuerVK(32) | fields ... | Signature(64)
///   \_______ from the trait ______/                  \ Wire of /
///                                                     \  Self  /
/// ```
///
/// Rules for [`Wire::read_from`], which [`Signed`](crate::Signed) relies
/// on:
///
/// - **Self-delimiting.** Read exactly the fields and stop; the signature
///   follows. Never read "the rest".
/// - **Strict.** Reject anything [`Wire::write_to`] would not produce
///   (unsorted arrays, unknown flag values, ...): accepted fields must
///   re-encode to exactly the bytes read. `Signed` relies on this instead
///   of re-encoding on every decode; the crate's tests check it for every
///   payload type.
/// - **Bounded.** Check counts against the remaining input before
///   allocating ([`Reader::capacity_for`](bijou_codec::Reader::capacity_for),
///   [`Reader::ascending_arrays`](bijou_codec::Reader::ascending_arrays)).
///
/// ```
/// use bijou_frame::codec::{count, Reader, ReadError, Wire, WriteError, Writer};
/// use bijou_frame::signing::Payload;
/// use bytes::BufMut;
///
/// /// `Count u8 | Items N×8 (strictly ascending)`.
/// #[derive(Clone)]
/// struct Ids(Vec<[u8; 8]>);
///
/// impl Wire for Ids {
///     type Error = ReadError;
///     fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
///         w.count_u8("ids", self.0.len())?;
///         self.0.iter().for_each(|id| w.bytes(id));
///         Ok(())
///     }
///     fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
///         let count = r.u8("count")?;
///         Ok(Ids(r.ascending_arrays("ids", count.into())?))
///     }
/// }
///
/// impl Payload for Ids {
///     const SCHEMA: [u8; 4] = *b"IDS\x00";
/// }
///
/// let digest = Ids(vec![[1; 8], [2; 8]]).digest()?;
/// let mut hashed = b"IDS\x00".to_vec();
/// hashed.extend([2].iter().chain(&[1; 8]).chain(&[2; 8]));
/// assert_eq!(digest.as_bytes(), blake3::hash(&hashed).as_bytes());
/// # Ok::<(), WriteError>(())
/// ```
pub trait Payload: Wire<Error = ReadError> + Clone {
    /// The 4-byte schema header `[prefix0, prefix1, type, version]`.
    const SCHEMA: [u8; SCHEMA_LEN];

    /// The discriminant byte after the schema, for types that share a
    /// schema; `None` (the default) means no byte is written.
    const DISCRIMINANT: Option<u8> = None;

    /// The content digest BLAKE3(`SCHEMA` || fields), as
    /// [`Signed::digest`](crate::Signed::digest) computes it from the
    /// received bytes. The issuer, the discriminant and the signature are
    /// not part of it.
    ///
    /// # Errors
    ///
    /// As [`Wire::encode`].
    fn digest(&self) -> Result<Digest<Self>, WriteError> {
        let fields = self.encode()?;
        Ok(Digest::hash_parts(&[&Self::SCHEMA, &fields]))
    }
}

/// Bytes before the fields: schema, discriminant (if any), issuer.
pub(crate) const fn header_len<T: Payload>() -> usize {
    SCHEMA_LEN
        + match T::DISCRIMINANT {
            Some(_) => 1,
            None => 0,
        }
        + ISSUER_LEN
}

/// A 4-byte schema header, shown as text and hex: `"STC\0" (53 54 43 00)`.
///
/// ```
/// use bijou_frame::signing::Schema;
/// assert_eq!(Schema(*b"BRF\0").to_string(), r#""BRF\0" (42 52 46 00)"#);
/// assert_eq!(format!("{:?}", Schema([0xff, b'a', b'"', 7])), r#"Schema("\xffa\"\x07" (ff 61 22 07))"#);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Schema(pub [u8; SCHEMA_LEN]);

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for &byte in &self.0 {
            match byte {
                0 => f.write_str("\\0")?,
                b'"' | b'\\' => write!(f, "\\{}", char::from(byte))?,
                0x20..=0x7e => write!(f, "{}", char::from(byte))?,
                _ => write!(f, "\\x{byte:02x}")?,
            }
        }
        let [a, b, c, d] = self.0;
        write!(f, "\" ({a:02x} {b:02x} {c:02x} {d:02x})")
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Schema({self})")
    }
}

impl From<[u8; SCHEMA_LEN]> for Schema {
    fn from(bytes: [u8; SCHEMA_LEN]) -> Self {
        Self(bytes)
    }
}

impl PartialEq<[u8; SCHEMA_LEN]> for Schema {
    fn eq(&self, other: &[u8; SCHEMA_LEN]) -> bool {
        self.0 == *other
    }
}
