//! The crypto limit of a handshake: how many `sign` + `verify_strict`
//! pairs (what a server does per handshake) one core does in a second,
//! measured in the same run as the load.

use std::time::{Duration, Instant};

use bijou_frame::signing::ed25519_dalek::{Signer as _, SigningKey};

/// Sign-and-verify pairs per second on this thread, over about `span`.
pub fn pairs_per_second(span: Duration) -> f64 {
    let key = SigningKey::from_bytes(&rand::random());
    let public = key.verifying_key();
    // About a challenge's size.
    let mut message = [0u8; 120];
    let started = Instant::now();
    let mut pairs = 0u64;
    while started.elapsed() < span {
        for _ in 0..64 {
            message[0] = message[0].wrapping_add(1);
            let signature = key.sign(&message);
            if public.verify_strict(&message, &signature).is_ok() {
                pairs += 1;
            }
        }
    }
    pairs as f64 / started.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_measurement_counts_pairs() {
        assert!(pairs_per_second(Duration::from_millis(20)) > 0.0);
    }
}
