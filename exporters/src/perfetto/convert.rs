//! The streaming converter: a [`TraceSink`] that turns Kineto events into packets.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::{self, Write};
use std::ops::ControlFlow;

use trace_format::{ArgValue, Category, Event, FlowEnd, Ident, Phase, TraceMeta, TraceSink};

use super::clock::{Clocks, Stamp};
use super::intern::Interner;
use super::lanes::{Action, LaneSet, Pending};
use super::proto::{
    Clock, ClockSnapshot, DebugAnnotation, TracePacket, TracePacketDefaults, TrackDescriptor,
    TrackEvent, CLOCK_BOOTTIME, CLOCK_REALTIME, SEQ_INCREMENTAL_STATE_CLEARED,
    SEQ_NEEDS_INCREMENTAL_STATE, TYPE_COUNTER, TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END,
    UNIT_SIZE_BYTES,
};
use super::spill::{Item, Sorter};
use super::tracks::{Layout, TrackKind};
use super::utilization::{bucket_width_ns, Utilization};
use super::{ExportStats, SplitTrack};

mod bind;

/// The `trusted_packet_sequence_id` of the one sequence a writer produces.
pub const SEQUENCE_ID: u32 = 1;

/// One Kineto (pid, tid) track: its lanes and their uuids.
#[derive(Debug)]
struct Track {
    name: String,
    report_name: String,
    kind: TrackKind,
    /// Engine tracks: busy share per bucket, and its counter track.
    utilization: Option<(Utilization, u64)>,
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
    track_index: HashMap<(u32, Ident<'static>, Ident<'static>), u32>,
    tracks: Vec<Track>,
    /// Slices and instants, sorted per track by time before they are written.
    pub sorter: Sorter,
    /// Flow endpoints, sorted the same way, then bound to the slices enclosing them.
    pub flows: Sorter,
    counters: HashMap<(u32, Ident<'static>), HashMap<String, u64>>,
    global_tracks: HashMap<u32, u64>,
    /// Label groups of files without a rank `file N`.
    pub label_files: bool,
    seq: u64,
    first_ns: i64,
    last_ns: i64,
    cleared: bool,
    clock_written: bool,
    clocks: Clocks,
    base_time_ns: Option<i64>,
    /// The file being read.
    pub file: u32,
    /// Counts so far.
    pub stats: ExportStats,
    /// The first write error (reading stops at it).
    pub error: Option<io::Error>,
}

impl<W: Write> Converter<W> {
    /// A converter writing into `out`, sorting in memory up to `budget_bytes`.
    pub fn new(out: W, budget_bytes: usize) -> Self {
        Converter {
            out,
            buf: Vec::with_capacity(256),
            interner: Interner::default(),
            layout: Layout::default(),
            track_index: HashMap::new(),
            tracks: Vec::new(),
            sorter: Sorter::new(budget_bytes),
            flows: Sorter::new(budget_bytes),
            counters: HashMap::new(),
            global_tracks: HashMap::new(),
            label_files: false,
            seq: 0,
            first_ns: i64::MAX,
            last_ns: i64::MIN,
            cleared: false,
            clock_written: false,
            clocks: Clocks::default(),
            base_time_ns: None,
            file: 0,
            stats: ExportStats::default(),
            error: None,
        }
    }

    /// Keeps `pids` out of the output ([`Layout::avoid_pids`]).
    pub fn avoid_pids(&mut self, pids: impl IntoIterator<Item = i32>) {
        self.layout.avoid_pids(pids);
    }

    /// The pids of the process groups described so far, sorted.
    pub fn pids(&self) -> Vec<i32> {
        self.layout.pids()
    }

    /// The sequence flags of the next packet: the first packet of all clears the
    /// incremental state, and packets that use it (interned data, defaults) say so.
    fn flags(&mut self, needs_state: bool) -> Option<u32> {
        if !self.cleared {
            self.cleared = true;
            return Some(SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE);
        }
        needs_state.then_some(SEQ_NEEDS_INCREMENTAL_STATE)
    }

