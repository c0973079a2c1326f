//! Workers that misbehave, to see the server bound them: `stalled`
//! connections that never send their challenge, and `trickle`
//! connections that authenticate, then send one byte of a message now
//! and then.
//!
//! Each reports, when the parent says `check`, how many the server has
//! closed and how long the longest one was kept:
//!
//! ```text
//! closed count=N open=M ms_max=T failed=F
//! ```
//!
//! (`failed`: connections that could not be opened, not counted open.)

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bijou_frame::framing::prefix::{Bijou64, PrefixKind};
use bijou_frame::net::handshake::ConnectConfig;
use bijou_frame::net::transport::FramedTransport;
use bijou_frame::net::Connection;
use bijou_frame::proto::message::Audience;
use futures::StreamExt as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::args::WorkerArgs;
use super::crowd::source;
use super::workers::{emit, Commands};
use crate::exit::Failure;
use crate::keygen::new_key;
use crate::target::Target;

/// The length a trickling connection announces: it never sends it all.
const ANNOUNCED: u64 = 1000;

/// When each connection was closed by the server, in milliseconds after
/// it was opened (`None`: still open).
type Closings = Arc<Mutex<Vec<Option<u64>>>>;

/// `bijou load-worker --role stalled`: opens its connections (TCP, and
/// the WebSocket upgrade for ws) and never sends a challenge.
pub async fn stalled(args: &WorkerArgs, target: Target) -> Result<(), Failure> {
    // One slot for each connection opened (one that could not connect is
    // counted apart, not as open).
    let closings: Closings = Arc::new(Mutex::new(Vec::new()));
    let mut failed = 0u64;
    for i in 0..args.count {
        let Ok(mut carrier) = target
            .carrier_from(Some(source(args.source_base, args.first + i)))
            .await
        else {
            failed += 1;
            continue;
        };
        let index = {
            let mut slots = closings.lock().unwrap_or_else(PoisonError::into_inner);
            slots.push(None);
            slots.len() - 1
        };
        let closings = Arc::clone(&closings);
        let at = Instant::now();
        tokio::spawn(async move {
            // The server says nothing before our challenge: whatever ends
            // this read is the server closing.
            let _ = carrier.next().await;
            record(&closings, index, at);
        });
    }
    emit(
        "ready",
        &[("count", args.count - failed), ("failed", failed)],
    );
    answer_checks(&closings, failed).await;
    Ok(())
}

/// `bijou load-worker --role trickle`: authenticates over framed TCP
/// (bijou64 prefix), then announces a message of [`ANNOUNCED`] bytes and
/// sends one of them every `--trickle-every` seconds.
pub async fn trickle(args: &WorkerArgs, target: Target, audience: Audience) -> Result<(), Failure> {
    if target.transport() != crate::target::TransportArg::Tcp
        || args.server.prefix != PrefixKind::Bijou64
    {
        return Err(Failure::input(
            "--trickle needs framed TCP with the bijou64 prefix (tcp://HOST:PORT)",
        ));
    }
    let closings: Closings = Arc::new(Mutex::new(vec![None; to_usize(args.count)]));
    let every = Duration::from_secs(args.trickle_every.max(1));
    for i in 0..args.count {
        let stream = target
            .tcp_from(Some(source(args.source_base, args.first + i)))
            .await?;
        let key = new_key()?;
        let conn = Connection::connect(
            FramedTransport::new(stream, Bijou64),
            &key,
            audience,
            &ConnectConfig::default(),
        )
        .await
        .map_err(|e| Failure::network(format!("a trickling connection's handshake failed: {e}")))?;
        let stream = conn.into_inner().into_inner();
        let closings = Arc::clone(&closings);
        tokio::spawn(trickle_one(stream, every, closings, to_usize(i)));
    }
    emit("ready", &[("count", args.count)]);
    answer_checks(&closings, 0).await;
    Ok(())
}

/// Sends the prefix, then a byte every `every`, until the server closes.
async fn trickle_one(mut stream: TcpStream, every: Duration, closings: Closings, index: usize) {
    let at = Instant::now();
    let mut prefix = Vec::new();
    bijou_frame::codec::bijou64::encode(ANNOUNCED, &mut prefix);
    let mut sink = [0u8; 64];
    if stream.write_all(&prefix).await.is_ok() {
        for _ in 1..ANNOUNCED {
            tokio::select! {
                () = tokio::time::sleep(every) => {
                    if stream.write_all(&[0]).await.is_err() {
                        break;
                    }
                }
                // The server sends nothing: a read that ends is a close.
                _ = stream.read(&mut sink) => break,
            }
        }
    }
    record(&closings, index, at);
}

fn record(closings: &Closings, index: usize, at: Instant) {
    let mut closings = closings.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(slot) = closings.get_mut(index) {
        *slot = Some(at.elapsed().as_millis() as u64);
    }
}

/// Answers each `check` with how many were closed (and how many never
/// connected: `failed`), until `end`.
async fn answer_checks(closings: &Closings, failed: u64) {
    let mut commands = Commands::new();
    while let Some(command) = commands.next().await {
        if command != "check" {
            break;
        }
        let closings = closings.lock().unwrap_or_else(PoisonError::into_inner);
        let closed: Vec<u64> = closings.iter().flatten().copied().collect();
        emit(
            "closed",
            &[
                ("count", closed.len() as u64),
                ("open", (closings.len() - closed.len()) as u64),
                ("ms_max", closed.iter().copied().max().unwrap_or(0)),
                ("failed", failed),
            ],
        );
    }
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
