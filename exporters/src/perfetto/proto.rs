//! The subset of Perfetto's trace protos a track-event trace needs, as prost messages.
//!
//! Field numbers and types are those of Perfetto's `protos/perfetto/trace/…` files
//! (`trace.proto`, `trace_packet.proto`, `track_event/track_event.proto`,
//! `track_event/track_descriptor.proto`, `process_descriptor.proto`,
//! `thread_descriptor.proto`, `counter_descriptor.proto`, `debug_annotation.proto`,
//! `interned_data/interned_data.proto`, `clock_snapshot.proto`). Those protos are proto2,
//! where repeated scalars are *unpacked*; prost packs them by default and Perfetto's own
//! decoder does not read the packed form (`shared/reference/perfetto.md`, "Crates"), so
//! every repeated scalar here says `packed = "false"`.

/// `perfetto.protos.Trace`: the file is one of these, a sequence of packets.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    /// `repeated TracePacket packet = 1`.
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `perfetto.protos.TracePacket` (only the fields we write).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// `optional uint64 timestamp = 8` (ns, BOOTTIME unless `timestamp_clock_id`).
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// `optional ClockSnapshot clock_snapshot = 6` (in the `data` oneof).
    #[prost(message, optional, tag = "6")]
    pub clock_snapshot: Option<ClockSnapshot>,
    /// `optional uint32 trusted_packet_sequence_id = 10`.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// `optional TrackEvent track_event = 11` (in the `data` oneof).
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    /// `optional InternedData interned_data = 12`.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// `optional uint32 sequence_flags = 13` ([`SEQ_INCREMENTAL_STATE_CLEARED`],
    /// [`SEQ_NEEDS_INCREMENTAL_STATE`]).
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// `optional uint32 timestamp_clock_id = 58` (overrides the sequence's default).
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    /// `optional TracePacketDefaults trace_packet_defaults = 59`.
    #[prost(message, optional, tag = "59")]
    pub trace_packet_defaults: Option<TracePacketDefaults>,
    /// `optional TrackDescriptor track_descriptor = 60` (in the `data` oneof).
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

