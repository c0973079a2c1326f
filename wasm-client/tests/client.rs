//! The minimal client against a real responder and a server session: the
//! handshake, a push delivered verified, and a fetch answered with it.

use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{
    BatchSyncResponse, Message, RemoteHeads, SyncDiff, SyncMessage, SyncResult,
};
use bijou_proto::session::{Delivered, Session, SessionConfig, Work};
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
    let push = client.push([5; 32], [6; 32], b"hello").expect("push");
    let Delivered::Sync(pushed) = delivered(&mut server, push) else {
        panic!("a sync message");
    };
    assert_eq!(pushed.items.len(), 1);
    let SyncMessage::LooseCommit(commit) = pushed.message else {
        panic!("a LooseCommit");
    };

    // Fetch: the server answers the request's nonce with the commit.
    let (nonce, fetch) = client.fetch([5; 32]).expect("fetch");
    let Delivered::Sync(request) = delivered(&mut server, fetch) else {
        panic!("a sync message");
    };
    let SyncMessage::BatchSyncRequest(request) = request.message else {
        panic!("a BatchSyncRequest");
    };
    assert_eq!(request.nonce, nonce);
    let response = Message::Sync(SyncMessage::BatchSyncResponse(BatchSyncResponse {
        requestor: request.requestor,
        nonce,
        id: request.id,
        result: SyncResult::Ok(SyncDiff::new(vec![commit.item], Vec::new(), [], [])),
        responder_heads: RemoteHeads::default(),
    }));
    let bytes = server.encode(&response).expect("encode");
    let received = client
        .receive(bytes, now)
        .expect("not busy")
        .expect("delivered");
    let verified = received
        .result
        .expect("verified")
        .into_sync()
        .expect("sync");
    assert_eq!(verified.items.len(), 1);
    assert!(verified.rejected.is_empty());
    let SyncMessage::BatchSyncResponse(answer) = verified.message else {
        panic!("a BatchSyncResponse");
    };
    assert_eq!(answer.nonce, nonce);
}
