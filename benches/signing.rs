//! The signed pipeline against its physical limit: our `Signed<T>` and
//! `verify_batch` next to bare ed25519-dalek and BLAKE3 on the same bytes,
//! all in one binary.
//!
//! Groups (each lists ours first, then the bare peer):
//!
//! - `seal`: `Signed::seal` vs `SigningKey::sign` over the same message;
//! - `verify`: `Signed::verify_strict` (issuer key decompressed, strict
//!   checks, `Verified` built from the payload decoded with the `Signed`)
//!   vs `VerifyingKey::from_bytes` + `verify_strict`, and vs
//!   `verify_strict` alone on a pre-parsed key;
//! - `verify_batch/<n>` for n = 1, 16, 64, 256: our `verify_batch` (strict
//!   accept set) vs one-by-one bare `verify_strict` vs bare
//!   `ed25519_dalek::verify_batch` (no strict checks; for reference), each
//!   parsing the issuer keys from bytes in the timed region;
//! - `verify_batch_forged/64`: our `verify_batch` with one forged item and
//!   with every item forged (the cost of finding them);
//! - `blake3/<size>` for 64 B, 1 KiB, 64 KiB, 1 MiB: `Blob::digest` vs
//!   `blake3::hash`.
//!
//! Keys come from fixed seeds; payloads are fixed. Ratios: divide the
//! medians in `target/criterion/<group>/<function>/<param>/new/estimates.json`.

use std::hint::black_box;
use std::time::Duration;

use bijou_frame::codec::{ReadError, Reader, Wire, WriteError, Writer};
use bijou_frame::signing::batch::verify_batch;
use bijou_frame::signing::{Blob, Payload, Signed};
use bytes::{BufMut, Bytes};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};

/// Shaped like a LooseCommit: `Tree(32) | BlobDigest(32) | ParentCount u8
/// | BlobSize bijou64 | Parents N×32`.
#[derive(Debug, Clone, PartialEq)]
struct Commit {
    tree: [u8; 32],
    blob_digest: [u8; 32],
    blob_size: u64,
    parents: Vec<[u8; 32]>,
}

impl Payload for Commit {
    const SCHEMA: [u8; 4] = *b"BNC\x00";
}

impl Wire for Commit {
    type Error = ReadError;
    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(&self.tree);
        w.bytes(&self.blob_digest);
        w.count_u8("parents", self.parents.len())?;
        w.bijou64(self.blob_size);
        self.parents.iter().for_each(|p| w.bytes(p));
        Ok(())
    }
    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let tree = r.array("tree")?;
        let blob_digest = r.array("blob_digest")?;
        let count = r.u8("parent_count")?;
        let blob_size = r.bijou64("blob_size")?;
        let parents = r.ascending_arrays("parents", count.into())?;
        Ok(Commit {
            tree,
            blob_digest,
            blob_size,
            parents,
        })
    }
}

fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

fn commit(i: usize) -> Commit {
    let mut tree = [0x5A; 32];
    tree[..8].copy_from_slice(&(i as u64).to_be_bytes());
    Commit {
        tree,
        blob_digest: *blake3::hash(&tree).as_bytes(),
        blob_size: 4096 + i as u64,
        parents: vec![[1; 32], [2; 32]],
    }
}

/// A bare `(key bytes, message, signature)` triple. The key is parsed in
/// the timed region, as ours is (decoding keeps the key bytes;
/// verification decompresses them).
type Triple = ([u8; 32], Vec<u8>, Signature);

/// `n` decoded items from four issuers, and the same as bare triples.
fn batch(n: usize) -> (Vec<Signed<Commit>>, Vec<Triple>) {
    let keys: Vec<SigningKey> = (1..=4).map(key).collect();
    let signed: Vec<Signed<Commit>> = (0..n)
        .map(|i| {
            let wire = Signed::seal(&keys[i % 4], &commit(i)).unwrap().into_bytes();
            Signed::decode(wire).unwrap()
        })
        .collect();
    let bare = signed
        .iter()
        .map(|s| {
            let message = s.as_bytes()[..s.len() - 64].to_vec();
            (*s.peer_id().as_bytes(), message, *s.signature())
        })
        .collect();
    (signed, bare)
}

fn forge(item: &Signed<Commit>) -> Signed<Commit> {
    let mut wire = item.as_bytes().to_vec();
    wire[36] ^= 1;
    Signed::decode(wire.into()).unwrap()
}

