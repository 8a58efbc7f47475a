//! A short, fixed-capacity history of samples for sparklines.

use std::collections::VecDeque;

/// Samples kept per series (at a 1 s period: five minutes).
pub const HISTORY_LEN: usize = 300;

/// The most recent samples of one series, oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    samples: VecDeque<f64>,
}

impl History {
    /// Appends a sample, dropping the oldest past [`HISTORY_LEN`].
    pub fn push(&mut self, value: f64) {
        if self.samples.len() == HISTORY_LEN {
            self.samples.pop_front();
        }
        self.samples.push_back(value);
    }

    /// The latest sample.
    pub fn last(&self) -> Option<f64> {
        self.samples.back().copied()
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The last `n` samples (fewer if not that many), oldest first.
    pub fn tail(&self, n: usize) -> impl Iterator<Item = f64> + '_ {
        self.samples
            .iter()
            .skip(self.samples.len().saturating_sub(n))
            .copied()
    }

    /// Largest sample.
    pub fn max(&self) -> Option<f64> {
        self.samples.iter().copied().reduce(f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recent_samples() {
        let mut h = History::default();
        for i in 0..HISTORY_LEN + 5 {
            h.push(i as f64);
        }
        assert_eq!(h.len(), HISTORY_LEN);
        assert_eq!(h.tail(2).collect::<Vec<_>>(), [303.0, 304.0]);
    }
}
