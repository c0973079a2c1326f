//! Keyhive on a [`Connection`]: sending `SUK\0` messages, registering a
//! document with a keyhive-enforcing server before the first push, and
//! probing a tree when pushes go unanswered.
//!
//! ```text
//!   register_document(signer, delegation, limit)
//!     send RequestContactCard ─► recv MissingContactCard ─► send SyncRequest ─►
//!     recv SyncResponse ─► send SyncOps ─► recv SyncConfirmation ─► Registered
//!     (other messages received meanwhile are handed back in `Registered::other`)
//!
//!   probe_access(tree, limit)
//!     send BatchSyncRequest (no fingerprints, no subscription) ─► the answer:
//!       Ok            the key may read the tree (open server, or a document
//!                     readable by Public or this key)
//!       Unauthorized  the server enforces keyhive and this key may not read
//!                     the tree: no document, or no access; so no pushes either
//!       NotFound      the server does not have the tree
//!       silence       something else: the server is busy, or not Subduction
//! ```
//!
//! An open (`--auth open`) server drops `SUK\0` messages: a registration
//! with it times out ([`RegisterError::TimedOut`]) while its pushes work.

use std::time::Duration;

// The sans-IO keyhive layer, re-exported: documents, delegations, the
// wire types and the registration state machine.
pub use bijou_proto::keyhive::*;
use bijou_proto::message::{
    BatchSyncRequest, FingerprintSeed, MessageError, SedimentreeId, SyncMessage, SyncResult,
};
use bijou_signing::{Identity, PeerId};

use crate::connection::{Connection, Delivered, Received, Rejected};
use crate::message_codec::SendError;
use crate::transport::{Transport, TransportError};

/// A registration that the server confirmed.
#[derive(Debug)]
#[non_exhaustive]
pub struct Registered {
    /// How it ended.
    pub outcome: Outcome,
    /// The document's tree id.
    pub tree: SedimentreeId,
    /// Messages other than keyhive's received during the exchange, in
    /// order.
    pub other: Vec<Received>,
}

/// Why a registration (or a probe) did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// Keyhive messages must be signed by the key that ran the handshake.
    #[error("the signer {signer} is not the key that ran the handshake ({local}); sign keyhive messages with the connection's own key")]
    WrongSigner {
        /// The key given.
        signer: PeerId,
        /// The connection's key.
        local: PeerId,
    },
    /// Building our message failed, or the server's keyhive message was
    /// malformed, badly signed, or out of turn.
    #[error("keyhive exchange failed: {0}")]
    Keyhive(#[from] KeyhiveError),
    /// Sending failed.
    #[error(transparent)]
    Send(#[from] SendError),
    /// The transport failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The peer closed the connection.
    #[error("the server closed the connection while we waited for {waiting_for}")]
    Closed {
        /// What the exchange waited for.
        waiting_for: &'static str,
    },
    /// No answer in time.
    #[error("no {waiting_for} from the server within {after:?}; a server started with --auth open ignores keyhive messages (then pushes need no registration), otherwise the server is slow or not a keyhive-enabled Subduction node")]
    TimedOut {
        /// The limit.
        after: Duration,
        /// What the exchange waited for.
        waiting_for: &'static str,
    },
}

/// What a [`Connection::probe_access`] found out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeAccess {
    /// The server answered the fetch: this key may read the tree (and
    /// `heads` is how many heads the server has). A server that enforces
    /// keyhive and allows the read may still refuse a push if this key has
    /// only Relay or Read.
    Readable {
        /// The server's heads for the tree.
        heads: usize,
    },
    /// The server enforces access control (keyhive) and this key may not
    /// read the tree: there is no document with that id, or it grants this
    /// key nothing. Pushes to it are dropped.
    Unauthorized,
    /// The server does not have the tree.
    NotFound,
    /// No answer within the limit.
    Silent,
}

/// The outcome of a probe, with the messages received meanwhile.
#[derive(Debug)]
#[non_exhaustive]
pub struct Probe {
    /// What the server said.
    pub access: TreeAccess,
    /// Messages received while waiting, in order.
    pub other: Vec<Received>,
}

impl Probe {
    /// A sentence for the user about `tree`.
    #[must_use]
    pub fn explain(&self, tree: SedimentreeId, key: PeerId) -> String {
        match self.access {
            TreeAccess::Readable { .. } => format!("the server lets {key} read tree {tree}; unacknowledged pushes have another cause (the server is slow, or this key may read but not write)"),
            TreeAccess::Unauthorized => format!("the server enforces keyhive access control: tree {tree} is not a document {key} may write (register it first, or use a document this key was granted Edit on)"),
            TreeAccess::NotFound => format!("the server does not have tree {tree}, and did not take the pushes"),
            TreeAccess::Silent => format!("the server answered no fetch of tree {tree} either: the silence is not an access refusal (the server is overloaded, hung, or not a Subduction server)"),
        }
    }
}

