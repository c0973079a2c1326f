//! The ephemeral session with no runtime and no connection: floods from
//! fresh keys against the deduplication window, and the documented bounds.
//! (The same checks on a live connection: `net/tests/net/ephemeral_session.rs`.)

use std::time::Duration;

use bijou_proto::ephemeral::{EphemeralConfig, EphemeralRejected, EphemeralSession};
use bijou_proto::message::{EphemeralPayload, SignedEphemeral, Topic, Topics};
use bijou_proto::rng::SeededRng;
use bijou_proto::time::Now;
use bijou_proto::verify_budget::VerifyBudget;
use bijou_signing::ed25519_dalek::SigningKey;

const NOW: u64 = 1_700_000_000;

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

/// A session with a window of `capacity` entries; the tests pass the time
/// to every call.
fn session_at(capacity: usize) -> EphemeralSession {
    let mut config = EphemeralConfig::default();
    config.dedup_capacity = capacity;
    EphemeralSession::new(config, SeededRng::from_seed([6; 32]))
}

/// A flood of validly signed messages from fresh keys, far beyond the
/// window's capacity and stamped all over the accepted range, does not
/// stop an honest message stamped with the current time; the window never
/// holds more than its capacity; and no replay of a delivered message is
/// ever delivered again.
#[test]
fn a_flood_from_fresh_keys_does_not_lock_honest_senders_out() {
    const CAPACITY: usize = 256;
    let mut session = session_at(CAPACITY);
    let mut now = NOW;
    let topic = Topic::new([1; 32]);
    session.subscribe(&Topics::one(topic));
    let honest = key(0xEE);
    let mut delivered_flood = Vec::new();
    let mut honest_nonce = 0u64;
    for second in 0..70u64 {
        now = NOW + second;
        // 64 flood messages a second (a quarter of the capacity), from
        // fresh keys, stamped from 30 s in the past to 30 s in the future.
        for i in 0..64u64 {
            let fresh = SigningKey::from_bytes(&rand::random());
            let stamp = now - 30 + (i * 61 / 64);
            let msg = SignedEphemeral::seal(
                &fresh,
                &EphemeralPayload::new(topic, rand::random(), stamp, vec![0]),
            )
            .expect("seal");
            if session.receive(&msg, Now::from_secs(now)).is_ok() {
                delivered_flood.push(msg);
            }
            assert!(session.dedup_len() <= CAPACITY);
        }
        honest_nonce += 1;
        let msg = SignedEphemeral::seal(
            &honest,
            &EphemeralPayload::new(topic, honest_nonce, now, vec![1]),
        )
        .expect("seal");
        assert!(
            session.receive(&msg, Now::from_secs(now)).is_ok(),
            "honest message refused at second {second}"
        );
    }
    assert!(
        delivered_flood.len() > CAPACITY,
        "the flood overflowed the window"
    );
    // Replays of the most recent delivered flood messages that are still
    // within the age limit: none is delivered twice.
    for msg in delivered_flood.iter().rev().take(500) {
        assert!(
            session.receive(msg, Now::from_secs(now)).is_err(),
            "a replay was delivered"
        );
    }
}

/// The same at the window's limit: a flood of an eighth of the capacity
/// per second, all stamped exactly "now" (the worst case the cache
/// documents), still lets the honest message in.
#[test]
fn a_flood_stamped_exactly_now_within_an_eighth_of_capacity_does_not_lock_out() {
    const CAPACITY: usize = 256;
    let mut session = session_at(CAPACITY);
    let topic = Topic::new([1; 32]);
    session.subscribe(&Topics::one(topic));
    let honest = key(0xEF);
    for second in 0..70u64 {
        let now = NOW + second;
        for _ in 0..(CAPACITY / 8 - 1) {
            let fresh = SigningKey::from_bytes(&rand::random());
            let msg = SignedEphemeral::seal(
                &fresh,
                &EphemeralPayload::new(topic, rand::random(), now, vec![0]),
            )
            .expect("seal");
            assert!(session.receive(&msg, Now::from_secs(now)).is_ok());
        }
        let msg =
            SignedEphemeral::seal(&honest, &EphemeralPayload::new(topic, second, now, vec![1]))
                .expect("seal");
        assert!(
            session.receive(&msg, Now::from_secs(now)).is_ok(),
            "second {second}"
        );
        assert!(session.dedup_len() <= CAPACITY);
    }
}

/// The deduplication window's memory, measured against the stated bound
/// (`BASE_BYTES + 25 B x entries + 64 B x shard-seconds`) is the nonce cache's
/// own test (`nonce_cache_memory.rs`); here: the default configuration
/// states the numbers the module docs quote.
#[test]
fn the_default_bounds_are_the_documented_ones() {
    let config = EphemeralConfig::default();
    assert_eq!(config.max_payload, 65_536);
    assert_eq!(config.max_age, Duration::from_secs(30));
    assert_eq!(config.dedup_capacity, 65_536);
    assert_eq!(config.max_remote_topics, 1024);
    // 8 x the default verify budget: a single connection's flood cannot
    // reach an eighth of the capacity per second.
    assert_eq!(
        config.dedup_capacity / 8,
        VerifyBudget::DEFAULT.per_second() as usize
    );
    let bound = bijou_proto::nonce_cache::NonceCache::BASE_BYTES
        + bijou_proto::nonce_cache::NonceCache::BYTES_PER_ENTRY * config.dedup_capacity
        + bijou_proto::nonce_cache::NonceCache::BYTES_PER_SECOND * 61;
    assert!(bound < 1_700_000, "{bound}");
}

/// A wall clock that jumps ahead and then back does not move the window
/// back: the session reads the time as the latest it recorded at, so a
/// message delivered before the jump is judged at that time, stale. (Read
/// at the earlier time instead, it would rest on the replay cache alone,
/// which refuses it only because its floor moved.)
#[test]
fn a_wall_clock_set_back_does_not_let_a_replay_in() {
    let mut session = session_at(1_024);
    let topic = Topic::new([2; 32]);
    session.subscribe(&Topics::one(topic));
    let sender = key(0x31);
    let first = SignedEphemeral::seal(&sender, &EphemeralPayload::new(topic, 1, NOW, vec![1]))
        .expect("seal");
    session
        .receive(&first, Now::from_secs(NOW))
        .expect("delivered once");
    // The clock jumps 100 s ahead; a message then makes the window move.
    let later = SignedEphemeral::seal(
        &sender,
        &EphemeralPayload::new(topic, 2, NOW + 100, vec![2]),
    )
    .expect("seal");
    session
        .receive(&later, Now::from_secs(NOW + 100))
        .expect("delivered");
    // Set back to the first message's time: its replay is still refused.
    let replay = session.receive(&first, Now::from_secs(NOW));
    assert!(
        matches!(
            replay,
            Err(EphemeralRejected::Stale { now, .. }) if now == NOW + 100
        ),
        "{replay:?}"
    );
}
