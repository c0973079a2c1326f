use bijou_codec::Reader;
use bijou_signing::ed25519_dalek::{Signature, SigningKey};
use bijou_signing::{strict, Identity, PeerId};
use bytes::{BufMut, Bytes, BytesMut};

use super::error::KeyhiveError;
use super::message::EventHash;
use crate::message::SedimentreeId;

/// `StaticEvent::Delegated`'s variant index.
const DELEGATED: u32 = 3;

/// A keyhive access level (`keyhive_core::access::Access`), lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// May relay (fetch) the document's data.
    Relay,
    /// May read (fetch).
    Read,
    /// May write (push) and read.
    Edit,
    /// May also change who has access.
    Admin,
}

impl Access {
    fn index(self) -> u32 {
        match self {
            Self::Relay => 0,
            Self::Read => 1,
            Self::Edit => 2,
            Self::Admin => 3,
        }
    }

    fn from_index(index: u32) -> Option<Self> {
        Some(match index {
            0 => Self::Relay,
            1 => Self::Read,
            2 => Self::Edit,
            3 => Self::Admin,
            _ => return None,
        })
    }
}

/// Who a root delegation grants access to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grantee {
    /// Keyhive's `Public` agent: everyone.
    Public,
    /// One key (an individual the server knows: send its contact card).
    Key(PeerId),
}

impl Grantee {
    /// The agent's key as keyhive names it.
    #[must_use]
    pub fn key(self) -> PeerId {
        match self {
            Self::Public => public_id(),
            Self::Key(key) => key,
        }
    }
}

/// Keyhive's `Public` agent: the public key of the all-zero secret key.
#[must_use]
pub fn public_id() -> PeerId {
    SigningKey::from_bytes(&[0; 32]).peer_id()
}

/// Checks that `tree` can be a keyhive document id (an Ed25519 point, as
/// `subduction_keyhive`'s policy requires before it looks for the
/// document). Refuse such a tree locally when the server enforces keyhive.
///
/// ```
/// use bijou_proto::keyhive::{check_tree_id, DocumentKey};
/// use bijou_proto::message::SedimentreeId;
/// assert!(check_tree_id(DocumentKey::from_seed([1; 32]).tree_id()).is_ok());
/// // y = 2 is not the y of a curve point.
/// let mut not_a_point = [0; 32];
/// not_a_point[0] = 2;
/// assert!(check_tree_id(SedimentreeId::new(not_a_point)).is_err());
/// ```
///
/// # Errors
///
/// [`KeyhiveError::TreeNotAPoint`].
pub fn check_tree_id(tree: SedimentreeId) -> Result<(), KeyhiveError> {
    PeerId::from_bytes(*tree.as_bytes())
        .verifying_key()
        .map(|_| ())
        .map_err(|_| KeyhiveError::TreeNotAPoint { tree })
}

/// A document's root signing key. Its public key is the document id and
/// the tree id.
///
/// Keyhive documents, as much as a sync client needs: a document key from
/// a seed, and the document's root delegation, the one event that makes a
/// keyhive server create the document.
///
/// The document id is the public key of the document's root signing key,
/// and Subduction's keyhive policy takes a tree id as a document id: so
/// tree id = document id = [`DocumentKey::tree_id`]. The same seed gives
/// the same key, the same tree and the same root delegation (Ed25519 is
/// deterministic), so a client can reopen a document and register it again
/// harmlessly: the server already holds an event with that hash.
///
/// The root delegation is keyhive's `StaticEvent::Delegated(Signed<
/// StaticDelegation<Vec<u8>>>)` (content references are byte vectors in
/// `subduction_keyhive`'s runtime keyhive, the one `subduction_cli` runs),
/// in keyhive's binary form (fixed-width little-endian
/// integers, 64-bit lengths; bincode 1's layout, written here by hand):
///
/// ```text
///   Variant u32 LE = 3 (Delegated)
///   ┌ signed payload (StaticDelegation) ─────────────────────────────────┐
///   │ Can u32 LE (0 Relay, 1 Read, 2 Edit, 3 Admin)                      │
///   │ Proof: 00 (None: a root delegation has no proof)                   │
///   │ Delegate: Len u64 LE = 32 | Key32   (Public's key, or a named key)  │
///   │ AfterRevocations: Count u64 LE = 0                                 │
///   │ AfterContent: Count u64 LE = 1 |                                   │
///   │   DocumentId: Len u64 LE = 32 | Key32 | Heads: Count u64 LE = 1 |   │
///   │   Head: Len u64 LE = 32 | Head32 (the document id)                 │
///   └────────────────────────────────────────────────────────────────────┘
///   Issuer: Len u64 LE = 32 | Key32 (the document key)
///   Signature64 (Ed25519 by the document key over the signed payload)
///
///   event hash = BLAKE3(all of the above)
/// ```
///
/// `Public` is keyhive's well-known agent whose key is the public key of
/// the all-zero secret key: every keyhive instance knows it. A document
/// delegating Edit to `Public` lets **anyone** who can reach the server
/// read, relay and push into the tree (keyhive checks Edit for a put and
/// Relay for a fetch, and `Public` counts for every peer). Granting a named
/// key instead limits pushes to commits that key signed and fetches to that
/// key; the server must know that key (the registering connection's own key
/// is made known by its contact card).
///
/// Not implemented: everything else of keyhive. No groups, no further
/// delegations or revocations, no prekey secrets and so no group key
/// agreement (CGKA): documents are not encrypted, and the server stores and
/// serves the commits as sent.
#[derive(Clone)]
pub struct DocumentKey {
    key: SigningKey,
}

