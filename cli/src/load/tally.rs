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
                self.fail(why, 1);
                None
            }
        }
    }

    /// Counts `n` failures for `why`.
    pub fn fail(&mut self, why: &'static str, n: u64) {
        *self.failed.entry(why).or_default() += n;
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: Self) {
        self.ok += other.ok;
        for (why, n) in other.failed {
            self.fail(why, n);
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
