//! Opening traces off the UI thread: file discovery, parallel reading with byte
//! progress, then the analyses.
//!
//! The timeline arrives first ([`LoadMessage::Timeline`]); the analyses' [`Report`] is
//! computed after it, in the same background thread, so the window shows the timeline
//! while the panels still say "computing".

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};

use analysis::analyses::operators::{operator_table, OperatorTable};
use analysis::{analyze, load_paths, LoadOptions, Report, ReportOptions};
use anyhow::Context as _;
use trace_format::{TimeBase, TraceReader};

use crate::model::build::{merge, FileResult, FileSink};
use crate::model::{FileInfo, Timeline};

/// Whether a file name looks like a trace (`.json`, `.json.gz`).
pub fn is_trace_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".json") || name.ends_with(".json.gz")
}

/// Expands directories into the trace files directly inside them (sorted by name);
/// files are kept as given. A Neuron Explorer profile folder (`…@latest`) is a trace of
/// its own; a data path (`profiles/global/*@latest`) or a folder holding profile
/// folders gives its profiles, before its trace files. An empty result or a missing
/// path is an error.
pub fn collect_trace_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        let meta =
            std::fs::metadata(path).with_context(|| format!("opening {}", path.display()))?;
        if meta.is_dir() && analysis::inputs::is_profile_dir(path) {
            files.push(path.clone());
        } else if meta.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("listing {}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && is_trace_file(p))
                .collect();
            found.sort();
            let mut profiles = analysis::inputs::find_profiles(path);
            profiles.append(&mut found);
            let found = profiles;
            if found.is_empty() {
                anyhow::bail!(
                    "{}: no .json or .json.gz trace in this directory",
                    path.display()
                );
            }
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    if files.is_empty() {
        anyhow::bail!("no trace given");
    }
    Ok(files)
}

/// Progress of one load, shared with the UI thread.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes of each file read so far (compressed bytes for `.gz`).
    pub bytes_read: Vec<AtomicU64>,
    /// Size of each file.
    pub total_bytes: Vec<u64>,
    /// Set when the timeline is built.
    pub timeline_done: AtomicBool,
    /// What is happening now, in words.
    pub stage: Mutex<String>,
}

impl Progress {
    /// A fresh progress for these files.
    pub fn for_files(files: &[PathBuf]) -> Self {
        Progress {
            bytes_read: files.iter().map(|_| AtomicU64::new(0)).collect(),
            total_bytes: files.iter().map(|f| input_bytes(f)).collect(),
            timeline_done: AtomicBool::new(false),
            stage: Mutex::new("reading".to_owned()),
        }
    }

    /// Fraction of all bytes read, 0 to 1.
    pub fn fraction(&self) -> f32 {
        let total: u64 = self.total_bytes.iter().sum();
        let read: u64 = self
            .bytes_read
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .sum();
        if total == 0 {
            return 1.0;
        }
        (read as f64 / total as f64).min(1.0) as f32
    }

    fn set_stage(&self, text: &str) {
        *self.stage.lock().unwrap_or_else(|p| p.into_inner()) = text.to_owned();
    }
}

