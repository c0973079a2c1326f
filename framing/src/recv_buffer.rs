//! The receive-buffer policy both frame decoders follow
//! ([`FrameCodec`](crate::FrameCodec) and
//! [`websocket::FrameDecoder`](crate::websocket::FrameDecoder)), in one
//! place. `FrameCodec`'s memory section states it for users.

use bytes::{Bytes, BytesMut};

/// The spare capacity (64 KiB) kept ahead of an incomplete payload, and the
/// constant term of the memory bound: with `r` bytes of a `len`-byte payload
/// received, a buffer the decoder grows has a capacity of
/// `min(len, 2r + RESERVE_STEP)`, and it grows only once fewer than
/// `min(len - r, RESERVE_STEP)` bytes are spare. A peer that sends only a
/// header costs one step.
pub(crate) const RESERVE_STEP: usize = 64 * 1024;

/// Buffer capacity (1 MiB) from which a nearly drained buffer's allocation
/// is released.
pub(crate) const RELEASE_THRESHOLD: usize = 1024 * 1024;

/// At most this many unread bytes (8 KiB) are copied when a large buffer is
/// released; it is also the fresh buffer's capacity.
pub(crate) const RELEASE_COPY_LIMIT: usize = 8 * 1024;

/// A decoder's side of the policy: the largest buffer it has seen since it
/// last released one.
#[derive(Debug, Clone, Default)]
pub(crate) struct RecvBuffer {
    peak_capacity: usize,
}

impl RecvBuffer {
    /// Notes the capacity of the buffer a decode step starts with.
    #[inline(always)]
    pub(crate) fn observe(&mut self, src: &BytesMut) {
        if src.capacity() > self.peak_capacity {
            self.peak_capacity = src.capacity();
        }
    }

    /// After a decode step: once the buffer has been 1 MiB or more and at
    /// most 8 KiB are unread, moves them to a fresh 8 KiB buffer, so the
    /// large allocation lives only as long as the frames cut from it.
    #[inline]
    pub(crate) fn release_if_drained(&mut self, src: &mut BytesMut) {
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

    /// Makes room for the rest of an incomplete `len`-byte payload, of which
    /// `src` holds the first `src.len()` bytes: first releases a drained
    /// large buffer, then steps 1 to 3 of [`FrameCodec`'s memory
    /// section](crate::FrameCodec#memory).
    pub(crate) fn reserve_payload(&mut self, src: &mut BytesMut, len: usize) {
        self.release_if_drained(src);
        let received = src.len();
        let missing = len.saturating_sub(received);
        // 1. Room for the whole payload that the buffer already owns costs
        //    no allocation (at most a move of `received` bytes to its front).
        if src.try_reclaim(missing) {
            return;
        }
        // 2. At least a step (or the rest of the payload) is still spare.
        if src.capacity().saturating_sub(received) >= missing.min(RESERVE_STEP) {
            return;
        }
        // 3. Grow to `min(len, 2 * received + RESERVE_STEP)`: in place if the
        //    buffer owns that much, else by reallocating to exactly that
        //    capacity. `BytesMut::reserve` could round a reallocation up to
        //    twice the old allocation, past the bound, so the buffer goes
        //    through a `Vec` (`reserve_exact`) and back. Both conversions
        //    keep the allocation of a buffer no frame shares; the
        //    reallocation itself may then happen in place (or by remapping
        //    pages) rather than by a copy.
        let more = missing.min(received.saturating_add(RESERVE_STEP));
        if src.try_reclaim(more) {
            return;
        }
        let mut vec = Vec::from(core::mem::take(src));
        vec.reserve_exact(more);
        *src = BytesMut::from(Bytes::from(vec));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_buffer_starts_a_new_peak() {
        let mut recv = RecvBuffer::default();
        let mut src = BytesMut::with_capacity(RELEASE_THRESHOLD);
        src.extend_from_slice(&[7; 100]);
        recv.observe(&src);
        recv.release_if_drained(&mut src);
        assert_eq!(src.capacity(), RELEASE_COPY_LIMIT, "released");
        assert_eq!(&src[..], &[7; 100][..], "unread bytes kept");
        // The fresh buffer is the new peak: it is not released again.
        let ptr = src.as_ptr();
        recv.observe(&src);
        recv.release_if_drained(&mut src);
        assert_eq!(src.as_ptr(), ptr, "a small buffer stays");
    }

    #[test]
    fn a_bare_header_reserves_one_step_whatever_is_announced() {
        let mut recv = RecvBuffer::default();
        let mut src = BytesMut::new();
        recv.reserve_payload(&mut src, 50 << 20);
        assert_eq!(src.capacity(), RESERVE_STEP);
    }
}
