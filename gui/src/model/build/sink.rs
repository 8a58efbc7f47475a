//! The sink that reads one file's events into per-track columns (run once per file, in
//! parallel), and the raw types [`super::merge`] turns into a [`crate::model::Timeline`].

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::ControlFlow;

use trace_format::{ArgValue, Args, Category, Event, Ident, Phase, TraceMeta, TraceSink};

use super::FlowPoint;
use crate::model::{NameId, Names};

/// Bytes of argument text per chunk of a track's store.
pub(super) const ARGS_CHUNK_BYTES: usize = 1 << 20;

/// A vector kept in fixed-size chunks, so growing it never copies what it holds.
#[derive(Debug)]
pub(super) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked { chunks: Vec::new() }
    }
}

impl<T> Chunked<T> {
    const CHUNK: usize = 1 << 16;

    pub(super) fn push(&mut self, value: T) {
        if self.chunks.last().is_none_or(|c| c.len() == Self::CHUNK) {
            self.chunks.push(Vec::with_capacity(Self::CHUNK));
        }
        self.chunks
            .last_mut()
            .expect("a chunk was just ensured")
            .push(value);
    }

    pub(super) fn len(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }

    /// One vector of exactly the right size.
    pub(super) fn into_vec(self) -> Vec<T> {
        let mut all = Vec::with_capacity(self.len());
        for chunk in self.chunks {
            all.extend(chunk);
        }
        all
    }
}

/// A pid or tid: numeric, or a string interned in the file's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Key {
    Num(i64),
    Str(NameId),
}

#[derive(Clone, Copy, Debug)]
pub(super) struct RawSlice {
    pub(super) start_ns: i64,
    pub(super) end_ns: i64,
    pub(super) name: NameId,
    pub(super) category: NameId,
    pub(super) event_index: u64,
    pub(super) args_at: u64,
}

#[derive(Debug, Default)]
pub(super) struct RawTrack {
    pub(super) slices: Chunked<RawSlice>,
    pub(super) args: Vec<String>,
    pub(super) device_like: bool,
    pub(super) engine_like: bool,
    pub(super) dma_like: bool,
    pub(super) flow_points: Vec<(i64, u32)>,
}

#[derive(Debug, Default)]
pub(super) struct RawCounter {
    pub(super) ts_ns: Vec<i64>,
    pub(super) value: Vec<f64>,
}

/// Receives one file's events (see [`trace_format::TraceSink`]).
#[derive(Debug, Default)]
pub struct FileSink {
    pub(super) names: Names,
    pub(super) tracks: Vec<((Key, Key), RawTrack)>,
    pub(super) track_ids: crate::model::FastMap<(Key, Key), usize>,
    pub(super) last_track: Option<((Key, Key), usize)>,
    pub(super) counters: Vec<((Key, String), RawCounter)>,
    pub(super) counter_ids: HashMap<(Key, String), usize>,
    pub(super) process_names: HashMap<Key, String>,
    pub(super) thread_names: HashMap<(Key, Key), String>,
    pub(super) process_sort: HashMap<Key, i64>,
    pub(super) thread_sort: HashMap<(Key, Key), i64>,
    pub(super) flow_points: Vec<FlowPoint>,
    pub(super) category_ids: Vec<(String, NameId)>,
    pub(super) without_ts: u64,
    pub(super) open_begins: HashMap<usize, Vec<RawSlice>>,
    pub(super) unmatched_ends: u64,
    pub(super) rank: Option<i64>,
    pub(super) events: u64,
}

impl FileSink {
    fn key(&mut self, ident: Option<&Ident<'_>>) -> Key {
        match ident {
            Some(Ident::Num(n)) => Key::Num(*n),
            Some(Ident::Str(s)) => Key::Str(self.names.intern(s)),
            None => Key::Num(-1),
        }
    }

    fn track(&mut self, key: (Key, Key)) -> usize {
        if let Some((last, id)) = self.last_track {
            if last == key {
                return id;
            }
        }
        let next = self.tracks.len();
        let id = *self.track_ids.entry(key).or_insert(next);
        if id == next {
            self.tracks.push((key, RawTrack::default()));
        }
        self.last_track = Some((key, id));
        id
    }

    fn counter(&mut self, pid: Key, label: String, ts_ns: i64, value: f64) {
        let next = self.counters.len();
        let id = *self.counter_ids.entry((pid, label.clone())).or_insert(next);
        if id == next {
            self.counters.push(((pid, label), RawCounter::default()));
        }
        let counter = &mut self.counters[id].1;
        counter.ts_ns.push(ts_ns);
        counter.value.push(value);
    }

    fn on_metadata(&mut self, event: &Event<'_>, pid: Key, tid: Key) {
        let Some(args) = &event.args else { return };
        match event.name() {
            "process_name" => {
                if let Some(name) = args.get("name").and_then(|v| v.as_str().map(str::to_owned)) {
                    self.process_names.insert(pid, name);
                }
            }
            "thread_name" => {
                if let Some(name) = args.get("name").and_then(|v| v.as_str().map(str::to_owned)) {
                    self.thread_names.insert((pid, tid), name);
                }
            }
            "process_sort_index" => {
                if let Some(i) = args.get_i64("sort_index") {
                    self.process_sort.insert(pid, i);
                }
            }
            "thread_sort_index" => {
                if let Some(i) = args.get_i64("sort_index") {
                    self.thread_sort.insert((pid, tid), i);
                }
            }
            _ => {}
        }
    }
}

