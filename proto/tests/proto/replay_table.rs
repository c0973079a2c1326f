//! The ephemeral deduplication window kept per remote peer across its
//! connections ([`ReplayTable`]): a message delivered on one connection is
//! refused when the peer replays it on its next one (or on another open at
//! the same time), until its timestamp leaves the age limit; a snapshot
//! carries the window, into the same table or another process's; and the
//! table's eviction costs exactly what its docs say.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::time::Duration;

use bijou_proto::ephemeral::{EphemeralConfig, EphemeralRejected};
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{EphemeralMessage, Message, Topic, Topics};
use bijou_proto::replay_table::{ReplayTable, ReplayTableConfig};
use bijou_proto::session::{Delivered, Rejected, Session, SessionConfig, Work};
use bijou_proto::time::{Now, Timestamp};
use bijou_signing::{ed25519_dalek::SigningKey, Identity};
use bijou_test_support::pair as kit;
use bytes::Bytes;

const T0: u64 = 1_800_000_000;
const TOPIC: Topic = Topic::new([5; 32]);

fn at(secs: u64) -> Now {
    Now::new(T0 + secs, Timestamp::from_secs(secs))
}

fn host_key() -> SigningKey {
    SigningKey::from_bytes(&[1; 32])
}

fn peer_key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[0x40 + n; 32])
}

fn table(config: ReplayTableConfig) -> ReplayTable {
    ReplayTable::new(config, [8; 32])
}

/// A new connection from `peer` to the host at `now` (a new handshake,
/// new seeds: connection number `n`): the host's session, made with
/// `table`, subscribed to [`TOPIC`], and the peer's.
fn connect(table: Option<&ReplayTable>, peer: &SigningKey, n: u8, now: Now) -> (Session, Session) {
    let mut config = SessionConfig::new([n; 32]);
    config.replay_table = table.cloned();
    let configs = (SessionConfig::new([n ^ 0xFF; 32]), config);
    let responder = Responder::new(HandshakeConfig::default());
    let pair = kit::Pair::between((peer.clone(), host_key()), configs, responder, now);
    let (peer_session, mut host_session) = pair.established().into_sessions();
    host_session
        .on_send(&Message::Ephemeral(EphemeralMessage::Subscribe(
            Topics::one(TOPIC),
        )))
        .unwrap();
    (host_session, peer_session)
}

/// The message `peer` publishes on its session at `now`, as sent.
fn publish(peer: &mut Session, key: &SigningKey, payload: &[u8], now: Now) -> Bytes {
    let sealed = peer
        .sign_ephemeral(key, TOPIC, payload.to_vec(), now)
        .unwrap();
    peer.encode(&Message::Ephemeral(EphemeralMessage::from(sealed)))
        .unwrap()
}

fn receive(session: &mut Session, bytes: Bytes, now: Now) -> Result<Delivered, Rejected> {
    session.handle_message(bytes, now).unwrap();
    while session.poll_work(now) != Work::Idle {}
    session.poll_event().expect("judged").result
}

fn is_delivered(result: &Result<Delivered, Rejected>) -> bool {
    matches!(result, Ok(Delivered::Ephemeral(_)))
}

fn is_duplicate(result: &Result<Delivered, Rejected>) -> bool {
    matches!(
        result,
        Err(Rejected::Ephemeral(EphemeralRejected::Duplicate { .. }))
    )
}

/// The replay schedule of the issue: the message is delivered at +0 on
/// the first connection, then replayed on a new connection at each of
/// these offsets. Returns what each replay got, and the message.
fn replay_on_new_connections(
    table: Option<&ReplayTable>,
    offsets: &[u64],
) -> Vec<Result<Delivered, Rejected>> {
    let key = peer_key(1);
    let (mut host, mut peer) = connect(table, &key, 1, at(0));
    let message = publish(&mut peer, &key, b"hello", at(0));
    assert!(is_delivered(&receive(&mut host, message.clone(), at(0))));
    drop((host, peer)); // the connection ends
    offsets
        .iter()
        .zip(2u8..)
        .map(|(&offset, n)| {
            let (mut host, _peer) = connect(table, &key, n, at(offset));
            receive(&mut host, message.clone(), at(offset))
        })
        .collect()
}

#[test]
fn a_replay_on_the_peers_next_connection_is_refused_until_it_ages_out() {
    let table = table(ReplayTableConfig::default());
    let results = replay_on_new_connections(Some(&table), &[1, 10, 29, 30, 31]);
    for (offset, result) in [1, 10, 29, 30].iter().zip(&results) {
        assert!(is_duplicate(result), "+{offset} s: {result:?}");
    }
    assert!(
        matches!(
            results[4],
            Err(Rejected::Ephemeral(EphemeralRejected::Stale {
                max_age_secs: 30,
                ..
            }))
        ),
        "+31 s: refused by age: {:?}",
        results[4]
    );
    assert_eq!(table.len(), 1, "one peer, one window");
}

