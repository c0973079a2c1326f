//! The structure-aware mutation fuzz (the `fuzz` feature): what the
//! CI-scale mutation fuzz (`net/tests/net/mutation_fuzz.rs`) and the regression
//! replay (`net/tests/net/regressions.rs`) build their inputs with. The oracles
//! that judge the inputs are in [`checks`](crate::checks).
//!
//! - [`Rng`]: a small deterministic generator (SplitMix64), so a run is
//!   the same on every machine and with every `rand` version;
//! - [`Specimen`]s: valid messages of every kind (`SUM\0`, `SUH\0`,
//!   standalone signed payloads, `SUK\0` with every keyhive message) with
//!   the positions of their count, length and tag fields and of their
//!   signed payloads;
//! - [`mutate`]: bit flips, byte inserts and deletes, truncation, range
//!   duplication and removal, splices and crossovers of two inputs, and
//!   fields set to extremes;
//! - [`Stream`]s: messages behind a length prefix, and prefix extremes.

use bijou_codec::Wire;
use bijou_framing::prefix::LengthPrefix;
use bijou_framing::FrameCodec;
use bijou_proto::keyhive::MIN_EVENT_LEN;
use bijou_proto::keyhive::{
    ContactCardJson, KeyhiveMessage, KeyhivePeer, SignedKeyhive, SukMessage,
};
use bijou_proto::message::{
    Audience, BatchSyncRequest, BatchSyncResponse, BlobMessage, Challenge, Checkpoint, CommitId,
    DataRequestRejected, Fingerprint, FingerprintSeed, Fragment, HandshakeMessage, HeadsUpdate,
    LooseCommit, Message, Rejection, RejectionReason, RemoteHeads, Response, SedimentreeId,
    SignedItem, SyncDiff, SyncMessage, SyncResult,
};
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::{Blob, Identity, PeerId, Signed, SIGNATURE_LEN};
use bytes::{Bytes, BytesMut};
use tokio_util::codec::Encoder;

use crate::messages::fix_total_size;

// ---- deterministic randomness ---------------------------------------------

/// SplitMix64: tiny, fast, and the same everywhere.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose whole output is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`0` for `n == 0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }

    /// A random byte.
    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }

    /// `N` random bytes.
    pub fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        for b in &mut out {
            *b = self.byte();
        }
        out
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }

    /// A uniformly chosen element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Picks an index by weight.
    pub fn weighted(&mut self, weights: &[usize]) -> usize {
        let total: usize = weights.iter().sum();
        let mut x = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if x < w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }
}

/// The signing keys of the corpora (sealing is deterministic, so the
/// corpora are too).
pub fn keys() -> Vec<SigningKey> {
    (0u8..3)
        .map(|i| SigningKey::from_bytes(&[i.wrapping_mul(29).wrapping_add(7); 32]))
        .collect()
}

// ---- specimens ------------------------------------------------------------

/// Width of a count, length or tag field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// One byte.
    U8,
    /// Two bytes, big-endian.
    U16,
    /// Four bytes, big-endian.
    U32,
    /// A bijou64 varint (1 to 9 bytes).
    Bijou64,
}

/// A count, length or tag field of a valid input.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// Offset in the input.
    pub at: usize,
    /// How it is encoded.
    pub width: Width,
    /// Its value in the unmutated input.
    pub value: u64,
}

fn field(at: usize, width: Width, value: usize) -> Field {
    Field {
        at,
        width,
        value: value as u64,
    }
}

/// Which signed payload type a region holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignedKind {
    /// A `Signed<LooseCommit>`.
    Commit,
    /// A `Signed<Fragment>`.
    Fragment,
    /// A `Signed<Challenge>` (a whole `SUH\0` challenge message).
    Challenge,
    /// A `Signed<Response>` (a whole `SUH\0` response message).
    Response,
}

/// A signed payload inside a specimen's bytes: `at..at + len`, of which
/// the first `header` bytes are schema, discriminant and issuer, and the
/// last 64 the signature; `key` indexes [`keys`].
#[derive(Debug, Clone, Copy)]
pub struct SignedRegion {
    /// The payload type.
    pub kind: SignedKind,
    /// Where it starts.
    pub at: usize,
    /// Its length, signature included.
    pub len: usize,
    /// Schema, discriminant and issuer: the bytes before the fields.
    pub header: usize,
    /// The signing key, an index into [`keys`].
    pub key: usize,
}

impl SignedRegion {
    /// The fields: between the header and the signature.
    pub fn fields(&self) -> std::ops::Range<usize> {
        self.at + self.header..self.at + self.len - SIGNATURE_LEN
    }
}

