//! How far the replayed top operators are from the device's roofline
//! (`neuron-top --replay`), from [`analysis::analyses::roofline`].
//!
//! # What a report's roofline covers
//! Report `b` of a replay covers the trace time `[t0 + b·period, t0 + (b+1)·period)`,
//! with `t0` and `period` as [`analysis::live::replay_dir`] cuts the run (`t0`: the
//! earliest device work, `cpu_op` or `[memory]` event over every rank). Its roofline is
//! [`roofline_table`] over the device rows (kernels, copies, memsets) that **end** in
//! that period (an end on a boundary belongs to the period before it, as for the
//! execution latency): every rank's trace the replay read is read once more with its
//! host operators and, per report, the table is computed with only those rows visible to it. It is
//! computed for every report when the replay loads ([`ReplayRoofline::build`]), never
//! while drawing.
//!
//! A call whose kernels end in two periods counts as a call in each, with its full
//! FLOPs and bytes in each: rare (an operator launching several kernels across a
//! boundary) but it reads a higher % of roofline than the call reached.
//!
//! # Per operator
//! An operator name gathers its rows of the table (one per unique input shapes) in the
//! period; over those rows, weighted by kernel time ([`OpRoofline`]):
//! - % of roofline = Σ roofline time / Σ kernel time, where a row's roofline time is
//!   calls × the roofline time of one call (so a row weighs by its kernel time: Σ
//!   kernel time × the row's own % of roofline, divided by Σ kernel time);
//! - achieved TFLOP/s = Σ calls × FLOPs per call / Σ kernel time, TB/s the same with
//!   bytes (10¹² bytes);
//! - bound: compute (`C`) or memory (`M`), the bound of the rows holding most of the
//!   kernel time.
//!
//! The "all" tab sums these over the ranks. An operator with no modeled row in the
//! period shows no number: "—" when it has none in the whole run (the model does not
//! cover it under that name: `aten::transpose`, `c10d::allreduce_`), "…" when its calls
//! running in the period end in a later one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use analysis::analyses::roofline::DeviceSpec;
use analysis::analyses::roofline::{roofline_table, RooflineOp, RooflineOptions};
use analysis::classify::is_device_work_category;
use analysis::live::ReplaySeries;
use analysis::{load_paths, LoadOptions, RankTrace};

/// What bounds an operator on the device's roofline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Its FLOPs at the peak of its units take longer than its bytes at the bandwidth.
    Compute,
    /// Its bytes at the memory bandwidth take longer.
    Memory,
}

impl Bound {
    /// The bound of a row of the table (`perf_model::Bound`, named by its `Debug` text as
    /// `analysis`'s renderer does: `tui` depends on `analysis` only).
    fn of(row: &RooflineOp) -> Option<Bound> {
        match format!("{:?}", row.bound?).as_str() {
            "Compute" => Some(Bound::Compute),
            "Memory" => Some(Bound::Memory),
            _ => None,
        }
    }

    /// `C` or `M`.
    pub fn letter(self) -> &'static str {
        match self {
            Bound::Compute => "C",
            Bound::Memory => "M",
        }
    }
}

/// One operator's roofline figures over its modeled rows in a period, summed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpRoofline {
    /// Σ kernel time of its rows, µs.
    pub kernel_time_us: f64,
    /// Σ calls × roofline time per call, µs; `None` without a device.
    pub roofline_time_us: Option<f64>,
    /// Σ calls × FLOPs per call.
    pub flops: f64,
    /// Σ calls × bytes moved per call.
    pub bytes: f64,
    /// Kernel time of its compute-bound rows, µs.
    pub compute_bound_us: f64,
    /// Kernel time of its memory-bound rows, µs.
    pub memory_bound_us: f64,
}

impl OpRoofline {
    /// Adds one row of [`roofline_table`] (rows without kernel time add nothing).
    pub fn add_row(&mut self, row: &RooflineOp) {
        if row.kernel_time_us <= 0.0 {
            return;
        }
        let calls = row.count as f64;
        let first = self.kernel_time_us == 0.0;
        self.kernel_time_us += row.kernel_time_us;
        self.roofline_time_us = match (first, self.roofline_time_us, row.roofline_time_us) {
            (true, _, Some(r)) => Some(calls * r),
            (false, Some(sum), Some(r)) => Some(sum + calls * r),
            _ => None,
        };
        self.flops += calls * row.gflops * 1e9;
        self.bytes += calls * row.data_moved_bytes;
        match Bound::of(row) {
            Some(Bound::Compute) => self.compute_bound_us += row.kernel_time_us,
            Some(Bound::Memory) => self.memory_bound_us += row.kernel_time_us,
            None => {}
        }
    }

