//! Predicted traces: each rank's file written again with the re-timed graph's times.
//!
//! Every event of the file is kept, in order, with its args. Events with nodes in the
//! graph (operators, runtime calls, device rows of the window) take their nodes' new
//! times exactly. Every other event with a time (Python frames, annotations, engine
//! instructions, DMA, flows, counters, memory events, events outside the window) is
//! moved by the graph's times on its own `pid` (its process, or its device): between two
//! nodes of that `pid`, linearly, so what nested in a re-timed kernel still nests in it;
//! before the first and after the last, by their shift. The files are gzip-compressed
//! Kineto traces with the same names, so `analyze`, the viewer and the Perfetto exporter
//! read them as any trace.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use trace_format::{Event, Output, TraceMeta, TraceSink, TraceWriter};

use super::what_if::WhatIf;
use super::CpGraph;
use crate::model::{FastMap, TraceSet};

/// Why a predicted trace could not be written.
#[derive(Debug)]
pub struct PredictedError {
    /// The file concerned.
    pub path: PathBuf,
    /// What went wrong.
    pub reason: String,
}

impl std::fmt::Display for PredictedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

impl std::error::Error for PredictedError {}

/// Old → new times (ns, on the rank's absolute clock) of one `pid`'s nodes.
#[derive(Default)]
struct Anchors {
    points: Vec<(i64, i64)>,
}

impl Anchors {
    fn finish(&mut self) {
        self.points.sort_unstable();
        self.points.dedup_by_key(|p| p.0);
        // New times never go back: a later old time maps no earlier.
        let mut latest = i64::MIN;
        for p in &mut self.points {
            latest = latest.max(p.1);
            p.1 = latest;
        }
    }

    fn map(&self, t: i64) -> i64 {
        let points = &self.points;
        let Some(&(first_old, first_new)) = points.first() else {
            return t;
        };
        let i = points.partition_point(|p| p.0 <= t);
        if i == 0 {
            return t + (first_new - first_old);
        }
        let (o0, n0) = points[i - 1];
        match points.get(i) {
            Some(&(o1, n1)) if o1 > o0 => {
                n0 + ((t - o0) as i128 * (n1 - n0) as i128 / (o1 - o0) as i128) as i64
            }
            _ => t + (n0 - o0),
        }
    }
}

/// Writes each analyzed rank's predicted trace into `dir` (created if needed); returns
/// the files written. `graph` must be a default-mode graph (ns on absolute clocks).
pub fn write_predicted(
    set: &TraceSet,
    graph: &CpGraph<'_>,
    answer: &WhatIf,
    dir: &Path,
) -> Result<Vec<PathBuf>, PredictedError> {
    std::fs::create_dir_all(dir).map_err(|e| PredictedError {
        path: dir.to_path_buf(),
        reason: format!("cannot create the directory: {e}"),
    })?;
    let scale = 1000 / graph.ticks_per_us.max(1);
    let mut written = Vec::new();
    for &(rank, _, _) in &graph.windows {
        let Some(trace) = set.rank(rank) else {
            continue;
        };
        // Exact times of the events with nodes, and anchors per pid.
        let mut exact: FastMap<u64, (Option<i64>, Option<i64>)> = FastMap::default();
        let mut anchors: FastMap<Option<i64>, Anchors> = FastMap::default();
        for (id, node) in graph.graph.nodes.iter().enumerate() {
            let event = &graph.events[node.event as usize];
            if event.rank != rank {
                continue;
            }
            let (old, new) = (node.ts * scale, answer.node_times[id] * scale);
            let slot = exact.entry(event.event_index).or_default();
            if node.is_start {
                slot.0 = Some(new);
            } else {
                slot.1 = Some(new);
            }
            anchors
                .entry(event.pid)
                .or_default()
                .points
                .push((old, new));
        }
        for a in anchors.values_mut() {
            a.finish();
        }
        let sink = Rewrite::new(trace, exact, anchors, Default::default());
        written.push(rewrite(trace, rank, dir, "", sink, &[])?);
    }
    Ok(written)
}

