//! Reader throughput: a ~64 MB plain JSON trace (the events of the shared
//! `hta/nccl_data.json.gz` repeated with shifted times, made at bench start in a temp
//! dir) parsed into a counting sink; throughput is reported in bytes of JSON per second.
//! Also a do-nothing sink to separate parsing from the sink's own work, and the writer.
//! Without the shared traces, a synthetic trace of the same size is used.

#[path = "support/replicate.rs"]
mod replicate;

use std::io::BufWriter;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use trace_format::{
    from_fn, Category, CollectSink, CountingSink, Event, FlowEnd, TraceMeta, TraceReader,
    TraceSink, TraceWriter,
};

const TARGET_BYTES: u64 = 64_000_000;

fn make_input(dir: &Path) -> PathBuf {
    let path = dir.join("bench.json");
    let out = BufWriter::new(std::fs::File::create(&path).unwrap());
    let shared =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces/hta/nccl_data.json.gz");
    if shared.exists() {
        replicate::replicate(&shared, out, TARGET_BYTES).unwrap();
    } else {
        eprintln!("shared traces absent: benchmarking a synthetic trace");
        synthetic(out);
    }
    path
}

fn synthetic<W: std::io::Write>(out: W) {
    let base = 1_790_857_026_000_000_000;
    let mut writer = TraceWriter::new(out, &TraceMeta::kineto(Some(base))).unwrap();
    let mut i = 0i64;
    let mut bytes = 0u64;
    while bytes < TARGET_BYTES {
        let ts = base + i * 10_000;
        let launch = Event::complete(
            Category::PrivateUse1Runtime,
            "launch",
            4242,
            4242,
            ts,
            3_000,
        )
        .with_arg("correlation", i)
        .with_arg("External id", i);
        let kernel = Event::complete(Category::Kernel, "matmul_bf16", 0, 1, ts + 5_000, 4_000)
            .with_arg("correlation", i)
            .with_arg("device", 0i64)
            .with_arg("stream", 1i64);
        writer.write_event(&launch).unwrap();
        writer
            .write_event(&Event::flow(
                FlowEnd::Start,
                Category::Ac2g,
                i,
                4242,
                4242,
                ts,
            ))
            .unwrap();
        writer.write_event(&kernel).unwrap();
        i += 1;
        bytes += 520;
    }
    writer.finish().unwrap();
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
