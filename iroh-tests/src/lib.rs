//! No code: the iroh (QUIC) transport's tests live in `tests/`, apart from
//! `bijou-net` so that `cargo test --workspace` builds no iroh crate. Run
//! them with `cargo test -p bijou-iroh-tests --features iroh`.

#![forbid(unsafe_code)]
