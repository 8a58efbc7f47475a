//! Every HTA analysis in one call, as one serializable report.

use serde::Serialize;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::analyses::collectives::{self, collective_parts, Collectives};
use crate::analyses::compile::{rank_compile, RankCompile};
use crate::analyses::idle_time::{idle_time_breakdown, IdleTimeBreakdown};
use crate::analyses::kernel_breakdown::{
    kernel_breakdown_from, kernel_part, KernelBreakdown, KernelNames, KernelPart,
};
use crate::analyses::launch_stats::{launch_stats, LaunchStats};
use crate::analyses::memory::{memory_timeline, MemoryTimeline};
use crate::analyses::memory_bw::{memory_bw_summary, MemoryBwEntry};
use crate::analyses::operators::{operator_table_with, OperatorOptions, OperatorTable};
use crate::analyses::overlap::{overlap_rank, CommCompOverlap, OverlapRank};
use crate::analyses::queue_length::{queue_length_summary, QueueLengthStream};
use crate::analyses::steps::{rank_steps_exposing, Bound, Exposed, StepSplit};
use crate::analyses::stragglers::{
    potential_stragglers_from, straggler_part, StragglerPart, Stragglers,
};
use crate::analyses::temporal::{
    temporal_breakdown_from, temporal_rank, TemporalBreakdown, TemporalRank,
};
use crate::analyses::transfers::{transfers, TransferKind, SMALL_TRANSFER_BYTES};
use crate::analyses::utilization::{utilization, DeviceUtilization, UtilizationOptions};
use crate::classify::{HtaVersion, Mode};
use crate::error::AnalysisError;
use crate::frame::{last_step_filter_applies, rank_frames, step_names, Frame};
use crate::inputs::RankWindows;
use crate::model::{load_each, InputPlan, LoadOptions, RankTrace, TraceSet};
use crate::stats::NumpySort;

/// Settings of [`analyze`], with HTA's defaults as used for the shared references.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReportOptions {
    /// Rule set.
    pub mode: Mode,
    /// In compat mode, which HTA release's rules (its kernel-name rules differ).
    pub hta_version: HtaVersion,
    /// In compat mode, whose order of equal timestamps HTA's sorts take: the numpy
    /// kernel under the HTA being compared with (AVX-512 by default).
    pub numpy_sort: NumpySort,
    /// Names per (type, rank) in the kernel tables before folding into `others` (HTA
    /// default 10; the shared references use 5).
    pub num_kernels: usize,
    /// Cumulative-time quantile past which kernels fold into `others` (0.8).
    pub duration_ratio: f64,
    /// Gap below which idle time is kernel wait, µs (30).
    pub consecutive_kernel_delay_us: i64,
    /// Launch call duration outlier cutoff, µs (50).
    pub runtime_cutoff_us: f64,
    /// Launch delay outlier cutoff, µs (100).
    pub launch_delay_cutoff_us: f64,
    /// Stragglers to report (2).
    pub num_candidates: usize,
    /// Thresholds for the insights.
    pub thresholds: crate::insights::Thresholds,
    /// Nominal bus bandwidth of the interconnect, GB/s, for every group's fraction of
    /// it (`--peak-bus-gbps`; `None`: each group's link as its ranks' traces describe it,
    /// [`collectives::Placement`]).
    pub peak_bus_gbps: Option<f64>,
    /// Ranks per node (`--ranks-per-node`): rank `r` runs on node `r / N`; `None`: the
    /// nodes the traces name.
    pub ranks_per_node: Option<u32>,
    /// Restrict every analysis to one `ProfilerStep#N` (HTA's last-step filter is then
    /// off, so any step can be chosen); `None`: HTA's selection.
    pub step: Option<i64>,
    /// Ranks for the per-rank analyses (idle time, queue length, memory bandwidth,
    /// launch statistics); `None`: HTA's default, the first rank.
    pub ranks: Option<Vec<i64>>,
    /// The dtype whose peak MFU/HFU are computed against (`bf16`).
    pub peak_dtype: String,
    /// Split the operator table by `Input Dims`
    /// (`key_averages(group_by_input_shape=True)`); default off.
    pub operators_by_shape: bool,
    /// The device of the roofline table (`--device-spec`); `None`: found from the
    /// trace's `deviceProperties` ([`crate::analyses::roofline`]).
    pub device_spec: Option<perf_model::DeviceSpec>,
    /// Whether to build the roofline table ([`RankReport::roofline`]); on by default.
    /// Off leaves it `null` with no error: what the performance model costs `analyze` is
    /// measured with it (`scripts/bench-roofline`).
    pub roofline: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            mode: Mode::Default,
            hta_version: HtaVersion::default(),
            numpy_sort: NumpySort::default(),
            num_kernels: 10,
            duration_ratio: 0.8,
            consecutive_kernel_delay_us: 30,
            runtime_cutoff_us: 50.0,
            launch_delay_cutoff_us: 100.0,
            num_candidates: 2,
            peak_bus_gbps: None,
            ranks_per_node: None,
            thresholds: crate::insights::Thresholds::default(),
            step: None,
            ranks: None,
            peak_dtype: "bf16".to_owned(),
            operators_by_shape: false,
            device_spec: None,
            roofline: true,
        }
    }
}

