//! Parses one trace into a counting sink and prints events/s, MB/s and peak memory.
//!
//! ```text
//! cargo run --release -p trace-format --example parse_bench -- /tmp/big.json [--runs 3] [--counts]
//! ```
//! MB/s counts JSON text (decompressed bytes for `.gz`), 1 MB = 10^6 bytes. Peak memory
//! is the process's `VmHWM` from `/proc/self/status` (high-water resident set).

use std::time::Instant;

use trace_format::{CountingSink, TraceReader};

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: parse_bench PATH [--runs N] [--counts]");
        std::process::exit(2);
    };
    let mut runs = 1;
    let mut show_counts = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(1),
            "--counts" => show_counts = true,
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let mut rates = Vec::new();
    for run in 1..=runs {
        let mut sink = CountingSink::default();
        let start = Instant::now();
        let report = match TraceReader::open(&path).read(&mut sink) {
            Ok(report) => report,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        };
        let secs = start.elapsed().as_secs_f64();
        let mb = report.bytes_read as f64 / 1e6;
        println!(
            "run {run}: {} events in {secs:.3} s: {:.0} events/s, {:.1} MB/s of JSON ({mb:.1} MB{}), time base {:?}",
            sink.events,
            sink.events as f64 / secs,
            mb / secs,
            if report.gzip { ", gunzipped" } else { "" },
            report.time_base,
        );
        if show_counts && run == 1 {
            println!("by phase: {:?}", sink.by_phase());
            println!("by category: {:?}", sink.by_category());
        }
        rates.push(mb / secs);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "median: {:.1} MB/s over {runs} run(s)",
        rates[rates.len() / 2]
    );
    if let Some(kib) = peak_rss_kib() {
        println!("peak RSS (VmHWM): {:.1} MiB", kib as f64 / 1024.0);
    }
}