/// Reads `trace` through `sink` into `dir`, under the input's file name (gzip, with
/// `prefix`), appending `extra` events; returns the file written.
fn rewrite(
    trace: &crate::model::RankTrace,
    rank: i64,
    dir: &Path,
    prefix: &str,
    mut sink: Rewrite,
    extra: &[Event<'_>],
) -> Result<PathBuf, PredictedError> {
    let name = trace.path.file_name().map_or_else(
        || format!("rank{rank}.pt.trace.json.gz"),
        |n| n.to_string_lossy().into_owned(),
    );
    let gz = if name.ends_with(".gz") { "" } else { ".gz" };
    let out_path = dir.join(format!("{prefix}{name}{gz}"));
    let fail = |reason: String| PredictedError {
        path: out_path.clone(),
        reason,
    };
    sink.out_path = out_path.clone();
    crate::inputs::open_trace(&trace.path, false)
        .map_err(|e| fail(e.to_string()))?
        .read(&mut sink)
        .map_err(|e| fail(format!("reading {}: {e}", trace.path.display())))?;
    if let Some(e) = sink.error {
        return Err(fail(e));
    }
    let mut writer = sink
        .writer
        .ok_or_else(|| fail("the trace has no events".into()))?;
    for event in extra {
        writer
            .write_event(event)
            .map_err(|e| fail(format!("writing: {e}")))?;
    }
    writer
        .finish()
        .and_then(Output::close)
        .map_err(|e| fail(format!("writing: {e}")))?;
    Ok(out_path)
}

struct Rewrite {
    out_path: PathBuf,
    writer: Option<TraceWriter<Output<std::io::BufWriter<std::fs::File>>>>,
    header_base: i64,
    rank_base: i64,
    exact: FastMap<u64, (Option<i64>, Option<i64>)>,
    anchors: FastMap<Option<i64>, Anchors>,
    /// Events to mark `args.critical = 1` (the overlay).
    critical: crate::model::FastSet<u64>,
    error: Option<String>,
}

impl Rewrite {
    fn new(
        trace: &crate::model::RankTrace,
        exact: FastMap<u64, (Option<i64>, Option<i64>)>,
        anchors: FastMap<Option<i64>, Anchors>,
        critical: crate::model::FastSet<u64>,
    ) -> Self {
        Rewrite {
            out_path: PathBuf::new(),
            writer: None,
            header_base: 0,
            rank_base: trace.base_ns,
            exact,
            anchors,
            critical,
            error: None,
        }
    }

    /// The event's time on the rank's absolute clock (what the graph uses) and back.
    fn file_to_graph(&self, ts_ns: i64) -> i64 {
        ts_ns - self.header_base + self.rank_base
    }

    fn graph_to_file(&self, t: i64) -> i64 {
        t - self.rank_base + self.header_base
    }

    fn map(&self, pid: Option<i64>, ts_ns: i64) -> i64 {
        let t = self.file_to_graph(ts_ns);
        let new = match self.anchors.get(&pid) {
            Some(a) => a.map(t),
            None => t,
        };
        self.graph_to_file(new)
    }
}

impl TraceSink for Rewrite {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.header_base = meta.base_time_ns().unwrap_or(0);
        match TraceWriter::create(&self.out_path, meta, true) {
            Ok(w) => {
                self.writer = Some(w);
                ControlFlow::Continue(())
            }
            Err(e) => {
                self.error = Some(format!("cannot create: {e}"));
                ControlFlow::Break(())
            }
        }
    }

    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        let mut event = event.clone();
        if self.critical.contains(&index) {
            event = event.with_arg("critical", 1i64);
        }
        let pid = event.pid.as_ref().and_then(|p| p.as_i64());
        if let Some(ts) = event.ts_ns {
            let end = event.dur_ns.map(|d| ts + d);
            let (new_ts, new_end) = match self.exact.get(&index) {
                Some(&(Some(s), Some(e))) => (self.graph_to_file(s), Some(self.graph_to_file(e))),
                _ => (self.map(pid, ts), end.map(|e| self.map(pid, e))),
            };
            event.ts_ns = Some(new_ts);
            if let Some(e) = new_end {
                event.dur_ns = Some((e - new_ts).max(0));
            }
        }
        let Some(writer) = &mut self.writer else {
            return ControlFlow::Break(());
        };
        if let Err(e) = writer.write_event(&event) {
            self.error = Some(format!("writing: {e}"));
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    fn on_trailer(&mut self, meta: &TraceMeta) {
        if let Some(w) = &mut self.writer {
            w.set_trailer(meta);
        }
    }
}

/// HTA's overlay (`overlay_critical_path_analysis` with its defaults): each analyzed
/// rank's trace with the events on the critical path marked `args.critical = 1` and the
/// path's dependency, launch-delay and sync edges added as flows (`ph` `s`/`f`, name
/// `critical_path`, category the edge type, args `weight` in µs and `critical`). Edges
/// between ranks (collective arrivals) cannot be drawn inside one rank's file and are
/// left out. Written into `dir` under the input files' names; returns them.
pub fn write_overlay(
    set: &TraceSet,
    graph: &CpGraph<'_>,
    path: &[u32],
    dir: &Path,
) -> Result<Vec<PathBuf>, PredictedError> {
    use super::graph::EdgeKind;
    use trace_format::{Category, FlowEnd, Ident};
    std::fs::create_dir_all(dir).map_err(|e| PredictedError {
        path: dir.to_path_buf(),
        reason: format!("cannot create the directory: {e}"),
    })?;
    let scale = 1000 / graph.ticks_per_us.max(1);
    let mut written = Vec::new();
    for &(rank, _, _) in &graph.windows {
        let Some(trace) = set.rank(rank) else {
            continue;
        };
        let critical: crate::model::FastSet<u64> = graph
            .path_events(path)
            .into_iter()
            .filter(|&(r, _)| r == rank)
            .map(|(_, i)| i)
            .collect();
        // Flows, in file time (the graph's ticks back to the file's ns).
        let mut flows: Vec<Event<'static>> = Vec::new();
        for (flow_id, &id) in path.iter().enumerate() {
            let edge = &graph.graph.edges[id as usize];
            if !matches!(
                edge.kind,
                EdgeKind::Dependency | EdgeKind::LaunchDelay | EdgeKind::SyncDependency
            ) {
                continue;
            }
            let (src, dst) = (
                graph.graph.nodes[edge.src as usize],
                graph.graph.nodes[edge.dst as usize],
            );
            let (se, de) = (
                &graph.events[src.event as usize],
                &graph.events[dst.event as usize],
            );
            if se.rank != rank || de.rank != rank {
                continue;
            }
            let base = if graph.mode == crate::classify::Mode::Default {
                trace.base_ns
            } else {
                0
            };
            let ident = |v: Option<i64>| Ident::Num(v.unwrap_or(-1));
            for (end, node, e) in [(FlowEnd::Start, src, se), (FlowEnd::Finish, dst, de)] {
                let ts = node.ts * scale - base + header_base(trace);
                let category =
                    Category::parse(std::borrow::Cow::Owned(edge.kind.hta_name().to_owned()));
                let mut flow = Event::flow(
                    end,
                    category,
                    flow_id as i64,
                    ident(e.pid),
                    ident(e.tid),
                    ts,
                )
                .with_arg("weight", edge.weight * scale / 1000)
                .with_arg("critical", true);
                flow.name = Some(std::borrow::Cow::Borrowed("critical_path"));
                flows.push(flow);
            }
        }
        let sink = Rewrite::new(trace, FastMap::default(), FastMap::default(), critical);
        written.push(rewrite(
            trace,
            rank,
            dir,
            "overlaid_critical_path_",
            sink,
            &flows,
        )?);
    }
    Ok(written)
}

/// The header's `baseTimeNanoseconds` the reader applied to the file's events (the
/// model's events are relative to it).
fn header_base(trace: &crate::model::RankTrace) -> i64 {
    trace.base_ns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_interpolate_between_nodes_and_shift_outside() {
        let mut a = Anchors {
            points: vec![(100, 100), (200, 150), (300, 250)],
        };
        a.finish();
        assert_eq!(a.map(50), 50);
        assert_eq!(a.map(150), 125);
        assert_eq!(a.map(250), 200);
        assert_eq!(a.map(400), 350);
    }
}
