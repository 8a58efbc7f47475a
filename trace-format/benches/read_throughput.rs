//! Reader throughput: a ~64 MB plain JSON trace (the events of the vendored
//! `tests/data/traces/hta/nccl_data.json.gz` repeated with shifted times, made at bench
//! start in a temp dir) parsed into a counting sink; throughput is reported in bytes of
//! JSON per second. Also a do-nothing sink to separate parsing from the sink's own work,
//! and the writer.

#[path = "support/replicate.rs"]
mod replicate;

use std::io::BufWriter;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use trace_format::{
    from_fn, CollectSink, CountingSink, TraceMeta, TraceReader, TraceSink, TraceWriter,
};

const TARGET_BYTES: u64 = 64_000_000;

fn make_input(dir: &Path) -> PathBuf {
    let path = dir.join("bench.json");
    let out = BufWriter::new(std::fs::File::create(&path).unwrap());
    // HTA's NCCL trace, vendored (tests/data/README.md).
    let nccl = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/traces/hta/nccl_data.json.gz");
    replicate::replicate(&nccl, out, TARGET_BYTES).unwrap();
    path
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = make_input(dir.path());
    let text = std::fs::read(&path).unwrap();
    let mut group = c.benchmark_group("read");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("file_into_counting_sink", |b| {
        b.iter(|| {
            let mut sink = CountingSink::default();
            TraceReader::open(&path).read(&mut sink).unwrap();
            sink.events
        })
    });
    group.bench_function("slice_into_noop_sink", |b| {
        b.iter(|| {
            let mut n = 0u64;
            let mut sink = from_fn(|_, _| {
                n += 1;
                ControlFlow::Continue(())
            });
            TraceReader::from_slice("bench", &text)
                .read(&mut sink)
                .unwrap();
            n
        })
    });
    group.finish();

    // Writer: re-write the first ~50k events.
    let mut events = CollectSink::default();
    let mut count = 0;
    let _ = TraceReader::from_slice("bench", &text).read(&mut from_fn(|i, e| {
        let _ = events.on_event(i, e);
        count += 1;
        if count < 50_000 {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    }));
    let meta = TraceMeta::kineto(Some(1_711_964_646_000_000_000));
    let mut group = c.benchmark_group("write");
    group.sample_size(10);
    group.throughput(Throughput::Elements(events.events.len() as u64));
    group.bench_function("events_to_vec", |b| {
        b.iter(|| {
            let mut writer = TraceWriter::new(Vec::with_capacity(16 << 20), &meta).unwrap();
            for event in &events.events {
                writer.write_event(event).unwrap();
            }
            writer.finish().unwrap().len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
