//! Hostile peers, finding 3: CPU amplification. A peer that completed the
//! handshake must not make us verify more signatures than it sent distinct
//! signed items, nor take a whole core.

use std::time::Duration;

use bijou_codec::Wire;
use bijou_net::handshake::ConnectConfig;
use bijou_net::{Connection, TokioClock};
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{
    Audience, BatchSyncResponse, CommitId, LooseCommit, Message, MessageError, RemoteHeads,
    SedimentreeId, SignedItem, SyncDiff, SyncMessage, SyncResult,
};
use bijou_proto::session::{Rejected, SessionConfig};
use bijou_proto::time::Now;
use bijou_proto::verify_budget::VerifyBudget;
use bijou_signing::{ed25519_dalek::SigningKey, Blob, Identity, Signed};
use bijou_test_support::connections::{duplex_pair, DuplexConnection};

const NOW: u64 = 1_800_000_000;
const TREE: SedimentreeId = SedimentreeId::new([5; 32]);

/// Wall time fixed at `NOW`; monotonic time from tokio's clock, so the
/// tests with paused time drive the budget's waits.
fn config() -> ConnectConfig {
    let mut c = ConnectConfig::default();
    c.clock = TokioClock::fixed(NOW);
    c
}

async fn pair() -> (DuplexConnection, DuplexConnection) {
    let (client, server) = (
        SigningKey::from_bytes(&[1; 32]),
        SigningKey::from_bytes(&[2; 32]),
    );
    duplex_pair(&client, &server, &config()).await
}

fn commit(i: u32) -> SignedItem<LooseCommit> {
    let blob = Blob::from(i.to_be_bytes().to_vec());
    let mut head = [0u8; 32];
    head[..4].copy_from_slice(&i.to_be_bytes());
    let commit = LooseCommit::new(TREE, CommitId::new(head), [], blob.meta());
    SignedItem::new(
        Signed::seal(&SigningKey::from_bytes(&[9; 32]), &commit).expect("seal"),
        blob,
    )
}

fn response(commits: Vec<SignedItem<LooseCommit>>) -> SyncMessage {
    SyncMessage::BatchSyncResponse(BatchSyncResponse {
        requestor: SigningKey::from_bytes(&[2; 32]).peer_id(),
        nonce: 1,
        id: TREE,
        result: SyncResult::Ok(SyncDiff::new(commits, vec![], [], [])),
        responder_heads: RemoteHeads::default(),
    })
}

/// The finding: one valid signed commit repeated 65,535 times (about
/// 18 MB) cost about 3.8 s of `verify_strict`. Now the repeat is refused
/// while decoding, before any signature is verified, and the connection
/// stays up.
#[tokio::test]
async fn a_diff_repeating_one_signed_commit_costs_no_verification() {
    let (mut client, mut server) = pair().await;
    let one = response(vec![commit(1)]).encode().expect("encode");
    let item = commit(1).encode().expect("encode");
    let counts_at = 9 + 32 + 8 + 32 + 1;
    let items_at = counts_at + 8;
    let mut wire = one[..items_at].to_vec();
    wire[counts_at..counts_at + 2].copy_from_slice(&u16::MAX.to_be_bytes());
    for _ in 0..u16::MAX {
        wire.extend_from_slice(&item);
    }
    wire.extend_from_slice(&one[items_at + item.len()..]);
    let total = u32::try_from(wire.len()).expect("fits");
    wire[4..8].copy_from_slice(&total.to_be_bytes());
    assert!(wire.len() > 10_000_000);

    let started = std::time::Instant::now();
    let (sent, received) = tokio::join!(client.send_bytes(wire.into()), server.recv());
    sent.expect("send");
    let received = received.expect("frame").expect("one");
    let elapsed = started.elapsed();
    assert!(
        matches!(
            received.result,
            Err(Rejected::Malformed(MessageError::DuplicateItem {
                index: 1,
                first: 0,
                ..
            }))
        ),
        "{:?}",
        received.result.map(|_| ())
    );
    eprintln!("65,535 repeats of one commit refused in {elapsed:?} (no verification)");

    // The connection is still up.
    let msg = Message::Sync(response(vec![commit(2)]));
    let (sent, ok) = tokio::join!(client.send(&msg), server.recv());
    sent.expect("send");
    let ok = ok.expect("frame").expect("one");
    assert_eq!(
        ok.result
            .expect("verified")
            .into_sync()
            .expect("sync")
            .items
            .len(),
        1
    );
}

/// The budget paces verification: 300 distinct valid commits against a
/// budget of 100 per second with bursts of 100 take at least 2 s (of the
/// runtime's clock, paused here so the test does not wait).
#[tokio::test(start_paused = true)]
async fn the_verification_budget_paces_a_peer() {
    let (mut client, mut server) = pair().await;
    server.set_verify_budget(VerifyBudget::new(100, 100));
    let msg = Message::Sync(response((0..300).map(commit).collect()));
    let started = tokio::time::Instant::now();
    let (sent, received) = tokio::join!(client.send(&msg), server.recv());
    sent.expect("send");
    let received = received.expect("frame").expect("one");
    let waited = started.elapsed();
    assert_eq!(
        received
            .result
            .expect("verified")
            .into_sync()
            .expect("sync")
            .items
            .len(),
        300
    );
    assert!(
        waited >= Duration::from_secs(2),
        "300 verifications at 100/s after a burst of 100 took {waited:?}"
    );
    // The default budget lets the same message through without waiting.
    let (mut client, mut server) = pair().await;
    let started = tokio::time::Instant::now();
    let (sent, received) = tokio::join!(client.send(&msg), server.recv());
    sent.expect("send");
    received.expect("frame").expect("one");
    assert!(started.elapsed() < Duration::from_millis(100));
}

