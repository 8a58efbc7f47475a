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
                    row_shapes(&mut frame, row, make_ref, viewport, width, y);
                }
            }
            TrackKind::Counter {
                ts_ns,
                value,
                max,
                block_max,
                ..
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
                        let y_top = y_bottom - (v * scale) as f32;
                        // Columns of equal height make one bar.
                        match frame.shapes.last_mut() {
                            Some(Shape::CounterBar {
                                track,
                                x1,
                                y_top: top,
                                ..
                            }) if *track == place.track && *x1 == x && *top == y_top => {
                                *x1 = x + 1.0;
                            }
                            _ => frame.shapes.push(Shape::CounterBar {
                                track: place.track,
                                x0: x,
                                x1: x + 1.0,
                                y_top,
                                y_bottom,
                            }),
                        }
                    }
                    x += 1.0;
                }
            }
        }
    }
    frame
}

/// Adds a block of `count` slices from `x0` to `x1`, joined to the previous block when
/// they touch (less than a pixel apart).
fn push_merged(
    frame: &mut FrameShapes,
    last_merged: &mut Option<usize>,
    first: SliceRef,
    count: u32,
    x0: f32,
    x1: f32,
    y: f32,
) {
    frame.slices_represented += count as u64;
    if let Some(Shape::Merged {
        count: c,
        x1: prev_x1,
        ..
    }) = last_merged.map(|k| &mut frame.shapes[k])
    {
        if x0 - *prev_x1 < 1.0 {
            *c += count;
            *prev_x1 = prev_x1.max(x1);
            return;
        }
    }
    *last_merged = Some(frame.shapes.len());
    frame.shapes.push(Shape::Merged {
        first,
        count,
        x0,
        x1: x1.max(x0 + 1.0),
        y,
    });
}

/// Draws `slice` as itself when it is at least [`MIN_SLICE_PX`] wide (ending any merged
/// block before it); returns false, drawing nothing, when it is narrower.
#[inline]
fn push_if_wide(
    frame: &mut FrameShapes,
    last_merged: &mut Option<usize>,
    slice: SliceRef,
    x0: f32,
    x1: f32,
    y: f32,
) -> bool {
    if x1 - x0 < MIN_SLICE_PX {
        return false;
    }
    frame.shapes.push(Shape::Slice { slice, x0, x1, y });
    frame.slices_represented += 1;
    *last_merged = None;
    true
}