impl ReportOptions {
    /// HTA-compatible settings as used for `tests/data/traces/hta-reference/`
    /// (`num_kernels = 5`, every rank).
    pub fn hta_reference() -> Self {
        ReportOptions {
            mode: Mode::HtaCompat,
            num_kernels: 5,
            ..ReportOptions::default()
        }
    }

    /// Sets [`ReportOptions::mode`].
    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets [`ReportOptions::hta_version`]: compat mode follows `version`'s rules.
    pub fn with_hta_version(mut self, version: HtaVersion) -> Self {
        self.hta_version = version;
        self
    }

    /// Sets [`ReportOptions::numpy_sort`].
    pub fn with_numpy_sort(mut self, sort: NumpySort) -> Self {
        self.numpy_sort = sort;
        self
    }

    /// Sets [`ReportOptions::ranks`].
    pub fn with_ranks(mut self, ranks: Option<Vec<i64>>) -> Self {
        self.ranks = ranks;
        self
    }

    /// Sets [`ReportOptions::ranks_per_node`].
    pub fn with_ranks_per_node(mut self, ranks_per_node: Option<u32>) -> Self {
        self.ranks_per_node = ranks_per_node;
        self
    }

    /// Sets [`ReportOptions::peak_bus_gbps`].
    pub fn with_peak_bus_gbps(mut self, peak: Option<f64>) -> Self {
        self.peak_bus_gbps = peak;
        self
    }

    /// Sets [`ReportOptions::step`].
    pub fn with_step(mut self, step: Option<i64>) -> Self {
        self.step = step;
        self
    }

    /// Sets [`ReportOptions::peak_dtype`].
    pub fn with_peak_dtype(mut self, dtype: &str) -> Self {
        self.peak_dtype = dtype.to_owned();
        self
    }

    /// Sets [`ReportOptions::operators_by_shape`].
    pub fn with_operators_by_shape(mut self, on: bool) -> Self {
        self.operators_by_shape = on;
        self
    }

    /// Sets [`ReportOptions::roofline`].
    pub fn with_roofline(mut self, on: bool) -> Self {
        self.roofline = on;
        self
    }

    /// Sets [`ReportOptions::device_spec`].
    pub fn with_device_spec(mut self, device: Option<perf_model::DeviceSpec>) -> Self {
        self.device_spec = device;
        self
    }

    /// Sets [`ReportOptions::num_kernels`].
    pub fn with_num_kernels(mut self, num_kernels: usize) -> Self {
        self.num_kernels = num_kernels;
        self
    }
}

/// Per-rank results of the single-rank analyses.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankReport {
    /// The rank.
    pub rank: i64,
    /// Idle time by stream and category.
    pub idle_time: IdleTimeBreakdown,
    /// Queue length per stream.
    pub queue_length: Vec<QueueLengthStream>,
    /// Memory bandwidth per copy kind.
    pub memory_bw: Vec<MemoryBwEntry>,
    /// Launch statistics.
    pub launch_stats: LaunchStats,
    /// Memory timeline from `[memory]` events (beyond HTA).
    pub memory: MemoryTimeline,
    /// Copies and memsets by kind, with small-transfer counts (beyond HTA).
    pub transfers: Vec<TransferKind>,
    /// The `key_averages`-style operator table (beyond HTA; see
    /// [`crate::analyses::operators`]): per operator name (and `Input Dims` with
    /// [`ReportOptions::operators_by_shape`]) calls, host total and self time, device self
    /// and total time, every operator, largest device total first. JSON: `{"rank",
    /// "by_shape", "step", "operators": [{"name", "input_dims", "calls", "cpu_total_us",
    /// "cpu_self_us", "device_self_us", "device_total_us"}, …]}`. With
    /// [`ReportOptions::step`] only operators that start in that `ProfilerStep`, with the
    /// device time they launched. Same in both modes (HTA has no such table). `null` when
    /// it cannot be made (the traces were loaded without host operators, or the rank has
    /// no such step), with the reason in [`Report::errors`].
    pub operators: Option<OperatorTable>,
    /// How far each operator is from the device's roofline (beyond HTA; see
    /// [`crate::analyses::roofline`]): per operator and unique arguments, kernel time,
    /// FLOPs, bytes, achieved rates and the roofline, ranked by the time reaching it
    /// would win; the whole trace. `null` when it cannot be made (no host operators),
    /// with the reason in [`Report::errors`], or when [`ReportOptions::roofline`] is off.
    pub roofline: Option<crate::analyses::roofline::RankRoofline>,
}

