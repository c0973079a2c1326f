//! `MessageCodec`: typed messages over `FrameCodec`, with every prefix,
//! over real async I/O and byte-by-byte delivery. A bad message in a good
//! frame is an `Err` item and the stream continues; a framing error ends
//! the stream; an unencodable message writes nothing.

use bijou_codec::{Wire, WriteError};
use bijou_framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_framing::{FrameCodec, FrameError};
use bijou_net::{MessageCodec, SendError};
use bijou_proto::message::MessageFrame;
use bijou_proto::message::{
    DataRequestRejected, Message, MessageError, SedimentreeId, SyncMessage,
};
use bijou_test_support::messages::*;
use bijou_test_support::strategy::*;
use bytes::{Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder, Framed};

fn messages() -> impl Strategy<Value = Vec<Message>> {
    proptest::collection::vec(
        prop_oneof![
            3 => sync_message().prop_map(Message::Sync),
            1 => handshake_message().prop_map(Message::Handshake),
        ],
        1..6,
    )
}

fn round_trip_bytewise<P: LengthPrefix + Default>(msgs: &[Message]) {
    let mut codec = MessageCodec::<P>::default();
    let mut wire = BytesMut::new();
    for m in msgs {
        codec.encode(m, &mut wire).unwrap();
    }
    // Deliver one byte at a time.
    let mut rx = MessageCodec::<P>::default();
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for byte in wire.iter() {
        buf.extend_from_slice(&[*byte]);
        while let Some(item) = rx.decode(&mut buf).unwrap() {
            got.push(item);
        }
    }
    assert_eq!(rx.decode_eof(&mut buf).unwrap(), None);
    // Each item is the message, together with its exact frame bytes.
    let expected: Vec<MessageFrame> = msgs
        .iter()
        .map(|m| MessageFrame {
            bytes: m.encode().unwrap(),
            message: Ok(m.clone()),
        })
        .collect();
    assert_eq!(got, expected);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn messages_survive_byte_by_byte_delivery_with_every_prefix(msgs in messages()) {
        round_trip_bytewise::<Bijou64>(&msgs);
        round_trip_bytewise::<Leb128>(&msgs);
        round_trip_bytewise::<U32Be>(&msgs);
    }
}

#[tokio::test]
async fn messages_flow_between_two_peers_and_a_bad_frame_does_not_desync() {
    let (a, b) = tokio::io::duplex(1 << 12);
    let mut tx = Framed::new(a, MessageCodec::new());
    let mut rx = Framed::new(b, MessageCodec::new());
    let big = Message::Sync(fixed_commit_message(2, 2, 20_000));
    let small = Message::Sync(SyncMessage::DataRequestRejected(DataRequestRejected {
        id: SedimentreeId::new([4; 32]),
    }));
    // A well-delimited frame holding a retired tag, sent raw.
    let mut raw = b"SUM\0\0\0\0\x0d\x02abcd".to_vec();
    raw[4..8].copy_from_slice(&13u32.to_be_bytes());
    let raw = Bytes::from(raw);

    let send = async {
        tx.send(&big).await.unwrap();
        let mut frame = BytesMut::new();
        FrameCodec::new().encode(raw.clone(), &mut frame).unwrap();
        tx.get_mut().write_all_buf_compat(&frame).await;
        tx.send(&small).await.unwrap();
        SinkExt::<&Message>::close(&mut tx).await.unwrap();
    };
    let recv = async {
        let mut items = Vec::new();
        while let Some(item) = rx.next().await {
            items.push(item.unwrap());
        }
        items
    };
    let ((), items) = tokio::join!(send, recv);
    assert_eq!(items.len(), 3);
    assert_eq!(items[0].message, Ok(big.clone()));
    assert_eq!(items[0].bytes, big.encode().unwrap());
    assert_eq!(
        items[1].message,
        Err(MessageError::RetiredTag { tag: 2, offset: 8 })
    );
    assert_eq!(items[1].bytes, raw);
    assert_eq!(items[2].message, Ok(small.clone()));
    assert_eq!(items[2].bytes, small.encode().unwrap());
}

/// `write_all` on the raw transport, without the codec (to inject a frame).
trait WriteAllCompat {
    async fn write_all_buf_compat(&mut self, bytes: &[u8]);
}

impl WriteAllCompat for tokio::io::DuplexStream {
    async fn write_all_buf_compat(&mut self, bytes: &[u8]) {
        tokio::io::AsyncWriteExt::write_all(self, bytes)
            .await
            .unwrap();
    }
}

