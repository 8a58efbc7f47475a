//! Turns trace events into a [`Timeline`]: one [`FileSink`] per file (run in parallel),
//! then [`merge`] puts the files on one time axis.
//!
//! Nesting depth is computed per track after sorting by (start, longer first): a slice
//! goes one row below the deepest slice still open at its start. A slice that overlaps
//! another without nesting in it (a damaged or unusual trace) still gets a row where
//! nothing else is open, so no event is ever hidden behind another.

mod sink;

use std::collections::HashMap;

pub use sink::FileSink;
use sink::{Chunked, Key, RawSlice, RawTrack};

use super::{FileInfo, Flow, Group, NameId, Names, Row, Timeline, Track, TrackKind};

/// A matched flow: category, (track, time) of its start and of its end.
type RawFlow = (NameId, (usize, i64), (usize, i64));

/// A flow event: category, id, 0 start / 1 step / 2 finish, track, time.
type FlowPoint = (NameId, Key, u8, usize, i64);

/// Pairs flow events by (category, id) in time order, whatever their order in the file
/// (Kineto may write every `f` before the `s` events): each step or finish links from
/// the latest start or step before it (or, when none precedes it, the first one after).
fn match_flows(mut points: Vec<FlowPoint>) -> Vec<RawFlow> {
    points.sort_unstable_by_key(|&(cat, key, end, _, ts)| (cat, key, ts, end));
    let mut flows = Vec::new();
    for group in points.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        let mut from = group.iter().find(|p| p.2 == 0).map(|p| (p.3, p.4));
        for p in group {
            match p.2 {
                0 => from = Some((p.3, p.4)),
                _ => {
                    if let Some(start) = from {
                        if start != (p.3, p.4) {
                            flows.push((p.0, start, (p.3, p.4)));
                        }
                    }
                    if p.2 == 1 {
                        from = Some((p.3, p.4));
                    }
                }
            }
        }
    }
    flows
}

/// One file read into a sink, with what the reader reported.
#[derive(Debug)]
pub struct FileResult {
    /// The events.
    pub sink: FileSink,
    /// Path, rank, warnings.
    pub info: FileInfo,
    /// Add to every time of this file to get ns since the Unix epoch.
    pub time_offset_ns: i64,
}

impl FileResult {
    /// Wraps a finished sink.
    pub fn new(mut sink: FileSink, mut info: FileInfo, time_offset_ns: i64) -> Self {
        info.rank = sink.rank;
        info.events = sink.events;
        // B events never closed: shown as instants where they began.
        let mut unclosed = 0u64;
        for (track, begins) in std::mem::take(&mut sink.open_begins) {
            unclosed += begins.len() as u64;
            for begin in begins {
                sink.tracks[track].1.slices.push(begin);
            }
        }
        if unclosed > 0 {
            info.warnings.push(format!(
                "{unclosed} B (begin) events without their E are shown as instants"
            ));
        }
        if sink.unmatched_ends > 0 {
            info.warnings.push(format!(
                "{} E (end) events without a B before them are not shown",
                sink.unmatched_ends
            ));
        }
        if sink.without_ts > 0 {
            info.warnings.push(format!(
                "{} events without a timestamp (ts) are not shown",
                sink.without_ts
            ));
        }
        FileResult {
            sink,
            info,
            time_offset_ns,
        }
    }
}

/// [`nest`] for every track, on as many threads as there are cores (largest first).
fn nest_all(slices: Vec<Chunked<RawSlice>>, shift_ns: i64) -> Vec<Vec<Row>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let mut order: Vec<usize> = (0..slices.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(slices[i].len()));
    let inputs: Vec<Mutex<Chunked<RawSlice>>> = slices.into_iter().map(Mutex::new).collect();
    let outputs: Vec<Mutex<Vec<Row>>> = inputs.iter().map(|_| Mutex::new(Vec::new())).collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(order.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let input =
                    std::mem::take(&mut *inputs[i].lock().unwrap_or_else(|p| p.into_inner()));
                let rows = nest(input.into_vec(), shift_ns);
                *outputs[i].lock().unwrap_or_else(|p| p.into_inner()) = rows;
            });
        }
    });
    outputs
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

