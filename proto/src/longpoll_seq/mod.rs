//! The long-poll transport's sequence numbers and acknowledgements, sans-IO:
//! the server's [`Outbox`] and the client's [`Inbox`].
//!
//! Over HTTP long-poll a message reaches the client as the answer to its
//! `POST /lp/recv`. Subduction's server takes the message off its queue as
//! it writes that answer, so an answer lost on its way (a proxy drops it,
//! the request times out, the connection resets) loses the message. Ours
//! numbers each message (`x-bijou-seq`, from 1 per session) and keeps it
//! until the client acknowledges it (`x-bijou-ack` on its next
//! `/lp/recv`: the highest number received). `bijou-net`'s long-poll
//! server and client move the HTTP; these two machines decide what is
//! kept, what is answered and what is delivered. No I/O, no clock, no
//! async: a driver (or a test) calls them with what arrived.
//!
//! ```text
//!   server: Outbox                         client: Inbox (highest = ack)
//!   push(m1) → 1, push(m2) → 2
//!                          ◄── POST /lp/recv   x-bijou-ack: 0
//!   recv(Acknowledging(0)) → 1: m1 (kept)
//!                          ── 200 x-bijou-seq: 1  body: m1 ──►  accept(Some(1)) → New: deliver m1; ack 1
//!                          ◄── POST /lp/recv   x-bijou-ack: 1
//!   drops ≤ 1; recv → 2: m2 (kept)
//!                          ── 200 x-bijou-seq: 2 ──✕ lost
//!                          ◄── POST /lp/recv   x-bijou-ack: 1   (the poll is sent again: same ack)
//!   drops ≤ 1 (none); recv → 2: m2 again
//!                          ── 200 x-bijou-seq: 2  body: m2 ──►  accept(Some(2)) → New: deliver m2; ack 2
//!                          ── (a copy of an earlier answer) ──►  accept(Some(1)) → Repeat: dropped
//!                          ── 200 x-bijou-seq: 7 ────────────►  accept(Some(7)) → Err(Jump): 3..7 missing
//! ```
//!
//! The rules, each enforced by one machine:
//!
//! | Who | Input | Outcome |
//! |---|---|---|
//! | [`Outbox::push`] | a message | its number, or [`OutboxFull`] past [`OutboxLimits`] (1,024 messages or 64 MiB; an empty outbox takes any one message) |
//! | [`Outbox::recv`] | [`Recv::Acknowledging`]`(n)` | drops messages ≤ `n`, answers the oldest left and keeps it; `n` above what was handed out is [`AckBeyondDelivered`] |
//! | [`Outbox::recv`] | [`Recv::Unacknowledged`] (Subduction's client) | answers the oldest and drops it (a lost answer loses it) |
//! | [`Inbox::accept`] | `Some(highest + 1)` | [`Accepted::New`]: deliver; the acknowledgement moves up |
//! | [`Inbox::accept`] | `Some(1..=highest)` | [`Accepted::Repeat`]: drop; the next poll acknowledges again |
//! | [`Inbox::accept`] | `Some(n)`, `n > highest + 1` | [`SequenceError::Jump`]: nothing delivered, the acknowledgement unchanged |
//! | [`Inbox::accept`] | `Some(0)` | [`SequenceError::Zero`] |
//! | [`Inbox::accept`] | `None` (Subduction's server) | [`Accepted::New`]: deliver |
//!
//! The outbox always answers the oldest message not acknowledged, whose
//! number is at most one above any acknowledgement the client sent, so an
//! honest exchange never jumps, whatever is lost, repeated or late: a jump
//! means a message was lost for good (or a number rewritten), and taking
//! it as the new acknowledgement would make every later message look like
//! a repeat and vanish. `proto/tests/proto/longpoll_seq.rs` runs both machines
//! under seeded schedules of pushes, polls, lost, copied and late answers
//! and polls, and checks exactly that.
//!
//! ```
//! use bijou_frame::proto::longpoll_seq::{Accepted, Inbox, Outbox, OutboxLimits, Recv};
//!
//! let mut outbox = Outbox::new(OutboxLimits::default()); // the server's, per session
//! let mut inbox = Inbox::new(); // the client's
//! let mut delivered = Vec::new();
//! for m in ["a", "b", "c"] {
//!     outbox.push(m)?;
//! }
//! let mut lose_next = true;
//! while let Some(answer) = outbox.recv(Recv::Acknowledging(inbox.ack()))? {
//!     if std::mem::take(&mut lose_next) {
//!         continue; // the answer is lost: the client polls again, same ack
//!     }
//!     for _copy in 0..2 {
//!         // A copy of the answer arrives too: a repeat.
//!         if inbox.accept(Some(answer.seq))? == Accepted::New {
//!             delivered.push(answer.message);
//!         }
//!     }
//! }
//! assert_eq!(delivered, ["a", "b", "c"]);
//! assert!(outbox.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod inbox;
mod outbox;

pub use inbox::{Accepted, Inbox, SequenceError};
pub use outbox::{AckBeyondDelivered, Numbered, Outbox, OutboxFull, OutboxLimits, Recv};
