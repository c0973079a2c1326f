use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::prefix::{Bijou64, LengthPrefix, PrefixError, MAX_PREFIX_LEN};
use crate::recv_buffer::RecvBuffer;
use crate::{to_u64, Builder, FrameError};

/// Default maximum payload length: 50 MiB, Subduction's transport limit.
pub const DEFAULT_MAX_FRAME_LENGTH: usize = 50 * 1024 * 1024;

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
/// [`Default`]; see below for the wire format, the decoder
/// state machine and its memory bound.
///
/// A codec holds the decoding state of one stream (like tokio-util's
/// codecs): use one per connection, with the same buffer throughout.
///
/// ```
/// use bijou_frame::framing::{prefix::Leb128, FrameCodec};
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
/// # Ok::<(), bijou_frame::framing::FrameError>(())
/// ```
///
/// A stream is a sequence of frames, each a [length prefix](crate::prefix)
/// followed by exactly that many payload bytes. Nothing else is on the wire:
/// no header, no padding, no terminator.
///
/// ```text
/// FrameCodec<Bijou64> (default), payloads "hi" and 300 bytes:
/// +------+--------+-----------+-------------------+
/// | 0x02 |  "hi"  | 0xF8 0x34 |  300 bytes        |
/// +------+--------+-----------+-------------------+
///  prefix payload   prefix      payload
///
/// FrameCodec<Leb128>, the same frames:
/// +------+--------+-----------+-------------------+
/// | 0x02 |  "hi"  | 0xAC 0x02 |  300 bytes        |
/// +------+--------+-----------+-------------------+
///
/// FrameCodec<U32Be> (Subduction's QUIC framing, tokio-util's default):
/// +-------------+--------+-------------+-------------------+
/// | 00 00 00 02 |  "hi"  | 00 00 01 2C |  300 bytes        |
/// +-------------+--------+-------------+-------------------+
/// ```
///
/// # Decoding
///
/// The decoder is a two-state machine, like tokio-util's
/// `LengthDelimitedCodec`:
///
/// - **head**: waiting for a complete prefix. For bijou64 and u32-be the
///   prefix length is known from the first byte (never scanned); for every
///   prefix the decoder remembers how many bytes it is still waiting for and
///   does not look at the buffer again until they are there. Once the prefix
///   is complete its value is checked against the maximum *as a `u64`*,
///   before anything is allocated, and the prefix is consumed.
/// - **data**: the payload length is remembered; the decoder waits until the
///   whole payload is buffered and hands it out zero-copy
///   (`split_to(len).freeze()`).
///
/// When a whole frame is already buffered behind its prefix (the common case
/// for small frames), the decoder goes from head to head in one call: prefix
/// and payload leave the buffer in a single `split_to`, and the prefix is
/// dropped from the frozen handle (`Bytes::advance`, no copy). The payload is
/// still a zero-copy view of the buffer; an empty payload is `Bytes::new()`
/// and does not pin the buffer.
///
/// Partial input returns `Ok(None)`. Errors are terminal (see
/// [`FrameError`]).
///
/// # Memory
///
/// A peer can announce a frame of up to the maximum length and then send
/// nothing, or send it slowly. The decoder never reserves the announced
/// length up front. While a payload of `len` bytes is incomplete, with `r`
/// of them buffered and `m = len - r` missing, each call to `decode`:
///
/// 1. uses room the buffer *already owns* for the whole payload, if there is
///    any: `BytesMut::try_reclaim(m)`, which never allocates (it may move
///    the `r` bytes to the front of an allocation that no frame still
///    shares, a copy of `r` bytes at most once per frame). This is how a
///    stream of large frames reuses one allocation, as tokio-util's
///    `LengthDelimitedCodec` does by reserving the announced length;
/// 2. otherwise, does nothing while at least `min(m, 64 KiB)`
///    bytes of spare capacity are left;
/// 3. otherwise grows the buffer *geometrically toward the announced
///    length*, to a capacity of `min(len, 2r + 64 KiB)`: by reclaiming owned
///    room if that suffices, else by reallocating to exactly that capacity
///    (through a `Vec` and `reserve_exact`: `BytesMut::reserve` may double
///    the old allocation instead, past the bound). The allocator may grow
///    the allocation in place or remap its pages rather than copy. If frames
///    still share the old allocation, the `r` bytes are copied out first and
///    the old allocation stays with those frames.
///
/// **Bound:** every allocation the decoder makes for an unfinished frame has
/// a capacity of at most `min(len, 2r + 64 KiB)`, where `r` is the number of
/// that frame's bytes actually received; beyond that the buffer only keeps
/// room it already owned from earlier frames, which the release rule below
/// gives back. On a new connection, a peer that sends only a prefix costs
/// exactly 64 KiB whatever length it announces (the bounded-memory test
/// measures one 64 KiB buffer per decoder, the prefix's own buffer freed). Between two growths `r`
/// more than doubles (a growth at `r` leaves `r + 64 KiB` spare), so an
/// `n`-byte frame received this way costs at most `log2(n) + 1`
/// reallocations, which copy `O(n)` bytes in total. After each call at least
/// `min(m, 64 KiB)` bytes of spare capacity are left, so a reader that
/// fills the spare capacity (tokio-util's `FramedRead`,
/// `FramedTransport` (in `bijou-net`)) never has to grow
/// the buffer itself while a frame is pending; a caller that appends more
/// than that (`extend_from_slice`) lets `BytesMut` grow it by its own rules.
///
/// After a large frame the buffer must not keep a large allocation alive. The
/// decoder remembers the largest buffer capacity it has seen; once that is at
/// least 1 MiB and at most
/// 8 KiB of unread bytes remain, it moves them to a fresh 8 KiB buffer and
/// drops its handle on the large allocation, which is then freed as soon as
/// the frames cut from it are dropped. The copy costs at most 8 KiB per
/// megabyte-sized allocation. This check runs before step 1 above, so a
/// stalled frame with at most 8 KiB received never keeps a large allocation.
///
/// # Encoding
///
/// [`Encoder<Bytes>`](Encoder) and [`Encoder<&[u8]>`](Encoder) write the
/// prefix and copy the payload. A frame over the maximum is refused with
/// [`FrameError::TooLarge`] and nothing is written.
#[derive(Debug, Clone)]
pub struct FrameCodec<P = Bijou64> {
    max_frame_length: usize,
    state: DecodeState,
    recv: RecvBuffer,
    prefix: P,
}