    fn write_packet(&mut self, mut packet: TracePacket) -> io::Result<()> {
        use prost::Message as _;
        packet.trusted_packet_sequence_id = Some(SEQUENCE_ID);
        if packet.track_event.is_some() {
            packet.interned_data = self.interner.take_pending();
        }
        packet.sequence_flags = self.flags(
            packet.track_event.is_some()
                || packet.trace_packet_defaults.is_some()
                || packet.timestamp_clock_id.is_some(),
        );
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
                    Clock::reading(CLOCK_BOOTTIME, at),
                    Clock::reading(CLOCK_REALTIME, at),
                ],
                primary_trace_clock: Some(CLOCK_BOOTTIME as i32),
            }),
            ..TracePacket::default()
        })?;
        self.restart_clock(ts_ns)
    }

    /// Where time may go back (a new track): starts a fresh incremental clock at
    /// `ts_ns` when needed (`clock.rs`): a snapshot pairing it with BOOTTIME, and
    /// defaults making it the clock of the packets that follow.
    fn restart_clock(&mut self, ts_ns: i64) -> io::Result<()> {
        let ts = ts_ns.max(0) as u64;
        let Some(clock_id) = self.clocks.restart(ts) else {
            return Ok(());
        };
        self.write_packet(TracePacket {
            clock_snapshot: Some(ClockSnapshot::incremental_start(clock_id, ts)),
            trace_packet_defaults: Some(TracePacketDefaults {
                timestamp_clock_id: Some(clock_id),
            }),
            ..TracePacket::default()
        })
    }

    /// A packet's timestamp and, when it is absolute after a default clock was set,
    /// its clock.
    fn stamp(&mut self, ts_ns: i64) -> (u64, Option<u32>) {
        match self.clocks.stamp(ts_ns.max(0) as u64) {
            Stamp::Delta(delta) => (delta, None),
            Stamp::Absolute(ts) => (ts, self.clocks.has_default().then_some(CLOCK_BOOTTIME)),
        }
    }

    fn write_event(&mut self, ts_ns: i64, event: TrackEvent) -> io::Result<()> {
        self.ensure_clock(ts_ns)?;
        self.flush_descriptors()?;
        let (timestamp, timestamp_clock_id) = self.stamp(ts_ns);
        self.write_packet(TracePacket {
            timestamp: Some(timestamp),
            timestamp_clock_id,
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
        let mut body = self.common(event, event.name());
        body.r#type = Some(TYPE_SLICE_BEGIN);
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
        self.enqueue_to(event, track_kind, ts_ns, ts_ns, true, body, true)
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
        self.enqueue_to(event, kind, ts_ns, end_ns, instant, body, false)
    }

    #[allow(clippy::too_many_arguments)]
    fn enqueue_to(
        &mut self,
        event: &Event<'_>,
        kind: TrackKind,
        ts_ns: i64,
        end_ns: i64,
        instant: bool,
        body: TrackEvent,
        flow: bool,
    ) -> io::Result<()> {
        use prost::Message as _;
        let pid = event.pid.clone().unwrap_or(Ident::Num(0)).into_owned();
        let tid = event.tid.clone().unwrap_or(Ident::Num(0)).into_owned();
        let key = (self.file, pid, tid);
        let track = match self.track_index.get(&key) {
            Some(&index) => index,
            None => {
                let (uuid, name) = self.layout.track(self.file, &key.1, &key.2, kind);
                let report_name = match self.layout.label(self.file) {
                    Some(label) => format!("{label}: {name}"),
                    None => name.clone(),
                };
                self.tracks.push(Track {
                    name,
                    report_name,
                    kind,
                    utilization: None,
                    lane_uuids: vec![uuid],
                    lanes: LaneSet::default(),
                });
                let index = (self.tracks.len() - 1) as u32;
                self.track_index.insert(key, index);
                index
            }
        };
        self.seq += 1;
        self.first_ns = self.first_ns.min(ts_ns);
        self.last_ns = self.last_ns.max(end_ns);
        let item = Item {
            track,
            ts_ns,
            end_ns,
            seq: self.seq,
            instant,
            body: body.encode_to_vec(),
        };
        if flow {
            self.flows.push(item)
        } else {
            self.sorter.push(item)
        }
    }

    fn apply(&mut self, track: usize, actions: &mut Vec<Action>) -> io::Result<()> {
        for action in actions.drain(..) {
            let lane = match &action {
                Action::Start { lane, .. } | Action::End { lane, .. } => *lane,
            };
            while self.tracks[track].lane_uuids.len() <= lane {
                let base = &self.tracks[track];
                let index = base.lane_uuids.len();
                let uuid = self.layout.lane(base.lane_uuids[0], &base.name, index);
                self.tracks[track].lane_uuids.push(uuid);
            }
            let uuid = self.tracks[track].lane_uuids[lane];
            match action {
                Action::Start { pending, .. } => {
                    self.write_encoded(pending.ts_ns, &pending.body, uuid)?;
                }
                Action::End { ts_ns, .. } => {
                    // type: TYPE_SLICE_END (field 9, varint).
                    self.write_encoded(ts_ns, &[0x48, TYPE_SLICE_END as u8], uuid)?;
                }
            }
        }
        Ok(())
    }

    /// Writes a track-event packet from an encoded `TrackEvent` body plus its
    /// `track_uuid` (protobuf messages merge field by field, so appending the field to
    /// the encoded body is the same message).
    fn write_encoded(&mut self, ts_ns: i64, body: &[u8], track_uuid: u64) -> io::Result<()> {
        use prost::encoding::{encode_varint, encoded_len_varint};
        use prost::Message as _;
        self.ensure_clock(ts_ns)?;
        self.flush_descriptors()?;
        let interned = self
            .interner
            .take_pending()
            .map(|data| data.encode_to_vec());
        let (timestamp, clock_id) = self.stamp(ts_ns);
        let flags = self.flags(true).unwrap_or(SEQ_NEEDS_INCREMENTAL_STATE);
        let event_len = body.len() + 1 + encoded_len_varint(track_uuid);
        let buf = &mut self.buf;
        buf.clear();
        let mut packet = Vec::new();
        std::mem::swap(&mut packet, buf);
        // TracePacket: timestamp (8), trusted_packet_sequence_id (10), track_event (11),
        // interned_data (12), sequence_flags (13), timestamp_clock_id (58).
        let mut inner = Vec::with_capacity(event_len + 32);
        inner.push(0x40);
        encode_varint(timestamp, &mut inner);
        if let Some(clock_id) = clock_id {
            // Field 58, varint: tag 58 << 3 = 464, two bytes as a varint.
            inner.extend_from_slice(&[0xd0, 0x03]);
            encode_varint(u64::from(clock_id), &mut inner);
        }
        inner.push(0x50);
        encode_varint(u64::from(SEQUENCE_ID), &mut inner);
        inner.push(0x5a);
        encode_varint(event_len as u64, &mut inner);
        inner.extend_from_slice(body);
        inner.push(0x58);
        encode_varint(track_uuid, &mut inner);
        if let Some(interned) = interned {
            inner.push(0x62);
            encode_varint(interned.len() as u64, &mut inner);
            inner.extend_from_slice(&interned);
        }
        inner.push(0x68);
        encode_varint(u64::from(flags), &mut inner);
        packet.push(0x0a);
        encode_varint(inner.len() as u64, &mut packet);
        packet.extend_from_slice(&inner);
        self.out.write_all(&packet)?;
        self.stats.packets += 1;
        self.stats.bytes_written += packet.len() as u64;
        self.buf = packet;
        Ok(())
    }

    /// Sorts and writes the slices and instants (flow ids on the begin events of the
    /// slices enclosing them), closes all slices; returns the output.
    pub fn finish(mut self) -> io::Result<(W, ExportStats)> {
        let mut sorter = std::mem::replace(&mut self.sorter, Sorter::new(0));
        let flows = std::mem::replace(&mut self.flows, Sorter::new(0));
        let flow_runs = flows.spilled_runs;
        let bound = bind::bind_flows(&mut sorter, flows, &mut self.stats)?;
        let spilled = sorter.spilled_runs + flow_runs + bound.spilled_runs;
        let mut bound = bound.sorted()?;
        let mut next_bound = bound.next_item()?;
        let mut current: Option<usize> = None;
        let mut actions = Vec::new();
        sorter.finish(|mut item| {
            while let Some(extra) = next_bound.take_if(|b| b.key() <= item.key()) {
                if extra.instant {
                    self.place(extra, &mut current, &mut actions)?;
                } else {
                    debug_assert_eq!(extra.key(), item.key(), "flow ids bound to a slice");
                    item.body.extend_from_slice(&extra.body);
                }
                next_bound = bound.next_item()?;
            }
            self.place(item, &mut current, &mut actions)
        })?;
        while let Some(extra) = next_bound.take() {
            self.place(extra, &mut current, &mut actions)?;
            next_bound = bound.next_item()?;
        }
        if let Some(previous) = current {
            self.close_track(previous, &mut actions)?;
        }
        self.stats.spilled_runs = spilled;
        self.flush_descriptors()?;
        self.stats.split_tracks.sort_by(|a, b| {
            b.split_slices
                .cmp(&a.split_slices)
                .then(a.track.cmp(&b.track))
        });
        self.out.flush()?;
        Ok((self.out, self.stats))
    }

    /// Places one sorted item on its track's lanes and writes what that decides.
    fn place(
        &mut self,
        item: Item,
        current: &mut Option<usize>,
        actions: &mut Vec<Action>,
    ) -> io::Result<()> {
        let track = item.track as usize;
        if *current != Some(track) {
            if let Some(previous) = *current {
                self.close_track(previous, actions)?;
            }
            *current = Some(track);
            self.ensure_clock(item.ts_ns)?;
            self.restart_clock(item.ts_ns)?;
        }
        if self.tracks[track].kind == TrackKind::Engine && !item.instant {
            self.utilization(track, Some((item.ts_ns, item.end_ns)))?;
        }
        let pending = Pending {
            ts_ns: item.ts_ns,
            end_ns: item.end_ns,
            instant: item.instant,
            body: item.body,
        };
        self.tracks[track]
            .lanes
            .place(pending, &mut |a| actions.push(a));
        self.apply(track, actions)
    }

    /// Feeds an engine instruction (or the end, `None`) to the engine's utilization and
    /// writes the finished buckets as `%` counter values on a counter track under it.
    fn utilization(&mut self, track: usize, slice: Option<(i64, i64)>) -> io::Result<()> {
        if self.tracks[track].utilization.is_none() {
            if slice.is_none() {
                return Ok(());
            }
            let width_ns = bucket_width_ns(self.first_ns, self.last_ns);
            let parent = self.tracks[track].lane_uuids[0];
            let uuid = self.layout.child_counter(parent, "utilization", "%");
            self.tracks[track].utilization =
                Some((Utilization::new(self.first_ns, width_ns), uuid));
        }
        let mut values = Vec::new();
        let Some((util, uuid)) = self.tracks[track].utilization.as_mut() else {
            return Ok(());
        };
        let uuid = *uuid;
        let mut emit = |ts_ns: i64, percent: f64| values.push((ts_ns, percent));
        match slice {
            Some((ts_ns, end_ns)) => util.add(ts_ns, end_ns, &mut emit),
            None => util.finish(&mut emit),
        }
        for (ts_ns, percent) in values {
            self.stats.derived_counter_values += 1;
            self.write_event(
                ts_ns,
                TrackEvent {
                    r#type: Some(TYPE_COUNTER),
                    track_uuid: Some(uuid),
                    double_counter_value: Some(percent),
                    ..TrackEvent::default()
                },
            )?;
        }
        Ok(())
    }

    fn close_track(&mut self, track: usize, actions: &mut Vec<Action>) -> io::Result<()> {
        self.utilization(track, None)?;
        self.tracks[track].lanes.close(&mut |a| actions.push(a));
        self.apply(track, actions)?;
        let lanes = &self.tracks[track].lanes;
        if lanes.split_slices > 0 {
            self.stats.split_slices += lanes.split_slices;
            self.stats.split_tracks.push(SplitTrack {
                track: self.tracks[track].report_name.clone(),
                lanes: lanes.lane_count(),
                split_slices: lanes.split_slices,
            });
        }
        Ok(())
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
