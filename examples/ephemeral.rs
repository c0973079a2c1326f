//! Ephemeral messages between two peers over loopback: one subscribes to a
//! topic, the other publishes to it, and every message arrives verified.
//!
//! ```text
//! cargo run --release --example ephemeral                          # WebSocket, 2,000 x 64 B at 2,000/s
//! cargo run --release --example ephemeral -- --transport tcp --count 10000 --size 4096 --rate 0
//! ```
//!
//! The subscriber accepts the connection (handshake), subscribes to a
//! random topic (`SUE\0` Subscribe), and receives: each message passes the
//! size, age, topic and duplicate checks, then `verify_strict`, before it
//! is delivered. The publisher waits for the Subscribe, then publishes
//! `--count` signed messages of `--size` bytes at `--rate` per second
//! (at least 8 bytes: the first 8 carry the send time, for the latency;
//! from 16, the next 8 the index, for the order). The summary gives the counts,
//! the throughput and the publish-to-delivery latency p50/p99. The exit
//! code is non-zero if any message is lost, altered or rejected.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bijou_frame::net::handshake::{HandshakeConfig, Responder};
use bijou_frame::net::message::{Audience, Topic, Topics};
use bijou_frame::net::prefix::Bijou64;
use bijou_frame::net::transport::{websocket, FramedTransport, Transport};
use bijou_frame::net::{Connection, Delivered};
use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity};
use clap::{Parser, ValueEnum};
use tokio::net::{TcpListener, TcpStream};

/// Publish ephemeral messages to a subscribed peer and time their delivery.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Messages to publish.
    #[arg(long, default_value_t = 2_000)]
    count: u32,
    /// Payload bytes per message (8 to 65,536).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(8..=65_536))]
    size: u32,
    /// Messages per second the publisher sends at (0: as fast as it can,
    /// which measures queueing more than delivery).
    #[arg(long, default_value_t = 2_000)]
    rate: u32,
    /// What carries the messages.
    #[arg(long, value_enum, default_value_t = TransportArg::Ws)]
    transport: TransportArg,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TransportArg {
    /// One WebSocket binary message per message, as Subduction nodes speak.
    Ws,
    /// A TCP stream of bijou64-prefixed frames.
    Tcp,
}

type AnyError = Box<dyn std::error::Error + Send + Sync>;
type Carrier = Box<dyn Transport + Send>;

/// What the subscriber saw.
#[derive(Debug, Default)]
struct Summary {
    published: u32,
    delivered: u32,
    rejected: u32,
    altered: u32,
    /// Publish-to-delivery times, microseconds.
    latencies_us: Vec<u64>,
    elapsed: Duration,
}

impl Summary {
    fn percentile(&self, p: f64) -> f64 {
        let mut sorted = self.latencies_us.clone();
        sorted.sort_unstable();
        let Some(last) = sorted.len().checked_sub(1) else {
            return 0.0;
        };
        let index = ((last as f64) * p).round() as usize;
        sorted.get(index).copied().unwrap_or(0) as f64 / 1000.0
    }

    fn ok(&self) -> bool {
        self.delivered == self.published && self.rejected == 0 && self.altered == 0
    }

