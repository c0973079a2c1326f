//! The frame codecs' heap while decoding and held by the frames they
//! deliver, against the bytes received, measured with a counting allocator
//! (`bijou_test_support::heap`): at most 2x the bytes received plus one
//! receive step (`RESERVE_STEP`, 64 KiB) and the 8 KiB a `FramedRead`
//! reserves, inside the 4x + constant every decoder of the project holds
//! to (`bijou_codec::wire`). Streams of many empty frames (one prefix byte
//! each, the most frames bytes can carry) cost nothing per frame.
//!
//! `bounded_memory.rs` checks the finer bound after every read of one
//! frame; this checks the peak over whole streams of any shape.

use bijou_framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_framing::FrameCodec;
use bijou_test_support::heap::{self, read_loop, Alone, Bound, PeakAlloc, READ_RESERVE};
use bytes::Bytes;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tokio_util::codec::Decoder;

/// `FrameCodec`'s documented receive step: 64 KiB (its memory section).
const RESERVE_STEP: usize = 64 * 1024;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

const BOUND: Bound = Bound {
    per_byte: 2,
    constant: RESERVE_STEP + READ_RESERVE + 1024,
};

fn stream<P: LengthPrefix>(lens: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, &len) in lens.iter().enumerate() {
        let (prefix, n) = P::encode(len as u64).expect("fits");
        out.extend_from_slice(&prefix[..n]);
        out.extend(std::iter::repeat_n(i as u8, len));
    }
    out
}

/// Feeds, checks the frames and the bound; returns the peak's ratio to
/// the bytes received and to the bound.
fn check<P: LengthPrefix>(heap: &Alone, lens: &[usize], reads: &[usize]) -> (f64, f64) {
    let wire = stream::<P>(lens);
    let mut kept = Vec::with_capacity(lens.len());
    let ((), usage) = heap.measure(|| {
        let mut codec = FrameCodec::<P>::default();
        read_loop(&wire, reads, &mut kept, |buf| codec.decode(buf));
    });
    let got: Vec<usize> = kept.iter().map(Bytes::len).collect();
    assert_eq!(got, lens, "{}: the frames fed", P::NAME);
    let ratio = BOUND.check(P::NAME, wire.len(), usage);
    (ratio, usage.peak as f64 / BOUND.allowed(wire.len()) as f64)
}

#[test]
fn a_hundred_thousand_empty_frames_cost_nothing_per_frame() {
    let heap = heap::alone();
    let lens = vec![0; 100_000];
    for (ratio, _) in [
        check::<Bijou64>(&heap, &lens, &[4096]),
        check::<Leb128>(&heap, &lens, &[4096]),
        check::<U32Be>(&heap, &lens, &[4096]),
    ] {
        println!("100,000 empty frames: peak {ratio:.2}x the bytes received");
    }
}

#[test]
fn one_large_frame_in_small_reads() {
    let heap = heap::alone();
    let (ratio, _) = check::<Bijou64>(&heap, &[6 << 20], &[1000, 4096, 16 * 1024]);
    println!("one 6 MiB frame in reads of 1,000-16,384 B: peak {ratio:.2}x");
}

#[test]
fn any_stream_in_any_reads_stays_within_twice_its_bytes_plus_a_step() {
    let heap = heap::alone();
    let lens = prop_oneof![Just(0usize), 0usize..300, 1_000usize..200_000];
    let inputs = (
        0u8..3,
        prop::collection::vec(lens, 1..48),
        prop::collection::vec(1usize..70_000, 1..16),
    );
    let mut runner = TestRunner::new(Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    });
    let worst = std::cell::Cell::new((0usize, 0.0f64));
    runner
        .run(&inputs, |(prefix, lens, reads)| {
            let (_, of_bound) = match prefix {
                0 => check::<Bijou64>(&heap, &lens, &reads),
                1 => check::<Leb128>(&heap, &lens, &reads),
                _ => check::<U32Be>(&heap, &lens, &reads),
            };
            let (cases, most) = worst.get();
            worst.set((cases + 1, most.max(of_bound)));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let (cases, most) = worst.get();
    println!("{cases} random streams: the peak at most {most:.2} of the bound");
    assert!(cases >= 64);
}
