//! `bijou echo`: the echo load test. Peers send signed commits with blobs
//! to an echo server, which verifies each and echoes it byte for byte;
//! each peer checks every echo is identical, in order, and verifies it
//! again. The echo example (`cargo run --example echo`) is the short
//! version; this one adds concurrent peers, windows, captures and the
//! two-terminal mode.
//!
//! In two-terminal mode the challenge is addressed with
//! `Audience::Discover(BLAKE3("bijou-frame echo"))`, so a sender needs no
//! key from the server, or, with `--server-id`, to the server's key.

mod args;
mod check;
mod client;
mod command;
mod listen;
mod outcome;
mod report;
mod server;
mod tee;

pub use args::Args;
pub use command::run;
