//! `bijou`: keys, signed blobs, capture inspection, and a sync peer for
//! Subduction-style servers, built on the `bijou-frame` library's public
//! API.
//!
//! ```text
//! cargo install --path cli --locked # installs `bijou`
//! bijou keygen --out me.key         # prints the peer id
//! bijou blob sign report.pdf --key me.key
//! bijou blob verify report.pdf      # reads report.pdf.sig
//! bijou inspect echo.cap
//! bijou serve --listen 127.0.0.1:7879
//! bijou sync --connect ws://127.0.0.1:7879
//! bijou echo --peers 4 --window 16
//! ```
//!
//! Exit codes, the same for every subcommand (see [`exit::Exit`]):
//! 0 success, 1 a check failed (a signature, a digest, an echo, a fetched
//! commit), 2 bad input (arguments, files, keys, a malformed stream),
//! 3 the network or the peer failed (connect, handshake, timeout).
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod accept;
mod blob;
mod cap;
mod chain;
mod echo;
mod exit;
mod fd_limit;
mod figures;
mod heap;
mod inspect;
mod keygen;
mod load;
mod progress;
mod serve;
mod stats_file;
mod sync;
mod target;
#[cfg(test)]
mod test_flags;

use exit::Failure;

/// Any error, boxed, where only its message matters.
type AnyError = Box<dyn std::error::Error + Send + Sync>;

/// Keys, signed blobs, capture inspection and a sync peer for
/// Subduction-style servers.
///
/// Exit codes: 0 success; 1 a check failed (signature, digest, echo,
/// fetched commit); 2 bad input (arguments, files, keys, malformed
/// stream); 3 the network or the peer failed (connect, handshake,
/// timeout).
#[derive(Debug, Parser)]
#[command(name = "bijou", version, about, long_about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Keygen(keygen::Args),
    Blob(blob::Args),
    Inspect(inspect::Args),
    Serve(serve::Args),
    Sync(sync::Args),
    Echo(echo::Args),
    Load(load::Args),
    /// One worker process of `bijou load` (started by it).
    #[command(hide = true)]
    LoadWorker(load::WorkerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Keygen(args) => keygen::run(&args),
        Command::Blob(args) => blob::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Serve(args) => runtime().and_then(|rt| rt.block_on(serve::run(&args))),
        Command::Sync(args) => runtime().and_then(|rt| rt.block_on(sync::run(&args))),
        Command::Echo(args) => runtime().and_then(|rt| rt.block_on(echo::run(&args))),
        Command::Load(args) => runtime().and_then(|rt| rt.block_on(load::run(&args))),
        Command::LoadWorker(args) => {
            single_thread().and_then(|rt| rt.block_on(load::run_worker(&args)))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// A runtime on this thread alone: a load worker's connections wait on
/// the server, not on each other.
fn single_thread() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::input(format!("cannot start the async runtime: {e}")))
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::input(format!("cannot start the async runtime: {e}")))
}
