use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bijou_signing::Payload;
use bytes::{BufMut, Bytes};

use super::super::{fields::write_blob, Topic};
use super::EPHEMERAL_SCHEMA;

/// Bytes of a `Signed<EphemeralPayload>` before its fields: schema,
/// discriminant and issuer.
pub(crate) const SIGNED_HEADER_LEN: usize = 4 + 1 + 32;

/// One non-persisted message: a topic, a nonce against replays, the time it
/// was made and an opaque payload (below).
///
/// What an ephemeral message signs (schema `SUE\0`,
/// discriminant `00`), and [`EphemeralHeader`], its fixed fields read
/// before verification.
///
/// Wire form inside a [`Signed<EphemeralPayload>`](bijou_signing::Signed),
/// which adds the schema, the discriminant, the issuer and the signature
/// around the fields:
///
/// ```text
///   0        4    5             37         69         77            85
///   +--------+----+-------------+----------+----------+-------------+------------+---------+-----------+
///   | "SUE\0"| 00 | Issuer 32   | Topic 32 | Nonce    | Timestamp   | PayloadLen | Payload | Signature |
///   |        |    |             |          | u64 BE   | u64 BE (s)  | bijou64    | Len     | 64        |
///   +--------+----+-------------+----------+----------+-------------+------------+---------+-----------+
///                               \__________________ fields (this type) ______________________/
/// ```
///
/// The payload is opaque to this layer and may be empty. Its size is not
/// limited here (the frame bounds it); the session's
/// [`EphemeralConfig::max_payload`](crate::ephemeral::EphemeralConfig)
/// refuses large ones before verifying.
///
/// ```
/// use bijou_frame::proto::message::{EphemeralPayload, Topic};
/// use bijou_frame::codec::Wire;
///
/// let payload = EphemeralPayload::new(Topic::new([7; 32]), 42, 1_700_000_000, &b"cursor 3:14"[..]);
/// let fields = payload.encode()?;
/// assert_eq!(fields.len(), 32 + 8 + 8 + 1 + 11);
/// assert_eq!(EphemeralPayload::decode(fields)?, payload);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EphemeralPayload {
    topic: Topic,
    nonce: u64,
    timestamp: u64,
    payload: Bytes,
}

impl EphemeralPayload {
    /// A payload for `topic`, made at `timestamp` (unix seconds), with a
    /// `nonce` that must be fresh for this issuer (random is right).
    #[must_use]
    pub fn new(topic: Topic, nonce: u64, timestamp: u64, payload: impl Into<Bytes>) -> Self {
        Self {
            topic,
            nonce,
            timestamp,
            payload: payload.into(),
        }
    }

    /// The topic it was published to.
    #[must_use]
    pub const fn topic(&self) -> Topic {
        self.topic
    }

    /// Its deduplication nonce.
    #[must_use]
    pub const fn nonce(&self) -> u64 {
        self.nonce
    }

    /// When it was made, unix seconds.
    #[must_use]
    pub const fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// The application payload (a zero-copy slice of the received frame).
    #[must_use]
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }
}

impl Payload for EphemeralPayload {
    const SCHEMA: [u8; 4] = EPHEMERAL_SCHEMA;
    const DISCRIMINANT: Option<u8> = Some(0x00);
}

/// `Topic 32 · Nonce u64 · Timestamp u64 · PayloadLen bijou64 · Payload`.
impl Wire for EphemeralPayload {
    type Error = ReadError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(self.topic.as_bytes());
        w.u64(self.nonce);
        w.u64(self.timestamp);
        write_blob(w, &self.payload);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let header = EphemeralHeader::read_fixed(r)?;
        let len = r.bijou64("payload_len")?;
        Ok(Self {
            topic: header.topic,
            nonce: header.nonce,
            timestamp: header.timestamp,
            payload: r.shared_u64("payload", len)?,
        })
    }
}

/// The fields of a received ephemeral message that the cheap checks need
/// (size, age, topic, nonce), read without verifying the signature.
///
/// **Unverified claims**: anyone can write any value here. Use them only to
/// refuse a message before paying for its verification, never to act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EphemeralHeader {
    /// The claimed topic.
    pub topic: Topic,
    /// The claimed nonce.
    pub nonce: u64,
    /// The claimed creation time, unix seconds.
    pub timestamp: u64,
    /// The declared payload length (checked against the message by
    /// decoding).
    pub payload_len: u64,
}

impl EphemeralHeader {
    /// Reads topic, nonce and timestamp; the payload length is filled in by
    /// the caller.
    fn read_fixed(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        Ok(Self {
            topic: Topic::new(r.array("topic")?),
            nonce: r.u64("nonce")?,
            timestamp: r.u64("timestamp")?,
            payload_len: 0,
        })
    }

    /// The header of a decoded `Signed<EphemeralPayload>`'s bytes.
    pub(crate) fn of_signed(bytes: &Bytes) -> Result<Self, ReadError> {
        let mut r = Reader::new(bytes);
        r.bytes("signed_header", SIGNED_HEADER_LEN)?;
        let mut header = Self::read_fixed(&mut r)?;
        header.payload_len = r.bijou64("payload_len")?;
        Ok(header)
    }
}