#[test]
fn a_framing_error_is_the_decoders_error() {
    let mut codec = MessageCodec::new();
    let mut buf = BytesMut::from(&[0xFF; 9][..]);
    assert!(matches!(
        codec.decode(&mut buf),
        Err(FrameError::Overflow { .. })
    ));

    let mut small =
        MessageCodec::from_frame_codec(FrameCodec::builder().max_frame_length(64).new_codec());
    let mut wire = BytesMut::new();
    MessageCodec::new()
        .encode(&Message::Sync(fixed_commit_message(0, 0, 100)), &mut wire)
        .unwrap();
    assert!(matches!(
        small.decode(&mut wire),
        Err(FrameError::TooLarge { max: 64, .. })
    ));
}

#[test]
fn a_truncated_stream_is_a_framing_error_at_eof() {
    let mut wire = BytesMut::new();
    let mut codec = MessageCodec::new();
    codec
        .encode(&Message::Sync(fixed_commit_message(0, 0, 10)), &mut wire)
        .unwrap();
    wire.truncate(wire.len() - 1);
    assert_eq!(codec.decode(&mut wire).unwrap(), None);
    assert!(matches!(
        codec.decode_eof(&mut wire),
        Err(FrameError::Truncated { .. })
    ));
}

#[test]
fn an_unencodable_message_writes_nothing() {
    let ids = (0..=u16::MAX as u32).map(|i| {
        let mut id = [0u8; 32];
        id[..4].copy_from_slice(&i.to_be_bytes());
        SedimentreeId::new(id)
    });
    let msg = Message::Sync(SyncMessage::remove_subscriptions(ids));
    let mut wire = BytesMut::from(&b"keep"[..]);
    let err = MessageCodec::new().encode(&msg, &mut wire).unwrap_err();
    assert!(matches!(
        err,
        SendError::Encode(WriteError::CountTooLarge { field: "ids", .. })
    ));
    assert_eq!(&wire[..], b"keep");
}

/// Subduction frames messages on QUIC behind a 4-byte big-endian length:
/// their encoder's bytes, framed that way, decode with `MessageCodec<U32Be>`.
#[test]
fn subduction_quic_framing_interoperates_with_u32_be() {
    use subduction_core::connection::message as theirs;
    let msg = theirs::SyncMessage::DataRequestRejected(theirs::DataRequestRejected {
        id: sedimentree_core::id::SedimentreeId::new([7; 32]),
    });
    let body = msg.encode();
    let mut wire = BytesMut::new();
    wire.extend_from_slice(&(body.len() as u32).to_be_bytes());
    wire.extend_from_slice(&body);
    let mut codec = MessageCodec::from_frame_codec(FrameCodec::with_prefix(U32Be));
    assert_eq!(
        codec.decode(&mut wire).unwrap(),
        Some(MessageFrame {
            bytes: Bytes::from(body),
            message: Ok(Message::Sync(SyncMessage::DataRequestRejected(
                DataRequestRejected {
                    id: SedimentreeId::new([7; 32])
                }
            )))
        })
    );
    assert!(wire.is_empty());
}

/// The one dispatch: a `SUK\0` keyhive message travels through
/// `MessageCodec` like any other message, decodes to `Message::Keyhive`,
/// and is exactly what `SukMessage::from_bytes` reads; a malformed one is
/// an `Err` item with the keyhive error, and the stream goes on.
#[test]
fn keyhive_messages_go_through_the_codec_like_any_other() {
    use bijou_proto::keyhive::{KeyhiveMessage, KeyhivePeer, SignedKeyhive, SukMessage};
    use bijou_signing::Identity;
    let signer = key(1);
    let suk = SukMessage {
        contact_card: None,
        signed: SignedKeyhive::sign(
            &signer,
            KeyhiveMessage::SyncConfirmation {
                sender: KeyhivePeer::new(signer.peer_id()),
                target: KeyhivePeer::new(peer_of(2)),
                confirmer_total: 7,
            },
        )
        .unwrap(),
    };
    let message = Message::from(suk.clone());
    let mut codec = MessageCodec::<Bijou64>::default();
    let mut wire = BytesMut::new();
    codec.encode(&message, &mut wire).unwrap();
    // The same message with its TotalSize off by one, between two good ones.
    let mut bad = suk.to_bytes().unwrap().to_vec();
    bad[7] ^= 1;
    FrameCodec::<Bijou64>::default()
        .encode(Bytes::from(bad), &mut wire)
        .unwrap();
    codec.encode(&message, &mut wire).unwrap();

    let mut got = Vec::new();
    while let Some(frame) = codec.decode(&mut wire).unwrap() {
        got.push(frame);
    }
    assert_eq!(got.len(), 3);
    for good in [&got[0], &got[2]] {
        assert_eq!(good.message.as_ref(), Ok(&message));
        assert_eq!(SukMessage::from_bytes(&good.bytes).as_ref(), Ok(&suk));
    }
    assert!(
        matches!(
            got[1].message,
            Err(MessageError::Keyhive(
                bijou_proto::keyhive::KeyhiveError::TotalSize { .. }
            ))
        ),
        "{:?}",
        got[1].message
    );
}
