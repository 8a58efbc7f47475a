//! The streaming converter: a [`TraceSink`] that turns Kineto events into packets.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::{self, Write};
use std::ops::ControlFlow;

use trace_format::{ArgValue, Category, Event, FlowEnd, Ident, Phase, TraceMeta, TraceSink};

use super::intern::Interner;
use super::lanes::{Action, LaneSet, Pending};
use super::proto::{
    Clock, ClockSnapshot, DebugAnnotation, TracePacket, TrackDescriptor, TrackEvent,
    CLOCK_BOOTTIME, CLOCK_REALTIME, SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE,
    TYPE_COUNTER, TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END, UNIT_SIZE_BYTES,
};
use super::tracks::{Layout, TrackKind};
use super::{ExportStats, SplitTrack};

/// The `trusted_packet_sequence_id` of the one sequence a writer produces.
pub const SEQUENCE_ID: u32 = 1;

/// One Kineto (pid, tid) track: its lanes and their uuids.
#[derive(Debug)]
struct Track {
    name: String,
    lane_uuids: Vec<u64>,
    lanes: LaneSet,
}

/// Converter state shared by all files of one output.
#[derive(Debug)]
pub struct Converter<W: Write> {
    out: W,
    buf: Vec<u8>,
    interner: Interner,
    layout: Layout,
    tracks: HashMap<(u32, Ident<'static>, Ident<'static>), Track>,
    counters: HashMap<(u32, Ident<'static>), HashMap<String, u64>>,
    global_tracks: HashMap<u32, u64>,
    /// Reorder window per track, in events.
    pub window: usize,
    /// Label groups of files without a rank `file N`.
    pub label_files: bool,
    seq: u64,
    cleared: bool,
    clock_written: bool,
    base_time_ns: Option<i64>,
    /// The file being read.
    pub file: u32,
    /// Counts so far.
    pub stats: ExportStats,
    /// The first write error (reading stops at it).
    pub error: Option<io::Error>,
}

impl<W: Write> Converter<W> {
    /// A converter writing into `out`, with a reorder window of `window` events per track.
    pub fn new(out: W, window: usize) -> Self {
        Converter {
            out,
            buf: Vec::with_capacity(256),
            interner: Interner::default(),
            layout: Layout::default(),
            tracks: HashMap::new(),
            counters: HashMap::new(),
            global_tracks: HashMap::new(),
            window,
            label_files: false,
            seq: 0,
            cleared: false,
            clock_written: false,
            base_time_ns: None,
            file: 0,
            stats: ExportStats::default(),
            error: None,
        }
    }

    fn write_packet(&mut self, mut packet: TracePacket) -> io::Result<()> {
        use prost::Message as _;
        packet.trusted_packet_sequence_id = Some(SEQUENCE_ID);
        if packet.track_event.is_some() {
            packet.interned_data = self.interner.take_pending();
            packet.sequence_flags = Some(if self.cleared {
                SEQ_NEEDS_INCREMENTAL_STATE
            } else {
                self.cleared = true;
                SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE
            });
        }
        self.buf.clear();
        // `Trace.packet` is field 1, length-delimited: tag 0x0a, then the packet.
        self.buf.push(0x0a);
        packet
            .encode_length_delimited(&mut self.buf)
            .map_err(io::Error::other)?;
        self.out.write_all(&self.buf)?;
        self.stats.packets += 1;
        self.stats.bytes_written += self.buf.len() as u64;
        Ok(())
    }

    fn flush_descriptors(&mut self) -> io::Result<()> {
        if self.layout.new_descriptors.is_empty() {
            return Ok(());
        }
        for descriptor in std::mem::take(&mut self.layout.new_descriptors) {
            self.write_descriptor(descriptor)?;
        }
        Ok(())
    }

    fn write_descriptor(&mut self, descriptor: TrackDescriptor) -> io::Result<()> {
        self.stats.tracks += 1;
        self.write_packet(TracePacket {
            track_descriptor: Some(descriptor),
            ..TracePacket::default()
        })
    }

