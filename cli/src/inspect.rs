//! `neuronprof inspect`: what a set of Kineto rank traces holds.
//!
//! Each file is streamed once through [`InspectSink`] (never held in memory), in
//! lenient mode, so a trace cut short by a killed process still reports everything up
//! to the damage and says where the damage is. Files are read in parallel, one thread
//! per core.
//!
//! Choices, where Kineto is silent:
//! - Event counts by category use the spelling in the trace (legacy `Kernel` stays
//!   `Kernel`); flows are grouped by the normalised category (`async` counts as `ac2g`),
//!   and a flow id is *matched* when it has a start and at least one finish (one MTIA
//!   submit ends in several device ops).
//! - The time span runs from the earliest `ts` to the latest `ts + dur` of every event
//!   except `M` metadata rows.
//! - Dropped records: the top-level key `dropped_records` (an integer), which the
//!   neuronprof profiler writes when its ring buffers overflowed. Kineto has no such key;
//!   traces from torch.profiler report "not stated".
//! - Devices: every `deviceProperties` entry, plus every device index seen in device
//!   activity (`device` arg, else `pid`) — a trace of the neuron device from a pure-Python
//!   backend states `deviceProperties: []`.

mod render;
mod report;

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

pub use crate::paths::collect_trace_files;

use trace_format::{Event, FlowEnd, Ident, Phase, ReadReport, TraceSink};

pub use render::{human_duration, render_text};
pub use report::{
    Damage, DeviceSummary, FileReport, FlowCounts, InspectReport, NeuronExplorerInfo,
};

/// The top-level metadata key where neuronprof states how many records were dropped.
pub const DROPPED_RECORDS_KEY: &str = "dropped_records";

/// `neuronprof inspect PATH…`: the trace files of `paths` ([`collect_trace_files`]),
/// inspected.
pub fn inspect_paths(paths: &[PathBuf]) -> anyhow::Result<InspectReport> {
    Ok(inspect_files(&collect_trace_files(paths)?))
}

/// Inspects every file, in parallel (one worker per core), keeping the given order.
pub fn inspect_files(files: &[PathBuf]) -> InspectReport {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len());
    let mut reports: Vec<Option<FileReport>> = vec![None; files.len()];
    if workers <= 1 {
        for (slot, path) in reports.iter_mut().zip(files) {
            *slot = Some(inspect_file(path));
        }
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::Mutex::new(&mut reports);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(path) = files.get(i) else { break };
                    let report = inspect_file(path);
                    done.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(report);
                });
            }
        });
    }
    InspectReport::from_files(reports.into_iter().flatten().collect())
}

/// Inspects one file. Never fails: damage (including a file that cannot be opened) is
/// in [`FileReport::damage`].
pub fn inspect_file(path: &Path) -> FileReport {
    let mut sink = InspectSink::default();
    let read = if path.is_dir() {
        // A Neuron Explorer profile folder, read as the same events; a profile that
        // cannot be opened (an unknown schema version) is the file's damage.
        let name = path.display().to_string();
        let reader = analysis::inputs::open_trace(path, true).unwrap_or_else(|e| {
            trace_format::TraceReader::from_reader(&name, Unopenable(e.to_string())).lenient(true)
        });
        match reader.read(&mut sink) {
            Ok(read) => read,
            Err(_) => trace_format::read_path_lenient(path, &mut sink),
        }
    } else {
        trace_format::read_path_lenient(path, &mut sink)
    };
    sink.finish(path, &read)
}

/// A reader that fails at once with the reason a profile could not be opened.
struct Unopenable(String);

impl std::io::Read for Unopenable {
    fn read(&mut self, _buf: &mut [u8]) -> std::io::Result<usize> {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            self.0.clone(),
        ))
    }
}

/// What the metadata of a profile read by `neuron_explorer` says about it.
fn neuron_explorer_info(meta: &trace_format::TraceMeta) -> Option<NeuronExplorerInfo> {
    let profile = meta.get(neuron_explorer::PROFILE_KEY)?.to_value();
    let findings = meta
        .get(neuron_explorer::FINDINGS_KEY)
        .map(|f| f.to_value())
        .unwrap_or_default();
    let strings = |v: &serde_json::Value, key: &str| -> Vec<String> {
        v.get(key)
            .and_then(|a| a.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    Some(NeuronExplorerInfo {
        schema_version: profile
            .get("schema_version")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        lnc: profile.get("lnc").and_then(|v| v.as_u64()),
        worker_gids: profile
            .get("worker_gids")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|w| w.as_i64()).collect())
            .unwrap_or_default(),
        problems: strings(&findings, "problems"),
        unknown: strings(&findings, "unknown"),
        missing: strings(&findings, "missing"),
        framework: findings
            .get("framework")
            .and_then(|f| f.as_str())
            .map(str::to_owned),
    })
}

