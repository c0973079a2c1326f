//! The replay cache (`bijou_proto::nonce_cache::NonceCache`) against the
//! algorithm it replaced, in one binary, and its scaling over threads.
//!
//! `replay_cache/window_full/*`: one handshake check (`check_and_insert`)
//! with the default ±600 s window full: about 1,500,000 entries spread
//! over all 1,201 timestamp seconds as a steady flood leaves them, in the
//! default cache (2^21, 32 shards):
//!
//! - `ours_fresh` / `old_scan_fresh`: a fresh pair stamped somewhere in the
//!   window (stamps cycle over it, as a flood's do), the clock advancing
//!   one second every 2,500 checks: a steady flood that keeps the window
//!   full (about 1.5 M entries over 1,201 seconds) as one second expires
//!   per second, so every check is accepted and the expiry work is
//!   amortised in;
//! - `ours_replay` / `old_scan_replay`: a held pair, replayed (a lookup);
//! - `ours_empty` / `old_scan_empty`: a fresh pair in an empty cache.
//!
//! `old_scan_*` is the previous `NonceCache`, copied below as it was: one
//! hash set per timestamp second, every set probed on each check.
//!
//! `replay_cache/threads/*`: throughput of the same steady flood of fresh
//! checks on one default cache, from one thread and from two (`iters`
//! checks interleaved between them, one clock), and from two threads on
//! an unsharded cache (one lock, the responder's old layout). The
//! two-thread speed-up is `one_thread / two_threads_sharded`. Each
//! configuration also prints the threads' own CPU time per check (Linux):
//! on a machine shared with other work, the wall time says what the cores
//! were given, the CPU time whether the threads cost each other anything.
//!
//! Ratios: divide the medians in
//! `target/criterion/replay_cache/<group>/<function>/new/estimates.json`.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::hint::black_box;
use std::time::{Duration, Instant};

use bijou_frame::proto::nonce_cache::{NonceCache, NonceCheck, DEFAULT_NONCE_CAPACITY};
use bijou_frame::signing::PeerId;
use criterion::{criterion_group, criterion_main, Criterion};

const NOW: u64 = 1_800_000_000;
const DRIFT: u64 = 600;
const WINDOW: u64 = 2 * DRIFT + 1;
const HELD: u64 = 1_500_000;
/// Checks per simulated second that keep about `HELD` entries over the
/// window: stamps spread evenly over it live `DRIFT` seconds on average.
const RATE: u64 = HELD / DRIFT;

/// The previous cache, as it was (less its docs): per-second hash sets,
/// all of them probed on each check.
struct OldScan {
    max_drift: u64,
    capacity: usize,
    key: RandomState,
    buckets: BTreeMap<u64, HashSet<u64>>,
    len: usize,
    floor: Option<u64>,
}

impl OldScan {
    fn new(max_drift: u64, capacity: usize) -> Self {
        Self {
            max_drift,
            capacity: capacity.max(1),
            key: RandomState::new(),
            buckets: BTreeMap::new(),
            len: 0,
            floor: None,
        }
    }

    fn evict_expired(&mut self, now: u64) {
        while let Some((&ts, _)) = self.buckets.first_key_value() {
            if ts.saturating_add(self.max_drift) >= now {
                break;
            }
            self.forget_oldest();
        }
    }

    fn check_and_insert(
        &mut self,
        issuer: PeerId,
        nonce: &[u8],
        timestamp: u64,
        now: u64,
    ) -> NonceCheck {
        self.evict_expired(now);
        let hash = self.hash(&issuer, nonce);
        let verdict = self.check_hash(hash, timestamp, now);
        if verdict != NonceCheck::Fresh {
            return verdict;
        }
        while self.len >= self.capacity {
            self.forget_oldest();
        }
        if self.below_floor(timestamp) {
            return NonceCheck::PossibleReplay;
        }
        self.buckets.entry(timestamp).or_default().insert(hash);
        self.len += 1;
        NonceCheck::Fresh
    }

    /// Files a pair without checking it (to set the benchmark up quickly).
    fn load(&mut self, issuer: PeerId, nonce: &[u8], timestamp: u64) {
        let hash = self.hash(&issuer, nonce);
        if self.buckets.entry(timestamp).or_default().insert(hash) {
            self.len += 1;
        }
    }

