//! Inspection of captured byte streams: every frame with its offset, prefix
//! bytes, message type and fields, whether its signature verifies
//! (`verify_strict`) and whether its blob matches the signed digest. This
//! is what `bijou inspect` and the inspect example print.
//!
//! # Capture format
//!
//! A capture is the raw byte stream of one direction of a connection,
//! exactly as it went on the wire, starting with the handshake:
//!
//! ```text
//! offset 0
//! +--------+-----------------+--------+-----------------+-----
//! | prefix | frame (message) | prefix | frame (message) | ...
//! +--------+-----------------+--------+-----------------+-----
//!  1..=10 B  SUH\0 / SUM\0 /
//!  bijou64,  SUE\0 / SUK\0
//!  leb128 or
//!  u32-be
//! ```
//!
//! [`detect`] finds the prefix (and whether the input is hex text) by
//! itself: it walks the stream under each prefix and keeps the reading
//! with no malformed frame under which the most frames decode; where the
//! capture was cut, that reading says so.
//!
//! A framing error loses the frame boundaries, so [`inspect`] stops there
//! and returns it as [`Summary::stream_error`] with its capture offset; a
//! frame whose message is malformed or does not verify is reported and
//! the walk goes on.
//!
//! ```
//! use bijou_frame::framing::prefix::PrefixKind;
//! use bijou_frame::inspect::{inspect, Status};
//! use bijou_frame::codec::Wire;
//! use bijou_frame::proto::message::{DataRequestRejected, Message, SedimentreeId, SyncMessage};
//!
//! let msg = Message::Sync(SyncMessage::from(DataRequestRejected { id: SedimentreeId::new([1; 32]) }));
//! let payload = msg.encode()?;
//! let mut capture = vec![u8::try_from(payload.len())?]; // a bijou64 prefix below 248 is one byte
//! capture.extend_from_slice(&payload);
//!
//! let mut report = Vec::new();
//! let summary = inspect(&capture, PrefixKind::Bijou64, &mut report)?;
//! assert_eq!(summary.status(), Status::Clean);
//! assert_eq!(summary.to_string(), "1 frame(s), 1 ok, 0 with problems");
//! assert!(String::from_utf8(report)?.starts_with("#0 @0 (0x000000)  prefix 29 (bijou64, 41 bytes)"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::io::{self, Write};

use bijou_framing::prefix::{PrefixError, PrefixKind};
use bijou_proto::message::Message;
use bytes::Bytes;

mod describe;
pub mod hex;

pub use describe::describe;

/// What [`inspect`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Frames read (complete prefix and payload).
    pub frames: u64,
    /// Of those, frames whose message did not decode or verify.
    pub bad: u64,
    /// Where the byte stream itself broke, if it did.
    pub stream_error: Option<StreamError>,
}

/// The verdict of a [`Summary`], as an exit status would carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Every frame decoded and verified.
    Clean,
    /// Some frame did not decode or verify; the stream was framed well.
    BadFrames,
    /// The byte stream is malformed: the walk stopped.
    BadStream,
}

impl Summary {
    /// The verdict.
    #[must_use]
    pub fn status(&self) -> Status {
        if self.stream_error.is_some() {
            Status::BadStream
        } else if self.bad > 0 {
            Status::BadFrames
        } else {
            Status::Clean
        }
    }

    /// Frames that decoded and verified.
    #[must_use]
    pub fn good(&self) -> u64 {
        self.frames - self.bad
    }
}

/// `"3 frame(s), 2 ok, 1 with problems"`, then `"; stream malformed,
/// stopped"` if it was.
impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} frame(s), {} ok, {} with problems",
            self.frames,
            self.good(),
            self.bad
        )?;
        if self.stream_error.is_some() {
            f.write_str("; stream malformed, stopped")?;
        }
        Ok(())
    }
}

/// Where and why a byte stream stopped being frames.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The input ends inside a length prefix.
    #[error("error at offset {offset} (0x{offset:06x}): the stream ends inside a {prefix} length prefix ({have} byte(s) present, at least {needed} more needed)")]
    TruncatedPrefix {
        /// Capture offset of the prefix.
        offset: usize,
        /// The prefix kind.
        prefix: PrefixKind,
        /// Bytes present.
        have: usize,
        /// At least this many more are needed.
        needed: usize,
    },
    /// Bytes that are not a valid prefix of this kind.
    #[error(
        "error at offset {offset} (0x{offset:06x}): bad {prefix} length prefix {}: {error}",
        spaced(bytes)
    )]
    BadPrefix {
        /// Capture offset of the prefix.
        offset: usize,
        /// The prefix kind.
        prefix: PrefixKind,
        /// The bytes read as the prefix (at most its longest form).
        bytes: Vec<u8>,
        /// Why they are not one.
        error: PrefixError,
    },
    /// A prefix announces more bytes than the input has left.
    #[error("error at offset {offset} (0x{offset:06x}): prefix {} announces a {len}-byte frame, but only {available} byte(s) follow", spaced(prefix_bytes))]
    TruncatedFrame {
        /// Capture offset of the prefix.
        offset: usize,
        /// The prefix bytes.
        prefix_bytes: Vec<u8>,
        /// The announced payload length.
        len: u64,
        /// The bytes after the prefix.
        available: usize,
    },
}

