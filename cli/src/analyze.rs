//! `neuronprof analyze` and `neuronprof diff`: the `analysis` crate's report and trace
//! diff over files or directories of rank traces.
//!
//! Each file is read once, streaming; the operator table (`--by-shape` splits it by
//! input shapes) and the diff's summary come from that same read.
//!
//! Reading is strict by default: a damaged trace stops the command with the file, byte
//! offset and event index. `--lenient` analyses what could be read and lists the damage
//! in the report's notes (`errors` in JSON).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use analysis::analyses::roofline::diff::{roofline_diff, RooflineDiff};
use analysis::analyses::roofline::{roofline_table, RooflineOptions};
use analysis::analyses::trace_diff::{
    compare_traces, ops_summary, DeviceFilter, DiffOptions, TraceDiff,
};
use analysis::inputs::Window;
use analysis::stats::NumpySort;
use analysis::{
    analyze_plan, plan_inputs, HtaVersion, LoadOptions, LoadProgress, Mode, Report, ReportOptions,
};
use anyhow::Context as _;
use serde::Serialize;

use crate::paths::report_skipped;

/// What `neuronprof analyze` was asked for.
#[derive(Debug, Clone, Default)]
pub struct AnalyzeRequest {
    /// Files or directories of rank traces.
    pub paths: Vec<PathBuf>,
    /// Ranks for the per-rank analyses (default: the first rank, as HTA does).
    pub rank: Option<i64>,
    /// Restrict to one `ProfilerStep#N`.
    pub step: Option<i64>,
    /// HTA's rounding and name rules, for numbers equal to HTA's.
    pub hta_compat: bool,
    /// With `hta_compat`: the HTA release whose rules to follow.
    pub hta_version: HtaVersion,
    /// With `hta_compat`: the numpy argsort kernel whose tie order HTA's sorts take.
    pub numpy_sort: NumpySort,
    /// Read past damage instead of stopping at it.
    pub lenient: bool,
    /// The dtype whose peak TFLOPS MFU is measured against (`bf16`, `fp8`, `fp32`);
    /// `None`: the analysis' default (bf16).
    pub peak_dtype: Option<String>,
    /// Show reading progress on standard error (when it is a terminal and the input is
    /// large; see [`ProgressLine`]).
    pub progress: bool,
    /// Split the operator table by input shapes (`--by-shape`).
    pub operators_by_shape: bool,
    /// Which of a rank's profiling windows (files) to analyze (`--window N`; default
    /// the latest).
    pub window: Window,
    /// `--ranks-per-node N` for the collective report.
    pub ranks_per_node: Option<u32>,
    /// `--peak-bus-gbps`: the nominal bus bandwidth every group is judged against.
    pub peak_bus_gbps: Option<f64>,
    /// The device of the roofline table (`--device-spec NAME|FILE`); `None`: from the
    /// traces' `deviceProperties`.
    pub device_spec: Option<String>,
}

/// The device `--device-spec` names: a built-in name (`mi300x`, `h100-sxm`, `trn2`, …:
/// [`perf_model::BUILTIN_DEVICES`]) or a JSON file ([`perf_model::DeviceSpec::from_json`]).
pub fn device_spec(spec: &str) -> anyhow::Result<perf_model::DeviceSpec> {
    perf_model::DeviceSpec::named(spec).map_err(|e| anyhow::anyhow!(e))
}

/// Reads the traces and runs every analysis, a few ranks in memory at a time
/// ([`analysis::analyze_paths`]: each rank is reduced to a summary as soon as it is read,
/// so peak memory does not grow with the number of ranks).
pub fn run_analyze(request: &AnalyzeRequest) -> anyhow::Result<Report> {
    let plan = plan_inputs(&request.paths, request.window)?;
    report_skipped(&plan.skipped);
    let files = plan.paths();
    let mut load = LoadOptions::default().with_lenient(request.lenient);
    let progress = request
        .progress
        .then(|| ProgressLine::for_files(&files))
        .flatten();
    if let Some(line) = &progress {
        let line = Arc::clone(line);
        load = load.with_progress(move |p| line.update(p));
    }
    let mode = if request.hta_compat {
        Mode::HtaCompat
    } else {
        Mode::Default
    };
    let options = ReportOptions::default()
        .with_mode(mode)
        .with_hta_version(request.hta_version)
        .with_numpy_sort(request.numpy_sort)
        .with_ranks(request.rank.map(|r| vec![r]))
        .with_step(request.step)
        .with_operators_by_shape(request.operators_by_shape)
        .with_ranks_per_node(request.ranks_per_node)
        .with_peak_bus_gbps(request.peak_bus_gbps)
        .with_device_spec(
            request
                .device_spec
                .as_deref()
                .map(device_spec)
                .transpose()?,
        );
    let options = match &request.peak_dtype {
        Some(dtype) => options.with_peak_dtype(dtype),
        None => options,
    };
    let report = analyze_plan(&plan, &load, &options);
    if let Some(line) = &progress {
        line.finish();
    }
    report.context("analyzing traces")
}

