//! From the paths a user gives to the traces to analyze: which files are traces, and
//! which belong to one rank.
//!
//! [`find_traces`] expands paths: a file is taken as given; a directory contributes the
//! trace files directly in it (not in its subfolders), sorted by name: Kineto's
//! `*.pt.trace.json` / `*.pt.trace.json.gz`, and any other `.json` / `.json.gz` whose
//! top level is an object with a `traceEvents` array ([`is_trace_document`]). Everything
//! else there (torch's `key_averages.json`, TensorBoard's event files, subfolders) is
//! skipped, one [`Skipped`] line each, so a run folder analyzes as it is.
//!
//! A Neuron Explorer profile folder (`…@latest`, Parquet tables: the `neuron-explorer`
//! crate) is a trace too: given as a path, found in a given directory, or found under a
//! given data path's `profiles/global/`; [`open_trace`] opens either kind.
//!
//! TorchNeuron's framework trace (`trace.json`, Kineto JSON without device rows) and the
//! profile of the same process are one rank: [`find_traces`] pairs a Kineto file with a
//! profile whose host rows have the file's process id (the nearest in time when several
//! do) and lists the pair in [`TraceInputs::paired`] in place of the file; from then on
//! [`open_trace`] reads that profile merged with its trace
//! (`neuron_explorer::open_trace_with_framework`: host operators linked to their device
//! executions). The pairing is remembered for the process, by profile path, so every
//! reader of the path (the loader, `inspect`, `export`, replay) sees the same merge.
//!
//! [`group_ranks`] decides which files are one rank. A file's rank is its
//! `distributedInfo.rank`; a file without one belongs to the process that wrote it
//! (`host_name` and the pid of its first host event). Files of one rank are that rank's
//! profiling *windows* (a `torch.profiler.schedule` with `repeat` writes one file per
//! cycle): the analyses take one window per rank, the latest by default
//! ([`Window::Latest`]; windows are ordered by their first timestamp), because each
//! analysis describes one stretch of time and the gaps between cycles are not idle
//! device time. [`RankWindows`] says which files each rank had and which was taken.
//! Processes without a `distributedInfo` rank are numbered in the order of their files,
//! after the ranks the other files claim.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;
use trace_format::{Event, Ident, Phase, TraceMeta, TraceReader, TraceSink};

use crate::error::AnalysisError;

pub use neuron_explorer::{find_profiles, is_profile_dir};

/// The trace files found, and what was passed over.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceInputs {
    /// Trace files, in the order found (given files first as given, each directory's
    /// sorted by name).
    pub files: Vec<PathBuf>,
    /// Entries of the given directories that are not traces.
    pub skipped: Vec<Skipped>,
    /// Framework traces read merged with a profile of the same process (the trace is
    /// not in [`TraceInputs::files`]; the profile is).
    pub paired: Vec<Paired>,
}

/// A framework trace merged with the profile of its process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Paired {
    /// The profile folder.
    pub profile: PathBuf,
    /// The framework trace (Kineto JSON).
    pub framework: PathBuf,
    /// The process both recorded.
    pub pid: i64,
}

impl std::fmt::Display for Paired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} read merged with {} (framework trace and system profile of process {})",
            self.profile.display(),
            self.framework.display(),
            self.pid
        )
    }
}

/// Profile folder → the framework trace it is read with (see the module docs).
static FRAMEWORK_TRACES: Mutex<BTreeMap<PathBuf, PathBuf>> = Mutex::new(BTreeMap::new());

/// The framework trace [`open_trace`] merges with the profile at `profile`, if paired.
pub fn paired_framework(profile: &Path) -> Option<PathBuf> {
    FRAMEWORK_TRACES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(profile)
        .cloned()
}

/// A directory entry that is not a trace, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The entry.
    pub path: PathBuf,
    /// Why it is not read.
    pub reason: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped {}: {}", self.path.display(), self.reason)
    }
}

