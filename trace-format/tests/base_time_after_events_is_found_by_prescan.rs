//! `baseTimeNanoseconds` may come after `traceEvents` (Kineto traces from 2024 do this).
//! Files and slices are pre-scanned so events still get absolute times; a one-shot reader
//! cannot be, and the report says so.

use std::io::Write;

use trace_format::{CollectSink, ReadOptions, TimeBase, TraceReader};

const BASE: i64 = 1_711_964_646_000_000_000;

fn late_base_trace() -> String {
    format!(
        r#"{{"schemaVersion": 1, "traceEvents": [
            {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4458676388068.751, "dur": 1.5,
              "args": {{"note": "\"baseTimeNanoseconds\": 1"}}}}
        ], "INFO": ["log"], "traceName": "t.json", "displayTimeUnit": "ms", "baseTimeNanoseconds": {BASE}}}"#
    )
}

#[test]
fn base_time_after_events_is_found_by_prescan() {
    let text = late_base_trace();
    let mut sink = CollectSink::default();
    let report = TraceReader::from_slice("late.json", text.as_bytes())
        .read(&mut sink)
        .unwrap();
    assert_eq!(report.time_base, TimeBase::Prescan(BASE));
    assert_eq!(sink.events[0].ts_ns, Some(4_458_676_388_068_751 + BASE));
    assert_eq!(sink.events[0].dur_ns, Some(1_500));
    // The header already carries the trailing keys found by the pre-scan.
    assert_eq!(sink.header.base_time_ns(), Some(BASE));
    assert_eq!(sink.header.trace_name().as_deref(), Some("t.json"));
    // The final metadata has each trailing key once.
    let keys: Vec<_> = sink.meta.entries().iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "schemaVersion",
            "INFO",
            "traceName",
            "displayTimeUnit",
            "baseTimeNanoseconds"
        ]
    );
}

#[test]
fn files_are_prescanned_too_plain_and_gzip() {
    let text = late_base_trace();
    let mut plain = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    plain.write_all(text.as_bytes()).unwrap();
    let mut gz = tempfile::Builder::new()
        .suffix(".json.gz")
        .tempfile()
        .unwrap();
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(text.as_bytes()).unwrap();
    gz.write_all(&encoder.finish().unwrap()).unwrap();
    for path in [plain.path(), gz.path()] {
        let mut sink = CollectSink::default();
        let report = TraceReader::open(path).read(&mut sink).unwrap();
        assert_eq!(
            report.time_base,
            TimeBase::Prescan(BASE),
            "{}",
            path.display()
        );
        assert_eq!(sink.events[0].ts_ns, Some(4_458_676_388_068_751 + BASE));
    }
}

#[test]
fn a_one_shot_reader_reports_the_base_it_could_not_apply() {
    let text = late_base_trace();
    let mut sink = CollectSink::default();
    let report = TraceReader::from_reader("stdin", text.as_bytes())
        .read(&mut sink)
        .unwrap();
    assert_eq!(report.time_base, TimeBase::LateNotApplied(BASE));
    assert_eq!(sink.events[0].ts_ns, Some(4_458_676_388_068_751));

    let mut sink = CollectSink::default();
    let options = ReadOptions::default().with_prescan_base_time(false);
    let report = TraceReader::from_slice("late.json", text.as_bytes())
        .options(options)
        .read(&mut sink)
        .unwrap();
    assert_eq!(report.time_base, TimeBase::LateNotApplied(BASE));
}

#[test]
fn base_before_events_and_no_base_at_all() {
    let text = format!(
        r#"{{"baseTimeNanoseconds": {BASE}, "traceEvents": [{{"ph": "i", "s": "t", "ts": 0.001}}]}}"#
    );
    let mut sink = CollectSink::default();
    let report = TraceReader::from_reader("r", text.as_bytes())
        .read(&mut sink)
        .unwrap();
    assert_eq!(report.time_base, TimeBase::Header(BASE));
    assert_eq!(sink.events[0].ts_ns, Some(BASE + 1));

    let text = r#"{"traceEvents": [{"ph": "X", "ts": 1661938466265032, "dur": 25}]}"#;
    let mut sink = CollectSink::default();
    let report = TraceReader::from_slice("abs", text.as_bytes())
        .read(&mut sink)
        .unwrap();
    assert_eq!(report.time_base, TimeBase::Absolute);
    assert_eq!(sink.events[0].ts_ns, Some(1_661_938_466_265_032_000));
}
