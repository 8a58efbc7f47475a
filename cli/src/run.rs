//! `neuronprof run` and `neuronprof demo`: a built-in workload on emulated ranks under
//! the profiler, one Kineto trace per rank, and a short summary.
//!
//! This is the one place where the emulated device (`neuron-backend`) and the profiler
//! meet: the profiler does not know the backend (DESIGN.md's arrows), so the CLI maps
//! recording threads to ranks and describes each rank's device from its profile.
//!
//! Choices where the issue is silent:
//! - Device `i` is rank `i`'s logical NeuronCore; `--device trn2 --lnc 1` picks the
//!   `trn2-lnc1` profile (8 logical cores per chip).
//! - The default schedule skips the first step (warm caches, as torch users do), warms
//!   up one and records the rest, in one window.
//! - Traces are gzip-compressed (`{worker}.{timestamp_ms}.pt.trace.json.gz`, worker
//!   `rank{N}`), which every Kineto reader, HTA and `neuronprof` accept.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use analysis::{analyze, load_paths, LoadOptions, ReportOptions};
use anyhow::{bail, Context as _};
use neuron_backend::dist::rank_of_thread;
use neuron_backend::workloads::{
    run_with_hooks, FnHooks, GptShape, Optimizer, RunReport, StepReport, Workload, WorkloadConfig,
};
use neuron_backend::{DeviceProfile, RecordDetail};
use profiler::{DeviceDetail, DeviceInfo, RankOf, RunOptions, Schedule, Summary};

mod device_time;
pub use device_time::RankDeviceTime;

/// What `neuronprof run` was asked for.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// `mlp`, `gpt` or `gpt-infer`.
    pub workload: String,
    /// Ranks, one logical NeuronCore each.
    pub ranks: usize,
    /// Tensor-parallel group size (`gpt` only).
    pub tp: usize,
    /// `trn2` or `trn3`.
    pub device: String,
    /// Logical NeuronCore size: 1 or 2 physical cores per logical core.
    pub lnc: u32,
    /// A device profile file (`neuron_backend::DeviceProfile::from_file`: a JSON object of
    /// figures over a `"base"` profile) used instead of `device` and `lnc`.
    pub device_file: Option<PathBuf>,
    /// A host-cost file (`neuron_backend::HostCost::from_file`: a JSON object of the
    /// per-op host costs to replace); `None`: eager PyTorch's measured figures.
    pub host_cost_file: Option<PathBuf>,
    /// Steps to run (training steps; decode steps for `gpt-infer`).
    pub steps: Option<usize>,
    /// Compute real values (off: timing only).
    pub numerics: bool,
    /// Where the traces go.
    pub out_dir: PathBuf,
    /// A slow rank and how many times slower its device runs.
    pub straggler: Option<(usize, f64)>,
    /// Record engine instructions and DMA transfers too, not only kernels.
    pub instructions: bool,
    /// Which steps are recorded; `None`: [`default_schedule`].
    pub schedule: Option<Schedule>,
    /// The GPT's dimensions; `None`: the workload's tiny default.
    pub gpt: Option<GptShape>,
    /// The `gpt` workload's optimizer; `None`: the workload's own choice (AdamW with
    /// numerics, SGD timing only: `WorkloadConfig::optimizer`).
    pub optimizer: Option<Optimizer>,
    /// Profiler options (`--profile`).
    pub profile: ProfileSpec,
    /// Also write the rank traces as one Perfetto file (`trace.pftrace` in the out dir).
    pub perfetto: bool,
    /// Also write the rank traces as one Perfetto archive (`perfetto.tar` in the out dir:
    /// a `.pftrace` per rank and Perfetto's manifest, `export --format perfetto-archive`).
    pub perfetto_archive: bool,
    /// Show the steps done on standard error (when it is a terminal).
    pub progress: bool,
    /// What the run leaves in `out_dir`: Kineto traces, or Neuron Explorer profiles.
    pub output: RunOutput,
}

