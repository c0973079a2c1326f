//! A server's cap on the connections it serves at once, and what it says
//! when the cap is the cause of trouble.
//!
//! At the cap the accept loop stops accepting: new connections wait in
//! the kernel's backlog, their clients hear nothing, and many give up and
//! close. When slots free up, the loop accepts those closed connections
//! one after another, each ending before its handshake. Said once a
//! connection, that is a flood of lines blaming the wrong thing; here it
//! is one line when the cap is reached and one summary of the connections
//! that gave up, each at most once every [`Cap::SAY_EVERY`].
//!
//! The clock is passed in (time since the server started), so the rules
//! are checked without waiting:
//!
//! ```text
//! reached at 0 s   -> "at its cap of 4 connections (--max-connections 4) ..."
//! reached at 3 s   -> nothing (said 3 s ago)
//! gave up at 12 s  -> "1 connection(s) closed by their clients before ..."
//! gave up at 13 s  -> counted, said with the next summary
//! ```

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A connection cap and the times it was reached.
#[derive(Debug)]
pub struct Cap {
    limit: usize,
    /// The flag that sets it, for the lines said (`None`: say nothing).
    flag: Option<&'static str>,
    started: Instant,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When the loop last found every slot taken.
    full_since: Option<Duration>,
    /// When it last got a slot after that; `None` while still full.
    full_until: Option<Duration>,
    /// When the "at its cap" line was last said.
    said_full: Option<Duration>,
    /// When the summary of connections that gave up was last said.
    said_gave_up: Option<Duration>,
    /// Connections that gave up, not said yet.
    gave_up: u64,
}

/// What to do with a connection that ended before its handshake because
/// its peer went away.
#[derive(Debug, PartialEq, Eq)]
pub enum GaveUp {
    /// The cap was reached lately: it likely waited in the backlog and
    /// its client gave up. Counted; the line is the summary to say now,
    /// if one is due.
    AtCap(Option<String>),
    /// The cap was not reached lately: another cause; say it as it is.
    Elsewhere,
}

impl Cap {
    /// The longest a line of each kind is repeated.
    pub const SAY_EVERY: Duration = Duration::from_secs(10);
    /// How long after the cap was last reached a connection that ends
    /// before its handshake is put down to it: a client's connect timeout
    /// (10 s for `bijou`) and the time for the backlog to drain, with room.
    pub const LATELY: Duration = Duration::from_secs(60);

    /// A cap of `limit` (at least 1) set by `flag` (`--max-connections`),
    /// which the lines name.
    pub fn new(limit: usize, flag: &'static str) -> Self {
        Self::with_flag(limit, Some(flag))
    }

    /// A cap of `limit` (at least 1) that says nothing.
    pub fn silent(limit: usize) -> Self {
        Self::with_flag(limit, None)
    }

    fn with_flag(limit: usize, flag: Option<&'static str>) -> Self {
        Self {
            limit: limit.max(1),
            flag,
            started: Instant::now(),
            state: Mutex::new(State::default()),
        }
    }

    /// The connections served at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Time since the cap was made: the `now` of the methods below.
    pub fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// Every slot is taken at `now`: the line to say, if one is due.
    pub fn full_at(&self, now: Duration) -> Option<String> {
        let mut state = self.lock();
        state.full_since = Some(now);
        state.full_until = None;
        let flag = self.flag?;
        if !due(state.said_full, now) {
            return None;
        }
        state.said_full = Some(now);
        let n = self.limit;
        Some(format!(
            "at its cap of {n} connections served at once ({flag} {n}): more wait in the kernel's backlog until one ends, unanswered, and their clients may give up; start the server with a larger {flag} to serve more (said at most once every {}s)",
            Self::SAY_EVERY.as_secs()
        ))
    }

    /// A slot freed up at `now` after the loop found none.
    pub fn freed_at(&self, now: Duration) {
        let mut state = self.lock();
        if state.full_since.is_some() && state.full_until.is_none() {
            state.full_until = Some(now);
        }
    }