impl core::fmt::Debug for DocumentKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DocumentKey")
            .field("id", &self.key.peer_id())
            .finish_non_exhaustive()
    }
}

impl DocumentKey {
    /// The document key of a 32-byte seed (the Ed25519 secret key): the
    /// same seed, the same document.
    #[must_use]
    pub fn from_seed(seed: [u8; 32]) -> Self {
        Self {
            key: SigningKey::from_bytes(&seed),
        }
    }

    /// The document id (the public key).
    #[must_use]
    pub fn id(&self) -> PeerId {
        self.key.peer_id()
    }

    /// The tree id: the document id's bytes.
    #[must_use]
    pub fn tree_id(&self) -> SedimentreeId {
        SedimentreeId::new(*self.id().as_bytes())
    }

    /// The root delegation granting `access` to `to`, with the document id
    /// itself as the one content head (a keyhive document needs at least
    /// one; the server only stores it).
    ///
    /// # Errors
    ///
    /// [`KeyhiveError::Signer`] if signing fails (never with an in-memory
    /// key).
    pub fn root_delegation(
        &self,
        to: Grantee,
        access: Access,
    ) -> Result<RootDelegation, KeyhiveError> {
        let doc = *self.id().as_bytes();
        let delegate = *to.key().as_bytes();
        let mut payload = BytesMut::with_capacity(PAYLOAD_LEN);
        payload.put_u32_le(access.index());
        payload.put_u8(0);
        payload.put_u64_le(32);
        payload.put_slice(&delegate);
        payload.put_u64_le(0);
        payload.put_u64_le(1);
        payload.put_u64_le(32);
        payload.put_slice(&doc);
        payload.put_u64_le(1);
        payload.put_u64_le(32);
        payload.put_slice(&doc);
        let issuer = self.id();
        let signature = self
            .key
            .sign_message(&payload)
            .map_err(|_| KeyhiveError::Signer { issuer })?;
        let mut event = BytesMut::with_capacity(EVENT_LEN);
        event.put_u32_le(DELEGATED);
        event.put_slice(&payload);
        event.put_u64_le(32);
        event.put_slice(&doc);
        event.put_slice(&signature.to_bytes());
        let event = event.freeze();
        Ok(RootDelegation {
            hash: *blake3::hash(&event).as_bytes(),
            event,
            document: issuer,
            grantee: delegate_of(to),
            access,
        })
    }
}

fn delegate_of(to: Grantee) -> Grantee {
    if to.key() == public_id() {
        Grantee::Public
    } else {
        to
    }
}

/// Bytes of the signed payload and of the whole event.
const PAYLOAD_LEN: usize = 4 + 1 + 8 + 32 + 8 + 8 + 8 + 32 + 8 + 8 + 32;
const EVENT_LEN: usize = 4 + PAYLOAD_LEN + 8 + 32 + 64;

