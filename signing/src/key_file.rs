//! Signing keys from the operating system's randomness, and key files.
//!
//! A key file holds a secret: the 32-byte Ed25519 seed. `bijou keygen`
//! writes it labelled, with the public peer id beside it, so that neither
//! can be taken for the other:
//!
//! ```text
//!   bijou-secret-key v1\n
//!   seed 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n
//!   peer-id 2c6a8d7b...  (64 hex digits: the seed's public key)\n
//! ```
//!
//! Reading also takes the bare form `subduction_cli --key-file` reads and
//! writes, the seed's 64 hex digits alone ([`KeyForm::BareHex`]). A peer id
//! (a public key) looks exactly like it, so a program should warn when it
//! reads one: a file holding a peer id would sign as another identity. A
//! labelled file whose peer id is not its seed's is refused.
//!
//! ```
//! use bijou_frame::signing::key_file::{generate, read_key_file, write_key_file, KeyForm};
//! use bijou_frame::signing::Identity;
//!
//! let key = generate()?;
//! let path = std::env::temp_dir().join(format!("bijou-doc-{}.key", key.peer_id()));
//! write_key_file(&path, &key, KeyForm::Labelled)?;
//! let (read, form) = read_key_file(&path)?;
//! assert_eq!((read.peer_id(), form), (key.peer_id(), KeyForm::Labelled));
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::string::String;
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;

use crate::hex::{self, ParseHexError};
use crate::{Identity, PeerId};

/// The first line of a labelled key file.
pub const KEY_FILE_HEADER: &str = "bijou-secret-key v1";

/// How a key file writes its seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyForm {
    /// [`KEY_FILE_HEADER`], `seed <hex>`, `peer-id <hex>`: what
    /// `bijou keygen` writes.
    Labelled,
    /// The seed's 64 hex digits alone, as `subduction_cli --key-file`
    /// reads them; a public peer id looks the same.
    BareHex,
}

/// Why a key file's text holds no key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyTextError {
    /// The file is not text (a binary file, or another encoding).
    #[error("it is not text")]
    NotText,
    /// Neither form: not the labelled header, not 64 hex digits alone.
    #[error("it is neither a labelled key file nor 64 hex digits ({0})")]
    Unrecognised(ParseHexError),
    /// A labelled file lacks a line or has a malformed one.
    #[error("line {line} should be `{expected}`")]
    Labelled {
        /// The line, from 1.
        line: usize,
        /// What it should hold.
        expected: &'static str,
    },
    /// A labelled file's peer id is not its seed's public key: the file
    /// was edited or assembled from two keys.
    #[error("its peer id {stated} is not its seed's ({derived})")]
    PeerIdMismatch {
        /// The peer id the file states.
        stated: PeerId,
        /// The seed's.
        derived: PeerId,
    },
}

/// Why a key could not be made, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFileError {
    /// The operating system gave no randomness.
    #[error("could not get randomness from the operating system for a new key: {0}")]
    Random(getrandom::Error),
    /// Reading or writing the file failed.
    #[error("key file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The file holds no key.
    #[error("key file {} holds no key: {source}. A key file is what `bijou keygen --out FILE` writes (`{KEY_FILE_HEADER}`, then `seed` and `peer-id` lines of 64 hex digits), or a seed's 64 hex digits alone (`subduction_cli --key-file`)", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with its text.
        #[source]
        source: KeyTextError,
    },
}

/// A new signing key from the operating system's randomness (no `rand`
/// version to match).
///
/// # Errors
///
/// [`KeyFileError::Random`] if the operating system has no randomness to
/// give.
pub fn generate() -> Result<SigningKey, KeyFileError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(KeyFileError::Random)?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Parses a key file's text, either form (hex digits in either case,
/// surrounding white space ignored), and says which form it was.
///
/// # Errors
///
/// [`KeyTextError`]: neither form, a malformed labelled line, or a peer id
/// that is not the seed's.
pub fn parse_key(text: &str) -> Result<(SigningKey, KeyForm), KeyTextError> {
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    if lines.next() != Some(KEY_FILE_HEADER) {
        let seed = hex32(text.trim()).map_err(KeyTextError::Unrecognised)?;
        return Ok((SigningKey::from_bytes(&seed), KeyForm::BareHex));
    }
    let seed = labelled(lines.next(), 2, "seed ", "seed <64 hex digits>")?;
    let stated = labelled(lines.next(), 3, "peer-id ", "peer-id <64 hex digits>")?;
    if lines.next().is_some() {
        return Err(KeyTextError::Labelled {
            line: 4,
            expected: "nothing after the peer id",
        });
    }
    let stated = PeerId::from_bytes(stated);
    let key = SigningKey::from_bytes(&seed);
    let derived = key.peer_id();
    if stated != derived {
        return Err(KeyTextError::PeerIdMismatch { stated, derived });
    }
    Ok((key, KeyForm::Labelled))
}

/// The 32 bytes of a labelled file's line `line`: `label`, then 64 hex
/// digits.
fn labelled(
    text: Option<&str>,
    line: usize,
    label: &str,
    expected: &'static str,
) -> Result<[u8; 32], KeyTextError> {
    text.and_then(|text| text.strip_prefix(label))
        .and_then(|hex| hex32(hex.trim()).ok())
        .ok_or(KeyTextError::Labelled { line, expected })
}

fn hex32(text: &str) -> Result<[u8; 32], ParseHexError> {
    hex::parse::<32>(&text.to_ascii_lowercase())
}