/// The shapes of one row: from the coarsest pyramid level whose buckets fit in a pixel
/// when there is one, else slice by slice with one search per pixel column.
fn row_shapes(
    frame: &mut FrameShapes,
    row: &crate::model::Row,
    make_ref: impl Fn(usize) -> SliceRef,
    viewport: &Viewport,
    width: f32,
    y: f32,
) {
    let t0 = viewport.start_ns.floor() as i64;
    let t1 = viewport.end_ns.ceil() as i64;
    let ns_per_px = viewport.span_ns() / width as f64;
    let mut last_merged: Option<usize> = None;
    let level = row
        .lod
        .iter()
        .rev()
        .find(|l| l.bucket_ns as f64 <= ns_per_px);
    if let Some(level) = level {
        // Buckets and long slices, both sorted by start (and by end: a row never
        // overlaps itself), merged in start order.
        let mut b = level.end_ns.partition_point(|&e| e < t0);
        let mut l = level.long_start_ns.partition_point(|&s| s < t0);
        if l > 0 && row.end_ns[level.long[l - 1] as usize] >= t0 {
            l -= 1;
        }
        loop {
            let bucket_start = level.start_ns.get(b).copied().filter(|&s| s <= t1);
            let long_start = level.long_start_ns.get(l).copied().filter(|&s| s <= t1);
            match (bucket_start, long_start) {
                (None, None) => break,
                (Some(bs), ls) if ls.is_none_or(|ls| bs < ls) => {
                    let x0 = viewport.x_of(bs as f64, width);
                    let x1 = viewport.x_of(level.end_ns[b] as f64, width);
                    let first = make_ref(level.first[b] as usize);
                    push_merged(frame, &mut last_merged, first, level.count[b], x0, x1, y);
                    b += 1;
                }
                _ => {
                    let i = level.long[l] as usize;
                    let x0 = viewport.x_of(row.start_ns[i] as f64, width);
                    let x1 = viewport.x_of(row.end_ns[i] as f64, width);
                    if !push_if_wide(frame, &mut last_merged, make_ref(i), x0, x1, y) {
                        push_merged(frame, &mut last_merged, make_ref(i), 1, x0, x1, y);
                    }
                    l += 1;
                }
            }
        }
        return;
    }
    let mut i = row.first_ending_after(t0);
    while i < row.len() && row.start_ns[i] <= t1 {
        let x0 = viewport.x_of(row.start_ns[i] as f64, width);
        let x1 = viewport.x_of(row.end_ns[i] as f64, width);
        if push_if_wide(frame, &mut last_merged, make_ref(i), x0, x1, y) {
            i += 1;
            continue;
        }
        // Everything starting in this pixel column becomes one block.
        let column_end = viewport.t_of(x0.floor() + 1.0, width).ceil() as i64;
        let column_end = column_end.max(row.start_ns[i] + 1);
        let j = gallop(&row.start_ns, i + 1, column_end);
        let block_x1 = viewport.x_of(row.end_ns[j - 1] as f64, width);
        push_merged(
            frame,
            &mut last_merged,
            make_ref(i),
            (j - i) as u32,
            x0,
            block_x1,
            y,
        );
        i = j;
    }
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
/// The first index at or after `from` whose value is `>= bound` in the sorted `values`:
/// an exponential search from `from`, then a binary search in the bracket found, so the
/// cost is O(log k) for an answer k places away (pixel columns hold few slices when
/// zoomed in, and the bracket stays in cache).
pub fn gallop(values: &[i64], from: usize, bound: i64) -> usize {
    let n = values.len();
    if from >= n || values[from] >= bound {
        return from.min(n);
    }
    // values[lo] < bound
    let mut lo = from;
    let mut step = 1;
    let hi = loop {
        let probe = lo + step;
        if probe >= n {
            break n;
        }
        if values[probe] >= bound {
            break probe;
        }
        lo = probe;
        step *= 2;
    };
    lo + 1 + values[lo + 1..hi].partition_point(|&v| v < bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::lod::build_levels;
    use crate::model::{Group, Row, Track};

    /// One track of `n` slices of 100 ns every 300 ns, with or without its pyramid.
    fn timeline(n: usize, with_lod: bool) -> Timeline {
        let start_ns: Vec<i64> = (0..n as i64).map(|i| i * 300).collect();
        let end_ns: Vec<i64> = start_ns.iter().map(|s| s + 100).collect();
        let lod = if with_lod {
            build_levels(&start_ns, &end_ns)
        } else {
            Vec::new()
        };
        let row = Row {
            name: vec![1; n],
            category: vec![0; n],
            event_index: (0..n as u64).collect(),
            args_at: vec![u64::MAX; n],
            start_ns,
            end_ns,
            lod,
        };
        let mut t = Timeline {
            end_ns: n as i64 * 300,
            slice_count: n as u64,
            ..Timeline::default()
        };
        t.names.intern("k");
        t.groups.push(Group {
            label: "g".into(),
            file: 0,
            tracks: vec![0],
            collapsed: false,
        });
        t.tracks.push(Track {
            label: "t".into(),
            group: 0,
            kind: TrackKind::Slices { rows: vec![row] },
            args: Vec::new(),
            flow_points: Vec::new(),
        });
        t
    }

    #[test]
    fn a_frame_never_has_more_shapes_than_pixels_allow_and_loses_no_slice() {
        for with_lod in [true, false] {
            let t = timeline(1_000_000, with_lod);
            let layout = Layout::new(&t, &[]);
            let whole = Viewport {
                start_ns: 0.0,
                end_ns: t.end_ns as f64,
            };
            let frame = build_frame(&t, &layout, &whole, 1000.0, 0.0, 100.0);
            assert!(frame.shapes.len() <= 1000, "{} shapes", frame.shapes.len());
            assert_eq!(frame.slices_represented, 1_000_000, "lod {with_lod}");

            // Zoomed in to 100 slices: each is drawn as itself.
            let near = Viewport {
                start_ns: 300_000.0,
                end_ns: 330_000.0 - 1.0,
            };
            let frame = build_frame(&t, &layout, &near, 1000.0, 0.0, 100.0);
            let singles = frame
                .shapes
                .iter()
                .filter(|s| matches!(s, Shape::Slice { .. }))
                .count();
            assert_eq!(singles, 100, "lod {with_lod}");
        }
    }

    #[test]
    fn the_pyramid_and_the_exact_path_agree_on_what_a_pixel_holds() {
        let (a, b) = (timeline(200_000, true), timeline(200_000, false));
        let layout = Layout::new(&a, &[]);
        for (start, end) in [(0.0, 6e7), (1e6, 2e6), (5e5, 5.3e5)] {
            let v = Viewport {
                start_ns: start,
                end_ns: end,
            };
            let fa = build_frame(&a, &layout, &v, 800.0, 0.0, 100.0);
            let fb = build_frame(&b, &layout, &v, 800.0, 0.0, 100.0);
            // The pyramid counts whole buckets (at most a pixel wide) at the two edges.
            let per_px = ((end - start) / 800.0 / 300.0).ceil() as u64 + 1;
            let edge = fa.slices_represented.abs_diff(fb.slices_represented);
            assert!(edge <= 2 * per_px, "{start}..{end}: {edge} slices apart");
            let diff = fa.shapes.len().abs_diff(fb.shapes.len());
            assert!(
                diff <= fb.shapes.len() / 2 + 2,
                "{} vs {}",
                fa.shapes.len(),
                fb.shapes.len()
            );
        }
    }

    #[test]
    fn hit_test_finds_the_slice_under_the_pointer() {
        let t = timeline(10_000, true);
        let layout = Layout::new(&t, &[]);
        let v = Viewport {
            start_ns: 0.0,
            end_ns: 3_000.0,
        };
        // slice 3 is [900, 1000] ns: x 300..333 of 1000 px, row 0 below the header
        let hit = hit_test(&t, &layout, &v, 1000.0, 310.0, HEADER_HEIGHT + 5.0).unwrap();
        assert_eq!(hit.index, 3);
        assert_eq!(
            hit_test(&t, &layout, &v, 1000.0, 310.0, 2.0),
            None,
            "header"
        );
    }

    #[test]
    fn gallop_finds_the_first_value_at_or_above_the_bound() {
        let v: Vec<i64> = (0..1000).map(|i| i * 2).collect();
        for from in [0, 1, 10, 999] {
            for bound in [-1, 0, 1, 7, 500, 1998, 1999, 5000] {
                let expected = from + v[from..].partition_point(|&x| x < bound);
                assert_eq!(
                    gallop(&v, from, bound),
                    expected,
                    "from {from} bound {bound}"
                );
            }
        }
        assert_eq!(gallop(&v, 1000, 5), 1000);
    }
}
