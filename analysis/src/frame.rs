//! A rank's rows as an analysis sees them, after HTA's preprocessing.
//!
//! [`Frames::build`] reproduces what `hta.common.trace.Trace.load_traces` does between
//! parsing and the analyses (HTA's source, `hta/analyzers/` of HolisticTraceAnalysis):
//! 1. times: in [`Mode::HtaCompat`], HTA's rounding to integer µs (see `hta_time`);
//!    in [`Mode::Default`], exact nanoseconds;
//! 2. `index_correlation`: each host row with a `correlation` points at the device row
//!    with the same correlation and back (`transform_correlation_to_index`);
//! 3. `iteration`: host rows take the `ProfilerStep#N` they start in, device rows the
//!    iteration of their launch (`add_iteration`);
//! 4. with ≥ 2 distinct `ProfilerStep#N` names across ranks, host rows from the start of
//!    the last step on are dropped, and device rows whose correlation no kept host row
//!    has (`_filter_irrelevant_gpu_kernels`). In compat mode a device row is kept once
//!    per kept host row of its correlation, as HTA's inner merge does; in the default
//!    mode once (a neuron launch has two runtime rows with its correlation, and
//!    duplicated kernels showed as negative `kernel_wait` gaps of −duration).

mod hta_time;

pub(crate) use hta_time::hta_round_us;

use crate::classify::{self, HtaVersion, KernelType, Mode};
use crate::model::{FastMap, RankTrace, Row, TraceSet};
use crate::stats::NumpySort;

/// One row of a [`Frame`].
#[derive(Clone, Debug, PartialEq)]
pub struct FrameRow {
    /// Index into [`RankTrace::rows`].
    pub row: u32,
    /// Start, in the frame's ticks (see [`Frame::tick_ns`]).
    pub start_ticks: i64,
    /// End, in ticks (can precede the start after HTA's rounding).
    pub end_ticks: i64,
    /// HTA's `index_correlation`: the event index of the linked row, 0 when the
    /// correlation has no partner, -1 without correlation.
    pub index_correlation: i64,
    /// The `ProfilerStep` iteration, -1 when none.
    pub iteration: i64,
    /// Whether the row is device work (compat: `stream != -1`; default: a device
    /// category).
    pub is_device: bool,
    /// The kernel type under the frame's mode.
    pub kernel_type: KernelType,
}

impl FrameRow {
    /// Duration in ticks.
    pub fn dur_ticks(&self) -> i64 {
        self.end_ticks - self.start_ticks
    }
}

/// One rank, preprocessed for one [`Mode`].
#[derive(Clone, Debug)]
pub struct Frame<'t> {
    /// The rank's trace.
    pub trace: &'t RankTrace,
    /// The mode the frame was built for.
    pub mode: Mode,
    /// Which HTA release's rules compat mode follows (unused in the default mode).
    pub hta_version: HtaVersion,
    /// Whose order of equal timestamps HTA's sorts take (see [`NumpySort`]).
    pub numpy_sort: NumpySort,
    /// Nanoseconds per tick: 1000 when times are HTA's rounded µs, else 1.
    pub tick_ns: i64,
    /// Rows after filtering, in HTA's order (kept device rows, then kept host rows).
    pub rows: Vec<FrameRow>,
    /// Whether HTA's last-step filter was applied.
    pub filtered: bool,
}

impl<'t> Frame<'t> {
    /// The model row behind a frame row.
    pub fn model_row(&self, row: &FrameRow) -> &'t Row {
        &self.trace.rows[row.row as usize]
    }

    /// The event name of a frame row.
    pub fn name(&self, row: &FrameRow) -> &'t str {
        let trace: &'t RankTrace = self.trace;
        trace.names.get(trace.rows[row.row as usize].name)
    }

    /// The category of a frame row, as written.
    pub fn category(&self, row: &FrameRow) -> &'t str {
        let trace: &'t RankTrace = self.trace;
        trace.names.get(trace.rows[row.row as usize].category)
    }

    /// A model row's (start, end) in this frame's ticks (the frame's rounding), whether
    /// or not the frame kept it.
    pub(crate) fn ticks_of(&self, row: &Row) -> (i64, i64) {
        times(self.tick_ns == 1000, row.ts_rel_ns, row.dur_ns)
    }

    /// Ticks to µs.
    pub fn us(&self, ticks: i64) -> f64 {
        ticks as f64 * self.tick_ns as f64 / 1000.0
    }

    /// Rows that are device work.
    pub fn device_rows(&self) -> impl Iterator<Item = &FrameRow> {
        self.rows.iter().filter(|r| r.is_device)
    }

    /// The rank.
    pub fn rank(&self) -> i64 {
        self.trace.rank
    }

    /// HTA's `Trace.get_iterations`: the iterations (≥ 0) rows of this frame belong to,
    /// sorted.
    pub fn iterations(&self) -> Vec<i64> {
        let mut iterations: Vec<i64> = self
            .rows
            .iter()
            .map(|r| r.iteration)
            .filter(|&i| i >= 0)
            .collect();
        iterations.sort_unstable();
        iterations.dedup();
        iterations
    }
}

