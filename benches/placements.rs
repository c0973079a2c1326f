//! The single-value decoders at every placement of their caller's loop.
//!
//! Our `bijou64::decode` and bijoux's compile to the same shape in a
//! caller's loop (`DECODERS.md`, "Single-value `decode`"), and such a loop
//! runs at a whole number of cycles a value that depends on how its blocks
//! fall on 64-byte lines. One build draws one placement for each decoder,
//! so one build's ratio is a draw too (`DECODERS.md`, "Across code
//! layouts"). This benchmark times every placement in one binary instead:
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
use placed_loops::COPIES;
use shootout_values::distributions;

mod placed_loops;
mod shootout_loops;
mod shootout_values;

/// Values decoded per timed call, about: a few milliseconds a sample.
const VALUES_PER_SAMPLE: usize = 1 << 20;

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
    let decoders = placed_loops::decoders();
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
