//! Shared test scaffolding for bijou-frame: what the integration tests, the
//! cargo-fuzz targets and the benchmarks of several crates build their
//! inputs with, in one place instead of files included by path.
//!
//! Not published, not an API: it changes whenever the tests do. Use it from
//! integration tests (`tests/`), fuzz targets and benchmarks only, never
//! from a crate's unit tests in `src/` (they would see a second copy of the
//! crate under test, and its types would not match).
//!
//! | module | feature | what it is for |
//! |---|---|---|
//! | [`messages`] | | fixed messages and keys: a commit message of a given shape, hand-written ephemeral control messages, `TotalSize` repair |
//! | `strategy` | `proptest` | proptest strategies for every sync and handshake message |
//!
//! Only the `proptest` feature brings proptest.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod messages;
#[cfg(feature = "proptest")]
pub mod strategy;
