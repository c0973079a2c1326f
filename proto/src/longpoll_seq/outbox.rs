//! [`Outbox`]: the server's side of the long-poll sequence numbers: the
//! messages queued for one client, numbered from 1, each kept until the
//! client acknowledges it.

use alloc::collections::VecDeque;

/// The outbox's bounds: a client that never collects pins at most this
/// much. The defaults are the long-poll server's (and Subduction's message
/// count).
///
/// An empty outbox always takes one message, whatever its length, so the
/// byte bound holds messages back and never refuses a single one: the
/// outbox holds at most `max_bytes`, or one message.
///
/// ```
/// use bijou_frame::proto::longpoll_seq::OutboxLimits;
///
/// let limits = OutboxLimits::default();
/// assert_eq!((limits.max_messages, limits.max_bytes), (1_024, 64 * 1024 * 1024));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboxLimits {
    /// Messages queued and not yet acknowledged (1,024).
    pub max_messages: usize,
    /// Their bytes (64 MiB: more than one message of the largest length,
    /// 50 MiB).
    pub max_bytes: usize,
}

impl OutboxLimits {
    /// 1,024 messages, 64 MiB.
    pub const DEFAULT: Self = Self {
        max_messages: 1024,
        max_bytes: 64 * 1024 * 1024,
    };
}

impl Default for OutboxLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A message and its sequence number (from 1, per session: the
/// `x-bijou-seq` of its `/lp/recv` answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numbered<M> {
    /// The sequence number.
    pub seq: u64,
    /// The message.
    pub message: M,
}

/// What an `/lp/recv` asks of the [`Outbox`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recv {
    /// With `x-bijou-ack: n` (our client): the messages up to `n` are
    /// dropped, and the oldest one left is answered and kept until a later
    /// acknowledgement covers it, so a lost answer is answered again.
    Acknowledging(u64),
    /// Without (Subduction's client): the oldest message is answered and
    /// leaves the outbox; a lost answer loses it.
    Unacknowledged,
}

/// [`Outbox::push`] refused a message: the outbox is at its bound (the
/// client does not collect). Nothing was queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the long-poll client does not collect its messages: {queued} messages ({bytes} bytes) wait, a message of {len} bytes does not fit in at most {max_messages} messages or {max_bytes} bytes; end the session, or wait for the client to acknowledge")]
pub struct OutboxFull {
    /// Messages waiting.
    pub queued: usize,
    /// Their bytes.
    pub bytes: usize,
    /// The refused message's length.
    pub len: usize,
    /// The bound in messages.
    pub max_messages: usize,
    /// The bound in bytes.
    pub max_bytes: usize,
}

/// An acknowledgement of a sequence number the outbox never handed out:
/// not something a client that acknowledges what it received can send.
/// Nothing was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("x-bijou-ack {ack} acknowledges more than was sent (up to {delivered}): send the highest x-bijou-seq received")]
pub struct AckBeyondDelivered {
    /// The acknowledgement.
    pub ack: u64,
    /// The highest sequence number handed out (0: none yet).
    pub delivered: u64,
}

/// The server's side of one long-poll session's sequence numbers: the
/// messages for the client, numbered from 1 in the order pushed, bounded
/// by [`OutboxLimits`], each kept until acknowledged (or, for a client
/// that does not acknowledge, until handed out). See the
/// [module docs](super) for the exchange.
///
/// It holds no buffer while empty: an idle session costs only the struct.
///
/// ```
/// use bijou_frame::proto::longpoll_seq::{Numbered, Outbox, OutboxLimits, Recv};
///
/// let mut outbox = Outbox::new(OutboxLimits::default());
/// assert_eq!(outbox.push("hello"), Ok(1));
/// // The answer to the first poll is lost; the client asks again with the
/// // same acknowledgement and gets the same message, the same number.
/// let first = outbox.recv(Recv::Acknowledging(0))?;
/// assert_eq!(first, Some(Numbered { seq: 1, message: "hello" }));
/// assert_eq!(outbox.recv(Recv::Acknowledging(0))?, first);
/// // Acknowledged: gone.
/// assert_eq!(outbox.recv(Recv::Acknowledging(1))?, None);
/// assert!(outbox.is_empty());
/// # Ok::<(), bijou_frame::proto::longpoll_seq::AckBeyondDelivered>(())
/// ```
#[derive(Debug, Clone)]
pub struct Outbox<M> {
    /// Oldest first, numbered consecutively.
    queue: VecDeque<Numbered<M>>,
    /// The queued messages' bytes.
    queued_bytes: usize,
    /// The sequence number of the next message pushed.
    next_seq: u64,
    /// The highest sequence number handed out.
    delivered: u64,
    limits: OutboxLimits,
}

impl<M: AsRef<[u8]> + Clone> Outbox<M> {
    /// An empty outbox; the first message pushed is number 1.
    #[must_use]
    pub const fn new(limits: OutboxLimits) -> Self {
        Self {
            queue: VecDeque::new(),
            queued_bytes: 0,
            next_seq: 1,
            delivered: 0,
            limits,
        }
    }

