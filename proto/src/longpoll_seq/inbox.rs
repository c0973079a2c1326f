//! [`Inbox`]: the client's side of the long-poll sequence numbers: which
//! answers are new, which are repeats, and what to acknowledge.

/// What to do with an `/lp/recv` answer, by its sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// The next message: deliver it. The acknowledgement now covers it.
    New,
    /// A message already delivered, answered again (the server did not get
    /// the acknowledgement yet, or a copy of an earlier answer came): drop
    /// it. The next poll acknowledges it again.
    Repeat,
}

/// An `/lp/recv` answer whose sequence number cannot come from a server
/// that numbers its messages from 1 and answers the oldest one not
/// acknowledged. Nothing was delivered and the acknowledgement is
/// unchanged; the session cannot go on (the messages in between are
/// missing, or the numbers cannot be trusted to tell repeats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SequenceError {
    /// A number above the next one: the messages in between never came.
    /// Taken as the new acknowledgement it would make every later message
    /// look like a repeat.
    #[error("x-bijou-seq jumped to {got} after {highest} (expected {} next): messages {}..{got} are missing; reconnect (is a proxy rewriting x-bijou-seq, or a server dropping messages?)", .highest.saturating_add(1), .highest.saturating_add(1))]
    Jump {
        /// The highest sequence number delivered so far (0: none).
        highest: u64,
        /// The number received.
        got: u64,
    },
    /// Sequence number 0: numbers start at 1.
    #[error("x-bijou-seq 0 after {highest}: numbers start at 1; is this server numbering its messages as x-bijou-seq does?")]
    Zero {
        /// The highest sequence number delivered so far (0: none).
        highest: u64,
    },
}

/// The client's side of one long-poll session's sequence numbers: the
/// highest number delivered, which every `/lp/recv` acknowledges
/// (`x-bijou-ack`), and the judgement of each answer: the next number is
/// new, one at or below the highest is a repeat, one beyond the next is a
/// [`SequenceError::Jump`]. An answer without a number (Subduction's
/// server numbers none) is always new. See the [module docs](super).
///
/// ```
/// use bijou_frame::proto::longpoll_seq::{Accepted, Inbox, SequenceError};
///
/// let mut inbox = Inbox::new();
/// assert_eq!(inbox.ack(), 0); // the first poll's x-bijou-ack
/// assert_eq!(inbox.accept(Some(1)), Ok(Accepted::New));
/// assert_eq!(inbox.accept(Some(1)), Ok(Accepted::Repeat));
/// assert_eq!(inbox.ack(), 1);
/// assert_eq!(inbox.accept(Some(5)), Err(SequenceError::Jump { highest: 1, got: 5 }));
/// assert_eq!(inbox.ack(), 1, "a jump changes nothing");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inbox {
    /// The highest sequence number delivered (0: none).
    highest: u64,
}

impl Inbox {
    /// Nothing received yet: acknowledges 0.
    #[must_use]
    pub const fn new() -> Self {
        Self { highest: 0 }
    }

    /// The acknowledgement every `/lp/recv` carries (`x-bijou-ack`): the
    /// highest sequence number delivered, 0 before the first.
    #[must_use]
    pub const fn ack(&self) -> u64 {
        self.highest
    }

    /// Judges an answer by its sequence number (`None`: the server numbers
    /// nothing, and the answer is new).
    ///
    /// # Errors
    ///
    /// [`SequenceError::Jump`] for a number above the next one,
    /// [`SequenceError::Zero`] for 0. The inbox is unchanged.
    pub fn accept(&mut self, seq: Option<u64>) -> Result<Accepted, SequenceError> {
        let Some(seq) = seq else {
            return Ok(Accepted::New);
        };
        let highest = self.highest;
        if seq == 0 {
            return Err(SequenceError::Zero { highest });
        }
        if seq <= highest {
            return Ok(Accepted::Repeat);
        }
        // `seq > highest`, so `highest < u64::MAX` and the next is exact.
        if seq == highest.saturating_add(1) {
            self.highest = seq;
            return Ok(Accepted::New);
        }
        Err(SequenceError::Jump { highest, got: seq })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn consecutive_numbers_are_new_and_raise_the_ack() {
        let mut inbox = Inbox::new();
        for seq in 1..=5 {
            assert_eq!(inbox.accept(Some(seq)), Ok(Accepted::New));
            assert_eq!(inbox.ack(), seq);
        }
    }

    #[test]
    fn numbers_at_or_below_the_highest_are_repeats_and_change_nothing() {
        let mut inbox = Inbox::new();
        for seq in 1..=3 {
            inbox.accept(Some(seq)).unwrap();
        }
        for seq in [3, 1, 2, 3] {
            assert_eq!(inbox.accept(Some(seq)), Ok(Accepted::Repeat));
            assert_eq!(inbox.ack(), 3);
        }
        assert_eq!(inbox.accept(Some(4)), Ok(Accepted::New));
    }

    #[test]
    fn a_jump_is_an_error_that_changes_nothing_and_later_messages_still_count() {
        let mut inbox = Inbox::new();
        inbox.accept(Some(1)).unwrap();
        assert_eq!(
            inbox.accept(Some(3)),
            Err(SequenceError::Jump { highest: 1, got: 3 })
        );
        assert_eq!(
            inbox.accept(Some(u64::MAX)),
            Err(SequenceError::Jump {
                highest: 1,
                got: u64::MAX
            })
        );
        assert_eq!(inbox.ack(), 1);
        // Not taken as the acknowledgement: 2 is still new, not a repeat.
        assert_eq!(inbox.accept(Some(2)), Ok(Accepted::New));
        // The first message may not be skipped either.
        assert_eq!(
            Inbox::new().accept(Some(2)),
            Err(SequenceError::Jump { highest: 0, got: 2 })
        );
    }

    #[test]
    fn zero_is_an_error_and_unnumbered_answers_are_always_new() {
        let mut inbox = Inbox::new();
        assert_eq!(
            inbox.accept(Some(0)),
            Err(SequenceError::Zero { highest: 0 })
        );
        assert_eq!(inbox.accept(None), Ok(Accepted::New));
        assert_eq!(inbox.accept(Some(1)), Ok(Accepted::New));
        assert_eq!(inbox.accept(None), Ok(Accepted::New));
        assert_eq!(inbox.ack(), 1);
    }

    #[test]
    fn the_jump_error_names_the_missing_range_and_what_to_try() {
        let text = SequenceError::Jump { highest: 4, got: 9 }.to_string();
        assert!(text.contains("jumped to 9 after 4"), "{text}");
        assert!(text.contains("expected 5 next"), "{text}");
        assert!(text.contains("messages 5..9 are missing"), "{text}");
        assert!(text.contains("reconnect"), "{text}");
    }
}
