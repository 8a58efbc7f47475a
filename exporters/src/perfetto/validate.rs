//! A semantic check of a Perfetto track-event trace, written for our own output but
//! usable on any single-sequence track-event trace.
//!
//! Checks (each failure names the packet index):
//! - encoding: the file is `Trace.packet` records only; in `TrackEvent` the repeated
//!   scalars `category_iids` (3), `extra_counter_values` (12), `extra_counter_track_uuids`
//!   (31) are unpacked varints and `flow_ids` (47), `terminating_flow_ids` (48) unpacked
//!   fixed64 — Perfetto's decoder does not read the packed form
//!   (`shared/reference/perfetto.md`, "Crates"); `protoc --decode` would accept both;
//! - sequences: one non-zero `trusted_packet_sequence_id`; the first packet with
//!   interned data or a track event clears the incremental state, and every track-event
//!   packet says it needs it;
//! - interning: every `name_iid`, `category_iids`, annotation `name_iid` and
//!   `string_value_iid` was defined in this or an earlier packet; iids are non-zero;
//! - clocks: packet timestamps are resolved to BOOTTIME through the snapshots and
//!   defaults of the sequence (incremental sequence-scoped clocks, 64–127, add deltas);
//!   a clock is defined before use, only sequence-scoped clocks are incremental, and the
//!   snapshots of one set of clocks grow strictly (Perfetto's trace processor drops or
//!   distrusts them otherwise); defaults come after the incremental state was cleared;
//! - tracks: uuids non-zero, described before use; parents resolve; counter events
//!   only on counter tracks and slices/instants only on others;
//! - slices: per track, begin/end timestamps never go back (so Perfetto's sort by
//!   time keeps their order), every end closes a begin, nothing is
//!   left open at the end;
//! - flows: counted per id; [`Summary::flows_paired`] have a start and a termination;
//!   flow ids only on slice begins and instants.

use std::collections::{HashMap, HashSet};
use std::fmt;

use prost::Message as _;

use super::proto::{
    ClockSnapshot, TracePacket, CLOCK_BOOTTIME, FIRST_SEQUENCE_CLOCK, SEQUENCE_CLOCKS,
    SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE, TYPE_COUNTER, TYPE_INSTANT,
    TYPE_SLICE_BEGIN, TYPE_SLICE_END,
};

/// What a valid trace holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Packets.
    pub packets: u64,
    /// Track descriptors.
    pub tracks: u64,
    /// Counter track descriptors.
    pub counter_tracks: u64,
    /// `TYPE_SLICE_BEGIN` events (each closed by an end).
    pub slices: u64,
    /// `TYPE_INSTANT` events (flow endpoints no slice encloses included).
    pub instants: u64,
    /// `TYPE_COUNTER` events.
    pub counter_values: u64,
    /// `flow_ids` entries (flow starts and steps; one slice may carry several).
    pub flow_starts: u64,
    /// `terminating_flow_ids` entries.
    pub flow_terminations: u64,
    /// Flow id entries (either kind) on `TYPE_SLICE_BEGIN` events, bound to a slice.
    pub flow_ids_on_slices: u64,
    /// Flow id entries on `TYPE_SLICE_END` or `TYPE_COUNTER` events (never written;
    /// also reported as problems).
    pub flow_ids_misplaced: u64,
    /// Flow ids with both a start and a termination.
    pub flows_paired: u64,
    /// Flow ids with a start but no termination.
    pub flows_unterminated: u64,
    /// Flow ids terminated but never started.
    pub flows_unstarted: u64,
    /// Deepest slice nesting on one track.
    pub max_depth: usize,
}

/// The problems found (the first [`MAX_PROBLEMS`] and a count).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError {
    /// Problems, each with its packet index.
    pub problems: Vec<String>,
    /// All problems found.
    pub total: u64,
}

