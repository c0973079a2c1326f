//! The integration tests of framing, one binary (one link) for all of them:
//! each module is what was a test binary of its own. Run one module with
//! `cargo test -p bijou-framing --test framing <module>::`.

mod framing_errors;
mod framing_io;
mod framing_prefix;
mod framing_roundtrip;