/// All analyses. JSON schema: this struct serialized with serde (field names as here;
/// times in µs; `null` where HTA prints `NaN`; an analysis that cannot run is `null`
/// with its reason in `errors`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The mode used.
    pub mode: Mode,
    /// The HTA release whose rules compat mode followed (`"0.5"`, `"0.6"`); `null` in
    /// the default mode.
    pub hta_version: Option<HtaVersion>,
    /// Findings, most important first (see [`crate::insights`]).
    pub insights: Vec<crate::insights::Finding>,
    /// The first rank's device: HTA's device type in compat mode (`NVIDIA GPU`, …), a
    /// label from `deviceProperties` in the default mode (`Trainium2 NeuronCore (trn2,
    /// LNC=2)`, see [`crate::RankTrace::device_label`]).
    pub device_type: String,
    /// Ranks analyzed.
    pub ranks: Vec<i64>,
    /// Whether any rank has device activity (a kernel, copy, memset or MTIA
    /// command-processor row). Without any (a CPU-only run), the default mode gives the
    /// host-side analyses only: `device_type` is `"none"`, the temporal breakdown is
    /// `null` and the step split empty, and no finding is about the device.
    pub device_activity: bool,
    /// Whether HTA's last-step filter was applied.
    pub last_step_filtered: bool,
    /// The one step analyzed, when chosen.
    pub step: Option<i64>,
    /// Temporal breakdown.
    pub temporal_breakdown: Option<TemporalBreakdown>,
    /// Communication–computation overlap.
    pub comm_comp_overlap: CommCompOverlap,
    /// Kernel breakdown.
    pub kernel_breakdown: KernelBreakdown,
    /// Per-rank analyses.
    pub per_rank: Vec<RankReport>,
    /// Potential stragglers.
    pub stragglers: Option<Stragglers>,
    /// Every `ProfilerStep` of every rank split by what the device did (beyond HTA;
    /// computed without HTA's last-step filter).
    pub steps: Vec<StepSplit>,
    /// Collectives matched across ranks (beyond HTA).
    pub collectives: Collectives,
    /// Per rank and device: engine and core activity, MFU/HFU, DMA, TensorE throttling,
    /// host- versus device-bound steps (beyond HTA; every rank, every step or the one
    /// chosen).
    pub utilization: Vec<DeviceUtilization>,
    /// `torch.compile` per rank that shows any (beyond HTA, [`crate::analyses::compile`]):
    /// Dynamo's compiled regions, graph kernels, compile ranges, and the extension's
    /// counts of graph breaks and recompiles with their reasons.
    pub compile: Vec<RankCompile>,
    /// Analyses that could not run, with why, and damage found by a lenient read.
    pub errors: Vec<String>,
    /// Where the numbers of this mode and of the other differ, and why (HTA's rounding
    /// of sub-µs device rows to negative durations, for one).
    pub notes: Vec<String>,
}

/// Runs every analysis over the loaded ranks. Each rank is reduced on its own to what
/// the cross-rank analyses need of it (a rank summary: its rows of the temporal
/// breakdown and overlap, its kernel tables, its straggler candidates, steps and copies
/// of collectives, its utilization, and for the ranks of the per-rank analyses their
/// results), ranks on all cores and each rank's independent analyses on their own
/// threads; each summary is folded into the report being combined as soon as it is made
/// (in any order of ranks). [`analyze_paths`] does the same from files, a few ranks in
/// memory at a time, with the same results.
pub fn analyze(set: &TraceSet, options: &ReportOptions) -> Report {
    let filter = last_step_filter_applies(
        set.ranks.iter().flat_map(step_names),
        set.ranks.first().map_or("UNKNOWN GPU", |r| r.device_type()),
        options.hta_version,
    );
    // HTA's default for the per-rank analyses: the first rank.
    let wanted = options
        .ranks
        .clone()
        .unwrap_or_else(|| set.ranks.iter().take(1).map(|t| t.rank).collect());
    let context = Context::new(options, Some(filter), Some(wanted));
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(set.ranks.len());
    let next = AtomicUsize::new(0);
    let combiner = Mutex::new(Combiner::new(&context));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(trace) = set.ranks.get(i) else {
                    break;
                };
                let summary = summarize(trace, &context);
                lock(&combiner).add(summary);
            });
        }
    });
    combiner
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .finish(window_notes(&set.windows))
        .expect("the ranks of a trace set are distinct and its filter is known")
}

/// [`analyze`] over rank trace files, reading them a few at a time: each rank is
/// summarized as soon as it is read, its trace dropped ([`load_each`]) and its summary
/// folded into the report being combined, so memory holds at most one trace per core
/// and summary, plus what each rank leaves in the report (its rows), however many ranks
/// there are; the report equals `analyze(&load_ranks(paths)?, options)`. Ranks come from the
/// files, else their position. Errors: a file that cannot be read (file, byte offset,
/// event index), two files of one rank, no files. HTA's last-step filter depends on
/// every rank's `ProfilerStep` names; a rank that cannot tell on its own (fewer than two
/// step names) is analyzed both ways and the right one kept.
pub fn analyze_paths(
    paths: &[(Option<i64>, &Path)],
    load: &LoadOptions,
    options: &ReportOptions,
) -> Result<Report, AnalysisError> {
    analyze_files(paths, load, options, Vec::new())
}

