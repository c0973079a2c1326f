//! `SUK\0` keyhive messages: `SukMessage` decode (envelope, signed
//! envelope, every keyhive message kind), re-encode, and verification of
//! what decodes. Inputs that start with `SUK\0` are also tried with
//! `TotalSize` set to their length, so that mutants get past the envelope
//! check.
#![no_main]

use bijou_test_support::checks;
use bijou_test_support::messages::fix_total_size;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    checks::check_suk(data, true);
    if data.len() >= 8 && data.starts_with(b"SUK\0") {
        let mut fixed = data.to_vec();
        fix_total_size(&mut fixed);
        checks::check_suk(&fixed, true);
    }
});