/// What a specimen is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// SUM tag 00.
    LooseCommit,
    /// SUM tag 01.
    Fragment,
    /// SUM tag 04.
    BatchSyncRequest,
    /// SUM tag 05, `Ok` with a non-empty diff.
    ResponseOk,
    /// SUM tag 05, `NotFound`.
    ResponseNotFound,
    /// SUM tag 05, `Unauthorized`.
    ResponseUnauthorized,
    /// SUM tag 06.
    RemoveSubscriptions,
    /// SUM tag 07.
    DataRequestRejected,
    /// SUM tag 08.
    HeadsUpdate,
    /// SUH 00.
    Challenge,
    /// SUH 01.
    Response,
    /// SUH 02.
    Rejection,
    /// A standalone `Signed<LooseCommit>`.
    SignedCommit,
    /// A standalone `Signed<Fragment>`.
    SignedFragment,
    /// `SUK\0` SyncRequest.
    SukSyncRequest,
    /// `SUK\0` SyncResponse.
    SukSyncResponse,
    /// `SUK\0` SyncOps.
    SukSyncOps,
    /// `SUK\0` RequestContactCard (with a contact card).
    SukRequestContactCard,
    /// `SUK\0` MissingContactCard.
    SukMissingContactCard,
    /// `SUK\0` SyncCheck.
    SukSyncCheck,
    /// `SUK\0` SyncConfirmation.
    SukSyncConfirmation,
}

impl Kind {
    /// Every sync message kind.
    pub const SUM: [Kind; 9] = [
        Kind::LooseCommit,
        Kind::Fragment,
        Kind::BatchSyncRequest,
        Kind::ResponseOk,
        Kind::ResponseNotFound,
        Kind::ResponseUnauthorized,
        Kind::RemoveSubscriptions,
        Kind::DataRequestRejected,
        Kind::HeadsUpdate,
    ];
    /// Every handshake message kind.
    pub const SUH: [Kind; 3] = [Kind::Challenge, Kind::Response, Kind::Rejection];
    /// The standalone signed payloads.
    pub const SIGNED: [Kind; 2] = [Kind::SignedCommit, Kind::SignedFragment];
    /// Every keyhive message kind, each in a `SUK\0` message.
    pub const SUK: [Kind; 7] = [
        Kind::SukSyncRequest,
        Kind::SukSyncResponse,
        Kind::SukSyncOps,
        Kind::SukRequestContactCard,
        Kind::SukMissingContactCard,
        Kind::SukSyncCheck,
        Kind::SukSyncConfirmation,
    ];
}

/// A valid input with the positions of its count, length and tag fields
/// and of its signed payloads.
#[derive(Debug, Clone)]
pub struct Specimen {
    /// What it is.
    pub kind: Kind,
    /// Its bytes.
    pub wire: Vec<u8>,
    /// Its count, length and tag fields.
    pub fields: Vec<Field>,
    /// Its signed payloads.
    pub signed: Vec<SignedRegion>,
}

/// The value of a field in `bytes`, if it is all there.
pub fn read_field(bytes: &[u8], at: usize, width: Width) -> Option<u64> {
    let rest = bytes.get(at..)?;
    let fixed = |n: usize| -> Option<u64> {
        let b = rest.get(..n)?;
        Some(b.iter().fold(0u64, |v, &byte| (v << 8) | u64::from(byte)))
    };
    match width {
        Width::U8 => fixed(1),
        Width::U16 => fixed(2),
        Width::U32 => fixed(4),
        Width::Bijou64 => bijou_codec::bijou64::decode(rest).ok().map(|(v, _)| v),
    }
}

fn id32(rng: &mut Rng) -> [u8; 32] {
    // Mostly random; sometimes a small alphabet, so that mutants collide.
    if rng.chance(1, 4) {
        [rng.below(4) as u8; 32]
    } else {
        rng.array()
    }
}

fn commit_ids(rng: &mut Rng, max: usize) -> Vec<CommitId> {
    let n = if rng.chance(1, 16) {
        rng.range(0, 12)
    } else {
        rng.range(0, max)
    };
    (0..n).map(|_| CommitId::new(id32(rng))).collect()
}

fn blob(rng: &mut Rng) -> Vec<u8> {
    // Lengths around the bijou64 tiers: 1 byte (< 248), 2 (< 504), 3.
    let len = match rng.weighted(&[1, 4, 2, 1]) {
        0 => 0,
        1 => rng.range(1, 48),
        2 => rng.range(240, 300),
        _ => rng.range(500, 700),
    };
    rng.bytes(len)
}

fn remote_heads(rng: &mut Rng) -> RemoteHeads {
    let counter = if rng.chance(1, 2) {
        rng.below(10) as u64
    } else {
        rng.next_u64()
    };
    RemoteHeads::new(counter, commit_ids(rng, 4))
}

fn fingerprints(rng: &mut Rng) -> Vec<Fingerprint> {
    let n = rng.range(0, 5);
    (0..n)
        .map(|_| {
            Fingerprint::from_u64(if rng.chance(1, 3) {
                rng.below(4) as u64
            } else {
                rng.next_u64()
            })
        })
        .collect()
}

