//! TorchNeuron's framework trace (`trace.json`) merged with the system profile of the same
//! run: one rank whose host operators are linked to their device executions.
//!
//! What a TorchNeuron job writes (`how-to-profile-workload.rst` in AWS's
//! `aws-neuron-sdk`; facts in `/work/shared/reference/neuron-explorer.md`): the framework
//! trace is torch.profiler's Kineto JSON with the CPU operators and the
//! `privateuse1_runtime` / `privateuse1_driver` rows; the device executions are not in it
//! but in the runtime's files, which Neuron Explorer ingests as `SystemProfileEvents`.
//! The schema (`profile-schema-reference.rst`, `SystemProfileEvents.framework_stream_id`)
//! says how the two meet: a `neuron_rt` event is linked to a framework driver event
//! through `nrt_sequence_id`, and carries that driver event's thread as its stream; its
//! `flow_id` links it to its `nc_exec_running` rows.
//!
//! So the chain kept here is: a host operator (`External id` E) → the driver call with
//! `External id` E and an `nrt_sequence_id` arg S → the profile's `neuron_rt` row whose
//! `extra_attributes_json` holds `nrt_sequence_id` S and whose `flow_id` is F → the device
//! execution with flow F. The execution and its runtime call get `External id` E (so the
//! analyses put the device time under the operator) and, where the profile names no
//! stream, the driver call's thread as their stream. The name `nrt_sequence_id` for the
//! framework trace's arg is the one the schema uses; the reference documents no other.
//!
//! Both timelines are taken as they are: Kineto's times are nanoseconds since the epoch
//! (`ts` + `baseTimeNanoseconds`), the profile's `*_ts` nanoseconds on the profile's
//! timeline. Nothing is shifted; the median gap between a linked driver call and its
//! runtime call is reported, so a clock that disagrees shows.

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use trace_format::{Event, Ident, ReadReport, TraceMeta, TraceReader, TraceSink};

use crate::error::NeuronError;
use crate::layout::ProfileLayout;
use crate::survey::Findings;
use crate::table::TableReader;

/// The arg (framework trace) and `extra_attributes_json` key (profile) that link a
/// driver call to its runtime call.
pub const SEQUENCE_KEY: &str = "nrt_sequence_id";

/// Added to the profile's flow ids when a framework trace is merged, so they cannot
/// meet the framework trace's own correlation ids (both are small counters).
pub const MERGED_FLOW_OFFSET: i64 = 1 << 40;

/// Events handed from the framework trace's reader thread at a time.
const BATCH_EVENTS: usize = 4096;

/// A driver call of the framework trace that carries an `nrt_sequence_id`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DriverCall {
    /// Its `External id` (the host operator it belongs to), when it has one.
    pub external_id: Option<i64>,
    /// Its thread (the stream, as the schema's `framework_stream_id`).
    pub tid: Option<i64>,
    /// Its start (ns since the epoch).
    pub start_ns: i64,
}

/// What the converter needs to link the profile's rows to the framework trace.
#[derive(Debug, Default)]
pub(crate) struct Links {
    /// `nrt_sequence_id` → the driver call.
    pub drivers: HashMap<i64, DriverCall>,
    /// The profile's flow id → the `nrt_sequence_id` of the `neuron_rt` row with it.
    pub flow_sequence: HashMap<i64, i64>,
    /// Runtime calls linked to a driver call.
    pub linked_runtime: u64,
    /// Device-execution rows (`nc_exec_running`, one per physical core) linked to a
    /// driver call.
    pub linked_executions: u64,
    /// Device-execution rows left without a link.
    pub unlinked_executions: u64,
    /// The profile's own `framework` rows, left out (the framework trace has them).
    pub dropped_framework_rows: u64,
    /// Runtime call start − driver call start, per linked runtime call (ns).
    pub gaps_ns: Vec<i64>,
}

impl Links {
    /// The driver call a row links to: by its own `nrt_sequence_id`, else through one
    /// of its flow ids.
    pub fn driver(&self, sequence: Option<i64>, flows: &[i64]) -> Option<DriverCall> {
        let sequence = sequence.or_else(|| {
            flows
                .iter()
                .find_map(|f| self.flow_sequence.get(f).copied())
        })?;
        self.drivers.get(&sequence).copied()
    }