/// [`analyze_paths`] over the chosen window of each rank of `plan` ([`plan_inputs`]),
/// with its ranks, and a note per rank with several windows: what
/// `analyze(&plan.load(load)?, options)` gives, a few ranks in memory at a time.
pub fn analyze_plan(
    plan: &InputPlan,
    load: &LoadOptions,
    options: &ReportOptions,
) -> Result<Report, AnalysisError> {
    let ranked: Vec<(Option<i64>, &Path)> = plan
        .files
        .iter()
        .map(|(rank, path)| (Some(*rank), path.as_path()))
        .collect();
    let windows: Vec<RankWindows> = plan
        .windows
        .iter()
        .filter(|w| w.files.len() > 1)
        .cloned()
        .collect();
    analyze_files(&ranked, load, options, window_notes(&windows))
}

/// [`analyze_paths`] with notes on ranks with several windows: each rank summarized as
/// soon as it is read, its trace dropped, and the summary folded into the report being
/// combined ([`Combiner`]), so that only one trace per core and what each rank leaves in
/// the report are in memory at a time.
fn analyze_files(
    paths: &[(Option<i64>, &Path)],
    load: &LoadOptions,
    options: &ReportOptions,
    window_notes: Vec<String>,
) -> Result<Report, AnalysisError> {
    let context = Context::new(options, None, options.ranks.clone());
    let combiner = Mutex::new(Combiner::new(&context));
    let ranks = load_each(paths, load, |trace| {
        let summary = summarize(&trace, &context);
        let rank = trace.rank;
        drop(trace);
        lock(&combiner).add(summary);
        rank
    })?;
    // Of two files claiming one rank, the later is reported (as `load_ranks` does).
    let mut order: Vec<(i64, usize)> = ranks.into_iter().zip(0..).collect();
    order.sort_unstable();
    if let Some(pair) = order.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(AnalysisError::DuplicateRank {
            rank: pair[1].0,
            path: paths[pair[1].1].1.to_path_buf(),
        });
    }
    combiner
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .finish(window_notes)
}

fn lock<'m, 'c, 'o>(
    combiner: &'m Mutex<Combiner<'c, 'o>>,
) -> std::sync::MutexGuard<'m, Combiner<'c, 'o>> {
    combiner.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What every rank's summary is made with.
struct Context<'o> {
    options: &'o ReportOptions,
    /// Whether HTA's last-step filter applies, when known before the ranks are read.
    filter: Option<bool>,
    /// The ranks of the per-rank analyses; `None`: the lowest rank, not known until every
    /// rank is read, so each rank lower than any seen before is analyzed.
    wanted: Option<Vec<i64>>,
    lowest_seen: AtomicI64,
    operator_options: OperatorOptions,
    roofline_options: crate::analyses::roofline::RooflineOptions,
    utilization_options: UtilizationOptions,
    /// One copy of each kernel name for every rank's kernel table.
    kernel_names: KernelNames,
}

impl<'o> Context<'o> {
    fn new(options: &'o ReportOptions, filter: Option<bool>, wanted: Option<Vec<i64>>) -> Self {
        Context {
            options,
            filter,
            wanted,
            lowest_seen: AtomicI64::new(i64::MAX),
            operator_options: OperatorOptions::default()
                .with_by_shape(options.operators_by_shape)
                .with_step(options.step),
            roofline_options: crate::analyses::roofline::RooflineOptions::default()
                .with_device(options.device_spec.clone()),
            utilization_options: UtilizationOptions::default()
                .with_peak_dtype(&options.peak_dtype)
                .with_step(options.step),
            kernel_names: KernelNames::default(),
        }
    }

    /// Whether `rank` gets the per-rank analyses.
    fn wants(&self, rank: i64) -> bool {
        match &self.wanted {
            Some(ranks) => ranks.contains(&rank),
            None => self.lowest_seen.fetch_min(rank, Ordering::Relaxed) >= rank,
        }
    }
}