/// `perfetto.protos.TracePacketDefaults` (only the clock): defaults for the later
/// packets of the sequence, part of its incremental state.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacketDefaults {
    /// `optional uint32 timestamp_clock_id = 58`.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
}

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE`.
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// `perfetto.protos.ClockSnapshot`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    /// `repeated Clock clocks = 1`.
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
    /// `optional BuiltinClock primary_trace_clock = 2`.
    #[prost(int32, optional, tag = "2")]
    pub primary_trace_clock: Option<i32>,
}

/// `perfetto.protos.ClockSnapshot.Clock`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Clock {
    /// `optional uint32 clock_id = 1` ([`CLOCK_REALTIME`], [`CLOCK_BOOTTIME`]).
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    /// `optional uint64 timestamp = 2` (absolute, also for an incremental clock).
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
    /// `optional bool is_incremental = 3`: packet timestamps on this clock are deltas
    /// from the previous packet's on it (the first after a snapshot from the
    /// snapshot's value). Only for sequence-scoped clocks.
    #[prost(bool, optional, tag = "3")]
    pub is_incremental: Option<bool>,
}

impl Clock {
    /// A reading of `clock_id`.
    pub fn reading(clock_id: u32, timestamp: u64) -> Self {
        Clock {
            clock_id: Some(clock_id),
            timestamp: Some(timestamp),
            is_incremental: None,
        }
    }
}

impl ClockSnapshot {
    /// Starts the incremental sequence-scoped clock `clock_id` at `ts` (ns), with
    /// BOOTTIME reading the same.
    pub fn incremental_start(clock_id: u32, ts: u64) -> Self {
        ClockSnapshot {
            clocks: vec![
                Clock::reading(CLOCK_BOOTTIME, ts),
                Clock {
                    is_incremental: Some(true),
                    ..Clock::reading(clock_id, ts)
                },
            ],
            primary_trace_clock: None,
        }
    }
}

/// `BuiltinClock.BUILTIN_CLOCK_REALTIME`.
pub const CLOCK_REALTIME: u32 = 1;
/// `BuiltinClock.BUILTIN_CLOCK_BOOTTIME` (the default clock of packet timestamps).
pub const CLOCK_BOOTTIME: u32 = 6;
/// The first sequence-scoped (user-defined) clock id: ids 64–127 are valid only on the
/// sequence whose snapshot defines them (`clock_snapshot.proto`).
pub const FIRST_SEQUENCE_CLOCK: u32 = 64;
/// The number of sequence-scoped clock ids (64–127).
pub const SEQUENCE_CLOCKS: u32 = 64;

/// `perfetto.protos.TrackEvent` (only the fields we write).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    /// `repeated uint64 category_iids = 3` (unpacked).
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    pub category_iids: Vec<u64>,
    /// `repeated DebugAnnotation debug_annotations = 4`.
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    /// `optional Type type = 9` ([`TYPE_SLICE_BEGIN`] …).
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    /// `uint64 name_iid = 10` (oneof `name_field`).
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    /// `optional uint64 track_uuid = 11`.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// `repeated string categories = 22` (when a category is not interned).
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    /// `string name = 23` (oneof `name_field`, when a name is not interned).
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    /// `int64 counter_value = 30` (oneof `counter_value_field`).
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
    /// `double double_counter_value = 44` (oneof `counter_value_field`).
    #[prost(double, optional, tag = "44")]
    pub double_counter_value: Option<f64>,
    /// `repeated fixed64 flow_ids = 47` (unpacked).
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    /// `repeated fixed64 terminating_flow_ids = 48` (unpacked).
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
}

/// `TrackEvent.Type.TYPE_SLICE_BEGIN`.
pub const TYPE_SLICE_BEGIN: i32 = 1;
/// `TrackEvent.Type.TYPE_SLICE_END`.
pub const TYPE_SLICE_END: i32 = 2;
/// `TrackEvent.Type.TYPE_INSTANT`.
pub const TYPE_INSTANT: i32 = 3;
/// `TrackEvent.Type.TYPE_COUNTER`.
pub const TYPE_COUNTER: i32 = 4;

/// `perfetto.protos.DebugAnnotation` (name interned or inline; scalar values).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    /// `uint64 name_iid = 1` (oneof `name_field`).
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    /// `bool bool_value = 2`.
    #[prost(bool, optional, tag = "2")]
    pub bool_value: Option<bool>,
    /// `uint64 uint_value = 3`.
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    /// `int64 int_value = 4`.
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    /// `double double_value = 5`.
    #[prost(double, optional, tag = "5")]
    pub double_value: Option<f64>,
    /// `string string_value = 6`.
    #[prost(string, optional, tag = "6")]
    pub string_value: Option<String>,
    /// `string legacy_json_value = 9` (arrays and objects, as JSON text).
    #[prost(string, optional, tag = "9")]
    pub legacy_json_value: Option<String>,
    /// `string name = 10` (oneof `name_field`).
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
    /// `uint64 string_value_iid = 17` (interned `debug_annotation_string_values`).
    #[prost(uint64, optional, tag = "17")]
    pub string_value_iid: Option<u64>,
}

/// `perfetto.protos.TrackDescriptor` (only the fields we write).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    /// `optional uint64 uuid = 1` (global; 0 is reserved).
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// `string name = 2` (oneof `static_or_dynamic_name`).
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// `optional ProcessDescriptor process = 3`.
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    /// `optional ThreadDescriptor thread = 4`.
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    /// `optional uint64 parent_uuid = 5`.
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// `optional CounterDescriptor counter = 8`.
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
    /// `optional ChildTracksOrdering child_ordering = 11` ([`CHILD_ORDERING_EXPLICIT`]).
    #[prost(int32, optional, tag = "11")]
    pub child_ordering: Option<i32>,
    /// `optional int32 sibling_order_rank = 12`.
    #[prost(int32, optional, tag = "12")]
    pub sibling_order_rank: Option<i32>,
}

/// `TrackDescriptor.ChildTracksOrdering.EXPLICIT` (by `sibling_order_rank`).
pub const CHILD_ORDERING_EXPLICIT: i32 = 3;

/// `perfetto.protos.ProcessDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    /// `optional int32 pid = 1`.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `optional string process_name = 6`.
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// `perfetto.protos.ThreadDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    /// `optional int32 pid = 1`.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `optional int64 tid = 2`.
    #[prost(int64, optional, tag = "2")]
    pub tid: Option<i64>,
    /// `optional string thread_name = 5`.
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `perfetto.protos.CounterDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {
    /// `optional Unit unit = 3` ([`UNIT_SIZE_BYTES`], [`UNIT_COUNT`]).
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
    /// `optional string unit_name = 6` (free-form, when no builtin unit fits).
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
}

/// `CounterDescriptor.Unit.UNIT_COUNT`.
pub const UNIT_COUNT: i32 = 2;
/// `CounterDescriptor.Unit.UNIT_SIZE_BYTES`.
pub const UNIT_SIZE_BYTES: i32 = 3;

/// `perfetto.protos.InternedData` (names, categories, debug annotation names/values).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    /// `repeated EventCategory event_categories = 1`.
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<InternedName>,
    /// `repeated EventName event_names = 2`.
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<InternedName>,
    /// `repeated DebugAnnotationName debug_annotation_names = 3`.
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<InternedName>,
    /// `repeated InternedString debug_annotation_string_values = 29` (`str` is bytes).
    #[prost(message, repeated, tag = "29")]
    pub debug_annotation_string_values: Vec<InternedString>,
}

/// `EventName`, `EventCategory` and `DebugAnnotationName`: `iid = 1`, `name = 2`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedName {
    /// `optional uint64 iid = 1` (non-zero).
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `optional string name = 2`.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `perfetto.protos.InternedString`: `iid = 1`, `bytes str = 2`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    /// `optional uint64 iid = 1` (non-zero).
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `optional bytes str = 2`.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}
