//! The analyses. Each takes [`Frames`](crate::Frames) (or one rank's
//! [`Frame`]) and returns a plain, serializable result.

pub mod collectives;
pub mod compile;
pub mod idle_time;
pub mod kernel_breakdown;
pub mod launch_stats;
pub mod memory;
pub mod memory_bw;
pub mod operators;
pub mod overlap;
pub(crate) mod peer_wait;
pub mod queue_length;
pub mod roofline;
pub mod steps;
pub mod stragglers;
pub mod temporal;
pub mod trace_diff;
pub mod transfers;
pub mod utilization;

use crate::frame::{Frame, FrameRow};
use crate::model::FastMap;

/// Rows grouped by an `i64` key (a correlation), each group in the order its rows were
/// added. One map entry per key and one link per row: a trace has about one key per
/// launch, and a vector per key was one allocation per launch.
pub(crate) struct RowGroups<'f> {
    /// Per key: the first and the last row's index in `rows`.
    ends: FastMap<i64, (u32, u32)>,
    /// Each row and the index of the next row of its group (`u32::MAX`: the last).
    rows: Vec<(&'f FrameRow, u32)>,
}

impl<'f> RowGroups<'f> {
    pub(crate) fn new() -> Self {
        RowGroups {
            ends: FastMap::default(),
            rows: Vec::new(),
        }
    }

    /// Adds `row` at the end of `key`'s group.
    pub(crate) fn push(&mut self, key: i64, row: &'f FrameRow) {
        let at = u32::try_from(self.rows.len()).expect("fewer than 2^32 rows");
        self.rows.push((row, u32::MAX));
        match self.ends.get_mut(&key) {
            Some((_, last)) => {
                self.rows[*last as usize].1 = at;
                *last = at;
            }
            None => {
                self.ends.insert(key, (at, at));
            }
        }
    }

    /// The rows of `key`'s group in order; `None` when it has none.
    pub(crate) fn get(&self, key: i64) -> Option<impl Iterator<Item = &'f FrameRow> + '_> {
        let &(first, _) = self.ends.get(&key)?;
        let mut next = first;
        Some(std::iter::from_fn(move || {
            let (row, after) = *self.rows.get(next as usize)?;
            next = after;
            Some(row)
        }))
    }
}

/// HTA's `merge_kernel_intervals`: sort by start; a new group starts when a start is
/// strictly after the running maximum of the previous ends (touching intervals merge);
/// each group is `[min start, max end]`.
pub(crate) fn merge_intervals<'a>(rows: impl Iterator<Item = &'a FrameRow>) -> Vec<(i64, i64)> {
    let mut spans: Vec<(i64, i64)> = rows.map(|r| (r.start_ticks, r.end_ticks)).collect();
    spans.sort_by_key(|s| s.0);
    let mut merged: Vec<(i64, i64)> = Vec::new();
    let mut running_max_end: Option<i64> = None;
    for (start, end) in spans {
        match (merged.last_mut(), running_max_end) {
            (Some(last), Some(max_end)) if start <= max_end => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
        running_max_end = Some(running_max_end.map_or(end, |m| m.max(end)));
    }
    merged
}

/// Σ (end − start) over merged intervals.
pub(crate) fn covered(merged: &[(i64, i64)]) -> i64 {
    merged.iter().map(|(s, e)| e - s).sum()
}

/// Ticks per µs of a frame.
pub(crate) fn ticks_per_us(frame: &Frame<'_>) -> i64 {
    1000 / frame.tick_ns
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::KernelType;

    fn row(start: i64, end: i64) -> FrameRow {
        FrameRow {
            row: 0,
            start_ticks: start,
            end_ticks: end,
            index_correlation: -1,
            iteration: -1,
            is_device: true,
            kernel_type: KernelType::Computation,
        }
    }

    #[test]
    fn touching_intervals_merge() {
        let rows = [row(5, 8), row(0, 3), row(3, 4), row(6, 7), row(9, 10)];
        let merged = merge_intervals(rows.iter());
        assert_eq!(merged, vec![(0, 4), (5, 8), (9, 10)]);
        assert_eq!(covered(&merged), 8);
    }

    #[test]
    fn row_groups_keep_each_group_in_insertion_order() {
        let rows: Vec<FrameRow> = (0..12).map(|i| row(i, i + 1)).collect();
        let keys = [7, 3, 7, -1, 3, 7, 9, 3, 3, -1, 7, 0];
        let mut groups = RowGroups::new();
        for (row, &key) in rows.iter().zip(&keys) {
            groups.push(key, row);
        }
        for key in [7, 3, -1, 9, 0] {
            let want: Vec<i64> = (0..12).filter(|&i| keys[i as usize] == key).collect();
            let got: Vec<i64> = groups.get(key).unwrap().map(|r| r.start_ticks).collect();
            assert_eq!(got, want, "key {key}");
        }
        assert!(groups.get(5).is_none());
    }
}
