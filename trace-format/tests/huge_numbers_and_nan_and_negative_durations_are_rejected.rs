//! Numbers that do not fit (`ts` past i64 nanoseconds), non-finite numbers (`NaN`, which
//! Python's json writes) and negative durations give `BadNumber`; big integers in args are
//! kept exactly instead.

use trace_format::{ArgValue, CollectSink, ReadError, TraceReader};

fn read(text: &str) -> Result<CollectSink, ReadError> {
    let mut sink = CollectSink::default();
    TraceReader::from_slice("n.json", text.as_bytes())
        .read(&mut sink)
        .map(|_| sink)
}

fn bad_number(event: &str) -> (String, &'static str, u64) {
    let text = format!(r#"{{"traceEvents": [{event}]}}"#);
    match read(&text) {
        Err(ReadError::BadNumber {
            field, problem, at, ..
        }) => {
            assert_eq!(at.event_index, Some(0));
            (field, problem, at.byte_offset)
        }
        other => panic!("{event}: expected BadNumber, got {:?}", other.err()),
    }
}

#[test]
fn huge_numbers_are_out_of_range() {
    for event in [
        r#"{"ph": "X", "ts": 1e300}"#,
        r#"{"ph": "X", "ts": 99999999999999999999}"#,
        r#"{"ph": "X", "ts": 1, "dur": 1e17}"#,
        r#"{"ph": "X", "pid": 99999999999999999999}"#,
    ] {
        let (field, problem, _) = bad_number(event);
        assert!(["ts", "dur", "pid"].contains(&field.as_str()), "{event}");
        assert!(problem.contains("out of range"), "{event}: {problem}");
    }
}

#[test]
fn relative_ts_overflowing_with_the_base_is_out_of_range() {
    let text =
        r#"{"baseTimeNanoseconds": 9000000000000000000, "traceEvents": [{"ph": "X", "ts": 1e15}]}"#;
    assert!(matches!(read(text), Err(ReadError::BadNumber { .. })));
}

#[test]
fn nan_and_infinity_are_not_finite() {
    for (event, token) in [
        (r#"{"ph": "X", "ts": 1, "dur": NaN}"#, "NaN"),
        (r#"{"ph": "X", "ts": Infinity}"#, "Infinity"),
        (r#"{"ph": "X", "ts": -Infinity}"#, "-Infinity"),
    ] {
        let (field, problem, offset) = bad_number(event);
        assert!(problem.contains("not a finite number"), "{event}");
        assert!(field == "dur" || field == "ts", "{event}: {field}");
        let expected = r#"{"traceEvents": ["#.len() + event.find(token).unwrap();
        assert_eq!(offset, expected as u64, "{event}");
    }
}

#[test]
fn negative_durations_are_rejected() {
    let (field, problem, _) = bad_number(r#"{"ph": "X", "ts": 1, "dur": -0.001}"#);
    assert_eq!((field.as_str(), problem), ("dur", "negative duration"));
}

#[test]
fn big_integers_and_floats_in_args_are_kept_exactly() {
    let text = r#"{"traceEvents": [{"ph": "i", "ts": 1, "args": {"Addr": 18446744073709551615,
        "wide": 123456789012345678901234567890, "bw": 1.2345678901234567, "neg": -9223372036854775808}}]}"#;
    let sink = read(text).unwrap();
    let event = &sink.events[0];
    assert_eq!(event.arg("Addr"), Some(ArgValue::UInt(u64::MAX)));
    assert_eq!(
        event.arg("wide"),
        Some(ArgValue::Number("123456789012345678901234567890".into()))
    );
    assert_eq!(event.arg("bw"), Some(ArgValue::Float(1.2345678901234567)));
    assert_eq!(event.arg("neg"), Some(ArgValue::Int(i64::MIN)));
}
