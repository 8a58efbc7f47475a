//! Nothing is lost to interning or incremental timestamps: the output, decoded with
//! Perfetto's own schema (the `perfetto_protos` crate) and resolved as a reader must —
//! interned names, categories, annotation names and string values looked up, packet
//! timestamps turned into BOOTTIME through the snapshots, defaults and deltas of the
//! sequence — gives back every slice (name, category, begin, end, every arg with its
//! value), every instant and every counter value of the Kineto input, exactly.
//!
//! No `trace_processor` binary can be had here (`shared/reference/perfetto.md`,
//! "Validating offline here"), so the resolution is written in this test from the
//! protos' documented semantics, apart from the exporter's own validator.

mod common;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;

use exporters::PerfettoExporter;
use perfetto_protos::debug_annotation::DebugAnnotation;
use perfetto_protos::trace::Trace;
use perfetto_protos::track_event::track_event::Type;
use protobuf::Message as _;
use trace_format::{ArgValue, Event, Phase, TraceReader};

/// One slice or instant: name, category, begin ns, end ns, args (sorted).
type Record = (String, String, u64, u64, Vec<(String, String)>);

/// What a trace holds, comparable between input and output.
#[derive(Debug, Default, PartialEq)]
struct Holdings {
    slices: Vec<Record>,
    instants: Vec<Record>,
    /// `(ns, value)` of every counter value.
    counters: Vec<(u64, String)>,
}

impl Holdings {
    fn sort(&mut self) {
        self.slices.sort();
        self.instants.sort();
        self.counters.sort();
    }
}

fn input_value(value: &ArgValue<'_>) -> String {
    match value {
        ArgValue::Null => "json null".to_owned(),
        ArgValue::Bool(b) => format!("bool {b}"),
        ArgValue::Int(n) => format!("int {n}"),
        ArgValue::UInt(n) => format!("uint {n}"),
        ArgValue::Float(x) => format!("double {:016x}", x.to_bits()),
        ArgValue::Number(text) => format!("json {text}"),
        ArgValue::Str(text) => format!("string {text}"),
        ArgValue::Array(raw) | ArgValue::Object(raw) => format!("json {}", raw.as_str()),
    }
}

fn input_record(event: &Event<'_>, ts: u64, end: u64) -> Record {
    let mut args: Vec<(String, String)> = event
        .args
        .iter()
        .flat_map(|args| args.iter())
        .map(|(key, value)| (key.into_owned(), input_value(&value)))
        .collect();
    args.sort();
    let category = event
        .category
        .as_ref()
        .map(|c| c.as_str().to_owned())
        .unwrap_or_default();
    (event.name().to_owned(), category, ts, end, args)
}

