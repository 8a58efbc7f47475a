//! The in-memory timeline: tracks of slices in columnar rows, counters, flows.
//!
//! Built once at load ([`build`]), then read-only: frame building ([`crate::frame`]) and
//! the UI only look things up. Every complete (`X`) and instant (`i`) event of a trace
//! becomes a slice of its (file, pid, tid) track; counter (`C`) samples and `[memory]`
//! totals become counter tracks; flow (`s`/`f`) events become [`Flow`]s.

pub mod build;
pub mod lod;
mod names;

pub use names::{FastHasher, FastMap, Names};

/// Index of a name in [`Timeline::names`].
pub type NameId = u32;

/// One loaded trace file (one rank, usually).
#[derive(Clone, Debug, Default)]
pub struct FileInfo {
    /// The file's path as given.
    pub path: std::path::PathBuf,
    /// `distributedInfo.rank`, when the trace has it.
    pub rank: Option<i64>,
    /// Events read.
    pub events: u64,
    /// What went wrong while reading (damage, skipped events), in words.
    pub warnings: Vec<String>,
}

/// Where a slice lives: track, nesting depth (row) and index in that row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SliceRef {
    /// Index in [`Timeline::tracks`].
    pub track: u32,
    /// Nesting depth, 0 at the top.
    pub depth: u16,
    /// Index in the row's columns.
    pub index: u32,
}

/// One nesting level of a track: slices that never overlap, sorted by start (so their
/// ends are sorted too), stored column by column.
#[derive(Clone, Debug, Default)]
pub struct Row {
    /// Start, ns since [`Timeline::origin_ns`].
    pub start_ns: Vec<i64>,
    /// End, ns since [`Timeline::origin_ns`] (`start_ns` for instants).
    pub end_ns: Vec<i64>,
    /// Name.
    pub name: Vec<NameId>,
    /// Category.
    pub category: Vec<NameId>,
    /// Index of the event in its file's `traceEvents`.
    pub event_index: Vec<u64>,
    /// Where the slice's arguments start in [`Track::args`]: chunk index in the high
    /// 32 bits, byte offset in the low 32 (`u64::MAX`: none).
    pub args_at: Vec<u64>,
    /// Level-of-detail pyramid (empty for small rows), see [`lod`].
    pub lod: Vec<lod::LodLevel>,
}

impl Row {
    /// Number of slices.
    pub fn len(&self) -> usize {
        self.start_ns.len()
    }

    /// Whether the row is empty.
    pub fn is_empty(&self) -> bool {
        self.start_ns.is_empty()
    }

    /// First slice whose end is after `t_ns` (or that is an instant at `t_ns`).
    pub fn first_ending_after(&self, t_ns: i64) -> usize {
        self.end_ns.partition_point(|&end| end < t_ns)
    }

    /// First slice that starts at or after `t_ns`.
    pub fn first_starting_at(&self, t_ns: i64) -> usize {
        self.start_ns.partition_point(|&start| start < t_ns)
    }

    /// The slice that contains `t_ns`, if any: at a boundary, the one that starts
    /// there rather than the one that ends there (a flow into a kernel lands on it, not
    /// on the kernel before); an instant or a slice ending exactly at `t_ns` otherwise.
    pub fn at(&self, t_ns: i64) -> Option<usize> {
        let i = self.end_ns.partition_point(|&end| end <= t_ns);
        if i < self.len() && self.start_ns[i] <= t_ns {
            return Some(i);
        }
        (i > 0 && self.end_ns[i - 1] == t_ns).then(|| i - 1)
    }
}

/// What a track shows.
#[derive(Clone, Debug)]
pub enum TrackKind {
    /// Slices in nesting rows.
    Slices {
        /// Rows by depth.
        rows: Vec<Row>,
    },
    /// A counter: samples sorted by time, drawn as an area chart.
    Counter {
        /// Sample time, ns since [`Timeline::origin_ns`].
        ts_ns: Vec<i64>,
        /// Value from that sample on.
        value: Vec<f64>,
        /// Largest value (the chart's full height).
        max: f64,
        /// Largest value of each [`crate::frame::COUNTER_BLOCK`] samples.
        block_max: Vec<f64>,
        /// When the largest value was first reached (the peak marked on the chart).
        peak_ns: i64,
    },
}

