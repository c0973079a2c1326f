//! Snapshots across format versions: the bytes each version wrote, kept
//! as files in `tests/data/snapshot/v<N>/`, restore in this build, and the
//! ones this build writes are exactly its own version's files.
//!
//! A host evicted during a rolling deploy is restored by whichever release
//! runs next: a release must read what the previous one wrote. The files
//! are the previous releases' output, frozen (a format change cannot make
//! them again); a test here that fails after a format change means the
//! change broke old snapshots or forgot to move the version.
//!
//! Each shape is made by the same steps in every version (`shape`):
//! - `idle`: an authenticated session with nothing else;
//! - `ephemeral`: subscriptions both ways and a delivered ephemeral
//!   message (one window entry), whose bytes are `replayed_ephemeral.bin`;
//! - `pending`: a push, a fetch, a probe and a subscribe in flight, their
//!   messages still queued, a verification budget part spent;
//! - `registration`: a keyhive registration signed and waiting for the
//!   server's answer.
//!
//! `BIJOU_WRITE_SNAPSHOT_FIXTURES=1 cargo test -p bijou-proto --test
//! snapshot_versions` writes this build's version's files (only when its
//! format is new: the files of a released version never change).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::PathBuf;

use bijou_proto::handshake::{HandshakeConfig, Initiator, Responder};
use bijou_proto::message::{
    Audience, CommitId, EphemeralMessage, Message, SedimentreeId, SyncMessage, Topic, Topics,
};
use bijou_proto::session::snapshot::{RestoreError, SNAPSHOT_VERSION};
use bijou_proto::session::{
    Delivered, Operation, Received, Rejected, Session, SessionConfig, Work,
};
use bijou_proto::time::{Now, Timestamp};
use bijou_proto::verify_budget::VerifyBudget;
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity};
use bytes::Bytes;

const T0: u64 = 1_800_000_000;

/// The instant every shape is snapshotted at.
const TAKEN: u64 = 4;

fn at(secs: u64) -> Now {
    Now::new(T0 + secs, Timestamp::from_secs(secs))
}

/// The same instant in a process whose monotonic clock started `offset`
/// seconds earlier.
fn elsewhere(secs: u64, offset: u64) -> Now {
    Now::new(T0 + secs, Timestamp::from_secs(secs + offset))
}

fn keys() -> (SigningKey, SigningKey) {
    (
        SigningKey::from_bytes(&[1; 32]),
        SigningKey::from_bytes(&[2; 32]),
    )
}

/// Alice's session and Bob's, authenticated.
fn pair() -> (Session, Session) {
    let (alice, bob) = keys();
    let now = at(0);
    let initiator = Initiator::new(&alice, Audience::Known(bob.peer_id()), now, [7; 16]).unwrap();
    let answer =
        Responder::new(HandshakeConfig::default()).answer(&bob, initiator.challenge().clone(), now);
    let at_bob = answer.outcome.unwrap();
    let at_alice = initiator.receive(answer.reply.unwrap()).unwrap();
    (
        Session::new(alice.peer_id(), at_alice, SessionConfig::new([1; 32])),
        Session::new(bob.peer_id(), at_bob, SessionConfig::new([2; 32])),
    )
}

fn receive(session: &mut Session, bytes: Bytes, now: Now) -> Option<Received> {
    session.handle_message(bytes, now).unwrap();
    while session.poll_work(now) != Work::Idle {}
    session.poll_event()
}

const SHAPES: [&str; 4] = ["idle", "ephemeral", "pending", "registration"];
const OUR_TOPIC: Topic = Topic::new([5; 32]);

fn their_topics() -> Topics {
    Topics::new((100..104u8).map(|i| Topic::new([i; 32]))).unwrap()
}

