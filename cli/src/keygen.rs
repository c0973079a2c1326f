//! `bijou keygen`: a new Ed25519 key from the operating system's
//! randomness, written as a key file; the peer id on stdout.

use std::path::{Path, PathBuf};

use bijou_frame::signing::ed25519_dalek::SigningKey;
use bijou_frame::signing::key_file::{
    generate, read_key_file, write_key_file, KeyFileError, KeyForm,
};
use bijou_frame::signing::Identity;

use crate::exit::Failure;

/// Make a new signing key and write it to a key file.
///
/// The file holds the secret 32-byte Ed25519 seed, labelled, with the
/// public peer id beside it, readable by its owner only:
///   bijou-secret-key v1
///   seed <64 hex digits>
///   peer-id <64 hex digits>
/// With --bare-hex it holds the seed's 64 hex digits alone, the form
/// `subduction_cli --key-file` reads (bijou reads both). An existing file
/// is never overwritten. The peer id is printed on stdout: it is public,
/// and never a key file.
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
    /// Write the seed's 64 hex digits alone, as `subduction_cli
    /// --key-file` reads them.
    #[arg(long)]
    pub bare_hex: bool,
}

/// A new key from the operating system's randomness.
pub fn new_key() -> Result<SigningKey, Failure> {
    generate().map_err(Failure::input)
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let key = new_key()?;
    let form = if args.bare_hex {
        KeyForm::BareHex
    } else {
        KeyForm::Labelled
    };
    write_key_file(&args.out, &key, form).map_err(|e| {
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

/// Reads the key file of a `--key` flag: a missing file points to
/// `bijou keygen`, and a bare 64-hex-digit file (which a public peer id
/// looks like) is read with a warning on stderr.
pub fn read_key(path: &Path) -> Result<SigningKey, Failure> {
    let (key, form) = read_key_file(path).map_err(|e| match &e {
        KeyFileError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            Failure::input(format!(
                "{e}; make a key with `bijou keygen --out {}`",
                path.display()
            ))
        }
        _ => Failure::input(e),
    })?;
    if form == KeyForm::BareHex {
        eprintln!(
            "warning: key file {} holds 64 hex digits alone, as a peer id (a public key) does: \
             if it is a peer id, this signs as another identity, {}. `bijou keygen` writes labelled key files",
            path.display(),
            key.peer_id()
        );
    }
    Ok(key)
}
