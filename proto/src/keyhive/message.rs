use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;
use bijou_signing::PeerId;
use bytes::Bytes;

use minicbor::encode::Write;
use minicbor::Encoder;

use super::cbor::{cbor_difference, write_cbor, CborReader, WriteResult};
use super::error::KeyhiveError;

/// An event hash: BLAKE3 of an event's binary form.
pub type EventHash = [u8; 32];

/// The longest peer-id suffix accepted (keyhive sets none on a server).
pub const MAX_SUFFIX: u64 = 1024;

/// A keyhive peer id: a verifying key and an optional suffix (keyhive's
/// `KeyhivePeerId`; two ids with the same key are the same identity).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyhivePeer {
    /// The Ed25519 verifying key.
    pub key: PeerId,
    /// A suffix that tells connections of one key apart (`None` from
    /// `subduction_cli`).
    pub suffix: Option<String>,
}

impl KeyhivePeer {
    /// The id of `key`, without suffix.
    #[must_use]
    pub fn new(key: PeerId) -> Self {
        Self { key, suffix: None }
    }
}

impl From<PeerId> for KeyhivePeer {
    fn from(key: PeerId) -> Self {
        Self::new(key)
    }
}

/// One keyhive protocol message. See below for the layout and keyhive's `Message` for what each one means.
///
/// Keyhive's protocol messages (`subduction_keyhive` 0.12 `Message`), the
/// payload its signed envelope carries, as the CBOR its encoder writes: an
/// externally tagged enum, a one-entry map from the kind's name to a map
/// of its fields, in declaration order.
///
/// ```text
///   { "SyncRequest":        { "sender_id": P, "target_id": P, "found": [H..], "pending": [H..] } }
///   { "SyncResponse":       { "sender_id": P, "target_id": P, "requested": [H..], "found": [E..],
///                             "sync_responder_total": u, "sync_requester_total": u } }
///   { "SyncOps":            { "sender_id": P, "target_id": P, "ops": [E..],
///                             "sync_responder_total": u, "sync_requester_total": u } }
///   { "RequestContactCard": { "sender_id": P, "target_id": P } }
///   { "MissingContactCard": { "sender_id": P, "target_id": P } }
///   { "SyncCheck":          { "sender_id": P, "target_id": P, "sender_total": u,
///                             "sender_syncpoint": u, "sender_digest": bytes(32) } }
///   { "SyncConfirmation":   { "sender_id": P, "target_id": P, "confirmer_total": u } }
///
///   P = { "verifying_key": bytes(32), "suffix": null | text }   a keyhive peer id
///   H = bytes(32)      an event hash: BLAKE3 of the event's binary form
///   E = bytes          one event in keyhive's binary form (see `RootDelegation`)
///   u = unsigned integer
/// ```
///
/// Decoding is strict: keys in this order and no others, definite lengths,
/// and the shortest form throughout (checked by re-encoding).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyhiveMessage {
    /// Start a sync: the hashes of the events the sender has for the pair,
    /// and of its pending ones.
    SyncRequest {
        /// Sender.
        sender: KeyhivePeer,
        /// Target.
        target: KeyhivePeer,
        /// Hashes of the events the sender offers.
        found: Vec<EventHash>,
        /// Hashes of events waiting for dependencies.
        pending: Vec<EventHash>,
    },
    /// The answer to a SyncRequest: what the responder wants, and the
    /// events it has that the requester lacks.
    SyncResponse {
        /// Sender (the responder).
        sender: KeyhivePeer,
        /// Target (the requester).
        target: KeyhivePeer,
        /// Hashes the responder asks for.
        requested: Vec<EventHash>,
        /// Events the responder sends, in keyhive's binary form.
        found: Vec<Bytes>,
        /// The responder's count, passed back in SyncOps.
        responder_total: u64,
        /// The requester's count, passed back in SyncOps.
        requester_total: u64,
    },
    /// The requested events.
    SyncOps {
        /// Sender (the requester).
        sender: KeyhivePeer,
        /// Target (the responder).
        target: KeyhivePeer,
        /// The events, in keyhive's binary form.
        ops: Vec<Bytes>,
        /// From the SyncResponse.
        responder_total: u64,
        /// From the SyncResponse.
        requester_total: u64,
    },
    /// "Send me your contact card" (sent with the sender's own card).
    RequestContactCard {
        /// Sender.
        sender: KeyhivePeer,
        /// Target.
        target: KeyhivePeer,
    },
    /// The answer to RequestContactCard (the card rides in the envelope).
    MissingContactCard {
        /// Sender.
        sender: KeyhivePeer,
        /// Target.
        target: KeyhivePeer,
    },
    /// A cheap "are we still in sync" check.
    SyncCheck {
        /// Sender.
        sender: KeyhivePeer,
        /// Target.
        target: KeyhivePeer,
        /// The sender's count for the pair.
        sender_total: u64,
        /// The sender's last confirmed count for the target.
        sender_syncpoint: u64,
        /// XOR of the sender's event hashes for the pair.
        sender_digest: [u8; 32],
    },
    /// The end of a sync exchange.
    SyncConfirmation {
        /// Sender (the confirmer).
        sender: KeyhivePeer,
        /// Target.
        target: KeyhivePeer,
        /// The confirmer's count for the pair.
        confirmer_total: u64,
    },
}

