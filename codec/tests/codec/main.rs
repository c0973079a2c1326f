//! The integration tests of codec, one binary (one link) for all of them:
//! each module is what was a test binary of its own. Run one module with
//! `cargo test -p bijou-codec --test codec <module>::`.

mod codec_differential;
mod codec_leb128;
mod codec_properties;
mod codec_single_value;
mod codec_vectors;
