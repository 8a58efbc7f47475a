//! Fuzzes the trace reader: strict and lenient reads of arbitrary bytes must never panic,
//! and whatever a strict read accepts must survive write → read unchanged.

#![no_main]

use std::ops::ControlFlow;

use libfuzzer_sys::fuzz_target;
use trace_format::{
    CollectSink, Event, ReadOptions, TraceReader, TraceSink, TraceWriter, WriteOptions,
};

/// Touches every accessor of each event (args decoding included).
struct Touch(u64);

impl TraceSink for Touch {
    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        self.0 = self.0.wrapping_add(index);
        if let Some(args) = &event.args {
            for (key, value) in args.iter() {
                self.0 = self.0.wrapping_add(key.len() as u64);
                let _ = (value.as_f64(), value.as_i64(), value.as_str());
            }
        }
        let _ = (event.normalized_category(), event.end_ns(), event.flow_end(), event.name());
        ControlFlow::Continue(())
    }
}

fuzz_target!(|data: &[u8]| {
    // Small value limit so the "too large" path is reachable.
    let options = ReadOptions::default().with_max_value_bytes(4096);
    let _ = TraceReader::from_slice("fuzz", data).options(options.clone()).read(&mut Touch(0));
    let lenient = TraceReader::from_slice("fuzz", data)
        .options(options.clone().with_lenient(true))
        .read(&mut Touch(0));
    assert!(lenient.is_ok(), "lenient reads never fail");

    let mut first = CollectSink::default();
    let Ok(report) = TraceReader::from_slice("fuzz", data).read(&mut first) else { return };
    if let Some(meta) = report.meta.entries().first() {
        let _ = (report.meta.rank(), report.meta.device_properties(), meta.value.to_value());
    }
    let options = WriteOptions::default().with_record_window_end(false);
    let mut writer = TraceWriter::with_options(Vec::new(), &report.meta, options).unwrap();
    for event in &first.events {
        writer.write_event(event).unwrap();
    }
    let written = writer.finish().unwrap();
    let mut second = CollectSink::default();
    if let Err(e) = TraceReader::from_slice("rewritten", &written).read(&mut second) {
        panic!("rewritten trace does not read: {e}\n{}", String::from_utf8_lossy(&written));
    }
    assert_eq!(first.events, second.events, "{}", String::from_utf8_lossy(&written));
});
