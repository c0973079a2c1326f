//! Heap measured around one call, with a counting global allocator
//! ([`PeakAlloc`]: the current and the peak number of bytes allocated,
//! process-wide; its peak can be reset, which `cap` cannot do).
//!
//! Every target forbids `unsafe_code`, so no test can implement
//! `GlobalAlloc` itself: a test binary that measures declares
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: bijou_test_support::heap::PeakAlloc = bijou_test_support::heap::PeakAlloc;
//! ```
//!
//! The counters see every thread of the process, so a measurement is only
//! sound while nothing else runs: every test of such a binary starts with
//! `let heap = heap::alone();`, which holds a process-wide lock until the
//! test ends (its input generation included, so property tests use a
//! `TestRunner` inside the test rather than the `proptest!` macro), and
//! measures through [`Alone::measure`]. What the test harness allocates on
//! its own threads meanwhile (captured output) is noise of a few hundred
//! bytes, inside the bounds' constants.

use std::sync::{Mutex, MutexGuard};

pub use peak_alloc::PeakAlloc;

static SERIAL: Mutex<()> = Mutex::new(());

/// What a call did to the heap, in bytes above what was allocated when it
/// started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// The most it had allocated at any moment of the call.
    pub peak: usize,
    /// What was still allocated when it returned: its result's heap (and
    /// anything it leaked).
    pub held: usize,
}

/// The right to measure: no other test of the binary runs while it is
/// held (see the [module docs](self)).
pub struct Alone {
    _serial: MutexGuard<'static, ()>,
}

/// Waits until no other test of this binary runs, and keeps it so until
/// the returned guard is dropped. Panics if the binary did not install
/// [`PeakAlloc`] as its global allocator (nothing would be counted, and
/// every bound would hold vacuously).
pub fn alone() -> Alone {
    let serial = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // Without the allocator installed the counters stay at zero; with it,
    // the probe alone is counted (other threads may free meanwhile, so no
    // exact figure is asked).
    let probe = std::hint::black_box(vec![0u8; 4096]);
    let counted = PeakAlloc.current_usage() > 0;
    drop(probe);
    assert!(
        counted,
        "heap::alone needs `#[global_allocator] static ALLOCATOR: PeakAlloc = PeakAlloc;` \
         in the test binary"
    );
    Alone { _serial: serial }
}

impl Alone {
    /// Runs `f` and returns its result with the heap it used.
    pub fn measure<T>(&self, f: impl FnOnce() -> T) -> (T, Usage) {
        let counter = PeakAlloc;
        let before = counter.current_usage();
        counter.reset_peak_usage();
        let out = f();
        let usage = Usage {
            peak: counter.peak_usage().saturating_sub(before),
            held: counter.current_usage().saturating_sub(before),
        };
        (out, usage)
    }
}

/// A memory bound of the form `per_byte x input + constant`.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    /// Bytes of heap allowed per input byte.
    pub per_byte: usize,
    /// Bytes of heap allowed whatever the input.
    pub constant: usize,
}

impl Bound {
    /// The bytes of heap allowed for an input of `len` bytes.
    pub fn allowed(&self, len: usize) -> usize {
        self.per_byte
            .saturating_mul(len)
            .saturating_add(self.constant)
    }

    /// Asserts that `usage` (peak and held) of a call over `len` input
    /// bytes is within the bound; returns the peak's ratio to the input
    /// (`peak / len`).
    pub fn check(&self, what: &str, len: usize, usage: Usage) -> f64 {
        let allowed = self.allowed(len);
        assert!(
            usage.peak <= allowed && usage.held <= allowed,
            "{what}: {len} input bytes, peak {} B and held {} B of heap; the bound is {} x {len} + {} = {allowed} B",
            usage.peak,
            usage.held,
            self.per_byte,
            self.constant,
        );
        usage.peak as f64 / len.max(1) as f64
    }
}
