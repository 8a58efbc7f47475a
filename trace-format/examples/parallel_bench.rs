//! Times `TraceReader::read` against `TraceReader::read_parallel` on one trace, with a
//! sink doing the per-event work of an analysis: pick phase, category, name, pid/tid,
//! `ts`, `dur` and two args (`map`, on worker threads), then intern the name and add
//! the duration to a per-name total (`consume`, in order). The sequential read runs the
//! same two steps inline. Runs alternate; medians are printed with their ratio.
//!
//! ```text
//! cargo run --release -p trace-format --example parallel_bench -- /tmp/big.json [--runs 3] [--threads 1,2] [--parallel-only]
//! ```
//! `--parallel-only` skips the sequential reads (and the check against them), for profiling.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::time::Instant;

use trace_format::{ArgValue, Event, ParallelSink, TraceReader, TraceSink};

/// What `map` extracts from an event.
struct Picked {
    phase: u8,
    category: Option<String>,
    name: String,
    pid: Option<i64>,
    tid: Option<i64>,
    ts_ns: i64,
    dur_ns: i64,
    correlation: i64,
    external_id: i64,
}

fn pick(_index: u64, event: &Event<'_>) -> Option<Picked> {
    let int = |key: &str| match event.arg(key) {
        Some(ArgValue::Int(n)) => n,
        _ => -1,
    };
    Some(Picked {
        phase: event
            .phase
            .as_str()
            .as_bytes()
            .first()
            .copied()
            .unwrap_or(0),
        category: event.normalized_category().map(|c| c.as_str().to_owned()),
        name: event.name().to_owned(),
        pid: event.pid.as_ref().and_then(|p| p.as_i64()),
        tid: event.tid.as_ref().and_then(|t| t.as_i64()),
        ts_ns: event.ts_ns.unwrap_or(0),
        dur_ns: event.dur_ns.unwrap_or(0),
        correlation: int("correlation"),
        external_id: int("External id"),
    })
}

/// Interns names and sums durations per name, in event order.
#[derive(Default)]
struct Totals {
    ids: HashMap<String, u32>,
    per_name: Vec<(i64, u64)>,
    complete: u64,
    with_correlation: u64,
    checksum: i64,
}

impl Totals {
    fn add(&mut self, p: Picked) -> ControlFlow<()> {
        let next = self.ids.len() as u32;
        let id = match self.ids.get(p.name.as_str()) {
            Some(&id) => id,
            None => {
                self.ids.insert(p.name, next);
                self.per_name.push((0, 0));
                next
            }
        };
        let slot = &mut self.per_name[id as usize];
        slot.0 += p.dur_ns;
        slot.1 += 1;
        self.complete += u64::from(p.phase == b'X');
        self.with_correlation += u64::from(p.correlation >= 0 || p.external_id >= 0);
        self.checksum = self
            .checksum
            .wrapping_add(p.ts_ns)
            .wrapping_add(p.pid.unwrap_or(0) ^ p.tid.unwrap_or(0))
            .wrapping_add(p.category.map_or(0, |c| c.len() as i64));
        ControlFlow::Continue(())
    }
}

/// Sequential: the same work inline.
struct Inline(Totals);

impl TraceSink for Inline {
    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        match pick(index, event) {
            Some(p) => self.0.add(p),
            None => ControlFlow::Continue(()),
        }
    }
}

impl ParallelSink for Totals {
    type Item = Picked;
    type Mapper = fn(u64, &Event<'_>) -> Option<Picked>;
    fn mapper(&self) -> Self::Mapper {
        pick
    }
    fn consume(&mut self, _index: u64, item: Picked) -> ControlFlow<()> {
        self.add(item)
    }
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: parallel_bench PATH [--runs N] [--threads 1,2]");
        std::process::exit(2);
    };
    let mut runs = 3;
    let mut thread_counts = vec![1, 2];
    let mut parallel_only = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(3),
            "--parallel-only" => parallel_only = true,
            "--threads" => {
                thread_counts = args
                    .next()
                    .map(|s| s.split(',').filter_map(|t| t.parse().ok()).collect())
                    .unwrap_or_default()
            }
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let fail = |e: trace_format::ReadError| -> ! {
        eprintln!("error: {e}");
        std::process::exit(1);
    };
    let mut seq_times = Vec::new();
    let mut par_times: Vec<Vec<f64>> = vec![Vec::new(); thread_counts.len()];
    let mut mb = 0.0;
    let mut reference = None;
    for run in 1..=runs {
        if parallel_only {
            for &threads in &thread_counts {
                let start = Instant::now();
                let report = TraceReader::open(&path)
                    .read_parallel(&mut Totals::default(), threads)
                    .unwrap_or_else(|e| fail(e));
                let secs = start.elapsed().as_secs_f64();
                let mb = report.bytes_read as f64 / 1e6;
                println!(
                    "run {run}: parallel({threads}) {secs:.3} s ({:.0} MB/s)",
                    mb / secs
                );
            }
            continue;
        }
        let mut sink = Inline(Totals::default());
        let start = Instant::now();
        let report = TraceReader::open(&path)
            .read(&mut sink)
            .unwrap_or_else(|e| fail(e));
        let secs = start.elapsed().as_secs_f64();
        mb = report.bytes_read as f64 / 1e6;
        let summary = (
            report.events_delivered,
            sink.0.per_name.clone(),
            sink.0.complete,
            sink.0.with_correlation,
            sink.0.checksum,
        );
        println!(
            "run {run}: sequential {secs:.3} s ({:.0} MB/s, {} events, {} names)",
            mb / secs,
            report.events_delivered,
            sink.0.ids.len()
        );
        seq_times.push(secs);
        for (k, &threads) in thread_counts.iter().enumerate() {
            let mut sink = Totals::default();
            let start = Instant::now();
            let report = TraceReader::open(&path)
                .read_parallel(&mut sink, threads)
                .unwrap_or_else(|e| fail(e));
            let secs = start.elapsed().as_secs_f64();
            let got = (
                report.events_delivered,
                sink.per_name.clone(),
                sink.complete,
                sink.with_correlation,
                sink.checksum,
            );
            assert!(got == summary, "parallel read gave different totals");
            println!(
                "run {run}: parallel({threads}) {secs:.3} s ({:.0} MB/s)",
                mb / secs
            );
            par_times[k].push(secs);
        }
        reference = Some(summary);
    }
    let _ = reference;
    if parallel_only {
        return;
    }
    let seq = median(seq_times);
    println!(
        "median sequential: {seq:.3} s ({:.0} MB/s of JSON, {mb:.1} MB)",
        mb / seq
    );
    for (k, threads) in thread_counts.iter().enumerate() {
        let par = median(par_times[k].clone());
        println!(
            "median parallel({threads}): {par:.3} s ({:.0} MB/s), {:.2}x the sequential read",
            mb / par,
            seq / par
        );
    }
    if let Some(kib) = peak_rss_kib() {
        println!("peak RSS (VmHWM): {:.1} MiB", kib as f64 / 1024.0);
    }
}
