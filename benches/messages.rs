//! The message pipeline against its physical limit: a LooseCommit sync
//! message (2 parents, 1 head) with a 1 KiB and a 64 KiB blob, received
//! through `MessageCodec` (bijou64 prefix), next to the bare cryptography
//! on the same bytes.
//!
//! Groups, per blob size (`1KiB`, `64KiB`):
//!
//! - `messages_decode/<size>`: `MessageCodec::decode` of one frame to a
//!   typed `Message` (no verification). Throughput is one element, so
//!   criterion prints messages/s. Next to it:
//!   - `message_decode`: `Message::decode` of the frame's bytes (no prefix);
//!   - `subduction_core`: the peer, `subduction_core` 0.20's
//!     `SyncMessage::try_decode` of the same bytes;
//!   - `issuer_key_parse`: `VerifyingKey::from_bytes` of the same issuer
//!     bytes alone, the point decompression that decoding no longer pays
//!     (verification does).
//! - `messages_decode/batch<n>` (`n` = 16, 256): a `BatchSyncResponse`
//!   carrying `n` commits (64-byte blobs, 251 signers), the message made of
//!   many small fields (per commit: schema, issuer, tree, head, blob digest,
//!   parent count, blob size, signature, blob length, blob; the two sizes
//!   are bijou64). `message_decode` is
//!   `Message::decode` of its bytes, `subduction_core` the peer's
//!   `try_decode`; throughput is `n` elements, so criterion prints
//!   commits/s. Every bijou64 field goes through `Reader::bijou64`.
//! - `messages_encode/<size>`: `MessageCodec::encode` of the message into a
//!   reused frame buffer (prefix and message written in place), next to
//!   `subduction_core`'s `encode` of the same message to a `Vec`, that
//!   loop again as a control (`subduction_core_again`: a ratio within the
//!   two copies' spread cannot be told apart from 1.0), and `wire_len`,
//!   our length pass alone; `messages_encode/batch<n>` the same for the
//!   batch responses above (throughput `n` commits).
//! - `messages_verify/<size>`:
//!   - `pipeline`: `MessageCodec::decode` + `BlobMessage::verify` (strict
//!     signature, scope binding, blob size and BLAKE3 digest);
//!   - `bare_crypto`: on the same frame's bytes at known offsets,
//!     `VerifyingKey::from_bytes` + `verify_strict` + `blake3::hash` of the
//!     blob: the floor any receiver pays.
//!
//! Each iteration gets its own copy of the frame (made outside the timed
//! region), as a decoder consumes its input. Keys and payloads are fixed.
//! Ratios: divide the medians in
//! `target/criterion/<group>/<function>/<size>/new/estimates.json`.

use std::hint::black_box;
use std::time::Duration;

use bijou_frame::codec::Wire;
use bijou_frame::net::MessageCodec;
use bijou_frame::proto::message::{Message, SedimentreeId, SyncMessage};
use bijou_test_support::messages::{
    batch_response, fixed_commit_message, frame, signed_item_offset,
};
use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use ed25519_dalek::{Signature, VerifyingKey};
use subduction_core::connection::message as theirs;
use tokio_util::codec::{Decoder, Encoder};

struct Fixture {
    msg: Message,
    frame: BytesMut,
    /// Offsets into `frame`: the signed message, the signature, the blob.
    signed: std::ops::Range<usize>,
    blob: std::ops::Range<usize>,
}

fn fixture(blob_len: usize) -> Fixture {
    // 2 parents, 1 head.
    let msg = Message::Sync(fixed_commit_message(2, 1, blob_len));
    let mut frame = BytesMut::new();
    MessageCodec::new().encode(&msg, &mut frame).unwrap();
    let prefix = frame.len() - msg.encode().unwrap().len();
    let signed_start = prefix + signed_item_offset(1);
    let signed_len = 4 + 32 + 32 * 3 + 1 + bijou_len(blob_len) + 2 * 32 + 64;
    let blob_start = frame.len() - blob_len;
    Fixture {
        msg,
        frame,
        signed: signed_start..signed_start + signed_len,
        blob: blob_start..blob_start + blob_len,
    }
}

fn bijou_len(v: usize) -> usize {
    let mut out = Vec::new();
    bijou_frame::codec::bijou64::encode_to_vec(v as u64, &mut out);
    out.len()
}

fn pipeline(codec: &mut MessageCodec, mut frame: BytesMut) -> bool {
    let Some(Ok(Message::Sync(SyncMessage::LooseCommit(m)))) =
        codec.decode(&mut frame).unwrap().map(|f| f.message)
    else {
        return false;
    };
    m.verify().is_ok()
}

fn bare_crypto(
    frame: &[u8],
    signed: &std::ops::Range<usize>,
    blob: &std::ops::Range<usize>,
) -> bool {
    let bytes = &frame[signed.clone()];
    let (message, sig) = bytes.split_at(bytes.len() - 64);
    let issuer: &[u8; 32] = message[4..36].try_into().unwrap();
    let Ok(key) = VerifyingKey::from_bytes(issuer) else {
        return false;
    };
    let sig = Signature::from_bytes(sig.try_into().unwrap());
    let ok = key.verify_strict(message, &sig).is_ok();
    let digest = blake3::hash(&frame[blob.clone()]);
    ok && digest.as_bytes()[..] == message[100..132]
}