/// What the table changes: a session's own window starts empty with each
/// connection, so without a table the same replays are delivered (the
/// measurement of issue 54, item 4), and only age refuses them.
#[test]
fn without_a_table_each_new_connection_delivers_the_replay_again() {
    let results = replay_on_new_connections(None, &[1, 10, 29, 30, 31]);
    for (offset, result) in [1, 10, 29, 30].iter().zip(&results) {
        assert!(is_delivered(result), "+{offset} s: {result:?}");
    }
    assert!(matches!(
        results[4],
        Err(Rejected::Ephemeral(EphemeralRejected::Stale { .. }))
    ));
}

#[test]
fn two_open_connections_of_one_peer_share_the_window_and_other_peers_do_not() {
    let table = table(ReplayTableConfig::default());
    let (bob, carol) = (peer_key(1), peer_key(2));
    let (mut first, mut bob_first) = connect(Some(&table), &bob, 1, at(0));
    let (mut second, mut bob_second) = connect(Some(&table), &bob, 2, at(0));
    let (mut from_carol, _) = connect(Some(&table), &carol, 3, at(0));
    let on_first = publish(&mut bob_first, &bob, b"one", at(1));
    let on_second = publish(&mut bob_second, &bob, b"two", at(1));
    assert!(is_delivered(&receive(&mut first, on_first.clone(), at(1))));
    assert!(is_delivered(&receive(
        &mut second,
        on_second.clone(),
        at(1)
    )));
    // Each is refused on the other connection, both ways.
    assert!(is_duplicate(&receive(&mut second, on_first.clone(), at(2))));
    assert!(is_duplicate(&receive(&mut first, on_second, at(2))));
    // Another peer relaying the same message has its own window.
    assert!(is_delivered(&receive(&mut from_carol, on_first, at(2))));
    assert!(first.ephemeral().unwrap().window_is_shared());
    assert_eq!(table.len(), 2);
}

#[test]
fn a_restored_session_keeps_refusing_in_its_table_or_another_or_none() {
    let key = peer_key(1);
    let table = table(ReplayTableConfig::default());
    let (mut host, mut peer) = connect(Some(&table), &key, 1, at(0));
    let message = publish(&mut peer, &key, b"hello", at(0));
    assert!(is_delivered(&receive(&mut host, message.clone(), at(0))));
    let snapshot = host.snapshot(at(1)).unwrap();

    // Another process: a new table. The restored session refuses the
    // replay, and so does the peer's next connection there: the window
    // went back into the new table.
    let elsewhere = ReplayTable::new(ReplayTableConfig::default(), [9; 32]);
    let mut restored =
        Session::restore_with_replay_table(&snapshot, at(2), [3; 32], &elsewhere).unwrap();
    assert!(is_duplicate(&receive(
        &mut restored,
        message.clone(),
        at(2)
    )));
    assert!(elsewhere.holds(&key.peer_id()));
    let (mut next, _) = connect(Some(&elsewhere), &key, 2, at(3));
    assert!(is_duplicate(&receive(&mut next, message.clone(), at(3))));

    // No table: the window is the restored session's own.
    let mut alone = Session::restore(&snapshot, at(2), [3; 32]).unwrap();
    assert!(!alone.ephemeral().unwrap().window_is_shared());
    assert!(is_duplicate(&receive(&mut alone, message.clone(), at(2))));

    // The same table, the first session still open: merged into the one
    // window, so what either delivers next is refused on the other.
    let mut twin = Session::restore_with_replay_table(&snapshot, at(2), [4; 32], &table).unwrap();
    assert!(is_duplicate(&receive(&mut twin, message, at(2))));
    let later = publish(&mut peer, &key, b"later", at(3));
    assert!(is_delivered(&receive(&mut host, later.clone(), at(3))));
    assert!(is_duplicate(&receive(&mut twin, later, at(3))));
    assert_eq!(table.len(), 1);
}

