//! Placing the slices of one Kineto track (pid, tid) on Perfetto tracks ("lanes").
//!
//! Perfetto has no "complete" event: a slice is a `TYPE_SLICE_BEGIN` and a
//! `TYPE_SLICE_END` on one track, and slices on a track must nest
//! (`shared/reference/perfetto.md`, "Slices"). Kineto's `X` events may overlap without
//! nesting (device work on one stream, async host work); Perfetto's JSON import drops
//! those. Here each slice goes on the first lane where it nests; when none fits, a new
//! lane (an extra track) is opened, so nothing is lost, and the split is counted.
//!
//! Events reach a lane set in time order (see `spill.rs`), longer first on ties. A lane
//! keeps only its stack of open slices' end times and the start of its last slice, so
//! memory is bounded by the nesting depth. End events are written when the next event
//! on the lane starts at or after them, or at the end. An event earlier than a lane's
//! last start (which sorted input never has) never goes on that lane.

/// A slice or instant to place.
#[derive(Debug)]
pub struct Pending {
    /// Start, ns.
    pub ts_ns: i64,
    /// End, ns (`ts_ns` for instants and zero-length slices).
    pub end_ns: i64,
    /// An instant (`TYPE_INSTANT`) rather than a slice.
    pub instant: bool,
    /// The encoded begin or instant event, without its track.
    pub body: Vec<u8>,
}

/// What to write, in order, for one track.
#[derive(Debug)]
pub enum Action {
    /// `TYPE_SLICE_BEGIN` (or `TYPE_INSTANT` when `pending.instant`) on lane `lane`.
    Start {
        /// Lane index (0: the track itself).
        lane: usize,
        /// The event.
        pending: Pending,
    },
    /// `TYPE_SLICE_END` on lane `lane` at `ts_ns`.
    End {
        /// Lane index.
        lane: usize,
        /// End time, ns.
        ts_ns: i64,
    },
}

#[derive(Debug, Default)]
struct Lane {
    open_end_ns: Vec<i64>,
    last_start_ns: i64,
}

/// The lanes of one Kineto track.
#[derive(Debug, Default)]
pub struct LaneSet {
    lanes: Vec<Lane>,
    /// Slices placed on lanes other than the first.
    pub split_slices: u64,
    /// Deepest nesting seen on any lane.
    pub max_depth: usize,
}

impl LaneSet {
    /// Lanes opened so far (at least 1 once anything was placed).
    pub fn lane_count(&self) -> usize {
        self.lanes.len()
    }

    /// Closes every open slice.
    pub fn close(&mut self, out: &mut impl FnMut(Action)) {
        for (index, lane) in self.lanes.iter_mut().enumerate() {
            while let Some(end_ns) = lane.open_end_ns.pop() {
                out(Action::End {
                    lane: index,
                    ts_ns: end_ns,
                });
            }
        }
    }

    /// Places the next event (in time order) on the first lane where it nests.
    pub fn place(&mut self, pending: Pending, out: &mut impl FnMut(Action)) {
        let (ts_ns, end_ns) = (pending.ts_ns, pending.end_ns);
        let mut chosen = None;
        for (index, lane) in self.lanes.iter_mut().enumerate() {
            if lane.last_start_ns > ts_ns {
                continue;
            }
            while let Some(&open_end) = lane.open_end_ns.last() {
                // A slice ending exactly where this one starts is closed first; a
                // zero-length one at the end of its parent stays inside it.
                if open_end < ts_ns || (open_end == ts_ns && end_ns > ts_ns) {
                    lane.open_end_ns.pop();
                    out(Action::End {
                        lane: index,
                        ts_ns: open_end,
                    });
                } else {
                    break;
                }
            }
            if pending.instant || lane.open_end_ns.last().is_none_or(|&top| top >= end_ns) {
                chosen = Some(index);
                break;
            }
        }
        let index = chosen.unwrap_or_else(|| {
            self.lanes.push(Lane {
                open_end_ns: Vec::new(),
                last_start_ns: i64::MIN,
            });
            self.lanes.len() - 1
        });
        let lane = &mut self.lanes[index];
        lane.last_start_ns = ts_ns;
        if !pending.instant {
            lane.open_end_ns.push(end_ns);
            self.max_depth = self.max_depth.max(lane.open_end_ns.len());
            if index > 0 {
                self.split_slices += 1;
            }
        }
        out(Action::Start {
            lane: index,
            pending,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(ts_ns: i64, end_ns: i64) -> Pending {
        Pending {
            ts_ns,
            end_ns,
            instant: false,
            body: Vec::new(),
        }
    }

    fn run(events: Vec<Pending>) -> (Vec<(char, usize, i64)>, u64) {
        let mut set = LaneSet::default();
        let mut log = Vec::new();
        let mut out = |action: Action| match action {
            Action::Start { lane, pending } => log.push(('B', lane, pending.ts_ns)),
            Action::End { lane, ts_ns } => log.push(('E', lane, ts_ns)),
        };
        for event in events {
            set.place(event, &mut out);
        }
        set.close(&mut out);
        (log, set.split_slices)
    }

    #[test]
    fn nested_slices_stay_on_one_lane() {
        let (log, split) = run(vec![slice(10, 40), slice(20, 30), slice(40, 50)]);
        assert_eq!(split, 0);
        let expected = [
            ('B', 0, 10),
            ('B', 0, 20),
            ('E', 0, 30),
            ('E', 0, 40),
            ('B', 0, 40),
            ('E', 0, 50),
        ];
        assert_eq!(log, expected);
    }

    #[test]
    fn partial_overlap_goes_to_a_second_lane() {
        let (log, split) = run(vec![slice(0, 10), slice(5, 15), slice(12, 20)]);
        assert_eq!(split, 1);
        assert_eq!(log.iter().filter(|(_, lane, _)| *lane == 1).count(), 2);
        // The third slice fits lane 0 again once the first ended.
        assert!(log.contains(&('B', 0, 12)));
    }

    #[test]
    fn events_out_of_order_never_break_a_lane() {
        let (log, _) = run(vec![slice(100, 110), slice(0, 5)]);
        assert_eq!(log[1], ('B', 1, 0));
    }
}
