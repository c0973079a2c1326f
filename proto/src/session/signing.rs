//! Signing as an effect: the session asks, the host's signer answers.
//!
//! The session holds no key. Whatever it signs (the handshake's challenge
//! or response, a keyhive registration's messages, an ephemeral publish)
//! comes out of [`Session::poll`](super::Session::poll) as a
//! [`SignRequest`]: an id and the exact bytes to sign. The host signs
//! them with whatever holds the key (an in-memory key at once, a
//! non-extractable WebCrypto key or a hardware key later) and hands the
//! signature back with
//! [`Session::handle_signature`](super::Session::handle_signature), which
//! checks it under our key before anything is sent.
//!
//! ```text
//!   session ──► Output::Sign(SignRequest { id, message })      (one per message to sign)
//!   host    ──► signer(message) ... later ...
//!   host    ──► handle_signature(id, signature) ── verify_strict under our key
//!                    │ ok: the message is sealed and sent   ──► Output::Transmit(bytes)
//!                    └ bad: SignatureRefused, nothing sent; the request stays open
//! ```
//!
//! An in-memory key answers in one line: `session.sign_with(&request,
//! &key)`.
//!
//! # How every signing site becomes an effect
//!
//! Some messages need several signatures, each depending on the one
//! before (a keyhive contact card signs a label, derives a key from that
//! signature, then signs the key). Rather than splitting each such
//! builder in two, the session runs it with a *replaying* signer: a
//! signature it already has is given back at once; the first one it lacks
//! is recorded as a request and the builder stops (its error is ignored,
//! its state untouched). When the answer arrives the builder runs again
//! from the start, deterministically, and gets one step further. A
//! builder that signs k messages runs k + 1 times; the bytes are exactly
//! the ones an in-memory key makes, since every builder is a function of
//! its inputs and the signatures.

use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use core::fmt;

use bijou_signing::ed25519_dalek::{Signature, SignatureError, VerifyingKey};
use bijou_signing::{Identity, PeerId};
use bytes::Bytes;

/// A sign request's id: unique among a session's open requests, counting
/// from 1 (once none is open, the count may start again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SignId(u64);

impl SignId {
    /// The number (1 for a session's first request).
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for SignId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sign request #{}", self.0)
    }
}

/// Bytes the session needs signed by its own key: sign
/// [`SignRequest::message`] (pure Ed25519, RFC 8032) and hand the
/// signature to [`Session::handle_signature`](super::Session::handle_signature)
/// with [`SignRequest::id`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignRequest {
    id: SignId,
    message: Bytes,
}

impl SignRequest {
    /// Which request this is.
    #[must_use]
    pub fn id(&self) -> SignId {
        self.id
    }

    /// The exact bytes to sign.
    #[must_use]
    pub fn message(&self) -> &[u8] {
        &self.message
    }
}

/// Why [`Session::handle_signature`](super::Session::handle_signature)
/// took no signature. Nothing was sent; an open request stays open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureRefused {
    /// No such request is open: it was never made, already answered, or
    /// the session was closed or restored since (a restored session asks
    /// again).
    #[error("{id} is not open on this session (never made, already answered, or asked again after a restore): answer the id of a request poll handed out")]
    Unknown {
        /// The id given.
        id: SignId,
    },
    /// [`Session::sign_with`](super::Session::sign_with)'s key could not
    /// sign.
    #[error(
        "the signer could not sign {id}; check that it holds the session's key and is reachable"
    )]
    SignerFailed {
        /// The request.
        id: SignId,
    },
    /// The signature does not verify (`verify_strict`) over the request's
    /// bytes under the session's key.
    #[error("the signature for {id} does not verify over its {len} bytes under this session's key {key}: the signer must hold the key the session was made with")]
    DoesNotVerify {
        /// The request.
        id: SignId,
        /// How many bytes were to be signed.
        len: usize,
        /// The session's key.
        key: PeerId,
    },
}

/// Who needs a signature: each builder's entries are its own, and go
/// when it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The handshake's challenge or response.
    Handshake,
    /// A keyhive registration.
    #[cfg_attr(not(feature = "keyhive"), allow(dead_code))]
    Operation(super::OperationId),
    /// An ephemeral publish, by its place in the session's sequence.
    Publish(u64),
}

