//! [`ReplayTable`]: each remote peer's ephemeral deduplication window,
//! kept across its connections.
//!
//! A session's own window (see [`ephemeral`](crate::ephemeral)) is made
//! empty with the session: an ephemeral message delivered on one
//! connection, replayed on the peer's next connection while its timestamp
//! is still within the age limit (30 s), would be delivered again. A host
//! that makes one `ReplayTable` and hands it to every session
//! ([`SessionConfig::replay_table`](crate::session::SessionConfig::replay_table))
//! gives all the sessions of one peer the same window, concurrent ones
//! included: a message delivered on any of them is refused on every
//! other, until its timestamp leaves the age limit.
//!
//! ```text
//!   ReplayTable ── peer A ──► window (NonceCache, one shard) ◄── session 1 of A
//!        │                                                  ◄── session 2 of A (later, or at once)
//!        └────── peer B ──► window                          ◄── session of B
//!   at most `peers` windows, each at most `entries_per_peer` nonces
//! ```
//!
//! A window is made when a session of its peer first needs one (its first
//! ephemeral message or subscription) and follows the rules of
//! [`nonce_cache`](crate::nonce_cache): retention exactly as long as the
//! age check lets a replay through, and, when full, the oldest second
//! forgotten and refused from then on (a possible replay), never
//! accepted. A flood fills only its own peer's window: other peers'
//! windows, and their messages, are untouched.
//!
//! # Eviction, and what it costs
//!
//! Peer ids are free to make, so the table holds at most
//! [`ReplayTableConfig::peers`] windows. When a window is needed for a
//! peer not held and the table is full, one is evicted: the least
//! recently attached (a session made or restored with it) among those no
//! live session holds, or, if every window is held, the least recently
//! attached of all (its sessions keep it; the table no longer hands it
//! out). An evicted window is forgotten: that peer's next connection
//! starts empty, so a message delivered to it in the last 30 s is accepted
//! once more if replayed there. Only a peer pushed out by `peers` other
//! peers' windows within that time loses this, and what it can replay are
//! messages it was sent through itself.
//!
//! # Memory
//!
//! The table itself takes [`ReplayTable::BASE_BYTES`] (2 KiB); it holds
//! at most `peers` windows, each at most [`ReplayTable::PEER_BYTES`]
//! (512 B: the table's entries for it and the window's fixed part) plus
//! the window's entries under the bound of [`NonceCache`]: 1 KiB,
//! [`NonceCache::BYTES_PER_ENTRY`] (25 B) per entry and
//! [`NonceCache::BYTES_PER_SECOND`] (64 B) per second held:
//!
//! ```text
//!   heap <= 2,048 + peers x (512 + 1,024 + 25 x entries_per_peer
//!                            + 64 x min(entries_per_peer, 2 x max_age + 1))
//! ```
//!
//! ([`ReplayTableConfig::max_heap_bytes`]; measured by
//! `proto/tests/replay_table_memory.rs`: about 395 B per peer besides its
//! entries, and 21 B per entry, 75% of the bound, in a full table). With
//! the defaults (256 peers, 8,192 entries per peer, 30 s) that is
//! 2,048 + 256 x 210,240 B = 53,823,488 B, 51.3 MiB, only reached when
//! every one of 256 peers has 8,192 verified messages within 61 s (2.1
//! million signature checks a minute); a window holds what its peer sent
//! in the last 61 s and gives its memory back once drained. A window
//! evicted while a session holds it lives on with that session, as a
//! session's own window would: at most one per live session, under the
//! same bound each.
//!
//! **Sizing.** A peer that sends `r` messages a second keeps its full
//! acceptance window with `entries_per_peer >= r x (2 x max_age + 1) x 8/7`
//! (8,192 entries: 117 a second over 30 s); above that, its own messages
//! stamped furthest in the past or ahead of our clock are refused first.
//! A client with one server (which relays every issuer's messages as one
//! peer) wants few peers and more entries; a server with many clients,
//! the opposite.
//!
//! # Sessions and snapshots
//!
//! A [`Session::snapshot`](crate::session::Session::snapshot) holds its
//! peer's window (whatever the peer's other sessions added to it).
//! [`Session::restore_with_replay_table`](crate::session::Session::restore_with_replay_table)
//! puts it back in the table: as the peer's window if the table has none,
//! merged into the one it has otherwise, so a restored session keeps
//! refusing every replay it refused before. Merged under the same hash
//! key (the window's own, as a snapshot of one table's window restored
//! into a table that holds it), entry by entry; under another key (the
//! peer's window in another process's table), the hashes cannot be
//! compared, so the window's floor rises to the snapshot's newest second:
//! messages stamped at or before it are refused as possible replays until
//! they age out.
//!
//! # What else a session de-duplicates, and why not per peer
//!
//! Only ephemeral messages have a window to keep. The rest:
//! - **Handshake challenges** are refused across connections already: a
//!   server's [`Responder`](crate::handshake::Responder) keeps one replay
//!   cache for every connection it accepts, and a client's challenge
//!   carries a nonce of its own that the response must sign.
//! - **Sync messages** are not de-duplicated, on one connection or
//!   across: commits and fragments are named by their content, so storing
//!   one twice changes nothing. A `BatchSyncResponse` is taken by the
//!   fetch whose nonce it carries, drawn from the session's seed (fresh
//!   for each connection), so one replayed from an earlier connection is
//!   never taken by a new fetch: it is delivered as an ordinary message.
//! - **Keyhive (`SUK\0`) messages** carry no nonce and no timestamp
//!   (keyhive's format), so nothing tells a replay from a resend; a
//!   registration takes only the answer its stage waits for.
//! - **Subscriptions** belong to the connection they were made on (a
//!   peer subscribes again on a new one): state, not a window.
//!
//! ```
//! use bijou_frame::proto::nonce_cache::NonceCheck;
//! use bijou_frame::proto::replay_table::{ReplayTable, ReplayTableConfig};
//! use bijou_frame::signing::PeerId;
//!
//! let table = ReplayTable::new(ReplayTableConfig::default(), [4; 32]);
//! let (peer, issuer) = (PeerId::from_bytes([1; 32]), PeerId::from_bytes([2; 32]));
//! // The first connection of `peer` records a message...
//! let first = table.window(peer);
//! assert_eq!(first.check_and_insert(issuer, 7u64.to_be_bytes(), 1_000, 1_000), NonceCheck::Fresh);
//! drop(first); // the connection ends
//! // ...and the next one sees it.
//! let next = table.window(peer);
//! assert_eq!(next.check_and_insert(issuer, 7u64.to_be_bytes(), 1_000, 1_010), NonceCheck::Replayed);
//! assert_eq!(table.len(), 1);
//! ```

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use core::fmt;
use core::time::Duration;