/// Every rank's [`Frame`], plus what HTA derives across ranks.
#[derive(Clone, Debug)]
pub struct Frames<'t> {
    /// One frame per rank, sorted by rank.
    pub ranks: Vec<Frame<'t>>,
    /// HTA's device type of the first rank.
    pub device_type: &'static str,
}

impl<'t> Frames<'t> {
    /// Preprocesses every rank for `mode`, with HTA's last-step filter (what
    /// `TraceAnalysis` does).
    pub fn build(set: &'t TraceSet, mode: Mode) -> Self {
        Self::build_with(set, mode, true)
    }

    /// Preprocesses every rank for `mode`; `last_step_filter: false` is what HTA's
    /// `TraceDiff` sees (`parse_traces` without `align_and_filter_trace`).
    pub fn build_with(set: &'t TraceSet, mode: Mode, last_step_filter: bool) -> Self {
        Self::build_for(set, mode, HtaVersion::default(), last_step_filter)
    }

    /// [`Frames::build_with`] following `hta_version`'s rules in compat mode.
    pub fn build_for(
        set: &'t TraceSet,
        mode: Mode,
        hta_version: HtaVersion,
        last_step_filter: bool,
    ) -> Self {
        let filter = last_step_filter && Self::filters(set, hta_version);
        let (ranks, _) = Self::build_ranks(set, mode, hta_version, filter, false);
        Frames {
            ranks,
            device_type: device_type_of(set),
        }
    }

    /// Both preprocessings at once, sharing the work: with HTA's last-step filter (what
    /// [`Frames::build_for`] gives with `last_step_filter: true`) and without it.
    pub fn build_both(set: &'t TraceSet, mode: Mode, hta_version: HtaVersion) -> (Self, Self) {
        let filter = Self::filters(set, hta_version);
        let (filtered, unfiltered) = Self::build_ranks(set, mode, hta_version, filter, true);
        let device_type = device_type_of(set);
        let unfiltered = unfiltered.unwrap_or_else(|| filtered.clone());
        (
            Frames {
                ranks: filtered,
                device_type,
            },
            Frames {
                ranks: unfiltered,
                device_type,
            },
        )
    }

    /// Whether HTA's last-step filter applies to `set`: ≥ 2 distinct `ProfilerStep#N`
    /// names across ranks.
    fn filters(set: &TraceSet, hta_version: HtaVersion) -> bool {
        last_step_filter_applies(
            set.ranks.iter().flat_map(step_names),
            device_type_of(set),
            hta_version,
        )
    }