/// Decoding a batch response: many commits, each a handful of small fields.
fn batch_decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("messages_decode");
    for commits in [16u32, 256] {
        let bytes = frame(&batch_response(SedimentreeId::new([0x42; 32]), commits));
        let name = format!("batch{commits}");
        let decoded = Message::decode(bytes.clone()).unwrap();
        assert!(matches!(
            decoded,
            Message::Sync(SyncMessage::BatchSyncResponse(_))
        ));
        let their_wire = bytes.to_vec();
        assert!(theirs::SyncMessage::try_decode(&their_wire).is_ok());
        group.throughput(Throughput::Elements(commits.into()));
        group.bench_function(BenchmarkId::new("message_decode", &name), |b| {
            b.iter(|| black_box(Message::decode(black_box(bytes.clone())).is_ok()))
        });
        group.bench_function(BenchmarkId::new("subduction_core", &name), |b| {
            b.iter(|| black_box(theirs::SyncMessage::try_decode(black_box(&their_wire)).is_ok()))
        });
    }
    group.finish();
}

/// Encoding the same batch responses: ours into a reused frame buffer, the
/// peer's to a `Vec`, the peer's loop again as a control.
fn batch_encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("messages_encode");
    for commits in [16u32, 256] {
        let bytes = frame(&batch_response(SedimentreeId::new([0x42; 32]), commits));
        let name = format!("batch{commits}");
        let msg = Message::decode(bytes.clone()).unwrap();
        let theirs = theirs::SyncMessage::try_decode(&bytes).unwrap();
        assert_eq!(theirs.encode(), bytes.to_vec(), "the same bytes both ways");
        let mut codec = MessageCodec::new();
        let mut dst = BytesMut::with_capacity(2 * bytes.len() + 1024);
        group.throughput(Throughput::Elements(commits.into()));
        group.bench_function(BenchmarkId::from_parameter(&name), |b| {
            b.iter(|| {
                dst.clear();
                codec.encode(black_box(&msg), &mut dst).unwrap();
                black_box(dst.len())
            })
        });
        group.bench_function(BenchmarkId::new("subduction_core", &name), |b| {
            b.iter(|| black_box(black_box(&theirs).encode().len()))
        });
        group.bench_function(BenchmarkId::new("subduction_core_again", &name), |b| {
            b.iter(|| black_box(black_box(&theirs).encode().len()))
        });
        group.bench_function(BenchmarkId::new("wire_len", &name), |b| {
            b.iter(|| black_box(black_box(&msg).wire_len().unwrap()))
        });
    }
    group.finish();
}

fn benches(c: &mut Criterion) {
    for (name, len) in [("1KiB", 1024), ("64KiB", 64 * 1024)] {
        let fx = fixture(len);
        assert!(pipeline(&mut MessageCodec::new(), fx.frame.clone()));
        assert!(bare_crypto(&fx.frame, &fx.signed, &fx.blob));

        let mut group = c.benchmark_group("messages_decode");
        group.throughput(Throughput::Elements(1));
        let mut codec = MessageCodec::new();
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_batched(
                || fx.frame.clone(),
                |mut frame| black_box(codec.decode(&mut frame).unwrap()),
                BatchSize::SmallInput,
            )
        });
        let message_bytes =
            Bytes::copy_from_slice(&fx.frame[fx.frame.len() - fx.msg.encode().unwrap().len()..]);
        group.bench_function(BenchmarkId::new("message_decode", name), |b| {
            b.iter(|| black_box(Message::decode(black_box(message_bytes.clone())).is_ok()))
        });
        let their_wire = message_bytes.to_vec();
        assert!(theirs::SyncMessage::try_decode(&their_wire).is_ok());
        group.bench_function(BenchmarkId::new("subduction_core", name), |b| {
            b.iter(|| black_box(theirs::SyncMessage::try_decode(black_box(&their_wire)).is_ok()))
        });
        let issuer: [u8; 32] = fx.frame[fx.signed.start + 4..fx.signed.start + 36]
            .try_into()
            .unwrap();
        group.bench_function(BenchmarkId::new("issuer_key_parse", name), |b| {
            b.iter(|| black_box(VerifyingKey::from_bytes(black_box(&issuer)).is_ok()))
        });
        group.finish();

        let mut group = c.benchmark_group("messages_encode");
        group.throughput(Throughput::Elements(1));
        let mut dst = BytesMut::with_capacity(2 * len + 1024);
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                dst.clear();
                codec.encode(black_box(&fx.msg), &mut dst).unwrap();
                black_box(dst.len())
            })
        });
        group.bench_function(BenchmarkId::new("subduction_core", name), |b| {
            let decoded = theirs::SyncMessage::try_decode(&their_wire).unwrap();
            b.iter(|| black_box(black_box(&decoded).encode().len()))
        });
        // The control: the peer's loop a second time, so the ratio can be
        // told apart from where a loop happens to land.
        group.bench_function(BenchmarkId::new("subduction_core_again", name), |b| {
            let decoded = theirs::SyncMessage::try_decode(&their_wire).unwrap();
            b.iter(|| black_box(black_box(&decoded).encode().len()))
        });
        // Where ours goes: the length pass alone.
        group.bench_function(BenchmarkId::new("wire_len", name), |b| {
            b.iter(|| black_box(black_box(&fx.msg).wire_len().unwrap()))
        });
        group.finish();

        let mut group = c.benchmark_group("messages_verify");
        group.bench_function(BenchmarkId::new("pipeline", name), |b| {
            b.iter_batched(
                || fx.frame.clone(),
                |frame| black_box(pipeline(&mut codec, frame)),
                BatchSize::SmallInput,
            )
        });
        group.bench_function(BenchmarkId::new("bare_crypto", name), |b| {
            b.iter_batched(
                || fx.frame.clone(),
                |frame| black_box(bare_crypto(&frame, &fx.signed, &fx.blob)),
                BatchSize::SmallInput,
            )
        });
        group.finish();
    }
}

criterion_group! {
    name = message_benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = benches, batch_decode, batch_encode
}
criterion_main!(message_benches);