/// Expands `paths` into trace files (see the module docs). Errors name the path once:
/// a path that does not exist or cannot be listed, a directory with no trace in it.
pub fn find_traces<P: AsRef<Path>>(paths: &[P]) -> Result<TraceInputs, AnalysisError> {
    let mut out = TraceInputs::default();
    let input_error = |path: &Path, reason: String| AnalysisError::Input {
        path: path.to_path_buf(),
        reason,
    };
    for path in paths {
        let path = path.as_ref();
        let meta = std::fs::metadata(path).map_err(|e| input_error(path, e.to_string()))?;
        if !meta.is_dir() || neuron_explorer::is_profile_dir(path) {
            out.files.push(path.to_path_buf());
            continue;
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .and_then(|dir| dir.map(|e| e.map(|e| e.path())).collect())
            .map_err(|e| input_error(path, format!("cannot list it: {e}")))?;
        entries.sort();
        let before = out.files.len();
        // A Neuron Explorer data path: its profiles, then what else the folder holds.
        let data_path = path.join("profiles").join("global");
        if data_path.is_dir() {
            out.files.extend(neuron_explorer::find_profiles(path));
            entries.retain(|e| e.file_name().is_none_or(|n| n != "profiles"));
        }
        for entry in entries {
            match classify(&entry) {
                Ok(()) => out.files.push(entry),
                Err(reason) => out.skipped.push(Skipped {
                    path: entry,
                    reason,
                }),
            }
        }
        if out.files.len() == before {
            return Err(input_error(
                path,
                "the directory holds no trace (a .json or .json.gz file with traceEvents, \
                 or a Neuron Explorer profile folder)"
                    .to_owned(),
            ));
        }
    }
    pair_framework_traces(&mut out);
    Ok(out)
}

/// Pairs each profile with the Kineto file of the same process that has no device rows
/// (TorchNeuron's framework trace), the nearest in time when several match; see the
/// module docs. Only reads anything when both kinds are among the inputs.
fn pair_framework_traces(out: &mut TraceInputs) {
    let (profiles, kineto): (Vec<&PathBuf>, Vec<&PathBuf>) =
        out.files.iter().partition(|p| p.is_dir());
    if profiles.is_empty() || kineto.is_empty() {
        return;
    }
    let probes: Vec<(PathBuf, Probe)> = kineto
        .iter()
        .map(|path| {
            let mut probe = Probe::default();
            let _ = TraceReader::open(path).lenient(true).read(&mut probe);
            ((*path).clone(), probe)
        })
        .collect();
    let mut taken: Vec<PathBuf> = Vec::new();
    let mut paired = Vec::new();
    for profile in profiles {
        let pids = neuron_explorer::framework::profile_pids(profile);
        let first_ns = profile_first_ns(profile);
        let candidate = probes
            .iter()
            .filter(|(path, probe)| {
                probe.pid.is_some_and(|pid| pids.contains(&pid)) && !taken.contains(path)
            })
            .filter(|(path, _)| !has_device_rows(path))
            .min_by_key(|(_, probe)| match (probe.first_ts_ns, first_ns) {
                (Some(a), Some(b)) => (a - b).unsigned_abs(),
                _ => u64::MAX,
            });
        if let Some((path, probe)) = candidate {
            taken.push(path.clone());
            paired.push(Paired {
                profile: profile.clone(),
                framework: path.clone(),
                pid: probe.pid.unwrap_or_default(),
            });
        }
    }
    out.files.retain(|f| !taken.contains(f));
    let mut map = FRAMEWORK_TRACES.lock().unwrap_or_else(|p| p.into_inner());
    for p in &paired {
        map.insert(p.profile.clone(), p.framework.clone());
    }
    out.paired.extend(paired);
}

/// A profile's earliest event time, from its first events (`None` when unreadable).
fn profile_first_ns(profile: &Path) -> Option<i64> {
    let mut probe = Probe::default();
    let reader = neuron_explorer::open_trace(profile, true).ok()?;
    let _ = reader.read(&mut probe);
    probe.first_ts_ns
}

/// Whether a Kineto file has device work (then it is no framework-only trace).
fn has_device_rows(path: &Path) -> bool {
    let mut device = false;
    let mut sink = trace_format::from_fn(|_, e: &Event<'_>| {
        let category = e.category.as_ref().map(|c| c.normalized());
        if e.phase == Phase::Complete
            && category
                .as_ref()
                .is_some_and(|c| crate::classify::is_device_work_category(c.as_str()))
        {
            device = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    let _ = TraceReader::open(path).lenient(true).read(&mut sink);
    device
}

/// `Ok` for a trace file in a directory, else why it is skipped.
fn classify(entry: &Path) -> Result<(), String> {
    let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if entry.is_dir() && neuron_explorer::is_profile_dir(entry) {
        return Ok(());
    }
    if entry.is_dir() {
        return Err("a folder (folders are not searched; give it as a path of its own)".into());
    }
    if name.ends_with(".pt.trace.json") || name.ends_with(".pt.trace.json.gz") {
        return Ok(());
    }
    if !(name.ends_with(".json") || name.ends_with(".json.gz")) {
        return Err("not a .json or .json.gz file".into());
    }
    match is_trace_document(entry) {
        Ok(true) => Ok(()),
        Ok(false) => Err("JSON without traceEvents at its top level: not a trace".into()),
        Err(e) => Err(format!("cannot be read: {e}")),
    }
}

/// A reader of the trace at `path`: a Kineto file, or a Neuron Explorer profile folder
/// read as the same events (`neuron_explorer::open_trace`). Errors opening a profile
/// (not a profile, an unknown schema version; in strict mode, damage its survey met)
/// name the path.
pub fn open_trace(path: &Path, lenient: bool) -> Result<TraceReader<'static>, AnalysisError> {
    if path.is_dir() {
        let opened = match paired_framework(path) {
            Some(framework) => {
                neuron_explorer::open_trace_with_framework(path, &framework, lenient)
            }
            None => neuron_explorer::open_trace(path, lenient),
        };
        return opened.map_err(|e| AnalysisError::Input {
            path: path.to_path_buf(),
            reason: e.to_string(),
        });
    }
    Ok(TraceReader::open(path).lenient(lenient))
}

/// Whether the file (plain or gzip JSON) is an object with a `traceEvents` array at its
/// top level. Reads only as far as that key (or to the end of the top-level object),
/// skipping the values before it without parsing them.
pub fn is_trace_document(path: &Path) -> std::io::Result<bool> {
    let mut file = BufReader::new(std::fs::File::open(path)?);
    let gzip = file.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    let reader: Box<dyn BufRead> = if gzip {
        Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(file)))
    } else {
        Box::new(file)
    };
    Ok(TopLevel::new(reader).has_trace_events().unwrap_or(false))
}