/// A snapshot of a session whose window came from a table restored where
/// the peer already has a window under another key (another process's
/// table): the hashes cannot be compared, so the floor covers the whole
/// snapshot's window: its messages are refused as possible replays, and
/// a message stamped after it is delivered.
#[test]
fn a_window_from_another_key_is_covered_by_the_floor() {
    let key = peer_key(1);
    let first_table = table(ReplayTableConfig::default());
    let (mut host, mut peer) = connect(Some(&first_table), &key, 1, at(0));
    let message = publish(&mut peer, &key, b"hello", at(0));
    assert!(is_delivered(&receive(&mut host, message.clone(), at(0))));
    let snapshot = host.snapshot(at(1)).unwrap();

    let other_table = ReplayTable::new(ReplayTableConfig::default(), [9; 32]);
    let (mut live, mut live_peer) = connect(Some(&other_table), &key, 2, at(1));
    let earlier = publish(&mut live_peer, &key, b"earlier", at(1));
    assert!(is_delivered(&receive(&mut live, earlier, at(1))));
    let mut restored =
        Session::restore_with_replay_table(&snapshot, at(2), [3; 32], &other_table).unwrap();
    assert!(matches!(
        receive(&mut restored, message, at(2)),
        Err(Rejected::Ephemeral(
            EphemeralRejected::PossibleReplay { .. }
        ))
    ));
    let fresh = publish(&mut live_peer, &key, b"fresh", at(2));
    assert!(is_delivered(&receive(&mut restored, fresh.clone(), at(2))));
    assert!(is_duplicate(&receive(&mut live, fresh, at(2))));
}

/// The documented cost of eviction: a peer whose window was pushed out
/// by others (no session of its holding it) starts empty on its next
/// connection, and a replay is delivered once more; a peer with an open
/// connection keeps refusing on it, even when the table evicts its window.
#[test]
fn eviction_forgets_the_least_recent_unheld_window_as_documented() {
    let mut config = ReplayTableConfig::default();
    config.peers = 1;
    let table = table(config);
    let (bob, carol) = (peer_key(1), peer_key(2));
    let (mut host, mut peer) = connect(Some(&table), &bob, 1, at(0));
    let message = publish(&mut peer, &bob, b"hello", at(0));
    assert!(is_delivered(&receive(&mut host, message.clone(), at(0))));

    // Bob's connection is still open: Carol's window evicts his from the
    // table, and his session keeps it.
    let (mut from_carol, mut carol_peer) = connect(Some(&table), &carol, 2, at(1));
    let hers = publish(&mut carol_peer, &carol, b"hers", at(1));
    assert!(is_delivered(&receive(&mut from_carol, hers, at(1))));
    assert_eq!(table.evictions(), 1);
    assert!(!table.holds(&bob.peer_id()));
    assert!(is_duplicate(&receive(&mut host, message.clone(), at(2))));

    drop((host, peer));
    let (mut next, _) = connect(Some(&table), &bob, 3, at(3));
    assert!(
        is_delivered(&receive(&mut next, message, at(3))),
        "an evicted window is forgotten: the cost the docs state"
    );
    assert_eq!(table.len(), 1);
}

/// A table that remembers less than the session's age limit: messages
/// older than the table's age are refused as stale (never delivered
/// unchecked), and the error says the age that applied.
#[test]
fn a_table_with_a_shorter_age_refuses_what_it_cannot_remember() {
    let mut config = ReplayTableConfig::default();
    config.max_age = Duration::from_secs(10);
    let table = table(config);
    let key = peer_key(1);
    let (mut host, mut peer) = connect(Some(&table), &key, 1, at(0));
    assert_eq!(
        host.ephemeral().unwrap().config().max_age,
        EphemeralConfig::default().max_age
    );
    let old = publish(&mut peer, &key, b"old", at(0));
    assert!(matches!(
        receive(&mut host, old, at(20)),
        Err(Rejected::Ephemeral(EphemeralRejected::Stale {
            max_age_secs: 10,
            ..
        }))
    ));
    let recent = publish(&mut peer, &key, b"recent", at(15));
    assert!(is_delivered(&receive(&mut host, recent, at(20))));
}

/// One peer's flood fills its own window only: another peer's messages
/// are delivered and their replays refused as usual.
#[test]
fn a_flood_from_one_peer_leaves_other_peers_windows_alone() {
    let mut config = ReplayTableConfig::default();
    config.entries_per_peer = 16;
    let table = table(config);
    let (bob, carol) = (peer_key(1), peer_key(2));
    let (mut from_bob, mut bob_peer) = connect(Some(&table), &bob, 1, at(0));
    let (mut from_carol, mut carol_peer) = connect(Some(&table), &carol, 2, at(0));
    for i in 0..64u8 {
        let flood = publish(&mut bob_peer, &bob, &[i], at(0));
        let _ = receive(&mut from_bob, flood, at(0));
        assert!(from_bob.ephemeral().unwrap().dedup_len() <= 16);
    }
    let hers = publish(&mut carol_peer, &carol, b"hers", at(0));
    assert!(is_delivered(&receive(&mut from_carol, hers.clone(), at(0))));
    assert!(is_duplicate(&receive(&mut from_carol, hers, at(1))));
}