/// One rank reduced to what the report needs of it.
struct RankSummary {
    rank: i64,
    /// HTA's device type, and our label of it.
    device_type: &'static str,
    device_label: String,
    /// Its `ProfilerStep#N` names (for HTA's last-step filter).
    step_names: Vec<String>,
    /// Damage a lenient read skipped, as a report error.
    damage: Option<String>,
    /// Whether it has device activity (a kernel, copy, memset or MTIA
    /// command-processor row).
    device_activity: bool,
    /// Its sub-µs device rows that HTA's rounding makes negative ([`rounding_note`]).
    rounding_note: Option<String>,
    /// The analyses of the frame with HTA's last-step filter, when it applies.
    views: Views,
    steps: Vec<StepSplit>,
    /// Each step's exposed communication (for its waiting for peers, once matched).
    exposed: Vec<Exposed>,
    collectives: Vec<collectives::Part>,
    /// Where the rank ran (its node and links), for the collective report.
    place: collectives::RankPlace,
    utilization: Vec<DeviceUtilization>,
    compile: Option<RankCompile>,
    /// Why its `neuron_compile` member could not be read (reported for every rank).
    compile_error: Option<String>,
    /// For a rank of the per-rank analyses: its memory timeline and operator table.
    #[allow(clippy::type_complexity)]
    from_trace: Option<(
        MemoryTimeline,
        Option<OperatorTable>,
        Option<crate::analyses::roofline::RankRoofline>,
    )>,
    /// Why its operator table could not be made.
    errors: Vec<String>,
}

/// The frame analyses of a rank: one set when whether HTA's last-step filter applies
/// was known while it was summarized, else with and without the filter.
enum Views {
    Known(Box<View>),
    Either {
        filtered: Box<View>,
        unfiltered: Box<View>,
    },
}

/// A rank's part of the analyses of the (filtered) frames.
struct View {
    /// Whether the last-step filter was applied to the frame.
    filtered: bool,
    temporal: Result<TemporalRank, AnalysisError>,
    overlap: OverlapRank,
    kernels: KernelPart,
    stragglers: StragglerPart,
    /// For a rank of the per-rank analyses.
    per_rank: Option<FrameRankParts>,
}

struct FrameRankParts {
    idle_time: IdleTimeBreakdown,
    queue_length: Vec<QueueLengthStream>,
    memory_bw: Vec<MemoryBwEntry>,
    launch_stats: LaunchStats,
    transfers: Vec<TransferKind>,
}

/// Summarizes one rank: the analyses that need only the trace (memory timeline,
/// operators, utilization) on one thread while the frames are built, then the frame
/// analyses, which are independent, on their own threads.
fn summarize(trace: &RankTrace, context: &Context<'_>) -> RankSummary {
    let options = context.options;
    let wanted = context.wants(trace.rank);
    let step_names: Vec<String> = step_names(trace).map(str::to_owned).collect();
    // Whether the last-step filter applies, if this rank can tell: known beforehand, or
    // this rank alone has two step names (an MTIA rank under HTA 0.6 is not filtered).
    let filter = context.filter.or_else(|| {
        let mtia_06 = trace.device_type() == "MTIA" && options.hta_version == HtaVersion::V0_6;
        (step_names.len() >= 2 && !mtia_06).then_some(true)
    });
    std::thread::scope(|scope| {
        // The roofline table on a thread of its own: it reads the trace as the operator
        // table does, and beside it adds no wall time where a core is free.
        let roofline = (wanted && options.roofline).then(|| {
            scope.spawn(|| {
                crate::analyses::roofline::roofline_table(trace, &context.roofline_options)
            })
        });
        let from_trace = scope.spawn(|| {
            let mut errors = Vec::new();
            let from_trace = wanted.then(|| {
                (
                    memory_timeline(trace),
                    operator_table_with(trace, &context.operator_options)
                        .map_err(|e| errors.push(e.to_string()))
                        .ok(),
                    None,
                )
            });
            let devices = utilization(trace, &context.utilization_options);
            (from_trace, devices, errors)
        });
        let (mode, version) = (options.mode, options.hta_version);
        let (mut filtered, mut unfiltered) = match (options.step, filter) {
            (Some(step), _) => {
                let (mut frame, _) = rank_frames(trace, mode, version, false, false);
                frame.rows.retain(|r| r.iteration == step);
                (frame, None)
            }
            (None, Some(filter)) => rank_frames(trace, mode, version, filter, true),
            (None, None) => rank_frames(trace, mode, version, true, true),
        };
        filtered.numpy_sort = options.numpy_sort;
        if let Some(frame) = &mut unfiltered {
            frame.numpy_sort = options.numpy_sort;
        }
        let unfiltered = unfiltered.as_ref().unwrap_or(&filtered);
        let both = options.step.is_none() && filter.is_none();
        let (views, (steps, exposed), collectives) = std::thread::scope(|scope| {
            let steps = scope.spawn(|| rank_steps_exposing(unfiltered, options.step));
            let other = both.then(|| scope.spawn(|| view(unfiltered, wanted, context)));
            let collectives = scope.spawn(|| collective_parts(unfiltered));
            let view = view(&filtered, wanted, context);
            let views = match other {
                Some(other) => Views::Either {
                    filtered: Box::new(view),
                    unfiltered: Box::new(other.join().expect("rank analyses panicked")),
                },
                None => Views::Known(Box::new(view)),
            };
            (
                views,
                steps.join().expect("step split panicked"),
                collectives.join().expect("collectives panicked"),
            )
        });
        let (mut from_trace, mut utilization, mut errors) =
            from_trace.join().expect("trace analyses panicked");
        if let (Some(parts), Some(roofline)) = (&mut from_trace, roofline) {
            match roofline.join().expect("roofline panicked") {
                Ok(table) => parts.2 = Some(table),
                Err(e) => errors.push(e.to_string()),
            }
        }
        let (compile, compile_error) = rank_compile(trace);
        for device in &mut utilization {
            for s in &steps {
                match s.bound {
                    Bound::Host => device.host_bound_steps += 1,
                    Bound::Device => device.device_bound_steps += 1,
                }
            }
        }
        RankSummary {
            rank: trace.rank,
            device_type: trace.device_type(),
            device_label: trace.device_label(),
            step_names,
            damage: (trace.counts.events_skipped > 0 || !trace.damage.is_empty()).then(|| {
                format!(
                    "rank {}: {} events read, {} damaged events skipped; {}",
                    trace.rank,
                    trace.counts.events,
                    trace.counts.events_skipped,
                    trace.damage.join("; ")
                )
            }),
            device_activity: trace
                .rows
                .iter()
                .any(|r| crate::classify::is_device_work_category(trace.category(r))),
            rounding_note: rounding_note(trace, options.mode),
            views,
            steps,
            exposed,
            collectives,
            place: collectives::RankPlace::of(trace),
            utilization,
            compile,
            compile_error,
            from_trace,
            errors,
        }
    })
}

