//! [`VerifyBudget`]: how many signatures one connection may make us verify
//! per second.
//!
//! A peer that completed a cheap handshake can send messages full of valid
//! signed items, each costing the receiver one `verify_strict` (about 40 µs
//! on one core). A `BatchSyncResponse` may carry up to 65,535 commits and
//! 65,535 fragments, so one message can ask for 131,070 verifications
//! (about 5 s of one core). Duplicates are refused when decoding (see
//! `SyncDiff`), so that is also the most one message can cost; the budget
//! bounds the *rate*: a connection's receiver verifies at most
//! `per_second` signatures per second on average, with bursts up to
//! `burst`, and otherwise waits (reading nothing more, so TCP pushes back
//! on the sender).
//!
//! ```text
//!   tokens += elapsed x per_second   (at most `burst`)
//!   a message with n signed items waits until tokens >= min(n, burst),
//!   then tokens -= n   (may go negative: a big message is paid off later)
//! ```
//!
//! The default, [`VerifyBudget::DEFAULT`], is 8,192 verifications per
//! second with bursts of 8,192: about a third of one core here, so a
//! single connection cannot take a whole core, while a 10,000-commit sync
//! still verifies in about a second.
//!
//! The budget is **per connection**, and each new connection starts with a
//! full burst. A peer that opens several connections (or reconnects) gets a
//! budget for each, so the bound on one peer's share of the CPU is the
//! budget times the connections it is allowed: limit connections per peer
//! id (and per address) where you accept them. Verification is paid for
//! before it is done, so the cost of a message is always charged to the
//! connection that sent it.
//!
//! ```
//! use bijou_framing::VerifyBudget;
//! let budget = VerifyBudget::new(1_000, 2_000);
//! assert_eq!(budget.per_second(), 1_000);
//! assert_eq!(VerifyBudget::DEFAULT.per_second(), 8_192);
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

/// A per-connection rate limit on signature verifications; see the
/// [module docs](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyBudget {
    per_second: u32,
    burst: u32,
}

impl VerifyBudget {
    /// 8,192 verifications per second, bursts of 8,192.
    pub const DEFAULT: Self = Self {
        per_second: 8_192,
        burst: 8_192,
    };

    /// A budget of `per_second` verifications per second (at least 1),
    /// with bursts up to `burst` (at least 1).
    #[must_use]
    pub const fn new(per_second: u32, burst: u32) -> Self {
        Self {
            per_second: if per_second == 0 { 1 } else { per_second },
            burst: if burst == 0 { 1 } else { burst },
        }
    }

    /// Verifications per second, on average.
    #[must_use]
    pub const fn per_second(&self) -> u32 {
        self.per_second
    }

    /// The most verifications done without waiting.
    #[must_use]
    pub const fn burst(&self) -> u32 {
        self.burst
    }
}

impl Default for VerifyBudget {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The running token bucket of one connection's receiver.
#[derive(Debug)]
pub(crate) struct Bucket {
    budget: VerifyBudget,
    tokens: f64,
    refilled: Instant,
    /// The timer of a wait in progress.
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Bucket {
    pub(crate) fn new(budget: VerifyBudget) -> Self {
        Self {
            budget,
            tokens: f64::from(budget.burst),
            refilled: Instant::now(),
            wait: None,
        }
    }

    pub(crate) fn set_budget(&mut self, budget: VerifyBudget) {
        self.budget = budget;
        self.tokens = self.tokens.min(f64::from(budget.burst));
    }

    fn refill(&mut self) {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.refilled = now;
        self.tokens = (self.tokens + elapsed * f64::from(self.budget.per_second))
            .min(f64::from(self.budget.burst));
    }

    /// Spends `n` verifications once they fit the budget, waiting (a timer
    /// held here, so a dropped poll loses nothing) until they do.
    pub(crate) fn poll_spend(&mut self, cx: &mut Context<'_>, n: usize) -> Poll<()> {
        if n == 0 {
            return Poll::Ready(());
        }
        let n = n as f64;
        if self.wait.is_none() {
            let need = n.min(f64::from(self.budget.burst));
            self.refill();
            if self.tokens < need {
                let missing = need - self.tokens;
                let wait = Duration::from_secs_f64(missing / f64::from(self.budget.per_second));
                self.wait = Some(Box::pin(tokio::time::sleep(wait)));
            }
        }
        if let Some(wait) = self.wait.as_mut() {
            ready!(wait.as_mut().poll(cx));
            self.wait = None;
            self.refill();
        }
        self.tokens -= n;
        Poll::Ready(())
    }
}