fn commit_item(
    rng: &mut Rng,
    keys: &[SigningKey],
    tree: SedimentreeId,
) -> (SignedItem<LooseCommit>, usize) {
    let data = blob(rng);
    let blob = Blob::from(data);
    let commit = LooseCommit::new(
        tree,
        CommitId::new(id32(rng)),
        commit_ids(rng, 4),
        blob.meta(),
    );
    let key = rng.below(keys.len());
    let signed = Signed::seal(&keys[key], &commit).expect("seal");
    (SignedItem::new(signed, blob), key)
}

fn fragment_item(
    rng: &mut Rng,
    keys: &[SigningKey],
    tree: SedimentreeId,
) -> (SignedItem<Fragment>, usize) {
    let data = blob(rng);
    let blob = Blob::from(data);
    let checkpoints: Vec<Checkpoint> = (0..rng.range(0, 4))
        .map(|_| Checkpoint::from_bytes(rng.array()))
        .collect();
    let fragment = Fragment::new(
        tree,
        CommitId::new(id32(rng)),
        commit_ids(rng, 3),
        checkpoints,
        blob.meta(),
    );
    let key = rng.below(keys.len());
    let signed = Signed::seal(&keys[key], &fragment).expect("seal");
    (SignedItem::new(signed, blob), key)
}

/// Offset of the first count in a signed commit or fragment: schema,
/// issuer, tree id, head, blob digest.
const SIGNED_COUNTS_AT: usize = 4 + 32 + 32 * 3;

/// Fields and region of a `Signed<LooseCommit>` at `at`; returns its end.
fn commit_fields(
    s: &mut Specimen,
    at: usize,
    signed: &Signed<LooseCommit>,
    parents: usize,
    size: u64,
    key: usize,
) -> usize {
    s.fields
        .push(field(at + SIGNED_COUNTS_AT, Width::U8, parents));
    s.fields.push(Field {
        at: at + SIGNED_COUNTS_AT + 1,
        width: Width::Bijou64,
        value: size,
    });
    s.signed.push(SignedRegion {
        kind: SignedKind::Commit,
        at,
        len: signed.len(),
        header: 36,
        key,
    });
    at + signed.len()
}

/// Fields and region of a `Signed<Fragment>` at `at`; returns its end.
fn fragment_fields(
    s: &mut Specimen,
    at: usize,
    signed: &Signed<Fragment>,
    fragment: &Fragment,
    key: usize,
) -> usize {
    s.fields.push(field(
        at + SIGNED_COUNTS_AT,
        Width::U8,
        fragment.boundary().len(),
    ));
    s.fields.push(field(
        at + SIGNED_COUNTS_AT + 1,
        Width::U16,
        fragment.checkpoints().len(),
    ));
    s.fields.push(Field {
        at: at + SIGNED_COUNTS_AT + 3,
        width: Width::Bijou64,
        value: fragment.blob_meta().size(),
    });
    s.signed.push(SignedRegion {
        kind: SignedKind::Fragment,
        at,
        len: signed.len(),
        header: 36,
        key,
    });
    at + signed.len()
}

/// A `Signed<LooseCommit> · BlobLen · Blob` at `at`; returns its end.
fn commit_item_fields(
    s: &mut Specimen,
    at: usize,
    item: &SignedItem<LooseCommit>,
    key: usize,
) -> usize {
    let verified = item.signed().verify_strict().expect("a valid specimen");
    let commit = verified.payload();
    let end = commit_fields(
        s,
        at,
        item.signed(),
        commit.parents().len(),
        commit.blob_meta().size(),
        key,
    );
    s.fields.push(field(end, Width::Bijou64, item.blob().len()));
    at + item.wire_len().expect("fits")
}

/// A `Signed<Fragment> · BlobLen · Blob` at `at`; returns its end.
fn fragment_item_fields(
    s: &mut Specimen,
    at: usize,
    item: &SignedItem<Fragment>,
    key: usize,
) -> usize {
    let verified = item.signed().verify_strict().expect("a valid specimen");
    let end = fragment_fields(s, at, item.signed(), verified.payload(), key);
    s.fields.push(field(end, Width::Bijou64, item.blob().len()));
    at + item.wire_len().expect("fits")
}

/// `Counter u64 · Count u32 · Count x 32` at `at`; returns its end.
fn heads_fields(s: &mut Specimen, at: usize, heads: &RemoteHeads) -> usize {
    s.fields
        .push(field(at + 8, Width::U32, heads.heads().len()));
    at + 12 + 32 * heads.heads().len()
}