    /// Every rank's frame (with the filter when `filter`), and when `unfiltered_too` also
    /// without it. Ranks are independent: built on all cores.
    #[allow(clippy::type_complexity)]
    fn build_ranks(
        set: &'t TraceSet,
        mode: Mode,
        hta_version: HtaVersion,
        filter: bool,
        unfiltered_too: bool,
    ) -> (Vec<Frame<'t>>, Option<Vec<Frame<'t>>>) {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let chunk = set.ranks.len().div_ceil(workers).max(1);
        let built: Vec<(Frame<'t>, Option<Frame<'t>>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = set
                .ranks
                .chunks(chunk)
                .map(|traces| {
                    scope.spawn(move || {
                        traces
                            .iter()
                            .map(|trace| {
                                rank_frames(trace, mode, hta_version, filter, unfiltered_too)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("frame building thread panicked"))
                .collect()
        });
        let unfiltered_built = built.iter().all(|(_, u)| u.is_some()) && !built.is_empty();
        let mut filtered = Vec::with_capacity(built.len());
        let mut unfiltered = Vec::with_capacity(built.len());
        for (f, u) in built {
            filtered.push(f);
            unfiltered.extend(u);
        }
        (filtered, unfiltered_built.then_some(unfiltered))
    }

    /// Sorts equal timestamps in HTA's sorts as numpy's `sort` kernel does (default:
    /// AVX-512, see [`NumpySort`]).
    pub fn with_numpy_sort(mut self, sort: NumpySort) -> Self {
        for frame in &mut self.ranks {
            frame.numpy_sort = sort;
        }
        self
    }

    /// Keeps only rows of iteration `step` (`ProfilerStep#step`): host rows that start in
    /// it and device rows launched from it. Build with `last_step_filter: false` to be
    /// able to select the last step.
    pub fn retain_step(&mut self, step: i64) {
        for frame in &mut self.ranks {
            frame.rows.retain(|r| r.iteration == step);
        }
    }

    /// The frame of `rank`.
    pub fn rank(&self, rank: i64) -> Option<&Frame<'t>> {
        self.ranks.iter().find(|f| f.rank() == rank)
    }
}

/// One rank's frame (with HTA's last-step filter when `filter`), and when
/// `unfiltered_too` and `filter` also the frame without it, from one preprocessing.
pub(crate) fn rank_frames<'t>(
    trace: &'t RankTrace,
    mode: Mode,
    hta_version: HtaVersion,
    filter: bool,
    unfiltered_too: bool,
) -> (Frame<'t>, Option<Frame<'t>>) {
    let prepared = Prepared::new(trace, mode, hta_version);
    let unfiltered = (unfiltered_too && filter).then(|| prepared.frame(false));
    (prepared.frame(filter), unfiltered)
}

/// The distinct `ProfilerStep#N` names of a rank (HTA's symbol pattern).
pub(crate) fn step_names(trace: &RankTrace) -> impl Iterator<Item = &str> {
    trace
        .names
        .iter()
        .filter(|n| step_number(n, false).is_some())
}

/// Whether HTA's last-step filter applies: ≥ 2 distinct `ProfilerStep#N` names over
/// every rank (`step_names`), unless the first rank is an MTIA device under HTA 0.6.
pub(crate) fn last_step_filter_applies<'a>(
    step_names: impl Iterator<Item = &'a str>,
    first_device_type: &str,
    hta_version: HtaVersion,
) -> bool {
    let mut step_names: Vec<&str> = step_names.collect();
    step_names.sort_unstable();
    step_names.dedup();
    // HTA 0.6 filters MTIA traces differently (`filter_mtia_kernels_for_one_rank`);
    // that path is not reproduced, such traces are left unfiltered. HTA 0.5 has no
    // MTIA path: its one filter applies to every device.
    let mtia_06 = first_device_type == "MTIA" && hta_version == HtaVersion::V0_6;
    step_names.len() >= 2 && !mtia_06
}

/// `ProfilerStep#N` → N. Without `lenient_spaces` this is HTA's symbol pattern
/// `^ProfilerStep#(\d+)`; with it, `add_iteration`'s `ProfilerStep\s*#\s*(\d+)`.
pub(crate) fn step_number(name: &str, lenient_spaces: bool) -> Option<i64> {
    let rest = name.strip_prefix("ProfilerStep")?;
    let rest = if lenient_spaces {
        rest.trim_start()
    } else {
        rest
    };
    let rest = rest.strip_prefix('#')?;
    let rest = if lenient_spaces {
        rest.trim_start()
    } else {
        rest
    };
    let digits = &rest[..rest.bytes().take_while(u8::is_ascii_digit).count()];
    digits.parse().ok()
}

fn device_type_of(set: &TraceSet) -> &'static str {
    set.ranks.first().map_or("UNKNOWN GPU", |r| r.device_type())
}

/// What the preprocessing needs to know about each interned string of a rank, computed
/// once per string instead of once per row (names are long CUDA signatures, rows many).
struct NameFacts {
    /// The kernel type of a row with this name under the frame's rules (compat: HTA's
    /// name rules for the chosen release; default: the name rules the category-first
    /// classification falls back to).
    kernel_type: Vec<KernelType>,
    /// `ProfilerStep#N` (HTA's symbol pattern).
    step_strict: Vec<Option<i64>>,
    /// `ProfilerStep # N` (`add_iteration`'s pattern).
    step_lenient: Vec<Option<i64>>,
    /// `Event Sync` / `Context Sync`: device-side rows of HTA's GPU filter.
    is_sync: Vec<bool>,
    /// As a category: device work in the default mode.
    is_device_category: Vec<bool>,
    /// As a category: `cpu_op`.
    is_cpu_op: Vec<bool>,
    /// As a category: `gpu_user_annotation` (a range's device-side copy).
    is_device_annotation: Vec<bool>,
}

