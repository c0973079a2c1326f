//! `verify_batch` gives every item exactly what `verify_strict` gives it:
//! forged items are found exactly, good items next to them still verify,
//! and each rejection carries the same typed error. (Crafted signatures
//! whose equation holds while a strictness rule fails are in
//! `signing/tests/signing/crafted.rs`.)

use crate::signing_support::*;
use bijou_codec::Wire;
use bijou_signing::{
    batch::{verify_batch, verify_batch_all_or_none, verify_items, Item},
    ed25519_dalek::{Signature, Signer as _},
    strict, Signed, Verified, VerifyError,
};
use proptest::prelude::*;

/// Asserts the batch agrees with single verification item by item, and
/// returns how many verified.
fn agrees_with_single(items: &[Signed<Commit>]) -> usize {
    let batch = verify_batch(items);
    assert_eq!(batch.len(), items.len());
    for (i, (item, result)) in items.iter().zip(&batch).enumerate() {
        match (result, item.verify_strict()) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.payload(), b.payload(), "item {i}");
                assert_eq!(a.as_bytes(), item.as_bytes(), "item {i}");
                assert_eq!(a.digest(), b.digest(), "item {i}");
            }
            (Err(a), Err(b)) => assert_eq!(a, &b, "item {i}"),
            (a, b) => panic!("item {i}: batch {a:?}, single {b:?}"),
        }
    }
    batch.iter().filter(|r| r.is_ok()).count()
}

fn good_items(n: usize) -> Vec<Signed<Commit>> {
    (0..n)
        .map(|i| {
            let mut c = commit((i % 4) as u8);
            c.tree[0] = i as u8;
            c.tree[1] = (i >> 8) as u8;
            sealed(1 + (i % 3) as u8, &c)
        })
        .collect()
}

/// `item` with the signed tree id changed: a forgery under a real issuer.
fn forge(item: &Signed<Commit>) -> Signed<Commit> {
    let mut wire = item.as_bytes().to_vec();
    wire[37] ^= 0x80;
    Signed::decode(wire.into()).unwrap()
}

#[test]
fn empty_and_single() {
    assert!(verify_batch::<Commit>(&[]).is_empty());
    let one = good_items(1);
    assert_eq!(agrees_with_single(&one), 1);
    assert_eq!(agrees_with_single(&[forge(&one[0])]), 0);
}

#[test]
fn one_forged_item_is_found_at_every_position() {
    let good = good_items(16);
    for position in 0..good.len() {
        let mut items = good.clone();
        items[position] = forge(&items[position]);
        let results = verify_batch(&items);
        for (i, result) in results.iter().enumerate() {
            if i == position {
                assert!(
                    matches!(result, Err(VerifyError::BadSignature { issuer }) if *issuer == items[i].peer_id()),
                    "{result:?}"
                );
            } else {
                let verified: &Verified<Commit> = result.as_ref().unwrap();
                assert_eq!(verified.as_bytes(), good[i].as_bytes());
            }
        }
    }
}

#[test]
fn many_forged_items_and_all_forged() {
    let good = good_items(64);
    for stride in [1, 2, 3, 7, 64] {
        let items: Vec<Signed<Commit>> = good
            .iter()
            .enumerate()
            .map(|(i, s)| if i % stride == 0 { forge(s) } else { s.clone() })
            .collect();
        let expected_good = (0..64).filter(|i| i % stride != 0).count();
        assert_eq!(agrees_with_single(&items), expected_good, "stride {stride}");
    }
}

#[test]
fn large_batches_of_good_items() {
    for n in [2, 3, 64, 256] {
        assert_eq!(agrees_with_single(&good_items(n)), n);
    }
}

#[test]
fn raw_items_match_strict_verify() {
    let key = key(9);
    let vk = key.verifying_key();
    let messages: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; usize::from(i)]).collect();
    let mut signatures: Vec<Signature> = messages.iter().map(|m| key.sign(m)).collect();
    // Break a few in different ways.
    signatures[3] = key.sign(b"something else");
    let s = plus_group_order(signatures[5].s_bytes());
    signatures[5] = Signature::from_components(*signatures[5].r_bytes(), s);
    signatures[8] =
        Signature::from_components(strict::SMALL_ORDER_POINTS[4], *signatures[8].s_bytes());
    let items: Vec<Item<'_>> = messages
        .iter()
        .zip(&signatures)
        .map(|(message, signature)| Item {
            key: &vk,
            message,
            signature,
        })
        .collect();
    let results = verify_items(&items);
    for (item, result) in items.iter().zip(&results) {
        assert_eq!(
            result,
            &strict::verify(item.key, item.message, item.signature)
        );
    }
    assert_eq!(results.iter().filter(|r| r.is_err()).count(), 3);
    assert_eq!(results[5], Err(VerifyError::NonCanonicalS));
    assert_eq!(results[8], Err(VerifyError::SmallOrderR));
}

