//! `bijou blob sign` / `bijou blob verify`: a signed, content-addressed
//! statement about a file (`bijou_frame::signing::BlobStatement`: BLAKE3
//! digest and size, signed with Ed25519, checked with `verify_strict`).

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bijou_frame::codec::Wire;
use bijou_frame::signing::Identity;
use bijou_frame::signing::{BlobStatement, Digest, PeerId, Signed};
use indicatif::ProgressBar;

use crate::exit::Failure;

/// Sign a file, or verify a file against its signature.
///
/// A signature file (FILE.sig by default, 133 to 141 bytes) holds one
/// signed statement: "this file has this BLAKE3 digest and size", the
/// signer's public key, and an Ed25519 signature, all canonically encoded
/// (bijou64 size), so the same statement always has the same bytes.
///
/// Example:
///   bijou keygen --out me.key
///   bijou blob sign report.pdf --key me.key        # writes report.pdf.sig
///   bijou blob verify report.pdf                    # reads report.pdf.sig
///   bijou blob verify report.pdf --signer PEER_ID  # and requires that signer
///   cat report.pdf | bijou blob verify - report.pdf.sig
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    Sign(SignArgs),
    Verify(VerifyArgs),
}

/// Sign a file: write a signature file for it.
///
/// Large files are hashed memory-mapped on every core (as b3sum does);
/// `-` reads the file from stdin, streaming.
///
/// Example:
///   bijou blob sign report.pdf --key me.key
///   tar c dir | bijou blob sign - --key me.key --out dir.tar.sig
///
/// Exit codes: 0 signed; 2 a missing or unreadable file or key.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct SignArgs {
    /// The file to sign; `-` reads stdin.
    pub file: PathBuf,
    /// The key file, as `bijou keygen` writes it.
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,
    /// Where to write the signature (default FILE.sig; required for stdin).
    #[arg(long, value_name = "SIG")]
    pub out: Option<PathBuf>,
}

/// Verify a file against its signature file.
///
/// Prints who signed it and the digest. Any changed byte of the file or of
/// the signature, or a signer other than --signer, fails with the reason.
///
/// Example:
///   bijou blob verify report.pdf
///   bijou blob verify report.pdf other.sig --signer 1f2e…(64 hex digits)
///
/// Exit codes: 0 valid; 1 the signature, the file or the signer does not
/// match; 2 a missing or unreadable file, or a malformed signature file.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct VerifyArgs {
    /// The file to check; `-` reads stdin (then SIG is required).
    pub file: PathBuf,
    /// The signature file (default FILE.sig).
    pub sig: Option<PathBuf>,
    /// Require this signer (a peer id: 64 hex digits).
    #[arg(long, value_name = "PEER_ID")]
    pub signer: Option<PeerId>,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    match &args.command {
        Command::Sign(args) => sign(args),
        Command::Verify(args) => verify(args),
    }
}

fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// `FILE.sig`, or the given path; stdin has no default.
fn sig_path(file: &Path, given: Option<&PathBuf>, flag: &str) -> Result<PathBuf, Failure> {
    match given {
        Some(path) => Ok(path.clone()),
        None if is_stdin(file) => Err(Failure::input(format!(
            "reading the file from stdin, the signature file must be named: give {flag}"
        ))),
        None => {
            let mut name = file.as_os_str().to_owned();
            name.push(".sig");
            Ok(PathBuf::from(name))
        }
    }
}

fn sign(args: &SignArgs) -> Result<(), Failure> {
    check_file(&args.file)?;
    let key = crate::keygen::read_key(&args.key)?;
    let out = sig_path(&args.file, args.out.as_ref(), "--out SIG")?;
    let statement = hash(&args.file)?;
    let signed =
        Signed::seal(&key, &statement).map_err(|e| Failure::input(format!("cannot sign: {e}")))?;
    std::fs::write(&out, signed.as_bytes())
        .map_err(|e| Failure::input(format!("cannot write {}: {e}", out.display())))?;
    println!(
        "signed {}: {} B, blake3 {}, by {}; signature in {}",
        args.file.display(),
        statement.size(),
        statement.digest(),
        key.peer_id(),
        out.display()
    );
    Ok(())
}

