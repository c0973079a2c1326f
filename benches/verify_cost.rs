//! What a peer's forged signatures make the receiver pay, in
//! `verify_strict`s per item: a session receiving one `BatchSyncResponse`
//! of N commits with a given pattern of forgeries, against sequential
//! `verify_strict` (with the same scope and blob checks) of the same
//! items. Deterministic when counted in instructions:
//! `scripts/verify-cost.sh` runs each case under callgrind, counting only
//! the measured function, and prints the ratios.
//!
//! ```text
//! verify_cost session    PATTERN [ITEMS [STEP]]   the session: handle_message, poll_work to the end, poll_event
//! verify_cost sequential PATTERN [ITEMS]          decode, then verify_item for each item in turn
//! verify_cost batch      honest  [ITEMS [BATCH]]  decode, then verify_items in batches of BATCH (the batch price)
//! verify_cost                                     every pattern once, timed on the wall clock (rough)
//! ```
//!
//! PATTERN is `honest`, `1in7` / `1in32` (every 7th / 32nd item forged,
//! starting with the first), `all`, `first` or `last` (one forged item).
//! ITEMS defaults to 1,024 and STEP to the session's default (32); STEP
//! equal to ITEMS is the whole message in a single step. A forged item
//! carries a signature whose `S` differs in its lowest bit: it passes
//! every byte check and fails only the equation, the dearest forgery to
//! refuse.
//!
//! Each run prints how many items were accepted and refused, so the
//! verdicts of the session and of the sequential baseline can be compared.

use std::hint::black_box;
use std::time::Instant;

use bijou_frame::codec::Wire;
use bijou_frame::proto::handshake::{HandshakeConfig, Initiator, Responder};
use bijou_frame::proto::message::{
    Audience, BatchSyncResponse, Message, SedimentreeId, SignedItem, SyncMessage, SyncResult,
};
use bijou_frame::proto::session::{Session, SessionConfig, Work};
use bijou_frame::proto::time::Now;
use bijou_frame::proto::verify_budget::VerifyBudget;
use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity, Signed};
use bijou_test_support::messages::batch_response;
use bytes::Bytes;

const TREE: SedimentreeId = SedimentreeId::new([0x42; 32]);
const PATTERNS: [&str; 6] = ["honest", "1in7", "1in32", "all", "first", "last"];

/// Whether item `i` of `n` is forged under `pattern`.
fn forged(pattern: &str, i: usize, n: usize) -> bool {
    match pattern {
        "honest" => false,
        "1in7" => i.is_multiple_of(7),
        "1in32" => i.is_multiple_of(32),
        "all" => true,
        "first" => i == 0,
        "last" => i + 1 == n,
        other => panic!("unknown pattern {other} (known: {PATTERNS:?})"),
    }
}

/// `item` with the lowest bit of its signature's `S` flipped.
fn forge(
    item: &SignedItem<bijou_frame::proto::message::LooseCommit>,
) -> SignedItem<bijou_frame::proto::message::LooseCommit> {
    let mut wire = item.signed().as_bytes().to_vec();
    let s = wire.len() - 32;
    wire[s] ^= 1;
    let signed = Signed::decode(Bytes::from(wire)).expect("a forged S still decodes");
    SignedItem::new(signed, item.blob().clone())
}

/// The response's frame bytes: `n` commits by 251 signers, forged where
/// `pattern` says.
fn response(pattern: &str, n: usize) -> Bytes {
    let SyncMessage::BatchSyncResponse(mut response) =
        batch_response(TREE, u32::try_from(n).expect("items fit u32"))
    else {
        unreachable!("batch_response makes a BatchSyncResponse");
    };
    let SyncResult::Ok(diff) = &response.result else {
        unreachable!("batch_response makes an Ok response");
    };
    let commits: Vec<_> = diff
        .commits()
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if forged(pattern, i, n) {
                forge(item)
            } else {
                item.clone()
            }
        })
        .collect();
    response.result = SyncResult::Ok(bijou_frame::proto::message::SyncDiff::new(
        commits,
        Vec::new(),
        [],
        [],
    ));
    Message::Sync(SyncMessage::BatchSyncResponse(response))
        .encode()
        .expect("encode")
}

