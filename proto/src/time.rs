//! One time source: wall time for stamps, a monotonic instant for budgets
//! and deadlines.
//!
//! The protocol's state machines never read a clock: every method that
//! needs the time takes a [`Now`]. Whatever drives them (the async shell in
//! `bijou-net`, a test, a simulation) reads one [`Clock`] and passes the
//! reading in, so a connection's handshake stamps, its ephemeral age checks
//! and its verification budget all see the same time.
//!
//! ```text
//!   Clock (Arc<dyn TimeProvider>)  ── now() ──►  Now { unix_secs, instant }
//!        │  system(): SystemTime + Instant          │
//!        │  fixed(unix), from_fn(f): tests          ▼
//!        └──────────────────────────────  Initiator::new(.., now.unix_secs, ..)
//!                                         Responder::answer(.., now.unix_secs)
//!                                         Session::handle_message(bytes, now)
//!                                         Session::poll_work(now)  (budget: now.instant)
//! ```
//!
//! ```
//! use bijou_frame::proto::time::{Clock, TimeProvider};
//! use std::time::Instant;
//!
//! // A provider of your own: a simulated clock, a clock with an offset, ...
//! #[derive(Debug)]
//! struct Offset(u64);
//! impl TimeProvider for Offset {
//!     fn unix_secs(&self) -> u64 { Clock::system().unix_secs() + self.0 }
//!     fn instant(&self) -> Instant { Instant::now() }
//! }
//! let clock = Clock::new(Offset(3600));
//! assert!(clock.now().unix_secs >= Clock::system().unix_secs() + 3599);
//! assert_eq!(Clock::fixed(1_700_000_000).now().unix_secs, 1_700_000_000);
//! ```

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A source of time: the injectable trait behind [`Clock`] (compare rustls'
/// `TimeProvider`).
pub trait TimeProvider: Send + Sync + std::fmt::Debug {
    /// Wall time, unix seconds: what handshake challenges and ephemeral
    /// messages are stamped with and checked against.
    fn unix_secs(&self) -> u64;

    /// A monotonic instant: what verification budgets and deadlines are
    /// measured in.
    fn instant(&self) -> Instant;
}

/// One reading of a [`Clock`]: both times, taken together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Wall time, unix seconds.
    pub unix_secs: u64,
    /// Monotonic time.
    pub instant: Instant,
}

impl Now {
    /// A reading of `unix_secs` wall time at the monotonic `instant`.
    #[must_use]
    pub fn new(unix_secs: u64, instant: Instant) -> Self {
        Self { unix_secs, instant }
    }
}

/// The system clock: `SystemTime` in unix seconds (0 before 1970) and
/// `Instant::now()`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl TimeProvider for SystemClock {
    fn unix_secs(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }

    fn instant(&self) -> Instant {
        Instant::now()
    }
}

/// Wall time from a function, monotonic time from the system.
struct FnClock<F>(F);

impl<F> std::fmt::Debug for FnClock<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnClock")
    }
}

impl<F: Fn() -> u64 + Send + Sync> TimeProvider for FnClock<F> {
    fn unix_secs(&self) -> u64 {
        (self.0)()
    }

    fn instant(&self) -> Instant {
        Instant::now()
    }
}

/// A shared handle to a [`TimeProvider`]: the system clock by default, or
/// anything else, so each responder, connection or test can have its own
/// time (no global to fake, so tests with different clocks run in
/// parallel).
///
/// ```
/// use bijou_frame::proto::time::Clock;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
///
/// let time = Arc::new(AtomicU64::new(5));
/// let clock = Clock::from_fn({
///     let time = time.clone();
///     move || time.load(Ordering::Relaxed)
/// });
/// time.store(6, Ordering::Relaxed);
/// assert_eq!(clock.unix_secs(), 6);
/// ```
#[derive(Clone)]
pub struct Clock(Arc<dyn TimeProvider>);

impl Clock {
    /// A clock reading `provider`.
    pub fn new(provider: impl TimeProvider + 'static) -> Self {
        Self(Arc::new(provider))
    }

    /// The system clock ([`SystemClock`]).
    #[must_use]
    pub fn system() -> Self {
        Self::new(SystemClock)
    }

    /// Wall time always `unix_secs`; monotonic time from the system.
    #[must_use]
    pub fn fixed(unix_secs: u64) -> Self {
        Self::from_fn(move || unix_secs)
    }

    /// Wall time from `f` (unix seconds); monotonic time from the system.
    pub fn from_fn(f: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        Self::new(FnClock(f))
    }

    /// Both times, read together.
    #[must_use]
    pub fn now(&self) -> Now {
        Now {
            unix_secs: self.0.unix_secs(),
            instant: self.0.instant(),
        }
    }

    /// Wall time, unix seconds.
    #[must_use]
    pub fn unix_secs(&self) -> u64 {
        self.0.unix_secs()
    }

    /// Monotonic time.
    #[must_use]
    pub fn instant(&self) -> Instant {
        self.0.instant()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock(unix_secs = {})", self.unix_secs())
    }
}
