//! The varint shootout: our bijou64 and canonical LEB128 against `bijoux`
//! (the reference bijou64) and three LEB128 crates (`prost`,
//! `unsigned-varint`, gimli's `leb128`), all in one binary.
//!
//! Method (after the bijou64 shootout): batches of 4096 values drawn with
//! seed `0xBEEF_CAFE_DEAD_F00D` from eight distributions; every peer
//! encodes the same values into a pre-sized, reused buffer and decodes the
//! same stream. Three groups per distribution:
//!
//! - `encode/<dist>`: encode the batch into a pre-sized buffer;
//! - `decode/<dist>`: stream-decode the batch (lax where a format allows);
//! - `canonical/<dist>`: stream-decode plus the canonicality check the
//!   format needs (none for bijou64: it is bijective).
//!
//! The single-value loops (`bijou64-decode`, `bijou64-reader`, `bijoux`)
//! are timed twice: once as one loop, as a program that calls the decoder
//! gets it, and once spread over sixteen copies of the loop at different
//! places in the binary (the `-placed` functions, `placed_loops.rs`),
//! whose time is the mean over the placements this build drew. One loop's
//! time is a draw of its placement, which moves these loops by up to 2x
//! between builds; the spread does not remove that, it averages it.
//! `bijoux-again` (in the `decode` groups) is bijoux's loop a second time,
//! a control: its ratio to `bijoux` is what placement alone does to a
//! one-loop ratio in this build.
//!
//! Print the table with `python3 scripts/bench-table.py varint`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bijou_codec::{bijou64, leb128};
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use placed_loops::{Loop, COPIES};
use shootout_values::distributions;

mod placed_loops;
mod shootout_loops;
mod shootout_values;

/// Times `iters` calls spread over the copies of a loop, for
/// `Bencher::iter_custom`: each copy in turn makes a run of consecutive
/// calls (`iters / COPIES`, the first `iters % COPIES` copies one more),
/// so that the branch predictor learns each copy's loop as it would learn
/// the one loop of a build.
fn time_spread(copies: &[Loop; COPIES], iters: u64, buf: &[u8], frame: &Bytes) -> Duration {
    let copies_u64 = COPIES as u64;
    let mut total = Duration::ZERO;
    for (copy, f) in (0u64..).zip(copies) {
        let calls = iters / copies_u64 + u64::from(copy < iters % copies_u64);
        let start = Instant::now();
        for _ in 0..calls {
            black_box(f(black_box(buf), black_box(frame)));
        }
        total += start.elapsed();
    }
    total
}

