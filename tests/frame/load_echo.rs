//! Load: 32 concurrent peers x 500 signed commits each through one echo
//! server over loopback TCP. Every peer gets every frame back, byte for
//! byte, in order, and each echo verifies again; the server rejects
//! nothing. Small blobs keep it within CI time on two cores.

use std::time::{Duration, Instant};

use bijou_frame::proto::message::SedimentreeId;
use bijou_frame::signing::ed25519_dalek::SigningKey;
use bijou_test_support::echo::{connect, send_and_check, start_server, Event};
use bijou_test_support::messages::{chain_commit, frame};
use bytes::Bytes;

const PEERS: u64 = 32;
const FRAMES: u64 = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_peers_by_five_hundred_frames() {
    tokio::time::timeout(Duration::from_secs(60), run())
        .await
        .expect("bounded in time");
}

async fn run() {
    let started = Instant::now();
    let mut server = start_server(SigningKey::from_bytes(&[0x5E; 32])).await;
    let mut peers = Vec::new();
    for p in 0..PEERS {
        let addr = server.addr;
        let server_peer = server.peer;
        peers.push(tokio::spawn(async move {
            let key = SigningKey::from_bytes(&[u8::try_from(p).expect("small") + 1; 32]);
            let tree = SedimentreeId::new([u8::try_from(p).expect("small"); 32]);
            let frames: Vec<Bytes> = (0..FRAMES)
                .map(|n| {
                    frame(&chain_commit(
                        &key,
                        tree,
                        n,
                        64 + (n as usize * 37 + p as usize) % 192,
                    ))
                })
                .collect();
            let conn = connect(addr, &key, server_peer).await;
            send_and_check(conn, frames, 16).await
        }));
    }
    let mut total = 0;
    for peer in peers {
        total += peer.await.expect("peer task");
    }
    assert_eq!(total, PEERS * FRAMES);

    // The server saw every peer close after echoing all of its frames, and
    // rejected nothing.
    let mut closed = 0;
    while closed < PEERS {
        match tokio::time::timeout(Duration::from_secs(20), server.events.recv())
            .await
            .expect("event in time")
            .expect("server alive")
        {
            Event::Closed { echoed, .. } => {
                assert_eq!(echoed, FRAMES);
                closed += 1;
            }
            other => panic!("unexpected server event {other:?}"),
        }
    }
    eprintln!(
        "load: {PEERS} peers x {FRAMES} frames echoed intact in {:.2?}",
        started.elapsed()
    );
}
