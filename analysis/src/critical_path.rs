//! Critical path: HTA's lightweight critical path analysis, exactly, and beyond it the
//! path across ranks and a what-if that re-times the graph.
//!
//! # HTA's definition ([`Mode::HtaCompat`])
//! HTA (`CriticalPathAnalysis.critical_path_analysis` in HTA's `hta/analyzers/`)
//! clips one rank to the window of an annotation's instance(s) (host events that start
//! in it and last > 0, device rows whose launch does), makes a start and an end node per
//! host operator, runtime call and launched device row, and links them:
//! - per host thread, the call tree walked depth first: each node to the next with the
//!   span between them (`critical_path_operator`, attributed to the enclosing event),
//!   consecutive top-level operators by a zero-weight `critical_path_dependency`, a
//!   blocking call's (`cudaStreamSynchronize`, `cudaMemcpy`, …) own span weighing 0;
//! - per device row in time order: its span; `critical_path_kernel_launch_delay` from
//!   the launch's start when the stream's queue was empty at the launch (queue length 1
//!   after it, 0 after the row started) and the previous row had ended before the
//!   launch; else `critical_path_kernel_kernel_delay` from the previous row's end (HTA
//!   0.6: only for gaps under 1.5 ms); `Stream Sync`/`Context Sync` rows give
//!   `critical_path_sync_dependency` edges from the last row of the stream (all streams)
//!   to the end of the host call that waited.
//!
//! The longest path is networkx's `dag_longest_path` tie for tie (first predecessor of
//! maximal length, first end node in networkx's topological order); the breakdown
//! attributes each edge of the path to an event, and `bound_by` classifies it
//! (`cpu_bound`, `gpu_compute_bound`, `gpu_communication_bound`,
//! `gpu_kernel_kernel_overhead`, `gpu_kernel_launch_overhead`; dependencies ``).
//! Proven equal to HTA 0.5 (the release on PyPI, whose critical path is the one the
//! shared `simple_add` trace was made for in HTA's own tests) by
//! `tests/critical_path_matches_hta.rs`: HTA run in the test venv, and a stored copy of
//! its output.
//!
//! Not reproduced: `Event Sync`/`Stream Wait Event` edges, which need the
//! `cudaEventRecord` that recorded the event (counted in [`Skipped::event_syncs`]);
//! HTA 0.6's CUDA-runtime lock edges and its merge of the backward thread into the
//! forward one (HTA 0.6 is not on PyPI and no test could check them); HTA 0.6's
//! `data_loading` class (it needs the caller's list of data-loading event names).
//!
//! # Beyond HTA ([`Mode::Default`])
//! Exact nanoseconds; every rank in one graph (each on its own clock plus its
//! `baseTimeNanoseconds`): a collective's kernel ends only after every rank joined, so
//! each rank's collective end gets an edge from every other rank's collective start
//! ([`EdgeKind::CollectiveArrival`], weight the transfer time, end − last arrival), and
//! its own span weighs only that transfer: the path goes through the rank that arrived
//! last. Device rows are classified by category and args (a neuron collective is
//! communication whatever its name), any host row a device row points at is a launch
//! (neuron's `nrt_execute`), the neuron runtime's blocking read (`nrt_tensor_read`)
//! waits for every stream, and [`Options::causal_edges`] adds the constraints HTA's
//! rules leave out (launch before kernel, stream order) as zero-weight edges, so a
//! re-timed graph ([`what_if`]) keeps every dependency the runtime has. Found by
//! checking predictions against emulator runs (`docs/WHAT-IF.md`), the default mode also
//! has the edges the runtime has and the trace does not spell out:
//! - a device-side wait (`nrt_event_wait`): the next row the thread launches starts
//!   after the oldest collective it launched and had not waited for;
//! - a launch blocked on a full queue (5 µs longer than the call's unblocked cost, its
//!   10th-percentile duration on the rank, and returning within 2 µs after a row of its
//!   stream ended) waits for that row, its own span weighing 0;
//! - a compute row held up by a collective's DMA transfers (longer than the same work,
//!   same name, `flops` and `bytes`, takes at least in the rank's window, overlapping a
//!   collective of its device that ended within it) ends after that collective: its
//!   span weighs the least duration, an edge from the collective's end the rest;
//! - a collective starts after the compute that produced its input (a compute row of
//!   its device that ended within 2 µs before it started).
//!
//! [`predicted::write_predicted`] writes the re-timed traces; [`cross_device`] gives
//! every device row's factor for another device (from the per-op model) and the
//! re-timed window's device time by op group.
//!
//! # One window of a large trace ([`crate::LoadOptions::with_window`])
//! HTA-compat mode needs one window of one rank, so a load can keep only the events
//! around it (`neuronprof critical-path --hta-compat` does): the graph then costs
//! memory and time in the window's events, not the file's. Two things HTA computes
//! over the whole trace decide edges of the window's graph:
//! - which launch pairs with which device row: the last row of the other side with the
//!   correlation, anywhere in the file;
//! - the queue length at each launch and device row (the launch-delay test): a running
//!   count per stream over every counted launch (+1) and device row (−1) of the file,
//!   in the order numpy's unstable argsort leaves equal times — and that order depends
//!   on every key of the array, not only on those near the window (its partitions move
//!   each key by counts of the others), so no summary of the rows before the window
//!   (counters per stream) reproduces it: on `nccl_data` repeated, the window's graph
//!   has other launch-delay edges than the same window cut from one copy.
//!
//! So the load keeps, besides the window's events, the least that reproduces both
//! exactly ([`crate::model::WindowCorrelations::Compact`]): the pairs of the kept rows,
//! and per launch call and device row of the file its start and, once its partner is
//! read, whether and on which stream it counts (10 bytes; the argsort runs over those
//! starts), with 2 bits per correlation id that prove the pairing: when no id appears
//! twice on one side, each correlation has one launch and one device row, "the last
//! of a correlation" is the only one and counting is decided pairwise. A file where an
//! id does repeat is [`CriticalPathError::WindowNeedsRecords`], and the command reads
//! it again keeping a 40-byte record of every correlated row
//! ([`crate::model::WindowCorrelations::Records`]), from which both are computed as
//! from the whole trace. A window that left out an event the graph needs (a device row
//! that starts more than a window's length after the window) is
//! [`CriticalPathError::OutsideKeptWindow`], listing those events, never a different
//! path.
//!
//! The default mode needs nothing of the file but the window
//! ([`crate::LoadOptions::with_window_mode`]), by its own definitions (our choice, for
//! memory that follows the step, not the file):
//! - its queue length at a row's launch and start counts only the rows and launches
//!   between the two (a stream runs its work in launch order: `build`'s
//!   `fifo_queue_lengths`), so the load keeps the launches up to the window's device
//!   end and the device rows of the launches it kept, and logs nothing per dropped row;
//!   on a trace where every row has its launch this is HTA's count with a stable sort,
//!   and where one launch is missing it does not shift every count after it;
//! - the least duration of a piece of work (the DMA-contention rule above) is the
//!   least among the window's rows of each rank, not the whole file's;
//! - collectives without `Seq` are numbered by the load, over every row of the file
//!   ([`crate::model::CollectiveArgs::occurrence`]);
//! - several host rows of one correlation (neuron's `nrt_execute` and the
//!   `nrt_queue_submit` in it) are taken in the compact form, the last one in file
//!   order the device row's partner, as HTA pairs them.
//!
//! A window whose device rows start past the device range kept (a row kept for its
//! launch that runs more than a window's length late) is refused with no events
//! listed, and the command reads the whole trace: the rows and launches queued before
//! it are not in the load.
//!
//! Bad input: no matching annotation or instance is an error naming the rank and what
//! was found; events HTA's rules cannot place (sync rows whose host call is outside the
//! window, device rows with neither a launch nor a previous row, event syncs, device
//! rows in the window whose launch is missing from the trace) are counted in
//! [`Skipped`]; a damaged file is an error naming the file, byte offset and event index
//! (the loader's); a cycle (times that contradict their order) is an error with
//! the number of nodes on cycles.

