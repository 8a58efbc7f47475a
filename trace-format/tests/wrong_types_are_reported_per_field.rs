//! A field of the wrong JSON type gives `WrongType` naming the field, its offset and the
//! event; lenient mode skips that event and goes on.

use trace_format::{CollectSink, ReadError, TraceReader};

fn first_error(event: &str) -> (ReadError, String) {
    let text = format!(r#"{{"traceEvents": [{{"ph": "X", "ts": 1}}, {event}]}}"#);
    let err = TraceReader::from_slice("types.json", text.as_bytes())
        .read(&mut CollectSink::default())
        .unwrap_err();
    (err, text)
}

#[test]
fn wrong_types_are_reported_per_field() {
    let cases = [
        (r#"{"ph": "X", "ts": "12"}"#, "ts", r#""12""#),
        (r#"{"ph": "X", "ts": 1, "dur": true}"#, "dur", "true"),
        (r#"{"ph": "X", "pid": [1]}"#, "pid", "[1]"),
        (r#"{"ph": "X", "tid": 1.5}"#, "tid", "1.5"),
        (r#"{"ph": "X", "name": 7}"#, "name", "7"),
        (r#"{"ph": "X", "cat": null}"#, "cat", "null"),
        (r#"{"ph": "X", "args": [1, 2]}"#, "args", "[1, 2]"),
        (r#"{"ph": 1}"#, "ph", "1"),
        (r#"{"name": "no phase"}"#, "ph", ""),
        ("42", "traceEvents[]", "42"),
    ];
    for (event, field, value) in cases {
        let (err, text) = first_error(event);
        let ReadError::WrongType { at, field: got, .. } = &err else {
            panic!("{event}: {err:?}")
        };
        assert_eq!(got, field, "{event}");
        assert_eq!(at.event_index, Some(1), "{event}");
        let expected_offset = if value.is_empty() {
            text.find(event).unwrap()
        } else {
            text.find(event).unwrap() + event.find(value).unwrap()
        };
        assert_eq!(at.byte_offset, expected_offset as u64, "{event}: {err}");
    }
}

#[test]
fn trace_events_must_be_an_array() {
    let err = TraceReader::from_slice("t.json", br#"{"traceEvents": {"ph": "X"}}"#)
        .read(&mut CollectSink::default())
        .unwrap_err();
    assert!(
        matches!(err, ReadError::WrongType { ref field, .. } if field == "traceEvents"),
        "{err:?}"
    );
}

#[test]
fn lenient_mode_skips_events_with_wrong_types_and_keeps_examples() {
    let text = br#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": "x"}, 5,
        {"ph": "X", "ts": 3}], "traceName": "t"}"#;
    let mut sink = CollectSink::default();
    let report = TraceReader::from_slice("t.json", text)
        .lenient(true)
        .read(&mut sink)
        .unwrap();
    assert_eq!(sink.events.len(), 2);
    assert_eq!(sink.events[1].ts_ns, Some(3_000));
    assert_eq!(report.events_skipped, 2);
    assert_eq!(report.skipped_examples.len(), 2);
    assert!(report.damage.is_none(), "the structure survived");
    assert_eq!(report.meta.trace_name().as_deref(), Some("t"));
    assert!(!report.is_clean());
}