/// What `run --output` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunOutput {
    /// One Kineto trace per rank (`*.pt.trace.json`).
    #[default]
    Kineto,
    /// One Neuron Explorer profile per rank, in the layout `neuron-explorer view
    /// --ingest-only --data-path OUT` writes: `OUT/profiles/global/<rank
    /// trace>@latest/<Table>.parquet` (the tables `export --format neuron-explorer`
    /// writes). The ranks' Kineto traces are converted as the run ends and removed.
    NeuronExplorer,
}

impl RunOutput {
    /// `kineto` or `neuron-explorer`.
    pub fn parse(text: &str) -> anyhow::Result<RunOutput> {
        match text {
            "kineto" => Ok(RunOutput::Kineto),
            "neuron-explorer" => Ok(RunOutput::NeuronExplorer),
            other => bail!("--output {other:?}: expected kineto or neuron-explorer"),
        }
    }
}

/// What `--profile` sets: the profiler's options, as torch.profiler's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileSpec {
    /// Which steps are recorded; `None`: [`default_schedule`].
    pub schedule: Option<Schedule>,
    /// `profile_memory`: `[memory]` events.
    pub memory: bool,
    /// `record_shapes`: `Input Dims` and `Input type`.
    pub shapes: bool,
    /// `with_flops`: `flops` args.
    pub flops: bool,
}

impl Default for ProfileSpec {
    fn default() -> Self {
        ProfileSpec {
            schedule: None,
            memory: true,
            shapes: true,
            flops: true,
        }
    }
}

impl ProfileSpec {
    /// Parses `--profile` text: comma-separated `key=value` with keys `skip_first`,
    /// `wait`, `warmup`, `active`, `repeat` (torch.profiler.schedule's arguments; any
    /// one given makes a schedule, the others default to 0, `active` to 1 and `repeat`
    /// to 1) and `memory`, `shapes`, `flops` (`on`/`off`). Example:
    /// `wait=1,warmup=1,active=2,repeat=2,memory=off`.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut spec = ProfileSpec::default();
        let mut steps: [Option<u64>; 5] = [None; 5];
        const STEP_KEYS: [&str; 5] = ["skip_first", "wait", "warmup", "active", "repeat"];
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .with_context(|| format!("--profile: {item:?} is not key=value"))?;
            if let Some(i) = STEP_KEYS.iter().position(|k| *k == key) {
                steps[i] = Some(
                    value
                        .parse()
                        .with_context(|| format!("--profile: {key}={value:?} is not a count"))?,
                );
                continue;
            }
            let on = match value {
                "on" | "true" | "1" => true,
                "off" | "false" | "0" => false,
                _ => bail!("--profile: {key}={value:?}: expected on or off"),
            };
            match key {
                "memory" => spec.memory = on,
                "shapes" => spec.shapes = on,
                "flops" => spec.flops = on,
                _ => bail!(
                    "--profile: unknown key {key:?} (known: {}, memory, shapes, flops)",
                    STEP_KEYS.join(", ")
                ),
            }
        }
        if steps.iter().any(Option::is_some) {
            let [skip_first, wait, warmup, active, repeat] = steps;
            let active = active.unwrap_or(1);
            if active == 0 {
                bail!("--profile: active=0 records nothing");
            }
            spec.schedule = Some(Schedule::new(
                skip_first.unwrap_or(0),
                wait.unwrap_or(0),
                warmup.unwrap_or(0),
                active,
                repeat.unwrap_or(1),
            ));
        }
        Ok(spec)
    }
}

impl RunRequest {
    /// The defaults of `neuronprof run WORKLOAD`.
    pub fn new(workload: &str) -> Self {
        RunRequest {
            workload: workload.to_owned(),
            ranks: 1,
            tp: 1,
            device: "trn2".to_owned(),
            lnc: 2,
            device_file: None,
            host_cost_file: None,
            steps: None,
            numerics: true,
            out_dir: default_out_dir(workload),
            straggler: None,
            instructions: true,
            schedule: None,
            gpt: None,
            optimizer: None,
            profile: ProfileSpec::default(),
            perfetto: false,
            perfetto_archive: false,
            progress: false,
            output: RunOutput::Kineto,
        }
    }