/// A rank's part of the frame analyses: the per-rank ones (when `wanted`) in two halves
/// of about equal cost on their own threads, the cross-rank parts on this one.
fn view(frame: &Frame<'_>, wanted: bool, context: &Context<'_>) -> View {
    let options = context.options;
    std::thread::scope(|scope| {
        let per_rank = wanted.then(|| {
            let queues = scope.spawn(|| {
                (
                    idle_time_breakdown(frame, options.consecutive_kernel_delay_us),
                    queue_length_summary(frame),
                    memory_bw_summary(frame),
                )
            });
            let launches = scope.spawn(|| {
                (
                    launch_stats(
                        frame,
                        options.runtime_cutoff_us,
                        options.launch_delay_cutoff_us,
                    ),
                    transfers(frame, SMALL_TRANSFER_BYTES),
                )
            });
            (queues, launches)
        });
        let temporal = temporal_rank(frame);
        let stragglers = straggler_part(frame);
        let overlap = overlap_rank(frame);
        let kernels = kernel_part(
            frame,
            options.num_kernels,
            options.duration_ratio,
            &context.kernel_names,
        );
        let per_rank = per_rank.map(|(queues, launches)| {
            let (idle_time, queue_length, memory_bw) =
                queues.join().expect("per-rank analyses panicked");
            let (launch_stats, transfers) = launches.join().expect("per-rank analyses panicked");
            FrameRankParts {
                idle_time,
                queue_length,
                memory_bw,
                launch_stats,
                transfers,
            }
        });
        View {
            filtered: frame.filtered,
            temporal,
            overlap,
            kernels,
            stragglers,
            per_rank,
        }
    })
}

impl RankSummary {
    /// Drops the results of the per-rank analyses (a rank that turned out not to be the
    /// lowest).
    fn drop_per_rank(&mut self) {
        self.from_trace = None;
        self.errors = Vec::new();
        match &mut self.views {
            Views::Known(view) => view.per_rank = None,
            Views::Either {
                filtered,
                unfiltered,
            } => {
                filtered.per_rank = None;
                unfiltered.per_rank = None;
            }
        }
    }
}

/// The report being combined from rank summaries as they come, in any order of ranks.
/// A summary's parts that only serve a cross-rank analysis are folded in when it is
/// added: its collectives into the matched instances (their key and arguments once, 32
/// bytes per rank, [`collectives::Matcher`]) and its step names into the distinct ones;
/// what is kept of each rank is what it leaves in the report (its rows of the temporal
/// breakdown, overlap, kernel tables, steps, utilization and compile, its notes), its
/// straggler part and kernel-type times (summed in rank order at the end, for the same
/// floating-point sums), and for the lowest rank (or the chosen ones) the per-rank
/// analyses.
struct Combiner<'c, 'o> {
    context: &'c Context<'o>,
    /// Every distinct `ProfilerStep#N` name (for HTA's last-step filter).
    step_names: BTreeSet<String>,
    collectives: collectives::Matcher,
    /// By rank; a second summary of a rank is left out (the caller reports it).
    ranks: BTreeMap<i64, RankSummary>,
}

impl<'c, 'o> Combiner<'c, 'o> {
    fn new(context: &'c Context<'o>) -> Self {
        Combiner {
            context,
            step_names: BTreeSet::new(),
            collectives: collectives::Matcher::default(),
            ranks: BTreeMap::new(),
        }
    }

