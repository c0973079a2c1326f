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
//! and runs every measurement through [`measure`], which takes a
//! process-wide lock: the counters see every thread, so two measurements
//! at once would count each other. What the test harness allocates on its
//! own threads meanwhile (captured output) is noise of a few hundred bytes,
//! inside the bounds' constant.

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

/// Runs `f` alone among the measurements of this process and returns its
/// result with the heap it used. Panics if the binary did not install
/// [`PeakAlloc`] as its global allocator (nothing would be counted, and
/// every bound would hold vacuously).
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, Usage) {
    let _serial = serial();
    let counter = PeakAlloc;
    let probe_before = counter.current_usage();
    let probe = std::hint::black_box(vec![0u8; 4096]);
    assert!(
        counter.current_usage() >= probe_before + 4096,
        "heap::measure needs `#[global_allocator] static ALLOCATOR: PeakAlloc = PeakAlloc;` \
         in the test binary"
    );
    drop(probe);
    let before = counter.current_usage();
    counter.reset_peak_usage();
    let out = f();
    let usage = Usage {
        peak: counter.peak_usage().saturating_sub(before),
        held: counter.current_usage().saturating_sub(before),
    };
    (out, usage)
}

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
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