fn encode_all(values: &[u64], encode: impl Fn(u64, &mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::new();
    for &v in values {
        encode(v, &mut out);
    }
    out
}

fn bench_encode(c: &mut Criterion, name: &str, values: &[u64]) {
    let mut group = c.benchmark_group(format!("encode/{name}"));
    group.throughput(Throughput::Elements(values.len() as u64));
    let cap = values.len() * leb128::MAX_LEN;

    let mut slice = vec![0u8; cap];
    group.bench_function("bijou64", |b| {
        b.iter(|| {
            let n = bijou64::encode_slice(black_box(values), &mut slice).unwrap_or(0);
            black_box(&slice[..n]);
        })
    });
    let mut vec = Vec::with_capacity(cap);
    group.bench_function("bijou64-vec", |b| {
        b.iter(|| {
            vec.clear();
            for &v in black_box(values) {
                bijou64::encode_to_vec(v, &mut vec);
            }
            black_box(&vec);
        })
    });
    group.bench_function("bijoux", |b| {
        b.iter(|| {
            vec.clear();
            for &v in black_box(values) {
                bijoux::u64::encode(v, &mut vec);
            }
            black_box(&vec);
        })
    });
    group.bench_function("leb128-ours", |b| {
        b.iter(|| {
            let n = leb128::encode_slice(black_box(values), &mut slice).unwrap_or(0);
            black_box(&slice[..n]);
        })
    });
    group.bench_function("prost", |b| {
        b.iter(|| {
            vec.clear();
            for &v in black_box(values) {
                prost::encoding::encode_varint(v, &mut vec);
            }
            black_box(&vec);
        })
    });
    group.bench_function("unsigned-varint", |b| {
        let mut scratch = unsigned_varint::encode::u64_buffer();
        b.iter(|| {
            vec.clear();
            for &v in black_box(values) {
                vec.extend_from_slice(unsigned_varint::encode::u64(v, &mut scratch));
            }
            black_box(&vec);
        })
    });
    group.bench_function("gimli-leb128", |b| {
        b.iter(|| {
            vec.clear();
            for &v in black_box(values) {
                let _ = ::leb128::write::unsigned(&mut vec, v);
            }
            black_box(&vec);
        })
    });
    group.finish();
}

fn bench_decode(c: &mut Criterion, name: &str, values: &[u64], canonical: bool) {
    let bijou = encode_all(values, bijou64::encode_to_vec);
    let leb = encode_all(values, leb128::encode_to_vec);
    let kind = if canonical { "canonical" } else { "decode" };
    let mut group = c.benchmark_group(format!("{kind}/{name}"));
    group.throughput(Throughput::Elements(values.len() as u64));

    // bijou64 is bijective: its canonical decode is its decode. Internal
    // iteration (`fold`) is the iterator's fast path; `bijou64-next` shows
    // the same iterator driven by a `for` loop, `bijou64-decode` the
    // single-value `decode` in a loop and `bijou64-reader` the same decoder
    // through `Reader::bijou64`.
    group.bench_function("bijou64", |b| {
        b.iter(|| {
            bijou64::decode_iter(black_box(&bijou))
                .fold(0u64, |sum, v| sum.wrapping_add(v.unwrap_or(0)))
        })
    });
    group.bench_function("bijou64-next", |b| {
        b.iter(|| {
            let mut sum = 0u64;
            for v in bijou64::decode_iter(black_box(&bijou)) {
                sum = sum.wrapping_add(v.unwrap_or(0));
            }
            sum
        })
    });
    // The single-value decoder the message path (`Reader::bijou64`) uses,
    // in a loop: the same loop as the `bijoux` peer's below, so that the
    // `bijou64-decode/bijoux` ratio compares the two decoders alone.
    group.bench_function("bijou64-decode", |b| {
        b.iter(|| shootout_loops::decode_loop(black_box(&bijou[..])))
    });
    // The same single-value decoder through `Reader::bijou64`, the way a
    // message decoder reads its bijou64 fields (cursor, field name and
    // error mapping included).
    let frame = bytes::Bytes::copy_from_slice(&bijou);
    group.bench_function("bijou64-reader", |b| {
        b.iter(|| shootout_loops::reader_loop(black_box(&frame)))
    });
    group.bench_function("bijoux", |b| {
        b.iter(|| shootout_loops::bijoux_loop(black_box(&bijou[..])))
    });
    // The control and the spread loops are in the `decode` groups only (the
    // `canonical` ones would time the same loops again).
    if !canonical {
        // A control: bijoux's loop again, in a second function that adds
        // 1 after the loop (so that LLVM does not merge the two). Its
        // ratio to `bijoux` is what the placement of two identical loops
        // in one build does to a ratio, with no decoder difference in it.
        group.bench_function("bijoux-again", |b| {
            b.iter(|| shootout_loops::bijoux_loop(black_box(&bijou[..])).wrapping_add(1))
        });
        // The same three loops, each spread over its sixteen copies.
        for (decoder, copies) in placed_loops::decoders() {
            group.bench_function(format!("{decoder}-placed"), |b| {
                b.iter_custom(|iters| time_spread(&copies, iters, &bijou, &frame))
            });
        }
    }
    group.bench_function("leb128-ours", |b| {
        b.iter(|| {
            let mut rest = black_box(&leb[..]);
            let mut sum = 0u64;
            while !rest.is_empty() {
                let decoded = if canonical {
                    leb128::decode(rest)
                } else {
                    leb128::decode_lax(rest)
                };
                let Ok((v, n)) = decoded else { break };
                sum = sum.wrapping_add(v);
                rest = &rest[n..];
            }
            sum
        })
    });
    group.bench_function("prost", |b| {
        b.iter(|| {
            let mut rest = black_box(&leb[..]);
            let mut sum = 0u64;
            while !rest.is_empty() {
                let before = rest.len();
                let Ok(v) = prost::encoding::decode_varint(&mut rest) else {
                    break;
                };
                // prost accepts overlong forms; the canonical check is a
                // length comparison.
                if canonical && prost::encoding::encoded_len_varint(v) != before - rest.len() {
                    break;
                }
                sum = sum.wrapping_add(v);
            }
            sum
        })
    });
    // unsigned-varint rejects overlong forms itself (but accepts the
    // 10th-byte overflow pitfall; see codec/tests/codec/codec_leb128.rs).
    group.bench_function("unsigned-varint", |b| {
        b.iter(|| {
            let mut rest = black_box(&leb[..]);
            let mut sum = 0u64;
            while !rest.is_empty() {
                let Ok((v, tail)) = unsigned_varint::decode::u64(rest) else {
                    break;
                };
                sum = sum.wrapping_add(v);
                rest = tail;
            }
            sum
        })
    });
    group.bench_function("gimli-leb128", |b| {
        b.iter(|| {
            let mut rest = black_box(&leb[..]);
            let mut sum = 0u64;
            while !rest.is_empty() {
                let before = rest;
                let Ok(v) = ::leb128::read::unsigned(&mut rest) else {
                    break;
                };
                let used = before.len() - rest.len();
                if canonical && used > 1 && before[used - 1] == 0 {
                    break;
                }
                sum = sum.wrapping_add(v);
            }
            sum
        })
    });
    group.finish();
}

fn shootout(c: &mut Criterion) {
    for (name, values) in distributions() {
        // Every peer must agree on what it decodes, or the race is void.
        let expected: u64 = values.iter().fold(0, |a, &v| a.wrapping_add(v));
        let bijou = encode_all(&values, bijou64::encode_to_vec);
        let theirs = encode_all(&values, bijoux::u64::encode);
        assert_eq!(bijou, theirs, "{name}: bijoux disagrees");
        let sum = bijou64::decode_iter(&bijou).fold(0u64, |a, v| a.wrapping_add(v.unwrap_or(0)));
        assert_eq!(sum, expected, "{name}: bijou64 decode");
        let leb = encode_all(&values, leb128::encode_to_vec);
        let prost_bytes = encode_all(&values, |v, out: &mut Vec<u8>| {
            prost::encoding::encode_varint(v, out)
        });
        assert_eq!(leb, prost_bytes, "{name}: prost disagrees");

        bench_encode(c, name, &values);
        bench_decode(c, name, &values, false);
        bench_decode(c, name, &values, true);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(60);
    targets = shootout
}
criterion_main!(benches);
