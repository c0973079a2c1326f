//! [`TokioClock`]: a time source whose monotonic half is tokio's clock, so
//! a runtime with paused or advanced time (`tokio::time::pause`, tests
//! with `start_paused`) drives a connection's budget waits.

use std::time::Instant;

use bijou_proto::time::{Clock, SystemClock, TimeProvider};

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
/// assert_eq!(clock.now().instant - before.instant, std::time::Duration::from_secs(5));
/// assert_eq!(clock.now().unix_secs, 1_700_000_000);
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock {
    fixed_wall: Option<u64>,
}

impl TokioClock {
    /// The system's wall time, tokio's monotonic time.
    #[must_use]
    pub fn system() -> Clock {
        Clock::new(Self::default())
    }

    /// Wall time always `unix_secs`, tokio's monotonic time.
    #[must_use]
    pub fn fixed(unix_secs: u64) -> Clock {
        Clock::new(Self {
            fixed_wall: Some(unix_secs),
        })
    }
}

impl TimeProvider for TokioClock {
    fn unix_secs(&self) -> u64 {
        self.fixed_wall.unwrap_or_else(|| SystemClock.unix_secs())
    }

    fn instant(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}
