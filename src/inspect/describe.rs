//! One decoded frame, described line by line: its message type and fields,
//! whether its signature verifies (`verify_strict`) and whether its blob
//! matches the signed digest. Fields of a signed message are shown only
//! once it verifies.

use std::fmt::Write as _;
use std::io::{self, Write};

use bijou_codec::Wire;
use bijou_proto::keyhive::{KeyhiveMessage, SukMessage};
use bijou_proto::message::{
    Audience, BlobMessage, EphemeralMessage, HandshakeMessage, Message, Scoped, SyncMessage,
    SyncResult,
};
use bijou_signing::{HasBlobMeta, Payload};
use bytes::Bytes;

/// Writes a description of the message in `frame` (its payload, which
/// starts at capture offset `start`), four spaces in. Returns `false` if
/// it does not decode, or does not verify.
///
/// # Errors
///
/// Only the writer's.
pub fn describe(frame: Bytes, start: usize, out: &mut impl Write) -> io::Result<bool> {
    let msg = match Message::decode(frame) {
        Ok(msg) => msg,
        Err(e) => {
            writeln!(
                out,
                "    MALFORMED message (payload starts at offset {start}; offsets below are relative to it): {e}"
            )?;
            return Ok(false);
        }
    };
    match msg {
        Message::Handshake(h) => handshake(&h, out),
        Message::Sync(s) => sync(&s, out),
        Message::Ephemeral(e) => ephemeral(&e, out),
        Message::Keyhive(k) => keyhive(&k, out),
    }
}

