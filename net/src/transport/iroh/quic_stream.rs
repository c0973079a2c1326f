use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use ::iroh::endpoint::{ConnectionError, ReadError, RecvStream, SendStream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::*;

/// The one bidirectional stream as a byte stream for [`FramedTransport`](crate::transport::FramedTransport):
/// errors carry an [`IrohStreamError`], and a close with code 0 reads as
/// the end of the stream (Subduction closes with 0 when it is done, and
/// the framing then tells whether that came between messages).
#[derive(Debug)]
pub struct QuicStream {
    pub(super) send: SendStream,
    recv: RecvStream,
}

impl QuicStream {
    /// The two halves of one stream.
    pub fn new(send: SendStream, recv: RecvStream) -> Self {
        Self { send, recv }
    }

    /// The two halves.
    pub fn into_inner(self) -> (SendStream, RecvStream) {
        (self.send, self.recv)
    }
}

impl AsyncRead for QuicStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let recv = Pin::new(&mut self.get_mut().recv);
        match ready!(AsyncRead::poll_read(recv, cx, buf)) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(e) => {
                let read = e
                    .into_inner()
                    .and_then(|inner| inner.downcast::<ReadError>().ok());
                match read.map(|read| *read) {
                    // A close with code 0 reads as the end of the stream.
                    Some(ReadError::ConnectionLost(ConnectionError::ApplicationClosed(close)))
                        if close.error_code.into_inner() == u64::from(CLOSE_NORMAL) =>
                    {
                        Poll::Ready(Ok(()))
                    }
                    Some(read) => Poll::Ready(Err(IrohStreamError::from_read(read).into_io())),
                    None => Poll::Ready(Err(io::Error::other("QUIC read failed"))),
                }
            }
        }
    }
}

impl AsyncWrite for QuicStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().send)
            .poll_write(cx, buf)
            .map_err(|e| IrohStreamError::from_write(e).into_io())
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // QUIC sends what was written as the connection can.
        Poll::Ready(Ok(()))
    }

    /// Finishes our side of the stream (FIN); finishing twice is fine.
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let _already_finished = self.get_mut().send.finish();
        Poll::Ready(Ok(()))
    }
}
