//! The minimal client against a real server session: the handshake, a
//! push delivered verified and acknowledged, and a fetch answered with it,
//! each ending its operation once; then the program built from it, fed
//! the same server's messages, does and sends the same.

use std::io::Write;
use std::process::{Command, Stdio};

use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::{
    BatchSyncResponse, CommitId, HeadsUpdate, Message, RemoteHeads, SyncDiff, SyncMessage,
    SyncResult,
};
use bijou_proto::session::{
    Delivered, Event, Outcome, Output, Received, Session, SessionConfig, SignRequest,
};
use bijou_proto::time::Now;
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::Identity;
use bijou_wasm_client::{connect, Client, ClientError};
use bytes::Bytes;

const NOW: u64 = 1_800_000_000;
const KEY: [u8; 32] = [1; 32];
const SERVER_KEY: [u8; 32] = [2; 32];
const SEED: [u8; 32] = [7; 32];
// What the program pushes and fetches: its key as the tree, its seed as
// the head, its key as the blob.
const TREE: [u8; 32] = KEY;
const HEAD: [u8; 32] = SEED;

/// One side of the connection, as the driver loop sees it.
trait Side {
    fn poll(&mut self, now: Now) -> Output;
    fn sign(&mut self, request: &SignRequest);
}

impl Side for Client {
    fn poll(&mut self, now: Now) -> Output {
        Client::poll(self, now)
    }

    fn sign(&mut self, request: &SignRequest) {
        Client::sign(self, request).expect("our own request");
    }
}

struct Server {
    key: SigningKey,
    session: Session,
}

impl Side for Server {
    fn poll(&mut self, now: Now) -> Output {
        self.session.poll(now)
    }

    fn sign(&mut self, request: &SignRequest) {
        self.session
            .sign_with(request, &self.key)
            .expect("our own request");
    }
}

/// What one side's loop handed out until it waited.
#[derive(Debug, Default)]
struct Turn {
    sent: Vec<Bytes>,
    events: Vec<Event>,
    read: bool,
}

/// The driver loop, until the side waits.
fn turn(side: &mut impl Side, now: Now) -> Turn {
    let mut turn = Turn::default();
    loop {
        match side.poll(now) {
            Output::Sign(request) => side.sign(&request),
            Output::Transmit(bytes) => turn.sent.push(bytes),
            Output::Event(event) => turn.events.push(event),
            Output::Continue => {}
            Output::Wait { read, .. } => {
                turn.read = read;
                return turn;
            }
        }
    }
}

fn one<T: std::fmt::Debug>(mut items: Vec<T>) -> T {
    assert_eq!(items.len(), 1, "{items:?}");
    items.remove(0)
}

fn received(event: Event) -> Received {
    match event {
        Event::Received(received) => received,
        other => panic!("a received message, not {other:?}"),
    }
}

/// Both sides' messages, in the order each sent them.
struct Transcript {
    client: Vec<Bytes>,
    server: Vec<Bytes>,
}