/// A scanner of a JSON document's top-level object: keys, and values skipped.
struct TopLevel<R: BufRead> {
    reader: R,
}

impl<R: BufRead> TopLevel<R> {
    fn new(reader: R) -> Self {
        TopLevel { reader }
    }

    /// The next byte; `None` at the end or on a read error.
    fn next(&mut self) -> Option<u8> {
        let byte = *self.reader.fill_buf().ok()?.first()?;
        self.reader.consume(1);
        Some(byte)
    }

    /// The next byte that is not JSON whitespace (a UTF-8 byte-order mark is skipped
    /// too).
    fn significant(&mut self) -> Option<u8> {
        loop {
            match self.next()? {
                b' ' | b'\t' | b'\n' | b'\r' | 0xef | 0xbb | 0xbf => {}
                b => return Some(b),
            }
        }
    }

    /// `None` on malformed input.
    fn has_trace_events(&mut self) -> Option<bool> {
        if self.significant()? != b'{' {
            return Some(false);
        }
        loop {
            match self.significant()? {
                b'}' => return Some(false),
                b'"' => {}
                _ => return None,
            }
            let key = self.string()?;
            if self.significant()? != b':' {
                return None;
            }
            let first = self.significant()?;
            if key == b"traceEvents" {
                return Some(first == b'[');
            }
            let after = self.skip_value(first)?;
            match after {
                b',' => {}
                b'}' => return Some(false),
                _ => return None,
            }
        }
    }

    /// The rest of a string whose `"` was read.
    fn string(&mut self) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            match self.next()? {
                b'"' => return Some(out),
                b'\\' => {
                    out.push(b'\\');
                    out.push(self.next()?);
                }
                b => out.push(b),
            }
        }
    }

    /// Skips a value starting with `first`; returns the significant byte after it.
    fn skip_value(&mut self, first: u8) -> Option<u8> {
        match first {
            b'"' => {
                self.string()?;
                self.significant()
            }
            b'{' | b'[' => {
                let mut depth = 1usize;
                while depth > 0 {
                    match self.next()? {
                        b'"' => {
                            self.string()?;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth -= 1,
                        _ => {}
                    }
                }
                self.significant()
            }
            _ => loop {
                // A number or a literal: up to the next separator.
                match self.next()? {
                    b',' => return Some(b','),
                    b'}' => return Some(b'}'),
                    b' ' | b'\t' | b'\n' | b'\r' => return self.significant(),
                    _ => {}
                }
            },
        }
    }
}

