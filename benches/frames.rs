//! Frame throughput: `FrameCodec` with each length prefix against
//! tokio-util's `LengthDelimitedCodec` and unsigned-varint's `UviBytes`
//! framing, all in one binary, on the same frames.
//!
//! Peers (criterion function names):
//!
//! - `bijou64`, `leb128`, `u32be`: `FrameCodec<Bijou64>`, `<Leb128>`, `<U32Be>`;
//! - `ldc`: `LengthDelimitedCodec` (4-byte big-endian prefix), what users
//!   would otherwise pick;
//! - `uvi`: unsigned-varint's `UviBytes` framing (unsigned LEB128 prefix),
//!   ported below line for line because the workspace's `unsigned-varint`
//!   dev-dependency does not enable its `codec` feature.
//!
//! Every peer gets a 50 MiB maximum. Workloads (seed `0xBEEF_CAFE_DEAD_F00D`):
//!
//! - `tiny`: 16 384 payloads of 0–247 bytes;
//! - `small`: 128 payloads of 248 B–64 KiB;
//! - `sync-mix`: 4 096 payloads of 100 B–2 KiB, each 1 MiB with
//!   probability 1/1000 (the seed gives several);
//! - `1mib`: 8 payloads of 1 MiB;
//! - `varint-dense`: 512 payloads of 256 integers from the codec bench's
//!   `mixed` distribution (a uniformly random bijou64 tier per value, then a
//!   uniform value in it), bijou64-encoded for `bijou64` and LEB128-encoded
//!   for `leb128`; decoding includes decoding the integers.
//!
//! Groups (all under `frames/`, so that criterion's directories do not
//! collide with the varint shootout's `decode/<distribution>` ones, which it
//! would also name `decode_tiny`):
//!
//! - `decode_<workload>`: the stream arrives in 64 KiB reads appended to a
//!   buffer that starts at 8 KiB (as `FramedRead`'s does); after each read
//!   every complete frame is decoded and dropped. This includes the copy a
//!   transport read makes and each codec's buffer-reservation policy.
//! - `decode-buffered_tiny`: the whole stream is already in the buffer
//!   (copied outside the timed region): prefix parsing and splitting only.
//! - `encode_<workload>`: every frame appended to a reused, pre-sized buffer;
//!   `ldc_again` is LDC's loop a second time, a control for the ratios.
//!
//! Run with
//! `cargo bench -p bijou-frame-benches --bench frames -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::io;

use bijou_codec::{bijou64, leb128};
use bijou_framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_framing::FrameCodec;
use bytes::{Buf, Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

const SEED: u64 = 0xBEEF_CAFE_DEAD_F00D;
const MAX: usize = 50 * 1024 * 1024;
const READ: usize = 64 * 1024;
const INITIAL_CAPACITY: usize = 8 * 1024;
const MIB: usize = 1024 * 1024;
const VALUES_PER_FRAME: usize = 256;

/// `unsigned_varint::codec::UviBytes<Bytes>` (0.8.0), ported: same varint
/// decoder, same state, same reservation of the whole announced frame.
#[derive(Default)]
struct Uvi {
    len: Option<usize>,
}

impl Decoder for Uvi {
    type Item = BytesMut;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> io::Result<Option<BytesMut>> {
        if self.len.is_none() {
            self.len = match unsigned_varint::decode::usize(src.as_ref()) {
                Ok((n, rest)) => {
                    let consumed = src.len() - rest.len();
                    src.advance(consumed);
                    Some(n)
                }
                Err(unsigned_varint::decode::Error::Insufficient) => return Ok(None),
                Err(_) => return Err(io::Error::other("invalid varint")),
            };
        }
        if let Some(n) = self.len.take() {
            if n > MAX {
                return Err(io::Error::new(io::ErrorKind::PermissionDenied, "len > max"));
            }
            if n <= src.len() {
                return Ok(Some(src.split_to(n)));
            }
            let add = n - src.len();
            src.reserve(add);
            self.len = Some(n);
        }
        Ok(None)
    }
}

impl Encoder<&[u8]> for Uvi {
    type Error = io::Error;

    fn encode(&mut self, item: &[u8], dst: &mut BytesMut) -> io::Result<()> {
        if item.len() > MAX {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "len > max when encoding",
            ));
        }
        let mut buf = unsigned_varint::encode::usize_buffer();
        dst.extend_from_slice(unsigned_varint::encode::usize(item.len(), &mut buf));
        dst.reserve(item.len());
        dst.extend_from_slice(item);
        Ok(())
    }
}

