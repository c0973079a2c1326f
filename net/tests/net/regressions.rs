//! Replays the regression inputs in `tests/data/regressions/` through the
//! decoders, with the fuzz oracles (`bijou_test_support::checks`, the same
//! checks as the mutation fuzz and the cargo-fuzz targets): no panic, and
//! every accepted input re-encodes to exactly the same bytes.
//!
//! A file is named `<target>-<description>.bin`; the target says which
//! decoders it goes through:
//!
//! | target            | replayed through                                                |
//! |-------------------|-----------------------------------------------------------------|
//! | `sum`             | `Message`/`SyncMessage` decode, then verification                |
//! | `suh`             | `Message`/`HandshakeMessage` decode, then verification; also as a standalone `Signed<Challenge>`/`Signed<Response>` |
//! | `signed_commit`   | `Signed<LooseCommit>` decode (`Wire::decode`), then verification  |
//! | `signed_fragment` | `Signed<Fragment>` decode, then verification                     |
//! | `stream_bijou64`  | `FrameCodec<Bijou64>`/`MessageCodec`, fed whole and in chunks    |
//! | `stream_leb128`   | the same with `Leb128`                                           |
//! | `stream_u32be`    | the same with `U32Be`                                            |
//! | `inspect`         | the inspector's decode path, under each prefix                   |
//!
//! A description that starts with `valid-` or `invalid-` also states the
//! outcome, which is then asserted: a valid message is accepted and
//! verifies, a valid stream ends cleanly with every frame a message, a
//! valid capture inspects clean (bijou64 prefixes); an invalid message is
//! rejected, an invalid stream ends in a framing error, an invalid capture
//! has a bad frame or a malformed stream. Any other description (a crash a
//! fuzzer found, say) is held to the general properties only.
//!
//! The seed cases were written by `write_seed_cases` below (ignored; run
//! it with `--ignored` to write them again).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bijou_codec::Wire;
use bijou_framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_framing::DEFAULT_MAX_FRAME_LENGTH;
use bijou_proto::message::{
    Audience, BatchSyncRequest, BatchSyncResponse, BlobMessage, Challenge, Checkpoint, CommitId,
    DataRequestRejected, Fingerprint, FingerprintSeed, Fragment, HandshakeMessage, HeadsUpdate,
    LooseCommit, Message, Rejection, RejectionReason, RemoteHeads, Response, SedimentreeId,
    SignedItem, SyncDiff, SyncMessage, SyncResult,
};
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::{Blob, Identity, PeerId, Signed, SIGNATURE_LEN};
use bijou_test_support::checks::{self, Depth};
use bijou_test_support::fuzz;
use bijou_test_support::messages::fix_total_size;

/// The targets, as file name prefixes.
const TARGETS: [&str; 9] = [
    "sum",
    "suh",
    "suk",
    "signed_commit",
    "signed_fragment",
    "stream_bijou64",
    "stream_leb128",
    "stream_u32be",
    "inspect",
];

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/regressions")
}

/// What a file's description says about its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Valid,
    Invalid,
    Any,
}

fn expectation(description: &str) -> Expect {
    if description.starts_with("valid-") {
        Expect::Valid
    } else if description.starts_with("invalid-") {
        Expect::Invalid
    } else {
        Expect::Any
    }
}

/// Whether a decoded message verifies (all its signatures, scopes, blobs).
fn message_is_valid(bytes: &[u8]) -> bool {
    match checks::check_message(bytes, true) {
        (Ok(msg), _) => checks::inspector_verdict(&msg),
        (Err(_), _) => false,
    }
}

fn replay_stream<P: LengthPrefix>(bytes: &[u8], expect: Expect) -> Result<(), String> {
    checks::check_stream_all_splits::<P>(bytes);
    let report = checks::check_stream::<P>(bytes, &[], DEFAULT_MAX_FRAME_LENGTH, None);
    let clean = report.error.is_none() && report.messages == report.frames.len();
    match expect {
        Expect::Valid if !clean => Err(format!(
            "not a clean stream of messages: {} frames, {} messages, error {:?}",
            report.frames.len(),
            report.messages,
            report.error
        )),
        Expect::Invalid if report.error.is_none() => Err("no framing error".into()),
        _ => Ok(()),
    }
}

