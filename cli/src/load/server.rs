//! What the server costs, read from outside it: its own figures files
//! (`bijou serve --stats`, or any server writing that format), its
//! processes' resident memory and cores from `/proc/PID/status`, and the
//! kernel's memory for TCP sockets (`/proc/net/sockstat` for buffers,
//! `/proc/slabinfo` for the socket objects, where readable). The kernel's
//! figures are the machine's: on loopback both ends of every connection
//! are in them.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::exit::Failure;
use crate::stats_file::{self, Figures};

/// The server's figures, summed over its processes.
#[derive(Debug, Clone, Default)]
pub struct ServerFigures {
    /// Sum of each figure over the processes (`heap`, `open`, ...).
    pub sum: Figures,
    /// Resident memory of the processes, in bytes (`VmRSS`).
    pub rss: u64,
    /// The cores the processes may run on.
    pub cores: BTreeSet<u32>,
    pub processes: usize,
    /// CPU time the processes have used (user + system), in clock ticks
    /// of 10 ms.
    pub cpu_ticks: u64,
}

impl ServerFigures {
    /// One summed figure (0 when no process reports it).
    pub fn get(&self, name: &str) -> u64 {
        self.sum.get(name).copied().unwrap_or(0)
    }
}

/// Reads every figures file in `paths` and their processes' memory and
/// cores.
pub fn read(paths: &[PathBuf]) -> Result<ServerFigures, Failure> {
    let mut out = ServerFigures::default();
    for path in paths {
        let figures = stats_file::read(path).map_err(Failure::input)?;
        if let Some(pid) = figures.get("pid") {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            out.rss += status_field(&status, "VmRSS:").map_or(0, |kib| kib * 1024);
            if let Some(list) = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            {
                out.cores.extend(cpu_list(list.trim()));
            }
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            out.cpu_ticks += cpu_ticks(&stat);
        }
        for (name, value) in figures {
            if name != "pid" {
                *out.sum.entry(name).or_default() += value;
            }
        }
        out.processes += 1;
    }
    Ok(out)
}

/// The kernel's memory for TCP: socket buffers (`sockstat`'s `mem`, in
/// pages) and socket objects (the `TCP` and `TCPv6` slabs), in bytes.
pub fn kernel_tcp_memory() -> (Option<u64>, Option<u64>) {
    let page = 4096;
    let buffers = std::fs::read_to_string("/proc/net/sockstat")
        .ok()
        .and_then(|s| {
            let tcp = s.lines().find(|l| l.starts_with("TCP:"))?;
            let mut words = tcp.split_whitespace();
            while let Some(word) = words.next() {
                if word == "mem" {
                    return words.next()?.parse::<u64>().ok().map(|pages| pages * page);
                }
            }
            None
        });
    let objects = std::fs::read_to_string("/proc/slabinfo").ok().map(|s| {
        s.lines()
            .filter_map(|l| {
                let mut words = l.split_whitespace();
                let name = words.next()?;
                if name != "TCP" && name != "TCPv6" {
                    return None;
                }
                let active: u64 = words.next()?.parse().ok()?;
                let _total = words.next()?;
                let size: u64 = words.next()?.parse().ok()?;
                Some(active * size)
            })
            .sum()
    });
    (buffers, objects)
}

/// User plus system time in a `/proc/PID/stat` line (fields 14 and 15,
/// counted after the parenthesised command name, which may hold spaces).
fn cpu_ticks(stat: &str) -> u64 {
    let Some((_, after_name)) = stat.rsplit_once(')') else {
        return 0;
    };
    // Fields from the third on: state is 3, utime 14, stime 15.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |n: usize| {
        fields
            .get(n - 3)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(14) + field(15)
}

/// A `NAME:  123 kB` line's number.
fn status_field(status: &str, name: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `0-2,5` as its cores.
fn cpu_list(list: &str) -> BTreeSet<u32> {
    let mut cores = BTreeSet::new();
    for part in list.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(lo), Ok(hi)) = (lo.trim().parse::<u32>(), hi.trim().parse::<u32>()) {
            cores.extend(lo..=hi.min(lo.saturating_add(4096)));
        }
    }
    cores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_and_status_fields_parse() {
        assert_eq!(cpu_list("0"), BTreeSet::from([0]));
        assert_eq!(cpu_list("0-2,5"), BTreeSet::from([0, 1, 2, 5]));
        assert_eq!(cpu_list(""), BTreeSet::new());
        let status = "Name:\tbijou\nVmRSS:\t  2048 kB\nThreads:\t3\n";
        assert_eq!(status_field(status, "VmRSS:"), Some(2048));
        assert_eq!(status_field(status, "VmHWM:"), None);
        let stat = "42 (bijou serve (x)) S 1 2 3 4 5 6 7 8 9 10 250 30 0 0";
        assert_eq!(cpu_ticks(stat), 280);
        assert_eq!(cpu_ticks("garbage"), 0);
    }

    #[test]
    fn this_process_reads_as_a_server() {
        let dir = std::env::temp_dir().join(format!("bijou-load-server-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("s.stats");
        let pid = u64::from(std::process::id());
        stats_file::write(&path, &[("pid", pid), ("heap", 100), ("open", 3)]).expect("write");
        let figures = read(&[path.clone(), path]).expect("read");
        assert_eq!(figures.processes, 2);
        assert_eq!(figures.get("heap"), 200, "summed over the files");
        assert!(figures.rss > 0, "this process's VmRSS");
        assert!(!figures.cores.is_empty(), "this process's cores");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