    fn add(&mut self, mut summary: RankSummary) {
        if self.ranks.contains_key(&summary.rank) {
            return;
        }
        self.step_names
            .extend(std::mem::take(&mut summary.step_names));
        self.collectives
            .add(std::mem::take(&mut summary.collectives));
        if self.context.wanted.is_none() {
            // Only the lowest rank keeps its per-rank analyses.
            match self.ranks.first_key_value().map(|(&rank, _)| rank) {
                Some(lowest) if lowest < summary.rank => summary.drop_per_rank(),
                Some(lowest) => {
                    if let Some(previous) = self.ranks.get_mut(&lowest) {
                        previous.drop_per_rank();
                    }
                }
                None => {}
            }
        }
        self.ranks.insert(summary.rank, summary);
    }

    /// The report, with the notes on ranks with several profiling windows.
    fn finish(self, window_notes: Vec<String>) -> Result<Report, AnalysisError> {
        let Combiner {
            context,
            step_names,
            collectives: matched,
            ranks: summaries,
        } = self;
        combine(summaries, step_names, matched, context, window_notes)
    }
}

/// The report from every rank's summary (by rank), the distinct step names, the matched
/// collectives and the notes on ranks with several profiling windows.
fn combine(
    summaries: BTreeMap<i64, RankSummary>,
    all_step_names: BTreeSet<String>,
    matched: collectives::Matcher,
    context: &Context<'_>,
    window_notes: Vec<String>,
) -> Result<Report, AnalysisError> {
    let options = context.options;
    let first = summaries.first_key_value().map(|(_, s)| s);
    let first_device_type = first.map_or("UNKNOWN GPU", |s| s.device_type);
    let filter = context.filter.unwrap_or_else(|| {
        last_step_filter_applies(
            all_step_names.iter().map(String::as_str),
            first_device_type,
            options.hta_version,
        )
    });
    let mut errors: Vec<String> = summaries
        .values()
        .filter_map(|s| s.damage.clone())
        .collect();
    let device_activity = summaries.values().any(|s| s.device_activity);
    let host_only = !device_activity && options.mode == Mode::Default;
    let notes: Vec<String> = window_notes
        .into_iter()
        .chain(summaries.values().filter_map(|s| s.rounding_note.clone()))
        .collect();
    let lowest = first.map(|s| s.rank);
    let wanted = |rank: i64| match &context.wanted {
        Some(ranks) => ranks.contains(&rank),
        None => Some(rank) == lowest,
    };
    let device_type = match options.mode {
        Mode::HtaCompat => first_device_type.to_owned(),
        Mode::Default if host_only => "none".to_owned(),
        Mode::Default => {
            first.map_or_else(|| first_device_type.to_owned(), |s| s.device_label.clone())
        }
    };
    let ranks: Vec<i64> = summaries.keys().copied().collect();
    let placement = collectives::Placement {
        ranks: summaries
            .iter()
            .map(|(&rank, s)| (rank, s.place.clone()))
            .collect(),
        ranks_per_node: options.ranks_per_node,
        peak_bus_gbps: options.peak_bus_gbps,
    };
    let mut temporal = Vec::with_capacity(summaries.len());
    let mut overlap = Vec::with_capacity(summaries.len());
    let mut kernels = Vec::with_capacity(summaries.len());
    let mut stragglers = Vec::with_capacity(summaries.len());
    let mut per_rank = Vec::new();
    let mut operator_errors = Vec::new();
    let mut steps = Vec::new();
    let mut utilization = Vec::new();
    let mut compile = Vec::new();
    let mut last_step_filtered = false;
    let peer_waits = matched.peer_waits();
    for summary in summaries.into_values() {
        let view = match summary.views {
            Views::Either {
                filtered,
                unfiltered,
            } => {
                if filter {
                    *filtered
                } else {
                    *unfiltered
                }
            }
            Views::Known(view) => {
                let view = *view;
                if context.filter.is_none() && options.step.is_none() && !filter {
                    // Only when the first rank is an MTIA device under HTA 0.6 and this
                    // one, with two step names, is not.
                    return Err(AnalysisError::NotApplicable {
                        analysis: "analyze",
                        reason: format!(
                            "rank {} is not an MTIA device but the first rank is, so HTA 0.6 \
                             would not apply its last-step filter; analyze these ranks \
                             with --hta-version 0.5 or apart",
                            summary.rank
                        ),
                    });
                }
                view
            }
        };
        last_step_filtered |= view.filtered;
        temporal.push(view.temporal);
        overlap.push(view.overlap);
        kernels.push(view.kernels);
        stragglers.push(view.stragglers);
        compile.extend(summary.compile);
        errors.extend(summary.compile_error);
        if wanted(summary.rank) {
            if let (Some(parts), Some((memory, operators, roofline))) =
                (view.per_rank, summary.from_trace)
            {
                operator_errors.extend(summary.errors);
                per_rank.push(RankReport {
                    rank: summary.rank,
                    idle_time: parts.idle_time,
                    queue_length: parts.queue_length,
                    memory_bw: parts.memory_bw,
                    launch_stats: parts.launch_stats,
                    memory,
                    transfers: parts.transfers,
                    operators,
                    roofline,
                });
            }
        }
        let mut rank_steps = summary.steps;
        crate::analyses::peer_wait::fill(&mut rank_steps, &summary.exposed, &peer_waits);
        steps.extend(rank_steps);
        let mut rank_utilization = summary.utilization;
        if let Some(waits) = peer_waits.get(&summary.rank) {
            for device in &mut rank_utilization {
                device.fill_peer_waits(waits);
            }
        }
        utilization.extend(rank_utilization);
    }
    // A CPU-only run: the device analyses do not apply, and saying why each does not
    // would repeat the header.
    let mut note = |e: AnalysisError| {
        if !host_only {
            errors.push(e.to_string());
        }
    };
    let temporal = temporal_breakdown_from(temporal).map_err(&mut note).ok();
    let stragglers = potential_stragglers_from(stragglers, options.num_candidates)
        .map_err(&mut note)
        .ok();
    errors.extend(operator_errors);
    let mut report = Report {
        insights: Vec::new(),
        mode: options.mode,
        hta_version: (options.mode == Mode::HtaCompat).then_some(options.hta_version),
        device_type,
        ranks,
        device_activity,
        last_step_filtered: !host_only && options.step.is_none() && last_step_filtered,
        step: options.step,
        temporal_breakdown: temporal.filter(|_| !host_only),
        comm_comp_overlap: CommCompOverlap { ranks: overlap },
        kernel_breakdown: kernel_breakdown_from(kernels),
        per_rank,
        stragglers,
        steps: if host_only { Vec::new() } else { steps },
        collectives: matched.finish(&placement),
        utilization,
        compile,
        errors,
        notes,
    };
    report.insights = crate::insights::insights(&report, &options.thresholds);
    Ok(report)
}

