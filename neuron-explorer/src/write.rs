//! The writer: a Kineto trace → a profile folder with the documented layout, tables,
//! column names and types (schema [`WRITTEN_VERSION`]), so a run of the emulator can be
//! opened as a Trainium capture would be, and read back by this crate.
//!
//! Each `X` event goes to the table of its kind ([`table_of`]); what a table has no
//! column for (the Kineto category, args) goes to `SystemProfileEvents`'
//! `extra_attributes_json` — the schema's place for attributes without a column — and
//! comes back as args. Flows and track names are not written: the reader makes them
//! again from `flow_id` and the tables. Memory instants and counters have no table here
//! and are counted in [`WriteReport::dropped`].

mod columns;
mod specs;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use trace_format::{ArgValue, Event, Phase, TraceMeta, TraceReader, TraceSink};

use crate::error::NeuronError;
use crate::events::EXEC_NAME;
use crate::schema::WRITTEN_VERSION;
use columns::{ColumnSpec, TableBuf, V};

/// What [`write_profile`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// The profile folder.
    pub dir: PathBuf,
    /// Rows written per table.
    pub rows: BTreeMap<String, u64>,
    /// Events not written, by kind (`memory instant`, `counter`, `instant`, …).
    pub dropped: BTreeMap<String, u64>,
}

/// Where a Kineto `X` event of normalized category `category` goes: `("CcOp", _)`,
/// `("Instruction", _)`, `("DmaPacketAggregated", _)` or `("SystemProfileEvents",
/// trace_event_source)`.
pub fn table_of(category: &str, collective: bool) -> (&'static str, &'static str) {
    match category {
        "neuron_instruction" => ("Instruction", ""),
        "neuron_dma" => ("DmaPacketAggregated", ""),
        "kernel" if collective => ("CcOp", ""),
        "kernel" | "gpu_memcpy" | "gpu_memset" | "gpu_user_annotation" => {
            ("SystemProfileEvents", "neuron_hw")
        }
        "privateuse1_runtime" | "cuda_runtime" | "cuda_driver" => {
            ("SystemProfileEvents", "neuron_rt")
        }
        _ => ("SystemProfileEvents", "framework"),
    }
}

/// Writes the Kineto trace `trace` as the profile folder `dir` (created; tables in it
/// replaced).
pub fn write_profile(trace: &Path, dir: &Path) -> Result<WriteReport, NeuronError> {
    write_profile_from(TraceReader::open(trace), trace, dir)
}

/// [`write_profile`] from any reader of Kineto events (`trace` names it in errors and in
/// `Metadata.profile_name`).
pub fn write_profile_from(
    reader: TraceReader<'_>,
    trace: &Path,
    dir: &Path,
) -> Result<WriteReport, NeuronError> {
    std::fs::create_dir_all(dir).map_err(|e| NeuronError::io(dir, e))?;
    let mut sink = Writer::new(dir);
    reader.read(&mut sink).map_err(|e| NeuronError::Trace {
        path: trace.to_path_buf(),
        message: e.to_string(),
    })?;
    if let Some(e) = sink.error.take() {
        return Err(e);
    }
    sink.finish(trace)
}

struct Writer {
    dir: PathBuf,
    events: TableBuf,
    instructions: TableBuf,
    dmas: TableBuf,
    collectives: TableBuf,
    error: Option<NeuronError>,
    rank: Option<i64>,
    instance: String,
    next_id: i64,
    device: Option<i64>,
    device_span: Option<(i64, i64)>,
    span: Option<(i64, i64)>,
    cores: i64,
    dropped: BTreeMap<String, u64>,
}

impl Writer {
    fn new(dir: &Path) -> Self {
        Writer {
            dir: dir.to_path_buf(),
            events: TableBuf::new(dir, "SystemProfileEvents", specs::SYSTEM_PROFILE_EVENTS),
            instructions: TableBuf::new(dir, "Instruction", specs::INSTRUCTION),
            dmas: TableBuf::new(dir, "DmaPacketAggregated", specs::DMA_PACKET_AGGREGATED),
            collectives: TableBuf::new(dir, "CcOp", specs::CC_OP),
            error: None,
            rank: None,
            instance: "neuronprof".to_owned(),
            next_id: 0,
            device: None,
            device_span: None,
            span: None,
            cores: 0,
            dropped: BTreeMap::new(),
        }
    }

