//! The client as a program, so that every part of it is compiled in when
//! it is built for `wasm32-unknown-unknown` (a library's unexported code
//! would be dropped): it reads records from stdin and writes what it
//! would send to stdout.
//!
//! ```text
//!   stdin:  key 32 · server 32 · now u64 BE · seed 32 · then records, each u32 BE length · bytes:
//!           the server's reply to the challenge, then messages to receive
//!   stdout: the challenge, a push, a fetch (each u32 BE length · bytes), then a byte
//!           per received message: 1 delivered, 0 rejected, 2 waiting
//! ```

#![forbid(unsafe_code)]

use std::io::{Read, Write};

use bijou_proto::time::Now;
use bijou_wasm_client::{connect, ClientError};
use bytes::Bytes;

fn take<const N: usize>(input: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = input.split_first_chunk::<N>()?;
    *input = rest;
    Some(*head)
}

fn record(input: &mut &[u8]) -> Option<Bytes> {
    let len = usize::try_from(u32::from_be_bytes(take::<4>(input)?)).ok()?;
    let (bytes, rest) = input.split_at_checked(len)?;
    *input = rest;
    Some(Bytes::copy_from_slice(bytes))
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn run(mut input: &[u8], out: &mut Vec<u8>) -> Result<(), ClientError> {
    let (Some(key), Some(server), Some(now), Some(seed)) = (
        take::<32>(&mut input),
        take::<32>(&mut input),
        take::<8>(&mut input),
        take::<32>(&mut input),
    ) else {
        return Ok(());
    };
    let now = Now::from_secs(u64::from_be_bytes(now));
    let (handshaking, challenge) = connect(key, server, now, seed)?;
    put(out, &challenge);
    let Some(reply) = record(&mut input) else {
        return Ok(());
    };
    let mut client = handshaking.finish(reply)?;
    put(out, &client.push(key, seed, &key, now)?.1);
    put(out, &client.fetch(key, now)?.1);
    while let Some(message) = record(&mut input) {
        out.push(match client.receive(message, now)? {
            Some(received) if received.result.is_ok() => 1,
            Some(_) => 0,
            None => 2,
        });
        while let Some(done) = client.completed() {
            out.push(if done.result.is_ok() { 3 } else { 4 });
        }
    }
    Ok(())
}

fn main() -> Result<(), ClientError> {
    let mut input = Vec::new();
    if std::io::stdin().read_to_end(&mut input).is_err() {
        return Ok(());
    }
    let mut out = Vec::new();
    let result = run(&input, &mut out);
    // Nowhere to report a failed write on this target: the result is the
    // client's.
    let _ = std::io::stdout().write_all(&out);
    result
}