    fn check_hash(&self, hash: u64, timestamp: u64, now: u64) -> NonceCheck {
        if timestamp.abs_diff(now) > self.max_drift {
            return NonceCheck::OutsideWindow;
        }
        if self.below_floor(timestamp) {
            return NonceCheck::PossibleReplay;
        }
        if self
            .buckets
            .get(&timestamp)
            .is_some_and(|bucket| bucket.contains(&hash))
            || self.buckets.values().any(|bucket| bucket.contains(&hash))
        {
            return NonceCheck::Replayed;
        }
        if timestamp > now && self.len >= self.capacity - (self.capacity / 8).max(1) {
            return NonceCheck::FutureUnderLoad;
        }
        NonceCheck::Fresh
    }

    fn below_floor(&self, timestamp: u64) -> bool {
        self.floor.is_some_and(|floor| timestamp <= floor)
    }

    fn forget_oldest(&mut self) {
        if let Some((ts, bucket)) = self.buckets.pop_first() {
            self.floor = Some(self.floor.map_or(ts, |floor| floor.max(ts)));
            self.len -= bucket.len();
        }
    }

    fn hash(&self, issuer: &PeerId, nonce: &[u8]) -> u64 {
        let mut hasher = self.key.build_hasher();
        hasher.write(issuer.as_bytes());
        hasher.write(nonce);
        hasher.finish()
    }
}

/// The `i`-th pair of a stream (`stream` tells threads apart): a fresh
/// issuer and nonce, as a flood from fresh keys sends.
fn pair(stream: u64, i: u64) -> (PeerId, [u8; 16]) {
    let mut issuer = [0u8; 32];
    issuer[..8].copy_from_slice(&stream.to_be_bytes());
    issuer[8..16].copy_from_slice(&i.to_be_bytes());
    let mut nonce = [0u8; 16];
    nonce[..8].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
    (PeerId::from_bytes(issuer), nonce)
}

/// The stamps of the entries a steady flood (see [`steady`]) holds at
/// `NOW`, pair `i` stamped `stamps[i]`: a stamp `k` seconds from `NOW` was
/// sent during the `DRIFT - k` seconds it has been in the window, so
/// `RATE / WINDOW` per second of that (about `HELD` in all).
fn held_stamps() -> Vec<u64> {
    (0..WINDOW)
        .flat_map(|offset| {
            let ts = NOW - DRIFT + offset;
            let sent_for = WINDOW - 1 - offset;
            std::iter::repeat_n(ts, (RATE * sent_for / WINDOW) as usize)
        })
        .collect()
}

/// The `n`-th check of the steady flood (after the `HELD` loaded at
/// `NOW`): the clock and the stamp, cycling over the window around it.
fn steady(n: u64) -> (u64, u64) {
    let now = NOW + n / RATE;
    (now, now - DRIFT + (HELD + n) % WINDOW)
}

