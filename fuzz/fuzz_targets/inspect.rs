//! The frame inspector (`examples/inspect.rs`) on a capture, under each of
//! the three length prefixes.
//!
//! The inspector's own code is compiled in (build.rs copies it, `include!`
//! puts it in the module below) and run on the input, writing its report
//! to memory. The shared oracle follows the same decode path (prefix,
//! frame, message, verification) with the fuzz assertions, checks that
//! the frames are the ones `FrameCodec` delivers, and must agree with the
//! inspector's verdict and summary line.
#![no_main]

use bijou_test_support::checks;
mod inspector {
    #![allow(dead_code, unused_imports)]
    include!(concat!(env!("OUT_DIR"), "/inspect_example.rs"));

    /// Runs the inspector's `inspect`; returns its report text and whether
    /// it found the stream malformed and some frame bad.
    pub fn run<P: LengthPrefix>(input: &[u8]) -> (String, bool, bool) {
        let mut out = Vec::new();
        let status = inspect::<P>(input, &mut out).expect("writing to memory");
        let text = String::from_utf8(out).expect("the report is text");
        let (broken, bad) = match status {
            Status::Clean => (false, false),
            Status::BadFrames => (false, true),
            Status::BadStream => (true, false),
        };
        (text, broken, bad)
    }
}

use bijou_net::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use libfuzzer_sys::fuzz_target;

fn both<P: LengthPrefix>(data: &[u8]) {
    let (text, broken, bad) = inspector::run::<P>(data);
    let report = checks::check_inspect::<P>(data);
    assert_eq!(broken, report.broken, "{text}");
    if !broken {
        assert_eq!(bad, report.bad > 0, "{text}");
    }
    let summary = format!(
        "{} frame(s), {} ok, {} with problems",
        report.frames,
        report.frames - report.bad,
        report.bad
    );
    assert!(text.contains(&summary), "expected {summary:?} in:\n{text}");
}

fuzz_target!(|data: &[u8]| {
    both::<Bijou64>(data);
    both::<Leb128>(data);
    both::<U32Be>(data);
});