impl FrameCodec<Bijou64> {
    /// A bijou64-prefixed codec with the default maximum
    /// ([`DEFAULT_MAX_FRAME_LENGTH`], 50 MiB). For another prefix use
    /// `FrameCodec::<Leb128>::default()` or [`Builder::prefix`].
    ///
    /// ```
    /// let codec = bijou_frame::framing::FrameCodec::new();
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
    /// use bijou_frame::framing::{prefix::U32Be, FrameCodec};
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
    /// use bijou_frame::framing::{prefix::Leb128, FrameCodec};
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
            recv: RecvBuffer::default(),
            prefix,
        }
    }

    /// The largest payload this codec decodes or encodes, in bytes.
    ///
    /// ```
    /// use bijou_frame::framing::{prefix::U32Be, FrameCodec};
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
    /// let mut codec = bijou_frame::framing::FrameCodec::new();
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

    /// An announced payload length as a `usize`, if it is at most the
    /// maximum (checked as a `u64`, before anything is allocated).
    #[inline(always)]
    fn admissible(&self, len: u64) -> Option<usize> {
        if len > to_u64(self.max_frame_length) {
            return None;
        }
        usize::try_from(len).ok()
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
        // Checked before anything is allocated or consumed.
        let len = self.admissible(len).ok_or_else(|| self.too_large(len))?;
        // `decode` just read `prefix_len` bytes from `src`; `min` is a no-op.
        src.advance(prefix_len.min(src.len()));
        Ok(Some((len, prefix_len)))
    }

    /// The fast path of [`Decoder::decode`]: in the head state, a complete
    /// and admissible prefix followed by its whole, non-empty payload.
    /// Returns the prefix and payload lengths; the state is then ready for
    /// the next head. `None` for everything else, which
    /// [`FrameCodec::decode_slow`] handles.
    #[inline(always)]
    fn whole_frame_at_head(&mut self, src: &BytesMut) -> Option<(usize, usize)> {
        let DecodeState::Head { want } = self.state else {
            return None;
        };
        if src.len() < want {
            return None;
        }
        let (len, prefix_len) = P::decode(src).ok()?;
        let len = self.admissible(len).filter(|&len| len > 0)?;
        if src.len().saturating_sub(prefix_len) < len {
            return None;
        }
        if want != 1 {
            self.state = DecodeState::Head { want: 1 };
        }
        Some((prefix_len, len))
    }

    /// Everything the fast path does not handle: partial prefixes and
    /// payloads, empty frames, errors, and the data state. Consumes the
    /// prefix; `Ok(Some((0, len)))` when a whole `len`-byte payload is at the
    /// front of `src`, with the state ready for the next head.
    #[inline(never)]
    fn decode_slow(&mut self, src: &mut BytesMut) -> Result<Option<(usize, usize)>, FrameError> {
        let (len, prefix_len) = match self.state {
            DecodeState::Head { want } => match self.decode_head(src, want)? {
                Some(head) => head,
                None => {
                    self.recv.release_if_drained(src);
                    return Ok(None);
                }
            },
            DecodeState::Data { len, prefix_len } => (len, prefix_len),
        };
        if src.len() >= len {
            self.state = DecodeState::Head { want: 1 };
            return Ok(Some((0, len)));
        }
        self.state = DecodeState::Data { len, prefix_len };
        self.recv.reserve_payload(src, len);
        Ok(None)
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
    #[inline(always)]
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        self.recv.observe(src);
        // The next frame is `len` payload bytes behind `skip` prefix bytes
        // at the front of `src`.
        let (skip, len) = match self.whole_frame_at_head(src) {
            Some(at) => at,
            None => match self.decode_slow(src)? {
                Some(at) => at,
                None => return Ok(None),
            },
        };
        let frame = if len == 0 {
            // Do not pin the buffer's allocation for an empty frame.
            src.advance(skip);
            Bytes::new()
        } else {
            // Prefix and payload leave `src` in one split; the prefix is
            // then dropped from the frozen handle.
            let mut frame = src.split_to(skip + len).freeze();
            frame.advance(skip);
            frame
        };
        self.recv.release_if_drained(src);
        Ok(Some(frame))
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
    /// `MessageCodec` (in `bijou-net`) does: no intermediate buffer).
    ///
    /// ```
    /// use bijou_frame::framing::FrameCodec;
    /// use bytes::{BufMut, BytesMut};
    ///
    /// let mut dst = BytesMut::new();
    /// FrameCodec::new().put_prefix(300, &mut dst)?;
    /// assert_eq!(&dst[..], [0xF8, 0x34]); // bijou64(300)
    /// assert!(dst.capacity() >= 2 + 300);
    /// dst.put_bytes(0, 300);
    /// # Ok::<(), bijou_frame::framing::FrameError>(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::{Leb128, U32Be};
    use crate::recv_buffer::{RELEASE_COPY_LIMIT, RELEASE_THRESHOLD, RESERVE_STEP};

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
    fn payload_grows_geometrically_to_twice_received_plus_one_step() {
        let len = 3 * 1024 * 1024;
        let mut codec = FrameCodec::with_prefix(U32Be);
        let mut src = BytesMut::from(&u32::try_from(len).unwrap().to_be_bytes()[..]);
        assert_eq!(codec.decode(&mut src).unwrap(), None);
        assert_eq!(src.capacity(), RESERVE_STEP, "a bare prefix costs one step");
        let chunk = [0xA5; 4096];
        let (mut received, mut growths, mut capacity) = (0, 0, src.capacity());
        loop {
            // Read into the spare capacity, as a socket read does.
            let n = chunk
                .len()
                .min(len - received)
                .min(src.capacity() - src.len());
            assert!(n > 0, "no spare capacity after {received} bytes");
            src.extend_from_slice(&chunk[..n]);
            received += n;
            let Some(frame) = codec.decode(&mut src).unwrap() else {
                let missing = len - received;
                assert!(
                    src.capacity() <= (2 * received + RESERVE_STEP).min(len),
                    "capacity {} after {received} bytes",
                    src.capacity()
                );
                assert!(src.capacity() - src.len() >= missing.min(RESERVE_STEP));
                if src.capacity() != capacity {
                    growths += 1;
                    capacity = src.capacity();
                }
                continue;
            };
            assert_eq!(frame.len(), len);
            break;
        }
        // `received` more than doubles between growths, from 4 KiB:
        // 4, 12, 28, ..., 2044 KiB, then the whole 3 MiB.
        assert_eq!(growths, 9);
        assert_eq!(capacity, len);
    }

    #[test]
    fn owned_room_is_reused_for_the_next_large_payload() {
        let len = 1024 * 1024;
        let head = u32::try_from(len).unwrap().to_be_bytes();
        // One whole frame, then the prefix and 64 KiB of the next one, in a
        // buffer with no room to spare.
        let wire = |src: &mut BytesMut| {
            src.extend_from_slice(&head);
            src.resize(4 + len, 1);
            src.extend_from_slice(&head);
            src.resize(8 + len + RESERVE_STEP, 2);
        };

        let mut codec = FrameCodec::with_prefix(U32Be);
        let mut src = BytesMut::with_capacity(8 + len + RESERVE_STEP);
        wire(&mut src);
        let base = src.as_ptr();
        let frame = codec.decode(&mut src).unwrap().unwrap();
        assert_eq!(frame.len(), len);
        drop(frame);
        assert_eq!(codec.decode(&mut src).unwrap(), None);
        // Nothing shares the allocation any more: the 64 KiB received moved
        // to its front, and the whole payload fits without allocating.
        assert_eq!(src.as_ptr(), base);
        assert!(src.capacity() >= len, "{}", src.capacity());
        let capacity = src.capacity();
        src.resize(len, 2);
        assert_eq!(src.capacity(), capacity);
        assert_eq!(codec.decode(&mut src).unwrap().map(|f| f.len()), Some(len));

        // While the first frame is alive its allocation cannot be reclaimed:
        // the next payload gets a new buffer within the bound.
        let mut codec = FrameCodec::with_prefix(U32Be);
        let mut src = BytesMut::with_capacity(8 + len + RESERVE_STEP);
        wire(&mut src);
        let frame = codec.decode(&mut src).unwrap().unwrap();
        assert_eq!(codec.decode(&mut src).unwrap(), None);
        assert_eq!(src.capacity(), 2 * RESERVE_STEP + RESERVE_STEP);
        assert!(src.iter().all(|&b| b == 2));
        drop(frame);
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