/// Appends `args` as `key \x1f value \x1e …` and a closing `\x1d`.
fn write_args(out: &mut String, args: &Args<'_>) {
    for (key, value) in args.iter() {
        out.push_str(&key);
        out.push('\x1f');
        let _ = match value {
            ArgValue::Null => write!(out, "null"),
            ArgValue::Bool(b) => write!(out, "{b}"),
            ArgValue::Int(n) => write!(out, "{n}"),
            ArgValue::UInt(n) => write!(out, "{n}"),
            ArgValue::Float(x) => write!(out, "{x}"),
            ArgValue::Number(text) | ArgValue::Str(text) => write!(out, "{text}"),
            ArgValue::Array(raw) | ArgValue::Object(raw) => write!(out, "{}", raw.as_str()),
        };
        out.push('\x1e');
    }
    out.push('\x1d');
}

impl TraceSink for FileSink {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.rank = meta.rank();
        ControlFlow::Continue(())
    }

    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        self.events += 1;
        let pid = self.key(event.pid.as_ref());
        let tid = self.key(event.tid.as_ref());
        let ts_ns = match (event.ts_ns, &event.phase) {
            (Some(ts), _) => ts,
            (None, Phase::Metadata) => 0,
            (None, _) => {
                // Nowhere to put it on a time axis: counted and reported instead.
                self.without_ts += 1;
                return ControlFlow::Continue(());
            }
        };
        match &event.phase {
            Phase::Metadata => self.on_metadata(event, pid, tid),
            Phase::Counter => {
                let Some(args) = &event.args else {
                    return ControlFlow::Continue(());
                };
                let name = event.name().to_owned();
                for (key, value) in args.iter() {
                    if let Some(v) = value.as_f64() {
                        let label = if *key == *name || args.len() == 1 {
                            name.clone()
                        } else {
                            format!("{name} · {key}")
                        };
                        self.counter(pid, label, ts_ns, v);
                    }
                }
            }
            Phase::FlowStart | Phase::FlowStep | Phase::FlowFinish => {
                let category = event
                    .flow_category()
                    .map_or(0, |c| self.names.intern(c.as_str()));
                let flow_key = self.key(event.flow_id.as_ref());
                let track = self.track((pid, tid));
                let end = match event.phase {
                    Phase::FlowStart => 0u8,
                    Phase::FlowStep => 1,
                    _ => 2,
                };
                self.flow_points
                    .push((category, flow_key, end, track, ts_ns));
            }
            _ => {
                // X, i and any other phase with a time: a slice (instants have no length).
                if event.is_memory_event() {
                    if let Some(total) = event.arg("Total Allocated").and_then(|v| v.as_f64()) {
                        let device = event
                            .arg("Device Id")
                            .and_then(|v| v.as_i64())
                            .unwrap_or(-1);
                        let kind = event
                            .arg("Device Type")
                            .and_then(|v| v.as_i64())
                            .unwrap_or(-1);
                        let label = format!("memory allocated (device type {kind}, id {device})");
                        self.counter(pid, label, ts_ns, total);
                    }
                }
                let name = self.names.intern(event.name());
                let category = event.normalized_category();
                let category_id = match &category {
                    None => 0,
                    Some(c) => {
                        // A trace has a handful of categories: a short list beats hashing.
                        let text = c.as_str();
                        match self.category_ids.iter().find(|(t, _)| t == text) {
                            Some((_, id)) => *id,
                            None => {
                                let id = self.names.intern(text);
                                self.category_ids.push((text.to_owned(), id));
                                id
                            }
                        }
                    }
                };
                let track_id = self.track((pid, tid));
                let track = &mut self.tracks[track_id].1;
                match category {
                    Some(Category::Kernel | Category::GpuMemcpy | Category::GpuMemset) => {
                        track.device_like = true
                    }
                    Some(Category::Other(c)) if c == "neuron_instruction" => {
                        track.engine_like = true
                    }
                    Some(Category::Other(c)) if c == "neuron_dma" => track.dma_like = true,
                    _ => {}
                }
                let args_at = match &event.args {
                    Some(args) if !args.is_empty() => {
                        // Arguments go into 1 MiB chunks: no growing string is ever
                        // copied whole (reallocating one was a tenth of loading time).
                        if track
                            .args
                            .last()
                            .is_none_or(|c| c.len() >= ARGS_CHUNK_BYTES)
                        {
                            track
                                .args
                                .push(String::with_capacity(ARGS_CHUNK_BYTES + 4096));
                        }
                        let chunk = track.args.len() - 1;
                        let text = &mut track.args[chunk];
                        let at = ((chunk as u64) << 32) | text.len() as u64;
                        write_args(text, args);
                        at
                    }
                    _ => u64::MAX,
                };
                let dur = event.dur_ns.unwrap_or(0).max(0);
                let slice = RawSlice {
                    start_ns: ts_ns,
                    end_ns: ts_ns.saturating_add(dur),
                    name,
                    category: category_id,
                    event_index: index,
                    args_at,
                };
                match event.phase {
                    // Chrome's B/E pairs (Kineto writes X): a B waits on its track's
                    // stack for the E that closes it.
                    Phase::Begin => self.open_begins.entry(track_id).or_default().push(slice),
                    Phase::End => match self.open_begins.get_mut(&track_id).and_then(Vec::pop) {
                        Some(mut begin) => {
                            begin.end_ns = ts_ns.max(begin.start_ns);
                            track.slices.push(begin);
                        }
                        None => self.unmatched_ends += 1,
                    },
                    _ => track.slices.push(slice),
                }
            }
        }
        ControlFlow::Continue(())
    }
}
