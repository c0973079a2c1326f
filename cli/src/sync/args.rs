//! `bijou sync`'s flags.

use std::path::PathBuf;

use bijou_frame::framing::prefix::PrefixKind;
use bijou_frame::signing::PeerId;

use crate::serve::Fault;
use crate::target::TransportArg;

/// Push signed commits to a sync server and fetch them back, byte for byte.
///
/// Peer A pushes --count chained, signed commits with random blobs into a
/// fresh tree; each must be acknowledged by a HeadsUpdate. Peer B (a second
/// key) then fetches the tree and every commit must come back identical
/// and verify. Without --connect, `bijou serve`'s server runs in process.
///
/// Example:
///   bijou sync                                          # in-process server
///   bijou serve --listen 127.0.0.1:7879 &  bijou sync --connect 127.0.0.1:7879
///   subduction_cli server --socket 127.0.0.1:8080 --auth open &
///   bijou sync --connect ws://127.0.0.1:8080 --window 16
///
/// Exit codes: 0 every commit acknowledged and fetched back identical;
/// 1 something was lost, altered, rejected or unacknowledged; 2 bad
/// arguments or key file; 3 cannot connect, handshake refused, timeout.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The sync server: HOST:PORT, ws://HOST:PORT[/path], http://HOST:PORT[/path] (long-poll) or tcp://HOST:PORT.
    /// Without it, our own server runs in process.
    #[arg(long, value_name = "URL")]
    pub connect: Option<String>,
    /// The service name the handshake is addressed to (Audience::discover).
    /// Default: the server's HOST:PORT, as `subduction_cli server`
    /// defaults to its --socket.
    #[arg(long, value_name = "NAME", conflicts_with = "server_id")]
    pub service_name: Option<String>,
    /// The server's peer id (64 hex digits). The handshake is addressed to
    /// that key and its response must be signed by it.
    #[arg(long, value_name = "PEER_ID", requires = "connect")]
    pub server_id: Option<PeerId>,
    /// The pushing peer's key file (default: a new key for this run).
    #[arg(long, value_name = "KEY")]
    pub key: Option<PathBuf>,
    /// Commits to push (1-65535: one BatchSyncResponse brings them all back).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(1..))]
    pub count: u16,
    /// Blob size of each commit, in bytes.
    #[arg(long, default_value_t = 1024)]
    pub blob_size: usize,
    /// Commits in flight before waiting for a HeadsUpdate (1-256).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub window: u16,
    /// How messages travel when --connect is a bare HOST:PORT (a URL's
    /// scheme decides otherwise).
    #[arg(long, value_enum, default_value_t = TransportArg::Ws)]
    pub transport: TransportArg,
    /// Length prefix for framed TCP: bijou64, leb128 or u32-be.
    #[arg(long, default_value_t = PrefixKind::Bijou64)]
    pub prefix: PrefixKind,
    /// How long each commit may wait for its HeadsUpdate, in milliseconds
    /// (at least 1).
    #[arg(long, value_name = "MS", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    pub ack_timeout: u64,
    /// How long the fetch may wait for its BatchSyncResponse before it
    /// asks again (at most 3 times in all), in milliseconds (at least 1).
    #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub fetch_timeout: u64,
    /// Seed for the commit ids and blobs (random if not given; the tree id
    /// is always fresh).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Give up after this many seconds (at least 1).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// Who may edit the tree if the server enforces keyhive (a default
    /// `subduction_cli`): public (everyone, so any key may read and push)
    /// or key (only the pushing key, which then also fetches).
    #[arg(long, value_enum, default_value_t = AccessArg::Public)]
    pub access: AccessArg,
    /// What the in-process server gets wrong on purpose (tests only).
    #[arg(skip)]
    pub fault: Fault,
}

/// `--access`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AccessArg {
    /// Edit for keyhive's Public agent: anyone may read and push.
    Public,
    /// Edit for the pushing key only.
    Key,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_flags::{check_server_id_flag, parse};

    #[test]
    fn server_ids_parse_from_hex() {
        let argv = ["sync", "--connect", "ws://127.0.0.1:1"];
        check_server_id_flag::<Args>(&argv, |a| a.server_id);
        let id = PeerId::from_bytes([0xAB; 32]);
        // A server id needs --connect and excludes a service name.
        assert!(parse::<Args>(&["sync", "--server-id", &id.to_string()]).is_err());
        let both = [
            "sync",
            "--connect",
            "ws://h:1",
            "--server-id",
            &"ab".repeat(32),
            "--service-name",
            "x",
        ];
        assert!(parse::<Args>(&both).is_err());
    }
}
