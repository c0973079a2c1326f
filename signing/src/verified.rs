use core::fmt;

use bytes::Bytes;
use ed25519_dalek::VerifyingKey;

use crate::Blob;
use crate::{blob::HasBlobMeta, BlobMismatch, Digest, Payload, PeerId, Signed, VerifiedBlob};

/// The witness that a [`Signed<T>`]'s signature holds.
///
/// ```text
///   Signed<T> --verify_strict / verify_batch--> Verified<T>
///                                                 |- payload()   the T decoded with the Signed<T>
///                                                 |- issuer()    who signed it (decompressed key)
///                                                 |- as_bytes()  the exact bytes received
///                                                 '- digest()    BLAKE3(Schema || fields)
/// ```
///
/// There is no other constructor, so holding a `Verified<T>` proves the
/// check ran and passed.
///
/// ```compile_fail
/// # fn f<T: bijou_frame::signing::Payload>(signed: bijou_frame::signing::Signed<T>, payload: T) {
/// let forged = bijou_frame::signing::Verified::new(signed, payload); // private
/// # }
/// ```
pub struct Verified<T> {
    signed: Signed<T>,
    key: VerifyingKey,
}

impl<T> Verified<T> {
    /// Only verification builds one.
    pub(crate) fn new(signed: Signed<T>, key: VerifyingKey) -> Self {
        Self { signed, key }
    }

    /// The verified payload.
    #[must_use]
    pub fn payload(&self) -> &T {
        self.signed.payload()
    }

    /// The payload, consuming `self`.
    #[must_use]
    pub fn into_payload(self) -> T {
        self.signed.into_payload()
    }

    /// Who signed it (a key that is not of small order).
    #[must_use]
    pub fn issuer(&self) -> VerifyingKey {
        self.key
    }

    /// The issuer's peer id.
    #[must_use]
    pub fn peer_id(&self) -> PeerId {
        self.signed.peer_id()
    }

    /// The original wire bytes, exactly as received.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.signed.as_bytes()
    }

    /// The original wire bytes as a cheap [`Bytes`] handle, to forward.
    #[must_use]
    pub fn to_bytes(&self) -> Bytes {
        self.signed.to_bytes()
    }

    /// The signed form it was verified from.
    #[must_use]
    pub fn signed(&self) -> &Signed<T> {
        &self.signed
    }

    /// The signed form, consuming `self`.
    #[must_use]
    pub fn into_signed(self) -> Signed<T> {
        self.signed
    }
}

impl<T: Payload> Verified<T> {
    /// BLAKE3(`Schema` || fields), over the received bytes. The
    /// discriminant, the issuer and the signature are not included, as in
    /// Subduction: the same content signed by two issuers has one digest.
    ///
    /// ```
    /// # use bijou_frame::codec::{Reader, ReadError, Wire, WriteError, Writer};
    /// # use bijou_frame::signing::{Payload, Signed};
    /// # use ed25519_dalek::SigningKey;
    /// # #[derive(Clone)]
    /// # struct Byte(u8);
    /// # impl Wire for Byte {
    /// #     type Error = ReadError;
    /// #     fn write_to<B: bytes::BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> { w.u8(self.0); Ok(()) }
    /// #     fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> { r.u8("byte").map(Byte) }
    /// # }
    /// # impl Payload for Byte {
    /// #     const SCHEMA: [u8; 4] = *b"BY\x00\x00";
    /// #     const DISCRIMINANT: Option<u8> = Some(7);
    /// # }
    /// let alice = SigningKey::from_bytes(&[1; 32]);
    /// let bob = SigningKey::from_bytes(&[2; 32]);
    /// let a = Signed::seal(&alice, &Byte(42))?.verify_strict()?;
    /// let b = Signed::seal(&bob, &Byte(42))?.verify_strict()?;
    /// assert_eq!(a.digest(), b.digest());
    /// assert_eq!(a.digest().as_bytes(), blake3::hash(b"BY\x00\x00\x2a").as_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn digest(&self) -> Digest<T> {
        self.signed.digest()
    }
}

impl<T: Payload + HasBlobMeta> Verified<T> {
    /// Checks a received blob against the blob metadata this payload
    /// signed.
    ///
    /// # Errors
    ///
    /// [`BlobMismatch`] if the size or the digest differ.
    pub fn verify_blob(&self, blob: Blob) -> Result<VerifiedBlob, BlobMismatch> {
        self.payload().blob_meta().verify(blob)
    }
}

impl<T: Clone> Clone for Verified<T> {
    fn clone(&self) -> Self {
        Self {
            signed: self.signed.clone(),
            key: self.key,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Verified<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verified")
            .field("issuer", &self.peer_id())
            .field("payload", self.payload())
            .finish()
    }
}
