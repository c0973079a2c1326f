//! Keyhive (`SUK\0`) against the oracles, in process: `subduction_keyhive`
//! =0.12.0's protocol over `keyhive_core` =0.7.0 plays the server.
//!
//! - our registration is ingested by their protocol: the document exists
//!   and `Public` (or our key) holds the access asked for;
//! - every SUK message they send in the exchange is decoded by ours and
//!   re-encoded byte for byte; every one we send is decoded by theirs and
//!   re-encoded by theirs byte for byte (contact card JSON included);
//! - every keyhive message kind, built and signed by them, decodes;
//! - our root delegation is their `StaticEvent` byte for byte, with their
//!   hash;
//! - a message signed by another key than the handshake's is refused;
//! - a reordered or non-shortest envelope: theirs accepts, ours refuses.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;

use bijou_proto::keyhive::MIN_EVENT_LEN;
use bijou_proto::keyhive::{
    public_id, Access, DocumentKey, Grantee, KeyhiveError, KeyhiveMessage, KeyhivePeer, Outcome,
    Registration, Step, SukMessage,
};
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::{Identity, PeerId};
use bytes::Bytes;
use futures::executor::block_on;
use keyhive_core::access::Access as TheirAccess;
use keyhive_core::event::static_event::StaticEvent;
use keyhive_core::principal::document::id::DocumentId;
use keyhive_core::principal::group::delegation::StaticDelegation;
use keyhive_core::principal::identifier::Identifier;
use keyhive_core::principal::public::Public;
use keyhive_crypto::digest::Digest;
use keyhive_crypto::signed::Signed;
use sedimentree_core::codec::{decode::Decode, encode::Encode};
use subduction_keyhive::test_utils::{
    create_channel_pair, keyhive_peer_id, make_keyhive, ChannelConnection, SimpleKeyhive,
};

/// The keyhive `subduction_cli` runs (`subduction_keyhive::runtime`'s
/// `LocalRuntimeKeyhive`, spelled out: that module needs tokio): content
/// references are `Vec<u8>`.
type ServerKeyhive = keyhive_core::keyhive::Keyhive<
    future_form::Local,
    keyhive_crypto::signer::memory::MemorySigner,
    Vec<u8>,
    Vec<u8>,
    keyhive_core::store::ciphertext::memory::MemoryCiphertextStore<Vec<u8>, Vec<u8>>,
    keyhive_core::listener::no_listener::NoListener,
    rand08::rngs::OsRng,
>;

/// Their protocol over that keyhive, on in-memory channels.
type ServerProtocol = subduction_keyhive::KeyhiveProtocol<
    keyhive_crypto::signer::memory::MemorySigner,
    Vec<u8>,
    Vec<u8>,
    keyhive_core::store::ciphertext::memory::MemoryCiphertextStore<Vec<u8>, Vec<u8>>,
    keyhive_core::listener::no_listener::NoListener,
    rand08::rngs::OsRng,
    ChannelConnection,
    MemoryKeyhiveStorage,
    future_form::Local,
>;
use subduction_keyhive::{
    KeyhiveMessage as TheirFrame, KeyhivePeerId, MemoryKeyhiveStorage, Message as TheirMessage,
    SignedMessage,
};

fn client_key() -> SigningKey {
    SigningKey::from_bytes(&[0x11; 32])
}

struct Server {
    protocol: ServerProtocol,
    keyhive: Arc<async_lock::Mutex<ServerKeyhive>>,
    id: KeyhivePeerId,
    /// The client's side of the channel: what the server sent.
    to_client: ChannelConnection,
}

async fn their_server(client: &SigningKey) -> Server {
    let signer = keyhive_crypto::signer::memory::MemorySigner::generate(&mut rand08::rngs::OsRng);
    let keyhive: ServerKeyhive = keyhive_core::keyhive::Keyhive::generate(
        signer,
        keyhive_core::store::ciphertext::memory::MemoryCiphertextStore::new(),
        keyhive_core::listener::no_listener::NoListener,
        rand08::rngs::OsRng,
    )
    .await
    .unwrap();
    let id = KeyhivePeerId::from_bytes(Identifier::from(keyhive.id()).to_bytes());
    let card = keyhive.generate_contact_card().await.unwrap();
    let shared = Arc::new(async_lock::Mutex::new(keyhive));
    let protocol = ServerProtocol::new(
        shared.clone(),
        MemoryKeyhiveStorage::new(),
        id.clone(),
        card,
    );
    let client_id = KeyhivePeerId::from_bytes(client.peer_id().into());
    let (server_side, client_side) = create_channel_pair(id.clone(), &client_id);
    protocol.add_peer(client_id, server_side).await;
    Server {
        protocol,
        keyhive: shared,
        id,
        to_client: client_side,
    }
}