/// Device rows whose duration HTA's rounding (`ts` up, `ts + dur` down, to whole µs)
/// makes negative: sub-µs rows that do not contain a whole µs boundary. HTA sums them as
/// they come (its `event_record` on the MTIA trace totals −198 µs); compat mode does the
/// same, to keep its numbers equal to HTA's. A negative duration is damage, not time, so
/// the default mode keeps every row's exact duration; the note says which rows differ.
fn rounding_note(trace: &RankTrace, mode: Mode) -> Option<String> {
    if !trace.ts_is_float {
        return None;
    }
    {
        let mut by_name: std::collections::BTreeMap<&str, u64> = Default::default();
        for row in &trace.rows {
            if !crate::classify::is_device_work_category(trace.category(row)) {
                continue;
            }
            let (start, end) = crate::frame::hta_round_us(row.ts_rel_ns, row.dur_ns);
            if end < start {
                *by_name.entry(trace.name(row)).or_default() += 1;
            }
        }
        if by_name.is_empty() {
            return None;
        }
        let total: u64 = by_name.values().sum();
        let mut names: Vec<(&str, u64)> = by_name.into_iter().collect();
        names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let listed: Vec<String> = names
            .iter()
            .take(3)
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        let more = if names.len() > 3 { ", …" } else { "" };
        Some(match mode {
            Mode::HtaCompat => format!(
                "rank {}: HTA's rounding to whole us gives {total} sub-us device rows a \
                 duration of -1 us ({}{more}); counted so here, as HTA does (the default \
                 mode keeps their exact durations)",
                trace.rank,
                listed.join(", ")
            ),
            Mode::Default => format!(
                "rank {}: {total} sub-us device rows ({}{more}) keep their exact durations; \
                 HTA (and --hta-compat) round them to -1 us",
                trace.rank,
                listed.join(", ")
            ),
        })
    }
}

/// One note per rank with several profiling windows: which file was analyzed.
fn window_notes(windows: &[RankWindows]) -> Vec<String> {
    windows
        .iter()
        .map(|w| {
            let name = |p: &std::path::PathBuf| {
                p.file_name()
                    .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
            };
            let names: Vec<String> = w.files.iter().map(name).collect();
            let why = w
                .why
                .as_ref()
                .map_or_else(String::new, |why| format!(": {why}"));
            format!(
                "rank {}: {} profiling windows ({}; {}); analyzed window {} of {}, {}{why} \
                 (--window N picks another)",
                w.rank,
                w.files.len(),
                names.join(", "),
                match w.grouped_by {
                    crate::inputs::GroupedBy::DistributedInfo => "one distributedInfo rank",
                    crate::inputs::GroupedBy::Process => "one process",
                },
                w.chosen + 1,
                w.files.len(),
                names[w.chosen]
            )
        })
        .collect()
}