/// Alice's session in `name`'s shape, and the ephemeral message she was
/// delivered (`ephemeral` only).
fn shape(name: &str) -> (Session, Option<Bytes>) {
    let (mut alice, mut bob) = pair();
    let (alice_key, bob_key) = keys();
    let tree = SedimentreeId::new([9; 32]);
    let mut delivered = None;
    match name {
        "idle" => {}
        "ephemeral" => {
            alice
                .on_send(&Message::Ephemeral(EphemeralMessage::Subscribe(
                    Topics::one(OUR_TOPIC),
                )))
                .unwrap();
            let theirs = bob
                .encode(&Message::Ephemeral(EphemeralMessage::Subscribe(
                    their_topics(),
                )))
                .unwrap();
            assert!(matches!(
                receive(&mut alice, theirs, at(1)).unwrap().result,
                Ok(Delivered::Subscribed(_))
            ));
            let sealed = bob
                .sign_ephemeral(&bob_key, OUR_TOPIC, &b"hello"[..], at(2))
                .unwrap();
            let bytes = bob
                .encode(&Message::Ephemeral(EphemeralMessage::from(sealed)))
                .unwrap();
            assert!(matches!(
                receive(&mut alice, bytes.clone(), at(2)).unwrap().result,
                Ok(Delivered::Ephemeral(_))
            ));
            delivered = Some(bytes);
        }
        "pending" => {
            alice.set_verify_budget(VerifyBudget::new(10, 10));
            for i in 0..3u8 {
                let msg = SyncMessage::loose_commit(
                    &bob_key,
                    tree,
                    CommitId::new([i; 32]),
                    [],
                    Blob::new(vec![i]),
                )
                .unwrap();
                assert!(receive(&mut alice, msg.encode_bytes(), at(1)).is_some());
            }
            let commit = SyncMessage::loose_commit(
                &alice_key,
                tree,
                CommitId::new([3; 32]),
                [],
                Blob::new(vec![1; 8]),
            )
            .unwrap();
            alice
                .start(Operation::Push(commit), Timestamp::from_secs(10))
                .unwrap();
            alice
                .start(Operation::Fetch(tree), Timestamp::from_secs(20))
                .unwrap();
            alice
                .start(Operation::Probe(tree), Timestamp::from_secs(30))
                .unwrap();
            alice
                .start(
                    Operation::Subscribe(Topics::one(OUR_TOPIC)),
                    Timestamp::from_secs(40),
                )
                .unwrap();
        }
        "registration" => {
            let doc = bijou_proto::keyhive::DocumentKey::from_seed([3; 32]);
            let delegation = doc
                .root_delegation(
                    bijou_proto::keyhive::Grantee::Public,
                    bijou_proto::keyhive::Access::Edit,
                )
                .unwrap();
            alice
                .start(Operation::Register(delegation), Timestamp::from_secs(10))
                .unwrap();
            alice.sign_pending_with(&alice_key).unwrap();
        }
        other => panic!("no shape {other}"),
    }
    (alice, delivered)
}

/// Encodes a message whose fields fit (every message made here).
trait EncodeBytes {
    fn encode_bytes(&self) -> Bytes;
}

impl EncodeBytes for SyncMessage {
    fn encode_bytes(&self) -> Bytes {
        bijou_codec::Wire::encode(self).unwrap()
    }
}

fn data_dir(version: u8) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/snapshot")
        .join(format!("v{version}"))
}

fn read(version: u8, file: &str) -> Vec<u8> {
    let path = data_dir(version).join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every version this build reads, oldest first: each has its files
/// (a missing directory fails the test, not skips it).
fn stored_versions() -> Vec<u8> {
    let versions: Vec<u8> = (1..=SNAPSHOT_VERSION).collect();
    for &version in &versions {
        assert!(
            data_dir(version).is_dir(),
            "no files for snapshot version {version}"
        );
    }
    versions
}

/// This build's writer makes exactly its version's files (written here
/// first, with `BIJOU_WRITE_SNAPSHOT_FIXTURES=1`).
#[test]
fn this_build_writes_its_versions_files() {
    let write = std::env::var_os("BIJOU_WRITE_SNAPSHOT_FIXTURES").is_some();
    let dir = data_dir(SNAPSHOT_VERSION);
    for name in SHAPES {
        let (session, delivered) = shape(name);
        let bytes = session.snapshot(at(TAKEN)).unwrap();
        let file = format!("{name}.bin");
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(&file), &bytes).unwrap();
            if let Some(delivered) = delivered {
                std::fs::write(dir.join("replayed_ephemeral.bin"), &delivered).unwrap();
            }
            eprintln!(
                "wrote {} ({} bytes)",
                dir.join(&file).display(),
                bytes.len()
            );
        }
        assert_eq!(
            bytes.as_ref(),
            read(SNAPSHOT_VERSION, &file),
            "{name}: this build writes other bytes than its version's file; \
             a format change moves SNAPSHOT_VERSION and keeps the old files"
        );
    }
}

