//! The `neuronprof` command. Thin: parsing arguments and printing; the work is in
//! the `neuronprof` library and the crates below it.

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
                std::io::Write::write_all(&mut out, b"\n").context("writing JSON")?;
            } else {
                neuronprof::inspect::render_text(&report, &mut out).context("writing report")?;
            }
            Ok(if report.damaged_files() > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}