impl NameFacts {
    fn new(trace: &RankTrace, mode: Mode, hta_version: HtaVersion) -> Self {
        let n = trace.names.iter().count();
        let mut facts = NameFacts {
            kernel_type: Vec::with_capacity(n),
            step_strict: Vec::with_capacity(n),
            step_lenient: Vec::with_capacity(n),
            is_sync: Vec::with_capacity(n),
            is_device_category: Vec::with_capacity(n),
            is_cpu_op: Vec::with_capacity(n),
            is_device_annotation: Vec::with_capacity(n),
        };
        for text in trace.names.iter() {
            facts.kernel_type.push(match mode {
                Mode::HtaCompat => classify::hta_kernel_type_for(hta_version, text),
                Mode::Default => classify::hta_kernel_type(text),
            });
            facts.step_strict.push(step_number(text, false));
            facts.step_lenient.push(step_number(text, true));
            facts
                .is_sync
                .push(text == "Event Sync" || text == "Context Sync");
            facts
                .is_device_category
                .push(classify::is_device_work_category(text));
            facts.is_cpu_op.push(text == "cpu_op");
            facts
                .is_device_annotation
                .push(text == crate::analyses::steps::DEVICE_ANNOTATION_CATEGORY);
        }
        facts
    }
}

/// One rank's rows with HTA's preprocessing done up to the last-step filter: everything
/// both frames (filtered and not) share.
struct Prepared<'t> {
    trace: &'t RankTrace,
    mode: Mode,
    hta_version: HtaVersion,
    tick_ns: i64,
    facts: NameFacts,
    /// (start, end) of each row in ticks.
    spans: Vec<(i64, i64)>,
    index_correlation: Vec<i64>,
    iteration: Vec<i64>,
}

impl<'t> Prepared<'t> {
    fn new(trace: &'t RankTrace, mode: Mode, hta_version: HtaVersion) -> Self {
        let rounding = mode == Mode::HtaCompat && trace.ts_is_float;
        let facts = NameFacts::new(trace, mode, hta_version);
        let spans: Vec<(i64, i64)> = trace
            .rows
            .iter()
            .map(|r| times(rounding, r.ts_rel_ns, r.dur_ns))
            .collect();
        let mut prepared = Prepared {
            trace,
            mode,
            hta_version,
            tick_ns: if rounding { 1000 } else { 1 },
            facts,
            spans,
            index_correlation: Vec::new(),
            iteration: Vec::new(),
        };
        prepared.index_correlation = prepared.index_correlations();
        prepared.iteration = prepared.iterations();
        prepared
    }

    /// A device row whose iteration is its launch's: HTA takes rows on a stream > 0. A
    /// PrivateUse1 device (neuron) writes its default stream as 0, where HTA takes
    /// nothing, so the default mode also takes device rows on stream 0.
    pub(crate) fn is_correlated_device_row(&self, row: &Row) -> bool {
        row.stream > 0
            || (self.mode == Mode::Default
                && row.stream == 0
                && self.facts.is_device_category[row.category as usize])
    }

    fn is_gpu_filter_row(&self, row: &Row) -> bool {
        (row.stream >= 0 && row.correlation >= 0) || self.facts.is_sync[row.name as usize]
    }

    fn row(&self, i: usize) -> FrameRow {
        let row = &self.trace.rows[i];
        let (start, end) = self.spans[i];
        let by_name = self.facts.kernel_type[row.name as usize];
        let (is_device, kernel_type) = match self.mode {
            Mode::HtaCompat => (row.stream != -1, by_name),
            Mode::Default => (
                self.facts.is_device_category[row.category as usize],
                classify::kernel_type_given(
                    self.trace.category(row),
                    self.trace.name(row),
                    row.is_collective(),
                    by_name,
                ),
            ),
        };
        FrameRow {
            row: i as u32,
            start_ticks: start,
            end_ticks: end,
            index_correlation: self.index_correlation[i],
            iteration: self.iteration[i],
            is_device,
            kernel_type,
        }
    }

