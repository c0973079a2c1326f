//! `bijou echo` from flags to exit: the server alone (`--listen`), or the
//! senders against a server (`--connect`, or one started here), then the
//! report.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bijou_frame::framing::prefix::{Bijou64, Leb128, LengthPrefix, PrefixKind, U32Be};
use bijou_frame::proto::message::Audience;
use bijou_frame::signing::Identity;
use indicatif::ProgressBar;
use tokio::net::TcpListener;

use super::args::Args;
use super::client::{client, ClientJob};
use super::listen::{listen, listen_iroh};
use super::report::{print_banner, Report};
use super::server::{discovery_id, Server};
use crate::exit::Failure;
use crate::keygen::new_key;
use crate::progress;
use crate::target::{Target, TransportArg};

/// Runs what the flags ask for and prints the summary.
pub async fn run(args: &Args) -> Result<(), Failure> {
    match args.prefix {
        PrefixKind::Leb128 => run_with::<Leb128>(args).await,
        PrefixKind::U32Be => run_with::<U32Be>(args).await,
        _ => run_with::<Bijou64>(args).await,
    }
}

/// [`run`] with the frames' length prefix as a type.
async fn run_with<P: LengthPrefix>(args: &Args) -> Result<(), Failure> {
    if let (Some(addr), TransportArg::Iroh) = (args.listen, args.transport) {
        return listen_iroh(addr).await;
    }
    if let Some(addr) = args.listen {
        return listen::<P>(addr, args.transport).await;
    }
    let (target, server) = where_to_echo::<P>(args).await?;
    let transport = target.transport();
    let audience = match (&server, args.server_id) {
        (Some(s), _) => Audience::Known(s.key.peer_id()),
        (None, Some(id)) => Audience::Known(id),
        (None, None) => Audience::Discover(discovery_id()),
    };
    let seed = args.seed.unwrap_or_else(rand::random);
    if args.capture.is_some() && matches!(transport, TransportArg::Ws | TransportArg::Longpoll) {
        return Err(Failure::input(
            "--capture records length-prefixed frames: use it with --transport tcp",
        ));
    }
    print_banner::<P>(args, &target, seed);
    let total = args.count.saturating_mul(u64::from(args.peers));
    let bar = progress::bar(total, "frames echoed");
    let started = Instant::now();
    let (report, captured) = run_senders::<P>(args, &target, audience, seed, total, &bar).await;
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    if let (Some(path), Some(bytes)) = (&args.capture, captured) {
        std::fs::write(path, &bytes)
            .map_err(|e| Failure::input(format!("cannot write {}: {e}", path.display())))?;
        println!(
            "  capture      {} bytes A->B written to {}",
            bytes.len(),
            path.display()
        );
    }
    let server_rejected = server
        .as_ref()
        .map_or(0, |s| s.rejected.load(Ordering::Relaxed));
    report.print(total, elapsed, server_rejected, server.as_deref())
}

/// Where the senders connect: `--connect`, or an echo server started here
/// in process (then also the server).
async fn where_to_echo<P: LengthPrefix>(
    args: &Args,
) -> Result<(Target, Option<Arc<Server>>), Failure> {
    if let Some(spec) = &args.connect {
        return Ok((Target::parse(spec, args.transport, P::KIND)?, None));
    }
    if args.transport == TransportArg::Iroh {
        let (target, server) = in_process_iroh().await?;
        return Ok((target, Some(server)));
    }
    let cannot = |e: std::io::Error| Failure::input(format!("cannot listen on 127.0.0.1: {e}"));
    let listener = TcpListener::bind("127.0.0.1:0").await.map_err(cannot)?;
    let addr = listener.local_addr().map_err(cannot)?;
    let server = Arc::new(Server::new(new_key()?));
    let serving = Arc::clone(&server);
    let transport = args.transport;
    tokio::spawn(async move { serving.serve::<P>(listener, transport, false).await });
    Ok((Target::local(addr, args.transport, P::KIND), Some(server)))
}

