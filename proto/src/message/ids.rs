use core::hash::Hasher;

use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bytes::BufMut;
use siphasher::sip::SipHasher24;

macro_rules! id32 {
    ($(#[$doc:meta])* $name:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name([u8; 32]);

        impl $name {
            /// The id with these 32 bytes.
            #[must_use]
            pub const fn new(bytes: [u8; 32]) -> Self {
                Self(bytes)
            }

            /// The 32 bytes.
            #[must_use]
            pub const fn as_bytes(&self) -> &[u8; 32] {
                &self.0
            }
        }

        impl From<[u8; 32]> for $name {
            fn from(bytes: [u8; 32]) -> Self {
                Self(bytes)
            }
        }

        impl AsRef<[u8; 32]> for $name {
            fn as_ref(&self) -> &[u8; 32] {
                &self.0
            }
        }

        impl From<$name> for [u8; 32] {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        bijou_signing::impl_hex_text!($name, 32, new);

        /// 32 raw bytes on the wire.
        impl Wire for $name {
            type Error = ReadError;

            fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
                w.bytes(&self.0);
                Ok(())
            }

            fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
                r.array($field).map(Self)
            }
        }
    };
}

id32!(
    /// A sedimentree (document) id: 32 opaque bytes. Signed commits and
    /// fragments carry it, which binds them to one document.
    SedimentreeId,
    "sedimentree_id"
);

id32!(
    /// An ephemeral topic: 32 opaque bytes naming a channel for
    /// non-persisted messages (presence, cursors). Often a document's
    /// [`SedimentreeId`], but not necessarily.
    Topic,
    "topic"
);

impl From<SedimentreeId> for Topic {
    fn from(id: SedimentreeId) -> Self {
        Self(*id.as_bytes())
    }
}

id32!(
    /// A commit id: 32 opaque, caller-supplied bytes (for Automerge, the
    /// change hash). Ordered byte-wise, which is the wire order of sorted
    /// arrays.
    CommitId,
    "commit_id"
);

/// The 128-bit key for [`Fingerprint`]s, chosen by the requester of a sync
/// (fresh per request, so nobody can precompute collisions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FingerprintSeed {
    key0: u64,
    key1: u64,
}

impl FingerprintSeed {
    /// A seed from SipHash's two 64-bit keys.
    #[must_use]
    pub const fn new(key0: u64, key1: u64) -> Self {
        Self { key0, key1 }
    }

    /// The first key (`SeedKey0` on the wire).
    #[must_use]
    pub const fn key0(&self) -> u64 {
        self.key0
    }

    /// The second key (`SeedKey1` on the wire).
    #[must_use]
    pub const fn key1(&self) -> u64 {
        self.key1
    }

    /// SipHash-2-4, keyed by this seed, of the commit id's 32 bytes.
    #[must_use]
    pub fn fingerprint(&self, id: &CommitId) -> Fingerprint {
        let mut hasher = SipHasher24::new_with_keys(self.key0, self.key1);
        hasher.write(id.as_bytes());
        Fingerprint(hasher.finish())
    }
}

/// A 64-bit keyed hash of a commit id; see [`FingerprintSeed::fingerprint`].
/// Sent as 8 big-endian bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Fingerprint(u64);

impl From<[u8; 8]> for Fingerprint {
    /// The wire form: 8 bytes, big-endian.
    fn from(bytes: [u8; 8]) -> Self {
        Self(u64::from_be_bytes(bytes))
    }
}

impl Fingerprint {
    /// A fingerprint with this value (as read off the wire).
    #[must_use]
    pub const fn from_u64(value: u64) -> Self {
        Self(value)
    }

    /// The value.
    #[must_use]
    pub const fn as_u64(&self) -> u64 {
        self.0
    }

    /// The wire form: 8 bytes, big-endian.
    #[must_use]
    pub const fn to_be_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_siphash24_of_the_id_bytes() {
        // The SipHash-2-4 reference vectors: key 00..0f, message 00..1f.
        let key = core::array::from_fn::<u8, 16, _>(|i| i as u8);
        let k0 = u64::from_le_bytes(key[..8].try_into().unwrap());
        let k1 = u64::from_le_bytes(key[8..].try_into().unwrap());
        let msg = core::array::from_fn::<u8, 32, _>(|i| i as u8);
        let fp = FingerprintSeed::new(k0, k1).fingerprint(&CommitId::new(msg));
        // vectors_sip64[32] of the reference implementation (little-endian).
        let expected = u64::from_le_bytes([0xce, 0x7c, 0xf2, 0x72, 0x2f, 0x51, 0x27, 0x71]);
        assert_eq!(fp.as_u64(), expected);
    }

    #[test]
    fn ids_format_as_hex() {
        let id = CommitId::new([0xAB; 32]);
        assert!(format!("{id:?}").starts_with("CommitId(abab"));
        assert_eq!(format!("{id}").len(), 64);
        let tree = SedimentreeId::new([0x01; 32]);
        assert_eq!(tree.to_string().parse::<SedimentreeId>(), Ok(tree));
        assert!("01".repeat(31).parse::<SedimentreeId>().is_err());
    }

    #[cfg(feature = "serde")]
    #[test]
    fn ids_serialize_as_hex_text() {
        let id = SedimentreeId::new([0x0f; 32]);
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{}\"", "0f".repeat(32)));
        assert_eq!(serde_json::from_str::<SedimentreeId>(&json).unwrap(), id);
        let commit = CommitId::new([1; 32]);
        let back: CommitId =
            serde_json::from_str(&serde_json::to_string(&commit).unwrap()).unwrap();
        assert_eq!(back, commit);
    }
}