/// Which of a rank's windows (files) the analyses take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Window {
    /// The latest (by first timestamp).
    #[default]
    Latest,
    /// The n-th, counting from 1 in time order.
    Nth(usize),
}

/// How a rank's files were found to be one rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupedBy {
    /// `distributedInfo.rank` in each file.
    DistributedInfo,
    /// The same host and process id (no `distributedInfo`).
    Process,
}

/// The files of one rank and the one analyzed. JSON: `{"rank", "grouped_by", "files":
/// [path…] (time order), "chosen": index into files}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RankWindows {
    /// The rank.
    pub rank: i64,
    /// How its files were grouped.
    pub grouped_by: GroupedBy,
    /// Its files, in time order.
    pub files: Vec<PathBuf>,
    /// The index of the file analyzed.
    pub chosen: usize,
    /// Why the chosen window is not the latest one, when it is not (JSON: `null` when it
    /// is the latest).
    pub why: Option<String>,
}

/// What [`group_ranks`] gives: each rank and the file of its chosen window (rank order),
/// and every rank's windows.
pub type Grouping = (Vec<(i64, PathBuf)>, Vec<RankWindows>);

/// What [`group_ranks`] learns of a file from its header and first events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Probe {
    rank: Option<i64>,
    host: Option<String>,
    pid: Option<i64>,
    first_ts_ns: Option<i64>,
}

/// Events read at most, looking for the first host event's pid.
const PROBE_EVENTS: u64 = 100_000;

