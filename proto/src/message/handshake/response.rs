//! [`Response`]: the responder's signed answer (kind `01`).
//!
//! ```text
//!   +--------+----+-------------+--------------------+-----------------+--------+
//!   | "SUH\0"| 01 | IssuerVK 32 | ChallengeDigest 32 | ServerTime u64  | Sig 64 |
//!   +--------+----+-------------+--------------------+-----------------+--------+
//!                               \____ fields (this type), 40 bytes ___/
//!
//!   ChallengeDigest = BLAKE3("SUH\0" || the 57 challenge field bytes)
//! ```

use bijou_codec::{ReadError, Reader, Wire, WriteError, Writer};
use bijou_signing::{Digest, Payload};
use bytes::BufMut;

use super::{kind, Challenge, HANDSHAKE_SCHEMA};

/// The server's signed answer (discriminant `01`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Response {
    challenge_digest: Digest<Challenge>,
    /// Server time, unix seconds.
    pub server_timestamp: u64,
}

impl Response {
    /// A response naming the challenge it answers by digest.
    #[must_use]
    pub const fn new(challenge_digest: Digest<Challenge>, server_timestamp: u64) -> Self {
        Self {
            challenge_digest,
            server_timestamp,
        }
    }

    /// The response to `challenge`: its digest
    /// BLAKE3(`SUH\0` || 57 field bytes) and the server's time.
    ///
    /// # Errors
    ///
    /// Never in practice (a challenge has no counts); the signature is the
    /// payload contract's.
    pub fn for_challenge(challenge: &Challenge, server_timestamp: u64) -> Result<Self, WriteError> {
        Ok(Self::new(challenge.digest()?, server_timestamp))
    }

    /// Digest of the challenge this answers.
    #[must_use]
    pub const fn challenge_digest(&self) -> Digest<Challenge> {
        self.challenge_digest
    }
}

impl Payload for Response {
    const SCHEMA: [u8; 4] = HANDSHAKE_SCHEMA;
    const DISCRIMINANT: Option<u8> = Some(kind::RESPONSE);
}

impl Wire for Response {
    type Error = ReadError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        self.challenge_digest.write_to(w)?;
        w.u64(self.server_timestamp);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        Ok(Self {
            challenge_digest: Digest::from_bytes(r.array("challenge_digest")?),
            server_timestamp: r.u64("server_timestamp")?,
        })
    }
}
