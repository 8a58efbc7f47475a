//! Runs every analysis on trace files (one per rank) and prints the wall time of each
//! phase and the peak resident memory of the process (`VmHWM`):
//!
//! ```text
//! cargo run --release -p analysis --example bench -- \
//!     [--runs N] [--json] [--sequential] [--no-compat | --only default|compat]
//!     [--no-host-ops] FILE…
//! ```
//!
//! Phases: reading (all files in parallel, one pass each), `analyze` in the default mode
//! (HTA's analyses, steps, collectives, memory timeline, transfers, utilization,
//! operator table of the ranks analysed, insights) on every rank, `analyze` in
//! HTA-compat mode (unless `--no-compat`), the operator table of every rank by input
//! shape and the trace-diff summary of the first rank (both from what the read kept:
//! no file is read twice). Once the files are read, these run at the same time on their
//! own threads (they are independent), unless `--sequential`. `--only MODE` reads and
//! runs `analyze` in that mode only (the analyses HTA has, and ours beyond them).
//! `--no-host-ops` reads without keeping host operators
//! (`LoadOptions::with_host_ops(false)`) and skips the operator and diff phases: the
//! difference in peak RSS is what keeping them costs. With `--runs N` the whole sequence
//! runs N times and the median total is printed too. `--json` prints one JSON line per
//! run instead of text.

use std::time::Instant;

