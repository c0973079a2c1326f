//! `SUM\0` sync messages: `Message`/`SyncMessage` decode, re-encode, and
//! verification of what decodes (signatures, scopes, blobs). Inputs that
//! start with `SUM\0` are also tried with `TotalSize` set to their length,
//! so that mutants get past the envelope check.
#![no_main]

use bijou_test_support::checks;
use bijou_test_support::messages::fix_total_size;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    checks::check_sum(data, true);
    if data.len() >= 8 && data.starts_with(b"SUM\0") {
        let mut fixed = data.to_vec();
        fix_total_size(&mut fixed);
        checks::check_sum(&fixed, true);
    }
});
