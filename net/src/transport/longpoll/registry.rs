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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::longpoll::session::LongPollSession;
    use bytes::Bytes;

    /// A table of `n` open sessions, their server-side ends kept.
    fn table(n: usize, config: ServerConfig) -> (Arc<Registry>, Vec<LongPollSession>) {
        let config = Arc::new(config);
        let registry = Arc::new(Registry::new(Arc::clone(&config)));
        let mut kept = Vec::with_capacity(n);
        for i in 0..n {
            let (session, _reply) =
                LongPollSession::pending(Bytes::new(), Arc::clone(&config), registry.now_ms());
            let reservation = registry.reserve().expect("room");
            let mut id = [0u8; 16];
            id[..8].copy_from_slice(&(i as u64).to_be_bytes());
            reservation
                .register(&SessionId::from(id), Arc::clone(session.shared()))
                .expect("a new id");
            kept.push(session);
        }
        (registry, kept)
    }

    #[test]
    fn a_sweep_of_10_000_sessions_takes_well_under_a_millisecond() {
        let (registry, _kept) = table(10_000, ServerConfig::default());
        let mut fastest = Duration::MAX;
        for _ in 0..20 {
            let start = std::time::Instant::now();
            assert!(registry.sweep_once());
            fastest = fastest.min(start.elapsed());
        }
        eprintln!("one sweep over 10,000 idle sessions (none due): {fastest:?}");
        assert_eq!(registry.len(), 10_000);
        assert!(fastest < Duration::from_millis(5), "{fastest:?}");
    }

    #[test]
    fn a_sweep_expires_idle_sessions_keeps_busy_ones_and_drops_finished_ones() {
        let config = ServerConfig {
            idle_timeout: Duration::ZERO,
            ..ServerConfig::default()
        };
        let (registry, kept) = table(3, config);
        kept[0].shared().begin_request(registry.now_ms());
        kept[2].shared().close(Closed::ByClient);
        assert!(registry.sweep_once(), "the busy one stays");
        assert_eq!(registry.len(), 1);
        assert!(!kept[0].is_closed());
        assert!(kept[1].is_closed(), "expired");
        kept[0].shared().end_request(registry.now_ms());
        assert!(
            !registry.sweep_once(),
            "the table is empty: the sweeper stops"
        );
        assert!(kept[0].is_closed());
    }

    #[test]
    fn the_bound_counts_handshakes_in_progress() {
        let config = ServerConfig {
            max_sessions: 2,
            ..ServerConfig::default()
        };
        let (registry, _kept) = table(1, config);
        let pending = registry.reserve().expect("the second place");
        assert!(matches!(
            registry.reserve(),
            Err(Refusal::SessionsFull { max: 2 })
        ));
        drop(pending);
        assert!(registry.reserve().is_ok());
    }
}