    /// Queues `message` and returns its sequence number, or refuses it
    /// when it does not fit (an empty outbox takes any one message).
    ///
    /// # Errors
    ///
    /// [`OutboxFull`]: already [`OutboxLimits::max_messages`] messages, or
    /// the message would take the bytes past
    /// [`OutboxLimits::max_bytes`]. The outbox is unchanged.
    pub fn push(&mut self, message: M) -> Result<u64, OutboxFull> {
        let len = message.as_ref().len();
        let fits = self.queue.is_empty()
            || (self.queue.len() < self.limits.max_messages
                && self
                    .queued_bytes
                    .checked_add(len)
                    .is_some_and(|bytes| bytes <= self.limits.max_bytes));
        if !fits {
            return Err(OutboxFull {
                queued: self.queue.len(),
                bytes: self.queued_bytes,
                len,
                max_messages: self.limits.max_messages,
                max_bytes: self.limits.max_bytes,
            });
        }
        let seq = self.next_seq;
        // 2^64 messages: never reached (a message a nanosecond for 584
        // years).
        self.next_seq = seq.saturating_add(1);
        self.queued_bytes = self.queued_bytes.saturating_add(len);
        self.queue.push_back(Numbered { seq, message });
        Ok(seq)
    }

    /// The answer to an `/lp/recv`: the oldest message not yet
    /// acknowledged (kept, [`Recv::Acknowledging`]) or not yet handed out
    /// (taken, [`Recv::Unacknowledged`]), or `None` when there is none
    /// (the poll waits, and asks again when a message is pushed). Asking
    /// again with the same acknowledgement gives the same answer: a
    /// server may call this each time it wakes.
    ///
    /// # Errors
    ///
    /// [`AckBeyondDelivered`]: the acknowledgement is above every sequence
    /// number handed out. Nothing changes.
    pub fn recv(&mut self, recv: Recv) -> Result<Option<Numbered<M>>, AckBeyondDelivered> {
        let answer = match recv {
            Recv::Acknowledging(ack) => {
                self.acknowledge(ack)?;
                self.queue.front().cloned()
            }
            Recv::Unacknowledged => {
                let taken = self.queue.pop_front();
                if let Some(gone) = &taken {
                    self.queued_bytes = self
                        .queued_bytes
                        .saturating_sub(gone.message.as_ref().len());
                }
                self.release_if_empty();
                taken
            }
        };
        if let Some(numbered) = &answer {
            self.delivered = self.delivered.max(numbered.seq);
        }
        Ok(answer)
    }

    /// Drops the messages numbered up to `ack`.
    fn acknowledge(&mut self, ack: u64) -> Result<(), AckBeyondDelivered> {
        if ack > self.delivered {
            return Err(AckBeyondDelivered {
                ack,
                delivered: self.delivered,
            });
        }
        while self.queue.front().is_some_and(|oldest| oldest.seq <= ack) {
            if let Some(gone) = self.queue.pop_front() {
                self.queued_bytes = self
                    .queued_bytes
                    .saturating_sub(gone.message.as_ref().len());
            }
        }
        self.release_if_empty();
        Ok(())
    }

    /// Drops every message (the session ended and the client will not
    /// collect them). The numbering goes on.
    pub fn clear(&mut self) {
        self.queue = VecDeque::new();
        self.queued_bytes = 0;
    }

    /// Gives the queue's buffer back once it is empty: an idle session
    /// holds none.
    fn release_if_empty(&mut self) {
        if self.queue.is_empty() && self.queue.capacity() > 0 {
            self.queue = VecDeque::new();
        }
    }
}

impl<M> Outbox<M> {
    /// Messages queued and not yet acknowledged (or, unacknowledged, not
    /// yet handed out).
    #[must_use]
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nothing is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The queued messages' bytes.
    #[must_use]
    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    /// The highest sequence number handed out (0: none yet): the highest
    /// acknowledgement [`recv`](Self::recv) takes.
    #[must_use]
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// The bounds it was made with.
    #[must_use]
    pub fn limits(&self) -> OutboxLimits {
        self.limits
    }

