//! Converts Kineto traces to Perfetto protobuf and prints the speed and size.
//!
//! `cargo run --release -p exporters --example perfetto_bench -- IN.json [IN2…] [--budget-mb N] [-o OUT]`
//!
//! Prints input bytes (as stored), output bytes, the ratio, seconds, MB/s of input
//! and the split slices; with `-o` keeps the output, and `--validate` then runs
//! `perfetto::validate` on it.

use std::io::BufWriter;
use std::time::Instant;

use exporters::perfetto::DEFAULT_BUDGET_BYTES;
use exporters::PerfettoExporter;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut inputs = Vec::new();
    let mut budget = DEFAULT_BUDGET_BYTES;
    let mut out = None;
    let mut check = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--budget-mb" => budget = args.next().ok_or("--budget-mb N")?.parse::<usize>()? << 20,
            "-o" => out = Some(args.next().ok_or("-o OUT")?),
            "--validate" => check = true,
            _ => inputs.push(arg),
        }
    }
    let input_bytes: u64 = inputs
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()))
        .sum::<Result<_, _>>()?;
    let started = Instant::now();
    let sink: Box<dyn std::io::Write> = match &out {
        Some(path) => Box::new(BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(path)?,
        )),
        None => Box::new(std::io::sink()),
    };
    let mut exporter = PerfettoExporter::new(sink)
        .sort_budget_bytes(budget)
        .label_unranked_files(inputs.len() > 1);
    for input in &inputs {
        exporter.add_path(input)?;
    }
    let (_, stats) = exporter.finish()?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "input {:.1} MB, output {:.1} MB ({:.1} % of the input), {:.2} s, {:.0} MB/s of input; \
         slices {}, split {} on {} track(s), counter values {}, flow events {}, spilled runs {}",
        input_bytes as f64 / 1e6,
        stats.bytes_written as f64 / 1e6,
        100.0 * stats.bytes_written as f64 / input_bytes as f64,
        seconds,
        input_bytes as f64 / 1e6 / seconds,
        stats.slices,
        stats.split_slices,
        stats.split_tracks.len(),
        stats.counter_values,
        stats.flow_events,
        stats.spilled_runs,
    );
    if let (true, Some(path)) = (check, &out) {
        let started = Instant::now();
        let summary = exporters::perfetto::validate::validate(&std::fs::read(path)?)?;
        println!(
            "valid ({:.1} s): {} slices, {} counter values, {} flows paired",
            started.elapsed().as_secs_f64(),
            summary.slices,
            summary.counter_values,
            summary.flows_paired
        );
    }
    Ok(())
}
