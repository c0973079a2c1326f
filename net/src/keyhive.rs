//! Keyhive on a [`Connection`]: sending a `SUK\0` message as it is (the
//! keyhive types and the registration state machine are bijou-proto's
//! `keyhive` module).
//!
//! Registering a document and probing a tree are session operations
//! ([`Operation::Register`](bijou_proto::session::Operation::Register),
//! [`Operation::Probe`](bijou_proto::session::Operation::Probe)), run with
//! [`Connection::run`]:
//!
//! ```text
//!   Operation::Register(delegation)
//!     send RequestContactCard ─► recv MissingContactCard ─► send SyncRequest ─►
//!     recv SyncResponse ─► send SyncOps ─► recv SyncConfirmation ─► Outcome::Registered
//!
//!   Operation::Probe(tree)
//!     send BatchSyncRequest (no fingerprints, no subscription) ─► Outcome::Probed(TreeAccess)
//!       Readable      the key may read the tree (open server, or a document
//!                     readable by Public or this key)
//!       Unauthorized  the server enforces keyhive and this key may not read
//!                     the tree: no document, or no access; so no pushes either
//!       NotFound      the server does not have the tree
//!       Silent        no answer by the deadline: the server is busy, or not Subduction
//! ```
//!
//! An open (`--auth open`) server drops `SUK\0` messages: a registration
//! with it times out while its pushes work.

use crate::connection::Connection;
use crate::message_codec::SendError;
use crate::transport::Transport;
use bijou_proto::keyhive::SukMessage;

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
        let bytes = message.to_bytes()?;
        self.send_bytes(bytes).await
    }
}
