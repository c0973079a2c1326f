//! The single-value decoders at every placement of their caller's loop.
//!
//! Our `bijou64::decode` and bijoux's compile to the same shape in a
//! caller's loop (README, "Single-value `decode`"), and such a loop runs at
//! a whole number of cycles a value that depends on how its blocks fall on
//! 64-byte lines. One build draws one placement for each decoder, so one
//! build's ratio is a draw too (README, "Across code layouts"). This
//! benchmark times every placement in one binary instead:
//!
//! - the caller's loop (`shootout_loops.rs`: the `bijou64-decode`,
//!   `bijou64-reader` and `bijoux` loops of `varint.rs`) is compiled
//!   [`COPIES`] times, copy `P` with a
//!   prologue of `P` stack round trips (`black_box`) before the loop, which
//!   moves the loop by a few bytes a copy and nothing else;
//! - LLVM aligns a loop's top to 16 bytes, so with functions aligned to 64
//!   bytes (`-C llvm-args=-align-all-functions=6`) each copy's loop sits at
//!   one of four offsets in its 64-byte line: the four placements;
//! - the copies run interleaved (every copy of every decoder once per
//!   round, `ROUNDS` rounds) over the shootout's distributions
//!   (`shootout_values.rs`), and each copy's median is printed.
//!
//! `scripts/placements.py` builds this with functions aligned, finds each
//! copy's loop in the disassembly, groups the copies by placement and
//! prints, per distribution and decoder, the median of each placement and
//! their mean: the expected time at a placement drawn at random, which is
//! what a build that nobody tuned gets.
//!
//! ```text
//!   python3 scripts/placements.py            # build, run, print the table
//!   cargo bench -p bijou-frame-benches --bench placements   # raw lines
//! ```
//!
//! Output, one line per copy and distribution (`ns` a value, median of the
//! rounds), after one `copy` line per copy giving its function's address
//! relative to `main` (the script maps these to the disassembly):
//!
//! ```text
//! copy bijou64-decode 3 -13632
//! time tiny bijou64-decode 3 0.3712
//! ```

use std::hint::black_box;
use std::time::Instant;

use bijou_codec::bijou64;
use bytes::Bytes;
use shootout_values::distributions;

mod shootout_loops;
mod shootout_values;

/// Copies of each loop; with 16-byte loop alignment and a prologue that
/// grows by about 8 bytes a copy, 16 copies cover the four placements.
const COPIES: usize = 16;

/// Values decoded per timed call, about: a few milliseconds a sample.
const VALUES_PER_SAMPLE: usize = 1 << 20;

type Loop = fn(&[u8], &Bytes) -> u64;

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

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; a filter word selects distributions.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5)
        .max(1);
    let decoders: [(&str, [Loop; COPIES]); 3] = [
        ("bijou64-decode", copies!(ours_decode)),
        ("bijou64-reader", copies!(ours_reader)),
        ("bijoux", copies!(bijoux_decode)),
    ];
    let main_address = main as fn() as usize;
    for (name, loops) in &decoders {
        for (copy, f) in loops.iter().enumerate() {
            let offset = (*f as usize).wrapping_sub(main_address) as isize;
            println!("copy {name} {copy} {offset}");
        }
    }
    for (dist, values) in distributions() {
        if !filter.is_empty() && !filter.iter().any(|f| dist.contains(f.as_str())) {
            continue;
        }
        let mut encoded = Vec::new();
        for &v in &values {
            bijou64::encode_to_vec(v, &mut encoded);
        }
        let frame = Bytes::copy_from_slice(&encoded);
        let expected = values.iter().fold(0u64, |s, &v| s.wrapping_add(v));
        for (name, loops) in &decoders {
            for (copy, f) in loops.iter().enumerate() {
                assert_eq!(
                    f(&encoded, &frame),
                    expected,
                    "{name} copy {copy} on {dist}"
                );
            }
        }
        let calls = (VALUES_PER_SAMPLE / values.len()).max(1);
        let mut samples: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); COPIES]; decoders.len()];
        for _ in 0..rounds {
            for copy in 0..COPIES {
                for (d, (_, loops)) in decoders.iter().enumerate() {
                    let f = loops[copy];
                    let start = Instant::now();
                    for _ in 0..calls {
                        black_box(f(black_box(&encoded), black_box(&frame)));
                    }
                    let per_value =
                        start.elapsed().as_nanos() as f64 / (calls * values.len()) as f64;
                    samples[d][copy].push(per_value);
                }
            }
        }
        for (d, (name, _)) in decoders.iter().enumerate() {
            for (copy, copy_samples) in samples[d].iter_mut().enumerate() {
                println!("time {dist} {name} {copy} {:.4}", median(copy_samples));
            }
        }
    }
}