/// The client against a server session; asserts each step.
fn handshake_push_and_fetch() -> Transcript {
    let now = Now::from_secs(NOW);
    let server_key = SigningKey::from_bytes(&SERVER_KEY);
    let client_key = SigningKey::from_bytes(&KEY);
    let mut client = connect(KEY, *server_key.peer_id().as_bytes(), now, SEED);
    let mut server = Server {
        session: Session::server(
            server_key.verifying_key(),
            Responder::new(HandshakeConfig::default()),
            now,
            SessionConfig::new([9; 32]),
        ),
        key: server_key,
    };
    let mut transcript = Transcript {
        client: Vec::new(),
        server: Vec::new(),
    };

    // The handshake: the client signs and sends its challenge, the server
    // answers; each side is established once.
    let mut out = turn(&mut client, now);
    assert!(out.events.is_empty(), "{:?}", out.events);
    assert!(out.read, "the client waits for the response");
    assert!(
        matches!(
            client.push(TREE, HEAD, &KEY, now),
            Err(ClientError::NotOpen)
        ),
        "nothing is pushed before the server is authenticated"
    );
    let challenge = one(out.sent);
    transcript.client.push(challenge.clone());
    server.session.handle_message(challenge, now).expect("read");
    out = turn(&mut server, now);
    let Event::Established(peer) = one(out.events) else {
        panic!("established");
    };
    assert_eq!(peer.peer(), client_key.peer_id());
    let response = one(out.sent);
    transcript.server.push(response.clone());
    client.receive(response, now).expect("read");
    out = turn(&mut client, now);
    let Event::Established(peer) = one(out.events) else {
        panic!("established");
    };
    assert_eq!(peer.peer(), server.key.peer_id());
    assert!(out.sent.is_empty(), "{:?}", out.sent);

    // Push: the server verifies the commit and its blob and acknowledges
    // it; the acknowledgement ends the push and is not also delivered.
    let push_id = client.push(TREE, HEAD, &KEY, now).expect("push");
    out = turn(&mut client, now);
    assert!(out.events.is_empty(), "{:?}", out.events);
    let push = one(out.sent);
    transcript.client.push(push.clone());
    server.session.handle_message(push, now).expect("read");
    out = turn(&mut server, now);
    assert!(out.sent.is_empty(), "{:?}", out.sent);
    let Ok(Delivered::Sync(pushed)) = received(one(out.events)).result else {
        panic!("a verified sync message");
    };
    assert_eq!(pushed.items.len(), 1);
    let SyncMessage::LooseCommit(commit) = pushed.message else {
        panic!("a LooseCommit");
    };
    let ack = Message::Sync(SyncMessage::HeadsUpdate(HeadsUpdate {
        id: commit.id,
        heads: RemoteHeads::new(1, [CommitId::new(HEAD)]),
    }));
    server.session.send(ack).expect("open");
    let ack = one(turn(&mut server, now).sent);
    transcript.server.push(ack.clone());
    client.receive(ack, now).expect("read");
    let Event::Completed(done) = one(turn(&mut client, now).events) else {
        panic!("the push ended");
    };
    assert_eq!(done.id, push_id);
    assert!(
        matches!(done.result, Ok(Outcome::Pushed { .. })),
        "{done:?}"
    );

    // Fetch: the server answers the request's nonce with the commit.
    let fetch_id = client.fetch(TREE, now).expect("fetch");
    let fetch = one(turn(&mut client, now).sent);
    transcript.client.push(fetch.clone());
    server.session.handle_message(fetch, now).expect("read");
    let Ok(Delivered::Sync(request)) = received(one(turn(&mut server, now).events)).result else {
        panic!("a verified sync message");
    };
    let SyncMessage::BatchSyncRequest(request) = request.message else {
        panic!("a BatchSyncRequest");
    };
    let response = Message::Sync(SyncMessage::BatchSyncResponse(BatchSyncResponse {
        requestor: request.requestor,
        nonce: request.nonce,
        id: request.id,
        result: SyncResult::Ok(SyncDiff::new(vec![commit.item], Vec::new(), [], [])),
        responder_heads: RemoteHeads::default(),
    }));
    server.session.send(response).expect("open");
    let response = one(turn(&mut server, now).sent);
    transcript.server.push(response.clone());
    client.receive(response, now).expect("read");
    out = turn(&mut client, now);
    let Event::Completed(done) = one(out.events) else {
        panic!("the fetch ended");
    };
    assert_eq!(done.id, fetch_id);
    let Ok(Outcome::Fetched(verified)) = done.result else {
        panic!("{:?}", done.result);
    };
    assert_eq!(verified.items.len(), 1);
    assert!(verified.rejected.is_empty());
    assert!(out.read, "each ends once, and the client reads on");

    // The server goes: the client closes, once.
    client.handle_close();
    out = turn(&mut client, now);
    assert!(out.sent.is_empty(), "{:?}", out.sent);
    assert!(
        matches!(one(out.events), Event::Closed(close) if !close.is_handshake()),
        "closed by the peer"
    );
    assert!(client.session().is_closed());
    transcript
}

#[test]
fn handshake_push_and_fetch_against_a_server_session() {
    let transcript = handshake_push_and_fetch();
    assert_eq!(transcript.client.len(), 3);
    assert_eq!(transcript.server.len(), 3);
}

/// What the program writes for a message it sent.
fn sent(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![b'T'];
    out.extend_from_slice(&u32::try_from(bytes.len()).expect("small").to_be_bytes());
    out.extend_from_slice(bytes);
    out
}

#[test]
fn the_program_runs_the_same_exchange() {
    let transcript = handshake_push_and_fetch();
    let server = SigningKey::from_bytes(&SERVER_KEY).peer_id();
    let mut input = Vec::new();
    input.extend_from_slice(&KEY);
    input.extend_from_slice(server.as_bytes());
    input.extend_from_slice(&NOW.to_be_bytes());
    input.extend_from_slice(&SEED);
    for message in &transcript.server {
        input.extend_from_slice(&u32::try_from(message.len()).expect("small").to_be_bytes());
        input.extend_from_slice(message);
    }

    let mut child = Command::new(env!("CARGO_BIN_EXE_bijou-wasm-client"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the program starts");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(&input)
        .expect("the program reads its input");
    let output = child.wait_with_output().expect("the program ends");
    assert!(output.status.success(), "{output:?}");

    // Its challenge, then its push and fetch as soon as it is
    // established, both ended by the server's answers, then closed at the
    // input's end: the same bytes as the library's run.
    let [challenge, push, fetch] = &transcript.client[..] else {
        panic!("three messages");
    };
    let mut expected = sent(challenge);
    expected.push(b'E');
    expected.extend(sent(push));
    expected.extend(sent(fetch));
    expected.extend_from_slice(b"C\x01C\x01X");
    assert_eq!(output.stdout, expected);
}

/// Built without bijou-proto's `keyhive` feature, as the client ships: a
/// snapshot taken with a registration in flight names the feature it
/// needs, rather than being called corrupt.
#[test]
fn a_snapshot_with_a_registration_names_the_missing_feature() {
    use bijou_proto::session::snapshot::RestoreError;
    use bijou_proto::time::Timestamp;

    let bytes = include_bytes!("../../proto/tests/data/snapshot/v2/registration.bin");
    let now = Now::new(NOW + 4, Timestamp::from_secs(4));
    match Session::restore(bytes, now, [9; 32]) {
        Err(RestoreError::Invalid { field, reason }) => {
            assert_eq!(field, "operation kind");
            assert!(reason.contains("`keyhive` feature"), "{reason}");
        }
        other => panic!("expected the missing feature named, got {other:?}"),
    }
}