    /// The frame, with HTA's last-step filter when `filter`.
    fn frame(&self, filter: bool) -> Frame<'t> {
        let trace = self.trace;
        let n = trace.rows.len();
        let has_host_rows = trace.min_host_ts_rel_ns.is_some();
        let filtered = filter && has_host_rows;
        let rows = if filtered {
            let is_host = |i: usize| !self.is_gpu_filter_row(&trace.rows[i]);
            let last_step_start = (0..n)
                .filter(|&i| {
                    is_host(i) && self.facts.step_strict[trace.rows[i].name as usize].is_some()
                })
                .map(|i| self.spans[i].0)
                .max()
                .unwrap_or_else(|| {
                    times(
                        self.tick_ns == 1000,
                        trace.min_host_ts_rel_ns.unwrap_or(0),
                        0,
                    )
                    .0
                });
            let host: Vec<usize> = (0..n)
                .filter(|&i| is_host(i) && self.spans[i].0 < last_step_start)
                .collect();
            let mut host_corr_count: FastMap<i64, usize> = FastMap::default();
            for &i in &host {
                *host_corr_count
                    .entry(trace.rows[i].correlation)
                    .or_default() += 1;
            }
            // Kept host rows by event index (rows are in event order): for the default
            // mode's "was its own launch kept".
            let mut kept_host = vec![false; if self.mode == Mode::Default { n } else { 0 }];
            if self.mode == Mode::Default {
                for &i in &host {
                    kept_host[i] = true;
                }
            }
            let mut rows = Vec::with_capacity(n);
            for i in (0..n).filter(|&i| !is_host(i)) {
                let count = host_corr_count
                    .get(&trace.rows[i].correlation)
                    .copied()
                    .unwrap_or(0);
                // HTA's inner merge repeats a device row once per host row of its
                // correlation; neuron runtimes log two calls per launch (`nrt_execute`,
                // `nrt_queue_submit`), so the default mode keeps each device row once:
                // when its own launch was kept (or, unlinked, when any host row of its
                // correlation was).
                let count = match self.mode {
                    Mode::HtaCompat => count,
                    Mode::Default => match u64::try_from(self.index_correlation[i]) {
                        Ok(launch) if launch > 0 => {
                            usize::from(trace.row_of_event(launch).is_some_and(|r| kept_host[r]))
                        }
                        _ => count.min(1),
                    },
                };
                if count > 0 {
                    let row = self.row(i);
                    rows.extend(std::iter::repeat_n(row, count));
                }
            }
            rows.extend(host.into_iter().map(|i| self.row(i)));
            rows
        } else {
            (0..n).map(|i| self.row(i)).collect()
        };
        Frame {
            trace,
            mode: self.mode,
            hta_version: self.hta_version,
            numpy_sort: NumpySort::default(),
            tick_ns: self.tick_ns,
            rows,
            filtered,
        }
    }

    /// HTA's `transform_correlation_to_index`, over the whole (unfiltered) rank.
    ///
    /// Compat mode: HTA's merge on `correlation` assigns every (host, device) pair in the
    /// merge's order (host rows in file order, then their device rows) and later
    /// assignments win, so each device row points at the *last* host row with its
    /// correlation and each host row at the *last* device row — computed here in one
    /// pass instead of pair by pair (a correlation repeated k times costs k², which on
    /// traces that reuse correlation ids is quadratic).
    ///
    /// Default mode: each device row is linked to the host row with its correlation that
    /// started last at or before it (its launch), and a host row to the first device row
    /// linked to it; a host row with no device row of its own (a second runtime call of
    /// the same launch, such as neuron's `nrt_execute` before `nrt_queue_submit`) keeps 0.
    /// This stays right when correlation ids repeat.
    fn index_correlations(&self) -> Vec<i64> {
        let trace = self.trace;
        let mut index_correlation: Vec<i64> =
            trace.rows.iter().map(|r| r.correlation.min(0)).collect();
        match self.mode {
            Mode::HtaCompat => {
                // (last host row, last device row) per correlation.
                let mut last: FastMap<i64, (Option<usize>, Option<usize>)> = FastMap::default();
                for (i, row) in trace.rows.iter().enumerate() {
                    if row.correlation == -1 {
                        continue;
                    }
                    let entry = last.entry(row.correlation).or_default();
                    if self.is_gpu_filter_row(row) {
                        entry.1 = Some(i);
                    } else {
                        entry.0 = Some(i);
                    }
                }
                for (i, row) in trace.rows.iter().enumerate() {
                    if row.correlation == -1 {
                        continue;
                    }
                    let Some(&(Some(host), Some(device))) = last.get(&row.correlation) else {
                        continue;
                    };
                    let partner = if self.is_gpu_filter_row(row) {
                        host
                    } else {
                        device
                    };
                    index_correlation[i] = trace.rows[partner].event_index as i64;
                }
            }
            Mode::Default => {
                // Rows with a correlation, grouped by it, host rows first, each side by
                // start (one sort instead of a map of vectors).
                let mut keyed: Vec<(i64, bool, i64, u32)> = trace
                    .rows
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.correlation != -1)
                    .map(|(i, r)| {
                        (
                            r.correlation,
                            self.is_gpu_filter_row(r),
                            r.ts_rel_ns,
                            i as u32,
                        )
                    })
                    .collect();
                keyed.sort_unstable();
                for group in keyed.chunk_by(|a, b| a.0 == b.0) {
                    let split = group.partition_point(|k| !k.1);
                    let (hosts, devices) = group.split_at(split);
                    if hosts.is_empty() || devices.is_empty() {
                        continue;
                    }
                    let mut h = 0;
                    for &(_, _, ts, d) in devices {
                        while h + 1 < hosts.len() && hosts[h + 1].2 <= ts {
                            h += 1;
                        }
                        let host = hosts[h].3 as usize;
                        let d = d as usize;
                        index_correlation[d] = trace.rows[host].event_index as i64;
                        if index_correlation[host] <= 0 {
                            index_correlation[host] = trace.rows[d].event_index as i64;
                        }
                    }
                }
            }
        }
        index_correlation
    }

    /// HTA's `add_iteration`.
    fn iterations(&self) -> Vec<i64> {
        let trace = self.trace;
        let spans = &self.spans;
        let steps: Vec<(i64, i64, i64)> = trace
            .rows
            .iter()
            .zip(spans)
            // The default mode takes a step's host window only: its device copy
            // (`gpu_user_annotation`, PyTorch 2.x) lags it and overlaps the next step's
            // host window. HTA takes both.
            .filter(|(r, _)| {
                self.mode == Mode::HtaCompat
                    || !self.facts.is_device_annotation[r.category as usize]
            })
            .filter_map(|(r, &(s, e))| {
                self.facts.step_lenient[r.name as usize].map(|k| (s, e - s, k))
            })
            .collect();
        // HTA takes the last step (in file order) containing `ts`. When steps do not
        // overlap at most one contains it: binary search over steps sorted by start;
        // otherwise the linear scan.
        let mut sorted: Vec<(i64, i64, i64)> = steps.clone();
        sorted.sort_unstable_by_key(|s| s.0);
        let disjoint = sorted.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0);
        let step_of = |ts: i64| {
            if disjoint {
                let after = sorted.partition_point(|s| s.0 <= ts);
                return match after.checked_sub(1).map(|i| sorted[i]) {
                    Some((start, dur, number)) if ts < start + dur => number,
                    _ => -1,
                };
            }
            let mut iteration = -1;
            for &(start, dur, number) in &steps {
                if start <= ts && ts < start + dur {
                    iteration = number;
                }
            }
            iteration
        };
        let mut iteration = vec![-1i64; trace.rows.len()];
        for (i, row) in trace.rows.iter().enumerate() {
            if row.stream < 0 || (row.stream == 0 && self.facts.is_cpu_op[row.category as usize]) {
                iteration[i] = step_of(spans[i].0);
            }
        }
        let host_iteration = iteration.clone();
        for (i, row) in trace.rows.iter().enumerate() {
            if self.is_correlated_device_row(row) {
                iteration[i] = match self.index_correlation[i] {
                    ic if ic > 0 => trace
                        .row_of_event(ic as u64)
                        .map_or(-1, |t| host_iteration[t]),
                    _ => -1,
                };
            }
        }
        iteration
    }
}

/// HTA's rounding of a row's times when `rounding`, else exact nanoseconds.
fn times(rounding: bool, ts_rel_ns: i64, dur_ns: i64) -> (i64, i64) {
    if rounding {
        hta_time::hta_round_us(ts_rel_ns, dur_ns)
    } else {
        (ts_rel_ns, ts_rel_ns + dur_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_numbers() {
        assert_eq!(step_number("ProfilerStep#551", false), Some(551));
        assert_eq!(step_number("ProfilerStep # 3", true), Some(3));
        assert_eq!(step_number("ProfilerStep # 3", false), None);
        assert_eq!(step_number("ProfilerStepX", true), None);
    }
}
