//! `bijou load`: a crowd of authenticated connections held on one server,
//! and what it costs.
//!
//! ```text
//!  bijou load (parent)                          server process(es)
//!  ├─ crypto limit: sign + verify_strict / s    (bijou serve --stats FILE)
//!  ├─ crowd workers ──── N idle connections ───▶ heap, RSS from FILE, /proc
//!  │    (a process per RLIMIT_NOFILE's worth)
//!  ├─ honest peer ────── push → HeadsUpdate ───▶ p50 / p99 / max
//!  ├─ flood worker ───── F flooders ───────────▶ (second measurement)
//!  ├─ stalled / trickle workers (bad input)
//!  └─ fetch back, then every held connection asked for an answer
//! ```
//!
//! Phases, in order:
//!
//! 1. **Crypto limit**: `sign` + `verify_strict` pairs per second (what a
//!    server does per handshake) on the cores the server may run on (its
//!    processes' `Cpus_allowed_list`), a thread pinned to each, all at
//!    once ([`crypto`]).
//! 2. **Crowd**: workers sign their challenges first (each connection its
//!    own key), then all start at once; each opens its connections
//!    `--concurrency` at a time from its loopback source
//!    addresses, sends the signed challenge and reads the reply, its
//!    thread never sleeping meanwhile (over loopback, waking it would be
//!    paid inside the server's send). The connect + handshake rate is
//!    connections over the time from the first `go` to the last worker
//!    done. Replies are then checked (`verify_strict`, digest, the
//!    server's key): a connection whose reply does not check is failed.
//! 3. **Held**: after a few seconds the server's figures are read: heap
//!    (its own counting allocator), RSS, the kernel's TCP memory.
//! 4. **Honest peer**: pushes `--pushes` commits one at a time, each timed
//!    to its HeadsUpdate; then again beside `--flooders` peers pushing as
//!    fast as the server reads, with `--stalled` and `--trickle`
//!    connections misbehaving, and `--vanish` held connections dropping at
//!    once halfway.
//! 5. **Nothing lost**: the honest peer fetches its tree back and finds
//!    every acknowledged commit; every held connection is asked for an
//!    answer (a fetch of a tree nobody has).
//!
//! Workers talk to the parent over their standard streams
//! ([`workers`] has the protocol).

mod args;
mod bad;
mod command;
mod crowd;
mod crypto;
mod flood;
mod honest;
mod report;
mod server;
mod stall;
mod tally;
mod workers;

pub use args::{Args, WorkerArgs};
pub use command::{run, run_worker};
