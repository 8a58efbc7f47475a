//! The waiting part of a step's exposed communication: [`StepSplit::peer_wait_us`], the
//! time of the step's exposed communication (from the step split's sweep) during which
//! the rank's collectives waited for a late peer (from the collectives matched across
//! ranks, [`crate::analyses::collectives::Matcher::peer_waits`]).

use std::collections::BTreeMap;

use crate::analyses::steps::{Exposed, StepSplit};

/// Sets each step's `peer_wait_us` from its exposed communication (`exposed[i]` is
/// `steps[i]`'s) and its rank's waits for peers (disjoint ns intervals in order, by
/// rank, as `Matcher::peer_waits` gives them).
pub(crate) fn fill(
    steps: &mut [StepSplit],
    exposed: &[Exposed],
    waits: &BTreeMap<i64, Vec<(i64, i64)>>,
) {
    for (step, exposed) in steps.iter_mut().zip(exposed) {
        let waited_ns = waits.get(&step.rank).map_or(0, |w| overlap_ns(exposed, w));
        step.peer_wait_us = waited_ns as f64 / 1000.0;
    }
}

/// The union of intervals sorted by start, as disjoint intervals in order.
pub(crate) fn union(sorted: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(sorted.len());
    for &(s, e) in sorted {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The length of the intersection of two lists of disjoint intervals in order.
pub(crate) fn overlap_ns(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (s, e) = (a[i].0.max(b[j].0), a[i].1.min(b[j].1));
        total += (e - s).max(0);
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_waits_count_once_and_only_where_communication_is_exposed() {
        let waits = union(&[(0, 10), (5, 20), (30, 40)]);
        assert_eq!(waits, vec![(0, 20), (30, 40)]);
        // Exposed communication [8, 12) and [18, 35): 4 + 2 + 5 ns of waiting.
        assert_eq!(overlap_ns(&[(8, 12), (18, 35)], &waits), 11);
        assert_eq!(overlap_ns(&[(20, 30)], &waits), 0);
    }
}
