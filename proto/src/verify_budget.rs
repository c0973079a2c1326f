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
//! use bijou_frame::proto::verify_budget::VerifyBudget;
//! let budget = VerifyBudget::new(1_000, 2_000);
//! assert_eq!(budget.per_second(), 1_000);
//! assert_eq!(VerifyBudget::DEFAULT.per_second(), 8_192);
//! ```

use core::time::Duration;

use crate::time::Timestamp;

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

/// The running token bucket of one connection's receiver, sans-IO: the
/// time is an argument, and a spend that does not fit says when it will.
///
/// ```text
///   try_spend(n, now) ── tokens >= min(n, burst) ──► Ok(()), tokens -= n
///                     └─ otherwise ────────────────► Err(instant when they will)
/// ```
#[derive(Debug, Clone)]
pub struct Bucket {
    budget: VerifyBudget,
    tokens: f64,
    /// When `tokens` was last brought up to date (`None`: never used, full).
    refilled: Option<Timestamp>,
}

impl Bucket {
    /// The tokens left and when they were counted (a session snapshot).
    pub(crate) fn state(&self) -> (f64, Option<Timestamp>) {
        (self.tokens, self.refilled)
    }

    /// A bucket in the state [`Bucket::state`] gave (tokens at most the
    /// burst; below zero is a debt, from a step larger than the burst).
    pub(crate) fn from_state(
        budget: VerifyBudget,
        tokens: f64,
        refilled: Option<Timestamp>,
    ) -> Self {
        let mut this = Self::new(budget);
        this.tokens = tokens.min(this.tokens);
        this.refilled = refilled;
        this
    }

    /// A full bucket for `budget`.
    #[must_use]
    pub fn new(budget: VerifyBudget) -> Self {
        Self {
            budget,
            tokens: f64::from(budget.burst),
            refilled: None,
        }
    }

    /// The budget in force.
    #[must_use]
    pub fn budget(&self) -> VerifyBudget {
        self.budget
    }

    /// Replaces the budget; tokens above its burst are dropped.
    pub fn set_budget(&mut self, budget: VerifyBudget) {
        self.budget = budget;
        self.tokens = self.tokens.min(f64::from(budget.burst));
    }

    /// How long `missing` tokens take to refill, rounded up to the next
    /// nanosecond and at least one: at the instant this gives, they fit
    /// (a wait rounded down, or of zero, had a driver poll again at once
    /// and be told to wait again, for the same instant).
    fn wait_for(&self, missing: f64) -> Duration {
        let nanos = missing / f64::from(self.budget.per_second) * 1e9;
        // Truncated, then one more: never short of the exact instant, and
        // at least 1 ns (`ceil` is not in core). Never out of range for a
        // bucket made here; a restored one is checked too, and a wait too
        // long to say is forever (`as` saturates).
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let nanos = nanos as u64;
        Duration::from_nanos(nanos.saturating_add(1))
    }

    fn refill(&mut self, now: Timestamp) {
        if let Some(refilled) = self.refilled {
            let elapsed = now.saturating_duration_since(refilled).as_secs_f64();
            self.tokens = (self.tokens + elapsed * f64::from(self.budget.per_second))
                .min(f64::from(self.budget.burst));
        }
        self.refilled = Some(self.refilled.map_or(now, |r| r.max(now)));
    }

    /// Spends `n` verifications at `now` if they fit (at least
    /// `min(n, burst)` tokens), or says when they will fit.
    ///
    /// ```
    /// use bijou_frame::proto::verify_budget::{Bucket, VerifyBudget};
    /// use bijou_frame::proto::time::Timestamp;
    /// use std::time::Duration;
    ///
    /// let mut bucket = Bucket::new(VerifyBudget::new(100, 10));
    /// let t0 = Timestamp::from_secs(1);
    /// assert_eq!(bucket.try_spend(10, t0), Ok(()));
    /// let ready = bucket.try_spend(5, t0).unwrap_err();
    /// assert!(ready >= t0.saturating_add(Duration::from_millis(49)));
    /// assert_eq!(bucket.try_spend(5, ready), Ok(()));
    /// ```
    ///
    /// # Errors
    ///
    /// The instant at which `n` will fit; nothing was spent.
    pub fn try_spend(&mut self, n: usize, now: Timestamp) -> Result<(), Timestamp> {
        if n == 0 {
            return Ok(());
        }
        self.refill(now);
        let n = n as f64;
        let need = n.min(f64::from(self.budget.burst));
        if self.tokens + 1e-9 < need {
            let missing = need - self.tokens;
            return Err(self
                .refilled
                .unwrap_or(now)
                .saturating_add(self.wait_for(missing)));
        }
        self.tokens -= n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A monotonic clock that steps back neither refills the bucket nor
    /// brings its deadline forward: time is counted from the latest
    /// reading.
    #[test]
    fn a_clock_that_steps_back_does_not_bring_the_deadline_forward() {
        let mut bucket = Bucket::new(VerifyBudget::new(100, 10));
        let t10 = Timestamp::from_secs(10);
        assert_eq!(bucket.try_spend(10, t10), Ok(()));
        let due = bucket.try_spend(10, t10).expect_err("spent");
        // 100 ms, rounded up by a nanosecond or two of floating point.
        let exact = t10.saturating_add(Duration::from_millis(100));
        assert!(
            due > exact && due <= exact.saturating_add(Duration::from_nanos(2)),
            "{due:?}"
        );
        // Read 5 s earlier: still the same deadline, nothing refilled.
        assert_eq!(bucket.try_spend(10, Timestamp::from_secs(5)), Err(due));
        // And at the deadline, exactly the burst again.
        assert_eq!(bucket.try_spend(10, due), Ok(()));
        assert!(bucket.try_spend(1, due).is_err());
    }

    /// A driver that waits until the instant a refused spend names is let
    /// through then: the wait is never rounded down to an instant that
    /// refuses again (or to none at all), whatever the rate and the
    /// spends (100,000 of them, rates from 1 to 10^6 per second).
    #[test]
    fn the_instant_a_refusal_names_lets_the_spend_through() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |bound: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % bound + 1
        };
        let mut now = Timestamp::from_secs(1);
        for _ in 0..1_000 {
            let per_second = u32::try_from(next(1_000_000)).expect("small");
            let burst = u32::try_from(next(64)).expect("small");
            let mut bucket = Bucket::new(VerifyBudget::new(per_second, burst));
            for _ in 0..100 {
                let n = usize::try_from(next(2 * u64::from(burst))).expect("small");
                now = now.saturating_add(Duration::from_nanos(next(1_000)));
                if let Err(due) = bucket.try_spend(n, now) {
                    assert!(due > now, "a wait of nothing at {now:?} for {n}");
                    assert_eq!(bucket.try_spend(n, due), Ok(()), "{n} at {due:?}");
                    now = due;
                }
            }
        }
    }
}
