//! What to draw, computed without a window: the viewport's time range, the vertical
//! layout of groups and tracks, and the shapes of one frame.
//!
//! Level of detail is per pixel column, so a frame costs O(pixels × log slices), never
//! O(slices): in each row (slices that never overlap, sorted by start and so by end) a
//! slice at least [`MIN_SLICE_PX`] wide is drawn as itself; smaller ones that start in
//! the same pixel column are found with one binary search and drawn as one summary block
//! that carries their count, and touching blocks are joined. A counter track gets at
//! most one bar per pixel column (the largest value in it).

use crate::model::{SliceRef, Timeline, TrackKind};

/// Slices narrower than this many pixels are merged into summary blocks.
pub const MIN_SLICE_PX: f32 = 2.0;
/// Height of one nesting row.
pub const ROW_HEIGHT: f32 = 18.0;
/// Height of a group header.
pub const HEADER_HEIGHT: f32 = 22.0;
/// Height of a counter track.
pub const COUNTER_HEIGHT: f32 = 36.0;
/// Space below each track.
pub const TRACK_GAP: f32 = 4.0;

/// The visible time range, ns since [`Timeline::origin_ns`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viewport {
    /// Left edge.
    pub start_ns: f64,
    /// Right edge.
    pub end_ns: f64,
}

impl Viewport {
    /// The whole timeline, with 2 % room on each side.
    pub fn whole(timeline: &Timeline) -> Self {
        let span = (timeline.end_ns.max(1)) as f64;
        Viewport {
            start_ns: -0.02 * span,
            end_ns: 1.02 * span,
        }
    }

    /// Visible duration in ns.
    pub fn span_ns(&self) -> f64 {
        self.end_ns - self.start_ns
    }

    /// x (pixels from the left edge) of time `t_ns` in a view `width` pixels wide.
    pub fn x_of(&self, t_ns: f64, width: f32) -> f32 {
        ((t_ns - self.start_ns) / self.span_ns() * width as f64) as f32
    }

    /// Time at `x` pixels from the left edge.
    pub fn t_of(&self, x: f32, width: f32) -> f64 {
        self.start_ns + x as f64 / width.max(1.0) as f64 * self.span_ns()
    }

    /// Zooms by `factor` (< 1 zooms in) keeping time `around_ns` where it is on screen.
    /// The span stays between 10 ns and 1000 × `max_span_ns`.
    pub fn zoom(&mut self, factor: f64, around_ns: f64, max_span_ns: f64) {
        let span = (self.span_ns() * factor).clamp(10.0, max_span_ns.max(10.0) * 1000.0);
        let left_share = (around_ns - self.start_ns) / self.span_ns();
        self.start_ns = around_ns - left_share * span;
        self.end_ns = self.start_ns + span;
    }

    /// Moves by `dt_ns`.
    pub fn pan(&mut self, dt_ns: f64) {
        self.start_ns += dt_ns;
        self.end_ns += dt_ns;
    }

    /// Shows `[start_ns, end_ns]` with 5 % room on each side.
    pub fn focus(&mut self, start_ns: f64, end_ns: f64) {
        let span = (end_ns - start_ns).max(100.0);
        self.start_ns = start_ns - 0.05 * span;
        self.end_ns = start_ns + 1.05 * span;
    }
}

/// Where one track sits vertically.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrackPlace {
    /// Index in [`Timeline::tracks`].
    pub track: u32,
    /// Top, pixels from the top of the content.
    pub top: f32,
    /// Height.
    pub height: f32,
}

/// Where one group header sits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupPlace {
    /// Index in [`Timeline::groups`].
    pub group: u32,
    /// Top, pixels from the top of the content.
    pub top: f32,
}

/// The vertical layout: group headers, then each expanded group's tracks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layout {
    /// Headers, top to bottom.
    pub groups: Vec<GroupPlace>,
    /// Tracks, top to bottom.
    pub tracks: Vec<TrackPlace>,
    /// Total height.
    pub height: f32,
}

