//! [`BudgetTimer`]: the wait a [`Connection`](crate::Connection) holds
//! while its verification budget refills, on any executor.
//!
//! ```text
//!   inside a tokio runtime  ──► tokio::time::Sleep until the deadline
//!                               (the runtime must have its timer enabled)
//!   any other executor      ──► one thread sleeps until the deadline, then
//!                               wakes the latest waker (no reactor needed)
//! ```
//!
//! Bound: one timer per connection at a time, and a wait is at most
//! `burst / per_second` of its `VerifyBudget` (1 s by default), so a peer
//! holds at most one sleeping thread per connection outside tokio.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// A deadline being waited for; see the [module docs](self).
#[derive(Debug)]
pub(crate) enum BudgetTimer {
    Tokio(Pin<Box<tokio::time::Sleep>>),
    Thread {
        at: Instant,
        /// The waker the sleeping thread will wake (the latest poll's).
        waker: Option<Arc<Mutex<Waker>>>,
    },
}

impl BudgetTimer {
    /// A timer that fires `wait` from now, on tokio's clock inside a
    /// runtime.
    pub(crate) fn after(wait: Duration) -> Self {
        if tokio::runtime::Handle::try_current().is_ok() {
            Self::Tokio(Box::pin(tokio::time::sleep(wait)))
        } else {
            let at = Instant::now() + wait;
            Self::Thread { at, waker: None }
        }
    }

    /// Ready once the deadline has passed.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self {
            Self::Tokio(sleep) => sleep.as_mut().poll(cx),
            Self::Thread { at, waker } => {
                if Instant::now() >= *at {
                    return Poll::Ready(());
                }
                match waker {
                    Some(shared) => {
                        let mut current = shared.lock().unwrap_or_else(PoisonError::into_inner);
                        current.clone_from(cx.waker());
                    }
                    None => {
                        let shared = Arc::new(Mutex::new(cx.waker().clone()));
                        let (deadline, wake) = (*at, shared.clone());
                        std::thread::spawn(move || {
                            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                            wake.lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .wake_by_ref();
                        });
                        *waker = Some(shared);
                    }
                }
                Poll::Pending
            }
        }
    }
}
