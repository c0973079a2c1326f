//! Hostile peers, finding 1: a flood of valid challenges from fresh keys
//! must not lock honest peers out, must never get a replay accepted, and
//! must stay within the cache's stated memory.
//!
//! The flood rate is measured, not assumed: the tests time how many
//! challenges one core verifies per second (`verify_strict`, the work the
//! responder does before it touches the cache) and flood the cache at that
//! rate, per simulated second, with the responder's clock injected.

use std::time::{Duration, Instant};

use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{Audience, Challenge, RejectionReason};
use bijou_proto::nonce_cache::{NonceCache, NonceCheck};
use bijou_proto::time::Now;
use bijou_signing::{ed25519_dalek::SigningKey, Identity, PeerId, Signed};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const DRIFT: u64 = 10;
const START: u64 = 1_800_000_000;

/// The flood rate: what one core verifies per second, measured here (in
/// the test profile), and never less than 30,000/s, above what one core of
/// this machine verifies in release builds (about 25,000/s; `cargo bench
/// -p bijou-frame-benches --bench signing`).
fn one_core_verify_rate() -> u64 {
    let key = SigningKey::from_bytes(&[1; 32]);
    let signed: Vec<Signed<Challenge>> = (0..200u8)
        .map(|i| {
            let c = Challenge::new(Audience::Discover([7; 32]), START, [i; 16]);
            Signed::seal(&key, &c).expect("seal")
        })
        .collect();
    let started = Instant::now();
    for s in &signed {
        s.verify_strict().expect("valid");
    }
    let rate = (signed.len() as f64 / started.elapsed().as_secs_f64()) as u64;
    eprintln!("one core verifies {rate} challenges/s in this build; flooding at the larger of that and 30,000/s");
    rate.max(30_000)
}

#[derive(Clone, Copy, Debug)]
enum Stamp {
    /// The oldest stamp the drift check still accepts.
    Past,
    /// The responder's own second.
    Now,
    /// The newest stamp the drift check still accepts.
    Future,
    /// A mix of the three.
    Mixed,
}

struct Flood {
    rng: StdRng,
    accepted: Vec<(PeerId, [u8; 16], u64)>,
}

impl Flood {
    fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            accepted: Vec::new(),
        }
    }

    fn fresh(&mut self) -> (PeerId, [u8; 16]) {
        (PeerId::from_bytes(self.rng.random()), self.rng.random())
    }

    /// One simulated second of flood at `rate`, then the checks the test is
    /// about: honest peers at the given clock skews get in, and replays of
    /// anything accepted so far are refused.
    fn second(
        &mut self,
        cache: &NonceCache,
        now: u64,
        rate: u64,
        stamp: Stamp,
        honest_skews: &[i64],
    ) -> (usize, usize) {
        let mut flood_refused = 0;
        for i in 0..rate {
            let ts = match (stamp, i % 3) {
                (Stamp::Past, _) | (Stamp::Mixed, 0) => now - DRIFT,
                (Stamp::Now, _) | (Stamp::Mixed, 1) => now,
                (Stamp::Future, _) | (Stamp::Mixed, _) => now + DRIFT,
            };
            let (issuer, nonce) = self.fresh();
            if cache.check_and_insert(issuer, nonce, ts, now) == NonceCheck::Fresh {
                self.accepted.push((issuer, nonce, ts));
            } else {
                flood_refused += 1;
            }
            assert!(cache.len() <= cache.capacity());
        }
        let mut honest_refused = 0;
        for &skew in honest_skews {
            let ts = now.checked_add_signed(skew).expect("in range");
            let (issuer, nonce) = self.fresh();
            match cache.check_and_insert(issuer, nonce, ts, now) {
                NonceCheck::Fresh => self.accepted.push((issuer, nonce, ts)),
                _ => honest_refused += 1,
            }
        }
        // Replays of a sample of everything accepted so far: never fresh.
        for _ in 0..64 {
            let pick = self.rng.random_range(0..self.accepted.len());
            let (issuer, nonce, ts) = self.accepted[pick];
            let verdict = cache.check_and_insert(issuer, nonce, ts, now);
            assert_ne!(verdict, NonceCheck::Fresh, "replay accepted: {ts} at {now}");
            if ts.abs_diff(now) <= DRIFT {
                assert_ne!(verdict, NonceCheck::OutsideWindow);
            }
        }
        (honest_refused, flood_refused)
    }
}

const WINDOW: u64 = 2 * DRIFT + 1;

#[test]
fn a_cache_sized_for_the_flood_lets_every_honest_peer_in_and_no_replay_through() {
    let rate = one_core_verify_rate();
    // Sized as the docs say: rate x (2 x drift + 1) x 8/7, the rate
    // counting the honest peers too.
    let capacity = ((rate + 5) * WINDOW * 8).div_ceil(7) as usize;
    let cache = NonceCache::new(Duration::from_secs(DRIFT), capacity);
    let mut flood = Flood::new(1);
    let skews = [-(DRIFT as i64), -1, 0, 1, DRIFT as i64];
    let mut now = START;
    for stamp in [Stamp::Mixed, Stamp::Future, Stamp::Past, Stamp::Now] {
        for s in 0..WINDOW {
            now += 1;
            let (refused, flood_refused) = flood.second(&cache, now, rate, stamp, &skews);
            assert_eq!(
                refused, 0,
                "{stamp:?} flood, second {s}: honest peers refused"
            );
            assert_eq!(
                flood_refused, 0,
                "{stamp:?} flood, second {s}: flood refused"
            );
        }
    }
    // The window never narrowed: the floor only ever covered expired
    // seconds, which the drift check refuses anyway.
    assert!(
        cache.floor().is_none_or(|floor| floor + DRIFT < now),
        "floor {:?} at {now}",
        cache.floor()
    );
}