const KINDS: [&str; 7] = [
    "SyncRequest",
    "SyncResponse",
    "SyncOps",
    "RequestContactCard",
    "MissingContactCard",
    "SyncCheck",
    "SyncConfirmation",
];

/// The shortest event keyhive can parse, in bytes. An event is keyhive's
/// bincode `StaticEvent`: a `u32` variant tag, then a `Signed<_>` whose
/// payload is followed by the issuer key (a `u64` length and 32 bytes)
/// and the 64-byte signature. So any event holds at least those 108 bytes
/// whatever its payload, and keyhive's `bincode::deserialize` refuses
/// anything shorter (tested against keyhive in
/// `proto/tests/proto/keyhive_oracle.rs`). The smallest real one, a
/// `PrekeysExpanded`, is 140 bytes.
pub const MIN_EVENT_LEN: usize = 4 + 8 + 32 + 64;

/// Smallest encoding of one array element: a 32-byte string (2 + 32) for
/// hashes, a byte string of [`MIN_EVENT_LEN`] bytes (2 + 108) for events.
/// The decoders size their vectors by these, so a vector never holds more
/// elements than the bytes left could carry: 32 bytes in memory (a hash,
/// or a `Bytes` slice) for every 34 or 110 bytes on the wire.
const HASH_ITEM: usize = 34;
const EVENT_ITEM: usize = 2 + MIN_EVENT_LEN;