/// The size of a trace file, or of a profile folder's tables.
fn input_bytes(path: &Path) -> u64 {
    if !path.is_dir() {
        return std::fs::metadata(path).map_or(0, |m| m.len());
    }
    std::fs::read_dir(path).map_or(0, |entries| {
        entries
            .filter_map(|e| e.ok()?.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    })
}

struct CountingReader<'p, R> {
    inner: R,
    counter: &'p AtomicU64,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Reads one file leniently: a damaged trace gives what precedes the damage, with a
/// warning naming the file, byte offset and event index.
fn read_file(path: &Path, counter: &AtomicU64) -> anyhow::Result<FileResult> {
    let mut sink = FileSink::default();
    let report = if path.is_dir() {
        // A Neuron Explorer profile folder, read as the same events (its tables are
        // counted as read once it is done).
        let report = analysis::inputs::open_trace(path, true)?
            .read(&mut sink)
            .with_context(|| format!("reading {}", path.display()))?;
        counter.store(input_bytes(path), Ordering::Relaxed);
        report
    } else {
        let file =
            std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        // No BufReader: the trace reader reads in large blocks into its own buffer.
        let reader = CountingReader {
            inner: file,
            counter,
        };
        // Read once (no pre-scan): a late `baseTimeNanoseconds` is added below instead.
        TraceReader::from_reader(&path.display().to_string(), reader)
            .lenient(true)
            .read(&mut sink)
            .with_context(|| format!("reading {}", path.display()))?
    };
    let mut info = FileInfo {
        path: path.to_path_buf(),
        ..FileInfo::default()
    };
    if let Some(damage) = &report.damage {
        info.warnings.push(format!(
            "damaged trace, showing the {} events before the damage: {damage}",
            report.events_delivered
        ));
    }
    if report.events_skipped > 0 {
        let first = report
            .skipped_examples
            .first()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default();
        info.warnings.push(format!(
            "{} malformed events skipped{first}",
            report.events_skipped
        ));
    }
    let offset = match report.time_base {
        TimeBase::LateNotApplied(base) => base,
        _ => 0,
    };
    Ok(FileResult::new(sink, info, offset))
}

/// Reads every file (in parallel, as many at a time as there are cores) into one
/// timeline.
///
/// With `NEURON_VIEWER_TIMING` set, prints the time spent reading and building tracks.
pub fn load_timeline(files: &[PathBuf], progress: &Progress) -> anyhow::Result<Timeline> {
    let started = std::time::Instant::now();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut results = Vec::with_capacity(files.len());
    for (chunk_index, chunk) in files.chunks(workers).enumerate() {
        let chunk_results: Vec<anyhow::Result<FileResult>> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .enumerate()
                .map(|(i, path)| {
                    let counter = &progress.bytes_read[chunk_index * workers + i];
                    scope.spawn(move || read_file(path, counter))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("reader thread panicked")))
                })
                .collect()
        });
        for result in chunk_results {
            results.push(result?);
        }
    }
    progress.set_stage("building tracks");
    let read_done = std::time::Instant::now();
    let timeline = merge(results);
    if std::env::var_os("NEURON_VIEWER_TIMING").is_some() {
        eprintln!(
            "read {:.0} ms, tracks built {:.0} ms",
            (read_done - started).as_secs_f64() * 1000.0,
            read_done.elapsed().as_secs_f64() * 1000.0
        );
    }
    Ok(timeline)
}

/// The analyses of the loaded files, for the panels.
#[derive(Debug)]
pub struct Analyses {
    /// Every analysis, as `neuronprof analyze --json --lenient` computes it.
    pub report: Report,
    /// Operator tables per rank (`key_averages`), or why one could not be made.
    pub operators: Vec<Result<OperatorTable, String>>,
    /// Per rank: the absolute time (ns since the Unix epoch) that the analyses' `_us`
    /// times count from (the rank's first analysed event).
    pub rank_origins_ns: Vec<(i64, i64)>,
    /// The traces as the analyses read them, with their timelines (what the critical
    /// path of another step is computed from, without reading the files again).
    pub set: Arc<analysis::TraceSet>,
}

impl Analyses {
    /// Absolute ns since the epoch of `us` µs after `rank`'s origin.
    pub fn abs_ns(&self, rank: i64, us: f64) -> Option<i64> {
        let origin = self.rank_origins_ns.iter().find(|(r, _)| *r == rank)?.1;
        Some(origin + (us * 1000.0).round() as i64)
    }
}

/// Runs every analysis on the files, as `neuronprof analyze --json --lenient` does
/// (default mode, all ranks), plus the operator tables.
pub fn run_analyses(files: &[PathBuf]) -> anyhow::Result<Analyses> {
    let set = load_paths(
        files,
        &LoadOptions::default()
            .with_lenient(true)
            .with_timeline(true),
    )
    .context("reading traces for the analyses")?;
    let report = analyze(&set, &ReportOptions::default());
    let operators = set
        .ranks
        .iter()
        .map(|trace| operator_table(trace, false).map_err(|e| e.to_string()))
        .collect();
    let rank_origins_ns = set
        .ranks
        .iter()
        .map(|t| (t.rank, t.base_ns + t.min_ts_rel_ns.unwrap_or(0)))
        .collect();
    Ok(Analyses {
        report,
        operators,
        rank_origins_ns,
        set: Arc::new(set),
    })
}

