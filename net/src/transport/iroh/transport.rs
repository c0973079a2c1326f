use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use ::iroh::endpoint::{Connection as QuicConnection, RecvStream, SendStream, VarInt};
use bijou_framing::prefix::U32Be;
use bytes::Bytes;
use futures::{Sink, Stream};
use tokio::time::Sleep;

use crate::transport::{
    FramedTransport, FramingDiagnostics, Transport, TransportError, WriteInPlace,
};

use super::stream_error::quic_error;
use super::*;

/// A [`Transport`] over an iroh QUIC connection's one stream; see the
/// [module docs](super).
pub struct IrohTransport {
    framed: FramedTransport<QuicStream, U32Be>,
    conn: QuicConnection,
    /// Our side is finished (the sink closed).
    finished: bool,
    /// The peer acknowledged everything we sent, FIN included (or the
    /// connection is gone: nothing more to deliver).
    acked: bool,
    /// The peer's side ended between messages.
    peer_finished: bool,
    /// The stream has ended (peer's end, or an error was returned).
    ended: bool,
    /// We closed the connection.
    closed: bool,
    close_linger: Duration,
    /// While closing: the peer's acknowledgement of everything we sent,
    /// and how long we wait for it.
    linger: Option<Linger>,
}

struct Linger {
    ack: Pin<Box<dyn Future<Output = ()> + Send>>,
    deadline: Pin<Box<Sleep>>,
}

impl fmt::Debug for IrohTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IrohTransport")
            .field("remote", &self.remote_node_id())
            .field("max_message_length", &self.framed.max_message_length())
            .field("finished", &self.finished)
            .field("acked", &self.acked)
            .field("peer_finished", &self.peer_finished)
            .field("ended", &self.ended)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl IrohTransport {
    /// A transport over `conn`'s stream (`send`, `recv`), at most
    /// [`IROH_MAX_MESSAGE_LENGTH`] per message until
    /// [`Transport::set_max_message_length`]. [`connect`] and [`accept`]
    /// build it; this is for streams opened otherwise.
    pub fn new(conn: QuicConnection, send: SendStream, recv: RecvStream) -> Self {
        Self {
            framed: FramedTransport::new(QuicStream::new(send, recv), U32Be),
            conn,
            finished: false,
            acked: false,
            peer_finished: false,
            ended: false,
            closed: false,
            close_linger: DEFAULT_CLOSE_LINGER,
            linger: None,
        }
    }

    /// The remote endpoint's iroh node id (its TLS key, not its
    /// Subduction peer id).
    pub fn remote_node_id(&self) -> NodeId {
        self.conn.remote_id().into()
    }

    /// The QUIC connection (statistics, paths, round-trip time).
    pub fn connection(&self) -> &QuicConnection {
        &self.conn
    }

    /// Heap bytes held by our read and write buffers right now (their
    /// capacities; QUIC's own stream buffers are iroh's).
    pub fn buffered_capacity(&self) -> usize {
        self.framed.buffered_capacity()
    }

    /// How long closing the sink waits for the peer to acknowledge what we
    /// sent ([`DEFAULT_CLOSE_LINGER`] unless set).
    pub fn set_close_linger(&mut self, linger: Duration) {
        self.close_linger = linger;
    }

    /// Closes the QUIC connection now with `code` and `reason`, without
    /// waiting for anything: what was not delivered yet is lost. The
    /// stream then ends.
    pub fn abort(&mut self, code: u32, reason: &[u8]) {
        self.close_connection(code, reason);
    }

    fn close_connection(&mut self, code: u32, reason: &[u8]) {
        if !self.closed {
            self.closed = true;
            self.linger = None;
            self.conn.close(VarInt::from_u32(code), reason);
        }
    }

    /// The close code for an error the stream returns, if we are the one
    /// to close.
    fn close_for(err: &TransportError) -> Option<(u32, &'static [u8])> {
        match err {
            TransportError::TooLarge { .. } => Some((CLOSE_TOO_LARGE, b"message too large")),
            // The connection is gone already.
            TransportError::Quic(_) => None,
            _ => Some((CLOSE_INTERNAL, b"internal error")),
        }
    }
}

impl Drop for IrohTransport {
    fn drop(&mut self) {
        self.close_connection(CLOSE_NORMAL, b"");
    }
}

