//! Reading rank traces: one streaming pass per file, files read in parallel; a single
//! file (fewer files than cores) is decoded on several threads
//! (`trace_format::TraceReader::read_parallel`): [`pick::pick`] takes what the model needs
//! from each event on the reader's worker threads, [`RankSink::add`] builds the rows in
//! event order (interning, counters, minima), so both ways give the same [`RankTrace`].

use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trace_format::{
    Event, EventText, Ident, ParallelSink, TimeBase, TraceMeta, TraceReader, TraceSink,
};

use super::{
    CorrelatedRow, DeviceInfo, DmaRow, EngineRow, FastMap, GraphPasses, HostOp, HostOps, HostSpan,
    IdentKey, KeptWindow, NameId, Names, OpShapeArgs, RankCounts, RankTrace, Row, SyncWait,
    ThrottleRow, Timeline, TimelineEvent, TraceSet,
};
use crate::classify::Mode;
use crate::error::AnalysisError;

mod host_collective;
mod pick;
mod window;

use pick::{Picked, Picker};

/// How traces are read.
#[derive(Clone)]
#[non_exhaustive]
pub struct LoadOptions {
    /// Skip damaged events and stop quietly at a truncation instead of failing
    /// (see `trace_format::ReadOptions::lenient`).
    pub lenient: bool,
    /// Called while files are read (see [`LoadProgress`]); `None`: no reports.
    pub progress: Option<ProgressFn>,
    /// Keep [`RankTrace::host_ops`] (host operators and other host events, for the
    /// operator table and the trace diff). On by default; off saves 40 bytes per host
    /// operator and 24 per other host event (63.7 MiB for 1 GB of HTA's NCCL trace
    /// replicated, 72 MiB of the read's peak RSS, see `docs/PERFORMANCE.md`), and those
    /// two analyses then report that they cannot run.
    pub host_ops: bool,
    /// Worker threads decoding one file's events, besides the thread reading it.
    /// `None` (default): when there are fewer files than cores, each file gets
    /// `cores / files - 1` of them (at most 8), else none (files are read in parallel).
    /// `Some(0)`: every file on one thread.
    pub read_threads: Option<usize>,
    /// Keep [`RankTrace::timeline`]: every complete event that is not a row (40 bytes
    /// each, with its event index, thread and category) and the sync rows' wait args,
    /// for the critical path ([`crate::critical_path`]). Off by default.
    pub timeline: bool,
    /// With [`LoadOptions::timeline`]: keep only the rows and timeline events of one
    /// annotation's window (see [`LoadOptions::with_window`]). `None` (default): all.
    pub window: Option<LoadWindow>,
}

/// The window a load keeps ([`LoadOptions::with_window`]): events whose name contains
/// `annotation`, instances `instances.0..=instances.1` in file order (HTA's
/// `annotation` and `instance_id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadWindow {
    /// Part of the bounding events' names (`ProfilerStep`).
    pub annotation: String,
    /// First and last instance, from 0.
    pub instances: (usize, usize),
    /// Events kept whatever their time (positions in `traceEvents`, sorted): what a
    /// first windowed load missed ([`crate::critical_path::CriticalPathError::OutsideKeptWindow`]).
    pub also_keep: Vec<u64>,
    /// Keep every correlated row ([`crate::model::WindowCorrelations::Records`]) instead
    /// of the compact form.
    pub records: bool,
    /// The critical path's rules the load keeps for ([`LoadOptions::with_window_mode`]):
    /// [`Mode::HtaCompat`] (the default) logs HTA's queue-length changes over the whole
    /// file; [`Mode::Default`] logs nothing per dropped row (its queue length looks at
    /// the window's rows only) and keeps, besides the window, the host rows with a
    /// correlation up to the device rows' end of the window and every device row
    /// whose launch was kept.
    pub mode: Mode,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            lenient: false,
            progress: None,
            host_ops: true,
            read_threads: None,
            timeline: false,
            window: None,
        }
    }
}

/// A progress callback: called from the reading threads (one per file), so it must be
/// `Send + Sync`; calls for different files can interleave.
pub type ProgressFn = Arc<dyn Fn(&LoadProgress) + Send + Sync>;

/// How far the read of one file has got. Bytes are bytes of the file as stored
/// (compressed bytes for `.json.gz`), so `bytes_read / total_bytes` is the fraction done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadProgress {
    /// The file's position in the input list.
    pub file_index: usize,
    /// The file.
    pub path: PathBuf,
    /// Bytes read so far.
    pub bytes_read: u64,
    /// The file's size, when known.
    pub total_bytes: Option<u64>,
    /// Whether the file has been read completely (the last report of a file).
    pub done: bool,
}

