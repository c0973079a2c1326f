use alloc::boxed::Box;
use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bijou_signing::Schema;
use bytes::BufMut;

use super::MessageError;

mod payload;
mod signed_ephemeral;
mod topics;

pub use payload::{EphemeralHeader, EphemeralPayload};
pub use signed_ephemeral::SignedEphemeral;
pub use topics::Topics;

/// The schema of every ephemeral message: **SU**bduction **E**phemeral v0.
pub const EPHEMERAL_SCHEMA: [u8; 4] = *b"SUE\0";

const TAG_EPHEMERAL: u8 = 0x00;
pub(crate) const TAG_SUBSCRIBE: u8 = 0x01;
pub(crate) const TAG_UNSUBSCRIBE: u8 = 0x02;
const TAG_SUBSCRIBE_REJECTED: u8 = 0x03;

/// A `SUE\0` message: the schema for non-persisted messages
/// (presence, cursors, "someone is typing"), byte-compatible with
/// `subduction_ephemeral` 0.10.
///
/// ```text
///   0        4     5
///   +--------+-----+--------------------------------------------------------+
///   | "SUE\0"| Tag | payload                                                |
///   +--------+-----+--------------------------------------------------------+
///
///   Tag  Variant            Payload
///   00   Ephemeral          the whole message is a Signed<EphemeralPayload>:
///                           Issuer 32 · Topic 32 · Nonce u64 · Timestamp u64
///                           · PayloadLen bijou64 · Payload · Signature 64
///   01   Subscribe          Count u16 · Count x Topic 32
///   02   Unsubscribe        Count u16 · Count x Topic 32
///   03   SubscribeRejected  Count u16 · Count x Topic 32
/// ```
///
/// Decoding is strict where `subduction_ephemeral` is lax: nothing may
/// follow the signature or the last topic, a topic list holds at least
/// one topic and none twice, the issuer key is a canonical encoding, and
/// an unknown tag is an error. So for every accepted `b`,
/// `encode(decode(b)) == b`. Topic lists keep their wire order (see
/// [`Topics`]).
///
/// | Tag | Type |
/// |---|---|
/// | 00 | [`SignedEphemeral`] of an [`EphemeralPayload`] |
/// | 01–03 | [`Topics`] |
///
/// ```
/// use bijou_frame::codec::Wire;
/// use bijou_frame::proto::message::{EphemeralMessage, Message, Topic, Topics};
///
/// let msg = EphemeralMessage::Subscribe(Topics::one(Topic::new([5; 32])));
/// let wire = msg.encode()?;
/// assert_eq!(&wire[..7], b"SUE\0\x01\x00\x01");
/// assert_eq!(wire.len(), 7 + 32);
/// assert_eq!(Message::decode(wire)?, Message::Ephemeral(msg));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EphemeralMessage {
    /// `00`: a signed payload for one topic (boxed: it is the large
    /// variant).
    Ephemeral(Box<SignedEphemeral>),
    /// `01`: "send me the messages of these topics".
    Subscribe(Topics),
    /// `02`: "stop sending me these topics".
    Unsubscribe(Topics),
    /// `03`: "I will not send you these topics" (the refused part of a
    /// Subscribe).
    SubscribeRejected(Topics),
}

impl From<SignedEphemeral> for EphemeralMessage {
    fn from(signed: SignedEphemeral) -> Self {
        Self::Ephemeral(Box::new(signed))
    }
}

impl EphemeralMessage {
    /// The tag byte after the schema.
    #[must_use]
    pub const fn tag(&self) -> u8 {
        match self {
            Self::Ephemeral(_) => TAG_EPHEMERAL,
            Self::Subscribe(_) => TAG_SUBSCRIBE,
            Self::Unsubscribe(_) => TAG_UNSUBSCRIBE,
            Self::SubscribeRejected(_) => TAG_SUBSCRIBE_REJECTED,
        }
    }

    /// What kind of message this is, for errors and logs.
    #[must_use]
    pub const fn kind_name(&self) -> &'static str {
        match self {
            Self::Ephemeral(_) => "ephemeral message",
            Self::Subscribe(_) => "ephemeral subscribe",
            Self::Unsubscribe(_) => "ephemeral unsubscribe",
            Self::SubscribeRejected(_) => "ephemeral subscribe-rejected",
        }
    }

    /// The topic list of a control message.
    fn topics(&self) -> Option<&Topics> {
        match self {
            Self::Ephemeral(_) => None,
            Self::Subscribe(t) | Self::Unsubscribe(t) | Self::SubscribeRejected(t) => Some(t),
        }
    }
}

impl Wire for EphemeralMessage {
    type Error = MessageError;

    fn wire_len(&self) -> Result<usize, WriteError> {
        match (self, self.topics()) {
            (Self::Ephemeral(signed), _) => signed.wire_len(),
            (_, Some(topics)) => Ok(EPHEMERAL_SCHEMA.len() + 1 + topics.wire_len()?),
            (_, None) => Ok(0),
        }
    }

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        match (self, self.topics()) {
            (Self::Ephemeral(signed), _) => signed.write_to(w),
            (_, Some(topics)) => {
                // Check the count before writing anything.
                topics.wire_len()?;
                w.bytes(&EPHEMERAL_SCHEMA);
                w.u8(self.tag());
                topics.write_to(w)
            }
            (_, None) => Ok(()),
        }
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        // Look at schema and tag on a copy: a signed message is read from
        // its first byte, a control message after its tag.
        let mut after_tag = r.clone();
        let schema = after_tag.array::<4>("schema")?;
        if schema != EPHEMERAL_SCHEMA {
            return Err(MessageError::UnknownSchema {
                found: Schema(schema),
            });
        }
        let tag_offset = after_tag.offset();
        let make = match after_tag.u8("tag")? {
            TAG_EPHEMERAL => {
                return SignedEphemeral::read_from(r)
                    .map(|signed| Self::Ephemeral(Box::new(signed)))
            }
            TAG_SUBSCRIBE => Self::Subscribe,
            TAG_UNSUBSCRIBE => Self::Unsubscribe,
            TAG_SUBSCRIBE_REJECTED => Self::SubscribeRejected,
            tag => {
                return Err(ReadError::UnknownValue {
                    field: "ephemeral tag",
                    offset: tag_offset,
                    value: tag.into(),
                }
                .into())
            }
        };
        *r = after_tag;
        Topics::read_from(r).map(make)
    }
}
