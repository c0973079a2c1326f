//! Tag `04`: [`BatchSyncRequest`], "here is what I have (as fingerprints);
//! send me the rest".
//!
//! ```text
//!   +-----------+--------------+----------+--------------+-------------+-------------+
//!   | TreeId 32 | Requestor 32 | Nonce u64| Subscribe u8 | SeedKey0 u64| SeedKey1 u64|
//!   +-----------+--------------+----------+--------------+-------------+-------------+
//!   | CFP u16 | FFP u16 | CFP x Fingerprint 8 (asc.) | FFP x Fingerprint 8 (asc.)    |
//!   +---------+---------+----------------------------+-------------------------------+
//!     Subscribe: 00 no, 01 yes; anything else is rejected
//! ```

use alloc::vec::Vec;
use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bijou_signing::PeerId;
use bytes::BufMut;

use crate::message::{
    fields::{read_sorted, sorted_unique, write_fingerprints},
    Fingerprint, FingerprintSeed, MessageError, SedimentreeId,
};

/// Tag 04: "here is what I have (as fingerprints); send me the rest".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSyncRequest {
    /// The document.
    pub id: SedimentreeId,
    /// Who asks (with `nonce`, the request id).
    pub requestor: PeerId,
    /// Request nonce, echoed by the response.
    pub nonce: u64,
    /// Whether to subscribe to the document's updates.
    pub subscribe: bool,
    /// Key of the fingerprints.
    pub seed: FingerprintSeed,
    commit_fingerprints: Vec<Fingerprint>,
    fragment_fingerprints: Vec<Fingerprint>,
}

impl BatchSyncRequest {
    /// A request; the fingerprint lists are sorted and deduplicated.
    #[must_use]
    pub fn new(
        id: SedimentreeId,
        requestor: PeerId,
        nonce: u64,
        subscribe: bool,
        seed: FingerprintSeed,
        commit_fingerprints: impl IntoIterator<Item = Fingerprint>,
        fragment_fingerprints: impl IntoIterator<Item = Fingerprint>,
    ) -> Self {
        Self {
            id,
            requestor,
            nonce,
            subscribe,
            seed,
            commit_fingerprints: sorted_unique(commit_fingerprints),
            fragment_fingerprints: sorted_unique(fragment_fingerprints),
        }
    }

    /// Fingerprints of the requester's commits, ascending.
    #[must_use]
    pub fn commit_fingerprints(&self) -> &[Fingerprint] {
        &self.commit_fingerprints
    }

    /// Fingerprints of the requester's fragments, ascending.
    #[must_use]
    pub fn fragment_fingerprints(&self) -> &[Fingerprint] {
        &self.fragment_fingerprints
    }
}

impl Wire for BatchSyncRequest {
    type Error = MessageError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.bytes(self.id.as_bytes());
        w.bytes(self.requestor.as_bytes());
        w.u64(self.nonce);
        w.u8(u8::from(self.subscribe));
        w.u64(self.seed.key0());
        w.u64(self.seed.key1());
        w.count_u16("commit_fingerprints", self.commit_fingerprints.len())?;
        w.count_u16("fragment_fingerprints", self.fragment_fingerprints.len())?;
        write_fingerprints(w, &self.commit_fingerprints);
        write_fingerprints(w, &self.fragment_fingerprints);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        let id = SedimentreeId::read_from(r)?;
        let requestor = PeerId::from_bytes(r.array("requestor")?);
        let nonce = r.u64("nonce")?;
        let offset = r.offset();
        let subscribe = match r.u8("subscribe")? {
            0x00 => false,
            0x01 => true,
            value => {
                return Err(ReadError::UnknownValue {
                    field: "subscribe",
                    offset,
                    value: value.into(),
                }
                .into())
            }
        };
        let seed = FingerprintSeed::new(r.u64("seed_key0")?, r.u64("seed_key1")?);
        let commit_count = r.u16("commit_fingerprint_count")?;
        let fragment_count = r.u16("fragment_fingerprint_count")?;
        Ok(Self {
            id,
            requestor,
            nonce,
            subscribe,
            seed,
            commit_fingerprints: read_sorted::<8, _>(
                r,
                "commit_fingerprints",
                commit_count.into(),
            )?,
            fragment_fingerprints: read_sorted::<8, _>(
                r,
                "fragment_fingerprints",
                fragment_count.into(),
            )?,
        })
    }
}
