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
//! | [`messages`] | | fixed messages and keys: a commit message of a given shape, a chain of honest commits, hand-written ephemeral control messages, `TotalSize` repair |
//! | `strategy` | `proptest` | proptest strategies for every sync and handshake message |
//! | `fuzz` | `fuzz` | the structure-aware mutation fuzz: a deterministic generator, valid specimens with their field maps, mutators, framed streams |
//! | `checks` | `fuzz` | the fuzz oracles: one check per cargo-fuzz target, shared with the CI-scale mutation fuzz and the regression replay |
//! | [`pair`] | | two sessions back to back on a virtual clock, handshake included: the one pair helper |
//! | [`heap`] | | the heap a call peaks at and holds, with a counting allocator, and `per_byte x input + constant` bounds |
//! | `echo` | `echo` | an echo server and an honest sender over loopback TCP |
//! | `keyhive_node` | `keyhive` | a Subduction node with keyhive in process (their crates), its client, push and fetch |
//!
//! The `fuzz` feature needs the async shell (bijou-net, for its codecs) and
//! nothing more; only `echo` adds tokio's TCP and channels, and only
//! `proptest` proptest.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "fuzz")]
pub mod checks;
#[cfg(feature = "echo")]
pub mod connections;
#[cfg(feature = "echo")]
pub mod echo;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod heap;
#[cfg(feature = "keyhive")]
pub mod keyhive_node;
#[cfg(feature = "longpoll_oracle")]
pub mod longpoll_oracle;
pub mod messages;
pub mod pair;
#[cfg(feature = "proptest")]
pub mod strategy;
