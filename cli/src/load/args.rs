//! `bijou load`'s flags, and those of the worker processes it starts.

use std::path::PathBuf;

use bijou_frame::framing::prefix::PrefixKind;
use bijou_frame::signing::PeerId;

use crate::target::TransportArg;

/// Hold a crowd of authenticated connections on a sync server, and measure
/// what it costs the server and what an honest peer sees meanwhile.
///
/// It opens --connections authenticated connections (each its own key,
/// spread over loopback source addresses 127.B.0.1, 127.B.0.2, ... with
/// B picked for the run, 5,000 to an address, so that no address runs out
/// of ports; in worker processes, as many as the file-descriptor limit
/// asks), holds them idle,
/// then runs an honest peer's push-and-acknowledge loop alone and beside
/// --flooders peers pushing as fast as the server reads, fetches the
/// honest peer's commits back, and asks every held connection for an
/// answer. It prints the connect + handshake rate beside the crypto limit
/// (one sign and one verify_strict per handshake, on the server's cores),
/// the honest peer's p50/p99/max, the server's heap (from its --stats
/// files), RSS and the kernel's TCP memory, and every refused or dropped
/// connection by reason.
///
/// While the crowd connects it says on stderr, every second, how many
/// connections were answered, failed, wait for an answer and are not
/// started; if the server stops answering (as `bijou serve` does past its
/// --max-connections, 256 by default: the rest wait unanswered in its
/// backlog) it says so once. The whole run stops at --deadline.
///
/// Example:
///   taskset -c 0 bijou serve --listen 127.0.0.1:7879 --transport tcp \
///       --max-connections 12000 --idle-timeout 900 --stats /tmp/s.stats --quiet &
///   taskset -c 1 bijou load --connect tcp://127.0.0.1:7879 --service-name 127.0.0.1:7879 \
///       --connections 10000 --flooders 4 --server-stats /tmp/s.stats
///
/// See scripts/load-100k.sh for 100,000 connections over several server
/// processes sharing one port.
///
/// Exit codes: 0 every connection held and answered, every acknowledged
/// push fetched back; 1 a connection was refused or dropped, a push lost,
/// or a stalled connection outlived the server's handshake timeout; 2 bad
/// arguments; 3 the server cannot be reached, a worker process failed
/// (its error is printed), or the --deadline passed (what was done and
/// what was not is printed; no figures).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Idle authenticated connections to hold.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub connections: u64,
    /// Connections being opened at once (per worker process).
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub concurrency: u64,
    /// Peers pushing valid commits as fast as the server reads them while
    /// the honest peer measures again (0: no second measurement).
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub flooders: u64,
    /// Commits the honest peer pushes, one at a time, in each measurement
    /// (all into one tree: `bijou serve` keeps at most 48 MiB of one).
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=10000))]
    pub pushes: u64,
    /// Blob size of the honest peer's and the flooders' commits, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1024)]
    pub blob_size: usize,
    /// Connections that connect and never send their challenge, opened
    /// during the flood (the server should close each after its handshake
    /// timeout).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub stalled: u64,
    /// Authenticated connections that send one byte of a message every
    /// --trickle-every seconds during the flood.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub trickle: u64,
    /// Seconds between a trickling connection's bytes.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub trickle_every: u64,
    /// Held connections that disconnect at once in the middle of the
    /// flood (they are not asked for an answer afterwards).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub vanish: u64,
    /// Seconds the whole run may take: past them it stops, says what it
    /// did and what it did not, and exits 3. Each connection waits at most
    /// 10 s for its upgrade and 10 s for the reply to its challenge.
    #[arg(long, value_name = "SECS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub deadline: u64,
    /// The server's figures files (`bijou serve --stats FILE`), one per
    /// server process: their heap, and their pids for RSS and cores.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub server_stats: Vec<PathBuf>,
}

/// Where the server is and how to address it: the same for `bijou load`
/// and its workers.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// The server: ws://HOST:PORT[/path], tcp://HOST:PORT, or HOST:PORT
    /// with --transport.
    #[arg(long, value_name = "URL")]
    pub connect: String,
    /// How messages travel when --connect is a bare HOST:PORT: ws or tcp.
    #[arg(long, value_enum, default_value_t = TransportArg::Ws)]
    pub transport: TransportArg,
    /// Length prefix for framed TCP: bijou64, leb128 or u32-be.
    #[arg(long, default_value_t = PrefixKind::Bijou64)]
    pub prefix: PrefixKind,
    /// The server's peer id (64 hex digits).
    #[arg(long, value_name = "PEER_ID", conflicts_with = "service_name")]
    pub server_id: Option<PeerId>,
    /// The service name the handshakes are addressed to (default: the
    /// server's HOST:PORT).
    #[arg(long, value_name = "NAME")]
    pub service_name: Option<String>,
}

/// One worker process of `bijou load` (started by it; not for people).
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// What the worker's connections do.
    #[arg(long, value_enum)]
    pub role: Role,
    /// How many connections.
    #[arg(long)]
    pub count: u64,
    /// The index of its first connection in the whole crowd (picks the
    /// source addresses).
    #[arg(long, default_value_t = 0)]
    pub first: u64,
    /// Connections being opened at once.
    #[arg(long, default_value_t = 128)]
    pub concurrency: u64,
    /// Blob size of a flooder's commits.
    #[arg(long, default_value_t = 1024)]
    pub blob_size: usize,
    /// Seconds between a trickling connection's bytes.
    #[arg(long, default_value_t = 60)]
    pub trickle_every: u64,
    /// The run's source addresses are 127.BASE.x.y.
    #[arg(long, default_value_t = 1)]
    pub source_base: u8,
}

/// What a worker's connections do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// Authenticate, then idle until asked for an answer.
    Crowd,
    /// Authenticate, then push commits as fast as the server reads.
    Flood,
    /// Connect and never send the challenge.
    Stalled,
    /// Authenticate, then send a byte of a message now and then.
    Trickle,
}
