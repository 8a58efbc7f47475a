//! `TraceReader::read_parallel` gives what `TraceReader::read` gives: the same events
//! (indices, contents), header and trailer metadata, report, lenient skips and errors
//! (same text: file, byte offset, event index), on every shared real trace and on
//! damaged inputs cut or corrupted at every position.

#[path = "support/shared.rs"]
mod shared;

use std::io::Write;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};

use trace_format::{
    CollectSink, Event, EventMapper, EventText, ParallelSink, ReadError, ReadOptions, ReadReport,
    TextSpan, TraceMeta, TraceReader,
};

/// Everything a read returns, as text, to compare two reads.
fn summary(result: &Result<ReadReport, ReadError>, sink: &CollectSink) -> String {
    match result {
        Err(e) => format!("error: {e}\nevents before it: {}", sink.events.len()),
        Ok(r) => {
            let examples: Vec<String> = r.skipped_examples.iter().map(|e| e.to_string()).collect();
            format!(
                "delivered {} skipped {} examples {examples:?} damage {:?} stopped {} \
                 bytes {} gzip {} time base {:?}\nmeta {:?}",
                r.events_delivered,
                r.events_skipped,
                r.damage.as_ref().map(|e| e.to_string()),
                r.stopped_by_sink,
                r.bytes_read,
                r.gzip,
                r.time_base,
                r.meta,
            )
        }
    }
}

/// A sequential read's results.
struct Reference {
    summary: String,
    sink: CollectSink,
}

fn sequential(make: impl Fn() -> TraceReader<'static>) -> Reference {
    let mut sink = CollectSink::default();
    let result = make().read(&mut sink);
    Reference {
        summary: summary(&result, &sink),
        sink,
    }
}

/// Asserts that a parallel read of `reader` gives what `want` holds.
fn assert_matches(what: &str, want: &Reference, reader: TraceReader<'static>, threads: usize) {
    let mut par = CollectSink::default();
    let par_result = reader.read_parallel(&mut par, threads);
    let seq = &want.sink;
    assert_eq!(
        want.summary,
        summary(&par_result, &par),
        "{what}: report or error differs"
    );
    assert_eq!(seq.events.len(), par.events.len(), "{what}: event count");
    if let Some(k) = (0..seq.events.len()).find(|&k| seq.events[k] != par.events[k]) {
        panic!(
            "{what}: event #{k} differs\nsequential {:?}\nparallel   {:?}",
            seq.events[k], par.events[k]
        );
    }
    assert_eq!(seq.header, par.header, "{what}: header metadata");
    assert_eq!(seq.meta, par.meta, "{what}: trailer metadata");
}

/// Reads `make()` sequentially and in parallel and asserts both give the same results,
/// and that spans of event texts read back in `consume_in`.
fn assert_same(what: &str, make: impl Fn() -> TraceReader<'static>, threads: usize) {
    let want = sequential(&make);
    assert_matches(what, &want, make(), threads);
    assert_spans_read_back(what, &want, make(), threads);
}

/// Keeps each event's name as a span of the event's text (when the name is in it) and
/// checks, as the item is consumed, that the span reads back the name: the reader gives
/// `consume_in` the text it gave `map_in`, whichever path the event took (a worker, the
/// calling thread, the sequential step after a rejected event).
#[derive(Default)]
struct SpanCheck {
    consumed: u64,
    spans: u64,
}

struct SpanMapper;

impl EventMapper for SpanMapper {
    type Item = (Option<TextSpan>, String);
    fn map(&self, _: u64, _: &Event<'_>) -> Option<Self::Item> {
        panic!("the reader calls map_in")
    }
    fn map_in(&self, _: u64, event: &Event<'_>, text: EventText<'_>) -> Option<Self::Item> {
        Some((text.span_of(event.name()), event.name().to_owned()))
    }
}

