//! `SUM\0` sync messages: `Message`/`SyncMessage` decode, re-encode, and
//! verification of what decodes (signatures, scopes, blobs). Inputs that
//! start with `SUM\0` are also tried with `TotalSize` set to their length,
//! so that mutants get past the envelope check.
#![no_main]

#[path = "../../net/tests/fuzz_support/checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    checks::check_sum(data, true);
    if data.len() >= 8 && data.starts_with(b"SUM\0") {
        if let Ok(len) = u32::try_from(data.len()) {
            let mut fixed = data.to_vec();
            fixed[4..8].copy_from_slice(&len.to_be_bytes());
            checks::check_sum(&fixed, true);
        }
    }
});
