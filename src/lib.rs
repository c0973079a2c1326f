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
//! Each item has one path: a crate's module holds it, or its crate root
//! does, never both, and no crate re-exports another's items. The one trait
//! most code needs in scope is [`codec::Wire`] (encode, decode and
//! `wire_len` on every wire type); [`signing::Identity`] is who signs.
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

#[doc(inline)]
pub use bijou_codec as codec;
#[doc(inline)]
pub use bijou_framing as framing;
#[doc(inline)]
pub use bijou_net as net;
#[doc(inline)]
pub use bijou_proto as proto;
#[doc(inline)]
pub use bijou_signing as signing;

pub mod inspect;

/// The README's examples, compiled and run as doc tests so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The examples of SUBDUCTION.md (moved from the README), doc tests as
/// they were there.
#[cfg(doctest)]
#[doc = include_str!("../SUBDUCTION.md")]
pub struct SubductionDoctests;

/// The examples of PROTOCOL.md (the session's driver loop, moved from the
/// README), doc tests as they were there.
#[cfg(doctest)]
#[doc = include_str!("../PROTOCOL.md")]
pub struct ProtocolDoctests;
