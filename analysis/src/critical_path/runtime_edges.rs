//! Edges the device runtime adds to HTA's rules (default mode only): launches blocked on
//! a full queue, compute held up by a collective's DMA, collectives waiting for the
//! compute that produces their input, and the duration each piece of work takes
//! without waiting. Each was found where a prediction missed (docs/WHAT-IF.md, "Edges
//! added because a prediction missed").

use super::build::RankGraph;
use super::events::CpEvent;
use super::graph::{Edge, EdgeKind, Graph};
use crate::model::FastMap;

/// (end time, end node) of a stream's device rows.
type RowEnds = Vec<(i64, u32)>;

/// A launch longer than this beyond its call's unblocked cost that ends just after a
/// device row of its stream ended was blocked on a full queue (default mode).
const BLOCKED_LAUNCH_NS: i64 = 1_000;
/// How close (ns) the blocked launch's end follows the device row that freed its slot.
const SLOT_FREED_NS: i64 = 2_000;

/// A launch blocks while its stream's queue is full (the neuron runtime, like CUDA,
/// bounds the queue): it returns when a device row ends and frees a slot. Such a launch
/// (1 µs longer than the call's unblocked cost on the rank, ending within 2 µs after a
/// row of its stream ended) gets an edge from that row's end weighing the rest of the
/// call, and its own span weighs 0: it was waiting, not working. The unblocked cost is
/// the call's 10th-percentile duration on the rank: a plain launch that happens to end
/// just after a row (with the host's time modeled every `nrt_execute` lasts 7 µs) is
/// not a wait.
pub(super) fn full_queue_edges(
    graph: &mut Graph,
    events: &[CpEvent<'_>],
    clipped: &[u32],
    rank_graph: &RankGraph,
    by_index: &FastMap<u64, u32>,
) {
    // Device row ends per (device pid, stream), sorted.
    let mut ends: FastMap<(Option<i64>, i64), RowEnds> = FastMap::default();
    for &i in clipped {
        let e = &events[i as usize];
        if e.on_stream() {
            if let Some(&(_, end)) = rank_graph.nodes_of.get(&i) {
                ends.entry((e.pid, e.stream))
                    .or_default()
                    .push((e.end, end));
            }
        }
    }
    for list in ends.values_mut() {
        list.sort_unstable();
    }
    let mut durations: FastMap<&str, Vec<i64>> = FastMap::default();
    for &i in clipped {
        let e = &events[i as usize];
        if !e.on_stream() && e.index_correlation > 0 {
            durations.entry(e.name).or_default().push(e.dur());
        }
    }
    let unblocked: FastMap<&str, i64> = durations
        .into_iter()
        .map(|(name, mut durs)| {
            durs.sort_unstable();
            (name, durs[durs.len() / 10])
        })
        .collect();
    for &i in clipped {
        let e = &events[i as usize];
        if e.on_stream() || e.index_correlation <= 0 {
            continue;
        }
        let usual = unblocked.get(e.name).copied().unwrap_or(0);
        if e.dur() < usual + BLOCKED_LAUNCH_NS {
            continue;
        }
        let Some(&row) = by_index.get(&(e.index_correlation as u64)) else {
            continue;
        };
        let target = &events[row as usize];
        if !target.on_stream() {
            continue;
        }
        let Some(list) = ends.get(&(target.pid, target.stream)) else {
            continue;
        };
        let at = list.partition_point(|&(t, _)| t <= e.end);
        let Some(&(freed_ts, freed_node)) = at.checked_sub(1).map(|k| &list[k]) else {
            continue;
        };
        if freed_ts <= e.ts || e.end - freed_ts > SLOT_FREED_NS {
            continue;
        }
        let Some(&(_, call_end)) = rank_graph.nodes_of.get(&i) else {
            continue;
        };
        let preds: Vec<u32> = graph.preds(call_end).to_vec();
        for id in preds {
            let edge = &mut graph.edges[id as usize];
            if edge.kind == EdgeKind::Operator {
                edge.weight = 0;
                edge.scales = false;
            }
        }
        // From the freed slot to the call's return: host time, the call's own.
        let attributed = Some(graph.nodes[call_end as usize].event);
        graph.add_edge(Edge {
            src: freed_node,
            dst: call_end,
            weight: e.end - freed_ts,
            kind: EdgeKind::Operator,
            attributed,
            scales: true,
            causal: false,
        });
    }
}

/// A compute row that overlaps a collective on its device and lasts longer than the
/// same work does elsewhere on the rank was held up by the collective: the emulator's
/// collectives (like real ones) move their bytes through the core's DMA engines from
/// the last rank's arrival on, and compute queued behind those transfers waits (hw.md,
/// Collectives). Such a row's span weighs the same work's duration without the wait
/// ([`nominal_durations`]), and its end gets an edge from the collective's end
/// weighing the rest of the row: so it moves with the collective, that is with the
/// last rank's arrival.
pub(super) fn contention_edges<'t>(
    graph: &mut Graph,
    events: &[CpEvent<'t>],
    clipped: &[u32],
    rank_graph: &RankGraph,
    least: &Nominal<'t>,
) {
    // Collectives of the window per device, by end.
    let mut collectives: Vec<(Option<i64>, i64, u32)> = clipped
        .iter()
        .filter(|&&i| events[i as usize].on_stream() && events[i as usize].is_comm)
        .map(|&i| (events[i as usize].pid, events[i as usize].end, i))
        .collect();
    collectives.sort_unstable();
    for &i in clipped {
        let e = &events[i as usize];
        if !e.on_stream() || e.is_comm || e.category == "cuda_sync" {
            continue;
        }
        let Some(&nominal) = least.get(&(e.name, e.work)) else {
            continue;
        };
        if e.dur() <= nominal + 1000 {
            continue;
        }
        // The collective of this device that ended last within the row.
        let held_by = collectives
            .iter()
            .filter(|(pid, end, _)| *pid == e.pid && *end > e.ts && *end <= e.end)
            .max_by_key(|(_, end, _)| *end);
        let Some(&(_, c_end_ts, c)) = held_by else {
            continue;
        };
        let (Some(&(start, end)), Some(&(_, c_end))) =
            (rank_graph.nodes_of.get(&i), rank_graph.nodes_of.get(&c))
        else {
            continue;
        };
        if let Some(id) = graph.edge_between(start, end) {
            graph.edges[id as usize].weight = nominal;
        }
        let attributed = graph.nodes[start as usize].event;
        graph.add_edge(Edge {
            src: c_end,
            dst: end,
            weight: e.end - c_end_ts,
            kind: EdgeKind::Operator,
            attributed: Some(attributed),
            scales: true,
            causal: false,
        });
    }
}

/// How close (ns) a collective's start follows the end of the compute that produced its
/// input, to be taken as waiting for it.
const INPUT_READY_NS: i64 = 2_000;

/// A host thread of a device: (device `pid`, thread `pid`, thread `tid`).
type Launcher = (Option<i64>, Option<i64>, Option<i64>);

/// Compute rows by who launched them: ((launch time, launch event index), row).
type Launched = FastMap<Launcher, Vec<((i64, u64), u32)>>;

/// A collective starts no earlier than the compute that produces its input: the
/// emulator's `inputs_ready_ns`, the end of the work its compute queue holds when the
/// collective is launched, as c10d on CUDA makes the collective's stream wait for the
/// current stream at the call. That is a dependency the trace does not spell out; it is
/// read off the launches: the input is the last compute row of the device its thread
/// launched before the collective (a collective without a launch in the window: the
/// compute row of its device that ended last within 2 µs before it started). The edge
/// from that row's end weighs the gap when the input is what the start waited for (it
/// started within 2 µs after, and after the previous row of its stream, which then
/// keeps only its order), else 0: a collective held up by its stream (the previous
/// collective waiting for a late rank) still needs its input when the stream frees
/// sooner. A compute row that ended after the collective started was not its input (the
/// collective took another stream's data) and gets no edge.
pub(super) fn collective_input_edges(
    graph: &mut Graph,
    events: &[CpEvent<'_>],
    clipped: &[u32],
    rank_graph: &RankGraph,
    by_index: &FastMap<u64, u32>,
) {
    // The host call that launched a device row: who, and (when, its position).
    let launch = |row: &CpEvent<'_>| -> Option<(Launcher, (i64, u64))> {
        if row.index_correlation <= 0 {
            return None;
        }
        let call = &events[*by_index.get(&(row.index_correlation as u64))? as usize];
        Some(((row.pid, call.pid, call.tid), (call.ts, call.event_index)))
    };
    let is_compute = |e: &CpEvent<'_>| e.on_stream() && !e.is_comm && e.category != "cuda_sync";
    let mut compute_ends: Vec<(Option<i64>, i64, u32)> = Vec::new();
    let mut launched: Launched = FastMap::default();
    for &i in clipped {
        let e = &events[i as usize];
        if is_compute(e) {
            compute_ends.push((e.pid, e.end, i));
            if let Some((who, when)) = launch(e) {
                launched.entry(who).or_default().push((when, i));
            }
        }
    }
    compute_ends.sort_unstable();
    for rows in launched.values_mut() {
        rows.sort_unstable();
    }
    for &c in clipped {
        let e = &events[c as usize];
        if !(e.on_stream() && e.is_comm) {
            continue;
        }
        let input = match launch(e) {
            Some((who, when)) => launched.get(&who).and_then(|rows| {
                let before = rows.partition_point(|&(w, _)| w < when);
                rows[..before].last().map(|&(_, k)| k)
            }),
            None => {
                let lo = compute_ends
                    .partition_point(|&(p, t, _)| (p, t) < (e.pid, e.ts - INPUT_READY_NS));
                let hi = compute_ends.partition_point(|&(p, t, _)| (p, t) <= (e.pid, e.ts));
                compute_ends[lo..hi].last().map(|&(_, _, k)| k)
            }
        };
        let Some(k) = input else {
            continue;
        };
        let k_end_ts = events[k as usize].end;
        let (Some(&(_, k_end)), Some(&(c_start, _))) =
            (rank_graph.nodes_of.get(&k), rank_graph.nodes_of.get(&c))
        else {
            continue;
        };
        if k_end_ts > e.ts {
            continue;
        }
        // The previous row of the collective's stream, when the graph orders them.
        let stream_free = graph
            .preds(c_start)
            .iter()
            .map(|&id| &graph.edges[id as usize])
            .filter(|edge| edge.kind == EdgeKind::KernelKernelDelay)
            .map(|edge| graph.nodes[edge.src as usize].ts)
            .max();
        let waited = e.ts - k_end_ts <= INPUT_READY_NS && stream_free.is_none_or(|t| t < k_end_ts);
        graph.add_edge(Edge {
            src: k_end,
            dst: c_start,
            weight: if waited { e.ts - k_end_ts } else { 0 },
            kind: EdgeKind::SyncDependency,
            attributed: None,
            scales: false,
            causal: false,
        });
        if !waited {
            continue;
        }
        // The input, not the previous collective, is what the start waited for: the
        // stream order stays, as an ordering-only edge.
        let preds: Vec<u32> = graph.preds(c_start).to_vec();
        for id in preds {
            let edge = &mut graph.edges[id as usize];
            if edge.kind == EdgeKind::KernelKernelDelay && !edge.causal && edge.src != k_end {
                edge.weight = 0;
                edge.attributed = None;
                edge.causal = true;
            }
        }
    }
}

/// A piece of work on a rank: a device row's name and (`flops`, `bytes`).
type Work<'t> = (&'t str, (i64, i64));

