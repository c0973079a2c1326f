//! The long-poll sequence machines together (`bijou_proto::longpoll_seq`):
//! the server's `Outbox` and the client's `Inbox`, joined by a simulated
//! HTTP link, no runtime, under seeded random schedules.
//!
//! Each seed draws small outbox bounds and runs a few hundred steps, each
//! one of:
//!
//! - the server side pushes a message (a refused one, `OutboxFull`, is
//!   pushed again later, first in line);
//! - the client sends a poll carrying `x-bijou-ack: inbox.ack()` (one at
//!   a time, as the client does; a poll it gave up on may still arrive);
//! - the link hands the server any poll in flight (so acknowledgements
//!   arrive out of order, late ones after newer ones), or loses it;
//! - the link hands the client any answer in flight (the answers of polls
//!   the client gave up on included), loses one, or copies one (both
//!   copies arrive);
//! - the client gives up on its poll (a timeout) and polls again with the
//!   same acknowledgement;
//! - a copy of any earlier answer arrives (a replaying proxy).
//!
//! Faults, one on each of 4 acknowledging seeds in 10, at a random step:
//!
//! - a proxy rewrites an answer's `x-bijou-seq` past the next number, or
//!   to 0;
//! - a proxy strips `x-bijou-ack` from a poll and its answer is lost: the
//!   server took the message off its queue, so it is lost for good unless
//!   an earlier poll's answer carried it;
//! - a proxy rewrites an answer's number down to one already delivered
//!   (the message looks like a repeat).
//!
//! At the end the link turns reliable, the server side pushes a last
//! message, and the client polls until everything is collected.
//! Invariants, every seed:
//!
//! - without a fault, or with a rewrite down: every message pushed is
//!   delivered exactly once, in order, with its bytes; the server's
//!   acknowledgements are never refused;
//! - with a jump, a 0 or a stripped acknowledgement: what was delivered is
//!   an in-order prefix with no repeat, and the client stops with the
//!   typed `SequenceError` (`Jump { highest, got }` with the exact
//!   numbers, or `Zero`) rather than deliver past a gap; a rewritten jump
//!   is refused on the answer that carries it, leaving the
//!   acknowledgement unchanged;
//! - memory: the outbox never holds more than its message bound (or one
//!   message), nor more than its byte bound (or one message), its byte
//!   count is exactly the bytes of the messages it holds, which are
//!   exactly those pushed and not acknowledged, and it holds no buffer
//!   when empty; a refusal leaves it unchanged and names the counts;
//! - Subduction's client (no acknowledgements, 1 seed in 8): the server
//!   hands out each message exactly once, in order.
//!
//! `LONGPOLL_SEQ_SEEDS=N` runs N seeds (default 10,000);
//! `LONGPOLL_SEQ_SEED=S` replays one; a failing seed is printed with the
//! command that replays it.

use std::collections::VecDeque;

