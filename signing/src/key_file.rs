//! Signing keys from the operating system's randomness, and key files:
//! the 32-byte Ed25519 seed as 64 hex digits, the format
//! `subduction_cli --key-file` reads.
//!
//! ```text
//!   key file:  9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n
//!              \____________________ 32-byte seed, hex ____________________/
//! ```
//!
//! ```
//! use bijou_frame::signing::key_file::{generate, read_key_file, write_key_file};
//! use bijou_frame::signing::Identity;
//!
//! let key = generate()?;
//! let path = std::env::temp_dir().join(format!("bijou-doc-{}.key", key.peer_id()));
//! write_key_file(&path, &key)?;
//! assert_eq!(read_key_file(&path)?.peer_id(), key.peer_id());
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::string::String;
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;

use crate::hex::{self, ParseHexError};

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
    /// The file does not hold 64 hex digits.
    #[error("key file {} must hold a 32-byte seed as 64 hex digits (the format `subduction_cli --key-file` reads): {source}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with its text.
        #[source]
        source: ParseHexError,
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

/// Parses a key file's text: 64 hex digits (either case), surrounding
/// white space ignored.
///
/// # Errors
///
/// [`ParseHexError`]: the wrong length or a character that is not a hex
/// digit (its index counts from the first non-blank character).
pub fn parse_key(text: &str) -> Result<SigningKey, ParseHexError> {
    let lower: String = text.trim().to_ascii_lowercase();
    Ok(SigningKey::from_bytes(&hex::parse::<32>(&lower)?))
}

/// The text of a key file for `key`: 64 lower-case hex digits and a
/// newline.
#[must_use]
pub fn format_key(key: &SigningKey) -> String {
    use core::fmt::Write;
    let mut text = String::with_capacity(65);
    for b in key.to_bytes() {
        // Writing to a String cannot fail.
        let _ = write!(text, "{b:02x}");
    }
    text.push('\n');
    text
}

/// Reads a key file ([`parse_key`]).
///
/// # Errors
///
/// [`KeyFileError::Io`] or [`KeyFileError::Format`], naming the file.
pub fn read_key_file(path: impl AsRef<Path>) -> Result<SigningKey, KeyFileError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| KeyFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_key(&text).map_err(|source| KeyFileError::Format {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `key` to a new file at `path` ([`format_key`]), readable by its
/// owner only on Unix. An existing file is not overwritten.
///
/// # Errors
///
/// [`KeyFileError::Io`], naming the file (`AlreadyExists` if it exists).
pub fn write_key_file(path: impl AsRef<Path>, key: &SigningKey) -> Result<(), KeyFileError> {
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
    file.write_all(format_key(key).as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Identity;
    use alloc::string::ToString;
    use std::format;

    #[test]
    fn keys_round_trip_through_text_and_bad_text_is_named() {
        let key = SigningKey::from_bytes(&[0xAB; 32]);
        let text = format_key(&key);
        assert_eq!(text.len(), 65);
        assert_eq!(parse_key(&text).unwrap().peer_id(), key.peer_id());
        assert_eq!(
            parse_key(&text.to_uppercase()).unwrap().peer_id(),
            key.peer_id()
        );
        assert_eq!(
            parse_key("abcd"),
            Err(ParseHexError::Length {
                expected: 64,
                found: 4
            })
        );
        let mut bad = text.trim().to_string();
        bad.replace_range(10..11, "g");
        assert_eq!(
            parse_key(&bad),
            Err(ParseHexError::InvalidDigit {
                index: 10,
                found: 'g'
            })
        );
    }

    #[test]
    fn generated_keys_differ_and_files_are_not_overwritten() {
        let (a, b) = (generate().unwrap(), generate().unwrap());
        assert_ne!(a.to_bytes(), b.to_bytes());
        let path = std::env::temp_dir().join(format!("bijou-key-test-{}", a.peer_id()));
        write_key_file(&path, &a).unwrap();
        assert!(matches!(
            write_key_file(&path, &b),
            Err(KeyFileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists
        ));
        assert_eq!(read_key_file(&path).unwrap().to_bytes(), a.to_bytes());
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(read_key_file(&path), Err(KeyFileError::Io { .. })));
    }
}