impl KeyhiveMessage {
    /// The kind's name, as on the wire.
    #[must_use]
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::SyncRequest { .. } => KINDS[0],
            Self::SyncResponse { .. } => KINDS[1],
            Self::SyncOps { .. } => KINDS[2],
            Self::RequestContactCard { .. } => KINDS[3],
            Self::MissingContactCard { .. } => KINDS[4],
            Self::SyncCheck { .. } => KINDS[5],
            Self::SyncConfirmation { .. } => KINDS[6],
        }
    }

    /// Who says it sent this.
    #[must_use]
    pub fn sender(&self) -> &KeyhivePeer {
        match self {
            Self::SyncRequest { sender, .. }
            | Self::SyncResponse { sender, .. }
            | Self::SyncOps { sender, .. }
            | Self::RequestContactCard { sender, .. }
            | Self::MissingContactCard { sender, .. }
            | Self::SyncCheck { sender, .. }
            | Self::SyncConfirmation { sender, .. } => sender,
        }
    }

    /// Whom it is for.
    #[must_use]
    pub fn target(&self) -> &KeyhivePeer {
        match self {
            Self::SyncRequest { target, .. }
            | Self::SyncResponse { target, .. }
            | Self::SyncOps { target, .. }
            | Self::RequestContactCard { target, .. }
            | Self::MissingContactCard { target, .. }
            | Self::SyncCheck { target, .. }
            | Self::SyncConfirmation { target, .. } => target,
        }
    }

    /// The CBOR bytes keyhive's encoder writes for this message.
    #[must_use]
    pub fn to_cbor(&self) -> Vec<u8> {
        write_cbor(|w| self.write(w))
    }

    fn write<W: Write<Error = core::convert::Infallible>>(
        &self,
        w: &mut Encoder<W>,
    ) -> WriteResult {
        w.map(1)?.str(self.kind_name())?;
        let fields = match self {
            Self::SyncRequest { .. } => 4,
            Self::SyncResponse { .. } => 6,
            Self::SyncOps { .. } => 5,
            Self::RequestContactCard { .. } | Self::MissingContactCard { .. } => 2,
            Self::SyncCheck { .. } => 5,
            Self::SyncConfirmation { .. } => 3,
        };
        w.map(fields)?;
        write_peer(w.str("sender_id")?, self.sender())?;
        write_peer(w.str("target_id")?, self.target())?;
        match self {
            Self::SyncRequest { found, pending, .. } => {
                write_hashes(w.str("found")?, found)?;
                write_hashes(w.str("pending")?, pending)?;
            }
            Self::SyncResponse {
                requested,
                found,
                responder_total,
                requester_total,
                ..
            } => {
                write_hashes(w.str("requested")?, requested)?;
                write_events(w.str("found")?, found)?;
                w.str("sync_responder_total")?.u64(*responder_total)?;
                w.str("sync_requester_total")?.u64(*requester_total)?;
            }
            Self::SyncOps {
                ops,
                responder_total,
                requester_total,
                ..
            } => {
                write_events(w.str("ops")?, ops)?;
                w.str("sync_responder_total")?.u64(*responder_total)?;
                w.str("sync_requester_total")?.u64(*requester_total)?;
            }
            Self::RequestContactCard { .. } | Self::MissingContactCard { .. } => {}
            Self::SyncCheck {
                sender_total,
                sender_syncpoint,
                sender_digest,
                ..
            } => {
                w.str("sender_total")?.u64(*sender_total)?;
                w.str("sender_syncpoint")?.u64(*sender_syncpoint)?;
                w.str("sender_digest")?.bytes(sender_digest)?;
            }
            Self::SyncConfirmation {
                confirmer_total, ..
            } => {
                w.str("confirmer_total")?.u64(*confirmer_total)?;
            }
        }
        Ok(())
    }

    /// Decodes keyhive's CBOR for one message, strictly; `payload` starts
    /// at absolute offset `base` (for errors). Events are zero-copy slices
    /// of `payload`.
    ///
    /// # Errors
    ///
    /// [`KeyhiveError`]: truncation, a wrong type or key, an unknown kind,
    /// trailing bytes, or a non-shortest form.
    pub fn from_cbor(payload: &Bytes, base: usize) -> Result<Self, KeyhiveError> {
        let mut r = CborReader::new(payload, base);
        r.map("message", 1)?;
        let kind_offset = r.offset();
        let kind = r.text("message kind", 64)?;
        let Some(kind) = KINDS.iter().position(|k| *k == kind) else {
            return Err(KeyhiveError::UnknownKind {
                offset: kind_offset,
                len: kind.len(),
            });
        };
        let fields = [4, 6, 5, 2, 2, 5, 3][kind];
        r.map(KINDS[kind], fields)?;
        r.key("sender_id")?;
        let sender = read_peer(&mut r, "sender_id")?;
        r.key("target_id")?;
        let target = read_peer(&mut r, "target_id")?;
        let message = match kind {
            0 => {
                r.key("found")?;
                let found = read_hashes(&mut r, "found")?;
                r.key("pending")?;
                let pending = read_hashes(&mut r, "pending")?;
                Self::SyncRequest {
                    sender,
                    target,
                    found,
                    pending,
                }
            }
            1 => {
                r.key("requested")?;
                let requested = read_hashes(&mut r, "requested")?;
                r.key("found")?;
                let found = read_events(&mut r, payload, "found")?;
                r.key("sync_responder_total")?;
                let responder_total = r.u64("sync_responder_total")?;
                r.key("sync_requester_total")?;
                let requester_total = r.u64("sync_requester_total")?;
                Self::SyncResponse {
                    sender,
                    target,
                    requested,
                    found,
                    responder_total,
                    requester_total,
                }
            }
            2 => {
                r.key("ops")?;
                let ops = read_events(&mut r, payload, "ops")?;
                r.key("sync_responder_total")?;
                let responder_total = r.u64("sync_responder_total")?;
                r.key("sync_requester_total")?;
                let requester_total = r.u64("sync_requester_total")?;
                Self::SyncOps {
                    sender,
                    target,
                    ops,
                    responder_total,
                    requester_total,
                }
            }
            3 => Self::RequestContactCard { sender, target },
            4 => Self::MissingContactCard { sender, target },
            5 => {
                r.key("sender_total")?;
                let sender_total = r.u64("sender_total")?;
                r.key("sender_syncpoint")?;
                let sender_syncpoint = r.u64("sender_syncpoint")?;
                r.key("sender_digest")?;
                let sender_digest = r.byte_array::<32>("sender_digest")?;
                Self::SyncCheck {
                    sender,
                    target,
                    sender_total,
                    sender_syncpoint,
                    sender_digest,
                }
            }
            _ => {
                r.key("confirmer_total")?;
                let confirmer_total = r.u64("confirmer_total")?;
                Self::SyncConfirmation {
                    sender,
                    target,
                    confirmer_total,
                }
            }
        };
        r.finish()?;
        if let Some(at) = cbor_difference(payload, |w| message.write(w)) {
            return Err(KeyhiveError::NonCanonical {
                offset: base.saturating_add(at),
            });
        }
        Ok(message)
    }
}

