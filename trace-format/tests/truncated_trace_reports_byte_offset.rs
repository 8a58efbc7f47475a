//! A trace cut short (a killed process) gives `Truncated` with the file, the byte offset
//! where the text ends and the index of the event being read; lenient mode returns every
//! complete event before the cut.

#[path = "support/shared.rs"]
mod shared;

use std::io::Write;

use trace_format::{read_path, read_path_lenient, CollectSink, ReadError, TraceReader};

const TRACE: &str = r#"{"schemaVersion": 1, "baseTimeNanoseconds": 1000000000, "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1.000, "dur": 2.000},
  {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 3.000, "dur": 2.000},
  {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 9.000}
], "traceName": "t.json"}"#;

#[test]
fn truncated_trace_reports_byte_offset() {
    let cut = TRACE.find(r#""name": "b""#).unwrap();
    let text = &TRACE.as_bytes()[..cut];
    let err = TraceReader::from_slice("killed.json", text)
        .read(&mut CollectSink::default())
        .unwrap_err();
    match &err {
        ReadError::Truncated { at, .. } => {
            assert_eq!(&*at.file, "killed.json");
            assert_eq!(at.byte_offset, cut as u64);
            assert_eq!(at.event_index, Some(1));
        }
        other => panic!("expected Truncated, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("killed.json") && message.contains(&format!("byte {cut}")),
        "{message}"
    );
    assert!(message.contains("event #1"), "{message}");

    let mut sink = CollectSink::default();
    let report = TraceReader::from_slice("killed.json", text)
        .lenient(true)
        .read(&mut sink)
        .unwrap();
    assert_eq!(sink.events.len(), 1);
    assert_eq!(sink.events[0].name(), "a");
    assert_eq!(sink.events[0].ts_ns, Some(1_000_001_000));
    assert!(matches!(report.damage, Some(ReadError::Truncated { .. })));
    assert_eq!(report.events_delivered, 1);
}

#[test]
fn every_cut_point_gives_an_error_and_a_prefix_never_a_panic() {
    let full = TRACE.as_bytes();
    let end_of_object = TRACE.rfind('}').unwrap();
    for cut in 0..end_of_object {
        let text = &full[..cut];
        let strict = TraceReader::from_slice("t.json", text).read(&mut CollectSink::default());
        assert!(strict.is_err(), "cut at {cut} must be an error");
        let mut sink = CollectSink::default();
        let report = TraceReader::from_slice("t.json", text)
            .lenient(true)
            .read(&mut sink)
            .unwrap();
        assert!(report.damage.is_some(), "cut at {cut}");
        assert!(report.damage.as_ref().unwrap().location().byte_offset <= cut as u64);
        assert!(sink.events.len() <= 3);
    }
}

#[test]
fn truncated_gzip_file_names_the_file_and_keeps_what_was_read() {
    let dir = shared::traces_dir();
    let original = std::fs::read(dir.join("torch-2.15/gloo_2rank-rank0.pt.trace.json.gz")).unwrap();
    let mut file = tempfile::Builder::new()
        .suffix(".json.gz")
        .tempfile()
        .unwrap();
    file.write_all(&original[..original.len() / 2]).unwrap();
    let path = file.path().to_owned();

    let err = read_path(&path, &mut CollectSink::default()).unwrap_err();
    assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    assert!(err.location().event_index.is_some(), "{err}");

    let mut sink = CollectSink::default();
    let report = read_path_lenient(&path, &mut sink);
    assert!(report.damage.is_some());
    assert!(report.gzip);
    assert!(
        sink.events.len() > 100,
        "most events before the cut survive: {}",
        sink.events.len()
    );
    assert_eq!(report.events_delivered, sink.events.len() as u64);
    // The events read are exactly the first ones of the intact trace.
    let mut whole = CollectSink::default();
    read_path(
        dir.join("torch-2.15/gloo_2rank-rank0.pt.trace.json.gz"),
        &mut whole,
    )
    .unwrap();
    assert_eq!(sink.events[..], whole.events[..sink.events.len()]);
}
