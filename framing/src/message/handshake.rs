//! [`HandshakeMessage`]: the `SUH\0` handshake. No outer envelope: the
//! signed bytes are the message.
//!
//! ```text
//!   Challenge (158 bytes, signed, discriminant 00)
//!   +--------+----+-------------+-------------+-------------+-----------+----------+--------+
//!   | "SUH\0"| 00 | IssuerVK 32 | AudienceTag | Audience 32 | Timestamp | Nonce 16 | Sig 64 |
//!   |        |    |             | u8 (00|01)  |             | u64 secs  |          |        |
//!   +--------+----+-------------+-------------+-------------+-----------+----------+--------+
//!                               \______________ 57 challenge field bytes __________/
//!
//!   Response (141 bytes, signed, discriminant 01)
//!   +--------+----+-------------+--------------------+-----------------+--------+
//!   | "SUH\0"| 01 | IssuerVK 32 | ChallengeDigest 32 | ServerTime u64  | Sig 64 |
//!   +--------+----+-------------+--------------------+-----------------+--------+
//!
//!   Rejection (14 bytes, unsigned)
//!   +--------+----+-----------+----------------+
//!   | "SUH\0"| 02 | Reason u8 | Timestamp u64  |
//!   +--------+----+-----------+----------------+
//!     Reason: 00 ClockDrift, 01 InvalidAudience, 02 ReplayedNonce, 03 InvalidSignature
//!
//!   ChallengeDigest = BLAKE3("SUH\0" || the 57 challenge field bytes)
//! ```
//!
//! ```
//! use bijou_framing::message::{Audience, Challenge, HandshakeMessage, Response};
//! use bijou_signing::{Payload, Signed, Signer};
//! use bijou_signing::ed25519_dalek::SigningKey;
//!
//! let client = SigningKey::from_bytes(&[1; 32]);
//! let server = SigningKey::from_bytes(&[2; 32]);
//! let challenge = Challenge::new(Audience::Known(server.peer_id()), 1_700_000_000, [7; 16]);
//! let hello = HandshakeMessage::Challenge(Signed::seal(&client, &challenge)?);
//! let wire = hello.encode();
//! assert_eq!(wire.len(), 158);
//!
//! let HandshakeMessage::Challenge(received) = HandshakeMessage::decode(wire.into())? else {
//!     unreachable!()
//! };
//! let received = received.verify_strict()?;
//! let response = Response::for_challenge(received.payload(), 1_700_000_001)?;
//! assert_eq!(response.challenge_digest(), received.digest());
//! let reply = HandshakeMessage::Response(Signed::seal(&server, &response)?).encode();
//! assert_eq!(reply.len(), 141);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use bijou_codec::{ReadError, Reader, WriteError, Writer};
use bijou_signing::{Digest, Payload, PeerId, Signed};
use bytes::Bytes;

use super::MessageError;

/// The handshake schema, shared by all three messages.
pub const HANDSHAKE_SCHEMA: [u8; 4] = *b"SUH\0";
/// Length of a signed challenge.
pub const CHALLENGE_LEN: usize = 158;
/// Length of a signed response.
pub const RESPONSE_LEN: usize = 141;
/// Length of a rejection.
pub const REJECTION_LEN: usize = 14;

