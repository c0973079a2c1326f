//! The heap every decoder of this crate uses, measured with a counting
//! allocator: while decoding, and held by what it decoded, at most
//! `DECODE_HEAP_PER_BYTE` (4) times the input's bytes plus
//! `DECODE_HEAP_CONSTANT` (4 KiB), the bound `bijou_codec::wire` states.
//!
//! Random messages say little about that bound: what multiplies memory is
//! many small elements, each taking more room in memory than on the wire.
//! So every decoder is measured on inputs built to hold as many elements
//! as their bytes allow (the shortest element of each list, as many as
//! the format's counts take), at the largest counts and, by proptest, at
//! every count in between; and on the one refusal that used to cost the
//! most (keyhive events of zero bytes, 33x before `MIN_EVENT_LEN`).
//!
//! Decoders: `SUM\0` (every tag), `SUH\0` (every kind), `SUE\0` (every
//! tag), `SUK\0` (every keyhive message kind), a standalone
//! `Signed<LooseCommit>`, `Signed<Fragment>` and `Signed<BlobStatement>`
//! (a `bijou blob` signature file), and a keyhive root delegation event.
//! `cargo test -p bijou-proto --test decode_memory -- --nocapture` prints
//! each worst case's ratio of peak heap to input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use bijou_codec::{Wire, DECODE_HEAP_CONSTANT, DECODE_HEAP_PER_BYTE};
use bijou_proto::keyhive::MIN_EVENT_LEN;
use bijou_proto::keyhive::{
    Access, ContactCardJson, DocumentKey, Grantee, KeyhiveError, KeyhiveMessage, KeyhivePeer,
    RootDelegation, SignedKeyhive, SukMessage,
};
use bijou_proto::message::{
    Audience, BatchSyncRequest, BatchSyncResponse, BlobMessage, Challenge, Checkpoint, CommitId,
    DataRequestRejected, EphemeralMessage, EphemeralPayload, Fingerprint, FingerprintSeed,
    Fragment, HandshakeMessage, HeadsUpdate, LooseCommit, Message, Rejection, RejectionReason,
    RemoteHeads, Response, SedimentreeId, SignedEphemeral, SignedItem, SyncDiff, SyncMessage,
    SyncResult, Topic, Topics,
};
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::{Blob, BlobStatement, Identity, Payload, PeerId, Signed};
use bijou_test_support::heap::{self, Alone, Bound, PeakAlloc, Usage};
use bytes::Bytes;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

const BOUND: Bound = Bound {
    per_byte: DECODE_HEAP_PER_BYTE,
    constant: DECODE_HEAP_CONSTANT,
};

fn key() -> SigningKey {
    SigningKey::from_bytes(&[0x42; 32])
}

fn tree() -> SedimentreeId {
    SedimentreeId::new([7; 32])
}

/// The `i`th of many distinct 32-byte ids, ascending with `i`.
fn id(i: usize) -> [u8; 32] {
    let mut id = [0u8; 32];
    id[..8].copy_from_slice(&(i as u64).to_be_bytes());
    id
}

// ---- inputs with the most elements their bytes allow ----------------------

/// `n` distinct signed payloads made from one sealed `payload` by writing
/// `i` into the 32 bytes at `at` (decoding does not check the signature,
/// so one seal serves them all; sealing thousands would take seconds).
fn many_signed<T: Payload>(payload: &T, at: usize, n: usize) -> Vec<Signed<T>> {
    let sealed = Signed::seal(&key(), payload).unwrap().into_bytes().to_vec();
    (0..n)
        .map(|i| {
            let mut bytes = sealed.clone();
            bytes[at..at + 32].copy_from_slice(&id(i));
            Signed::<T>::decode(Bytes::from(bytes)).unwrap()
        })
        .collect()
}

/// Where a signed commit's or fragment's head starts: schema 4, issuer
/// 32, tree 32.
const HEAD_AT: usize = 4 + 32 + 32;

fn empty_blob() -> Blob {
    Blob::from(Vec::new())
}

/// `n` commits with no parents and an empty blob: the shortest item.
fn minimal_commits(n: usize) -> Vec<SignedItem<LooseCommit>> {
    let commit = LooseCommit::new(tree(), CommitId::new([0; 32]), [], empty_blob().meta());
    many_signed(&commit, HEAD_AT, n)
        .into_iter()
        .map(|s| SignedItem::new(s, empty_blob()))
        .collect()
}