/// Bytes between two progress reports of one file.
pub const PROGRESS_INTERVAL_BYTES: u64 = 4 << 20;

impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("lenient", &self.lenient)
            .field("host_ops", &self.host_ops)
            .field("read_threads", &self.read_threads)
            .field("timeline", &self.timeline)
            .field("window", &self.window)
            .field("progress", &self.progress.as_ref().map(|_| "Fn"))
            .finish()
    }
}

impl LoadOptions {
    /// Sets [`LoadOptions::lenient`].
    pub fn with_lenient(mut self, on: bool) -> Self {
        self.lenient = on;
        self
    }

    /// Sets [`LoadOptions::timeline`].
    pub fn with_timeline(mut self, on: bool) -> Self {
        self.timeline = on;
        self
    }

    /// Keeps, with [`LoadOptions::timeline`], only what the critical path of
    /// `annotation`'s `instances` needs ([`crate::critical_path`]): the rows and
    /// timeline events around that window, and of the other rows only what HTA's links
    /// and queue length need in HTA-compat mode ([`crate::model::WindowCorrelations`]:
    /// 10 bytes per launch and device row, 2 bits per correlation id; in the default
    /// mode, [`LoadOptions::with_window_mode`], the 2 bits only), so memory follows the
    /// window's events, not the file's. Every other analysis needs the
    /// whole trace: do not use this load for them. An empty annotation (the whole
    /// trace) keeps everything.
    pub fn with_window(mut self, annotation: &str, instances: (usize, usize)) -> Self {
        self.window = (!annotation.is_empty()).then(|| LoadWindow {
            annotation: annotation.to_owned(),
            instances,
            also_keep: Vec::new(),
            records: false,
            mode: Mode::HtaCompat,
        });
        self
    }

    /// With [`LoadOptions::with_window`]: keep what the critical path in `mode` needs
    /// ([`LoadWindow::mode`]).
    pub fn with_window_mode(mut self, mode: Mode) -> Self {
        if let Some(window) = &mut self.window {
            window.mode = mode;
        }
        self
    }

    /// With [`LoadOptions::with_window`]: keep a 40-byte record of every correlated row
    /// ([`crate::model::WindowCorrelations::Records`]) instead of the compact form, for
    /// a file whose compact form was [`crate::model::WindowCorrelations::Unproven`].
    pub fn with_window_records(mut self, on: bool) -> Self {
        if let Some(window) = &mut self.window {
            window.records = on;
        }
        self
    }

    /// With [`LoadOptions::with_window`]: also keeps these events (positions in
    /// `traceEvents`) whatever their time.
    pub fn with_window_events(mut self, mut events: Vec<u64>) -> Self {
        if let Some(window) = &mut self.window {
            events.sort_unstable();
            events.dedup();
            window.also_keep = events;
        }
        self
    }

    /// Sets [`LoadOptions::host_ops`].
    pub fn with_host_ops(mut self, on: bool) -> Self {
        self.host_ops = on;
        self
    }

    /// Sets [`LoadOptions::read_threads`].
    pub fn with_read_threads(mut self, threads: Option<usize>) -> Self {
        self.read_threads = threads;
        self
    }

    /// Sets [`LoadOptions::progress`]: `callback` gets a [`LoadProgress`] about every
    /// [`PROGRESS_INTERVAL_BYTES`] of each file and once when a file is done.
    pub fn with_progress(
        mut self,
        callback: impl Fn(&LoadProgress) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(Arc::new(callback));
        self
    }
}

/// A file reader that counts the bytes it hands out and reports them.
struct CountingReader<R> {
    inner: R,
    progress: Option<(ProgressFn, LoadProgress)>,
    bytes_read: u64,
    next_report: u64,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes_read += n as u64;
        if self.bytes_read >= self.next_report {
            self.next_report = self.bytes_read + PROGRESS_INTERVAL_BYTES;
            if let Some((callback, state)) = &mut self.progress {
                state.bytes_read = self.bytes_read;
                callback(state);
            }
        }
        Ok(n)
    }
}

/// Reads every file, one rank each, in parallel (one thread per file, at most as many
/// at a time as the machine has cores). Ranks come from `distributedInfo.rank`, else
/// from the file's position in `paths`.
pub fn load_paths<P: AsRef<Path> + Sync>(
    paths: &[P],
    options: &LoadOptions,
) -> Result<TraceSet, AnalysisError> {
    let ranked: Vec<(Option<i64>, &Path)> = paths.iter().map(|p| (None, p.as_ref())).collect();
    load_ranks(&ranked, options)
}

