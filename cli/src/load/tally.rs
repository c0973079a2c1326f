//! Counting what succeeded and what failed, by short reason.

use std::collections::BTreeMap;

/// Successes, and failures by reason.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub ok: u64,
    pub failed: BTreeMap<&'static str, u64>,
}

impl Tally {
    /// Counts `result`; its value if it succeeded.
    pub fn keep<T>(&mut self, result: Result<T, &'static str>) -> Option<T> {
        match result {
            Ok(value) => {
                self.ok += 1;
                Some(value)
            }
            Err(why) => {
                *self.failed.entry(why).or_default() += 1;
                None
            }
        }
    }

    /// Failures in all.
    pub fn failures(&self) -> u64 {
        self.failed.values().sum()
    }

    /// `ok`, `failed` and `failed_REASON` for each reason, for an event
    /// line.
    pub fn figures(&self) -> Vec<(String, u64)> {
        let mut figures = vec![
            ("ok".to_owned(), self.ok),
            ("failed".to_owned(), self.failures()),
        ];
        figures.extend(
            self.failed
                .iter()
                .map(|(why, n)| (format!("failed_{why}"), *n)),
        );
        figures
    }
}
