//! Sixteen copies of each of the shootout's single-value loops, each at its
//! own place in the binary.
//!
//! A caller's loop around `bijou64::decode` (or bijoux's) runs at a whole
//! number of cycles a value, and which number depends on how its blocks
//! fall on 64-byte lines (`DECODERS.md`, "Across code layouts"): one build's
//! timing of one loop is one draw of that lottery. Copy `P` is the loop of
//! `shootout_loops.rs` behind `P` stack round trips (`black_box`), which
//! moves the loop by a few bytes a copy and nothing else:
//!
//! ```text
//!   copy 0:  [loop.......]
//!   copy 1:  [rt][loop.......]
//!   copy 2:  [rt][rt][loop.......]      rt: one stack round trip
//!   ...                                  (about 8 bytes of code)
//! ```
//!
//! LLVM aligns a loop's top to 16 bytes, so the copies' loops land at the
//! four offsets a 64-byte line has for them. `placements.rs` builds with
//! functions aligned to 64 bytes, which makes the offset of every copy
//! known (`scripts/placements.py` reads it from the disassembly and
//! groups the copies); `varint.rs` does not, and gives each criterion
//! sample's iterations to the sixteen copies in turn (its `-placed`
//! functions), so that their time is the mean over sixteen placements the
//! build drew instead of one.

use std::hint::black_box;

use bytes::Bytes;

use crate::shootout_loops;

/// Copies of each loop; with functions aligned to 64 bytes, 16-byte loop
/// alignment and a prologue that grows by about 8 bytes a copy, 16 copies
/// cover the four placements (without the function alignment, as in
/// `varint.rs`, where each copy lands is the build's draw).
pub const COPIES: usize = 16;

/// One copy of a loop: the stream as a slice and as the `Bytes` a
/// `Reader` reads; returns the sum of the values.
pub type Loop = fn(&[u8], &Bytes) -> u64;

/// Copy `P` of a decoder's loop: `P` stack round trips, then the loop of
/// `shootout_loops.rs` (inlined, so each copy has its own). The padding's
/// sum is added and subtracted again, so every copy returns the sum of the
/// values and the round trips cannot be dropped.
macro_rules! placed_loop {
    ($name:ident, |$buf:ident, $frame:ident| $body:expr) => {
        #[inline(never)]
        fn $name<const P: usize>($buf: &[u8], $frame: &Bytes) -> u64 {
            let mut padding = 0u64;
            let mut i = 0;
            while i < P {
                padding = black_box(padding.wrapping_add(i as u64));
                i += 1;
            }
            padding.wrapping_add($body).wrapping_sub(padding)
        }
    };
}

placed_loop!(ours_decode, |buf, _frame| shootout_loops::decode_loop(buf));
placed_loop!(ours_reader, |_buf, frame| shootout_loops::reader_loop(
    frame
));
placed_loop!(bijoux_decode, |buf, _frame| shootout_loops::bijoux_loop(
    buf
));

macro_rules! copies {
    ($f:ident) => {
        [
            $f::<0> as Loop,
            $f::<1>,
            $f::<2>,
            $f::<3>,
            $f::<4>,
            $f::<5>,
            $f::<6>,
            $f::<7>,
            $f::<8>,
            $f::<9>,
            $f::<10>,
            $f::<11>,
            $f::<12>,
            $f::<13>,
            $f::<14>,
            $f::<15>,
        ]
    };
}

/// Every decoder's copies, by the name the benchmarks print: our
/// `bijou64::decode`, our `Reader::bijou64`, and bijoux's `decode`.
pub fn decoders() -> [(&'static str, [Loop; COPIES]); 3] {
    [
        ("bijou64-decode", copies!(ours_decode)),
        ("bijou64-reader", copies!(ours_reader)),
        ("bijoux", copies!(bijoux_decode)),
    ]
}
