//! What one sending peer saw.

use std::time::Duration;

use bijou_frame::signing::PeerId;

/// One sender's counts, problems and round trips.
#[derive(Debug, Default, Clone)]
pub(super) struct Outcome {
    pub(super) local: Option<PeerId>,
    pub(super) remote: Option<PeerId>,
    pub(super) handshake: Duration,
    /// Frames this peer was asked to send.
    pub(super) planned: u64,
    /// Frames it actually sent.
    pub(super) sent: u64,
    pub(super) echoed: u64,
    pub(super) verified_again: u64,
    pub(super) rejected: u64,
    pub(super) altered: u64,
    pub(super) reordered: u64,
    pub(super) lost: u64,
    /// The server's first reply was no echo of anything sent.
    pub(super) not_echo: bool,
    pub(super) bytes: u64,
    pub(super) rtts: Vec<Duration>,
    pub(super) first_problem: Option<String>,
    pub(super) capture: Option<Vec<u8>>,
}