    /// The demo: a GPT of [`GptShape::DEMO`]'s shape on 4 data-parallel ranks with numerics,
    /// rank 2's device 2× slower, 6 steps, 4 of them recorded, AdamW; the traces also as
    /// one Perfetto archive (`perfetto.tar`).
    ///
    /// The ranks are threads of one process and take turns on the machine's cores, but
    /// a rank's host time is what its ops cost eager PyTorch (modeled) and its device
    /// time what the timing model says: neither depends on how the threads were
    /// scheduled. So the run's traces are the same on every run and every machine, and
    /// rank 2 is the rank the others wait for. `demo --numerics off` runs the same
    /// program timing only (AdamW named, where a timing-only `gpt` run defaults to SGD):
    /// the same traces without the values (the backend's
    /// `a_workload_timeline_is_the_same_on_a_loaded_machine` test). It records about a
    /// million records a second per rank in a release build; the profiler's
    /// collection keeps up with that on 2 cores (`profiler/examples/drain_load.rs`).
    pub fn demo(out_dir: PathBuf) -> Self {
        RunRequest {
            ranks: 4,
            steps: Some(6),
            straggler: Some((2, 2.0)),
            out_dir,
            numerics: true,
            gpt: Some(GptShape::DEMO),
            optimizer: Some(Optimizer::AdamW),
            perfetto_archive: true,
            ..RunRequest::new("gpt")
        }
    }
}

/// `neuronprof-traces/{workload}-{unix time in ms}`: a fresh directory per run, so one
/// directory always holds one run's rank traces.
pub fn default_out_dir(workload: &str) -> PathBuf {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    PathBuf::from("neuronprof-traces").join(format!("{workload}-{ms}"))
}

/// Refuses a directory that already holds trace files: analysing it would mix runs
/// (two files per rank).
pub fn check_out_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let traces = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.ends_with(".json") || name.ends_with(".json.gz")
        })
        .count();
    if traces > 0 {
        bail!(
            "{} already holds {traces} trace file(s) of another run; choose another --out \
             or remove them",
            dir.display()
        );
    }
    let profiles = neuron_explorer::find_profiles(&dir.join("profiles").join("global")).len();
    if profiles > 0 {
        bail!(
            "{} already holds {profiles} Neuron Explorer profile(s) of another run (under \
             profiles/global); choose another --out or remove them",
            dir.display()
        );
    }
    Ok(())
}

/// Steps the default schedule records at most. A window keeps its records in memory
/// until it ends, so recording every step of a long run (`run gpt --ranks 4 --steps
/// 100000 --numerics off`, to watch in `neuron-top`) grew without bound: about 190 MiB
/// a second until the machine ran out. With this cap the window ends after step 11, its
/// traces are written then, and the rest of the run keeps only live metrics.
pub const DEFAULT_MAX_RECORDED_STEPS: usize = 10;

/// Skip the first step, warm up one, record the remaining `steps - 2` (at least one,
/// at most [`DEFAULT_MAX_RECORDED_STEPS`]).
pub fn default_schedule(steps: usize) -> Schedule {
    let active = steps.saturating_sub(2).clamp(1, DEFAULT_MAX_RECORDED_STEPS) as u64;
    let (skip_first, warmup) = if steps >= 3 { (1, 1) } else { (0, 0) };
    Schedule::new(skip_first, 0, warmup, active, 1)
}

/// What a run keeps of its steps when the default schedule records fewer than it runs
/// (`None` when it records every step after the warm-up, or a schedule was given).
pub fn kept_steps(request: &RunRequest, steps: usize) -> Option<String> {
    if request.schedule.is_some() || request.profile.schedule.is_some() {
        return None;
    }
    let schedule = default_schedule(steps);
    let first = schedule.skip_first + schedule.warmup;
    let last = first + schedule.active - 1;
    (last + 1 < steps as u64).then(|| {
        format!(
            "the traces keep steps {first}-{last} of {steps}: the default records at most \
             {DEFAULT_MAX_RECORDED_STEPS} steps so that a long run holds bounded memory \
             (--profile active=N records more); later steps show only in the live metrics \
             (neuronprof monitor, neuron-top)"
        )
    })
}

