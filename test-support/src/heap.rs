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

use bytes::{Bytes, BytesMut};

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

/// What a transport's read buffer reserves when it is full
/// (`FramedRead`'s and our transports' 8 KiB).
pub const READ_RESERVE: usize = 8 * 1024;

/// Feeds `wire` to a frame decoder as a socket read loop does: reads of
/// `reads` sizes in turn (each at most the buffer's spare room), the
/// buffer growing by [`READ_RESERVE`] when it is full, and after each read
/// every frame `decode` completes pushed to `kept` (allocated by the
/// caller, so that its slots are not counted as the decoder's memory).
/// Panics if bytes are left over at the end.
pub fn read_loop<E: std::fmt::Debug>(
    wire: &[u8],
    reads: &[usize],
    kept: &mut Vec<Bytes>,
    mut decode: impl FnMut(&mut BytesMut) -> Result<Option<Bytes>, E>,
) {
    let mut buf = BytesMut::new();
    let mut rest = wire;
    let mut sizes = reads.iter().cycle();
    while !rest.is_empty() {
        if buf.capacity() == buf.len() {
            buf.reserve(READ_RESERVE);
        }
        let room = buf.capacity() - buf.len();
        let n = sizes
            .next()
            .copied()
            .unwrap_or(1)
            .clamp(1, room)
            .min(rest.len());
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        while let Some(frame) = decode(&mut buf).expect("a valid stream") {
            kept.push(frame);
        }
    }
    assert!(buf.is_empty(), "{} bytes left over", buf.len());
}
