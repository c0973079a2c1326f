//! The client as a program, so that every part of it is compiled in when
//! it is built for `wasm32-unknown-unknown` (a library's unexported code
//! would be dropped): it reads the server's messages from stdin and
//! writes what the one driver loop did to stdout.
//!
//! ```text
//!   stdin:  key 32 · server 32 · now u64 BE · seed 32 · then the server's messages, each
//!           u32 BE length · bytes (its handshake response first)
//!   stdout: what happened, in order:
//!           'T' · u32 BE length · bytes   a message sent (the challenge, then a push and a fetch,
//!                                         started as the session is established)
//!           'E'                           established
//!           'R' · 1 or 0                  a message received: delivered, or rejected
//!           'C' · 1 or 0                  an operation ended: done, or failed
//!           'X'                           closed (after the last message, the input's end
//!                                         closes the connection)
//!   exit status: 0, or 1 if the client failed (a ClientError) or stdin could not be read
//! ```

#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::process::ExitCode;

use bijou_proto::session::{Event, Output};
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
    out.push(b'T');
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
    let mut now = Now::from_secs(u64::from_be_bytes(now));
    let mut client = connect(key, server, now, seed);
    loop {
        match client.poll(now) {
            Output::Sign(request) => client.sign(&request)?,
            Output::Transmit(bytes) => put(out, &bytes),
            Output::Event(Event::Established(_)) => {
                out.push(b'E');
                client.push(key, seed, &key, now)?;
                client.fetch(key, now)?;
            }
            Output::Event(Event::Received(received)) => {
                out.extend_from_slice(&[b'R', u8::from(received.result.is_ok())]);
            }
            Output::Event(Event::Completed(done)) => {
                out.extend_from_slice(&[b'C', u8::from(done.result.is_ok())]);
            }
            Output::Event(Event::Closed(_)) => {
                out.push(b'X');
                return Ok(());
            }
            Output::Continue => {}
            Output::Wait { read: true, .. } => match record(&mut input) {
                Some(message) => client.receive(message, now)?,
                None => client.handle_close(),
            },
            // The verification budget: time stands still in this program
            // unless the session asks for a later instant.
            Output::Wait {
                read: false,
                until: Some(at),
            } if at > now.monotonic => {
                let later = at.saturating_duration_since(now.monotonic).as_secs();
                now = Now::new(now.unix_secs.saturating_add(later), at);
            }
            Output::Wait { read: false, .. } => return Ok(()),
        }
    }
}

fn main() -> ExitCode {
    let mut input = Vec::new();
    if std::io::stdin().read_to_end(&mut input).is_err() {
        return ExitCode::FAILURE;
    }
    let mut out = Vec::new();
    let result = run(&input, &mut out);
    // Nowhere to report a failed write on this target: the result is the
    // client's.
    let _ = std::io::stdout().write_all(&out);
    // Only a status: formatting the error (`main` returning the `Result`
    // prints it with `Debug`) would compile in the `Debug` code of every
    // error type it holds, 6.5 KiB gzipped of the size this program
    // measures, for a stderr that wasm32-unknown-unknown does not have.
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}