mod build;
pub mod cross_device;
mod events;
mod graph;
pub mod predicted;
mod runtime_edges;
pub mod what_if;

use serde::Serialize;

pub use events::CpEvent;
pub use graph::{Cycle, Edge, EdgeKind, Graph, Node};

use crate::classify::{HtaVersion, Mode};
use crate::model::{FastMap, RankTrace, TraceSet, WindowCorrelations};
use crate::stats::NumpySort;

/// What to analyze.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// HTA's rules and rounding ([`Mode::HtaCompat`], one rank), or ours (every rank).
    pub mode: Mode,
    /// Which HTA release compat mode follows (0.5: no kernel-kernel threshold; 0.6:
    /// 1.5 ms).
    pub hta_version: HtaVersion,
    /// The numpy sort kernel whose order of equal times HTA 0.5's sorts take.
    pub numpy_sort: NumpySort,
    /// Events whose name contains this bound the window (HTA's `annotation`); empty:
    /// the whole trace.
    pub annotation: String,
    /// First and last instance (inclusive) of the annotation, positions among the
    /// matching events of each rank in file order.
    pub instances: (usize, usize),
    /// Ranks to analyze; `None`: every rank (compat mode: the first).
    pub ranks: Option<Vec<i64>>,
    /// Add the zero-weight ordering edges re-timing needs ([`Edge::causal`]; default
    /// mode only).
    pub causal_edges: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mode: Mode::Default,
            hta_version: HtaVersion::V0_5,
            numpy_sort: NumpySort::default(),
            annotation: "ProfilerStep#".to_owned(),
            instances: (0, 0),
            ranks: None,
            causal_edges: true,
        }
    }
}

