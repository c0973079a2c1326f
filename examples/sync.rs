//! A sync client: push signed commits to a Subduction sync server, one at
//! a time, each acknowledged by a HeadsUpdate; then fetch the tree back on
//! a second connection and check every commit and blob byte for byte.
//!
//! ```text
//! cargo run -p bijou-cli -- serve --listen 127.0.0.1:7879     # terminal 1 (or a Subduction server)
//! cargo run --example sync -- ws://127.0.0.1:7879              # terminal 2
//! cargo run --example sync -- ws://127.0.0.1:8080 --count 50   # subduction_cli server --auth open
//! ```
//!
//! The handshake is addressed to the service name `HOST:PORT` (what
//! `subduction_cli server` answers to by default), or to `--service-name`.
//! If the server enforces keyhive (the default of `subduction_cli`), the
//! tree is registered as a keyhive document first.
//! `bijou sync` is the full tool (windows, key files, framed TCP, an
//! in-process server, a detailed report).

use std::collections::HashSet;
use std::process::ExitCode;
use std::time::Duration;

use bijou_frame::net::handshake::HandshakeConfig;
use bijou_frame::net::keyhive::{Access, DocumentKey, Grantee, TreeAccess};
use bijou_frame::net::message::{
    Audience, BatchSyncRequest, CommitId, FingerprintSeed, SedimentreeId, SyncMessage, SyncResult,
};
use bijou_frame::net::transport::websocket::{self, WebSocketTransport};
use bijou_frame::net::{Connection, Delivered, VerifiedMessage};
use bijou_frame::signing::{ed25519_dalek::SigningKey, key_file, Blob};
use clap::Parser;
use tokio::net::TcpStream;
use tokio::time::timeout;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Conn = Connection<WebSocketTransport<TcpStream>>;

/// Push signed commits to a sync server and fetch them back.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The server: ws://HOST:PORT[/path].
    url: String,
    /// Commits to push (1-10000).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=10_000))]
    count: u16,
    /// The service name to address (default: HOST:PORT of the URL).
    #[arg(long)]
    service_name: Option<String>,
}

