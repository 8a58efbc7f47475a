//! What the performance model and roofline table add to `analyze` (issue #34: at most
//! 15 %), measured in one process on the same loaded traces:
//!
//! ```text
//! cargo run --release -p analysis --example roofline_cost -- [--runs N] FILE…
//! ```
//!
//! The files are read once (the read is printed, and is the same whatever `analyze`
//! does); then `analyze` in the default mode runs `N` times with the roofline table and
//! `N` times without ([`ReportOptions::with_roofline`]), alternating so that a noisy
//! minute of a shared machine lands on both; then `roofline_table` alone on every rank.
//! Prints every run, the medians, and the ratios: `analyze` with / without, and the
//! same with the read counted (what a user running `neuronprof analyze` waits for).

use std::time::Instant;

use analysis::analyses::roofline::{roofline_table, RooflineOptions};
use analysis::{analyze, load_paths, LoadOptions, ReportOptions};

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut runs = 5usize;
    if let Some(i) = args.iter().position(|a| a == "--runs") {
        let n = args.get(i + 1).and_then(|n| n.parse().ok());
        runs = n
            .filter(|&n: &usize| n > 0)
            .ok_or("--runs needs a count ≥ 1")?;
        args.drain(i..i + 2);
    }
    if args.is_empty() || args.iter().any(|a| a.starts_with("--")) {
        eprintln!("usage: roofline_cost [--runs N] FILE…");
        std::process::exit(2);
    }
    let bytes: u64 = args
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let start = Instant::now();
    let set = load_paths(&args, &LoadOptions::default())?;
    let read = start.elapsed().as_secs_f64();
    let events: usize = set.ranks.iter().map(|r| r.rows.len()).sum();
    println!(
        "read {:.1} MB, {} ranks, {events} device and runtime rows: {read:.2} s",
        bytes as f64 / 1e6,
        set.ranks.len()
    );
    let ranks: Vec<i64> = set.ranks.iter().map(|r| r.rank).collect();
    let options = ReportOptions::default().with_ranks(Some(ranks));
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for run in 0..runs {
        for on in [true, false] {
            let t = Instant::now();
            let report = analyze(&set, &options.clone().with_roofline(on));
            let secs = t.elapsed().as_secs_f64();
            let rows: usize = report
                .per_rank
                .iter()
                .filter_map(|r| r.roofline.as_ref())
                .map(|t| t.ops.len())
                .sum();
            if on && rows == 0 {
                return Err(
                    "the roofline table has no rows: these traces carry no shapes \
                            (record_shapes), so there is nothing to measure"
                        .into(),
                );
            }
            println!(
                "run {}: analyze {} the roofline {secs:.3} s ({rows} roofline rows)",
                run + 1,
                if on { "with   " } else { "without" }
            );
            if on { &mut with } else { &mut without }.push(secs);
        }
    }
    let mut alone = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        for trace in &set.ranks {
            roofline_table(trace, &RooflineOptions::default())?;
        }
        alone.push(t.elapsed().as_secs_f64());
    }
    let (on, off, table) = (median(with), median(without), median(alone));
    println!("medians of {runs}: analyze with the roofline {on:.3} s, without {off:.3} s, roofline_table alone {table:.3} s");
    println!(
        "analyze with / without: {:.3} ({:+.1} %); counting the read: {:.3} ({:+.1} %)",
        on / off,
        (on / off - 1.0) * 100.0,
        (read + on) / (read + off),
        ((read + on) / (read + off) - 1.0) * 100.0
    );
    Ok(())
}