    /// One line for the findings: what was linked.
    pub fn summary(&self, trace: &Path) -> String {
        let mut gaps = self.gaps_ns.clone();
        gaps.sort_unstable();
        let gap = gaps
            .get(gaps.len() / 2)
            .map_or_else(|| "none linked".to_owned(), |g| format!("{g} ns"));
        format!(
            "{}: {} driver calls with {SEQUENCE_KEY}; linked {} runtime calls and {} \
             device-execution rows ({} rows unlinked); median runtime-call start − driver-call \
             start: {gap}; {} framework rows of the profile left out (the trace has them)",
            trace.display(),
            self.drivers.len(),
            self.linked_runtime,
            self.linked_executions,
            self.unlinked_executions,
            self.dropped_framework_rows,
        )
    }
}

/// A framework trace read once for its header and its driver calls.
#[derive(Debug)]
pub(crate) struct FrameworkScan {
    /// Its metadata (`distributedInfo`, `deviceProperties`, …).
    pub meta: TraceMeta,
    /// Its earliest event (ns since the epoch).
    pub first_ns: Option<i64>,
    /// Its driver calls by `nrt_sequence_id`.
    pub drivers: HashMap<i64, DriverCall>,
}

#[derive(Default)]
struct ScanSink {
    first_ns: Option<i64>,
    drivers: HashMap<i64, DriverCall>,
}

impl TraceSink for ScanSink {
    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        if let Some(ts) = event
            .ts_ns
            .filter(|_| event.phase != trace_format::Phase::Metadata)
        {
            self.first_ns = Some(self.first_ns.map_or(ts, |f| f.min(ts)));
        }
        let Some(sequence) = event.arg(SEQUENCE_KEY).and_then(|v| {
            v.as_i64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        }) else {
            return ControlFlow::Continue(());
        };
        let tid = match &event.tid {
            Some(Ident::Num(t)) => Some(*t),
            _ => None,
        };
        self.drivers.insert(
            sequence,
            DriverCall {
                external_id: event.arg("External id").and_then(|v| v.as_i64()),
                tid,
                start_ns: event.ts_ns.unwrap_or(0),
            },
        );
        ControlFlow::Continue(())
    }
}

/// Reads the framework trace at `path` for its header and driver calls. Strict: damage
/// is an error naming the trace (with the Kineto reader's byte offset); lenient: the
/// damage goes to `findings` and what was read is kept.
pub(crate) fn scan_framework(
    path: &Path,
    lenient: bool,
    findings: &mut Findings,
) -> Result<FrameworkScan, NeuronError> {
    let mut sink = ScanSink::default();
    let report = TraceReader::open(path)
        .lenient(lenient)
        .read(&mut sink)
        .map_err(|e| trace_error(path, e.to_string()))?;
    note_damage(path, &report, findings);
    Ok(FrameworkScan {
        meta: report.meta,
        first_ns: sink.first_ns,
        drivers: sink.drivers,
    })
}

/// The profile's `neuron_rt` rows that carry an `nrt_sequence_id`: flow id → sequence.
pub(crate) fn scan_runtime_flows(
    layout: &ProfileLayout,
    lenient: bool,
    findings: &mut Findings,
) -> Result<HashMap<i64, i64>, NeuronError> {
    let mut out = HashMap::new();
    let mut reader = TableReader::new(
        "SystemProfileEvents",
        layout.files("SystemProfileEvents"),
        &["trace_event_source", "flow_id", "extra_attributes_json"],
    );
    loop {
        let batch = match reader.next_batch() {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(out),
            Err(e) => {
                findings.fail(lenient, e)?;
                continue;
            }
        };
        let cols = (|| {
            Ok::<_, NeuronError>((
                batch.str_req("trace_event_source")?,
                batch.list("flow_id")?,
                batch.str("extra_attributes_json")?,
            ))
        })();
        let (source, flows, extra) = match cols {
            Ok(c) => c,
            Err(e) => {
                findings.fail(lenient, e)?;
                continue;
            }
        };
        let (Some(flows), Some(extra)) = (flows, extra) else {
            continue;
        };
        for row in 0..batch.len() {
            if source.get(row) != Some("neuron_rt") {
                continue;
            }
            let Some(sequence) = extra.get(row).and_then(sequence_of) else {
                continue;
            };
            for flow in flows.get(row) {
                if let Ok(flow) = flow.trim().parse::<i64>() {
                    out.insert(flow, sequence);
                }
            }
        }
    }
}