/// A document's root delegation event, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootDelegation {
    /// The event in keyhive's binary form.
    pub event: Bytes,
    /// Its hash (BLAKE3 of `event`): what a SyncRequest offers.
    pub hash: EventHash,
    /// The document id (the signer).
    pub document: PeerId,
    /// Who is granted access.
    pub grantee: Grantee,
    /// What access.
    pub access: Access,
}

impl RootDelegation {
    /// The tree id the delegation creates.
    #[must_use]
    pub fn tree_id(&self) -> SedimentreeId {
        SedimentreeId::new(*self.document.as_bytes())
    }

    /// Reads a root delegation event (the layout in [`DocumentKey`]'s docs, exactly: no proof, no revocations, one content entry
    /// for the document itself) and verifies it was signed by the document
    /// key (`verify_strict`).
    ///
    /// # Errors
    ///
    /// [`KeyhiveError::Read`] for a truncated or longer event or an
    /// unexpected value, [`KeyhiveError::WrongSigner`] if the content entry
    /// names another document than the signer, [`KeyhiveError::Signature`]
    /// for a bad signature.
    pub fn decode(event: Bytes) -> Result<Self, KeyhiveError> {
        let mut r = Reader::new(&event);
        let le_u32 = |r: &mut Reader<'_>, f| r.array::<4>(f).map(u32::from_le_bytes);
        let le_u64 = |r: &mut Reader<'_>, f| r.array::<8>(f).map(u64::from_le_bytes);
        let expect = |r: &mut Reader<'_>, f: &'static str, want: u64, width: usize| {
            let offset = r.offset();
            let value = if width == 4 {
                le_u32(r, f).map(u64::from)?
            } else {
                le_u64(r, f)?
            };
            if value == want {
                Ok(())
            } else {
                Err(KeyhiveError::Read(bijou_codec::ReadError::UnknownValue {
                    field: f,
                    offset,
                    value,
                }))
            }
        };
        expect(
            &mut r,
            "event variant (3 = Delegated)",
            u64::from(DELEGATED),
            4,
        )?;
        let access_offset = r.offset();
        let access_index = le_u32(&mut r, "access")?;
        let access = Access::from_index(access_index).ok_or(KeyhiveError::Read(
            bijou_codec::ReadError::UnknownValue {
                field: "access",
                offset: access_offset,
                value: u64::from(access_index),
            },
        ))?;
        let proof_offset = r.offset();
        let proof = r.u8("proof (0 = none)")?;
        if proof != 0 {
            return Err(KeyhiveError::Read(bijou_codec::ReadError::UnknownValue {
                field: "proof (0 = none)",
                offset: proof_offset,
                value: u64::from(proof),
            }));
        }
        expect(&mut r, "delegate length", 32, 8)?;
        let delegate = PeerId::from_bytes(r.array::<32>("delegate")?);
        expect(&mut r, "revocation count", 0, 8)?;
        expect(&mut r, "content entry count", 1, 8)?;
        expect(&mut r, "document id length", 32, 8)?;
        let document = PeerId::from_bytes(r.array::<32>("document id")?);
        expect(&mut r, "content head count", 1, 8)?;
        expect(&mut r, "content head length", 32, 8)?;
        r.array::<32>("content head")?;
        let payload_end = r.offset();
        expect(&mut r, "issuer length", 32, 8)?;
        let issuer = PeerId::from_bytes(r.array::<32>("issuer")?);
        let signature = r.array::<64>("signature")?;
        r.finish()?;
        if issuer != document {
            return Err(KeyhiveError::WrongSigner {
                issuer,
                expected: document,
            });
        }
        let key = issuer
            .verifying_key()
            .map_err(|_| KeyhiveError::Signature {
                issuer,
                source: bijou_signing::VerifyError::InvalidIssuer { issuer },
            })?;
        let payload = event.get(4..payload_end).unwrap_or_default();
        strict::verify(&key, payload, &Signature::from_bytes(&signature))
            .map_err(|source| KeyhiveError::Signature { issuer, source })?;
        Ok(Self {
            hash: *blake3::hash(&event).as_bytes(),
            event,
            document,
            grantee: delegate_of(Grantee::Key(delegate)),
            access,
        })
    }
}
