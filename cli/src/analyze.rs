//! `neuronprof analyze` and `neuronprof diff`: the `analysis` crate's report and trace
//! diff over files or directories of rank traces.
//!
//! Reading is strict by default: a damaged trace stops the command with the file, byte
//! offset and event index. `--lenient` analyses what could be read and lists the damage
//! in the report's notes (`errors` in JSON).

use std::path::PathBuf;

use analysis::analyses::trace_diff::{compare_traces, ops_summary, DiffOptions, TraceDiff};
use analysis::{analyze, load_paths, LoadOptions, Mode, Report, ReportOptions};
use anyhow::Context as _;

use crate::paths::collect_trace_files;

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
    /// Read past damage instead of stopping at it.
    pub lenient: bool,
}

/// Reads the traces and runs every analysis.
pub fn run_analyze(request: &AnalyzeRequest) -> anyhow::Result<Report> {
    let files = collect_trace_files(&request.paths)?;
    let set = load_paths(
        &files,
        &LoadOptions::default().with_lenient(request.lenient),
    )
    .context("reading traces")?;
    let mode = if request.hta_compat {
        Mode::HtaCompat
    } else {
        Mode::Default
    };
    let options = ReportOptions::default()
        .with_mode(mode)
        .with_ranks(request.rank.map(|r| vec![r]))
        .with_step(request.step);
    Ok(analyze(&set, &options))
}

/// Compares the first rank (or `rank`) of two traces or trace directories, by operator
/// and kernel name, over their first `ProfilerStep` (HTA's `compare_traces`).
pub fn run_diff(
    control: &PathBuf,
    test: &PathBuf,
    rank: Option<i64>,
    hta_compat: bool,
) -> anyhow::Result<TraceDiff> {
    let mode = if hta_compat {
        Mode::HtaCompat
    } else {
        Mode::Default
    };
    let summarize = |path: &PathBuf| -> anyhow::Result<_> {
        let files = collect_trace_files(std::slice::from_ref(path))?;
        let set = load_paths(&files, &LoadOptions::default())
            .with_context(|| format!("reading {}", path.display()))?;
        let mut options = DiffOptions::default().mode(mode);
        options.rank = rank;
        ops_summary(&set, &options).with_context(|| format!("summarising {}", path.display()))
    };
    Ok(compare_traces(&summarize(control)?, &summarize(test)?))
}