/// How long one acknowledgement or the fetch may take.
const WAIT: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(()) => {
            println!("OK");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<(), Error> {
    let host_port = args.url.split("://").nth(1).unwrap_or(&args.url);
    let host_port = host_port.split('/').next().unwrap_or(host_port);
    let service = args.service_name.as_deref().unwrap_or(host_port);
    let audience = Audience::discover(service.as_bytes());
    // The tree is a keyhive document of ours (tree id = document key).
    let doc = DocumentKey::from_seed(rand::random());
    let tree = doc.tree_id();
    println!(
        "pushing {} commits into tree {tree} at {}",
        args.count, args.url
    );

    // Connection 1: push, each commit chained to the previous one.
    let key = key_file::generate()?;
    let mut conn = connect(&args.url, &key, audience).await?;
    // A server that enforces keyhive (a default subduction_cli) refuses
    // the new tree: register it as a document, Edit for Public, first.
    if conn.probe_access(tree, WAIT).await?.access == TreeAccess::Unauthorized {
        let delegation = doc.root_delegation(Grantee::Public, Access::Edit)?;
        conn.register_document(&key, delegation, WAIT).await?;
        println!("  keyhive      registered the tree as a document (Edit for Public)");
    }
    let mut pushed = Vec::new(); // (signed commit bytes, blob bytes)
    let mut parent = None;
    for n in 1..=args.count {
        let head = CommitId::new(rand::random());
        let blob = Blob::new(rand::random::<[u8; 256]>().to_vec());
        let msg = SyncMessage::loose_commit(&key, tree, head, parent, blob.clone())?;
        if let SyncMessage::LooseCommit(m) = &msg {
            pushed.push((m.item.signed().to_bytes(), blob.into_bytes()));
        }
        conn.send(msg).await?;
        wait_for_ack(&mut conn, tree, head)
            .await
            .map_err(|e| format!("commit {n}: {e}"))?;
        parent = Some(head);
    }
    println!("  pushed       {} commits, each acknowledged", pushed.len());
    conn.shutdown(Duration::from_secs(2)).await?;

    // Connection 2, another key: fetch the whole tree ("I have nothing").
    let key = key_file::generate()?;
    let mut conn = connect(&args.url, &key, audience).await?;
    let nonce = rand::random();
    let seed = FingerprintSeed::new(rand::random(), rand::random());
    let me = conn.local_peer();
    conn.send(SyncMessage::from(BatchSyncRequest::new(
        tree,
        me,
        nonce,
        false,
        seed,
        [],
        [],
    )))
    .await?;
    let verified = loop {
        let received = timeout(WAIT, conn.recv())
            .await
            .map_err(|_| "no BatchSyncResponse")??
            .ok_or("the server closed the connection")?;
        if let Ok(Delivered::Sync(v)) = received.result {
            if matches!(&v.message, SyncMessage::BatchSyncResponse(r) if r.nonce == nonce) {
                break v;
            }
        }
    };
    conn.shutdown(Duration::from_secs(2)).await?;
    check(&verified, &pushed)?;
    println!(
        "  fetched      all {} back, verified, byte for byte",
        pushed.len()
    );
    Ok(())
}

/// A WebSocket connection to `url`, authenticated.
async fn connect(url: &str, key: &SigningKey, audience: Audience) -> Result<Conn, Error> {
    let ws = timeout(WAIT, websocket::connect(url))
        .await
        .map_err(|_| format!("connecting to {url} timed out"))??;
    Ok(Connection::connect(ws, key, audience, &HandshakeConfig::default()).await?)
}

/// Reads until a HeadsUpdate for `tree` names `head`. Silence means the
/// server refused the commit (Subduction answers refusals with nothing).
async fn wait_for_ack(conn: &mut Conn, tree: SedimentreeId, head: CommitId) -> Result<(), Error> {
    loop {
        let received = timeout(WAIT, conn.recv())
            .await
            .map_err(|_| "no HeadsUpdate: the server refused it, or is not a sync server")??
            .ok_or("the server closed the connection")?;
        if let Ok(Delivered::Sync(VerifiedMessage {
            message: SyncMessage::HeadsUpdate(update),
            ..
        })) = received.result
        {
            if update.id == tree && update.heads.heads().contains(&head) {
                return Ok(());
            }
        }
    }
}

/// Every pushed commit came back verified (the connection verified each
/// item's signature, scope and blob), byte for byte, and nothing else.
fn check(response: &VerifiedMessage, pushed: &[(bytes::Bytes, bytes::Bytes)]) -> Result<(), Error> {
    if let Some(bad) = response.rejected.first() {
        return Err(format!("a returned commit does not verify: {bad}").into());
    }
    let SyncMessage::BatchSyncResponse(r) = &response.message else {
        return Err("not a BatchSyncResponse".into());
    };
    let SyncResult::Ok(diff) = &r.result else {
        return Err(format!("the server answered {:?}", r.result).into());
    };
    let returned: HashSet<(&[u8], &[u8])> = diff
        .commits()
        .iter()
        .map(|item| (item.signed().as_bytes(), item.blob().as_bytes()))
        .collect();
    for (i, (signed, blob)) in pushed.iter().enumerate() {
        if !returned.contains(&(signed.as_ref(), blob.as_ref())) {
            return Err(format!("commit {} did not come back intact", i + 1).into());
        }
    }
    if diff.commits().len() != pushed.len() {
        let extra = diff.commits().len().saturating_sub(pushed.len());
        return Err(format!("{extra} commit(s) came back that were not pushed").into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn help_says_what_the_command_does() {
        let help = <super::Args as clap::CommandFactory>::command().render_help();
        assert!(
            help.to_string().starts_with("Push signed commits"),
            "{help}"
        );
    }
}
