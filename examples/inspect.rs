//! Frame inspector: decodes a capture of framed messages and prints every
//! frame with its offset, prefix bytes, message type and fields, whether its
//! signature verifies (`verify_strict`) and whether its blob matches the
//! signed digest.
//!
//! ```text
//! cargo run --example echo -- --count 3 --capture echo.cap
//! cargo run --example inspect -- echo.cap
//! xxd -p echo.cap | cargo run --example inspect -- --hex
//! ```
//!
//! # Capture format
//!
//! A capture is the raw byte stream of one direction of a connection,
//! exactly as it went on the wire: `prefix | frame | prefix | frame | ...`,
//! starting with the handshake (the initiator's challenge, or the
//! responder's response). The prefix is the connection's length prefix
//! (`--prefix`, bijou64 by default). With `--hex`, the input is that byte
//! stream as hex text; whitespace is ignored.
//!
//! Malformed input is reported with its capture offset and the inspector
//! stops there (a framing error loses the frame boundaries). Exit code: 0
//! if every frame decoded and verified, 1 if some frame did not decode or
//! verify, 2 if the stream itself is malformed or unreadable.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use bijou_frame::net::message::{
    Audience, BlobMessage, EphemeralMessage, HandshakeMessage, Message, Scoped, SyncMessage,
    SyncResult,
};
use bijou_frame::net::prefix::{Bijou64, Leb128, LengthPrefix, PrefixError, U32Be};
use bijou_frame::prelude::Wire;
use bijou_frame::signing::{HasBlobMeta, Payload};
use bytes::Bytes;
use clap::{Parser, ValueEnum};

/// Decode and check a capture of framed bijou-frame messages.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Capture file; `-` or nothing reads stdin.
    file: Option<PathBuf>,
    /// The input is hex text (whitespace ignored), not raw bytes.
    #[arg(long)]
    hex: bool,
    /// Length prefix of the frames.
    #[arg(long, value_enum, default_value_t = PrefixArg::Bijou64)]
    prefix: PrefixArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PrefixArg {
    /// bijou64 (default).
    Bijou64,
    /// Canonical LEB128.
    Leb128,
    /// 4-byte big-endian.
    U32,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let input = match read_input(&args) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    let status = match args.prefix {
        PrefixArg::Bijou64 => inspect::<Bijou64>(&input, &mut out),
        PrefixArg::Leb128 => inspect::<Leb128>(&input, &mut out),
        PrefixArg::U32 => inspect::<U32Be>(&input, &mut out),
    };
    match status {
        Ok(Status::Clean) => ExitCode::SUCCESS,
        Ok(Status::BadFrames) => ExitCode::from(1),
        Ok(Status::BadStream) => ExitCode::from(2),
        // stdout closed (for example piped into `head`): nothing to report.
        Err(_) => ExitCode::SUCCESS,
    }
}

fn read_input(args: &Args) -> Result<Vec<u8>, String> {
    let mut raw = Vec::new();
    match &args.file {
        Some(path) if path.as_os_str() != "-" => {
            raw =
                std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        }
        _ => {
            std::io::stdin()
                .read_to_end(&mut raw)
                .map_err(|e| format!("cannot read stdin: {e}"))?;
        }
    }
    if args.hex {
        parse_hex(&raw)
    } else {
        Ok(raw)
    }
}

/// Hex text to bytes; errors name the text position.
fn parse_hex(text: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 2);
    let mut high: Option<(u8, usize)> = None;
    for (pos, &c) in text.iter().enumerate() {
        if c.is_ascii_whitespace() {
            continue;
        }
        let nibble = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => {
                return Err(format!(
                    "invalid hex digit {:?} at text position {pos} (byte offset {})",
                    char::from(c),
                    out.len()
                ))
            }
        };
        high = match high {
            None => Some((nibble, pos)),
            Some((h, _)) => {
                out.push(h << 4 | nibble);
                None
            }
        };
    }
    if let Some((_, pos)) = high {
        return Err(format!(
            "odd number of hex digits: the last one, at text position {pos}, has no pair"
        ));
    }
    Ok(out)
}

