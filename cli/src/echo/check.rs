//! Reading a sender's echoes: each must be the next frame sent, byte for
//! byte, and verify again.

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bijou_frame::net::transport::Transport;
use bijou_frame::net::ConnectionReceiver;
use bijou_frame::proto::session::{Received, Rejected};
use bytes::Bytes;
use indicatif::ProgressBar;
use tokio::sync::{mpsc, Semaphore};

use super::outcome::Outcome;
use crate::AnyError;

/// Round-trip times reserved up front, at most: the rest grow with the
/// echoes that arrive.
const RTTS_RESERVED: usize = 1 << 16;

/// How long the checker waits for an echo before counting the rest lost.
const ECHO_IDLE: Duration = Duration::from_secs(10);

/// Reads the echoes: each must be the next frame sent, byte for byte, and
/// verify again.
pub(super) async fn check_echoes<T: Transport>(
    mut rx: ConnectionReceiver<T>,
    mut pending: mpsc::UnboundedReceiver<(Bytes, Instant)>,
    window: Arc<Semaphore>,
    count: u64,
    bar: ProgressBar,
) -> Result<Outcome, AnyError> {
    let mut out = Outcome {
        // Grown as echoes arrive: --count may be far more than a run
        // finishes before its timeout (16 bytes an echo, not a promise).
        rtts: Vec::with_capacity(
            usize::try_from(count).map_or(RTTS_RESERVED, |n| n.min(RTTS_RESERVED)),
        ),
        ..Outcome::default()
    };
    let mut expected: VecDeque<(Bytes, Instant)> = VecDeque::new();
    for _ in 0..count {
        if expected.is_empty() {
            match pending.recv().await {
                Some(next) => expected.push_back(next),
                None => break, // the sender stopped early
            }
        }
        let received = match next_echo(&mut rx).await {
            Ok(received) => received,
            Err(why) => {
                out.first_problem.get_or_insert(why);
                break;
            }
        };
        let now = Instant::now();
        while let Ok(next) = pending.try_recv() {
            expected.push_back(next);
        }
        window.add_permits(1);
        bar.inc(1);
        if check_echo(&mut out, &mut expected, received, now).is_break() {
            break;
        }
    }
    Ok(out)
}

/// Checks one echo, received at `now`, against the frames `expected`
/// back; breaks off when the server is no echo server.
fn check_echo(
    out: &mut Outcome,
    expected: &mut VecDeque<(Bytes, Instant)>,
    received: Received,
    now: Instant,
) -> ControlFlow<()> {
    let Some((sent, at)) = expected.pop_front() else {
        out.first_problem
            .get_or_insert_with(|| "an echo arrived for a frame never sent".to_owned());
        out.altered += 1;
        return ControlFlow::Continue(());
    };
    if received.bytes != sent {
        let not_echo = not_the_next_frame(out, expected, &received.bytes, (sent, at));
        return if not_echo {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        };
    }
    out.echoed += 1;
    out.bytes += received.bytes.len() as u64;
    out.rtts.push(now.duration_since(at));
    match received.result {
        Ok(_) => out.verified_again += 1,
        Err(why) => {
            out.rejected += 1;
            let why: Rejected = why;
            out.first_problem
                .get_or_insert_with(|| format!("echo rejected: {why}"));
        }
    }
    ControlFlow::Continue(())
}

/// The next echo, or why none came.
async fn next_echo<T: Transport>(rx: &mut ConnectionReceiver<T>) -> Result<Received, String> {
    match tokio::time::timeout(ECHO_IDLE, rx.recv()).await {
        Err(_) => Err(format!("no echo for {ECHO_IDLE:?}")),
        Ok(Err(e)) => Err(format!("connection failed: {e}")),
        Ok(Ok(None)) => Err("server closed the connection".to_owned()),
        Ok(Ok(Some(received))) => Ok(received),
    }
}

/// An echo that is not of the next frame sent: some later frame (out of
/// order; the frame expected goes back in front), or none sent at all
/// (altered, or, for a first reply, not an echo server). Returns whether
/// to stop reading.
fn not_the_next_frame(
    out: &mut Outcome,
    expected: &mut VecDeque<(Bytes, Instant)>,
    received: &Bytes,
    next: (Bytes, Instant),
) -> bool {
    let why = if let Some(pos) = expected.iter().position(|(f, _)| f == received) {
        out.reordered += 1;
        expected.remove(pos);
        expected.push_front(next);
        format!("echo out of order ({} frames early)", pos + 1)
    } else if out.echoed == 0 && out.reordered == 0 {
        out.not_echo = true;
        "the server's first reply is no echo of any frame sent: it is not an echo server (start one with `bijou echo --listen ADDR`)".to_owned()
    } else {
        out.altered += 1;
        "echo differs from the frame sent".to_owned()
    };
    out.first_problem.get_or_insert(why);
    out.not_echo
}