    /// A connection's peer went away before its handshake, at `now`: put
    /// down to the cap if it was reached lately ([`Cap::LATELY`]).
    pub fn gave_up_at(&self, now: Duration) -> GaveUp {
        let mut state = self.lock();
        let lately = match (state.full_since, state.full_until) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(_), Some(until)) => now.saturating_sub(until) <= Self::LATELY,
        };
        let Some(flag) = self.flag.filter(|_| lately) else {
            return GaveUp::Elsewhere;
        };
        state.gave_up += 1;
        GaveUp::AtCap(self.summary(&mut state, flag, now))
    }

    /// The summary of the connections that gave up and are not said yet,
    /// if one is due at `now`: the server asks every [`Cap::SAY_EVERY`],
    /// so the last of a burst are said too.
    pub fn unsaid_at(&self, now: Duration) -> Option<String> {
        let flag = self.flag?;
        let mut state = self.lock();
        if state.gave_up == 0 {
            return None;
        }
        self.summary(&mut state, flag, now)
    }

    fn summary(&self, state: &mut State, flag: &str, now: Duration) -> Option<String> {
        if !due(state.said_gave_up, now) {
            return None;
        }
        state.said_gave_up = Some(now);
        let count = std::mem::take(&mut state.gave_up);
        let n = self.limit;
        Some(format!(
            "{count} connection(s) closed by their clients before their handshake, after this server was at its cap of {n} connections ({flag} {n}): they likely waited in the backlog until their clients gave up; start the server with a larger {flag} (--stats counts them among its refusals; said at most once every {}s)",
            Self::SAY_EVERY.as_secs()
        ))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether a line last said at `said` may be said again at `now`.
fn due(said: Option<Duration>, now: Duration) -> bool {
    said.is_none_or(|at| now.saturating_sub(at) >= Cap::SAY_EVERY)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn reaching_the_cap_is_said_once_every_ten_seconds_naming_the_flag() {
        let cap = Cap::new(4, "--max-connections");
        let first = cap.full_at(s(0)).expect("said the first time");
        assert!(first.contains("--max-connections 4"), "{first}");
        assert!(!first.contains("transport"), "{first}");
        assert_eq!(cap.full_at(s(3)), None);
        cap.freed_at(s(4));
        assert_eq!(cap.full_at(s(9)), None);
        assert!(cap.full_at(s(10)).is_some(), "ten seconds on: said again");
    }

    #[test]
    fn connections_that_give_up_at_the_cap_are_summed_in_one_line() {
        let cap = Cap::new(4, "--max-connections");
        assert!(cap.full_at(s(0)).is_some());
        let GaveUp::AtCap(Some(first)) = cap.gave_up_at(s(1)) else {
            panic!("the first is said");
        };
        assert!(first.starts_with("1 connection(s)"), "{first}");
        assert!(first.contains("--max-connections 4"), "{first}");
        for at in 2..=4 {
            assert_eq!(cap.gave_up_at(s(at)), GaveUp::AtCap(None), "counted only");
        }
        let GaveUp::AtCap(Some(summary)) = cap.gave_up_at(s(11)) else {
            panic!("ten seconds on: the summary");
        };
        assert!(summary.starts_with("4 connection(s)"), "{summary}");
        // The last of a burst, said when the server asks.
        assert_eq!(cap.gave_up_at(s(12)), GaveUp::AtCap(None));
        assert_eq!(cap.unsaid_at(s(20)), None, "not due yet");
        let last = cap.unsaid_at(s(21)).expect("due");
        assert!(last.starts_with("1 connection(s)"), "{last}");
        assert_eq!(cap.unsaid_at(s(40)), None, "nothing left unsaid");
    }

    #[test]
    fn a_connection_that_gives_up_long_after_the_cap_is_not_put_down_to_it() {
        let cap = Cap::new(4, "--max-connections");
        assert_eq!(cap.gave_up_at(s(1)), GaveUp::Elsewhere, "never full");
        assert!(cap.full_at(s(2)).is_some());
        // Still full: however long ago it filled, the backlog is waiting.
        assert!(matches!(cap.gave_up_at(s(500)), GaveUp::AtCap(_)));
        cap.freed_at(s(600));
        assert!(matches!(cap.gave_up_at(s(660)), GaveUp::AtCap(_)));
        assert_eq!(cap.gave_up_at(s(661)), GaveUp::Elsewhere);
    }

    #[test]
    fn a_silent_cap_says_nothing_and_blames_nothing() {
        let cap = Cap::silent(0);
        assert_eq!(cap.limit(), 1);
        assert_eq!(cap.full_at(s(0)), None);
        assert_eq!(cap.gave_up_at(s(1)), GaveUp::Elsewhere);
    }
}
