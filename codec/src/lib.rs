//! # bijou-codec
//!
//! The byte-level layer of bijou-frame: canonical integers and a
//! zero-copy field cursor. `no_std` with `alloc`.
//!
//! - [`bijou64`]: the bijective varint (one encoding per value, length
//!   known from the first byte). The default everywhere.
//! - [`leb128`]: canonical unsigned LEB128, the comparison variant.
//! - [`Wire`]: the one trait every wire type implements: exact length,
//!   write into any `bytes::BufMut`, strict read from a [`Reader`];
//!   `decode` rejects trailing bytes.
//! - [`Reader`] / [`Writer`]: field-by-field decoding (zero-copy over the
//!   frame's `Bytes`, absolute offsets) and encoding (counts never
//!   truncate), with errors that carry field, offset and needed/have.
//! - [`BufExt`] / [`BufMutExt`]: bijou64 on `bytes::Buf` / `BufMut`.
//!
//! # Cargo features
//!
//! - `bulk` (off by default): the bulk bijou64 codecs,
//!   `bijou64::decode_iter` (an iterator whose `fold` picks a decoder for
//!   the shape of its input: one-byte runs, runs of one tier, repeating
//!   length patterns) and `bijou64::encode_slice` (many values into a
//!   pre-sized buffer). Nothing in the library needs them: messages are
//!   read field by field through [`Reader`] and the single-value
//!   [`bijou64::decode`]. They are for streams of many varints, and the
//!   benchmarks enable them. Without the feature the crate is the
//!   single-value codecs, [`Wire`], [`Reader`] and [`Writer`].
//!
//! ```
//! use bijou_frame::codec::{bijou64, Reader};
//!
//! let mut wire = Vec::new();
//! bijou64::encode_to_vec(66_040, &mut wire);
//! assert_eq!(wire, [0xFA, 0x00, 0x00, 0x00]);
//!
//! let wire = bytes::Bytes::from(wire);
//! let mut r = Reader::new(&wire);
//! assert_eq!(r.bijou64("len"), Ok(66_040));
//! assert_eq!(r.finish(), Ok(()));
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

extern crate alloc;
// Unit tests count per thread what a decoder did (`std::thread_local!`).
#[cfg(test)]
extern crate std;

pub mod bijou64;
mod buf_ext;
pub mod leb128;
mod reader;
mod varint;
mod wire;
mod writer;

pub use buf_ext::{BufExt, BufMutExt};
pub use reader::{ReadError, Reader};
pub use wire::{Wire, DECODE_HEAP_CONSTANT, DECODE_HEAP_PER_BYTE};
pub use writer::{count, WriteError, Writer};

/// An output buffer too short for what had to be written into it; nothing
/// was written. The slice encoders return it, and [`Wire::encode_into`]
/// as [`WriteError::BufferTooSmall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("output buffer too small: the encoding needs {needed} bytes, the buffer has room for {have}; pass one of at least {needed}")]
pub struct BufferTooSmall {
    /// Bytes the encoding needs.
    pub needed: usize,
    /// Bytes the buffer has.
    pub have: usize,
}
