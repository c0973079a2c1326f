//! The worker processes `bijou load` starts (`bijou load-worker`), and the
//! line protocol between them: the parent writes one command a line on a
//! worker's standard input, the worker answers one event a line on its
//! standard output.
//!
//! ```text
//! parent -> worker   go | verify | check | vanish N | end (or end of input)
//! worker -> parent   ready count=10000 [failed=F]    (every role, once set up)
//!                    progress ok=300 failed=0 waiting=128 not_started=9572 [failed_REASON=N ...]
//!                                                     (crowd, every second while connecting)
//!                    connected ok=10000 failed=0 ms=812 [failed_REASON=N ...]
//!                    authenticated ok=10000 failed=0  (crowd, after `verify`)
//!                    alive ok=10000 failed=0          (crowd, for `check`)
//!                    vanished count=500               (crowd, for `vanish N`)
//!                    flooding count=4                 (flood, after `go`)
//!                    flooded sent=123456 ms=5012      (flood, at `end`)
//!                    closed count=N open=M ms_max=T failed=F   (stalled, trickle: `check`)
//!                    error TEXT                       (any role; it then exits)
//! ```
//!
//! A process may open only so many file descriptors (`RLIMIT_NOFILE`), so
//! a crowd larger than that is spread over several workers; each is a
//! process of its own, killed if the parent goes away.

use std::io::Write as _;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::args::{Role, ServerArgs};
use crate::exit::Failure;
use crate::stats_file::{pairs, parse, Figures};

/// Writes one event line to standard output, at once: the event, then
/// its figures as the stats file writes them.
pub fn emit<N: AsRef<str>>(event: &str, figures: &[(N, u64)]) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{event} {}", pairs(figures));
    let _ = out.flush();
}

/// Writes an `error` line: the worker failed, and why.
pub fn emit_error(why: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "error {}", why.replace('\n', " "));
    let _ = out.flush();
}

/// A running worker process.
pub struct Worker {
    pub role: Role,
    pub count: u64,
    _child: Child,
    /// Its last `progress` line's figures.
    progress: Arc<Mutex<Figures>>,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

/// What a worker is asked to do, beside the server's address.
pub struct Job {
    pub role: Role,
    pub count: u64,
    pub first: u64,
    pub concurrency: u64,
    pub blob_size: usize,
    pub trickle_every: u64,
    /// The run's source addresses are 127.BASE.x.y.
    pub source_base: u8,
}

impl Worker {
    /// Starts `bijou load-worker` for `job` on `server`.
    pub fn spawn(server: &ServerArgs, job: &Job) -> Result<Self, Failure> {
        let exe = std::env::current_exe().map_err(|e| {
            Failure::input(format!(
                "cannot find the bijou binary to start a worker: {e}"
            ))
        })?;
        let mut command = Command::new(exe);
        command.arg("load-worker");
        command.args(["--connect", &server.connect]);
        command.args(["--transport", &value_name(server.transport)]);
        command.args(["--prefix", server.prefix.name()]);
        if let Some(id) = server.server_id {
            command.args(["--server-id", &id.to_string()]);
        }
        if let Some(name) = &server.service_name {
            command.args(["--service-name", name]);
        }
        command.args(["--role", &value_name(job.role)]);
        command.args(["--count", &job.count.to_string()]);
        command.args(["--first", &job.first.to_string()]);
        command.args(["--concurrency", &job.concurrency.to_string()]);
        command.args(["--blob-size", &job.blob_size.to_string()]);
        command.args(["--trickle-every", &job.trickle_every.to_string()]);
        command.args(["--source-base", &job.source_base.to_string()]);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| Failure::input(format!("cannot start a load worker: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Failure::input("a load worker has no pipes"));
        };
        Ok(Self {
            role: job.role,
            count: job.count,
            _child: child,
            progress: Arc::default(),
            stdin,
            lines: BufReader::new(stdout).lines(),
        })
    }

    /// Sends one command line.
    pub async fn send(&mut self, command: &str) -> Result<(), Failure> {
        let line = format!("{command}\n");
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| self.gone(&format!("cannot be told {command:?}: {e}")))
    }

    /// Reads lines until the event `event`; its figures. An `error` line,
    /// an unreadable line, or the end of the worker's output fails.
    pub async fn expect(&mut self, event: &str) -> Result<Figures, Failure> {
        loop {
            let line = match self.lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => return Err(self.gone(&format!("ended before {event:?}"))),
                Err(e) => return Err(self.gone(&format!("cannot be read: {e}"))),
            };
            let (name, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
            if name == "error" {
                return Err(self.gone(rest));
            }
            if name == "progress" {
                if let Ok(figures) = parse(rest) {
                    *self.progress.lock().unwrap_or_else(PoisonError::into_inner) = figures;
                }
            }
            if name != event {
                continue;
            }
            return parse(rest).map_err(|bad| self.gone(&format!("said {bad:?} in {line:?}")));
        }
    }

    /// Its last `progress` figures, as they come (read while
    /// [`Worker::expect`] waits).
    pub fn progress(&self) -> Arc<Mutex<Figures>> {
        Arc::clone(&self.progress)
    }

    fn gone(&self, why: &str) -> Failure {
        Failure::network(format!(
            "a {:?} load worker ({} connections) {why}",
            self.role, self.count
        ))
    }
}

/// A flag's value as clap parses it (`--role crowd`, `--transport ws`).
fn value_name(value: impl clap::ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_owned())
}

/// Reads the commands of the parent on standard input, one a line.
pub struct Commands {
    lines: Lines<BufReader<tokio::io::Stdin>>,
}

impl Commands {
    pub fn new() -> Self {
        Self {
            lines: BufReader::new(tokio::io::stdin()).lines(),
        }
    }

    /// The next command, `None` at the end of input (the parent is gone:
    /// end too).
    pub async fn next(&mut self) -> Option<String> {
        self.lines.next_line().await.ok().flatten()
    }
}
