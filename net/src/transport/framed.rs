use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use futures::{Sink, Stream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::codec::{Decoder, Encoder};

use bijou_framing::prefix::LengthPrefix;
use bijou_framing::FrameCodec;

use super::{Transport, TransportError, WriteInPlace};
use crate::message_codec::encode_in_place;
use crate::SendError;

/// Size of the stack buffer an idle connection reads into.
const SCRATCH: usize = 4096;

/// Messages behind a length prefix over any
/// `AsyncRead + AsyncWrite`, holding no buffer while idle.
///
/// ```text
/// +---------------+-----------+---------------+-----------+---- ...
/// | prefix (len0) | message 0 | prefix (len1) | message 1 |
/// +---------------+-----------+---------------+-----------+---- ...
/// ```
///
/// The prefix is any [`LengthPrefix`]: bijou64 (the default), LEB128, or
/// u32-BE (Subduction's QUIC framing). Decoding is [`FrameCodec`]'s: a
/// prefix announcing more than the maximum is refused before anything is
/// buffered, and memory grows with the bytes received, not with the
/// lengths a peer announces.
///
/// tokio-util's `Framed` keeps an 8 KiB read buffer and an 8 KiB write
/// buffer per connection for as long as it lives, and whatever a burst of
/// large frames grew them to. With anyone able to complete a handshake, a
/// server with many idle peers pays that for each. `FramedTransport` does
/// the same job and gives memory back as soon as it is not needed:
///
/// ```text
///   read:  buffer empty -> read into a 4 KiB stack scratch, copy what came
///          frame pending -> read straight into the buffer's spare capacity
///                           (the codec reserved it: a buffer of at most
///                           2 x received + 64 KiB for a pending frame)
///          buffer drained -> dropped (messages already handed out keep their bytes)
///   write: frames are written into the write buffer;
///          once flushed to the transport, the buffer is dropped
/// ```
///
/// So an idle connection holds no heap buffer at all (measured with 5,000
/// loopback connections in `framing/tests/idle_memory.rs`), at the cost of
/// one copy of at most 4 KiB for the first read after idling.
#[derive(Debug)]
pub struct FramedTransport<T, P> {
    io: T,
    codec: FrameCodec<P>,
    read_buf: BytesMut,
    write_buf: BytesMut,
    eof: bool,
    /// A framing error was returned: the stream has ended.
    failed: bool,
}

impl<T, P: LengthPrefix> FramedTransport<T, P> {
    /// Messages over `io` behind `prefix`, at most
    /// [`DEFAULT_MAX_FRAME_LENGTH`](bijou_framing::DEFAULT_MAX_FRAME_LENGTH) (50 MiB)
    /// each until [`Transport::set_max_message_length`].
    pub fn new(io: T, prefix: P) -> Self {
        Self::with_codec(io, FrameCodec::with_prefix(prefix))
    }

    /// Messages over `io`, framed by `codec` (its maximum frame length is
    /// the maximum message length).
    pub fn with_codec(io: T, codec: FrameCodec<P>) -> Self {
        Self {
            io,
            codec,
            read_buf: BytesMut::new(),
            write_buf: BytesMut::new(),
            eof: false,
            failed: false,
        }
    }

    /// The codec.
    pub fn codec(&self) -> &FrameCodec<P> {
        &self.codec
    }

    /// The transport.
    pub fn get_ref(&self) -> &T {
        &self.io
    }

    /// The transport, giving up any buffered bytes (see
    /// [`FramedTransport::into_parts`] to keep them).
    pub fn into_inner(self) -> T {
        self.io
    }

    /// The transport and the bytes read from it but not yet decoded (for
    /// example, what a peer pipelined right behind the handshake).
    pub fn into_parts(self) -> (T, BytesMut) {
        (self.io, self.read_buf)
    }

    /// Heap bytes held by the read and write buffers right now (their
    /// capacities).
    pub fn buffered_capacity(&self) -> usize {
        self.read_buf.capacity() + self.write_buf.capacity()
    }
}

impl<T, P> FramedTransport<T, P>
where
    T: AsyncRead + Unpin,
    P: LengthPrefix,
{
    /// Reads more bytes into `read_buf`; `Ok(0)` at end of stream.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
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

    /// Drops a drained read buffer. Its capacity may read 0 and it still
    /// shares the allocation of the frames split off it, so it is replaced
    /// whenever it is empty, and holds nothing while no frame is pending.
    fn release_drained_read_buffer(&mut self) {
        if self.read_buf.is_empty() {
            self.read_buf = BytesMut::new();
        }
    }
}

impl<T, P> Stream for FramedTransport<T, P>
where
    T: AsyncRead + Unpin,
    P: LengthPrefix + Unpin,
{
    type Item = Result<Bytes, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.failed {
            // Framing errors are terminal, as with tokio-util's `Framed`:
            // the next frame boundary cannot be found.
            return Poll::Ready(None);
        }
        loop {
            let decoded = if this.eof {
                this.codec.decode_eof(&mut this.read_buf)
            } else {
                this.codec.decode(&mut this.read_buf)
            };
            match decoded {
                Err(e) => {
                    this.failed = true;
                    return Poll::Ready(Some(Err(e.into())));
                }
                Ok(Some(frame)) => {
                    this.release_drained_read_buffer();
                    return Poll::Ready(Some(Ok(frame)));
                }
                Ok(None) if this.eof => return Poll::Ready(None),
                Ok(None) => {}
            }
            match ready!(this.poll_fill(cx)) {
                Err(e) => {
                    this.failed = true;
                    return Poll::Ready(Some(Err(TransportError::Io(e))));
                }
                Ok(0) => this.eof = true,
                Ok(_) => {}
            }
        }
    }
}

