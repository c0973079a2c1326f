//! The integration tests of proto, one binary (one link) for all of them:
//! each module is what was a test binary of its own. Run one module with
//! `cargo test -p bijou-proto --test proto <module>::`.

mod ephemeral_adversarial;
mod ephemeral_differential;
mod ephemeral_rules;
mod ephemeral_session;
mod handshake_sans_io;
mod keyhive_adversarial;
mod keyhive_oracle;
mod keyhive_session;
mod longpoll_seq;
mod messages_adversarial;
mod messages_differential;
mod messages_roundtrip;
mod operations;
mod replay_flood;
mod replay_table;
mod simulation;
mod snapshot;
mod snapshot_versions;
