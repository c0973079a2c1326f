//! `bijou sync` from flags to exit: where to sync, the plan, the client
//! run under `--timeout`, the report.

use std::sync::Arc;
use std::time::Duration;

use bijou_frame::framing::DEFAULT_MAX_FRAME_LENGTH;
use bijou_frame::proto::keyhive::DocumentKey;
use bijou_frame::proto::message::Audience;
use bijou_frame::signing::Identity;
use tokio::net::TcpListener;

use super::args::Args;
use super::client::{push_then_fetch, ClientJob, Outcome};
use super::plan::Plan;
use super::report::print_banner;
use crate::exit::Failure;
use crate::keygen::new_key;
use crate::progress;
use crate::serve::{SyncServer, ITEM_OVERHEAD};
use crate::target::{Target, TransportArg};

/// Runs the push and the fetch and prints the summary.
pub async fn run(args: &Args) -> Result<(), Failure> {
    let outcome = push_and_fetch(args).await?;
    if outcome.ok() {
        Ok(())
    } else {
        Err(Failure::check(outcome.verdict()))
    }
}

/// Pushes and fetches as `args` say, and prints the report.
async fn push_and_fetch(args: &Args) -> Result<Outcome, Failure> {
    let count = usize::from(args.count);
    check_response_fits(count, args.blob_size)?;
    let (target, server, serving) = where_to_sync(args).await?;
    let (audience, addressed) = addressing(args, server.as_deref(), &target);
    let seed = args.seed.unwrap_or_else(rand::random);
    let key_a = match &args.key {
        Some(path) => crate::keygen::read_key(path)?,
        None => new_key()?,
    };
    // The tree is a keyhive document of our own (tree id = document key),
    // so a server that enforces keyhive can be told about it.
    let doc = DocumentKey::from_seed(rand::random());
    let plan =
        Plan::new(&key_a, doc.tree_id(), seed, count, args.blob_size).map_err(Failure::input)?;
    print_banner(args, &plan, &target, server.as_deref(), audience);
    let bar = progress::bar(plan.commits.len() as u64, "commits acked");
    let job = ClientJob {
        target,
        audience,
        addressed,
        doc,
        access: args.access,
        window: usize::from(args.window),
        ack_timeout: Duration::from_millis(args.ack_timeout),
        fetch_timeout: Duration::from_millis(args.fetch_timeout),
        bar: bar.clone(),
    };
    let bound = Duration::from_secs(args.timeout);
    let result = tokio::time::timeout(bound, push_then_fetch(&job, key_a, &plan)).await;
    bar.finish_and_clear();
    if let Some(task) = serving {
        task.abort();
    }
    let mut outcome = match result {
        Err(_) => {
            return Err(Failure::network(format!(
                "timed out after {bound:?} (--timeout); the server stopped answering"
            )))
        }
        Ok(outcome) => outcome?,
    };
    outcome.server = server.map(|s| s.stats());
    outcome.print(&plan, usize::from(args.window));
    Ok(outcome)
}

/// The fetch brings every commit back in one `BatchSyncResponse`: refuse
/// a run whose response could not be one frame.
fn check_response_fits(count: usize, blob_size: usize) -> Result<(), Failure> {
    let response_size = count
        .checked_mul(blob_size.saturating_add(ITEM_OVERHEAD))
        .and_then(|n| n.checked_add(ITEM_OVERHEAD))
        .filter(|&n| n <= DEFAULT_MAX_FRAME_LENGTH);
    if response_size.is_none() {
        return Err(Failure::input(format!(
            "{count} commits of {blob_size} B would not fit one {} MiB BatchSyncResponse: push fewer (--count) or smaller (--blob-size)",
            DEFAULT_MAX_FRAME_LENGTH >> 20
        )));
    }
    Ok(())
}

/// Where to connect: `--connect`, or a server started here in process
/// (then also the server and its accept task).
async fn where_to_sync(
    args: &Args,
) -> Result<
    (
        Target,
        Option<Arc<SyncServer>>,
        Option<tokio::task::JoinHandle<()>>,
    ),
    Failure,