impl Options {
    /// HTA's call `critical_path_analysis(rank, annotation, instance_id)` in compat
    /// mode, HTA 0.5's rules.
    pub fn hta(rank: i64, annotation: &str, instance: usize) -> Self {
        Options {
            mode: Mode::HtaCompat,
            annotation: annotation.to_owned(),
            instances: (instance, instance),
            ranks: Some(vec![rank]),
            causal_edges: false,
            ..Options::default()
        }
    }
}

/// What the graph could not place, counted (never silently dropped).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// `Event Sync` / `Stream Wait Event` rows (need the `cudaEventRecord`).
    pub event_syncs: u64,
    /// `Stream Sync`/`Context Sync` rows whose waiting host call has no node (outside
    /// the window).
    pub syncs_without_host_call: u64,
    /// Device rows that got neither a launch delay nor a kernel-kernel edge (HTA logs
    /// "No edge was added").
    pub kernels_without_edge: u64,
    /// Edges of negative weight (a child ending after its parent after rounding),
    /// counted as 0 on the path as HTA does.
    pub negative_edges: u64,
    /// Collectives seen on only some of the analyzed ranks (no cross-rank edges).
    pub unmatched_collectives: u64,
    /// Device rows starting in the window with no launch at all (no host event of
    /// their correlation): not in the graph (HTA's clip keeps device rows by their
    /// launch), so counted here.
    pub rows_without_launch: u64,
}

/// One edge of the critical path. JSON: `{"rank", "kind", "duration_us",
/// "event_index", "name", "category", "pid", "tid", "stream", "bound_by"}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathEdge {
    /// The rank of the edge's destination.
    pub rank: i64,
    /// HTA's edge type name (`critical_path_operator`, …).
    pub kind: &'static str,
    /// Weight, µs (as HTA's breakdown: a negative weight stays negative).
    pub duration_us: f64,
    /// The attributed event's position in its file, when the edge is a span or a
    /// kernel-kernel delay.
    pub event_index: Option<u64>,
    /// The attributed event's name.
    pub name: Option<String>,
    /// Its category.
    pub category: Option<String>,
    /// Its `pid`.
    pub pid: Option<i64>,
    /// Its `tid`.
    pub tid: Option<i64>,
    /// Its `stream` (-1 on the host).
    pub stream: Option<i64>,
    /// HTA's class (`cpu_bound`, …; `""` for dependencies).
    pub bound_by: &'static str,
}

/// Time on the path by class. JSON: `{"bound_by", "duration_us", "percent"}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoundShare {
    /// The class.
    pub bound_by: &'static str,
    /// Σ duration, µs.
    pub duration_us: f64,
    /// Share of the path's total, %.
    pub percent: f64,
}

/// The window analyzed on one rank. JSON: `{"rank", "start_us", "end_us",
/// "clipped_events"}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankWindow {
    /// The rank.
    pub rank: i64,
    /// Window start, µs (the rank's clock; compat: relative to the file's base).
    pub start_us: f64,
    /// Window end, µs.
    pub end_us: f64,
    /// Events in the clipped window.
    pub clipped_events: usize,
}

