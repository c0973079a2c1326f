//! One time source: wall time for stamps, a monotonic [`Timestamp`] for
//! budgets and deadlines, read together as one [`Now`].
//!
//! The protocol's state machines never read a clock: every method that
//! needs the time takes a [`Now`], the handshake's and the ephemeral
//! code's included. Whatever drives them (the async shell in `bijou-net`,
//! a test, a simulation with virtual time) reads one [`Clock`] and passes
//! the reading in, so a connection's handshake stamps, its ephemeral age
//! checks and its verification budget all see the same time.
//!
//! ```text
//!   Clock (Arc<dyn TimeProvider>)  ── now() ──►  Now { unix_secs, monotonic: Timestamp }
//!        │  system(): SystemTime + Instant          │
//!        │  fixed(unix), from_fn(f): tests          ▼
//!        │  your own TimeProvider: no_std,     Initiator::new(.., now, ..)
//!        │  virtual time                       Responder::answer(.., now)
//!        │                                     EphemeralSession::receive(.., now)
//!        │                                     Session::handle_message(bytes, now)
//!        └──────────────────────────────────   Session::poll_work(now) ──► Work::Wait(Timestamp)
//! ```
//!
//! A [`Timestamp`] counts nanoseconds from an origin its clock chooses (the
//! system clock: the first reading in the process); only differences
//! between readings of one clock mean anything. A driver turns a deadline
//! into a sleep with [`Timestamp::saturating_duration_since`] of its
//! clock's current reading.
//!
//! # A clock that steps back
//!
//! The session keeps the latest reading it was given and takes the later
//! of that and each new one, field by field ([`Now::latest`]): a
//! monotonic clock that goes backwards cannot make a deadline fire early,
//! and a wall clock set back cannot move the ephemeral deduplication window
//! back and let a replay in.
//!
//! ```
//! use bijou_frame::proto::time::{Clock, Now, Timestamp, TimeProvider};
//!
//! // A provider of your own: a simulated clock, a clock with an offset, ...
//! #[derive(Debug)]
//! struct Offset(u64);
//! impl TimeProvider for Offset {
//!     fn unix_secs(&self) -> u64 { Clock::system().unix_secs() + self.0 }
//!     fn monotonic(&self) -> Timestamp { Clock::system().monotonic() }
//! }
//! let clock = Clock::new(Offset(3600));
//! assert!(clock.now().unix_secs >= Clock::system().unix_secs() + 3599);
//! assert_eq!(Clock::fixed(1_700_000_000).now().unix_secs, 1_700_000_000);
//!
//! // A reading never goes back once combined with an earlier one.
//! let before = Now::from_secs(100);
//! assert_eq!(Now::from_secs(90).latest(before), before);
//! ```

use alloc::sync::Arc;
use core::fmt;
use core::num::NonZeroU64;
use core::time::Duration;

/// A monotonic instant: nanoseconds since an origin chosen by its clock.
/// Only differences between two readings of one clock mean anything.
///
/// Eight bytes, and so is an `Option<Timestamp>` (the deadline a state
/// machine may or may not have): the largest reading is `u64::MAX - 1`
/// nanoseconds, 584 years after the origin, and later ones saturate there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(NonZeroU64);

impl Timestamp {
    /// The clock's origin.
    pub const ZERO: Self = Self(NonZeroU64::MIN);

    /// The largest reading.
    pub const MAX: Self = Self(NonZeroU64::MAX);

    /// `nanos` nanoseconds after the origin (saturating at
    /// [`Timestamp::MAX`]).
    #[must_use]
    pub const fn from_nanos(nanos: u64) -> Self {
        // Stored plus one: zero is the niche that makes the Option small.
        Self(NonZeroU64::MIN.saturating_add(nanos))
    }

    /// `secs` seconds after the origin (saturating).
    #[must_use]
    pub const fn from_secs(secs: u64) -> Self {
        Self::from_nanos(secs.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds after the origin.
    #[must_use]
    pub const fn as_nanos(self) -> u64 {
        self.0.get() - 1
    }

    /// `duration` later, saturating at [`Timestamp::MAX`].
    #[must_use]
    pub fn saturating_add(self, duration: Duration) -> Self {
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        Self::from_nanos(self.as_nanos().saturating_add(nanos))
    }

    /// The time from `earlier` to `self`; zero if `earlier` is later.
    #[must_use]
    pub const fn saturating_duration_since(self, earlier: Self) -> Duration {
        Duration::from_nanos(self.as_nanos().saturating_sub(earlier.as_nanos()))
    }
}

impl Default for Timestamp {
    /// [`Timestamp::ZERO`].
    fn default() -> Self {
        Self::ZERO
    }
}

/// A source of time: the injectable trait behind [`Clock`] (compare rustls'
/// `TimeProvider`).
pub trait TimeProvider: Send + Sync + fmt::Debug {
    /// Wall time, unix seconds: what handshake challenges and ephemeral
    /// messages are stamped with and checked against.
    fn unix_secs(&self) -> u64;

    /// Monotonic time: what verification budgets and deadlines are
    /// measured in. Never decreasing (a reading that does is clamped by
    /// the session, see the [module docs](self)).
    fn monotonic(&self) -> Timestamp;
}

/// One reading of a [`Clock`]: both times, taken together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Wall time, unix seconds.
    pub unix_secs: u64,
    /// Monotonic time.
    pub monotonic: Timestamp,
}

impl Now {
    /// A reading of `unix_secs` wall time at the monotonic `monotonic`.
    #[must_use]
    pub const fn new(unix_secs: u64, monotonic: Timestamp) -> Self {
        Self {
            unix_secs,
            monotonic,
        }
    }

