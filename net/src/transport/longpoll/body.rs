//! Reading a request body whole, under a length cap and a stall timeout,
//! with memory that grows with the bytes received.
//!
//! ```text
//!   Content-Length over the cap        -> TooLarge (413), nothing read
//!   each frame:  no frame for `stall`  -> BodyStalled (408)
//!                past the deadline     -> BodyTooSlow (408; the handshake's, a send's)
//!                bytes so far > cap    -> TooLarge (413)
//!                an error (broke off,  -> BodyBrokenOff (400)
//!                shorter than announced)
//!   one frame:   handed on as it came (no copy)
//!   more:        appended to a buffer that grows with them (never
//!                reserved from Content-Length)
//! ```

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Body, Incoming};
use tokio::time::Instant;

use super::refusal::Refusal;

/// A bound on a whole body: the deadline, and the timeout it came from.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadline {
    pub(super) at: Instant,
    pub(super) after: Duration,
}

/// The body, at most `max` bytes. Each wait for the next piece is
/// bounded by `stall`, and the whole read by `deadline` if there is one.
pub(super) async fn read_capped(
    mut body: Incoming,
    max: usize,
    stall: Duration,
    deadline: Option<Deadline>,
) -> Result<Bytes, Refusal> {
    let announced = body.size_hint().lower();
    if usize::try_from(announced).map_or(true, |announced| announced > max) {
        return Err(Refusal::TooLarge {
            len: announced,
            max,
        });
    }
    let mut whole = Gathered::default();
    let mut have = 0usize;
    loop {
        let stalled = Instant::now() + stall;
        let wait_until = deadline.map_or(stalled, |d| d.at.min(stalled));
        let frame = match tokio::time::timeout_at(wait_until, body.frame()).await {
            Err(_) => {
                return Err(match deadline {
                    Some(d) if d.at <= wait_until && d.at < stalled => Refusal::BodyTooSlow {
                        after: d.after,
                        have,
                    },
                    _ => Refusal::BodyStalled { after: stall, have },
                })
            }
            Ok(None) => break,
            Ok(Some(Err(_))) => return Err(Refusal::BodyBrokenOff { have }),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers: ignored
        };
        if data.is_empty() {
            continue;
        }
        have = have.saturating_add(data.len());
        if have > max {
            return Err(Refusal::TooLarge {
                len: have as u64,
                max,
            });
        }
        whole.push(data);
    }
    Ok(whole.finish())
}

/// A body gathered from its frames with memory that grows with their
/// bytes: one frame is kept as it came (no copy), more are appended to
/// one buffer, so a body sent in tiny chunks costs its bytes, not a list
/// entry per chunk. Client and server read bodies through it.
#[derive(Debug, Default)]
pub(super) struct Gathered {
    first: Option<Bytes>,
    more: BytesMut,
}

impl Gathered {
    /// Adds the next frame's bytes.
    pub(super) fn push(&mut self, data: Bytes) {
        match self.first.take() {
            None if self.more.is_empty() => self.first = Some(data),
            None => self.more.extend_from_slice(&data),
            Some(earlier) => {
                self.more.extend_from_slice(&earlier);
                self.more.extend_from_slice(&data);
            }
        }
    }

    /// The whole body.
    pub(super) fn finish(self) -> Bytes {
        self.first.unwrap_or_else(|| self.more.freeze())
    }
}
