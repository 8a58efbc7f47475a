//! The `neuronprof` command. Thin: parsing arguments and printing; the work is in
//! the `neuronprof` library and the crates below it.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "neuronprof",
    version,
    about = "Profiler and trace toolkit for PyTorch on AWS Trainium"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Summarise Kineto traces: ranks, devices, time span, event counts, flows, damage.
    ///
    /// Exits 0 when every file read cleanly, 1 when any file is damaged (the report
    /// still shows everything read up to the damage), 2 on a usage error.
    Inspect {
        /// Trace files (.json, .json.gz) or directories of rank traces.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Analyse rank traces: HTA's analyses (temporal, kernel, idle time, overlap, queue
    /// length, memory bandwidth, launches, stragglers) and more (memory timeline,
    /// operators, steps, collectives across ranks), insights first.
    Analyze {
        /// Trace files (.json, .json.gz) or directories, one file per rank.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print the whole result as JSON (schema: the `analysis` crate docs).
        #[arg(long)]
        json: bool,
        /// The rank for per-rank analyses (default: the first rank).
        #[arg(long)]
        rank: Option<i64>,
        /// Analyse only ProfilerStep#N.
        #[arg(long)]
        step: Option<i64>,
        /// HTA's integer-microsecond rounding and name rules: numbers equal to HTA 0.6's.
        #[arg(long)]
        hta_compat: bool,
        /// Analyse what can be read of damaged traces instead of stopping at the damage.
        #[arg(long)]
        lenient: bool,
    },
    /// Compare two traces (or two directories of rank traces) by operator and kernel name.
    Diff {
        /// The control trace or directory.
        control: PathBuf,
        /// The test trace or directory.
        test: PathBuf,
        /// The rank to compare (default: the first).
        #[arg(long)]
        rank: Option<i64>,
        /// HTA's rounding (durations in integer microseconds).
        #[arg(long)]
        hta_compat: bool,
        /// Rows to print, largest change in duration first.
        #[arg(long, default_value_t = 20)]
        top: usize,
        /// Print every row as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("neuronprof: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Inspect { paths, json } => {
            let files = neuronprof::inspect::collect_trace_files(&paths)?;
            let report = neuronprof::inspect::inspect_files(&files);
            let mut out = std::io::stdout().lock();
            if json {
                serde_json::to_writer_pretty(&mut out, &report).context("writing JSON")?;
                out.write_all(b"\n").context("writing JSON")?;
            } else {
                neuronprof::inspect::render_text(&report, &mut out).context("writing report")?;
            }
            Ok(if report.damaged_files() > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Analyze {
            paths,
            json,
            rank,
            step,
            hta_compat,
            lenient,
        } => {
            let request = neuronprof::analyze::AnalyzeRequest {
                paths,
                rank,
                step,
                hta_compat,
                lenient,
            };
            let report = neuronprof::analyze::run_analyze(&request)?;
            let mut out = std::io::stdout().lock();
            if json {
                serde_json::to_writer_pretty(&mut out, &report).context("writing JSON")?;
                out.write_all(b"\n").context("writing JSON")?;
            } else {
                out.write_all(analysis::render::render_report(&report).as_bytes())
                    .context("writing report")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Diff {
            control,
            test,
            rank,
            hta_compat,
            top,
            json,
        } => {
            let diff = neuronprof::analyze::run_diff(&control, &test, rank, hta_compat)?;
            let mut out = std::io::stdout().lock();
            if json {
                serde_json::to_writer_pretty(&mut out, &diff).context("writing JSON")?;
                out.write_all(b"\n").context("writing JSON")?;
            } else {
                out.write_all(analysis::render::render_diff(&diff, top).as_bytes())
                    .context("writing diff")?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
