//! `neuronprof query "SQL" PATH… [--format table|csv|json|parquet] [-o OUT] [--lenient]`:
//! SQL over trace files or over a dataset of `export --format parquet` (crate `query`).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

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
    /// Run statements that write or read other files (`COPY … TO`, `CREATE EXTERNAL
    /// TABLE`, …), refused by default.
    pub allow_write: bool,
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
    if let Some(out) = &request.out {
        refuse_an_input_as_output(out, &source)?;
    }
    let engine = engine(request, source)?;
    let outcome = match &request.out {
        Some(path) => crate::replace::replace_file(path, |file| {
            let mut out = BufWriter::with_capacity(1 << 20, file);
            let outcome = engine.run(&request.sql, request.format, &mut out)?;
            out.flush()
                .with_context(|| format!("writing {}", path.display()))?;
            Ok(outcome)
        })?,
        None => {
            let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout());
            let outcome = write_result(&engine, request, &mut out)?;
            out.flush().context("writing the result")?;
            outcome
        }
    };
    Ok(outcome)
}

/// Runs the query of a request without `-o` and writes its result to `out`: what
/// `neuronprof query` prints on standard output (and `neuronprof mcp`'s `query` tool
/// returns).
pub fn query_to_writer(
    request: &QueryRequest,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<QueryOutcome> {
    let engine = engine(request, source_of(&request.paths)?)?;
    write_result(&engine, request, out)
}

fn engine(request: &QueryRequest, source: Source) -> anyhow::Result<Engine> {
    let options = QueryOptions {
        lenient: request.lenient,
        allow_write: request.allow_write,
        ..QueryOptions::default()
    };
    Ok(Engine::new(source, &options)?)
}

fn write_result(
    engine: &Engine,
    request: &QueryRequest,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<QueryOutcome> {
    if request.format == OutputFormat::Parquet {
        anyhow::bail!("--format parquet writes a file: give it with -o FILE");
    }
    Ok(engine.run(&request.sql, request.format, out)?)
}

/// Refuses `-o OUT` when OUT is one of the trace files read (the same file under any
/// name: compared by device and inode) or lies inside the dataset read: the result
/// would replace what the query reads.
fn refuse_an_input_as_output(out: &Path, source: &Source) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    match source {
        Source::Traces(files) => {
            let Ok(target) = std::fs::metadata(out) else {
                return Ok(()); // No file there yet: not an input.
            };
            for file in files {
                let same = std::fs::metadata(file)
                    .is_ok_and(|m| (m.dev(), m.ino()) == (target.dev(), target.ino()));
                if same {
                    anyhow::bail!(
                        "-o {} is the input trace {}: the result would replace it; write \
                         the result elsewhere",
                        out.display(),
                        file.display()
                    );
                }
            }
        }
        Source::Dataset(dir) => {
            let parent = match out.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let (Ok(dataset), Ok(parent)) =
                (std::fs::canonicalize(dir), std::fs::canonicalize(parent))
            else {
                return Ok(());
            };
            if parent.starts_with(&dataset) {
                anyhow::bail!(
                    "-o {} is inside the dataset {} being read: the result would become part \
                     of it; write the result elsewhere",
                    out.display(),
                    dir.display()
                );
            }
        }
    }
    Ok(())
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

/// `-o OUT` is replaced only with a whole result: a query that fails leaves the previous
/// OUT as it was (it used to truncate it first, leaving an empty file), `-o` naming one
/// of the inputs is refused before anything is written (it used to truncate the trace it
/// was about to read), and statements that write files are refused unless
/// `--allow-write`.
#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of a vendored real trace (HTA's `simple_add`, `tests/data/README.md`) in a
    /// scratch directory.
    fn scratch(name: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("query-out-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("simple_add.json.gz");
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/data/traces/hta/simple_add.json.gz"),
            &trace,
        )
        .unwrap();
        (dir, trace)
    }

    fn request(sql: &str, trace: &Path, out: &Path) -> QueryRequest {
        QueryRequest {
            sql: sql.to_owned(),
            paths: vec![trace.to_owned()],
            format: OutputFormat::Csv,
            out: Some(out.to_owned()),
            lenient: false,
            allow_write: false,
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_failing_query_leaves_the_previous_output_whole() {
        let (dir, trace) = scratch("fail");
        let out = dir.join("result.csv");
        std::fs::write(&out, "previous result\n").unwrap();
        let err = run_query(&request("SELECT no_such_column FROM kernels", &trace, &out))
            .expect_err("the query fails");
        assert!(err.to_string().contains("no_such_column"), "{err:#}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous result\n");
        assert_eq!(
            names(&dir),
            ["result.csv", "simple_add.json.gz"],
            "no temporary left"
        );

        run_query(&request("SELECT count(*) AS n FROM kernels", &trace, &out)).unwrap();
        let result = std::fs::read_to_string(&out).unwrap();
        assert!(result.starts_with("n\n") && result.len() > 2, "{result}");
        assert_eq!(names(&dir), ["result.csv", "simple_add.json.gz"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_output_that_is_an_input_is_refused_under_any_name() {
        let (dir, trace) = scratch("input");
        let before = std::fs::read(&trace).unwrap();
        let alias = dir.join("alias.json.gz");
        std::fs::hard_link(&trace, &alias).unwrap();
        for out in [
            trace.clone(),
            alias,
            dir.join(".").join("simple_add.json.gz"),
        ] {
            let err = run_query(&request("SELECT count(*) FROM kernels", &trace, &out))
                .expect_err("refused");
            let text = format!("{err:#}");
            assert!(
                text.contains("is the input trace") && text.contains(&out.display().to_string()),
                "{text}"
            );
        }
        assert_eq!(
            std::fs::read(&trace).unwrap(),
            before,
            "the trace is untouched"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn statements_that_write_files_need_allow_write() {
        let (dir, trace) = scratch("copy");
        let out = dir.join("result.csv");
        let copied = dir.join("copied.csv");
        let sql = format!("COPY (SELECT name FROM kernels) TO '{}'", copied.display());
        let err = run_query(&request(&sql, &trace, &out)).expect_err("refused");
        assert!(format!("{err:#}").contains("--allow-write"), "{err:#}");
        assert!(!copied.exists() && !out.exists());
        let mut allowed = request(&sql, &trace, &out);
        allowed.allow_write = true;
        run_query(&allowed).unwrap();
        assert!(copied.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
