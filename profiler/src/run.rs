//! A profiled run in one call, for `neuronprof run` and `demo`: a shared session, one
//! trace file per rank and window, and a short summary of each rank.

use std::path::PathBuf;

use crate::config::ProfilerConfig;
use crate::error::ProfilerError;
use crate::handler::tensorboard_trace_handler;
use crate::ranks::{RankOf, SharedProfiler};
use crate::result::ProfileResult;
use crate::schedule::Schedule;
use crate::session::Profiler;

/// How [`run_profiled`] profiles.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOptions {
    /// Where the traces go (created if needed).
    pub out_dir: PathBuf,
    /// Number of ranks that will call [`crate::RankSteps::step`].
    pub ranks: usize,
    /// Steps each rank runs, when known (no `ProfilerStep` is begun after the last).
    pub steps: Option<u64>,
    /// Which steps are recorded (`None`: every step, one window).
    pub schedule: Option<Schedule>,
    /// Write `.pt.trace.json.gz` instead of `.pt.trace.json`.
    pub gzip: bool,
    /// Worker name of the files, `{rank}` replaced by the rank (default `rank{rank}`).
    pub worker: String,
    /// Activities, options, devices and process groups.
    pub config: ProfilerConfig,
}

impl RunOptions {
    /// Every step of `ranks` ranks into `out_dir`, gzip, default options.
    pub fn new(out_dir: impl Into<PathBuf>, ranks: usize) -> Self {
        RunOptions {
            out_dir: out_dir.into(),
            ranks,
            steps: None,
            schedule: None,
            gzip: true,
            worker: "rank{rank}".to_owned(),
            config: ProfilerConfig::default(),
        }
    }
}

/// What [`run_profiled`] returns.
#[derive(Debug)]
pub struct ProfiledRun<R> {
    /// What the run closure returned.
    pub output: R,
    /// Every trace file written, in order.
    pub files: Vec<PathBuf>,
    /// The last window of each rank, in rank order.
    pub results: Vec<ProfileResult>,
}

/// Runs `run` under a session shared by `options.ranks` rank threads and writes one
/// trace per rank and saved window into `options.out_dir`.
///
/// `rank_of` maps a recording thread to its rank (the emulated device's
/// `neuron_backend::dist::rank_of_thread` does exactly that); `run` starts the ranks,
/// each of which takes [`SharedProfiler::rank_steps`] and calls
/// [`crate::RankSteps::step`] after each step, or calls [`SharedProfiler::begin_rank`]
/// from a start callback and [`SharedProfiler::step`] from a per-step callback on its
/// thread. A sketch of the CLI's use with the emulated
/// device's workloads:
///
/// ```text
/// let mut options = RunOptions::new(out_dir, config.ranks);
/// options.steps = Some(config.steps as u64);
/// options.schedule = Some(Schedule::new(1, 1, 1, 3, 1));
/// options.config.devices = /* one DeviceInfo per rank's device */;
/// let run = profiler::run_profiled(&options, |thread| {
///     dist::rank_of_thread(thread)
///         .map(|t| RankOf { rank: t.rank as u32, world_size: t.world_size as u32 })
/// }, |prof| workloads::run_with_hooks(&config, &FnHooks {
///     on_start: |_rank| prof.begin_rank(), // ProfilerStep#0 begins here
///     on_step: |_step: &_| prof.step(),
/// }))?;
/// // run.output: the workload's report; run.files: one trace per rank;
/// // run.results[r].summary(): step time, utilization, peak memory.
/// ```
pub fn run_profiled<R>(
    options: &RunOptions,
    rank_of: impl Fn(u32) -> Option<RankOf> + Send + Sync + 'static,
    run: impl FnOnce(&SharedProfiler) -> R,
) -> Result<ProfiledRun<R>, ProfilerError> {
    let handler = tensorboard_trace_handler(&options.out_dir, Some(&options.worker), options.gzip);
    let mut builder = Profiler::builder()
        .config(options.config.clone())
        .split_by_rank(rank_of)
        .on_trace_ready_handler(handler.clone());
    if let Some(schedule) = options.schedule {
        builder = builder.schedule(schedule);
    }
    let shared = SharedProfiler::with_total_steps(builder.start(), options.ranks, options.steps);
    let output = run(&shared);
    let results = shared.stop()?;
    Ok(ProfiledRun {
        output,
        files: handler.files(),
        results,
    })
}
