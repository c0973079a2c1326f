//! The integration tests of bijou-frame (the facade), one binary (one link) for all of them:
//! each module is what was a test binary of its own. Run one module with
//! `cargo test -p bijou-frame --test frame <module>::`.

mod echo_adversarial;
mod inspect;
mod load_echo;
