//! Standalone signed items: the input as a `Signed<LooseCommit>` and as a
//! `Signed<Fragment>` (`Wire::decode`). What decodes must be its own wire
//! form, its fields must decode alone and re-encode to the same bytes, and
//! verification must not panic.
#![no_main]

use bijou_test_support::checks;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    checks::check_signed_commit(data, true);
    checks::check_signed_fragment(data, true);
});