/// An echo server in this process on a loopback iroh endpoint.
#[cfg(feature = "iroh")]
async fn in_process_iroh() -> Result<(Target, Arc<Server>), Failure> {
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let (endpoint, dial) = crate::target::iroh_listener(loopback).await?;
    let server = Arc::new(Server::new(new_key()?));
    tokio::spawn(Arc::clone(&server).serve_iroh(endpoint, false));
    Ok((Target::Iroh(dial), server))
}

#[cfg(not(feature = "iroh"))]
async fn in_process_iroh() -> Result<(Target, Arc<Server>), Failure> {
    Err(crate::target::no_iroh())
}

/// Spawns the `--peers` senders and gathers what each found, until the
/// `--timeout`; also returns the first sender's capture, if asked for.
async fn run_senders<P: LengthPrefix>(
    args: &Args,
    target: &Target,
    audience: Audience,
    seed: u64,
    total: u64,
    bar: &ProgressBar,
) -> (Report, Option<Vec<u8>>) {
    let bound = Duration::from_secs(args.timeout);
    let clients: Vec<_> = (0..args.peers)
        .map(|i| {
            tokio::spawn(client::<P>(ClientJob {
                target: target.clone(),
                audience,
                count: args.count,
                blob_size: args.blob_size,
                window: args.window,
                seed: seed.wrapping_add(u64::from(i)),
                capture: i == 0 && args.capture.is_some(),
                bar: bar.clone(),
            }))
        })
        .collect();
    let mut report = Report::new(args.window);
    let mut captured = None;
    let deadline = tokio::time::Instant::now() + bound;
    for handle in clients {
        match tokio::time::timeout_at(deadline, handle).await {
            Err(_) => {
                report.errors.push(Failure::network(format!(
                    "timed out after {bound:?} (--timeout) with {} of {total} frames echoed; \
                     raise --timeout or lower --count",
                    bar.position()
                )));
                break;
            }
            Ok(Err(join)) => report
                .errors
                .push(Failure::network(format!("client task failed: {join}"))),
            Ok(Ok(Err(e))) => report.errors.push(e),
            Ok(Ok(Ok(outcome))) => {
                if outcome.capture.is_some() {
                    captured = outcome.capture.clone();
                }
                report.add(outcome);
            }
        }
    }
    (report, captured)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::echo::args::BlobSize;
    use crate::test_flags::seeded;

    fn args(extra: &[&str]) -> Args {
        seeded("echo", extra)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn default_run_echoes_every_frame_for_every_prefix() {
        assert!(matches!(args(&[]).blob_size, BlobSize::Mix));
        for prefix in PrefixKind::ALL {
            let mut a = args(&["--count", "150"]);
            a.prefix = prefix;
            run(&a).await.expect("every frame echoed");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn websocket_run_echoes_every_frame_with_several_peers() {
        let a = args(&["--count", "150", "--peers", "2", "--transport", "ws"]);
        assert_eq!(a.transport, TransportArg::Ws);
        run(&a).await.expect("every frame echoed");
        // A capture of length-prefixed frames makes no sense over WebSocket.
        let a = args(&["--transport", "ws", "--capture", "x.cap"]);
        assert!(run(&a).await.is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn several_peers_and_a_capture_that_the_inspector_format_describes() {
        let path = std::env::temp_dir().join(format!("bijou-echo-test-{}.cap", std::process::id()));
        let path_str = path.to_str().expect("utf8 path").to_owned();
        let a = args(&[
            "--count",
            "40",
            "--peers",
            "4",
            "--blob-size",
            "512",
            "--capture",
            &path_str,
        ]);
        run(&a).await.expect("every frame echoed");
        let capture = std::fs::read(&path).expect("capture written");
        let _ = std::fs::remove_file(&path);
        // The capture starts with the handshake challenge: bijou64 prefix
        // 0x9E (158 bytes), then "SUH\0" 00.
        assert_eq!(&capture[..6], b"\x9eSUH\0\x00");
        // 40 commits with 512-byte blobs follow.
        assert!(capture.len() > 158 + 40 * 512);
    }
}
