//! The one-line figures file a server keeps for `bijou load`
//! (`bijou serve --stats FILE`): `name=value` pairs of whole numbers,
//! separated by spaces, replaced whole every second.
//!
//! ```text
//! pid=4242 heap=183500800 heap_peak=190000000 open=100000 handshakes=100004 refused=0
//! ```
//!
//! The file is written beside itself (`FILE.PID.tmp`) and renamed over,
//! so a reader sees the last whole line or the one before it, never half
//! of one. Names other than `pid` and `heap` are the server's own; a reader
//! keeps what it knows.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// One snapshot of a server's figures, by name.
pub type Figures = BTreeMap<String, u64>;

/// Replaces `path` with `figures` on one line.
///
/// The line is written to a new file beside it, named for this process
/// (`FILE.PID.tmp`, created only if nothing is there: a link planted
/// under that name is removed, never followed), then renamed over `path`.
pub fn write<N: AsRef<str>>(path: &Path, figures: &[(N, u64)]) -> io::Result<()> {
    use std::io::Write as _;
    let line = pairs(figures);
    let tmp = sibling_tmp(path);
    // Whatever a previous run left there (a file, or a link, which this
    // removes and does not follow).
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    drop(file);
    std::fs::rename(&tmp, path)
}

/// `name=value` pairs separated by spaces: the file's line, and the
/// figures of `bijou load`'s worker events.
pub fn pairs<N: AsRef<str>>(figures: &[(N, u64)]) -> String {
    let pairs: Vec<String> = figures
        .iter()
        .map(|(name, value)| format!("{}={value}", name.as_ref()))
        .collect();
    pairs.join(" ")
}

/// Reads the figures in `path`; an error names the file and what in it
/// did not parse.
pub fn read(path: &Path) -> Result<Figures, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read the server's figures in {}: {e}",
            path.display()
        )
    })?;
    parse(&text).map_err(|bad| {
        format!(
            "{}: {bad:?} is not name=number (a file written by `bijou serve --stats`?)",
            path.display()
        )
    })
}

/// The figures on `text`'s first line; the first pair that is not
/// `name=number` is the error.
pub fn parse(text: &str) -> Result<Figures, String> {
    let line = text.lines().next().unwrap_or_default();
    line.split_whitespace()
        .map(|pair| {
            pair.split_once('=')
                .and_then(|(name, value)| Some((name.to_owned(), value.parse().ok()?)))
                .ok_or_else(|| pair.to_owned())
        })
        .collect()
}

/// `FILE.PID.tmp`: two processes given one path do not share it.
fn sibling_tmp(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    PathBuf::from(tmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_figures_read_back_and_a_bad_pair_is_named() {
        let dir = std::env::temp_dir().join(format!("bijou-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("server.stats");
        write(&path, &[("pid", 7), ("heap", 1 << 20)]).expect("write");
        let figures = read(&path).expect("read");
        assert_eq!(figures.get("pid"), Some(&7));
        assert_eq!(figures.get("heap"), Some(&(1 << 20)));
        assert!(
            !sibling_tmp(&path).exists(),
            "the temporary file is renamed"
        );
        // A link planted where the temporary file goes is removed, and
        // what it points at is untouched.
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").expect("victim");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&victim, sibling_tmp(&path)).expect("symlink");
        write(&path, &[("pid", 8)]).expect("write over a planted link");
        assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "keep");
        assert_eq!(read(&path).expect("read").get("pid"), Some(&8));
        assert_eq!(parse("pid=1 heap=x"), Err("heap=x".to_owned()));
        assert_eq!(parse("pid"), Err("pid".to_owned()));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
