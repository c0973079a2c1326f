//! The crypto limit of a handshake: how many `sign` + `verify_strict`
//! pairs (what a server does per handshake) one core does in a second,
//! measured in the same run as the load.
//!
//! Each verification is of a signature by another key, parsed from its
//! 32 bytes first, as a server parses each peer's key from its challenge
//! (a point decompression: about a third of a verification).

use std::time::{Duration, Instant};

use bijou_frame::signing::ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};

/// Peers whose signatures the measurement verifies in turn.
const PEERS: usize = 64;

/// Sign-and-verify pairs per second on this thread, over about `span`.
pub fn pairs_per_second(span: Duration) -> f64 {
    let server = SigningKey::from_bytes(&rand::random());
    // About a challenge's size.
    let message = [7u8; 120];
    let peers: Vec<([u8; 32], Signature)> = (0..PEERS)
        .map(|_| {
            let peer = SigningKey::from_bytes(&rand::random());
            (peer.verifying_key().to_bytes(), peer.sign(&message))
        })
        .collect();
    let mut answer = [0u8; 120];
    let started = Instant::now();
    let mut pairs = 0u64;
    while started.elapsed() < span {
        for (key, signature) in &peers {
            let verified = VerifyingKey::from_bytes(key)
                .is_ok_and(|key| key.verify_strict(&message, signature).is_ok());
            answer[0] = answer[0].wrapping_add(1);
            std::hint::black_box(server.sign(&answer));
            pairs += u64::from(verified);
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
