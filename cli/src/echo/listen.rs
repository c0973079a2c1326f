//! `bijou echo --listen`: only the echo server (peer B), until Ctrl-C; the
//! senders run in another terminal.

use std::net::SocketAddr;
use std::sync::Arc;

use bijou_frame::framing::prefix::LengthPrefix;
use bijou_frame::signing::Identity;
use tokio::net::TcpListener;

use super::report::transport_name;
use super::server::Server;
use crate::exit::Failure;
use crate::keygen::new_key;
use crate::target::TransportArg;

/// `--listen`: only the echo server, until Ctrl-C.
pub(super) async fn listen<P: LengthPrefix>(
    addr: SocketAddr,
    transport: TransportArg,
) -> Result<(), Failure> {
    let cannot = |e: std::io::Error| Failure::input(format!("cannot listen on {addr}: {e}"));
    let listener = TcpListener::bind(addr).await.map_err(cannot)?;
    let local = listener.local_addr().map_err(cannot)?;
    let server = Server::new(new_key()?);
    println!(
        "echo server B {} listening on {local} ({}); Ctrl-C to stop",
        server.key.peer_id(),
        transport_name::<P>(transport)
    );
    tokio::select! {
        () = Arc::new(server).serve::<P>(listener, transport, true) => {}
        _ = tokio::signal::ctrl_c() => println!("interrupted: stopping"),
    }
    Ok(())
}

/// `--listen` with `--transport iroh`: an echo server on a direct-only
/// iroh endpoint, until interrupted.
#[cfg(feature = "iroh")]
pub(super) async fn listen_iroh(addr: SocketAddr) -> Result<(), Failure> {
    let (endpoint, dial) = crate::target::iroh_listener(addr).await?;
    let server = Server::new(new_key()?);
    println!(
        "echo server B {} listening on iroh {dial}; Ctrl-C to stop",
        server.key.peer_id()
    );
    tokio::select! {
        () = Arc::new(server).serve_iroh(endpoint.clone(), true) => {}
        _ = tokio::signal::ctrl_c() => println!("interrupted: stopping"),
    }
    endpoint.close().await;
    Ok(())
}

#[cfg(not(feature = "iroh"))]
pub(super) async fn listen_iroh(_: SocketAddr) -> Result<(), Failure> {
    Err(crate::target::no_iroh())
}
