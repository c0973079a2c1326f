//! The keyhive step before a push: probe the new tree, and register it as
//! a keyhive document if the server refuses it.

use std::time::{Duration, Instant};

use bijou_frame::net::Connection;
use bijou_frame::proto::keyhive::{check_tree_id, Access, Grantee};
use bijou_frame::proto::message::SedimentreeId;
use bijou_frame::proto::session::{self, Operation, TreeAccess};
use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity};

use super::args::AccessArg;
use super::client::ClientJob;
use crate::target::Carrier;

/// How long a keyhive probe or registration may take.
pub(super) const PROBE_LIMIT: Duration = Duration::from_secs(5);
const REGISTER_LIMIT: Duration = Duration::from_secs(15);

/// What the keyhive step found.
#[derive(Debug, Default)]
pub(super) enum Keyhive {
    /// Not run yet.
    #[default]
    Skipped,
    /// The server answered a fetch of the new tree: it does not enforce
    /// keyhive (or lets anyone read), so no registration.
    NotEnforced,
    /// The server enforces keyhive: the document was registered.
    Registered { took: Duration, access: AccessArg },
    /// The server enforces keyhive, and registering failed.
    Failed(String),
    /// The probe got no answer.
    Silent,
}

/// Probes the new tree; registers it as a keyhive document if the server
/// refuses it (keyhive enforced), before any push.
pub(super) async fn register_if_enforced(
    conn: &mut Connection<Carrier>,
    key: &SigningKey,
    job: &ClientJob,
    tree: SedimentreeId,
) -> Keyhive {
    match conn.run(key, Operation::Probe(tree), PROBE_LIMIT).await {
        Ok(session::Outcome::Probed(TreeAccess::Unauthorized)) => {}
        Ok(session::Outcome::Probed(TreeAccess::Silent)) => return Keyhive::Silent,
        Ok(_) => return Keyhive::NotEnforced,
        Err(e) => return Keyhive::Failed(format!("probing tree {tree}: {e}")),
    }
    if let Err(e) = check_tree_id(tree) {
        return Keyhive::Failed(e.to_string());
    }
    let grantee = match job.access {
        AccessArg::Public => Grantee::Public,
        AccessArg::Key => Grantee::Key(key.peer_id()),
    };
    let started = Instant::now();
    let registered = match job.doc.root_delegation(grantee, Access::Edit) {
        Ok(delegation) => {
            conn.run(key, Operation::Register(delegation), REGISTER_LIMIT)
                .await
        }
        Err(e) => return Keyhive::Failed(e.to_string()),
    };
    match registered {
        Ok(_) => Keyhive::Registered {
            took: started.elapsed(),
            access: job.access,
        },
        Err(e) => Keyhive::Failed(e.to_string()),
    }
}
