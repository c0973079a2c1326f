//! The one-line figures file a server keeps for `bijou load`
//! (`bijou serve --stats FILE`): `name=value` pairs of whole numbers,
//! separated by spaces, replaced whole every second.
//!
//! ```text
//! pid=4242 heap=183500800 heap_peak=190000000 open=100000 handshakes=100004 refused=0
//! ```
//!
//! The file is written beside itself (`FILE.tmp`) and renamed over, so a
//! reader sees the last whole line or the one before it, never half of
//! one. Names other than `pid` and `heap` are the server's own; a reader
//! keeps what it knows.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// One snapshot of a server's figures, by name.
pub type Figures = BTreeMap<String, u64>;

/// Replaces `path` with `figures` on one line.
pub fn write(path: &Path, figures: &[(&str, u64)]) -> io::Result<()> {
    let line: Vec<String> = figures
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    let tmp = sibling_tmp(path);
    std::fs::write(&tmp, format!("{}\n", line.join(" ")))?;
    std::fs::rename(&tmp, path)
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

fn sibling_tmp(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
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
        assert_eq!(parse("pid=1 heap=x"), Err("heap=x".to_owned()));
        assert_eq!(parse("pid"), Err("pid".to_owned()));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