/// A session at the receiving end of a completed handshake, with a budget
/// that never makes it wait.
fn session(step: Option<usize>) -> Session {
    let (alice, bob) = (
        SigningKey::from_bytes(&[1; 32]),
        SigningKey::from_bytes(&[2; 32]),
    );
    let now = Now::from_secs(1_800_000_000);
    let initiator =
        Initiator::new(&alice, Audience::Known(bob.peer_id()), now, [7; 16]).expect("challenge");
    let answer =
        Responder::new(HandshakeConfig::default()).answer(&bob, initiator.challenge().clone(), now);
    let mut session = Session::new(
        bob.peer_id(),
        answer.outcome.expect("accepted"),
        SessionConfig::new([2; 32]),
    );
    session.set_verify_budget(VerifyBudget::new(u32::MAX, u32::MAX));
    if let Some(step) = step {
        session.set_verify_step(step);
    }
    session
}

/// Accepted and refused items.
type Verdict = (usize, usize);

/// The session's whole receive of `bytes`. Counted by callgrind
/// (`--toggle-collect=*measure_session*`).
#[inline(never)]
fn measure_session(session: &mut Session, bytes: Bytes) -> Verdict {
    let now = Now::from_secs(1_800_000_000);
    session
        .handle_message(bytes, now)
        .expect("the session takes it");
    loop {
        match session.poll_work(now) {
            Work::More => {}
            Work::Idle => break,
            Work::Wait(at) => panic!("the budget never waits here, yet: {at:?}"),
        }
    }
    let received = session.poll_event().expect("delivered");
    let verified = received
        .result
        .expect("a response with bad items is delivered")
        .into_sync()
        .expect("a sync message");
    (verified.items.len(), verified.rejected.len())
}

/// The baseline: decode, then one strict check per item. Counted by
/// callgrind (`--toggle-collect=*measure_sequential*`).
#[inline(never)]
fn measure_sequential(bytes: Bytes) -> Verdict {
    let Ok(Message::Sync(message)) = Message::decode(bytes) else {
        panic!("a sync message");
    };
    let (mut good, mut bad) = (0, 0);
    for result in message.verify_each() {
        match result {
            Ok(_) => good += 1,
            Err(_) => bad += 1,
        }
    }
    (good, bad)
}

/// Decode, then batches of `batch` items: the batch price of honest items
/// at that size. Counted by callgrind (`--toggle-collect=*measure_batch*`).
#[inline(never)]
fn measure_batch(bytes: Bytes, batch: usize) -> Verdict {
    let Ok(Message::Sync(message)) = Message::decode(bytes) else {
        panic!("a sync message");
    };
    let n = match &message {
        SyncMessage::BatchSyncResponse(BatchSyncResponse {
            result: SyncResult::Ok(diff),
            ..
        }) => diff.commits().len(),
        _ => 0,
    };
    let (mut good, mut bad) = (0, 0);
    let mut start = 0;
    while start < n {
        let end = (start + batch).min(n);
        for result in message.verify_items(start..end) {
            match result {
                Ok(_) => good += 1,
                Err(_) => bad += 1,
            }
        }
        start = end;
    }
    (good, bad)
}

fn arg(args: &[String], i: usize) -> Option<usize> {
    args.get(i).map(|s| s.parse().expect("a number"))
}

fn main() {
    // `cargo bench` passes `--bench`; only the positional arguments count.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let Some(mode) = args.first() else {
        return rough();
    };
    let pattern = args.get(1).map_or("honest", String::as_str);
    let items = arg(&args, 2).unwrap_or(1_024);
    let bytes = response(pattern, items);
    let (good, bad) = match mode.as_str() {
        "session" => {
            let mut session = session(arg(&args, 3));
            black_box(measure_session(&mut session, black_box(bytes)))
        }
        "sequential" => black_box(measure_sequential(black_box(bytes))),
        "batch" => black_box(measure_batch(black_box(bytes), arg(&args, 3).unwrap_or(32))),
        other => panic!("unknown mode {other} (session, sequential, batch)"),
    };
    println!("{mode} {pattern} items={items} accepted={good} refused={bad}");
}

/// Every pattern once on the wall clock: a rough look, not the figures
/// (those are `scripts/verify-cost.sh`'s instruction counts).
fn rough() {
    let items = 1_024;
    println!("wall-clock, {items} items, rough (scripts/verify-cost.sh counts instructions)");
    for pattern in PATTERNS {
        let bytes = response(pattern, items);
        let t = Instant::now();
        let base = black_box(measure_sequential(bytes.clone()));
        let sequential = t.elapsed().as_secs_f64();
        for (name, step) in [("step 32", None), ("single step", Some(items))] {
            let mut session = session(step);
            let t = Instant::now();
            let got = black_box(measure_session(&mut session, bytes.clone()));
            let cost = t.elapsed().as_secs_f64() / sequential;
            assert_eq!(
                got, base,
                "the session and verify_strict disagree on {pattern}"
            );
            println!("{pattern:>7} {name:<11} {cost:.2} verify_strict per item");
        }
    }
}