#[test]
fn raw_items_with_weak_keys() {
    let message = b"weak";
    let signature = key(1).sign(message);
    let keys: Vec<_> = strict::SMALL_ORDER_POINTS
        .iter()
        .map(|a| {
            bijou_signing::PeerId::from_bytes(*a)
                .verifying_key()
                .unwrap()
        })
        .collect();
    let items: Vec<Item<'_>> = keys
        .iter()
        .map(|key| Item {
            key,
            message,
            signature: &signature,
        })
        .collect();
    for (item, result) in items.iter().zip(verify_items(&items)) {
        let expected = Err(VerifyError::WeakIssuer {
            issuer: (*item.key).into(),
        });
        assert_eq!(result, expected);
        assert_eq!(strict::verify(item.key, message, &signature), expected);
    }
}

/// Ways to break an item.
#[derive(Debug, Clone, Copy)]
enum Damage {
    None,
    FlipField,
    FlipSignature,
    MalleateS,
    SmallOrderR(usize),
    WeakIssuer(usize),
    OtherSignature,
}

fn arb_damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        4 => Just(Damage::None),
        1 => Just(Damage::FlipField),
        1 => Just(Damage::FlipSignature),
        1 => Just(Damage::MalleateS),
        1 => (0usize..8).prop_map(Damage::SmallOrderR),
        1 => (0usize..8).prop_map(Damage::WeakIssuer),
        1 => Just(Damage::OtherSignature),
    ]
}

fn damage(item: &Signed<Commit>, how: Damage, salt: usize) -> Signed<Commit> {
    let wire = item.as_bytes();
    let sig = signature_of(item);
    let bytes = match how {
        Damage::None => wire.to_vec(),
        Damage::FlipField => patched(wire, 37 + salt % 64, &[wire[37 + salt % 64] ^ 1]),
        Damage::FlipSignature => {
            let at = wire.len() - 64 + salt % 64;
            patched(wire, at, &[wire[at] ^ 0x10])
        }
        Damage::MalleateS => with_signature(wire, sig.r_bytes(), &plus_group_order(sig.s_bytes())),
        Damage::SmallOrderR(i) => {
            with_signature(wire, &strict::SMALL_ORDER_POINTS[i], sig.s_bytes())
        }
        Damage::WeakIssuer(i) => patched(wire, 5, &strict::SMALL_ORDER_POINTS[i]),
        Damage::OtherSignature => {
            let other = sealed(1, &commit(5));
            with_signature(
                wire,
                other.signature().r_bytes(),
                other.signature().s_bytes(),
            )
        }
    };
    // A flipped signature byte may land on a non-point R etc.; all decode.
    Signed::decode(bytes.into()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn batch_equals_single_on_random_mixes(
        commits in prop::collection::vec((arb_commit(), 1u8..4, arb_damage(), any::<usize>()), 0..20),
    ) {
        let items: Vec<Signed<Commit>> = commits
            .iter()
            .map(|(c, seed, how, salt)| damage(&sealed(*seed, c), *how, *salt))
            .collect();
        agrees_with_single(&items);
        all_or_none_agrees_with_single(&items);
    }
}

/// `verify_batch_all_or_none` passes exactly when every item passes
/// `verify_strict`, and then hands out the same verified items.
fn all_or_none_agrees_with_single(items: &[Signed<Commit>]) {
    let refs: Vec<&Signed<Commit>> = items.iter().collect();
    let single: Vec<_> = items.iter().map(Signed::verify_strict).collect();
    match verify_batch_all_or_none(&refs) {
        Some(verified) => {
            assert_eq!(verified.len(), items.len());
            for (i, (a, b)) in verified.iter().zip(&single).enumerate() {
                let b = b
                    .as_ref()
                    .unwrap_or_else(|e| panic!("item {i} passed a batch, yet {e}"));
                assert_eq!(a.as_bytes(), b.as_bytes(), "item {i}");
                assert_eq!(a.payload(), b.payload(), "item {i}");
            }
        }
        None => assert!(
            single.iter().any(Result::is_err),
            "a batch of good items failed"
        ),
    }
}

#[test]
fn all_or_none_fails_the_whole_batch_for_one_bad_item() {
    assert_eq!(
        verify_batch_all_or_none::<Commit>(&[]).map(|v| v.len()),
        Some(0)
    );
    let good = good_items(33);
    all_or_none_agrees_with_single(&good);
    assert!(verify_batch_all_or_none(&good.iter().collect::<Vec<_>>()).is_some());
    for position in [0, 16, 32] {
        let mut items = good.clone();
        items[position] = forge(&items[position]);
        assert!(verify_batch_all_or_none(&items.iter().collect::<Vec<_>>()).is_none());
        all_or_none_agrees_with_single(&items);
    }
    // One item: the full strict check.
    assert!(verify_batch_all_or_none(&[&good[0]]).is_some());
    assert!(verify_batch_all_or_none(&[&forge(&good[0])]).is_none());
}
