//! # bijou-frame
//!
//! Canonical framing for Subduction-style signed CRDT sync messages.
//! This facade re-exports the workspace crates:
//!
//! - [`codec`]: bijou64 and canonical LEB128 varints, zero-copy `Reader`/`Writer`;
//! - [`signing`]: signed, content-addressed payloads;
//! - [`framing`]: tokio-util length-prefixed framing (`FrameCodec`, three prefixes);
//! - [`proto`]: the Subduction wire types and the sans-IO protocol state
//!   machines (handshake, session, replay cache, verification budget,
//!   ephemeral session); no runtime;
//! - [`net`]: the async shell: transports, handshake drivers, `Connection`;
//! - [`inspect`]: decode and check a captured byte stream, frame by frame.
//!
//! ```text
//!   codec <- signing <- framing <- proto <- net <- bijou-frame
//! ```
//!
//! ```
//! use bijou_frame::codec::bijou64;
//! assert_eq!(bijou64::decode(&[0xF8, 0x34]), Ok((300, 2)));
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use bijou_codec as codec;
pub use bijou_framing as framing;
pub use bijou_net as net;
pub use bijou_proto as proto;
pub use bijou_signing as signing;

pub mod inspect;

/// The traits most code needs in scope: [`Wire`](prelude::Wire) (encode,
/// decode, `wire_len` on every wire type) and
/// [`Identity`](prelude::Identity) (who signs).
///
/// ```
/// use bijou_frame::prelude::*;
/// use bijou_frame::proto::message::{DataRequestRejected, Message, SedimentreeId, SyncMessage};
///
/// let msg = Message::Sync(SyncMessage::from(DataRequestRejected { id: SedimentreeId::new([1; 32]) }));
/// assert_eq!(Message::decode(msg.encode()?)?, msg);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod prelude {
    pub use bijou_codec::Wire;
    pub use bijou_signing::Identity;
}

/// The README's examples, compiled and run as doc tests so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The examples of SUBDUCTION.md (moved from the README), doc tests as
/// they were there.
#[cfg(doctest)]
#[doc = include_str!("../SUBDUCTION.md")]
pub struct SubductionDoctests;
