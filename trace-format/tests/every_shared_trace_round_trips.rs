//! Read → write → read on every shared real trace yields the same events, metadata and
//! args (plain and gzip output), and the written file follows Kineto's conventions.

#[path = "support/shared.rs"]
mod shared;

use std::ops::ControlFlow;

use trace_format::{
    CollectSink, Event, Output, TraceMeta, TraceReader, TraceSink, TraceWriter, WriteOptions,
};

/// Compares each event of the second read with the first read's, without a second copy.
struct Compare<'a> {
    expected: &'a [Event<'static>],
    seen: u64,
    mismatches: Vec<String>,
}

impl TraceSink for Compare<'_> {
    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        self.seen += 1;
        match self.expected.get(index as usize) {
            Some(want) if want == event => {}
            want => {
                if self.mismatches.len() < 5 {
                    self.mismatches
                        .push(format!("event #{index}: want {want:?}\n got {event:?}"));
                }
            }
        }
        ControlFlow::Continue(())
    }
}

fn write_trace(events: &[Event<'static>], meta: &TraceMeta, gzip: bool) -> Vec<u8> {
    let out = if gzip {
        Output::gzip(Vec::new())
    } else {
        Output::plain(Vec::new())
    };
    // The inputs already end with `Record Window End` (or lack it): copy them as they are.
    let options = WriteOptions::default().with_record_window_end(false);
    let mut writer = TraceWriter::with_options(out, meta, options).unwrap();
    for event in events {
        writer.write_event(event).unwrap();
    }
    writer.finish().unwrap().close().unwrap()
}

fn assert_same_meta(name: &str, a: &TraceMeta, b: &TraceMeta) {
    let mut keys_a: Vec<_> = a.entries().iter().map(|e| e.key.as_str()).collect();
    let mut keys_b: Vec<_> = b.entries().iter().map(|e| e.key.as_str()).collect();
    let unknown_a: Vec<_> = a.unknown_entries().map(|e| (&e.key, &e.value)).collect();
    let unknown_b: Vec<_> = b.unknown_entries().map(|e| (&e.key, &e.value)).collect();
    assert_eq!(
        unknown_a, unknown_b,
        "{name}: unknown metadata keys, in order"
    );
    keys_a.sort_unstable();
    keys_b.sort_unstable();
    assert_eq!(keys_a, keys_b, "{name}: metadata keys");
    for key in keys_a {
        assert_eq!(a.get(key), b.get(key), "{name}: metadata `{key}`");
    }
    assert_eq!(a.distributed_info(), b.distributed_info(), "{name}");
    assert_eq!(a.device_properties(), b.device_properties(), "{name}");
}

#[test]
fn every_shared_trace_round_trips() {
    let dir = shared::traces_dir();
    for path in shared::all_traces(&dir) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut first = CollectSink::default();
        TraceReader::open(&path)
            .read(&mut first)
            .unwrap_or_else(|e| panic!("{e}"));
        // Gzip output for the big ones keeps the test quick in memory; plain for the rest.
        let gzip = first.events.len() > 50_000;
        let written = write_trace(&first.events, &first.meta, gzip);
        let mut compare = Compare {
            expected: &first.events,
            seen: 0,
            mismatches: Vec::new(),
        };
        let report = TraceReader::from_slice(&name, &written)
            .read(&mut compare)
            .unwrap_or_else(|e| panic!("re-reading {name}: {e}"));
        assert!(
            compare.mismatches.is_empty(),
            "{name}:\n{}",
            compare.mismatches.join("\n")
        );
        assert_eq!(compare.seen, first.events.len() as u64, "{name}");
        assert_same_meta(&name, &first.meta, &report.meta);
        if !gzip {
            let text = String::from_utf8(written).unwrap();
            check_kineto_conventions(&name, &text, &first.meta);
        }
    }
}

fn check_kineto_conventions(name: &str, text: &str, meta: &TraceMeta) {
    // Layout: schemaVersion first, traceEvents before traceName.
    if meta.schema_version().is_some() {
        assert!(text.starts_with("{\n  \"schemaVersion\": 1,"), "{name}");
    }
    let events_at = text.find("\"traceEvents\": [").unwrap();
    if let Some(base) = meta.base_time_ns() {
        let base_at = text
            .find(&format!("\"baseTimeNanoseconds\": {base}"))
            .unwrap();
        assert!(
            base_at < events_at,
            "{name}: baseTimeNanoseconds before traceEvents"
        );
    }
    if let Some(at) = text.find("\"traceName\"") {
        assert!(at > events_at, "{name}: traceName after traceEvents");
    }
    // HTA's rank regex `"rank":\s+(\d+)` must match.
    if let Some(rank) = meta.rank() {
        assert!(
            text.contains(&format!("\"rank\": {rank}")),
            "{name}: `\"rank\": N` with a space"
        );
    }
    // ts and dur: microseconds with exactly three decimals.
    for key in ["\"ts\": ", "\"dur\": "] {
        for (at, _) in text.match_indices(key).take(200) {
            let number: String = text[at + key.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-')
                .collect();
            let decimals = number.split('.').nth(1).map(str::len);
            assert_eq!(decimals, Some(3), "{name}: {key}{number}");
        }
    }
}

#[test]
fn record_window_end_is_written_last() {
    let mut meta = TraceMeta::kineto(Some(1_000_000_000_000));
    meta.set_str("traceName", "t.json");
    let window_end = Event::instant(None, "Record Window End", "g", "", "", 1_000_000_009_000);
    let kernel = Event::complete(
        trace_format::Category::Kernel,
        "k",
        0,
        7,
        1_000_000_001_000,
        500,
    );
    let mut writer = TraceWriter::new(Vec::new(), &meta).unwrap();
    writer.write_event(&window_end).unwrap();
    writer.write_event(&kernel).unwrap();
    let text = String::from_utf8(writer.finish().unwrap()).unwrap();
    let mut sink = CollectSink::default();
    TraceReader::from_slice("t.json", text.as_bytes())
        .read(&mut sink)
        .unwrap();
    let names: Vec<_> = sink.events.iter().map(|e| e.name().to_owned()).collect();
    assert_eq!(names, ["k", "Record Window End"]);
    assert_eq!(sink.events[1].ts_ns, Some(1_000_000_009_000));
    assert!(
        text.trim_end().ends_with("\"traceName\": \"t.json\"\n}"),
        "{text}"
    );

    // Without one given, the writer adds it at the latest event end.
    let mut writer = TraceWriter::new(Vec::new(), &meta).unwrap();
    writer.write_event(&kernel).unwrap();
    let text = String::from_utf8(writer.finish().unwrap()).unwrap();
    let mut sink = CollectSink::default();
    TraceReader::from_slice("t.json", text.as_bytes())
        .read(&mut sink)
        .unwrap();
    assert!(sink.events[1].is_record_window_end());
    assert_eq!(sink.events[1].ts_ns, Some(1_000_000_001_500));
}
