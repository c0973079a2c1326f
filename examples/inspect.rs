//! Decode and check a capture of framed messages through the library's
//! public inspection API, `bijou_frame::inspect`.
//!
//! ```text
//! cargo run -p bijou-cli -- echo --count 3 --capture echo.cap
//! cargo run --example inspect -- echo.cap
//! ```
//!
//! The length prefix (bijou64, LEB128, u32-BE) and hex text are detected;
//! every frame is printed with its offset, prefix, message fields and
//! verdicts (signature, blob digest). `bijou inspect` is the full tool
//! (stdin, `--prefix`/`--hex` to force, hints); this shows the calls.

use std::process::ExitCode;

use bijou_frame::inspect::{self, hex::parse_hex, Status};

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: inspect CAPTURE_FILE");
        return ExitCode::from(2);
    };
    let raw = match std::fs::read(&path) {
        Ok(raw) => raw,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", path.to_string_lossy());
            return ExitCode::from(2);
        }
    };
    // How to read it: raw or hex text, and which length prefix.
    let Some(found) = inspect::detect(&raw) else {
        eprintln!("error: no frame decodes under any prefix, raw or as hex text");
        return ExitCode::from(2);
    };
    let input = if found.hex {
        parse_hex(&raw).unwrap_or_default()
    } else {
        raw
    };
    println!(
        "{} capture, {} length prefix",
        if found.hex { "hex text" } else { "binary" },
        found.prefix
    );
    let mut out = std::io::stdout().lock();
    let summary = match inspect::inspect(&input, found.prefix, &mut out) {
        Ok(summary) => summary,
        Err(_) => return ExitCode::SUCCESS, // stdout closed (piped into `head`)
    };
    println!("{summary}");
    if let Some(error) = &summary.stream_error {
        eprintln!("{error}");
    }
    match summary.status() {
        Status::Clean => ExitCode::SUCCESS,
        Status::BadFrames => ExitCode::from(1),
        Status::BadStream => ExitCode::from(2),
    }
}
