//! HTA's edge rules (`hta/analyzers/critical_path_analysis.py`, `CPGraph`), applied to
//! the clipped events of one rank: nodes, call-stack edges per host thread, kernel
//! edges per stream with the queue-length test, synchronizations.

use super::events::CpEvent;
use super::graph::{Edge, EdgeKind, Graph, Node};
use super::runtime_edges::{collective_input_edges, contention_edges, full_queue_edges, Nominal};
use super::{Options, Skipped};
use crate::analyses::queue_length::HTA_LAUNCH_NAMES;
use crate::classify::{HtaVersion, Mode};
use crate::model::{ChangeLog, CompactCorrelations, CorrelatedRow, FastMap};

/// HTA's `BLOCKING_SYNC_CALLS`: host calls whose own span is waiting (weight 0), plus,
/// in the default mode, the neuron runtime's blocking reads.
const BLOCKING_CALLS: [&str; 6] = [
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventQuery",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpyAsync",
];

/// Neuron runtime calls that wait for the device (a host read of device memory waits
/// for the queue to drain: `neuron-backend`'s `nrt_tensor_read`; an explicit wait).
const NEURON_BLOCKING_CALLS: [&str; 4] = [
    "nrt_tensor_read",
    "nrt_synchronize",
    "nrt_stream_synchronize",
    "nrt_cc_wait",
];

/// A host thread: (`pid`, `tid`).
type Thread = (Option<i64>, Option<i64>);

/// The neuron runtime's device-side wait (`neuron-backend` `Work::wait`,
/// `Stream::wait_event`): later work on the stream waits for the event.
pub(crate) const NEURON_EVENT_WAIT: &str = "nrt_event_wait";