    /// Writes the clock snapshot once, before the first timestamped packet: packet
    /// timestamps are Unix-epoch ns on the default BOOTTIME clock, and a snapshot with
    /// equal BOOTTIME and REALTIME readings lets the UI show wall time
    /// (`shared/reference/perfetto.md`, "Timestamps").
    fn ensure_clock(&mut self, ts_ns: i64) -> io::Result<()> {
        if self.clock_written {
            return Ok(());
        }
        self.clock_written = true;
        let at = self.base_time_ns.unwrap_or(ts_ns).max(0) as u64;
        self.write_packet(TracePacket {
            clock_snapshot: Some(ClockSnapshot {
                clocks: vec![
                    Clock {
                        clock_id: Some(CLOCK_BOOTTIME),
                        timestamp: Some(at),
                    },
                    Clock {
                        clock_id: Some(CLOCK_REALTIME),
                        timestamp: Some(at),
                    },
                ],
                primary_trace_clock: Some(CLOCK_BOOTTIME as i32),
            }),
            ..TracePacket::default()
        })
    }

    fn write_event(&mut self, ts_ns: i64, event: TrackEvent) -> io::Result<()> {
        self.ensure_clock(ts_ns)?;
        self.flush_descriptors()?;
        self.write_packet(TracePacket {
            timestamp: Some(ts_ns.max(0) as u64),
            track_event: Some(event),
            ..TracePacket::default()
        })
    }

    fn handle(&mut self, event: &Event<'_>) -> io::Result<()> {
        self.stats.events_read += 1;
        match event.phase {
            Phase::Metadata => self.metadata(event),
            Phase::Complete => self.slice(event),
            Phase::Instant if event.is_memory_event() => self.memory(event),
            Phase::Instant => self.instant(event),
            Phase::Counter => self.counter(event),
            Phase::FlowStart | Phase::FlowStep | Phase::FlowFinish => self.flow(event),
            _ => {
                self.stats.skipped_unsupported += 1;
                Ok(())
            }
        }
    }