/// A critical path. JSON: `{"mode", "annotation", "windows": [RankWindow…], "nodes",
/// "edges", "length_us", "summary": [BoundShare…], "path": [PathEdge…], "ranks_on_path",
/// "skipped": Skipped}`.
#[derive(Clone, Debug, Serialize)]
pub struct CriticalPath {
    /// The rules followed.
    pub mode: Mode,
    /// The annotation that bounds the window.
    pub annotation: String,
    /// The window per rank.
    pub windows: Vec<RankWindow>,
    /// Nodes in the graph that have an edge (networkx's count).
    pub nodes: usize,
    /// Edges in the graph.
    pub edges: usize,
    /// Σ of the path's edge durations, µs.
    pub length_us: f64,
    /// Time on the path by class, in HTA's order of classes.
    pub summary: Vec<BoundShare>,
    /// The path's edges, in order.
    pub path: Vec<PathEdge>,
    /// Ranks the path runs through, with µs of path on each, in path order of first visit.
    pub ranks_on_path: Vec<(i64, f64)>,
    /// What could not be placed.
    pub skipped: Skipped,
}

/// Why there is no critical path.
#[derive(Debug)]
pub enum CriticalPathError {
    /// No trace of this rank among the inputs.
    NoRank(i64),
    /// No event name on the rank contains the annotation.
    NoAnnotation {
        /// The rank.
        rank: i64,
        /// Its file.
        path: String,
        /// The annotation.
        annotation: String,
    },
    /// Fewer instances than asked.
    NoInstance {
        /// The rank.
        rank: i64,
        /// Its file.
        path: String,
        /// The annotation.
        annotation: String,
        /// The first instance asked.
        instance: usize,
        /// How many exist.
        found: usize,
    },
    /// The window has no operators, runtime calls or kernels.
    EmptyWindow {
        /// The rank.
        rank: i64,
        /// The annotation.
        annotation: String,
    },
    /// The graph has a cycle: event times contradict their order.
    Cycle(Cycle),
    /// The trace was loaded without [`crate::LoadOptions::with_timeline`].
    NoTimeline(i64),
    /// A windowed load ([`crate::LoadOptions::with_window`]) left out events the
    /// window's graph needs (a device row launched in the window that starts more than
    /// a window's length after it, or a launch or row of a reused correlation): load
    /// again keeping them too ([`crate::LoadOptions::with_window_events`]), or the
    /// whole trace. Also given, with no events, for a windowed load in the default
    /// mode or for another window than the one loaded.
    OutsideKeptWindow {
        /// The rank.
        rank: i64,
        /// Positions in `traceEvents` of the events needed and not kept.
        missing: Vec<u64>,
    },
    /// A windowed load's compact form of the file's correlations could not be proven
    /// exact ([`crate::model::WindowCorrelations::Unproven`], or a clipped event's
    /// partner was not kept): load again with
    /// [`crate::LoadOptions::with_window_records`], or the whole trace.
    WindowNeedsRecords {
        /// The rank.
        rank: i64,
        /// Why.
        reason: &'static str,
    },
    /// A what-if rule selects nothing the graph can scale (a typo in a kernel pattern, a
    /// rank that is not among the inputs): its answer would be an unchanged step.
    ScaleMatchesNothing {
        /// The rule as given.
        rule: String,
        /// What it was looked for in (the ranks, or how many kernel or operator names).
        looked_in: String,
    },
}

