//! What an idle long-poll client holds: 1,000 of our clients
//! (`Connection` over `LongPollTransport`) connected to Subduction's
//! long-poll server and node (`longpoll_support/their_server.rs`), which
//! runs in a child process (this test binary, run again) so that the
//! counting allocator sees the clients only.
//!
//! Each client completes the handshake, fetches a tree (a request out, a
//! response back: both tasks and both HTTP connections in use), and then
//! sits idle with one `/lp/recv` held by the server. The heap they hold is
//! measured after the handshake and again idle after the exchange, per
//! client: the `Connection` and its session, the transport and its shared
//! state, the sender and poller tasks, the two hyper client connections
//! with their buffers and driver tasks, the held request, and the
//! sockets' share of tokio's bookkeeping.
//!
//! Measured: about 31 KB per client after the handshake, 62 KB idle after
//! the exchange. Most of it is hyper's: each HTTP/1 client connection
//! keeps an 8 KiB header write buffer from its start and an 8 KiB read
//! buffer once it reads, and there are two connections per client (the
//! sender's and the poller's); the two tasks' futures are about 1.8 and
//! 1.5 KB. The bound asserted is a generous 96 KiB.
//!
//! Run alone: it needs about 2,000 file descriptors in each process and
//! raises `RLIMIT_NOFILE`.

use std::alloc::System;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::longpoll::{self, LongPollTransport};
use bijou_net::Connection;
use bijou_proto::message::{
    Audience, BatchSyncRequest, FingerprintSeed, Message, SedimentreeId, SyncMessage,
};
use bijou_signing::ed25519_dalek::SigningKey;
use cap::Cap;
use futures::StreamExt;
use tokio::time::timeout;

mod longpoll_support {
    pub mod their_server;
}
use longpoll_support::their_server::{start_their_server, SERVICE};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const CLIENTS: usize = 1_000;
/// At most this many bytes per idle client after the exchange.
const IDLE_BOUND: usize = 96 * 1024;
/// Set in the child process's environment: it serves.
const SERVER_ENV: &str = "BIJOU_LONGPOLL_IDLE_SERVER";
/// The line the child prints once it listens, followed by its URL.
const LISTENING: &str = "LISTENING ";

/// The server process: Subduction's long-poll server and node, until its
/// standard input ends. Runs only when started by the test below.
#[test]
#[ignore = "the server process of an_idle_long_poll_client_holds_little, which starts it"]
fn their_server_process() {
    if std::env::var_os(SERVER_ENV).is_none() {
        return;
    }
    rlimit::increase_nofile_limit((4 * CLIENTS + 256) as u64).expect("raise RLIMIT_NOFILE");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let server = start_their_server(Duration::from_secs(30)).await;
        println!("{LISTENING}{}", server.url);
        tokio::task::spawn_blocking(|| {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
        })
        .await
        .ok();
    });
    std::process::exit(0);
}

/// The child process, killed when dropped.
struct ServerProcess {
    child: Child,
    url: String,
}

impl ServerProcess {
    fn start() -> Self {
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "their_server_process",
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .env(SERVER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the server process");
        let stdout = child.stdout.take().expect("its stdout");
        let url = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.strip_prefix(LISTENING).map(str::to_owned))
            .expect("the server process listens");
        Self { child, url }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn connect_clients(url: &str, n: usize) -> Vec<Connection<LongPollTransport>> {
    let mut clients = Vec::with_capacity(n);
    let key = SigningKey::from_bytes(&[1; 32]);
    let mut config = ConnectConfig::default();
    config.timeout = Duration::from_secs(30);
    for _ in 0..n {
        let transport = longpoll::connect(url).await.expect("connect");
        let conn = Connection::connect(
            transport,
            &key,
            Audience::discover(SERVICE.as_bytes()),
            &config,
        )
        .await
        .expect("handshake");
        clients.push(conn);
    }
    clients
}

/// Each client fetches a tree and gets the answer.
async fn exchange(clients: &mut [Connection<LongPollTransport>]) {
    let tree = SedimentreeId::new([7; 32]);
    let seed = FingerprintSeed::new(1, 2);
    for (nonce, conn) in (1..).zip(clients.iter_mut()) {
        let request = BatchSyncRequest::new(tree, conn.local_peer(), nonce, false, seed, [], []);
        conn.send(Message::from(SyncMessage::BatchSyncRequest(request)))
            .await
            .expect("send");
        let reply = timeout(Duration::from_secs(10), conn.next())
            .await
            .expect("a reply in time")
            .expect("open")
            .expect("transport ok");
        assert!(reply.result.is_ok(), "{:?}", reply.result);
    }
}

#[tokio::test]
async fn an_idle_long_poll_client_holds_little() {
    let wanted = (4 * CLIENTS + 256) as u64;
    let got = rlimit::increase_nofile_limit(wanted).expect("raise RLIMIT_NOFILE");
    assert!(got >= wanted, "RLIMIT_NOFILE is {got}, need {wanted}");
    let server = ServerProcess::start();

    // Warm-up, not measured: tokio's and hyper's one-time allocations.
    let mut warm = connect_clients(&server.url, 50).await;
    exchange(&mut warm).await;
    drop(warm);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let start = ALLOCATOR.allocated();
    let mut clients = connect_clients(&server.url, CLIENTS).await;
    let after_handshake = ALLOCATOR.allocated().saturating_sub(start) / CLIENTS;
    exchange(&mut clients).await;
    // Every poller is back to a held /lp/recv.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = ALLOCATOR.allocated().saturating_sub(start) / CLIENTS;
    eprintln!(
        "{CLIENTS} long-poll clients, per client: {after_handshake} B after the handshake \
         (sender task and one HTTP connection), {idle} B idle after a request and its \
         response (both tasks and HTTP connections, one poll held)"
    );
    assert!(idle <= IDLE_BOUND, "{idle} B per idle client");
    drop(clients);
}
