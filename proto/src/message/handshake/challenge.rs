//! [`Challenge`]: the initiator's signed opening message (kind `00`), and
//! its [`Audience`].
//!
//! ```text
//!   +--------+----+-------------+-------------+-------------+-----------+----------+--------+
//!   | "SUH\0"| 00 | IssuerVK 32 | AudienceTag | Audience 32 | Timestamp | Nonce 16 | Sig 64 |
//!   |        |    |             | u8 (00|01)  |             | u64 secs  |          |        |
//!   +--------+----+-------------+-------------+-------------+-----------+----------+--------+
//!                               \_______ fields (this type), 57 bytes _____________/
//! ```

use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bijou_signing::{Payload, PeerId};
use bytes::BufMut;

use super::{kind, HANDSHAKE_SCHEMA};

/// Whom a challenge is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Audience {
    /// `00`: a specific peer, by its key.
    Known(PeerId),
    /// `01`: whoever serves this discovery id (a hash of a service name).
    Discover([u8; 32]),
}

/// `peer <64 hex digits>` or `discovery id <64 hex digits>`, as an error
/// message names what a challenge was addressed to.
///
/// ```
/// use bijou_frame::proto::message::Audience;
/// let text = Audience::discover(b"sync.example.com").to_string();
/// assert!(text.starts_with("discovery id "));
/// assert_eq!(text.len(), "discovery id ".len() + 64);
/// ```
impl core::fmt::Display for Audience {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Known(peer) => write!(f, "peer {peer}"),
            Self::Discover(id) => {
                f.write_str("discovery id ")?;
                id.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
        }
    }
}

/// The discovery id of a service name: its BLAKE3 hash, as Subduction
/// derives it (`DiscoveryId::new`).
///
/// ```
/// use bijou_frame::proto::message::{discovery_id, Audience};
/// assert_eq!(discovery_id(b"sync.example.com"), *blake3::hash(b"sync.example.com").as_bytes());
/// assert_eq!(Audience::discover(b"sync.example.com"), Audience::Discover(discovery_id(b"sync.example.com")));
/// ```
#[must_use]
pub fn discovery_id(service_name: &[u8]) -> [u8; 32] {
    *blake3::hash(service_name).as_bytes()
}

impl Audience {
    /// Whoever serves `service_name` ([`Audience::Discover`] of its
    /// [`discovery_id`]).
    #[must_use]
    pub fn discover(service_name: &[u8]) -> Self {
        Self::Discover(discovery_id(service_name))
    }
}

/// The client's signed opening message (discriminant `00`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Challenge {
    /// Whom it is for.
    pub audience: Audience,
    /// Client time, unix seconds.
    pub timestamp: u64,
    /// Fresh random bytes against replay.
    pub nonce: [u8; 16],
}

impl Challenge {
    /// A challenge.
    #[must_use]
    pub const fn new(audience: Audience, timestamp: u64, nonce: [u8; 16]) -> Self {
        Self {
            audience,
            timestamp,
            nonce,
        }
    }
}

impl Payload for Challenge {
    const SCHEMA: [u8; 4] = HANDSHAKE_SCHEMA;
    const DISCRIMINANT: Option<u8> = Some(kind::CHALLENGE);
}

impl Wire for Challenge {
    type Error = ReadError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        let (tag, bytes) = match &self.audience {
            Audience::Known(peer) => (0x00, peer.as_bytes()),
            Audience::Discover(id) => (0x01, id),
        };
        w.u8(tag);
        w.bytes(bytes);
        w.u64(self.timestamp);
        w.bytes(&self.nonce);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let offset = r.offset();
        let tag = r.u8("audience_tag")?;
        let value = r.array::<32>("audience")?;
        let audience = match tag {
            0x00 => Audience::Known(PeerId::from_bytes(value)),
            0x01 => Audience::Discover(value),
            other => {
                return Err(ReadError::UnknownValue {
                    field: "audience_tag",
                    offset,
                    value: other.into(),
                })
            }
        };
        Ok(Self {
            audience,
            timestamp: r.u64("timestamp")?,
            nonce: r.array("nonce")?,
        })
    }
}
