//! Raising a process's file-descriptor limit (`RLIMIT_NOFILE`) for a
//! crowd of connections: `bijou serve --max-connections` and
//! `bijou load` each raise their soft limit to the hard one and say how
//! many descriptors they need when that is not enough.

/// Descriptors a process needs besides its connections: the listener,
/// standard streams, the runtime's epoll and event descriptors, files.
pub const SPARE: u64 = 64;

/// Raises the soft limit as far as the hard limit allows and returns it.
pub fn raise() -> u64 {
    rlimit::increase_nofile_limit(u64::MAX).unwrap_or_else(|_| current())
}

/// The soft limit now (or a cautious 1,024 where it cannot be read).
pub fn current() -> u64 {
    rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft)
}

/// What to tell a user who asked for `connections` when the limit is
/// `limit`; `what` names the flag or command asking.
pub fn shortage(what: &str, connections: u64, limit: u64) -> String {
    format!(
        "{what} needs about {} file descriptors and this process may open {limit} \
         (RLIMIT_NOFILE, raised to its hard limit): raise the hard limit (`ulimit -Hn`, \
         as root), or ask for at most {}",
        connections.saturating_add(SPARE),
        limit.saturating_sub(SPARE)
    )
}
