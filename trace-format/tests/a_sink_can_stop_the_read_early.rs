//! A sink returning `ControlFlow::Break` stops the read; nothing after is delivered.

use std::ops::ControlFlow;

use trace_format::{from_fn, TraceReader};

#[test]
fn a_sink_can_stop_the_read_early() {
    let text =
        br#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": 2}, {"ph": "X", "ts": 3}]}"#;
    let mut seen = Vec::new();
    let mut sink = from_fn(|index, _| {
        seen.push(index);
        if index == 1 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    let report = TraceReader::from_slice("t", text).read(&mut sink).unwrap();
    assert!(report.stopped_by_sink);
    assert_eq!(report.events_delivered, 2);
    assert_eq!(seen, [0, 1]);
}
