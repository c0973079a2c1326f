//! Ephemeral (`SUE\0`) receive cost against its physical limit, on the same
//! bytes, in one binary, at 64 B and 4 KiB payloads:
//!
//! - `ours_decode_verify`: `Message::decode` (schema and tag dispatch, strict
//!   decode, the unverified header) then `SignedEphemeral::verify_strict`;
//! - `ours_decode_checks_verify`: the same plus the session's cheap checks
//!   (`EphemeralSession::precheck`: size, age, topic, read-only nonce
//!   probe), what a `Connection` runs before delivering (less the nonce
//!   insert, which would make every later iteration a duplicate);
//! - `dalek_key_parse_verify_strict`: the bare crypto: `VerifyingKey::from_bytes`
//!   on the issuer bytes and `verify_strict` over everything before the
//!   signature;
//! - `subduction_decode_verify`: the peer, `subduction_ephemeral` 0.10's
//!   `EphemeralMessage::try_decode` then `Signed::try_verify` (for
//!   reference; it copies the payload).
//!
//! Ratios: divide the medians in
//! `target/criterion/ephemeral/<function>/<size>/new/estimates.json`.

use bijou_frame::proto::rng::SeededRng;
use bijou_frame::proto::time::Now;
use std::hint::black_box;
use std::time::Duration;

use bijou_frame::codec::Wire;
use bijou_frame::proto::ephemeral::{EphemeralConfig, EphemeralSession};
use bijou_frame::proto::message::{
    EphemeralMessage, EphemeralPayload, Message, SignedEphemeral, Topic, Topics,
};
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use sedimentree_core::codec::decode::Decode;

const NOW: u64 = 1_700_000_000;

fn decode_verify(bytes: &Bytes) -> bool {
    match Message::decode(bytes.clone()) {
        Ok(Message::Ephemeral(EphemeralMessage::Ephemeral(signed))) => {
            signed.verify_strict().is_ok()
        }
        _ => false,
    }
}

fn decode_checks_verify(session: &EphemeralSession, bytes: &Bytes) -> bool {
    match Message::decode(bytes.clone()) {
        Ok(Message::Ephemeral(EphemeralMessage::Ephemeral(signed))) => {
            session.precheck(&signed, Now::from_secs(NOW)).is_ok() && signed.verify_strict().is_ok()
        }
        _ => false,
    }
}

fn bare(bytes: &[u8]) -> bool {
    let Some(issuer) = bytes.get(5..37).and_then(|s| <[u8; 32]>::try_from(s).ok()) else {
        return false;
    };
    let split = bytes.len() - 64;
    let Ok(signature) = Signature::from_slice(&bytes[split..]) else {
        return false;
    };
    VerifyingKey::from_bytes(&issuer)
        .and_then(|key| key.verify_strict(&bytes[..split], &signature))
        .is_ok()
}

fn theirs(bytes: &[u8]) -> bool {
    match subduction_ephemeral::message::EphemeralMessage::try_decode(bytes) {
        Ok(subduction_ephemeral::message::EphemeralMessage::Ephemeral(signed)) => {
            signed.try_verify().is_ok()
        }
        _ => false,
    }
}

fn receive(c: &mut Criterion) {
    let key = SigningKey::from_bytes(&[7; 32]);
    let topic = Topic::new([3; 32]);
    let mut session =
        EphemeralSession::new(EphemeralConfig::default(), SeededRng::from_seed([6; 32]));
    session.subscribe(&Topics::one(topic));

    let mut group = c.benchmark_group("ephemeral");
    for (label, size) in [("64B", 64usize), ("4KiB", 4096)] {
        let payload: Vec<u8> = (0..size).map(|i| (i * 131 % 251) as u8).collect();
        let sealed = SignedEphemeral::seal(&key, &EphemeralPayload::new(topic, 42, NOW, payload))
            .expect("seal");
        let bytes = sealed.to_bytes();
        assert!(decode_verify(&bytes) && decode_checks_verify(&session, &bytes));
        assert!(bare(&bytes) && theirs(&bytes));
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(
            BenchmarkId::new("ours_decode_verify", label),
            &bytes,
            |b, bytes| b.iter(|| decode_verify(black_box(bytes))),
        );
        group.bench_with_input(
            BenchmarkId::new("ours_decode_checks_verify", label),
            &bytes,
            |b, bytes| b.iter(|| decode_checks_verify(&session, black_box(bytes))),
        );
        group.bench_with_input(
            BenchmarkId::new("dalek_key_parse_verify_strict", label),
            &bytes,
            |b, bytes| b.iter(|| bare(black_box(bytes))),
        );
        group.bench_with_input(
            BenchmarkId::new("subduction_decode_verify", label),
            &bytes,
            |b, bytes| b.iter(|| theirs(black_box(bytes))),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = receive
}
criterion_main!(benches);
