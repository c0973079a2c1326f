use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bijou_framing::websocket::{
    apply_mask, close_payload, encode_frame, encode_header, parse_close, Frame, FrameDecoder,
    OpCode, Role, WsFrameError,
};
use bytes::{Bytes, BytesMut};
use futures::{Sink, Stream};
use tokio::io::{AsyncRead, AsyncWrite};

use super::stall::StallTimer;
use super::{DEFAULT_STALL_TIMEOUT, WEBSOCKET_MAX_MESSAGE_LENGTH};
use crate::transport::buffered::BufferedIo;
use crate::transport::{write_body, Transport, TransportError, WriteInPlace};

/// The close code for a peer that stalled inside a frame (policy
/// violation).
const CLOSE_STALLED: u16 = 1008;

/// Maps a frame error: `TooLarge` is [`TransportError::TooLarge`], as on
/// every transport; the rest is [`TransportError::WebSocket`].
fn frame_error(err: WsFrameError) -> TransportError {
    match err {
        WsFrameError::TooLarge { len, max } => TransportError::TooLarge { len, max },
        other => TransportError::WebSocket(other),
    }
}

/// A [`Transport`] over a WebSocket; see the [module docs](super).
#[derive(Debug)]
pub struct WebSocketTransport<S> {
    io: BufferedIo<S>,
    role: Role,
    decoder: FrameDecoder,
    /// The fragments of an unfinished message.
    assembly: BytesMut,
    /// The latest ping not answered yet.
    pong: Option<Bytes>,
    stall: StallTimer,
    /// A write returned `Pending` in the sink: the read side leaves the
    /// socket's write waker alone.
    sink_waiting: bool,
    eof: bool,
    close_sent: bool,
    close_received: bool,
    /// An error was returned or the close finished: the stream has ended.
    ended: bool,
}

impl<S> WebSocketTransport<S> {
    /// A transport over a stream whose upgrade is done, playing `role`,
    /// with `read` the bytes already read from it (what came behind the
    /// HTTP head, or what [`WebSocketTransport::into_parts`] gave back at
    /// a frame boundary). The inverse of `into_parts`.
    ///
    /// ```
    /// use bijou_frame::framing::websocket::Role;
    /// use bijou_frame::net::transport::{websocket::WebSocketTransport, Transport};
    /// use bytes::BytesMut;
    ///
    /// let (a, _b) = tokio::io::duplex(64);
    /// let ws = WebSocketTransport::from_partially_read(a, Role::Server, BytesMut::new());
    /// let (a, unread) = ws.into_parts();
    /// let ws = WebSocketTransport::from_partially_read(a, Role::Server, unread);
    /// assert_eq!(ws.max_message_length(), 50 * 1024 * 1024);
    /// ```
    pub fn from_partially_read(io: S, role: Role, read: BytesMut) -> Self {
        Self {
            io: BufferedIo::new(io, read),
            role,
            decoder: FrameDecoder::new(role, WEBSOCKET_MAX_MESSAGE_LENGTH),
            assembly: BytesMut::new(),
            pong: None,
            stall: StallTimer::new(Some(DEFAULT_STALL_TIMEOUT)),
            sink_waiting: false,
            eof: false,
            close_sent: false,
            close_received: false,
            ended: false,
        }
    }

    /// The stream and the bytes read from it but not decoded yet. Between
    /// frames (no fragmented message open) these are whole frames and the
    /// next frame's first bytes; inside a frame, the frame's header is
    /// already consumed and lost with the decoder.
    pub fn into_parts(self) -> (S, BytesMut) {
        self.io.into_parts()
    }

