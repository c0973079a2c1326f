use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bytes::BufMut;
use ed25519_dalek::{SignatureError, VerifyingKey, PUBLIC_KEY_LENGTH};

/// A peer's identity: its 32-byte Ed25519 verifying key.
///
/// ```
/// use bijou_frame::signing::{Identity, PeerId};
/// use ed25519_dalek::SigningKey;
///
/// let key = SigningKey::from_bytes(&[7; 32]);
/// let id = key.peer_id();
/// assert_eq!(id, PeerId::from(key.verifying_key()));
/// assert_eq!(id.verifying_key()?, key.verifying_key());
///
/// // Text form: 64 lower-case hex digits, both ways.
/// let text = id.to_string();
/// assert_eq!(text.parse::<PeerId>()?, id);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// ```text
///   +---------------------------- 32 bytes ----------------------------+
///   | compressed Edwards-y point of the verifying key, as sent         |
///   +------------------------------------------------------------------+
/// ```
///
/// A `PeerId` is just the bytes; it is not checked to be a curve point until
/// [`PeerId::verifying_key`] is called. Ids read from signed payloads are
/// checked at decode time (see [`Signed::decode`](crate::Signed::decode)).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId([u8; PUBLIC_KEY_LENGTH]);

impl PeerId {
    /// An id from raw bytes (not checked to be a curve point).
    #[must_use]
    pub const fn from_bytes(bytes: [u8; PUBLIC_KEY_LENGTH]) -> Self {
        Self(bytes)
    }

    /// The raw bytes.
    #[must_use]
    pub const fn as_bytes(&self) -> &[u8; PUBLIC_KEY_LENGTH] {
        &self.0
    }

    /// Decompresses the id into a verifying key.
    ///
    /// # Errors
    ///
    /// [`SignatureError`] if the bytes are not a curve point.
    pub fn verifying_key(&self) -> Result<VerifyingKey, SignatureError> {
        VerifyingKey::from_bytes(&self.0)
    }
}

impl From<VerifyingKey> for PeerId {
    fn from(key: VerifyingKey) -> Self {
        Self(key.to_bytes())
    }
}

impl From<&VerifyingKey> for PeerId {
    fn from(key: &VerifyingKey) -> Self {
        Self(key.to_bytes())
    }
}

impl From<PeerId> for [u8; PUBLIC_KEY_LENGTH] {
    fn from(id: PeerId) -> Self {
        id.0
    }
}

impl AsRef<[u8]> for PeerId {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

crate::impl_hex_text!(PeerId, PUBLIC_KEY_LENGTH, from_bytes);

/// 32 raw bytes on the wire.
impl Wire for PeerId {
    type Error = ReadError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(&self.0);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        r.array("peer_id").map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn invalid_point_is_an_error_not_a_panic() {
        // y = 2 is not the y-coordinate of any edwards25519 point.
        let mut bytes = [0u8; 32];
        bytes[0] = 2;
        assert!(PeerId::from_bytes(bytes).verifying_key().is_err());
    }

    #[test]
    fn display_is_hex_of_the_key() {
        let id = PeerId::from_bytes([0xA5; 32]);
        assert_eq!(format!("{id}"), "a5".repeat(32));
        assert_eq!(format!("{id:?}"), format!("PeerId({})", "a5".repeat(32)));
        assert_eq!(
            PeerId::decode(bytes::Bytes::from_static(&[0xA5; 32])),
            Ok(id)
        );
        assert_eq!("a5".repeat(32).parse::<PeerId>(), Ok(id));
        assert!("A5".repeat(32).parse::<PeerId>().is_err());
    }
}