/// The largest signature file: schema, issuer, digest, a 9-byte bijou64
/// size, signature. Anything longer is refused before it is read whole.
const MAX_SIG_FILE: u64 = BlobStatement::MAX_SIGNED_LEN as u64;

fn verify(args: &VerifyArgs) -> Result<(), Failure> {
    check_file(&args.file)?;
    let sig = sig_path(&args.file, args.sig.as_ref(), "SIG after FILE")?;
    let signed = read_signature(&sig)?;
    let verified = signed.verify_strict().map_err(|e| {
        Failure::check(format!(
            "{}: the signature does not verify ({e}): the signature file was altered, or was not made by `bijou blob sign`",
            sig.display()
        ))
    })?;
    let signer = verified.peer_id();
    if let Some(required) = args.signer {
        if required != signer {
            return Err(Failure::check(format!(
                "{} is signed by {signer}, not by the required --signer {required}",
                args.file.display()
            )));
        }
    }
    let claimed = *verified.payload();
    let actual = hash(&args.file)?;
    claimed.check(&actual).map_err(|e| {
        let (file, sig) = (args.file.display(), sig.display());
        // A signature names no file: the likelier cause first.
        let why = if args.sig.is_some() {
            format!("{sig} was made by {signer} for another file, or {file} changed after it was signed")
        } else {
            format!("{file} changed after it was signed by {signer}, or {sig} was made for another file")
        };
        Failure::check(format!("{file} does not match its signature {sig} ({e}): {why}"))
    })?;
    println!(
        "OK {}: signed by {signer}, blake3 {}, {} B",
        args.file.display(),
        claimed.digest(),
        claimed.size()
    );
    Ok(())
}

fn read_signature(path: &Path) -> Result<Signed<BlobStatement>, Failure> {
    let cannot = |e: std::io::Error| Failure::input(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_SIG_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_SIG_FILE {
        return Err(Failure::input(format!(
            "{} is not a signature file: it is longer than {MAX_SIG_FILE} bytes",
            path.display()
        )));
    }
    Signed::<BlobStatement>::decode(bytes.into()).map_err(|e| {
        Failure::input(format!(
            "{} is not a valid signature file ({e}): truncated, altered, or not made by `bijou blob sign`",
            path.display()
        ))
    })
}

/// The statement for a file (memory-mapped, multi-threaded) or stdin
/// (streamed).
fn hash(path: &Path) -> Result<BlobStatement, Failure> {
    let mut hasher = blake3::Hasher::new();
    let spinner = spinner(path);
    if is_stdin(path) {
        let mut stdin = std::io::stdin().lock();
        hasher
            .update_reader(&mut stdin)
            .map_err(|e| Failure::input(format!("cannot read stdin: {e}")))?;
    } else {
        check_file(path)?;
        hasher
            .update_mmap_rayon(path)
            .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display())))?;
    }
    spinner.finish_and_clear();
    Ok(BlobStatement::new(
        Digest::from_bytes(*hasher.finalize().as_bytes()),
        hasher.count(),
    ))
}

/// A readable file, not a directory (stdin passes).
fn check_file(path: &Path) -> Result<(), Failure> {
    if is_stdin(path) {
        return Ok(());
    }
    let meta = std::fs::metadata(path)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display())))?;
    if meta.is_dir() {
        return Err(Failure::input(format!(
            "{} is a directory: sign or verify a file (for a directory, an archive of it)",
            path.display()
        )));
    }
    Ok(())
}

fn spinner(path: &Path) -> ProgressBar {
    let big = std::fs::metadata(path).is_ok_and(|m| m.len() > 256 << 20);
    if !(big || is_stdin(path)) || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner().with_message(format!("hashing {}", path.display()));
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}
