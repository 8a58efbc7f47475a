//! The event pass: each table's rows as the Kineto events our analyses take (the same
//! categories, tracks and args the `profiler` crate writes for the emulated device, so
//! no analysis branches on where a trace came from). `docs/NEURON-EXPLORER.md` has the
//! table of what each Neuron table and field becomes.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use trace_format::{ArgValue, Args, Category, Event, FlowEnd};

use crate::error::NeuronError;
use crate::framework::{Links, MERGED_FLOW_OFFSET, SEQUENCE_KEY};
use crate::layout::ProfileLayout;
use crate::schema;
use crate::survey::{Findings, Survey};
use crate::table::{Batch, TableReader};

mod counters;
mod engines;
mod sync;

use counters::counter;

pub use sync::{
    engine_name, BARRIER_CATEGORY, BARRIER_TID_BASE, THROTTLE_CATEGORY, THROTTLE_TID_BASE,
};

/// `SystemProfileEvents.name` of a device execution (one per physical core).
pub const EXEC_NAME: &str = "nc_exec_running";
/// Category of engine instructions (as `profiler` writes them).
pub const INSTRUCTION_CATEGORY: &str = "neuron_instruction";
/// Category of DMA transfers.
pub const DMA_CATEGORY: &str = "neuron_dma";
/// Category of device and host counters.
pub const COUNTER_CATEGORY: &str = "neuron_counters";
/// Category of device (`neuron_hw`) system events other than executions.
pub const HW_CATEGORY: &str = "neuron_hw";
/// First tid of engine tracks: 1000 + 100 × physical core + engine (as `profiler`).
pub const ENGINE_TID_BASE: i64 = 1_000;
/// First tid of DMA-queue tracks: 10000 + 1000 × physical core + queue.
pub const DMA_TID_BASE: i64 = 10_000;
/// Stream (tid) of collectives: 100 + `CcOp.stream_id`.
pub const CC_STREAM_BASE: i64 = 100;
/// Tid of `neuron_hw` events other than executions: 9000 + physical core.
pub const HW_TID_BASE: i64 = 9_000;
/// Correlation ids made for rows without a flow id: this + the row's id (flow ids of
/// real profiles are small counters, far below).
pub const SYNTHETIC_CORRELATION: i64 = 1 << 52;

/// The stages of the event pass, in order.
const STAGES: &[&str] = &[
    "SystemProfileEvents",
    "CcOp",
    "Instruction",
    "ActiveTime",
    "CoreBarriers",
    "Throttle",
    "SemaphoreUpdate",
    "Dma",
    "HbmUsage",
    "CpuUsage",
    "HostMemUsage",
];

/// One execution waiting for its other physical cores' rows (LNC > 1).
#[derive(Debug)]
struct Pending {
    event: Event<'static>,
    end_ns: i64,
    pcores: BTreeSet<i64>,
}

/// Turns a profile's tables into events, one row group at a time.
#[derive(Debug)]
pub struct Converter {
    layout: ProfileLayout,
    survey: Survey,
    lenient: bool,
    stage: usize,
    reader: Option<TableReader>,
    pending: HashMap<(i64, i64, i64), Pending>,
    pending_order: BTreeMap<u64, (i64, i64, i64)>,
    pending_seq: u64,
    device_pid: i64,
    engines: BTreeMap<String, i64>,
    tracks: BTreeSet<(i64, i64, String)>,
    device_pids: BTreeSet<i64>,
    finished: bool,
    /// Written by `neuronprof export` (`Metadata.explorer_version`).
    exported: bool,
    /// With a framework trace merged: how rows link to its driver calls.
    links: Option<Links>,
    /// Added to flow ids ([`MERGED_FLOW_OFFSET`] when a framework trace is merged).
    flow_offset: i64,
}

