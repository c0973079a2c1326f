use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use bijou_signing::{Identity, PeerId};

use super::contact_card::contact_card;
use super::document::RootDelegation;
use super::envelope::{ContactCardJson, SukMessage};
use super::error::KeyhiveError;
use super::message::{KeyhiveMessage, KeyhivePeer};
use super::signed::SignedKeyhive;
use super::VerifiedSuk;

/// How a registration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The server asked for the root delegation, was sent it, and confirmed.
    Registered,
    /// The server already had the root delegation (an earlier
    /// registration): nothing was sent but the confirmation.
    AlreadyKnown,
}

/// What to do after a received message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Step {
    /// Send this and wait for the next message.
    Send(Box<SukMessage>),
    /// Send this; the registration is complete.
    SendAndDone(Box<SukMessage>, Outcome),
    /// The registration is complete.
    Done(Outcome),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    AwaitCard,
    AwaitResponse,
    AwaitConfirmation,
    Done(Outcome),
}

impl State {
    fn expected(self) -> &'static str {
        match self {
            Self::AwaitCard => "MissingContactCard",
            Self::AwaitResponse => "SyncResponse",
            Self::AwaitConfirmation => "SyncConfirmation",
            Self::Done(_) => "nothing (the registration is complete)",
        }
    }
}

/// Registering a document with a keyhive server: the exchange
/// `subduction_keyhive` 0.12 runs between two peers, from the side that
/// holds the document, sans-IO (messages in, messages out).
///
/// ```text
///   client                                              server
///   RequestContactCard   + our contact card  ──────►   learns our key
///                        ◄──────  MissingContactCard + its contact card
///   SyncRequest { found: [hash of the root delegation] } ──────►
///                        ◄──────  SyncResponse { requested, found, totals }
///   ┌ requested names our hash:
///   │ SyncOps { ops: [root delegation], totals } ──────►   ingests it: the
///   │                                                     document exists
///   │                    ◄──────  SyncConfirmation          done: Registered
///   └ requested is empty (the server has the event already):
///     SyncConfirmation ──────►                              done: AlreadyKnown
/// ```
///
/// The server answers only what it is sent, so the exchange ends in one of
/// these two ways or not at all (the caller bounds it with a timeout). A
/// push before the end may be dropped by the server in silence: wait for
/// [`Step::Done`].
#[derive(Debug, Clone)]
pub struct Registration {
    local: KeyhivePeer,
    server: KeyhivePeer,
    delegation: RootDelegation,
    state: State,
}

impl Registration {
    /// Starts registering `delegation` with `server` (the peer the
    /// handshake authenticated) as `signer` (the key that ran the
    /// handshake): the registration and the first message to send.
    ///
    /// # Errors
    ///
    /// [`KeyhiveError::Signer`] if signing fails.
    pub fn start<S: Identity + ?Sized>(
        signer: &S,
        server: PeerId,
        delegation: RootDelegation,
    ) -> Result<(Self, SukMessage), KeyhiveError> {
        let this = Self {
            local: KeyhivePeer::new(signer.peer_id()),
            server: KeyhivePeer::new(server),
            delegation,
            state: State::AwaitCard,
        };
        let first = this.seal(
            signer,
            KeyhiveMessage::RequestContactCard {
                sender: this.local.clone(),
                target: this.server.clone(),
            },
            Some(contact_card(signer)?),
        )?;
        Ok((this, first))
    }

    /// Where the exchange stands, as a session snapshot keeps it: 0
    /// awaiting the contact card, 1 the response, 2 the confirmation, 3
    /// done (the outcome: 3 Registered, 4 AlreadyKnown).
    #[cfg(feature = "keyhive")]
    pub(crate) fn stage(&self) -> u8 {
        match self.state {
            State::AwaitCard => 0,
            State::AwaitResponse => 1,
            State::AwaitConfirmation => 2,
            State::Done(Outcome::Registered) => 3,
            State::Done(Outcome::AlreadyKnown) => 4,
        }
    }