fn sum_specimen(kind: Kind, msg: SyncMessage, keys_of_items: &[usize]) -> Specimen {
    let wire = msg.encode().expect("encode").to_vec();
    let mut s = Specimen {
        kind,
        wire,
        fields: Vec::new(),
        signed: Vec::new(),
    };
    s.fields.push(field(4, Width::U32, s.wire.len()));
    s.fields.push(field(8, Width::U8, usize::from(msg.tag())));
    let body = 9;
    let mut keys = keys_of_items.iter().copied();
    match &msg {
        SyncMessage::LooseCommit(m) => {
            let at = heads_fields(&mut s, body + 32, &m.sender_heads);
            commit_item_fields(&mut s, at, &m.item, keys.next().expect("key"));
        }
        SyncMessage::Fragment(m) => {
            let at = heads_fields(&mut s, body + 32, &m.sender_heads);
            fragment_item_fields(&mut s, at, &m.item, keys.next().expect("key"));
        }
        SyncMessage::BatchSyncRequest(r) => {
            let subscribe = body + 32 + 32 + 8;
            s.fields
                .push(field(subscribe, Width::U8, usize::from(r.subscribe)));
            let counts = subscribe + 1 + 16;
            s.fields
                .push(field(counts, Width::U16, r.commit_fingerprints().len()));
            s.fields.push(field(
                counts + 2,
                Width::U16,
                r.fragment_fingerprints().len(),
            ));
        }
        SyncMessage::BatchSyncResponse(r) => {
            let result = body + 32 + 8 + 32;
            let mut at = result + 1;
            let code = match &r.result {
                SyncResult::Ok(diff) => {
                    let counts = [
                        diff.commits().len(),
                        diff.fragments().len(),
                        diff.requested_commits().len(),
                        diff.requested_fragments().len(),
                    ];
                    for (i, count) in counts.into_iter().enumerate() {
                        s.fields.push(field(at + 2 * i, Width::U16, count));
                    }
                    at += 8;
                    for item in diff.commits() {
                        at = commit_item_fields(&mut s, at, item, keys.next().expect("key"));
                    }
                    for item in diff.fragments() {
                        at = fragment_item_fields(&mut s, at, item, keys.next().expect("key"));
                    }
                    at += 8 * (counts[2] + counts[3]);
                    0
                }
                SyncResult::NotFound => 1,
                SyncResult::Unauthorized => 2,
            };
            s.fields.push(field(result, Width::U8, code));
            heads_fields(&mut s, at, &r.responder_heads);
        }
        SyncMessage::RemoveSubscriptions(r) => {
            s.fields.push(field(body, Width::U16, r.ids().len()));
        }
        SyncMessage::DataRequestRejected(_) => {}
        SyncMessage::HeadsUpdate(h) => {
            heads_fields(&mut s, body + 32, &h.heads);
        }
        other => panic!("a sync variant without a field map: {other:?}"),
    }
    s.check_field_map();
    s
}

impl Specimen {
    /// The field map is right: every field holds the value the input has.
    fn check_field_map(&self) {
        for f in &self.fields {
            assert_eq!(
                read_field(&self.wire, f.at, f.width),
                Some(f.value),
                "field map of {:?} at {f:?}",
                self.kind
            );
        }
        for r in &self.signed {
            assert!(r.at + r.len <= self.wire.len(), "{:?}: {r:?}", self.kind);
        }
    }