    fn print(&self, args: &Args) {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        println!(
            "ephemeral over {}: {} published, {} delivered verified, {} rejected, {} altered",
            match args.transport {
                TransportArg::Ws => "WebSocket",
                TransportArg::Tcp => "TCP (bijou64 frames)",
            },
            self.published,
            self.delivered,
            self.rejected,
            self.altered
        );
        println!(
            "  {:.0} messages/s delivered ({} B payload, sent at {}), publish-to-delivery p50 {:.2} ms, p99 {:.2} ms",
            f64::from(self.delivered) / secs,
            args.size,
            if args.rate == 0 { "full speed".to_owned() } else { format!("{}/s", args.rate) },
            self.percentile(0.50),
            self.percentile(0.99)
        );
        println!("  {}", if self.ok() { "OK" } else { "MISMATCH" });
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&args)) {
        Ok(summary) => {
            summary.print(&args);
            if summary.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn carrier(
    stream: TcpStream,
    transport: TransportArg,
    server: bool,
) -> Result<Carrier, AnyError> {
    stream.set_nodelay(true)?;
    Ok(match (transport, server) {
        (TransportArg::Tcp, _) => Box::new(FramedTransport::new(stream, Bijou64)),
        (TransportArg::Ws, true) => Box::new(websocket::accept(stream).await?),
        (TransportArg::Ws, false) => {
            let addr = stream.peer_addr()?;
            let request = format!("ws://{addr}/");
            Box::new(websocket::client(stream, request.as_str()).await?)
        }
    })
}

async fn run(args: &Args) -> Result<Summary, AnyError> {
    let limit = Duration::from_secs(args.timeout);
    tokio::time::timeout(limit, exchange(args))
        .await
        .map_err(|_| format!("no result within {} s", args.timeout))?
}

async fn exchange(args: &Args) -> Result<Summary, AnyError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let subscriber_key = SigningKey::from_bytes(&rand::random());
    let subscriber_id = subscriber_key.peer_id();
    let topic = Topic::new(rand::random());
    let base = Instant::now();
    let (count, transport, size) = (args.count, args.transport, args.size as usize);

    let subscriber = tokio::spawn(async move {
        let (stream, _) = listener.accept().await?;
        let carrier = carrier(stream, transport, true).await?;
        let responder = Responder::new(HandshakeConfig::default());
        let mut conn = Connection::accept(carrier, &subscriber_key, &responder).await?;
        conn.subscribe(Topics::one(topic)).await?;
        let mut summary = Summary {
            published: count,
            ..Summary::default()
        };
        let mut next_index = 0u32;
        let mut first: Option<Instant> = None;
        while summary.delivered + summary.rejected < count {
            let Some(received) = conn.recv().await? else {
                break;
            };
            let message = match received.result {
                Ok(Delivered::Ephemeral(message)) => message,
                Ok(_) => continue,
                Err(why) => {
                    eprintln!("rejected: {why}");
                    summary.rejected += 1;
                    continue;
                }
            };
            let now = base.elapsed();
            first.get_or_insert_with(Instant::now);
            let payload = message.payload().payload();
            let Some(sent) = read_u64(payload, 0) else {
                summary.altered += 1;
                continue;
            };
            // Payloads of 16 bytes or more carry their index: in order.
            let in_order = read_u64(payload, 8).is_none_or(|i| i == u64::from(next_index));
            if !in_order || payload.len() != size || message.payload().topic() != topic {
                summary.altered += 1;
            }
            next_index += 1;
            summary.delivered += 1;
            let micros = now.as_micros().saturating_sub(u128::from(sent) / 1000);
            summary.latencies_us.push(micros as u64);
        }
        summary.elapsed = first.map_or(Duration::ZERO, |t| t.elapsed());
        Ok::<_, AnyError>(summary)
    });

    let publisher_key = SigningKey::from_bytes(&rand::random());
    let stream = TcpStream::connect(addr).await?;
    let carrier = carrier(stream, transport, false).await?;
    let mut conn = Connection::connect(
        carrier,
        &publisher_key,
        Audience::Known(subscriber_id),
        &HandshakeConfig::default(),
    )
    .await?;
    // Wait for the subscriber's Subscribe.
    loop {
        let Some(received) = conn.recv().await? else {
            return Err("the subscriber closed before subscribing".into());
        };
        if let Ok(Delivered::Subscribed(outcome)) = received.result {
            if outcome.accepted.contains(&topic) {
                break;
            }
        }
    }
    let mut payload = vec![0u8; args.size as usize];
    let period = (args.rate > 0).then(|| Duration::from_secs(1) / args.rate);
    let start = tokio::time::Instant::now();
    for index in 0..u64::from(count) {
        if let Some(period) = period {
            tokio::time::sleep_until(start + period * index as u32).await;
        }
        let sent = base.elapsed().as_nanos() as u64;
        payload[..8].copy_from_slice(&sent.to_be_bytes());
        if let Some(slot) = payload.get_mut(8..16) {
            slot.copy_from_slice(&index.to_be_bytes());
        }
        conn.publish(&publisher_key, topic, payload.clone()).await?;
    }
    let summary = subscriber.await??;
    conn.close().await.ok();
    Ok(summary)
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    bytes
        .get(at..at + 8)
        .and_then(|slice| slice.try_into().ok())
        .map(u64::from_be_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Args {
        let mut argv = vec!["ephemeral"];
        argv.extend_from_slice(extra);
        Args::parse_from(argv)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_message_arrives_verified_over_both_transports() {
        for transport in ["ws", "tcp"] {
            let args = args(&["--count", "200", "--size", "100", "--transport", transport]);
            let summary = run(&args).await.expect("run");
            assert!(summary.ok(), "{transport}: {summary:?}");
            assert_eq!(summary.delivered, 200);
            assert_eq!(summary.latencies_us.len(), 200);
        }
    }

    #[test]
    fn sizes_outside_the_limits_are_refused() {
        assert!(Args::try_parse_from(["ephemeral", "--size", "7"]).is_err());
        assert!(Args::try_parse_from(["ephemeral", "--size", "65537"]).is_err());
        assert!(Args::try_parse_from(["ephemeral", "--size", "65536"]).is_ok());
    }
}