use bijou_signing::PeerId;

use crate::ephemeral::MAX_EPHEMERAL_AGE;
use crate::lock::Lock;
use crate::nonce_cache::{Export, NonceCache, MAX_SHARD_ENTRIES};
use crate::rng::SeededRng;

/// Windows a [`ReplayTable`] holds by default.
pub const DEFAULT_REPLAY_TABLE_PEERS: usize = 256;

/// Entries in each peer's window by default: the default verify budget's
/// second (8,192 checks), so one connection's full budget for a second
/// does not fill it.
pub const DEFAULT_REPLAY_WINDOW_ENTRIES: usize = 8_192;

/// A [`ReplayTable`]'s bounds.
///
/// ```
/// use bijou_frame::proto::replay_table::ReplayTableConfig;
///
/// let mut config = ReplayTableConfig::default();
/// assert_eq!((config.peers, config.entries_per_peer), (256, 8_192));
/// // A client with one server: one peer, a large window.
/// config.peers = 4;
/// config.entries_per_peer = 65_536;
/// assert!(config.max_heap_bytes() < 7 << 20);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayTableConfig {
    /// Windows held at most ([`DEFAULT_REPLAY_TABLE_PEERS`]; at least 1
    /// is used): one per remote peer.
    pub peers: usize,
    /// Entries each window holds at most
    /// ([`DEFAULT_REPLAY_WINDOW_ENTRIES`]; at least 1, at most
    /// 16,777,215 are used).
    pub entries_per_peer: usize,
    /// How long a window remembers a message, around its timestamp, in
    /// whole seconds ([`MAX_EPHEMERAL_AGE`], 30 s): the age limit of the
    /// sessions that use it. A session allowing a larger age refuses
    /// messages older than this as stale (see
    /// [`EphemeralRejected::Stale`](crate::ephemeral::EphemeralRejected::Stale)).
    pub max_age: Duration,
}