    /// A valid specimen of `kind`, signed with `keys`.
    pub fn generate(kind: Kind, rng: &mut Rng, keys: &[SigningKey]) -> Self {
        let tree = SedimentreeId::new(id32(rng));
        match kind {
            Kind::LooseCommit => {
                let (item, key) = commit_item(rng, keys, tree);
                let msg = SyncMessage::LooseCommit(BlobMessage {
                    id: tree,
                    sender_heads: remote_heads(rng),
                    item,
                });
                sum_specimen(kind, msg, &[key])
            }
            Kind::Fragment => {
                let (item, key) = fragment_item(rng, keys, tree);
                let msg = SyncMessage::Fragment(BlobMessage {
                    id: tree,
                    sender_heads: remote_heads(rng),
                    item,
                });
                sum_specimen(kind, msg, &[key])
            }
            Kind::BatchSyncRequest => {
                let msg = SyncMessage::BatchSyncRequest(BatchSyncRequest::new(
                    tree,
                    PeerId::from_bytes(rng.array()),
                    rng.next_u64(),
                    rng.chance(1, 2),
                    FingerprintSeed::new(rng.next_u64(), rng.next_u64()),
                    fingerprints(rng),
                    fingerprints(rng),
                ));
                sum_specimen(kind, msg, &[])
            }
            Kind::ResponseOk | Kind::ResponseNotFound | Kind::ResponseUnauthorized => {
                let mut item_keys = Vec::new();
                let result = match kind {
                    Kind::ResponseOk => {
                        // Non-empty: at least one commit or fragment.
                        let (commits, fragments) = match rng.below(3) {
                            0 => (rng.range(1, 3), 0),
                            1 => (0, rng.range(1, 2)),
                            _ => (rng.range(1, 2), rng.range(1, 2)),
                        };
                        let commits: Vec<_> = (0..commits)
                            .map(|_| {
                                let (item, key) = commit_item(rng, keys, tree);
                                item_keys.push(key);
                                item
                            })
                            .collect();
                        let fragments: Vec<_> = (0..fragments)
                            .map(|_| {
                                let (item, key) = fragment_item(rng, keys, tree);
                                item_keys.push(key);
                                item
                            })
                            .collect();
                        SyncResult::Ok(SyncDiff::new(
                            commits,
                            fragments,
                            fingerprints(rng),
                            fingerprints(rng),
                        ))
                    }
                    Kind::ResponseNotFound => SyncResult::NotFound,
                    _ => SyncResult::Unauthorized,
                };
                let msg = SyncMessage::BatchSyncResponse(BatchSyncResponse {
                    requestor: PeerId::from_bytes(rng.array()),
                    nonce: rng.next_u64(),
                    id: tree,
                    result,
                    responder_heads: remote_heads(rng),
                });
                sum_specimen(kind, msg, &item_keys)
            }
            Kind::RemoveSubscriptions => {
                let ids: Vec<_> = (0..rng.range(0, 4))
                    .map(|_| SedimentreeId::new(id32(rng)))
                    .collect();
                sum_specimen(kind, SyncMessage::remove_subscriptions(ids), &[])
            }
            Kind::DataRequestRejected => sum_specimen(
                kind,
                SyncMessage::DataRequestRejected(DataRequestRejected { id: tree }),
                &[],
            ),
            Kind::HeadsUpdate => sum_specimen(
                kind,
                SyncMessage::HeadsUpdate(HeadsUpdate {
                    id: tree,
                    heads: remote_heads(rng),
                }),
                &[],
            ),
            Kind::Challenge | Kind::Response | Kind::Rejection => {
                handshake_specimen(kind, rng, keys)
            }
            Kind::SignedCommit => {
                let (item, key) = commit_item(rng, keys, tree);
                let mut s = Specimen {
                    kind,
                    wire: item.signed().as_bytes().to_vec(),
                    fields: Vec::new(),
                    signed: Vec::new(),
                };
                commit_item_fields(&mut s, 0, &item, key);
                s.fields.pop(); // the blob length is not part of it
                s.check_field_map();
                s
            }
            Kind::SukSyncRequest
            | Kind::SukSyncResponse
            | Kind::SukSyncOps
            | Kind::SukRequestContactCard
            | Kind::SukMissingContactCard
            | Kind::SukSyncCheck
            | Kind::SukSyncConfirmation => suk_specimen(kind, rng, keys),
            Kind::SignedFragment => {
                let (item, key) = fragment_item(rng, keys, tree);
                let mut s = Specimen {
                    kind,
                    wire: item.signed().as_bytes().to_vec(),
                    fields: Vec::new(),
                    signed: Vec::new(),
                };
                fragment_item_fields(&mut s, 0, &item, key);
                s.fields.pop();
                s.check_field_map();
                s
            }
        }
    }
}

fn challenge(rng: &mut Rng) -> Challenge {
    let audience = if rng.chance(1, 2) {
        Audience::Known(PeerId::from_bytes(rng.array()))
    } else {
        Audience::Discover(rng.array())
    };
    Challenge::new(audience, rng.next_u64() >> rng.below(64), rng.array())
}

fn handshake_specimen(kind: Kind, rng: &mut Rng, keys: &[SigningKey]) -> Specimen {
    let key = rng.below(keys.len());
    let (msg, signed_kind, fields) = match kind {
        Kind::Challenge => {
            let c = challenge(rng);
            let tag = usize::from(matches!(c.audience, Audience::Discover(_)));
            let signed = Signed::seal(&keys[key], &c).expect("seal");
            (
                HandshakeMessage::Challenge(signed),
                Some(SignedKind::Challenge),
                vec![field(4, Width::U8, 0), field(37, Width::U8, tag)],
            )
        }
        Kind::Response => {
            let r = Response::for_challenge(&challenge(rng), rng.next_u64()).expect("digest");
            let signed = Signed::seal(&keys[key], &r).expect("seal");
            (
                HandshakeMessage::Response(signed),
                Some(SignedKind::Response),
                vec![field(4, Width::U8, 1)],
            )
        }
        _ => {
            let reason = *rng.pick(&[
                RejectionReason::ClockDrift,
                RejectionReason::InvalidAudience,
                RejectionReason::ReplayedNonce,
                RejectionReason::InvalidSignature,
            ]);
            (
                HandshakeMessage::Rejection(Rejection {
                    reason,
                    timestamp: rng.next_u64(),
                }),
                None,
                vec![
                    field(4, Width::U8, 2),
                    field(5, Width::U8, usize::from(reason.to_u8())),
                ],
            )
        }
    };
    let wire = Message::Handshake(msg).encode().expect("encode").to_vec();
    let signed = signed_kind
        .map(|kind| SignedRegion {
            kind,
            at: 0,
            len: wire.len(),
            header: 37,
            key,
        })
        .into_iter()
        .collect();
    let s = Specimen {
        kind,
        wire,
        fields,
        signed,
    };
    s.check_field_map();
    s
}