fn ldc() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(MAX)
        .new_codec()
}

fn ours<P: LengthPrefix>(prefix: P) -> FrameCodec<P> {
    FrameCodec::builder()
        .prefix(prefix)
        .max_frame_length(MAX)
        .new_codec()
}

struct Workload {
    name: &'static str,
    frames: Vec<Bytes>,
}

impl Workload {
    fn payload_bytes(&self) -> usize {
        self.frames.iter().map(Bytes::len).sum()
    }
}

fn payloads(
    rng: &mut SmallRng,
    count: usize,
    mut len: impl FnMut(&mut SmallRng) -> usize,
) -> Vec<Bytes> {
    (0..count)
        .map(|_| {
            let n = len(rng);
            let mut payload = vec![0u8; n];
            rng.fill(&mut payload[..]);
            Bytes::from(payload)
        })
        .collect()
}

fn workloads() -> Vec<Workload> {
    let mut rng = SmallRng::seed_from_u64(SEED);
    vec![
        Workload {
            name: "tiny",
            frames: payloads(&mut rng, 16_384, |r| r.random_range(0..=247)),
        },
        Workload {
            name: "small",
            frames: payloads(&mut rng, 128, |r| r.random_range(248..=64 * 1024)),
        },
        Workload {
            name: "sync-mix",
            frames: payloads(&mut rng, 4_096, |r| {
                if r.random_ratio(1, 1000) {
                    MIB
                } else {
                    r.random_range(100..=2048)
                }
            }),
        },
        Workload {
            name: "1mib",
            frames: payloads(&mut rng, 8, |_| MIB),
        },
    ]
}

/// The codec bench's `mixed` distribution: a uniform bijou64 tier, then a
/// uniform value inside it.
fn mixed_values(count: usize) -> Vec<u64> {
    let mut rng = SmallRng::seed_from_u64(SEED);
    (0..count)
        .map(|_| {
            let tier = rng.random_range(0..=8);
            let low = bijou64::OFFSETS[tier];
            let high = bijou64::OFFSETS
                .get(tier + 1)
                .map_or(u64::MAX, |next| next - 1);
            rng.random_range(low..=high)
        })
        .collect()
}

fn encode_stream<E>(codec: &mut E, frames: &[Bytes]) -> BytesMut
where
    E: for<'a> Encoder<&'a [u8]>,
    for<'a> <E as Encoder<&'a [u8]>>::Error: std::fmt::Debug,
{
    let mut wire = BytesMut::new();
    for frame in frames {
        codec.encode(&frame[..], &mut wire).expect("encodable");
    }
    wire
}

/// Feeds `wire` in 64 KiB reads; decodes and drops every frame. Returns
/// (frames, payload bytes) so that nothing is optimised away.
#[inline(never)]
fn decode_streamed<D>(codec: &mut D, wire: &[u8]) -> (usize, usize)
where
    D: Decoder,
    D::Item: AsRef<[u8]>,
    D::Error: std::fmt::Debug,
{
    let mut buf = BytesMut::with_capacity(INITIAL_CAPACITY);
    let (mut frames, mut bytes) = (0, 0);
    for read in wire.chunks(READ) {
        buf.extend_from_slice(read);
        while let Some(frame) = codec.decode(&mut buf).expect("valid stream") {
            frames += 1;
            bytes += black_box(frame).as_ref().len();
        }
    }
    (frames, bytes)
}

#[inline(never)]
fn decode_buffered<D>(codec: &mut D, mut buf: BytesMut) -> (usize, usize)
where
    D: Decoder,
    D::Item: AsRef<[u8]>,
    D::Error: std::fmt::Debug,
{
    let (mut frames, mut bytes) = (0, 0);
    while let Some(frame) = codec.decode(&mut buf).expect("valid stream") {
        frames += 1;
        bytes += black_box(frame).as_ref().len();
    }
    (frames, bytes)
}

#[inline(never)]
fn encode_into<E>(codec: &mut E, frames: &[Bytes], dst: &mut BytesMut)
where
    E: for<'a> Encoder<&'a [u8]>,
    for<'a> <E as Encoder<&'a [u8]>>::Error: std::fmt::Debug,
{
    dst.clear();
    for frame in frames {
        codec.encode(black_box(&frame[..]), dst).expect("encodable");
    }
}

fn bench_decode_peer<D>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    mut codec: D,
    wire: &[u8],
    expect: (usize, usize),
) where
    D: Decoder,
    D::Item: AsRef<[u8]>,
    D::Error: std::fmt::Debug,
{
    assert_eq!(decode_streamed(&mut codec, wire), expect, "{id}");
    group.bench_function(id, |b| {
        b.iter(|| decode_streamed(&mut codec, black_box(wire)))
    });
}