/// What to read of the paths a user named: the chosen window of each rank, and what
/// was passed over ([`plan_inputs`]).
#[derive(Clone, Debug)]
pub struct InputPlan {
    /// Each rank and the file of its chosen window, in rank order.
    pub files: Vec<(i64, PathBuf)>,
    /// Every rank's files and the window chosen.
    pub windows: Vec<crate::inputs::RankWindows>,
    /// Directory entries that are not traces.
    pub skipped: Vec<crate::inputs::Skipped>,
}

/// Finds the traces among `paths` ([`crate::inputs::find_traces`]: non-trace files in a
/// directory are skipped) and groups them into ranks by `distributedInfo`, else by
/// process, one window per rank ([`crate::inputs::group_ranks`]).
pub fn plan_inputs<P: AsRef<Path>>(
    paths: &[P],
    window: crate::inputs::Window,
) -> Result<InputPlan, AnalysisError> {
    let found = crate::inputs::find_traces(paths)?;
    let (files, windows) = crate::inputs::group_ranks(&found.files, window)?;
    Ok(InputPlan {
        files,
        windows,
        skipped: found.skipped,
    })
}

impl InputPlan {
    /// The files to read, in rank order.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().map(|(_, path)| path.clone()).collect()
    }

    /// Reads the chosen windows; [`TraceSet::windows`] lists the ranks with several.
    pub fn load(&self, options: &LoadOptions) -> Result<TraceSet, AnalysisError> {
        let ranked: Vec<(Option<i64>, &Path)> = self
            .files
            .iter()
            .map(|(rank, path)| (Some(*rank), path.as_path()))
            .collect();
        let mut set = load_ranks(&ranked, options)?;
        set.windows = self
            .windows
            .iter()
            .filter(|w| w.files.len() > 1)
            .cloned()
            .collect();
        Ok(set)
    }
}

/// [`plan_inputs`] then [`InputPlan::load`]: what `neuronprof analyze PATH…` reads.
pub fn load_inputs<P: AsRef<Path>>(
    paths: &[P],
    window: crate::inputs::Window,
    options: &LoadOptions,
) -> Result<TraceSet, AnalysisError> {
    plan_inputs(paths, window)?.load(options)
}

/// Like [`load_paths`] with explicit ranks (`None`: from the file, else its position).
pub fn load_ranks(
    paths: &[(Option<i64>, &Path)],
    options: &LoadOptions,
) -> Result<TraceSet, AnalysisError> {
    if paths.is_empty() {
        return Err(AnalysisError::NoTraces);
    }
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Measured on the 2-vCPU VM: one worker besides the reading thread reads a 100 MB
    // trace 1.6x as fast when the second core is free (docs/PERFORMANCE.md,
    // trace-format); past about 8 the reading thread's own share is the limit.
    let read_threads = options
        .read_threads
        .unwrap_or_else(|| (workers / paths.len()).saturating_sub(1).min(8));
    let mut results: Vec<Option<Result<RankTrace, AnalysisError>>> =
        (0..paths.len()).map(|_| None).collect();
    for (chunk_index, chunk) in paths.chunks(workers).enumerate() {
        std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .enumerate()
                .map(|(i, (rank, path))| {
                    let file_index = chunk_index * workers + i;
                    scope.spawn(move || load_one(path, *rank, file_index, options, read_threads))
                })
                .collect();
            for (i, handle) in handles.into_iter().enumerate() {
                let result = handle.join().expect("trace loading thread panicked");
                results[chunk_index * workers + i] = Some(result);
            }
        });
    }
    let mut ranks = Vec::with_capacity(paths.len());
    for (position, result) in results.into_iter().enumerate() {
        let mut trace = result.expect("every file was loaded")?;
        if trace.rank < 0 {
            trace.rank = position as i64;
        }
        if ranks.iter().any(|r: &RankTrace| r.rank == trace.rank) {
            return Err(AnalysisError::DuplicateRank {
                rank: trace.rank,
                path: trace.path,
            });
        }
        ranks.push(trace);
    }
    ranks.sort_by_key(|r| r.rank);
    Ok(TraceSet {
        ranks,
        windows: Vec::new(),
    })
}

