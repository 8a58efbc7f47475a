//! A rank's rows as an analysis sees them, after HTA's preprocessing.
//!
//! [`Frames::build`] reproduces what `hta.common.trace.Trace.load_traces` does between
//! parsing and the analyses (`../shared/reference/hta-analyses.md`, "Conventions"):
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

use std::collections::HashMap;

use crate::classify::{self, HtaVersion, KernelType, Mode};
use crate::model::{RankTrace, Row, TraceSet};

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
        let mut step_names: Vec<&str> = set
            .ranks
            .iter()
            .flat_map(|r| r.names.iter())
            .filter(|n| step_number(n, false).is_some())
            .collect();
        step_names.sort_unstable();
        step_names.dedup();
        let device_type = set.ranks.first().map_or("UNKNOWN GPU", |r| r.device_type());
        // HTA 0.6 filters MTIA traces differently (`filter_mtia_kernels_for_one_rank`);
        // that path is not reproduced, such traces are left unfiltered. HTA 0.5 has no
        // MTIA path: its one filter applies to every device.
        let mtia_06 = device_type == "MTIA" && hta_version == HtaVersion::V0_6;
        let filter = last_step_filter && step_names.len() >= 2 && !mtia_06;
        // Ranks are independent: build them on all cores.
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let chunk = set.ranks.len().div_ceil(workers).max(1);
        let ranks = std::thread::scope(|scope| {
            let handles: Vec<_> = set
                .ranks
                .chunks(chunk)
                .map(|traces| {
                    scope.spawn(move || {
                        traces
                            .iter()
                            .map(|trace| build_frame(trace, mode, hta_version, filter))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("frame building thread panicked"))
                .collect()
        });
        Frames { ranks, device_type }
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

fn is_gpu_filter_row(trace: &RankTrace, row: &Row) -> bool {
    let name = trace.name(row);
    (row.stream >= 0 && row.correlation >= 0) || name == "Event Sync" || name == "Context Sync"
}

fn build_frame(
    trace: &RankTrace,
    mode: Mode,
    hta_version: HtaVersion,
    filter: bool,
) -> Frame<'_> {
    let rounding = mode == Mode::HtaCompat && trace.ts_is_float;
    let tick_ns = if rounding { 1000 } else { 1 };
    let times = |ts_rel_ns: i64, dur_ns: i64| -> (i64, i64) {
        if rounding {
            hta_time::hta_round_us(ts_rel_ns, dur_ns)
        } else {
            (ts_rel_ns, ts_rel_ns + dur_ns)
        }
    };
    let n = trace.rows.len();
    let index_correlation = index_correlations(trace, mode);
    let spans: Vec<(i64, i64)> = trace
        .rows
        .iter()
        .map(|r| times(r.ts_rel_ns, r.dur_ns))
        .collect();
    let iteration = iterations(trace, &spans, &index_correlation);
    let make = |i: usize| {
        let row = &trace.rows[i];
        let (start, end) = spans[i];
        let (is_device, kernel_type) = match mode {
            Mode::HtaCompat => (
                row.stream != -1,
                classify::hta_kernel_type_for(hta_version, trace.name(row)),
            ),
            Mode::Default => (
                classify::is_device_work_category(trace.category(row)),
                classify::kernel_type(trace.category(row), trace.name(row), row.is_collective()),
            ),
        };
        FrameRow {
            row: i as u32,
            start_ticks: start,
            end_ticks: end,
            index_correlation: index_correlation[i],
            iteration: iteration[i],
            is_device,
            kernel_type,
        }
    };
    let has_host_rows = trace.min_host_ts_rel_ns.is_some();
    let filtered = filter && has_host_rows;
    let rows = if filtered {
        let is_host = |i: usize| !is_gpu_filter_row(trace, &trace.rows[i]);
        let last_step_start = (0..n)
            .filter(|&i| is_host(i) && step_number(trace.name(&trace.rows[i]), false).is_some())
            .map(|i| spans[i].0)
            .max()
            .unwrap_or_else(|| times(trace.min_host_ts_rel_ns.unwrap_or(0), 0).0);
        let host: Vec<usize> = (0..n)
            .filter(|&i| is_host(i) && spans[i].0 < last_step_start)
            .collect();
        let mut host_corr_count: HashMap<i64, usize> = HashMap::new();
        for &i in &host {
            *host_corr_count
                .entry(trace.rows[i].correlation)
                .or_default() += 1;
        }
        let kept_host_events: std::collections::HashSet<u64> = match mode {
            Mode::HtaCompat => Default::default(),
            Mode::Default => host.iter().map(|&i| trace.rows[i].event_index).collect(),
        };
        let mut rows = Vec::with_capacity(n);
        for i in (0..n).filter(|&i| !is_host(i)) {
            let count = host_corr_count
                .get(&trace.rows[i].correlation)
                .copied()
                .unwrap_or(0);
            // HTA's inner merge repeats a device row once per host row of its
            // correlation; neuron runtimes log two calls per launch (`nrt_execute`,
            // `nrt_queue_submit`), so the default mode keeps each device row once: when
            // its own launch was kept (or, unlinked, when any host row of its
            // correlation was).
            let count = match mode {
                Mode::HtaCompat => count,
                Mode::Default => match u64::try_from(index_correlation[i]) {
                    Ok(launch) if launch > 0 => usize::from(kept_host_events.contains(&launch)),
                    _ => count.min(1),
                },
            };
            rows.extend(std::iter::repeat_n(make(i), count));
        }
        rows.extend(host.into_iter().map(make));
        rows
    } else {
        (0..n).map(make).collect()
    };
    Frame {
        trace,
        mode,
        hta_version,
        tick_ns,
        rows,
        filtered,
    }
}

/// HTA's `transform_correlation_to_index`, over the whole (unfiltered) rank.
///
/// Compat mode: HTA's merge on `correlation` assigns every (host, device) pair in the
/// merge's order (host rows in file order, then their device rows) and later
/// assignments win, so each device row points at the *last* host row with its
/// correlation and each host row at the *last* device row — computed here in one pass
/// instead of pair by pair (a correlation repeated k times costs k², which on traces
/// that reuse correlation ids is quadratic).
///
/// Default mode: each device row is linked to the host row with its correlation that
/// started last at or before it (its launch), and a host row to the first device row
/// linked to it; a host row with no device row of its own (a second runtime call of the
/// same launch, such as neuron's `nrt_execute` before `nrt_queue_submit`) keeps 0. This
/// stays right when correlation ids repeat.
fn index_correlations(trace: &RankTrace, mode: Mode) -> Vec<i64> {
    let mut index_correlation: Vec<i64> = trace.rows.iter().map(|r| r.correlation.min(0)).collect();
    match mode {
        Mode::HtaCompat => {
            // (last host row, last device row) per correlation.
            let mut last: HashMap<i64, (Option<usize>, Option<usize>)> = HashMap::new();
            for (i, row) in trace.rows.iter().enumerate() {
                if row.correlation == -1 {
                    continue;
                }
                let entry = last.entry(row.correlation).or_default();
                if is_gpu_filter_row(trace, row) {
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
                let partner = if is_gpu_filter_row(trace, row) {
                    host
                } else {
                    device
                };
                index_correlation[i] = trace.rows[partner].event_index as i64;
            }
        }
        Mode::Default => {
            // Per correlation: host and device rows by start.
            let mut by_corr: HashMap<i64, (Vec<usize>, Vec<usize>)> = HashMap::new();
            for (i, row) in trace.rows.iter().enumerate() {
                if row.correlation == -1 {
                    continue;
                }
                let entry = by_corr.entry(row.correlation).or_default();
                if is_gpu_filter_row(trace, row) {
                    entry.1.push(i);
                } else {
                    entry.0.push(i);
                }
            }
            let start = |i: &usize| (trace.rows[*i].ts_rel_ns, *i);
            for (mut hosts, mut devices) in by_corr.into_values() {
                if hosts.is_empty() || devices.is_empty() {
                    continue;
                }
                hosts.sort_unstable_by_key(start);
                devices.sort_unstable_by_key(start);
                let mut h = 0;
                for &d in &devices {
                    let ts = trace.rows[d].ts_rel_ns;
                    while h + 1 < hosts.len() && trace.rows[hosts[h + 1]].ts_rel_ns <= ts {
                        h += 1;
                    }
                    let host = hosts[h];
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
fn iterations(trace: &RankTrace, spans: &[(i64, i64)], index_correlation: &[i64]) -> Vec<i64> {
    let steps: Vec<(i64, i64, i64)> = trace
        .rows
        .iter()
        .zip(spans)
        .filter_map(|(r, &(s, e))| step_number(trace.name(r), true).map(|k| (s, e - s, k)))
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
        if row.stream < 0 || (row.stream == 0 && trace.category(row) == "cpu_op") {
            iteration[i] = step_of(spans[i].0);
        }
    }
    let by_event: HashMap<u64, usize> = trace
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.event_index, i))
        .collect();
    let host_iteration = iteration.clone();
    for (i, row) in trace.rows.iter().enumerate() {
        if row.stream > 0 {
            iteration[i] = match index_correlation[i] {
                ic if ic > 0 => by_event
                    .get(&(ic as u64))
                    .map_or(-1, |&t| host_iteration[t]),
                _ => -1,
            };
        }
    }
    iteration
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