fn bench_encode_peer<E>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    mut codec: E,
    frames: &[Bytes],
) where
    E: for<'a> Encoder<&'a [u8]>,
    for<'a> <E as Encoder<&'a [u8]>>::Error: std::fmt::Debug,
{
    let mut dst = BytesMut::with_capacity(encode_stream(&mut codec, frames).len());
    group.bench_function(id, |b| {
        b.iter(|| {
            encode_into(&mut codec, frames, &mut dst);
            black_box(dst.len())
        })
    });
}

fn frame_throughput(c: &mut Criterion) {
    for workload in workloads() {
        let frames = &workload.frames;
        let expect = (frames.len(), workload.payload_bytes());
        eprintln!(
            "workload {}: frames={} payload_bytes={}",
            workload.name, expect.0, expect.1
        );
        let wires = [
            ("bijou64", encode_stream(&mut ours(Bijou64), frames)),
            ("leb128", encode_stream(&mut ours(Leb128), frames)),
            ("u32be", encode_stream(&mut ours(U32Be), frames)),
            ("ldc", encode_stream(&mut ldc(), frames)),
            ("uvi", encode_stream(&mut Uvi::default(), frames)),
        ];
        let wire = |name: &str| &wires.iter().find(|(n, _)| *n == name).expect("peer").1[..];

        let mut group = c.benchmark_group(format!("frames/decode_{}", workload.name));
        group.throughput(Throughput::Elements(expect.0 as u64));
        group.sampling_mode(SamplingMode::Flat).sample_size(40);
        bench_decode_peer(
            &mut group,
            "bijou64",
            ours(Bijou64),
            wire("bijou64"),
            expect,
        );
        bench_decode_peer(&mut group, "leb128", ours(Leb128), wire("leb128"), expect);
        bench_decode_peer(&mut group, "u32be", ours(U32Be), wire("u32be"), expect);
        bench_decode_peer(&mut group, "ldc", ldc(), wire("ldc"), expect);
        bench_decode_peer(&mut group, "uvi", Uvi::default(), wire("uvi"), expect);
        group.finish();

        if workload.name == "tiny" {
            let mut group = c.benchmark_group("frames/decode-buffered_tiny");
            group.throughput(Throughput::Elements(expect.0 as u64));
            group.sampling_mode(SamplingMode::Flat).sample_size(40);
            macro_rules! buffered {
                ($id:literal, $codec:expr) => {{
                    let mut codec = $codec;
                    let wire = wire($id);
                    assert_eq!(decode_buffered(&mut codec, BytesMut::from(wire)), expect);
                    group.bench_function($id, |b| {
                        b.iter_batched(
                            || BytesMut::from(wire),
                            |buf| decode_buffered(&mut codec, buf),
                            BatchSize::LargeInput,
                        )
                    });
                }};
            }
            buffered!("bijou64", ours(Bijou64));
            buffered!("leb128", ours(Leb128));
            buffered!("u32be", ours(U32Be));
            buffered!("ldc", ldc());
            buffered!("uvi", Uvi::default());
            group.finish();
        }

        let mut group = c.benchmark_group(format!("frames/encode_{}", workload.name));
        group.throughput(Throughput::Elements(expect.0 as u64));
        group.sampling_mode(SamplingMode::Flat).sample_size(40);
        bench_encode_peer(&mut group, "bijou64", ours(Bijou64), frames);
        bench_encode_peer(&mut group, "leb128", ours(Leb128), frames);
        bench_encode_peer(&mut group, "u32be", ours(U32Be), frames);
        bench_encode_peer(&mut group, "ldc", ldc(), frames);
        // The control: LDC's loop a second time, so a ratio to LDC can be
        // told apart from where a loop happens to land.
        bench_encode_peer(&mut group, "ldc_again", ldc(), frames);
        bench_encode_peer(&mut group, "uvi", Uvi::default(), frames);
        group.finish();
    }
}

/// Integers per frame, encoded with one varint family, then framed with
/// the matching prefix.
#[inline(never)]
fn dense_encode<P: LengthPrefix>(
    codec: &mut FrameCodec<P>,
    values: &[u64],
    encode_slice: fn(&[u64], &mut [u8]) -> Result<usize, bijou_codec::BufferTooSmall>,
    scratch: &mut [u8],
    dst: &mut BytesMut,
) {
    dst.clear();
    for frame in values.chunks(VALUES_PER_FRAME) {
        let n = encode_slice(frame, scratch).expect("scratch is sized for MAX_LEN per value");
        codec.encode(&scratch[..n], dst).expect("encodable");
    }
}

