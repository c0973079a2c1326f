//! Batch verification with the strict accept set.
//!
//! ```text
//!   items ──► precheck each (strict checks 1-4, bytes only) ──► rejected: typed error
//!                 │ passed
//!                 ▼
//!   ed25519_dalek::verify_batch(passed) ──ok──► all accepted
//!                 │ failed
//!                 ▼
//!   split in halves, batch each half again ... down to single items,
//!   which get the full strict check (and its precise error)
//! ```
//!
//! Plain batch verification (one random linear combination of the
//! verification equations) accepts signatures that
//! [`verify_strict`](crate::Signed::verify_strict) rejects: small-order
//! keys, small-order or non-canonically encoded `R`. Those are exactly the
//! [`strict`] prechecks, so they run first; what remains
//! for the batch is the equation itself.
//!
//! A failed batch says only that *some* item is bad. The halves are
//! batched again until every bad item is isolated; a half whose sibling
//! passed is known to fail and is split without batching it, so one forged
//! item among `n` costs about `2n` batched items in all and never makes a
//! good item fail. Halving many bad items would cost `O(n log n)`, so the
//! batches share a budget of `3n` batched items; past it, the remaining
//! items are verified one by one. A batch full of forgeries therefore
//! costs at most about `3n` batched items plus `n` single verifications.
//!
//! # The one difference left: points with a small-order component
//!
//! A key or `R` can be a prime-order point *plus* a small-order point (a
//! "mixed-order" point; not of small order itself, so no blocklist or
//! cheap test catches it). For those, the cofactorless single equation and
//! a random linear combination of equations can disagree: the torsion
//! parts cancel or not depending on the weights, modulo 8. Such inputs
//! cannot come from an honest Ed25519 signer (its key and every `R` are
//! multiples of the base point); only the holder of a deliberately
//! malformed key, signing its own messages, can produce them. Then:
//!
//! - an item that `verify_strict` accepts but the batch equation rejects is
//!   isolated by the halving and accepted by the final single check, so
//!   the batch never loses a strictly valid item;
//! - an item that `verify_strict` rejects can pass a batch of two or more,
//!   with probability between 1/8 and 1/2 per batch. The weights are
//!   ed25519-dalek's, derived from the whole batch, so whoever chooses all
//!   of a batch's contents (a peer sending a batch of its own items) can
//!   retry until one passes. The published vectors 6 and 28 of C2SP/CCTV's
//!   `ed25519vectors.json` do pass some batches (see the tests).
//!
//! Closing the second case needs a subgroup check (`[L]P == O`) per key
//! and per `R`, which costs about as much as a verification and would undo
//! the batch's speed-up; no cheaper exact test is available through
//! ed25519-dalek's API. A batch of one item is always verified singly. Use
//! [`Signed::verify_strict`] where every peer must reach the same verdict
//! on adversarial keys.

use alloc::vec;
use alloc::vec::Vec;

use ed25519_dalek::{Signature, VerifyingKey};

use crate::{strict, Payload, Signed, Verified, VerifyError};

/// One raw `(key, message, signature)` triple for [`verify_items`].
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    /// The verifying key.
    pub key: &'a VerifyingKey,
    /// The signed message.
    pub message: &'a [u8],
    /// The signature.
    pub signature: &'a Signature,
}

/// Verifies many `Signed<T>` at once. Returns one result per input, in
/// order, each exactly what [`Signed::verify_strict`] returns for that
/// item (including the error), except for the mixed-order case described
/// in the [module docs](self).
///
/// ```
/// # use bijou_frame::codec::{Reader, ReadError, Wire, WriteError, Writer};
/// # use bijou_frame::signing::batch::verify_batch;
/// # use bijou_frame::signing::{Payload, Signed, VerifyError};
/// # use ed25519_dalek::SigningKey;
/// # #[derive(Debug, Clone, PartialEq)]
/// # struct Byte(u8);
/// # impl Wire for Byte {
/// #     type Error = ReadError;
/// #     fn write_to<B: bytes::BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> { w.u8(self.0); Ok(()) }
/// #     fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> { r.u8("byte").map(Byte) }
/// # }
/// # impl Payload for Byte {
/// #     const SCHEMA: [u8; 4] = *b"BY\x00\x00";
/// # }
/// let key = SigningKey::from_bytes(&[5; 32]);
/// let mut items: Vec<Signed<Byte>> =
///     (0..8).map(|i| Signed::seal(&key, &Byte(i))).collect::<Result<_, _>>()?;
///
/// // Forge item 3: sign byte 3, then change it to 99.
/// let mut forged = items[3].as_bytes().to_vec();
/// forged[36] = 99;
/// items[3] = Signed::decode(forged.into())?; // decodes: only the signature is wrong
///
/// let results = verify_batch(&items);
/// assert!(matches!(results[3], Err(VerifyError::BadSignature { .. })));
/// for (i, result) in results.iter().enumerate().filter(|(i, _)| *i != 3) {
///     assert_eq!(result.as_ref().map(|v| v.payload()), Ok(&Byte(i as u8)));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn verify_batch<T: Payload>(items: &[Signed<T>]) -> Vec<Result<Verified<T>, VerifyError>> {
    verify_batch_refs(&items.iter().collect::<Vec<_>>())
}