impl ParallelSink for SpanCheck {
    type Item = (Option<TextSpan>, String);
    type Mapper = SpanMapper;
    fn mapper(&self) -> SpanMapper {
        SpanMapper
    }
    fn consume(&mut self, _: u64, _: Self::Item) -> ControlFlow<()> {
        panic!("the reader calls consume_in")
    }
    fn consume_in(
        &mut self,
        index: u64,
        (span, name): Self::Item,
        text: EventText<'_>,
    ) -> ControlFlow<()> {
        if let Some(span) = span {
            assert_eq!(text.get(span), Some(&*name), "event #{index}");
            self.spans += 1;
        }
        self.consumed += 1;
        ControlFlow::Continue(())
    }
}

/// A parallel read of `reader` into [`SpanCheck`]: every event `want` holds is consumed
/// and its name's span reads back.
fn assert_spans_read_back(
    what: &str,
    want: &Reference,
    reader: TraceReader<'static>,
    threads: usize,
) {
    let mut check = SpanCheck::default();
    let _ = reader.read_parallel(&mut check, threads);
    assert_eq!(
        check.consumed,
        want.sink.events.len() as u64,
        "{what}: events consumed"
    );
    let named = want
        .sink
        .events
        .iter()
        .filter(|e| !e.name().is_empty())
        .count() as u64;
    // Names with escapes are unescaped copies, not in the text.
    assert!(check.spans <= named, "{what}");
}

fn leak(bytes: Vec<u8>) -> &'static [u8] {
    Box::leak(bytes.into_boxed_slice())
}

#[test]
fn every_shared_trace_reads_the_same_in_parallel() {
    let dir = shared::traces_dir();
    let traces = shared::all_traces(&dir);
    assert!(!traces.is_empty(), "no traces in {}", dir.display());
    for path in &traces {
        let name = path.display().to_string();
        let file = || TraceReader::open(path);
        let want = sequential(file);
        assert!(want.sink.events.len() > 1, "{name}: {}", want.summary);
        // The file itself (gzip): default batches on 2 threads, small ones on 1 and 3.
        assert_matches(&format!("{name} (2 threads)"), &want, file(), 2);
        let mut check = SpanCheck::default();
        file().read_parallel(&mut check, 2).expect("read");
        assert!(check.spans > 0, "{name}: no name was kept as a span");
        let text = leak(shared::gunzip(path));
        // The largest traces once only (debug builds parse them slowly).
        if text.len() < (8 << 20) {
            let small = ReadOptions::default().with_batch_bytes(16 << 10);
            assert_matches(
                &format!("{name} (16 KiB batches, 1 thread)"),
                &want,
                file().options(small.clone()),
                1,
            );
            // The JSON text in memory and as a one-shot reader, against sequential
            // reads of the same (the report says `gzip: false`; one-shot readers have
            // no pre-scan).
            let options = ReadOptions::default().with_batch_bytes(4 << 10);
            assert_same(
                &format!("{name} (plain, in memory, 3 threads)"),
                || TraceReader::from_slice(&name, text).options(options.clone()),
                3,
            );
            assert_same(
                &format!("{name} (one-shot reader)"),
                || TraceReader::from_reader(&name, text).options(small.clone()),
                2,
            );
        }
    }
}

/// A small trace with most shapes an event takes, metadata before and after the array.
fn small_trace() -> String {
    let mut text = String::from(
        "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"n\"}],\n \
         \"traceEvents\": [\n",
    );
    for i in 0..24 {
        let event = match i % 6 {
            0 => format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "k{i}", "pid": 0, "tid": 7, "ts": {i}.250, "dur": 1.5, "args": {{"correlation": {i}, "device": 0}}}}"#
            ),
            1 => format!(
                r#"{{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": "x", "ts": {i}, "args": {{"Bytes": -{i}}}}}"#
            ),
            2 => format!(
                r#"{{"ph": "s", "id": {i}, "pid": 1, "tid": 2, "ts": {i}.5, "cat": "ac2g", "name": "ac2g"}}"#
            ),
            3 => format!(
                r#"{{"ph": "f", "id": {i}, "pid": 0, "tid": 7, "ts": {i}.5, "cat": "ac2g", "name": "ac2g", "bp": "e"}}"#
            ),
            4 => format!(
                r#"{{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "ts": 0, "args": {{"name": "w\"{i}\u00e9"}}, "extra": [1, {{"a": null}}]}}"#
            ),
            _ => {
                format!(r#"{{"ph": "C", "name": "c", "pid": 1, "ts": {i}, "args": {{"v": 1e3}}}}"#)
            }
        };
        text.push_str("  ");
        text.push_str(&event);
        text.push_str(if i == 23 { "\n" } else { ",\n" });
    }
    text.push_str("], \"baseTimeNanoseconds\": 1000000000, \"traceName\": \"t\"}\n");
    text
}