/// Parses `RANK:FACTOR` (e.g. `2:1.5`).
pub fn parse_straggler(text: &str) -> anyhow::Result<(usize, f64)> {
    let (rank, factor) = text
        .split_once(':')
        .with_context(|| format!("--straggler {text:?}: expected RANK:FACTOR, e.g. 2:1.5"))?;
    let rank = rank
        .parse()
        .with_context(|| format!("--straggler {text:?}: bad rank"))?;
    let factor: f64 = factor
        .parse()
        .with_context(|| format!("--straggler {text:?}: bad factor"))?;
    if !(factor.is_finite() && factor >= 1.0) {
        bail!("--straggler {text:?}: the factor must be a number ≥ 1");
    }
    Ok((rank, factor))
}

/// The device profile for `--device` and `--lnc`.
pub fn device_profile(device: &str, lnc: u32) -> anyhow::Result<DeviceProfile> {
    let name = match (device, lnc) {
        ("trn2" | "trn3", 2) => device.to_owned(),
        ("trn2" | "trn3", 1) => format!("{device}-lnc1"),
        (_, 1 | 2) => bail!("--device {device:?}: expected trn2 or trn3"),
        _ => bail!("--lnc {lnc}: expected 1 or 2"),
    };
    DeviceProfile::builtin(&name).with_context(|| format!("no built-in device profile {name}"))
}

/// How a trace describes logical core `index` of `profile` (its `deviceProperties`
/// entry and the process name of its rows).
pub fn device_info(profile: &DeviceProfile, index: u16) -> DeviceInfo {
    DeviceInfo {
        core_version: profile.core_version().to_owned(),
        lnc: profile.lnc,
        hbm_bytes: profile.hbm_bytes_per_core(),
        peak_tflops: profile
            .peak_tflops_per_core()
            .iter()
            .map(|&(dtype, tflops)| (dtype.to_owned(), tflops))
            .collect(),
        compute_queues: profile.compute_queues,
        collective_queues: profile.collective_queues,
        tensor_op_queues: profile.tensor_op_queues,
        ..DeviceInfo::new(index, &profile.name)
    }
}

/// What a profiled run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The workload's own report (losses, accuracy, tokens/s).
    pub report: RunReport,
    /// Trace files (or profile folders, `--output neuron-explorer`), one per rank.
    pub files: Vec<PathBuf>,
    /// The directory they are in (a data path, `--output neuron-explorer`).
    pub out_dir: PathBuf,
    /// Each rank's summary of its recorded window, in rank order.
    pub summaries: Vec<(u32, Summary)>,
    /// The rank the others waited for most in collectives, from the analysis.
    pub bottleneck_rank: Option<i64>,
    /// Each rank's device time over its recorded steps, from the analysis, by rank.
    pub device_time: Vec<RankDeviceTime>,
    /// The window every step's split is measured over, when all have the same.
    pub step_window: Option<analysis::analyses::steps::StepWindow>,
    /// Insights of the analysis of the traces, most important first.
    pub insights: Vec<String>,
    /// Wall time of the run (emulation included).
    pub wall: Duration,
    /// Whether values were computed (off: timing only).
    pub numerics: bool,
    /// The Perfetto file of all ranks, when asked for.
    pub perfetto: Option<PathBuf>,
    /// The Perfetto archive of the ranks, when asked for.
    pub perfetto_archive: Option<PathBuf>,
    /// Which steps the traces keep, when the default schedule records fewer steps than
    /// the run ([`kept_steps`]).
    pub kept: Option<String>,
}

/// `step k/N` on standard error while a workload runs (rank 0's steps).
#[derive(Debug, Clone, Copy)]
struct StepProgress {
    total_steps: usize,
    ranks: usize,
}

impl StepProgress {
    fn step(&self, step: &StepReport) {
        if step.rank == 0 {
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\rrunning: step {}/{} on {} rank(s)",
                step.step + 1,
                self.total_steps,
                self.ranks
            );
            let _ = err.flush();
        }
    }

    fn finish(&self) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{:60}\r", "");
        let _ = err.flush();
    }
}