/// What `neuronprof diff` reports: the rows by name (HTA's `compare_traces`) and the
/// per-operator efficiency before and after.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    /// By operator and kernel name, over the first `ProfilerStep` (`rows`).
    #[serde(flatten)]
    pub names: TraceDiff,
    /// Per operator and unique arguments, kernel time per call and percent of the
    /// roofline in control and test, over each trace's whole window
    /// ([`analysis::analyses::roofline::diff`]); `null` when a side has no roofline
    /// table (`roofline_note` says why).
    pub roofline: Option<RooflineDiff>,
    /// Why there is no roofline comparison.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roofline_note: Option<String>,
}

/// What `neuronprof diff` compares.
#[derive(Debug, Clone, Default)]
pub struct DiffRequest {
    /// The control trace or directory.
    pub control: PathBuf,
    /// The test trace or directory.
    pub test: PathBuf,
    /// The rank to compare (default: the first of each).
    pub rank: Option<i64>,
    /// Host rows, device rows or both.
    pub rows: DeviceFilter,
    /// HTA's rounding.
    pub hta_compat: bool,
    /// The device of both roofline tables (`--device-spec`); `None`: each trace's
    /// `deviceProperties`.
    pub device_spec: Option<String>,
}

/// Compares the first rank (or `rank`) of two traces or trace directories, by operator
/// and kernel name, over their first `ProfilerStep` (HTA's `compare_traces`), and per
/// operator and unique arguments by efficiency (the roofline tables of both).
pub fn run_diff(request: &DiffRequest) -> anyhow::Result<DiffReport> {
    let mode = if request.hta_compat {
        Mode::HtaCompat
    } else {
        Mode::Default
    };
    let device = request
        .device_spec
        .as_deref()
        .map(device_spec)
        .transpose()?;
    let roofline_options = RooflineOptions::default().with_device(device);
    let summarize = |path: &PathBuf| -> anyhow::Result<_> {
        let plan = plan_inputs(std::slice::from_ref(path), Window::Latest)?;
        report_skipped(&plan.skipped);
        let set = plan.load(&LoadOptions::default())?;
        let mut options = DiffOptions::default().mode(mode).device(request.rows);
        options.rank = request.rank;
        let summary = ops_summary(&set, &options)
            .with_context(|| format!("summarising {}", path.display()))?;
        let trace = match request.rank {
            Some(rank) => set.ranks.iter().find(|t| t.rank == rank),
            None => set.ranks.iter().min_by_key(|t| t.rank),
        };
        let roofline = trace
            .ok_or_else(|| format!("{}: no such rank", path.display()))
            .and_then(|trace| {
                roofline_table(trace, &roofline_options)
                    .map_err(|e| format!("{}: {e}", path.display()))
            });
        Ok((summary, roofline))
    };
    let (control, control_roofline) = summarize(&request.control)?;
    let (test, test_roofline) = summarize(&request.test)?;
    let (roofline, roofline_note) = match (control_roofline, test_roofline) {
        (Ok(before), Ok(after)) => (Some(roofline_diff(&before, &after)), None),
        (Err(why), _) | (_, Err(why)) => (None, Some(why)),
    };
    Ok(DiffReport {
        names: compare_traces(&control, &test),
        roofline,
        roofline_note,
    })
}