impl Stream for IrohTransport {
    type Item = Result<Bytes, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        match ready!(Pin::new(&mut this.framed).poll_next(cx)) {
            Some(Ok(message)) => Poll::Ready(Some(Ok(message))),
            None => {
                this.ended = true;
                this.peer_finished = true;
                if this.acked {
                    // Both sides are done, and the peer has all we sent.
                    // (While our close still waits for that, it closes.)
                    this.close_connection(CLOSE_NORMAL, b"");
                }
                Poll::Ready(None)
            }
            Some(Err(err)) => {
                this.ended = true;
                let err = quic_error(err);
                if let Some((code, reason)) = Self::close_for(&err) {
                    this.close_connection(code, reason);
                }
                Poll::Ready(Some(Err(err)))
            }
        }
    }
}

impl Sink<Bytes> for IrohTransport {
    type Error = TransportError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Pin::new(&mut self.get_mut().framed)
            .poll_ready(cx)
            .map_err(quic_error)
    }

    fn start_send(self: Pin<&mut Self>, message: Bytes) -> Result<(), TransportError> {
        Pin::new(&mut self.get_mut().framed).start_send(message)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Pin::new(&mut self.get_mut().framed)
            .poll_flush(cx)
            .map_err(quic_error)
    }

    /// Flushes, finishes our side of the stream, and waits (at most the
    /// close linger) for the peer to acknowledge it; then closes the
    /// connection with code 0 if the peer has finished too and has
    /// acknowledged everything.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        if !this.finished {
            ready!(Pin::new(&mut this.framed).poll_close(cx)).map_err(quic_error)?;
            this.finished = true;
            if !this.closed {
                let stopped = this.framed.get_ref().send.stopped();
                this.linger = Some(Linger {
                    ack: Box::pin(async move {
                        let _ = stopped.await;
                    }),
                    deadline: Box::pin(tokio::time::sleep(this.close_linger)),
                });
            }
        }
        if let Some(linger) = &mut this.linger {
            if linger.ack.as_mut().poll(cx).is_ready() {
                this.acked = true;
            } else if linger.deadline.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            // Acknowledged, or waited long enough: without the
            // acknowledgement the connection stays open (the peer may
            // still be reading) until the peer's end or the drop.
            this.linger = None;
        }
        if this.peer_finished && this.acked {
            this.close_connection(CLOSE_NORMAL, b"");
        }
        Poll::Ready(Ok(()))
    }
}

impl Transport for IrohTransport {
    fn set_max_message_length(&mut self, max: usize) {
        self.framed.set_max_message_length(max);
    }

    fn max_message_length(&self) -> usize {
        self.framed.max_message_length()
    }

    fn diagnostics(&self) -> Option<&dyn FramingDiagnostics> {
        self.framed.diagnostics()
    }

    /// Writes the prefix and the message straight into the write buffer
    /// ([`FramedTransport`]'s).
    fn start_send_in_place(
        &mut self,
        message: &dyn WriteInPlace,
        len: usize,
    ) -> Result<(), TransportError> {
        self.framed.start_send_in_place(message, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::iroh::endpoint::ConnectionError;

    #[test]
    fn close_codes_and_errors_say_what_happened() {
        let err = IrohStreamError::from(ConnectionError::TimedOut);
        assert!(err.to_string().contains("stopped answering"), "{err}");
        let err = IrohStreamError::PeerClosed {
            code: u64::from(CLOSE_TOO_LARGE),
            reason: Bytes::from_static(b"frame exceeds size limit"),
        };
        assert_eq!(err.peer_close_code(), Some(1009));
        let text = err.to_string();
        assert!(
            text.contains("code 1009 (a message we sent was over its size limit)"),
            "{text}"
        );
        assert!(text.contains("frame exceeds size limit"), "{text}");
        let io = IrohStreamError::Reset { code: 3 }.into_io();
        let transport = quic_error(TransportError::Io(io));
        assert!(matches!(
            &transport,
            TransportError::Quic(IrohStreamError::Reset { code: 3 })
        ));
        assert!(matches!(
            IrohTransport::close_for(&TransportError::TooLarge { len: 300, max: 256 }),
            Some((CLOSE_TOO_LARGE, _))
        ));
        assert!(IrohTransport::close_for(&transport).is_none());
    }
}
