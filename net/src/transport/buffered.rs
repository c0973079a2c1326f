//! The buffered I/O both byte-stream transports run on
//! ([`FramedTransport`](super::FramedTransport) and the WebSocket
//! transport): a read buffer a sans-IO decoder consumes, a write buffer
//! frames are encoded into, and neither held while idle.
//!
//! ```text
//!   read:  buffer empty  -> read into a 4 KiB stack scratch, copy what came
//!          frame pending -> read straight into the spare capacity the
//!                           decoder reserved (its memory bound applies)
//!          buffer drained -> dropped (frames handed out keep their bytes)
//!   write: frames are encoded into the write buffer; past 8 KiB the sink
//!          writes out before taking more; once flushed, the buffer is dropped
//! ```

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Size of the stack buffer an idle connection reads into.
const SCRATCH: usize = 4096;

/// Buffered bytes above which the sink writes out before it takes another
/// message (like tokio-util's `Framed`: 8 KiB of backpressure).
const BACKPRESSURE: usize = 8 * 1024;

/// A stream with a read buffer and a write buffer; see the [module
/// docs](self).
#[derive(Debug)]
pub(crate) struct BufferedIo<T> {
    io: T,
    /// Bytes read and not decoded yet.
    pub(crate) read_buf: BytesMut,
    /// Bytes encoded and not written yet.
    pub(crate) write_buf: BytesMut,
}

impl<T> BufferedIo<T> {
    /// `io`, with `read` the bytes already read from it.
    pub(crate) fn new(io: T, read: BytesMut) -> Self {
        Self {
            io,
            read_buf: read,
            write_buf: BytesMut::new(),
        }
    }

    pub(crate) fn get_ref(&self) -> &T {
        &self.io
    }

    /// The stream and the bytes read from it but not decoded yet.
    pub(crate) fn into_parts(self) -> (T, BytesMut) {
        (self.io, self.read_buf)
    }

    /// Heap bytes the two buffers hold (their capacities).
    pub(crate) fn capacity(&self) -> usize {
        self.read_buf.capacity() + self.write_buf.capacity()
    }

    /// Drops a drained read buffer. Its capacity may read 0 and it still
    /// shares the allocation of the frames split off it, so it is replaced
    /// whenever it is empty, and holds nothing while no frame is pending.
    pub(crate) fn release_drained_read_buffer(&mut self) {
        if self.read_buf.is_empty() {
            self.read_buf = BytesMut::new();
        }
    }

    /// The write buffer is full enough that the sink writes out before it
    /// takes another message.
    pub(crate) fn is_backpressured(&self) -> bool {
        self.write_buf.len() >= BACKPRESSURE
    }
}

impl<T: AsyncRead + Unpin> BufferedIo<T> {
    /// Reads more bytes into the read buffer; `Ok(0)` at end of stream.
    pub(crate) fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.read_buf.capacity() == self.read_buf.len() {
            // Nothing reserved (idle, or between frames): read into the
            // stack, and allocate only for what arrived.
            let mut scratch = [0u8; SCRATCH];
            let mut buf = ReadBuf::new(&mut scratch);
            ready!(Pin::new(&mut self.io).poll_read(cx, &mut buf))?;
            let filled = buf.filled();
            self.read_buf.extend_from_slice(filled);
            return Poll::Ready(Ok(filled.len()));
        }
        tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.read_buf)
    }
}

impl<T: AsyncWrite + Unpin> BufferedIo<T> {
    /// Writes the whole write buffer out, then gives its allocation back.
    pub(crate) fn poll_write_all(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.write_buf.has_remaining() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.write_buf))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.write_buf.advance(n);
        }
        self.write_buf = BytesMut::new();
        Poll::Ready(Ok(()))
    }

    /// Writes the buffer out and flushes the stream.
    pub(crate) fn poll_flush_all(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_write_all(cx))?;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    /// Shuts the stream's write side down (call after
    /// [`BufferedIo::poll_flush_all`]).
    pub(crate) fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