impl Layout {
    /// Lays out all groups; `collapsed[g]` hides group `g`'s tracks.
    pub fn new(timeline: &Timeline, collapsed: &[bool]) -> Self {
        let mut layout = Layout::default();
        let mut y = 0.0;
        for (g, group) in timeline.groups.iter().enumerate() {
            layout.groups.push(GroupPlace {
                group: g as u32,
                top: y,
            });
            y += HEADER_HEIGHT;
            if collapsed.get(g).copied().unwrap_or(false) {
                continue;
            }
            for &t in &group.tracks {
                let height = match &timeline.tracks[t as usize].kind {
                    TrackKind::Slices { rows } => rows.len().max(1) as f32 * ROW_HEIGHT,
                    TrackKind::Counter { .. } => COUNTER_HEIGHT,
                };
                layout.tracks.push(TrackPlace {
                    track: t,
                    top: y,
                    height,
                });
                y += height + TRACK_GAP;
            }
        }
        layout.height = y;
        layout
    }

    /// The track (and nesting depth, for slice tracks) at content height `y`.
    pub fn track_at(&self, y: f32) -> Option<(TrackPlace, u16)> {
        let i = self.tracks.partition_point(|p| p.top + p.height <= y);
        let place = *self.tracks.get(i)?;
        (y >= place.top).then(|| (place, ((y - place.top) / ROW_HEIGHT) as u16))
    }

    /// The place of a track, when its group is expanded.
    pub fn place_of(&self, track: u32) -> Option<TrackPlace> {
        self.tracks.iter().find(|p| p.track == track).copied()
    }
}

/// One thing to draw. x in pixels from the view's left edge; y from the content's top.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// A slice wide enough to be drawn as itself.
    Slice {
        /// Which slice.
        slice: SliceRef,
        /// Left edge (may be negative: clipped by the painter).
        x0: f32,
        /// Right edge.
        x1: f32,
        /// Top.
        y: f32,
    },
    /// Several slices of one row too small to draw, as one block.
    Merged {
        /// The first slice of the block.
        first: SliceRef,
        /// How many slices the block stands for.
        count: u32,
        /// Left edge.
        x0: f32,
        /// Right edge.
        x1: f32,
        /// Top.
        y: f32,
    },
    /// One column of a counter's area chart.
    CounterBar {
        /// Which track.
        track: u32,
        /// Left edge.
        x0: f32,
        /// Right edge.
        x1: f32,
        /// Top of the bar.
        y_top: f32,
        /// Bottom of the track.
        y_bottom: f32,
    },
}

/// The shapes of one frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameShapes {
    /// Shapes, track by track.
    pub shapes: Vec<Shape>,
    /// Slices represented (individual plus merged), for tests and the status line.
    pub slices_represented: u64,
}