    /// Received bytes buffered right now: the unfinished frame's and the
    /// unfinished fragmented message's.
    pub fn buffered_len(&self) -> usize {
        self.io.read_buf.len() + self.assembly.len()
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &S {
        self.io.get_ref()
    }

    /// Heap bytes held by the read, write and reassembly buffers right now
    /// (their capacities).
    pub fn buffered_capacity(&self) -> usize {
        self.io.capacity() + self.assembly.capacity()
    }

    /// How long the peer may pause inside a frame or a fragmented message
    /// ([`DEFAULT_STALL_TIMEOUT`] unless changed; `None`: forever). The
    /// timer is Tokio's: like the handshake drivers, the transport then
    /// needs a runtime with time enabled.
    pub fn set_stall_timeout(&mut self, timeout: Option<Duration>) {
        self.stall.set_timeout(timeout);
    }

    /// A fresh masking key for a client frame, none for a server frame.
    fn mask(&self) -> Option<[u8; 4]> {
        (self.role == Role::Client).then(rand::random)
    }

    /// Inside a frame or a fragmented message.
    fn mid_frame(&self) -> bool {
        !self.io.read_buf.is_empty() || !self.decoder.is_at_boundary()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> WebSocketTransport<S> {
    /// Queues the pending pong, if the write buffer has room for it.
    fn queue_pong(&mut self) {
        if !self.io.is_backpressured() {
            if let Some(ping) = self.pong.take() {
                let mask = self.mask();
                encode_frame(&mut self.io.write_buf, true, OpCode::Pong, &ping, mask);
            }
        }
    }

    /// From the read side: sends what is queued (pongs, a close) if the
    /// sink is not waiting on the socket itself (a socket wakes only the
    /// last writer that waited).
    fn write_from_reader(&mut self, cx: &mut Context<'_>) {
        self.queue_pong();
        if !self.sink_waiting && !self.io.write_buf.is_empty() {
            let _ = self.io.poll_flush_all(cx);
        }
    }

    /// Queues a close frame with `code` unless one was sent.
    fn queue_close(&mut self, code: Option<u16>) {
        if self.close_sent {
            return;
        }
        self.close_sent = true;
        self.pong = None;
        let payload = code.map(|code| close_payload(code, "")).unwrap_or_default();
        let mask = self.mask();
        encode_frame(&mut self.io.write_buf, true, OpCode::Close, &payload, mask);
    }

    /// Ends the stream with `err`, sending a close with `code` (best
    /// effort: if the socket takes it now).
    fn fail(&mut self, cx: &mut Context<'_>, code: u16, err: TransportError) -> TransportError {
        self.ended = true;
        self.stall.disarm();
        self.queue_close(Some(code));
        self.write_from_reader(cx);
        self.release_buffers();
        err
    }

    /// Drops every read-side buffer (the stream has ended).
    fn release_buffers(&mut self) {
        self.io.read_buf = BytesMut::new();
        self.assembly = BytesMut::new();
    }

    /// Handles one frame; `Some` when it completes a message.
    fn on_frame(&mut self, frame: Frame) -> Option<Bytes> {
        match frame.opcode {
            OpCode::Binary if frame.fin => Some(frame.payload),
            OpCode::Binary | OpCode::Continuation => {
                self.assembly.extend_from_slice(&frame.payload);
                frame
                    .fin
                    .then(|| std::mem::take(&mut self.assembly).freeze())
            }
            OpCode::Ping => {
                if !self.close_sent {
                    // A copy: the ping's bytes would pin the read buffer.
                    self.pong = Some(Bytes::copy_from_slice(&frame.payload));
                }
                None
            }
            OpCode::Close => {
                self.close_received = true;
                // Echo the peer's code (checked by the decoder).
                let code = parse_close(&frame.payload).ok().and_then(|c| c.code);
                self.queue_close(code);
                None
            }
            // Text is refused at its header; pongs carry nothing.
            OpCode::Text | OpCode::Pong => None,
        }
    }

    /// The end of the stream after a close or a clean end of input: sends
    /// what is queued (our close) and shuts our side down, best effort.
    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.queue_pong();
        if !self.io.write_buf.is_empty() && ready!(self.io.poll_flush_all(cx)).is_err() {
            self.io.write_buf = BytesMut::new();
        }
        let _ = ready!(self.io.poll_shutdown(cx));
        self.ended = true;
        self.stall.disarm();
        self.release_buffers();
        Poll::Ready(())
    }
}

impl<S> Stream for WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    type Item = Result<Bytes, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            if this.close_received {
                ready!(this.poll_finish(cx));
                return Poll::Ready(None);
            }
            let decoded = if this.eof {
                this.decoder.decode_eof(&mut this.io.read_buf)
            } else {
                this.decoder.decode(&mut this.io.read_buf)
            };
            match decoded {
                Err(e) => {
                    let code = e.close_code();
                    return Poll::Ready(Some(Err(this.fail(cx, code, frame_error(e)))));
                }
                Ok(Some(frame)) => {
                    this.io.release_drained_read_buffer();
                    let ping = frame.opcode == OpCode::Ping;
                    if let Some(message) = this.on_frame(frame) {
                        return Poll::Ready(Some(Ok(message)));
                    }
                    if ping {
                        // Answer now: the caller may not poll again soon.
                        this.write_from_reader(cx);
                    }
                    continue;
                }
                // A clean end between messages, like EOF between frames
                // on a byte stream.
                Ok(None) if this.eof => {
                    ready!(this.poll_finish(cx));
                    return Poll::Ready(None);
                }
                Ok(None) => {}
            }
            this.write_from_reader(cx);
            match this.io.poll_fill(cx) {
                Poll::Ready(Ok(0)) => this.eof = true,
                Poll::Ready(Ok(_)) => this.stall.progress(),
                Poll::Ready(Err(e)) => {
                    this.ended = true;
                    this.stall.disarm();
                    this.release_buffers();
                    return Poll::Ready(Some(Err(TransportError::Io(e))));
                }
                Poll::Pending => {
                    let mid_frame = this.mid_frame();
                    let after_ms = ready!(this.stall.poll_expired(cx, mid_frame));
                    let err = TransportError::Stalled {
                        after_ms,
                        have: this.io.read_buf.len(),
                    };
                    return Poll::Ready(Some(Err(this.fail(cx, CLOSE_STALLED, err))));
                }
            }
        }
    }
}

