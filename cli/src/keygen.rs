//! `bijou keygen`: a new Ed25519 key from the operating system's
//! randomness, written as a key file; the peer id on stdout.

use std::path::PathBuf;

use bijou_frame::signing::key_file::{generate, write_key_file};
use bijou_frame::signing::Identity;

use crate::exit::Failure;

/// Make a new signing key and write it to a key file.
///
/// The file holds the 32-byte Ed25519 seed as 64 hex digits and a newline,
/// the format `subduction_cli --key-file` reads, readable by its owner
/// only. An existing file is never overwritten. The key's peer id (its
/// public key, 64 hex digits) is printed on stdout.
///
/// Example:
///   bijou keygen --out me.key
///   bijou blob sign notes.txt --key me.key
///
/// Exit codes: 0 written; 2 the file exists or cannot be written.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Where to write the key file (must not exist yet).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// A new key from the operating system's randomness.
pub fn new_key() -> Result<bijou_frame::signing::ed25519_dalek::SigningKey, Failure> {
    generate().map_err(Failure::input)
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let key = new_key()?;
    write_key_file(&args.out, &key).map_err(|e| {
        Failure::input(format!(
            "{e}{}",
            if args.out.exists() {
                " (choose another --out; keygen never overwrites a key)"
            } else {
                ""
            }
        ))
    })?;
    println!("{}", key.peer_id());
    Ok(())
}