impl std::fmt::Display for CriticalPathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CriticalPathError::NoRank(rank) => {
                write!(f, "no trace of rank {rank} among the inputs")
            }
            CriticalPathError::NoAnnotation {
                rank,
                path,
                annotation,
            } => write!(
                f,
                "rank {rank} ({path}): no event name contains the annotation {annotation:?}"
            ),
            CriticalPathError::NoInstance {
                rank,
                path,
                annotation,
                instance,
                found,
            } => write!(
                f,
                "rank {rank} ({path}): instance {instance} of {annotation:?} asked, {found} \
                 found (instances count from 0)"
            ),
            CriticalPathError::EmptyWindow { rank, annotation } => write!(
                f,
                "rank {rank}: the window of {annotation:?} has no operators, runtime calls or \
                 kernels"
            ),
            CriticalPathError::Cycle(cycle) => write!(
                f,
                "the dependency graph has a cycle ({} nodes on or behind cycles): event times \
                 contradict their order (a damaged trace?)",
                cycle.nodes_on_cycles
            ),
            CriticalPathError::OutsideKeptWindow { rank, missing } => write!(
                f,
                "rank {rank}: the load kept only the window's events and {} events the \
                 graph needs are outside it (or the window loaded is not the one asked \
                 for): load them too, or the whole trace",
                missing.len()
            ),
            CriticalPathError::WindowNeedsRecords { rank, reason } => write!(
                f,
                "rank {rank}: the windowed load's compact form of the correlations is not \
                 exact for this file ({reason}): load it keeping every correlated row, or \
                 the whole trace"
            ),
            CriticalPathError::ScaleMatchesNothing { rule, looked_in } => write!(
                f,
                "--scale {rule}: matches nothing in the graph ({looked_in}); a rule that \
                 selects nothing would predict an unchanged step"
            ),
            CriticalPathError::NoTimeline(rank) => write!(
                f,
                "rank {rank}: the trace was loaded without its timeline \
                 (LoadOptions::with_timeline)"
            ),
        }
    }
}

impl std::error::Error for CriticalPathError {}

/// The graph of the analyzed ranks, with the events its nodes stand for.
#[derive(Debug)]
pub struct CpGraph<'t> {
    /// The rules followed.
    pub mode: Mode,
    /// Ticks per µs: 1 in compat mode (HTA's integer µs), 1000 otherwise (ns).
    pub ticks_per_us: i64,
    /// Every event of the analyzed ranks (node `event` fields index it).
    pub events: Vec<CpEvent<'t>>,
    /// The graph.
    pub graph: Graph,
    /// The window of each rank, in ticks, and the clipped event count.
    pub windows: Vec<(i64, (i64, i64), usize)>,
    /// What could not be placed.
    pub skipped: Skipped,
    /// The annotation.
    pub annotation: String,
}

/// One rank's clipped events (positions among all events) and their (start, end)
/// nodes.
type ClippedRank = (i64, Vec<u32>, FastMap<u32, (u32, u32)>);