/// Sorts one track's slices and splits them into rows by nesting depth.
fn nest(mut slices: Vec<RawSlice>, shift_ns: i64) -> Vec<Row> {
    // Stable sort: adaptive, near O(n) on the mostly sorted order traces are written in.
    slices.sort_by(|a, b| a.start_ns.cmp(&b.start_ns).then(b.end_ns.cmp(&a.end_ns)));
    let mut rows: Vec<Row> = Vec::new();
    let mut open: Vec<i64> = Vec::new(); // end of the open slice at each depth
    for s in slices {
        // Close what ended by this start (a slice that starts where another ends is
        // its sibling, not its child).
        while open.last().is_some_and(|&end| end <= s.start_ns) {
            open.pop();
        }
        let depth = open.len();
        open.push(s.end_ns.max(s.start_ns));
        if rows.len() <= depth {
            rows.push(Row::default());
        }
        let row = &mut rows[depth];
        row.start_ns.push(s.start_ns - shift_ns);
        row.end_ns.push(s.end_ns - shift_ns);
        row.name.push(s.name);
        row.category.push(s.category);
        row.event_index.push(s.event_index);
        row.args_at.push(s.args_at);
    }
    for row in &mut rows {
        row.lod = super::lod::build_levels(&row.start_ns, &row.end_ns);
    }
    rows
}

fn key_text(names: &Names, key: Key) -> String {
    match key {
        Key::Num(n) => n.to_string(),
        Key::Str(id) => names.get(id).to_owned(),
    }
}

/// A label for an unnamed thread from the emulator's conventions (see DESIGN.md,
/// "Kineto conventions for neuron activity"): instructions on tid 1000 + 100 × core +
/// engine, DMA on tid 10000 + queue, device work on tid = queue.
fn thread_label(names: &Names, tid: Key, track: &RawTrack) -> String {
    match tid {
        Key::Num(n) if track.engine_like && (1000..10_000).contains(&n) => {
            let core = (n - 1000) / 100;
            let engine = (n - 1000) % 100;
            format!("core {core} · engine {engine}")
        }
        Key::Num(n) if track.dma_like && n >= 10_000 => format!("DMA queue {}", n - 10_000),
        Key::Num(n) if track.device_like => format!("queue {n}"),
        other => match key_text(names, other) {
            text if text.is_empty() => "events without a thread".to_owned(),
            text => format!("thread {text}"),
        },
    }
}

