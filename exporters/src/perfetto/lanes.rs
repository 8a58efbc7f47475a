//! Placing the slices of one Kineto track (pid, tid) on Perfetto tracks ("lanes").
//!
//! Perfetto has no "complete" event: a slice is a `TYPE_SLICE_BEGIN` and a
//! `TYPE_SLICE_END` on one track, and slices on a track must nest
//! (`shared/reference/perfetto.md`, "Slices"). Kineto's `X` events may overlap without
//! nesting (device work on one stream, async host work); Perfetto's JSON import drops
//! those. Here each slice goes on the first lane where it nests; when none fits, a new
//! lane (an extra track) is opened, so nothing is lost, and the split is counted.
//!
//! Bounded memory: events of a track arrive roughly in time order but not exactly
//! (Kineto writes some out of order), so they pass through a small reorder buffer (a
//! min-heap of at most `window` events, ordered by start, longer first on ties). A lane
//! keeps only its stack of open slices' end times and the start of its last slice; an
//! event released from the buffer before a lane's last start (further out of order than
//! the window) never goes on that lane. End events are written when the next event on
//! the lane starts at or after them, or at the end.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::proto::TrackEvent;

/// A slice or instant waiting in the reorder buffer.
#[derive(Debug)]
pub struct Pending {
    /// Start, ns.
    pub ts_ns: i64,
    /// End, ns (`ts_ns` for instants and zero-length slices).
    pub end_ns: i64,
    /// Arrival order (ties).
    pub seq: u64,
    /// An instant (`TYPE_INSTANT`) rather than a slice.
    pub instant: bool,
    /// The begin or instant event, without its track.
    pub event: TrackEvent,
}

impl Pending {
    fn key(&self) -> (i64, Reverse<i64>, u64) {
        (self.ts_ns, Reverse(self.end_ns), self.seq)
    }
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// What to write, in order, for one track.
#[derive(Debug)]
pub enum Action {
    /// `TYPE_SLICE_BEGIN` (or `TYPE_INSTANT` when `pending.instant`) on lane `lane`.
    Start {
        /// Lane index (0: the track itself).
        lane: usize,
        /// The event.
        pending: Box<Pending>,
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

/// The reorder buffer and lanes of one Kineto track.
#[derive(Debug, Default)]
pub struct LaneSet {
    buffer: BinaryHeap<Reverse<Pending>>,
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

    /// Adds an event; releases the earliest one when the buffer holds more than `window`.
    pub fn push(&mut self, pending: Pending, window: usize, out: &mut impl FnMut(Action)) {
        self.buffer.push(Reverse(pending));
        while self.buffer.len() > window {
            let Some(Reverse(next)) = self.buffer.pop() else {
                break;
            };
            self.place(next, out);
        }
    }

    /// Releases everything and closes every open slice.
    pub fn flush(&mut self, out: &mut impl FnMut(Action)) {
        while let Some(Reverse(next)) = self.buffer.pop() {
            self.place(next, out);
        }
        for (index, lane) in self.lanes.iter_mut().enumerate() {
            while let Some(end_ns) = lane.open_end_ns.pop() {
                out(Action::End {
                    lane: index,
                    ts_ns: end_ns,
                });
            }
        }
    }

    fn place(&mut self, pending: Pending, out: &mut impl FnMut(Action)) {
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
            pending: Box::new(pending),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(seq: u64, ts_ns: i64, end_ns: i64) -> Pending {
        Pending {
            ts_ns,
            end_ns,
            seq,
            instant: false,
            event: TrackEvent::default(),
        }
    }

    fn run(events: Vec<Pending>, window: usize) -> (Vec<(char, usize, i64)>, u64) {
        let mut set = LaneSet::default();
        let mut log = Vec::new();
        let mut out = |action: Action| match action {
            Action::Start { lane, pending } => log.push(('B', lane, pending.ts_ns)),
            Action::End { lane, ts_ns } => log.push(('E', lane, ts_ns)),
        };
        for event in events {
            set.push(event, window, &mut out);
        }
        set.flush(&mut out);
        (log, set.split_slices)
    }

    #[test]
    fn nested_slices_stay_on_one_lane_even_out_of_order() {
        let (log, split) = run(
            vec![slice(0, 20, 30), slice(1, 10, 40), slice(2, 40, 50)],
            4,
        );
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
        let (log, split) = run(vec![slice(0, 0, 10), slice(1, 5, 15), slice(2, 12, 20)], 1);
        assert_eq!(split, 1);
        assert_eq!(log.iter().filter(|(_, lane, _)| *lane == 1).count(), 2);
        // The third slice fits lane 0 again once the first ended.
        assert!(log.contains(&('B', 0, 12)));
    }

    #[test]
    fn events_later_than_the_window_never_break_a_lane() {
        let (log, _) = run(vec![slice(0, 100, 110), slice(1, 0, 5)], 0);
        assert_eq!(log[1], ('B', 1, 0));
    }
}
