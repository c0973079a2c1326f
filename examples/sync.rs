//! A sync client: push signed commits to a Subduction sync server, each acknowledged, then fetch
//! the tree back with another key and check it byte for byte. Each exchange is an operation
//! `Connection::run` starts and awaits. If a probe finds the tree refused (keyhive enforced, as by
//! default in `subduction_cli`), it is registered first.
//!
//! ```text
//! cargo run -p bijou-cli -- serve --listen 127.0.0.1:7879     # terminal 1 (or a Subduction server)
//! cargo run --example sync -- ws://127.0.0.1:7879              # terminal 2
//! cargo run --example sync -- http://127.0.0.1:8080             # HTTP long-poll (`--transport longpoll`)
//! ```

use std::{collections::HashSet, process::ExitCode, time::Duration};

use bijou_frame::net::transport::{longpoll, websocket, Transport};
use bijou_frame::net::{handshake::ConnectConfig, Connection};
use bijou_frame::proto::keyhive::{Access, DocumentKey, Grantee};
use bijou_frame::proto::message::{Audience, CommitId, SyncMessage, SyncResult};
use bijou_frame::proto::session::{Operation, Outcome, TreeAccess};
use bijou_frame::signing::{ed25519_dalek::SigningKey, key_file, Blob};
use clap::Parser;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Conn = Connection<Box<dyn Transport + Send>>;

/// Push signed commits to a sync server and fetch them back.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The server: ws://HOST:PORT[/path] (WebSocket) or http://HOST:PORT[/path] (long-poll).
    url: String,
    /// Commits to push (1-10000).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=10_000))]
    count: u16,
    /// The service name to address (default: HOST:PORT of the URL).
    #[arg(long)]
    service_name: Option<String>,
}

/// How long each operation (an acknowledgement, the fetch) may take.
const WAIT: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() -> ExitCode {
    if let Err(e) = run(&Args::parse()).await {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

async fn run(args: &Args) -> Result<(), Error> {
    let host_port = args.url.split('/').nth(2).unwrap_or(&args.url); // ws://HOST:PORT/..
    let service = args.service_name.as_deref().unwrap_or(host_port);
    let doc = DocumentKey::from_seed(rand::random()); // tree id = document key
    let tree = doc.tree_id();
    println!("pushing {} commits into tree {tree}", args.count);

    // Connection 1: register the tree if the server asks for it, then push
    // each commit, chained to the previous one, until it is acknowledged.
    let key = key_file::generate()?;
    let mut conn = connect(&args.url, &key, service).await?;
    let probe = conn.run(&key, Operation::Probe(tree), WAIT).await?;
    if let Outcome::Probed(TreeAccess::Unauthorized) = probe {
        let delegation = doc.root_delegation(Grantee::Public, Access::Edit)?;
        conn.run(&key, Operation::Register(delegation), WAIT)
            .await?;
        println!("  registered the tree as a keyhive document (Edit for Public)");
    }
    let (mut pushed, mut parent) = (HashSet::new(), None); // (signed commit, blob)
    for n in 1..=args.count {
        let head = CommitId::new(rand::random());
        let blob = Blob::new(rand::random::<[u8; 256]>().to_vec());
        let msg = SyncMessage::loose_commit(&key, tree, head, parent, blob.clone())?;
        if let SyncMessage::LooseCommit(m) = &msg {
            pushed.insert((m.item.signed().to_bytes(), blob.into_bytes()));
        }
        let push = conn.run(&key, Operation::Push(msg), WAIT).await;
        push.map_err(|e| format!("commit {n}: {e}"))?;
        parent = Some(head);
    }
    println!("  pushed {} commits, each acknowledged", pushed.len());
    conn.shutdown(Duration::from_secs(2)).await?;

    // Connection 2, another key: fetch the whole tree.
    let key = key_file::generate()?;
    let mut conn = connect(&args.url, &key, service).await?;
    let Outcome::Fetched(response) = conn.run(&key, Operation::Fetch(tree), WAIT).await? else {
        return Err("a fetch ends fetched".into());
    };
    conn.shutdown(Duration::from_secs(2)).await?;
    // Every item was verified (signature, tree, blob) by the connection.
    let (SyncMessage::BatchSyncResponse(r), []) = (&response.message, &response.rejected[..])
    else {
        return Err(format!("returned commits do not verify: {:?}", response.rejected).into());
    };
    let SyncResult::Ok(diff) = &r.result else {
        return Err(format!("the server answered {:?}", r.result).into());
    };
    let returned = diff
        .commits()
        .iter()
        .map(|c| (c.signed().to_bytes(), c.blob().clone().into_bytes()));
    if returned.collect::<HashSet<_>>() != pushed {
        return Err("the commits that came back are not the ones pushed, byte for byte".into());
    }
    println!("  fetched all {} back, byte for byte: OK", pushed.len());
    Ok(())
}

/// A connection to `url` (WebSocket, or long-poll for http://), authenticated, addressed to `service`.
async fn connect(url: &str, key: &SigningKey, service: &str) -> Result<Conn, Error> {
    let transport: Box<dyn Transport + Send> = match url.starts_with("http://") {
        true => Box::new(longpoll::connect(url).await?), // HTTP long-poll
        false => Box::new(tokio::time::timeout(WAIT, websocket::connect(url)).await??),
    };
    let audience = Audience::discover(service.as_bytes());
    match Connection::connect(transport, key, audience, &ConnectConfig::default()).await {
        Err(e) if e.is_audience_refused() => Err(format!(
            "{url} does not answer to the service name {service:?}: give the one it was started with (--service-name NAME)"
        ).into()),
        connected => Ok(connected?),
    }
}