use bijou_proto::longpoll_seq::{
    Accepted, Inbox, Numbered, Outbox, OutboxFull, OutboxLimits, Recv, SequenceError,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Polls or answers in flight at once; beyond, the oldest is lost.
const MAX_IN_FLIGHT: usize = 8;

/// A message's bytes: its index (from 0) then filler, so that any mix-up
/// shows.
fn message(index: u64, len: usize) -> Vec<u8> {
    let mut bytes = index.to_le_bytes().to_vec();
    bytes.resize(len.max(8), index.to_le_bytes()[0]);
    bytes
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    /// Rewrite one answer's number past the next one.
    Jump,
    /// Rewrite one answer's number to 0.
    Zero,
    /// Strip the acknowledgement from one poll, and lose its answer.
    StripAck,
    /// Rewrite one answer's number down to a delivered one.
    RewriteDown,
}

#[derive(Debug, Clone)]
struct Poll {
    id: u64,
    /// `None`: no `x-bijou-ack` (Subduction's client, or stripped).
    ack: Option<u64>,
}

#[derive(Debug, Clone)]
struct Answer {
    poll: u64,
    numbered: Numbered<Vec<u8>>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    delivered: u64,
    repeats: u64,
    answers_lost: u64,
    polls_lost: u64,
    copies: u64,
    replays: u64,
    timeouts: u64,
    late_acks: u64,
    refused_full: u64,
    jumps: u64,
    zeros: u64,
    strips_caught: u64,
    rewrites_down: u64,
    unacknowledged_seeds: u64,
}

struct Sim {
    rng: StdRng,
    limits: OutboxLimits,
    outbox: Outbox<Vec<u8>>,
    inbox: Inbox,
    /// Whether the client acknowledges (ours) or not (Subduction's).
    acknowledging: bool,
    fault: Fault,
    /// The step at which the fault strikes (the first chance from then).
    fault_at: usize,
    fault_done: bool,
    /// Messages pushed, in order: index `seq - 1`.
    pushed: Vec<Vec<u8>>,
    /// Messages refused by the outbox, pushed again first.
    waiting: VecDeque<Vec<u8>>,
    /// Messages drawn so far (pushed or waiting).
    drawn: u64,
    delivered: Vec<Vec<u8>>,
    /// The highest acknowledgement the server has taken.
    server_ack: u64,
    /// The numbers the server handed out to unacknowledged polls, in order.
    taken: Vec<u64>,
    polls: Vec<Poll>,
    answers: Vec<Answer>,
    /// Every answer the server gave, for replays.
    history: Vec<Numbered<Vec<u8>>>,
    next_poll: u64,
    /// The client's poll in flight.
    outstanding: Option<u64>,
    /// Why the client stopped.
    stopped: Option<SequenceError>,
    /// The poll whose acknowledgement was stripped.
    stripped: Option<u64>,
    /// The stripped poll took a message off the outbox (its answer lost).
    strip_took: bool,
    stats: Stats,
}

impl Sim {
    fn new(seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let limits = OutboxLimits {
            max_messages: rng.random_range(1..=12),
            max_bytes: rng.random_range(16..=400),
        };
        let acknowledging = rng.random_range(0..8) != 0;
        let fault = if acknowledging {
            match rng.random_range(0..10) {
                0 => Fault::Jump,
                1 => Fault::Zero,
                2 => Fault::StripAck,
                3 => Fault::RewriteDown,
                _ => Fault::None,
            }
        } else {
            Fault::None
        };
        let fault_at = rng.random_range(0..300);
        Self {
            rng,
            limits,
            outbox: Outbox::new(limits),
            inbox: Inbox::new(),
            acknowledging,
            fault,
            fault_at,
            fault_done: false,
            pushed: Vec::new(),
            waiting: VecDeque::new(),
            drawn: 0,
            delivered: Vec::new(),
            server_ack: 0,
            taken: Vec::new(),
            polls: Vec::new(),
            answers: Vec::new(),
            history: Vec::new(),
            next_poll: 0,
            outstanding: None,
            stopped: None,
            stripped: None,
            strip_took: false,
            stats: Stats::default(),
        }
    }

    fn fault_now(&self, step: usize, fault: Fault) -> bool {
        self.fault == fault && !self.fault_done && step >= self.fault_at
    }

    /// The server side pushes the next message (a refused one first).
    fn push(&mut self) {
        let next = match self.waiting.pop_front() {
            Some(waiting) => waiting,
            None => {
                let len = self.rng.random_range(8..=64);
                self.drawn += 1;
                message(self.drawn - 1, len)
            }
        };
        let before = (self.outbox.len(), self.outbox.queued_bytes());
        match self.outbox.push(next.clone()) {
            Ok(seq) => {
                assert_eq!(seq, self.pushed.len() as u64 + 1, "numbered in order");
                self.pushed.push(next);
            }
            Err(full) => {
                let expected = OutboxFull {
                    queued: before.0,
                    bytes: before.1,
                    len: next.len(),
                    max_messages: self.limits.max_messages,
                    max_bytes: self.limits.max_bytes,
                };
                assert_eq!(full, expected, "the refusal names the counts");
                assert!(before.0 > 0, "an empty outbox takes any message");
                assert!(
                    before.0 >= self.limits.max_messages
                        || before.1 + next.len() > self.limits.max_bytes,
                    "refused only at the bound: {full}"
                );
                assert_eq!(
                    (self.outbox.len(), self.outbox.queued_bytes()),
                    before,
                    "a refusal leaves the outbox unchanged"
                );
                self.stats.refused_full += 1;
                self.waiting.push_front(next);
            }
        }
    }

    /// The client polls, unless one of its polls is in flight.
    fn client_polls(&mut self, step: usize) {
        if self.outstanding.is_some() || self.stopped.is_some() {
            return;
        }
        let id = self.next_poll;
        self.next_poll += 1;
        let mut ack = self.acknowledging.then(|| self.inbox.ack());
        if self.fault_now(step, Fault::StripAck) {
            ack = None;
            self.fault_done = true;
            self.stripped = Some(id);
        }
        self.outstanding = Some(id);
        if self.polls.len() >= MAX_IN_FLIGHT {
            self.polls.remove(0);
            self.stats.polls_lost += 1;
        }
        self.polls.push(Poll { id, ack });
    }

    /// The link hands the server one poll in flight, any of them.
    fn server_answers(&mut self) {
        if self.polls.is_empty() {
            return;
        }
        let poll = self
            .polls
            .remove(self.rng.random_range(0..self.polls.len()));
        let recv = match poll.ack {
            Some(ack) => {
                if ack < self.server_ack {
                    self.stats.late_acks += 1;
                }
                self.server_ack = self.server_ack.max(ack);
                Recv::Acknowledging(ack)
            }
            None => Recv::Unacknowledged,
        };
        let answer = self
            .outbox
            .recv(recv)
            .expect("an honest client's acknowledgement is never beyond what was handed out");
        if let Some(numbered) = answer {
            if poll.ack.is_none() {
                self.taken.push(numbered.seq);
            }
            assert_eq!(
                numbered.message,
                self.pushed[numbered.seq as usize - 1],
                "the answer carries the message pushed under its number"
            );
            if self.stripped == Some(poll.id) {
                // The message left the outbox and its answer is lost.
                self.strip_took = true;
                self.stats.answers_lost += 1;
                return;
            }
            self.history.push(numbered.clone());
            if self.answers.len() >= MAX_IN_FLIGHT {
                self.answers.remove(0);
                self.stats.answers_lost += 1;
            }
            self.answers.push(Answer {
                poll: poll.id,
                numbered,
            });
        } else if self.outstanding == Some(poll.id) {
            // 204 (or the held poll's timeout): the client polls again.
            self.outstanding = None;
        }
    }

    /// The link hands the client one answer in flight, any of them.
    fn client_receives(&mut self, step: usize) {
        if self.answers.is_empty() {
            return;
        }
        let answer = self
            .answers
            .remove(self.rng.random_range(0..self.answers.len()));
        if self.outstanding == Some(answer.poll) {
            self.outstanding = None;
        }
        self.judge(answer.numbered, step);
    }

    /// The client's inbox judges an answer (after any proxy fault).
    fn judge(&mut self, mut numbered: Numbered<Vec<u8>>, step: usize) {
        if self.stopped.is_some() {
            return;
        }
        if !self.acknowledging {
            // Subduction's client reads no number: it delivers each answer.
            self.delivered.push(numbered.message);
            return;
        }
        let highest = self.inbox.ack();
        let mut rewritten_up = false;
        if self.fault_now(step, Fault::Jump) {
            let by = self.rng.random_range(2..=5);
            numbered.seq = match self.rng.random_range(0..3) {
                0 => u64::MAX,
                _ => highest + by,
            };
            rewritten_up = true;
            self.fault_done = true;
        } else if self.fault_now(step, Fault::Zero) {
            numbered.seq = 0;
            self.fault_done = true;
        } else if highest > 0 && self.fault_now(step, Fault::RewriteDown) {
            numbered.seq = self.rng.random_range(1..=highest);
            self.fault_done = true;
            self.stats.rewrites_down += 1;
        }
        match self.inbox.accept(Some(numbered.seq)) {
            Ok(Accepted::New) => {
                assert_eq!(numbered.seq, highest + 1);
                assert_eq!(self.inbox.ack(), numbered.seq);
                self.delivered.push(numbered.message);
                self.stats.delivered += 1;
            }
            Ok(Accepted::Repeat) => {
                assert!(numbered.seq <= highest);
                assert_eq!(self.inbox.ack(), highest, "a repeat changes nothing");
                self.stats.repeats += 1;
            }
            Err(error) => {
                assert_eq!(self.inbox.ack(), highest, "an error changes nothing");
                match error {
                    SequenceError::Jump { highest: h, got } => {
                        assert_eq!((h, got), (highest, numbered.seq));
                        assert!(got > highest + 1);
                        if rewritten_up {
                            self.stats.jumps += 1;
                        } else {
                            assert_eq!(
                                self.fault,
                                Fault::StripAck,
                                "only a fault makes the numbers jump"
                            );
                            self.stats.strips_caught += 1;
                        }
                    }
                    SequenceError::Zero { highest: h } => {
                        assert_eq!((h, self.fault), (highest, Fault::Zero));
                        self.stats.zeros += 1;
                    }
                    other => panic!("unexpected {other:?}"),
                }
                self.stopped = Some(error);
            }
        }
        if rewritten_up {
            assert!(
                self.stopped.is_some(),
                "a rewritten jump is refused at once"
            );
        }
    }

    fn step(&mut self, step: usize) {
        match self.rng.random_range(0..100) {
            0..=11 => self.push(),
            12..=31 => self.client_polls(step),
            32..=53 => self.server_answers(),
            54..=75 => self.client_receives(step),
            76..=78 => {
                if !self.polls.is_empty() {
                    self.polls
                        .remove(self.rng.random_range(0..self.polls.len()));
                    self.stats.polls_lost += 1;
                }
            }
            79..=82 => {
                if !self.answers.is_empty() {
                    self.answers
                        .remove(self.rng.random_range(0..self.answers.len()));
                    self.stats.answers_lost += 1;
                }
            }
            83..=86 => {
                if !self.answers.is_empty() && self.answers.len() < MAX_IN_FLIGHT {
                    let copy = self.answers[self.rng.random_range(0..self.answers.len())].clone();
                    self.answers.push(copy);
                    self.stats.copies += 1;
                }
            }
            87..=92 => {
                if self.outstanding.take().is_some() {
                    self.stats.timeouts += 1;
                }
            }
            _ => {
                if !self.history.is_empty() && self.acknowledging {
                    let old = self.history[self.rng.random_range(0..self.history.len())].clone();
                    self.stats.replays += 1;
                    self.judge(old, step);
                }
            }
        }
        self.check_memory();
    }

    /// The outbox's bounds and bookkeeping.
    fn check_memory(&self) {
        let (len, bytes) = (self.outbox.len(), self.outbox.queued_bytes());
        assert!(
            len <= self.limits.max_messages.max(1),
            "{len} messages held"
        );
        assert!(
            bytes <= self.limits.max_bytes || len == 1,
            "{bytes} bytes in {len} messages held"
        );
        assert_eq!(self.outbox.holds_buffer(), len > 0, "no buffer when empty");
        if self.acknowledging && self.fault != Fault::StripAck {
            // Exactly the messages pushed and not acknowledged.
            let unacknowledged = &self.pushed[self.server_ack as usize..];
            assert_eq!(len, unacknowledged.len());
            assert_eq!(bytes, unacknowledged.iter().map(Vec::len).sum::<usize>());
        }
    }

    /// The link turns reliable; a last message is pushed; the client polls
    /// until everything is collected (or it stopped).
    fn drain(&mut self) {
        self.polls.clear();
        self.answers.clear();
        self.outstanding = None;
        let last = self.drawn;
        self.drawn += 1;
        self.waiting.push_back(message(last, 8));
        for _ in 0..10_000 {
            if self.stopped.is_some() {
                return;
            }
            if !self.waiting.is_empty() {
                self.push();
            }
            let ack = self.acknowledging.then(|| self.inbox.ack());
            if let Some(ack) = ack {
                self.server_ack = self.server_ack.max(ack);
            }
            let recv = ack.map_or(Recv::Unacknowledged, Recv::Acknowledging);
            let answer = self.outbox.recv(recv).expect("acknowledgement taken");
            self.check_memory();
            match answer {
                Some(numbered) => {
                    if ack.is_none() {
                        self.taken.push(numbered.seq);
                    }
                    self.judge(numbered, usize::MAX);
                }
                None if self.waiting.is_empty() => return,
                None => {}
            }
        }
        panic!("the drain did not finish");
    }

    fn finish(&mut self) {
        let delivered_prefix = self.pushed.len().min(self.delivered.len());
        if !self.acknowledging {
            self.stats.unacknowledged_seeds += 1;
            // Each number handed out at most once, in order; at the end
            // everything was handed out.
            let expected: Vec<u64> = (1..=self.pushed.len() as u64).collect();
            assert_eq!(
                self.taken, expected,
                "unacknowledged: each message taken once"
            );
            return;
        }
        match (&self.stopped, self.fault) {
            (None, Fault::None | Fault::RewriteDown) => {
                assert_eq!(self.delivered, self.pushed, "everything, once, in order");
            }
            (None, Fault::StripAck) => {
                // The stripped poll took nothing, or what it took had
                // already been answered to an earlier poll: no gap.
                assert_eq!(self.delivered, self.pushed);
            }
            (None, fault @ (Fault::Jump | Fault::Zero)) => {
                // The fault never got its chance (no answer after its step).
                assert!(!self.fault_done, "{fault:?} struck and went unnoticed");
                assert_eq!(self.delivered, self.pushed);
            }
            (Some(error), fault) => {
                assert_ne!(fault, Fault::None, "stopped without a fault");
                if fault == Fault::StripAck {
                    assert!(self.strip_took, "stopped, yet nothing was lost: {error}");
                    assert!(matches!(error, SequenceError::Jump { .. }));
                }
                assert_eq!(
                    self.delivered[..],
                    self.pushed[..delivered_prefix],
                    "an in-order prefix, no repeat"
                );
                assert_eq!(self.delivered.len() as u64, self.inbox.ack());
            }
        }
    }
}

fn run(seed: u64) -> Stats {
    let mut sim = Sim::new(seed);
    let steps = 200 + (seed % 200) as usize;
    for step in 0..steps {
        sim.step(step);
    }
    sim.drain();
    sim.finish();
    sim.stats
}

fn run_reporting(seed: u64) -> Stats {
    match std::panic::catch_unwind(|| run(seed)) {
        Ok(stats) => stats,
        Err(panic) => {
            eprintln!(
                "long-poll sequence seed {seed} failed; replay it with \
                 LONGPOLL_SEQ_SEED={seed} cargo test -p bijou-proto --test proto longpoll_seq::"
            );
            std::panic::resume_unwind(panic)
        }
    }
}

#[test]
fn random_schedules_deliver_each_message_once_in_order_or_stop_at_a_gap() {
    let seeds: Vec<u64> = match std::env::var("LONGPOLL_SEQ_SEED") {
        Ok(seed) => vec![seed.parse().expect("LONGPOLL_SEQ_SEED is a number")],
        Err(_) => {
            let n: u64 = std::env::var("LONGPOLL_SEQ_SEEDS")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(10_000);
            (0..n).collect()
        }
    };
    let started = std::time::Instant::now();
    let mut total = Stats::default();
    for &seed in &seeds {
        let s = run_reporting(seed);
        total.delivered += s.delivered;
        total.repeats += s.repeats;
        total.answers_lost += s.answers_lost;
        total.polls_lost += s.polls_lost;
        total.copies += s.copies;
        total.replays += s.replays;
        total.timeouts += s.timeouts;
        total.late_acks += s.late_acks;
        total.refused_full += s.refused_full;
        total.jumps += s.jumps;
        total.zeros += s.zeros;
        total.strips_caught += s.strips_caught;
        total.rewrites_down += s.rewrites_down;
        total.unacknowledged_seeds += s.unacknowledged_seeds;
    }
    eprintln!(
        "{} seeds in {:?}: {total:?}",
        seeds.len(),
        started.elapsed()
    );
    if seeds.len() >= 100 {
        // The schedules reach every case.
        let t = total;
        for (what, count) in [
            ("delivered", t.delivered),
            ("repeats", t.repeats),
            ("answers lost", t.answers_lost),
            ("polls lost", t.polls_lost),
            ("copies", t.copies),
            ("replays", t.replays),
            ("timeouts", t.timeouts),
            ("late acknowledgements", t.late_acks),
            ("outbox full", t.refused_full),
            ("jumps", t.jumps),
            ("zeros", t.zeros),
            ("stripped acknowledgements caught", t.strips_caught),
            ("rewrites down", t.rewrites_down),
            ("unacknowledged seeds", t.unacknowledged_seeds),
        ] {
            assert!(count > 0, "no {what} in {} seeds", seeds.len());
        }
    }
}