/// Replays one file; `Err` says how it broke its stated outcome (a broken
/// general property panics in the oracle).
fn replay(target: &str, bytes: &[u8], expect: Expect) -> Result<(), String> {
    let decoded = |depth: Depth| match (expect, depth) {
        (Expect::Invalid, Depth::Accepted) => Err("accepted".to_owned()),
        (Expect::Valid, d) if d != Depth::Accepted => Err(format!("rejected ({d:?})")),
        _ => Ok(()),
    };
    match target {
        "sum" | "suh" => {
            let depth = if target == "sum" {
                checks::check_sum(bytes, true)
            } else {
                let alone = checks::check_signed_handshake(bytes, None);
                let depth = checks::check_suh(bytes, true);
                if bytes.starts_with(b"SUH\0") && bytes.get(4).is_some_and(|&kind| kind < 2) {
                    assert_eq!(
                        alone == Depth::Accepted,
                        depth == Depth::Accepted,
                        "a signed handshake message and its payload disagree"
                    );
                }
                depth
            };
            decoded(depth)?;
            if expect == Expect::Valid && !message_is_valid(bytes) {
                return Err("decodes but does not verify".into());
            }
            Ok(())
        }
        "suk" => decoded(checks::check_suk(bytes, true)),
        "signed_commit" => decoded(checks::check_signed_commit(bytes, true)),
        "signed_fragment" => decoded(checks::check_signed_fragment(bytes, true)),
        "stream_bijou64" => replay_stream::<Bijou64>(bytes, expect),
        "stream_leb128" => replay_stream::<Leb128>(bytes, expect),
        "stream_u32be" => replay_stream::<U32Be>(bytes, expect),
        "inspect" => {
            let report = checks::check_inspect_all(bytes);
            let clean = report.frames > 0 && report.bad == 0 && !report.broken;
            match expect {
                Expect::Valid if !clean => Err(format!("not clean: {report:?}")),
                Expect::Invalid if clean => Err("inspects clean".into()),
                _ => Ok(()),
            }
        }
        other => Err(format!(
            "unknown target {other:?}: name regression inputs <target>-<description>.bin, \
             with target one of {TARGETS:?}"
        )),
    }
}

#[test]
fn every_regression_input_replays_cleanly() {
    let dir = regressions_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    paths.sort();
    assert!(
        !paths.is_empty(),
        "no regression inputs in {}",
        dir.display()
    );

    let mut failures = Vec::new();
    let mut per_target: BTreeMap<String, usize> = BTreeMap::new();
    for path in &paths {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let Some(stem) = name.strip_suffix(".bin") else {
            failures.push(format!("{name}: not a .bin file"));
            continue;
        };
        let Some((target, description)) = stem.split_once('-') else {
            failures.push(format!("{name}: not named <target>-<description>.bin"));
            continue;
        };
        let expect = expectation(description);
        let bytes = std::fs::read(path).expect("readable");
        if let Err(why) = replay(target, &bytes, expect) {
            failures.push(format!("{name}: {why}"));
        }
        *per_target.entry(target.to_owned()).or_default() += 1;
    }
    eprintln!("replayed {} regression inputs: {per_target:?}", paths.len());
    assert!(
        failures.is_empty(),
        "regression inputs failed:\n  {}",
        failures.join("\n  ")
    );
    for target in TARGETS {
        assert!(
            per_target.contains_key(target),
            "no regression input for target {target}"
        );
    }
}

// ---- the seed cases -------------------------------------------------------

fn key() -> SigningKey {
    fuzz::keys().swap_remove(0)
}

fn tree() -> SedimentreeId {
    SedimentreeId::new([0x11; 32])
}

fn id(b: u8) -> CommitId {
    CommitId::new([b; 32])
}

