//! [`FrameCodec`]: length-prefixed frames over tokio-util.
//!
//! A stream is a sequence of frames, each a [length prefix](crate::prefix)
//! followed by exactly that many payload bytes. Nothing else is on the wire:
//! no header, no padding, no terminator.
//!
//! ```text
//! FrameCodec<Bijou64> (default), payloads "hi" and 300 bytes:
//! +------+--------+-----------+-------------------+
//! | 0x02 |  "hi"  | 0xF8 0x34 |  300 bytes        |
//! +------+--------+-----------+-------------------+
//!  prefix payload   prefix      payload
//!
//! FrameCodec<Leb128>, the same frames:
//! +------+--------+-----------+-------------------+
//! | 0x02 |  "hi"  | 0xAC 0x02 |  300 bytes        |
//! +------+--------+-----------+-------------------+
//!
//! FrameCodec<U32Be> (Subduction's QUIC framing, tokio-util's default):
//! +-------------+--------+-------------+-------------------+
//! | 00 00 00 02 |  "hi"  | 00 00 01 2C |  300 bytes        |
//! +-------------+--------+-------------+-------------------+
//! ```
//!
//! # Decoding
//!
//! The decoder is a two-state machine, like tokio-util's
//! `LengthDelimitedCodec`:
//!
//! - **head**: waiting for a complete prefix. For bijou64 and u32-be the
//!   prefix length is known from the first byte (never scanned); for every
//!   prefix the decoder remembers how many bytes it is still waiting for and
//!   does not look at the buffer again until they are there. Once the prefix
//!   is complete its value is checked against the maximum *as a `u64`*,
//!   before anything is allocated, and the prefix is consumed.
//! - **data**: the payload length is remembered; the decoder waits until the
//!   whole payload is buffered and hands it out zero-copy
//!   (`split_to(len).freeze()`).
//!
//! Partial input returns `Ok(None)`. Errors are terminal (see
//! [`FrameError`]).
//!
//! # Memory
//!
//! A peer can announce a frame of up to the maximum length and then send
//! nothing. The decoder never reserves the announced length up front: while a
//! payload is incomplete it asks the buffer for at most
//! `min(missing, `[`RESERVE_STEP`]`)` (64 KiB) bytes of spare capacity, so
//! memory grows with the bytes actually received. **Bound:** a connection
//! that has received `r` bytes of an unfinished frame holds a buffer of at
//! most `r + 64 KiB` of capacity as requested by the decoder, which
//! `BytesMut`'s geometric growth may round up to at most twice that; a peer
//! that sends only a prefix costs 64 KiB plus the prefix, whatever length it
//! announces. (The bounded-memory test measures 64 KiB + 5 bytes per
//! decoder.)
//!
//! After a large frame the buffer must not keep a large allocation alive. The
//! decoder remembers the largest buffer capacity it has seen; once that is at
//! least [`RELEASE_THRESHOLD`] (1 MiB) and at most [`RELEASE_COPY_LIMIT`]
//! (8 KiB) of unread bytes remain, it moves them to a fresh 8 KiB buffer and
//! drops its handle on the large allocation, which is then freed as soon as
//! the frames cut from it are dropped. The copy costs at most 8 KiB per
//! megabyte-sized allocation.
//!
//! # Encoding
//!
//! [`Encoder<Bytes>`](Encoder) and [`Encoder<&[u8]>`](Encoder) write the
//! prefix and copy the payload. A frame over the maximum is refused with
//! [`FrameError::TooLarge`] and nothing is written.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::prefix::{Bijou64, LengthPrefix, PrefixError, MAX_PREFIX_LEN};
use crate::{Builder, FrameError};

/// Default maximum payload length: 50 MiB, Subduction's transport limit.
pub const DEFAULT_MAX_FRAME_LENGTH: usize = 50 * 1024 * 1024;

/// The most spare capacity the decoder requests at once while a payload is
/// incomplete (64 KiB). See the [module docs](self#memory) for the bound.
pub const RESERVE_STEP: usize = 64 * 1024;

/// Buffer capacity (1 MiB) from which the decoder releases the buffer's
/// allocation once it is nearly drained. See the [module docs](self#memory).
pub const RELEASE_THRESHOLD: usize = 1024 * 1024;

/// At most this many unread bytes (8 KiB) are copied when the decoder
/// releases a large buffer; it is also the fresh buffer's capacity.
pub const RELEASE_COPY_LIMIT: usize = 8 * 1024;