/// `n` fragments with no boundary and no checkpoint and an empty blob.
fn minimal_fragments(n: usize) -> Vec<SignedItem<Fragment>> {
    let fragment = Fragment::new(tree(), CommitId::new([0; 32]), [], [], empty_blob().meta());
    many_signed(&fragment, HEAD_AT, n)
        .into_iter()
        .map(|s| SignedItem::new(s, empty_blob()))
        .collect()
}

fn heads(n: usize) -> RemoteHeads {
    RemoteHeads::new(1, (0..n).map(|i| CommitId::new(id(i))))
}

fn fingerprints(n: usize) -> Vec<Fingerprint> {
    (0..n as u64).map(Fingerprint::from_u64).collect()
}

fn commit_with(parents: usize, heads_n: usize) -> SyncMessage {
    let commit = LooseCommit::new(
        tree(),
        CommitId::new([0xFF; 32]),
        (0..parents).map(|i| CommitId::new(id(i))),
        empty_blob().meta(),
    );
    SyncMessage::LooseCommit(BlobMessage {
        id: tree(),
        sender_heads: heads(heads_n),
        item: SignedItem::new(Signed::seal(&key(), &commit).unwrap(), empty_blob()),
    })
}

fn fragment_with(boundary: usize, checkpoints: usize, heads_n: usize) -> SyncMessage {
    let fragment = Fragment::new(
        tree(),
        CommitId::new([0xFF; 32]),
        (0..boundary).map(|i| CommitId::new(id(i))),
        (0..checkpoints).map(|i| Checkpoint::from_bytes(id(i)[..12].try_into().unwrap())),
        empty_blob().meta(),
    );
    SyncMessage::Fragment(BlobMessage {
        id: tree(),
        sender_heads: heads(heads_n),
        item: SignedItem::new(Signed::seal(&key(), &fragment).unwrap(), empty_blob()),
    })
}

fn request_with(commit_fps: usize, fragment_fps: usize) -> SyncMessage {
    SyncMessage::BatchSyncRequest(BatchSyncRequest::new(
        tree(),
        PeerId::from_bytes([1; 32]),
        9,
        true,
        FingerprintSeed::new(1, 2),
        fingerprints(commit_fps),
        fingerprints(fragment_fps),
    ))
}

fn response_with(commits: usize, fragments: usize, fps: usize, heads_n: usize) -> SyncMessage {
    SyncMessage::BatchSyncResponse(BatchSyncResponse {
        requestor: PeerId::from_bytes([1; 32]),
        nonce: 9,
        id: tree(),
        result: SyncResult::Ok(SyncDiff::new(
            minimal_commits(commits),
            minimal_fragments(fragments),
            fingerprints(fps),
            fingerprints(fps),
        )),
        responder_heads: heads(heads_n),
    })
}

fn topics(n: usize) -> Topics {
    Topics::new((0..n.max(1)).map(|i| Topic::new(id(i)))).unwrap()
}

fn challenge() -> Challenge {
    Challenge::new(
        Audience::Known(PeerId::from_bytes([3; 32])),
        1_800_000_000,
        [4; 16],
    )
}