/// What the background loader sends.
#[derive(Debug)]
pub enum LoadMessage {
    /// The timeline is ready.
    Timeline(Arc<Timeline>),
    /// The analyses are ready (or failed, in words).
    Analysis(Result<Box<Analyses>, String>),
    /// Loading failed (in words, with the file and where).
    Failed(String),
}

/// A load in progress: its progress and the channel its results arrive on.
#[derive(Debug)]
pub struct LoadJob {
    /// Files being read.
    pub files: Vec<PathBuf>,
    /// Shared progress.
    pub progress: Arc<Progress>,
    /// Results, in order: timeline (or failure), then analyses.
    pub receiver: Receiver<LoadMessage>,
}

/// Starts loading in a background thread; `wake` is called after each message (to
/// request a repaint).
pub fn spawn_load(
    paths: Vec<PathBuf>,
    wake: impl Fn() + Send + 'static,
) -> Result<LoadJob, String> {
    let files = collect_trace_files(&paths).map_err(|e| format!("{e:#}"))?;
    let progress = Arc::new(Progress::for_files(&files));
    let (sender, receiver) = channel();
    let job = LoadJob {
        files: files.clone(),
        progress: Arc::clone(&progress),
        receiver,
    };
    std::thread::Builder::new()
        .name("trace-loader".to_owned())
        .spawn(move || {
            match load_timeline(&files, &progress) {
                Ok(timeline) => {
                    progress.timeline_done.store(true, Ordering::Relaxed);
                    progress.set_stage("analyzing");
                    let _ = sender.send(LoadMessage::Timeline(Arc::new(timeline)));
                    wake();
                    let report = run_analyses(&files)
                        .map(Box::new)
                        .map_err(|e| format!("{e:#}"));
                    let _ = sender.send(LoadMessage::Analysis(report));
                }
                Err(e) => {
                    let _ = sender.send(LoadMessage::Failed(format!("{e:#}")));
                }
            }
            wake();
        })
        .map_err(|e| format!("cannot start the loader thread: {e}"))?;
    Ok(job)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_expand_to_their_traces_and_bad_paths_say_which() {
        let dir = std::env::temp_dir().join(format!("gui-collect-{}", std::process::id()));
        let empty = dir.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        for name in ["rank1.json.gz", "rank0.json", "trace.pftrace", "notes.txt"] {
            std::fs::write(dir.join(name), b"{}").unwrap();
        }
        let files = collect_trace_files(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(
            files,
            vec![dir.join("rank0.json"), dir.join("rank1.json.gz")]
        );

        let missing = dir.join("missing.json");
        let error = format!("{:#}", collect_trace_files(&[missing]).unwrap_err());
        assert!(error.contains("missing.json"), "{error}");
        let error = format!("{:#}", collect_trace_files(&[empty]).unwrap_err());
        assert!(error.contains("no .json or .json.gz trace"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_that_is_not_a_trace_is_an_error_not_a_panic() {
        let path =
            std::env::temp_dir().join(format!("gui-not-a-trace-{}.json", std::process::id()));
        std::fs::write(&path, b"\x00\x01 this is not json").unwrap();
        let progress = Progress::for_files(std::slice::from_ref(&path));
        // Lenient reading: the damage is a warning on an empty timeline.
        let timeline = load_timeline(std::slice::from_ref(&path), &progress).unwrap();
        assert_eq!(timeline.slice_count, 0);
        assert_eq!(timeline.files[0].warnings.len(), 1);
        assert!(
            timeline.files[0].warnings[0].contains("damaged"),
            "{:?}",
            timeline.files[0].warnings
        );
        assert!(progress.fraction() > 0.99);
        let _ = std::fs::remove_file(&path);
    }
}