/// A timeline track: one thread, queue, engine, DMA queue or counter.
#[derive(Clone, Debug)]
pub struct Track {
    /// Label shown at the left (thread name, `core 0 · Tensor`, `HBM allocated`).
    pub label: String,
    /// Index in [`Timeline::groups`].
    pub group: u32,
    /// Slices or counter samples.
    pub kind: TrackKind,
    /// Arguments of this track's slices, in chunks of about 1 MiB: `key \x1f value
    /// \x1e` records; a slice's arguments start at its `args_at` and end at the next
    /// `\x1d`.
    pub args: Vec<String>,
    /// Flow endpoints on this track, sorted by time: (time, index in [`Timeline::flows`]).
    pub flow_points: Vec<(i64, u32)>,
}

impl Track {
    /// Rows of slices (empty for counters).
    pub fn rows(&self) -> &[Row] {
        match &self.kind {
            TrackKind::Slices { rows } => rows,
            TrackKind::Counter { .. } => &[],
        }
    }

    /// A counter's value at `t_ns` (the last sample at or before it), if it is one.
    pub fn counter_value_at(&self, t_ns: i64) -> Option<f64> {
        match &self.kind {
            TrackKind::Counter { ts_ns, value, .. } => {
                let i = ts_ns.partition_point(|&t| t <= t_ns);
                Some(if i == 0 { 0.0 } else { value[i - 1] })
            }
            TrackKind::Slices { .. } => None,
        }
    }

    /// Number of slices (or samples).
    pub fn len(&self) -> usize {
        match &self.kind {
            TrackKind::Slices { rows } => rows.iter().map(Row::len).sum(),
            TrackKind::Counter { ts_ns, .. } => ts_ns.len(),
        }
    }

    /// Whether the track holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The arguments of a slice as (key, value) pairs, in trace order.
    pub fn slice_args(&self, args_at: u64) -> Vec<(&str, &str)> {
        if args_at == u64::MAX {
            return Vec::new();
        }
        let chunk = (args_at >> 32) as usize;
        let offset = (args_at & u64::from(u32::MAX)) as usize;
        let Some(rest) = self.args.get(chunk).and_then(|c| c.get(offset..)) else {
            return Vec::new();
        };
        let record = rest.split('\x1d').next().unwrap_or("");
        record
            .split('\x1e')
            .filter(|kv| !kv.is_empty())
            .map(|kv| kv.split_once('\x1f').unwrap_or((kv, "")))
            .collect()
    }
}

/// A group of tracks: one process of one file (rank).
#[derive(Clone, Debug)]
pub struct Group {
    /// Label (`rank 0 · python (pid 4242)`, `rank 1 · neuron device 0`).
    pub label: String,
    /// Index in [`Timeline::files`].
    pub file: u32,
    /// Tracks of the group, in display order.
    pub tracks: Vec<u32>,
    /// Whether the group starts collapsed (large groups such as 512 DMA queues).
    pub collapsed: bool,
}

/// A flow arrow (launch → kernel, forward → backward).
#[derive(Clone, Debug, PartialEq)]
pub struct Flow {
    /// Flow category (`ac2g`, `fwdbwd`).
    pub category: NameId,
    /// Where it starts: track and time.
    pub from: (u32, i64),
    /// Where it ends: track and time.
    pub to: (u32, i64),
}

/// Everything the viewer shows, for all files on one time axis.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Interned names and categories.
    pub names: Names,
    /// Files, in the order given.
    pub files: Vec<FileInfo>,
    /// Groups in display order.
    pub groups: Vec<Group>,
    /// All tracks.
    pub tracks: Vec<Track>,
    /// Flows matched within each file.
    pub flows: Vec<Flow>,
    /// Absolute time (ns since the Unix epoch) of time 0: the earliest event of all files.
    pub origin_ns: i64,
    /// End of the last event, ns since `origin_ns`.
    pub end_ns: i64,
    /// Slices in all tracks.
    pub slice_count: u64,
}