fn spaced(bytes: &[u8]) -> String {
    // "f9 34": two digits per byte, a space between bytes.
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Walks `input` as frames behind `prefix`, writing one header line per
/// frame (`#N @offset (0x..)  prefix .. (kind, len bytes)`) and its
/// [`describe`] lines to `out`. The summary line is the caller's to print
/// ([`Summary`]'s `Display`), and so is the [`StreamError`].
///
/// # Errors
///
/// Only the writer's. With [`io::sink`] it cannot fail; [`scan`] does that.
pub fn inspect(input: &[u8], prefix: PrefixKind, out: &mut impl Write) -> io::Result<Summary> {
    let mut summary = Summary {
        frames: 0,
        bad: 0,
        stream_error: None,
    };
    let mut offset = 0usize;
    while let Some(rest) = input.get(offset..).filter(|rest| !rest.is_empty()) {
        let (len, prefix_len) = match prefix.decode(rest) {
            Ok(ok) => ok,
            Err(PrefixError::Incomplete { needed }) => {
                summary.stream_error = Some(StreamError::TruncatedPrefix {
                    offset,
                    prefix,
                    have: rest.len(),
                    needed,
                });
                break;
            }
            Err(error) => {
                let shown = rest.len().min(prefix.max_len());
                summary.stream_error = Some(StreamError::BadPrefix {
                    offset,
                    prefix,
                    bytes: rest.get(..shown).unwrap_or_default().to_vec(),
                    error,
                });
                break;
            }
        };
        let prefix_bytes = rest.get(..prefix_len).unwrap_or_default();
        let start = offset + prefix_len;
        let available = input.len().saturating_sub(start);
        let Some(end) = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|&end| end <= input.len())
        else {
            summary.stream_error = Some(StreamError::TruncatedFrame {
                offset,
                prefix_bytes: prefix_bytes.to_vec(),
                len,
                available,
            });
            break;
        };
        writeln!(
            out,
            "#{} @{offset} (0x{offset:06x})  prefix {} ({prefix}, {len} bytes)",
            summary.frames,
            spaced(prefix_bytes),
        )?;
        let frame = Bytes::copy_from_slice(input.get(start..end).unwrap_or_default());
        if !describe(frame, start, out)? {
            summary.bad += 1;
        }
        summary.frames += 1;
        offset = end;
    }
    Ok(summary)
}

/// [`inspect`] without a report: the [`Summary`] only.
#[must_use]
pub fn scan(input: &[u8], prefix: PrefixKind) -> Summary {
    inspect(input, prefix, &mut io::sink()).unwrap_or(Summary {
        frames: 0,
        bad: 0,
        stream_error: None,
    })
}

/// Whether `summary` (a scan of `input`) stops at a frame cut short whose
/// bytes start with a message schema.
fn cut_inside_a_message(input: &[u8], summary: &Summary) -> bool {
    let Some(StreamError::TruncatedFrame {
        offset,
        prefix_bytes,
        ..
    }) = &summary.stream_error
    else {
        return false;
    };
    let start = offset.saturating_add(prefix_bytes.len());
    input.get(start..).and_then(Message::peek_kind).is_some()
}

/// How [`detect`] reads an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// The input is hex text (decode it with [`hex::parse_hex`]).
    pub hex: bool,
    /// The length prefix.
    pub prefix: PrefixKind,
    /// What a [`scan`] under that reading found.
    pub summary: Summary,
}

/// Finds how `input` is best read: raw or hex text, and which prefix.
///
/// A reading is a candidate if a frame under it is good (decodes and
/// verifies), or if it has no bad frame and stops at a frame cut short
/// whose bytes start with a message schema (`SUM\0`, `SUH\0`, `SUE\0`,
/// `SUK\0`):
/// a capture cut inside its first frame. Candidates are ranked by having
/// no bad frame first, then by more good frames, then by a clean end, then
/// by fewer bad frames; ties go to raw bytes and to the default prefix
/// ([`PrefixKind::ALL`] order). So a capture cut anywhere is read under
/// its own prefix and its [`Summary::stream_error`] says where it was cut:
/// a wrong prefix can happen to end on the cut, but only by reading
/// malformed frames. `None` if no reading is a candidate (an input shorter
/// than one prefix and a schema says nothing of its prefix).
///
/// Each reading is a full [`scan`] (signatures verified), so detection
/// costs up to six scans of the input: meant for captures a user hands
/// over, not for bytes from a peer.
///
/// ```
/// use bijou_frame::framing::prefix::PrefixKind;
/// use bijou_frame::inspect::detect;
/// use bijou_frame::codec::Wire;
/// use bijou_frame::proto::message::{DataRequestRejected, Message, SedimentreeId, SyncMessage};
///
/// let msg = Message::Sync(SyncMessage::from(DataRequestRejected { id: SedimentreeId::new([1; 32]) }));
/// let payload = msg.encode()?;
/// let mut capture = u32::try_from(payload.len())?.to_be_bytes().to_vec();
/// capture.extend_from_slice(&payload);
///
/// let found = detect(&capture).ok_or("no reading")?;
/// assert_eq!((found.hex, found.prefix), (false, PrefixKind::U32Be));
/// assert!(detect(b"not a capture").is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn detect(input: &[u8]) -> Option<Detected> {
    let parsed = hex::looks_like_hex(input)
        .then(|| hex::parse_hex(input).ok())
        .flatten();
    let readings = std::iter::once((false, input)).chain(parsed.as_deref().map(|b| (true, b)));
    let rank = |d: &Summary| {
        (
            d.bad == 0,
            d.good(),
            d.stream_error.is_none(),
            std::cmp::Reverse(d.bad),
        )
    };
    let mut best: Option<Detected> = None;
    for (hex, bytes) in readings {
        for prefix in PrefixKind::ALL {
            let summary = scan(bytes, prefix);
            let candidate =
                summary.good() > 0 || (summary.bad == 0 && cut_inside_a_message(bytes, &summary));
            if candidate
                && best
                    .as_ref()
                    .is_none_or(|b| rank(&summary) > rank(&b.summary))
            {
                best = Some(Detected {
                    hex,
                    prefix,
                    summary,
                });
            }
        }
    }
    best
}