    /// Adds another rank's figures for the same operator.
    pub fn merge(&mut self, other: &OpRoofline) {
        if other.kernel_time_us <= 0.0 {
            return;
        }
        self.roofline_time_us = if self.kernel_time_us == 0.0 {
            other.roofline_time_us
        } else {
            self.roofline_time_us
                .zip(other.roofline_time_us)
                .map(|(a, b)| a + b)
        };
        self.kernel_time_us += other.kernel_time_us;
        self.flops += other.flops;
        self.bytes += other.bytes;
        self.compute_bound_us += other.compute_bound_us;
        self.memory_bound_us += other.memory_bound_us;
    }

    /// Σ roofline time / Σ kernel time, %; `None` without a device or kernel time.
    pub fn roofline_pct(&self) -> Option<f64> {
        let r = self.roofline_time_us?;
        (self.kernel_time_us > 0.0).then(|| r / self.kernel_time_us * 100.0)
    }

    /// The bound of the rows holding most of the kernel time (compute on a tie).
    pub fn bound(&self) -> Option<Bound> {
        if self.compute_bound_us == 0.0 && self.memory_bound_us == 0.0 {
            None
        } else if self.memory_bound_us > self.compute_bound_us {
            Some(Bound::Memory)
        } else {
            Some(Bound::Compute)
        }
    }

    /// Achieved TFLOP/s: Σ FLOPs / Σ kernel time.
    pub fn tflops_per_sec(&self) -> f64 {
        per_sec(self.flops, self.kernel_time_us) / 1e12
    }

    /// Achieved TB/s (10¹² bytes): Σ bytes / Σ kernel time.
    pub fn tb_per_sec(&self) -> f64 {
        per_sec(self.bytes, self.kernel_time_us) / 1e12
    }
}

fn per_sec(amount: f64, us: f64) -> f64 {
    if us > 0.0 {
        amount / (us * 1e-6)
    } else {
        0.0
    }
}

/// One rank's device and, per report, its operators' roofline.
#[derive(Clone, Debug, PartialEq)]
pub struct RankRooflines {
    /// The rank (as the replayed reports number it).
    pub rank: u32,
    /// The device the roofline is against (`trn2 (LNC=2)`), when known.
    pub device: Option<String>,
    /// Where the device came from, or why there is none.
    pub device_source: String,
    /// Per report: operator name → its figures in that period.
    pub steps: Vec<BTreeMap<String, OpRoofline>>,
    /// Operators with a modeled row in some period: one of them missing from a
    /// period's figures has no call ending in it.
    pub modeled: BTreeSet<String>,
}

/// Every rank's operator rooflines, per replayed report.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayRoofline {
    /// Per rank, in rank order.
    pub ranks: Vec<RankRooflines>,
}

impl ReplayRoofline {
    /// Reads the traces `series` was made from ([`analysis::live::replay_dir`]), this
    /// time with their host operators, and computes the roofline of each of its
    /// documents' periods. `Err` says why there is none (a trace without operators, a
    /// read error).
    /// `device`: the device named with `--device-spec`; `None`: each trace's
    /// `deviceProperties`.
    pub fn build(
        series: &ReplaySeries,
        device: Option<DeviceSpec>,
    ) -> Result<ReplayRoofline, String> {
        Self::build_from(
            &series.files,
            series.t0_ns,
            series.period_ns,
            series.documents.len(),
            device,
        )
    }