/// The text of a [`DiffReport`]: the `top` rows by name with the largest change of
/// duration, then the `top` operator rows with the largest change of kernel time.
pub fn render_diff(report: &DiffReport, top: usize) -> String {
    let mut out = analysis::render::render_diff(&report.names, top);
    match (&report.roofline, &report.roofline_note) {
        (Some(diff), _) => analysis::render::render_roofline_diff(&mut out, diff, top),
        (None, Some(note)) => {
            let _ = writeln!(out, "\nRoofline: not compared ({note})");
        }
        (None, None) => {}
    }
    out
}

/// A one-line progress display on standard error while rank traces are read: percent of
/// the bytes of all files, and files done. Shown only for inputs of at least
/// [`ProgressLine::MIN_TOTAL_BYTES`] and when standard error is a terminal, so pipes and
/// logs stay clean.
#[derive(Debug)]
pub struct ProgressLine {
    state: Mutex<ProgressState>,
}

#[derive(Debug)]
struct ProgressState {
    read_bytes: Vec<u64>,
    done: Vec<bool>,
    total_bytes: u64,
    last_percent: Option<u64>,
}

impl ProgressLine {
    /// Inputs smaller than this (64 MiB) are read without a progress line.
    pub const MIN_TOTAL_BYTES: u64 = 64 << 20;

    /// A progress line for these files, or `None` when it should not be shown.
    pub fn for_files(files: &[PathBuf]) -> Option<Arc<Self>> {
        use std::io::IsTerminal as _;
        let total_bytes: u64 = files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        (total_bytes >= Self::MIN_TOTAL_BYTES && std::io::stderr().is_terminal())
            .then(|| Arc::new(Self::new(files.len(), total_bytes)))
    }

    fn new(files: usize, total_bytes: u64) -> Self {
        ProgressLine {
            state: Mutex::new(ProgressState {
                read_bytes: vec![0; files],
                done: vec![false; files],
                total_bytes,
                last_percent: None,
            }),
        }
    }

    /// Takes one report from the loader; redraws when the percentage changed.
    pub fn update(&self, progress: &LoadProgress) {
        if let Some(text) = self.advance(progress) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{text}");
            let _ = err.flush();
        }
    }

    /// Records a report; returns the new line to show, if it changed.
    fn advance(&self, progress: &LoadProgress) -> Option<String> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let i = progress.file_index;
        if i >= state.read_bytes.len() {
            return None;
        }
        state.read_bytes[i] = progress.bytes_read;
        state.done[i] |= progress.done;
        let read: u64 = state.read_bytes.iter().sum();
        let percent = (read * 100)
            .checked_div(state.total_bytes)
            .unwrap_or(100)
            .min(100);
        if state.last_percent == Some(percent) {
            return None;
        }
        state.last_percent = Some(percent);
        let files_done = state.done.iter().filter(|d| **d).count();
        Some(format!(
            "reading traces: {percent:>3}% of {:.0} MiB, {files_done}/{} files",
            state.total_bytes as f64 / (1 << 20) as f64,
            state.read_bytes.len()
        ))
    }

    /// Clears the line.
    pub fn finish(&self) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{:60}\r", "");
        let _ = err.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(file_index: usize, bytes_read: u64, done: bool) -> LoadProgress {
        LoadProgress {
            file_index,
            path: PathBuf::from("rank.json"),
            bytes_read,
            total_bytes: Some(100 << 20),
            done,
        }
    }

    #[test]
    fn progress_counts_bytes_of_all_files_and_redraws_only_on_change() {
        let line = ProgressLine::new(2, 200 << 20);
        assert_eq!(
            line.advance(&report(0, 50 << 20, false)).as_deref(),
            Some("reading traces:  25% of 200 MiB, 0/2 files")
        );
        assert_eq!(
            line.advance(&report(0, (50 << 20) + 1, false)),
            None,
            "same percent"
        );
        assert_eq!(
            line.advance(&report(1, 100 << 20, true)).as_deref(),
            Some("reading traces:  75% of 200 MiB, 1/2 files")
        );
        assert_eq!(
            line.advance(&report(7, 1, true)),
            None,
            "unknown file index"
        );
    }

    #[test]
    fn small_inputs_get_no_progress_line() {
        let small = std::env::temp_dir().join(format!("np-progress-{}.json", std::process::id()));
        std::fs::write(&small, b"{}").unwrap();
        assert!(ProgressLine::for_files(&[small]).is_none());
    }
}