/// A keyhive message: its kind, signer and contact card; its fields once
/// the signature verifies against the key it names (a capture has no
/// handshake to say whose it should be).
fn keyhive(m: &SukMessage, out: &mut impl Write) -> io::Result<bool> {
    let message = &m.signed.message;
    writeln!(
        out,
        "    SUK\\0 {} from {}",
        message.kind_name(),
        m.signed.issuer
    )?;
    let card = m.contact_card.as_ref().map_or("none".to_owned(), |c| {
        format!("{} B of JSON", c.as_str().len())
    });
    writeln!(out, "    card       {card}")?;
    let check = m.clone().verify(m.signed.issuer).map(|_| ());
    if check.is_ok() {
        writeln!(out, "    target     {}", message.target().key)?;
        let lists = match message {
            KeyhiveMessage::SyncRequest { found, pending, .. } => {
                format!("{} found, {} pending hash(es)", found.len(), pending.len())
            }
            KeyhiveMessage::SyncResponse {
                requested, found, ..
            } => format!(
                "{} requested hash(es), {} event(s)",
                requested.len(),
                found.len()
            ),
            KeyhiveMessage::SyncOps { ops, .. } => format!("{} event(s)", ops.len()),
            _ => String::new(),
        };
        if !lists.is_empty() {
            writeln!(out, "    carries    {lists}")?;
        }
    } else {
        writeln!(out, "    (fields not shown: unverified)")?;
    }
    writeln!(out, "    signature  {}", verdict(&check))?;
    Ok(check.is_ok())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn short_hex(bytes: &[u8]) -> String {
    let mut h = hex(bytes);
    if h.len() > 16 {
        h.truncate(16);
        h.push_str("..");
    }
    h
}

fn ephemeral(e: &EphemeralMessage, out: &mut impl Write) -> io::Result<bool> {
    let (name, topics) = match e {
        EphemeralMessage::Ephemeral(signed) => {
            let h = signed.header();
            writeln!(
                out,
                "    SUE\\0 Ephemeral (tag 00) from {}",
                signed.issuer()
            )?;
            writeln!(out, "    topic      {}", h.topic)?;
            writeln!(out, "    nonce      {:#018x}", h.nonce)?;
            writeln!(out, "    timestamp  {} (unix s)", h.timestamp)?;
            writeln!(out, "    payload    {} B", h.payload_len)?;
            let check = signed.verify_strict().map(|_| ());
            writeln!(out, "    signature  {}", verdict(&check))?;
            return Ok(check.is_ok());
        }
        EphemeralMessage::Subscribe(t) => ("Subscribe (tag 01)", t),
        EphemeralMessage::Unsubscribe(t) => ("Unsubscribe (tag 02)", t),
        EphemeralMessage::SubscribeRejected(t) => ("SubscribeRejected (tag 03)", t),
    };
    writeln!(
        out,
        "    SUE\\0 {name}: {} topic(s), unsigned",
        topics.len()
    )?;
    for topic in topics {
        writeln!(out, "    topic      {topic}")?;
    }
    Ok(true)
}

fn verdict<E: std::fmt::Display>(r: &Result<(), E>) -> String {
    match r {
        Ok(()) => "valid (verify_strict)".to_owned(),
        Err(e) => format!("INVALID: {e}"),
    }
}

fn handshake(h: &HandshakeMessage, out: &mut impl Write) -> io::Result<bool> {
    match h {
        HandshakeMessage::Challenge(signed) => {
            writeln!(out, "    SUH\\0 Challenge from {}", signed.peer_id())?;
            let check = signed.verify_strict();
            match &check {
                Ok(v) => {
                    let c = v.payload();
                    let audience = match c.audience {
                        Audience::Known(p) => format!("known peer {p}"),
                        Audience::Discover(id) => format!("discovery id {}", hex(&id)),
                    };
                    writeln!(out, "    audience   {audience}")?;
                    writeln!(out, "    timestamp  {} (unix s)", c.timestamp)?;
                    writeln!(out, "    nonce      {}", hex(&c.nonce))?;
                    writeln!(out, "    digest     {}", v.digest())?;
                }
                Err(_) => writeln!(out, "    (fields not shown: unverified)")?,
            }
            let check = check.map(|_| ());
            writeln!(out, "    signature  {}", verdict(&check))?;
            Ok(check.is_ok())
        }
        HandshakeMessage::Response(signed) => {
            writeln!(out, "    SUH\\0 Response from {}", signed.peer_id())?;
            let check = signed.verify_strict();
            if let Ok(v) = &check {
                writeln!(
                    out,
                    "    answers    challenge {}",
                    v.payload().challenge_digest()
                )?;
                writeln!(
                    out,
                    "    timestamp  {} (unix s)",
                    v.payload().server_timestamp
                )?;
            }
            let check = check.map(|_| ());
            writeln!(out, "    signature  {}", verdict(&check))?;
            Ok(check.is_ok())
        }
        HandshakeMessage::Rejection(r) => {
            writeln!(
                out,
                "    SUH\\0 Rejection: {:?} (responder time {} unix s; unsigned)",
                r.reason, r.timestamp
            )?;
            Ok(true)
        }
    }
}

fn blob_message<T>(
    kind: &str,
    m: &BlobMessage<T>,
    out: &mut impl Write,
    fields: impl Fn(&T) -> String,
) -> io::Result<bool>
where
    T: Payload + Scoped + HasBlobMeta,
{
    writeln!(out, "    SUM\\0 {kind} for tree {}", hex(m.id.as_bytes()))?;
    writeln!(
        out,
        "    heads      counter {}, {} head(s)",
        m.sender_heads.counter(),
        m.sender_heads.heads().len()
    )?;
    let signed = m.item.signed();
    writeln!(out, "    issuer     {}", signed.peer_id())?;
    let verified = signed.verify_strict();
    writeln!(
        out,
        "    signature  {}",
        verdict(&verified.as_ref().map(|_| ()))
    )?;
    let Ok(verified) = verified else {
        writeln!(
            out,
            "    blob       {} B (not checked: unverified)",
            m.item.blob().len()
        )?;
        return Ok(false);
    };
    writeln!(out, "    {}", fields(verified.payload()))?;
    let mut ok = true;
    if verified.payload().sedimentree_id() != m.id {
        ok = false;
        writeln!(
            out,
            "    scope      MISMATCH: signed for tree {}",
            hex(verified.payload().sedimentree_id().as_bytes())
        )?;
    }
    let blob = m.item.blob().clone();
    let len = blob.len();
    match verified.verify_blob(blob) {
        Ok(b) => writeln!(
            out,
            "    blob       {len} B, digest {} matches",
            b.meta().digest()
        )?,
        Err(e) => {
            ok = false;
            writeln!(out, "    blob       {len} B, MISMATCH: {e}")?;
        }
    }
    Ok(ok)
}

fn sync(s: &SyncMessage, out: &mut impl Write) -> io::Result<bool> {
    match s {
        SyncMessage::LooseCommit(m) => blob_message("LooseCommit (tag 00)", m, out, |c| {
            format!(
                "commit     head {}, {} parent(s), blob {} B digest {}",
                short_hex(c.head().as_bytes()),
                c.parents().len(),
                c.blob_meta().size(),
                short_hex(c.blob_meta().digest().as_bytes())
            )
        }),
        SyncMessage::Fragment(m) => blob_message("Fragment (tag 01)", m, out, |f| {
            format!(
                "fragment   blob {} B digest {}",
                f.blob_meta().size(),
                short_hex(f.blob_meta().digest().as_bytes())
            )
        }),
        SyncMessage::BatchSyncResponse(r) => {
            let result = match &r.result {
                SyncResult::Ok(diff) => format!(
                    "Ok: {} commit(s), {} fragment(s)",
                    diff.commits().len(),
                    diff.fragments().len()
                ),
                other => format!("{other:?}"),
            };
            writeln!(out, "    SUM\\0 BatchSyncResponse (tag 05): {result}")?;
            match s.verify() {
                Ok(items) => {
                    writeln!(
                        out,
                        "    items      {} signed item(s), all valid",
                        items.len()
                    )?;
                    Ok(true)
                }
                Err(e) => {
                    writeln!(out, "    items      INVALID: {e}")?;
                    Ok(false)
                }
            }
        }
        other => {
            writeln!(out, "    SUM\\0 tag {:02x}: {other:?}", other.tag())?;
            Ok(true)
        }
    }
}
