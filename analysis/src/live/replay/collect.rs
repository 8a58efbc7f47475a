//! One streaming pass over a rank's trace, keeping what the replayed reports need.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;

use trace_format::{Event, Ident, TraceMeta, TraceSink};

use crate::classify::is_device_work_category;

/// A device activity (kernel, copy, memset) on one device.
#[derive(Debug, Clone)]
pub(super) struct DeviceWork {
    pub device: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    pub flops: f64,
    pub correlation: i64,
    pub external_id: i64,
    /// `<Engine> busy (ns)` args: engine name index, busy ns.
    pub engine_busy: Vec<(u32, i64)>,
    /// A collective kernel (not NeuronCore compute).
    pub is_collective: bool,
}

/// One engine instruction (semaphore waits are not kept: the engine is idle then).
#[derive(Debug, Clone, Copy)]
pub(super) struct Instruction {
    pub device: i64,
    pub engine: u32,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// Marks a collective whose trace has no `Seq` until [`collect`] numbers it.
const NO_SEQ: u64 = u64::MAX;

/// One collective kernel.
#[derive(Debug, Clone)]
pub(super) struct Collective {
    pub op: String,
    pub group: String,
    /// `Seq` when recorded, else the occurrence index within its group on this rank.
    pub seq: u64,
    pub bytes: u64,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// One host operator.
#[derive(Debug, Clone, Copy)]
pub(super) struct HostOp {
    pub name: u32,
    pub start_ns: i64,
    pub external_id: i64,
}

/// One `[memory]` instant: the allocator total after it.
#[derive(Debug, Clone, Copy)]
pub(super) struct MemorySample {
    pub ts_ns: i64,
    /// `Device Type` 0 is the host.
    pub host: bool,
    pub device: i64,
    pub total_allocated: i64,
}

/// What one rank's trace contributes to the replay.
#[derive(Debug, Default)]
pub(super) struct RankData {
    /// The trace file.
    pub path: std::path::PathBuf,
    pub rank: u32,
    pub world_size: Option<u32>,
    pub host_pid: Option<u32>,
    /// Interned operator and engine names.
    pub names: Vec<String>,
    names_index: HashMap<String, u32>,
    pub work: Vec<DeviceWork>,
    pub instructions: Vec<Instruction>,
    /// `neuron_dma` transfers, as the `dma` engine.
    pub dma: Vec<Instruction>,
    pub collectives: Vec<Collective>,
    pub ops: Vec<HostOp>,
    pub memory: Vec<MemorySample>,
    /// Launch start by correlation id.
    pub launches: HashMap<i64, i64>,
    /// `ProfilerStep#N` ends: (end ns, N).
    pub steps: Vec<(i64, u64)>,
    /// Devices: (id, profile, core version, lnc, memory bytes).
    pub devices: Vec<DeviceProps>,
    pub dropped_records: u64,
    pub min_ns: Option<i64>,
    pub max_ns: Option<i64>,
}

/// `deviceProperties` of one device.
#[derive(Debug, Clone, Default)]
pub(super) struct DeviceProps {
    pub id: i64,
    pub profile: Option<String>,
    pub core_version: Option<String>,
    pub lnc: Option<u32>,
    pub memory_bytes: Option<u64>,
}

impl RankData {
    pub fn intern(&mut self, text: &str) -> u32 {
        if let Some(&i) = self.names_index.get(text) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(text.to_string());
        self.names_index.insert(text.to_string(), i);
        i
    }