fn peer(id: &KeyhivePeerId) -> PeerId {
    PeerId::from_bytes(*id.verifying_key())
}

/// Their frame bytes for a signed message.
fn their_bytes(message: &SignedMessage) -> Bytes {
    Bytes::from(TheirFrame::from_signed(message).unwrap().encode())
}

/// Feeds our message to their server, after checking that they decode it
/// and re-encode it to the same bytes.
async fn deliver_to_server(server: &Server, client: &SigningKey, ours: &SukMessage) {
    let bytes = ours.to_bytes().unwrap();
    let frame = TheirFrame::try_decode(&bytes).expect("their decoder takes our SUK");
    let signed = frame.into_signed().expect("their CBOR takes ours");
    assert_eq!(
        their_bytes(&signed),
        bytes,
        "their re-encoding of our message differs"
    );
    let from = KeyhivePeerId::from_bytes(client.peer_id().into());
    server
        .protocol
        .handle_message(&from, signed, None)
        .await
        .expect("their protocol accepts our message");
}

/// The server's next message, decoded by ours and checked byte for byte.
async fn from_server(server: &Server) -> (SukMessage, Bytes) {
    let signed = server
        .to_client
        .inbound_rx
        .try_recv()
        .expect("the server answered");
    let bytes = their_bytes(&signed);
    let ours = SukMessage::from_bytes(&bytes).expect("our decoder takes their SUK");
    assert_eq!(ours.to_bytes().unwrap(), bytes, "our re-encoding differs");
    (ours, bytes)
}

/// Runs our registration against their server; returns the outcome and
/// the kinds they sent.
async fn register(
    server: &Server,
    client: &SigningKey,
    doc: &DocumentKey,
    to: Grantee,
    access: Access,
) -> (Outcome, Vec<&'static str>) {
    let delegation = doc.root_delegation(to, access).unwrap();
    let (mut registration, first) =
        Registration::start(client, peer(&server.id), delegation).unwrap();
    deliver_to_server(server, client, &first).await;
    let mut kinds = Vec::new();
    loop {
        let (message, _) = from_server(server).await;
        kinds.push(message.signed.message.kind_name());
        let verified = message
            .verify(peer(&server.id))
            .expect("their signature verifies");
        match registration.handle(client, &verified).unwrap() {
            Step::Send(next) => deliver_to_server(server, client, &next).await,
            Step::SendAndDone(last, outcome) => {
                deliver_to_server(server, client, &last).await;
                return (outcome, kinds);
            }
            Step::Done(outcome) => return (outcome, kinds),
        }
    }
}

async fn access_of(server: &Server, doc: &DocumentKey, who: PeerId) -> Option<TheirAccess> {
    let keyhive = server.keyhive.lock().await;
    let id = Identifier(doc.id().verifying_key().unwrap());
    let document = keyhive.get_document(DocumentId::from(id)).await?;
    let members = document.lock().await.transitive_members().await;
    let who = Identifier(who.verifying_key().unwrap());
    members.get(&who).map(|(_, access)| *access)
}

#[test]
fn public_edit_registration_is_ingested_and_every_server_message_decodes_byte_for_byte() {
    block_on(async {
        let client = client_key();
        let server = their_server(&client).await;
        let doc = DocumentKey::from_seed([0x42; 32]);
        assert_eq!(access_of(&server, &doc, public_id()).await, None);

        let (outcome, kinds) =
            register(&server, &client, &doc, Grantee::Public, Access::Edit).await;
        assert_eq!(outcome, Outcome::Registered);
        assert_eq!(
            kinds,
            ["MissingContactCard", "SyncResponse", "SyncConfirmation"]
        );
        assert_eq!(
            access_of(&server, &doc, public_id()).await,
            Some(TheirAccess::Edit)
        );
        // A second registration of the same document (a client reopening
        // it): keyhive 0.12 does not count a public document's root
        // delegation among the events it shares with us, so it asks for it
        // again, ingests it again (a no-op) and confirms.
        let (outcome, kinds) =
            register(&server, &client, &doc, Grantee::Public, Access::Edit).await;
        assert_eq!(outcome, Outcome::Registered);
        assert_eq!(
            kinds,
            ["MissingContactCard", "SyncResponse", "SyncConfirmation"]
        );
        assert_eq!(
            access_of(&server, &doc, public_id()).await,
            Some(TheirAccess::Edit)
        );
    });
}

