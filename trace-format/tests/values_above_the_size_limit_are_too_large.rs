//! One value (event or metadata) larger than `max_value_bytes` gives `TooLarge` instead
//! of growing the buffer without bound; smaller values read normally.

use trace_format::{CollectSink, ReadError, ReadOptions, TraceReader};

fn trace_with_name_of(len: usize) -> String {
    format!(
        r#"{{"traceEvents": [{{"ph": "X", "ts": 1}}, {{"ph": "X", "name": "{}", "ts": 2}}]}}"#,
        "n".repeat(len)
    )
}

#[test]
fn values_above_the_size_limit_are_too_large() {
    let options = ReadOptions::default().with_max_value_bytes(4096);
    let text = trace_with_name_of(10_000);
    for slice in [true, false] {
        let reader = if slice {
            TraceReader::from_slice("big.json", text.as_bytes())
        } else {
            TraceReader::from_reader("big.json", text.as_bytes())
        };
        let err = reader
            .options(options.clone())
            .read(&mut CollectSink::default())
            .unwrap_err();
        let ReadError::TooLarge { at, limit_bytes } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(*limit_bytes, 4096);
        assert_eq!(at.event_index, Some(1), "{err}");
    }
    let text = trace_with_name_of(2_000);
    let mut sink = CollectSink::default();
    TraceReader::from_reader("ok.json", text.as_bytes())
        .options(options)
        .read(&mut sink)
        .unwrap();
    assert_eq!(sink.events[1].name().len(), 2_000);
}