/// Where the decoder is in the current frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DecodeState {
    /// Waiting for a complete prefix; the buffer cannot hold one while it
    /// is shorter than `want` bytes.
    Head { want: usize },
    /// The prefix (`prefix_len` bytes) is consumed and announced `len`
    /// payload bytes.
    Data { len: usize, prefix_len: usize },
}

/// Length-prefixed framing for tokio-util, generic over the
/// [`LengthPrefix`] (bijou64 by default).
///
/// Decodes to zero-copy [`Bytes`] payloads; encodes [`Bytes`] or `&[u8]`
/// payloads. Build one with [`FrameCodec::new`], [`FrameCodec::builder`] or
/// [`Default`]; see the [module docs](self) for the wire format, the decoder
/// state machine and its memory bound.
///
/// A codec holds the decoding state of one stream (like tokio-util's
/// codecs): use one per connection, with the same buffer throughout.
///
/// ```
/// use bijou_framing::{prefix::Leb128, FrameCodec};
/// use bytes::{Bytes, BytesMut};
/// use tokio_util::codec::{Decoder, Encoder};
///
/// let mut codec = FrameCodec::new(); // bijou64 prefixes, 50 MiB maximum
/// let mut wire = BytesMut::new();
/// codec.encode(Bytes::from_static(b"hello"), &mut wire)?;
/// codec.encode(&b""[..], &mut wire)?;
/// assert_eq!(&wire[..], b"\x05hello\x00");
///
/// assert_eq!(codec.decode(&mut wire)?, Some(Bytes::from_static(b"hello")));
/// assert_eq!(codec.decode(&mut wire)?, Some(Bytes::new()));
/// assert_eq!(codec.decode(&mut wire)?, None);
///
/// // The same frames with a LEB128 prefix.
/// let mut leb = FrameCodec::<Leb128>::default();
/// leb.encode(&[7u8; 300][..], &mut wire)?;
/// assert_eq!(&wire[..2], &[0xAC, 0x02]);
/// # Ok::<(), bijou_framing::FrameError>(())
/// ```
#[derive(Debug, Clone)]
pub struct FrameCodec<P = Bijou64> {
    max_frame_length: usize,
    state: DecodeState,
    /// Largest buffer capacity seen since the last release.
    peak_capacity: usize,
    prefix: P,
}

impl FrameCodec<Bijou64> {
    /// A bijou64-prefixed codec with the default maximum
    /// ([`DEFAULT_MAX_FRAME_LENGTH`], 50 MiB). For another prefix use
    /// `FrameCodec::<Leb128>::default()` or [`Builder::prefix`].
    ///
    /// ```
    /// let codec = bijou_framing::FrameCodec::new();
    /// assert_eq!(codec.max_frame_length(), 50 * 1024 * 1024);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::with_prefix(Bijou64)
    }

    /// A [`Builder`] for configuring a codec or starting `Framed`,
    /// `FramedRead` and `FramedWrite`.
    ///
    /// ```
    /// use bijou_framing::{prefix::U32Be, FrameCodec};
    /// let codec = FrameCodec::builder().prefix(U32Be).max_frame_length(1 << 20).new_codec();
    /// assert_eq!(codec.max_frame_length(), 1 << 20);
    /// ```
    #[must_use]
    pub fn builder() -> Builder<Bijou64> {
        Builder::new()
    }
}

impl<P: LengthPrefix> FrameCodec<P> {
    /// A codec with prefix `P` and the default maximum
    /// ([`DEFAULT_MAX_FRAME_LENGTH`]).
    ///
    /// ```
    /// use bijou_framing::{prefix::Leb128, FrameCodec};
    /// let codec = FrameCodec::with_prefix(Leb128);
    /// # let _ = codec;
    /// ```
    #[must_use]
    pub fn with_prefix(prefix: P) -> Self {
        Self::from_parts(prefix, DEFAULT_MAX_FRAME_LENGTH)
    }

    pub(crate) fn from_parts(prefix: P, max_frame_length: usize) -> Self {
        Self {
            max_frame_length: clamp_to_prefix::<P>(max_frame_length),
            state: DecodeState::Head { want: 1 },
            peak_capacity: 0,
            prefix,
        }
    }