/// A keyhive peer id: one of `keys`' or a random key, sometimes with a
/// suffix.
fn keyhive_peer(rng: &mut Rng, key: PeerId) -> KeyhivePeer {
    let suffix = rng.chance(1, 3).then(|| {
        (0..rng.range(0, 40))
            .map(|_| char::from(b'a' + rng.byte() % 26))
            .collect()
    });
    KeyhivePeer { key, suffix }
}

fn hashes(rng: &mut Rng) -> Vec<[u8; 32]> {
    (0..rng.range(0, 4)).map(|_| id32(rng)).collect()
}

/// Events of at least [`MIN_EVENT_LEN`] bytes (around the one- and
/// two-byte CBOR length boundary at 256).
fn events(rng: &mut Rng) -> Vec<Bytes> {
    (0..rng.range(0, 3))
        .map(|_| {
            let len = rng.range(MIN_EVENT_LEN, 300);
            Bytes::from(rng.bytes(len))
        })
        .collect()
}

/// A `SUK\0` message of `kind`, signed by one of `keys` (its sender),
/// with a contact card for `RequestContactCard` and sometimes otherwise.
/// Fields: `TotalSize`, and the length of the `signed` byte string.
fn suk_specimen(kind: Kind, rng: &mut Rng, keys: &[SigningKey]) -> Specimen {
    let key = rng.below(keys.len());
    let sender = keyhive_peer(rng, keys[key].peer_id());
    let target_key = PeerId::from_bytes(rng.array());
    let target = keyhive_peer(rng, target_key);
    let total = |rng: &mut Rng| rng.next_u64() >> rng.below(64);
    let message = match kind {
        Kind::SukSyncRequest => KeyhiveMessage::SyncRequest {
            sender,
            target,
            found: hashes(rng),
            pending: hashes(rng),
        },
        Kind::SukSyncResponse => KeyhiveMessage::SyncResponse {
            sender,
            target,
            requested: hashes(rng),
            found: events(rng),
            responder_total: total(rng),
            requester_total: total(rng),
        },
        Kind::SukSyncOps => KeyhiveMessage::SyncOps {
            sender,
            target,
            ops: events(rng),
            responder_total: total(rng),
            requester_total: total(rng),
        },
        Kind::SukRequestContactCard => KeyhiveMessage::RequestContactCard { sender, target },
        Kind::SukMissingContactCard => KeyhiveMessage::MissingContactCard { sender, target },
        Kind::SukSyncCheck => KeyhiveMessage::SyncCheck {
            sender,
            target,
            sender_total: total(rng),
            sender_syncpoint: total(rng),
            sender_digest: rng.array(),
        },
        _ => KeyhiveMessage::SyncConfirmation {
            sender,
            target,
            confirmer_total: total(rng),
        },
    };
    let card = (kind == Kind::SukRequestContactCard || rng.chance(1, 4)).then(|| {
        ContactCardJson::from_json(format!(
            "{{\"card\":\"{}\"}}",
            "x".repeat(rng.range(0, 300))
        ))
    });
    let message = SukMessage {
        contact_card: card,
        signed: SignedKeyhive::sign(&keys[key], message).expect("sign"),
    };
    let wire = message.to_bytes().expect("encode").to_vec();
    let mut fields = vec![field(4, Width::U32, wire.len())];
    // The `signed` byte string's length, where its head has a 1-, 2- or
    // 4-byte argument.
    let content = wire.len() - message.signed.wire_len();
    let signed_len = message.signed.wire_len();
    for (head, width, n) in [
        (0x58, Width::U8, 1),
        (0x59, Width::U16, 2),
        (0x5A, Width::U32, 4),
    ] {
        if wire.get(content - n - 1) == Some(&head) {
            fields.push(field(content - n, width, signed_len));
        }
    }
    let s = Specimen {
        kind,
        wire,
        fields,
        signed: Vec::new(),
    };
    s.check_field_map();
    s
}

/// `per_kind` specimens of each kind in `kinds`.
pub fn corpus(
    kinds: &[Kind],
    per_kind: usize,
    rng: &mut Rng,
    keys: &[SigningKey],
) -> Vec<Specimen> {
    let mut out = Vec::with_capacity(kinds.len() * per_kind);
    for _ in 0..per_kind {
        for &kind in kinds {
            out.push(Specimen::generate(kind, rng, keys));
        }
    }
    out
}

// ---- mutations ------------------------------------------------------------

