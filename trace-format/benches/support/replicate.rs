//! Makes a large trace from a real one: its events repeated with shifted times and flow
//! ids until the output reaches a size. Shared by `examples/make_large_trace.rs` and the
//! criterion bench.

use std::io::{self, Write};
use std::path::Path;

use trace_format::{CollectSink, Event, Ident, Phase, TraceReader, TraceWriter};

/// Counts bytes on their way to `inner`.
pub struct Counting<W> {
    pub inner: W,
    pub bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes copies of the events of `input` into `out` until about `target_bytes` bytes of
/// JSON are written. Copy k is shifted by k × (the trace's span + 1 ms) and its numeric
/// flow ids by k × (largest id + 1); `M` events are written once and `Record Window End`
/// once, at the end. Returns the number of events written and the output.
pub fn replicate<W: Write>(
    input: &Path,
    out: W,
    target_bytes: u64,
) -> io::Result<(u64, Counting<W>)> {
    let mut source = CollectSink::default();
    TraceReader::open(input)
        .read(&mut source)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    let events: Vec<&Event<'static>> = source
        .events
        .iter()
        .filter(|e| !e.is_record_window_end())
        .collect();
    let first = events.iter().filter_map(|e| e.ts_ns).min().unwrap_or(0);
    let last = events.iter().filter_map(|e| e.end_ns()).max().unwrap_or(0);
    let span = last - first + 1_000_000;
    let max_flow = events
        .iter()
        .filter_map(|e| e.flow_id.as_ref().and_then(Ident::as_i64))
        .max()
        .unwrap_or(0);
    let mut writer = TraceWriter::new(
        Counting {
            inner: out,
            bytes: 0,
        },
        &source.meta,
    )?;
    let mut copy = 0i64;
    'outer: loop {
        for event in &events {
            if copy > 0 && event.phase == Phase::Metadata {
                continue;
            }
            let mut shifted = (*event).clone();
            shifted.ts_ns = shifted.ts_ns.map(|t| t + copy * span);
            if let Some(Ident::Num(id)) = &mut shifted.flow_id {
                *id += copy * (max_flow + 1);
            }
            writer.write_event(&shifted)?;
            if writer.events_written() % 1024 == 0 && written(&writer) >= target_bytes {
                break 'outer;
            }
        }
        copy += 1;
    }
    let events_written = writer.events_written() + 1;
    Ok((events_written, writer.finish()?))
}

fn written<W: Write>(writer: &TraceWriter<Counting<W>>) -> u64 {
    writer.output().bytes
}