impl TraceSink for Probe {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.rank = meta.rank();
        self.host = meta
            .get("host_name")
            .and_then(|raw| raw.deserialize::<String>().ok());
        ControlFlow::Continue(())
    }

    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        if self.first_ts_ns.is_none() && event.phase != Phase::Metadata {
            self.first_ts_ns = event.ts_ns;
        }
        let host_category = event.category.as_ref().is_some_and(|c| {
            let c = c.normalized();
            matches!(c.as_str(), "cpu_op" | "user_annotation" | "python_function")
                || crate::classify::is_runtime_call_category(c.as_str())
        });
        if host_category && event.phase == Phase::Complete {
            if let Some(Ident::Num(pid)) = &event.pid {
                self.pid = Some(*pid);
                return ControlFlow::Break(());
            }
        }
        if index >= PROBE_EVENTS {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

/// Groups `files` into ranks (see the module docs) and picks each rank's window: the
/// files to load with their rank, in rank order, and what each rank had.
pub fn group_ranks(files: &[PathBuf], window: Window) -> Result<Grouping, AnalysisError> {
    let probes: Vec<Probe> = files
        .iter()
        .map(|path| {
            let mut probe = Probe::default();
            // Damage is the loader's to report, with its location; a probe that fails
            // leaves the file a group of its own.
            if let Ok(reader) = open_trace(path, true) {
                let _ = reader.read(&mut probe);
            }
            probe
        })
        .collect();
    // Groups in the order of their first file: key, files (index into `files`).
    #[derive(PartialEq)]
    enum Key {
        Rank(i64),
        Process(Option<String>, i64),
        Alone(usize),
    }
    let mut groups: Vec<(Key, Vec<usize>)> = Vec::new();
    for (i, probe) in probes.iter().enumerate() {
        let key = match (probe.rank, probe.pid) {
            (Some(rank), _) => Key::Rank(rank),
            (None, Some(pid)) => Key::Process(probe.host.clone(), pid),
            (None, None) => Key::Alone(i),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    let claimed: Vec<i64> = groups
        .iter()
        .filter_map(|(k, _)| match k {
            Key::Rank(rank) => Some(*rank),
            _ => None,
        })
        .collect();
    let mut next_free = 0i64;
    let mut chosen = Vec::new();
    let mut windows = Vec::new();
    for (key, mut members) in groups {
        let (rank, grouped_by) = match key {
            Key::Rank(rank) => (rank, GroupedBy::DistributedInfo),
            _ => {
                while claimed.contains(&next_free) {
                    next_free += 1;
                }
                next_free += 1;
                (next_free - 1, GroupedBy::Process)
            }
        };
        members.sort_by_key(|&i| (probes[i].first_ts_ns.unwrap_or(i64::MAX), i));
        let mut why = None;
        let pick = match window {
            Window::Latest => {
                let paths: Vec<&Path> = members.iter().map(|&i| files[i].as_path()).collect();
                let (pick, reason) = latest_active_window(&paths);
                why = reason;
                pick
            }
            Window::Nth(n) if (1..=members.len()).contains(&n) => n - 1,
            Window::Nth(n) => {
                return Err(AnalysisError::NoSuchWindow {
                    window: n,
                    rank,
                    files: members.iter().map(|&i| files[i].clone()).collect(),
                })
            }
        };
        chosen.push((rank, files[members[pick]].clone()));
        windows.push(RankWindows {
            rank,
            grouped_by,
            files: members.iter().map(|&i| files[i].clone()).collect(),
            chosen: pick,
            why,
        });
    }
    chosen.sort_by_key(|(rank, _)| *rank);
    windows.sort_by_key(|w| w.rank);
    Ok((chosen, windows))
}

/// Of one rank's windows in time order, the one [`Window::Latest`] takes, and why when
/// it is not the last file: the latest window that holds a complete `ProfilerStep` and
/// device activity. A `torch.profiler.schedule` that ends mid-cycle (six steps with
/// `wait=1, warmup=1, active=2`) writes a last, nearly empty window (its step
/// annotations and a synchronize) that would report no device activity for a run that
/// kept the device busy. Without such a window: the latest with a step, else the latest.
/// Only a rank with several windows is scanned, from the latest back, each file up to
/// the first step and device row.
fn latest_active_window(paths: &[&Path]) -> (usize, Option<String>) {
    let last = paths.len() - 1;
    if last == 0 {
        return (0, None);
    }
    let mut probes: Vec<(usize, ActivityProbe)> = Vec::new();
    for (i, path) in paths.iter().enumerate().rev() {
        let mut probe = ActivityProbe::default();
        // Damage is the loader's to report when the window is read.
        let _ = TraceReader::open(path).lenient(true).read(&mut probe);
        let active = probe.step && probe.device;
        probes.push((i, probe));
        if active {
            break;
        }
    }
    let pick = probes
        .iter()
        .find(|(_, p)| p.step && p.device)
        .or_else(|| probes.iter().find(|(_, p)| p.step))
        .map_or(last, |(i, _)| *i);
    if pick == last {
        return (last, None);
    }
    let name = |p: &Path| {
        p.file_name()
            .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
    };
    let passed: Vec<String> = probes
        .iter()
        .filter(|(i, _)| *i > pick)
        .map(|(i, p)| {
            let lacks = match (p.step, p.device) {
                (false, false) => "no ProfilerStep and no device activity",
                (false, true) => "no ProfilerStep",
                _ => "no device activity",
            };
            format!("{} has {lacks}", name(paths[*i]))
        })
        .collect();
    (
        pick,
        Some(format!(
            "the latest window with a complete ProfilerStep and device activity; {} (a \
             profiler schedule that ended mid-cycle writes such a window)",
            passed.join(", ")
        )),
    )
}

/// Whether a window holds a complete `ProfilerStep#N` and any device work.
#[derive(Default)]
struct ActivityProbe {
    step: bool,
    device: bool,
}

impl TraceSink for ActivityProbe {
    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        if event.phase != Phase::Complete {
            return ControlFlow::Continue(());
        }
        let category = event.category.as_ref().map(|c| c.normalized());
        let category = category.as_ref().map_or("", |c| c.as_str());
        if crate::classify::is_device_work_category(category) {
            self.device = true;
        } else if !self.step {
            self.step = event
                .name
                .as_ref()
                .is_some_and(|n| crate::frame::step_number(n, true).is_some());
        }
        if self.step && self.device {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Option<bool> {
        TopLevel::new(text.as_bytes()).has_trace_events()
    }

    #[test]
    fn the_top_level_scan_finds_trace_events_past_other_values() {
        assert_eq!(scan(r#"{"traceEvents": []}"#), Some(true));
        assert_eq!(
            scan(
                r#" {"schemaVersion": 1, "deviceProperties": [{"a": "}]\"", "b": [1, {}]}],
                   "x": null, "y": -1.5e3, "traceEvents": [{"ph": "X"}]}"#
            ),
            Some(true)
        );
        assert_eq!(scan(r#"{"traceEvents": {}}"#), Some(false), "not an array");
        assert_eq!(scan(r#"[{"key": "aten::mm", "count": 3}]"#), Some(false));
        assert_eq!(scan(r#"{"a": 1, "b": "traceEvents"}"#), Some(false));
        assert_eq!(scan(r#"{"a": 1, "b": {"traceEvents": []}}"#), Some(false));
        assert_eq!(scan(r#"{"a": "#), None, "truncated");
    }
}
