//! The server's table of sessions: keyed by the BLAKE3 hash of their id
//! (never the token itself), bounded in number, swept for idle sessions by
//! one task per server.
//!
//! ```text
//!   /lp/handshake ── reserve() ──► Reservation (counts against max_sessions)
//!                                     │ a Response: register(digest, session)
//!                                     ▼
//!   table: blake3(id) ──► session   ◄── get(id) for /lp/send, /lp/recv, /lp/disconnect
//!                                     │
//!   sweeper (one task, only while the table is not empty; every
//!   idle_timeout / 4): removes finished sessions, and expires those with
//!   no request in progress and none for idle_timeout
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::config::ServerConfig;
use super::refusal::Refusal;
use super::session::{Closed, Shared};
use super::session_id::SessionId;

/// The sweeper wakes at most this often, whatever the idle timeout.
const MIN_SWEEP_TICK: Duration = Duration::from_millis(10);

#[derive(Debug, Default)]
struct Table {
    sessions: HashMap<blake3::Hash, Arc<Shared>>,
    /// Handshakes in progress, counted against the bound.
    pending: usize,
    /// The sweeper task runs.
    sweeping: bool,
}

/// The sessions of one server.
#[derive(Debug)]
pub(super) struct Registry {
    table: Mutex<Table>,
    epoch: Instant,
    config: Arc<ServerConfig>,
}

impl Registry {
    pub(super) fn new(config: Arc<ServerConfig>) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            epoch: Instant::now(),
            config,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Milliseconds since the server was made (tokio's clock).
    pub(super) fn now_ms(&self) -> u64 {
        u64::try_from(
            Instant::now()
                .saturating_duration_since(self.epoch)
                .as_millis(),
        )
        .unwrap_or(u64::MAX)
    }

    /// Sessions open or in their handshake.
    pub(super) fn len(&self) -> usize {
        let table = self.lock();
        table.sessions.len().saturating_add(table.pending)
    }

    /// A place for one more session, if the bound allows.
    pub(super) fn reserve(self: &Arc<Self>) -> Result<Reservation, Refusal> {
        let mut table = self.lock();
        let max = self.config.max_sessions;
        if table.sessions.len().saturating_add(table.pending) >= max {
            return Err(Refusal::SessionsFull { max });
        }
        table.pending += 1;
        Ok(Reservation {
            registry: Arc::clone(self),
            used: false,
        })
    }

    /// The session with this id, if it is in the table.
    pub(super) fn get(&self, id: &SessionId) -> Option<Arc<Shared>> {
        self.lock().sessions.get(&id.digest()).cloned()
    }

    /// Takes the session with this id out of the table.
    pub(super) fn remove(&self, id: &SessionId) -> Option<Arc<Shared>> {
        self.lock().sessions.remove(&id.digest())
    }

    /// Starts the sweeper if it is not running (and a runtime is there to
    /// run it; else the next registration tries again).
    fn ensure_sweeper(self: &Arc<Self>, table: &mut Table) {
        if table.sweeping {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        table.sweeping = true;
        let tick = (self.config.idle_timeout / 4).max(MIN_SWEEP_TICK);
        runtime.spawn(sweep(Arc::downgrade(self), tick));
    }

    /// One sweep: removes finished sessions and expires idle ones. Returns
    /// whether the table still holds sessions (else the sweeper stops).
    pub(super) fn sweep_once(&self) -> bool {
        let now = self.now_ms();
        let idle = u64::try_from(self.config.idle_timeout.as_millis()).unwrap_or(u64::MAX);
        let mut expired = Vec::new();
        let more = {
            let mut table = self.lock();
            table.sessions.retain(|_, session| {
                if session.is_finished() {
                    return false;
                }
                if session.idle_ms(now).is_some_and(|ms| ms >= idle) {
                    expired.push(Arc::clone(session));
                    return false;
                }
                true
            });
            let more = !table.sessions.is_empty();
            if !more {
                table.sweeping = false;
            }
            more
        };
        for session in expired {
            session.close(Closed::Expired);
        }
        more
    }
}

async fn sweep(registry: Weak<Registry>, tick: Duration) {
    loop {
        tokio::time::sleep(tick).await;
        let Some(registry) = registry.upgrade() else {
            return;
        };
        if !registry.sweep_once() {
            return;
        }
    }
}

/// A place in the table for a session in its handshake.
#[derive(Debug)]
pub(super) struct Reservation {
    registry: Arc<Registry>,
    /// Turned into a table entry.
    used: bool,
}

impl Reservation {
    /// Puts the session in the table under `id`, unless that id is taken
    /// (then the reservation is kept, to try another id).
    pub(super) fn register(mut self, id: &SessionId, session: Arc<Shared>) -> Result<(), Self> {
        let registry = Arc::clone(&self.registry);
        let mut table = registry.lock();
        let digest = id.digest();
        if table.sessions.contains_key(&digest) {
            drop(table);
            return Err(self);
        }
        table.sessions.insert(digest, session);
        table.pending = table.pending.saturating_sub(1);
        self.used = true;
        registry.ensure_sweeper(&mut table);
        Ok(())
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.used {
            let mut table = self.registry.lock();
            table.pending = table.pending.saturating_sub(1);
        }
    }
}
