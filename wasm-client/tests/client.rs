//! The minimal client against a real responder and a server session: the
//! handshake, a push delivered verified and acknowledged, and a fetch
//! answered with it, each ending its operation once.

use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{
    BatchSyncResponse, CommitId, HeadsUpdate, Message, RemoteHeads, SyncDiff, SyncMessage,
    SyncResult,
};
use bijou_proto::session::{Delivered, Outcome, Session, SessionConfig, Work};
use bijou_proto::time::Now;
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::Identity;
use bijou_wasm_client::connect;

const NOW: u64 = 1_800_000_000;

fn delivered(session: &mut Session, bytes: bytes::Bytes) -> Delivered {
    let now = Now::from_secs(NOW);
    session.handle_message(bytes, now).expect("wants it");
    while let Work::More = session.poll_work(now) {}
    session
        .poll_event()
        .expect("an event")
        .result
        .expect("accepted")
}

#[test]
fn handshake_push_and_fetch_against_a_server_session() {
    let server_key = SigningKey::from_bytes(&[2; 32]);
    let now = Now::from_secs(NOW);
    let (handshaking, challenge) =
        connect([1; 32], *server_key.peer_id().as_bytes(), now, [7; 32]).expect("challenge");
    let answer = Responder::new(HandshakeConfig::default()).answer(&server_key, challenge, now);
    let mut server = Session::new(
        server_key.peer_id(),
        answer.outcome.expect("accepted"),
        SessionConfig::new([9; 32]),
    );
    let mut client = handshaking
        .finish(answer.reply.expect("a response"))
        .expect("authenticated");
    assert_eq!(client.session().remote_peer(), server_key.peer_id());

    // Push: the server verifies the commit and its blob.
    let (push_id, push) = client.push([5; 32], [6; 32], b"hello", now).expect("push");
    let Delivered::Sync(pushed) = delivered(&mut server, push) else {
        panic!("a sync message");
    };
    assert_eq!(pushed.items.len(), 1);
    let SyncMessage::LooseCommit(commit) = pushed.message else {
        panic!("a LooseCommit");
    };
    let ack = Message::Sync(SyncMessage::HeadsUpdate(HeadsUpdate {
        id: commit.id,
        heads: RemoteHeads::new(1, [CommitId::new([6; 32])]),
    }));
    let ack = server.encode(&ack).expect("encode");
    assert!(
        client.receive(ack, now).expect("not busy").is_none(),
        "taken by the push"
    );
    let done = client.completed().expect("the push ended");
    assert_eq!(done.id, push_id);
    assert!(
        matches!(done.result, Ok(Outcome::Pushed { .. })),
        "{done:?}"
    );

    // Fetch: the server answers the request's nonce with the commit.
    let (fetch_id, fetch) = client.fetch([5; 32], now).expect("fetch");
    let Delivered::Sync(request) = delivered(&mut server, fetch) else {
        panic!("a sync message");
    };
    let SyncMessage::BatchSyncRequest(request) = request.message else {
        panic!("a BatchSyncRequest");
    };
    let nonce = request.nonce;
    let response = Message::Sync(SyncMessage::BatchSyncResponse(BatchSyncResponse {
        requestor: request.requestor,
        nonce,
        id: request.id,
        result: SyncResult::Ok(SyncDiff::new(vec![commit.item], Vec::new(), [], [])),
        responder_heads: RemoteHeads::default(),
    }));
    let bytes = server.encode(&response).expect("encode");
    assert!(
        client.receive(bytes, now).expect("not busy").is_none(),
        "taken by the fetch"
    );
    let done = client.completed().expect("the fetch ended");
    assert_eq!(done.id, fetch_id);
    let Ok(Outcome::Fetched(verified)) = done.result else {
        panic!("{:?}", done.result);
    };
    assert_eq!(verified.items.len(), 1);
    assert!(verified.rejected.is_empty());
    assert!(client.completed().is_none(), "each ends once");
}