    /// The largest payload this codec decodes or encodes, in bytes.
    ///
    /// ```
    /// use bijou_framing::{prefix::U32Be, FrameCodec};
    /// // Clamped to what the prefix can express.
    /// let codec = FrameCodec::builder().prefix(U32Be).max_frame_length(usize::MAX).new_codec();
    /// assert_eq!(codec.max_frame_length() as u64, u64::from(u32::MAX));
    /// ```
    #[must_use]
    pub fn max_frame_length(&self) -> usize {
        self.max_frame_length
    }

    /// Changes the maximum payload length, clamped to what the prefix can
    /// express. A frame whose prefix was already read keeps the length it
    /// was admitted with.
    ///
    /// ```
    /// let mut codec = bijou_framing::FrameCodec::new();
    /// codec.set_max_frame_length(1024);
    /// assert_eq!(codec.max_frame_length(), 1024);
    /// ```
    pub fn set_max_frame_length(&mut self, max_frame_length: usize) {
        self.max_frame_length = clamp_to_prefix::<P>(max_frame_length);
    }

    /// The prefix this codec writes and reads.
    #[must_use]
    pub fn prefix(&self) -> P {
        self.prefix
    }

    fn too_large(&self, len: u64) -> FrameError {
        FrameError::TooLarge {
            len,
            max: self.max_frame_length,
        }
    }

    /// Reads and consumes the prefix at the front of `src`, returning the
    /// payload length and the prefix length. `Ok(None)`: not complete yet.
    #[inline]
    fn decode_head(
        &mut self,
        src: &mut BytesMut,
        want: usize,
    ) -> Result<Option<(usize, usize)>, FrameError> {
        if src.len() < want {
            return Ok(None);
        }
        let (len, prefix_len) = match P::decode(src) {
            Ok(decoded) => decoded,
            Err(PrefixError::Incomplete { needed }) => {
                self.state = DecodeState::Head {
                    want: src.len().saturating_add(needed),
                };
                return Ok(None);
            }
            Err(err) => return Err(prefix_error::<P>(err)),
        };
        // Checked as a u64, before anything is allocated or consumed.
        if len > to_u64(self.max_frame_length) {
            return Err(self.too_large(len));
        }
        let len = usize::try_from(len).map_err(|_| self.too_large(len))?;
        // `decode` just read `prefix_len` bytes from `src`; `min` is a no-op.
        src.advance(prefix_len.min(src.len()));
        Ok(Some((len, prefix_len)))
    }

    /// After a decode step: releases a large, nearly drained buffer.
    #[inline]
    fn maybe_release(&mut self, src: &mut BytesMut) {
        if self.peak_capacity >= RELEASE_THRESHOLD && src.len() <= RELEASE_COPY_LIMIT {
            self.release(src);
        }
    }

    #[cold]
    fn release(&mut self, src: &mut BytesMut) {
        let mut fresh = BytesMut::with_capacity(RELEASE_COPY_LIMIT.max(src.len()));
        fresh.extend_from_slice(src);
        *src = fresh;
        self.peak_capacity = src.capacity();
    }

    /// The `Truncated` error for a stream that ended with `src` unread.
    fn truncated(&self, src: &BytesMut) -> FrameError {
        match self.state {
            DecodeState::Head { .. } => {
                let missing = match P::decode(src) {
                    Err(PrefixError::Incomplete { needed }) => needed,
                    _ => 0,
                };
                FrameError::Truncated {
                    needed: to_u64(src.len()).saturating_add(to_u64(missing)),
                    have: src.len(),
                }
            }
            DecodeState::Data { len, prefix_len } => FrameError::Truncated {
                needed: to_u64(prefix_len).saturating_add(to_u64(len)),
                have: prefix_len.saturating_add(src.len()),
            },
        }
    }
}

impl<P: LengthPrefix> Default for FrameCodec<P> {
    fn default() -> Self {
        Self::with_prefix(P::default())
    }
}

impl<P: LengthPrefix> Decoder for FrameCodec<P> {
    type Item = Bytes;
    type Error = FrameError;