impl<T, P> FramedTransport<T, P>
where
    T: AsyncWrite + Unpin,
    P: LengthPrefix + Unpin,
{
    fn poll_write_all(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.write_buf.has_remaining() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.write_buf))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.write_buf.advance(n);
        }
        // Written out: give the buffer back.
        self.write_buf = BytesMut::new();
        Poll::Ready(Ok(()))
    }

    fn poll_flush_all(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_write_all(cx))?;
        Pin::new(&mut self.io).poll_flush(cx)
    }
}

/// Buffered bytes above which `poll_ready` writes out first (like
/// `Framed`: 8 KiB of backpressure).
const BACKPRESSURE: usize = 8 * 1024;

impl<T, P> Sink<Bytes> for FramedTransport<T, P>
where
    T: AsyncWrite + Unpin,
    P: LengthPrefix + Unpin,
{
    type Error = TransportError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        if this.write_buf.len() >= BACKPRESSURE {
            ready!(this.poll_write_all(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    /// Frames `message` into the write buffer; a message over the maximum
    /// is refused and nothing is written.
    fn start_send(self: Pin<&mut Self>, message: Bytes) -> Result<(), TransportError> {
        let this = self.get_mut();
        Ok(this.codec.encode(message, &mut this.write_buf)?)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Poll::Ready(Ok(ready!(self.get_mut().poll_flush_all(cx))?))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        ready!(this.poll_flush_all(cx))?;
        Poll::Ready(Ok(ready!(Pin::new(&mut this.io).poll_shutdown(cx))?))
    }
}

impl<T, P> Transport for FramedTransport<T, P>
where
    T: AsyncRead + AsyncWrite + Unpin,
    P: LengthPrefix + Unpin,
{
    fn set_max_message_length(&mut self, max: usize) {
        self.codec.set_max_frame_length(max);
    }

    fn max_message_length(&self) -> usize {
        self.codec.max_frame_length()
    }

    fn length_prefix(&self) -> Option<bijou_framing::prefix::PrefixKind> {
        Some(P::KIND)
    }

    fn unread(&self) -> &[u8] {
        &self.read_buf
    }

    /// Writes the prefix and the message straight into the write buffer.
    fn start_send_in_place(&mut self, message: &dyn WriteInPlace) -> Result<(), SendError> {
        encode_in_place(&self.codec, message, &mut self.write_buf).map_err(|e| match e {
            // The same errors as `start_send` gives for bytes.
            SendError::Frame(frame) => SendError::Transport(frame.into()),
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use bijou_framing::prefix::Bijou64;
    use bijou_framing::FrameError;

    #[tokio::test]
    async fn a_framing_error_ends_the_stream() {
        // bijou64 overflow, then more bytes: one error, then the end.
        let (mut a, b) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut a, &[0xFF; 12])
            .await
            .unwrap();
        drop(a);
        let mut framed = FramedTransport::new(b, Bijou64);
        assert!(matches!(framed.next().await, Some(Err(_))));
        assert!(framed.next().await.is_none());
        assert!(framed.next().await.is_none());
    }

    #[tokio::test]
    async fn truncation_at_eof_is_reported_once() {
        let (mut a, b) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut a, &[0x05, 0x01, 0x02])
            .await
            .unwrap();
        drop(a);
        let mut framed = FramedTransport::new(b, Bijou64);
        assert!(matches!(
            framed.next().await,
            Some(Err(TransportError::Frame(FrameError::Truncated { .. })))
        ));
        assert!(framed.next().await.is_none());
    }
}
