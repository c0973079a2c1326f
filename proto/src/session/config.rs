//! [`SessionConfig`]: what the session decides with.
//!
//! The protocol's own settings (how fast and in what steps it verifies,
//! the ephemeral limits, the seed of every random draw) live here. The
//! shell's settings (timeouts, which clock it reads, buffer sizes) are the
//! shell's: the session never reads a clock or waits, so it has none.

use core::fmt;

use crate::ephemeral::EphemeralConfig;
use crate::verify_budget::VerifyBudget;

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
        }
    }
}

impl fmt::Debug for SessionConfig {
    /// Everything but the seed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("verify_budget", &self.verify_budget)
            .field("verify_step", &self.verify_step)
            .field("ephemeral", &self.ephemeral)
            .finish_non_exhaustive()
    }
}