    /// Decodes the next frame's payload, or `Ok(None)` if `src` does not
    /// hold a whole frame yet.
    ///
    /// # Errors
    ///
    /// [`FrameError::TooLarge`] as soon as a prefix announcing more than the
    /// maximum is complete (before any payload arrives),
    /// [`FrameError::Overflow`] or [`FrameError::NonCanonical`] for a
    /// malformed prefix. All are terminal.
    #[inline]
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        self.peak_capacity = self.peak_capacity.max(src.capacity());
        let (len, prefix_len) = match self.state {
            DecodeState::Head { want } => match self.decode_head(src, want)? {
                Some(head) => head,
                None => {
                    self.maybe_release(src);
                    return Ok(None);
                }
            },
            DecodeState::Data { len, prefix_len } => (len, prefix_len),
        };
        if src.len() >= len {
            self.state = DecodeState::Head { want: 1 };
            let frame = if len == 0 {
                // Do not pin the buffer's allocation for an empty frame.
                Bytes::new()
            } else {
                src.split_to(len).freeze()
            };
            self.maybe_release(src);
            return Ok(Some(frame));
        }
        self.state = DecodeState::Data { len, prefix_len };
        self.maybe_release(src);
        // Grow with the bytes that arrive, never by the announced length.
        let missing = len.saturating_sub(src.len());
        src.reserve(missing.min(RESERVE_STEP));
        Ok(None)
    }

    /// As [`FrameCodec::decode`], but the stream has ended: leftover bytes
    /// are an error rather than a reason to wait.
    ///
    /// # Errors
    ///
    /// As `decode`, plus [`FrameError::Truncated`] if the stream ends inside
    /// a prefix or a payload.
    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() && matches!(self.state, DecodeState::Head { .. }) => Ok(None),
            None => Err(self.truncated(src)),
        }
    }
}

impl<P: LengthPrefix> FrameCodec<P> {
    /// Writes the length prefix of a `len`-byte frame to `dst` and reserves
    /// room for the payload, which the caller then writes in place (as
    /// [`MessageCodec`](crate::MessageCodec) does: no intermediate buffer).
    ///
    /// ```
    /// use bijou_framing::FrameCodec;
    /// use bytes::{BufMut, BytesMut};
    ///
    /// let mut dst = BytesMut::new();
    /// FrameCodec::new().put_prefix(300, &mut dst)?;
    /// assert_eq!(&dst[..], [0xF8, 0x34]); // bijou64(300)
    /// assert!(dst.capacity() >= 2 + 300);
    /// dst.put_bytes(0, 300);
    /// # Ok::<(), bijou_framing::FrameError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`FrameError::TooLarge`] if `len` is over the maximum; `dst` is left
    /// untouched.
    #[inline]
    pub fn put_prefix(&self, len: usize, dst: &mut BytesMut) -> Result<(), FrameError> {
        if len > self.max_frame_length {
            return Err(self.too_large(to_u64(len)));
        }
        let (prefix, prefix_len) =
            P::encode(to_u64(len)).ok_or_else(|| self.too_large(to_u64(len)))?;
        let Some(room) = len.checked_add(MAX_PREFIX_LEN) else {
            return Err(self.too_large(to_u64(len)));
        };
        dst.reserve(room);
        // Copy the whole fixed-size scratch array (one constant-size move)
        // and cut it back to the prefix: cheaper than a variable-length copy
        // of 1..=10 bytes.
        let start = dst.len();
        dst.extend_from_slice(&prefix);
        dst.truncate(start.saturating_add(prefix_len));
        Ok(())
    }
}

impl<P: LengthPrefix> Encoder<&[u8]> for FrameCodec<P> {
    type Error = FrameError;

    /// Appends one frame (prefix and a copy of `data`) to `dst`.
    ///
    /// # Errors
    ///
    /// [`FrameError::TooLarge`] if `data` is longer than the maximum; `dst`
    /// is left untouched.
    #[inline]
    fn encode(&mut self, data: &[u8], dst: &mut BytesMut) -> Result<(), FrameError> {
        self.put_prefix(data.len(), dst)?;
        dst.extend_from_slice(data);
        Ok(())
    }
}

impl<P: LengthPrefix> Encoder<Bytes> for FrameCodec<P> {
    type Error = FrameError;

    /// As `Encoder<&[u8]>`.
    ///
    /// # Errors
    ///
    /// [`FrameError::TooLarge`]; nothing is written then.
    #[inline]
    fn encode(&mut self, data: Bytes, dst: &mut BytesMut) -> Result<(), FrameError> {
        Encoder::<&[u8]>::encode(self, &data, dst)
    }
}

/// Maps a prefix decoding failure (never `Incomplete`) to a frame error.
fn prefix_error<P: LengthPrefix>(err: PrefixError) -> FrameError {
    match err {
        PrefixError::NonCanonical { prefix_len } => FrameError::NonCanonical {
            prefix: P::NAME,
            prefix_len,
        },
        // `Overflow`, and `Incomplete` which the caller handles itself.
        _ => FrameError::Overflow { prefix: P::NAME },
    }
}

