//! The integration tests of the iroh transport, one binary (one link) for all of them:
//! each module is what was a test binary of its own. Run one module with
//! `cargo test -p bijou-iroh-tests --features iroh --test iroh <module>::`.

mod iroh_interop;
mod iroh_loopback;
mod iroh_support;