/// Problems kept in a [`ValidationError`].
pub const MAX_PROBLEMS: usize = 20;

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} problem(s) in the Perfetto trace", self.total)?;
        for problem in &self.problems {
            write!(f, "\n  {problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationError {}

#[derive(Default)]
struct State {
    problems: Vec<String>,
    total: u64,
    sequence: Option<u32>,
    cleared: bool,
    names: HashSet<u64>,
    categories: HashSet<u64>,
    arg_names: HashSet<u64>,
    arg_values: HashSet<u64>,
    /// uuid → is a counter track.
    tracks: HashMap<u64, bool>,
    parents: Vec<(usize, u64)>,
    /// uuid → (last timestamp, open begin timestamps).
    open: HashMap<u64, (u64, Vec<u64>)>,
    flows: HashMap<u64, (u64, u64)>,
    clocks: ClockReader,
    summary: Summary,
}

/// The clocks of the sequence, as a reader resolves packet timestamps.
#[derive(Default)]
struct ClockReader {
    /// `TracePacketDefaults.timestamp_clock_id`.
    default: Option<u32>,
    /// Sequence-scoped clock → (incremental, last reading, BOOTTIME minus its reading).
    clocks: HashMap<u32, (bool, u64, i128)>,
    /// Sorted clock ids of a snapshot → its readings, for the strictly-growing check.
    last_snapshots: HashMap<Vec<u32>, Vec<u64>>,
}

impl ClockReader {
    fn snapshot(&mut self, snapshot: &ClockSnapshot) -> Result<(), String> {
        let mut readings: Vec<(u32, u64)> = snapshot
            .clocks
            .iter()
            .map(|c| (c.clock_id.unwrap_or(0), c.timestamp.unwrap_or(0)))
            .collect();
        readings.sort_unstable();
        let ids: Vec<u32> = readings.iter().map(|(id, _)| *id).collect();
        let values: Vec<u64> = readings.iter().map(|(_, ts)| *ts).collect();
        if let Some(previous) = self.last_snapshots.get(&ids) {
            if let Some((id, (before, now))) = ids
                .iter()
                .zip(previous.iter().zip(&values))
                .find(|(_, (before, now))| now <= before)
            {
                return Err(format!(
                    "clock {id} reads {now} in a snapshot after reading {before} in the previous one of clocks {ids:?}"
                ));
            }
        }
        self.last_snapshots.insert(ids, values);
        let boottime = snapshot
            .clocks
            .iter()
            .find(|c| c.clock_id == Some(CLOCK_BOOTTIME))
            .and_then(|c| c.timestamp);
        for clock in &snapshot.clocks {
            let id = clock.clock_id.unwrap_or(0);
            let incremental = clock.is_incremental.unwrap_or(false);
            let sequence_scoped =
                (FIRST_SEQUENCE_CLOCK..FIRST_SEQUENCE_CLOCK + SEQUENCE_CLOCKS).contains(&id);
            if incremental && !sequence_scoped {
                return Err(format!("clock {id} is incremental but not sequence-scoped"));
            }
            if sequence_scoped {
                let reading = clock.timestamp.unwrap_or(0);
                let Some(boottime) = boottime else {
                    return Err(format!("clock {id} is snapshotted without BOOTTIME"));
                };
                let offset = i128::from(boottime) - i128::from(reading);
                self.clocks.insert(id, (incremental, reading, offset));
            }
        }
        Ok(())
    }

    /// The packet's time on BOOTTIME (advancing an incremental clock).
    fn resolve(&mut self, packet: &TracePacket) -> Result<Option<u64>, String> {
        let Some(value) = packet.timestamp else {
            return Ok(None);
        };
        let id = packet
            .timestamp_clock_id
            .or(self.default)
            .unwrap_or(CLOCK_BOOTTIME);
        if id == CLOCK_BOOTTIME {
            return Ok(Some(value));
        }
        let Some((incremental, last, offset)) = self.clocks.get_mut(&id) else {
            return Err(format!(
                "timestamp on clock {id}, which no snapshot defines"
            ));
        };
        let reading = if *incremental {
            *last = last
                .checked_add(value)
                .ok_or_else(|| format!("clock {id} overflows"))?;
            *last
        } else {
            value
        };
        u64::try_from(i128::from(reading) + *offset)
            .map(Some)
            .map_err(|_| format!("clock {id} reading {reading} is before BOOTTIME 0"))
    }
}

impl State {
    fn problem(&mut self, packet: usize, what: String) {
        self.total += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(format!("packet {packet}: {what}"));
        }
    }
}

/// Decodes and checks a whole `.pftrace`; returns what it holds.
pub fn validate(bytes: &[u8]) -> Result<Summary, ValidationError> {
    let mut state = State::default();
    let mut offset = 0;
    let mut index = 0;
    while offset < bytes.len() {
        let packet = match read_field(bytes, &mut offset) {
            Some((1, Wire::Len(packet))) => packet,
            other => {
                state.problem(
                    index,
                    format!("not a Trace.packet record at byte {offset}: {other:?}"),
                );
                break;
            }
        };
        check_packet_encoding(&mut state, index, packet);
        match TracePacket::decode(packet) {
            Ok(decoded) => check_packet(&mut state, index, &decoded),
            Err(err) => state.problem(index, format!("does not decode: {err}")),
        }
        index += 1;
    }
    state.summary.packets = index as u64;
    for (index, parent) in std::mem::take(&mut state.parents) {
        if !state.tracks.contains_key(&parent) {
            state.problem(index, format!("parent uuid {parent} is never described"));
        }
    }
    let open: Vec<u64> = state
        .open
        .iter()
        .filter(|(_, (_, stack))| !stack.is_empty())
        .map(|(uuid, _)| *uuid)
        .collect();
    for uuid in open {
        state.problem(index, format!("track {uuid} has slices never ended"));
    }
    for (starts, ends) in state.flows.values() {
        match (*starts > 0, *ends > 0) {
            (true, true) => state.summary.flows_paired += 1,
            (true, false) => state.summary.flows_unterminated += 1,
            (false, _) => state.summary.flows_unstarted += 1,
        }
    }
    if state.total > 0 {
        return Err(ValidationError {
            problems: state.problems,
            total: state.total,
        });
    }
    Ok(state.summary)
}

fn check_packet(state: &mut State, index: usize, packet: &TracePacket) {
    match (packet.trusted_packet_sequence_id, state.sequence) {
        (None | Some(0), _) => state.problem(index, "no trusted_packet_sequence_id".into()),
        (Some(id), None) => state.sequence = Some(id),
        (Some(id), Some(seen)) if id != seen => state.problem(
            index,
            format!("sequence id {id}, expected one sequence ({seen})"),
        ),
        _ => {}
    }
    let flags = packet.sequence_flags.unwrap_or(0);
    if flags & SEQ_INCREMENTAL_STATE_CLEARED != 0 {
        state.cleared = true;
        state.clocks.default = None;
    }
    if let Some(defaults) = &packet.trace_packet_defaults {
        if !state.cleared {
            state.problem(
                index,
                "packet defaults before the incremental state was cleared".into(),
            );
        }
        state.clocks.default = defaults.timestamp_clock_id;
    }
    if let Some(snapshot) = &packet.clock_snapshot {
        if let Err(problem) = state.clocks.snapshot(snapshot) {
            state.problem(index, problem);
        }
    }
    let ts = match state.clocks.resolve(packet) {
        Ok(ts) => ts.unwrap_or(0),
        Err(problem) => {
            state.problem(index, problem);
            0
        }
    };
    if let Some(interned) = &packet.interned_data {
        if !state.cleared {
            state.problem(
                index,
                "interned data before the incremental state was cleared".into(),
            );
        }
        for (table, entries) in [
            (&mut state.names, &interned.event_names),
            (&mut state.categories, &interned.event_categories),
            (&mut state.arg_names, &interned.debug_annotation_names),
        ] {
            for entry in entries {
                table.insert(entry.iid.unwrap_or(0));
            }
        }
        for entry in &interned.debug_annotation_string_values {
            state.arg_values.insert(entry.iid.unwrap_or(0));
        }
        for table in [
            &state.names,
            &state.categories,
            &state.arg_names,
            &state.arg_values,
        ] {
            if table.contains(&0) {
                state.total += 1;
                state
                    .problems
                    .push(format!("packet {index}: interned iid 0"));
                break;
            }
        }
    }
    if let Some(descriptor) = &packet.track_descriptor {
        state.summary.tracks += 1;
        let uuid = descriptor.uuid.unwrap_or(0);
        if uuid == 0 {
            state.problem(index, "track descriptor with uuid 0".into());
        }
        let counter = descriptor.counter.is_some();
        state.summary.counter_tracks += u64::from(counter);
        if let Some(&was) = state.tracks.get(&uuid) {
            if was != counter {
                state.problem(index, format!("track {uuid} re-described as another kind"));
            }
        }
        state.tracks.insert(uuid, counter);
        if let Some(parent) = descriptor.parent_uuid {
            state.parents.push((index, parent));
        }
    }
    if let Some(event) = &packet.track_event {
        check_event(state, index, ts, flags, event);
    }
}

fn check_event(
    state: &mut State,
    index: usize,
    ts: u64,
    flags: u32,
    event: &super::proto::TrackEvent,
) {
    if !state.cleared {
        state.problem(
            index,
            "track event before the incremental state was cleared".into(),
        );
    }
    if flags & SEQ_NEEDS_INCREMENTAL_STATE == 0 {
        state.problem(
            index,
            "track event without SEQ_NEEDS_INCREMENTAL_STATE".into(),
        );
    }
    if let Some(iid) = event.name_iid {
        if !state.names.contains(&iid) {
            state.problem(index, format!("name_iid {iid} used before it is defined"));
        }
    }
    for iid in &event.category_iids {
        if !state.categories.contains(iid) {
            state.problem(
                index,
                format!("category iid {iid} used before it is defined"),
            );
        }
    }
    for annotation in &event.debug_annotations {
        if let Some(iid) = annotation.name_iid {
            if !state.arg_names.contains(&iid) {
                state.problem(index, format!("annotation name iid {iid} undefined"));
            }
        }
        if let Some(iid) = annotation.string_value_iid {
            if !state.arg_values.contains(&iid) {
                state.problem(index, format!("annotation string iid {iid} undefined"));
            }
        }
    }
    let uuid = event.track_uuid.unwrap_or(0);
    let Some(&counter_track) = state.tracks.get(&uuid) else {
        state.problem(
            index,
            format!("track_uuid {uuid} used before it is described"),
        );
        return;
    };
    let kind = event.r#type.unwrap_or(0);
    if (kind == TYPE_COUNTER) != counter_track {
        state.problem(
            index,
            format!("event type {kind} on track {uuid} (counter track: {counter_track})"),
        );
    }
    let (last, stack) = state.open.entry(uuid).or_insert((0, Vec::new()));
    let slice_event = kind == TYPE_SLICE_BEGIN || kind == TYPE_SLICE_END;
    let went_back = (slice_event && ts < *last).then_some(*last);
    if slice_event {
        *last = ts.max(*last);
    }
    let mut problem = None;
    match kind {
        TYPE_SLICE_BEGIN => {
            stack.push(ts);
            let depth = stack.len();
            state.summary.slices += 1;
            state.summary.max_depth = state.summary.max_depth.max(depth);
        }
        TYPE_SLICE_END => match stack.pop() {
            Some(begin) if begin <= ts => {}
            Some(begin) => {
                problem = Some(format!(
                    "slice on {uuid} ends at {ts} before its begin {begin}"
                ))
            }
            None => problem = Some(format!("end without begin on track {uuid}")),
        },
        TYPE_INSTANT => state.summary.instants += 1,
        TYPE_COUNTER => {
            state.summary.counter_values += 1;
            if event.counter_value.is_none() && event.double_counter_value.is_none() {
                problem = Some("counter event without a value".into());
            }
        }
        other => problem = Some(format!("unexpected event type {other}")),
    }
    if let Some(last) = went_back {
        state.problem(
            index,
            format!("time goes back on track {uuid}: {ts} after {last}"),
        );
    }
    if let Some(problem) = problem {
        state.problem(index, problem);
    }
    let ids = (event.flow_ids.len() + event.terminating_flow_ids.len()) as u64;
    state.summary.flow_starts += event.flow_ids.len() as u64;
    state.summary.flow_terminations += event.terminating_flow_ids.len() as u64;
    match kind {
        TYPE_SLICE_BEGIN => state.summary.flow_ids_on_slices += ids,
        TYPE_INSTANT => {}
        _ if ids > 0 => {
            state.summary.flow_ids_misplaced += ids;
            state.problem(index, format!("flow ids on an event of type {kind}"));
        }
        _ => {}
    }
    for id in &event.flow_ids {
        state.flows.entry(*id).or_default().0 += 1;
    }
    for id in &event.terminating_flow_ids {
        state.flows.entry(*id).or_default().1 += 1;
    }
}

/// A protobuf field value as read from the wire.
#[derive(Debug)]
enum Wire<'a> {
    Varint,
    Fixed64,
    Len(&'a [u8]),
    Fixed32,
}

fn read_varint(bytes: &[u8], offset: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*offset)?;
        *offset += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

fn read_field<'a>(bytes: &'a [u8], offset: &mut usize) -> Option<(u64, Wire<'a>)> {
    let key = read_varint(bytes, offset)?;
    let wire = match key & 7 {
        0 => {
            read_varint(bytes, offset)?;
            Wire::Varint
        }
        1 => {
            *offset = offset.checked_add(8).filter(|&o| o <= bytes.len())?;
            Wire::Fixed64
        }
        2 => {
            let len = usize::try_from(read_varint(bytes, offset)?).ok()?;
            let end = offset.checked_add(len).filter(|&e| e <= bytes.len())?;
            let slice = &bytes[*offset..end];
            *offset = end;
            Wire::Len(slice)
        }
        5 => {
            *offset = offset.checked_add(4).filter(|&o| o <= bytes.len())?;
            Wire::Fixed32
        }
        _ => return None,
    };
    Some((key >> 3, wire))
}