/// [`verify_batch`] on borrowed items, for callers whose signed payloads
/// are not contiguous (each inside a larger item): no item is copied
/// before verification.
#[must_use]
pub fn verify_batch_refs<T: Payload>(
    items: &[&Signed<T>],
) -> Vec<Result<Verified<T>, VerifyError>> {
    // Decompress every key first (the part decoding skipped); an item whose
    // key is no curve point fails here and takes no part in the batch.
    let keys: Vec<Result<VerifyingKey, VerifyError>> =
        items.iter().map(|signed| signed.verifying_key()).collect();
    let (raw, prechecks): (Vec<Item<'_>>, Vec<Result<(), VerifyError>>) = items
        .iter()
        .zip(&keys)
        .filter_map(|(signed, key)| {
            let key = key.as_ref().ok()?;
            let item = Item {
                key,
                message: signed.message(),
                signature: signed.signature(),
            };
            Some((
                item,
                strict::precheck(key, key.is_weak(), signed.signature()),
            ))
        })
        .unzip();
    let mut batched = verify_prechecked_items(&raw, prechecks).into_iter();
    items
        .iter()
        .zip(keys)
        .map(|(signed, key)| {
            let key = key?;
            // One batched result per item with a key, in the same order.
            batched
                .next()
                .unwrap_or(Err(VerifyError::InvalidIssuer {
                    issuer: signed.peer_id(),
                }))
                .map(|()| Verified::new((*signed).clone(), key))
        })
        .collect()
}

/// One batch over all of `items`, all or none: every item verified if
/// each passes the strict byte checks and the batch equation holds;
/// `None` if any does not, with no word on which (verify them one by one,
/// with [`Signed::verify_strict`], to name it). Unlike [`verify_batch`]
/// it never splits a failed batch, so a failure costs exactly one batch:
/// the caller that knows its sender cheated can go one by one from there
/// (about one `verify_strict` per item) instead of halving (up to about
/// `3n` batched items plus `n` single checks for `n` forgeries).
///
/// What it accepts, [`verify_batch`] accepts too (up to the mixed-order
/// case of the [module docs](self), which makes either fail or pass
/// depending on the batch). An empty `items` passes; a single item gets
/// the full strict check.
///
/// ```
/// # use bijou_frame::codec::{Reader, ReadError, Wire, WriteError, Writer};
/// # use bijou_frame::signing::batch::verify_batch_all_or_none;
/// # use bijou_frame::signing::{Payload, Signed};
/// # use ed25519_dalek::SigningKey;
/// # #[derive(Debug, Clone, PartialEq)]
/// # struct Byte(u8);
/// # impl Wire for Byte {
/// #     type Error = ReadError;
/// #     fn write_to<B: bytes::BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> { w.u8(self.0); Ok(()) }
/// #     fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> { r.u8("byte").map(Byte) }
/// # }
/// # impl Payload for Byte {
/// #     const SCHEMA: [u8; 4] = *b"BY\x00\x00";
/// # }
/// let key = SigningKey::from_bytes(&[5; 32]);
/// let mut items: Vec<Signed<Byte>> =
///     (0..8).map(|i| Signed::seal(&key, &Byte(i))).collect::<Result<_, _>>()?;
/// let all: Vec<&Signed<Byte>> = items.iter().collect();
/// let verified = verify_batch_all_or_none(&all).expect("all good");
/// assert_eq!(verified[3].payload(), &Byte(3));
///
/// // One forged item: the whole batch fails, and says nothing more.
/// let mut forged = items[3].as_bytes().to_vec();
/// forged[36] = 99;
/// items[3] = Signed::decode(forged.into())?;
/// let all: Vec<&Signed<Byte>> = items.iter().collect();
/// assert!(verify_batch_all_or_none(&all).is_none());
/// assert!(items[3].verify_strict().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn verify_batch_all_or_none<T: Payload>(items: &[&Signed<T>]) -> Option<Vec<Verified<T>>> {
    if let [single] = items {
        return single.verify_strict().ok().map(|verified| vec![verified]);
    }
    let keys: Vec<VerifyingKey> = items
        .iter()
        .map(|signed| signed.verifying_key().ok())
        .collect::<Option<_>>()?;
    let mut messages = Vec::with_capacity(items.len());
    let mut signatures = Vec::with_capacity(items.len());
    for (signed, key) in items.iter().zip(&keys) {
        strict::precheck(key, key.is_weak(), signed.signature()).ok()?;
        messages.push(signed.message());
        signatures.push(*signed.signature());
    }
    if !items.is_empty() && ed25519_dalek::verify_batch(&messages, &signatures, &keys).is_err() {
        return None;
    }
    Some(
        items
            .iter()
            .zip(keys)
            .map(|(signed, key)| Verified::new((*signed).clone(), key))
            .collect(),
    )
}

