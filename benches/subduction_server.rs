//! Subduction's own WebSocket server (`subduction_websocket` =0.14.0's
//! `TokioWebSocketServer`, over `MemoryStorage` and the open policy, as in
//! bijou-net's interop tests) in this process, under a counting global
//! allocator: the peer `bijou load` holds thousands of idle authenticated
//! connections against, so that bytes of heap per idle connection and
//! handshakes/s can be compared with our server's.
//!
//! ```text
//!   cargo run --release -p bijou-frame-benches --example subduction_server -- --listen 127.0.0.1:7890 --stats /tmp/theirs.stats
//! ```
//!
//! Options: `--listen ADDR` (required), `--seed N` (the server key is
//! `[N; 32]`, default 0x5E; decimal or `0x` hex), `--service-name NAME`
//! (default `load`), `--drift-secs N` (their maximum handshake clock drift,
//! default 600), `--stats FILE`.
//!
//! Once listening it prints one line to stdout:
//!
//! ```text
//! subduction server listening on ADDR peer-id HEX service-name NAME
//! ```
//!
//! (HEX: the server's Ed25519 verifying key, 64 lowercase hex digits, our
//! peer id for it). The open-file limit obtained is reported on stderr.
//! With `--stats FILE`, every second it replaces FILE atomically (written
//! to `FILE.tmp`, then renamed) with one line,
//! `pid=P heap=H heap_peak=K` (decimal bytes allocated now and at most so
//! far, process-wide). It runs until Ctrl-C or until its stdin reaches end
//! of file (so a parent that holds stdin open stops it by closing it), and
//! then exits 0. Bad options and startup failures exit 2.

#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use bijou_frame::signing::ed25519_dalek::SigningKey;
use sedimentree_core::depth::CountLeadingZeroBytes;
use subduction_core::nonce_cache::NonceCache;
use subduction_core::policy::open::OpenPolicy;
use subduction_core::storage::memory::MemoryStorage;
use subduction_crypto::signer::memory::MemorySigner;
use subduction_websocket::tokio::{server::TokioWebSocketServer, TimeoutTokio};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[global_allocator]
static ALLOCATOR: bijou_test_support::heap::PeakAlloc = bijou_test_support::heap::PeakAlloc;

/// How often the stats file is replaced.
const STATS_EVERY: Duration = Duration::from_secs(1);

const USAGE: &str = "usage: subduction_server --listen ADDR [--seed N] [--service-name NAME] \
                     [--drift-secs N] [--stats FILE]";

struct Options {
    listen: SocketAddr,
    seed: u8,
    service_name: String,
    drift: Duration,
    stats: Option<PathBuf>,
}

fn parse_u8(text: &str) -> Option<u8> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn parse_options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut listen = None;
    let mut seed = 0x5E;
    let mut service_name = String::from("load");
    let mut drift_secs = 600u64;
    let mut stats = None;
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Err(String::new());
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" => {
                listen = Some(
                    value
                        .parse::<SocketAddr>()
                        .map_err(|e| format!("--listen {value}: {e}"))?,
                );
            }
            "--seed" => {
                seed = parse_u8(&value)
                    .ok_or_else(|| format!("--seed {value}: not a byte (0-255 or 0x00-0xff)"))?;
            }
            "--service-name" => service_name = value,
            "--drift-secs" => {
                drift_secs = value
                    .parse()
                    .map_err(|e| format!("--drift-secs {value}: {e}"))?;
            }
            "--stats" => stats = Some(PathBuf::from(value)),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(Options {
        listen: listen.ok_or("--listen ADDR is required")?,
        seed,
        service_name,
        drift: Duration::from_secs(drift_secs),
        stats,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Replaces `path` with one stats line, through `path.tmp` and a rename,
/// so that a reader never sees a half-written file.
async fn write_stats(path: &Path, tmp: &Path) -> std::io::Result<()> {
    let line = format!(
        "pid={} heap={} heap_peak={}\n",
        std::process::id(),
        ALLOCATOR.current_usage(),
        ALLOCATOR.peak_usage()
    );
    tokio::fs::write(tmp, line).await?;
    tokio::fs::rename(tmp, path).await
}

/// Writes the stats file every [`STATS_EVERY`], forever. A failed write is
/// reported once on stderr (until one succeeds again) and retried.
async fn stats_loop(path: PathBuf) {
    let mut tmp = path.clone().into_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut ticks = tokio::time::interval(STATS_EVERY);
    let mut failing = false;
    loop {
        ticks.tick().await;
        match write_stats(&path, &tmp).await {
            Ok(()) => failing = false,
            Err(e) => {
                if !failing {
                    eprintln!("subduction_server: stats {}: {e}", path.display());
                }
                failing = true;
            }
        }
    }
}

/// Returns when stdin reaches end of file (or cannot be read).
async fn stdin_closed() {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 1024];
    while let Ok(n) = stdin.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
}

async fn run(options: Options) -> ExitCode {
    let signer = MemorySigner::from_bytes(&[options.seed; 32]);
    let peer_id = SigningKey::from_bytes(&[options.seed; 32])
        .verifying_key()
        .to_bytes();
    let mut server = match TokioWebSocketServer::setup(
        options.listen,
        TimeoutTokio,
        options.drift,
        subduction_websocket::DEFAULT_MAX_MESSAGE_SIZE,
        signer,
        Some(options.service_name.as_str()),
        MemoryStorage::new(),
        OpenPolicy,
        NonceCache::default(),
        CountLeadingZeroBytes,
    )
    .await
    {
        Ok(server) => server,
        Err(e) => {
            eprintln!("subduction_server: cannot start on {}: {e}", options.listen);
            return ExitCode::from(2);
        }
    };

    let mut stdout = tokio::io::stdout();
    let line = format!(
        "subduction server listening on {} peer-id {} service-name {}\n",
        server.address(),
        hex(&peer_id),
        options.service_name
    );
    if let Err(e) = async {
        stdout.write_all(line.as_bytes()).await?;
        stdout.flush().await
    }
    .await
    {
        eprintln!("subduction_server: stdout: {e}");
        return ExitCode::from(2);
    }

    let stats = options.stats.map(|path| tokio::spawn(stats_loop(path)));

    tokio::select! {
        result = tokio::signal::ctrl_c() => {
            if let Err(e) = result {
                eprintln!("subduction_server: cannot wait for Ctrl-C: {e}");
                stdin_closed().await;
            }
        }
        () = stdin_closed() => {}
    }

    if let Some(stats) = stats {
        stats.abort();
    }
    server.stop();
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let options = match parse_options(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            if message.is_empty() {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            eprintln!("subduction_server: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };

    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => eprintln!("subduction_server: open-file limit {limit}"),
        Err(e) => eprintln!("subduction_server: cannot raise the open-file limit: {e}"),
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("subduction_server: cannot start the tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(run(options));
    // Not a plain drop: a read of stdin still pending (after Ctrl-C) sits
    // on a blocking thread that a drop would wait for.
    runtime.shutdown_background();
    code
}