impl Converter {
    /// A converter of `layout`, after its survey.
    pub fn new(layout: ProfileLayout, survey: Survey, lenient: bool) -> Self {
        let device_pid = survey
            .metadata
            .get("neuroncore_idx")
            .and_then(serde_json::Value::as_i64)
            .or_else(|| {
                (survey.nc_idxs.len() == 1)
                    .then(|| survey.nc_idxs.iter().next().copied())
                    .flatten()
            })
            .unwrap_or(0);
        let exported = survey
            .metadata
            .get("explorer_version")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|v| v.starts_with("neuronprof"));
        Converter {
            layout,
            survey,
            lenient,
            stage: 0,
            reader: None,
            pending: HashMap::new(),
            pending_order: BTreeMap::new(),
            pending_seq: 0,
            device_pid,
            engines: BTreeMap::new(),
            tracks: BTreeSet::new(),
            device_pids: BTreeSet::new(),
            finished: false,
            exported,
            links: None,
            flow_offset: 0,
        }
    }

    /// Merges a framework trace: the profile's own `framework` rows are left out, flow
    /// ids move by [`MERGED_FLOW_OFFSET`], and runtime calls and device executions take
    /// the `External id` (and, without a stream of their own, the thread) of the driver
    /// call they link to (see [`crate::framework`]).
    pub(crate) fn with_links(mut self, links: Links) -> Self {
        self.links = Some(links);
        self.flow_offset = MERGED_FLOW_OFFSET;
        self
    }

    /// What merging a framework trace linked (`None` without one).
    pub(crate) fn links(&self) -> Option<&Links> {
        self.links.as_ref()
    }

    /// The survey this converter works from.
    pub fn survey(&self) -> &Survey {
        &self.survey
    }

    /// Appends the events of the next row group (or the closing events) to `out`;
    /// `Ok(false)` once everything has been delivered.
    pub fn step(
        &mut self,
        out: &mut Vec<Event<'static>>,
        findings: &mut Findings,
    ) -> Result<bool, NeuronError> {
        loop {
            if self.finished {
                return Ok(false);
            }
            if self.reader.is_none() {
                let Some(&stage) = STAGES.get(self.stage) else {
                    self.close(out);
                    self.finished = true;
                    return Ok(true);
                };
                self.stage += 1;
                let table = match stage {
                    "Dma" if self.layout.has("DmaPacketAggregated") => "DmaPacketAggregated",
                    "Dma" if self.layout.has("DmaPacket") => "DmaPacket",
                    // The merged intervals of what `Instruction` gives row by row.
                    "ActiveTime" if self.layout.has("Instruction") => continue,
                    "Dma" => {
                        findings.missing.push(
                            "DmaPacketAggregated / DmaPacket: no DMA rows (captured without \
                             NEURON_RT_ENABLE_DGE_NOTIFICATIONS=1?)"
                                .into(),
                        );
                        continue;
                    }
                    t => t,
                };
                if !self.layout.has(table) {
                    if table == "Instruction" && self.layout.has("ActiveTime") {
                        findings.missing.push(
                            "Instruction: no instruction rows (engine utilization from \
                             ActiveTime; no executed flops, so no HFU)"
                                .into(),
                        );
                        continue;
                    }
                    if let Some(lost) = missing_means(table) {
                        findings.missing.push(format!("{table}: {lost}"));
                    }
                    continue;
                }
                self.reader = Some(TableReader::new(
                    table,
                    self.layout.files(table),
                    &schema::column_names(table),
                ));
            }
            let reader = self.reader.as_mut().expect("set above");
            let batch = match reader.next_batch() {
                Ok(Some(batch)) => batch,
                Ok(None) => {
                    self.reader = None;
                    continue;
                }
                Err(e) => {
                    findings.fail(self.lenient, e)?;
                    continue;
                }
            };
            let mut events = Vec::new();
            let result = match batch.table.as_str() {
                "SystemProfileEvents" => self.system_rows(&batch, &mut events),
                "CcOp" => self.cc_rows(&batch, &mut events),
                "Instruction" => self.instruction_rows(&batch, &mut events),
                "DmaPacketAggregated" | "DmaPacket" => self.dma_rows(&batch, &mut events),
                "HbmUsage" => self.hbm_rows(&batch, &mut events),
                "CpuUsage" => self.cpu_rows(&batch, &mut events),
                "HostMemUsage" => self.host_mem_rows(&batch, &mut events),
                "ActiveTime" => self.active_rows(&batch, &mut events),
                "CoreBarriers" => self.barrier_rows(&batch, &mut events),
                "SemaphoreUpdate" => self.semaphore_rows(&batch, &mut events),
                "Throttle" => self.throttle_rows(&batch, &mut events),
                _ => Ok(()),
            };
            match result {
                Ok(()) => {
                    out.append(&mut events);
                    return Ok(true);
                }
                Err(e) => findings.fail(self.lenient, e)?,
            }
        }
    }

    /// Pending executions (a physical core's row without its partner) and track names.
    fn close(&mut self, out: &mut Vec<Event<'static>>) {
        let order = std::mem::take(&mut self.pending_order);
        for key in order.values() {
            if let Some(p) = self.pending.remove(key) {
                self.emit_exec(p, out);
            }
        }
        let ts = self.survey.base_ns.unwrap_or(0);
        for &pid in &self.device_pids {
            out.push(Event::metadata(
                "process_name",
                pid,
                0i64,
                ts,
                Args::new().with("name", format!("neuron NC {pid}")),
            ));
        }
        for (pid, tid, name) in std::mem::take(&mut self.tracks) {
            out.push(Event::metadata(
                "thread_name",
                pid,
                tid,
                ts,
                Args::new().with("name", name),
            ));
        }
    }

    fn emit_exec(&mut self, p: Pending, out: &mut Vec<Event<'static>>) {
        let mut event = p.event;
        let start = event.ts_ns.unwrap_or(0);
        event.dur_ns = Some((p.end_ns - start).max(0));
        let pcores: Vec<String> = p.pcores.iter().map(i64::to_string).collect();
        event = event.with_arg("pcore_idx", format!("[{}]", pcores.join(", ")));
        let corr = event
            .args
            .as_ref()
            .and_then(|a| a.get_i64("correlation"))
            .unwrap_or(-1);
        let (pid, tid) = (event.pid.clone(), event.tid.clone());
        out.push(event);
        if (0..SYNTHETIC_CORRELATION).contains(&corr) {
            let mut f = Event::flow(FlowEnd::Finish, Category::Ac2g, corr, 0i64, 0i64, start);
            f.pid = pid;
            f.tid = tid;
            out.push(f);
        }
    }

    fn system_rows(&mut self, b: &Batch, out: &mut Vec<Event<'static>>) -> Result<(), NeuronError> {
        let id = b.int_req("id")?;
        let name = b.str_req("name")?;
        let start = b.int_req("start_ts")?;
        let end = b.int_req("end_ts")?;
        let source = b.str_req("trace_event_source")?;
        let instance = b.str("instance_id")?;
        let pid = b.int_req("process_id")?;
        let tid = b.int_req("thread_id")?;
        let nc = b.int("nc_idx")?;
        let pcore = b.int("pcore_idx")?;
        let worker = b.int("worker_gid")?;
        let flows = b.list("flow_id")?;
        let stream = b.str("framework_stream_id")?;
        let extra = b.str("extra_attributes_json")?;
        for row in 0..b.len() {
            let row_id = b.need("id", row, id.get(row))?;
            let name = b.need("name", row, name.get(row))?;
            let start_ns = b.need("start_ts", row, start.get(row))?;
            let end_ns = b.need("end_ts", row, end.get(row))?;
            let source = b.need("trace_event_source", row, source.get(row))?;
            let pid = b.need("process_id", row, pid.get(row))?;
            let tid = b.need("thread_id", row, tid.get(row))?;
            let nc = nc.as_ref().and_then(|c| c.get(row));
            let pcore = pcore.as_ref().and_then(|c| c.get(row));
            let worker = worker.as_ref().and_then(|c| c.get(row));
            let raw_flows: Vec<i64> = flows
                .as_ref()
                .map(|f| f.get(row))
                .unwrap_or_default()
                .iter()
                .filter_map(|f| f.trim().parse().ok())
                .collect();
            let flow_ids: Vec<i64> = raw_flows.iter().map(|f| f + self.flow_offset).collect();
            let stream = stream.as_ref().and_then(|s| s.get(row));
            let extra = extra
                .as_ref()
                .and_then(|e| e.get(row))
                .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok());
            let extra = extra.as_ref().and_then(serde_json::Value::as_object);
            let driver = match self.links.as_mut() {
                Some(links) if source == "framework" => {
                    links.dropped_framework_rows += 1;
                    continue;
                }
                Some(links) => {
                    let sequence = extra.and_then(|e| e.get(SEQUENCE_KEY)).and_then(|v| {
                        v.as_i64()
                            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                    });
                    let driver = links.driver(sequence, &raw_flows);
                    match (source, driver) {
                        ("neuron_rt", Some(d)) => {
                            links.linked_runtime += 1;
                            links.gaps_ns.push(start_ns - d.start_ns);
                        }
                        ("neuron_hw", Some(_)) if name == EXEC_NAME => links.linked_executions += 1,
                        ("neuron_hw", None) if name == EXEC_NAME => links.unlinked_executions += 1,
                        _ => {}
                    }
                    driver
                }
                None => None,
            };
            let extra_str = |key: &str| {
                extra.and_then(|e| e.get(key)).and_then(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .or_else(|| Some(v.to_string()))
                })
            };
            let correlation = flow_ids
                .first()
                .copied()
                .unwrap_or(SYNTHETIC_CORRELATION + row_id);
            // Attributes without a column first (a neuronprof export keeps the Kineto
            // category and args there), then what the columns say, where not given.
            let mut args = Args::new();
            let mut category_attr = None;
            let mut kernel_name = None;
            if let Some(extra) = extra {
                for (k, v) in extra {
                    match k.as_str() {
                        "cat" | "category" => category_attr = v.as_str().map(str::to_owned),
                        "kernel_name" => kernel_name = v.as_str().map(str::to_owned),
                        _ => args.push(k.clone(), json_arg(v)),
                    }
                }
            }
            if let Some(external) = driver.and_then(|d| d.external_id) {
                if args.get("External id").is_none() {
                    args.push("External id", external);
                }
            }
            let mut put = |key: &'static str, value: ArgValue<'static>| {
                if args.get(key).is_none() {
                    args.push(key, value);
                }
            };
            if let Some(i) = instance.as_ref().and_then(|c| c.get(row)) {
                put("instance_id", ArgValue::Str(Cow::Owned(i.to_owned())));
            }
            if let Some(w) = worker {
                put("worker_gid", ArgValue::Int(w));
            }
            if let Some(s) = stream {
                put(
                    "framework_stream_id",
                    ArgValue::Str(Cow::Owned(s.to_owned())),
                );
            }
            if flow_ids.len() > 1 {
                let ids: Vec<String> = flow_ids.iter().map(i64::to_string).collect();
                put(
                    "flow_id",
                    ArgValue::Str(Cow::Owned(format!("[{}]", ids.join(", ")))),
                );
            }
            // The schema: a runtime call's stream is its driver call's thread.
            let stream_id = stream
                .and_then(|s| s.trim().parse::<i64>().ok())
                .or_else(|| driver.and_then(|d| d.tid));
            let dur_ns = end_ns - start_ns;
            match source {
                "neuron_hw" if name == EXEC_NAME => {
                    let device = nc.unwrap_or(self.device_pid);
                    self.device_pids.insert(device);
                    let stream_id = stream_id.unwrap_or(0);
                    let kernel_name = kernel_name.unwrap_or_else(|| match extra_str("model_id") {
                        Some(model) => format!("{EXEC_NAME} model {model}"),
                        None => EXEC_NAME.to_owned(),
                    });
                    put("device", ArgValue::Int(device));
                    put("stream", ArgValue::Int(stream_id));
                    put("correlation", ArgValue::Int(correlation));
                    if !flow_ids.is_empty() {
                        put("External id", ArgValue::Int(correlation));
                    }
                    let mut event = Event::complete(
                        Category::Kernel,
                        kernel_name,
                        device,
                        stream_id,
                        start_ns,
                        dur_ns,
                    );
                    event.args = Some(args);
                    let pending = Pending {
                        event,
                        end_ns,
                        pcores: pcore.into_iter().collect(),
                    };
                    if self.survey.lnc <= 1 {
                        self.emit_exec(pending, out);
                        continue;
                    }
                    // LNC > 1: one row per physical core, one kernel of the logical core.
                    let key = (pid, device, correlation);
                    match self.pending.get_mut(&key) {
                        Some(p) => {
                            let s = p.event.ts_ns.unwrap_or(start_ns).min(start_ns);
                            p.event.ts_ns = Some(s);
                            p.end_ns = p.end_ns.max(end_ns);
                            p.pcores.extend(pcore);
                            if p.pcores.len() >= self.survey.lnc {
                                let p = self.pending.remove(&key).expect("present");
                                self.pending_order.retain(|_, k| *k != key);
                                self.emit_exec(p, out);
                            }
                        }
                        None => {
                            self.pending.insert(key, pending);
                            self.pending_order.insert(self.pending_seq, key);
                            self.pending_seq += 1;
                        }
                    }
                }
                "neuron_hw" => {
                    let device = nc.unwrap_or(self.device_pid);
                    self.device_pids.insert(device);
                    let (category, track) = match category_attr {
                        Some(cat) => (Category::parse(Cow::Owned(cat)), stream_id.unwrap_or(0)),
                        None => {
                            let track = HW_TID_BASE + pcore.unwrap_or(0);
                            self.tracks.insert((
                                device,
                                track,
                                format!("neuron_hw pcore {}", pcore.unwrap_or(0)),
                            ));
                            (Category::Other(Cow::Borrowed(HW_CATEGORY)), track)
                        }
                    };
                    if let Some(p) = pcore {
                        put("pcore_idx", ArgValue::Int(p));
                    }
                    if flow_ids.len() == 1 {
                        put("correlation", ArgValue::Int(correlation));
                    }
                    put("device", ArgValue::Int(device));
                    if let Some(s) = stream_id {
                        put("stream", ArgValue::Int(s));
                    }
                    let mut e =
                        Event::complete(category, name.to_owned(), device, track, start_ns, dur_ns);
                    e.args = Some(args);
                    out.push(e);
                    if flow_ids.len() == 1 {
                        out.push(Event::flow(
                            FlowEnd::Finish,
                            Category::Ac2g,
                            correlation,
                            device,
                            track,
                            start_ns,
                        ));
                    }
                }
                "neuron_rt" => {
                    if let Some(nc) = nc {
                        put("device", ArgValue::Int(nc));
                    }
                    if !flow_ids.is_empty() {
                        put("correlation", ArgValue::Int(correlation));
                    }
                    let category = category_attr.map_or(Category::PrivateUse1Runtime, |c| {
                        Category::parse(Cow::Owned(c))
                    });
                    let mut e =
                        Event::complete(category, name.to_owned(), pid, tid, start_ns, dur_ns);
                    e.args = Some(args);
                    out.push(e);
                    for &flow in &flow_ids {
                        out.push(Event::flow(
                            FlowEnd::Start,
                            Category::Ac2g,
                            flow,
                            pid,
                            tid,
                            start_ns,
                        ));
                    }
                }
                other => {
                    let category = match (other, category_attr) {
                        ("framework", Some(cat)) => Category::parse(Cow::Owned(cat)),
                        ("framework", None) if name.starts_with("ProfilerStep#") => {
                            Category::UserAnnotation
                        }
                        ("framework", None) => Category::CpuOp,
                        (other, _) => Category::Other(Cow::Owned(other.to_owned())),
                    };
                    if !flow_ids.is_empty() {
                        put("External id", ArgValue::Int(correlation));
                    }
                    let mut e =
                        Event::complete(category, name.to_owned(), pid, tid, start_ns, dur_ns);
                    e.args = Some(args);
                    out.push(e);
                }
            }
        }
        Ok(())
    }

    fn cc_rows(&mut self, b: &Batch, out: &mut Vec<Event<'static>>) -> Result<(), NeuronError> {
        let start = b.int_req("start_ts")?;
        let end = b.int_req("end_ts")?;
        let operation = b.str_req("operation")?;
        let algorithm = b.str("algorithm")?;
        let elements = b.int("num_elements")?;
        let dtype = b.str("dtype")?;
        let op_id = b.int("op_id")?;
        let stream = b.int("stream_id")?;
        let input = b.int("input_size")?;
        let output = b.int("output_size")?;
        let group_id = b.int("replica_group_id")?;
        let group = b.str("replica_group")?;
        let device = self.device_pid;
        self.device_pids.insert(device);
        for row in 0..b.len() {
            let start_ns = b.need("start_ts", row, start.get(row))?;
            let end_ns = b.need("end_ts", row, end.get(row))?;
            let op = b.need("operation", row, operation.get(row))?;
            let stream_id = CC_STREAM_BASE + stream.as_ref().and_then(|s| s.get(row)).unwrap_or(0);
            self.tracks.insert((
                device,
                stream_id,
                format!("collectives stream {}", stream_id - CC_STREAM_BASE),
            ));
            let nelems = elements.as_ref().and_then(|e| e.get(row)).unwrap_or(0);
            let (in_bytes, out_bytes) = (
                input.as_ref().and_then(|c| c.get(row)),
                output.as_ref().and_then(|c| c.get(row)),
            );
            let out_nelems = match (in_bytes, out_bytes) {
                (Some(i), Some(o)) if i > 0 => nelems.saturating_mul(o) / i,
                _ => nelems,
            };
            let group_text = group.as_ref().and_then(|g| g.get(row)).unwrap_or("");
            let ranks: Vec<i64> = group_text
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|n| n.parse().ok())
                .collect();
            let op_id = op_id
                .as_ref()
                .and_then(|c| c.get(row))
                .unwrap_or(row as i64);
            // A neuronprof export keeps the collective's launch correlation in `op_id`;
            // a real profile's collectives have no launch of their own.
            let correlation = if self.exported {
                op_id
            } else {
                SYNTHETIC_CORRELATION * 2 + op_id
            };
            let mut e = Event::complete(
                Category::Kernel,
                op.to_owned(),
                device,
                stream_id,
                start_ns,
                end_ns - start_ns,
            )
            .with_arg("device", device)
            .with_arg("stream", stream_id)
            .with_arg("correlation", correlation)
            .with_arg("Collective name", collective_name(op))
            .with_arg("In msg nelems", nelems)
            .with_arg("Out msg nelems", out_nelems)
            .with_arg("Group size", ranks.len().max(1) as i64)
            .with_arg(
                "dtype",
                dtype
                    .as_ref()
                    .and_then(|d| d.get(row))
                    .unwrap_or("")
                    .to_owned(),
            )
            .with_arg(
                "Process Group Name",
                group_id
                    .as_ref()
                    .and_then(|g| g.get(row))
                    .unwrap_or(0)
                    .to_string(),
            )
            .with_arg("Process Group Ranks", format!("{ranks:?}"))
            .with_arg("op_id", op_id);
            if let Some(a) = algorithm.as_ref().and_then(|a| a.get(row)) {
                e = e.with_arg("algorithm", a.to_owned());
            }
            if let Some(bytes) = in_bytes {
                e = e.with_arg("bytes", bytes);
            }
            out.push(e);
            if self.exported {
                let flow = Event::flow(
                    FlowEnd::Finish,
                    Category::Ac2g,
                    correlation,
                    device,
                    stream_id,
                    start_ns,
                );
                out.push(flow);
            }
        }
        Ok(())
    }
}

