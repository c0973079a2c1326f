use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bijou_signing::{Schema, Signed};
use bytes::BufMut;

use super::MessageError;

mod challenge;
mod rejection;
mod response;

pub use challenge::{discovery_id, Audience, Challenge};
pub use rejection::{Rejection, RejectionReason};
pub use response::Response;

/// The handshake schema, shared by all three messages.
pub const HANDSHAKE_SCHEMA: [u8; 4] = *b"SUH\0";
/// Length of a signed challenge.
pub const CHALLENGE_LEN: usize = 158;
/// Length of a signed response.
pub const RESPONSE_LEN: usize = 141;
/// Length of a rejection.
pub const REJECTION_LEN: usize = 14;

/// Kind bytes (after the schema) of the three handshake messages.
pub mod kind {
    /// A signed [`Challenge`](super::Challenge).
    pub const CHALLENGE: u8 = 0x00;
    /// A signed [`Response`](super::Response).
    pub const RESPONSE: u8 = 0x01;
    /// A [`Rejection`](super::Rejection).
    pub const REJECTION: u8 = 0x02;
}

/// A `SUH\0` handshake message, dispatched on the kind byte after the
/// schema. No outer envelope: the signed bytes are the message.
///
/// ```text
///   Challenge (158 bytes, signed, discriminant 00)
///   +--------+----+-------------+-------------+-------------+-----------+----------+--------+
///   | "SUH\0"| 00 | IssuerVK 32 | AudienceTag | Audience 32 | Timestamp | Nonce 16 | Sig 64 |
///   |        |    |             | u8 (00|01)  |             | u64 secs  |          |        |
///   +--------+----+-------------+-------------+-------------+-----------+----------+--------+
///                               \______________ 57 challenge field bytes __________/
///
///   Response (141 bytes, signed, discriminant 01)
///   +--------+----+-------------+--------------------+-----------------+--------+
///   | "SUH\0"| 01 | IssuerVK 32 | ChallengeDigest 32 | ServerTime u64  | Sig 64 |
///   +--------+----+-------------+--------------------+-----------------+--------+
///
///   Rejection (14 bytes, unsigned)
///   +--------+----+-----------+----------------+
///   | "SUH\0"| 02 | Reason u8 | Timestamp u64  |
///   +--------+----+-----------+----------------+
///     Reason: 00 ClockDrift, 01 InvalidAudience, 02 ReplayedNonce, 03 InvalidSignature
///
///   ChallengeDigest = BLAKE3("SUH\0" || the 57 challenge field bytes)
/// ```
///
/// ```
/// use bijou_frame::codec::Wire;
/// use bijou_frame::proto::message::{Audience, Challenge, HandshakeMessage, Response};
/// use bijou_frame::signing::{Identity, Signed};
/// use bijou_frame::signing::ed25519_dalek::SigningKey;
///
/// let client = SigningKey::from_bytes(&[1; 32]);
/// let server = SigningKey::from_bytes(&[2; 32]);
/// let challenge = Challenge::new(Audience::Known(server.peer_id()), 1_700_000_000, [7; 16]);
/// let hello = HandshakeMessage::Challenge(Signed::seal(&client, &challenge)?);
/// let wire = hello.encode()?;
/// assert_eq!(wire.len(), 158);
///
/// let HandshakeMessage::Challenge(received) = HandshakeMessage::decode(wire)? else {
///     unreachable!()
/// };
/// let received = received.verify_strict()?;
/// let response = Response::for_challenge(received.payload(), 1_700_000_001)?;
/// assert_eq!(response.challenge_digest(), received.digest());
/// let reply = HandshakeMessage::Response(Signed::seal(&server, &response)?).encode()?;
/// assert_eq!(reply.len(), 141);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandshakeMessage {
    /// `SUH\0 00`: signed challenge.
    Challenge(Signed<Challenge>),
    /// `SUH\0 01`: signed response.
    Response(Signed<Response>),
    /// `SUH\0 02`: unsigned rejection.
    Rejection(Rejection),
}

impl HandshakeMessage {
    /// What kind of message this is, for errors and logs.
    #[must_use]
    pub const fn kind_name(&self) -> &'static str {
        match self {
            Self::Challenge(_) => "challenge",
            Self::Response(_) => "response",
            Self::Rejection(_) => "rejection",
        }
    }
}

/// Each variant's wire form includes the schema and the kind byte, so the
/// message is read from its first byte after a look at byte 4.
impl Wire for HandshakeMessage {
    type Error = MessageError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        match self {
            Self::Challenge(signed) => signed.write_to(w),
            Self::Response(signed) => signed.write_to(w),
            Self::Rejection(rejection) => rejection.write_to(w),
        }
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        let start = r.offset();
        let mut peek = r.clone();
        let schema = peek.array::<4>("schema")?;
        if schema != HANDSHAKE_SCHEMA {
            return Err(MessageError::UnknownSchema {
                found: Schema(schema),
            });
        }
        let kind_offset = peek.offset();
        let signed = |source| MessageError::Signed {
            offset: start,
            source,
        };
        match peek.u8("handshake_kind")? {
            kind::CHALLENGE => Signed::read_from(r).map(Self::Challenge).map_err(signed),
            kind::RESPONSE => Signed::read_from(r).map(Self::Response).map_err(signed),
            kind::REJECTION => Rejection::read_from(r).map(Self::Rejection),
            other => Err(ReadError::UnknownValue {
                field: "handshake_kind",
                offset: kind_offset,
                value: other.into(),
            }
            .into()),
        }
    }
}
