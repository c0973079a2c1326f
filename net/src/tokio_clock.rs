//! [`TokioClock`]: a time source whose monotonic half is tokio's clock, so
//! a runtime with paused or advanced time (`tokio::time::pause`, tests
//! with `start_paused`) drives a connection's budget waits.

use bijou_proto::time::{Clock, SystemClock, TimeProvider, Timestamp};

/// Wall time from the system (or fixed), monotonic time from tokio's clock.
/// Outside a paused runtime, tokio's clock is the system's.
///
/// ```
/// use bijou_frame::net::TokioClock;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let clock = TokioClock::fixed(1_700_000_000);
/// let before = clock.now();
/// tokio::time::advance(std::time::Duration::from_secs(5)).await;
/// assert_eq!(
///     clock.now().monotonic.saturating_duration_since(before.monotonic),
///     std::time::Duration::from_secs(5)
/// );
/// assert_eq!(clock.now().unix_secs, 1_700_000_000);
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    fixed_wall: Option<u64>,
    /// Where its monotonic readings count from: tokio's clock when it was
    /// made (a paused runtime's clock starts anew, so no process-wide
    /// origin would do).
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// The system's wall time, tokio's monotonic time.
    #[must_use]
    pub fn system() -> Clock {
        Clock::new(Self {
            fixed_wall: None,
            origin: tokio::time::Instant::now(),
        })
    }

    /// Wall time always `unix_secs`, tokio's monotonic time.
    #[must_use]
    pub fn fixed(unix_secs: u64) -> Clock {
        Clock::new(Self {
            fixed_wall: Some(unix_secs),
            origin: tokio::time::Instant::now(),
        })
    }
}

impl TimeProvider for TokioClock {
    fn unix_secs(&self) -> u64 {
        self.fixed_wall.unwrap_or_else(|| SystemClock.unix_secs())
    }

    fn monotonic(&self) -> Timestamp {
        let since = tokio::time::Instant::now().saturating_duration_since(self.origin);
        Timestamp::from_nanos(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
    }
}