#[test]
fn key_only_registration_grants_exactly_that_key() {
    block_on(async {
        let client = client_key();
        let server = their_server(&client).await;
        let doc = DocumentKey::from_seed([0x43; 32]);
        let (outcome, _) = register(
            &server,
            &client,
            &doc,
            Grantee::Key(client.peer_id()),
            Access::Edit,
        )
        .await;
        assert_eq!(outcome, Outcome::Registered);
        assert_eq!(
            access_of(&server, &doc, client.peer_id()).await,
            Some(TheirAccess::Edit)
        );
        assert_eq!(access_of(&server, &doc, public_id()).await, None);
    });
}

#[test]
fn our_root_delegation_is_their_static_event_byte_for_byte() {
    let doc = DocumentKey::from_seed([7; 32]);
    for (to, access, theirs) in [
        (Grantee::Public, Access::Edit, TheirAccess::Edit),
        (Grantee::Public, Access::Read, TheirAccess::Read),
        (
            Grantee::Key(client_key().peer_id()),
            Access::Admin,
            TheirAccess::Admin,
        ),
        (
            Grantee::Key(client_key().peer_id()),
            Access::Relay,
            TheirAccess::Relay,
        ),
    ] {
        let ours = doc.root_delegation(to, access).unwrap();
        let vk = doc.id().verifying_key().unwrap();
        let doc_id = DocumentId::from(Identifier(vk));
        let delegation = StaticDelegation::<Vec<u8>> {
            can: theirs,
            proof: None,
            delegate: Identifier(to.key().verifying_key().unwrap()),
            after_revocations: vec![],
            after_content: BTreeMap::from([(doc_id, vec![doc.id().as_bytes().to_vec()])]),
        };
        let signature = bijou_signing::ed25519_dalek::Signature::from_bytes(
            ours.event[ours.event.len() - 64..].try_into().unwrap(),
        );
        let signed = Signed::new(delegation, vk, signature);
        signed
            .try_verify()
            .expect("their verification of our signature");
        let event = StaticEvent::Delegated(signed);
        assert_eq!(&bincode::serialize(&event).unwrap()[..], &ours.event[..]);
        assert_eq!(Digest::hash(&event).raw.as_bytes(), &ours.hash);
        assert_eq!(
            bijou_proto::keyhive::RootDelegation::decode(ours.event.clone()).unwrap(),
            ours
        );
    }
    assert_eq!(public_id().as_bytes(), &Public.id().to_bytes());
}

/// Their signed message around `message`, signed by their keyhive.
async fn their_signed(keyhive: &SimpleKeyhive, message: &TheirMessage, card: bool) -> Bytes {
    let mut cbor = Vec::new();
    ciborium::into_writer(message, &mut cbor).unwrap();
    let signed = keyhive.try_sign(cbor).await.unwrap();
    let signed = bincode::serialize(&signed).unwrap();
    let message = if card {
        SignedMessage::with_contact_card(signed, keyhive.get_existing_contact_card().await)
    } else {
        SignedMessage::new(signed)
    };
    their_bytes(&message)
}

