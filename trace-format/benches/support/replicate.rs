//! Makes a large trace from a real one: its events repeated with shifted times, ids and
//! step numbers until the output reaches a size. Shared by `examples/make_large_trace.rs`
//! and the criterion bench.
//!
//! Each copy looks like more of the same profile, not like the same events again: flow
//! ids, the id args that join events (`correlation`, `External id`, `Record function id`,
//! `Ev Idx`, `Sequence number`) and `ProfilerStep#N` numbers are offset per copy, so a
//! correlation id still names one launch and its kernel, as in a real trace (a copy
//! that kept them would pair every launch with every kernel of its id, which no
//! profiler writes and which HTA refuses).

use std::io::{self, Write};
use std::path::Path;

use std::borrow::Cow;

use trace_format::{ArgValue, Args, CollectSink, Event, Ident, Phase, TraceReader, TraceWriter};

/// Integer args that identify events and join them; each copy offsets them.
const ID_ARGS: [&str; 5] = [
    "correlation",
    "External id",
    "Record function id",
    "Ev Idx",
    "Sequence number",
];

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
/// JSON are written. Copy k is shifted by k × (the trace's span + 1 ms), its numeric
/// flow ids and [`ID_ARGS`] by k × (largest value + 1) and its `ProfilerStep#N` by
/// k × (the number of step numbers); `M` events are written once and
/// `Record Window End` once, at the end. Returns the number of events written and the
/// output.
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
    let max_id = |key: &str| {
        events
            .iter()
            .filter_map(|e| e.args.as_ref()?.get_i64(key))
            .max()
            .unwrap_or(0)
    };
    let id_strides: Vec<(&str, i64)> = ID_ARGS.iter().map(|&k| (k, max_id(k) + 1)).collect();
    let steps: Vec<i64> = events
        .iter()
        .filter_map(|e| step_number(e.name()))
        .collect();
    let step_stride = match (steps.iter().min(), steps.iter().max()) {
        (Some(lo), Some(hi)) => hi - lo + 1,
        _ => 0,
    };
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
            if copy > 0 {
                shift_ids(&mut shifted, copy, &id_strides, step_stride);
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

/// `ProfilerStep#N` → N.
fn step_number(name: &str) -> Option<i64> {
    name.strip_prefix("ProfilerStep#")?.parse().ok()
}

/// Offsets copy `copy`'s id args and step number.
fn shift_ids(event: &mut Event<'static>, copy: i64, id_strides: &[(&str, i64)], step_stride: i64) {
    if let Some(step) = step_number(event.name()) {
        event.name = Some(Cow::Owned(format!(
            "ProfilerStep#{}",
            step + copy * step_stride
        )));
    }
    let Some(args) = &event.args else { return };
    if !id_strides.iter().any(|(key, _)| args.get(key).is_some()) {
        return;
    }
    let mut shifted = Args::new();
    for (key, value) in args.iter() {
        let stride = id_strides.iter().find(|(k, _)| *k == key).map(|s| s.1);
        let value = match (stride, value) {
            // Negative ids (−1: none) stay as they are.
            (Some(stride), ArgValue::Int(id)) if id >= 0 => ArgValue::Int(id + copy * stride),
            (_, value) => value,
        };
        shifted.push(key.into_owned(), value.into_owned());
    }
    event.args = Some(shifted);
}

fn written<W: Write>(writer: &TraceWriter<Counting<W>>) -> u64 {
    writer.output().bytes
}
