//! The figures the reports print: round-trip percentiles, durations in
//! milliseconds, short peer ids.

use std::time::Duration;

use bijou_frame::signing::PeerId;

/// The `q` quantile (0.0-1.0, nearest rank) of `sorted` in milliseconds
/// with two decimals, or `-` when there is nothing to rank.
///
/// ```text
///   [1 ms, 2 ms, 3 ms], 0.5  ->  "2.00 ms"
/// ```
pub fn percentile_ms(sorted: &[Duration], q: f64) -> String {
    let idx = (sorted.len().saturating_sub(1) as f64 * q).round() as usize;
    sorted.get(idx).map_or("-".to_owned(), |d| {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    })
}

/// A duration in milliseconds, for the report.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A peer id's first 8 hex digits, as the reports name peers.
pub fn short(peer: PeerId) -> String {
    peer.to_string().chars().take(8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_in_milliseconds_and_a_dash_for_nothing() {
        let ms = |n| Duration::from_millis(n);
        let sorted = [ms(1), ms(2), ms(3), ms(4), ms(100)];
        assert_eq!(percentile_ms(&sorted, 0.5), "3.00 ms");
        assert_eq!(percentile_ms(&sorted, 0.99), "100.00 ms");
        assert_eq!(percentile_ms(&sorted, 0.0), "1.00 ms");
        assert_eq!(percentile_ms(&[], 0.5), "-");
    }
}
