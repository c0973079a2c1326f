use bijou_codec::ReadError;
use bijou_signing::{PeerId, Schema, VerifyError};

/// Why bytes are not a well-formed, authentic `SUK\0` message, or why a
/// keyhive exchange could not go on.
///
/// Errors of the keyhive layer: one enum, every variant with where it
/// happened (absolute offset in the `SUK\0` message) and what was found
/// against what was expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyhiveError {
    /// A fixed-width field (the header, or keyhive's binary signed
    /// envelope) is truncated, or bytes are left after it: with the field,
    /// its absolute offset and needed/have.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The first four bytes are not `SUK\0`.
    #[error("not a keyhive message: schema {found}, expected \"SUK\\0\"")]
    Schema {
        /// The bytes found.
        found: Schema,
    },
    /// `TotalSize` is not the message's length.
    #[error("SUK TotalSize declares {declared} bytes but the message has {actual}; the sender framed it wrongly or it was cut")]
    TotalSize {
        /// What `TotalSize` says.
        declared: u32,
        /// The message's length.
        actual: usize,
    },
    /// The CBOR ends inside `field`: a length or a value runs past the end
    /// of the message.
    #[error("CBOR truncated reading {field} at offset {offset}: the item needs {needed} bytes, {have} remain")]
    CborTruncated {
        /// The field being read.
        field: &'static str,
        /// Where its CBOR item starts.
        offset: usize,
        /// Bytes the item needs, as declared (saturating).
        needed: u64,
        /// Bytes that remain.
        have: usize,
    },
    /// A CBOR item has the wrong type (or an indefinite length, which
    /// keyhive's encoder never writes).
    #[error("CBOR {field} at offset {offset}: expected {expected}, found {found}")]
    CborType {
        /// The field being read.
        field: &'static str,
        /// Where its CBOR item starts.
        offset: usize,
        /// What the layout requires there.
        expected: &'static str,
        /// What the byte says is there.
        found: &'static str,
    },
    /// A map key is not the one the layout has at this position (keyhive
    /// writes its fields in one order; any other order, a missing or an
    /// extra field is refused).
    #[error("CBOR map key at offset {offset}: expected \"{expected}\", found another key; fields must come in keyhive's order")]
    CborKey {
        /// The key expected.
        expected: &'static str,
        /// Where the key starts.
        offset: usize,
    },
    /// A map has another number of entries than the layout.
    #[error("CBOR {field} at offset {offset}: a map of {found} entries, expected {expected}")]
    CborMapLen {
        /// The map.
        field: &'static str,
        /// Where it starts.
        offset: usize,
        /// Entries expected.
        expected: u64,
        /// Entries declared.
        found: u64,
    },
    /// A CBOR item is valid but not in the shortest form keyhive's
    /// encoder writes, so re-encoding would give other bytes.
    #[error("CBOR at offset {offset} is not in shortest form (the re-encoding differs there)")]
    NonCanonical {
        /// The first byte that differs from the shortest-form encoding.
        offset: usize,
    },
    /// A text or byte string is longer than its field allows.
    #[error("{field} at offset {offset}: {len} bytes, at most {max}")]
    TooLong {
        /// The field.
        field: &'static str,
        /// Where it starts.
        offset: usize,
        /// Its declared length.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// An event (an element of `found` or `ops`) is shorter than any event
    /// keyhive can parse ([`MIN_EVENT_LEN`](super::message::MIN_EVENT_LEN)
    /// bytes: a variant tag, the issuer key and the signature). Refused
    /// while decoding, so that a message of many tiny events cannot make
    /// the receiver hold far more memory than it sent.
    #[error("{field}[{index}] at offset {offset}: an event of {len} bytes, but a keyhive event has at least {min} (variant tag, issuer key, signature); the sender is not sending keyhive events")]
    EventTooShort {
        /// The list (`found` or `ops`).
        field: &'static str,
        /// The event's position in the list.
        index: usize,
        /// Where its CBOR item starts.
        offset: usize,
        /// Its length.
        len: usize,
        /// The shortest event keyhive can parse.
        min: usize,
    },
    /// A fixed-size byte string has another length.
    #[error("{field} at offset {offset}: {len} bytes, expected {expected}")]
    WrongLength {
        /// The field.
        field: &'static str,
        /// Where it starts.
        offset: usize,
        /// Its length.
        len: usize,
        /// The required length.
        expected: usize,
    },
    /// A text string is not UTF-8.
    #[error("{field} at offset {offset} is not UTF-8")]
    Utf8 {
        /// The field.
        field: &'static str,
        /// Where it starts.
        offset: usize,
    },
    /// The keyhive message kind (the enum variant name) is none of the
    /// seven keyhive 0.12 sends.
    #[error("unknown keyhive message kind at offset {offset} ({len}-byte name); known: SyncRequest, SyncResponse, SyncOps, RequestContactCard, MissingContactCard, SyncCheck, SyncConfirmation")]
    UnknownKind {
        /// Where the name starts.
        offset: usize,
        /// The name's length.
        len: usize,
    },
    /// The signed envelope's signature does not verify (`verify_strict`).
    #[error("keyhive signature by {issuer} rejected: {source}")]
    Signature {
        /// Who claims to have signed.
        issuer: PeerId,
        /// Why it failed.
        #[source]
        source: VerifyError,
    },
    /// Our signer failed to sign a keyhive message or a delegation (a
    /// remote or hardware signer may); nothing was signed.
    #[error("the signer for {issuer} failed to sign the keyhive message: check it holds that key and can be reached")]
    Signer {
        /// The key it was asked to sign with.
        issuer: PeerId,
    },
    /// The signed envelope is signed by another key than the one that ran
    /// the handshake.
    #[error("keyhive message signed by {issuer}, but the handshake authenticated {expected}")]
    WrongSigner {
        /// The signer.
        issuer: PeerId,
        /// The handshake's peer.
        expected: PeerId,
    },
    /// The message's `sender_id` is not its signer.
    #[error("keyhive message says it is from {sender} but is signed by {issuer}")]
    SenderMismatch {
        /// The `sender_id` field.
        sender: PeerId,
        /// The signer.
        issuer: PeerId,
    },
    /// A keyhive message out of turn in an exchange (or not between the
    /// exchange's two peers).
    #[error("unexpected keyhive {found} during registration; expected {expected}")]
    UnexpectedMessage {
        /// The kind received.
        found: &'static str,
        /// The kind the exchange waits for.
        expected: &'static str,
    },
    /// A tree id that is not an Ed25519 point: a keyhive server can hold
    /// no document for it, so it drops every push to it in silence.
    #[error("tree {tree} is not an Ed25519 point, so a keyhive server can never hold a document for it and drops every push to it; use a document key's tree id (DocumentKey::tree_id)")]
    TreeNotAPoint {
        /// The tree id.
        tree: crate::message::SedimentreeId,
    },
}
