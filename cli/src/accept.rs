//! The accept loop every server here runs: a cap on the connections
//! served at once, a task for each, and a growing pause after a failed
//! accept.
//!
//! A failed accept is mostly a shortage (out of file descriptors,
//! `EMFILE`) that retrying at once only spins on, so the loop waits before
//! the next try: 5 ms at first, doubling up to 1 s, and back to 5 ms after
//! the next success (the pauses Go's `net/http` server takes). At the cap
//! the loop stops accepting: new connections wait in the kernel's backlog
//! until a served one ends, and the [`Cap`] says so (at most once every
//! [`Cap::SAY_EVERY`]).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bijou_frame::net::transport::longpoll::{LongPollServer, LongPollSession, ServerConfig};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::cap::Cap;

/// Serves HTTP long-poll on `listener` until the task is dropped: its TCP
/// connections carry HTTP requests (at most `cap`'s limit at once), and
/// each session they open is served with `serve` in a task of its own, at
/// most `cap`'s limit at once.
pub async fn serve_longpoll<Serving>(
    listener: &TcpListener,
    cap: &Cap,
    serve: impl Fn(LongPollSession) -> Serving,
) where
    Serving: Future<Output = ()> + Send + 'static,
{
    let (server, sessions) = LongPollServer::new(ServerConfig::default());
    let http = serve_tcp(listener, cap, |(stream, _)| {
        let server = server.clone();
        async move {
            let _ = stream.set_nodelay(true);
            // A broken HTTP connection ends its requests; the sessions
            // they opened live on.
            let _ = server.serve_connection(stream).await;
        }
    });
    let sessions = Arc::new(tokio::sync::Mutex::new(sessions));
    let accept = move || {
        let sessions = Arc::clone(&sessions);
        async move { sessions.lock().await.accept().await.map(Ok) }
    };
    tokio::join!(http, serve_each(cap, accept, serve));
}

/// Accepts connections on `listener` until the task is dropped, serving
/// each with `serve` in a task of its own, at most `cap`'s limit at once
/// (see [`serve_each`]).
pub async fn serve_tcp<Serving>(
    listener: &TcpListener,
    cap: &Cap,
    serve: impl Fn((TcpStream, SocketAddr)) -> Serving,
) where
    Serving: Future<Output = ()> + Send + 'static,
{
    serve_each(
        cap,
        move || async move { Some(listener.accept().await) },
        serve,
    )
    .await;
}

/// Takes connections from `accept` until it returns `None` (the listener
/// closed), serving each with `serve` in a task of its own, at most
/// `cap`'s limit at once; finding every slot taken, it tells `cap` (which
/// may have a line to say on standard output). A failed accept is retried
/// after a [`Backoff`] pause.
pub async fn serve_each<Conn, Accepting, Serving>(
    cap: &Cap,
    mut accept: impl FnMut() -> Accepting,
    serve: impl Fn(Conn) -> Serving,
) where
    Accepting: Future<Output = Option<io::Result<Conn>>>,
    Serving: Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(cap.limit()));
    let mut backoff = Backoff::default();
    loop {
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if let Some(line) = cap.full_at(cap.now()) {
                    say_line(&line);
                }
                // Never closed, so never an error.
                let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                    return;
                };
                cap.freed_at(cap.now());
                slot
            }
        };
        let Some(conn) = next_connection(&mut accept, &mut backoff).await else {
            return;
        };
        // A combinator, not an `async move` block: such a block would
        // keep `served` twice (once captured, once being awaited), and
        // each idle connection's task would be twice the size.
        let served = futures::FutureExt::map(serve(conn), move |()| drop(slot));
        tokio::spawn(served);
    }
}

/// One line on standard output, where the servers log.
fn say_line(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// The next connection `accept` takes, pausing after each failure; `None`
/// once the listener is closed.
async fn next_connection<Conn, Accepting>(
    accept: &mut impl FnMut() -> Accepting,
    backoff: &mut Backoff,
) -> Option<Conn>
where
    Accepting: Future<Output = Option<io::Result<Conn>>>,
{
    loop {
        match accept().await? {
            Ok(conn) => {
                backoff.reset();
                return Some(conn);
            }
            Err(_) => tokio::time::sleep(backoff.next_pause()).await,
        }
    }
}

/// How long to wait after a failed accept: [`Backoff::FIRST`] after the
/// first failure in a row, twice as long after each further one, at most
/// [`Backoff::MOST`]; a success starts over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    next: Duration,
}