/// Slices, instants (not flows, whose ids the exporter moves onto slices) and counter
/// values of a Kineto trace, read directly.
fn read_input(path: &Path) -> Holdings {
    let mut holdings = Holdings::default();
    let mut sink = trace_format::from_fn(|_, event: &Event<'_>| {
        let Some(ts_ns) = event.ts_ns else {
            return ControlFlow::Continue(());
        };
        let ts = ts_ns.max(0) as u64;
        match event.phase {
            Phase::Complete => {
                let end = ts_ns
                    .saturating_add(event.dur_ns.unwrap_or(0).max(0))
                    .max(0) as u64;
                holdings.slices.push(input_record(event, ts, end));
            }
            Phase::Instant if event.is_memory_event() => {
                for key in ["Total Allocated", "Total Reserved"] {
                    if let Some(value) = event.arg(key).and_then(|v| v.as_i64()) {
                        holdings.counters.push((ts, format!("int {value}")));
                    }
                }
            }
            Phase::Instant => holdings.instants.push(input_record(event, ts, ts)),
            Phase::Counter => {
                for (_, value) in event.args.iter().flat_map(|a| a.iter()) {
                    match value {
                        ArgValue::Int(n) => holdings.counters.push((ts, format!("int {n}"))),
                        other => {
                            if let Some(x) = other.as_f64() {
                                holdings
                                    .counters
                                    .push((ts, format!("double {:016x}", x.to_bits())));
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    });
    TraceReader::open(path).read(&mut sink).unwrap();
    holdings.sort();
    holdings
}

/// A reader's state of the one packet sequence.
#[derive(Default)]
struct Sequence {
    names: HashMap<u64, String>,
    categories: HashMap<u64, String>,
    arg_names: HashMap<u64, String>,
    arg_values: HashMap<u64, String>,
    default_clock: Option<u32>,
    /// clock id → (incremental, last reading, BOOTTIME − reading).
    clocks: HashMap<u32, (bool, u64, i128)>,
    /// Counter tracks, and whether each is a derived utilization track.
    counter_tracks: HashMap<u64, bool>,
    open: HashMap<u64, Vec<Record>>,
}

impl Sequence {
    fn arg(&self, annotation: &DebugAnnotation) -> (String, String) {
        let name = if annotation.has_name_iid() {
            self.arg_names[&annotation.name_iid()].clone()
        } else {
            annotation.name().to_owned()
        };
        let value = if annotation.has_bool_value() {
            format!("bool {}", annotation.bool_value())
        } else if annotation.has_int_value() {
            format!("int {}", annotation.int_value())
        } else if annotation.has_uint_value() {
            format!("uint {}", annotation.uint_value())
        } else if annotation.has_double_value() {
            format!("double {:016x}", annotation.double_value().to_bits())
        } else if annotation.has_string_value() {
            format!("string {}", annotation.string_value())
        } else if annotation.has_string_value_iid() {
            format!("string {}", self.arg_values[&annotation.string_value_iid()])
        } else if annotation.has_legacy_json_value() {
            format!("json {}", annotation.legacy_json_value())
        } else {
            panic!("annotation {name} without a value the exporter writes")
        };
        (name, value)
    }
}

/// Decodes the output with Perfetto's schema and resolves it.
fn read_output(bytes: &[u8]) -> Holdings {
    let trace = Trace::parse_from_bytes(bytes).expect("decodes as perfetto.protos.Trace");
    let mut seq = Sequence::default();
    let mut holdings = Holdings::default();
    for packet in &trace.packet {
        if packet.sequence_flags() & 1 != 0 {
            // SEQ_INCREMENTAL_STATE_CLEARED: interning and defaults start over.
            seq.names.clear();
            seq.categories.clear();
            seq.arg_names.clear();
            seq.arg_values.clear();
            seq.default_clock = None;
        }
        if let Some(defaults) = packet.trace_packet_defaults.as_ref() {
            seq.default_clock = defaults
                .has_timestamp_clock_id()
                .then(|| defaults.timestamp_clock_id());
        }
        if let Some(interned) = packet.interned_data.as_ref() {
            for entry in &interned.event_names {
                seq.names.insert(entry.iid(), entry.name().to_owned());
            }
            for entry in &interned.event_categories {
                seq.categories.insert(entry.iid(), entry.name().to_owned());
            }
            for entry in &interned.debug_annotation_names {
                seq.arg_names.insert(entry.iid(), entry.name().to_owned());
            }
            for entry in &interned.debug_annotation_string_values {
                let text = String::from_utf8(entry.str().to_vec()).expect("UTF-8");
                seq.arg_values.insert(entry.iid(), text);
            }
        }
        if packet.has_clock_snapshot() {
            let clocks = &packet.clock_snapshot().clocks;
            let boottime = clocks
                .iter()
                .find(|c| c.clock_id() == 6)
                .map(|c| c.timestamp());
            for clock in clocks {
                if (64..128).contains(&clock.clock_id()) {
                    let offset = i128::from(boottime.expect("BOOTTIME in the snapshot"))
                        - i128::from(clock.timestamp());
                    seq.clocks.insert(
                        clock.clock_id(),
                        (clock.is_incremental(), clock.timestamp(), offset),
                    );
                }
            }
        }
        if packet.has_track_descriptor() {
            let descriptor = packet.track_descriptor();
            if descriptor.counter.is_some() {
                seq.counter_tracks
                    .insert(descriptor.uuid(), descriptor.name() == "utilization");
            }
        }
        if !packet.has_track_event() {
            continue;
        }
        let ts = {
            let clock = if packet.has_timestamp_clock_id() {
                packet.timestamp_clock_id()
            } else {
                seq.default_clock.unwrap_or(6)
            };
            if clock == 6 {
                packet.timestamp()
            } else {
                let (incremental, last, offset) = seq
                    .clocks
                    .get_mut(&clock)
                    .expect("a clock defined before use");
                let reading = if *incremental {
                    *last += packet.timestamp();
                    *last
                } else {
                    packet.timestamp()
                };
                u64::try_from(i128::from(reading) + *offset).expect("after BOOTTIME 0")
            }
        };
        let event = packet.track_event();
        let uuid = event.track_uuid();
        match event.type_() {
            Type::TYPE_SLICE_BEGIN | Type::TYPE_INSTANT => {
                let name = if event.has_name_iid() {
                    seq.names[&event.name_iid()].clone()
                } else {
                    event.name().to_owned()
                };
                let mut categories: Vec<String> = event
                    .category_iids
                    .iter()
                    .map(|iid| seq.categories[iid].clone())
                    .chain(event.categories.iter().cloned())
                    .collect();
                assert!(categories.len() <= 1, "{name}: one category at most");
                let category = categories.pop().unwrap_or_default();
                let mut args: Vec<(String, String)> =
                    event.debug_annotations.iter().map(|a| seq.arg(a)).collect();
                args.sort();
                let record = (name, category, ts, ts, args);
                if event.type_() == Type::TYPE_SLICE_BEGIN {
                    seq.open.entry(uuid).or_default().push(record);
                } else if event.flow_ids.is_empty() && event.terminating_flow_ids.is_empty() {
                    holdings.instants.push(record);
                }
            }
            Type::TYPE_SLICE_END => {
                let mut record = seq
                    .open
                    .get_mut(&uuid)
                    .and_then(Vec::pop)
                    .expect("an end closes a begin");
                record.3 = ts;
                holdings.slices.push(record);
            }
            Type::TYPE_COUNTER => {
                let derived = *seq.counter_tracks.get(&uuid).expect("a counter track");
                if !derived {
                    let value = if event.has_counter_value() {
                        format!("int {}", event.counter_value())
                    } else {
                        format!("double {:016x}", event.double_counter_value().to_bits())
                    };
                    holdings.counters.push((ts, value));
                }
            }
            other => panic!("unexpected event type {other:?}"),
        }
    }
    assert!(
        seq.open.values().all(Vec::is_empty),
        "slices left open at the end"
    );
    holdings.sort();
    holdings
}

fn first_difference<T: std::fmt::Debug + PartialEq>(what: &str, input: &[T], output: &[T]) {
    if input == output {
        return;
    }
    let at = input
        .iter()
        .zip(output)
        .position(|(a, b)| a != b)
        .unwrap_or(input.len().min(output.len()));
    panic!(
        "{what}: {} in the input, {} in the output; first difference at {at}:\n  input:  {:?}\n  output: {:?}",
        input.len(),
        output.len(),
        input.get(at),
        output.get(at)
    );
}

#[test]
fn every_slice_instant_counter_arg_and_timestamp_comes_back() {
    let dir = common::shared_dir();
    for file in [
        "hta/mtia_inference_rank_0.json.gz",
        "kineto-legacy/resnet50_2021.json.gz",
        "torch-2.15/python_privateuse1_neuron.pt.trace.json.gz",
        "hta/amd_mi250_train.json.gz",
    ] {
        let path = dir.join(file);
        let input = read_input(&path);
        let mut exporter = PerfettoExporter::new(Vec::new());
        exporter.add_path(&path).unwrap();
        let (bytes, stats) = exporter.finish().unwrap();
        let output = read_output(&bytes);
        assert!(!input.slices.is_empty(), "{file}: no slices read");
        assert_eq!(output.slices.len() as u64, stats.slices, "{file}");
        first_difference(&format!("{file}: slices"), &input.slices, &output.slices);
        first_difference(
            &format!("{file}: instants"),
            &input.instants,
            &output.instants,
        );
        first_difference(
            &format!("{file}: counters"),
            &input.counters,
            &output.counters,
        );
    }
}