/// Collects what `inspect` reports while a trace streams through it.
#[derive(Debug, Default)]
pub struct InspectSink {
    events: u64,
    by_category: BTreeMap<String, u64>,
    by_phase: BTreeMap<String, u64>,
    first_ts_ns: Option<i64>,
    last_end_ns: Option<i64>,
    memory_events: u64,
    memory_by_device_type: BTreeMap<i64, u64>,
    device_events: BTreeMap<i64, u64>,
    /// Flow category spellings, indexed by the `u16` in `flows` keys.
    flow_categories: Vec<String>,
    /// Per (category index, flow id): bit 0 = a start seen, bit 1 = a finish seen.
    flows: HashMap<(u16, Ident<'static>), u8>,
}

impl TraceSink for InspectSink {
    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        self.events += 1;
        bump(&mut self.by_phase, event.phase.as_str());
        bump(
            &mut self.by_category,
            event.category.as_ref().map_or("", |c| c.as_str()),
        );
        if event.phase != Phase::Metadata {
            if let Some(ts) = event.ts_ns {
                self.first_ts_ns = Some(self.first_ts_ns.map_or(ts, |t| t.min(ts)));
                let end = event.end_ns().unwrap_or(ts);
                self.last_end_ns = Some(self.last_end_ns.map_or(end, |t| t.max(end)));
            }
        }
        if event.is_memory_event() {
            self.memory_events += 1;
            if let Some(device_type) = event.arg("Device Type").and_then(|v| v.as_i64()) {
                *self.memory_by_device_type.entry(device_type).or_default() += 1;
            }
        }
        if event
            .category
            .as_ref()
            .is_some_and(|c| c.is_device_activity())
        {
            let device = event
                .arg("device")
                .and_then(|v| v.as_i64())
                .or_else(|| event.pid.as_ref().and_then(Ident::as_i64));
            if let Some(device) = device {
                *self.device_events.entry(device).or_default() += 1;
            }
        }
        if let (Some(end), Some(flow_id)) = (event.flow_end(), event.flow_id.as_ref()) {
            self.count_flow(event, end, flow_id);
        }
        ControlFlow::Continue(())
    }
}

impl InspectSink {
    fn count_flow(&mut self, event: &Event<'_>, end: FlowEnd, flow_id: &Ident<'_>) {
        let category = event.normalized_category();
        let name = category.as_ref().map_or("", |c| c.as_str());
        let cat_index = match self.flow_categories.iter().position(|c| c == name) {
            Some(i) => i,
            None => {
                self.flow_categories.push(name.to_owned());
                self.flow_categories.len() - 1
            }
        };
        // Over 65,536 distinct flow categories is not a real trace; fold the rest into the last.
        let cat_index = u16::try_from(cat_index).unwrap_or(u16::MAX);
        let bit = match end {
            FlowEnd::Start => 1,
            FlowEnd::Finish => 2,
            FlowEnd::Step => 0,
        };
        let key = (cat_index, flow_id.clone().into_owned());
        *self.flows.entry(key).or_default() |= bit;
    }

    /// Turns what was collected, and the reader's report, into a [`FileReport`].
    pub fn finish(self, path: &Path, read: &ReadReport) -> FileReport {
        let meta = &read.meta;
        let distributed = meta.distributed_info();
        let mut devices: BTreeMap<i64, DeviceSummary> = BTreeMap::new();
        for props in meta.device_properties() {
            if let Some(index) = props.device_id {
                devices.insert(
                    index,
                    DeviceSummary {
                        device_index: index,
                        name: props.name,
                        device_events: 0,
                    },
                );
            }
        }
        for (index, count) in self.device_events {
            devices
                .entry(index)
                .or_insert(DeviceSummary {
                    device_index: index,
                    name: None,
                    device_events: 0,
                })
                .device_events = count;
        }
        let mut flows: BTreeMap<String, FlowCounts> = BTreeMap::new();
        for ((cat_index, _), bits) in &self.flows {
            let name = self.flow_categories[usize::from(*cat_index)].clone();
            let counts = flows.entry(name).or_default();
            match bits {
                3 => counts.matched += 1,
                1 => counts.unmatched_starts += 1,
                2 => counts.unmatched_finishes += 1,
                _ => {} // only steps: neither end
            }
        }
        let damage = read.damage.as_ref().map(|err| Damage {
            message: err.to_string(),
            byte_offset: Some(err.location().byte_offset),
            event_index: err.location().event_index,
        });
        FileReport {
            path: path.to_path_buf(),
            rank: meta.rank(),
            world_size: meta.world_size(),
            backend: distributed.and_then(|d| d.backend),
            devices: devices.into_values().collect(),
            base_time_ns: meta.base_time_ns(),
            first_ts_ns: self.first_ts_ns,
            last_end_ns: self.last_end_ns,
            events: self.events,
            by_category: self.by_category,
            by_phase: self.by_phase,
            memory_events: self.memory_events,
            memory_events_by_device_type: self.memory_by_device_type,
            flows,
            dropped_records: meta
                .get(DROPPED_RECORDS_KEY)
                .and_then(|raw| raw.deserialize::<u64>().ok()),
            skipped_events: read.events_skipped,
            skipped_examples: read
                .skipped_examples
                .iter()
                .map(ToString::to_string)
                .collect(),
            damage,
            neuron_explorer: neuron_explorer_info(meta),
        }
    }
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    match map.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            map.insert(key.to_owned(), 1);
        }
    }
}