fn seal_and_verify(c: &mut Criterion) {
    let key = key(1);
    let payload = commit(7);
    let signed = Signed::seal(&key, &payload).unwrap();
    let message = signed.as_bytes()[..signed.len() - 64].to_vec();
    let signature = *signed.signature();
    let vk = key.verifying_key();

    let mut group = c.benchmark_group("seal");
    group.bench_function("ours", |b| {
        b.iter(|| Signed::seal(black_box(&key), black_box(&payload)).unwrap())
    });
    group.bench_function("dalek_sign", |b| b.iter(|| key.sign(black_box(&message))));
    group.finish();

    let mut group = c.benchmark_group("verify");
    group.bench_function("ours", |b| {
        b.iter(|| black_box(&signed).verify_strict().unwrap())
    });
    group.bench_function("dalek_verify_strict", |b| {
        b.iter(|| {
            vk.verify_strict(black_box(&message), black_box(&signature))
                .unwrap()
        })
    });
    // Ours decompresses the issuer key when verifying (decoding only keeps
    // its bytes), so the like-for-like peer parses the key too.
    let vk_bytes = vk.to_bytes();
    group.bench_function("dalek_key_parse_and_verify_strict", |b| {
        b.iter(|| {
            VerifyingKey::from_bytes(black_box(&vk_bytes))
                .unwrap()
                .verify_strict(black_box(&message), black_box(&signature))
                .unwrap()
        })
    });
    let wire: Bytes = signed.to_bytes();
    group.bench_function("ours_decode_and_verify", |b| {
        b.iter(|| {
            Signed::<Commit>::decode(black_box(wire.clone()))
                .unwrap()
                .verify_strict()
                .unwrap()
        })
    });
    group.finish();
}

fn batches(c: &mut Criterion) {
    let mut group = c.benchmark_group("verify_batch");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(20);
    for n in [1usize, 16, 64, 256] {
        let (signed, bare) = batch(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("ours", n), &signed, |b, items| {
            b.iter(|| {
                let results = verify_batch(black_box(items));
                assert!(results.iter().all(Result::is_ok));
                results
            })
        });
        group.bench_with_input(
            BenchmarkId::new("dalek_verify_strict_each", n),
            &bare,
            |b, items| {
                b.iter(|| {
                    for (key, message, signature) in items {
                        VerifyingKey::from_bytes(black_box(key))
                            .unwrap()
                            .verify_strict(black_box(message), black_box(signature))
                            .unwrap();
                    }
                })
            },
        );
        let messages: Vec<&[u8]> = bare.iter().map(|(_, m, _)| m.as_slice()).collect();
        let signatures: Vec<Signature> = bare.iter().map(|(_, _, s)| *s).collect();
        let key_bytes: Vec<[u8; 32]> = bare.iter().map(|(k, _, _)| *k).collect();
        group.bench_function(BenchmarkId::new("dalek_verify_batch", n), |b| {
            b.iter(|| {
                let keys: Vec<VerifyingKey> = black_box(&key_bytes)
                    .iter()
                    .map(|k| VerifyingKey::from_bytes(k).unwrap())
                    .collect();
                ed25519_dalek::verify_batch(
                    black_box(&messages),
                    black_box(&signatures),
                    black_box(&keys),
                )
                .unwrap()
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("verify_batch_forged");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(20);
    let (good, _) = batch(64);
    group.throughput(Throughput::Elements(64));
    let mut one = good.clone();
    one[37] = forge(&one[37]);
    let all: Vec<Signed<Commit>> = good.iter().map(forge).collect();
    for (name, items, bad) in [("one_forged", &one, 1), ("all_forged", &all, 64)] {
        group.bench_with_input(BenchmarkId::new(name, 64), items, |b, items| {
            b.iter(|| {
                let results = verify_batch(black_box(items));
                assert_eq!(results.iter().filter(|r| r.is_err()).count(), bad);
                results
            })
        });
    }
    group.finish();
}

fn hashing(c: &mut Criterion) {
    let mut group = c.benchmark_group("blake3");
    for (label, size) in [
        ("64B", 64usize),
        ("1KiB", 1024),
        ("64KiB", 64 * 1024),
        ("1MiB", 1024 * 1024),
    ] {
        let bytes: Vec<u8> = (0..size).map(|i| (i * 131 % 251) as u8).collect();
        let blob = Blob::new(bytes.clone());
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(
            BenchmarkId::new("ours_blob_digest", label),
            &blob,
            |b, blob| b.iter(|| black_box(blob).digest()),
        );
        group.bench_with_input(
            BenchmarkId::new("blake3_hash", label),
            &bytes,
            |b, bytes| b.iter(|| blake3::hash(black_box(bytes))),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = seal_and_verify, batches, hashing
}
criterion_main!(benches);