fn assert_same_all_modes(what: &str, text: &'static [u8], batches: &[usize]) {
    for &batch in batches {
        for lenient in [false, true] {
            let options = ReadOptions::default()
                .with_batch_bytes(batch)
                .with_lenient(lenient);
            assert_same(
                &format!("{what} (batch {batch}, lenient {lenient})"),
                || TraceReader::from_slice("d.json", text).options(options.clone()),
                2,
            );
        }
    }
}

#[test]
fn cut_at_every_byte_the_errors_and_prefixes_are_the_same() {
    let full = small_trace().into_bytes();
    for cut in 0..full.len() {
        let text = leak(full[..cut].to_vec());
        assert_same_all_modes(&format!("cut at {cut}"), text, &[1, 150]);
    }
}

#[test]
fn damage_at_every_byte_gives_the_same_errors_and_skips() {
    let full = small_trace().into_bytes();
    let start = full.windows(3).position(|w| w == b"[\n ").unwrap();
    // Non-UTF-8, NaN, wrong types, broken structure, non-object elements.
    let replacements: [&[u8]; 8] = [b"\xFF", b"NaN", b"\"", b"}", b",", b"x", b"[]", b"1e999999"];
    for (r, replacement) in replacements.iter().enumerate() {
        for at in (start..full.len()).skip(r % 3).step_by(3) {
            let mut text = full[..at].to_vec();
            text.extend_from_slice(replacement);
            text.extend_from_slice(&full[at + 1..]);
            let what = format!(
                "byte {at} replaced by {:?}",
                String::from_utf8_lossy(replacement)
            );
            assert_same_all_modes(&what, leak(text), &[120]);
        }
    }
}