/// Checks that `TrackEvent`'s repeated scalars are unpacked (see the module docs).
fn check_packet_encoding(state: &mut State, index: usize, packet: &[u8]) {
    let mut offset = 0;
    while offset < packet.len() {
        match read_field(packet, &mut offset) {
            Some((11, Wire::Len(event))) => {
                let mut inner = 0;
                while inner < event.len() {
                    let Some((field, wire)) = read_field(event, &mut inner) else {
                        state.problem(index, "malformed TrackEvent".into());
                        return;
                    };
                    let ok = match field {
                        3 | 12 | 31 => matches!(wire, Wire::Varint),
                        47 | 48 => matches!(wire, Wire::Fixed64),
                        _ => true,
                    };
                    if !ok {
                        state.problem(index, format!("TrackEvent field {field} is packed (Perfetto reads it unpacked only)"));
                    }
                }
            }
            Some(_) => {}
            None => {
                state.problem(index, "malformed TracePacket".into());
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perfetto::proto::{Trace, TrackDescriptor, TrackEvent};

    fn packet(event: Option<TrackEvent>, flags: Option<u32>) -> TracePacket {
        TracePacket {
            trusted_packet_sequence_id: Some(1),
            timestamp: Some(10),
            track_event: event,
            sequence_flags: flags,
            ..TracePacket::default()
        }
    }

    #[test]
    fn packed_flow_ids_and_undescribed_tracks_are_reported() {
        #[derive(Clone, PartialEq, prost::Message)]
        struct PackedEvent {
            #[prost(fixed64, repeated, tag = "47")]
            flow_ids: Vec<u64>,
        }
        let packed = PackedEvent {
            flow_ids: vec![1, 2],
        }
        .encode_to_vec();
        let mut bytes = Trace {
            packet: vec![packet(
                Some(TrackEvent {
                    track_uuid: Some(9),
                    r#type: Some(TYPE_INSTANT),
                    ..TrackEvent::default()
                }),
                Some(3),
            )],
        }
        .encode_to_vec();
        // A second packet whose TrackEvent (field 11) holds packed flow ids.
        let mut raw_packet = vec![0x58, 1]; // trusted_packet_sequence_id: 1 (field 10, varint)
        raw_packet.push(0x5a); // field 11, length-delimited
        raw_packet.push(packed.len() as u8);
        raw_packet.extend_from_slice(&packed);
        bytes.push(0x0a);
        bytes.push(raw_packet.len() as u8);
        bytes.extend_from_slice(&raw_packet);
        let err = validate(&bytes).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("track_uuid 9 used before"), "{text}");
        assert!(text.contains("field 47 is packed"), "{text}");
    }

    fn descriptor(uuid: u64) -> TracePacket {
        TracePacket {
            trusted_packet_sequence_id: Some(1),
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(uuid),
                ..TrackDescriptor::default()
            }),
            ..TracePacket::default()
        }
    }

    #[test]
    fn balanced_slices_on_a_described_track_pass() {
        let descriptor = descriptor(5);
        let begin = TrackEvent {
            track_uuid: Some(5),
            r#type: Some(TYPE_SLICE_BEGIN),
            ..TrackEvent::default()
        };
        let end = TrackEvent {
            track_uuid: Some(5),
            r#type: Some(TYPE_SLICE_END),
            ..TrackEvent::default()
        };
        let trace = Trace {
            packet: vec![
                descriptor,
                packet(Some(begin), Some(3)),
                packet(Some(end), Some(2)),
            ],
        };
        let summary = validate(&trace.encode_to_vec()).unwrap();
        assert_eq!((summary.slices, summary.max_depth), (1, 1));
    }

    #[test]
    fn incremental_timestamps_resolve_and_snapshots_must_grow() {
        use crate::perfetto::proto::{ClockSnapshot, TracePacketDefaults};
        let snapshot = |at: u64| TracePacket {
            trusted_packet_sequence_id: Some(1),
            sequence_flags: Some(3),
            clock_snapshot: Some(ClockSnapshot::incremental_start(64, at)),
            trace_packet_defaults: Some(TracePacketDefaults {
                timestamp_clock_id: Some(64),
            }),
            ..TracePacket::default()
        };
        let descriptor = descriptor(5);
        let event = |kind: i32, delta: u64| TracePacket {
            timestamp: Some(delta),
            ..packet(
                Some(TrackEvent {
                    track_uuid: Some(5),
                    r#type: Some(kind),
                    ..TrackEvent::default()
                }),
                Some(2),
            )
        };
        // Begin at 1000 + 500, end 10 later: read as absolute, the end (10) would be
        // before the begin (500).
        let good = Trace {
            packet: vec![
                snapshot(1000),
                descriptor.clone(),
                event(TYPE_SLICE_BEGIN, 500),
                event(TYPE_SLICE_END, 10),
            ],
        };
        assert_eq!(validate(&good.encode_to_vec()).unwrap().slices, 1);
        let mut back = good.clone();
        back.packet.push(snapshot(900));
        let text = validate(&back.encode_to_vec()).unwrap_err().to_string();
        assert!(text.contains("reads 900"), "{text}");
        let undefined = Trace {
            packet: vec![
                descriptor,
                TracePacket {
                    timestamp_clock_id: Some(70),
                    ..event(TYPE_INSTANT, 1)
                },
            ],
        };
        let text = validate(&undefined.encode_to_vec())
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("clock 70, which no snapshot defines"),
            "{text}"
        );
    }
}
