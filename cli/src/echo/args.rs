//! `bijou echo`'s flags.

use std::net::SocketAddr;
use std::path::PathBuf;

use bijou_frame::framing::prefix::PrefixKind;
use bijou_frame::signing::PeerId;
use rand::rngs::StdRng;
use rand::Rng;

use crate::target::TransportArg;

/// Echo signed commits between peers over TCP or WebSocket: a load test.
///
/// Each sending peer (A) sends --count LooseCommit messages with random
/// blobs, signed with a key of its own; the echo server (B) verifies every
/// signature and blob and echoes each frame back exactly as received; A
/// checks each echo is the frame it sent, in order, and verifies it again.
///
/// Example:
///   bijou echo                                    # both sides in process
///   bijou echo --peers 4 --window 16 --transport ws
///   bijou echo --listen 127.0.0.1:7878            # terminal 1: server B
///   bijou echo --connect localhost:7878 --peers 4 # terminal 2: senders A
///   bijou echo --count 2 --blob-size 100 --capture echo.cap && bijou inspect echo.cap
///
/// Exit codes: 0 every frame came back intact; 1 a frame was lost,
/// altered, reordered or rejected, or the server is not an echo server;
/// 2 bad arguments; 3 cannot connect, handshake refused, timeout.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Only run the echo server (peer B), listening on ADDR.
    #[arg(long, value_name = "ADDR", conflicts_with = "connect")]
    pub listen: Option<SocketAddr>,
    /// Only run the sender(s) (peer A), against an echo server:
    /// HOST:PORT, tcp://HOST:PORT, ws://HOST:PORT or http://HOST:PORT (long-poll).
    #[arg(long, value_name = "URL")]
    pub connect: Option<String>,
    /// With --connect: the server's peer id (64 hex digits, printed by
    /// --listen). The challenge is then addressed to that key; without it,
    /// any server offering the echo discovery id is accepted.
    #[arg(long, value_name = "PEER_ID", requires = "connect")]
    pub server_id: Option<PeerId>,
    /// Frames each sending peer sends (at least 1).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: u64,
    /// Blob size in bytes, or `mix`: 94% 100 B-2 KiB, 5% 2-16 KiB, 1% 64 KiB.
    #[arg(long, default_value = "mix")]
    pub blob_size: BlobSize,
    /// Length prefix of the frames with --transport tcp: bijou64, leb128
    /// or u32-be.
    #[arg(long, default_value_t = PrefixKind::Bijou64)]
    pub prefix: PrefixKind,
    /// How messages travel when --connect is a bare HOST:PORT (a URL's
    /// scheme decides otherwise).
    #[arg(long, value_enum, default_value_t = TransportArg::Tcp)]
    pub transport: TransportArg,
    /// Concurrent sending peers against the one echo server (1-10000).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub peers: u32,
    /// Frames each sender keeps in flight (1-4096).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub window: u32,
    /// Write the bytes the first sender put on the wire to FILE (framed
    /// TCP only).
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    /// Seed for blob contents and sizes (random if not given).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Give up after this many seconds (at least 1).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
}

/// `--blob-size`: `mix` or a fixed size.
#[derive(Debug, Clone, Copy)]
pub enum BlobSize {
    Mix,
    Fixed(usize),
}

impl std::str::FromStr for BlobSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "mix" {
            return Ok(Self::Mix);
        }
        s.parse()
            .map(Self::Fixed)
            .map_err(|_| format!("expected `mix` or a size in bytes, got `{s}`"))
    }
}

impl BlobSize {
    /// A blob size: the fixed one, or one drawn from the mix.
    pub(super) fn sample(self, rng: &mut StdRng) -> usize {
        match self {
            Self::Fixed(n) => n,
            Self::Mix => match rng.random_range(0..100u32) {
                0 => 64 * 1024,
                1..=5 => rng.random_range(2049..=16 * 1024),
                _ => rng.random_range(100..=2048),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_flags::check_server_id_flag;
    use rand::SeedableRng;

    #[test]
    fn server_ids_parse_from_hex() {
        let argv = ["echo", "--connect", "127.0.0.1:1"];
        check_server_id_flag::<Args>(&argv, |a| a.server_id);
    }

    #[test]
    fn blob_sizes_follow_the_mix() {
        let mut rng = StdRng::seed_from_u64(1);
        let sizes: Vec<usize> = (0..10_000)
            .map(|_| BlobSize::Mix.sample(&mut rng))
            .collect();
        assert!(sizes.iter().all(|&s| (100..=64 * 1024).contains(&s)));
        let small = sizes.iter().filter(|&&s| s <= 2048).count();
        let huge = sizes.iter().filter(|&&s| s == 64 * 1024).count();
        assert!(small > 9_000, "{small}");
        assert!((50..200).contains(&huge), "{huge}");
        assert!(matches!("1024".parse(), Ok(BlobSize::Fixed(1024))));
        assert!("big".parse::<BlobSize>().is_err());
    }
}