#[test]
fn every_keyhive_message_kind_they_sign_decodes_byte_for_byte() {
    block_on(async {
        let keyhive = make_keyhive().await;
        let me = keyhive_peer_id(&keyhive);
        let other = KeyhivePeerId::from_bytes_with_suffix([9; 32], "conn-7".into());
        let messages = [
            TheirMessage::SyncRequest {
                sender_id: me.clone(),
                target_id: other.clone(),
                found: vec![[1; 32], [2; 32]],
                pending: vec![[3; 32]],
            },
            TheirMessage::SyncResponse {
                sender_id: me.clone(),
                target_id: other.clone(),
                requested: vec![[4; 32]],
                found: vec![vec![1; MIN_EVENT_LEN].into(), vec![0xAB; 300].into()],
                sync_responder_total: 70_000,
                sync_requester_total: u64::MAX,
            },
            TheirMessage::SyncOps {
                sender_id: me.clone(),
                target_id: other.clone(),
                ops: vec![vec![9; 140].into()],
                sync_responder_total: 23,
                sync_requester_total: 24,
            },
            TheirMessage::RequestContactCard {
                sender_id: me.clone(),
                target_id: other.clone(),
            },
            TheirMessage::MissingContactCard {
                sender_id: me.clone(),
                target_id: other.clone(),
            },
            TheirMessage::SyncCheck {
                sender_id: me.clone(),
                target_id: other.clone(),
                sender_total: 256,
                sender_syncpoint: 65_536,
                sender_digest: [0xDD; 32],
            },
            TheirMessage::SyncConfirmation {
                sender_id: me.clone(),
                target_id: other.clone(),
                confirmer_total: 0,
            },
        ];
        for (i, message) in messages.iter().enumerate() {
            let bytes = their_signed(&keyhive, message, i % 2 == 0).await;
            let ours = SukMessage::from_bytes(&bytes)
                .unwrap_or_else(|e| panic!("{}: {e}", message.variant_name()));
            assert_eq!(ours.signed.message.kind_name(), message.variant_name());
            assert_eq!(
                ours.to_bytes().unwrap(),
                bytes,
                "{}",
                message.variant_name()
            );
            assert_eq!(
                ours.signed.message.target(),
                &KeyhivePeer {
                    key: PeerId::from_bytes([9; 32]),
                    suffix: Some("conn-7".into())
                }
            );
            let verified = ours.clone().verify(peer(&me)).unwrap();
            assert_eq!(verified.keyhive(), &ours.signed.message);
            // By any other key than the handshake's: refused.
            let err = ours.verify(PeerId::from_bytes([5; 32])).unwrap_err();
            assert!(matches!(err, KeyhiveError::WrongSigner { .. }), "{err}");
        }
    });
}

#[test]
fn their_tampered_signature_and_forged_sender_are_refused() {
    block_on(async {
        let keyhive = make_keyhive().await;
        let me = keyhive_peer_id(&keyhive);
        let message = TheirMessage::RequestContactCard {
            sender_id: me.clone(),
            target_id: me.clone(),
        };
        let bytes = their_signed(&keyhive, &message, false).await;
        // The signature's last byte.
        let mut tampered = bytes.to_vec();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        let err = SukMessage::from_bytes(&Bytes::from(tampered))
            .unwrap()
            .verify(peer(&me))
            .unwrap_err();
        assert!(matches!(err, KeyhiveError::Signature { .. }), "{err}");
        // A sender_id that is not the signer.
        let forged = TheirMessage::RequestContactCard {
            sender_id: KeyhivePeerId::from_bytes(client_key().peer_id().into()),
            target_id: me.clone(),
        };
        let bytes = their_signed(&keyhive, &forged, false).await;
        let err = SukMessage::from_bytes(&bytes)
            .unwrap()
            .verify(peer(&me))
            .unwrap_err();
        assert!(matches!(err, KeyhiveError::SenderMismatch { .. }), "{err}");
        // Our own messages, signed by us, verify under our key only.
        let ours = SukMessage {
            contact_card: None,
            signed: bijou_proto::keyhive::SignedKeyhive::sign(
                &client_key(),
                KeyhiveMessage::RequestContactCard {
                    sender: KeyhivePeer::new(client_key().peer_id()),
                    target: KeyhivePeer::new(peer(&me)),
                },
            )
            .unwrap(),
        };
        assert!(ours.clone().verify(client_key().peer_id()).is_ok());
        assert!(ours.verify(peer(&me)).is_err());
    });
}

/// Where ours is stricter than theirs, side by side: their decoder takes
/// a reordered envelope and a non-shortest map head; ours refuses both.
#[test]
fn a_reordered_or_non_shortest_envelope_is_accepted_by_theirs_and_refused_by_ours() {
    let client = client_key();
    let ours = SukMessage {
        contact_card: None,
        signed: bijou_proto::keyhive::SignedKeyhive::sign(
            &client,
            KeyhiveMessage::RequestContactCard {
                sender: KeyhivePeer::new(client.peer_id()),
                target: KeyhivePeer::new(client.peer_id()),
            },
        )
        .unwrap(),
    };
    let bytes = ours.to_bytes().unwrap();
    // CBOR after the 8-byte header: A2 6B "contactCard" 60 66 "signed" <bytes>.
    let cbor = &bytes[8..];
    let card = &cbor[1..14]; // key and empty text
    let signed = &cbor[14..];
    let frame = |cbor: Vec<u8>| {
        let mut out = b"SUK\0".to_vec();
        out.extend_from_slice(&((8 + cbor.len()) as u32).to_be_bytes());
        out.extend_from_slice(&cbor);
        Bytes::from(out)
    };
    let reordered = frame([&[0xA2][..], signed, card].concat());
    let long_head = frame([&[0xB8, 0x02][..], card, signed].concat());
    for (bytes, name) in [(reordered, "reordered"), (long_head, "non-shortest")] {
        let theirs = TheirFrame::try_decode(&bytes)
            .unwrap()
            .into_signed()
            .unwrap_or_else(|e| panic!("{name}: theirs refused: {e}"));
        let _ = theirs;
        let err = SukMessage::from_bytes(&bytes).unwrap_err();
        assert!(
            matches!(
                err,
                KeyhiveError::CborKey { .. } | KeyhiveError::NonCanonical { .. }
            ),
            "{name}: {err}"
        );
    }
}