/// Runs the workload under the profiler, writes the traces and analyses them.
pub fn run_workload(request: &RunRequest) -> anyhow::Result<RunOutcome> {
    let workload = Workload::from_name(&request.workload).with_context(|| {
        format!(
            "unknown workload {:?}: expected mlp, gpt or gpt-infer",
            request.workload
        )
    })?;
    let mut config = WorkloadConfig::new(workload);
    config.ranks = request.ranks;
    config.tp = request.tp;
    if let Some(steps) = request.steps {
        config.steps = steps;
    }
    // Keep the workload's global batch where the data-parallel ranks divide it;
    // otherwise the smallest multiple of them above it.
    let dp = (config.ranks / config.tp.max(1)).max(1);
    config.batch = config.batch.div_ceil(dp) * dp;
    config.numerics = request.numerics;
    if let Some(shape) = request.gpt {
        config.gpt = shape;
    }
    if request.optimizer.is_some() && request.workload != "gpt" {
        bail!(
            "--optimizer applies to the gpt workload only ({} has no optimizer to choose)",
            request.workload
        );
    }
    config.optimizer = request.optimizer;
    config.straggler = request.straggler;
    config.profile = match &request.device_file {
        Some(path) => DeviceProfile::from_file(path)
            .with_context(|| format!("--device-file {}", path.display()))?,
        None => device_profile(&request.device, request.lnc)?,
    };
    config.detail = if request.instructions {
        RecordDetail::Instructions
    } else {
        RecordDetail::Kernels
    };
    if let Some(path) = &request.host_cost_file {
        config.host_cost = neuron_backend::HostCost::from_file(path)
            .with_context(|| format!("--host-cost {}", path.display()))?;
    }
    if let Some((rank, _)) = request.straggler {
        if rank >= request.ranks {
            bail!(
                "--straggler rank {rank} is not one of the {} ranks",
                request.ranks
            );
        }
    }

    check_out_dir(&request.out_dir)?;
    // Publish live metrics while the workload runs (`neuronprof monitor`); a refused
    // endpoint directory is reported and the run goes on without it.
    match neuron_backend::monitor::start() {
        Ok(socket) if request.progress && std::io::stderr().is_terminal() => {
            eprintln!(
                "live metrics: neuronprof monitor (endpoint {})",
                socket.display()
            );
        }
        Ok(_) | Err(neuron_backend::monitor::EndpointError::Disabled) => {}
        Err(err) => eprintln!("neuronprof: live monitoring is off: {err}"),
    }
    let mut options = RunOptions::new(&request.out_dir, config.ranks);
    options.steps = Some(config.steps as u64);
    // `--profile`'s schedule keys (they were parsed and then ignored: `--profile
    // active=1` recorded every step).
    options.schedule = Some(
        request
            .schedule
            .or(request.profile.schedule)
            .unwrap_or_else(|| default_schedule(config.steps)),
    );
    let kept = kept_steps(request, config.steps);
    if let (Some(kept), true) = (&kept, request.progress) {
        eprintln!("neuronprof run: {kept}");
    }
    options.config.profile_memory = request.profile.memory;
    options.config.record_shapes = request.profile.shapes;
    options.config.with_flops = request.profile.flops;
    options.config.device_detail = if request.instructions {
        DeviceDetail::Instructions
    } else {
        DeviceDetail::Kernels
    };
    options.config.devices = (0..config.ranks)
        .map(|i| device_info(&config.profile, i as u16))
        .collect();
    // Each rank's place and its machine's links, so the collective report judges a
    // group's bandwidth against the link the emulator moved its bytes over.
    let topology = config
        .topology
        .clone()
        .unwrap_or_else(|| neuron_backend::dist::Topology::for_profile(&config.profile));
    options.config.rank_metadata = (0..config.ranks)
        .map(|rank| {
            (
                rank as u32,
                analysis::analyses::collectives::NEURON_TOPOLOGY_KEY.to_owned(),
                topology.trace_place(rank),
            )
        })
        .collect();

    let rank_of = |thread: u32| {
        rank_of_thread(thread).map(|t| RankOf {
            rank: t.rank as u32,
            world_size: t.world_size as u32,
        })
    };
    let progress = (request.progress && std::io::stderr().is_terminal()).then_some(StepProgress {
        total_steps: config.steps,
        ranks: config.ranks,
    });
    let started = Instant::now();
    let profiled = profiler::run_profiled(&options, rank_of, |prof| {
        // Each rank opens ProfilerStep#0 on its own thread before its first step.
        let hooks = FnHooks {
            on_start: |_rank| prof.begin_rank(),
            on_step: |step: &StepReport| {
                prof.step();
                if let Some(line) = &progress {
                    line.step(step);
                }
            },
        };
        let report = run_with_hooks(&config, &hooks);
        if let Some(line) = &progress {
            line.finish();
        }
        report
    })
    .context("profiling the run")?;
    let report = profiled.output.context("running the workload")?;
    let wall = started.elapsed();
    let summaries = profiled
        .results
        .iter()
        .enumerate()
        .map(|(i, r)| (r.rank().unwrap_or(i as u32), r.summary()))
        .collect();

    let export_perfetto = |format, name: &str| -> anyhow::Result<PathBuf> {
        let out = request.out_dir.join(name);
        crate::export::run_export(&crate::export::ExportRequest {
            paths: profiled.files.clone(),
            format,
            out: out.clone(),
            lenient: false,
            progress: false,
            device_spec: None,
        })
        .with_context(|| format!("writing {}", out.display()))?;
        Ok(out)
    };
    let perfetto = request
        .perfetto
        .then(|| export_perfetto(crate::export::ExportFormat::Perfetto, "trace.pftrace"))
        .transpose()?;
    let perfetto_archive = request
        .perfetto_archive
        .then(|| export_perfetto(crate::export::ExportFormat::PerfettoArchive, "perfetto.tar"))
        .transpose()?;
    let files = match request.output {
        RunOutput::Kineto => profiled.files,
        RunOutput::NeuronExplorer => write_profiles(&profiled.files, &request.out_dir)?,
    };
    let set = load_paths(&files, &LoadOptions::default())
        .context("reading the traces back for analysis")?;
    let analysis = analyze(&set, &ReportOptions::default());
    Ok(RunOutcome {
        perfetto,
        perfetto_archive,
        kept,
        report,
        files,
        out_dir: request.out_dir.clone(),
        summaries,
        bottleneck_rank: analysis.collectives.bottleneck_rank,
        device_time: RankDeviceTime::of(&analysis.steps, &analysis.collectives.per_step),
        step_window: analysis
            .steps
            .first()
            .map(|s| s.window)
            .filter(|&w| analysis.steps.iter().all(|s| s.window == w)),
        insights: analysis
            .insights
            .iter()
            .map(|i| i.summary.clone())
            .collect(),
        wall,
        numerics: config.numerics,
    })
}

