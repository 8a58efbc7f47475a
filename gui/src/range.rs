//! Statistics of a selected time range: per slice name (count, time, average) and the
//! change of each counter across it.

use std::collections::HashMap;

use crate::model::{NameId, Timeline, TrackKind};

/// One line of the range table.
#[derive(Clone, Debug, PartialEq)]
pub struct NameStats {
    /// Slice name.
    pub name: NameId,
    /// Slices that overlap the range.
    pub count: u64,
    /// Their time inside the range, ns.
    pub total_ns: i64,
}

impl NameStats {
    /// Average time inside the range, ns.
    pub fn average_ns(&self) -> f64 {
        self.total_ns as f64 / self.count.max(1) as f64
    }
}

/// A counter's value at both ends of the range.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterDelta {
    /// The counter's track.
    pub track: u32,
    /// Value at the start.
    pub at_start: f64,
    /// Value at the end.
    pub at_end: f64,
}

/// Everything the range panel shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RangeStats {
    /// Per name, most time first.
    pub names: Vec<NameStats>,
    /// Per counter track.
    pub counters: Vec<CounterDelta>,
}

/// Computes the statistics of `[start_ns, end_ns]` (ns since the timeline's origin).
pub fn range_stats(timeline: &Timeline, start_ns: f64, end_ns: f64) -> RangeStats {
    let (s, e) = (start_ns.floor() as i64, end_ns.ceil() as i64);
    let mut by_name: HashMap<NameId, (u64, i64)> = HashMap::new();
    let mut counters = Vec::new();
    for (t, track) in timeline.tracks.iter().enumerate() {
        match &track.kind {
            TrackKind::Slices { rows } => {
                for row in rows {
                    let first = row.first_ending_after(s);
                    for i in first..row.len() {
                        if row.start_ns[i] > e {
                            break;
                        }
                        let inside = row.end_ns[i].min(e) - row.start_ns[i].max(s);
                        let entry = by_name.entry(row.name[i]).or_default();
                        entry.0 += 1;
                        entry.1 += inside.max(0);
                    }
                }
            }
            TrackKind::Counter { ts_ns, value, .. } => {
                let at = |t: i64| {
                    let i = ts_ns.partition_point(|&x| x <= t);
                    if i == 0 {
                        0.0
                    } else {
                        value[i - 1]
                    }
                };
                counters.push(CounterDelta {
                    track: t as u32,
                    at_start: at(s),
                    at_end: at(e),
                });
            }
        }
    }
    let mut names: Vec<NameStats> = by_name
        .into_iter()
        .map(|(name, (count, total_ns))| NameStats {
            name,
            count,
            total_ns,
        })
        .collect();
    names.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    RangeStats { names, counters }
}