/// Streams the frames in and decodes every integer of every payload.
#[inline(never)]
fn dense_decode<P: LengthPrefix>(
    codec: &mut FrameCodec<P>,
    wire: &[u8],
    decode_payload: impl Fn(&[u8]) -> (usize, u64),
) -> (usize, u64) {
    let mut buf = BytesMut::with_capacity(INITIAL_CAPACITY);
    let (mut count, mut sum) = (0usize, 0u64);
    for read in wire.chunks(READ) {
        buf.extend_from_slice(read);
        while let Some(frame) = codec.decode(&mut buf).expect("valid stream") {
            let (n, s) = decode_payload(&frame);
            count += n;
            sum = sum.wrapping_add(s);
        }
    }
    (count, sum)
}

/// Count and wrapping sum of a payload of concatenated bijou64 values.
#[inline(always)]
fn bijou_payload(payload: &[u8]) -> (usize, u64) {
    let (mut count, mut sum) = (0usize, 0u64);
    for value in bijou64::decode_iter(payload) {
        sum = sum.wrapping_add(value.expect("valid bijou64"));
        count += 1;
    }
    (count, sum)
}

/// Count and wrapping sum of a payload of concatenated canonical LEB128 values.
#[inline(always)]
fn leb_payload(payload: &[u8]) -> (usize, u64) {
    let (mut count, mut sum) = (0usize, 0u64);
    for value in leb128::decode_iter(payload) {
        sum = sum.wrapping_add(value.expect("valid LEB128"));
        count += 1;
    }
    (count, sum)
}

fn varint_dense(c: &mut Criterion) {
    const FRAMES: usize = 512;
    let values = mixed_values(FRAMES * VALUES_PER_FRAME);
    let expected_sum = values.iter().fold(0u64, |a, &v| a.wrapping_add(v));
    let mut scratch = vec![0u8; VALUES_PER_FRAME * leb128::MAX_LEN];

    let mut bijou_wire = BytesMut::new();
    dense_encode(
        &mut ours(Bijou64),
        &values,
        bijou64::encode_slice,
        &mut scratch,
        &mut bijou_wire,
    );
    let mut leb_wire = BytesMut::new();
    dense_encode(
        &mut ours(Leb128),
        &values,
        leb128::encode_slice,
        &mut scratch,
        &mut leb_wire,
    );
    eprintln!(
        "workload varint-dense: frames={FRAMES} values={} payload_bytes bijou64={} leb128={}",
        values.len(),
        bijou_wire.len(),
        leb_wire.len()
    );

    let mut group = c.benchmark_group("frames/decode_varint-dense");
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.sampling_mode(SamplingMode::Flat).sample_size(40);
    let mut codec = ours(Bijou64);
    assert_eq!(
        dense_decode(&mut codec, &bijou_wire, bijou_payload),
        (values.len(), expected_sum)
    );
    group.bench_function("bijou64", |b| {
        b.iter(|| dense_decode(&mut codec, black_box(&bijou_wire), bijou_payload))
    });
    let mut codec = ours(Leb128);
    assert_eq!(
        dense_decode(&mut codec, &leb_wire, leb_payload),
        (values.len(), expected_sum)
    );
    group.bench_function("leb128", |b| {
        b.iter(|| dense_decode(&mut codec, black_box(&leb_wire), leb_payload))
    });
    group.finish();

    let mut group = c.benchmark_group("frames/encode_varint-dense");
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.sampling_mode(SamplingMode::Flat).sample_size(40);
    let mut dst = BytesMut::with_capacity(leb_wire.len());
    let mut codec = ours(Bijou64);
    group.bench_function("bijou64", |b| {
        b.iter(|| {
            dense_encode(
                &mut codec,
                black_box(&values),
                bijou64::encode_slice,
                &mut scratch,
                &mut dst,
            );
            black_box(dst.len())
        })
    });
    let mut codec = ours(Leb128);
    group.bench_function("leb128", |b| {
        b.iter(|| {
            dense_encode(
                &mut codec,
                black_box(&values),
                leb128::encode_slice,
                &mut scratch,
                &mut dst,
            );
            black_box(dst.len())
        })
    });
    group.finish();
}

criterion_group!(benches, frame_throughput, varint_dense);
criterion_main!(benches);
