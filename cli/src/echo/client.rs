//! A sending peer (A): connects, sends its commits, `--window` in flight,
//! and has the [checker](super::check) read the echoes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bijou_frame::codec::Wire;
use bijou_frame::framing::prefix::LengthPrefix;
use bijou_frame::net::handshake::{ConnectConfig, ConnectError};
use bijou_frame::net::transport::{websocket, FramedTransport, Transport};
use bijou_frame::net::Connection;
use bijou_frame::proto::message::{
    Audience, BlobMessage, Message, RemoteHeads, SedimentreeId, SyncMessage,
};
use bijou_frame::signing::{ed25519_dalek::SigningKey, Identity};
use bytes::Bytes;
use indicatif::ProgressBar;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::{mpsc, Semaphore};

use super::args::BlobSize;
use super::check::check_echoes;
use super::outcome::Outcome;
use super::tee::Tee;
use crate::chain::CommitChain;
use crate::exit::Failure;
use crate::keygen::new_key;
use crate::target::{Target, CONNECT_TIMEOUT};
use crate::AnyError;

/// What one sender is to do.
pub(super) struct ClientJob {
    pub(super) target: Target,
    pub(super) audience: Audience,
    pub(super) count: u64,
    pub(super) blob_size: BlobSize,
    pub(super) window: u32,
    pub(super) seed: u64,
    /// Whether to keep a copy of the bytes it sends.
    pub(super) capture: bool,
    pub(super) bar: ProgressBar,
}

/// Connects (a key of its own, the handshake), sends the job's frames and
/// checks their echoes.
pub(super) async fn client<P: LengthPrefix>(job: ClientJob) -> Result<Outcome, Failure> {
    let key = new_key()?;
    let t0 = Instant::now();
    let addressed = match job.audience {
        Audience::Known(id) => format!("the server key {id}"),
        Audience::Discover(_) => "the echo discovery id".to_owned(),
    };
    let refused = |e: ConnectError| {
        job.target.refused(
            &e,
            &addressed,
            "give the server's peer id with --server-id (`bijou echo --listen` prints it)",
        )
    };
    if let Target::Iroh(_) | Target::LongPoll(_) = &job.target {
        let carrier = job.target.carrier().await?;
        let conn = Connection::connect(carrier, &key, job.audience, &ConnectConfig::default())
            .await
            .map_err(refused)?;
        let handshake = t0.elapsed();
        return session(job, key, conn, handshake, None)
            .await
            .map_err(Failure::network);
    }
    let stream = job.target.tcp().await?;
    let captured = Arc::new(Mutex::new(Vec::new()));
    let io = Tee {
        inner: stream,
        copy: job.capture.then(|| Arc::clone(&captured)),
    };
    let config = ConnectConfig::default();
    let capture = job.capture.then_some(captured);
    match &job.target {
        // Iroh and long-poll returned above.
        Target::Tcp { .. } | Target::Iroh(_) | Target::LongPoll(_) => {
            let framed = FramedTransport::new(io, P::default());
            let conn = Connection::connect(framed, &key, job.audience, &config)
                .await
                .map_err(refused)?;
            session(job, key, conn, t0.elapsed(), capture)
                .await
                .map_err(Failure::network)
        }
        Target::Ws(url) => {
            let ws = tokio::time::timeout(CONNECT_TIMEOUT, websocket::client(io, url.as_str()))
                .await
                .map_err(|_| Failure::network(format!("WebSocket upgrade at {url} timed out")))?
                .map_err(|e| Failure::network(format!("cannot open {url}: {e}")))?;
            let conn = Connection::connect(ws, &key, job.audience, &config)
                .await
                .map_err(refused)?;
            session(job, key, conn, t0.elapsed(), capture)
                .await
                .map_err(Failure::network)
        }
    }
}

/// Sends the job's commits on an established connection and checks the
/// echoes.
async fn session<T: Transport + Send + 'static>(
    job: ClientJob,
    key: SigningKey,
    conn: Connection<T>,
    handshake: Duration,
    captured: Option<Arc<Mutex<Vec<u8>>>>,
) -> Result<Outcome, AnyError> {
    let remote = conn.remote_peer();
    let (mut tx, rx) = conn.split();

    let window = Arc::new(Semaphore::new(job.window as usize));
    let (in_flight, pending) = mpsc::unbounded_channel::<(Bytes, Instant)>();
    let checker = tokio::spawn(check_echoes(
        rx,
        pending,
        Arc::clone(&window),
        job.count,
        job.bar.clone(),
    ));

    let mut frames = Frames::new(job.seed, job.blob_size);
    let mut sent = 0u64;
    for _ in 0..job.count {
        let frame = frames.next_frame(&key)?;
        let permit = window.acquire().await?;
        permit.forget(); // given back by the checker when the echo arrives
        if in_flight.send((frame.clone(), Instant::now())).is_err() {
            break; // the checker stopped: it reports why
        }
        tx.send_bytes(frame).await?;
        sent += 1;
    }
    drop(in_flight);
    let mut outcome = checker.await??;
    tx.close().await?;
    outcome.local = Some(key.peer_id());
    outcome.remote = Some(remote);
    outcome.handshake = handshake;
    outcome.planned = job.count;
    outcome.sent = sent;
    outcome.lost = sent.saturating_sub(outcome.echoed + outcome.altered + outcome.reordered);
    if let Some(captured) = captured {
        outcome.capture = Some(
            captured
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        );
    }
    Ok(outcome)
}

/// The frames one sender sends: LooseCommit messages of a chain in a tree
/// of its own, encoded, every size and byte from its seed.
struct Frames {
    rng: StdRng,
    tree: SedimentreeId,
    chain: CommitChain,
    blob_size: BlobSize,
}

impl Frames {
    fn new(seed: u64, blob_size: BlobSize) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let tree = SedimentreeId::new(rng.random());
        Self {
            rng,
            tree,
            chain: CommitChain::new(tree),
            blob_size,
        }
    }

    /// The next frame, signed by `key`.
    fn next_frame(&mut self, key: &SigningKey) -> Result<Bytes, AnyError> {
        let size = self.blob_size.sample(&mut self.rng);
        let (head, item) = self.chain.next_commit(&mut self.rng, key, size)?;
        let msg = Message::Sync(SyncMessage::LooseCommit(BlobMessage {
            id: self.tree,
            sender_heads: RemoteHeads::new(0, [head]),
            item,
        }));
        Ok(msg.encode()?)
    }
}
