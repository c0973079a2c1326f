//! A bound on how long a server connection's answer may take to drain: a
//! client that stops reading lets the socket's buffers fill, and without a
//! bound its response (and hyper's task for the connection, and the
//! message in it) would stay until TCP itself gave up, minutes later.
//!
//! ```text
//!   write or flush accepted at once            -> nothing armed (no timer, no allocation)
//!   write or flush refused (socket full)       -> timer armed, `limit` from now
//!   more refusals, or partial progress         -> the same timer keeps running
//!   a flush completes (hyper handed over all   -> timer disarmed
//!     it had buffered: the answer drained)
//!   the timer fires while still refused        -> TimedOut error (DrainTimeout): hyper
//!                                                 ends the connection
//! ```
//!
//! The bound is on the whole drain, not on each pause: a client reading a
//! byte now and then still meets it.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// The error inside the [`io::Error`] (kind [`io::ErrorKind::TimedOut`])
/// a stream wrapped in [`WriteDeadline`] fails with.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the client did not take the rest of an answer within {after:?} (it stopped reading): the connection was dropped (raise ServerConfig::write_timeout for clients on slow links)")]
pub(super) struct DrainTimeout {
    /// The bound.
    pub(super) after: Duration,
}

impl DrainTimeout {
    /// The drain timeout among `error`'s causes, if it is one.
    pub(super) fn find(error: &(dyn std::error::Error + 'static)) -> Option<Self> {
        let mut cause = Some(error);
        while let Some(error) = cause {
            let inner = error
                .downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<Self>());
            if let Some(found) = inner {
                return Some(*found);
            }
            cause = error.source();
        }
        None
    }
}

/// `io`, whose writes must drain within `limit` of the first one the
/// stream could not take (see the module's docs).
#[derive(Debug)]
pub(super) struct WriteDeadline<I> {
    io: I,
    limit: Duration,
    /// Running while a write is held up; `None` otherwise.
    timer: Option<Pin<Box<Sleep>>>,
}

impl<I> WriteDeadline<I> {
    pub(super) fn new(io: I, limit: Duration) -> Self {
        Self {
            io,
            limit,
            timer: None,
        }
    }

    /// The stream refused a write: pending until the deadline (armed now
    /// if it is not running), then the error.
    fn held_up<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let limit = self.limit;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                DrainTimeout { after: limit },
            ))),
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for WriteDeadline<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Pending => this.held_up(cx),
            done => done,
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write_vectored(cx, bufs) {
            Poll::Pending => this.held_up(cx),
            done => done,
        }
    }

    /// Forwarded: hyper queues a body's bytes instead of copying them only
    /// when the stream writes vectors.
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_flush(cx) {
            Poll::Pending => this.held_up(cx),
            Poll::Ready(Ok(())) => {
                // hyper flushes the stream once it handed over everything
                // it buffered: the answer drained.
                this.timer = None;
                Poll::Ready(Ok(()))
            }
            failed => failed,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_shutdown(cx) {
            Poll::Pending => this.held_up(cx),
            done => done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_never_takes_fails_at_the_deadline_and_one_it_takes_disarms() {
        let (ours, mut theirs) = tokio::io::duplex(16);
        let mut io = WriteDeadline::new(ours, Duration::from_secs(5));
        // Taken at once: nothing armed.
        io.write_all(&[1; 16]).await.expect("fits the pipe");
        io.flush().await.expect("flushed");
        assert!(io.timer.is_none());
        // Held up, then drained before the deadline: disarmed.
        let (written, read) = tokio::join!(
            async {
                io.write_all(&[2; 32]).await?;
                io.flush().await
            },
            async {
                tokio::time::sleep(Duration::from_secs(4)).await;
                let mut all = [0; 48];
                theirs.read_exact(&mut all).await.map(|_| all)
            }
        );
        written.expect("drained in time");
        assert_eq!(read.expect("read")[16..], [2; 32]);
        assert!(io.timer.is_none());
        // Never taken: fails 5 s after the first refusal, with the bound.
        let start = tokio::time::Instant::now();
        io.write_all(&[3; 16]).await.expect("fits the pipe");
        let err = io.write_all(&[4; 1]).await.expect_err("never drains");
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        let found = DrainTimeout::find(&err).expect("a drain timeout");
        assert_eq!(found.after, Duration::from_secs(5));
        assert!(
            err.to_string().contains("ServerConfig::write_timeout"),
            "{err}"
        );
        drop(theirs);
    }
}