/// Writes the run's summary for a person.
pub fn render_outcome(outcome: &RunOutcome, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let steps = outcome.report.steps.len();
    let losses: Vec<f64> = outcome.report.steps.iter().filter_map(|s| s.loss).collect();
    write!(
        out,
        "ran {steps} step(s) in {:.1} s of wall time",
        outcome.wall.as_secs_f64()
    )?;
    if !outcome.numerics {
        write!(out, " (timing only)")?;
    }
    if let (Some(first), Some(last)) = (losses.first(), losses.last()) {
        write!(out, "; loss {first:.4} -> {last:.4}")?;
    }
    if let Some(accuracy) = outcome.report.accuracy {
        write!(out, "; held-out accuracy {:.1}%", accuracy * 100.0)?;
    }
    if let Some(tps) = outcome.report.tokens_per_sec {
        write!(out, "; {tps:.0} tokens/s of modeled time")?;
    }
    writeln!(out)?;
    if let Some(kept) = &outcome.kept {
        writeln!(out, "{kept}")?;
    }
    // The steps as `analyze` splits them (its Steps table): the four device parts add
    // up to each rank's steps; a collective waiting for a late peer is not work.
    writeln!(
        out,
        "\nrank  recorded steps  mean step  device working  collective transfer  \
         waiting for peers  device idle  peak HBM allocated"
    )?;
    for (rank, s) in &outcome.summaries {
        let peak = s.peak_allocated_bytes.map_or("-".to_owned(), |b| {
            format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
        });
        let time = outcome
            .device_time
            .iter()
            .find(|t| t.rank == i64::from(*rank));
        let share = |part: fn(&RankDeviceTime) -> f64| {
            time.map_or("-".to_owned(), |t| format!("{:.1}%", t.percent(part(t))))
        };
        let mean = time.map_or("-".to_owned(), |t| {
            crate::inspect::human_duration((t.mean_step_us() * 1000.0) as i64)
        });
        writeln!(
            out,
            "{rank:>4}  {:>14}  {mean:>9}  {:>14}  {:>19}  {:>17}  {:>11}  {peak:>18}{}",
            s.steps,
            share(|t| t.working_us),
            share(|t| t.transfer_us),
            share(|t| t.waiting_us),
            share(|t| t.idle_us),
            if s.dropped_records > 0 {
                format!("  ({} records dropped)", s.dropped_records)
            } else {
                String::new()
            }
        )?;
    }
    if let Some(window) = outcome.device_time.first().and(outcome.step_window) {
        writeln!(
            out,
            "(mean step and shares over each step's {}, as neuronprof analyze's Steps table)",
            window.label()
        )?;
    }
    for t in &outcome.device_time {
        // Waiting hidden under computation, when it shows at one decimal.
        if t.percent(t.collective_wait_us - t.waiting_us) >= 0.05 {
            writeln!(
                out,
                "rank {}: its collectives waited {:.1}% of its steps for a late peer, \
                 {:.1}% with no computation running",
                t.rank,
                t.percent(t.collective_wait_us),
                t.percent(t.waiting_us)
            )?;
        }
    }
    if let Some(rank) = outcome.bottleneck_rank {
        writeln!(
            out,
            "\nslow rank: {rank} (the other ranks waited for it in collectives)"
        )?;
    }
    if !outcome.insights.is_empty() {
        writeln!(out, "\ninsights (neuronprof analyze):")?;
        for (i, insight) in outcome.insights.iter().take(5).enumerate() {
            writeln!(out, "{:>2}. {insight}", i + 1)?;
        }
    }
    writeln!(out, "\ntraces:")?;
    for file in &outcome.files {
        writeln!(out, "  {}", file.display())?;
    }
    if let Some(perfetto) = &outcome.perfetto {
        writeln!(
            out,
            "  {}  (all ranks, Perfetto: open in ui.perfetto.dev)",
            perfetto.display()
        )?;
    }
    if let Some(archive) = &outcome.perfetto_archive {
        writeln!(
            out,
            "  {}  (a trace per rank and a manifest, one timeline: open in ui.perfetto.dev, \
             v58 or later)",
            archive.display()
        )?;
    }
    if !outcome.files.is_empty() {
        let dir = outcome.out_dir.display();
        writeln!(
            out,
            "\nnext: neuronprof analyze {dir}    neuronprof inspect {dir}"
        )?;
    }
    Ok(())
}