impl Timeline {
    /// The columns of one slice.
    pub fn row(&self, slice: SliceRef) -> &Row {
        &self.tracks[slice.track as usize].rows()[slice.depth as usize]
    }

    /// Start and end of a slice, ns since `origin_ns`.
    pub fn span(&self, slice: SliceRef) -> (i64, i64) {
        let row = self.row(slice);
        let i = slice.index as usize;
        (row.start_ns[i], row.end_ns[i])
    }

    /// Name of a slice.
    pub fn slice_name(&self, slice: SliceRef) -> &str {
        self.names.get(self.row(slice).name[slice.index as usize])
    }

    /// Time of a slice not covered by its children (rows one deeper inside its span).
    pub fn self_time_ns(&self, slice: SliceRef) -> i64 {
        let (start, end) = self.span(slice);
        let children: i64 = self
            .children(slice)
            .iter()
            .map(|c| {
                let (s, e) = self.span(*c);
                e.min(end) - s.max(start)
            })
            .sum();
        (end - start - children).max(0)
    }

    /// The innermost slice one level up that contains this one's start.
    pub fn parent(&self, slice: SliceRef) -> Option<SliceRef> {
        let depth = slice.depth.checked_sub(1)?;
        let (start, _) = self.span(slice);
        let track = &self.tracks[slice.track as usize];
        let index = track.rows()[depth as usize].at(start)?;
        Some(SliceRef {
            track: slice.track,
            depth,
            index: index as u32,
        })
    }

    /// Slices one level down that start inside this one.
    pub fn children(&self, slice: SliceRef) -> Vec<SliceRef> {
        let (start, end) = self.span(slice);
        let track = &self.tracks[slice.track as usize];
        let Some(row) = track.rows().get(slice.depth as usize + 1) else {
            return Vec::new();
        };
        let first = row.first_starting_at(start);
        (first..row.len())
            .take_while(|&i| row.start_ns[i] < end || (row.start_ns[i] == start && end == start))
            .map(|i| SliceRef {
                track: slice.track,
                depth: slice.depth + 1,
                index: i as u32,
            })
            .collect()
    }

    /// The innermost slice of `track` containing `t_ns`.
    pub fn innermost_at(&self, track: u32, t_ns: i64) -> Option<SliceRef> {
        let rows = self.tracks.get(track as usize)?.rows();
        // Outer to inner: the first depth with no slice there ends the descent.
        let mut found = None;
        for (depth, row) in rows.iter().enumerate() {
            match row.at(t_ns) {
                Some(index) => {
                    found = Some(SliceRef {
                        track,
                        depth: depth as u16,
                        index: index as u32,
                    })
                }
                None if found.is_some() => break,
                None => {}
            }
        }
        found
    }

    /// Flows with an endpoint inside a slice: (flow index, whether the slice is its start).
    pub fn flows_of(&self, slice: SliceRef) -> Vec<(u32, bool)> {
        let (start, end) = self.span(slice);
        let track = &self.tracks[slice.track as usize];
        let first = track.flow_points.partition_point(|(t, _)| *t < start);
        track.flow_points[first..]
            .iter()
            .take_while(|(t, _)| *t <= end)
            .filter(|(t, _)| self.innermost_at(slice.track, *t) == Some(slice))
            .map(|&(_, flow)| {
                let f = &self.flows[flow as usize];
                let outgoing = f.from.0 == slice.track && (start..=end).contains(&f.from.1);
                (flow, outgoing)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_on_a_boundary_belongs_to_the_slice_that_starts_there() {
        let row = Row {
            start_ns: vec![0, 10, 20, 30],
            end_ns: vec![10, 20, 20, 40],
            ..Row::default()
        };
        assert_eq!(row.at(10), Some(1));
        assert_eq!(row.at(5), Some(0));
        assert_eq!(row.at(20), Some(2), "the instant at 20");
        assert_eq!(row.at(25), None);
        assert_eq!(row.at(40), Some(3), "the end of the last slice");
    }
}