/// Every stored version's snapshot restores in this build, with its
/// state: the peer, subscriptions, the replay window, operations, the
/// budget, a registration midway. Restored at the instant it was taken,
/// it snapshots again to exactly this build's file of the same shape:
/// nothing was lost or changed on the way.
#[test]
fn every_stored_version_restores_with_its_state() {
    let (alice_key, bob_key) = keys();
    for version in stored_versions() {
        for name in SHAPES {
            let bytes = read(version, &format!("{name}.bin"));
            assert_eq!(bytes[4], version, "{name} v{version}: its version byte");
            let context = format!("{name} (version {version})");
            let mut restored = Session::restore(&bytes, elsewhere(TAKEN, 500), [9; 32])
                .unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_eq!(restored.local_peer(), alice_key.peer_id(), "{context}");
            assert_eq!(restored.remote_peer(), Some(bob_key.peer_id()), "{context}");
            assert_eq!(
                restored.snapshot(elsewhere(TAKEN, 500)).unwrap().as_ref(),
                read(SNAPSHOT_VERSION, &format!("{name}.bin")),
                "{context}: restored, it is this build's snapshot of the same shape"
            );
            match name {
                "ephemeral" => {
                    let ephemeral = restored.ephemeral().expect("its ephemeral state");
                    assert!(ephemeral.is_subscribed(&OUR_TOPIC), "{context}");
                    for topic in &their_topics() {
                        assert!(ephemeral.remote_is_subscribed(topic), "{context}");
                    }
                    assert_eq!(ephemeral.dedup_len(), 1, "{context}");
                    let replay = Bytes::from(read(version, "replayed_ephemeral.bin"));
                    let result = receive(&mut restored, replay, elsewhere(TAKEN + 1, 500))
                        .unwrap()
                        .result;
                    assert!(
                        matches!(result, Err(Rejected::Ephemeral(_))),
                        "{context}: the replay is refused: {result:?}"
                    );
                }
                "pending" => {
                    assert_eq!(restored.operations_in_flight(), 4, "{context}");
                    assert_eq!(restored.verify_budget(), VerifyBudget::new(10, 10));
                    let queued = std::iter::from_fn(|| restored.poll_transmit()).count();
                    assert_eq!(queued, 4, "{context}: the four messages still to send");
                }
                "registration" => {
                    assert_eq!(restored.operations_in_flight(), 1, "{context}");
                    assert!(restored.has_transmit(), "{context}: the signed card");
                }
                _ => assert!(restored.ephemeral().is_none(), "{context}"),
            }
        }
    }
}

/// The stored files of every version keep the hardening: every cut and
/// every bit flip is a typed error, never a panic nor another session.
#[test]
fn every_stored_versions_corruption_is_refused() {
    for version in stored_versions() {
        for name in SHAPES {
            let bytes = read(version, &format!("{name}.bin"));
            for len in 0..bytes.len() {
                assert!(
                    Session::restore(&bytes[..len], at(TAKEN), [9; 32]).is_err(),
                    "{name} v{version}: cut at {len}"
                );
            }
            for i in 0..bytes.len() * 8 {
                let mut flipped = bytes.clone();
                flipped[i / 8] ^= 1 << (i % 8);
                let err = Session::restore(&flipped, at(TAKEN), [9; 32]).unwrap_err();
                let expected = match i / 8 {
                    0..=3 => matches!(err, RestoreError::NotASnapshot { .. }),
                    4 => matches!(
                        err,
                        RestoreError::NewerVersion { .. } | RestoreError::OlderVersion { .. }
                    ),
                    _ => matches!(err, RestoreError::Checksum { .. }),
                };
                assert!(expected, "{name} v{version}, bit {i}: {err}");
            }
        }
    }
}
