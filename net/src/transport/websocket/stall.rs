use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// How long a peer may pause inside a frame: a Tokio timer that exists
/// only while the peer is inside one (an idle connection holds none), and
/// restarts whenever bytes arrive.
#[derive(Debug)]
pub(super) struct StallTimer {
    timeout: Option<Duration>,
    /// Armed only while the peer is inside a frame.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl StallTimer {
    /// A timer giving up after `timeout` without bytes (`None`: never).
    pub(super) fn new(timeout: Option<Duration>) -> Self {
        Self {
            timeout,
            sleep: None,
        }
    }

    pub(super) fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
        self.sleep = None;
    }

    /// Bytes arrived: the peer has the whole timeout again.
    pub(super) fn progress(&mut self) {
        if let (Some(sleep), Some(timeout)) = (&mut self.sleep, self.timeout) {
            sleep.as_mut().reset(Instant::now() + timeout);
        }
    }

    /// Drops the timer (between frames, or the stream ended).
    pub(super) fn disarm(&mut self) {
        self.sleep = None;
    }

    /// Waits on the timer while `mid_frame`, arming it first if needed;
    /// `Ready` with the timeout in milliseconds once it fired. Between
    /// frames it disarms and stays `Pending`.
    pub(super) fn poll_expired(&mut self, cx: &mut Context<'_>, mid_frame: bool) -> Poll<u64> {
        let Some(timeout) = self.timeout.filter(|_| mid_frame) else {
            self.sleep = None;
            return Poll::Pending;
        };
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        ready!(sleep.as_mut().poll(cx));
        Poll::Ready(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX))
    }
}
