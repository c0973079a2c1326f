//! Ephemeral messages between two peers over loopback: one subscribes to a
//! topic, the other publishes to it, and every message arrives verified.
//!
//! ```text
//! cargo run --release --example ephemeral                          # WebSocket, 2,000 x 64 B at 2,000/s
//! cargo run --release --example ephemeral -- --transport tcp --count 10000 --size 4096 --rate 0
//! ```
//!
//! The subscriber subscribes to a random topic; each message passes the
//! size, age, topic and duplicate checks and `verify_strict` before it is
//! delivered. The publisher publishes `--count` signed messages (send time
//! and index first) at `--rate` per second. Exit code 1 if any message is
//! lost, altered or rejected.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bijou_frame::framing::prefix::Bijou64;
use bijou_frame::net::handshake::ConnectConfig;
use bijou_frame::net::transport::{websocket, FramedTransport, Transport};
use bijou_frame::net::Connection;
use bijou_frame::proto::handshake::{HandshakeConfig, Responder};
use bijou_frame::proto::message::{Audience, Topic, Topics};
use bijou_frame::proto::session::Delivered;
use bijou_frame::signing::{key_file, Identity};
use clap::{Parser, ValueEnum};
use tokio::net::{TcpListener, TcpStream};

/// Publish ephemeral messages to a subscribed peer and time their delivery.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Messages to publish (at least 1).
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u32).range(1..))]
    count: u32,
    /// Payload bytes per message (8 to 65,536).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(8..=65_536))]
    size: u32,
    /// Messages per second to publish (0: as fast as possible).
    #[arg(long, default_value_t = 2_000)]
    rate: u32,
    /// What carries the messages.
    #[arg(long, value_enum, default_value_t = TransportArg::WebSocket)]
    transport: TransportArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TransportArg {
    /// One WebSocket binary message per message, as Subduction speaks.
    #[value(name = "ws")]
    WebSocket,
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
    latencies_us: Vec<u64>,
    elapsed: Duration,
}

impl Summary {
    fn percentile(&self, p: f64) -> f64 {
        let mut sorted = self.latencies_us.clone();
        sorted.sort_unstable();
        let at = (sorted.len().saturating_sub(1) as f64 * p).round() as usize;
        sorted.get(at).map_or(0.0, |&us| us as f64 / 1000.0)
    }

    fn ok(&self) -> bool {
        self.delivered == self.published && self.rejected == 0 && self.altered == 0
    }

    fn print(&self, args: &Args) {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let rate = match args.rate {
            0 => "full speed".to_owned(),
            r => format!("{r}/s"),
        };
        println!(
            "ephemeral over {:?}: {} published, {} delivered verified, {} rejected, {} altered",
            args.transport, self.published, self.delivered, self.rejected, self.altered
        );
        println!(
            "  {:.0} messages/s delivered ({} B payload, sent at {rate}), publish-to-delivery p50 {:.2} ms, p99 {:.2} ms",
            f64::from(self.delivered) / secs,
            args.size,
            self.percentile(0.50),
            self.percentile(0.99)
        );
        println!("  {}", if self.ok() { "OK" } else { "MISMATCH" });
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(summary) => {
            summary.print(&args);
            ExitCode::from(u8::from(!summary.ok()))
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
        (TransportArg::WebSocket, true) => Box::new(websocket::accept(stream).await?),
        (TransportArg::WebSocket, false) => {
            let url = format!("ws://{}/", stream.peer_addr()?);
            Box::new(websocket::client(stream, url.as_str()).await?)
        }
    })
}

async fn run(args: &Args) -> Result<Summary, AnyError> {
    let bound = tokio::time::timeout(Duration::from_secs(60), exchange(args));
    bound.await.map_err(|_| "no result within 60 s")?
}

async fn exchange(args: &Args) -> Result<Summary, AnyError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (subscriber_key, publisher_key) = (key_file::generate()?, key_file::generate()?);
    let subscriber_id = subscriber_key.peer_id();
    let topic = Topic::new(rand::random());
    let base = Instant::now();
    let (count, transport, size) = (args.count, args.transport, args.size as usize);

    let subscriber = tokio::spawn(async move {
        let carrier = carrier(listener.accept().await?.0, transport, true).await?;
        let responder = Responder::new(HandshakeConfig::default());
        let mut conn = Connection::accept(
            carrier,
            &subscriber_key,
            &responder,
            &ConnectConfig::default(),
        )
        .await?;
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
            summary.delivered += 1;
            let payload = message.payload().payload();
            let Some(sent) = read_u64(payload, 0) else {
                summary.altered += 1;
                continue;
            };
            let in_order = read_u64(payload, 8).is_none_or(|i| i == u64::from(next_index));
            if !in_order || payload.len() != size || message.payload().topic() != topic {
                summary.altered += 1;
            }
            next_index += 1;
            let micros = now.as_micros().saturating_sub(u128::from(sent) / 1000);
            summary.latencies_us.push(micros as u64);
        }
        summary.elapsed = first.map_or(Duration::ZERO, |t| t.elapsed());
        Ok::<_, AnyError>(summary)
    });

    let carrier = carrier(TcpStream::connect(addr).await?, transport, false).await?;
    let mut conn = Connection::connect(
        carrier,
        &publisher_key,
        Audience::Known(subscriber_id),
        &ConnectConfig::default(),
    )
    .await?;
    // Wait for the subscriber's Subscribe.
    loop {
        match conn.recv().await?.map(|received| received.result) {
            Some(Ok(Delivered::Subscribed(o))) if o.accepted.contains(&topic) => break,
            Some(_) => {}
            None => return Err("the subscriber closed before subscribing".into()),
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
    let slice = bytes.get(at..at + 8)?;
    slice.try_into().ok().map(u64::from_be_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Args {
        Args::parse_from(std::iter::once(&"ephemeral").chain(extra))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_message_arrives_verified_over_both_transports() {
        let help = <Args as clap::CommandFactory>::command()
            .render_help()
            .to_string();
        assert!(help.starts_with("Publish ephemeral messages"), "{help}");
        for transport in ["ws", "tcp"] {
            let args = args(&["--count", "200", "--size", "100", "--transport", transport]);
            let summary = run(&args).await.expect("run");
            assert!(summary.ok(), "{transport}: {summary:?}");
            assert_eq!((summary.delivered, summary.latencies_us.len()), (200, 200));
        }
    }
}