enum Status {
    Clean,
    BadFrames,
    BadStream,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn short_hex(bytes: &[u8]) -> String {
    let h = hex(bytes);
    if h.len() > 16 {
        format!("{}..", &h[..16])
    } else {
        h
    }
}

fn spaced_hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn inspect<P: LengthPrefix>(input: &[u8], out: &mut impl Write) -> std::io::Result<Status> {
    let mut offset = 0usize;
    let mut frames = 0u64;
    let mut bad = 0u64;
    while offset < input.len() {
        let rest = input.get(offset..).unwrap_or_default();
        let (len, prefix_len) = match P::decode(rest) {
            Ok(ok) => ok,
            Err(PrefixError::Incomplete { needed }) => {
                writeln!(
                    out,
                    "error at offset {offset} (0x{offset:06x}): the stream ends inside a {} length prefix ({} byte(s) present, at least {needed} more needed)",
                    P::NAME,
                    rest.len()
                )?;
                return summary(out, frames, bad, true);
            }
            Err(e) => {
                writeln!(
                    out,
                    "error at offset {offset} (0x{offset:06x}): bad {} length prefix {}: {e}",
                    P::NAME,
                    spaced_hex(rest.get(..rest.len().min(P::MAX_LEN)).unwrap_or_default())
                )?;
                return summary(out, frames, bad, true);
            }
        };
        let prefix = rest.get(..prefix_len).unwrap_or_default();
        let start = offset + prefix_len;
        let available = input.len() - start;
        let Some(end) = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|&end| end <= input.len())
        else {
            writeln!(
                out,
                "error at offset {offset} (0x{offset:06x}): prefix {} announces a {len}-byte frame, but only {available} byte(s) follow",
                spaced_hex(prefix)
            )?;
            return summary(out, frames, bad, true);
        };
        let frame = Bytes::copy_from_slice(input.get(start..end).unwrap_or_default());
        writeln!(
            out,
            "#{frames} @{offset} (0x{offset:06x})  prefix {} ({}, {len} bytes)",
            spaced_hex(prefix),
            P::NAME
        )?;
        if !describe(frame, start, out)? {
            bad += 1;
        }
        frames += 1;
        offset = end;
    }
    summary(out, frames, bad, false)
}

fn summary(out: &mut impl Write, frames: u64, bad: u64, broken: bool) -> std::io::Result<Status> {
    writeln!(
        out,
        "{frames} frame(s), {} ok, {bad} with problems{}",
        frames - bad,
        if broken {
            "; stream malformed, stopped"
        } else {
            ""
        }
    )?;
    Ok(if broken {
        Status::BadStream
    } else if bad > 0 {
        Status::BadFrames
    } else {
        Status::Clean
    })
}

/// Prints one frame's message; `false` if it does not decode or verify.
fn describe(frame: Bytes, start: usize, out: &mut impl Write) -> std::io::Result<bool> {
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
    }
}