/// Reads every file like [`load_ranks`], but hands each rank's trace to `summarize` as
/// soon as it is read and keeps only what that returns: at most one trace per worker
/// (one worker per core, at most one per file) is in memory at a time, whatever the
/// number of files. Results come back in the order of `paths`, each with its rank
/// (from the file, else its position, as [`load_ranks`] numbers them). On a read error
/// the workers stop taking files; the error of the earliest file that failed is
/// returned. Duplicate ranks are the caller's to check (the traces are gone by then).
pub fn load_each<T: Send>(
    paths: &[(Option<i64>, &Path)],
    options: &LoadOptions,
    summarize: impl Fn(RankTrace) -> T + Sync,
) -> Result<Vec<T>, AnalysisError> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    if paths.is_empty() {
        return Err(AnalysisError::NoTraces);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cores.min(paths.len());
    // As in `load_ranks`: spare cores decode a file's events.
    let read_threads = options
        .read_threads
        .unwrap_or_else(|| (cores / paths.len()).saturating_sub(1).min(8));
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let summarize = &summarize;
    let done: Vec<Vec<(usize, Result<T, AnalysisError>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    while !failed.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(rank, path)) = paths.get(i) else {
                            break;
                        };
                        let result =
                            load_one(path, rank, i, options, read_threads).map(|mut trace| {
                                if trace.rank < 0 {
                                    trace.rank = i as i64;
                                }
                                summarize(trace)
                            });
                        if result.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        done.push((i, result));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("trace loading thread panicked"))
            .collect()
    });
    let mut done: Vec<(usize, Result<T, AnalysisError>)> = done.into_iter().flatten().collect();
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, result)| result).collect()
}

fn load_one(
    path: &Path,
    rank: Option<i64>,
    file_index: usize,
    options: &LoadOptions,
    read_threads: usize,
) -> Result<RankTrace, AnalysisError> {
    let mut sink = RankSink::new(path.to_path_buf());
    if options.host_ops {
        sink.host_ops = Some(HostOpsBuilder::default());
    }
    if options.timeline {
        sink.timeline = Some(TimelineBuilder {
            window: options.window.as_ref().map(window::WindowState::new),
            ..TimelineBuilder::default()
        });
    }
    let read_error = |source| AnalysisError::Read {
        path: path.to_path_buf(),
        source: Box::new(source),
    };
    // The file is read once, through a counting reader (for progress reports). A
    // `baseTimeNanoseconds` after `traceEvents` is then not pre-scanned: events arrive
    // relative to it (`TimeBase::LateNotApplied`), which is what the model keeps anyway,
    // and a `.json.gz` is not decompressed twice.
    let report = match std::fs::File::open(path) {
        // A Neuron Explorer profile folder: the same events, from its Parquet tables.
        _ if path.is_dir() => {
            let reader = crate::inputs::open_trace(path, options.lenient)?;
            if read_threads > 0 {
                reader.read_parallel(&mut sink, read_threads)
            } else {
                reader.read(&mut sink)
            }
            .map_err(read_error)?
        }
        Ok(file) => {
            let total_bytes = file.metadata().ok().map(|m| m.len());
            let progress = options.progress.clone().map(|callback| {
                let state = LoadProgress {
                    file_index,
                    path: path.to_path_buf(),
                    bytes_read: 0,
                    total_bytes,
                    done: false,
                };
                (callback, state)
            });
            let mut counting = CountingReader {
                inner: file,
                progress,
                bytes_read: 0,
                next_report: PROGRESS_INTERVAL_BYTES,
            };
            let reader = TraceReader::from_reader(&path.display().to_string(), &mut counting)
                .lenient(options.lenient);
            let report = if read_threads > 0 {
                reader.read_parallel(&mut sink, read_threads)
            } else {
                reader.read(&mut sink)
            }
            .map_err(read_error)?;
            if let Some((callback, mut state)) = counting.progress.take() {
                state.bytes_read = counting.bytes_read;
                state.done = true;
                callback(&state);
            }
            report
        }
        // Let the reader produce its error (with file and offset) or lenient report.
        Err(_) => TraceReader::open(path)
            .lenient(options.lenient)
            .read(&mut sink)
            .map_err(read_error)?,
    };
    let mut trace = sink.trace;
    trace.host_ops = sink.host_ops.map(HostOpsBuilder::finish);
    trace.timeline = sink.timeline.map(|mut t| {
        if let Some(window) = t.window.take() {
            trace.counts.kept_rows = trace.rows.len() as u64;
            trace.rows.shrink_to_fit();
            t.timeline.window = Some(window.finish());
        }
        t.timeline.events.shrink_to_fit();
        t.timeline
    });
    if let TimeBase::LateNotApplied(base) = report.time_base {
        trace.base_ns = base;
    }
    trace.counts.events = report.events_delivered;
    trace.counts.events_skipped = report.events_skipped;
    // The reader's damage first, then what the events' arguments held (added as read).
    let read_damage: Vec<String> = report
        .skipped_examples
        .iter()
        .chain(report.damage.as_ref())
        .map(ToString::to_string)
        .collect();
    trace.damage.splice(0..0, read_damage);
    let meta = &report.meta;
    // A Neuron Explorer profile: what its lenient read skipped (table, column, row group).
    if let Some(findings) = meta.get(neuron_explorer::FINDINGS_KEY) {
        let problems = findings.to_value()["problems"].clone();
        trace
            .damage
            .extend(serde_json::from_value::<Vec<String>>(problems).unwrap_or_default());
    }
    trace.rank = rank.or_else(|| meta.rank()).unwrap_or(-1);
    trace.backend = meta.distributed_info().and_then(|d| d.backend);
    trace.host_name = meta
        .get("host_name")
        .and_then(|raw| raw.deserialize::<String>().ok())
        .filter(|name| !name.is_empty());
    let topology_key = crate::analyses::collectives::NEURON_TOPOLOGY_KEY;
    trace.neuron_place = match meta.get(topology_key).map(|raw| raw.deserialize()) {
        Some(Ok(place)) => Some(place),
        Some(Err(e)) => {
            trace.damage.push(format!(
                "the `{topology_key}` member is not a topology ({e}); its collectives are judged against no link"
            ));
            None
        }
        None => None,
    };
    trace.compile_meta = meta
        .get(crate::analyses::compile::TRACE_KEY)
        .map(|raw| raw.as_str().to_owned());
    trace.device_memory_bytes = meta
        .device_properties()
        .iter()
        .filter_map(|d| {
            let bytes = i64::try_from(d.total_global_mem_bytes?).ok()?;
            Some((d.device_id?, bytes))
        })
        .collect();
    trace.devices = meta
        .device_properties()
        .iter()
        .map(|d| {
            let raw = &d.raw;
            let text = |key: &str| raw.get(key).and_then(|v| v.as_str()).map(str::to_owned);
            DeviceInfo {
                id: d.device_id.unwrap_or(-1),
                name: d.name.clone(),
                device_type: text("deviceType"),
                core_version: raw.get("coreVersion").map(|v| match v.as_str() {
                    Some(text) => text.to_owned(),
                    None => v.to_string(),
                }),
                lnc: raw.get("lnc").and_then(|v| v.as_i64()),
                profile: text("profile"),
                peak_tflops: raw
                    .get("peakTflops")
                    .and_then(|v| v.as_object())
                    .map(|peaks| {
                        peaks
                            .iter()
                            .filter_map(|(dtype, v)| Some((dtype.clone(), v.as_f64()?)))
                            .collect()
                    })
                    .unwrap_or_default(),
                memory_bytes: d.total_global_mem_bytes.and_then(|b| i64::try_from(b).ok()),
                num_sms: raw.get("numSms").and_then(|v| v.as_i64()),
            }
        })
        .collect();
    Ok(trace)
}