impl<S> WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// Records whether the sink is waiting on the socket.
    fn sink_poll<T>(&mut self, poll: Poll<T>) -> Poll<T> {
        self.sink_waiting = poll.is_pending();
        poll
    }

    fn check_send(&self, len: usize) -> Result<(), TransportError> {
        if self.close_sent {
            return Err(TransportError::SendAfterClose);
        }
        let max = self.decoder.max_message_length();
        if len > max {
            return Err(TransportError::TooLarge {
                len: len as u64,
                max,
            });
        }
        Ok(())
    }
}

impl<S> Sink<Bytes> for WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    type Error = TransportError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        if this.io.is_backpressured() {
            let poll = this.io.poll_write_all(cx);
            ready!(this.sink_poll(poll))?;
        }
        Poll::Ready(Ok(()))
    }

    /// Frames `message` as one binary message into the write buffer; one
    /// over the maximum is refused and nothing is written.
    fn start_send(self: Pin<&mut Self>, message: Bytes) -> Result<(), TransportError> {
        let this = self.get_mut();
        this.check_send(message.len())?;
        this.queue_pong();
        let mask = this.mask();
        encode_frame(&mut this.io.write_buf, true, OpCode::Binary, &message, mask);
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        this.queue_pong();
        let poll = this.io.poll_flush_all(cx);
        Poll::Ready(Ok(ready!(this.sink_poll(poll))?))
    }

    /// Sends a close frame (1000, normal) and flushes it. The stream goes
    /// on delivering until the peer answers the close.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        let this = self.get_mut();
        if !this.close_sent && !this.ended {
            this.queue_pong();
            this.queue_close(Some(1000));
        }
        let poll = this.io.poll_flush_all(cx);
        Poll::Ready(Ok(ready!(this.sink_poll(poll))?))
    }
}

impl<S> Transport for WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// Refuses messages over `max` (clamped to
    /// [`WEBSOCKET_MAX_MESSAGE_LENGTH`]) from the next frame header on.
    fn set_max_message_length(&mut self, max: usize) {
        self.decoder
            .set_max_message_length(max.min(WEBSOCKET_MAX_MESSAGE_LENGTH));
    }

    fn max_message_length(&self) -> usize {
        self.decoder.max_message_length()
    }

    /// Writes the frame header and the message straight into the write
    /// buffer (masked there on a client).
    fn start_send_in_place(
        &mut self,
        message: &dyn WriteInPlace,
        len: usize,
    ) -> Result<(), TransportError> {
        self.check_send(len)?;
        self.queue_pong();
        let frame_start = self.io.write_buf.len();
        let mask = self.mask();
        encode_header(&mut self.io.write_buf, true, OpCode::Binary, len, mask);
        let body = self.io.write_buf.len();
        write_body(&mut self.io.write_buf, frame_start, message, len)?;
        if let (Some(mask), Some(payload)) = (mask, self.io.write_buf.get_mut(body..)) {
            apply_mask(payload, mask);
        }
        Ok(())
    }
}
