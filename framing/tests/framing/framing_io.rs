//! `FrameCodec` over real async I/O: `tokio::io::duplex` pipes and a TCP
//! loopback connection (127.0.0.1 only), each bounded by a timeout.

use std::time::Duration;

use bijou_framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_framing::{FrameCodec, FrameError};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio::io::AsyncWriteExt;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(20);

/// A deterministic mix: empty, tiny, tier boundaries, and one 1 MiB frame
/// that has to stream through a small pipe in many pieces.
fn frames() -> Vec<Bytes> {
    let mut lens = vec![0usize, 1, 247, 248, 503, 504, 5_000, 66_040, 1 << 20];
    lens.extend((0..200).map(|i| (i * 37) % 2_000));
    lens.iter()
        .enumerate()
        .map(|(i, &len)| Bytes::from((0..len).map(|j| (i + j) as u8).collect::<Vec<_>>()))
        .collect()
}

type Pipe<P> = tokio_util::codec::Framed<tokio::io::DuplexStream, FrameCodec<P>>;

async fn send_all<P: LengthPrefix>(
    mut tx: futures::stream::SplitSink<Pipe<P>, Bytes>,
    frames: Vec<Bytes>,
) -> Result<(), FrameError> {
    for frame in frames {
        tx.send(frame).await?;
    }
    tx.close().await
}

async fn recv_all<P: LengthPrefix>(
    mut rx: futures::stream::SplitStream<Pipe<P>>,
) -> Result<Vec<Bytes>, FrameError> {
    let mut got = Vec::new();
    while let Some(frame) = rx.next().await {
        got.push(frame?);
    }
    Ok(got)
}

/// Sends `frames` both ways at once over a duplex pipe with a small buffer.
async fn duplex_round_trip<P: LengthPrefix>() {
    let (a, b) = tokio::io::duplex(4096);
    let builder = FrameCodec::builder().prefix(P::default());
    let (left_tx, left_rx) = builder.new_framed(a).split();
    let (right_tx, right_rx) = builder.new_framed(b).split();
    let sent = frames();
    let reversed: Vec<Bytes> = sent.iter().rev().cloned().collect();
    let (s1, s2, r1, r2) = timeout(LIMIT, async {
        tokio::join!(
            send_all::<P>(left_tx, sent.clone()),
            send_all::<P>(right_tx, reversed.clone()),
            recv_all::<P>(right_rx),
            recv_all::<P>(left_rx),
        )
    })
    .await
    .expect("duplex round trip timed out");
    s1.unwrap();
    s2.unwrap();
    assert_eq!(r1.unwrap(), sent, "{} left -> right", P::NAME);
    assert_eq!(r2.unwrap(), reversed, "{} right -> left", P::NAME);
}

#[tokio::test]
async fn duplex_framed_round_trip_for_every_prefix() {
    duplex_round_trip::<Bijou64>().await;
    duplex_round_trip::<Leb128>().await;
    duplex_round_trip::<U32Be>().await;
}

#[tokio::test]
async fn tcp_loopback_framed_round_trip() {
    let run = async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            // Echo every frame back, then close.
            let (socket, _) = listener.accept().await?;
            let mut framed = FrameCodec::builder().new_framed(socket);
            while let Some(frame) = framed.next().await {
                framed.send(frame?).await?;
            }
            Ok::<_, FrameError>(())
        });
        let socket = tokio::net::TcpStream::connect(addr).await?;
        let mut client = FrameCodec::builder().new_framed(socket);
        let sent = frames();
        let mut echoed = Vec::new();
        for frame in &sent {
            client.send(frame.clone()).await?;
            echoed.push(client.next().await.transpose()?.expect("echo"));
        }
        SinkExt::<Bytes>::close(&mut client).await?;
        server.await.expect("server task")?;
        assert_eq!(echoed, sent);
        Ok::<_, FrameError>(())
    };
    timeout(LIMIT, run)
        .await
        .expect("TCP round trip timed out")
        .unwrap();
}

#[tokio::test]
async fn eof_mid_payload_surfaces_truncated_then_ends() {
    let (mut writer, reader) = tokio::io::duplex(64);
    let mut frames = FrameCodec::builder().new_read(reader);
    let run = async {
        writer.write_all(b"\x03abc\x0Apartial").await?;
        drop(writer);
        let first = frames.next().await.transpose()?;
        assert_eq!(first.as_deref(), Some(&b"abc"[..]));
        let err = frames.next().await.expect("an error").unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::Truncated {
                    needed: 11,
                    have: 8
                }
            ),
            "{err:?}"
        );
        assert!(frames.next().await.is_none(), "errors are terminal");
        Ok::<_, FrameError>(())
    };
    timeout(LIMIT, run).await.expect("timed out").unwrap();
}

#[tokio::test]
async fn over_max_prefix_fails_while_the_peer_stalls() {
    let (mut writer, reader) = tokio::io::duplex(64);
    let mut frames = FrameCodec::builder()
        .max_frame_length(1024)
        .new_read(reader);
    let run = async {
        // Announce 1 MiB and send nothing more; keep the pipe open.
        let (prefix, n) = Bijou64::encode(1 << 20).unwrap();
        writer.write_all(&prefix[..n]).await?;
        let err = frames.next().await.expect("an error").unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::TooLarge {
                    len: 1_048_576,
                    max: 1024
                }
            ),
            "{err:?}"
        );
        Ok::<_, FrameError>(())
    };
    timeout(Duration::from_secs(5), run)
        .await
        .expect("waited for the payload")
        .unwrap();
    drop(writer);
}

#[tokio::test]
async fn framed_write_sends_exactly_the_encoded_bytes() {
    let mut sink = FrameCodec::builder().prefix(U32Be).new_write(Vec::new());
    sink.send(&b"hi"[..]).await.unwrap();
    sink.send(Bytes::from_static(b"")).await.unwrap();
    assert_eq!(sink.get_ref().as_slice(), b"\0\0\0\x02hi\0\0\0\0");
    let err = FrameCodec::builder()
        .max_frame_length(1)
        .new_write(Vec::new())
        .send(&b"no"[..])
        .await
        .unwrap_err();
    assert!(matches!(err, FrameError::TooLarge { len: 2, max: 1 }));
}