impl Backoff {
    /// The pause after a first failure.
    pub const FIRST: Duration = Duration::from_millis(5);
    /// The longest pause.
    pub const MOST: Duration = Duration::from_secs(1);

    /// The pause after one more failure in a row.
    pub fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = (pause * 2).min(Self::MOST);
        pause
    }

    /// An accept succeeded: the next failure pauses [`Backoff::FIRST`].
    pub fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self { next: Self::FIRST }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    use tokio::sync::mpsc;
    use tokio::time::Instant;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn pauses_double_from_5_ms_to_1_s_and_a_success_starts_over() {
        let mut backoff = Backoff::default();
        let pauses: Vec<Duration> = (0..10).map(|_| backoff.next_pause()).collect();
        let expected = [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000].map(ms);
        assert_eq!(pauses, expected);
        backoff.reset();
        assert_eq!(backoff.next_pause(), ms(5));
    }

    #[tokio::test(start_paused = true)]
    async fn failed_accepts_wait_longer_each_time_until_one_succeeds() {
        let error = || Some(Err(io::Error::from(io::ErrorKind::OutOfMemory)));
        let mut script: VecDeque<Option<io::Result<u32>>> =
            VecDeque::from([error(), error(), error(), Some(Ok(1)), error(), Some(Ok(2))]);
        let start = Instant::now();
        let mut tries = Vec::new();
        let (served, mut seen) = mpsc::unbounded_channel();
        let accept = || {
            tries.push(start.elapsed());
            std::future::ready(script.pop_front().flatten())
        };
        let serve = |conn: u32| {
            let served = served.clone();
            async move {
                let _ = served.send(conn);
            }
        };
        serve_each(&Cap::silent(4), accept, serve).await;
        // Three failures pause 5, 10 and 20 ms; the success resets, so the
        // next failure pauses 5 ms again; the script's end closes.
        let at = [0, 5, 15, 35, 35, 40, 40].map(ms);
        assert_eq!(tries, at);
        drop(served);
        let mut conns = Vec::new();
        while let Some(conn) = seen.recv().await {
            conns.push(conn);
        }
        assert_eq!(conns, [1, 2]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_cap_holds_connections_until_a_served_one_ends() {
        let accepted = Arc::new(AtomicUsize::new(0));
        let serving = Arc::new(Mutex::new((0usize, 0usize))); // (now, most)
        let release = Arc::new(Semaphore::new(0));
        let (counter, state, gate) = (
            Arc::clone(&accepted),
            Arc::clone(&serving),
            Arc::clone(&release),
        );
        let accept = move || {
            counter.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Some(Ok(())))
        };
        let serve = move |()| {
            let (state, gate) = (Arc::clone(&state), Arc::clone(&gate));
            async move {
                change(&state, 1);
                if let Ok(permit) = gate.acquire().await {
                    permit.forget();
                }
                change(&state, -1);
            }
        };
        let cap = Arc::new(Cap::new(2, "--max-connections"));
        let at_cap = Arc::clone(&cap);
        let server = tokio::spawn(async move { serve_each(&at_cap, accept, serve).await });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            2,
            "no accept beyond the cap"
        );
        release.add_permits(1);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 3, "one ended, one more");
        let (now, most) = *serving.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!((now, most), (2, 2));
        // The loop told the cap it was reached: a connection whose client
        // goes away now is put down to it.
        assert!(matches!(
            cap.gave_up_at(cap.now()),
            crate::cap::GaveUp::AtCap(_)
        ));
        server.abort();
    }

    /// Adds `by` to the connections served now, and keeps the most.
    fn change(state: &Mutex<(usize, usize)>, by: isize) {
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 = state.0.saturating_add_signed(by);
        state.1 = state.1.max(state.0);
    }
}