/// Keyhive's own parser (`bincode::deserialize` of a `StaticEvent`, as
/// `subduction_keyhive` ingests `found` and `ops`) refuses every event
/// shorter than `MIN_EVENT_LEN`, which our decoder refuses outright: the
/// smallest real event (a contact card's `PrekeysExpanded`, 140 bytes) and
/// a root delegation, cut at every length below it, and every variant tag
/// followed by every length of filler below it.
#[test]
fn keyhive_parses_no_event_shorter_than_min_event_len() {
    type Event = StaticEvent<Vec<u8>>;
    let parses = |bytes: &[u8]| bincode::deserialize::<Event>(bytes).is_ok();
    let smallest = block_on(async {
        let keyhive = make_keyhive().await;
        let card = keyhive.get_existing_contact_card().await;
        let event: StaticEvent<[u8; 32]> = match card.op() {
            keyhive_core::principal::individual::op::KeyOp::Add(add) => {
                StaticEvent::PrekeysExpanded(Box::new(add.as_ref().clone()))
            }
            keyhive_core::principal::individual::op::KeyOp::Rotate(rot) => {
                StaticEvent::PrekeyRotated(Box::new(rot.as_ref().clone()))
            }
        };
        bincode::serialize(&event).unwrap()
    });
    assert_eq!(smallest.len(), 140, "a PrekeysExpanded event");
    let delegation = DocumentKey::from_seed([7; 32])
        .root_delegation(Grantee::Public, Access::Edit)
        .unwrap()
        .event;
    for real in [&smallest[..], &delegation[..]] {
        assert!(parses(real), "the uncut event parses");
        assert!(real.len() >= MIN_EVENT_LEN);
        for cut in 0..MIN_EVENT_LEN {
            assert!(
                !parses(&real[..cut]),
                "{cut} bytes of a {}-byte event",
                real.len()
            );
        }
    }
    for tag in 0u32..=5 {
        for filler in [0x00, 0x01, 0x20, 0xFF] {
            for len in 4..MIN_EVENT_LEN {
                let mut bytes = vec![filler; len];
                bytes[..4].copy_from_slice(&tag.to_le_bytes());
                assert!(!parses(&bytes), "tag {tag}, {len} bytes of {filler:#04x}");
            }
        }
    }
}

/// Their SyncOps and SyncResponse with events shorter than any keyhive
/// event (which their decoder accepts and their ingest then drops) are
/// refused by ours, naming the event.
#[test]
fn their_events_shorter_than_any_keyhive_event_are_refused() {
    block_on(async {
        let keyhive = make_keyhive().await;
        let me = keyhive_peer_id(&keyhive);
        let other = KeyhivePeerId::from_bytes([9; 32]);
        for (events, index, len) in [
            (vec![vec![1; 300], Vec::new()], 1, 0),
            (
                vec![vec![1; 200], vec![2; MIN_EVENT_LEN - 1]],
                1,
                MIN_EVENT_LEN - 1,
            ),
        ] {
            let events: Vec<Arc<[u8]>> = events.into_iter().map(Into::into).collect();
            for message in [
                TheirMessage::SyncOps {
                    sender_id: me.clone(),
                    target_id: other.clone(),
                    ops: events.clone(),
                    sync_responder_total: 1,
                    sync_requester_total: 2,
                },
                TheirMessage::SyncResponse {
                    sender_id: me.clone(),
                    target_id: other.clone(),
                    requested: vec![],
                    found: events.clone(),
                    sync_responder_total: 1,
                    sync_requester_total: 2,
                },
            ] {
                let bytes = their_signed(&keyhive, &message, false).await;
                let err = SukMessage::from_bytes(&bytes).unwrap_err();
                let KeyhiveError::EventTooShort {
                    index: at,
                    len: got,
                    min,
                    ..
                } = err
                else {
                    panic!("{}: {err}", message.variant_name());
                };
                assert_eq!((at, got, min), (index, len, MIN_EVENT_LEN), "{err}");
            }
        }
    });
}
