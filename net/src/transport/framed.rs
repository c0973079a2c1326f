use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::{Sink, Stream};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Decoder, Encoder};

use bijou_framing::prefix::{LengthPrefix, PrefixKind};
use bijou_framing::FrameCodec;

use super::buffered::BufferedIo;
use super::{FramingDiagnostics, Transport, TransportError, WriteInPlace};

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
    io: BufferedIo<T>,
    codec: FrameCodec<P>,
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
            io: BufferedIo::new(io, BytesMut::new()),
            codec,
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
        self.io.get_ref()
    }

    /// The transport, giving up any buffered bytes (see
    /// [`FramedTransport::into_parts`] to keep them).
    pub fn into_inner(self) -> T {
        self.io.into_parts().0
    }

    /// The transport and the bytes read from it but not yet decoded (for
    /// example, what a peer pipelined right behind the handshake).
    pub fn into_parts(self) -> (T, BytesMut) {
        self.io.into_parts()
    }

    /// Heap bytes held by the read and write buffers right now (their
    /// capacities).
    pub fn buffered_capacity(&self) -> usize {
        self.io.capacity()
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
                this.codec.decode_eof(&mut this.io.read_buf)
            } else {
                this.codec.decode(&mut this.io.read_buf)
            };
            match decoded {
                Err(e) => {
                    this.failed = true;
                    return Poll::Ready(Some(Err(e.into())));
                }
                Ok(Some(frame)) => {
                    this.io.release_drained_read_buffer();
                    return Poll::Ready(Some(Ok(frame)));
                }
                Ok(None) if this.eof => return Poll::Ready(None),
                Ok(None) => {}
            }
            match ready!(this.io.poll_fill(cx)) {
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

impl<T, P> Sink<Bytes> for FramedTransport<T, P>
where
    T: AsyncWrite + Unpin,
    P: LengthPrefix + Unpin,
{
    type Error = TransportError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        if this.io.is_backpressured() {
            ready!(this.io.poll_write_all(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    /// Frames `message` into the write buffer; a message over the maximum
    /// is refused and nothing is written.
    fn start_send(self: Pin<&mut Self>, message: Bytes) -> Result<(), TransportError> {
        let this = self.get_mut();
        Ok(this.codec.encode(message, &mut this.io.write_buf)?)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Poll::Ready(Ok(ready!(self.get_mut().io.poll_flush_all(cx))?))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        ready!(this.io.poll_flush_all(cx))?;
        Poll::Ready(Ok(ready!(this.io.poll_shutdown(cx))?))
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

    fn diagnostics(&self) -> Option<&dyn FramingDiagnostics> {
        Some(self)
    }

    /// Writes the prefix and the message straight into the write buffer.
    fn start_send_in_place(
        &mut self,
        message: &dyn WriteInPlace,
        len: usize,
    ) -> Result<(), TransportError> {
        let start = self.io.write_buf.len();
        self.codec.put_prefix(len, &mut self.io.write_buf)?;
        super::write_body(&mut self.io.write_buf, start, message, len)
    }
}

impl<T, P: LengthPrefix> FramingDiagnostics for FramedTransport<T, P> {
    fn length_prefix(&self) -> PrefixKind {
        P::KIND
    }

    fn unread(&self) -> &[u8] {
        &self.io.read_buf
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
