//! Bounded memory, measured with a counting global allocator.
//!
//! This lives in the framing crate (not the workspace's `tests/`) because the
//! counting allocator (`cap`) is a dev-dependency of this crate: every target
//! in the workspace forbids `unsafe_code`, so the test cannot implement
//! `GlobalAlloc` itself.
//!
//! The allocator is process-wide, so the tests here take a lock and measure
//! only their own thread's work; what the test harness allocates on other
//! threads meanwhile is noise of a few kilobytes.

use std::alloc::System;
use std::sync::{Mutex, MutexGuard};

use bijou_framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_framing::{FrameCodec, DEFAULT_MAX_FRAME_LENGTH};
use bytes::BytesMut;
use cap::Cap;
use tokio_util::codec::Decoder;

/// `FrameCodec`'s documented receive step: 64 KiB ahead of a pending
/// payload (its memory section).
const RESERVE_STEP: usize = 64 * 1024;
/// The fresh buffer a drained large buffer is moved to: 8 KiB (the same
/// section).
const RELEASE_COPY_LIMIT: usize = 8 * 1024;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Decoders standing for this many connections.
const CONNECTIONS: usize = 2_000;

/// Slack per connection over one reserve step: the prefix bytes kept in
/// front of the buffer and allocator rounding.
const SLACK: usize = 64;

/// Allowance for what other threads (the test harness collecting output)
/// allocate while a measurement runs; seen up to about 9 KiB.
const NOISE: usize = 64 * 1024;

fn max_length_prefix<P: LengthPrefix>() -> Vec<u8> {
    let (bytes, n) = P::encode(DEFAULT_MAX_FRAME_LENGTH as u64).unwrap();
    bytes[..n].to_vec()
}

/// Feeds `CONNECTIONS` default decoders one max-length prefix each and
/// returns the bytes they made the process allocate, per connection.
fn bytes_per_idle_connection<P: LengthPrefix>() -> usize {
    let prefix = max_length_prefix::<P>();
    let mut conns: Vec<(FrameCodec<P>, BytesMut)> = (0..CONNECTIONS)
        .map(|_| (FrameCodec::default(), BytesMut::from(&prefix[..])))
        .collect();
    let bound = CONNECTIONS * (RESERVE_STEP + SLACK) + NOISE;
    let before = ALLOCATOR.allocated();
    for (i, (codec, buf)) in conns.iter_mut().enumerate() {
        assert_eq!(codec.decode(buf).unwrap(), None, "only a prefix was sent");
        assert!(buf.is_empty(), "prefix consumed");
        // Fail fast (and free everything) if a decoder reserves the
        // announced 50 MiB instead of one step.
        let grown = ALLOCATOR.allocated().saturating_sub(before);
        assert!(
            grown <= (i + 1) * (RESERVE_STEP + SLACK) + NOISE,
            "{}: {grown} bytes after {} connections",
            P::NAME,
            i + 1
        );
    }
    let grown = ALLOCATOR.allocated().saturating_sub(before);
    assert!(grown <= bound, "{}: {grown} > {bound}", P::NAME);
    // Each connection did get its step: the bound is not vacuous. Checked
    // on the buffers themselves, since the allocator's count is exactly
    // that with nothing to spare (the decoder allocates one step and frees
    // the buffer the prefix arrived in), and another thread freeing memory
    // meanwhile (a finished test's output) would take it below.
    for (i, (_, buf)) in conns.iter().enumerate() {
        assert_eq!(
            buf.capacity(),
            RESERVE_STEP,
            "{}: connection {i} holds no reserve step",
            P::NAME
        );
    }
    assert!(
        grown + NOISE >= CONNECTIONS * (RESERVE_STEP - prefix.len()),
        "{}: {grown}",
        P::NAME
    );
    drop(conns);
    grown / CONNECTIONS
}

#[test]
fn idle_connections_announcing_max_frames_cost_one_reserve_step_each() {
    let _guard = serial();
    let bijou = bytes_per_idle_connection::<Bijou64>();
    let leb = bytes_per_idle_connection::<Leb128>();
    let u32be = bytes_per_idle_connection::<U32Be>();
    println!(
        "{CONNECTIONS} connections each announcing {DEFAULT_MAX_FRAME_LENGTH} bytes: \
         bijou64 {bijou} B, leb128 {leb} B, u32-be {u32be} B per connection \
         (documented: one {RESERVE_STEP} B buffer, the prefix's own buffer freed)"
    );
}