/// [`verify_batch`] on raw triples: one result per item, in order, equal to
/// [`strict::verify`] on that item (up to the mixed-order case in the
/// [module docs](self)).
///
/// # Example
///
/// ```
/// use bijou_frame::signing::batch::{verify_items, Item};
/// use ed25519_dalek::{Signer, SigningKey};
///
/// let key = SigningKey::from_bytes(&[1; 32]);
/// let vk = key.verifying_key();
/// let messages: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i]).collect();
/// let signatures: Vec<_> = messages.iter().map(|m| key.sign(m)).collect();
/// let items: Vec<Item<'_>> = messages
///     .iter()
///     .zip(&signatures)
///     .map(|(message, signature)| Item { key: &vk, message, signature })
///     .collect();
/// assert!(verify_items(&items).iter().all(Result::is_ok));
/// ```
#[must_use]
pub fn verify_items(items: &[Item<'_>]) -> Vec<Result<(), VerifyError>> {
    let prechecks = items
        .iter()
        .map(|item| strict::precheck(item.key, item.key.is_weak(), item.signature))
        .collect();
    verify_prechecked_items(items, prechecks)
}

/// The batch proper, given each item's precheck result (same length).
fn verify_prechecked_items(
    items: &[Item<'_>],
    mut results: Vec<Result<(), VerifyError>>,
) -> Vec<Result<(), VerifyError>> {
    let passed: Vec<usize> = results
        .iter()
        .enumerate()
        .filter_map(|(index, result)| result.is_ok().then_some(index))
        .collect();
    let mut budget = passed.len().saturating_mul(BUDGET_PER_ITEM);
    settle(items, &passed, false, &mut results, &mut budget);
    results
}

/// Batched items allowed per input item. Isolating one bad item costs
/// about `2n` (the failed batch, then halves of halves, skipping every
/// half already known to fail), so `3n` leaves room for a few.
const BUDGET_PER_ITEM: usize = 3;

/// Decides the prechecked items `indices`, writing into `results` (which
/// holds `Ok` for them on entry); returns whether they passed as one
/// batch. `known_bad`: their parent batch failed and their sibling half
/// passed, so a batch over them would fail too; skip it and split. (If
/// that inference is ever wrong, the cost is only extra work: an item is
/// accepted only by a batch that holds or by its own strict check.)
/// `budget` is how many more items may go through batches; once spent,
/// items are verified singly.
fn settle(
    items: &[Item<'_>],
    indices: &[usize],
    known_bad: bool,
    results: &mut [Result<(), VerifyError>],
    budget: &mut usize,
) -> bool {
    if indices.len() <= 1 || (!known_bad && indices.len() > *budget) {
        for &index in indices {
            if let (Some(item), Some(slot)) = (items.get(index), results.get_mut(index)) {
                *slot = strict::verify_prechecked(item.key, item.message, item.signature);
            }
        }
        return false;
    }
    if !known_bad {
        *budget -= indices.len();
        if batch_holds(items, indices) {
            return true;
        }
    }
    let (left, right) = indices.split_at(indices.len() / 2);
    let left_passed = settle(items, left, false, results, budget);
    settle(items, right, left_passed, results, budget);
    false
}

/// One ed25519-dalek batch over `indices`.
fn batch_holds(items: &[Item<'_>], indices: &[usize]) -> bool {
    let picked = indices.iter().filter_map(|&index| items.get(index));
    let mut messages = Vec::with_capacity(indices.len());
    let mut signatures = Vec::with_capacity(indices.len());
    let mut keys = Vec::with_capacity(indices.len());
    for item in picked {
        messages.push(item.message);
        signatures.push(*item.signature);
        keys.push(*item.key);
    }
    messages.len() == indices.len()
        && ed25519_dalek::verify_batch(&messages, &signatures, &keys).is_ok()
}