/// `recv` is cancel safe: a message waiting for budget when the future is
/// dropped (a timeout here) is not lost; the next call returns it.
#[tokio::test(start_paused = true)]
async fn a_cancelled_recv_loses_no_message() {
    let (mut client, mut server) = pair().await;
    server.set_verify_budget(VerifyBudget::new(1, 1));
    for i in 1..=3 {
        client
            .send(&Message::Sync(response(vec![commit(i)])))
            .await
            .expect("send");
    }
    let head = |received: bijou_proto::session::Received| match received
        .result
        .expect("verified")
        .into_sync()
        .expect("sync")
        .message
    {
        SyncMessage::BatchSyncResponse(BatchSyncResponse {
            result: SyncResult::Ok(diff),
            ..
        }) => diff.commits()[0].clone(),
        other => panic!("{other:?}"),
    };
    let first = server.recv().await.expect("frame").expect("one");
    assert_eq!(head(first), commit(1));
    // The budget is spent: the next message waits a second, and the caller
    // gives up after 100 ms.
    let cancelled = tokio::time::timeout(Duration::from_millis(100), server.recv()).await;
    assert!(cancelled.is_err());
    for i in 2..=3 {
        let received = server.recv().await.expect("frame").expect("one");
        assert_eq!(head(received), commit(i), "message {i}");
    }
}

/// The budget's waits need no tokio reactor: a `Connection` over a
/// channel (`LengthChecked`), driven by `futures::executor`, waits for its
/// budget on a sleeping thread (it used to panic: "there is no reactor
/// running"). 30 commits spend a burst of 10 and 20 more, so the next
/// message waits until 21 tokens have come back at 100/s: about 0.21 s.
#[test]
fn the_budget_waits_without_a_tokio_runtime() {
    use bijou_net::transport::LengthChecked;
    use bijou_proto::handshake::Initiator;
    use futures::StreamExt;

    let (alice, bob) = (
        SigningKey::from_bytes(&[1; 32]),
        SigningKey::from_bytes(&[2; 32]),
    );
    let initiator = Initiator::new(
        &alice,
        Audience::Known(bob.peer_id()),
        Now::from_secs(NOW),
        [3; 16],
    )
    .expect("challenge");
    let answer = Responder::new(HandshakeConfig::default()).answer(
        &bob,
        initiator.challenge().clone(),
        Now::from_secs(NOW),
    );
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<bytes::Bytes, std::io::Error>>();
    let mut conn = Connection::established(
        LengthChecked::new(rx, futures::sink::drain()),
        bob.peer_id(),
        answer.outcome.expect("accepted"),
        SessionConfig::new([2; 32]),
    );
    conn.set_verify_budget(VerifyBudget::new(100, 10));
    for commits in [(0..30).map(commit).collect(), vec![commit(31)]] {
        tx.unbounded_send(Ok(response(commits).encode().expect("encode")))
            .expect("queued");
    }
    let started = std::time::Instant::now();
    for want in [30, 1] {
        let received = futures::executor::block_on(conn.next())
            .expect("one")
            .expect("transport");
        let verified = received
            .result
            .expect("verified")
            .into_sync()
            .expect("sync");
        assert_eq!(verified.items.len(), want);
    }
    assert!(
        started.elapsed() >= Duration::from_millis(190),
        "{:?}",
        started.elapsed()
    );
}

/// A loop that takes message after message from a full buffer (a server
/// answering a flood: recv, handle, recv) still gives the thread back:
/// the yield clock runs from when the receive loop last waited, across
/// polls. Before, each poll restarted it, so with every message already
/// buffered such a loop never returned `Pending`, and an honest peer on
/// the same core waited behind the whole flood (p99 57 ms beside 4
/// flooders with 10,000 held connections, `bijou load`).
#[tokio::test]
async fn a_loop_over_a_full_buffer_still_yields() {
    use futures::StreamExt as _;
    use std::task::{Context, Poll};

    const COMMITS: u32 = 200;
    let (mut client, mut server) = pair().await;
    for i in 1..=COMMITS {
        let message = SyncMessage::LooseCommit(bijou_proto::message::BlobMessage {
            id: TREE,
            sender_heads: RemoteHeads::default(),
            item: commit(i),
        });
        client.feed(Message::Sync(message)).await.expect("feed");
    }
    client.flush().await.expect("flush");
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let (mut received, mut yields) = (0, 0);
    let started = std::time::Instant::now();
    while received < COMMITS {
        match server.poll_next_unpin(&mut cx) {
            Poll::Ready(Some(Ok(r))) => {
                assert!(r.result.is_ok(), "commit {} rejected", received + 1);
                received += 1;
            }
            // Every message is in the pipe already: a `Pending` is a yield.
            Poll::Pending => yields += 1,
            other => panic!("after {received} commits: {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(60), "stuck");
    }
    let verify_time = started.elapsed();
    // 200 verifications take at least 5 ms (25 µs each, faster than
    // this machine's): at one yield per 0.5 ms of work, some yields.
    assert!(
        yields > 0,
        "{COMMITS} commits verified in {verify_time:?} without giving the thread back once"
    );
}
