//! The capture inspector (`bijou_frame::inspect`, behind `bijou inspect`
//! and the inspect example) on arbitrary input, under each of the three
//! length prefixes, plus prefix and hex detection.
//!
//! The shared oracle follows the same decode path (prefix, frame, message,
//! verification) with the fuzz assertions, checks that the frames are the
//! ones `FrameCodec` delivers, and must agree with the inspector's verdict
//! and summary line.
#![no_main]

use bijou_frame::framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_frame::inspect::{self, Status};
use bijou_test_support::checks;
use libfuzzer_sys::fuzz_target;

fn both<P: LengthPrefix>(data: &[u8]) {
    let mut out = Vec::new();
    let summary = inspect::inspect(data, P::KIND, &mut out).expect("writing to memory");
    let text = String::from_utf8(out).expect("the report is text");
    let report = checks::check_inspect::<P>(data);
    let broken = summary.status() == Status::BadStream;
    assert_eq!(broken, report.broken, "{text}");
    assert_eq!(summary.frames as usize, report.frames, "{text}");
    assert_eq!(summary.bad as usize, report.bad, "{text}");
    let line = format!(
        "{} frame(s), {} ok, {} with problems",
        report.frames,
        report.frames - report.bad,
        report.bad
    );
    assert!(
        summary.to_string().starts_with(&line),
        "expected {line:?}, got {summary}"
    );
}

fuzz_target!(|data: &[u8]| {
    both::<Bijou64>(data);
    both::<Leb128>(data);
    both::<U32Be>(data);
    // Detection never panics, and what it reports is a real scan.
    if let Some(found) = inspect::detect(data) {
        // A reading is chosen for a good frame, or for a message cut short
        // under a prefix that read no bad frame.
        assert!(
            found.summary.good() > 0
                || (found.summary.bad == 0
                    && matches!(
                        found.summary.stream_error,
                        Some(inspect::StreamError::TruncatedFrame { .. })
                    ))
        );
    }
});