fn write_peer<W: Write<Error = core::convert::Infallible>>(
    w: &mut Encoder<W>,
    peer: &KeyhivePeer,
) -> WriteResult {
    w.map(2)?
        .str("verifying_key")?
        .bytes(peer.key.as_bytes())?
        .str("suffix")?;
    match &peer.suffix {
        Some(s) => w.str(s)?,
        None => w.null()?,
    };
    Ok(())
}

fn read_peer(r: &mut CborReader<'_>, field: &'static str) -> Result<KeyhivePeer, KeyhiveError> {
    r.map(field, 2)?;
    r.key("verifying_key")?;
    let key = PeerId::from_bytes(r.byte_array::<32>("verifying_key")?);
    r.key("suffix")?;
    let suffix = if r.at_null() {
        r.null("suffix")?;
        None
    } else {
        Some(r.text("suffix", MAX_SUFFIX)?.to_owned())
    };
    Ok(KeyhivePeer { key, suffix })
}

fn write_hashes<W: Write<Error = core::convert::Infallible>>(
    w: &mut Encoder<W>,
    hashes: &[EventHash],
) -> WriteResult {
    w.array(hashes.len() as u64)?;
    for h in hashes {
        w.bytes(h)?;
    }
    Ok(())
}

fn read_hashes(
    r: &mut CborReader<'_>,
    field: &'static str,
) -> Result<Vec<EventHash>, KeyhiveError> {
    let count = r.array(field, HASH_ITEM)?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        out.push(r.byte_array::<32>(field)?);
    }
    Ok(out)
}

fn write_events<W: Write<Error = core::convert::Infallible>>(
    w: &mut Encoder<W>,
    events: &[Bytes],
) -> WriteResult {
    w.array(events.len() as u64)?;
    for e in events {
        w.bytes(e)?;
    }
    Ok(())
}

fn read_events(
    r: &mut CborReader<'_>,
    payload: &Bytes,
    field: &'static str,
) -> Result<Vec<Bytes>, KeyhiveError> {
    let count = r.array(field, EVENT_ITEM)?;
    let mut out = Vec::with_capacity(count);
    for index in 0..count {
        let offset = r.offset();
        let (event, _) = r.bytes(field, u64::MAX)?;
        if event.len() < MIN_EVENT_LEN {
            return Err(KeyhiveError::EventTooShort {
                field,
                index,
                offset,
                len: event.len(),
                min: MIN_EVENT_LEN,
            });
        }
        // The event's bytes end where the reader now stands.
        let end = r.position();
        out.push(payload.slice(end - event.len()..end));
    }
    Ok(out)
}
