//! `bijou sync`: push signed commits to a Subduction sync server, fetch
//! them back over a second connection, and check every byte.
//!
//! **Push.** Peer A connects (connection 1) and sends `--count` signed
//! LooseCommits (tag 00) into a fresh random tree (SedimentreeId), chained
//! (each commit's parent is the previous one), each with a random blob of
//! `--blob-size` bytes. A Subduction server answers every *new* commit with
//! a HeadsUpdate (tag 08) for the tree whose heads name it, and stays silent
//! about a commit it refuses, so each commit gets `--ack-timeout` to be
//! acknowledged. The round trip (LooseCommit sent -> HeadsUpdate naming it
//! received) is measured per commit; `--window` commits may be in flight
//! (default 1). A Subduction server may ingest pipelined commits out of
//! order, and then its HeadsUpdate for a commit names a later one (which
//! lists it as parent), so a HeadsUpdate acknowledges every pending commit
//! up to the newest one it names, like a TCP ack. Only the fetch proves
//! each commit arrived.
//!
//! **Fetch.** Peer B (a second key, connection 2) sends a BatchSyncRequest
//! for the tree with no fingerprints. The BatchSyncResponse's SyncDiff must
//! carry all the commits: every item verified (`verify_strict`, scope,
//! blob), and every signed commit and blob byte-identical to one A sent.
//!
//! **Addressing.** With `--server-id` the handshake is addressed to that key
//! (`Audience::Known`). Otherwise it is addressed to a service name
//! (`Audience::discover`): `--service-name`, or by default the server's
//! `HOST:PORT` as written in `--connect`, which is what `subduction_cli
//! server` serves when it has no `--service-name`.

mod args;
mod check;
mod client;
mod command;
mod fetch;
mod keyhive;
pub(crate) mod plan;
mod push;
mod report;

pub use args::Args;
pub use command::run;
