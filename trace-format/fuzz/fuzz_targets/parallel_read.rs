//! Fuzzes `TraceReader::read_parallel` against `TraceReader::read`: on arbitrary bytes,
//! strict and lenient, with batches of 1 to 64 bytes (so batches, put-backs and the
//! sequential step meet every kind of damage), both reads must give the same events,
//! report and error text, and neither may panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use trace_format::{CollectSink, ReadError, ReadOptions, ReadReport, TraceReader};

fn summary(result: &Result<ReadReport, ReadError>, sink: &CollectSink) -> String {
    match result {
        Err(e) => format!("error: {e} after {} events", sink.events.len()),
        Ok(r) => format!(
            "delivered {} skipped {} {:?} damage {:?} stopped {} bytes {} base {:?} meta {:?}",
            r.events_delivered,
            r.events_skipped,
            r.skipped_examples.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            r.damage.as_ref().map(|e| e.to_string()),
            r.stopped_by_sink,
            r.bytes_read,
            r.time_base,
            r.meta,
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, data)) = data.split_first() else { return };
    let batch = usize::from(first % 64) + 1;
    for lenient in [false, true] {
        // Small value limit so the "too large" path is reachable.
        let options = ReadOptions::default()
            .with_max_value_bytes(4096)
            .with_batch_bytes(batch)
            .with_lenient(lenient);
        let mut seq = CollectSink::default();
        let seq_result = TraceReader::from_slice("fuzz", data)
            .options(options.clone())
            .read(&mut seq);
        let mut par = CollectSink::default();
        let par_result = TraceReader::from_slice("fuzz", data)
            .options(options)
            .read_parallel(&mut par, 2);
        assert_eq!(summary(&seq_result, &seq), summary(&par_result, &par), "lenient {lenient}");
        assert_eq!(seq.events, par.events, "lenient {lenient}");
        assert_eq!((seq.header, seq.meta), (par.header, par.meta), "lenient {lenient}");
    }
});