fn commit_item(parents: &[u8], blob: &[u8]) -> SignedItem<LooseCommit> {
    let blob = Blob::from(blob.to_vec());
    let commit = LooseCommit::new(
        tree(),
        id(0x22),
        parents.iter().map(|&b| id(b)),
        blob.meta(),
    );
    SignedItem::new(Signed::seal(&key(), &commit).expect("seal"), blob)
}

fn fragment_item(blob: &[u8]) -> SignedItem<Fragment> {
    let blob = Blob::from(blob.to_vec());
    let fragment = Fragment::new(
        tree(),
        id(0x33),
        [id(0x40), id(0x41)],
        [[1; 12], [2; 12]].map(Checkpoint::from_bytes),
        blob.meta(),
    );
    SignedItem::new(Signed::seal(&key(), &fragment).expect("seal"), blob)
}

fn encode(msg: impl Into<Message>) -> Vec<u8> {
    msg.into().encode().expect("encode").to_vec()
}

fn commit_message() -> Vec<u8> {
    encode(SyncMessage::LooseCommit(BlobMessage {
        id: tree(),
        sender_heads: RemoteHeads::new(7, [id(0x50)]),
        item: commit_item(&[0x01], b"hello"),
    }))
}

/// Where the signed commit starts in `commit_message` (one head).
const ITEM_AT: usize = 9 + 32 + 8 + 4 + 32;
/// Offsets inside a signed commit or fragment: the first count, the blob
/// size after it (commit).
const COUNT_AT: usize = 4 + 32 + 96;

fn fragment_message() -> Vec<u8> {
    encode(SyncMessage::Fragment(BlobMessage {
        id: tree(),
        sender_heads: RemoteHeads::default(),
        item: fragment_item(&[0xF5; 300]),
    }))
}

fn request() -> Vec<u8> {
    encode(SyncMessage::BatchSyncRequest(BatchSyncRequest::new(
        tree(),
        key().peer_id(),
        42,
        true,
        FingerprintSeed::new(1, 2),
        [1, 2].map(Fingerprint::from_u64),
        [3].map(Fingerprint::from_u64),
    )))
}

fn response(result: SyncResult) -> Vec<u8> {
    encode(SyncMessage::BatchSyncResponse(BatchSyncResponse {
        requestor: key().peer_id(),
        nonce: 42,
        id: tree(),
        result,
        responder_heads: RemoteHeads::new(1, [id(0x60)]),
    }))
}

fn diff() -> SyncResult {
    SyncResult::Ok(SyncDiff::new(
        vec![commit_item(&[], b"c")],
        vec![fragment_item(b"f")],
        [9].map(Fingerprint::from_u64),
        [],
    ))
}

fn challenge() -> Challenge {
    Challenge::new(
        Audience::Known(PeerId::from_bytes([0x77; 32])),
        1_700_000_000,
        [0x42; 16],
    )
}

fn challenge_message() -> Vec<u8> {
    encode(HandshakeMessage::Challenge(
        Signed::seal(&key(), &challenge()).expect("seal"),
    ))
}

fn response_message() -> Vec<u8> {
    let response = Response::for_challenge(&challenge(), 1_700_000_001).expect("digest");
    encode(HandshakeMessage::Response(
        Signed::seal(&key(), &response).expect("seal"),
    ))
}

/// Signs `bytes` (a signed payload) again: its last 64 bytes become the
/// signature of the rest.
fn resign(mut bytes: Vec<u8>) -> Vec<u8> {
    let end = bytes.len() - SIGNATURE_LEN;
    let signature = key().sign_message(&bytes[..end]).expect("sign");
    bytes[end..].copy_from_slice(&signature.to_bytes());
    bytes
}

/// `msg` with its signed commit (at `ITEM_AT`, `len` bytes) replaced by
/// `edit` of it, signed again, and `TotalSize` fixed.
fn with_commit(msg: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let len = commit_item(&[0x01], b"hello").signed().len();
    let mut item = msg[ITEM_AT..ITEM_AT + len].to_vec();
    edit(&mut item);
    let mut out = msg[..ITEM_AT].to_vec();
    out.extend_from_slice(&resign(item));
    out.extend_from_slice(&msg[ITEM_AT + len..]);
    fix_total_size(&mut out);
    out
}