/// Builds the graph of the ranks `options` asks for.
pub fn build_graph<'t>(
    set: &'t TraceSet,
    options: &Options,
) -> Result<CpGraph<'t>, CriticalPathError> {
    let compat = options.mode == Mode::HtaCompat;
    let ranks: Vec<i64> = match &options.ranks {
        Some(r) => r.clone(),
        None if compat => set.ranks.iter().take(1).map(|r| r.rank).collect(),
        None => set.ranks.iter().map(|r| r.rank).collect(),
    };
    let mut all_events: Vec<CpEvent<'t>> = Vec::new();
    let mut graph = Graph::default();
    let mut skipped = Skipped::default();
    let mut windows = Vec::new();
    // (rank, clipped positions in all_events) for the collective edges.
    let mut clipped_by_rank: Vec<ClippedRank> = Vec::new();
    let mut per_rank: Vec<(i64, &RankTrace, Vec<CpEvent<'t>>)> = Vec::with_capacity(ranks.len());
    for rank in ranks {
        let trace = set.rank(rank).ok_or(CriticalPathError::NoRank(rank))?;
        let Some(timeline) = &trace.timeline else {
            return Err(CriticalPathError::NoTimeline(rank));
        };
        if let Some(kept) = &timeline.window {
            if kept.annotation != options.annotation || kept.instances != options.instances {
                return Err(CriticalPathError::OutsideKeptWindow {
                    rank,
                    missing: Vec::new(),
                });
            }
        }
        let mut events = events::rank_events(trace, options.mode, !compat);
        if !compat {
            // A launch call of no duration (a runtime whose host time is modeled returns
            // from `nrt_cc_execute` at once) lasts one tick here: HTA's clip drops events
            // of no duration, and with it the device rows they launched. So does a
            // device-side wait (`nrt_event_wait`, which returns at once): dropped, the
            // wait's edge from its collective is lost and the stream-order gap carries
            // the wait as a fixed delay.
            for e in events.iter_mut() {
                if !e.on_stream()
                    && e.end == e.ts
                    && (e.index_correlation > 0 || e.name == build::NEURON_EVENT_WAIT)
                {
                    e.end += 1;
                }
            }
        }
        per_rank.push((rank, trace, events));
    }
    // Each rank's window and clipped events.
    type Prepared<'t> = (i64, &'t RankTrace, Vec<CpEvent<'t>>, (i64, i64), Vec<u32>);
    let mut prepared: Vec<Prepared<'t>> = Vec::with_capacity(per_rank.len());
    for (rank, trace, events) in per_rank {
        let path = trace.path.display().to_string();
        let window = events::annotation_window(&events, &options.annotation, options.instances)
            .map_err(|e| match e {
                events::WindowError::NoEvents | events::WindowError::NoAnnotation => {
                    CriticalPathError::NoAnnotation {
                        rank,
                        path: path.clone(),
                        annotation: options.annotation.clone(),
                    }
                }
                events::WindowError::NoInstance { found } => CriticalPathError::NoInstance {
                    rank,
                    path: path.clone(),
                    annotation: options.annotation.clone(),
                    instance: options.instances.0,
                    found,
                },
            })?;
        let clipped = events::clip(&events, window);
        prepared.push((rank, trace, events, window, clipped));
    }
    // What each piece of device work takes without waiting, per rank, in the window
    // (the compute rows held up by a collective's transfers weigh it: default mode
    // only).
    let nominal: Vec<runtime_edges::Nominal<'t>> = if compat {
        vec![Default::default(); prepared.len()]
    } else {
        let clips: Vec<Vec<&CpEvent<'t>>> = prepared
            .iter()
            .map(|(_, _, events, _, clipped)| {
                clipped.iter().map(|&i| &events[i as usize]).collect()
            })
            .collect();
        runtime_edges::nominal_durations(&clips)
    };
    for ((rank, trace, events, window, clipped), nominal) in prepared.into_iter().zip(&nominal) {
        let queue = match trace.timeline.as_ref().and_then(|t| t.window.as_ref()) {
            Some(kept) => {
                check_kept_window(trace, kept, &events, &clipped, options)?;
                match options.mode {
                    Mode::HtaCompat => Some(windowed_queue(trace, kept, &events, options)?),
                    Mode::Default => None,
                }
            }
            None => None,
        };
        skipped.rows_without_launch += events::rows_without_launch(&events, window);
        let base = all_events.len() as u32;
        let rank_graph = build::build_rank(
            &mut graph,
            &events,
            &clipped,
            options,
            &mut skipped,
            base,
            nominal,
            queue,
        );
        if rank_graph.nodes_of.is_empty() {
            return Err(CriticalPathError::EmptyWindow {
                rank,
                annotation: options.annotation.clone(),
            });
        }
        windows.push((rank, window, clipped.len()));
        let nodes_of: FastMap<u32, (u32, u32)> = rank_graph
            .nodes_of
            .iter()
            .map(|(&i, &n)| (base + i, n))
            .collect();
        clipped_by_rank.push((rank, clipped.iter().map(|&i| base + i).collect(), nodes_of));
        all_events.extend(events);
    }
    if !compat && clipped_by_rank.len() > 1 {
        collective_edges(&mut graph, &all_events, &clipped_by_rank, &mut skipped);
    }
    skipped.negative_edges = graph.edges.iter().filter(|e| e.weight < 0).count() as u64;
    Ok(CpGraph {
        mode: options.mode,
        ticks_per_us: if compat { 1 } else { 1000 },
        events: all_events,
        graph,
        windows,
        skipped,
        annotation: options.annotation.clone(),
    })
}