/// What the analyses lose when `table` is missing (`None`: nothing they use).
fn missing_means(table: &str) -> Option<&'static str> {
    Some(match table {
        "CcOp" => "no device collectives (no collectives matched across ranks)",
        "Instruction" => "no engine rows (engine utilization unknown)",
        "HbmUsage" => "no HBM throughput counters",
        "CpuUsage" => "no host CPU counters",
        "HostMemUsage" => "no host memory counters",
        _ => return None,
    })
}

/// `AllReduce`, `all-reduce`, `all_reduce` → `allreduce` (the spelling the collective
/// analyses match on, as NCCL's and our profiler's `Collective name`).
pub fn collective_name(operation: &str) -> String {
    operation
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn json_arg(v: &serde_json::Value) -> ArgValue<'static> {
    match v {
        serde_json::Value::Null => ArgValue::Null,
        serde_json::Value::Bool(b) => ArgValue::Bool(*b),
        serde_json::Value::Number(n) => n
            .as_i64()
            .map(ArgValue::Int)
            .or_else(|| n.as_f64().map(ArgValue::Float))
            .unwrap_or(ArgValue::Null),
        serde_json::Value::String(s) => ArgValue::Str(Cow::Owned(s.clone())),
        other => ArgValue::Str(Cow::Owned(other.to_string())),
    }
}
