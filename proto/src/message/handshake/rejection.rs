//! [`Rejection`]: the responder's unsigned refusal (kind `02`), 14 bytes.
//!
//! ```text
//!   +--------+----+-----------+----------------+
//!   | "SUH\0"| 02 | Reason u8 | Timestamp u64  |
//!   +--------+----+-----------+----------------+
//!     Reason: 00 ClockDrift, 01 InvalidAudience, 02 ReplayedNonce, 03 InvalidSignature
//! ```
//!
//! ```
//! use bijou_frame::codec::Wire;
//! use bijou_frame::proto::message::{Rejection, RejectionReason};
//!
//! let rejection = Rejection { reason: RejectionReason::ReplayedNonce, timestamp: 7 };
//! let wire = rejection.encode()?;
//! assert_eq!(&wire[..], b"SUH\0\x02\x02\0\0\0\0\0\0\0\x07");
//! assert_eq!(Rejection::decode(wire)?, rejection);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bijou_signing::Schema;
use bytes::BufMut;

use super::{kind, HANDSHAKE_SCHEMA};
use crate::message::MessageError;

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

/// The server's unsigned refusal (kind `02`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rejection {
    /// Why.
    pub reason: RejectionReason,
    /// Server time, unix seconds (lets the client see the drift).
    pub timestamp: u64,
}

/// The whole 14-byte message, schema and kind included.
impl Wire for Rejection {
    type Error = MessageError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(&HANDSHAKE_SCHEMA);
        w.u8(kind::REJECTION);
        w.u8(self.reason.to_u8());
        w.u64(self.timestamp);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        let schema = r.array::<4>("schema")?;
        if schema != HANDSHAKE_SCHEMA {
            return Err(MessageError::UnknownSchema {
                found: Schema(schema),
            });
        }
        let offset = r.offset();
        let found = r.u8("handshake_kind")?;
        if found != kind::REJECTION {
            return Err(ReadError::UnknownValue {
                field: "handshake_kind",
                offset,
                value: found.into(),
            }
            .into());
        }
        let offset = r.offset();
        let byte = r.u8("rejection_reason")?;
        let reason = RejectionReason::from_u8(byte).ok_or(ReadError::UnknownValue {
            field: "rejection_reason",
            offset,
            value: byte.into(),
        })?;
        Ok(Self {
            reason,
            timestamp: r.u64("rejection_timestamp")?,
        })
    }
}