/// The `SUM\0`, `SUH\0` and `SUE\0` inputs, each with the most elements
/// of its kind (the format's largest counts, or about 3 MiB of them where
/// a count is 32 bits wide).
fn message_worst_cases() -> Vec<(&'static str, Bytes)> {
    let sync = |m: SyncMessage| Message::Sync(m).encode().unwrap();
    let handshake = |m: HandshakeMessage| Message::Handshake(m).encode().unwrap();
    let ephemeral = |m: EphemeralMessage| Message::Ephemeral(m).encode().unwrap();
    let payload = EphemeralPayload::new(Topic::new([5; 32]), 1, 2, Bytes::new());
    vec![
        ("SUM 00 LooseCommit, 255 parents", sync(commit_with(255, 0))),
        (
            "SUM 00 LooseCommit, 100,000 sender heads",
            sync(commit_with(0, 100_000)),
        ),
        (
            "SUM 01 Fragment, 255 boundary, 65,535 checkpoints",
            sync(fragment_with(255, 65_535, 0)),
        ),
        (
            "SUM 04 BatchSyncRequest, 2 x 65,535 fingerprints",
            sync(request_with(65_535, 65_535)),
        ),
        (
            "SUM 05 BatchSyncResponse, 30,000 minimal commits",
            sync(response_with(30_000, 0, 0, 0)),
        ),
        (
            "SUM 05 BatchSyncResponse, 30,000 minimal fragments",
            sync(response_with(0, 30_000, 0, 0)),
        ),
        (
            "SUM 05 BatchSyncResponse, 2 x 65,535 requested fingerprints",
            sync(response_with(0, 0, 65_535, 0)),
        ),
        (
            "SUM 05 BatchSyncResponse NotFound, 100,000 heads",
            sync(SyncMessage::BatchSyncResponse(BatchSyncResponse {
                requestor: PeerId::from_bytes([1; 32]),
                nonce: 9,
                id: tree(),
                result: SyncResult::NotFound,
                responder_heads: heads(100_000),
            })),
        ),
        (
            "SUM 06 RemoveSubscriptions, 65,535 trees",
            sync(SyncMessage::remove_subscriptions(
                (0..65_535).map(|i| SedimentreeId::new(id(i))),
            )),
        ),
        (
            "SUM 07 DataRequestRejected",
            sync(SyncMessage::DataRequestRejected(DataRequestRejected {
                id: tree(),
            })),
        ),
        (
            "SUM 08 HeadsUpdate, 100,000 heads",
            sync(SyncMessage::HeadsUpdate(HeadsUpdate {
                id: tree(),
                heads: heads(100_000),
            })),
        ),
        (
            "SUH 00 Challenge",
            handshake(HandshakeMessage::Challenge(
                Signed::seal(&key(), &challenge()).unwrap(),
            )),
        ),
        (
            "SUH 01 Response",
            handshake(HandshakeMessage::Response(
                Signed::seal(&key(), &Response::for_challenge(&challenge(), 5).unwrap()).unwrap(),
            )),
        ),
        (
            "SUH 02 Rejection",
            handshake(HandshakeMessage::Rejection(Rejection {
                reason: RejectionReason::ClockDrift,
                timestamp: 5,
            })),
        ),
        (
            "SUE 00 Ephemeral, empty payload",
            ephemeral(EphemeralMessage::Ephemeral(Box::new(
                SignedEphemeral::seal(&key(), &payload).unwrap(),
            ))),
        ),
        (
            "SUE 01 Subscribe, 65,535 topics",
            ephemeral(EphemeralMessage::Subscribe(topics(65_535))),
        ),
        (
            "SUE 02 Unsubscribe, 65,535 topics",
            ephemeral(EphemeralMessage::Unsubscribe(topics(65_535))),
        ),
        (
            "SUE 03 SubscribeRejected, 65,535 topics",
            ephemeral(EphemeralMessage::SubscribeRejected(topics(65_535))),
        ),
    ]
}

fn me() -> KeyhivePeer {
    KeyhivePeer::new(key().peer_id())
}

/// A peer id with the longest suffix accepted.
fn long_suffix_peer() -> KeyhivePeer {
    KeyhivePeer {
        key: PeerId::from_bytes([2; 32]),
        suffix: Some("s".repeat(1024)),
    }
}

fn suk(message: KeyhiveMessage, card: Option<String>) -> Bytes {
    SukMessage {
        contact_card: card.map(ContactCardJson::from_json),
        signed: SignedKeyhive::sign(&key(), message).unwrap(),
    }
    .to_bytes()
    .unwrap()
}

fn hashes(n: usize) -> Vec<[u8; 32]> {
    (0..n).map(id).collect()
}

/// `n` events of `MIN_EVENT_LEN` bytes, the shortest keyhive can parse.
fn events(n: usize) -> Vec<Bytes> {
    (0..n)
        .map(|i| Bytes::from(id(i).repeat(4)[..MIN_EVENT_LEN].to_vec()))
        .collect()
}

