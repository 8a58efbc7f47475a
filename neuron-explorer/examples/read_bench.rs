//! Events per second of the profile reader against the Kineto reader on the same run:
//! the Kineto trace is written as a profile folder (`write_profile`), then each is read
//! into a counting sink `--runs` times, alternating; prints every run and the medians.
//!
//! ```text
//! cargo run --release --example read_bench -- TRACE.json [--runs 5] [--keep DIR]
//! ```
//! The profile's events are not the trace's one for one (its flows and track names are
//! made again from its tables), so each reader's rate is of its own events. Peak memory
//! is the process's `VmHWM` (both readers run in this process).

use std::time::Instant;

use trace_format::{CountingSink, TraceReader};

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
    let Some(trace) = args.next() else {
        eprintln!("usage: read_bench TRACE.json [--runs N] [--keep DIR]");
        std::process::exit(2);
    };
    let mut runs = 5;
    let mut keep = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(5),
            "--keep" => keep = args.next(),
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let tmp = std::env::temp_dir().join(format!("read_bench-{}", std::process::id()));
    let dir = keep.map_or_else(|| tmp.join("bench@latest"), Into::into);
    let started = Instant::now();
    let written = neuron_explorer::write_profile(trace.as_ref(), &dir).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    println!(
        "wrote {} in {:.2} s: {:?}",
        dir.display(),
        started.elapsed().as_secs_f64(),
        written.rows
    );
    let (mut kineto, mut profile) = (Vec::new(), Vec::new());
    for run in 1..=runs {
        let mut sink = CountingSink::default();
        let start = Instant::now();
        TraceReader::open(&trace)
            .read(&mut sink)
            .expect("kineto read");
        let secs = start.elapsed().as_secs_f64();
        println!(
            "run {run}: kineto  {} events in {secs:.3} s: {:.0} events/s",
            sink.events,
            sink.events as f64 / secs
        );
        kineto.push(sink.events as f64 / secs);

        let mut sink = CountingSink::default();
        let start = Instant::now();
        neuron_explorer::open_trace(&dir, false)
            .expect("open profile")
            .read(&mut sink)
            .expect("profile read");
        let secs = start.elapsed().as_secs_f64();
        println!(
            "run {run}: profile {} events in {secs:.3} s: {:.0} events/s",
            sink.events,
            sink.events as f64 / secs
        );
        profile.push(sink.events as f64 / secs);
    }
    let (k, p) = (median(kineto), median(profile));
    println!(
        "median over {runs} runs: kineto {k:.0} events/s, profile {p:.0} events/s ({:.2}x)",
        p / k
    );
    if let Some(kib) = peak_rss_kib() {
        println!("peak RSS (VmHWM): {:.1} MiB", kib as f64 / 1024.0);
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
