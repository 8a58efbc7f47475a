//! Invalid UTF-8 gives `InvalidUtf8` at the offending byte; lenient mode skips that event.

use trace_format::{CollectSink, ReadError, TraceReader};

fn trace_with_bad_byte() -> (Vec<u8>, usize) {
    let mut text =
        br#"{"traceEvents": [{"ph": "X", "name": "ok", "ts": 1}, {"ph": "X", "name": "bad"#
            .to_vec();
    let at = text.len();
    text.push(0xFF);
    text.extend_from_slice(br#"", "ts": 2}, {"ph": "X", "name": "after", "ts": 3}]}"#);
    (text, at)
}

#[test]
fn invalid_utf8_is_reported_with_offset() {
    let (text, at) = trace_with_bad_byte();
    let err = TraceReader::from_slice("bin.json", &text)
        .read(&mut CollectSink::default())
        .unwrap_err();
    let ReadError::InvalidUtf8 { at: loc } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(loc.byte_offset, at as u64, "{err}");
    assert_eq!(loc.event_index, Some(1));
}

#[test]
fn lenient_mode_skips_the_event_with_invalid_utf8() {
    let (text, _) = trace_with_bad_byte();
    let mut sink = CollectSink::default();
    let report = TraceReader::from_slice("bin.json", &text)
        .lenient(true)
        .read(&mut sink)
        .unwrap();
    let names: Vec<_> = sink.events.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["ok", "after"]);
    assert_eq!(report.events_skipped, 1);
    assert!(report.damage.is_none());
    assert!(matches!(
        report.skipped_examples[0],
        ReadError::InvalidUtf8 { .. }
    ));
}
