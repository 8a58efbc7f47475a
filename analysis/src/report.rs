//! Every HTA analysis in one call, as one serializable report.

use serde::Serialize;

use crate::analyses::collectives::{collectives, Collectives};
use crate::analyses::idle_time::{idle_time_breakdown, IdleTimeBreakdown};
use crate::analyses::kernel_breakdown::{kernel_breakdown, KernelBreakdown};
use crate::analyses::launch_stats::{launch_stats, LaunchStats};
use crate::analyses::memory::{memory_timeline, MemoryTimeline};
use crate::analyses::memory_bw::{memory_bw_summary, MemoryBwEntry};
use crate::analyses::operators::{operator_table_with, OperatorOptions, OperatorTable};
use crate::analyses::overlap::{comm_comp_overlap, CommCompOverlap};
use crate::analyses::queue_length::{queue_length_summary, QueueLengthStream};
use crate::analyses::steps::{step_splits, Bound, StepSplit};
use crate::analyses::stragglers::{potential_stragglers, Stragglers};
use crate::analyses::temporal::{temporal_breakdown, TemporalBreakdown};
use crate::analyses::transfers::{transfers, TransferKind, SMALL_TRANSFER_BYTES};
use crate::analyses::utilization::{utilization, DeviceUtilization, UtilizationOptions};
use crate::classify::{HtaVersion, Mode};
use crate::error::AnalysisError;
use crate::frame::{Frame, Frames};
use crate::model::{RankTrace, TraceSet};
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
    /// Peak bus bandwidth of the interconnect, GB/s, for the collectives' fraction of
    /// peak (`None`: not reported).
    pub peak_bus_gbps: Option<f64>,
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
            thresholds: crate::insights::Thresholds::default(),
            step: None,
            ranks: None,
            peak_dtype: "bf16".to_owned(),
            operators_by_shape: false,
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
    /// Analyses that could not run, with why, and damage found by a lenient read.
    pub errors: Vec<String>,
    /// Where the numbers of this mode and of the other differ, and why (HTA's rounding
    /// of sub-µs device rows to negative durations, for one).
    pub notes: Vec<String>,
}