/// Every keyhive message kind in a `SUK\0`, each with the most elements.
fn keyhive_worst_cases() -> Vec<(&'static str, Bytes)> {
    let target = || KeyhivePeer::new(PeerId::from_bytes([2; 32]));
    vec![
        (
            "SUK SyncRequest, 2 x 40,000 hashes",
            suk(
                KeyhiveMessage::SyncRequest {
                    sender: me(),
                    target: target(),
                    found: hashes(40_000),
                    pending: hashes(40_000),
                },
                None,
            ),
        ),
        (
            "SUK SyncResponse, 20,000 hashes, 20,000 minimal events",
            suk(
                KeyhiveMessage::SyncResponse {
                    sender: me(),
                    target: target(),
                    requested: hashes(20_000),
                    found: events(20_000),
                    responder_total: 1,
                    requester_total: 2,
                },
                None,
            ),
        ),
        (
            "SUK SyncOps, 30,000 minimal events",
            suk(
                KeyhiveMessage::SyncOps {
                    sender: me(),
                    target: target(),
                    ops: events(30_000),
                    responder_total: 1,
                    requester_total: 2,
                },
                None,
            ),
        ),
        (
            "SUK RequestContactCard, 16 KiB card, 1 KiB suffix",
            suk(
                KeyhiveMessage::RequestContactCard {
                    sender: me(),
                    target: long_suffix_peer(),
                },
                Some("c".repeat(16 * 1024)),
            ),
        ),
        (
            "SUK MissingContactCard, 1 KiB suffix",
            suk(
                KeyhiveMessage::MissingContactCard {
                    sender: me(),
                    target: long_suffix_peer(),
                },
                None,
            ),
        ),
        (
            "SUK SyncCheck",
            suk(
                KeyhiveMessage::SyncCheck {
                    sender: me(),
                    target: target(),
                    sender_total: 1,
                    sender_syncpoint: 2,
                    sender_digest: [3; 32],
                },
                None,
            ),
        ),
        (
            "SUK SyncConfirmation",
            suk(
                KeyhiveMessage::SyncConfirmation {
                    sender: me(),
                    target: target(),
                    confirmer_total: 3,
                },
                None,
            ),
        ),
    ]
}

/// The standalone signed payloads, each with the most elements.
/// Decodes, and says whether the input was accepted.
type Decode = fn(Bytes) -> bool;

fn signed_worst_cases() -> Vec<(&'static str, Bytes, Decode)> {
    let commit = LooseCommit::new(
        tree(),
        CommitId::new([0xFF; 32]),
        (0..255).map(|i| CommitId::new(id(i))),
        empty_blob().meta(),
    );
    let fragment = Fragment::new(
        tree(),
        CommitId::new([0xFF; 32]),
        (0..255).map(|i| CommitId::new(id(i))),
        (0..65_535).map(|i| Checkpoint::from_bytes(id(i)[..12].try_into().unwrap())),
        empty_blob().meta(),
    );
    let statement = BlobStatement::for_bytes(b"a file");
    vec![
        (
            "Signed<LooseCommit>, 255 parents",
            Signed::seal(&key(), &commit).unwrap().into_bytes(),
            |b| Signed::<LooseCommit>::decode(b).is_ok(),
        ),
        (
            "Signed<Fragment>, 255 boundary, 65,535 checkpoints",
            Signed::seal(&key(), &fragment).unwrap().into_bytes(),
            |b| Signed::<Fragment>::decode(b).is_ok(),
        ),
        (
            "Signed<BlobStatement> (a signature file)",
            Signed::seal(&key(), &statement).unwrap().into_bytes(),
            |b| Signed::<BlobStatement>::decode(b).is_ok(),
        ),
        (
            "keyhive root delegation event",
            DocumentKey::from_seed([7; 32])
                .root_delegation(Grantee::Public, Access::Edit)
                .unwrap()
                .event,
            |b| RootDelegation::decode(b).is_ok(),
        ),
    ]
}

// ---- measurement ------------------------------------------------------------

/// Decodes `wire` as a message, measured; the decoded message is still
/// held when `held` is read.
fn decode_message(heap: &Alone, wire: &Bytes) -> Usage {
    let (decoded, usage) = heap.measure(|| Message::decode(wire.clone()));
    let message = decoded.unwrap_or_else(|e| panic!("a valid message was refused: {e}"));
    assert_eq!(
        message.encode().unwrap(),
        *wire,
        "decoded to something else"
    );
    usage
}

fn decode_suk(heap: &Alone, wire: &Bytes) -> Usage {
    let (decoded, usage) = heap.measure(|| SukMessage::from_bytes(wire));
    let message = decoded.unwrap_or_else(|e| panic!("a valid SUK was refused: {e}"));
    assert_eq!(
        message.to_bytes().unwrap(),
        *wire,
        "decoded to something else"
    );
    usage
}

