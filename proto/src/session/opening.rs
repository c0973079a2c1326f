//! The handshake inside the session: from the first byte to an
//! authenticated peer, with the pre-authentication limit and the deadline.
//!
//! ```text
//!   client                                              server
//!   Session::client(key, audience, now, config)         Session::server(key, responder, now, config)
//!   Sign(challenge bytes) ──► handle_signature
//!   Transmit(challenge, 158 B) ─────────────────────►   handle_message: the responder's four checks
//!                                                       Sign(response bytes) ──► handle_signature
//!   handle_message ◄──────────── Transmit(response, 141 B) (or a rejection, 14 B, then Closed)
//!   Established(peer)                                   Established(peer)
//!
//!   until then: messages of at most 256 bytes (HANDSHAKE_MAX_MESSAGE_LENGTH), and the whole
//!   exchange by the deadline (SessionConfig::handshake_timeout) or Closed(HandshakeTimedOut)
//! ```
//!
//! The steps are [`Initiator`] and [`Responder`]'s, unchanged: this module
//! only sequences them, so their checks and bytes are the ones the
//! building blocks document.

use alloc::boxed::Box;
use core::time::Duration;

use bijou_signing::ed25519_dalek::VerifyingKey;
use bytes::Bytes;

use crate::handshake::{
    Answer, Answering, Authenticated, HandshakeError, Initiator, Responder, UnsignedChallenge,
    UnsignedResponse,
};
use crate::message::Audience;
use crate::time::{Now, Timestamp};

use super::signing::{Owner, SignBook};

/// Where the handshake stands, and its deadline.
#[derive(Debug)]
pub(crate) struct Opening {
    step: Step,
    /// The message to send next (the client's challenge).
    send: Option<Bytes>,
    pub(crate) deadline: Timestamp,
    /// The timeout the deadline came from, for the error.
    pub(crate) timeout: Duration,
}

#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "the step lives in the session's boxed opening phase, once per connection"
)]
enum Step {
    /// Client: the challenge waits for its signature.
    ClientSigning(UnsignedChallenge),
    /// Client: the challenge is sent; the response is next.
    ClientAwaiting(Initiator),
    /// Server: the challenge is next.
    ServerAwaiting(Responder),
    /// Server: the challenge passed; the response waits for its signature.
    ServerSigning(Box<UnsignedResponse>),
    /// Between steps (never seen outside a method).
    Moving,
}

/// What a step of the handshake led to.
#[derive(Debug)]
pub(crate) enum Progress {
    /// Nothing yet (a signature is still missing).
    Waiting,
    /// Send this, and go on waiting.
    Send(Bytes),
    /// Authenticated; send the reply first if there is one.
    Established(Authenticated, Option<Bytes>),
    /// Failed; send the reply (a rejection) first if there is one.
    Failed(HandshakeError, Option<Bytes>),
}

impl Opening {
    /// A client's handshake: the challenge for `audience` as `key`,
    /// stamped `now`, carrying `nonce`.
    pub(crate) fn client(
        key: VerifyingKey,
        audience: Audience,
        now: Now,
        nonce: [u8; 16],
        deadline: Timestamp,
        timeout: Duration,
    ) -> Result<Self, HandshakeError> {
        let unsigned = Initiator::unsigned(key, audience, now, nonce)?;
        Ok(Self {
            step: Step::ClientSigning(unsigned),
            send: None,
            deadline,
            timeout,
        })
    }

    /// A server's handshake, checking challenges with `responder`.
    pub(crate) fn server(responder: Responder, deadline: Timestamp, timeout: Duration) -> Self {
        Self {
            step: Step::ServerAwaiting(responder),
            send: None,
            deadline,
            timeout,
        }
    }

    /// Queues `bytes` to send.
    pub(crate) fn send(&mut self, bytes: Bytes) {
        self.send = Some(bytes);
    }

    /// The message to send, once.
    pub(crate) fn take_send(&mut self) -> Option<Bytes> {
        self.send.take()
    }

    /// What the handshake waits for, for errors.
    pub(crate) fn waiting_for(&self) -> &'static str {
        match self.step {
            Step::ClientSigning(_) | Step::ServerSigning(_) | Step::Moving => "signer",
            Step::ClientAwaiting(_) => "response",
            Step::ServerAwaiting(_) => "challenge",
        }
    }

    /// Whether the peer's next message is due.
    pub(crate) fn wants_message(&self) -> bool {
        self.send.is_none()
            && matches!(self.step, Step::ClientAwaiting(_) | Step::ServerAwaiting(_))
    }

    /// Seals what waits for a signature, if the book has it.
    pub(crate) fn on_signature(&mut self, book: &mut SignBook) -> Progress {
        match core::mem::replace(&mut self.step, Step::Moving) {
            Step::ClientSigning(unsigned) => {
                match book.lookup(Owner::Handshake, unsigned.message()) {
                    None => {
                        self.step = Step::ClientSigning(unsigned);
                        Progress::Waiting
                    }
                    Some(signature) => match unsigned.sign(&signature) {
                        Ok(initiator) => {
                            let challenge = initiator.challenge().clone();
                            self.step = Step::ClientAwaiting(initiator);
                            Progress::Send(challenge)
                        }
                        Err(e) => Progress::Failed(e, None),
                    },
                }
            }
            Step::ServerSigning(unsigned) => {
                match book.lookup(Owner::Handshake, unsigned.message()) {
                    None => {
                        self.step = Step::ServerSigning(unsigned);
                        Progress::Waiting
                    }
                    Some(signature) => answered(unsigned.sign(&signature)),
                }
            }
            other => {
                self.step = other;
                Progress::Waiting
            }
        }
    }

    /// Takes the peer's message (the caller checked
    /// [`Opening::wants_message`]), received at `now` by `me`.
    pub(crate) fn on_message(
        &mut self,
        me: VerifyingKey,
        bytes: Bytes,
        now: Now,
        book: &mut SignBook,
    ) -> Progress {
        match core::mem::replace(&mut self.step, Step::Moving) {
            Step::ClientAwaiting(initiator) => match initiator.receive(bytes) {
                Ok(authenticated) => Progress::Established(authenticated, None),
                Err(e) => Progress::Failed(e, None),
            },
            Step::ServerAwaiting(responder) => {
                match responder.answer_unsigned(me, bytes, now) {
                    Answering::Now(answer) => answered(answer),
                    Answering::Sign(unsigned) => {
                        self.step = Step::ServerSigning(unsigned);
                        // Asks for the signature (or finds it: never, the
                        // bytes name a fresh challenge).
                        self.on_signature(book)
                    }
                }
            }
            other => {
                self.step = other;
                Progress::Waiting
            }
        }
    }
}

fn answered(answer: Answer) -> Progress {
    match answer.outcome {
        Ok(authenticated) => Progress::Established(authenticated, answer.reply),
        Err(e) => Progress::Failed(e, answer.reply),
    }
}