fn edited(mut bytes: Vec<u8>, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    edit(&mut bytes);
    bytes
}

fn framed<P: LengthPrefix>(payloads: &[Vec<u8>]) -> Vec<u8> {
    fuzz::stream::<P>(payloads).bytes
}

fn three_messages() -> Vec<Vec<u8>> {
    vec![challenge_message(), commit_message(), request()]
}

/// A `SUK\0` SyncOps signed by [`key`], with events of these lengths.
fn suk_sync_ops(event_lens: &[usize]) -> Vec<u8> {
    use bijou_proto::keyhive::{KeyhiveMessage, KeyhivePeer, SignedKeyhive, SukMessage};
    let message = KeyhiveMessage::SyncOps {
        sender: KeyhivePeer::new(key().peer_id()),
        target: KeyhivePeer::new(PeerId::from_bytes([9; 32])),
        ops: event_lens.iter().map(|&n| vec![0xE7; n].into()).collect(),
        responder_total: 1,
        requester_total: 2,
    };
    SukMessage {
        contact_card: None,
        signed: SignedKeyhive::sign(&key(), message).expect("sign"),
    }
    .to_bytes()
    .expect("encode")
    .to_vec()
}

fn seed_cases() -> Vec<(&'static str, Vec<u8>)> {
    let commit = commit_message();
    let signed_commit = commit_item(&[0x01, 0x02], b"blob")
        .signed()
        .to_bytes()
        .to_vec();
    let signed_fragment = fragment_item(b"blob").signed().to_bytes().to_vec();
    let bijou = |v: u64| {
        let mut out = Vec::new();
        bijou_codec::bijou64::encode_to_vec(v, &mut out);
        out
    };
    // The commit's blob length (bijou64, one byte for "hello") and blob.
    let blob_len_at = commit.len() - 6;
    vec![
        // Valid messages of every kind.
        ("sum-valid-loose-commit", commit.clone()),
        ("sum-valid-fragment", fragment_message()),
        ("sum-valid-batch-sync-request", request()),
        ("sum-valid-response-ok-diff", response(diff())),
        (
            "sum-valid-response-not-found",
            response(SyncResult::NotFound),
        ),
        (
            "sum-valid-remove-subscriptions",
            encode(SyncMessage::remove_subscriptions([
                tree(),
                SedimentreeId::new([0x99; 32]),
            ])),
        ),
        (
            "sum-valid-data-request-rejected",
            encode(SyncMessage::DataRequestRejected(DataRequestRejected {
                id: tree(),
            })),
        ),
        (
            "sum-valid-heads-update",
            encode(SyncMessage::HeadsUpdate(HeadsUpdate {
                id: tree(),
                heads: RemoteHeads::new(u64::MAX, [id(1), id(2)]),
            })),
        ),
        // Counts and lengths at their extremes.
        (
            "sum-invalid-parent-count-255-resigned",
            with_commit(&commit, |item| item[COUNT_AT] = 255),
        ),
        (
            "sum-invalid-heads-count-u32-max",
            edited(commit.clone(), |b| b[49..53].copy_from_slice(&[0xFF; 4])),
        ),
        (
            "sum-invalid-blob-len-tier8-overflow",
            edited(commit.clone(), |b| {
                b.splice(blob_len_at..blob_len_at + 1, [0xFF; 9]);
                fix_total_size(b);
            }),
        ),
        (
            "sum-invalid-blob-len-u64-max",
            edited(commit.clone(), |b| {
                b.splice(blob_len_at..blob_len_at + 1, bijou(u64::MAX));
                fix_total_size(b);
            }),
        ),
        (
            "sum-invalid-blob-size-tier8-overflow-resigned",
            with_commit(&commit, |item| {
                item.splice(COUNT_AT + 1..COUNT_AT + 2, [0xFF; 9]);
            }),
        ),
        (
            "sum-invalid-total-size-plus-one",
            edited(commit.clone(), |b| {
                let n = b.len() as u32 + 1;
                b[4..8].copy_from_slice(&n.to_be_bytes());
            }),
        ),
        (
            "sum-invalid-truncated-signature",
            edited(commit.clone(), |b| {
                b.truncate(blob_len_at - 10);
                fix_total_size(b);
            }),
        ),
        (
            "sum-invalid-retired-tag-02",
            edited(request(), |b| b[8] = 2),
        ),
        (
            "sum-invalid-unsorted-fingerprints",
            edited(request(), |b| {
                let at = 9 + 32 + 32 + 8 + 1 + 16 + 4;
                let (first, second) = (b[at..at + 8].to_vec(), b[at + 8..at + 16].to_vec());
                b[at..at + 8].copy_from_slice(&second);
                b[at + 8..at + 16].copy_from_slice(&first);
            }),
        ),
        (
            "sum-invalid-diff-commit-count-u16-max",
            edited(response(diff()), |b| {
                let at = 9 + 32 + 8 + 32 + 1;
                b[at..at + 2].copy_from_slice(&[0xFF; 2]);
            }),
        ),
        // Handshake.
        ("suh-valid-challenge", challenge_message()),
        ("suh-valid-response", response_message()),
        (
            "suh-valid-rejection",
            encode(HandshakeMessage::Rejection(Rejection {
                reason: RejectionReason::ClockDrift,
                timestamp: 1_700_000_000,
            })),
        ),
        (
            "suh-invalid-truncated-signature",
            edited(challenge_message(), |b| {
                b.pop();
            }),
        ),
        (
            "suh-invalid-audience-tag-02-resigned",
            resign(edited(challenge_message(), |b| b[37] = 2)),
        ),
        (
            "suh-invalid-rejection-reason-04",
            edited(
                encode(HandshakeMessage::Rejection(Rejection {
                    reason: RejectionReason::InvalidSignature,
                    timestamp: 0,
                })),
                |b| b[5] = 4,
            ),
        ),
        // Standalone signed payloads.
        ("signed_commit-valid-two-parents", signed_commit.clone()),
        (
            "signed_commit-invalid-parent-count-255-resigned",
            resign(edited(signed_commit.clone(), |b| b[COUNT_AT] = 255)),
        ),
        (
            "signed_commit-invalid-blob-size-tier8-overflow-resigned",
            resign(edited(signed_commit.clone(), |b| {
                b.splice(COUNT_AT + 1..COUNT_AT + 2, [0xFF; 9]);
            })),
        ),
        (
            "signed_commit-invalid-unsorted-parents-resigned",
            resign(edited(signed_commit.clone(), |b| {
                let at = COUNT_AT + 2;
                let (first, second) = (b[at..at + 32].to_vec(), b[at + 32..at + 64].to_vec());
                b[at..at + 32].copy_from_slice(&second);
                b[at + 32..at + 64].copy_from_slice(&first);
            })),
        ),
        (
            "signed_commit-invalid-truncated-signature",
            edited(signed_commit.clone(), |b| b.truncate(b.len() - 1)),
        ),
        (
            "signed_commit-invalid-non-canonical-issuer",
            edited(signed_commit.clone(), |b| {
                let mut y = bijou_signing::strict::FIELD_PRIME;
                y[0] += 2; // y = p + 2: the point y = 2, spelled overlong
                b[4..36].copy_from_slice(&y);
            }),
        ),
        ("signed_fragment-valid", signed_fragment.clone()),
        (
            "signed_fragment-valid-blob-size-u64-max-resigned",
            resign(edited(signed_fragment.clone(), |b| {
                b.splice(COUNT_AT + 3..COUNT_AT + 4, bijou(u64::MAX));
            })),
        ),
        (
            "signed_fragment-invalid-checkpoint-count-u16-max-resigned",
            resign(edited(signed_fragment.clone(), |b| {
                b[COUNT_AT + 1..COUNT_AT + 3].copy_from_slice(&[0xFF; 2]);
            })),
        ),
        // Streams.
        (
            "stream_bijou64-valid-three-messages",
            framed::<Bijou64>(&three_messages()),
        ),
        (
            "stream_bijou64-invalid-prefix-tier8-overflow",
            edited(framed::<Bijou64>(&[request()]), |b| b.extend([0xFF; 9])),
        ),
        (
            "stream_bijou64-invalid-prefix-over-max",
            edited(framed::<Bijou64>(&[request()]), |b| {
                b.extend(bijou(DEFAULT_MAX_FRAME_LENGTH as u64 + 1));
                b.extend(b"SUM\0");
            }),
        ),
        (
            "stream_bijou64-invalid-truncated-payload",
            edited(framed::<Bijou64>(&three_messages()), |b| {
                b.pop();
            }),
        ),
        ("stream_bijou64-empty-frames", vec![0, 0, 0]),
        (
            "stream_leb128-valid-three-messages",
            framed::<Leb128>(&three_messages()),
        ),
        (
            "stream_leb128-invalid-overlong-prefix",
            edited(framed::<Leb128>(&[request()]), |b| b.extend([0x85, 0x00])),
        ),
        (
            "stream_leb128-invalid-tenth-byte-overflow",
            edited(framed::<Leb128>(&[request()]), |b| {
                b.extend([0xFF; 9]);
                b.push(0x02);
            }),
        ),
        (
            "stream_u32be-valid-three-messages",
            framed::<U32Be>(&three_messages()),
        ),
        (
            "stream_u32be-invalid-prefix-u32-max",
            edited(framed::<U32Be>(&[request()]), |b| b.extend([0xFF; 4])),
        ),
        (
            "stream_u32be-invalid-truncated-prefix",
            edited(framed::<U32Be>(&[request()]), |b| b.extend([0, 0])),
        ),
        // Captures for the inspector (bijou64 prefixes).
        (
            "inspect-valid-handshake-and-commit",
            framed::<Bijou64>(&[challenge_message(), commit.clone()]),
        ),
        (
            "inspect-invalid-tampered-blob",
            framed::<Bijou64>(&[edited(commit.clone(), |b| {
                if let Some(last) = b.last_mut() {
                    *last ^= 1;
                }
            })]),
        ),
        ("suk-valid-sync-ops", suk_sync_ops(&[200])),
        // One event shorter than any keyhive event (which keyhive's own
        // decoder accepts and its ingest drops): refused, so that many of
        // them cannot multiply the receiver's memory.
        (
            "suk-invalid-event-shorter-than-any-keyhive-event",
            suk_sync_ops(&[200, 0]),
        ),
        (
            "inspect-invalid-scope-mismatch",
            framed::<Bijou64>(&[edited(commit.clone(), |b| b[9] ^= 0xFF)]),
        ),
        (
            "inspect-invalid-malformed-then-good",
            edited(framed::<Bijou64>(&[b"SUM\0junk".to_vec()]), |b| {
                b.extend(framed::<Bijou64>(std::slice::from_ref(&commit)));
            }),
        ),
    ]
}

/// The seed cases are what their names say (and small).
#[test]
fn seed_cases_are_what_their_names_say() {
    for (name, bytes) in seed_cases() {
        let (target, description) = name.split_once('-').expect("target-description");
        let expect = expectation(description);
        assert!(bytes.len() <= 2048, "{name}: {} bytes", bytes.len());
        if let Err(why) = replay(target, &bytes, expect) {
            panic!("{name}: {why}");
        }
    }
}

/// Writes the seed cases into `tests/data/regressions/` (deterministic:
/// fixed keys, Ed25519 signatures are deterministic).
#[test]
#[ignore = "writes the seed cases into the source tree"]
fn write_seed_cases() {
    let dir = regressions_dir();
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (name, bytes) in seed_cases() {
        std::fs::write(dir.join(format!("{name}.bin")), bytes).expect("write");
    }
}
