//! The integration tests of bijou-net, one binary (one link) for all of them:
//! each module is what was a test binary of its own, compiled when the
//! features it needs are on. Run one module with
//! `cargo test -p bijou-net --features websocket,longpoll --test net <module>::`.
//! The tests that measure the heap with a counting global allocator stay
//! binaries of their own, so nothing else allocates in their process.

#[cfg(feature = "longpoll")]
#[path = "../support/lp_http.rs"]
mod lp_http;
#[cfg(all(feature = "longpoll", feature = "websocket"))]
#[path = "../longpoll_support/their_server.rs"]
mod their_server;

mod amplification;
mod ephemeral_session;
#[cfg(feature = "websocket")]
mod graceful_close;
mod handshake_connection;
#[cfg(feature = "websocket")]
mod interop_ephemeral;
#[cfg(feature = "websocket")]
mod interop_subduction;
#[cfg(feature = "websocket")]
mod keyhive_interop;
#[cfg(feature = "websocket")]
mod keyhive_live;
#[cfg(feature = "longpoll")]
mod longpoll_client_bad_input;
#[cfg(all(feature = "longpoll", feature = "websocket"))]
mod longpoll_interop_client;
#[cfg(feature = "longpoll")]
mod longpoll_interop_server;
#[cfg(feature = "longpoll")]
mod longpoll_lost_response;
#[cfg(feature = "longpoll")]
mod longpoll_server;
mod messages_codec;
mod mutation_fuzz;
mod operations;
mod regressions;
#[cfg(feature = "websocket")]
mod transport_mismatch;
#[cfg(feature = "websocket")]
mod websocket_bad_input;
#[cfg(feature = "websocket")]
mod websocket_frame_fuzz;
#[cfg(feature = "websocket")]
mod websocket_peers;
#[cfg(feature = "websocket")]
mod websocket_transport;