/// Default mode: which device row waits for which collective. A host thread's
/// `nrt_event_wait` makes its stream wait for the oldest collective the thread launched
/// and has not waited for yet (DDP waits its works in order); the next device row the
/// thread launches after the wait starts no earlier than that collective's end.
/// Returns (waiting row, collective row), positions in `events`.
fn neuron_event_waits(events: &[CpEvent<'_>], clipped: &[u32]) -> Vec<(u32, u32)> {
    let by_index: FastMap<u64, u32> = clipped
        .iter()
        .map(|&i| (events[i as usize].event_index, i))
        .collect();
    // Per thread, in time order: launches (with their device row) and waits.
    let mut per_thread: std::collections::BTreeMap<Thread, Vec<(i64, u64, u32)>> =
        Default::default();
    for &i in clipped {
        let e = &events[i as usize];
        if e.on_stream() {
            continue;
        }
        let launches = e.index_correlation > 0
            && by_index
                .get(&(e.index_correlation as u64))
                .is_some_and(|&k| events[k as usize].on_stream());
        if launches || e.name == NEURON_EVENT_WAIT {
            per_thread
                .entry((e.pid, e.tid))
                .or_default()
                .push((e.ts, e.event_index, i));
        }
    }
    let mut out = Vec::new();
    // A row has several host calls pointing at it (neuron: `nrt_cc_execute` and the
    // `nrt_queue_submit` inside it): it is launched once, by the first.
    let mut launched: crate::model::FastSet<u32> = Default::default();
    for calls in per_thread.values_mut() {
        calls.sort_unstable();
        let mut unwaited: std::collections::VecDeque<u32> = Default::default();
        let mut pending: Vec<u32> = Vec::new();
        for &(_, _, i) in calls.iter() {
            let e = &events[i as usize];
            if e.name == NEURON_EVENT_WAIT {
                pending.extend(unwaited.pop_front());
                continue;
            }
            let Some(&row) = by_index.get(&(e.index_correlation as u64)) else {
                continue;
            };
            if !launched.insert(row) {
                continue;
            }
            if events[row as usize].is_comm {
                unwaited.push_back(row);
            } else {
                out.extend(pending.drain(..).map(|c| (row, c)));
            }
        }
    }
    out
}

/// HTA 0.6's `KERNEL_KERNEL_DELAY_THRESHOLD_US`: a gap longer than this between two
/// kernels of a stream is not a kernel-kernel delay (an unrecognised dependency).
pub(crate) const KERNEL_KERNEL_DELAY_THRESHOLD_US: i64 = 1500;

/// The graph of one rank and what maps events to nodes.
pub(crate) struct RankGraph {
    /// Node ids of each clipped event: (start, end), by position in the rank's events.
    pub(crate) nodes_of: FastMap<u32, (u32, u32)>,
}

/// Whether an event gets nodes: host operators and runtime calls, device rows with a
/// launch (HTA `get_operator_or_cuda_runtime_query` or `stream != -1 and
/// index_correlation >= 0`).
fn gets_nodes(e: &CpEvent<'_>, mode: Mode) -> bool {
    if e.on_stream() && e.index_correlation >= 0 {
        return true;
    }
    match mode {
        Mode::HtaCompat => matches!(e.category, "cpu_op" | "cuda_runtime" | "cuda_driver"),
        Mode::Default => {
            !e.on_stream()
                && (matches!(
                    e.category,
                    "cpu_op" | "Operator" | "Runtime" | "cuda_driver"
                ) || e.category.ends_with("_runtime"))
        }
    }
}

fn is_blocking(e: &CpEvent<'_>, mode: Mode) -> bool {
    BLOCKING_CALLS.contains(&e.name)
        || (mode == Mode::Default && NEURON_BLOCKING_CALLS.contains(&e.name))
}

/// Adds the nodes and edges of one rank's clipped events to `graph` (`nominal`: what
/// each piece of the rank's device work takes without waiting).
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_rank<'t>(
    graph: &mut Graph,
    events: &[CpEvent<'t>],
    clipped: &[u32],
    options: &Options,
    skipped: &mut Skipped,
    event_base: u32,
    nominal: &Nominal<'t>,
    queue: Option<FastMap<u64, i64>>,
) -> RankGraph {
    let mode = options.mode;
    // --- nodes (HTA `_create_event_nodes`): starts then ends, sorted by time.
    let with_nodes: Vec<u32> = clipped
        .iter()
        .copied()
        .filter(|&i| gets_nodes(&events[i as usize], mode))
        .collect();
    let mut keys: Vec<(i64, u32, bool)> = Vec::with_capacity(with_nodes.len() * 2);
    keys.extend(with_nodes.iter().map(|&i| (events[i as usize].ts, i, true)));
    keys.extend(
        with_nodes
            .iter()
            .map(|&i| (events[i as usize].end, i, false)),
    );
    let order: Vec<usize> = if mode == Mode::HtaCompat && options.hta_version == HtaVersion::V0_5 {
        // HTA 0.5 sorts by `ts` alone with pandas' default (numpy's unstable quicksort).
        let ts: Vec<i64> = keys.iter().map(|k| k.0).collect();
        options.numpy_sort.argsort(&ts)
    } else {
        // HTA 0.6 sorts by (`ts`, event index), stably; so do we.
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by_key(|&k| (keys[k].0, events[keys[k].1 as usize].event_index));
        order
    };
    let mut nodes_of: FastMap<u32, (u32, u32)> = FastMap::default();
    for &k in &order {
        let (ts, i, is_start) = keys[k];
        let id = graph.add_node(Node {
            ts,
            event: event_base + i,
            is_start,
        });
        let slot = nodes_of.entry(i).or_insert((u32::MAX, u32::MAX));
        if is_start {
            slot.0 = id;
        } else {
            slot.1 = id;
        }
    }
    let rank_graph = RankGraph { nodes_of };
    // A windowed load's HTA counts come from its log of the file (`queue`).
    let queue = match mode {
        Mode::Default => fifo_queue_lengths(events, clipped),
        Mode::HtaCompat => queue.unwrap_or_else(|| queue_lengths(events, options)),
    };
    call_stack_edges(graph, events, clipped, &rank_graph, mode, event_base);
    kernel_edges(
        graph,
        events,
        clipped,
        &rank_graph,
        options,
        skipped,
        event_base,
        queue,
    );
    if mode == Mode::Default {
        // Position among `events` of each clipped event, by its index in the file: how
        // the runtime edges find a device row's launching call.
        let by_index: FastMap<u64, u32> = clipped
            .iter()
            .map(|&i| (events[i as usize].event_index, i))
            .collect();
        full_queue_edges(graph, events, clipped, &rank_graph, &by_index);
        contention_edges(graph, events, clipped, &rank_graph, nominal);
        collective_input_edges(graph, events, clipped, &rank_graph, &by_index);
    }
    rank_graph
}

fn add(
    graph: &mut Graph,
    src: u32,
    dst: u32,
    kind: EdgeKind,
    zero_weight: bool,
    attributed: Option<u32>,
) -> Option<u32> {
    let weight = match kind {
        EdgeKind::Dependency | EdgeKind::SyncDependency => 0,
        _ if zero_weight => 0,
        _ => graph.nodes[dst as usize].ts - graph.nodes[src as usize].ts,
    };
    let scales = matches!(kind, EdgeKind::Operator) && !zero_weight;
    graph.add_edge(Edge {
        src,
        dst,
        weight,
        kind,
        attributed,
        scales,
        causal: false,
    })
}

/// A zero-weight edge that only orders two nodes (see [`Edge::causal`]).
fn causal(graph: &mut Graph, src: u32, dst: u32, kind: EdgeKind) {
    graph.add_edge(Edge {
        src,
        dst,
        weight: 0,
        kind,
        attributed: None,
        scales: false,
        causal: true,
    });
}

/// HTA's `_attribute_edge` for span edges: a start source owns the edge; an end
/// destination owns it; between an end and a start, the source's parent does.
fn attribution(graph: &Graph, src: u32, dst: u32, src_parent: Option<u32>) -> Option<u32> {
    let (s, d) = (graph.nodes[src as usize], graph.nodes[dst as usize]);
    if s.is_start {
        Some(s.event)
    } else if !d.is_start {
        Some(d.event)
    } else {
        src_parent
    }
}

/// One event of a thread for the stack: (event position, time, duration, start?).
#[derive(Clone, Copy)]
struct StackEvent {
    event: u32,
    event_index: u64,
    time: i64,
    dur: i64,
    is_start: bool,
}

/// HTA `call_stack.compare_events`: the order of starts and ends on one thread.
fn compare(x: &StackEvent, y: &StackEvent) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    if x.event_index == y.event_index {
        return if x.is_start == y.is_start {
            Equal
        } else if x.is_start {
            Less
        } else {
            Greater
        };
    }
    match x.time.cmp(&y.time) {
        Equal => {}
        other => return other,
    }
    if x.is_start == y.is_start {
        if x.is_start {
            if x.dur == y.dur {
                x.event_index.cmp(&y.event_index)
            } else if x.dur < y.dur {
                Greater
            } else {
                Less
            }
        } else if x.dur == y.dur {
            y.event_index.cmp(&x.event_index)
        } else if x.dur < y.dur {
            Less
        } else {
            Greater
        }
    } else if x.dur > 0 && y.dur > 0 {
        // A start and an end at one instant: the end first.
        if x.is_start {
            Greater
        } else {
            Less
        }
    } else if x.dur == 0 && y.dur == 0 {
        x.event_index.cmp(&y.event_index)
    } else if x.is_start {
        // One of them an instant: the start first.
        Less
    } else {
        Greater
    }
}