    fn metadata(&mut self, event: &Event<'_>) -> io::Result<()> {
        self.stats.metadata_events += 1;
        let name = event
            .arg("name")
            .and_then(|v| v.as_str().map(str::to_owned));
        let (Some(pid), Some(name)) = (event.pid.clone(), name) else {
            return Ok(());
        };
        match event.name() {
            "process_name" => self
                .layout
                .set_process_name(self.file, pid.into_owned(), &name),
            "thread_name" => {
                if let Some(tid) = event.tid.clone() {
                    self.layout.set_thread_name(
                        self.file,
                        pid.into_owned(),
                        tid.into_owned(),
                        &name,
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn common(&mut self, event: &Event<'_>, name: &str) -> TrackEvent {
        let mut track_event = TrackEvent::default();
        match self.interner.name(name) {
            Some(iid) => track_event.name_iid = Some(iid),
            None => track_event.name = Some(name.to_owned()),
        }
        if let Some(category) = &event.category {
            match self.interner.category(category.as_str()) {
                Some(iid) => track_event.category_iids.push(iid),
                None => track_event.categories.push(category.as_str().to_owned()),
            }
        }
        if let Some(args) = &event.args {
            for (key, value) in args.iter() {
                let mut annotation = DebugAnnotation::default();
                match self.interner.arg_name(&key) {
                    Some(iid) => annotation.name_iid = Some(iid),
                    None => annotation.name = Some(key.into_owned()),
                }
                match value {
                    ArgValue::Null => annotation.legacy_json_value = Some("null".to_owned()),
                    ArgValue::Bool(b) => annotation.bool_value = Some(b),
                    ArgValue::Int(n) => annotation.int_value = Some(n),
                    ArgValue::UInt(n) => annotation.uint_value = Some(n),
                    ArgValue::Float(x) => annotation.double_value = Some(x),
                    ArgValue::Number(text) => {
                        annotation.legacy_json_value = Some(text.into_owned())
                    }
                    ArgValue::Str(text) => match self.interner.arg_value(&text) {
                        Some(iid) => annotation.string_value_iid = Some(iid),
                        None => annotation.string_value = Some(text.into_owned()),
                    },
                    ArgValue::Array(raw) | ArgValue::Object(raw) => {
                        annotation.legacy_json_value = Some(raw.as_str().to_owned())
                    }
                }
                track_event.debug_annotations.push(annotation);
            }
        }
        track_event
    }

    fn kind_of(event: &Event<'_>) -> TrackKind {
        match event.normalized_category() {
            Some(
                Category::Kernel
                | Category::GpuMemcpy
                | Category::GpuMemset
                | Category::GpuUserAnnotation,
            ) => TrackKind::Queue,
            Some(Category::Other(text)) if text == "neuron_instruction" => TrackKind::Engine,
            Some(Category::Other(text)) if text == "neuron_dma" => TrackKind::Dma,
            _ => TrackKind::Host,
        }
    }

    fn slice(&mut self, event: &Event<'_>) -> io::Result<()> {
        let Some(ts_ns) = event.ts_ns else {
            self.stats.skipped_no_time += 1;
            return Ok(());
        };
        let end_ns = ts_ns.saturating_add(event.dur_ns.unwrap_or(0).max(0));
        let body = self.common(event, event.name());
        self.stats.slices += 1;
        self.enqueue(event, Self::kind_of(event), ts_ns, end_ns, false, body)
    }

    fn instant(&mut self, event: &Event<'_>) -> io::Result<()> {
        let Some(ts_ns) = event.ts_ns else {
            self.stats.skipped_no_time += 1;
            return Ok(());
        };
        let mut body = self.common(event, event.name());
        body.r#type = Some(TYPE_INSTANT);
        self.stats.instants += 1;
        if event.scope.as_deref() == Some("g") || event.pid.is_none() || event.tid.is_none() {
            let uuid = match self.global_tracks.get(&self.file) {
                Some(&uuid) => uuid,
                None => {
                    let uuid = self.layout.global(self.file, "markers");
                    self.global_tracks.insert(self.file, uuid);
                    uuid
                }
            };
            body.track_uuid = Some(uuid);
            return self.write_event(ts_ns, body);
        }
        self.enqueue(event, Self::kind_of(event), ts_ns, ts_ns, true, body)
    }

    fn flow(&mut self, event: &Event<'_>) -> io::Result<()> {
        let (Some(ts_ns), Some(flow_id)) = (event.ts_ns, event.flow_id.as_ref()) else {
            self.stats.skipped_no_time += 1;
            return Ok(());
        };
        let kind = event
            .flow_category()
            .map_or_else(|| "flow".to_owned(), |c| c.as_str().to_owned());
        let id = flow_uuid(self.file, &kind, flow_id);
        let mut body = self.common(event, &kind);
        body.r#type = Some(TYPE_INSTANT);
        match event.flow_end() {
            Some(FlowEnd::Finish) => body.terminating_flow_ids.push(id),
            _ => body.flow_ids.push(id),
        }
        self.stats.flow_events += 1;
        // Flow endpoints land on the host thread or device queue they name: an `ac2g`
        // finish is on a device queue, everything else on a host thread.
        let track_kind = if kind == "ac2g" && event.flow_end() == Some(FlowEnd::Finish) {
            TrackKind::Queue
        } else {
            TrackKind::Host
        };
        self.enqueue(event, track_kind, ts_ns, ts_ns, true, body)
    }

    fn counter(&mut self, event: &Event<'_>) -> io::Result<()> {
        let (Some(ts_ns), Some(pid), Some(args)) =
            (event.ts_ns, event.pid.clone(), event.args.as_ref())
        else {
            self.stats.skipped_no_time += 1;
            return Ok(());
        };
        let device = event
            .category
            .as_ref()
            .is_some_and(|c| c.as_str().starts_with("neuron") || c.as_str().contains("gpu"))
            || self
                .layout
                .processes
                .get(&(self.file, pid.clone().into_owned()))
                .is_some_and(|p| p.device);
        let single = args.len() == 1;
        for (series, value) in args.iter() {
            let name = if single && (series == "value" || series == event.name()) {
                event.name().to_owned()
            } else {
                format!("{} {series}", event.name())
            };
            let mut body = TrackEvent {
                r#type: Some(TYPE_COUNTER),
                ..TrackEvent::default()
            };
            match value {
                ArgValue::Int(n) => body.counter_value = Some(n),
                other => match other.as_f64() {
                    Some(x) => body.double_counter_value = Some(x),
                    None => {
                        self.stats.skipped_counter_values += 1;
                        continue;
                    }
                },
            }
            body.track_uuid = Some(self.counter_track(&pid, device, &name, None));
            self.stats.counter_values += 1;
            self.write_event(ts_ns, body)?;
        }
        Ok(())
    }

    /// `[memory]` instants become HBM (or host memory) allocated/reserved counters of
    /// the device named by `Device Id` (`Device Type` 0 is the CPU).
    fn memory(&mut self, event: &Event<'_>) -> io::Result<()> {
        let Some(ts_ns) = event.ts_ns else {
            self.stats.skipped_no_time += 1;
            return Ok(());
        };
        self.stats.memory_events += 1;
        let device_type = event
            .arg("Device Type")
            .and_then(|v| v.as_i64())
            .unwrap_or(0);
        let device_id = event
            .arg("Device Id")
            .and_then(|v| v.as_i64())
            .unwrap_or(-1);
        let (pid, device, prefix) = if device_type != 0 && device_id >= 0 {
            (Ident::Num(device_id), true, "HBM")
        } else {
            (
                event.pid.clone().unwrap_or(Ident::Num(0)).into_owned(),
                false,
                "host memory",
            )
        };
        for (key, label) in [
            ("Total Allocated", "allocated"),
            ("Total Reserved", "reserved"),
        ] {
            let Some(value) = event.arg(key).and_then(|v| v.as_i64()) else {
                continue;
            };
            let name = format!("{prefix} {label}");
            let uuid = self.counter_track(&pid, device, &name, Some(UNIT_SIZE_BYTES));
            self.stats.counter_values += 1;
            self.write_event(
                ts_ns,
                TrackEvent {
                    r#type: Some(TYPE_COUNTER),
                    track_uuid: Some(uuid),
                    counter_value: Some(value),
                    ..TrackEvent::default()
                },
            )?;
        }
        Ok(())
    }

    fn counter_track(
        &mut self,
        pid: &Ident<'_>,
        device: bool,
        name: &str,
        unit: Option<i32>,
    ) -> u64 {
        let key = (self.file, pid.clone().into_owned());
        if let Some(&uuid) = self.counters.get(&key).and_then(|m| m.get(name)) {
            return uuid;
        }
        let uuid = self.layout.counter(self.file, pid, device, name, unit);
        self.counters
            .entry(key)
            .or_default()
            .insert(name.to_owned(), uuid);
        uuid
    }

    fn enqueue(
        &mut self,
        event: &Event<'_>,
        kind: TrackKind,
        ts_ns: i64,
        end_ns: i64,
        instant: bool,
        body: TrackEvent,
    ) -> io::Result<()> {
        let pid = event.pid.clone().unwrap_or(Ident::Num(0)).into_owned();
        let tid = event.tid.clone().unwrap_or(Ident::Num(0)).into_owned();
        let key = (self.file, pid, tid);
        if !self.tracks.contains_key(&key) {
            let (uuid, name) = self.layout.track(self.file, &key.1, &key.2, kind);
            let track = Track {
                name,
                lane_uuids: vec![uuid],
                lanes: LaneSet::default(),
            };
            self.tracks.insert(key.clone(), track);
        }
        self.seq += 1;
        let pending = Pending {
            ts_ns,
            end_ns,
            seq: self.seq,
            instant,
            event: body,
        };
        let mut track = self.tracks.remove(&key).expect("inserted above");
        let mut actions = Vec::new();
        track
            .lanes
            .push(pending, self.window, &mut |a| actions.push(a));
        let result = self.apply(&mut track, actions);
        self.tracks.insert(key, track);
        result
    }

    fn apply(&mut self, track: &mut Track, actions: Vec<Action>) -> io::Result<()> {
        for action in actions {
            let lane = match &action {
                Action::Start { lane, .. } | Action::End { lane, .. } => *lane,
            };
            while track.lane_uuids.len() <= lane {
                let index = track.lane_uuids.len();
                let uuid = self.layout.lane(track.lane_uuids[0], &track.name, index);
                track.lane_uuids.push(uuid);
            }
            let uuid = track.lane_uuids[lane];
            match action {
                Action::Start { pending, .. } => {
                    let pending = *pending;
                    let mut body = pending.event;
                    body.track_uuid = Some(uuid);
                    if !pending.instant {
                        body.r#type = Some(TYPE_SLICE_BEGIN);
                    }
                    self.write_event(pending.ts_ns, body)?;
                }
                Action::End { ts_ns, .. } => {
                    self.write_event(
                        ts_ns,
                        TrackEvent {
                            r#type: Some(TYPE_SLICE_END),
                            track_uuid: Some(uuid),
                            ..TrackEvent::default()
                        },
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Releases every buffered event and closes all slices; returns the output.
    pub fn finish(mut self) -> io::Result<(W, ExportStats)> {
        let mut keys: Vec<_> = self.tracks.keys().cloned().collect();
        keys.sort();
        for key in keys {
            let mut track = self.tracks.remove(&key).expect("listed");
            let mut actions = Vec::new();
            track.lanes.flush(&mut |a| actions.push(a));
            self.apply(&mut track, actions)?;
            if track.lanes.split_slices > 0 {
                self.stats.split_slices += track.lanes.split_slices;
                self.stats.split_tracks.push(SplitTrack {
                    track: track.name.clone(),
                    lanes: track.lanes.lane_count(),
                    split_slices: track.lanes.split_slices,
                });
            }
        }
        self.flush_descriptors()?;
        self.stats.split_tracks.sort_by(|a, b| {
            b.split_slices
                .cmp(&a.split_slices)
                .then(a.track.cmp(&b.track))
        });
        self.out.flush()?;
        Ok((self.out, self.stats))
    }
}

/// A global flow id from (file, kind, Kineto id): Kineto ids repeat across files and
/// between `ac2g` and `fwdbwd`, Perfetto's `flow_ids` are global
/// (`shared/reference/perfetto.md`, "Flows"). FNV-1a, so it is the same on every run.
fn flow_uuid(file: u32, kind: &str, id: &Ident<'_>) -> u64 {
    struct Fnv(u64);
    impl Hasher for Fnv {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    let mut hasher = Fnv(0xcbf2_9ce4_8422_2325);
    file.hash(&mut hasher);
    kind.hash(&mut hasher);
    id.hash(&mut hasher);
    hasher.finish().max(1)
}

impl<W: Write> TraceSink for Converter<W> {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        if self.base_time_ns.is_none() {
            self.base_time_ns = meta.base_time_ns();
        }
        let label = match meta.rank() {
            Some(rank) => Some(format!("rank {rank}")),
            None => self.label_files.then(|| format!("file {}", self.file)),
        };
        self.layout.set_rank_label(self.file, label);
        ControlFlow::Continue(())
    }

    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        match self.handle(event) {
            Ok(()) => ControlFlow::Continue(()),
            Err(err) => {
                self.error = Some(err);
                ControlFlow::Break(())
            }
        }
    }
}
