//! The integration tests of signing, one binary (one link) for all of them:
//! each module is what was a test binary of its own. Run one module with
//! `cargo test -p bijou-signing --test signing <module>::`.

mod crafted;
mod signing_adversarial;
mod signing_batch;
mod signing_support;
mod signing_vectors;