#[test]
fn trickled_payload_grows_with_the_bytes_received() {
    let _guard = serial();
    let mut codec = FrameCodec::new();
    let mut buf = BytesMut::from(&max_length_prefix::<Bijou64>()[..]);
    let before = ALLOCATOR.allocated();
    let chunk = [0x5A; 4096];
    let mut received = 0usize;
    for _ in 0..256 {
        // What `FramedRead` does: make room, read, decode.
        buf.reserve(1);
        buf.extend_from_slice(&chunk);
        received += chunk.len();
        assert_eq!(codec.decode(&mut buf).unwrap(), None);
        let held = ALLOCATOR.allocated().saturating_sub(before);
        assert!(
            held <= 2 * received + RESERVE_STEP + NOISE,
            "{held} bytes held after receiving {received}"
        );
    }
    assert_eq!(buf.len(), received);
}

/// Receives one `len`-byte frame (prefix `P`) in reads of at most `read`
/// bytes into the buffer's spare capacity, as a socket read does, and checks
/// the documented bound after every read: the buffer's capacity and the
/// bytes the process holds for it are at most `2 * received + RESERVE_STEP`
/// (the latter plus allocator noise from other threads), with at least
/// `min(missing, RESERVE_STEP)` spare for the next read. Returns the number
/// of buffer growths.
fn receive_in_reads<P: LengthPrefix>(len: usize, read: usize) -> usize {
    let mut codec = FrameCodec::<P>::default();
    let (prefix, n) = P::encode(len as u64).unwrap();
    let mut buf = BytesMut::from(&prefix[..n]);
    let before = ALLOCATOR.allocated();
    assert_eq!(codec.decode(&mut buf).unwrap(), None);
    assert_eq!(buf.capacity(), RESERVE_STEP, "{}: a bare prefix", P::NAME);
    let chunk = vec![0x3C; read];
    let (mut received, mut growths, mut capacity) = (0, 0, buf.capacity());
    loop {
        let n = read.min(len - received).min(buf.capacity() - buf.len());
        assert!(n > 0, "{}: no spare capacity at {received}", P::NAME);
        buf.extend_from_slice(&chunk[..n]);
        received += n;
        if let Some(frame) = codec.decode(&mut buf).unwrap() {
            assert_eq!(frame.len(), len);
            assert!(frame.iter().all(|&b| b == 0x3C));
            return growths;
        }
        let bound = 2 * received + RESERVE_STEP;
        assert!(
            buf.capacity() <= bound.min(len),
            "{}, {read} B reads: capacity {} after {received} of {len} bytes",
            P::NAME,
            buf.capacity()
        );
        let held = ALLOCATOR.allocated().saturating_sub(before);
        assert!(
            held <= bound + NOISE,
            "{}, {read} B reads: {held} bytes held after {received} of {len} bytes",
            P::NAME
        );
        let missing = len - received;
        assert!(buf.capacity() - buf.len() >= missing.min(RESERVE_STEP));
        if buf.capacity() != capacity {
            growths += 1;
            capacity = buf.capacity();
        }
    }
}

#[test]
fn large_frame_in_small_reads_holds_at_most_twice_received_plus_one_step() {
    let _guard = serial();
    let len = 6 * 1024 * 1024;
    for read in [1000, 4096, 16 * 1024, 64 * 1024] {
        let growths = receive_in_reads::<Bijou64>(len, read);
        // Geometric: `received` more than doubles between growths, from at
        // least one read.
        let most = (len / read).ilog2() as usize + 2;
        println!("{len} B frame in {read} B reads: {growths} growths (at most {most})");
        assert!(growths <= most, "{read} B reads: {growths} growths");
        receive_in_reads::<Leb128>(len, read);
        receive_in_reads::<U32Be>(len, read);
    }
}

/// Decodes one `len`-byte frame followed by `tail` (unread) bytes, drops the
/// frame, and returns how much the decoder's buffer still holds.
fn retained_after_large_frame(len: usize, tail: &[u8]) -> usize {
    let mut codec = FrameCodec::new();
    let before = ALLOCATOR.allocated();
    let mut wire = BytesMut::with_capacity(len + 16);
    bijou_codec::bijou64::encode(len as u64, &mut wire);
    wire.resize(wire.len() + len, 0xC3);
    wire.extend_from_slice(tail);
    let frame = codec.decode(&mut wire).unwrap().unwrap();
    assert_eq!(frame.len(), len);
    assert_eq!(&wire[..], tail);
    drop(frame);
    let held = ALLOCATOR.allocated().saturating_sub(before);
    drop(wire);
    held
}

#[test]
fn large_frame_allocation_is_released_once_the_frame_is_dropped() {
    let _guard = serial();
    let len = 4 * 1024 * 1024;
    for tail in [&[][..], &[0xF9, 0x01][..], &[0x07; 100][..]] {
        let held = retained_after_large_frame(len, tail);
        assert!(
            held <= RELEASE_COPY_LIMIT + NOISE,
            "{held} bytes still held after a {len}-byte frame with {} unread",
            tail.len()
        );
    }
}