impl<T: Transport> Connection<T> {
    /// Sends one keyhive message, and flushes.
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::send`].
    ///
    /// # Errors
    ///
    /// [`SendError`]: too large for the transport, or it failed.
    pub async fn send_keyhive(&mut self, message: &SukMessage) -> Result<(), SendError> {
        let bytes = message.to_bytes().map_err(|_| {
            SendError::Encode(bijou_codec::WriteError::CountTooLarge {
                field: "SUK TotalSize",
                len: message.signed.wire_len(),
                max: u64::from(u32::MAX),
            })
        })?;
        self.send_bytes(bytes).await
    }

    /// Registers a document with the server (see the [module
    /// docs](self)): runs keyhive's exchange and returns when the server
    /// has confirmed. Push to the document only after this returns.
    /// `signer` must be the key that ran the handshake; `limit` bounds the
    /// whole exchange.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropped midway, the exchange is abandoned (start a
    /// new one; the server takes a registration again).
    ///
    /// # Errors
    ///
    /// [`RegisterError`]; [`RegisterError::TimedOut`] from a server that
    /// ignores keyhive (`--auth open`).
    pub async fn register_document<S: Identity + ?Sized>(
        &mut self,
        signer: &S,
        delegation: RootDelegation,
        limit: Duration,
    ) -> Result<Registered, RegisterError> {
        let local = self.local_peer();
        if signer.peer_id() != local {
            return Err(RegisterError::WrongSigner {
                signer: signer.peer_id(),
                local,
            });
        }
        let tree = delegation.tree_id();
        let (mut registration, first) =
            Registration::start(signer, self.remote_peer(), delegation)?;
        let mut other = Vec::new();
        let deadline = tokio::time::Instant::now() + limit;
        self.send_keyhive(&first).await?;
        let mut waiting_for = "MissingContactCard";
        loop {
            let received = match tokio::time::timeout_at(deadline, self.recv()).await {
                Err(_) => {
                    return Err(RegisterError::TimedOut {
                        after: limit,
                        waiting_for,
                    })
                }
                Ok(Err(e)) => return Err(e.into()),
                Ok(Ok(None)) => return Err(RegisterError::Closed { waiting_for }),
                Ok(Ok(Some(received))) => received,
            };
            let verified = match received.result {
                Ok(Delivered::Keyhive(verified)) => verified,
                Err(Rejected::Keyhive(e) | Rejected::Malformed(MessageError::Keyhive(e))) => {
                    return Err(e.into())
                }
                _ => {
                    other.push(received);
                    continue;
                }
            };
            match registration.handle(signer, &verified)? {
                Step::Send(next) => {
                    waiting_for = match next.signed.message.kind_name() {
                        "SyncRequest" => "SyncResponse",
                        _ => "SyncConfirmation",
                    };
                    self.send_keyhive(&next).await?;
                }
                Step::SendAndDone(last, outcome) => {
                    self.send_keyhive(&last).await?;
                    return Ok(Registered {
                        outcome,
                        tree,
                        other,
                    });
                }
                Step::Done(outcome) => {
                    return Ok(Registered {
                        outcome,
                        tree,
                        other,
                    })
                }
            }
        }
    }

    /// Asks the server for `tree` with a `BatchSyncRequest` (no
    /// fingerprints, no subscription) and reports its answer: what to tell
    /// a user whose pushes went unacknowledged (see [`Probe::explain`]).
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropped midway, the answer may arrive later as an
    /// ordinary message.
    ///
    /// # Errors
    ///
    /// [`RegisterError::Send`], [`RegisterError::Transport`],
    /// [`RegisterError::Closed`].
    pub async fn probe_access(
        &mut self,
        tree: SedimentreeId,
        limit: Duration,
    ) -> Result<Probe, RegisterError> {
        let nonce: u64 = rand::random();
        let seed = FingerprintSeed::new(rand::random(), rand::random());
        let request = BatchSyncRequest::new(tree, self.local_peer(), nonce, false, seed, [], []);
        self.send(SyncMessage::from(request)).await?;
        let deadline = tokio::time::Instant::now() + limit;
        let mut other = Vec::new();
        loop {
            let received = match tokio::time::timeout_at(deadline, self.recv()).await {
                Err(_) => {
                    return Ok(Probe {
                        access: TreeAccess::Silent,
                        other,
                    })
                }
                Ok(Err(e)) => return Err(e.into()),
                Ok(Ok(None)) => {
                    return Err(RegisterError::Closed {
                        waiting_for: "BatchSyncResponse",
                    })
                }
                Ok(Ok(Some(received))) => received,
            };
            let access = match &received.result {
                Ok(Delivered::Sync(verified)) => match &verified.message {
                    SyncMessage::BatchSyncResponse(response)
                        if response.nonce == nonce && response.id == tree =>
                    {
                        match &response.result {
                            SyncResult::Ok(_) => Some(TreeAccess::Readable {
                                heads: response.responder_heads.heads().len(),
                            }),
                            SyncResult::NotFound => Some(TreeAccess::NotFound),
                            SyncResult::Unauthorized => Some(TreeAccess::Unauthorized),
                        }
                    }
                    _ => None,
                },
                _ => None,
            };
            match access {
                Some(access) => return Ok(Probe { access, other }),
                None => other.push(received),
            }
        }
    }
}