/// For a windowed load: checks that every partner (`index_correlation`) of a clipped
/// event was kept and, in the default mode, that the window's device rows start
/// within the device range the load kept (the queue length counts the rows and
/// launches up to each row's start: [`build`]'s `fifo_queue_lengths`).
fn check_kept_window(
    trace: &RankTrace,
    kept: &crate::model::KeptWindow,
    events: &[CpEvent<'_>],
    clipped: &[u32],
    options: &Options,
) -> Result<(), CriticalPathError> {
    let needs_records = |reason| CriticalPathError::WindowNeedsRecords {
        rank: trace.rank,
        reason,
    };
    if let WindowCorrelations::Unproven(reason) = &kept.correlations {
        return Err(needs_records(reason));
    }
    if clipped
        .iter()
        .any(|&i| events[i as usize].index_correlation == events::UNKNOWN_PARTNER)
    {
        return Err(needs_records("a clipped event's launch was not kept"));
    }
    let present: crate::model::FastSet<u64> = events.iter().map(|e| e.event_index).collect();
    let mut missing: Vec<u64> = clipped
        .iter()
        .map(|&i| events[i as usize].index_correlation)
        .filter(|&p| p > 0 && !present.contains(&(p as u64)))
        .map(|p| p as u64)
        .collect();
    if !missing.is_empty() {
        missing.sort_unstable();
        missing.dedup();
        return Err(CriticalPathError::OutsideKeptWindow {
            rank: trace.rank,
            missing,
        });
    }
    if options.mode == Mode::Default {
        // A row past the kept device range (kept for its launch) may queue behind
        // rows and launches the load dropped: only the whole trace has them.
        let device_end = kept.device_ns.map(|(_, end)| end + trace.base_ns);
        if clipped.iter().any(|&i| {
            let e = &events[i as usize];
            e.on_stream() && device_end.is_none_or(|end| e.ts > end)
        }) {
            return Err(CriticalPathError::OutsideKeptWindow {
                rank: trace.rank,
                missing: Vec::new(),
            });
        }
    }
    Ok(())
}

/// For a windowed load in HTA-compat mode: HTA's queue lengths from the whole file's
/// correlated rows.
fn windowed_queue(
    trace: &RankTrace,
    kept: &crate::model::KeptWindow,
    events: &[CpEvent<'_>],
    options: &Options,
) -> Result<FastMap<u64, i64>, CriticalPathError> {
    let present: crate::model::FastSet<u64> = events.iter().map(|e| e.event_index).collect();
    let tick = |ts_rel_ns| events::compat_tick(trace, ts_rel_ns);
    Ok(match &kept.correlations {
        WindowCorrelations::Records(rows) => {
            build::queue_lengths_through(rows, tick, options, &present)
        }
        WindowCorrelations::Compact(compact) => build::queue_lengths_logged(compact, tick, options),
        WindowCorrelations::Unproven(reason) => {
            return Err(CriticalPathError::WindowNeedsRecords {
                rank: trace.rank,
                reason,
            })
        }
    })
}

/// Cross-rank edges: instances of one collective (process group, name, `Seq` or
/// occurrence) on every analyzed rank end together, after the last arrival.
fn collective_edges(
    graph: &mut Graph,
    events: &[CpEvent<'_>],
    ranks: &[ClippedRank],
    skipped: &mut Skipped,
) {
    type Key = (String, String, Option<i64>);
    let mut instances: std::collections::BTreeMap<Key, Vec<(u32, u32, u32)>> = Default::default();
    for (_, clipped, nodes_of) in ranks {
        for &i in clipped {
            let e = &events[i as usize];
            let (Some(key), Some(&(start, end))) = (&e.collective, nodes_of.get(&i)) else {
                continue;
            };
            instances
                .entry(key.clone())
                .or_default()
                .push((i, start, end));
        }
    }
    for parts in instances.values() {
        if parts.len() != ranks.len() {
            skipped.unmatched_collectives += 1;
            continue;
        }
        let last_arrival = parts
            .iter()
            .map(|&(_, s, _)| graph.nodes[s as usize].ts)
            .max()
            .expect("parts are not empty");
        for &(i, start, end) in parts {
            let transfer = (graph.nodes[end as usize].ts - last_arrival).max(0);
            // The own span weighs the transfer only: the wait is the other ranks'.
            if let Some(id) = graph.edge_between(start, end) {
                graph.edges[id as usize].weight = transfer;
            }
            for &(_, other_start, _) in parts {
                if other_start == start {
                    continue;
                }
                graph.add_edge(Edge {
                    src: other_start,
                    dst: end,
                    weight: transfer,
                    kind: EdgeKind::CollectiveArrival,
                    attributed: Some(i),
                    scales: true,
                    causal: false,
                });
            }
        }
    }
}

/// HTA's `bound_by` of one path edge.
fn bound_by(edge: &Edge, event: Option<&CpEvent<'_>>) -> &'static str {
    match edge.kind {
        EdgeKind::KernelKernelDelay => "gpu_kernel_kernel_overhead",
        EdgeKind::LaunchDelay => "gpu_kernel_launch_overhead",
        EdgeKind::Dependency | EdgeKind::SyncDependency => "",
        EdgeKind::CollectiveArrival => "gpu_communication_bound",
        EdgeKind::Operator => match event {
            Some(e) if e.stream < 0 => "cpu_bound",
            Some(e) if e.is_comm => "gpu_communication_bound",
            Some(_) => "gpu_compute_bound",
            None => "cpu_bound",
        },
    }
}

/// The order HTA's summary lists classes in (pandas' `groupby`: sorted by name).
const BOUND_CLASSES: [&str; 6] = [
    "",
    "cpu_bound",
    "gpu_communication_bound",
    "gpu_compute_bound",
    "gpu_kernel_kernel_overhead",
    "gpu_kernel_launch_overhead",
];

impl CpGraph<'_> {
    /// The longest path and its breakdown.
    pub fn critical_path(&self) -> Result<CriticalPath, CriticalPathError> {
        let path = self
            .graph
            .longest_path(|e| e.weight)
            .map_err(CriticalPathError::Cycle)?;
        Ok(self.describe(&path, |e| e.weight))
    }

    /// Describes a path whose edges weigh `weight(edge)` ticks.
    pub(crate) fn describe(&self, path: &[u32], weight: impl Fn(&Edge) -> i64) -> CriticalPath {
        let us = |ticks: i64| ticks as f64 / self.ticks_per_us as f64;
        let mut edges = Vec::with_capacity(path.len());
        let mut by_class: FastMap<&'static str, i64> = FastMap::default();
        let mut ranks_on_path: Vec<(i64, f64)> = Vec::new();
        let mut total = 0i64;
        for &id in path {
            let edge = &self.graph.edges[id as usize];
            let event = edge.attributed.map(|i| &self.events[i as usize]);
            let dst_rank = self.events[self.graph.nodes[edge.dst as usize].event as usize].rank;
            let class = bound_by(edge, event);
            let w = weight(edge);
            *by_class.entry(class).or_default() += w;
            total += w;
            match ranks_on_path.iter_mut().find(|(r, _)| *r == dst_rank) {
                Some(slot) => slot.1 += us(w),
                None => ranks_on_path.push((dst_rank, us(w))),
            }
            edges.push(PathEdge {
                rank: dst_rank,
                kind: edge.kind.hta_name(),
                duration_us: us(w),
                event_index: event.map(|e| e.event_index),
                name: event.map(|e| e.name.to_owned()),
                category: event.map(|e| e.category.to_owned()),
                pid: event.and_then(|e| e.pid),
                tid: event.and_then(|e| e.tid),
                stream: event.map(|e| e.stream),
                bound_by: class,
            });
        }
        let summary = BOUND_CLASSES
            .iter()
            .filter_map(|&class| {
                let d = *by_class.get(class)?;
                Some(BoundShare {
                    bound_by: class,
                    duration_us: us(d),
                    percent: if total == 0 {
                        0.0
                    } else {
                        d as f64 / total as f64 * 100.0
                    },
                })
            })
            .collect();
        CriticalPath {
            mode: self.mode,
            annotation: self.annotation.clone(),
            windows: self
                .windows
                .iter()
                .map(|&(rank, (s, e), n)| RankWindow {
                    rank,
                    start_us: us(s),
                    end_us: us(e),
                    clipped_events: n,
                })
                .collect(),
            nodes: self.graph.connected_nodes(),
            edges: self.graph.edges.len(),
            length_us: us(total),
            summary,
            path: edges,
            ranks_on_path,
            skipped: self.skipped.clone(),
        }
    }

    /// The events on the path (HTA's `critical_path_events_set`): (rank, event index)
    /// of every node's event.
    pub fn path_events(&self, path: &[u32]) -> Vec<(i64, u64)> {
        let mut out: Vec<(i64, u64)> = path
            .iter()
            .flat_map(|&id| {
                let e = &self.graph.edges[id as usize];
                [e.src, e.dst]
            })
            .map(|n| {
                let ev = &self.events[self.graph.nodes[n as usize].event as usize];
                (ev.rank, ev.event_index)
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Builds the graph and its longest path.
pub fn critical_path(set: &TraceSet, options: &Options) -> Result<CriticalPath, CriticalPathError> {
    build_graph(set, options)?.critical_path()
}