#[test]
fn chosen_damage_is_reported_the_same() {
    let cases: &[&str] = &[
        r#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": "2"}, {"ph": "X", "ts": 3}]}"#,
        r#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": NaN}, {"ph": "X", "ts": 3}]}"#,
        r#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "dur": -1}, {"ph": "X", "ts": 3}]}"#,
        r#"{"traceEvents": [{"ph": "X", "ts": 1}, 7, "s", [1, 2], {"ph": "X", "ts": 3}]}"#,
        r#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": 99999999999999999999}]}"#,
        r#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": 2,, }, {"ph": "X"}]}"#,
        r#"{"traceEvents": [{"ph": "X", "ts": 1} {"ph": "X", "ts": 2}]}"#,
        r#"{"traceEvents": [{"ph": "X", "ts": 1},, {"ph": "X", "ts": 2}]}"#,
        r#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ts": 2}, {"ph": 3}, {"ph": "X", "pid": 1.5}]}"#,
        r#"{"traceEvents": [{"ph": "X", "args": [1]}, {"ph": "X", "name": 5}], "x": 1}"#,
        r#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": 2}] trailing"#,
        r#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": 2}], "traceEvents": 5}"#,
        r#"[{"ph": "X", "ts": 1}, {"ph": "X", "ts": 2}, {"ph": "X", "ts": 3}]"#,
        r#"{"traceEvents": []}"#,
        r#"{"traceEvents": [ ]}"#,
        r#"{"baseTimeNanoseconds": 9223372036854775000, "traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": 9000000}]}"#,
    ];
    for text in cases {
        assert_same_all_modes(text, text.as_bytes(), &[1, 20, 1 << 20]);
    }
    let mut bad_utf8 = br#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "name": "b"#.to_vec();
    bad_utf8.push(0xC3);
    bad_utf8.extend_from_slice(br#"", "ts": 2}, {"ph": "X", "ts": 3}]}"#);
    assert_same_all_modes("bad UTF-8", leak(bad_utf8), &[1, 20]);
}

#[test]
fn values_over_the_size_limit_are_reported_the_same() {
    let big = format!(
        r#"{{"traceEvents": [{{"ph": "X", "ts": 1}}, {{"ph": "X", "name": "{}"}}, {{"ph": "X"}}]}}"#,
        "a".repeat(5000)
    );
    let text = leak(big.into_bytes());
    for lenient in [false, true] {
        let options = ReadOptions::default()
            .with_max_value_bytes(2048)
            .with_batch_bytes(16)
            .with_lenient(lenient);
        assert_same(
            &format!("too large, lenient {lenient}"),
            || TraceReader::from_reader("big.json", text).options(options.clone()),
            2,
        );
    }
}

fn gzipped(text: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(text).unwrap();
    encoder.finish().unwrap()
}

#[test]
fn corrupt_and_truncated_gzip_are_reported_the_same() {
    let mut text = String::from("{\"traceEvents\": [\n");
    for i in 0..30_000u64 {
        let name = format!("op_{}_{}", i, i.wrapping_mul(2_654_435_761) % 1_000_003);
        text.push_str(&format!(
            "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{name}\", \"pid\": 1, \"tid\": 1, \"ts\": {i}, \"dur\": 0.5}},\n"
        ));
    }
    text.push_str("{\"ph\": \"X\", \"ts\": 0}]}");
    let bytes = gzipped(text.as_bytes());
    let mut corrupt = bytes.clone();
    let middle = corrupt.len() / 2;
    for b in &mut corrupt[middle..middle + 64] {
        *b ^= 0x5A;
    }
    let truncated = bytes[..bytes.len() * 2 / 3].to_vec();
    for (what, bytes) in [("corrupt", corrupt), ("truncated", truncated)] {
        let mut file = tempfile::Builder::new()
            .suffix(".json.gz")
            .tempfile()
            .unwrap();
        file.write_all(&bytes).unwrap();
        for lenient in [false, true] {
            let options = ReadOptions::default()
                .with_batch_bytes(32 << 10)
                .with_lenient(lenient);
            assert_same(
                &format!("{what} gzip, lenient {lenient}"),
                || TraceReader::open(file.path()).options(options.clone()),
                2,
            );
        }
    }
}

/// Keeps `(index, name)` of events whose index is not a multiple of 3 and stops after
/// `stop_at`.
struct Picky {
    stop_at: u64,
    consumed: Vec<(u64, String)>,
    header: Option<TraceMeta>,
    trailer: Option<TraceMeta>,
    mapped: AtomicU64,
}

impl ParallelSink for Picky {
    type Item = String;
    type Mapper = fn(u64, &Event<'_>) -> Option<String>;
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.header = Some(meta.clone());
        ControlFlow::Continue(())
    }
    fn mapper(&self) -> Self::Mapper {
        self.mapped.fetch_add(1, Ordering::Relaxed);
        |index, event| (index % 3 != 0).then(|| event.name().to_owned())
    }
    fn consume(&mut self, index: u64, name: String) -> ControlFlow<()> {
        self.consumed.push((index, name));
        if index >= self.stop_at {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
    fn on_trailer(&mut self, meta: &TraceMeta) {
        self.trailer = Some(meta.clone());
    }
}

#[test]
fn mappers_drop_events_and_sinks_stop_the_read_as_in_a_sequential_read() {
    let text = leak(small_trace().into_bytes());
    for stop_at in [1, 2, 10, 22, u64::MAX] {
        for batch in [1, 40, 1 << 20] {
            let make = || {
                TraceReader::from_slice("p.json", text)
                    .options(ReadOptions::default().with_batch_bytes(batch))
            };
            let picky = || Picky {
                stop_at,
                consumed: Vec::new(),
                header: None,
                trailer: None,
                mapped: AtomicU64::new(0),
            };
            // Sequential reference: the same map and consume, inline.
            let mut seq = picky();
            let mapper = seq.mapper();
            let seq_report = make()
                .read(&mut trace_format::from_fn(
                    |index, event: &Event<'_>| match mapper(index, event) {
                        Some(name) => seq.consume(index, name),
                        None => ControlFlow::Continue(()),
                    },
                ))
                .unwrap();
            let mut par = picky();
            let par_report = make().read_parallel(&mut par, 2).unwrap();
            let what = format!("stop at {stop_at}, batch {batch}");
            assert_eq!(seq.consumed, par.consumed, "{what}");
            assert!(par.consumed.iter().all(|(i, _)| i % 3 != 0), "{what}");
            assert_eq!(
                (
                    seq_report.events_delivered,
                    seq_report.stopped_by_sink,
                    seq_report.bytes_read
                ),
                (
                    par_report.events_delivered,
                    par_report.stopped_by_sink,
                    par_report.bytes_read
                ),
                "{what}"
            );
            assert_eq!(par.mapped.load(Ordering::Relaxed), 1, "{what}: one mapper");
            assert!(par.header.is_some(), "{what}");
            assert_eq!(par.trailer.is_some(), stop_at == u64::MAX, "{what}");
        }
    }
}

/// A mapper that panics: the panic reaches the caller (no hang, no lost panic).
struct Panics;

impl ParallelSink for Panics {
    type Item = ();
    type Mapper = fn(u64, &Event<'_>) -> Option<()>;
    fn mapper(&self) -> Self::Mapper {
        |index, _| {
            assert!(index < 5, "mapper gave up at event {index}");
            Some(())
        }
    }
    fn consume(&mut self, _: u64, _: ()) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

// Every event from the 6th on panics, on whichever thread maps it; which of these
// panics reaches the caller first depends on timing (a worker's, or the calling
// thread's own when it decodes a queued batch), so the test asks for one of them.
#[test]
#[should_panic(expected = "mapper gave up at event")]
fn a_panicking_mapper_panics_the_read() {
    let text = leak(small_trace().into_bytes());
    let _ = TraceReader::from_slice("p.json", text)
        .options(ReadOptions::default().with_batch_bytes(30))
        .read_parallel(&mut Panics, 2);
}

#[test]
fn an_unclosed_event_before_megabytes_of_events_is_reported_the_same() {
    // The first event lacks its `}`: braces never balance again, so the scanner cannot
    // delimit it; the error must still be the sequential reader's (a syntax error at the
    // next event), also when the gzip stream breaks further on.
    let mut text = String::from(r#"{"traceEvents": [{"ph": "X", "ts": 1"#);
    for i in 0..60_000 {
        text.push_str(&format!(r#", {{"ph": "X", "name": "e{i}", "ts": {i}}}"#));
    }
    text.push_str("]}");
    let plain = leak(text.into_bytes());
    let gz = gzipped(plain);
    let cut_gz = leak(gz[..gz.len() / 2].to_vec());
    let gz = leak(gz);
    for (what, bytes) in [("plain", plain), ("gzip", gz), ("cut gzip", cut_gz)] {
        for lenient in [false, true] {
            for max in [2048, 256 << 20] {
                let options = ReadOptions::default()
                    .with_batch_bytes(1024)
                    .with_max_value_bytes(max)
                    .with_lenient(lenient);
                assert_same(
                    &format!("{what}, limit {max}, lenient {lenient}"),
                    || TraceReader::from_reader("u.json", bytes).options(options.clone()),
                    2,
                );
            }
        }
    }
}

#[test]
fn no_workers_or_one_huge_batch_read_on_the_calling_thread_with_the_same_results() {
    let text = leak(small_trace().into_bytes());
    for (batch, threads) in [(512 << 10, 0), (usize::MAX, 2), (1, 0)] {
        let options = ReadOptions::default().with_batch_bytes(batch);
        assert_same(
            &format!("batch {batch}, {threads} threads"),
            || TraceReader::from_slice("s.json", text).options(options.clone()),
            threads,
        );
        let cut = leak(text[..text.len() / 2].to_vec());
        assert_same(
            &format!("cut, batch {batch}, {threads} threads"),
            || TraceReader::from_reader("s.json", cut).options(options.clone()),
            threads,
        );
    }
}

/// A fuzz input as `fuzz/fuzz_targets/parallel_read.rs` takes it (first byte: batch
/// size − 1, then the trace), read both ways, strict and lenient, with a 4 KiB value
/// limit.
fn same_on_fuzz_input(input: &'static [u8]) {
    let batch = usize::from(input[0] % 64) + 1;
    for lenient in [false, true] {
        let options = ReadOptions::default()
            .with_max_value_bytes(4096)
            .with_batch_bytes(batch)
            .with_lenient(lenient);
        assert_same(
            &format!("fuzz input, lenient {lenient}"),
            || TraceReader::from_slice("fuzz", &input[1..]).options(options.clone()),
            2,
        );
    }
}

#[test]
fn errors_quote_the_same_text_wherever_the_buffer_ends() {
    // Found by fuzzing: a syntax error just before the end of the buffer quoted fewer
    // bytes in one read than in the other (the quote was what the buffer held; now the
    // reader reads on to 40 bytes or the end of the input before quoting).
    let input = include_bytes!("data/fuzz-excerpt-at-buffer-end.bin");
    same_on_fuzz_input(input);
}

#[test]
fn text_put_back_after_a_rejected_event_keeps_the_size_limit() {
    // Found by fuzzing (`fuzz/fuzz_targets/parallel_read.rs`; first byte: batch size
    // - 1, then the trace). Event #1 has bad UTF-8, so the parallel read puts the text
    // from it back in front of the input; event #3 runs past the 4 KiB limit, which the
    // sequential read reports as too large. The put-back text had enlarged the buffer
    // past the limit, and the parallel read reported a truncation instead.
    let input = include_bytes!("data/fuzz-put-back-size-limit.bin");
    same_on_fuzz_input(input);
}

/// Serves `data` in chunks of `chunk` bytes, then fails with an I/O error at `fail_at`.
struct FailingReader {
    data: &'static [u8],
    pos: usize,
    chunk: usize,
    fail_at: usize,
}

impl std::io::Read for FailingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos >= self.fail_at {
            return Err(std::io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.chunk).min(self.fail_at - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[test]
fn a_reader_failing_after_a_rejected_event_fails_the_same() {
    // Event #2 has bad UTF-8 (the parallel read puts the text back and reads it again);
    // the reader fails a little later, inside or between events: the error must be the
    // sequential read's, at the same offset, not a second read of a failed reader.
    let mut text =
        br#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": 2}, {"ph": "X", "name": "b"#
            .to_vec();
    text.push(0xFF);
    text.extend_from_slice(br#"", "ts": 3}"#);
    for i in 0..30 {
        text.extend_from_slice(format!(r#", {{"ph": "X", "name": "e{i}", "ts": {i}}}"#).as_bytes());
    }
    text.extend_from_slice(b"]}");
    let text = leak(text);
    let bad = text.iter().position(|&b| b == 0xFF).unwrap();
    for fail_at in (bad..text.len()).step_by(7) {
        for lenient in [false, true] {
            let options = ReadOptions::default()
                .with_batch_bytes(24)
                .with_lenient(lenient);
            assert_same(
                &format!("fails at {fail_at}, lenient {lenient}"),
                || {
                    let reader = FailingReader {
                        data: text,
                        pos: 0,
                        chunk: 50,
                        fail_at,
                    };
                    TraceReader::from_reader("f.json", reader).options(options.clone())
                },
                2,
            );
        }
    }
}
