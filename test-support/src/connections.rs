//! Two authenticated connections over an in-memory pipe, for tests that
//! need a connected pair and nothing else.

use bijou_framing::prefix::Bijou64;
use bijou_net::handshake::ConnectConfig;
use bijou_net::transport::FramedTransport;
use bijou_net::Connection;
use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::Audience;
use bijou_signing::{ed25519_dalek::SigningKey, Identity};
use tokio::io::DuplexStream;

/// One end of [`duplex_pair`].
pub type DuplexConnection = Connection<FramedTransport<DuplexStream, Bijou64>>;

/// `client` connected to `server` over a 1 MiB in-memory pipe (framed,
/// bijou64), the handshake run with `config` on both sides: (client,
/// server).
///
/// # Panics
///
/// If the handshake fails: a test's setup.
pub async fn duplex_pair(
    client: &SigningKey,
    server: &SigningKey,
    config: &ConnectConfig,
) -> (DuplexConnection, DuplexConnection) {
    let (a, b) = tokio::io::duplex(1 << 20);
    let responder = Responder::new(HandshakeConfig::default());
    let server_id = server.peer_id();
    let accepting =
        Connection::accept(FramedTransport::new(b, Bijou64), server, &responder, config);
    let connecting = Connection::connect(
        FramedTransport::new(a, Bijou64),
        client,
        Audience::Known(server_id),
        config,
    );
    let (server, client) = tokio::join!(accepting, connecting);
    #[allow(clippy::expect_used)]
    (client.expect("connect"), server.expect("accept"))
}