impl Default for ReplayTableConfig {
    fn default() -> Self {
        Self {
            peers: DEFAULT_REPLAY_TABLE_PEERS,
            entries_per_peer: DEFAULT_REPLAY_WINDOW_ENTRIES,
            max_age: MAX_EPHEMERAL_AGE,
        }
    }
}

impl ReplayTableConfig {
    /// The most heap a table with these bounds holds (see the
    /// [module docs](self)): `BASE_BYTES + peers x (PEER_BYTES + 1,024 +
    /// 25 x entries_per_peer + 64 x min(entries_per_peer, 2 x max_age +
    /// 1))`.
    #[must_use]
    pub fn max_heap_bytes(&self) -> usize {
        let (peers, entries) = self.bounds();
        let seconds = self.max_age.as_secs().saturating_mul(2).saturating_add(1);
        let seconds = usize::try_from(seconds).unwrap_or(usize::MAX).min(entries);
        let window = (NonceCache::BASE_BYTES / 32)
            .saturating_add(NonceCache::BYTES_PER_ENTRY.saturating_mul(entries))
            .saturating_add(NonceCache::BYTES_PER_SECOND.saturating_mul(seconds));
        peers
            .saturating_mul(ReplayTable::PEER_BYTES.saturating_add(window))
            .saturating_add(ReplayTable::BASE_BYTES)
    }

    /// The bounds in force: peers at least 1, entries 1 to 2^24 - 1.
    fn bounds(&self) -> (usize, usize) {
        (
            self.peers.max(1),
            self.entries_per_peer.clamp(1, MAX_SHARD_ENTRIES),
        )
    }
}

/// Each remote peer's ephemeral deduplication window, shared by its
/// sessions; see the [module docs](self). A handle: clones share the one
/// table (and compare equal).
#[derive(Clone)]
pub struct ReplayTable(Arc<Shared>);

struct Shared {
    config: ReplayTableConfig,
    state: Lock<Table>,
}

/// The windows, and the order they were last attached in.
struct Table {
    /// Each new window's hash key.
    rng: SeededRng,
    /// Attachments so far: each window's last one orders the eviction.
    tick: u64,
    windows: BTreeMap<PeerId, Held>,
    /// Last attachment -> peer, oldest first.
    by_use: BTreeMap<u64, PeerId>,
    evictions: u64,
}

struct Held {
    used: u64,
    window: Arc<NonceCache>,
}

impl ReplayTable {
    /// Heap bytes of one peer in the table besides its window's entries:
    /// its two map entries (peer id, attachment, pointer), the window's
    /// shared allocation (the cache's fixed part, inline) and the map
    /// nodes' slack. Measured by `proto/tests/replay_table_memory.rs`
    /// (about 395 B).
    pub const PEER_BYTES: usize = 512;

    /// Heap bytes of the table itself: its shared allocation and its maps'
    /// first nodes (about 1 KiB measured).
    pub const BASE_BYTES: usize = 2_048;

    /// An empty table with `config`'s bounds, drawing each window's
    /// secret hash key from `seed` (draw it fresh, as a session's).
    #[must_use]
    // Without std the lock is a RefCell (one thread: wasm32, a Worker), so
    // the Arc is shared within that thread only; with std it is a Mutex.
    #[cfg_attr(not(feature = "std"), allow(clippy::arc_with_non_send_sync))]
    pub fn new(config: ReplayTableConfig, seed: [u8; 32]) -> Self {
        let (peers, entries_per_peer) = config.bounds();
        let config = ReplayTableConfig {
            peers,
            entries_per_peer,
            max_age: Duration::from_secs(config.max_age.as_secs()),
        };
        Self(Arc::new(Shared {
            config,
            state: Lock::new(Table {
                rng: SeededRng::from_seed(seed),
                tick: 0,
                windows: BTreeMap::new(),
                by_use: BTreeMap::new(),
                evictions: 0,
            }),
        }))
    }