/// `nrt_sequence_id` of an `extra_attributes_json` text (a number or a numeric string).
pub(crate) fn sequence_of(extra_json: &str) -> Option<i64> {
    if !extra_json.contains(SEQUENCE_KEY) {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(extra_json).ok()?;
    let v = value.get(SEQUENCE_KEY)?;
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// The framework trace's events, read on a thread of their own and handed over in
/// batches (a bounded channel: memory stays bounded however long the trace is).
#[derive(Debug)]
pub(crate) struct FrameworkFeed {
    path: PathBuf,
    rx: mpsc::Receiver<Vec<Event<'static>>>,
    handle: Option<JoinHandle<Result<ReadReport, String>>>,
}

struct FeedSink {
    tx: mpsc::SyncSender<Vec<Event<'static>>>,
    batch: Vec<Event<'static>>,
}

impl TraceSink for FeedSink {
    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        self.batch.push(event.clone().into_owned());
        if self.batch.len() >= BATCH_EVENTS {
            let batch = std::mem::take(&mut self.batch);
            if self.tx.send(batch).is_err() {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}

impl FrameworkFeed {
    /// Starts reading `path`.
    pub fn start(path: &Path, lenient: bool) -> FrameworkFeed {
        let (tx, rx) = mpsc::sync_channel(2);
        let thread_path = path.to_path_buf();
        let handle = std::thread::spawn(move || {
            let mut sink = FeedSink {
                tx,
                batch: Vec::new(),
            };
            let report = TraceReader::open(&thread_path)
                .lenient(lenient)
                .read(&mut sink)
                .map_err(|e| e.to_string())?;
            let rest = std::mem::take(&mut sink.batch);
            if !rest.is_empty() {
                let _ = sink.tx.send(rest);
            }
            Ok(report)
        });
        FrameworkFeed {
            path: path.to_path_buf(),
            rx,
            handle: Some(handle),
        }
    }

    /// The next batch of events; `Ok(None)` at the end. Damage a lenient read met was
    /// listed by [`scan_framework`], which read the same text.
    pub fn next(&mut self) -> Result<Option<Vec<Event<'static>>>, NeuronError> {
        if let Ok(batch) = self.rx.recv() {
            return Ok(Some(batch));
        }
        let Some(handle) = self.handle.take() else {
            return Ok(None);
        };
        handle
            .join()
            .map_err(|_| trace_error(&self.path, "the reader thread panicked".into()))?
            .map_err(|message| trace_error(&self.path, message))?;
        Ok(None)
    }
}

fn note_damage(path: &Path, report: &ReadReport, findings: &mut Findings) {
    if let Some(damage) = &report.damage {
        findings
            .problems
            .push(format!("{}: {damage}", path.display()));
    }
    if report.events_skipped > 0 {
        findings.problems.push(format!(
            "{}: {} damaged events skipped",
            path.display(),
            report.events_skipped
        ));
    }
}

fn trace_error(path: &Path, message: String) -> NeuronError {
    NeuronError::Trace {
        path: path.to_path_buf(),
        message,
    }
}

/// The process ids of a profile's host rows (`framework` and `neuron_rt`), from the
/// first row group of `SystemProfileEvents` that has any: what pairs a profile with the
/// framework trace of the same process. Empty when unreadable.
pub fn profile_pids(dir: &Path) -> BTreeSet<i64> {
    let mut pids = BTreeSet::new();
    let Ok(layout) = ProfileLayout::open(dir) else {
        return pids;
    };
    let mut reader = TableReader::new(
        "SystemProfileEvents",
        layout.files("SystemProfileEvents"),
        &["trace_event_source", "process_id"],
    );
    while let Ok(Some(batch)) = reader.next_batch() {
        let (Ok(source), Ok(pid)) = (
            batch.str_req("trace_event_source"),
            batch.int_req("process_id"),
        ) else {
            break;
        };
        for row in 0..batch.len() {
            if matches!(source.get(row), Some("framework" | "neuron_rt")) {
                pids.extend(pid.get(row));
            }
        }
        if !pids.is_empty() {
            break;
        }
    }
    pids
}