fn window_full(c: &mut Criterion) {
    let stamps = held_stamps();
    let held = stamps.len() as u64;
    let ours = NonceCache::new(Duration::from_secs(DRIFT), DEFAULT_NONCE_CAPACITY);
    let mut old = OldScan::new(DRIFT, DEFAULT_NONCE_CAPACITY);
    for (i, &ts) in (0..).zip(&stamps) {
        let (issuer, nonce) = pair(0, i);
        assert_eq!(
            ours.check_and_insert(issuer, nonce, ts, NOW),
            NonceCheck::Fresh
        );
        old.load(issuer, &nonce, ts);
    }
    // All but the newest second, which a steady flood has just begun.
    assert_eq!(old.buckets.len() as u64, WINDOW - 1);
    eprintln!("{held} entries over {} s", old.buckets.len());
    let mut group = c.benchmark_group("replay_cache/window_full");
    group.sample_size(30);
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(5));

    // Interleaved: each peer right after the other, on the same pairs.
    let mut i = 0;
    group.bench_function("ours_replay", |b| {
        b.iter(|| {
            i = (i + 7_919) % held;
            let (issuer, nonce) = pair(0, i);
            black_box(ours.check_and_insert(issuer, nonce, stamps[i as usize], NOW))
        });
    });
    let mut i = 0;
    group.bench_function("old_scan_replay", |b| {
        b.iter(|| {
            i = (i + 7_919) % held;
            let (issuer, nonce) = pair(0, i);
            black_box(old.check_and_insert(issuer, &nonce, stamps[i as usize], NOW))
        });
    });
    let (mut n, mut refused) = (0, 0);
    group.bench_function("ours_fresh", |b| {
        b.iter(|| {
            n += 1;
            let (now, ts) = steady(n);
            let (issuer, nonce) = pair(0, HELD + n);
            let verdict = ours.check_and_insert(issuer, nonce, ts, now);
            refused += u64::from(verdict != NonceCheck::Fresh);
            black_box(verdict)
        });
    });
    eprintln!(
        "ours: {n} fresh checks, {refused} refused; {} held (floor {:?})",
        ours.len(),
        ours.floor()
    );
    let (mut n, mut refused) = (0, 0);
    group.bench_function("old_scan_fresh", |b| {
        b.iter(|| {
            n += 1;
            let (now, ts) = steady(n);
            let (issuer, nonce) = pair(0, HELD + n);
            let verdict = old.check_and_insert(issuer, &nonce, ts, now);
            refused += u64::from(verdict != NonceCheck::Fresh);
            black_box(verdict)
        });
    });
    eprintln!(
        "old: {n} fresh checks, {refused} refused; {} held in {} s (floor {:?})",
        old.len,
        old.buckets.len(),
        old.floor
    );
    drop(ours);
    drop(old);

    // The empty-cache baseline (the old cache's best case): a fresh pair
    // stamped now, then forgotten by the next check one window later, so
    // the cache stays nearly empty.
    let ours = NonceCache::new(Duration::from_secs(DRIFT), DEFAULT_NONCE_CAPACITY);
    let mut now = NOW;
    let mut i = 0;
    group.bench_function("ours_empty", |b| {
        b.iter(|| {
            i += 1;
            now += WINDOW;
            let (issuer, nonce) = pair(0, i);
            black_box(ours.check_and_insert(issuer, nonce, now, now))
        });
    });
    let mut old = OldScan::new(DRIFT, DEFAULT_NONCE_CAPACITY);
    let mut now = NOW;
    let mut i = 0;
    group.bench_function("old_scan_empty", |b| {
        b.iter(|| {
            i += 1;
            now += WINDOW;
            let (issuer, nonce) = pair(0, i);
            black_box(old.check_and_insert(issuer, &nonce, now, now))
        });
    });
    group.finish();
}

/// The calling thread's CPU time so far (Linux), in nanoseconds.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Checks and the CPU time the threads spent on them, summed over a run.
#[derive(Default)]
struct CpuTally {
    checks: u64,
    cpu_ns: u64,
}

impl CpuTally {
    fn report(&self, name: &str) {
        if self.checks > 0 && self.cpu_ns > 0 {
            eprintln!(
                "{name}: {:.1} ns of thread CPU per check over {} checks",
                self.cpu_ns as f64 / self.checks as f64,
                self.checks
            );
        }
    }
}

/// Checks `n` from `next` on of the steady flood (`iters` of them),
/// interleaved over `threads` threads, on one clock; the wall time for all
/// of them. Each thread's CPU time goes into `tally`: on a machine shared
/// with other work the wall time shows what the cores were given, the CPU
/// time per check whether two threads cost each other anything.
fn run_threads(
    cache: &NonceCache,
    threads: u64,
    iters: u64,
    next: &mut u64,
    tally: &mut CpuTally,
) -> Duration {
    let first = *next;
    *next += iters;
    let started = Instant::now();
    let cpu: Vec<Option<u64>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let before = thread_cpu_ns();
                    let mut n = first + t;
                    while n < first + iters {
                        let (now, ts) = steady(n);
                        let (issuer, nonce) = pair(0, HELD + n);
                        black_box(cache.check_and_insert(issuer, nonce, ts, now));
                        n += threads;
                    }
                    Some(thread_cpu_ns()? - before?)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().ok().flatten())
            .collect()
    });
    let elapsed = started.elapsed();
    tally.checks += iters;
    tally.cpu_ns += cpu.into_iter().flatten().sum::<u64>();
    elapsed
}

