//! Exit codes and the one-line error every subcommand ends with.

use std::fmt;
use std::process::ExitCode;

/// What a non-zero exit means, the same for every subcommand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 1: the input was read but a check failed: a signature, a digest,
    /// the signer, an echo, a fetched commit.
    CheckFailed = 1,
    /// 2: bad input: arguments, a missing or unreadable file, a key file
    /// or signature file that does not parse, a malformed stream.
    BadInput = 2,
    /// 3: the network or the peer failed: connect, handshake, timeout.
    Network = 3,
}

/// A failed subcommand: its exit code and the line printed on stderr.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub exit: Exit,
    /// What happened and what to try, one line.
    pub message: String,
}

impl Failure {
    /// A check failed (exit 1).
    pub fn check(message: impl fmt::Display) -> Self {
        Self {
            exit: Exit::CheckFailed,
            message: message.to_string(),
        }
    }

    /// Bad input (exit 2).
    pub fn input(message: impl fmt::Display) -> Self {
        Self {
            exit: Exit::BadInput,
            message: message.to_string(),
        }
    }

    /// The network or the peer failed (exit 3).
    pub fn network(message: impl fmt::Display) -> Self {
        Self {
            exit: Exit::Network,
            message: message.to_string(),
        }
    }

    /// Prints `error: …` on stderr and returns the exit code.
    pub fn report(self) -> ExitCode {
        eprintln!("error: {}", self.message);
        ExitCode::from(self.exit as u8)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