/// Values a count, length or tag field is set to.
fn extreme(rng: &mut Rng, width: Width, current: u64) -> Vec<u8> {
    let bits = match width {
        Width::U8 => 8,
        Width::U16 => 16,
        Width::U32 => 32,
        Width::Bijou64 => 64,
    };
    let max = u64::MAX >> (64 - bits);
    let offsets = bijou_codec::bijou64::OFFSETS;
    let value = match rng.below(10) {
        0 => 0,
        1 => 1,
        2 => max,
        3 => 1 << (bits - 1),
        4 => current.wrapping_add(1) & max,
        5 => current.wrapping_sub(1) & max,
        6 if width == Width::Bijou64 => return vec![0xFF; 9], // tier-8 overflow
        6 => max - 1,
        // Around a bijou64 tier boundary.
        7 => offsets[rng.range(1, 8)].wrapping_sub(rng.below(2) as u64) & max,
        8 => current.wrapping_add(rng.range(2, 64) as u64) & max,
        _ => rng.next_u64() & max,
    };
    match width {
        Width::Bijou64 => {
            let mut out = Vec::new();
            bijou_codec::bijou64::encode_to_vec(value, &mut out);
            out
        }
        _ => value.to_be_bytes()[8 - bits / 8..].to_vec(),
    }
}

/// Sets field `f` (positions of the unmutated input) to an extreme value,
/// replacing its current encoding (a bijou64's length comes from its first
/// byte).
pub fn set_field(rng: &mut Rng, bytes: &mut Vec<u8>, f: &Field) {
    if f.at >= bytes.len() {
        return;
    }
    let current = read_field(bytes, f.at, f.width).unwrap_or(f.value);
    let encoded = extreme(rng, f.width, current);
    let old_len = match f.width {
        Width::U8 => 1,
        Width::U16 => 2,
        Width::U32 => 4,
        Width::Bijou64 => bijou_codec::bijou64::len_from_first_byte(bytes[f.at]),
    };
    let end = (f.at + old_len).min(bytes.len());
    bytes.splice(f.at..end, encoded);
}

fn range_len(rng: &mut Rng) -> usize {
    if rng.chance(3, 4) {
        rng.range(1, 8)
    } else {
        rng.range(1, 200)
    }
}

/// One mutation of `bytes`; `other` is a second valid input for splices,
/// `fields` the count, length and tag fields of the unmutated input.
pub fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>, other: &[u8], fields: &[Field]) {
    let len = bytes.len();
    let field_weight = if fields.is_empty() { 0 } else { 5 };
    match rng.weighted(&[3, 3, 1, 1, 1, 1, 1, 1, 2, field_weight]) {
        // Bit flip.
        0 => {
            if len > 0 {
                let i = rng.below(len);
                bytes[i] ^= 1 << rng.below(8);
            }
        }
        // Byte set: to 00, FF, a bijou64 tier tag, or anything.
        1 => {
            if len > 0 {
                let i = rng.below(len);
                bytes[i] = match rng.below(4) {
                    0 => 0x00,
                    1 => 0xFF,
                    2 => 0xF8 + rng.below(8) as u8,
                    _ => rng.byte(),
                };
            }
        }
        // Insert 1 to 4 bytes.
        2 => {
            let i = rng.below(len + 1);
            let n = rng.range(1, 4);
            let new = rng.bytes(n);
            bytes.splice(i..i, new);
        }
        // Delete 1 to 8 (or up to 200) bytes.
        3 => {
            if len > 0 {
                let i = rng.below(len);
                let n = range_len(rng);
                bytes.drain(i..(i + n).min(len));
            }
        }
        // Truncate.
        4 => bytes.truncate(rng.below(len + 1)),
        // Duplicate a range in place.
        5 => {
            if len > 0 {
                let i = rng.below(len);
                let end = (i + range_len(rng)).min(len);
                let copy = bytes[i..end].to_vec();
                bytes.splice(end..end, copy);
            }
        }
        // Bytes of the other input, written over or inserted.
        6 => {
            if !other.is_empty() {
                let from = rng.below(other.len());
                let piece = &other[from..(from + range_len(rng)).min(other.len())];
                let i = rng.below(len + 1);
                let end = if rng.chance(1, 2) {
                    (i + piece.len()).min(len)
                } else {
                    i
                };
                bytes.splice(i..end, piece.iter().copied());
            }
        }
        // Crossover: the head of this input, the tail of the other (at the
        // same offset half of the time, so that the layouts line up).
        7 => {
            let cut = rng.below(len + 1);
            let from = if rng.chance(1, 2) {
                cut.min(other.len())
            } else {
                rng.below(other.len() + 1)
            };
            bytes.truncate(cut);
            bytes.extend_from_slice(&other[from..]);
        }
        // Crossover the other way: the other's head, this tail.
        8 => {
            let cut = rng.below(len + 1);
            let from = if rng.chance(1, 2) {
                cut.min(other.len())
            } else {
                rng.below(other.len() + 1)
            };
            let mut spliced = other[..from].to_vec();
            spliced.extend_from_slice(&bytes[cut..]);
            *bytes = spliced;
        }
        // A count, length or tag field set to an extreme.
        _ => {
            let f = *rng.pick(fields);
            set_field(rng, bytes, &f);
        }
    }
}