/// `--output neuron-explorer`: each rank's Kineto trace written as a profile folder
/// `OUT/profiles/global/<trace name>@latest` (`neuron_explorer::write_profile`), then
/// removed; the folders, in the traces' order.
fn write_profiles(traces: &[PathBuf], out_dir: &std::path::Path) -> anyhow::Result<Vec<PathBuf>> {
    let global = out_dir.join("profiles").join("global");
    let mut dirs = Vec::with_capacity(traces.len());
    for trace in traces {
        let name = trace
            .file_name()
            .and_then(|n| n.to_str())
            .map(|n| {
                [".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"]
                    .iter()
                    .find_map(|suffix| n.strip_suffix(suffix))
                    .unwrap_or(n)
            })
            .unwrap_or("trace");
        let dir = global.join(format!("{name}@latest"));
        neuron_explorer::write_profile(trace, &dir)
            .with_context(|| format!("writing {} as {}", trace.display(), dir.display()))?;
        std::fs::remove_file(trace).with_context(|| format!("removing {}", trace.display()))?;
        dirs.push(dir);
    }
    Ok(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn straggler_parses_rank_and_factor() {
        assert_eq!(parse_straggler("2:1.5").unwrap(), (2, 1.5));
        assert!(parse_straggler("2").is_err());
        assert!(parse_straggler("x:2").is_err());
        assert!(parse_straggler("1:0.5")
            .unwrap_err()
            .to_string()
            .contains("≥ 1"));
    }

    #[test]
    fn out_dir_with_traces_is_refused() {
        let dir = std::env::temp_dir().join(format!("neuronprof-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        check_out_dir(&dir).unwrap();
        std::fs::write(dir.join("rank0.1.pt.trace.json.gz"), b"").unwrap();
        let err = check_out_dir(&dir).unwrap_err().to_string();
        assert!(err.contains("already holds 1 trace file"), "{err}");
        check_out_dir(&dir.join("absent")).unwrap();
    }

    #[test]
    fn profile_spec_sets_schedule_and_options() {
        let spec = ProfileSpec::parse("wait=1,warmup=1,active=2,repeat=2,memory=off").unwrap();
        let schedule = spec.schedule.unwrap();
        assert_eq!(
            (
                schedule.skip_first,
                schedule.wait,
                schedule.warmup,
                schedule.active,
                schedule.repeat
            ),
            (0, 1, 1, 2, 2)
        );
        assert!(!spec.memory && spec.shapes && spec.flops);
        assert_eq!(ProfileSpec::parse("").unwrap(), ProfileSpec::default());
        assert_eq!(ProfileSpec::parse("flops=off").unwrap().schedule, None);
        for (bad, why) in [
            ("wait", "not key=value"),
            ("wait=x", "not a count"),
            ("memory=maybe", "expected on or off"),
            ("colour=on", "unknown key"),
            ("active=0", "records nothing"),
        ] {
            let err = ProfileSpec::parse(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn device_and_lnc_pick_a_builtin_profile() {
        assert_eq!(device_profile("trn2", 2).unwrap().name, "trn2");
        assert_eq!(device_profile("trn2", 1).unwrap().lnc, 1);
        assert_eq!(device_profile("trn3", 2).unwrap().name, "trn3");
        assert!(device_profile("trn1", 2).is_err());
        assert!(device_profile("trn2", 4).is_err());
    }

    #[test]
    fn default_schedule_skips_and_warms_one_step() {
        let s = default_schedule(6);
        assert_eq!((s.skip_first, s.warmup, s.active), (1, 1, 4));
        let s = default_schedule(1);
        assert_eq!((s.skip_first, s.warmup, s.active), (0, 0, 1));
        let s = default_schedule(100_000);
        assert_eq!(
            (s.skip_first, s.warmup, s.active, s.repeat),
            (1, 1, DEFAULT_MAX_RECORDED_STEPS as u64, 1)
        );
    }

    #[test]
    fn a_run_longer_than_the_default_window_says_which_steps_it_keeps() {
        let request = RunRequest::new("gpt");
        assert_eq!(kept_steps(&request, 6), None);
        assert_eq!(kept_steps(&request, DEFAULT_MAX_RECORDED_STEPS + 2), None);
        let kept = kept_steps(&request, 100_000).unwrap();
        assert!(
            kept.starts_with("the traces keep steps 2-11 of 100000"),
            "{kept}"
        );
        let mut request = RunRequest::new("gpt");
        request.profile = ProfileSpec::parse("active=2").unwrap();
        assert_eq!(kept_steps(&request, 100_000), None, "a schedule was given");
    }

    #[test]
    fn device_info_states_capacity_and_peaks() {
        let profile = device_profile("trn2", 2).unwrap();
        let info = device_info(&profile, 3);
        assert_eq!(info.index, 3);
        assert_eq!(
            info.hbm_bytes,
            24 << 30,
            "trn2 LNC=2: one 24 GiB bank per logical core"
        );
        let bf16 = info
            .peak_tflops
            .iter()
            .find(|(d, _)| d == "bf16")
            .unwrap()
            .1;
        assert!((bf16 - 2.0 * profile.tensor_bf16_tflops).abs() < 1e-9);
    }
}