/// One message to sign and, once given, its signature.
#[derive(Debug)]
struct Entry {
    id: SignId,
    owner: Owner,
    message: Bytes,
    signature: Option<Signature>,
    /// Handed out by `poll` already.
    asked: bool,
}

/// The signatures a session has asked for and been given, until the
/// messages that needed them are sealed.
#[derive(Debug, Default)]
pub(crate) struct SignBook {
    next: u64,
    entries: Vec<Entry>,
}

impl SignBook {
    /// The signature for `message`, or `None` after recording that it is
    /// needed (once).
    pub(crate) fn lookup(&mut self, owner: Owner, message: &[u8]) -> Option<Signature> {
        if let Some(entry) = self
            .entries
            .iter()
            .find(|e| e.owner == owner && e.message == message)
        {
            return entry.signature;
        }
        self.next += 1;
        self.entries.push(Entry {
            id: SignId(self.next),
            owner,
            message: Bytes::copy_from_slice(message),
            signature: None,
            asked: false,
        });
        None
    }

    /// The next request not yet handed out.
    pub(crate) fn next_request(&mut self) -> Option<SignRequest> {
        let entry = self.entries.iter_mut().find(|e| !e.asked)?;
        entry.asked = true;
        Some(SignRequest {
            id: entry.id,
            message: entry.message.clone(),
        })
    }

    /// Whether nothing is recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Records `signature` for request `id` after checking it under
    /// `key`.
    pub(crate) fn answer(
        &mut self,
        id: SignId,
        signature: Signature,
        key: &VerifyingKey,
    ) -> Result<(), SignatureRefused> {
        let entry = self
            .entries
            .iter_mut()
            .find(|e| e.id == id && e.asked && e.signature.is_none())
            .ok_or(SignatureRefused::Unknown { id })?;
        key.verify_strict(&entry.message, &signature).map_err(|_| {
            SignatureRefused::DoesNotVerify {
                id,
                len: entry.message.len(),
                key: PeerId::from(*key),
            }
        })?;
        entry.signature = Some(signature);
        Ok(())
    }

    /// Forgets what `owner` needed: it is sealed, or gone.
    pub(crate) fn release(&mut self, owner: Owner) {
        self.retain(|o| o != owner);
    }

    /// Keeps only the entries of the owners `keep` names.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(Owner) -> bool) {
        self.entries.retain(|e| keep(e.owner));
        if self.entries.is_empty() {
            // Nothing held while idle.
            self.entries = Vec::new();
        }
    }
}

/// An [`Identity`] that signs from a [`SignBook`]: a signature already
/// given is returned; a missing one is recorded and signing fails (see
/// the [module docs](self)).
pub(crate) struct Replay<'a> {
    key: VerifyingKey,
    book: RefCell<&'a mut SignBook>,
    owner: Cell<Owner>,
    missing: Cell<bool>,
}

impl<'a> Replay<'a> {
    pub(crate) fn new(key: VerifyingKey, book: &'a mut SignBook) -> Self {
        Self {
            key,
            book: RefCell::new(book),
            owner: Cell::new(Owner::Handshake),
            missing: Cell::new(false),
        }
    }

    /// Runs the next builder as `owner`, with nothing missing yet.
    pub(crate) fn start(&self, owner: Owner) {
        self.owner.set(owner);
        self.missing.set(false);
    }

    /// The builder running as `owner` is done (sealed, or failed): its
    /// signatures are forgotten.
    pub(crate) fn done(&self, owner: Owner) {
        self.book.borrow_mut().release(owner);
    }

    /// Whether a signature was missing: the builder's failure means "not
    /// yet", not an error.
    pub(crate) fn missing(&self) -> bool {
        self.missing.get()
    }
}

impl Identity for Replay<'_> {
    fn verifying_key(&self) -> VerifyingKey {
        self.key
    }

    fn sign_message(&self, message: &[u8]) -> Result<Signature, SignatureError> {
        let found = self.book.borrow_mut().lookup(self.owner.get(), message);
        found.ok_or_else(|| {
            self.missing.set(true);
            SignatureError::new()
        })
    }
}