/// Whom a challenge is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Audience {
    /// `00`: a specific peer, by its key.
    Known(PeerId),
    /// `01`: whoever serves this discovery id (a hash of a service name).
    Discover([u8; 32]),
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
    const DISCRIMINANT: Option<u8> = Some(0x00);

    fn encode_fields(&self, w: &mut Writer<'_>) -> Result<(), WriteError> {
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

    fn decode_fields(r: &mut Reader<'_>) -> Result<Self, ReadError> {
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

/// The server's signed answer (discriminant `01`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Response {
    challenge_digest: Digest<Challenge>,
    /// Server time, unix seconds.
    pub server_timestamp: u64,
}

impl Response {
    /// A response naming the challenge it answers by digest.
    #[must_use]
    pub const fn new(challenge_digest: Digest<Challenge>, server_timestamp: u64) -> Self {
        Self {
            challenge_digest,
            server_timestamp,
        }
    }

    /// The response to `challenge`: its digest
    /// BLAKE3(`SUH\0` || 57 field bytes) and the server's time.
    ///
    /// # Errors
    ///
    /// Never in practice (a challenge has no counts); the signature is the
    /// payload contract's.
    pub fn for_challenge(challenge: &Challenge, server_timestamp: u64) -> Result<Self, WriteError> {
        Ok(Self::new(challenge.digest()?, server_timestamp))
    }

    /// Digest of the challenge this answers.
    #[must_use]
    pub const fn challenge_digest(&self) -> Digest<Challenge> {
        self.challenge_digest
    }
}

impl Payload for Response {
    const SCHEMA: [u8; 4] = HANDSHAKE_SCHEMA;
    const DISCRIMINANT: Option<u8> = Some(0x01);

    fn encode_fields(&self, w: &mut Writer<'_>) -> Result<(), WriteError> {
        w.bytes(self.challenge_digest.as_bytes());
        w.u64(self.server_timestamp);
        Ok(())
    }

    fn decode_fields(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        Ok(Self {
            challenge_digest: Digest::from_bytes(r.array("challenge_digest")?),
            server_timestamp: r.u64("server_timestamp")?,
        })
    }
}

/// Why a server refused a challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectionReason {
    /// `00`: the client's clock is too far off.
    ClockDrift,
    /// `01`: the challenge is for someone else.
    InvalidAudience,
    /// `02`: the nonce was seen before.
    ReplayedNonce,
    /// `03`: the challenge's signature did not verify.
    InvalidSignature,
}

impl RejectionReason {
    /// The wire byte.
    #[must_use]
    pub const fn to_u8(self) -> u8 {
        match self {
            Self::ClockDrift => 0x00,
            Self::InvalidAudience => 0x01,
            Self::ReplayedNonce => 0x02,
            Self::InvalidSignature => 0x03,
        }
    }

    /// The reason for a wire byte, if it has one.
    #[must_use]
    pub const fn from_u8(byte: u8) -> Option<Self> {
        match byte {
            0x00 => Some(Self::ClockDrift),
            0x01 => Some(Self::InvalidAudience),
            0x02 => Some(Self::ReplayedNonce),
            0x03 => Some(Self::InvalidSignature),
            _ => None,
        }
    }
}

/// The server's unsigned refusal (tag `02`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rejection {
    /// Why.
    pub reason: RejectionReason,
    /// Server time, unix seconds (lets the client see the drift).
    pub timestamp: u64,
}

/// A handshake message; see the [module docs](self).
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
    /// The wire bytes: the signed bytes as they are, or the 14-byte
    /// rejection.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        match self {
            Self::Challenge(signed) => signed.to_bytes(),
            Self::Response(signed) => signed.to_bytes(),
            Self::Rejection(rejection) => {
                let mut out = Vec::with_capacity(REJECTION_LEN);
                out.extend_from_slice(&HANDSHAKE_SCHEMA);
                out.push(0x02);
                out.push(rejection.reason.to_u8());
                out.extend_from_slice(&rejection.timestamp.to_be_bytes());
                out.into()
            }
        }
    }

    /// Decodes a message that must be all of `frame` (zero-copy for the
    /// signed variants).
    ///
    /// # Errors
    ///
    /// [`MessageError`]: unknown schema or kind byte, a malformed signed
    /// message, an unknown rejection reason, truncation or trailing bytes.
    pub fn decode(frame: Bytes) -> Result<Self, MessageError> {
        let mut r = Reader::new(&frame);
        let schema = r.array::<4>("schema")?;
        if schema != HANDSHAKE_SCHEMA {
            return Err(MessageError::UnknownSchema { found: schema });
        }
        let kind_offset = r.offset();
        match r.u8("handshake_kind")? {
            0x00 => Signed::decode(frame.clone())
                .map(Self::Challenge)
                .map_err(|source| MessageError::Signed { offset: 0, source }),
            0x01 => Signed::decode(frame.clone())
                .map(Self::Response)
                .map_err(|source| MessageError::Signed { offset: 0, source }),
            0x02 => {
                let offset = r.offset();
                let byte = r.u8("rejection_reason")?;
                let reason = RejectionReason::from_u8(byte).ok_or(ReadError::UnknownValue {
                    field: "rejection_reason",
                    offset,
                    value: byte.into(),
                })?;
                let timestamp = r.u64("rejection_timestamp")?;
                r.finish()?;
                Ok(Self::Rejection(Rejection { reason, timestamp }))
            }
            other => Err(ReadError::UnknownValue {
                field: "handshake_kind",
                offset: kind_offset,
                value: other.into(),
            }
            .into()),
        }
    }
}