#[test]
fn an_undersized_cache_narrows_the_window_but_keeps_accurate_clocks_in_and_replays_out() {
    let rate = one_core_verify_rate();
    // Two seconds' worth of flood: a tenth of what the window needs.
    let cache = NonceCache::new(Duration::from_secs(DRIFT), (2 * rate) as usize);
    let mut flood = Flood::new(2);
    let mut now = START;
    for stamp in [Stamp::Future, Stamp::Mixed, Stamp::Now] {
        let mut overflowed = 0;
        for s in 0..3 * WINDOW {
            now += 1;
            // A peer whose clock agrees with ours gets in every second.
            let (refused, flood_refused) = flood.second(&cache, now, rate, stamp, &[0]);
            assert_eq!(refused, 0, "{stamp:?} flood, second {s}");
            overflowed += flood_refused
                + usize::from(cache.floor().is_some_and(|floor| floor + DRIFT >= now));
        }
        assert!(
            overflowed > 0,
            "{stamp:?}: the flood did overflow the cache"
        );
    }
}

/// The same through the responder, with real keys and signatures: a flood
/// of fresh-key challenges stamped at the far edge of the drift, and honest
/// peers in the middle of it.
#[test]
fn responder_under_a_signed_flood_lets_honest_peers_in_and_refuses_replays() {
    let mut config = HandshakeConfig::default();
    config.max_drift = Duration::from_secs(5);
    let me = SigningKey::from_bytes(&[2; 32]);
    let responder = Responder::with_nonce_capacity(config, 100).with_discovery_id([9; 32]);
    let mut rng = StdRng::seed_from_u64(3);
    let mut accepted = Vec::new();
    let mut flood_refused = 0;
    for second in 0..5u64 {
        let now = START + second;
        for _ in 0..60 {
            let attacker = SigningKey::from_bytes(&rng.random());
            let hello = Challenge::new(Audience::Discover([9; 32]), now + 5, rng.random());
            let signed = Signed::seal(&attacker, &hello).expect("seal");
            match responder.check_challenge(me.peer_id(), &signed, Now::from_secs(now)) {
                Ok(_) => accepted.push((signed, now)),
                Err(_) => flood_refused += 1,
            }
        }
        // An honest peer in the middle of the flood.
        let honest = SigningKey::from_bytes(&[100 + second as u8; 32]);
        let hello = Challenge::new(Audience::Known(me.peer_id()), now, rng.random());
        let signed = Signed::seal(&honest, &hello).expect("seal");
        assert!(
            responder
                .check_challenge(me.peer_id(), &signed, Now::from_secs(now))
                .is_ok(),
            "honest peer refused at second {second}"
        );
        accepted.push((signed, now));
        assert!(responder.nonce_cache_state().0 <= 100);
        // Every recording of an accepted challenge is refused.
        for (recorded, _) in &accepted {
            let refusal = responder
                .check_challenge(me.peer_id(), recorded, Now::from_secs(now))
                .expect_err("replay accepted");
            assert!(matches!(
                refusal.reason(),
                RejectionReason::ReplayedNonce | RejectionReason::ClockDrift
            ));
        }
    }
    assert!(flood_refused > 0, "the flood overflowed the cache");
}

/// The responder's cache is shared by every accept, through `&self`: two
/// threads flooding it at once (each at the one-core rate, stamps mixed
/// over the window), with honest peers at the edges of the drift, get the
/// same guarantees as one thread: every honest peer in, every replay of
/// anything either thread got accepted refused, the size bounded.
#[test]
fn two_threads_sharing_a_sharded_cache_keep_the_guarantees() {
    let rate = one_core_verify_rate();
    let capacity = ((2 * (rate + 5)) * WINDOW * 8).div_ceil(7) as usize;
    let cache = NonceCache::new(Duration::from_secs(DRIFT), capacity);
    assert!(cache.shards() > 1, "{} shards", cache.shards());
    let skews = [-(DRIFT as i64), 0, DRIFT as i64];
    // One clock: both threads work through the same second, then move on.
    let tick = std::sync::Barrier::new(2);
    let accepted: Vec<Vec<(PeerId, [u8; 16], u64)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2u64)
            .map(|t| {
                let (cache, tick) = (&cache, &tick);
                scope.spawn(move || {
                    let mut flood = Flood::new(10 + t);
                    let mut now = START;
                    for s in 0..2 * WINDOW {
                        now += 1;
                        tick.wait();
                        let (refused, _) = flood.second(cache, now, rate, Stamp::Mixed, &skews);
                        assert_eq!(refused, 0, "thread {t}, second {s}: honest peers refused");
                    }
                    flood.accepted
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("worker"))
            .collect()
    });
    assert!(cache.len() <= cache.capacity());
    // Each thread's accepted challenges, replayed at the last second: none
    // is fresh, and the ones the drift check still admits are known.
    let now = START + 2 * WINDOW;
    for (issuer, nonce, ts) in accepted.iter().flatten().step_by(97) {
        let verdict = cache.check_and_insert(*issuer, nonce, *ts, now);
        assert_ne!(verdict, NonceCheck::Fresh, "replay accepted: {ts} at {now}");
        if ts.abs_diff(now) <= DRIFT {
            assert_eq!(verdict, NonceCheck::Replayed);
        }
    }
}