/// 1 to 4 mutations (mostly one or two).
pub fn mutate_some(rng: &mut Rng, bytes: &mut Vec<u8>, other: &[u8], fields: &[Field]) {
    let n = match rng.below(8) {
        0..=3 => 1,
        4..=5 => 2,
        6 => 3,
        _ => 4,
    };
    for _ in 0..n {
        mutate(rng, bytes, other, fields);
    }
}

/// Mutates the fields of the signed payload `region` of `s` and signs the
/// result again with the original key (issuer unchanged). Returns the new
/// bytes and the mutated payload's new length.
pub fn resigned_mutant(
    rng: &mut Rng,
    s: &Specimen,
    region: &SignedRegion,
    other: &Specimen,
    keys: &[SigningKey],
) -> (Vec<u8>, usize) {
    let range = region.fields();
    let mut fields = s.wire[range.clone()].to_vec();
    let local: Vec<Field> = s
        .fields
        .iter()
        .filter(|f| range.contains(&f.at))
        .map(|f| Field {
            at: f.at - range.start,
            ..*f
        })
        .collect();
    // Splice from the other specimen's signed fields where it has some.
    let donor = other
        .signed
        .first()
        .map_or(&other.wire[..], |r| &other.wire[r.fields()]);
    mutate_some(rng, &mut fields, donor, &local);
    let mut payload = s.wire[region.at..range.start].to_vec();
    payload.extend_from_slice(&fields);
    let signature = keys[region.key].sign_message(&payload).expect("sign");
    payload.extend_from_slice(&signature.to_bytes());
    let new_len = payload.len();
    let mut out = s.wire[..region.at].to_vec();
    out.extend_from_slice(&payload);
    out.extend_from_slice(&s.wire[region.at + region.len..]);
    fix_total_size(&mut out);
    (out, new_len)
}

// ---- streams --------------------------------------------------------------

/// Messages behind a length prefix `P`, with where each prefix is.
#[derive(Debug, Clone)]
pub struct Stream {
    /// The framed stream.
    pub bytes: Vec<u8>,
    /// The payloads, in order.
    pub frames: Vec<Bytes>,
    /// `(offset, length)` of each prefix.
    pub prefixes: Vec<(usize, usize)>,
}

/// Frames `payloads` with prefix `P`.
pub fn stream<P: LengthPrefix>(payloads: &[Vec<u8>]) -> Stream {
    let mut codec = FrameCodec::with_prefix(P::default());
    let mut out = BytesMut::new();
    let mut prefixes = Vec::new();
    for p in payloads {
        let at = out.len();
        codec.encode(&p[..], &mut out).expect("frame");
        prefixes.push((at, out.len() - at - p.len()));
    }
    Stream {
        bytes: out.to_vec(),
        frames: payloads.iter().map(|p| Bytes::from(p.clone())).collect(),
        prefixes,
    }
}

/// Replaces the prefix at `(at, len)` with an extreme one: a value at or
/// around the payload length, the maximum (`max`), the prefix's limits, or
/// a malformed encoding (bijou64 tier-8 overflow, overlong or overflowing
/// LEB128).
pub fn set_prefix<P: LengthPrefix>(
    rng: &mut Rng,
    bytes: &mut Vec<u8>,
    (at, len): (usize, usize),
    payload_len: usize,
    max: usize,
) {
    let value: Option<u64> = match rng.below(12) {
        0 => Some(0),
        1 => Some(payload_len as u64 + 1),
        2 => Some((payload_len as u64).saturating_sub(1)),
        3 => Some(max as u64),
        4 => Some(max as u64 + 1),
        5 => Some(P::MAX_VALUE),
        6 => Some(u64::from(u32::MAX)),
        7 => Some(u64::MAX),
        8 => Some(payload_len as u64 + rng.range(2, 300) as u64),
        9 => Some(rng.next_u64() >> rng.below(64)),
        _ => None,
    };
    let encoded = match value.and_then(P::encode) {
        Some((buf, n)) => buf[..n].to_vec(),
        None => match P::NAME {
            "bijou64" => vec![0xFF; 9],
            "leb128" => match rng.below(3) {
                // Overlong: a continuation byte, then a final zero.
                0 => vec![(payload_len as u8) | 0x80, 0x00],
                // A tenth byte above 01.
                1 => {
                    let mut v = vec![0xFF; 9];
                    v.push(0x02);
                    v
                }
                // Never ends within ten bytes.
                _ => vec![0x80; 11],
            },
            _ => u32::MAX.to_be_bytes().to_vec(),
        },
    };
    let end = (at + len).min(bytes.len());
    if at <= end {
        bytes.splice(at..end, encoded);
    }
}