    /// A registration of `delegation` between `local` and `server` at
    /// `stage` ([`Registration::stage`]); `None` for an unknown stage.
    #[cfg(feature = "keyhive")]
    pub(crate) fn resume(
        local: PeerId,
        server: PeerId,
        delegation: RootDelegation,
        stage: u8,
    ) -> Option<Self> {
        let state = match stage {
            0 => State::AwaitCard,
            1 => State::AwaitResponse,
            2 => State::AwaitConfirmation,
            3 => State::Done(Outcome::Registered),
            4 => State::Done(Outcome::AlreadyKnown),
            _ => return None,
        };
        Some(Self {
            local: KeyhivePeer::new(local),
            server: KeyhivePeer::new(server),
            delegation,
            state,
        })
    }

    /// The delegation being registered.
    #[must_use]
    pub fn delegation(&self) -> &RootDelegation {
        &self.delegation
    }

    /// The server's message the registration waits for
    /// (`"SyncResponse"`), for errors.
    #[must_use]
    pub fn waiting_for(&self) -> &'static str {
        self.state.expected()
    }

    /// How it ended, once it has.
    #[must_use]
    pub fn outcome(&self) -> Option<Outcome> {
        match self.state {
            State::Done(outcome) => Some(outcome),
            _ => None,
        }
    }

    fn seal<S: Identity + ?Sized>(
        &self,
        signer: &S,
        message: KeyhiveMessage,
        card: Option<ContactCardJson>,
    ) -> Result<SukMessage, KeyhiveError> {
        Ok(SukMessage {
            contact_card: card,
            signed: SignedKeyhive::sign(signer, message)?,
        })
    }

    /// Takes the server's next message (verified: signed by the server).
    ///
    /// # Errors
    ///
    /// [`KeyhiveError::UnexpectedMessage`] for a message out of turn or
    /// for someone else (the registration stays where it was),
    /// [`KeyhiveError::Signer`] if signing our answer fails.
    pub fn handle<S: Identity + ?Sized>(
        &mut self,
        signer: &S,
        received: &VerifiedSuk,
    ) -> Result<Step, KeyhiveError> {
        let message = &received.message().signed.message;
        let unexpected = || KeyhiveError::UnexpectedMessage {
            found: message.kind_name(),
            expected: self.state.expected(),
        };
        if message.sender().key != self.server.key || message.target().key != self.local.key {
            return Err(unexpected());
        }
        match (self.state, message) {
            (State::AwaitCard, KeyhiveMessage::MissingContactCard { .. }) => {
                let request = self.seal(
                    signer,
                    KeyhiveMessage::SyncRequest {
                        sender: self.local.clone(),
                        target: self.server.clone(),
                        found: vec![self.delegation.hash],
                        pending: Vec::new(),
                    },
                    None,
                )?;
                self.state = State::AwaitResponse;
                Ok(Step::Send(Box::new(request)))
            }
            (
                State::AwaitResponse,
                KeyhiveMessage::SyncResponse {
                    requested,
                    responder_total,
                    requester_total,
                    ..
                },
            ) => {
                if requested.contains(&self.delegation.hash) {
                    let ops = self.seal(
                        signer,
                        KeyhiveMessage::SyncOps {
                            sender: self.local.clone(),
                            target: self.server.clone(),
                            ops: vec![self.delegation.event.clone()],
                            responder_total: *responder_total,
                            requester_total: *requester_total,
                        },
                        None,
                    )?;
                    self.state = State::AwaitConfirmation;
                    Ok(Step::Send(Box::new(ops)))
                } else {
                    let confirmation = self.seal(
                        signer,
                        KeyhiveMessage::SyncConfirmation {
                            sender: self.local.clone(),
                            target: self.server.clone(),
                            confirmer_total: *requester_total,
                        },
                        None,
                    )?;
                    self.state = State::Done(Outcome::AlreadyKnown);
                    Ok(Step::SendAndDone(
                        Box::new(confirmation),
                        Outcome::AlreadyKnown,
                    ))
                }
            }
            (State::AwaitConfirmation, KeyhiveMessage::SyncConfirmation { .. }) => {
                self.state = State::Done(Outcome::Registered);
                Ok(Step::Done(Outcome::Registered))
            }
            _ => Err(unexpected()),
        }
    }
}
