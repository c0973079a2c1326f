//! A flood worker: authenticated peers that push valid commits as fast as
//! the server reads them, each cycling through 64 commits signed before
//! the flood starts (the first round is stored, the rest are duplicates
//! the server still verifies: the most verification per byte a peer can
//! ask for without signing anything new).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bijou_frame::proto::message::{Audience, Message, SedimentreeId};
use futures::StreamExt as _;

use super::args::WorkerArgs;
use super::crowd::source;
use super::workers::{emit, Commands};
use crate::exit::Failure;
use crate::keygen::new_key;
use crate::sync::plan::Plan;
use crate::target::Target;

/// Commits each flooder cycles through.
const COMMITS: usize = 64;

/// `bijou load-worker --role flood`: connects, waits for `go`, floods
/// until `end`, then says how many commits it sent.
pub async fn run(args: &WorkerArgs, target: Target, audience: Audience) -> Result<(), Failure> {
    let mut peers = Vec::new();
    for i in 0..args.count {
        let key = new_key()?;
        let plan = Plan::new(
            &key,
            SedimentreeId::new(rand::random()),
            rand::random(),
            COMMITS,
            args.blob_size,
        )
        .map_err(|e| Failure::input(format!("cannot sign the flood's commits: {e}")))?;
        let (conn, _) = target
            .open_from(
                Some(source(args.source_base, args.first + i)),
                &key,
                audience,
                "the server",
                "give --server-id or --service-name",
            )
            .await?;
        let messages: Vec<Message> = plan
            .commits
            .into_iter()
            .map(|c| Message::Sync(c.message))
            .collect();
        peers.push((conn, messages));
    }
    emit("ready", &[("count", args.count)]);
    let mut commands = Commands::new();
    if commands.next().await.as_deref() != Some("go") {
        return Ok(());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (conn, messages) in peers {
        let (mut sender, mut receiver) = conn.split();
        // What the server answers (HeadsUpdates for the first round) is
        // read and dropped, so it never stops the flood.
        tasks.push(tokio::spawn(async move {
            while let Some(Ok(_)) = receiver.next().await {}
        }));
        let (stop, sent) = (Arc::clone(&stop), Arc::clone(&sent));
        tasks.push(tokio::spawn(async move {
            for message in messages.iter().cycle() {
                if stop.load(Ordering::Relaxed) || sender.send(message.clone()).await.is_err() {
                    break;
                }
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    emit("flooding", &[("count", args.count)]);
    let _ = commands.next().await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed();
    for task in &tasks {
        task.abort();
    }
    emit(
        "flooded",
        &[
            ("sent", sent.load(Ordering::Relaxed)),
            ("ms", elapsed.as_millis() as u64),
        ],
    );
    Ok(())
}