/// Puts the files on one time axis (absolute time, so ranks line up) and builds groups.
pub fn merge(files: Vec<FileResult>) -> Timeline {
    let mut timeline = Timeline::default();
    let origin = files
        .iter()
        .flat_map(|f| {
            let slices = f
                .sink
                .tracks
                .iter()
                .flat_map(|(_, t)| t.slices.iter().map(|s| s.start_ns));
            let counters = f
                .sink
                .counters
                .iter()
                .flat_map(|(_, c)| c.ts_ns.iter().copied());
            slices.chain(counters).map(move |t| t + f.time_offset_ns)
        })
        .min()
        .unwrap_or(0);
    timeline.origin_ns = origin;
    let several = files.len() > 1;
    for (file_index, file) in files.into_iter().enumerate() {
        let FileResult {
            sink,
            info,
            time_offset_ns,
        } = file;
        let shift = origin - time_offset_ns;
        let file_label = match (info.rank, several) {
            (Some(rank), _) => format!("rank {rank} · "),
            (None, true) => format!("file {file_index} · "),
            (None, false) => String::new(),
        };
        let remap: Vec<NameId> = sink
            .names
            .iter()
            .map(|n| timeline.names.intern(n))
            .collect();
        // Processes of this file: host ones first, then devices, each by sort index / pid.
        let mut pids: Vec<Key> = sink.tracks.iter().map(|((pid, _), _)| *pid).collect();
        pids.extend(sink.counters.iter().map(|((pid, _), _)| *pid));
        pids.sort();
        pids.dedup();
        let is_device = |pid: &Key| {
            sink.tracks
                .iter()
                .any(|((p, _), t)| p == pid && (t.device_like || t.engine_like || t.dma_like))
        };
        pids.sort_by_key(|pid| (is_device(pid), sink.process_sort.get(pid).copied(), *pid));
        // One group per process and kind of track: threads and queues, engines, DMA
        // queues, counters (a NeuronCore has hundreds of DMA queues: that group starts
        // collapsed).
        let class_of = |t: &RawTrack| match (t.engine_like, t.dma_like) {
            (true, _) => 1u8,
            (false, true) => 2,
            _ => 0,
        };
        let mut counts: HashMap<(Key, u8), usize> = HashMap::new();
        for ((pid, _), t) in &sink.tracks {
            *counts.entry((*pid, class_of(t))).or_default() += 1;
        }
        for ((pid, _), _) in &sink.counters {
            *counts.entry((*pid, 3)).or_default() += 1;
        }
        let mut group_of: HashMap<(Key, u8), u32> = HashMap::new();
        for pid in &pids {
            let name = match sink.process_names.get(pid) {
                Some(name) => format!("{name} ({})", key_text(&sink.names, *pid)),
                None if is_device(pid) => format!("device {}", key_text(&sink.names, *pid)),
                None => match key_text(&sink.names, *pid) {
                    text if text.is_empty() => "events without a process".to_owned(),
                    text => format!("process {text}"),
                },
            };
            for class in 0..4u8 {
                let Some(&count) = counts.get(&(*pid, class)) else {
                    continue;
                };
                let kind = ["", " · engines", " · DMA queues", " · counters"][class as usize];
                group_of.insert((*pid, class), timeline.groups.len() as u32);
                timeline.groups.push(Group {
                    label: format!("{file_label}{name}{kind}"),
                    file: file_index as u32,
                    tracks: Vec::new(),
                    collapsed: class == 2 && count > 8,
                });
            }
        }
        let mut order: Vec<usize> = (0..sink.tracks.len()).collect();
        order.sort_by_key(|&i| {
            let (key, _) = &sink.tracks[i];
            (sink.thread_sort.get(key).copied(), key.1)
        });
        let mut new_index = vec![0u32; sink.tracks.len()];
        let mut sink = sink;
        let slices: Vec<Chunked<RawSlice>> = sink
            .tracks
            .iter_mut()
            .map(|(_, t)| std::mem::take(&mut t.slices))
            .collect();
        let mut nested = nest_all(slices, shift);
        let mut raw_tracks: Vec<Option<((Key, Key), RawTrack)>> =
            sink.tracks.into_iter().map(Some).collect();
        for &i in &order {
            let ((pid, tid), raw) = raw_tracks[i].take().expect("each track is taken once");
            let label = match sink.thread_names.get(&(pid, tid)) {
                Some(name) => name.clone(),
                None => thread_label(&sink.names, tid, &raw),
            };
            let mut rows = std::mem::take(&mut nested[i]);
            for row in &mut rows {
                for id in row.name.iter_mut().chain(row.category.iter_mut()) {
                    *id = remap[*id as usize];
                }
            }
            let slices: usize = rows.iter().map(Row::len).sum();
            timeline.slice_count += slices as u64;
            let index = timeline.tracks.len() as u32;
            new_index[i] = index;
            let group = group_of[&(pid, class_of(&raw))];
            timeline.groups[group as usize].tracks.push(index);
            timeline.tracks.push(Track {
                label,
                group,
                kind: TrackKind::Slices { rows },
                args: raw.args,
                flow_points: raw.flow_points,
            });
        }
        for ((pid, label), counter) in sink.counters {
            let mut samples: Vec<(i64, f64)> =
                counter.ts_ns.into_iter().zip(counter.value).collect();
            samples.sort_by_key(|(t, _)| *t);
            let max = samples.iter().map(|(_, v)| *v).fold(0.0f64, f64::max);
            let block_max = samples
                .chunks(crate::frame::COUNTER_BLOCK)
                .map(|c| c.iter().map(|(_, v)| *v).fold(f64::MIN, f64::max))
                .collect();
            let peak_ns = samples
                .iter()
                .find(|(_, v)| *v == max)
                .map_or(0, |(t, _)| t - shift);
            let index = timeline.tracks.len() as u32;
            let group = group_of[&(pid, 3)];
            timeline.groups[group as usize].tracks.push(index);
            timeline.tracks.push(Track {
                label,
                group,
                kind: TrackKind::Counter {
                    ts_ns: samples.iter().map(|(t, _)| t - shift).collect(),
                    value: samples.iter().map(|(_, v)| *v).collect(),
                    max,
                    block_max,
                    peak_ns,
                },
                args: Vec::new(),
                flow_points: Vec::new(),
            });
        }
        for (category, from, to) in match_flows(sink.flow_points) {
            let flow = timeline.flows.len() as u32;
            let from = (new_index[from.0], from.1 - shift);
            let to = (new_index[to.0], to.1 - shift);
            timeline.tracks[from.0 as usize]
                .flow_points
                .push((from.1, flow));
            timeline.tracks[to.0 as usize]
                .flow_points
                .push((to.1, flow));
            timeline.flows.push(Flow {
                category: remap[category as usize],
                from,
                to,
            });
        }
        timeline.files.push(info);
    }
    for track in &mut timeline.tracks {
        track.flow_points.sort_unstable();
        let end = match &track.kind {
            TrackKind::Slices { rows } => rows
                .iter()
                .filter_map(|r| r.end_ns.iter().max())
                .max()
                .copied(),
            TrackKind::Counter { ts_ns, .. } => ts_ns.last().copied(),
        };
        timeline.end_ns = timeline.end_ns.max(end.unwrap_or(0));
    }
    timeline
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(start_ns: i64, end_ns: i64) -> RawSlice {
        RawSlice {
            start_ns,
            end_ns,
            name: 0,
            category: 0,
            event_index: 0,
            args_at: u64::MAX,
        }
    }

    #[test]
    fn events_without_a_time_are_counted_not_placed_at_the_epoch() {
        let json = br#"{"traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 1, "ts": 100, "dur": 5},
            {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 1, "dur": 5},
            {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "q1"}}]}"#;
        let mut sink = FileSink::default();
        trace_format::TraceReader::from_slice("t.json", json)
            .read(&mut sink)
            .unwrap();
        let file = FileResult::new(sink, FileInfo::default(), 0);
        assert_eq!(
            file.info.warnings,
            vec!["1 events without a timestamp (ts) are not shown"]
        );
        let timeline = merge(vec![file]);
        assert_eq!(timeline.slice_count, 1);
        assert_eq!(timeline.tracks[0].label, "q1");
        assert_eq!(timeline.origin_ns, 100_000);
    }

    #[test]
    fn begin_and_end_events_pair_up_per_track() {
        let json = br#"{"traceEvents": [
            {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 10},
            {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 12, "args": {"k": 1}},
            {"ph": "E", "pid": 1, "tid": 1, "ts": 15},
            {"ph": "E", "pid": 1, "tid": 1, "ts": 20},
            {"ph": "E", "pid": 1, "tid": 1, "ts": 25},
            {"ph": "B", "name": "open", "pid": 1, "tid": 1, "ts": 30}]}"#;
        let mut sink = FileSink::default();
        trace_format::TraceReader::from_slice("t.json", json)
            .read(&mut sink)
            .unwrap();
        let file = FileResult::new(sink, FileInfo::default(), 0);
        assert_eq!(file.info.warnings.len(), 2, "{:?}", file.info.warnings);
        let timeline = merge(vec![file]);
        let rows = timeline.tracks[0].rows();
        assert_eq!(
            rows[0].start_ns,
            vec![0, 20_000],
            "outer and the unclosed one"
        );
        assert_eq!(rows[0].end_ns, vec![10_000, 20_000]);
        assert_eq!(rows[1].start_ns, vec![2_000]);
        assert_eq!(rows[1].end_ns, vec![5_000]);
        let inner = crate::model::SliceRef {
            track: 0,
            depth: 1,
            index: 0,
        };
        assert_eq!(timeline.slice_name(inner), "inner");
        assert_eq!(
            timeline.tracks[0].slice_args(rows[1].args_at[0]),
            vec![("k", "1")]
        );
    }

    #[test]
    fn flows_match_by_id_whatever_the_file_order() {
        let id = |n| Key::Num(n);
        // Kineto may write the finishes first; a flow with no start is dropped.
        let flows = match_flows(vec![
            (1, id(7), 2, 3, 500),
            (1, id(8), 2, 3, 900),
            (1, id(7), 0, 0, 100),
            (2, id(7), 0, 1, 50),
            (2, id(7), 1, 2, 60),
            (2, id(7), 2, 4, 70),
            (1, id(9), 2, 5, 10),
        ]);
        assert_eq!(
            flows,
            vec![
                (1, (0, 100), (3, 500)),
                (2, (1, 50), (2, 60)),
                (2, (2, 60), (4, 70)),
            ]
        );
    }

    #[test]
    fn nesting_puts_children_below_parents_and_partial_overlaps_on_free_rows() {
        // parent [0,100] > child [10,20] > grandchild [12,15]; sibling [20,30];
        // a slice [90,150] overlapping the parent's end without nesting in it.
        let rows = nest(
            vec![
                raw(20, 30),
                raw(0, 100),
                raw(12, 15),
                raw(10, 20),
                raw(90, 150),
                raw(200, 210),
            ],
            0,
        );
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].start_ns, vec![0, 200]);
        assert_eq!(rows[1].start_ns, vec![10, 20, 90]);
        assert_eq!(rows[2].start_ns, vec![12]);
        for row in &rows {
            for pair in row.start_ns.windows(2).zip(row.end_ns.windows(2)) {
                assert!(pair.1[0] <= pair.0[1], "a row never overlaps itself");
            }
        }
        let count: usize = rows.iter().map(Row::len).sum();
        assert_eq!(count, 6, "no slice lost");
    }
}
