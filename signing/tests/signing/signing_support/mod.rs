//! Small payload types and helpers shared by the `signing_*` tests. The
//! real LooseCommit and Fragment come with the framing crate; these mimic
//! their shape (fixed ids, a blob meta with a bijou64 size, a counted
//! ascending array) and add the cases they lack: two types sharing one
//! schema, a type without a discriminant, and a deliberately lax decoder.
#![allow(dead_code)]

use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bijou_signing::{
    ed25519_dalek::{Signature, SigningKey},
    Blob, BlobMeta, Digest, HasBlobMeta, Payload, Signed,
};
use bytes::BufMut;
use proptest::prelude::*;

/// Schema shared by [`Commit`] and [`Twin`].
pub const SHARED_SCHEMA: [u8; 4] = *b"TST\x00";

/// `Tree(32) | BlobDigest(32) | ParentCount u8 | BlobSize bijou64 | Parents N×32`,
/// parents strictly ascending; schema `TST\0`, discriminant 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub tree: [u8; 32],
    pub blob: BlobMeta,
    pub parents: Vec<[u8; 32]>,
}

fn encode_commit<B: BufMut + ?Sized>(c: &Commit, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
    w.bytes(&c.tree);
    w.bytes(c.blob.digest().as_bytes());
    w.count_u8("parents", c.parents.len())?;
    w.bijou64(c.blob.size());
    c.parents.iter().for_each(|p| w.bytes(p));
    Ok(())
}

fn decode_commit(r: &mut Reader<'_>) -> Result<Commit, ReadError> {
    let tree = r.array("tree")?;
    let digest = Digest::from_bytes(r.array("blob_digest")?);
    let count = r.u8("parent_count")?;
    let size = r.bijou64("blob_size")?;
    let parents = r.ascending_arrays("parents", count.into())?;
    Ok(Commit {
        tree,
        blob: BlobMeta::new(digest, size),
        parents,
    })
}

impl Payload for Commit {
    const SCHEMA: [u8; 4] = SHARED_SCHEMA;
    const DISCRIMINANT: Option<u8> = Some(0);
}

impl Wire for Commit {
    type Error = ReadError;
    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        encode_commit(self, w)
    }
    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        decode_commit(r)
    }
}

impl HasBlobMeta for Commit {
    fn blob_meta(&self) -> BlobMeta {
        self.blob
    }
}

/// Same schema and fields as [`Commit`], discriminant 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Twin(pub Commit);

impl Payload for Twin {
    const SCHEMA: [u8; 4] = SHARED_SCHEMA;
    const DISCRIMINANT: Option<u8> = Some(1);
}

impl Wire for Twin {
    type Error = ReadError;
    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        encode_commit(&self.0, w)
    }
    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        decode_commit(r).map(Twin)
    }
}

/// `Value bijou64 | Len u16 | Data`; schema `TPL\0`, no discriminant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plain {
    pub value: u64,
    pub data: Vec<u8>,
}

impl Payload for Plain {
    const SCHEMA: [u8; 4] = *b"TPL\x00";
}

impl Wire for Plain {
    type Error = ReadError;
    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bijou64(self.value);
        w.count_u16("data", self.data.len())?;
        w.bytes(&self.data);
        Ok(())
    }
    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let value = r.bijou64("value")?;
        let len = r.u16("data_len")?;
        let data = r.bytes("data", len.into())?.to_vec();
        Ok(Plain { value, data })
    }
}

/// A flag byte whose decoder is lax (any non-zero byte is `true`) while
/// the encoder writes `1`: two encodings of one value. A payload type
/// must not do this (see `bijou_signing::payload`); the tests show what it
/// would cost and that the strict-reader property check catches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sloppy(pub bool);

impl Payload for Sloppy {
    const SCHEMA: [u8; 4] = *b"TSL\x00";
}

impl Wire for Sloppy {
    type Error = ReadError;
    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.u8(u8::from(self.0));
        Ok(())
    }
    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        r.u8("flag").map(|b| Sloppy(b != 0))
    }
}

/// The strict-reader property every payload type must have: fields that
/// read back re-encode to exactly the bytes read. `Signed` relies on it
/// instead of re-encoding on every decode.
pub fn fields_are_canonical<T: Payload>(fields: &[u8]) -> bool {
    let bytes = bytes::Bytes::copy_from_slice(fields);
    match T::decode(bytes.clone()) {
        Ok(value) => value.encode().is_ok_and(|again| again == bytes),
        Err(_) => true,
    }
}

pub fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

/// A commit with `parents` parents over a small blob; all bytes fixed.
pub fn commit(parents: u8) -> Commit {
    Commit {
        tree: [0x11; 32],
        blob: Blob::from_static(b"blob contents").meta(),
        parents: (0..parents).map(|i| [i + 1; 32]).collect(),
    }
}

pub fn sealed<T: Payload>(seed: u8, payload: &T) -> Signed<T> {
    Signed::seal(&key(seed), payload).expect("test payloads encode")
}

/// The byte range of the signature in `wire`.
pub fn signature_offset(wire: &[u8]) -> usize {
    wire.len() - 64
}

/// `wire` with its signature replaced by `r || s`.
pub fn with_signature(wire: &[u8], r: &[u8; 32], s: &[u8; 32]) -> Vec<u8> {
    let mut out = wire[..signature_offset(wire)].to_vec();
    out.extend_from_slice(r);
    out.extend_from_slice(s);
    out
}

/// `wire` with byte `at` replaced by the bytes of `with`.
pub fn patched(wire: &[u8], at: usize, with: &[u8]) -> Vec<u8> {
    let mut out = wire.to_vec();
    out[at..at + with.len()].copy_from_slice(with);
    out
}

/// `s + L` as a 256-bit integer (no reduction), for the malleated `S`.
pub fn plus_group_order(s: &[u8; 32]) -> [u8; 32] {
    let mut out = *s;
    let mut carry = 0u16;
    for (byte, l) in out.iter_mut().zip(bijou_signing::strict::GROUP_ORDER) {
        let sum = u16::from(*byte) + u16::from(l) + carry;
        *byte = sum as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0, "S + L overflowed 256 bits");
    out
}

pub fn signature_of<T>(signed: &Signed<T>) -> Signature {
    *signed.signature()
}

pub fn arb_commit() -> impl Strategy<Value = Commit> {
    (
        any::<[u8; 32]>(),
        prop::collection::vec(any::<u8>(), 0..48),
        prop::collection::btree_set(any::<[u8; 32]>(), 0..4),
    )
        .prop_map(|(tree, blob, parents)| Commit {
            tree,
            blob: Blob::new(blob).meta(),
            parents: parents.into_iter().collect(),
        })
}

pub fn arb_plain() -> impl Strategy<Value = Plain> {
    (any::<u64>(), prop::collection::vec(any::<u8>(), 0..40))
        .prop_map(|(value, data)| Plain { value, data })
}