fn report(what: &str, len: usize, usage: Usage) -> f64 {
    let ratio = BOUND.check(what, len, usage);
    println!(
        "{what:<62} {len:>10} B in, peak {:>10} B, held {:>10} B: {ratio:.2}x",
        usage.peak, usage.held
    );
    ratio
}

#[test]
fn the_worst_case_of_every_decoder_stays_within_the_stated_bound() {
    let heap = heap::alone();
    let mut worst = (0.0f64, String::new());
    let mut note = |what: &str, ratio: f64| {
        if ratio > worst.0 {
            worst = (ratio, what.to_owned());
        }
    };
    for (what, wire) in message_worst_cases() {
        note(what, report(what, wire.len(), decode_message(&heap, &wire)));
    }
    for (what, wire) in keyhive_worst_cases() {
        note(what, report(what, wire.len(), decode_suk(&heap, &wire)));
    }
    for (what, wire, decode) in signed_worst_cases() {
        let (ok, usage) = heap.measure(|| decode(wire.clone()));
        assert!(ok, "{what}: a valid input was refused");
        note(what, report(what, wire.len(), usage));
    }
    println!(
        "worst: {:.2}x ({}); bound {DECODE_HEAP_PER_BYTE}x + {DECODE_HEAP_CONSTANT} B",
        worst.0, worst.1
    );
}

/// The inputs above are what they say: the most elements of each kind
/// (so the bound is measured where it is tightest, and this test fails if
/// a builder stops making them).
#[test]
fn the_worst_cases_hold_the_elements_they_name() {
    let _heap = heap::alone();
    let cases = message_worst_cases();
    let sizes: Vec<usize> = cases.iter().map(|(_, w)| w.len()).collect();
    // A fragment's 65,535 checkpoints at 12 bytes each, a request's
    // 131,070 fingerprints at 8, a response's 30,000 commits at their
    // shortest, 65,535 topics at 32.
    assert!(sizes[2] > 65_535 * 12 + 255 * 32, "{}", sizes[2]);
    assert!(sizes[3] > 2 * 65_535 * 8, "{}", sizes[3]);
    let min_commit_item = 4 + 32 + 32 + 32 + 32 + 1 + 1 + 64 + 1;
    assert_eq!(
        sizes[4],
        9 + 32 + 8 + 32 + 1 + 8 + 30_000 * min_commit_item + 12
    );
    assert!(sizes[15] > 65_535 * 32, "{}", sizes[15]);
    let keyhive = keyhive_worst_cases();
    assert!(keyhive[2].1.len() > 30_000 * (2 + MIN_EVENT_LEN));
}

/// The attack that set the bound: a correctly signed `SyncOps` of 100,000
/// empty events (100,343 bytes) peaked at 3.18 MiB (33x) and held as much.
/// It is refused now before anything is allocated for it (the count alone
/// needs 110 bytes an event), and so are events one byte short of the
/// shortest, whether a count or the event itself gives them away.
#[test]
fn a_sync_ops_of_empty_events_is_refused_without_the_memory() {
    let heap = heap::alone();
    for (len, count) in [
        (0, 100_000),
        (MIN_EVENT_LEN - 1, 10_000),
        (MIN_EVENT_LEN - 1, 1),
    ] {
        let wire = suk(
            KeyhiveMessage::SyncOps {
                sender: me(),
                target: KeyhivePeer::new(PeerId::from_bytes([2; 32])),
                ops: vec![Bytes::from(vec![0xEE; len]); count],
                responder_total: 0,
                requester_total: 0,
            },
            None,
        );
        let (decoded, usage) = heap.measure(|| SukMessage::from_bytes(&wire));
        let err = decoded.unwrap_err();
        if count == 1 {
            assert!(
                matches!(err, KeyhiveError::EventTooShort { index: 0, len: l, .. } if l == len),
                "{err}"
            );
        } else {
            assert!(
                matches!(err, KeyhiveError::CborTruncated { field: "ops", needed, .. }
                    if needed >= count as u64 * (2 + MIN_EVENT_LEN) as u64),
                "{err}"
            );
        }
        report(
            &format!("SUK SyncOps of {count} events of {len} B (refused)"),
            wire.len(),
            usage,
        );
        assert!(usage.peak <= DECODE_HEAP_CONSTANT, "{usage:?}");
    }
}

// ---- every count in between -------------------------------------------------