    /// The bounds in force (the ones given, within their limits; the age
    /// in whole seconds).
    #[must_use]
    pub fn config(&self) -> &ReplayTableConfig {
        &self.0.config
    }

    /// `peer`'s window, made (empty) if the table holds none, evicting
    /// one if it is full (see the [module docs](self)). Every session of
    /// `peer` made with this table records and checks its ephemeral
    /// nonces here.
    #[must_use]
    pub fn window(&self, peer: PeerId) -> Arc<NonceCache> {
        let config = &self.0.config;
        self.0.state.lock().attach(peer, config, |rng| {
            NonceCache::unsharded(config.max_age, config.entries_per_peer, rng.bytes())
        })
    }

    /// Puts a window a snapshot held back in the table: as `peer`'s
    /// window if the table holds none (under the exported hash key, so a
    /// later snapshot of the same window merges entry by entry), merged
    /// into the one it holds otherwise ([`NonceCache::merge`]: under
    /// another key, its floor rises to the export's newest second, so
    /// messages stamped at or before it are refused as possible replays
    /// until they age out).
    pub(crate) fn adopt(&self, peer: PeerId, export: &Export) -> Arc<NonceCache> {
        let config = &self.0.config;
        let window = self.0.state.lock().attach(peer, config, |_| {
            NonceCache::unsharded(config.max_age, config.entries_per_peer, export.key)
        });
        window.merge(export);
        window
    }

    /// Windows held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.state.lock().windows.len()
    }

    /// Whether the table holds no window.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the table holds a window for `peer`.
    #[must_use]
    pub fn holds(&self, peer: &PeerId) -> bool {
        self.0.state.lock().windows.contains_key(peer)
    }

    /// Windows evicted so far to make room.
    #[must_use]
    pub fn evictions(&self) -> u64 {
        self.0.state.lock().evictions
    }
}

impl Table {
    /// `peer`'s window (made by `make` if absent, after evicting one if
    /// full), now the most recently attached.
    // Without std the lock is a RefCell (one thread: wasm32, a Worker), so
    // the Arc is shared within that thread only; with std it is a Mutex.
    #[cfg_attr(not(feature = "std"), allow(clippy::arc_with_non_send_sync))]
    fn attach(
        &mut self,
        peer: PeerId,
        config: &ReplayTableConfig,
        make: impl FnOnce(&mut SeededRng) -> NonceCache,
    ) -> Arc<NonceCache> {
        self.tick += 1;
        let tick = self.tick;
        if let Some(held) = self.windows.get_mut(&peer) {
            self.by_use.remove(&held.used);
            held.used = tick;
            self.by_use.insert(tick, peer);
            return Arc::clone(&held.window);
        }
        while self.windows.len() >= config.peers {
            self.evict();
        }
        let window = Arc::new(make(&mut self.rng));
        self.windows.insert(
            peer,
            Held {
                used: tick,
                window: Arc::clone(&window),
            },
        );
        self.by_use.insert(tick, peer);
        window
    }

    /// Evicts the least recently attached window no session holds, or
    /// the least recently attached if every one is held.
    fn evict(&mut self) {
        let windows = &self.windows;
        let unheld = self.by_use.iter().find(|(_, peer)| {
            windows
                .get(*peer)
                .is_some_and(|held| Arc::strong_count(&held.window) == 1)
        });
        let Some((&used, &peer)) = unheld.or_else(|| self.by_use.iter().next()) else {
            return;
        };
        self.by_use.remove(&used);
        self.windows.remove(&peer);
        self.evictions += 1;
    }
}

impl PartialEq for ReplayTable {
    /// The same table (handles to one).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ReplayTable {}

impl fmt::Debug for ReplayTable {
    /// Its bounds and how many windows it holds; never a key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayTable")
            .field("config", &self.0.config)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nonce_cache::NonceCheck;

    fn peer(i: u8) -> PeerId {
        PeerId::from_bytes([i; 32])
    }

    fn table(peers: usize, entries: usize) -> ReplayTable {
        let config = ReplayTableConfig {
            peers,
            entries_per_peer: entries,
            ..ReplayTableConfig::default()
        };
        ReplayTable::new(config, [8; 32])
    }