/// HTA `_construct_graph_from_call_stacks`: per host thread, the call tree of the
/// clipped host events (`CallStackGraph`), walked depth first, linking each node to the
/// next and consecutive top-level operators by a dependency.
fn call_stack_edges(
    graph: &mut Graph,
    events: &[CpEvent<'_>],
    clipped: &[u32],
    rank_graph: &RankGraph,
    mode: Mode,
    event_base: u32,
) {
    // Threads in (pid, tid) order, as pandas' groupby; a thread with a row on a stream
    // > 0 is a device stream (no call stack).
    let mut threads: std::collections::BTreeMap<(Option<i64>, Option<i64>), Vec<u32>> =
        Default::default();
    for &i in clipped {
        let e = &events[i as usize];
        threads.entry((e.pid, e.tid)).or_default().push(i);
    }
    for thread in threads.values() {
        let has_stream = |i: &u32| events[*i as usize].stream > 0;
        if thread.iter().any(has_stream) {
            continue;
        }
        if !thread.iter().all(|&i| events[i as usize].stream < 0) {
            continue; // HTA's device type UNKNOWN: no call stack either
        }
        let members: Vec<u32> = thread
            .iter()
            .copied()
            .filter(|&i| {
                mode == Mode::HtaCompat || events[i as usize].category != "gpu_user_annotation"
            })
            .collect();
        let mut stack_events: Vec<StackEvent> = Vec::with_capacity(members.len() * 2);
        for &i in &members {
            let e = &events[i as usize];
            let dur = e.dur().max(0);
            for is_start in [true, false] {
                stack_events.push(StackEvent {
                    event: i,
                    event_index: e.event_index,
                    time: if is_start { e.ts } else { e.ts + dur },
                    dur,
                    is_start,
                });
            }
        }
        stack_events.sort_by(compare);
        // The tree: children in order, parent of each.
        const ROOT: u32 = u32::MAX;
        let mut children: FastMap<u32, Vec<u32>> = FastMap::default();
        let mut parent: FastMap<u32, u32> = FastMap::default();
        let mut stack: Vec<u32> = Vec::new();
        for se in &stack_events {
            if se.is_start {
                let p = stack.last().copied().unwrap_or(ROOT);
                if parent.contains_key(&se.event) {
                    continue;
                }
                children.entry(p).or_default().push(se.event);
                parent.insert(se.event, p);
                stack.push(se.event);
            } else {
                stack.pop();
            }
        }
        // Depth-first walk (HTA `dfs_traverse` with the 0.5 enter/exit functions).
        let mut walk = Walk {
            last_node: None,
            last_highlevel: None,
            depth: 0,
            last_parent: None,
        };
        let mut todo: Vec<(u32, bool)> = vec![(ROOT, true)];
        while let Some((event, entering)) = todo.pop() {
            if entering {
                todo.push((event, false));
                if let Some(kids) = children.get(&event) {
                    todo.extend(kids.iter().rev().map(|&k| (k, true)));
                }
                if event != ROOT {
                    let p = parent.get(&event).copied().filter(|&p| p != ROOT);
                    walk.enter(graph, rank_graph, events, event, p, event_base);
                }
            } else if event != ROOT {
                let p = parent.get(&event).copied().filter(|&p| p != ROOT);
                walk.exit(graph, rank_graph, events, event, p, mode, event_base);
            }
        }
    }
}

struct Walk {
    last_node: Option<u32>,
    last_highlevel: Option<u32>,
    depth: u32,
    /// The parent event (graph event id) of the last node's event.
    last_parent: Option<u32>,
}

impl Walk {
    fn enter(
        &mut self,
        graph: &mut Graph,
        rank_graph: &RankGraph,
        _events: &[CpEvent<'_>],
        event: u32,
        parent: Option<u32>,
        event_base: u32,
    ) {
        let Some(&(start, _)) = rank_graph.nodes_of.get(&event) else {
            return;
        };
        if self.depth == 0 {
            if let Some(prev) = self.last_highlevel {
                add(graph, prev, start, EdgeKind::Dependency, false, None);
            }
        }
        self.depth += 1;
        if let Some(last) = self.last_node {
            let attributed = attribution(graph, last, start, self.last_parent);
            add(graph, last, start, EdgeKind::Operator, false, attributed);
        }
        self.last_node = Some(start);
        self.last_parent = parent.map(|p| event_base + p);
    }

    #[allow(clippy::too_many_arguments)]
    fn exit(
        &mut self,
        graph: &mut Graph,
        rank_graph: &RankGraph,
        events: &[CpEvent<'_>],
        event: u32,
        parent: Option<u32>,
        mode: Mode,
        event_base: u32,
    ) {
        let Some(&(_, end)) = rank_graph.nodes_of.get(&event) else {
            return;
        };
        self.depth = self.depth.saturating_sub(1);
        if let Some(last) = self.last_node {
            let zero = is_blocking(&events[event as usize], mode);
            let attributed = attribution(graph, last, end, self.last_parent);
            add(graph, last, end, EdgeKind::Operator, zero, attributed);
        }
        if self.depth == 0 {
            self.last_node = None;
            self.last_highlevel = Some(end);
        } else {
            self.last_node = Some(end);
            self.last_parent = parent.map(|p| event_base + p);
        }
    }
}

/// HTA `TraceCounters._get_queue_length_time_series_for_rank` over all the rank's
/// events (HTA-compat mode; the default mode counts with [`fifo_queue_lengths`]): +1 at
/// each launch call, −1 at each device row's start, per stream, in numpy's time order.
/// Returns the queue length after each launch and each device row, by event index.
fn queue_lengths(events: &[CpEvent<'_>], options: &Options) -> FastMap<u64, i64> {
    let is_launch = |e: &CpEvent<'_>| {
        !e.on_stream() && e.index_correlation > 0 && HTA_LAUNCH_NAMES.contains(&e.name)
    };
    let mut stream_of_corr: FastMap<i64, i64> = FastMap::default();
    for e in events
        .iter()
        .filter(|e| e.on_stream() && e.correlation != -1)
    {
        stream_of_corr.insert(e.correlation, e.stream);
    }
    let mut launch_corrs: crate::model::FastSet<i64> = Default::default();
    // (ts, delta, stream, event index): launches in file order, then device rows.
    let mut changes: Vec<(i64, i64, i64, u64)> = Vec::new();
    for e in events {
        if is_launch(e) {
            if let Some(&stream) = stream_of_corr.get(&e.correlation) {
                changes.push((e.ts, 1, stream, e.event_index));
                launch_corrs.insert(e.correlation);
            }
        }
    }
    for e in events {
        if e.on_stream() && launch_corrs.contains(&e.correlation) {
            changes.push((e.ts, -1, e.stream, e.event_index));
        }
    }
    let ts: Vec<i64> = changes.iter().map(|c| c.0).collect();
    let order = options.numpy_sort.argsort(&ts);
    let mut per_stream: FastMap<i64, i64> = FastMap::default();
    let mut result = FastMap::default();
    for i in order {
        let (_, delta, stream, event_index) = changes[i];
        let q = per_stream.entry(stream).or_default();
        *q += delta;
        result.insert(event_index, *q);
    }
    result
}

/// The default mode's queue length, after each clipped device row's launch and after
/// its start: the launches of its stream that the device has not started yet, counted
/// from the rows and launches between the launch and the row's start only, so the
/// window's rows decide it (a windowed load has them; the rows before the window
/// are not needed) and one missing launch or row elsewhere in the trace does not
/// shift every count after it, as HTA's running count over the whole trace does.
///
/// A stream runs its work in launch order, so after the launch `L` of row `R` the
/// queue holds `R` and the rows of the stream before `R` (by start, then position)
/// that start at or after `L`; after `R` starts it holds the rows launched before
/// `R`'s start that run after `R`: the stream's launches up to `R`'s start whose row
/// comes after `R` (or is not in the load: it starts past the window). At equal
/// times launches count before rows, as in HTA's count. A row counts when it is work
/// on a stream (not `cuda_sync`) with a launch; a launch when its row does
/// ([`CpEvent::launch_stream`]). For a trace whose streams run in launch order and
/// whose rows all have their launch, this equals HTA's count with a stable sort.
/// Returns the queue lengths by event index (launches and rows).
fn fifo_queue_lengths(events: &[CpEvent<'_>], clipped: &[u32]) -> FastMap<u64, i64> {
    let counted_row =
        |e: &CpEvent<'_>| e.on_stream() && e.category != "cuda_sync" && e.index_correlation > 0;
    // Per stream: counted rows by (start, position); launches by (start, position)
    // with their row's position.
    let mut rows: FastMap<i64, Vec<(i64, u64)>> = FastMap::default();
    let mut launches: FastMap<i64, Vec<(i64, u64, u64)>> = FastMap::default();
    let mut position: FastMap<u64, u32> = FastMap::default();
    for (i, e) in events.iter().enumerate() {
        if counted_row(e) {
            rows.entry(e.stream)
                .or_default()
                .push((e.ts, e.event_index));
            position.insert(e.event_index, i as u32);
        } else if !e.on_stream() && e.launch_stream >= 0 && e.index_correlation > 0 {
            launches.entry(e.launch_stream).or_default().push((
                e.ts,
                e.event_index,
                e.index_correlation as u64,
            ));
            position.insert(e.event_index, i as u32);
        }
    }
    for list in rows.values_mut() {
        list.sort_unstable();
    }
    for list in launches.values_mut() {
        list.sort_unstable();
    }
    let mut out = FastMap::default();
    for &i in clipped {
        let r = &events[i as usize];
        if !counted_row(r) {
            continue;
        }
        let Some(launch) = position
            .get(&(r.index_correlation as u64))
            .map(|&k| &events[k as usize])
            .filter(|l| !l.on_stream() && l.launch_stream == r.stream)
        else {
            continue;
        };
        let key = (r.ts, r.event_index);
        let stream_rows = &rows[&r.stream];
        // After the launch: the rows up to R that had not started.
        let up_to_r = stream_rows.partition_point(|&k| k <= key);
        let started = stream_rows.partition_point(|&(ts, _)| ts < launch.ts);
        out.insert(launch.event_index, up_to_r.saturating_sub(started) as i64);
        // After R's start: the launches up to it whose row runs after R.
        let stream_launches = launches.get(&r.stream).map_or(&[][..], |l| l.as_slice());
        let from = stream_launches.partition_point(|&(ts, _, _)| ts < launch.ts);
        let to = stream_launches.partition_point(|&(ts, _, _)| ts <= r.ts);
        // A row launched by two calls (neuron's `nrt_cc_execute` and the
        // `nrt_queue_submit` in it) counts once, at the call it points at.
        let mut waiting: Vec<u64> = stream_launches[from..to.max(from)]
            .iter()
            .filter(|&&(_, call, row)| match position.get(&row) {
                Some(&k) => {
                    let row_event = &events[k as usize];
                    row_event.index_correlation == call as i64 && (row_event.ts, row) > key
                }
                None => true,
            })
            .map(|&(_, _, row)| row)
            .collect();
        waiting.sort_unstable();
        waiting.dedup();
        out.insert(r.event_index, waiting.len() as i64);
    }
    out
}

/// [`queue_lengths`] in HTA-compat mode from every correlated row of the file
/// ([`crate::model::KeptWindow::correlated`]: a windowed load keeps only the window's
/// events, but HTA counts the queue over the whole trace, and numpy's order of equal
/// times depends on every key), `tick` turning a start into the mode's ticks. Only the
/// queue lengths of the `wanted` event indices are returned.
pub(crate) fn queue_lengths_through(
    rows: &[CorrelatedRow],
    tick: impl Fn(i64) -> i64,
    options: &Options,
    wanted: &crate::model::FastSet<u64>,
) -> FastMap<u64, i64> {
    // The rows of each correlation together, in file order within it (a stable sort of
    // positions: no map over the file's correlations).
    let mut by_correlation: Vec<usize> = (0..rows.len()).collect();
    by_correlation.sort_by_key(|&i| rows[i].correlation);
    // Per row: a launch that counts (HTA's launch name, its partner, the last
    // device-side row of its correlation, not the first event, and a row on a stream):
    // the position of the last row on a stream of its correlation, whose stream its +1
    // goes to; a row on a stream whose correlation has such a launch: its own position.
    const NOT_COUNTED: usize = usize::MAX;
    let mut counted = vec![NOT_COUNTED; rows.len()];
    for group in by_correlation.chunk_by(|&a, &b| rows[a].correlation == rows[b].correlation) {
        let last_gpu = group
            .iter()
            .rev()
            .find(|&&i| rows[i].flags & CorrelatedRow::GPU_SIDE != 0)
            .map(|&i| rows[i].event_index);
        let last_on_stream = group.iter().rev().find(|&&i| rows[i].stream != -1);
        let (Some(&stream_row), true) = (last_on_stream, last_gpu.is_some_and(|p| p > 0)) else {
            continue;
        };
        let mut launched = false;
        for &i in group {
            if rows[i].stream == -1 && rows[i].flags & CorrelatedRow::HTA_LAUNCH != 0 {
                counted[i] = stream_row;
                launched = true;
            }
        }
        if launched {
            for &i in group.iter().filter(|&&i| rows[i].stream != -1) {
                counted[i] = i;
            }
        }
    }
    drop(by_correlation);
    // As `queue_lengths`: launches in file order, then device rows.
    let counts = |i: &usize| counted[*i] != NOT_COUNTED;
    let mut changes: Vec<usize> = (0..rows.len())
        .filter(|i| counts(i) && rows[*i].stream == -1)
        .collect();
    changes.extend((0..rows.len()).filter(|i| counts(i) && rows[*i].stream != -1));
    let ts: Vec<i64> = changes.iter().map(|&i| tick(rows[i].ts_rel_ns)).collect();
    let order = options.numpy_sort.argsort(&ts);
    drop(ts);
    let mut per_stream: FastMap<i64, i64> = FastMap::default();
    let mut result = FastMap::default();
    for k in order {
        let row = &rows[changes[k]];
        let (delta, stream) = if row.stream == -1 {
            (1, rows[counted[changes[k]]].stream)
        } else {
            (-1, row.stream)
        };
        let q = per_stream.entry(stream).or_default();
        *q += delta;
        if wanted.contains(&row.event_index) {
            result.insert(row.event_index, *q);
        }
    }
    result
}

/// [`queue_lengths_through`] from a windowed load's compact form
/// ([`CompactCorrelations`]: the load decided which launches and device rows count, and
/// on which stream; each is one entry of its log, in file order): the same array of
/// times in the same order (counted launches in file order, then counted device rows),
/// so numpy's order of equal times is the whole trace's. Returns the queue lengths of
/// the kept rows.
pub(crate) fn queue_lengths_logged(
    compact: &CompactCorrelations,
    tick: impl Fn(i64) -> i64,
    options: &Options,
) -> FastMap<u64, i64> {
    fn counted(log: &ChangeLog) -> impl Iterator<Item = u32> + '_ {
        (0..log.stream.len() as u32).filter(move |&i| log.stream[i as usize] != 0)
    }
    let mut positions: Vec<u32> = counted(&compact.launches).collect();
    let launches = positions.len();
    positions.extend(counted(&compact.device_rows));
    let ts: Vec<i64> = positions
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let log = if k < launches {
                &compact.launches
            } else {
                &compact.device_rows
            };
            tick(log.ts_rel_ns[p as usize])
        })
        .collect();
    let order = options.numpy_sort.argsort(&ts);
    drop(ts);
    let kept = |log: &ChangeLog| -> FastMap<u32, u64> { log.kept.iter().copied().collect() };
    let (kept_launches, kept_rows) = (kept(&compact.launches), kept(&compact.device_rows));
    let mut per_stream = vec![0i64; compact.streams.len() + 1];
    let mut result = FastMap::default();
    for k in order {
        let (log, kept, delta) = if k < launches {
            (&compact.launches, &kept_launches, 1)
        } else {
            (&compact.device_rows, &kept_rows, -1)
        };
        let p = positions[k];
        let q = &mut per_stream[log.stream[p as usize] as usize];
        *q += delta;
        if let Some(&index) = kept.get(&p) {
            result.insert(index, *q);
        }
    }
    result
}

/// HTA `_construct_graph_from_kernels`: per device row in time order (sync rows by
/// their end), its span; a launch delay when the queue was empty, else a kernel-kernel
/// delay from the previous row of the stream; stream and context syncs as edges to the
/// waiting host call's end.
#[allow(clippy::too_many_arguments)]
fn kernel_edges(
    graph: &mut Graph,
    events: &[CpEvent<'_>],
    clipped: &[u32],
    rank_graph: &RankGraph,
    options: &Options,
    skipped: &mut Skipped,
    event_base: u32,
    queue: FastMap<u64, i64>,
) {
    let mode = options.mode;
    let by_index: FastMap<u64, u32> = events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.event_index, i as u32))
        .collect();
    // Device rows and sync rows; in the default mode also the blocking host calls,
    // which wait for every stream of their device (as a Context Sync).
    let blocking_host = |e: &CpEvent<'_>| {
        mode == Mode::Default && !e.on_stream() && NEURON_BLOCKING_CALLS.contains(&e.name)
    };
    let rows: Vec<u32> = clipped
        .iter()
        .copied()
        .filter(|&i| {
            let e = &events[i as usize];
            ((e.on_stream() || e.name == "Event Sync" || e.name == "Context Sync")
                && e.index_correlation >= 0)
                || blocking_host(e)
        })
        .collect();
    let is_sync = |e: &CpEvent<'_>| e.category == "cuda_sync" || blocking_host(e);
    let sort_keys: Vec<i64> = rows
        .iter()
        .map(|&i| {
            let e = &events[i as usize];
            if is_sync(e) {
                e.end
            } else {
                e.ts
            }
        })
        .collect();
    let order: Vec<usize> = if mode == Mode::HtaCompat {
        options.numpy_sort.argsort(&sort_keys)
    } else {
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by_key(|&k| (sort_keys[k], events[rows[k] as usize].event_index));
        order
    };
    // Device rows that wait for a collective (neuron's device-side event waits).
    let mut waits_for: FastMap<u32, Vec<u32>> = FastMap::default();
    if mode == Mode::Default {
        for (row, collective) in neuron_event_waits(events, clipped) {
            waits_for.entry(row).or_default().push(collective);
        }
    }
    // Last end node per stream, in first-seen order (a Context Sync waits for all).
    let mut last_node: Vec<(i64, u32)> = Vec::new();
    let threshold = match (mode, options.hta_version) {
        (Mode::HtaCompat, HtaVersion::V0_5) => None,
        (Mode::HtaCompat, _) => Some(KERNEL_KERNEL_DELAY_THRESHOLD_US),
        (Mode::Default, _) => Some(KERNEL_KERNEL_DELAY_THRESHOLD_US * 1000),
    };
    for k in order {
        let i = rows[k];
        let e = &events[i as usize];
        let runtime = by_index.get(&(e.index_correlation as u64)).copied();
        if blocking_host(e) {
            if let Some(&(_, call_end)) = rank_graph.nodes_of.get(&i) {
                let call_end_ts = graph.nodes[call_end as usize].ts;
                let targets: Vec<u32> = last_node
                    .iter()
                    .map(|&(_, n)| n)
                    .filter(|&n| graph.nodes[n as usize].ts <= call_end_ts)
                    .collect();
                for node in targets {
                    add(graph, node, call_end, EdgeKind::SyncDependency, false, None);
                }
            }
            continue;
        }
        if is_sync(e) {
            match e.name {
                "Stream Sync" | "Context Sync" => {
                    let Some(&(_, runtime_end)) = runtime.and_then(|r| rank_graph.nodes_of.get(&r))
                    else {
                        skipped.syncs_without_host_call += 1;
                        continue;
                    };
                    let targets: Vec<u32> = if e.name == "Context Sync" {
                        last_node.iter().map(|&(_, n)| n).collect()
                    } else {
                        last_node
                            .iter()
                            .filter(|(s, _)| *s == e.stream)
                            .map(|&(_, n)| n)
                            .collect()
                    };
                    for node in targets {
                        add(
                            graph,
                            node,
                            runtime_end,
                            EdgeKind::SyncDependency,
                            false,
                            None,
                        );
                    }
                }
                _ => {
                    // Event syncs need the cudaEventRecord that recorded the event.
                    skipped.event_syncs += 1;
                }
            }
            continue;
        }
        let Some(&(start, end)) = rank_graph.nodes_of.get(&i) else {
            continue;
        };
        add(
            graph,
            start,
            end,
            EdgeKind::Operator,
            false,
            Some(event_base + i),
        );
        let previous = last_node
            .iter()
            .find(|(s, _)| *s == e.stream)
            .map(|&(_, n)| n);
        // The latest end among the collectives this row waits for (HTA's kernel_sync).
        let mut sync_end: Option<u32> = None;
        for c in waits_for.get(&i).into_iter().flatten() {
            if let Some(&(_, c_end)) = rank_graph.nodes_of.get(c) {
                add(graph, c_end, start, EdgeKind::SyncDependency, false, None);
                if sync_end
                    .is_none_or(|s| graph.nodes[c_end as usize].ts > graph.nodes[s as usize].ts)
                {
                    sync_end = Some(c_end);
                }
            }
        }
        let sync_ts = sync_end.map(|n| graph.nodes[n as usize].ts);
        let runtime_event = runtime.map(|r| &events[r as usize]);
        let runtime_ts = runtime_event.map_or(i64::MIN, |r| r.ts);
        let queue_at_launch = queue.get(&(e.index_correlation as u64)).copied();
        let queue_at_kernel = queue.get(&e.event_index).copied();
        let mut added = false;
        if queue_at_launch == Some(1)
            && queue_at_kernel == Some(0)
            && previous.is_none_or(|p| graph.nodes[p as usize].ts < runtime_ts)
            && sync_ts.is_none_or(|t| t < runtime_ts)
        {
            if let Some(&(runtime_start, _)) = runtime.and_then(|r| rank_graph.nodes_of.get(&r)) {
                add(
                    graph,
                    runtime_start,
                    start,
                    EdgeKind::LaunchDelay,
                    false,
                    None,
                );
                added = true;
            }
        } else if let Some(p) =
            previous.filter(|&p| sync_ts.is_none_or(|t| t < graph.nodes[p as usize].ts))
        {
            let gap = graph.nodes[start as usize].ts - graph.nodes[p as usize].ts;
            if threshold.is_none_or(|t| gap < t) {
                let attributed = Some(graph.nodes[p as usize].event);
                add(
                    graph,
                    p,
                    start,
                    EdgeKind::KernelKernelDelay,
                    false,
                    attributed,
                );
                added = true;
            }
        }
        if !added && sync_end.is_none() {
            skipped.kernels_without_edge += 1;
        }
        if options.causal_edges && mode == Mode::Default {
            // Every constraint the runtime has, for re-timing: a kernel starts after
            // its launch (HTA's zero-weight launch edges) and after the previous
            // kernel of its stream, also where HTA's rules put no edge.
            if let Some(&(runtime_start, _)) = runtime.and_then(|r| rank_graph.nodes_of.get(&r)) {
                if graph.edge_between(runtime_start, start).is_none() {
                    causal(graph, runtime_start, start, EdgeKind::LaunchDelay);
                }
            }
            if let Some(p) = previous {
                if graph.edge_between(p, start).is_none() {
                    causal(graph, p, start, EdgeKind::KernelKernelDelay);
                }
            }
        }
        match last_node.iter_mut().find(|(s, _)| *s == e.stream) {
            Some(slot) => slot.1 = end,
            None => last_node.push((e.stream, end)),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A device row on stream 7 of process 1, doing work (100, 200).
    pub(crate) fn row(
        rank: i64,
        name: &'static str,
        ts: i64,
        end: i64,
        comm: bool,
    ) -> CpEvent<'static> {
        CpEvent {
            rank,
            event_index: ts as u64,
            ts,
            end,
            name,
            category: "kernel",
            pid: Some(1),
            tid: Some(7),
            stream: 7,
            correlation: -1,
            index_correlation: -1,
            launch_stream: -1,
            is_comm: comm,
            wait_on_stream: -1,
            wait_on_event_corr: -1,
            work: (100, 200),
            collective: None,
        }
    }

    #[test]
    fn each_wait_takes_the_next_collective_also_when_two_calls_launch_it() {
        // A host call on thread 7 of process 9 pointing at the device row at `target`.
        let call = |name: &'static str, index: u64, ts: i64, target: i64| CpEvent {
            event_index: index,
            ts,
            end: ts + 1,
            category: "privateuse1_runtime",
            pid: Some(9),
            stream: -1,
            index_correlation: target,
            ..row(0, name, ts, ts + 1, false)
        };
        // Two collectives, each launched by `nrt_cc_execute` and the `nrt_queue_submit`
        // inside it, two waits, then a compute launch: it waits for both collectives.
        let mut c1 = row(0, "allreduce", 10, 50, true);
        c1.event_index = 100;
        let mut c2 = row(0, "allreduce", 20, 60, true);
        c2.event_index = 101;
        let mut mm = row(0, "mm", 60, 70, false);
        mm.event_index = 102;
        let events = vec![
            call("nrt_cc_execute", 1, 1, 100),
            call("nrt_queue_submit", 2, 1, 100),
            call("nrt_cc_execute", 3, 2, 101),
            call("nrt_queue_submit", 4, 2, 101),
            call(NEURON_EVENT_WAIT, 5, 3, -1),
            call(NEURON_EVENT_WAIT, 6, 4, -1),
            call("nrt_execute", 7, 5, 102),
            c1,
            c2,
            mm,
        ];
        let clipped: Vec<u32> = (0..events.len() as u32).collect();
        let mut waits = neuron_event_waits(&events, &clipped);
        waits.sort_unstable();
        assert_eq!(
            waits,
            vec![(9, 7), (9, 8)],
            "mm waits for c1 and c2, once each"
        );
    }
}