/// The sink that builds a [`RankTrace`].
struct RankSink {
    trace: RankTrace,
    base_ns: i64,
    host_ops: Option<HostOpsBuilder>,
    timeline: Option<TimelineBuilder>,
    /// Device rows read so far per (process group, collective name), for
    /// [`super::CollectiveArgs::occurrence`].
    collective_occurrences: FastMap<(String, String), u64>,
}

/// Builds [`Timeline`]: interns names, categories and threads as events arrive.
#[derive(Default)]
struct TimelineBuilder {
    timeline: Timeline,
    thread_ids: FastMap<(Option<i64>, Option<i64>), u32>,
    /// With [`LoadOptions::with_window`]: what is kept.
    window: Option<window::WindowState>,
}

impl TimelineBuilder {
    fn thread(&mut self, pid: Option<i64>, tid: Option<i64>) -> u32 {
        let threads = &mut self.timeline.threads;
        *self.thread_ids.entry((pid, tid)).or_insert_with(|| {
            threads.push((pid, tid));
            (threads.len() - 1) as u32
        })
    }
}

/// Builds [`HostOps`]: interns names, `Input Dims` texts and threads as events arrive.
#[derive(Default)]
struct HostOpsBuilder {
    ops: HostOps,
    thread_ids: std::collections::HashMap<
        (IdentKey, IdentKey),
        u32,
        std::hash::BuildHasherDefault<super::NameHasher>,
    >,
    /// The thread of the previous operator (operators of one thread come in runs).
    last_thread: Option<(IdentKey, IdentKey, u32)>,
    /// The id of the empty string (no `Input Dims`).
    no_dims: Option<NameId>,
}