    /// [`build`](Self::build) from the series' parts: `files`, and `reports` periods of
    /// `period_ns` from `t0`, against `device`.
    pub fn build_from(
        files: &[PathBuf],
        t0: i64,
        period_ns: i64,
        reports: usize,
        device: Option<DeviceSpec>,
    ) -> Result<ReplayRoofline, String> {
        if period_ns <= 0 || reports == 0 {
            return Err("no reports to compute a roofline for".to_string());
        }
        let traces = load_paths(files, &LoadOptions::default()).map_err(|e| e.to_string())?;
        let grid = Grid {
            t0,
            period_ns,
            count: reports,
        };
        let options = RooflineOptions::default().with_device(device);
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut ranks = Vec::with_capacity(traces.ranks.len());
        let mut traces = traces.ranks;
        while !traces.is_empty() {
            let chunk: Vec<RankTrace> = traces.drain(..workers.min(traces.len())).collect();
            let results: Vec<Result<RankRooflines, String>> = std::thread::scope(|scope| {
                let handles: Vec<_> = chunk
                    .into_iter()
                    .map(|trace| {
                        let options = &options;
                        scope.spawn(move || rank_rooflines(trace, &grid, options))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err("roofline thread panicked".to_string()))
                    })
                    .collect()
            });
            for r in results {
                ranks.push(r?);
            }
        }
        ranks.sort_by_key(|r| r.rank);
        Ok(ReplayRoofline { ranks })
    }

    /// The figures of `rank` in report `step`.
    pub fn ops(&self, rank: u32, step: usize) -> Option<&BTreeMap<String, OpRoofline>> {
        self.ranks
            .iter()
            .find(|r| r.rank == rank)
            .and_then(|r| r.steps.get(step))
    }

    /// Everything of `rank`.
    pub fn rank(&self, rank: u32) -> Option<&RankRooflines> {
        self.ranks.iter().find(|r| r.rank == rank)
    }
}

/// The replay's periods.
#[derive(Clone, Copy, Debug)]
struct Grid {
    t0: i64,
    period_ns: i64,
    count: usize,
}

impl Grid {
    /// The period in which something ending at `end_ns` (absolute) ended.
    fn period_of_end(&self, start_ns: i64, end_ns: i64) -> usize {
        let t = end_ns.max(start_ns + 1) - 1;
        (((t - self.t0).max(0) / self.period_ns) as usize).min(self.count - 1)
    }
}

/// Whether the roofline's attribution takes `row` as device work: what the windows cut.
fn is_window_row(trace: &RankTrace, row: &analysis::model::Row) -> bool {
    row.stream >= 0 && is_device_work_category(trace.category(row))
}

/// One rank's roofline per period. The device rows outside a period are hidden from the
/// table by clearing their `stream` and `correlation` (the attribution then takes them
/// neither for device work nor for a launch), so no copy of the trace is made per period.
fn rank_rooflines(
    mut trace: RankTrace,
    grid: &Grid,
    options: &RooflineOptions,
) -> Result<RankRooflines, String> {
    let rank = u32::try_from(trace.rank)
        .map_err(|_| format!("{}: rank {} is negative", trace.path.display(), trace.rank))?;
    let mut by_period: Vec<Vec<(usize, i64, i64)>> = vec![Vec::new(); grid.count];
    for (i, row) in trace.rows.iter().enumerate() {
        if is_window_row(&trace, row) {
            let start = trace.base_ns + row.ts_rel_ns;
            let end = start + row.dur_ns.max(0);
            by_period[grid.period_of_end(start, end)].push((i, row.stream, row.correlation));
        }
    }
    for rows in &by_period {
        for &(i, _, _) in rows {
            trace.rows[i].stream = -1;
            trace.rows[i].correlation = -1;
        }
    }
    let empty = roofline_table(&trace, options).map_err(|e| e.to_string())?;
    let mut steps = Vec::with_capacity(grid.count);
    for rows in &by_period {
        let mut ops: BTreeMap<String, OpRoofline> = BTreeMap::new();
        if !rows.is_empty() {
            for &(i, stream, correlation) in rows {
                trace.rows[i].stream = stream;
                trace.rows[i].correlation = correlation;
            }
            let table = roofline_table(&trace, options).map_err(|e| e.to_string())?;
            for row in &table.ops {
                ops.entry(row.name.clone()).or_default().add_row(row);
            }
            ops.retain(|_, op| op.kernel_time_us > 0.0);
            for &(i, _, _) in rows {
                trace.rows[i].stream = -1;
                trace.rows[i].correlation = -1;
            }
        }
        steps.push(ops);
    }
    let modeled = steps.iter().flat_map(|s| s.keys().cloned()).collect();
    Ok(RankRooflines {
        rank,
        device: empty.device,
        device_source: empty.device_source,
        steps,
        modeled,
    })
}