fn loaded(cache: NonceCache) -> NonceCache {
    for (i, ts) in (0..).zip(held_stamps()) {
        let (issuer, nonce) = pair(0, i);
        cache.check_and_insert(issuer, nonce, ts, NOW);
    }
    cache
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The scaling ratios measured in pairs: rounds of one thread then two
/// on the sharded cache, then the same on the one-lock cache, 200,000
/// checks each, back to back, so that a neighbour's load changes them
/// alike; the medians of the per-round figures and of the ratios. The
/// caches' floods go on from `next_sharded` and `next_one_lock`.
fn interleaved_scaling(
    sharded: &NonceCache,
    one_lock: &NonceCache,
    next_sharded: &mut u64,
    next_one_lock: &mut u64,
) {
    const ROUNDS: usize = 31;
    const CHECKS: u64 = 200_000;
    let mut tallies: [CpuTally; 4] = Default::default();
    let mut wall: [Vec<f64>; 4] = Default::default();
    let (mut sharded_ratio, mut one_lock_ratio) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let runs = [
            run_threads(sharded, 1, CHECKS, next_sharded, &mut tallies[0]),
            run_threads(sharded, 2, CHECKS, next_sharded, &mut tallies[1]),
            run_threads(one_lock, 1, CHECKS, next_one_lock, &mut tallies[2]),
            run_threads(one_lock, 2, CHECKS, next_one_lock, &mut tallies[3]),
        ];
        let ns = runs.map(|d| d.as_nanos() as f64 / CHECKS as f64);
        sharded_ratio.push(ns[0] / ns[1]);
        one_lock_ratio.push(ns[2] / ns[3]);
        for (list, value) in wall.iter_mut().zip(ns) {
            list.push(value);
        }
    }
    let names = [
        "sharded, one thread",
        "sharded, two threads",
        "one lock, one thread",
        "one lock, two threads",
    ];
    for ((name, tally), ns) in names.iter().zip(&tallies).zip(wall) {
        eprintln!(
            "interleaved, {name}: median wall {:.0} ns per check",
            median(ns)
        );
        tally.report(&format!("interleaved, {name}"));
    }
    eprintln!(
        "interleaved, {ROUNDS} rounds of {CHECKS} checks: two threads over one, median of \
         the rounds: sharded {:.2}x, one lock {:.2}x",
        median(sharded_ratio),
        median(one_lock_ratio)
    );
}

fn threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("replay_cache/threads");
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(6));
    let drift = Duration::from_secs(DRIFT);
    let sharded = loaded(NonceCache::new(drift, DEFAULT_NONCE_CAPACITY));
    let one_lock = loaded(NonceCache::unsharded(
        drift,
        DEFAULT_NONCE_CAPACITY,
        [5; 16],
    ));
    let (mut next, mut next_one_lock) = (1, 1);
    interleaved_scaling(&sharded, &one_lock, &mut next, &mut next_one_lock);
    // One flood (one clock) through each cache, whichever the number of
    // threads.
    let mut tally = CpuTally::default();
    group.bench_function("one_thread", |b| {
        b.iter_custom(|iters| run_threads(&sharded, 1, iters, &mut next, &mut tally));
    });
    tally.report("one_thread");
    let mut tally = CpuTally::default();
    group.bench_function("two_threads_sharded", |b| {
        b.iter_custom(|iters| run_threads(&sharded, 2, iters, &mut next, &mut tally));
    });
    tally.report("two_threads_sharded");
    let held = (sharded.len(), sharded.floor());
    let mut tally = CpuTally::default();
    group.bench_function("two_threads_one_lock", |b| {
        b.iter_custom(|iters| run_threads(&one_lock, 2, iters, &mut next_one_lock, &mut tally));
    });
    tally.report("two_threads_one_lock");
    eprintln!(
        "held at the end: sharded {held:?}, one lock {:?}",
        (one_lock.len(), one_lock.floor())
    );
    group.finish();
}

criterion_group!(benches, window_full, threads);
criterion_main!(benches);