use analysis::analyses::operators::operator_table;
use analysis::analyses::trace_diff::{ops_summary, DiffOptions};
use analysis::{analyze, load_paths, LoadOptions, Mode, ReportOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let mut with_compat = !args.iter().any(|a| a == "--no-compat");
    let parallel = !args.iter().any(|a| a == "--sequential");
    let mut with_default = true;
    let host_ops = !args.iter().any(|a| a == "--no-host-ops");
    let mut with_rereads = host_ops;
    if let Some(i) = args.iter().position(|a| a == "--only") {
        let only = args.get(i + 1).cloned().unwrap_or_default();
        with_compat = only == "compat";
        with_default = only == "default";
        with_rereads = false;
        args.drain(i..(i + 2).min(args.len()));
    }
    args.retain(|a| {
        a != "--json" && a != "--no-compat" && a != "--sequential" && a != "--no-host-ops"
    });
    let mut runs = 1usize;
    if let Some(i) = args.iter().position(|a| a == "--runs") {
        runs = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(1);
        args.drain(i..(i + 2).min(args.len()));
    }
    if args.is_empty() {
        eprintln!("usage: bench [--runs N] [--json] FILE…");
        std::process::exit(2);
    }
    let bytes: u64 = args
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let mut totals = Vec::new();
    for run in 0..runs {
        let mut phases: Vec<(&str, f64)> = Vec::new();
        let start = Instant::now();
        let mut lap = Instant::now();
        let mut peaks: Vec<u64> = Vec::new();
        let mut phase = |name: &'static str, lap: &mut Instant| {
            phases.push((name, lap.elapsed().as_secs_f64()));
            peaks.push(peak_rss_bytes().unwrap_or(0));
            *lap = Instant::now();
        };
        let set = load_paths(&args, &LoadOptions::default().with_host_ops(host_ops))?;
        phase("read", &mut lap);
        let ranks: Vec<i64> = set.ranks.iter().map(|r| r.rank).collect();
        let run_default = || {
            with_default.then(|| {
                let report = analyze(
                    &set,
                    &ReportOptions::default().with_ranks(Some(ranks.clone())),
                );
                (report.insights.len(), report.kernel_breakdown.kernels.len())
            })
        };
        let run_compat = || {
            with_compat.then(|| {
                let compat = analyze(
                    &set,
                    &ReportOptions::hta_reference()
                        .with_mode(Mode::HtaCompat)
                        .with_ranks(Some(ranks.clone())),
                );
                compat.kernel_breakdown.kernels.len()
            })
        };
        let run_operators = || -> Result<usize, analysis::AnalysisError> {
            let mut operators = 0;
            for trace in &set.ranks {
                operators += operator_table(trace, true)?.operators.len();
            }
            Ok(operators)
        };
        let run_diff = || -> Result<usize, analysis::AnalysisError> {
            Ok(ops_summary(&set, &DiffOptions::default())?.ops.len())
        };
        let (default, compat, operators, diff_names);
        if parallel && with_rereads {
            // The analyses are independent once the traces are read: run them at once.
            let (o, d, a, c) = std::thread::scope(|scope| {
                let o = scope.spawn(run_operators);
                let d = scope.spawn(run_diff);
                let c = scope.spawn(run_compat);
                let a = run_default();
                (o.join(), d.join(), a, c.join())
            });
            operators = o.expect("operators thread")?;
            diff_names = d.expect("diff thread")?;
            default = a;
            compat = c.expect("compat thread");
            phase("all analyses, parallel", &mut lap);
        } else {
            default = run_default();
            if with_default {
                phase("analyze default", &mut lap);
            }
            compat = run_compat();
            if with_compat {
                phase("analyze hta-compat", &mut lap);
            }
            if with_rereads {
                operators = run_operators()?;
                phase("operators", &mut lap);
                diff_names = run_diff()?;
                phase("trace diff summary", &mut lap);
            } else {
                (operators, diff_names) = (0, 0);
            }
        }
        let (insights, default_kernels) = default.unwrap_or((0, 0));
        let compat_kernels = compat.unwrap_or(0);
        let total = start.elapsed().as_secs_f64();
        totals.push(total);
        let peak_rss = peak_rss_bytes();
        let rows: usize = set.ranks.iter().map(|r| r.rows.len()).sum();
        let events: u64 = set.ranks.iter().map(|r| r.counts.events).sum();
        let (host_ops, host_spans) = set
            .ranks
            .iter()
            .filter_map(|r| r.host_ops.as_ref())
            .fold((0, 0), |(o, s), h| {
                (o + h.operators.len(), s + h.spans.len())
            });
        let host_bytes = host_ops * std::mem::size_of::<analysis::model::HostOp>()
            + host_spans * std::mem::size_of::<analysis::model::HostSpan>();
        if json {
            let phases: Vec<String> = phases
                .iter()
                .map(|(n, s)| format!("\"{n}\": {s:.3}"))
                .collect();
            println!(
                "{{\"run\": {run}, \"bytes\": {bytes}, \"events\": {events}, \"total_s\": {total:.3}, \"peak_rss_bytes\": {}, {}}}",
                peak_rss.unwrap_or(0),
                phases.join(", ")
            );
        } else {
            println!(
                "run {run}: {} files, {:.1} MB, {events} events, {rows} rows kept, \
                 {host_ops} host operators + {host_spans} host spans kept ({:.1} MiB)",
                args.len(),
                bytes as f64 / 1e6,
                host_bytes as f64 / (1u64 << 20) as f64
            );
            for ((name, secs), peak) in phases.iter().zip(&peaks) {
                println!(
                    "  {name:<20} {secs:>8.3} s   peak RSS so far {:>6.0} MiB",
                    *peak as f64 / (1u64 << 20) as f64
                );
            }
            println!(
                "  {:<20} {total:>8.3} s  ({:.0} MB/s)",
                "total",
                bytes as f64 / 1e6 / total
            );
            println!(
                "  peak RSS {:.0} MiB; {} insights, {} + {} kernel rows, {operators} operators, {} diff names",
                peak_rss.unwrap_or(0) as f64 / (1u64 << 20) as f64,
                insights,
                default_kernels,
                compat_kernels,
                diff_names
            );
        }
    }
    if runs > 1 {
        let mut sorted = totals.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        if !json {
            println!("median total of {runs} runs: {median:.3} s");
        }
    }
    Ok(())
}

/// Peak resident set size of this process (`VmHWM` in `/proc/self/status`), bytes.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
