//! The reader refills its buffer whenever a value crosses the end of what was read so far.
//! Feeding the input a few bytes at a time puts a boundary inside every kind of token;
//! the events must be exactly those read from one slice.

#[path = "support/shared.rs"]
mod shared;

use std::io::Read;

use trace_format::{CollectSink, TraceReader};

/// A reader that hands out at most 1..=13 bytes per call, varying.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.step = self.step % 13 + 1;
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn chunk_boundaries_do_not_change_what_is_read() {
    let dir = shared::traces_dir();
    for name in [
        "torch-2.15/gloo_2rank-rank0.pt.trace.json.gz",
        "hta/amd_mi250_train.json.gz",
    ] {
        let text = shared::gunzip(&dir.join(name));
        let mut whole = CollectSink::default();
        TraceReader::from_slice(name, &text)
            .read(&mut whole)
            .unwrap();
        let mut trickled = CollectSink::default();
        let report = TraceReader::from_reader(
            name,
            Trickle {
                data: &text,
                step: 0,
            },
        )
        .read(&mut trickled)
        .unwrap();
        assert_eq!(
            report.bytes_read,
            text.len() as u64 - trailing_ws(&text),
            "{name}"
        );
        if whole.header.base_time_ns() == trickled.header.base_time_ns() {
            assert_eq!(whole.events, trickled.events, "{name}");
        } else {
            // amd_mi250 states its base after traceEvents; a one-shot reader cannot
            // pre-scan, so times stay relative and the report says so.
            let base = report.meta.base_time_ns().unwrap();
            assert_eq!(
                report.time_base,
                trace_format::TimeBase::LateNotApplied(base)
            );
            for (a, b) in whole.events.iter().zip(&trickled.events) {
                assert_eq!(a.ts_ns, b.ts_ns.map(|t| t + base), "{name}");
            }
        }
        assert_eq!(whole.meta, trickled.meta, "{name}");
    }
}

fn trailing_ws(text: &[u8]) -> u64 {
    text.iter()
        .rev()
        .take_while(|b| b.is_ascii_whitespace())
        .count() as u64
}
