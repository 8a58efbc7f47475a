//! Broken JSON gives `Syntax` with the byte offset of the fault and the event index.

use trace_format::{CollectSink, ReadError, TraceReader};

fn read_err(text: &str) -> ReadError {
    TraceReader::from_slice("bad.json", text.as_bytes())
        .read(&mut CollectSink::default())
        .unwrap_err()
}

#[test]
fn invalid_json_reports_position() {
    let text = r#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": 2,, "dur": 1}]}"#;
    let err = read_err(text);
    let ReadError::Syntax { at, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(at.byte_offset, text.find(",,").unwrap() as u64 + 1, "{err}");
    assert_eq!(at.event_index, Some(1));
}

#[test]
fn missing_comma_between_events_is_reported_at_the_second_event() {
    let text = r#"{"traceEvents": [{"ph": "X", "ts": 1} {"ph": "X", "ts": 2}]}"#;
    let err = read_err(text);
    let ReadError::Syntax { at, message } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(at.byte_offset, text.find(" {").unwrap() as u64 + 1, "{err}");
    assert_eq!(at.event_index, Some(1));
    assert!(message.contains("`,` or `]`"), "{message}");
}

#[test]
fn garbage_is_not_a_trace() {
    for text in ["hello", "42", "\"x\"", ""] {
        let err = read_err(text);
        assert!(
            matches!(err, ReadError::Syntax { .. } | ReadError::Truncated { .. }),
            "{text}: {err:?}"
        );
        assert_eq!(err.location().event_index, None);
    }
}

#[test]
fn trailing_garbage_after_the_trace_is_an_error_but_lenient_keeps_the_events() {
    let text = r#"{"traceEvents": [{"ph": "X", "ts": 1}]} extra"#;
    let err = read_err(text);
    assert_eq!(
        err.location().byte_offset,
        text.find("extra").unwrap() as u64
    );
    let mut sink = CollectSink::default();
    let report = TraceReader::from_slice("bad.json", text.as_bytes())
        .lenient(true)
        .read(&mut sink)
        .unwrap();
    assert_eq!(sink.events.len(), 1);
    assert!(report.damage.is_some());
}

#[test]
fn a_bare_event_array_is_accepted() {
    let mut sink = CollectSink::default();
    let text = br#"[{"ph": "X", "ts": 1, "dur": 2}, {"ph": "i", "ts": 3}]"#;
    TraceReader::from_slice("array.json", text)
        .read(&mut sink)
        .unwrap();
    assert_eq!(sink.events.len(), 2);
}

#[test]
fn a_trailing_comma_in_the_event_array_is_a_syntax_error() {
    let text = r#"{"traceEvents": [{"ph": "X", "ts": 1}, ]}"#;
    let err = read_err(text);
    let ReadError::Syntax { at, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(at.byte_offset, text.find("]}").unwrap() as u64);
    assert_eq!(at.event_index, Some(1));
}
