use alloc::borrow::ToOwned;
use alloc::string::String;
use bijou_codec::{count, Reader, Wire, WriteError, Writer};
use bijou_signing::Schema;
use bytes::{BufMut, Bytes};

use minicbor::encode::Write;
use minicbor::Encoder;

use super::cbor::{cbor_difference, cbor_len, CborReader, ToWriter, WriteResult};
use super::error::KeyhiveError;
use super::signed::SignedKeyhive;

/// The schema of keyhive messages: **SU**bduction **K**eyhive, version 0.
pub const KEYHIVE_SCHEMA: [u8; 4] = *b"SUK\0";

/// Schema and TotalSize.
pub const HEADER_LEN: usize = 8;

/// The longest contact card accepted (a keyhive card is about 700 bytes of
/// JSON).
pub const MAX_CONTACT_CARD: u64 = 16 * 1024;

/// A sender's contact card: keyhive's `ContactCard` as JSON text, kept as
/// received (it introduces the sender; a sync client never needs to read
/// the server's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContactCardJson(String);

impl ContactCardJson {
    /// A card from its JSON text (not checked against keyhive's layout:
    /// see [`contact_card()`](super::contact_card()) to make ours).
    #[must_use]
    pub fn from_json(json: String) -> Self {
        Self(json)
    }

    /// The JSON text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The `SUK\0` message: keyhive's signed envelope and the sender's contact
/// card, in CBOR, behind Subduction's schema and size header
/// (`subduction_keyhive` 0.12 `KeyhiveMessage` around `SignedMessage`).
///
/// ```text
///   offset 0        4              8
///          "SUK\0" | TotalSize u32 BE (whole message, header included) |
///          CBOR map(2) {
///            "contactCard": text   JSON of keyhive's ContactCard, "" for none
///            "signed":      bytes  keyhive's signed envelope (see `SignedKeyhive`)
///          }
///
///   e.g.   53 55 4B 00  00 00 01 0B  A2  6B "contactCard"  60  66 "signed"  58 F8 <248 bytes>
/// ```
///
/// Decoding is strict: TotalSize must be the message's length, the map has
/// exactly these two keys in this order, every CBOR item is in shortest
/// form, nothing follows the map, and the signed envelope inside is read
/// whole (its keyhive message too). Nothing is allocated beyond what the
/// bytes hold: the envelope's byte strings are zero-copy slices of the
/// message.
///
/// The contact card is outside the signature (as in keyhive: a card
/// carries its own signature, checked by the receiver's keyhive when it
/// ingests the card). A sync client never reads the server's card, so it
/// is kept as received, not interpreted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SukMessage {
    /// The sender's contact card, if it sent one.
    pub contact_card: Option<ContactCardJson>,
    /// The signed keyhive message.
    pub signed: SignedKeyhive,
}

impl SukMessage {
    /// The message's length: header, the CBOR before the signed
    /// envelope's bytes, and those bytes (not checked against `TotalSize`'s
    /// 32 bits: [`Wire::wire_len`] does that).
    fn total_len(&self) -> usize {
        let prefix = cbor_len(|w| self.write_cbor_prefix(w));
        HEADER_LEN
            .saturating_add(prefix)
            .saturating_add(self.signed.wire_len())
    }

    /// The CBOR before the signed envelope's bytes: the map, the card and
    /// the `signed` key and byte-string head.
    fn write_cbor_prefix<W: Write<Error = core::convert::Infallible>>(
        &self,
        w: &mut Encoder<W>,
    ) -> WriteResult {
        let card = self
            .contact_card
            .as_ref()
            .map_or("", ContactCardJson::as_str);
        w.map(2)?
            .str("contactCard")?
            .str(card)?
            .str("signed")?
            .bytes_len(self.signed.wire_len() as u64)?;
        Ok(())
    }

    /// The message as bytes: [`Wire::encode`].
    ///
    /// # Errors
    ///
    /// [`WriteError::CountTooLarge`] for `SUK TotalSize` if the message
    /// would exceed 4 GiB, its 32-bit size field (send fewer events per
    /// message).
    pub fn to_bytes(&self) -> Result<Bytes, WriteError> {
        self.encode()
    }

    /// Decodes one whole `SUK\0` message.
    ///
    /// # Errors
    ///
    /// [`KeyhiveError`], with the field and its absolute offset.
    pub fn from_bytes(bytes: &Bytes) -> Result<Self, KeyhiveError> {
        let mut r = Reader::new(bytes);
        let message = Self::read(&mut r)?;
        r.finish()?;
        Ok(message)
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, KeyhiveError> {
        let schema = r.array::<4>("schema")?;
        if schema != KEYHIVE_SCHEMA {
            return Err(KeyhiveError::Schema {
                found: Schema(schema),
            });
        }
        let declared = r.u32("SUK TotalSize")?;
        let actual = r.remaining() + HEADER_LEN;
        if usize::try_from(declared).ok() != Some(actual) {
            return Err(KeyhiveError::TotalSize { declared, actual });
        }
        let cbor_start = r.offset();
        let cbor = r.rest();
        let mut c = CborReader::new(cbor, cbor_start);
        c.map("SUK envelope", 2)?;
        c.key("contactCard")?;
        let card = c.text("contactCard", MAX_CONTACT_CARD)?;
        let contact_card = (!card.is_empty()).then(|| ContactCardJson(card.to_owned()));
        c.key("signed")?;
        let (signed, content) = c.bytes("signed", u64::MAX)?;
        c.finish()?;
        // The signed envelope: a sub-reader over exactly its bytes, with
        // absolute offsets.
        r.bytes("SUK CBOR", content - r.offset())?;
        let sub = r.sub("keyhive signed envelope", signed.len())?;
        let message = Self {
            contact_card,
            signed: SignedKeyhive::read_from(sub)?,
        };
        // Shortest form: the CBOR before the signed envelope's bytes (the
        // map's heads, the card) must be what we would write.
        let before_signed = cbor.get(..content - cbor_start).unwrap_or_default();
        if let Some(at) = cbor_difference(before_signed, |w| message.write_cbor_prefix(w)) {
            return Err(KeyhiveError::NonCanonical {
                offset: cbor_start + at,
            });
        }
        Ok(message)
    }
}

impl Wire for SukMessage {
    type Error = KeyhiveError;

    fn wire_len(&self) -> Result<usize, WriteError> {
        let total = self.total_len();
        count::u32("SUK TotalSize", total)?;
        Ok(total)
    }

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(&KEYHIVE_SCHEMA);
        w.count_u32("SUK TotalSize", self.total_len())?;
        // Writing into the codec's writer cannot fail.
        let _ = self.write_cbor_prefix(&mut Encoder::new(ToWriter(&mut *w)));
        self.signed.write_to(w);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, KeyhiveError> {
        Self::read(r)
    }
}