fn ephemeral(e: &EphemeralMessage, out: &mut impl Write) -> std::io::Result<bool> {
    let (name, topics) = match e {
        EphemeralMessage::Ephemeral(signed) => {
            let h = signed.header();
            writeln!(out, "    SUE\0 Ephemeral (tag 00) from {}", signed.issuer())?;
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
    writeln!(out, "    SUE\0 {name}: {} topic(s), unsigned", topics.len())?;
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

fn handshake(h: &HandshakeMessage, out: &mut impl Write) -> std::io::Result<bool> {
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
) -> std::io::Result<bool>
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

fn sync(s: &SyncMessage, out: &mut impl Write) -> std::io::Result<bool> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use bijou_frame::net::message::{
        Challenge, CommitId, LooseCommit, RemoteHeads, SedimentreeId, SignedItem,
    };
    use bijou_frame::net::FrameCodec;
    use bijou_frame::signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
    use bytes::BytesMut;
    use tokio_util::codec::Encoder;

    fn capture() -> Vec<u8> {
        let key = SigningKey::from_bytes(&[1; 32]);
        let hello = Challenge::new(Audience::Known(key.peer_id()), 1_700_000_000, [2; 16]);
        let tree = SedimentreeId::new([3; 32]);
        let blob = Blob::new(vec![4u8; 300]);
        let commit = LooseCommit::new(tree, CommitId::new([5; 32]), [], blob.meta());
        let msg = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
            id: tree,
            sender_heads: RemoteHeads::default(),
            item: SignedItem::new(Signed::seal(&key, &commit).expect("seal"), blob),
        }));
        let mut wire = BytesMut::new();
        let mut codec = FrameCodec::new();
        let challenge = HandshakeMessage::Challenge(Signed::seal(&key, &hello).expect("seal"));
        codec
            .encode(challenge.encode().expect("encode"), &mut wire)
            .expect("frame");
        codec
            .encode(msg.encode().expect("encode"), &mut wire)
            .expect("frame");
        wire.to_vec()
    }

    fn run(input: &[u8]) -> (String, Status) {
        let mut out = Vec::new();
        let status = inspect::<Bijou64>(input, &mut out).expect("write");
        (String::from_utf8(out).expect("utf8"), status)
    }

    #[test]
    fn a_clean_capture_decodes_and_verifies() {
        let (text, status) = run(&capture());
        assert!(matches!(status, Status::Clean), "{text}");
        assert!(text.contains("#0 @0 (0x000000)  prefix 9e (bijou64, 158 bytes)"));
        assert!(text.contains("SUH\\0 Challenge"));
        assert!(text.contains("#1 @159"));
        assert!(text.contains("LooseCommit (tag 00)"));
        assert_eq!(text.matches("valid (verify_strict)").count(), 2);
        assert!(text.contains("300 B, digest"));
        assert!(text.ends_with("2 frame(s), 2 ok, 0 with problems\n"));
    }

    #[test]
    fn a_tampered_blob_is_reported_and_the_next_frame_still_read() {
        let mut wire = capture();
        let last = wire.len() - 1;
        wire[last] ^= 1;
        wire.extend_from_slice(&capture());
        let (text, status) = run(&wire);
        assert!(matches!(status, Status::BadFrames), "{text}");
        assert!(text.contains("MISMATCH: blob digest"));
        assert!(text.contains("4 frame(s), 3 ok, 1 with problems"));
    }

    #[test]
    fn truncation_and_bad_prefixes_are_reported_at_their_offset() {
        let wire = capture();
        let (text, status) = run(&wire[..200]);
        assert!(matches!(status, Status::BadStream));
        assert!(
            text.contains("error at offset 159 (0x00009f): prefix f9 "),
            "{text}"
        );
        assert!(text.contains("but only 38 byte(s) follow"), "{text}");

        let mut overflow = wire.clone();
        overflow.extend_from_slice(&[0xFF; 9]);
        let (text, _) = run(&overflow);
        assert!(
            text.contains(&format!("error at offset {}", wire.len())),
            "{text}"
        );
        assert!(text.contains("overflows u64"));

        let (text, _) = run(&[0xF9, 0x00]);
        assert!(text.contains(
            "error at offset 0 (0x000000): the stream ends inside a bijou64 length prefix"
        ));
    }

    #[test]
    fn a_malformed_message_in_a_good_frame_is_reported_with_its_payload_offset() {
        let mut wire = vec![8];
        wire.extend_from_slice(b"SUM\0junk");
        let (text, status) = run(&wire);
        assert!(matches!(status, Status::BadFrames));
        assert!(text.contains("MALFORMED message (payload starts at offset 1"));
    }

    #[test]
    fn hex_input_is_parsed_with_precise_errors() {
        assert_eq!(parse_hex(b"0a FF\n10"), Ok(vec![0x0a, 0xff, 0x10]));
        let err = parse_hex(b"0a zz").expect_err("bad digit");
        assert!(
            err.contains("'z' at text position 3 (byte offset 1)"),
            "{err}"
        );
        let err = parse_hex(b"0a f").expect_err("odd");
        assert!(err.contains("text position 3"), "{err}");
    }
}
