//! Telling a crowd that stalls at the server's connection cap.
//!
//! `bijou serve` serves at most `--max-connections` at once (256 by
//! default); the connections beyond wait in its backlog, connected but
//! unanswered, until their clients give up. Seen from the crowd: some
//! connections are answered, then none for a while although many are
//! waiting, or connections end with no answer at all. Either says the
//! same thing, once:
//!
//! ```text
//! answered 256, waiting 128, for 3 s  -> the hint
//! failed no_answer 128                -> the hint
//! ```

use std::time::Duration;

use crate::stats_file::Figures;

use super::crowd::NO_ANSWER;

/// How long no new answer, with connections waiting, counts as a stall.
pub const STALLED_AFTER: Duration = Duration::from_secs(3);

/// Watches the crowd's progress for a stall at the server's cap.
#[derive(Debug, Default)]
pub struct Stall {
    /// Answers counted, and when that count was first seen.
    answered: (u64, Duration),
    said: bool,
}

impl Stall {
    /// The crowd's summed progress at `at` (since it started): the hint
    /// to say, the first time the figures look like the cap.
    pub fn observe(&mut self, progress: &Figures, at: Duration) -> Option<String> {
        let get = |name: &str| progress.get(name).copied().unwrap_or(0);
        let (answered, waiting) = (get("ok"), get("waiting"));
        let unanswered = get(&format!("failed_{NO_ANSWER}"));
        if answered != self.answered.0 {
            self.answered = (answered, at);
        }
        let stalled = waiting > 0 && at.saturating_sub(self.answered.1) >= STALLED_AFTER;
        // Nothing answered at all is not the cap: a wrong port or
        // protocol, a server down.
        if self.said || answered == 0 || !(stalled || unanswered > 0) {
            return None;
        }
        self.said = true;
        Some(cap_hint(answered))
    }
}

/// What a crowd that the server stops answering after `answered`
/// connections should try.
pub fn cap_hint(answered: u64) -> String {
    format!(
        "the server stopped answering new connections after {answered}: it is likely at its connection cap (`bijou serve --max-connections`, 256 by default), with the rest waiting unanswered in its backlog; start it with a larger --max-connections (and --idle-timeout longer than this run), or ask for fewer --connections"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(pairs: &[(&str, u64)]) -> Figures {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn answers_that_stop_while_connections_wait_get_the_hint_once() {
        let mut stall = Stall::default();
        let stuck = figures(&[("ok", 4), ("waiting", 16)]);
        assert_eq!(
            stall.observe(&figures(&[("ok", 2), ("waiting", 18)]), s(1)),
            None
        );
        assert_eq!(stall.observe(&stuck, s(2)), None, "new answers: moving");
        assert_eq!(stall.observe(&stuck, s(4)), None, "2 s without: not yet");
        let hint = stall.observe(&stuck, s(5)).expect("3 s without an answer");
        assert!(hint.contains("--max-connections"), "{hint}");
        assert!(hint.contains("after 4"), "{hint}");
        assert_eq!(stall.observe(&stuck, s(9)), None, "said once");
    }

    #[test]
    fn connections_ended_unanswered_get_the_hint_at_once() {
        let mut stall = Stall::default();
        let unanswered = figures(&[("ok", 4), ("failed_no_answer", 1)]);
        assert!(stall.observe(&unanswered, s(1)).is_some());
    }

    #[test]
    fn a_crowd_still_moving_or_refused_outright_gets_no_hint() {
        let mut stall = Stall::default();
        for at in 1..10 {
            let moving = figures(&[("ok", at * 100), ("waiting", 128)]);
            assert_eq!(stall.observe(&moving, s(at)), None);
        }
        // Nothing answered at all: not the cap (a wrong port, a down server).
        let mut refused = Stall::default();
        let none = figures(&[("ok", 0), ("waiting", 128), ("failed_no_answer", 5)]);
        assert_eq!(refused.observe(&none, s(1)), None);
        assert_eq!(refused.observe(&none, s(9)), None);
    }
}