/// `max` limited to the largest length `P` can express.
fn clamp_to_prefix<P: LengthPrefix>(max: usize) -> usize {
    usize::try_from(P::MAX_VALUE).map_or(max, |limit| max.min(limit))
}

#[inline]
fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::{Leb128, U32Be};

    #[test]
    fn partial_bijou64_prefix_waits_for_exactly_the_missing_bytes() {
        let mut codec = FrameCodec::new();
        // 0xFA: a 4-byte prefix; one byte is here, three are missing.
        let mut src = BytesMut::from(&[0xFA][..]);
        assert_eq!(codec.decode(&mut src).unwrap(), None);
        assert_eq!(codec.state, DecodeState::Head { want: 4 });
        src.extend_from_slice(&[0x00, 0x00]);
        assert_eq!(codec.decode(&mut src).unwrap(), None);
        assert_eq!(codec.state, DecodeState::Head { want: 4 });
        src.extend_from_slice(&[0x01]);
        assert_eq!(codec.decode(&mut src).unwrap(), None);
        assert_eq!(
            codec.state,
            DecodeState::Data {
                len: 66_041,
                prefix_len: 4
            }
        );
        assert!(src.is_empty(), "the prefix is consumed once parsed");
    }

    #[test]
    fn partial_leb128_prefix_is_not_reparsed_before_a_new_byte() {
        let mut codec = FrameCodec::with_prefix(Leb128);
        let mut src = BytesMut::from(&[0x80, 0x80][..]);
        assert_eq!(codec.decode(&mut src).unwrap(), None);
        assert_eq!(codec.state, DecodeState::Head { want: 3 });
    }

    #[test]
    fn waiting_payload_reserves_one_step_not_the_announced_length() {
        let mut codec = FrameCodec::with_prefix(U32Be);
        let announced = 40 * 1024 * 1024u32;
        let mut src = BytesMut::from(&announced.to_be_bytes()[..]);
        assert_eq!(codec.decode(&mut src).unwrap(), None);
        assert!(src.capacity() >= RESERVE_STEP);
        assert!(src.capacity() < 2 * RESERVE_STEP, "{}", src.capacity());
        // Near the end of the payload only the missing bytes are requested.
        let mut codec = FrameCodec::new();
        let mut src = BytesMut::from(&[0x0A, 1, 2, 3][..]);
        assert_eq!(codec.decode(&mut src).unwrap(), None);
        assert!(src.capacity() < 64, "{}", src.capacity());
    }

    #[test]
    fn drained_large_buffer_is_released_and_small_ones_are_kept() {
        let mut codec = FrameCodec::with_prefix(U32Be);
        let len = 2 * RELEASE_THRESHOLD;
        let mut src = BytesMut::with_capacity(len + 16);
        src.extend_from_slice(&u32::try_from(len).unwrap().to_be_bytes());
        src.resize(4 + len, 0xAB);
        src.extend_from_slice(&[0, 0]); // half of the next prefix
        let frame = codec.decode(&mut src).unwrap().unwrap();
        assert_eq!(frame.len(), len);
        assert_eq!(&src[..], &[0, 0]);
        assert_eq!(src.capacity(), RELEASE_COPY_LIMIT);
        assert_eq!(codec.peak_capacity, RELEASE_COPY_LIMIT);

        let mut codec = FrameCodec::new();
        let mut src = BytesMut::with_capacity(4096);
        src.extend_from_slice(&[0x03, 1, 2, 3, 0x01]);
        let ptr = src.as_ptr();
        assert_eq!(
            codec.decode(&mut src).unwrap().as_deref(),
            Some(&[1, 2, 3][..])
        );
        assert_eq!(
            src.as_ptr(),
            ptr.wrapping_add(4),
            "small buffers stay in place"
        );
    }

    #[test]
    fn errors_do_not_consume_and_repeat() {
        let mut codec = FrameCodec::builder().max_frame_length(10).new_codec();
        let mut src = BytesMut::from(&[0x0B, 0xAA][..]);
        for _ in 0..2 {
            assert!(matches!(
                codec.decode(&mut src),
                Err(FrameError::TooLarge { len: 11, max: 10 })
            ));
            assert_eq!(src.len(), 2);
        }
    }
}