    /// A reading where both clocks say `unix_secs` (the monotonic one in
    /// seconds from its origin): for tests and simulations that count in
    /// whole seconds.
    #[must_use]
    pub const fn from_secs(unix_secs: u64) -> Self {
        Self::new(unix_secs, Timestamp::from_secs(unix_secs))
    }

    /// The later of `self` and `earlier`, field by field: what a state
    /// machine uses so that a clock stepping back changes nothing.
    #[must_use]
    pub fn latest(self, earlier: Self) -> Self {
        Self {
            unix_secs: self.unix_secs.max(earlier.unix_secs),
            monotonic: self.monotonic.max(earlier.monotonic),
        }
    }
}

/// The system clock: `SystemTime` in unix seconds (0 before 1970) and
/// `Instant` in nanoseconds since the first reading in the process.
#[cfg(feature = "std")]
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

#[cfg(feature = "std")]
impl SystemClock {
    /// Where this process's monotonic readings count from.
    fn origin() -> std::time::Instant {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        *ORIGIN.get_or_init(std::time::Instant::now)
    }

    /// `instant` as a [`Timestamp`] of this clock (zero before the origin).
    #[must_use]
    pub fn timestamp(instant: std::time::Instant) -> Timestamp {
        let since = instant.saturating_duration_since(Self::origin());
        Timestamp::from_nanos(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
    }
}

#[cfg(feature = "std")]
impl TimeProvider for SystemClock {
    fn unix_secs(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }

    fn monotonic(&self) -> Timestamp {
        Self::timestamp(std::time::Instant::now())
    }
}

/// Wall time from a function, monotonic time from the system.
#[cfg(feature = "std")]
struct FnClock<F>(F);

#[cfg(feature = "std")]
impl<F> fmt::Debug for FnClock<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnClock")
    }
}

#[cfg(feature = "std")]
impl<F: Fn() -> u64 + Send + Sync> TimeProvider for FnClock<F> {
    fn unix_secs(&self) -> u64 {
        (self.0)()
    }

    fn monotonic(&self) -> Timestamp {
        SystemClock.monotonic()
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

    /// The system clock ([`SystemClock`]): one shared clock, so a
    /// connection that keeps it allocates nothing for it (a server of
    /// 100,000 connections kept 16 bytes each, one `Arc` apiece).
    #[cfg(feature = "std")]
    #[must_use]
    pub fn system() -> Self {
        static SYSTEM: std::sync::OnceLock<Clock> = std::sync::OnceLock::new();
        SYSTEM.get_or_init(|| Self::new(SystemClock)).clone()
    }

    /// Wall time always `unix_secs`; monotonic time from the system.
    #[cfg(feature = "std")]
    #[must_use]
    pub fn fixed(unix_secs: u64) -> Self {
        Self::from_fn(move || unix_secs)
    }

    /// Wall time from `f` (unix seconds); monotonic time from the system.
    #[cfg(feature = "std")]
    pub fn from_fn(f: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        Self::new(FnClock(f))
    }

    /// Both times, read together.
    #[must_use]
    pub fn now(&self) -> Now {
        Now {
            unix_secs: self.0.unix_secs(),
            monotonic: self.0.monotonic(),
        }
    }

    /// Wall time, unix seconds.
    #[must_use]
    pub fn unix_secs(&self) -> u64 {
        self.0.unix_secs()
    }

    /// Monotonic time.
    #[must_use]
    pub fn monotonic(&self) -> Timestamp {
        self.0.monotonic()
    }
}

#[cfg(feature = "std")]
impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Clock(unix_secs = {})", self.unix_secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_saturate_instead_of_wrapping() {
        let t = Timestamp::from_nanos(u64::MAX - 5);
        assert_eq!(t.saturating_add(Duration::from_secs(1)), Timestamp::MAX);
        assert_eq!(Timestamp::MAX.as_nanos(), u64::MAX - 1);
        assert_eq!(Timestamp::from_nanos(u64::MAX), Timestamp::MAX);
        assert_eq!(Timestamp::from_nanos(0), Timestamp::ZERO);
        assert_eq!(Timestamp::from_nanos(7).as_nanos(), 7);
        assert_eq!(core::mem::size_of::<Option<Timestamp>>(), 8);
        assert_eq!(Timestamp::ZERO.saturating_duration_since(t), Duration::ZERO);
        assert_eq!(Timestamp::from_secs(u64::MAX), Timestamp::MAX);
        assert_eq!(
            Timestamp::from_secs(3).saturating_duration_since(Timestamp::from_secs(1)),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn latest_takes_each_field_from_the_later_reading() {
        let a = Now::new(100, Timestamp::from_nanos(5));
        let b = Now::new(90, Timestamp::from_nanos(7));
        assert_eq!(a.latest(b), Now::new(100, Timestamp::from_nanos(7)));
        assert_eq!(b.latest(a), a.latest(b));
    }

    #[test]
    fn the_system_clock_does_not_go_back() {
        let clock = Clock::system();
        let first = clock.monotonic();
        let second = clock.monotonic();
        assert!(second >= first);
    }
}
