//! [`SessionConfig`]: what the session decides with.
//!
//! The protocol's own settings (how fast and in what steps it verifies,
//! the ephemeral limits, the seed of every random draw) live here. The
//! shell's settings (timeouts, which clock it reads, buffer sizes) are the
//! shell's: the session never reads a clock or waits, so it has none.

use core::fmt;

use core::time::Duration;

use crate::ephemeral::EphemeralConfig;
use crate::handshake::DEFAULT_MAX_MESSAGE_LENGTH;
use crate::replay_table::ReplayTable;
use crate::verify_budget::VerifyBudget;

/// How long a session gives the handshake by default: 10 s from its
/// creation to an authenticated peer.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Signed items verified in one [`Session::poll_work`](super::Session::poll_work) step by default.
pub const DEFAULT_VERIFY_STEP: usize = 32;

/// A session's settings: what the protocol decides with (how fast and in
/// what steps it verifies, the ephemeral limits, the seed of every random
/// draw). The shell's settings (timeouts, which clock it reads, buffer
/// sizes) are the shell's: the session never reads a clock or waits.
///
/// ```
/// use bijou_frame::proto::session::SessionConfig;
/// use bijou_frame::proto::verify_budget::VerifyBudget;
///
/// // The seed comes from the driver: the OS in production, a test's own
/// // number in a simulation (then the same inputs give the same bytes).
/// let mut config = SessionConfig::new([7; 32]);
/// config.verify_budget = VerifyBudget::new(4_096, 4_096);
/// config.verify_step = 16;
/// assert!(!format!("{config:?}").contains("[7, 7"), "the seed is never shown");
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionConfig {
    /// Signature checks a second and their burst
    /// ([`VerifyBudget::DEFAULT`]).
    pub verify_budget: VerifyBudget,
    /// Signed items verified per step ([`DEFAULT_VERIFY_STEP`]; at least
    /// 1 is used).
    pub verify_step: usize,
    /// Ephemeral limits ([`EphemeralConfig::default`]).
    pub ephemeral: EphemeralConfig,
    /// Seeds every random number the session draws (its ephemeral nonces
    /// and its deduplication window's hash key; see
    /// [`SeededRng`](crate::rng::SeededRng)). Keep it secret and draw it
    /// fresh for each connection.
    pub seed: [u8; 32],
    /// From the session's creation to an authenticated peer, at most
    /// ([`DEFAULT_HANDSHAKE_TIMEOUT`]); then it closes with
    /// [`Close::HandshakeTimedOut`](super::Close::HandshakeTimedOut).
    pub handshake_timeout: Duration,
    /// The largest message taken once the peer is authenticated
    /// ([`DEFAULT_MAX_MESSAGE_LENGTH`], 50 MiB, as in Subduction); before,
    /// [`HANDSHAKE_MAX_MESSAGE_LENGTH`](crate::handshake::HANDSHAKE_MAX_MESSAGE_LENGTH).
    pub max_message_len: usize,
    /// Where the session keeps its ephemeral deduplication window: in its
    /// peer's window of this table, shared with the peer's other sessions
    /// (so a message delivered on one connection is refused when replayed
    /// on the next), or, with `None` (the default), in a window of its
    /// own, made empty with the session. See
    /// [`replay_table`](crate::replay_table) for its bounds.
    pub replay_table: Option<ReplayTable>,
}

impl SessionConfig {
    /// The default settings with `seed`.
    #[must_use]
    pub fn new(seed: [u8; 32]) -> Self {
        Self {
            verify_budget: VerifyBudget::DEFAULT,
            verify_step: DEFAULT_VERIFY_STEP,
            ephemeral: EphemeralConfig::default(),
            seed,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            max_message_len: DEFAULT_MAX_MESSAGE_LENGTH,
            replay_table: None,
        }
    }

    /// These settings, with the peer's deduplication window kept in
    /// `table` (see [`SessionConfig::replay_table`]): give every session
    /// the host makes (clients and servers, and restores through
    /// [`Session::restore_with_replay_table`](super::Session::restore_with_replay_table))
    /// the same table.
    ///
    /// ```
    /// use bijou_frame::proto::replay_table::{ReplayTable, ReplayTableConfig};
    /// use bijou_frame::proto::session::SessionConfig;
    ///
    /// let table = ReplayTable::new(ReplayTableConfig::default(), [5; 32]);
    /// let first = SessionConfig::new([1; 32]).with_replay_table(table.clone());
    /// let second = SessionConfig::new([2; 32]).with_replay_table(table.clone());
    /// assert_eq!(first.replay_table, second.replay_table, "one table");
    /// ```
    #[must_use]
    pub fn with_replay_table(mut self, table: ReplayTable) -> Self {
        self.replay_table = Some(table);
        self
    }
}

impl fmt::Debug for SessionConfig {
    /// Everything but the seed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("verify_budget", &self.verify_budget)
            .field("verify_step", &self.verify_step)
            .field("ephemeral", &self.ephemeral)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("max_message_len", &self.max_message_len)
            .field("replay_table", &self.replay_table)
            .finish_non_exhaustive()
    }
}
