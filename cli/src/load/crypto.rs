//! The crypto limit of a handshake: how many `sign` + `verify_strict`
//! pairs (what a server does per handshake) the server's cores do in a
//! second, measured in the same run as the load, on those cores: one
//! thread pinned to each, all at once, their pairs added up. (Two cores
//! of one machine need not be alike: a virtual machine's may share a
//! physical core with others.)
//!
//! Each verification is of a signature by another key, parsed from its
//! 32 bytes first, as a server parses each peer's key from its challenge
//! (a point decompression: about a third of a verification).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bijou_frame::signing::ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};

/// Peers whose signatures the measurement verifies in turn.
const PEERS: usize = 64;

/// What the measurement found.
#[derive(Debug, Clone, Copy)]
pub struct CryptoLimit {
    /// Pairs per second on all the cores measured.
    pub total: f64,
    /// Cores measured.
    pub cores: usize,
    /// Whether each thread ran on its own core (pinned); `false` when the
    /// cores were not known or could not be asked for.
    pub pinned: bool,
}

/// Measures for about `span` on each of `cores` (this machine's
/// parallelism, unpinned, when empty).
pub fn measure(cores: &BTreeSet<u32>, span: Duration) -> CryptoLimit {
    if cores.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, usize::from);
        let total = run_threads((0..n).map(|_| None).collect(), span).0;
        return CryptoLimit {
            total,
            cores: n,
            pinned: false,
        };
    }
    let (total, pinned) = run_threads(cores.iter().map(|c| Some(*c)).collect(), span);
    CryptoLimit {
        total,
        cores: cores.len(),
        pinned,
    }
}

/// One thread per entry (pinned to that core when given), all at once:
/// their pairs per second added up, and whether every pin held.
fn run_threads(cores: Vec<Option<u32>>, span: Duration) -> (f64, bool) {
    let threads: Vec<_> = cores
        .into_iter()
        .map(|core| {
            std::thread::spawn(move || {
                let pinned = core.is_some_and(pin_to);
                (pairs_per_second(span), pinned)
            })
        })
        .collect();
    let mut total = 0.0;
    let mut all_pinned = true;
    for thread in threads {
        let (rate, pinned) = thread.join().unwrap_or((0.0, false));
        total += rate;
        all_pinned &= pinned;
    }
    (total, all_pinned)
}

/// Pins the calling thread to `core`; whether it could.
fn pin_to(core: u32) -> bool {
    let mut set = nix::sched::CpuSet::new();
    set.set(core as usize).is_ok()
        && nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).is_ok()
}

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
    fn a_short_measurement_counts_pairs_on_the_cores_asked() {
        assert!(pairs_per_second(Duration::from_millis(20)) > 0.0);
        let limit = measure(&BTreeSet::from([0]), Duration::from_millis(20));
        assert_eq!(limit.cores, 1);
        assert!(limit.total > 0.0);
        assert!(limit.pinned, "core 0 exists everywhere");
        let unpinned = measure(&BTreeSet::new(), Duration::from_millis(20));
        assert!(!unpinned.pinned && unpinned.cores >= 1);
    }
}