impl HostOpsBuilder {
    fn thread(&mut self, pid: Option<&Ident<'_>>, tid: Option<&Ident<'_>>) -> u32 {
        if let Some((p, t, id)) = &self.last_thread {
            if ident_is(p, pid) && ident_is(t, tid) {
                return *id;
            }
        }
        let key = (ident_key(pid), ident_key(tid));
        let threads = &mut self.ops.threads;
        let id = *self.thread_ids.entry(key.clone()).or_insert_with(|| {
            threads.push(key.clone());
            (threads.len() - 1) as u32
        });
        self.last_thread = Some((key.0, key.1, id));
        id
    }

    fn no_dims(&mut self) -> NameId {
        *self
            .no_dims
            .get_or_insert_with(|| self.ops.names.intern(""))
    }

    fn finish(mut self) -> HostOps {
        self.ops.operators.shrink_to_fit();
        self.ops.spans.shrink_to_fit();
        self.ops
    }
}

fn ident_key(ident: Option<&Ident<'_>>) -> IdentKey {
    match ident {
        None => IdentKey::Absent,
        Some(Ident::Num(n)) => IdentKey::Num(*n),
        Some(Ident::Str(s)) => IdentKey::Text(s.to_string()),
    }
}

fn ident_is(key: &IdentKey, ident: Option<&Ident<'_>>) -> bool {
    match (key, ident) {
        (IdentKey::Absent, None) => true,
        (IdentKey::Num(a), Some(Ident::Num(b))) => a == b,
        (IdentKey::Text(a), Some(Ident::Str(b))) => a.as_str() == &**b,
        _ => false,
    }
}

impl RankSink {
    fn new(path: PathBuf) -> Self {
        RankSink {
            trace: RankTrace {
                rank: -1,
                path,
                names: Names::default(),
                rows: Vec::new(),
                memory: Vec::new(),
                counts: RankCounts::default(),
                ts_is_float: false,
                min_ts_rel_ns: None,
                min_host_ts_rel_ns: None,
                backend: None,
                compile_meta: None,
                host_name: None,
                neuron_place: None,
                base_ns: 0,
                damage: Vec::new(),
                device_memory_bytes: Vec::new(),
                devices: Vec::new(),
                engine_rows: Vec::new(),
                graph_passes: Vec::new(),
                graph_passes_unreadable: Vec::new(),
                dma_rows: Vec::new(),
                throttle_rows: Vec::new(),
                max_end_rel_ns: None,
                host_ops: None,
                timeline: None,
            },
            base_ns: 0,
            host_ops: None,
            timeline: None,
            collective_occurrences: FastMap::default(),
        }
    }
}

impl TraceSink for RankSink {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.base_ns = meta.base_time_ns().unwrap_or(0);
        self.trace.base_ns = self.base_ns;
        ControlFlow::Continue(())
    }

    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        let picked = pick::pick(event, self.base_ns, self.host_ops.is_some());
        self.add(index, picked, EventText::new(&[]));
        ControlFlow::Continue(())
    }
}

/// The parallel read: [`pick`] on the worker threads, [`RankSink::add`] in order.
impl ParallelSink for RankSink {
    type Item = Picked<'static>;
    type Mapper = Picker;

    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        TraceSink::on_header(self, meta)
    }

    fn mapper(&self) -> Picker {
        Picker {
            base_ns: self.base_ns,
            host_ops: self.host_ops.is_some(),
        }
    }

    fn consume(&mut self, index: u64, picked: Picked<'static>) -> ControlFlow<()> {
        self.consume_in(index, picked, EventText::new(&[]))
    }

    fn consume_in(
        &mut self,
        index: u64,
        picked: Picked<'static>,
        text: EventText<'_>,
    ) -> ControlFlow<()> {
        self.add(index, picked, text);
        ControlFlow::Continue(())
    }
}

