//! Every message type round-trips, and decoding is injective: for every
//! accepted `b`, `encode(decode(b)) == b`. Signed items and blobs are
//! zero-copy slices of the received frame.

use bijou_codec::Wire;
use bijou_proto::message::{
    Fragment, HandshakeMessage, LooseCommit, Message, RemoteHeads, SyncMessage, SyncResult,
};
use bijou_signing::{Payload, Signed};
use bijou_test_support::messages::*;
use bijou_test_support::strategy::*;
use proptest::prelude::*;

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: n,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(cases(128))]

    #[test]
    fn sync_messages_round_trip(msg in sync_message()) {
        let wire = msg.encode().unwrap();
        prop_assert_eq!(msg.wire_len().unwrap(), wire.len());
        prop_assert_eq!(u32::from_be_bytes(wire[4..8].try_into().unwrap()) as usize, wire.len());
        prop_assert_eq!(wire[8], msg.tag());
        let back = SyncMessage::decode(wire.clone()).unwrap();
        prop_assert_eq!(&back, &msg);
        prop_assert_eq!(back.encode().unwrap(), wire.clone());
        // Through the schema dispatch as well.
        let top = Message::decode(wire.clone()).unwrap();
        prop_assert_eq!(&top, &Message::Sync(msg));
        prop_assert_eq!(top.encode().unwrap(), wire);
    }

    #[test]
    fn handshake_messages_round_trip(msg in handshake_message()) {
        let wire = msg.encode().unwrap();
        let expected_len = match &msg {
            HandshakeMessage::Challenge(_) => 158,
            HandshakeMessage::Response(_) => 141,
            HandshakeMessage::Rejection(_) => 14,
        };
        prop_assert_eq!(wire.len(), expected_len);
        let back = HandshakeMessage::decode(wire.clone()).unwrap();
        prop_assert_eq!(&back, &msg);
        prop_assert_eq!(back.encode().unwrap(), wire.clone());
        prop_assert_eq!(Message::decode(wire).unwrap(), Message::Handshake(msg));
    }

    #[test]
    fn signed_payloads_round_trip_and_verify(
        (commit, _) in tree_id().prop_flat_map(loose_commit),
        (fragment, _) in tree_id().prop_flat_map(fragment),
        k in 0u8..3,
    ) {
        let signed = Signed::seal(&key(k), &commit).unwrap();
        let back = Signed::<LooseCommit>::decode(signed.to_bytes()).unwrap();
        prop_assert_eq!(back.as_bytes(), signed.as_bytes());
        let verified = back.verify_strict().unwrap();
        prop_assert_eq!(verified.payload(), &commit);
        prop_assert_eq!(verified.digest(), commit.digest().unwrap());

        let signed = Signed::seal(&key(k), &fragment).unwrap();
        let back = Signed::<Fragment>::decode(signed.to_bytes()).unwrap();
        let verified = back.verify_strict().unwrap();
        prop_assert_eq!(verified.payload(), &fragment);
    }

    #[test]
    fn remote_heads_round_trip(heads in remote_heads()) {
        let wire = heads.encode().unwrap();
        prop_assert_eq!(wire.len(), 12 + 32 * heads.heads().len());
        prop_assert_eq!(heads.wire_len().unwrap(), wire.len());
        let back = RemoteHeads::decode(wire.clone()).unwrap();
        prop_assert_eq!(&back, &heads);
        prop_assert_eq!(back.encode().unwrap(), wire);
        prop_assert!(heads.heads().windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn verified_sync_items_match_what_was_sealed(msg in sync_message()) {
        let wire = msg.encode().unwrap();
        let decoded = SyncMessage::decode(wire).unwrap();
        let expected = match &decoded {
            SyncMessage::LooseCommit(_) | SyncMessage::Fragment(_) => 1,
            SyncMessage::BatchSyncResponse(r) => match &r.result {
                SyncResult::Ok(d) => d.commits().len() + d.fragments().len(),
                _ => 0,
            },
            _ => 0,
        };
        prop_assert_eq!(decoded.verify().unwrap().len(), expected);
        match decoded {
            SyncMessage::LooseCommit(m) => {
                let (verified, blob) = m.verify().unwrap();
                prop_assert_eq!(verified.payload().sedimentree_id(), m.id);
                prop_assert_eq!(blob.blob(), m.item.blob());
            }
            SyncMessage::Fragment(m) => {
                let (verified, _) = m.verify().unwrap();
                prop_assert_eq!(verified.payload().sedimentree_id(), m.id);
            }
            SyncMessage::BatchSyncResponse(resp) => {
                if let SyncResult::Ok(diff) = &resp.result {
                    for item in diff.commits() {
                        item.verify_in(resp.id).unwrap();
                    }
                    for item in diff.fragments() {
                        item.verify_in(resp.id).unwrap();
                    }
                }
            }
            _ => {}
        }
    }
}

#[test]
fn signed_items_and_blobs_are_zero_copy_slices_of_the_frame() {
    let wire = fixed_commit_message(2, 1, 1024).encode().unwrap();
    let range = wire.as_ptr() as usize..wire.as_ptr() as usize + wire.len();
    let SyncMessage::LooseCommit(m) = SyncMessage::decode(wire.clone()).unwrap() else {
        panic!("tag 00 decodes to LooseCommit");
    };
    let signed = m.item.signed().as_bytes().as_ptr() as usize;
    let blob = m.item.blob().as_bytes().as_ptr() as usize;
    assert!(range.contains(&signed));
    assert!(range.contains(&blob));
    assert_eq!(signed, range.start + signed_item_offset(1));
    assert_eq!(blob + 1024, range.end);
}

#[test]
fn constructors_sort_and_deduplicate_every_array() {
    use bijou_proto::message::{
        CommitId, Fingerprint, RemoveSubscriptions, SedimentreeId, SyncDiff,
    };
    let heads = RemoteHeads::new(
        1,
        [
            CommitId::new([3; 32]),
            CommitId::new([1; 32]),
            CommitId::new([3; 32]),
        ],
    );
    assert_eq!(
        heads.heads(),
        &[CommitId::new([1; 32]), CommitId::new([3; 32])]
    );
    let fps = [5, 1, 5, 3].map(Fingerprint::from_u64);
    let diff = SyncDiff::new(vec![], vec![], fps, fps);
    assert_eq!(
        diff.requested_commits(),
        &[1, 3, 5].map(Fingerprint::from_u64)
    );
    let unsorted = [
        SedimentreeId::new([9; 32]),
        SedimentreeId::new([2; 32]),
        SedimentreeId::new([9; 32]),
    ];
    let SyncMessage::RemoveSubscriptions(remove) = SyncMessage::remove_subscriptions(unsorted)
    else {
        unreachable!()
    };
    assert_eq!(
        remove.ids(),
        [SedimentreeId::new([2; 32]), SedimentreeId::new([9; 32])]
    );
    assert_eq!(RemoveSubscriptions::new(unsorted), remove);
}