> {
    if let Some(spec) = &args.connect {
        return Ok((
            Target::parse(spec, args.transport, args.prefix)?,
            None,
            None,
        ));
    }
    if args.transport == TransportArg::Iroh {
        #[cfg(feature = "iroh")]
        {
            let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
            let (endpoint, dial) = crate::target::iroh_listener(loopback).await?;
            let name = args.service_name.clone().unwrap_or_else(|| dial.clone());
            let server = Arc::new(SyncServer::new(new_key()?, name, args.fault));
            let task = tokio::spawn(Arc::clone(&server).serve_iroh(endpoint, false));
            return Ok((Target::Iroh(dial), Some(server), Some(task)));
        }
        #[cfg(not(feature = "iroh"))]
        return Err(crate::target::no_iroh());
    }
    let bind = |e: std::io::Error| Failure::input(format!("cannot listen on 127.0.0.1: {e}"));
    let listener = TcpListener::bind("127.0.0.1:0").await.map_err(bind)?;
    let addr = listener.local_addr().map_err(bind)?;
    let name = args
        .service_name
        .clone()
        .unwrap_or_else(|| addr.to_string());
    let server = Arc::new(SyncServer::new(new_key()?, name, args.fault));
    let task =
        tokio::spawn(Arc::clone(&server).serve(listener, args.transport, args.prefix, false));
    Ok((
        Target::local(addr, args.transport, args.prefix),
        Some(server),
        Some(task),
    ))
}

/// To whom the handshakes are addressed, and how the errors name it.
fn addressing(args: &Args, server: Option<&SyncServer>, target: &Target) -> (Audience, String) {
    let audience = match (server, args.server_id, &args.service_name) {
        // Our own server in process: its key.
        (Some(s), None, None) => Audience::Known(s.key.peer_id()),
        _ => target.audience(args.server_id, args.service_name.as_deref()),
    };
    let addressed = match (audience, &args.service_name) {
        (Audience::Known(id), _) => format!("the server key {id}"),
        (Audience::Discover(_), Some(name)) => format!("the service name {name:?}"),
        (Audience::Discover(_), None) => format!(
            "the service name {:?} (the HOST:PORT of --connect)",
            target.authority()
        ),
    };
    (audience, addressed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::Fault;
    use crate::test_flags::{parse, seeded};

    fn args(extra: &[&str]) -> Args {
        seeded("sync", extra)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn default_run_pushes_and_fetches_every_commit() {
        let a = args(&["--count", "40"]);
        assert_eq!(
            (a.transport, a.window, a.blob_size),
            (TransportArg::Ws, 1, 1024)
        );
        let outcome = push_and_fetch(&a).await.expect("runs");
        assert!(outcome.ok(), "{outcome:?}");
        assert_eq!(outcome.push.rtts.len(), 40);
        assert_eq!(outcome.fetch.identical, 40);
        assert!(outcome.fetch.last_is_head);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tcp_pipelined_and_service_name_runs_succeed() {
        let a = args(&["--count", "60", "--transport", "tcp", "--window", "8"]);
        assert!(push_and_fetch(&a).await.expect("runs").ok());
        let a = args(&[
            "--count",
            "20",
            "--service-name",
            "sync.test",
            "--blob-size",
            "0",
        ]);
        assert!(push_and_fetch(&a).await.expect("runs").ok());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn server_mistakes_are_detected() {
        let cases = [
            (Fault::DropAck, "unacked"),
            (Fault::OmitCommit, "missing"),
            (Fault::CorruptBlob, "rejected"),
            (Fault::ForeignCommit, "unexpected"),
        ];
        for (fault, what) in cases {
            let mut a = args(&["--count", "10", "--ack-timeout", "300"]);
            a.fault = fault;
            let o = push_and_fetch(&a).await.expect("runs");
            assert!(!o.ok(), "{fault:?} went unnoticed");
            let count = match what {
                "unacked" => o.push.unacked,
                "missing" => o.fetch.missing,
                "rejected" => o.fetch.rejected,
                _ => o.fetch.unexpected,
            };
            assert_eq!(count, 1, "{fault:?}: {o:?}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lost_fetch_answer_is_asked_again_and_said() {
        let mut a = args(&["--count", "5", "--fetch-timeout", "300"]);
        a.fault = Fault::DropFetchAnswer;
        let o = push_and_fetch(&a).await.expect("runs");
        assert!(o.ok(), "recovered: {o:?}");
        assert_eq!(o.fetch.identical, 5, "{o:?}");
        assert_eq!(o.fetch.notes.len(), 1, "{o:?}");
        assert!(
            o.fetch.notes[0].contains("attempt 1 of 3): asked again"),
            "{o:?}"
        );
    }

    #[tokio::test]
    async fn a_response_that_cannot_fit_is_refused_up_front() {
        let a = args(&["--count", "65535", "--blob-size", "1024"]);
        let err = push_and_fetch(&a).await.expect_err("too big");
        assert!(err.to_string().contains("would not fit"), "{err}");
        assert!(parse::<Args>(&["sync", "--count", "0"]).is_err());
        assert!(parse::<Args>(&["sync", "--count", "65536"]).is_err());
    }
}