impl RankSink {
    /// Adds one picked event, in event order (`index`: its position in `traceEvents`;
    /// `text`: the event's text, where its spans point).
    fn add(&mut self, index: u64, picked: Picked<'_>, text: EventText<'_>) {
        // A windowed load is for the critical path, which needs neither memory events
        // nor instruction and DMA rows: they would grow with the file.
        let windowed = self.timeline.as_ref().is_some_and(|t| t.window.is_some());
        let trace = &mut self.trace;
        let c = match picked {
            Picked::NoTs => {
                trace.ts_is_float = true;
                return;
            }
            Picked::Other { fractional_ts } => {
                trace.ts_is_float |= fractional_ts;
                return;
            }
            Picked::Memory {
                fractional_ts,
                event,
            } => {
                trace.ts_is_float |= fractional_ts;
                if !windowed {
                    trace.memory.push(event);
                }
                return;
            }
            Picked::Complete(c) => c,
        };
        trace.ts_is_float |= c.fractional_ts;
        let (ts_rel_ns, dur_ns, args) = (c.ts_rel_ns, c.dur_ns, &c.args);
        let (category, name) = (c.category.as_str(), c.name.get(text));
        trace.counts.complete_rows += 1;
        let end = ts_rel_ns.saturating_add(dur_ns);
        trace.max_end_rel_ns = Some(trace.max_end_rel_ns.map_or(end, |m| m.max(end)));
        let device = c.pid.as_ref().and_then(Ident::as_i64).unwrap_or(-1);
        match category {
            _ if windowed => {}
            "neuron_instruction" => {
                let engine = args.engine.as_deref().unwrap_or(name);
                let engine = trace.names.intern(engine);
                trace.engine_rows.push(EngineRow {
                    device,
                    core: args.core.unwrap_or(0),
                    engine,
                    ts_rel_ns,
                    dur_ns,
                    flops: args.flops.unwrap_or(0),
                    is_wait: name == "semaphore_wait",
                });
            }
            "neuron_throttle" => trace.throttle_rows.push(ThrottleRow {
                device,
                core: args.core.unwrap_or(0),
                ts_rel_ns,
                dur_ns,
            }),
            "neuron_dma" => trace.dma_rows.push(DmaRow {
                device,
                queue: args.dma_queue.unwrap_or(-1),
                ts_rel_ns,
                dur_ns,
                bytes: args.bytes,
            }),
            _ => {}
        }
        let (stream, correlation) = (args.stream, args.correlation);
        let is_sync = name == "Event Sync" || name == "Context Sync";
        let is_device = (stream >= 0 && correlation >= 0) || is_sync;
        min_into(&mut trace.min_ts_rel_ns, ts_rel_ns);
        if !is_device {
            min_into(&mut trace.min_host_ts_rel_ns, ts_rel_ns);
        }
        let keep = stream != -1
            || correlation != -1
            || is_sync
            || index == 0
            || name.starts_with("ProfilerStep")
            // A gloo collective: its work's span, the collective's only row.
            || (category == "user_annotation" && name.starts_with("gloo:"));
        if let Some(host) = &mut self.host_ops {
            if c.device_work && args.external_id >= 0 {
                *host
                    .ops
                    .device_ns_by_external_id
                    .entry(args.external_id)
                    .or_default() += dur_ns;
            }
            if c.host_operator {
                let input_dims = match &c.input_dims {
                    Some(dims) => host.ops.names.intern(dims.get(text)),
                    None => host.no_dims(),
                };
                let op = HostOp {
                    ts_rel_ns,
                    dur_ns,
                    external_id: args.external_id,
                    name: host.ops.names.intern(name),
                    input_dims,
                    thread: host.thread(c.pid.as_ref(), c.tid.as_ref()),
                    in_rows: keep,
                    kind: c.kind,
                };
                if let Some(texts) = &c.shape_args {
                    let op = host.ops.operators.len() as u32;
                    let mut ids = [0; 3];
                    for (id, t) in ids.iter_mut().zip(texts.iter()) {
                        *id = match t {
                            Some(t) => host.ops.names.intern(t.get(text)),
                            None => host.no_dims(),
                        };
                    }
                    host.ops.shape_args.push(OpShapeArgs {
                        op,
                        input_types: ids[0],
                        input_strides: ids[1],
                        concrete_inputs: ids[2],
                    });
                }
                host.ops.operators.push(op);
            } else if !keep {
                let name = host.ops.names.intern(name);
                host.ops.spans.push(HostSpan {
                    ts_rel_ns,
                    dur_ns,
                    name,
                });
            }
        }
        // A windowed load: is this event kept (and does it close the window)?
        let mut in_window = true;
        if let Some(timeline) = &mut self.timeline {
            if let Some(window) = &mut timeline.window {
                let seen = window::Seen {
                    index,
                    name,
                    ts_rel_ns,
                    dur_ns,
                    stream,
                    correlation,
                    is_row: keep,
                    is_sync,
                    cuda_sync: category == "cuda_sync",
                };
                let (kept, closed) = window.see(&seen);
                in_window = kept;
                if closed {
                    window.prune(&mut trace.rows, &trace.names, &mut timeline.timeline);
                }
            }
            if !in_window {
                // Outside the window: dropped.
            } else if !keep {
                let pid = c.pid.as_ref().and_then(Ident::as_i64);
                let tid = c.tid.as_ref().and_then(Ident::as_i64);
                let thread = timeline.thread(pid, tid);
                let names = &mut timeline.timeline.names;
                let event = TimelineEvent {
                    ts_rel_ns,
                    dur_ns,
                    event_index: index,
                    name: names.intern(name),
                    category: names.intern(category),
                    thread,
                };
                timeline.timeline.events.push(event);
            } else if args.wait_on_stream != -1 || args.wait_on_event_corr != -1 {
                timeline.timeline.waits.push(SyncWait {
                    event_index: index,
                    wait_on_stream: args.wait_on_stream,
                    wait_on_event_corr: args.wait_on_event_corr,
                });
            }
        }
        // Collectives are numbered over the whole file, also where a window drops some.
        let collective = if keep && (in_window || stream != -1) {
            let gloo = || {
                let types = c.shape_args.as_ref().and_then(|a| a[0].as_ref());
                host_collective::gloo_collective(
                    category,
                    name,
                    c.input_dims.as_ref().map(|t| t.get(text)),
                    types.map(|t| t.get(text)),
                )
            };
            let args = match args.collective() {
                Some(Ok(args)) => Some(args),
                Some(Err(why)) => {
                    trace.damage.push(format!("event {index} ({name}): {why}"));
                    None
                }
                None => gloo(),
            };
            args.map(|mut args| {
                if stream != -1 {
                    let key = (args.process_group.clone(), args.collective.clone());
                    let n = self.collective_occurrences.entry(key).or_default();
                    *n += 1;
                    args.occurrence = *n;
                }
                args
            })
        } else {
            None
        };
        if !keep || !in_window {
            return;
        }
        trace.counts.kept_rows += 1;
        let row = Row {
            event_index: index,
            category: trace.names.intern(category),
            name: trace.names.intern(name),
            pid: c.pid.as_ref().and_then(Ident::as_i64),
            tid: c.tid.as_ref().and_then(Ident::as_i64),
            stream,
            correlation,
            ts_rel_ns,
            dur_ns,
            bytes: args.bytes,
            memory_bw_gbps: args.memory_bw_gbps,
            collective,
            flops: args.flops.unwrap_or(-1),
            engine_busy: (!args.engine_busy().is_empty()).then(|| {
                args.engine_busy()
                    .iter()
                    .map(|(engine, ns)| (trace.names.intern(engine), *ns))
                    .collect()
            }),
        };
        if let Some((passes, spans, costs)) = args.graph_passes() {
            let row = trace.rows.len();
            let parsed = GraphPasses::parse(row, passes, spans, &mut trace.names);
            // Costs that do not read make the passes unreadable: said, never dropped.
            let parsed = match costs {
                Some(costs) => parsed.and_then(|p| p.with_costs(costs)),
                None => parsed,
            };
            match parsed {
                Some(parsed) => trace.graph_passes.push(parsed),
                None => trace.graph_passes_unreadable.push(index),
            }
        }
        trace.rows.push(row);
    }
}