    fn span(&mut self, start: i64, end: i64) {
        self.min_ns = Some(self.min_ns.map_or(start, |m| m.min(start)));
        self.max_ns = Some(self.max_ns.map_or(end, |m| m.max(end)));
    }
}

fn ident_i64(ident: Option<&Ident<'_>>) -> Option<i64> {
    match ident {
        Some(Ident::Num(n)) => Some(*n),
        Some(Ident::Str(s)) => s.parse().ok(),
        None => None,
    }
}

impl TraceSink for RankData {
    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        if event.is_memory_event() {
            if let (Some(ts), Some(args)) = (event.ts_ns, &event.args) {
                let device_type = args.get_i64("Device Type").unwrap_or(0);
                if let Some(total) = args.get_i64("Total Allocated") {
                    self.memory.push(MemorySample {
                        ts_ns: ts,
                        host: device_type == 0,
                        device: args.get_i64("Device Id").unwrap_or(-1),
                        total_allocated: total,
                    });
                    self.span(ts, ts);
                }
            }
            return ControlFlow::Continue(());
        }
        let (Some(start), Some(dur), Some(category)) =
            (event.ts_ns, event.dur_ns, event.normalized_category())
        else {
            return ControlFlow::Continue(());
        };
        let end = start + dur.max(0);
        let category = category.as_str();
        let arg_i64 = |key: &str| event.arg(key).and_then(|v| v.as_i64());
        if is_device_work_category(category) {
            self.span(start, end);
            let device = arg_i64("device")
                .or_else(|| ident_i64(event.pid.as_ref()))
                .unwrap_or(0);
            // A collective: PyTorch's collective args, else an NCCL-style kernel name
            // (`ncclDevKernel_AllReduce_…`, `ncclKernel_SendRecv_…` in older traces).
            let op = event
                .arg("Collective name")
                .and_then(|v| v.as_str().map(str::to_string))
                .or_else(|| nccl_op(event.name()));
            let is_collective = op.is_some();
            if let Some(op) = op {
                let group = event
                    .arg("Process Group Name")
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                // Without `Seq`, numbered by occurrence in time order after the read.
                let seq = arg_i64("Seq")
                    .filter(|s| *s >= 0)
                    .map_or(NO_SEQ, |s| s as u64);
                let bytes = arg_i64("bytes").filter(|b| *b >= 0).unwrap_or_else(|| {
                    let nelems = arg_i64("In msg nelems").unwrap_or(0).max(0);
                    let elem = match event
                        .arg("dtype")
                        .and_then(|v| v.as_str().map(str::to_string))
                        .as_deref()
                    {
                        Some("Double" | "Long") => 8,
                        Some("Half" | "BFloat16" | "Short") => 2,
                        Some("Byte" | "Char" | "Bool") => 1,
                        _ => 4,
                    };
                    nelems * elem
                });
                self.collectives.push(Collective {
                    op,
                    group,
                    seq,
                    bytes: bytes as u64,
                    start_ns: start,
                    end_ns: end,
                });
            }
            let mut engine_busy = Vec::new();
            if let Some(args) = &event.args {
                for (key, value) in args.iter() {
                    if let Some(engine) = key.strip_suffix(" busy (ns)") {
                        if let Some(ns) = value.as_i64() {
                            engine_busy.push((self.intern(engine_name(engine)), ns));
                        }
                    }
                }
            }
            self.work.push(DeviceWork {
                device,
                start_ns: start,
                end_ns: end,
                flops: arg_i64("flops").unwrap_or(0).max(0) as f64,
                correlation: arg_i64("correlation").unwrap_or(-1),
                external_id: arg_i64("External id").unwrap_or(-1),
                engine_busy,
                is_collective,
            });
            return ControlFlow::Continue(());
        }
        match category {
            "neuron_instruction" => {
                if event.name() == "semaphore_wait" {
                    return ControlFlow::Continue(());
                }
                let engine = event
                    .arg("engine")
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "engine".to_string());
                let device = arg_i64("device")
                    .or_else(|| ident_i64(event.pid.as_ref()))
                    .unwrap_or(0);
                let engine = self.intern(engine_name(&engine));
                self.instructions.push(Instruction {
                    device,
                    engine,
                    start_ns: start,
                    end_ns: end,
                });
            }
            "neuron_dma" => {
                let device = arg_i64("device")
                    .or_else(|| ident_i64(event.pid.as_ref()))
                    .unwrap_or(0);
                let engine = self.intern("dma");
                self.dma.push(Instruction {
                    device,
                    engine,
                    start_ns: start,
                    end_ns: end,
                });
            }
            "cpu_op" => {
                self.span(start, end);
                if self.host_pid.is_none() {
                    self.host_pid =
                        ident_i64(event.pid.as_ref()).and_then(|p| u32::try_from(p).ok());
                }
                let name = self.intern(event.name());
                self.ops.push(HostOp {
                    name,
                    start_ns: start,
                    external_id: arg_i64("External id").unwrap_or(-1),
                });
            }
            "user_annotation" => {
                if let Some(n) = event.name().strip_prefix("ProfilerStep#") {
                    if let Ok(n) = n.parse() {
                        self.steps.push((end, n));
                    }
                }
            }
            c if c.ends_with("_runtime") => {
                if let Some(corr) = arg_i64("correlation") {
                    self.launches.entry(corr).or_insert(start);
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn on_trailer(&mut self, meta: &TraceMeta) {
        if let Some(info) = meta.distributed_info() {
            if let Some(r) = info.rank.and_then(|r| u32::try_from(r).ok()) {
                self.rank = r;
            }
            self.world_size = info.world_size.and_then(|w| u32::try_from(w).ok());
        }
        self.dropped_records = meta
            .get("dropped_records")
            .and_then(|raw| raw.to_value().as_u64())
            .unwrap_or(0);
        for props in meta.device_properties() {
            let raw = &props.raw;
            self.devices.push(DeviceProps {
                id: props.device_id.unwrap_or(0),
                profile: raw
                    .get("profile")
                    .and_then(|v| v.as_str())
                    .map(str::to_string),
                core_version: raw
                    .get("coreVersion")
                    .and_then(|v| v.as_str())
                    .map(str::to_string),
                lnc: raw.get("lnc").and_then(|v| v.as_u64()).map(|v| v as u32),
                memory_bytes: props.total_global_mem_bytes,
            });
        }
    }
}

/// The engine names of the live report (`docs/LIVE.md`: the backend's timing
/// model names, `tensor`, `vector`, …) for the trace's (`TensorE`, `VectorE`, …), so
/// replayed and live reports show the same rows; other names are kept.
fn engine_name(trace_name: &str) -> &str {
    match trace_name {
        "TensorE" => "tensor",
        "VectorE" => "vector",
        "ScalarE" => "scalar",
        "GpSimdE" => "gpsimd",
        "SyncE" => "sync",
        other => other,
    }
}

/// The operation of an NCCL-style kernel name: `ncclDevKernel_AllReduce_Sum_f32` →
/// `AllReduce`.
fn nccl_op(name: &str) -> Option<String> {
    let rest = name
        .strip_prefix("ncclDevKernel_")
        .or_else(|| name.strip_prefix("ncclKernel_"))?;
    let op: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    (!op.is_empty()).then_some(op)
}

/// Reads one trace file. `position` is its rank when the trace does not state one.
pub(super) fn collect(path: &Path, position: u32) -> Result<RankData, String> {
    let mut data = RankData {
        path: path.to_path_buf(),
        rank: position,
        ..RankData::default()
    };
    crate::inputs::open_trace(path, false)
        .map_err(|e| e.to_string())?
        .read(&mut data)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    data.instructions.sort_by_key(|i| i.start_ns);
    data.dma.sort_by_key(|i| i.start_ns);
    data.work.sort_by_key(|w| w.start_ns);
    data.collectives.sort_by_key(|c| c.start_ns);
    let mut occurrences: HashMap<String, u64> = HashMap::new();
    for c in &mut data.collectives {
        if c.seq == NO_SEQ {
            let n = occurrences.entry(c.group.clone()).or_default();
            c.seq = *n;
            *n += 1;
        }
    }
    data.ops.sort_by_key(|o| o.start_ns);
    data.memory.sort_by_key(|m| m.ts_ns);
    data.steps.sort();
    Ok(data)
}