/// The text of a key file for `key` in `form`.
#[must_use]
pub fn format_key(key: &SigningKey, form: KeyForm) -> String {
    use core::fmt::Write;
    let mut seed = String::with_capacity(64);
    for b in key.to_bytes() {
        // Writing to a String cannot fail.
        let _ = write!(seed, "{b:02x}");
    }
    match form {
        KeyForm::BareHex => alloc::format!("{seed}\n"),
        KeyForm::Labelled => alloc::format!(
            "{KEY_FILE_HEADER}\nseed {seed}\npeer-id {}\n",
            key.peer_id()
        ),
    }
}

/// Reads a key file ([`parse_key`]): the key, and which form held it.
///
/// # Errors
///
/// [`KeyFileError::Io`] or [`KeyFileError::Format`], naming the file.
pub fn read_key_file(path: impl AsRef<Path>) -> Result<(SigningKey, KeyForm), KeyFileError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|source| KeyFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let parsed = core::str::from_utf8(&bytes).map_err(|_| KeyTextError::NotText);
    parsed
        .and_then(parse_key)
        .map_err(|source| KeyFileError::Format {
            path: path.to_path_buf(),
            source,
        })
}

/// Writes `key` in `form` to a new file at `path` ([`format_key`]),
/// readable by its owner only on Unix. An existing file is not
/// overwritten.
///
/// # Errors
///
/// [`KeyFileError::Io`], naming the file (`AlreadyExists` if it exists).
pub fn write_key_file(
    path: impl AsRef<Path>,
    key: &SigningKey,
    form: KeyForm,
) -> Result<(), KeyFileError> {
    use std::io::Write;
    let path = path.as_ref();
    let io = |source| KeyFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(io)?;
    file.write_all(format_key(key, form).as_bytes())
        .map_err(io)?;
    file.sync_all().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Identity;
    use alloc::string::ToString;
    use std::format;

    #[test]
    fn keys_round_trip_through_both_forms_and_bad_text_is_named() {
        let key = SigningKey::from_bytes(&[0xAB; 32]);
        for form in [KeyForm::Labelled, KeyForm::BareHex] {
            let text = format_key(&key, form);
            let (read, read_form) = parse_key(&text).unwrap();
            assert_eq!((read.peer_id(), read_form), (key.peer_id(), form));
            // Hex digits in either case.
            let upper = text.replace(
                &text[text.len() - 65..],
                &text[text.len() - 65..].to_uppercase(),
            );
            assert_eq!(parse_key(&upper).unwrap().0.peer_id(), key.peer_id());
        }
        let bare = format_key(&key, KeyForm::BareHex);
        assert_eq!(bare.len(), 65);
        assert_eq!(
            parse_key("abcd").err(),
            Some(KeyTextError::Unrecognised(ParseHexError::Length {
                expected: 64,
                found: 4
            }))
        );
        let mut bad = bare.trim().to_string();
        bad.replace_range(10..11, "g");
        assert_eq!(
            parse_key(&bad).err(),
            Some(KeyTextError::Unrecognised(ParseHexError::InvalidDigit {
                index: 10,
                found: 'g'
            }))
        );
    }

    #[test]
    fn a_labelled_file_is_refused_if_any_line_is_wrong_or_its_peer_id_is_not_its_seeds() {
        let key = SigningKey::from_bytes(&[0xAB; 32]);
        let other = SigningKey::from_bytes(&[0xCD; 32]);
        let text = format_key(&key, KeyForm::Labelled);
        let lines: alloc::vec::Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        // The peer id of another key: edited, or assembled from two keys.
        let swapped = format!("{}\n{}\npeer-id {}\n", lines[0], lines[1], other.peer_id());
        assert_eq!(
            parse_key(&swapped).err(),
            Some(KeyTextError::PeerIdMismatch {
                stated: other.peer_id(),
                derived: key.peer_id()
            })
        );
        for (broken, line) in [
            (format!("{}\n", lines[0]), 2),
            (format!("{}\n{}\n", lines[0], lines[1]), 3),
            (format!("{}\nseed 00\n{}\n", lines[0], lines[2]), 2),
            (format!("{}\n{}\n{}\n", lines[0], lines[2], lines[1]), 2),
            (format!("{text}more\n"), 4),
        ] {
            assert!(
                matches!(parse_key(&broken), Err(KeyTextError::Labelled { line: l, .. }) if l == line),
                "{broken:?}"
            );
        }
    }

    #[test]
    fn a_file_that_is_not_text_says_so_and_what_a_key_file_is() {
        let path = std::env::temp_dir().join(format!("bijou-key-binary-{}", std::process::id()));
        std::fs::write(&path, [0xFFu8, 0xFE, 0x00, 0x80]).unwrap();
        let err = read_key_file(&path).unwrap_err();
        assert!(matches!(
            err,
            KeyFileError::Format {
                source: KeyTextError::NotText,
                ..
            }
        ));
        let said = err.to_string();
        assert!(said.contains("it is not text"), "{said}");
        assert!(said.contains("bijou keygen --out FILE"), "{said}");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn generated_keys_differ_and_files_are_not_overwritten() {
        let (a, b) = (generate().unwrap(), generate().unwrap());
        assert_ne!(a.to_bytes(), b.to_bytes());
        let path = std::env::temp_dir().join(format!("bijou-key-test-{}", a.peer_id()));
        write_key_file(&path, &a, KeyForm::Labelled).unwrap();
        assert!(matches!(
            write_key_file(&path, &b, KeyForm::Labelled),
            Err(KeyFileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists
        ));
        let (read, form) = read_key_file(&path).unwrap();
        assert_eq!((read.to_bytes(), form), (a.to_bytes(), KeyForm::Labelled));
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(read_key_file(&path), Err(KeyFileError::Io { .. })));
    }
}
