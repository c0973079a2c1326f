use core::fmt;

use bytes::Bytes;

use crate::{BlobMismatch, Digest};

/// Content-addressed blobs: [`Blob`], its [`BlobMeta`], and
/// [`VerifiedBlob`], the witness that a received blob matches the metadata
/// it was announced with.
///
/// ```text
///   Blob      = the bytes (a zero-copy `Bytes`)
///   BlobMeta  = { digest: BLAKE3(bytes) (32), size: len(bytes) (bijou64 on the wire) }
///
///   signed payload ---(HasBlobMeta)---> BlobMeta --verify(blob)--> VerifiedBlob
///                                                          '----> BlobMismatch::{Size, Digest}
/// ```
///
/// ```
/// use bijou_frame::signing::{Blob, BlobMeta, BlobMismatch};
///
/// let blob = Blob::from_static(b"chunk");
/// let meta = blob.meta();
/// assert_eq!(meta.size(), 5);
/// assert_eq!(meta.digest().as_bytes(), blake3::hash(b"chunk").as_bytes());
///
/// let ok = meta.verify(Blob::from_static(b"chunk"))?;
/// assert_eq!(ok.meta(), meta);
///
/// assert!(matches!(
///     meta.verify(Blob::from_static(b"chunks")),
///     Err(BlobMismatch::Size { expected: 5, actual: 6 })
/// ));
/// assert!(matches!(
///     meta.verify(Blob::from_static(b"CHUNK")),
///     Err(BlobMismatch::Digest { .. })
/// ));
/// # Ok::<(), BlobMismatch>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Blob(Bytes);

impl Blob {
    /// A blob holding `bytes` (no copy for `Bytes`; `Vec<u8>` is moved).
    #[must_use]
    pub fn new(bytes: impl Into<Bytes>) -> Self {
        Self(bytes.into())
    }

    /// A blob over static bytes.
    #[must_use]
    pub const fn from_static(bytes: &'static [u8]) -> Self {
        Self(Bytes::from_static(bytes))
    }

    /// The bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The bytes as a cheap [`Bytes`] handle.
    #[must_use]
    pub fn to_bytes(&self) -> Bytes {
        self.0.clone()
    }

    /// The bytes, consuming `self`.
    #[must_use]
    pub fn into_bytes(self) -> Bytes {
        self.0
    }

    /// Length in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the blob is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The blob id, BLAKE3 of the bytes.
    #[must_use]
    pub fn digest(&self) -> Digest<Blob> {
        Digest::from_bytes(*blake3::hash(&self.0).as_bytes())
    }

    /// Digest and size.
    #[must_use]
    pub fn meta(&self) -> BlobMeta {
        BlobMeta::new(self.digest(), size_of(self))
    }

    /// A local blob matches its own metadata by construction (this hashes
    /// it once).
    #[must_use]
    pub fn into_verified(self) -> VerifiedBlob {
        VerifiedBlob {
            meta: self.meta(),
            blob: self,
        }
    }
}

fn size_of(blob: &Blob) -> u64 {
    // `usize` is at most 64 bits on every supported target.
    u64::try_from(blob.len()).unwrap_or(u64::MAX)
}

impl From<Bytes> for Blob {
    fn from(bytes: Bytes) -> Self {
        Self(bytes)
    }
}

impl From<alloc::vec::Vec<u8>> for Blob {
    fn from(bytes: alloc::vec::Vec<u8>) -> Self {
        Self(bytes.into())
    }
}

impl AsRef<[u8]> for Blob {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Shows the length only (blobs can be large).
impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blob").field("len", &self.0.len()).finish()
    }
}

/// What a signed payload says about a blob: its digest and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobMeta {
    digest: Digest<Blob>,
    size: u64,
}

impl BlobMeta {
    /// Metadata as announced (for example, decoded from a signed payload).
    #[must_use]
    pub const fn new(digest: Digest<Blob>, size: u64) -> Self {
        Self { digest, size }
    }

    /// The announced blob id.
    #[must_use]
    pub const fn digest(&self) -> Digest<Blob> {
        self.digest
    }

    /// The announced size in bytes.
    #[must_use]
    pub const fn size(&self) -> u64 {
        self.size
    }

    /// Checks `blob` against this metadata: size first (free), then the
    /// BLAKE3 digest.
    ///
    /// # Errors
    ///
    /// [`BlobMismatch::Size`] or [`BlobMismatch::Digest`].
    pub fn verify(&self, blob: Blob) -> Result<VerifiedBlob, BlobMismatch> {
        let actual = size_of(&blob);
        if actual != self.size {
            return Err(BlobMismatch::Size {
                expected: self.size,
                actual,
            });
        }
        let actual = blob.digest();
        if actual != self.digest {
            return Err(BlobMismatch::Digest {
                expected: self.digest,
                actual,
            });
        }
        Ok(VerifiedBlob { blob, meta: *self })
    }
}

/// A payload type that announces a blob (such as a commit or a fragment).
pub trait HasBlobMeta {
    /// The announced blob's metadata.
    fn blob_meta(&self) -> BlobMeta;
}

/// A blob known to match its metadata; built only by [`BlobMeta::verify`]
/// and [`Blob::into_verified`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VerifiedBlob {
    blob: Blob,
    meta: BlobMeta,
}

impl VerifiedBlob {
    /// The blob.
    #[must_use]
    pub fn blob(&self) -> &Blob {
        &self.blob
    }

    /// The metadata it matches.
    #[must_use]
    pub fn meta(&self) -> BlobMeta {
        self.meta
    }

    /// The blob, consuming `self`.
    #[must_use]
    pub fn into_blob(self) -> Blob {
        self.blob
    }
}