    fn drop_one(&mut self, kind: &str) {
        *self.dropped.entry(kind.to_owned()).or_default() += 1;
    }

    fn event(&mut self, e: &Event<'_>) -> Result<(), NeuronError> {
        match e.phase {
            Phase::Complete => {}
            Phase::FlowStart | Phase::FlowStep | Phase::FlowFinish | Phase::Metadata => {
                return Ok(())
            }
            Phase::Counter => {
                self.drop_one("counter");
                return Ok(());
            }
            _ if e.is_memory_event() => {
                self.drop_one("memory instant");
                return Ok(());
            }
            _ if e.is_record_window_end() => return Ok(()),
            _ => {
                self.drop_one(e.phase.as_str());
                return Ok(());
            }
        }
        let (Some(start), Some(dur)) = (e.ts_ns, e.dur_ns) else {
            self.drop_one("X without ts or dur");
            return Ok(());
        };
        let end = start + dur;
        self.span = Some(
            self.span
                .map_or((start, end), |(s, t)| (s.min(start), t.max(end))),
        );
        let category = e
            .normalized_category()
            .map_or_else(String::new, |c| c.as_str().to_owned());
        let arg = |k: &str| e.arg(k);
        let int = |k: &str| arg(k).and_then(|v| v.as_i64());
        let pid = e.pid.as_ref().and_then(|p| p.as_i64()).unwrap_or(0);
        let tid = e.tid.as_ref().and_then(|t| t.as_i64()).unwrap_or(0);
        let collective = arg("Collective name").is_some();
        let (table, source) = table_of(&category, collective);
        let id = self.next_id;
        self.next_id += 1;
        let times = [
            ("start_ts", V::I(start)),
            ("end_ts", V::I(end)),
            ("duration_ns", V::I(dur)),
        ];
        if source == "neuron_hw" || table != "SystemProfileEvents" {
            let device = int("device").unwrap_or(pid);
            self.device.get_or_insert(device);
            self.device_span = Some(
                self.device_span
                    .map_or((start, end), |(s, t)| (s.min(start), t.max(end))),
            );
        }
        match table {
            "Instruction" => {
                let core = int("core").unwrap_or(0);
                self.cores = self.cores.max(core + 1);
                let engine = arg("engine")
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| e.name().to_owned());
                let mut row = times.to_vec();
                row.extend([
                    ("engine", V::S(engine.clone())),
                    ("timeline_track", V::S(engine)),
                    ("pcore_idx", V::I(core)),
                    ("opcode", V::S(e.name().to_owned())),
                    ("operands", V::S(String::new())),
                    ("id", V::I(id)),
                ]);
                if let Some(f) = int("flops") {
                    row.push(("raw_flops", V::I(f)));
                    row.push(("adjusted_flops", V::I(f)));
                }
                self.instructions.push(&row)
            }
            "DmaPacketAggregated" => {
                let bytes = int("bytes").unwrap_or(0);
                let queue = int("dma queue").unwrap_or(0);
                let op = e.name().strip_prefix("dma ").unwrap_or(e.name()).to_owned();
                let mut row = times.to_vec();
                row.extend([
                    ("id", V::I(id)),
                    ("queue_idx", V::I(queue)),
                    ("queue_name", V::S(format!("queue {queue}"))),
                    ("op", V::S(op)),
                    ("read_bytes", V::I(bytes)),
                    ("write_bytes", V::I(bytes)),
                    ("transfer_bytes", V::I(bytes)),
                ]);
                if let Some(core) = int("core") {
                    row.push(("pcore_idx", V::I(core)));
                }
                if dur > 0 {
                    row.push(("throughput", V::F(bytes as f64 * 1e9 / dur as f64)));
                }
                self.dmas.push(&row)
            }
            "CcOp" => {
                let text = |k: &str| {
                    arg(k).map(|v| {
                        v.as_str()
                            .map_or_else(|| arg_json(&v).to_string(), str::to_owned)
                    })
                };
                let nelems = int("In msg nelems").unwrap_or(0);
                let out_nelems = int("Out msg nelems").unwrap_or(nelems);
                let mut row = times.to_vec();
                row.extend([
                    (
                        "operation",
                        V::S(text("Collective name").unwrap_or_default()),
                    ),
                    ("algorithm", V::S(text("algorithm").unwrap_or_default())),
                    ("num_elements", V::I(nelems)),
                    ("dtype", V::S(text("dtype").unwrap_or_default())),
                    // The launch correlation, so the export reads back linked.
                    (
                        "op_id",
                        V::I(int("correlation").or(int("Seq")).unwrap_or(id)),
                    ),
                    ("stream_id", V::I(tid)),
                ]);
                if let Some(bytes) = int("bytes") {
                    row.push(("input_size", V::I(bytes)));
                    if nelems > 0 {
                        row.push((
                            "output_size",
                            V::I(bytes.saturating_mul(out_nelems) / nelems),
                        ));
                    }
                }
                if let Some(group) = text("Process Group Name").and_then(|g| g.parse().ok()) {
                    row.push(("replica_group_id", V::I(group)));
                }
                if let Some(ranks) = text("Process Group Ranks") {
                    row.push(("replica_group", V::S(ranks)));
                }
                self.collectives.push(&row)
            }
            _ => {
                let exec = source == "neuron_hw" && category == "kernel";
                let skip: &[&str] = match source {
                    "neuron_hw" => &["device", "stream", "correlation"],
                    "neuron_rt" => &["correlation"],
                    _ => &[],
                };
                let mut extra = Map::new();
                extra.insert("cat".into(), Value::String(category.clone()));
                if exec {
                    extra.insert("kernel_name".into(), Value::String(e.name().to_owned()));
                }
                if let Some(args) = &e.args {
                    for (k, v) in args.iter() {
                        if !skip.contains(&k.as_ref()) {
                            extra.insert(k.to_string(), arg_json(&v));
                        }
                    }
                }
                let name = if exec { EXEC_NAME } else { e.name() };
                let mut row = times.to_vec();
                row.extend([
                    ("id", V::I(id)),
                    ("name", V::S(name.to_owned())),
                    ("trace_event_source", V::S(source.to_owned())),
                    ("instance_id", V::S(self.instance.clone())),
                    (
                        "extra_attributes_json",
                        V::S(Value::Object(extra).to_string()),
                    ),
                ]);
                if let Some(corr) = int("correlation").filter(|c| *c >= 0 && source != "framework")
                {
                    row.push(("flow_id", V::L(vec![corr.to_string()])));
                }
                if source == "framework" || source == "neuron_rt" {
                    row.push(("process_id", V::I(pid)));
                    row.push(("thread_id", V::I(tid)));
                    if let Some(d) = int("device").filter(|_| source == "neuron_rt") {
                        row.push(("nc_idx", V::I(d)));
                    }
                } else {
                    let device = int("device").unwrap_or(pid);
                    row.push(("process_id", V::I(0)));
                    row.push(("thread_id", V::I(0)));
                    row.push(("nc_idx", V::I(device)));
                    row.push(("pcore_idx", V::I(0)));
                    row.push((
                        "framework_stream_id",
                        V::S(int("stream").unwrap_or(tid).to_string()),
                    ));
                }
                if source != "framework" {
                    if let Some(rank) = self.rank {
                        row.push(("worker_gid", V::I(rank)));
                    }
                }
                self.events.push(&row)
            }
        }
    }

    fn finish(self, trace: &Path) -> Result<WriteReport, NeuronError> {
        let dir = self.dir.clone();
        let mut rows = BTreeMap::new();
        let mut written: Vec<(&'static str, &'static [ColumnSpec])> = Vec::new();
        for table in [self.events, self.instructions, self.dmas, self.collectives] {
            let (name, spec) = (table.name, table.spec);
            let n = table.finish()?;
            if n > 0 {
                rows.insert(name.to_owned(), n);
                written.push((name, spec));
            }
        }
        let ns_text = |v: Option<i64>| v.map_or(V::Null, |v| V::S(v.to_string()));
        let mut metadata = TableBuf::new(&dir, "Metadata", specs::METADATA);
        let profile_name = trace
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("trace")
            .to_owned();
        let mut row = vec![
            ("profile_schema_version", V::S(WRITTEN_VERSION.to_owned())),
            ("num_physical_cores", V::I(self.cores.max(1))),
            ("vnc_enabled", V::B(self.cores > 1)),
            ("first_ts", ns_text(self.span.map(|s| s.0))),
            ("last_ts", ns_text(self.span.map(|s| s.1))),
            (
                "explorer_version",
                V::S(format!("neuronprof {}", env!("CARGO_PKG_VERSION"))),
            ),
            ("profile_name", V::S(profile_name)),
        ];
        if let Some((first, last)) = self.device_span {
            row.push(("first_hw_timestamp", V::I(first)));
            row.push(("last_hw_timestamp", V::I(last)));
        }
        if let Some(device) = self.device {
            row.push(("neuroncore_idx", V::I(device)));
        }
        metadata.push(&row)?;
        metadata.finish()?;
        rows.insert("Metadata".into(), 1);
        written.push(("Metadata", specs::METADATA));
        let mut system = TableBuf::new(
            &dir,
            "SystemProfileMetadata",
            specs::SYSTEM_PROFILE_METADATA,
        );
        system.push(&[
            ("first_ts", ns_text(self.span.map(|s| s.0))),
            ("last_ts", ns_text(self.span.map(|s| s.1))),
            ("first_ts_ns", ns_text(self.span.map(|s| s.0))),
            ("last_ts_ns", ns_text(self.span.map(|s| s.1))),
        ])?;
        system.finish()?;
        rows.insert("SystemProfileMetadata".into(), 1);
        written.push(("SystemProfileMetadata", specs::SYSTEM_PROFILE_METADATA));
        written.push(("SchemaFields", specs::SCHEMA_FIELDS));
        let mut fields = TableBuf::new(&dir, "SchemaFields", specs::SCHEMA_FIELDS);
        let mut n = 0;
        for (table, spec) in &written {
            for (field, ty, unit, required) in spec.iter() {
                let mut row = vec![
                    ("table_name", V::S((*table).to_owned())),
                    (
                        "table_description",
                        V::S(format!("{table}, written by neuronprof export")),
                    ),
                    ("field_name", V::S((*field).to_owned())),
                    ("field_description", V::S(format!("{table}.{field}"))),
                    ("field_type", V::S(ty.schema_text().to_owned())),
                    ("field_required", V::B(*required)),
                ];
                if !unit.is_empty() {
                    row.push(("field_unit", V::S((*unit).to_owned())));
                }
                fields.push(&row)?;
                n += 1;
            }
        }
        fields.finish()?;
        rows.insert("SchemaFields".into(), n);
        Ok(WriteReport {
            dir,
            rows,
            dropped: self.dropped,
        })
    }
}

fn arg_json(v: &ArgValue<'_>) -> Value {
    match v {
        ArgValue::Null => Value::Null,
        ArgValue::Bool(b) => Value::Bool(*b),
        ArgValue::Int(i) => Value::from(*i),
        ArgValue::UInt(u) => Value::from(*u),
        ArgValue::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        ArgValue::Number(n) => Value::String(n.to_string()),
        ArgValue::Str(s) => Value::String(s.to_string()),
        ArgValue::Array(raw) | ArgValue::Object(raw) => raw.to_value(),
    }
}

impl TraceSink for Writer {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.rank = meta.rank();
        if let Some(host) = meta
            .get("host_name")
            .and_then(|h| h.deserialize::<String>().ok())
        {
            self.instance = host;
        }
        ControlFlow::Continue(())
    }

    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        match self.event(event) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                self.error = Some(e);
                ControlFlow::Break(())
            }
        }
    }
}
