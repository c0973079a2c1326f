//! `SUE\0` ephemeral messages: `Message`/`EphemeralMessage` decode,
//! re-encode, and verification of what decodes (the signed message's
//! fields re-encode field for field, and its unverified header agrees with
//! the verified payload).
#![no_main]

use bijou_test_support::checks;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    checks::check_sue(data, true);
});