/// Builds the shapes for the tracks that intersect content rows `[y_min, y_max)` in a
/// view `width` pixels wide.
pub fn build_frame(
    timeline: &Timeline,
    layout: &Layout,
    viewport: &Viewport,
    width: f32,
    y_min: f32,
    y_max: f32,
) -> FrameShapes {
    let mut frame = FrameShapes::default();
    let width = width.max(1.0);
    let t0 = viewport.start_ns.floor() as i64;
    let t1 = viewport.end_ns.ceil() as i64;
    let ns_per_px = viewport.span_ns() / width as f64;
    let first = layout.tracks.partition_point(|p| p.top + p.height < y_min);
    for place in layout.tracks[first..].iter().take_while(|p| p.top < y_max) {
        let track = &timeline.tracks[place.track as usize];
        match &track.kind {
            TrackKind::Slices { rows } => {
                for (depth, row) in rows.iter().enumerate() {
                    let y = place.top + depth as f32 * ROW_HEIGHT;
                    if y + ROW_HEIGHT < y_min || y > y_max {
                        continue;
                    }
                    let make_ref = |index: usize| SliceRef {
                        track: place.track,
                        depth: depth as u16,
                        index: index as u32,
                    };
                    let mut i = row.first_ending_after(t0);
                    let mut last_merged: Option<usize> = None;
                    while i < row.len() && row.start_ns[i] <= t1 {
                        let x0 = viewport.x_of(row.start_ns[i] as f64, width);
                        let x1 = viewport.x_of(row.end_ns[i] as f64, width);
                        if x1 - x0 >= MIN_SLICE_PX {
                            frame.shapes.push(Shape::Slice {
                                slice: make_ref(i),
                                x0,
                                x1,
                                y,
                            });
                            frame.slices_represented += 1;
                            last_merged = None;
                            i += 1;
                            continue;
                        }
                        // Everything starting in this pixel column becomes one block.
                        let column_end = viewport.t_of(x0.floor() + 1.0, width).ceil() as i64;
                        let column_end = column_end.max(row.start_ns[i] + 1);
                        let j = i + 1 + row.start_ns[i + 1..].partition_point(|&s| s < column_end);
                        let count = (j - i) as u32;
                        let block_x1 = viewport.x_of(row.end_ns[j - 1] as f64, width).max(x0 + 1.0);
                        frame.slices_represented += count as u64;
                        let joined = match last_merged.map(|k| &mut frame.shapes[k]) {
                            Some(Shape::Merged {
                                count: c,
                                x1: prev_x1,
                                ..
                            }) if x0 - *prev_x1 < 1.0 => {
                                *c += count;
                                *prev_x1 = prev_x1.max(block_x1);
                                true
                            }
                            _ => false,
                        };
                        if !joined {
                            last_merged = Some(frame.shapes.len());
                            frame.shapes.push(Shape::Merged {
                                first: make_ref(i),
                                count,
                                x0,
                                x1: block_x1,
                                y,
                            });
                        }
                        i = j;
                    }
                }
            }
            TrackKind::Counter {
                ts_ns,
                value,
                max,
                block_max,
            } => {
                if ts_ns.is_empty() || *max <= 0.0 {
                    continue;
                }
                let y_bottom = place.top + place.height;
                let scale = (place.height - 2.0) as f64 / max;
                let mut x = viewport.x_of(ts_ns[0] as f64, width).floor().max(0.0);
                let trace_end = timeline.end_ns as f64;
                while x < width {
                    let col_start = viewport.t_of(x, width);
                    if col_start > trace_end {
                        break;
                    }
                    let col_end = col_start + ns_per_px;
                    // The value holding at the column's start, and every sample inside it.
                    let a = ts_ns.partition_point(|&t| (t as f64) <= col_start);
                    let b = ts_ns.partition_point(|&t| (t as f64) < col_end);
                    let held = if a > 0 { value[a - 1] } else { 0.0 };
                    let v = held.max(range_max(value, block_max, a, b));
                    if v > 0.0 {
                        frame.shapes.push(Shape::CounterBar {
                            track: place.track,
                            x0: x,
                            x1: x + 1.0,
                            y_top: y_bottom - (v * scale) as f32,
                            y_bottom,
                        });
                    }
                    x += 1.0;
                }
            }
        }
    }
    frame
}

/// Samples per entry of a counter's block maxima.
pub const COUNTER_BLOCK: usize = 64;

/// The largest of `value[a..b]`, using `block_max` (the maximum of each
/// [`COUNTER_BLOCK`] samples) for whole blocks; `f64::MIN` when empty.
pub fn range_max(value: &[f64], block_max: &[f64], a: usize, b: usize) -> f64 {
    let mut best = f64::MIN;
    let mut i = a;
    while i < b {
        if i.is_multiple_of(COUNTER_BLOCK) && i + COUNTER_BLOCK <= b {
            best = best.max(block_max[i / COUNTER_BLOCK]);
            i += COUNTER_BLOCK;
        } else {
            best = best.max(value[i]);
            i += 1;
        }
    }
    best
}

/// The slice under `(x, y)` (x pixels from the view's left edge, y from the content's
/// top), allowing [`MIN_SLICE_PX`] of slack so merged and instant slices can be picked.
pub fn hit_test(
    timeline: &Timeline,
    layout: &Layout,
    viewport: &Viewport,
    width: f32,
    x: f32,
    y: f32,
) -> Option<SliceRef> {
    let (place, depth) = layout.track_at(y)?;
    let rows = timeline.tracks[place.track as usize].rows();
    let row = rows.get(depth as usize)?;
    let t = viewport.t_of(x, width);
    let slack = viewport.span_ns() / width.max(1.0) as f64 * MIN_SLICE_PX as f64;
    let from = row.first_ending_after((t - slack).floor() as i64);
    let best = (from..row.len())
        .take_while(|&i| (row.start_ns[i] as f64) <= t + slack)
        .min_by(|&a, &b| {
            let distance = |i: usize| {
                let (s, e) = (row.start_ns[i] as f64, row.end_ns[i] as f64);
                if t < s {
                    s - t
                } else if t > e {
                    t - e
                } else {
                    0.0
                }
            };
            distance(a).total_cmp(&distance(b))
        })?;
    Some(SliceRef {
        track: place.track,
        depth,
        index: best as u32,
    })
}