    #[test]
    fn a_peers_sessions_share_one_window_and_other_peers_do_not() {
        let table = table(4, 16);
        let (a1, a2, b) = (
            table.window(peer(1)),
            table.window(peer(1)),
            table.window(peer(2)),
        );
        assert!(Arc::ptr_eq(&a1, &a2));
        assert_eq!(
            a1.check_and_insert(peer(9), [1], 100, 100),
            NonceCheck::Fresh
        );
        assert_eq!(
            a2.check_and_insert(peer(9), [1], 100, 100),
            NonceCheck::Replayed
        );
        assert_eq!(
            b.check_and_insert(peer(9), [1], 100, 100),
            NonceCheck::Fresh
        );
        assert_eq!(a1.capacity(), 16);
        assert_eq!(a1.max_drift_secs(), 30);
    }

    #[test]
    fn the_least_recently_attached_unheld_window_is_evicted_first() {
        let table = table(3, 16);
        let held = table.window(peer(1)); // the oldest, but a session holds it
        drop(table.window(peer(2)));
        drop(table.window(peer(3)));
        drop(table.window(peer(2))); // 3 is now the least recent unheld
        drop(table.window(peer(4)));
        assert_eq!(table.len(), 3);
        assert_eq!(table.evictions(), 1);
        assert!(table.holds(&peer(1)) && table.holds(&peer(2)) && table.holds(&peer(4)));
        assert!(!table.holds(&peer(3)));
        // Every window held: the least recently attached goes, and its
        // session keeps it.
        let _two = table.window(peer(2));
        let _four = table.window(peer(4));
        drop(table.window(peer(5)));
        assert!(!table.holds(&peer(1)));
        assert_eq!(
            held.check_and_insert(peer(9), [1], 100, 100),
            NonceCheck::Fresh
        );
        assert_eq!(table.len(), 3);
    }

    #[test]
    fn a_flood_of_peer_ids_never_holds_more_than_the_bound() {
        let table = table(8, 4);
        for i in 0..=255u8 {
            let window = table.window(peer(i));
            for n in 0..10u8 {
                let _ = window.check_and_insert(peer(0), [n], 100, 100);
            }
            assert!(window.len() <= 4);
            assert!(table.len() <= 8);
        }
        assert_eq!(table.evictions(), 256 - 8);
    }

    #[test]
    fn an_adopted_window_keeps_refusing_what_it_refused() {
        let table = table(4, 16);
        let old = NonceCache::unsharded(Duration::from_secs(30), 16, [3; 16]);
        assert_eq!(
            old.check_and_insert(peer(9), [1], 100, 100),
            NonceCheck::Fresh
        );
        let export = old.export().expect("one shard");
        // Not held: it becomes the peer's window, under its own key.
        let window = table.adopt(peer(1), &export);
        assert_eq!(
            window.check_and_insert(peer(9), [1], 100, 101),
            NonceCheck::Replayed
        );
        // Held, under another key: the floor covers the export.
        let other = NonceCache::unsharded(Duration::from_secs(30), 16, [4; 16]);
        assert_eq!(
            other.check_and_insert(peer(9), [2], 105, 105),
            NonceCheck::Fresh
        );
        let window = table.adopt(peer(1), &other.export().expect("one shard"));
        assert_eq!(window.floor(), Some(105));
        assert_eq!(
            window.check_and_insert(peer(9), [2], 105, 106),
            NonceCheck::PossibleReplay
        );
        assert_eq!(
            window.check_and_insert(peer(9), [3], 106, 106),
            NonceCheck::Fresh
        );
    }

    #[test]
    fn the_bounds_are_clamped_and_the_default_figure_is_the_documented_one() {
        let table = table(0, 0);
        assert_eq!(
            (table.config().peers, table.config().entries_per_peer),
            (1, 1)
        );
        let config = ReplayTableConfig::default();
        assert_eq!(
            config.max_heap_bytes(),
            2_048 + 256 * (512 + 1_024 + 25 * 8_192 + 64 * 61)
        );
        assert_eq!(config.max_heap_bytes(), 53_823_488);
    }
}