/// A `SUM\0`, `SUH\0` or `SUE\0` input of kind `kind` with about `n`
/// elements, each the shortest of its kind.
fn message_with(kind: u8, n: usize) -> Bytes {
    let sync = |m: SyncMessage| Message::Sync(m).encode().unwrap();
    let ephemeral = |m: EphemeralMessage| Message::Ephemeral(m).encode().unwrap();
    match kind {
        0 => sync(commit_with(n.min(255), n)),
        1 => sync(fragment_with(n.min(255), n, n / 2)),
        2 => sync(request_with(n, n / 3)),
        3 => sync(response_with(n / 2, n / 2, n, n / 3)),
        4 => sync(SyncMessage::remove_subscriptions(
            (0..n).map(|i| SedimentreeId::new(id(i))),
        )),
        5 => sync(SyncMessage::HeadsUpdate(HeadsUpdate {
            id: tree(),
            heads: heads(n),
        })),
        _ => ephemeral(EphemeralMessage::Subscribe(topics(n))),
    }
}

fn keyhive_with(kind: u8, n: usize) -> Bytes {
    let target = KeyhivePeer::new(PeerId::from_bytes([2; 32]));
    let message = match kind {
        0 => KeyhiveMessage::SyncRequest {
            sender: me(),
            target,
            found: hashes(n),
            pending: hashes(n / 2),
        },
        1 => KeyhiveMessage::SyncResponse {
            sender: me(),
            target,
            requested: hashes(n / 2),
            found: events(n),
            responder_total: n as u64,
            requester_total: 0,
        },
        _ => KeyhiveMessage::SyncOps {
            sender: me(),
            target,
            ops: events(n),
            responder_total: 0,
            requester_total: n as u64,
        },
    };
    suk(message, None)
}

/// Runs `test` on `cases` inputs from `strategy`, alone (see
/// `bijou_test_support::heap`); a failure panics with the smallest input.
fn run_cases<S: Strategy>(cases: u32, strategy: S, test: impl Fn(&Alone, S::Value)) {
    let heap = heap::alone();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, |value| {
            test(&heap, value);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Every message kind with lists of the shortest elements, at any count
/// up to a few thousand.
#[test]
fn messages_of_minimal_elements_stay_within_the_bound() {
    run_cases(48, (0u8..7, 0usize..3_000), |heap, (kind, n)| {
        let wire = message_with(kind, n);
        let what = format!("message kind {kind} with {n} elements");
        BOUND.check(&what, wire.len(), decode_message(heap, &wire));
    });
}

/// Every keyhive message kind with lists of the shortest elements.
#[test]
fn keyhive_messages_of_minimal_elements_stay_within_the_bound() {
    run_cases(48, (0u8..3, 0usize..3_000), |heap, (kind, n)| {
        let wire = keyhive_with(kind, n);
        let what = format!("keyhive kind {kind} with {n} elements");
        BOUND.check(&what, wire.len(), decode_suk(heap, &wire));
    });
}

/// Random valid messages of every kind (the shared strategies).
#[test]
fn random_messages_stay_within_the_bound() {
    let messages = prop_oneof![
        bijou_test_support::strategy::sync_message().prop_map(Message::Sync),
        bijou_test_support::strategy::handshake_message().prop_map(Message::Handshake),
    ];
    run_cases(96, messages, |heap, message| {
        let wire = message.encode().unwrap();
        BOUND.check("a random message", wire.len(), decode_message(heap, &wire));
    });
}

/// Refusals cost no more than acceptances: a valid many-element input
/// cut anywhere, or with one byte changed.
#[test]
fn refused_inputs_stay_within_the_bound() {
    let inputs = (
        0u8..10,
        1usize..2_000,
        any::<prop::sample::Index>(),
        any::<bool>(),
    );
    run_cases(48, inputs, |heap, (kind, n, cut, flip)| {
        let wire = if kind < 7 {
            message_with(kind, n)
        } else {
            keyhive_with(kind - 7, n)
        };
        let at = cut.index(wire.len());
        let mut bad = wire.to_vec();
        if flip {
            bad[at] ^= 0x40;
        } else {
            bad.truncate(at);
        }
        let bad = Bytes::from(bad);
        let ((), usage) = if kind < 7 {
            heap.measure(|| drop(Message::decode(bad.clone())))
        } else {
            heap.measure(|| drop(SukMessage::from_bytes(&bad)))
        };
        BOUND.check("a damaged message", bad.len(), usage);
    });
}