/// What each piece of work takes on one rank without waiting ([`nominal_durations`]).
pub(crate) type Nominal<'t> = FastMap<Work<'t>, i64>;

/// Each rank's duration of each piece of work when it does not wait behind a
/// collective's transfers (default mode; see [`contention_edges`]): the least duration
/// of the same work (name, `flops`, `bytes`) on the rank, or, where less, on another
/// rank times the two ranks' speed ratio.
///
/// A rank whose compute always runs behind a collective (a fast rank waiting for a
/// straggler: every step its collectives start late, and the compute queued behind
/// their transfers waits each time) has no step where the work ran alone, but the
/// other ranks may: the slow rank, whose collectives start when it arrives. Devices
/// differ in speed (a straggler's device is slower), so another rank's duration is
/// converted by the ranks' speed ratio: the median, over the work both ranks ran
/// without a collective in flight on their device, of the ratio of their least
/// durations. Two ranks without such common work are not compared.
pub(crate) fn nominal_durations<'t>(ranks: &[Vec<&CpEvent<'t>>]) -> Vec<Nominal<'t>> {
    // Per rank: the least duration of each work over all its rows, and over the rows
    // no collective of their device overlapped ("clean").
    let mut least: Vec<Nominal<'t>> = Vec::with_capacity(ranks.len());
    let mut clean: Vec<Nominal<'t>> = Vec::with_capacity(ranks.len());
    for events in ranks {
        // Collectives per device, by start, with the running maximum of their ends.
        let mut spans: Vec<(Option<i64>, i64, i64)> = events
            .iter()
            .filter(|e| e.on_stream() && e.is_comm)
            .map(|e| (e.pid, e.ts, e.end))
            .collect();
        spans.sort_unstable();
        let mut max_end: Vec<i64> = Vec::with_capacity(spans.len());
        for (k, &(pid, _, end)) in spans.iter().enumerate() {
            let before = (k > 0 && spans[k - 1].0 == pid).then(|| max_end[k - 1]);
            max_end.push(before.map_or(end, |b| b.max(end)));
        }
        let mut all = Nominal::default();
        let mut alone = Nominal::default();
        for e in events.iter().filter(|e| e.on_stream() && !e.is_comm) {
            let key = (e.name, e.work);
            let slot = all.entry(key).or_insert(i64::MAX);
            *slot = (*slot).min(e.dur());
            // The device's collectives that started before the row ended: the row ran
            // alone when all of them had ended by its start.
            let lo = spans.partition_point(|&(pid, _, _)| pid < e.pid);
            let hi = spans.partition_point(|&(pid, ts, _)| (pid, ts) < (e.pid, e.end));
            if hi == lo || max_end[hi - 1] <= e.ts {
                let slot = alone.entry(key).or_insert(i64::MAX);
                *slot = (*slot).min(e.dur());
            }
        }
        least.push(all);
        clean.push(alone);
    }
    // ratio[r][q]: rank r's durations over rank q's, where they can be compared.
    let ratio = |r: usize, q: usize| -> Option<f64> {
        let mut ratios: Vec<f64> = clean[r]
            .iter()
            .filter(|(_, &d)| d > 0)
            .filter_map(|(key, &d)| {
                clean[q]
                    .get(key)
                    .filter(|&&dq| dq > 0)
                    .map(|&dq| d as f64 / dq as f64)
            })
            .collect();
        if ratios.is_empty() {
            return None;
        }
        ratios.sort_unstable_by(f64::total_cmp);
        Some(ratios[ratios.len() / 2])
    };
    (0..ranks.len())
        .map(|r| {
            let mut nominal = least[r].clone();
            for q in (0..ranks.len()).filter(|&q| q != r) {
                let Some(speed) = ratio(r, q) else {
                    continue;
                };
                for (key, slot) in nominal.iter_mut() {
                    if let Some(&dq) = least[q].get(key) {
                        *slot = (*slot).min((dq as f64 * speed).round() as i64);
                    }
                }
            }
            nominal
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::critical_path::build::tests::row;
    use crate::critical_path::build::RankGraph;

    #[test]
    fn work_that_always_waited_takes_another_ranks_duration_at_the_ranks_speed_ratio() {
        // Rank 0 (fast): `ln` always runs while a collective is in flight (50 and 40
        // ticks); `mm` and `add` run alone. Rank 1 runs at half speed: `mm` 20 vs 10,
        // `add` 8 vs 4, and `ln` alone in 16.
        let fast = [
            row(0, "mm", 0, 10, false),
            row(0, "add", 10, 14, false),
            row(0, "allreduce", 14, 100, true),
            row(0, "ln", 20, 70, false),
            row(0, "ln", 110, 150, false),
            row(0, "allreduce", 105, 160, true),
        ];
        let slow = [
            row(1, "mm", 0, 20, false),
            row(1, "add", 20, 28, false),
            row(1, "ln", 30, 46, false),
            row(1, "allreduce", 50, 100, true),
        ];
        let nominal = nominal_durations(&[fast.iter().collect(), slow.iter().collect()]);
        let of = |r: usize, name| nominal[r][&(name, (100, 200))];
        assert_eq!(of(0, "ln"), 8, "rank 1's 16 at rank 0's speed (1/2)");
        assert_eq!(of(0, "mm"), 10);
        assert_eq!(of(1, "ln"), 16, "its own, less than rank 0's 40 x 2");
        assert_eq!(of(1, "add"), 8);
        // A rank compared with no other keeps its own least duration.
        let alone = nominal_durations(&[fast.iter().collect()]);
        assert_eq!(alone[0][&("ln", (100, 200))], 40);
    }

    /// A graph of `events` with a start and end node each, and the given
    /// kernel-kernel edges (previous row, next row).
    fn graph_of(events: &[CpEvent<'_>], stream_order: &[(u32, u32)]) -> (Graph, RankGraph) {
        let mut graph = Graph::default();
        let mut nodes_of = FastMap::default();
        for (i, e) in events.iter().enumerate() {
            let node = |ts, is_start| crate::critical_path::graph::Node {
                ts,
                event: i as u32,
                is_start,
            };
            let start = graph.add_node(node(e.ts, true));
            let end = graph.add_node(node(e.end, false));
            nodes_of.insert(i as u32, (start, end));
        }
        for &(a, b) in stream_order {
            let (src, dst) = (nodes_of[&a].1, nodes_of[&b].0);
            graph.add_edge(Edge {
                src,
                dst,
                weight: events[b as usize].ts - events[a as usize].end,
                kind: EdgeKind::KernelKernelDelay,
                attributed: None,
                scales: false,
                causal: false,
            });
        }
        (graph, RankGraph { nodes_of })
    }

    /// The input edges into `row`'s start: (source event, weight), and whether its
    /// stream-order edge still weighs.
    fn inputs_of(graph: &Graph, rank_graph: &RankGraph, row: u32) -> (Vec<(u32, i64)>, bool) {
        let start = rank_graph.nodes_of[&row].0;
        let mut inputs = Vec::new();
        let mut stream_weighs = false;
        for &id in graph.preds(start) {
            let edge = &graph.edges[id as usize];
            match edge.kind {
                EdgeKind::SyncDependency => {
                    inputs.push((graph.nodes[edge.src as usize].event, edge.weight))
                }
                EdgeKind::KernelKernelDelay => stream_weighs |= !edge.causal,
                _ => {}
            }
        }
        (inputs, stream_weighs)
    }

    #[test]
    fn a_collectives_input_is_the_compute_launched_before_it_not_one_ending_just_before() {
        // Thread 7 of process 9 launches `grad` (0), the all-reduces `ar1` (1) and
        // `ar2` (3), then `other` (2). `ar1` is held up (a late peer) to 1000; `ar2`
        // starts when it ends, 1 tick after `other` ended: `other`, launched after it,
        // is not its input, `grad` is, and `ar2` waited for its stream, not for `grad`.
        let call = |index: u64, ts: i64, target: i64| CpEvent {
            event_index: index,
            category: "privateuse1_runtime",
            pid: Some(9),
            stream: -1,
            index_correlation: target,
            ..row(0, "nrt_execute", ts, ts + 1, false)
        };
        let device = |name: &'static str, index: u64, launch: i64, ts, end, comm| CpEvent {
            event_index: index,
            index_correlation: launch,
            stream: if comm { 3 } else { 0 },
            ..row(0, name, ts, end, comm)
        };
        let events = vec![
            device("grad", 100, 1, 10, 50, false),
            device("ar1", 101, 2, 60, 1000, true),
            device("other", 102, 4, 900, 999, false),
            device("ar2", 103, 3, 1000, 1020, true),
            call(1, 5, 100),
            call(2, 55, 101),
            call(3, 56, 103),
            call(4, 57, 102),
        ];
        let clipped: Vec<u32> = (0..events.len() as u32).collect();
        let (mut graph, rank_graph) = graph_of(&events, &[(1, 3)]);
        let by_index: FastMap<u64, u32> = events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.event_index, i as u32))
            .collect();
        collective_input_edges(&mut graph, &events, &clipped, &rank_graph, &by_index);
        assert_eq!(
            inputs_of(&graph, &rank_graph, 3),
            (vec![(0, 0)], true),
            "ar2 waits for grad (ordering only) and still for its stream"
        );
        // `ar1` started 10 ticks after its input ended, with nothing before it on
        // its stream: it waited for that input, the gap its weight.
        let (inputs, _) = inputs_of(&graph, &rank_graph, 1);
        assert_eq!(inputs, vec![(0, 10)]);
    }
}
