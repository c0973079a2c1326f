//! `SUH\0` handshake messages: `Message`/`HandshakeMessage` decode,
//! re-encode, and verification; and the same bytes as a standalone
//! `Signed<Challenge>` or `Signed<Response>`, which must agree.
#![no_main]

use bijou_test_support::checks;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let message = checks::check_suh(data, true);
    let alone = checks::check_signed_handshake(data, None);
    if data.starts_with(b"SUH\0") && data.get(4).is_some_and(|&kind| kind < 2) {
        assert_eq!(
            message == checks::Depth::Accepted,
            alone == checks::Depth::Accepted,
            "a signed handshake message and its payload disagree"
        );
    }
});