/// Runs every analysis. The analyses that need only the traces (memory timeline,
/// operators, utilization) start at once on their own threads; the frames are built
/// once (both views) meanwhile; then the frame analyses, which are independent, run on
/// their own threads too.
pub fn analyze(set: &TraceSet, options: &ReportOptions) -> Report {
    let mut errors = Vec::new();
    let device_activity = set.ranks.iter().any(|t| {
        t.rows
            .iter()
            .any(|r| crate::classify::is_device_work_category(t.category(r)))
    });
    let host_only = !device_activity && options.mode == Mode::Default;
    for trace in &set.ranks {
        if trace.counts.events_skipped > 0 || !trace.damage.is_empty() {
            errors.push(format!(
                "rank {}: {} damaged events skipped; {}",
                trace.rank,
                trace.counts.events_skipped,
                trace.damage.join("; ")
            ));
        }
    }
    // Ranks are sorted in the set and frames are built one per rank in its order.
    let wanted: Vec<i64> = options
        .ranks
        .clone()
        .unwrap_or_else(|| set.ranks.iter().take(1).map(|t| t.rank).collect());
    let operator_options = OperatorOptions::default()
        .with_by_shape(options.operators_by_shape)
        .with_step(options.step);
    let utilization_options = UtilizationOptions::default()
        .with_peak_dtype(&options.peak_dtype)
        .with_step(options.step);
    let wanted_traces: Vec<&RankTrace> = set
        .ranks
        .iter()
        .filter(|t| wanted.contains(&t.rank))
        .collect();
    std::thread::scope(|scope| {
        let from_traces = scope.spawn(|| {
            let mut errors = Vec::new();
            let per_rank: Vec<_> = wanted_traces
                .iter()
                .map(|trace| {
                    (
                        memory_timeline(trace),
                        operator_table_with(trace, &operator_options)
                            .map_err(|e| errors.push(e.to_string()))
                            .ok(),
                    )
                })
                .collect();
            let devices: Vec<DeviceUtilization> = set
                .ranks
                .iter()
                .flat_map(|trace| utilization(trace, &utilization_options))
                .collect();
            (per_rank, devices, errors)
        });
        let (frames, unfiltered) = match options.step {
            None => Frames::build_both(set, options.mode, options.hta_version),
            Some(step) => {
                let mut frames = Frames::build_for(set, options.mode, options.hta_version, false);
                frames.retain_step(step);
                (frames.clone(), frames)
            }
        };
        let frames = frames.with_numpy_sort(options.numpy_sort);
        let unfiltered = unfiltered.with_numpy_sort(options.numpy_sort);
        let rank_frames: Vec<&Frame<'_>> = frames
            .ranks
            .iter()
            .filter(|f| wanted.contains(&f.rank()))
            .collect();
        let (frames, unfiltered) = (&frames, &unfiltered);
        let rank_frames = &rank_frames;
        // The frame analyses: the per-rank ones in two halves of about equal cost, the
        // cross-rank ones, the step split.
        let (across, queues, launches, steps, collectives) = std::thread::scope(|scope| {
            let queues = scope.spawn(|| {
                rank_frames
                    .iter()
                    .map(|frame| {
                        (
                            idle_time_breakdown(frame, options.consecutive_kernel_delay_us),
                            queue_length_summary(frame),
                            memory_bw_summary(frame),
                        )
                    })
                    .collect::<Vec<_>>()
            });
            let launches = scope.spawn(|| {
                rank_frames
                    .iter()
                    .map(|frame| {
                        (
                            launch_stats(
                                frame,
                                options.runtime_cutoff_us,
                                options.launch_delay_cutoff_us,
                            ),
                            transfers(frame, SMALL_TRANSFER_BYTES),
                        )
                    })
                    .collect::<Vec<_>>()
            });
            let across = scope.spawn(|| {
                (
                    temporal_breakdown(frames),
                    potential_stragglers(frames, options.num_candidates),
                    comm_comp_overlap(frames),
                    kernel_breakdown(frames, options.num_kernels, options.duration_ratio),
                )
            });
            let steps = scope.spawn(|| step_splits(unfiltered));
            let collectives = collectives(unfiltered, options.peak_bus_gbps);
            (
                across.join().expect("cross-rank analyses panicked"),
                queues.join().expect("per-rank analyses panicked"),
                launches.join().expect("per-rank analyses panicked"),
                steps.join().expect("step split panicked"),
                collectives,
            )
        });
        let (temporal, stragglers, overlap, kernels) = across;
        let (from_traces, devices, trace_errors) =
            from_traces.join().expect("trace analyses panicked");
        // A CPU-only run: the device analyses do not apply, and saying why each does not
        // would repeat the header.
        let mut note = |e: AnalysisError| {
            if !host_only {
                errors.push(e.to_string());
            }
        };
        let temporal = temporal.map_err(&mut note).ok();
        let stragglers = stragglers.map_err(&mut note).ok();
        errors.extend(trace_errors);
        let per_rank: Vec<RankReport> = rank_frames
            .iter()
            .zip(queues)
            .zip(launches)
            .zip(from_traces)
            .map(
                |(
                    ((frame, (idle_time, queue_length, memory_bw)), (launch, copies)),
                    (memory, operators),
                )| RankReport {
                    rank: frame.rank(),
                    idle_time,
                    queue_length,
                    memory_bw,
                    launch_stats: launch,
                    memory,
                    transfers: copies,
                    operators,
                },
            )
            .collect();
        let mut utilization = devices;
        for device in &mut utilization {
            for s in steps.iter().filter(|s| s.rank == device.rank) {
                match s.bound {
                    Bound::Host => device.host_bound_steps += 1,
                    Bound::Device => device.device_bound_steps += 1,
                }
            }
        }
        let mut report = Report {
            insights: Vec::new(),
            mode: options.mode,
            hta_version: (options.mode == Mode::HtaCompat).then_some(options.hta_version),
            device_type: match options.mode {
                Mode::HtaCompat => frames.device_type.to_owned(),
                Mode::Default if host_only => "none".to_owned(),
                Mode::Default => set
                    .ranks
                    .first()
                    .map_or_else(|| frames.device_type.to_owned(), |r| r.device_label()),
            },
            ranks: frames.ranks.iter().map(|f| f.rank()).collect(),
            device_activity,
            last_step_filtered: !host_only
                && options.step.is_none()
                && frames.ranks.iter().any(|f| f.filtered),
            step: options.step,
            temporal_breakdown: temporal.filter(|_| !host_only),
            comm_comp_overlap: overlap,
            kernel_breakdown: kernels,
            per_rank,
            stragglers,
            steps: if host_only { Vec::new() } else { steps },
            collectives,
            utilization,
            errors,
            notes: window_notes(set)
                .into_iter()
                .chain(rounding_notes(set, options.mode))
                .collect(),
        };
        report.insights = crate::insights::insights(&report, &options.thresholds);
        report
    })
}

/// Device rows whose duration HTA's rounding (`ts` up, `ts + dur` down, to whole µs)
/// makes negative: sub-µs rows that do not contain a whole µs boundary. HTA sums them as
/// they come (its `event_record` on the MTIA trace totals −198 µs); compat mode does the
/// same, to keep its numbers equal to HTA's. A negative duration is damage, not time, so
/// the default mode keeps every row's exact duration; the note says which rows differ.
fn rounding_notes(set: &TraceSet, mode: Mode) -> Vec<String> {
    let mut notes = Vec::new();
    for trace in set.ranks.iter().filter(|t| t.ts_is_float) {
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
            continue;
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
        notes.push(match mode {
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
        });
    }
    notes
}

/// One note per rank with several profiling windows: which file was analyzed.
fn window_notes(set: &TraceSet) -> Vec<String> {
    set.windows
        .iter()
        .map(|w| {
            let name = |p: &std::path::PathBuf| {
                p.file_name()
                    .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
            };
            let names: Vec<String> = w.files.iter().map(name).collect();
            format!(
                "rank {}: {} profiling windows ({}; {}); analyzed window {} of {}, {} \
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