fn min_into(slot: &mut Option<i64>, value: i64) {
    *slot = Some(slot.map_or(value, |m| m.min(value)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_device_runtime_and_step_rows_only() {
        let json = br#"{"baseTimeNanoseconds": 1000000, "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1.5, "dur": 2},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 0.5, "dur": 2},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": 2.0, "dur": 1, "args": {"correlation": 7}},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5.25, "dur": 1,
             "args": {"stream": "7", "correlation": 7}},
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1,
             "ts": 1.0, "dur": 10},
            {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
             "tid": "x", "ts": 0.0, "dur": 10}
        ]}"#;
        let mut sink = RankSink::new("mem.json".into());
        TraceReader::from_slice("mem.json", json)
            .read(&mut sink)
            .unwrap();
        let t = sink.trace;
        assert_eq!(t.counts.complete_rows, 5);
        let names: Vec<&str> = t.rows.iter().map(|r| t.name(r)).collect();
        assert_eq!(
            names,
            ["aten::add", "cudaLaunchKernel", "k", "ProfilerStep#3"]
        );
        assert_eq!(
            t.rows[2].stream, 7,
            "numeric strings are streams, as in HTA"
        );
        assert_eq!(
            t.rows[2].ts_rel_ns, 5_250,
            "relative to baseTimeNanoseconds"
        );
        assert!(t.ts_is_float);
        assert_eq!(t.min_ts_rel_ns, Some(500));
        assert_eq!(t.device_type(), "NVIDIA GPU");
    }
}