    /// Whether the queue holds a buffer (false whenever it is empty).
    #[must_use]
    pub fn holds_buffer(&self) -> bool {
        self.queue.capacity() > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    fn limits(max_messages: usize, max_bytes: usize) -> OutboxLimits {
        OutboxLimits {
            max_messages,
            max_bytes,
        }
    }

    #[test]
    fn messages_are_numbered_from_one_in_the_order_pushed() {
        let mut outbox = Outbox::new(OutboxLimits::DEFAULT);
        let seqs: Vec<u64> = (0..5u8).map(|n| outbox.push(vec![n]).unwrap()).collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5]);
        assert_eq!((outbox.len(), outbox.queued_bytes()), (5, 5));
    }

    #[test]
    fn the_bound_refuses_with_the_counts_and_leaves_the_outbox_unchanged() {
        let mut outbox = Outbox::new(limits(2, 10));
        assert_eq!(outbox.push(vec![0; 4]), Ok(1));
        assert_eq!(outbox.push(vec![0; 6]), Ok(2));
        let full = OutboxFull {
            queued: 2,
            bytes: 10,
            len: 0,
            max_messages: 2,
            max_bytes: 10,
        };
        assert_eq!(outbox.push(vec![]), Err(full));
        assert_eq!((outbox.len(), outbox.queued_bytes()), (2, 10));
        // Bytes: one message fits by count, not by bytes.
        let mut outbox = Outbox::new(limits(8, 10));
        assert_eq!(outbox.push(vec![0; 7]), Ok(1));
        assert_eq!(
            outbox.push(vec![0; 4]).unwrap_err(),
            OutboxFull {
                queued: 1,
                bytes: 7,
                len: 4,
                max_messages: 8,
                max_bytes: 10
            }
        );
        assert_eq!(outbox.push(vec![0; 3]), Ok(2), "exactly at the byte bound");
    }

    #[test]
    fn an_empty_outbox_takes_one_message_of_any_length() {
        let mut outbox = Outbox::new(limits(0, 4));
        assert_eq!(outbox.push(vec![0; 100]), Ok(1));
        assert!(outbox.push(vec![]).is_err());
    }

    #[test]
    fn a_refused_message_takes_no_number() {
        let mut outbox = Outbox::new(limits(1, 100));
        assert_eq!(outbox.push(vec![1]), Ok(1));
        assert!(outbox.push(vec![2]).is_err());
        outbox.recv(Recv::Acknowledging(0)).unwrap();
        outbox.recv(Recv::Acknowledging(1)).unwrap();
        assert_eq!(outbox.push(vec![2]), Ok(2));
    }

    #[test]
    fn acknowledged_polls_repeat_until_acknowledged_then_move_on() {
        let mut outbox = Outbox::new(OutboxLimits::DEFAULT);
        for n in 1..=3u8 {
            outbox.push(vec![n]).unwrap();
        }
        let one = Some(Numbered {
            seq: 1,
            message: vec![1],
        });
        assert_eq!(outbox.recv(Recv::Acknowledging(0)).unwrap(), one);
        assert_eq!(outbox.recv(Recv::Acknowledging(0)).unwrap(), one);
        assert_eq!(outbox.delivered(), 1);
        let two = outbox.recv(Recv::Acknowledging(1)).unwrap().unwrap();
        assert_eq!((two.seq, two.message), (2, vec![2]));
        assert_eq!((outbox.len(), outbox.queued_bytes()), (2, 2));
        // A stale acknowledgement (an abandoned poll arriving late) drops
        // nothing and answers the oldest unacknowledged.
        assert_eq!(outbox.recv(Recv::Acknowledging(0)).unwrap().unwrap().seq, 2);
        assert_eq!(outbox.len(), 2);
    }

    #[test]
    fn an_ack_beyond_what_was_handed_out_is_refused_and_drops_nothing() {
        let mut outbox = Outbox::new(OutboxLimits::DEFAULT);
        outbox.push(vec![1]).unwrap();
        outbox.push(vec![2]).unwrap();
        assert_eq!(
            outbox.recv(Recv::Acknowledging(1)),
            Err(AckBeyondDelivered {
                ack: 1,
                delivered: 0
            })
        );
        assert_eq!(outbox.len(), 2);
        outbox.recv(Recv::Acknowledging(0)).unwrap();
        assert_eq!(
            outbox.recv(Recv::Acknowledging(2)),
            Err(AckBeyondDelivered {
                ack: 2,
                delivered: 1
            })
        );
        assert_eq!(outbox.len(), 2);
    }

    #[test]
    fn unacknowledged_polls_take_each_message_once() {
        let mut outbox = Outbox::new(OutboxLimits::DEFAULT);
        outbox.push(vec![1, 1]).unwrap();
        outbox.push(vec![2]).unwrap();
        let got: Vec<u64> = core::iter::from_fn(|| outbox.recv(Recv::Unacknowledged).unwrap())
            .map(|n| n.seq)
            .collect();
        assert_eq!(got, [1, 2]);
        assert_eq!((outbox.len(), outbox.queued_bytes()), (0, 0));
        assert_eq!(outbox.delivered(), 2);
    }

    #[test]
    fn an_empty_outbox_holds_no_buffer() {
        let mut outbox = Outbox::new(OutboxLimits::DEFAULT);
        assert!(!outbox.holds_buffer());
        outbox.push(vec![1]).unwrap();
        assert!(outbox.holds_buffer());
        outbox.recv(Recv::Acknowledging(0)).unwrap();
        outbox.recv(Recv::Acknowledging(1)).unwrap();
        assert!(!outbox.holds_buffer());
        outbox.push(vec![2]).unwrap();
        outbox.recv(Recv::Unacknowledged).unwrap();
        assert!(!outbox.holds_buffer());
        outbox.push(vec![3]).unwrap();
        outbox.clear();
        assert!(!outbox.holds_buffer());
        assert_eq!((outbox.len(), outbox.queued_bytes()), (0, 0));
        assert_eq!(outbox.push(vec![4]), Ok(4), "the numbering goes on");
    }
}
