//! `neuronprof query "SQL" PATH… [--format table|csv|json|parquet] [-o OUT] [--lenient]`:
//! SQL over trace files or over a dataset of `export --format parquet` (crate `query`).

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context as _;
use exporters::tables::RankRow;
use query::{Engine, OutputFormat, QueryOptions, QueryOutcome, Source};

/// What `neuronprof query` was asked for.
#[derive(Clone, Debug)]
pub struct QueryRequest {
    /// The SQL.
    pub sql: String,
    /// Trace files, directories of rank traces, or one dataset directory.
    pub paths: Vec<PathBuf>,
    /// The output format.
    pub format: OutputFormat,
    /// The output file (standard output when absent; required for Parquet).
    pub out: Option<PathBuf>,
    /// Read past damage in traces.
    pub lenient: bool,
}

/// Where the tables come from: one dataset directory, or trace files.
pub fn source_of(paths: &[PathBuf]) -> anyhow::Result<Source> {
    if let [dir] = paths {
        if dir.is_dir() && Source::is_dataset(dir) {
            return Ok(Source::Dataset(dir.clone()));
        }
    }
    if let Some(dataset) = paths.iter().find(|p| p.is_dir() && Source::is_dataset(p)) {
        anyhow::bail!(
            "{}: a Parquet dataset can only be queried on its own, not with other paths",
            dataset.display()
        );
    }
    Ok(Source::Traces(crate::paths::collect_trace_files(paths)?))
}

/// Runs the query, writing the result to the output; returns what it did.
pub fn run_query(request: &QueryRequest) -> anyhow::Result<QueryOutcome> {
    let source = source_of(&request.paths)?;
    let options = QueryOptions {
        lenient: request.lenient,
        ..QueryOptions::default()
    };
    let engine = Engine::new(source, &options)?;
    let outcome = match &request.out {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("creating {}", path.display()))?;
            let mut out = BufWriter::with_capacity(1 << 20, file);
            let outcome = engine.run(&request.sql, request.format, &mut out)?;
            out.flush()
                .with_context(|| format!("writing {}", path.display()))?;
            outcome
        }
        None => {
            if request.format == OutputFormat::Parquet {
                anyhow::bail!("--format parquet writes a file: give it with -o FILE");
            }
            let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout());
            let outcome = engine.run(&request.sql, request.format, &mut out)?;
            out.flush().context("writing the result")?;
            outcome
        }
    };
    Ok(outcome)
}

/// What goes to standard error after the result: the damage a lenient read skipped.
pub fn render_damage(outcome: &QueryOutcome, out: &mut impl Write) -> std::io::Result<()> {
    let damaged: Vec<&RankRow> = outcome.damaged.iter().collect();
    let heading = format!(
        "{} of {} trace file(s) damaged, read up to the damage (--lenient):",
        damaged.len(),
        outcome.files_read
    );
    render_damaged_files(&heading, &damaged, out)
}

/// A heading and one line per damaged file (rank, events skipped, where and why), or
/// nothing when no file is damaged; `query` and `export` both print this.
pub fn render_damaged_files(
    heading: &str,
    files: &[&RankRow],
    out: &mut impl Write,
) -> std::io::Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    writeln!(out, "{heading}")?;
    for file in files {
        writeln!(
            out,
            "  rank {}: {} event(s) read, {} damaged event(s) skipped; {}",
            file.rank,
            file.events,
            file.events_skipped,
            file.damage.join("; ")
        )?;
    }
    Ok(())
}
