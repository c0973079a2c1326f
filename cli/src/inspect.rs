//! `bijou inspect`: decode and check a capture, frame by frame, through
//! the library's `bijou_frame::inspect`.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use bijou_frame::framing::prefix::PrefixKind;
use bijou_frame::inspect::{self, hex, Detected, Status, Summary};

use crate::exit::Failure;

/// Decode and check a capture of framed messages.
///
/// Prints every frame with its offset, prefix bytes, message type and
/// fields, whether its signature verifies (verify_strict) and whether its
/// blob matches the signed digest. The length prefix (bijou64, leb128,
/// u32-be) and hex text are detected; --prefix and --hex force them.
/// The report goes to stdout, errors and hints to stderr.
///
/// Example:
///   bijou echo --count 2 --blob-size 100 --capture echo.cap
///   bijou inspect echo.cap
///   xxd -p echo.cap | bijou inspect --hex
///
/// Exit codes: 0 every frame decoded and verified; 1 some frame did not;
/// 2 the input is unreadable or the stream itself is malformed.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Capture file; `-` or nothing reads stdin.
    pub file: Option<PathBuf>,
    /// The input is hex text (whitespace ignored), not raw bytes.
    #[arg(long)]
    pub hex: bool,
    /// Length prefix of the frames: bijou64, leb128 or u32-be (detected if
    /// not given).
    #[arg(long)]
    pub prefix: Option<PrefixKind>,
}

/// Reads the capture, prints the report frame by frame, and hints at a
/// better reading when the one used fails.
pub fn run(args: &Args) -> Result<(), Failure> {
    let raw = read_input(args.file.as_ref())?;
    let detected = inspect::detect(&raw);
    let reading = Reading::choose(args, raw, detected.as_ref())?;
    let mut out = std::io::stdout().lock();
    // A closed stdout (piped into `head`) ends the report early: no error.
    let Ok(summary) = inspect::inspect(&reading.input, reading.prefix, &mut out) else {
        return Ok(());
    };
    let _ = writeln!(out, "{summary}");
    drop(out);
    if let Some(error) = &summary.stream_error {
        eprintln!("{error}");
    }
    if summary.status() != Status::Clean {
        reading.print_hint(detected, &summary);
    }
    // The summary is the report's last line: the error line says what
    // failed without repeating it.
    match summary.status() {
        Status::Clean => Ok(()),
        Status::BadFrames => Err(Failure::check(format!(
            "{} frame(s) did not decode or verify; each is marked in the report",
            summary.bad
        ))),
        Status::BadStream => Err(Failure::input(
            "the byte stream breaks where said above; the report stops there",
        )),
    }
}

/// How the input is read: --hex and --prefix where given, else as
/// detected.
struct Reading {
    /// The bytes to inspect (hex text decoded).
    input: Vec<u8>,
    /// Whether the input was hex text.
    hex: bool,
    prefix: PrefixKind,
}

impl Reading {
    /// The reading of `raw`: the flags', else the `detected` one (said on
    /// a terminal).
    fn choose(args: &Args, raw: Vec<u8>, detected: Option<&Detected>) -> Result<Self, Failure> {
        let hex = args.hex || (args.prefix.is_none() && detected.is_some_and(|d| d.hex));
        let input = if hex {
            hex::parse_hex(&raw).map_err(|e| Failure::input(format!("--hex input: {e}")))?
        } else {
            raw
        };
        let prefix = args
            .prefix
            .or_else(|| detected.filter(|d| d.hex == hex).map(|d| d.prefix))
            .unwrap_or_default();
        if args.prefix.is_none() && detected.is_some() && std::io::stderr().is_terminal() {
            eprintln!(
                "(detected: {}{prefix} prefix)",
                if hex { "hex text, " } else { "" }
            );
        }
        Ok(Self { input, hex, prefix })
    }

    /// After a report with problems: the reading `detected` if it decodes
    /// more frames, or that nothing decodes at all.
    fn print_hint(&self, detected: Option<Detected>, summary: &Summary) {
        let is_hex = self.hex;
        if let Some(better) = detected.filter(|d| {
            (d.hex, d.prefix) != (is_hex, self.prefix) && d.summary.good() > summary.good()
        }) {
            eprintln!(
                "hint: this input reads better as {}{} frames ({}): try{} --prefix {}",
                if better.hex { "hex text of " } else { "" },
                better.prefix,
                better.summary,
                if better.hex && !is_hex { " --hex" } else { "" },
                better.prefix,
            );
        } else if summary.good() == 0 {
            eprintln!(
                "hint: no frame decodes under any prefix{}; is this a capture (`bijou echo --capture FILE`)?",
                if is_hex { "" } else { " (nor as hex text)" }
            );
        }
    }
}

fn read_input(file: Option<&PathBuf>) -> Result<Vec<u8>, Failure> {
    match file {
        Some(path) if path.as_os_str() != "-" => std::fs::read(path)
            .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display()))),
        _ => {
            let mut raw = Vec::new();
            std::io::stdin()
                .read_to_end(&mut raw)
                .map_err(|e| Failure::input(format!("cannot read stdin: {e}")))?;
            Ok(raw)
        }
    }
}
