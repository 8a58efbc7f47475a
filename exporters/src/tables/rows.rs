//! The rows of every table, taken from one streaming read of a trace.

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::path::Path;

use trace_format::{ArgValue, Category, Event, Ident, Phase, TraceMeta, TraceSink};

use super::{RowSink, Value};
use crate::ExportError;

/// What a read of one file found: the row of the `ranks` table, as plain values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankRow {
    /// The input's path as given.
    pub file: String,
    /// The rank (`distributedInfo.rank`, else the fallback).
    pub rank: i64,
    /// `distributedInfo.world_size`.
    pub world_size: Option<i64>,
    /// `distributedInfo.backend`.
    pub backend: Option<String>,
    /// `baseTimeNanoseconds`.
    pub base_time_ns: Option<i64>,
    /// Events delivered.
    pub events: u64,
    /// Damaged events skipped (lenient reads).
    pub events_skipped: u64,
    /// Where and why the file is damaged (lenient reads): the first skipped events'
    /// errors, then the error that stopped the read; empty when clean.
    pub damage: Vec<String>,
    /// Earliest event start, ns.
    pub first_ts_ns: Option<i64>,
    /// Latest event end, ns.
    pub last_end_ns: Option<i64>,
    /// `deviceProperties` as JSON.
    pub devices: Option<String>,
}

impl RankRow {
    /// Whether the read found damage.
    pub fn is_damaged(&self) -> bool {
        self.events_skipped > 0 || !self.damage.is_empty()
    }

    fn push(&self, rows: &mut dyn RowSink) -> std::io::Result<()> {
        if !rows.wants(5) {
            return Ok(());
        }
        let damage = self.damage.join("; ");
        rows.row(
            5,
            &[
                Value::Text(Some(Cow::Borrowed(&self.file))),
                Value::Int(Some(self.rank)),
                Value::Int(self.world_size),
                Value::Text(self.backend.as_deref().map(Cow::Borrowed)),
                Value::Int(self.base_time_ns),
                Value::Int(i64::try_from(self.events).ok()),
                Value::Int(i64::try_from(self.events_skipped).ok()),
                Value::Text((!damage.is_empty()).then_some(Cow::Owned(damage))),
                Value::Int(self.first_ts_ns),
                Value::Int(self.last_end_ns),
                Value::Text(self.devices.as_deref().map(Cow::Borrowed)),
            ],
        )
    }
}

/// Reads one trace and pushes its rows into `rows`: every table `rows` wants, the
/// `ranks` row last. The rank is `distributedInfo.rank`, else `fallback_rank`. Lenient:
/// damaged events are skipped and a truncated file ends early; the damage is in the
/// returned [`RankRow`] (and its `ranks` row) instead of an error.
pub fn read_rows(
    path: &Path,
    fallback_rank: i64,
    lenient: bool,
    rows: &mut dyn RowSink,
) -> Result<RankRow, ExportError> {
    let file = path.display().to_string();
    let mut sink = Rows {
        rows,
        file: file.clone(),
        rank: fallback_rank,
        first_ts_ns: None,
        last_end_ns: None,
        error: None,
    };
    let result = analysis::inputs::open_trace(path, lenient)
        .map_err(|e| ExportError::Open(e.to_string()))?
        .read(&mut sink);
    let (first_ts_ns, last_end_ns) = (sink.first_ts_ns, sink.last_end_ns);
    let rank = sink.rank;
    if let Some(source) = sink.error.take() {
        return Err(ExportError::Write {
            input: path.to_owned(),
            source,
        });
    }
    let report = result.map_err(ExportError::Read)?;
    let meta = &report.meta;
    let mut damage: Vec<String> = report
        .skipped_examples
        .iter()
        .map(|e| e.to_string())
        .collect();
    if let Some(err) = &report.damage {
        damage.push(err.to_string());
    }
    let devices = meta
        .get("deviceProperties")
        .map(|raw| raw.as_str().to_owned());
    let row = RankRow {
        file,
        rank,
        world_size: meta.world_size(),
        backend: meta.distributed_info().and_then(|d| d.backend),
        base_time_ns: meta.base_time_ns(),
        events: report.events_delivered,
        events_skipped: report.events_skipped,
        damage,
        first_ts_ns,
        last_end_ns,
        devices,
    };
    row.push(rows).map_err(|source| ExportError::Write {
        input: path.to_owned(),
        source,
    })?;
    Ok(row)
}

struct Rows<'r> {
    rows: &'r mut dyn RowSink,
    file: String,
    rank: i64,
    first_ts_ns: Option<i64>,
    last_end_ns: Option<i64>,
    error: Option<std::io::Error>,
}

fn ident<'e>(value: &'e Option<Ident<'_>>) -> Value<'e> {
    Value::Text(value.as_ref().map(|v| match v {
        Ident::Num(n) => Cow::Owned(n.to_string()),
        Ident::Str(s) => Cow::Borrowed(&**s),
    }))
}

fn text<'e>(value: Option<&'e str>) -> Value<'e> {
    Value::Text(value.map(Cow::Borrowed))
}

fn int_arg(event: &Event<'_>, key: &str) -> Value<'static> {
    Value::Int(event.arg(key).and_then(|v| v.as_i64()))
}

fn text_arg<'e>(event: &'e Event<'_>, key: &str) -> Value<'e> {
    Value::Text(event.arg(key).map(|v| Cow::Owned(arg_text(&v))))
}

impl Rows<'_> {
    fn rows(&mut self, index: u64, event: &Event<'_>) -> std::io::Result<()> {
        if let Some(ts) = event.ts_ns {
            self.first_ts_ns = Some(self.first_ts_ns.map_or(ts, |f| f.min(ts)));
            let end = event.end_ns().unwrap_or(ts);
            self.last_end_ns = Some(self.last_end_ns.map_or(end, |l| l.max(end)));
        }
        let file = Value::Text(Some(Cow::Borrowed(self.file.as_str())));
        let rank = Value::Int(Some(self.rank));
        let out = &mut *self.rows;
        let complete = event.phase == Phase::Complete;
        let category = event.normalized_category();
        if out.wants(0) {
            let args = if out.wants_column(0, 11) {
                Value::Text(event.args.as_ref().map(|a| Cow::Owned(args_json(a))))
            } else {
                Value::Text(None)
            };
            out.row(
                0,
                &[
                    file.clone(),
                    rank.clone(),
                    Value::Int(i64::try_from(index).ok()),
                    text(Some(event.phase.as_str())),
                    text(event.category.as_ref().map(|c| c.as_str())),
                    text(event.name.as_deref()),
                    ident(&event.pid),
                    ident(&event.tid),
                    Value::Int(event.ts_ns),
                    Value::Int(event.dur_ns),
                    ident(&event.flow_id),
                    args,
                ],
            )?;
        }
        let device_work = matches!(
            category,
            Some(Category::Kernel | Category::GpuMemcpy | Category::GpuMemset)
        );
        if complete && device_work && out.wants(1) {
            out.row(
                1,
                &[
                    file.clone(),
                    rank.clone(),
                    text(category.as_ref().map(|c| c.as_str())),
                    text(event.name.as_deref()),
                    int_arg(event, "device"),
                    int_arg(event, "stream"),
                    int_arg(event, "correlation"),
                    int_arg(event, "External id"),
                    Value::Int(event.ts_ns),
                    Value::Int(event.dur_ns),
                    int_arg(event, "bytes"),
                    text_arg(event, "Collective name"),
                ],
            )?;
        }
        if complete && out.wants(2) && event.arg("Collective name").is_some() {
            let on = if category.as_ref().is_some_and(|c| c.is_device_activity()) {
                "device"
            } else {
                "host"
            };
            out.row(
                2,
                &[
                    file.clone(),
                    rank.clone(),
                    text(Some(on)),
                    text(event.name.as_deref()),
                    text_arg(event, "Collective name"),
                    int_arg(event, "In msg nelems"),
                    int_arg(event, "Out msg nelems"),
                    int_arg(event, "Group size"),
                    text_arg(event, "dtype"),
                    text_arg(event, "Process Group Name"),
                    text_arg(event, "Process Group Ranks"),
                    int_arg(event, "Seq"),
                    Value::Int(event.ts_ns),
                    Value::Int(event.dur_ns),
                ],
            )?;
        }
        if out.wants(3) && event.is_memory_event() {
            out.row(
                3,
                &[
                    file.clone(),
                    rank.clone(),
                    ident(&event.pid),
                    ident(&event.tid),
                    Value::Int(event.ts_ns),
                    int_arg(event, "Device Type"),
                    int_arg(event, "Device Id"),
                    int_arg(event, "Addr"),
                    int_arg(event, "Bytes"),
                    int_arg(event, "Total Allocated"),
                    int_arg(event, "Total Reserved"),
                ],
            )?;
        }
        if complete && out.wants(4) {
            if let Some(step) = event.name().strip_prefix("ProfilerStep#") {
                out.row(
                    4,
                    &[
                        file.clone(),
                        rank.clone(),
                        Value::Int(step.parse().ok()),
                        ident(&event.pid),
                        ident(&event.tid),
                        Value::Int(event.ts_ns),
                        Value::Int(event.dur_ns),
                    ],
                )?;
            }
        }
        let host_op = matches!(category, Some(Category::CpuOp | Category::UserAnnotation));
        if complete && host_op && out.wants(6) {
            let json_arg = |key: &str| {
                Value::Text(event.arg(key).map(|v| match v {
                    ArgValue::Str(s) => Cow::Owned(serde_json::to_string(&*s).unwrap_or_default()),
                    other => Cow::Owned(arg_text(&other)),
                }))
            };
            out.row(
                6,
                &[
                    file.clone(),
                    rank.clone(),
                    text(category.as_ref().map(|c| c.as_str())),
                    text(event.name.as_deref()),
                    ident(&event.pid),
                    ident(&event.tid),
                    Value::Int(event.ts_ns),
                    Value::Int(event.dur_ns),
                    int_arg(event, "External id"),
                    int_arg(event, "Sequence number"),
                    int_arg(event, "Fwd thread id"),
                    json_arg("Input Dims"),
                    json_arg("Input type"),
                ],
            )?;
        }
        if out.wants(7) && event.flow_end().is_some() {
            let kind = event.flow_category();
            out.row(
                7,
                &[
                    file,
                    rank,
                    text(Some(event.phase.as_str())),
                    text(kind.as_ref().map(|c| c.as_str())),
                    ident(&event.flow_id),
                    text(event.name.as_deref()),
                    ident(&event.pid),
                    ident(&event.tid),
                    Value::Int(event.ts_ns),
                    text(event.binding_point.as_deref()),
                ],
            )?;
        }
        Ok(())
    }
}

impl TraceSink for Rows<'_> {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        if let Some(rank) = meta.rank() {
            self.rank = rank;
        }
        ControlFlow::Continue(())
    }

    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        match self.rows(index, event) {
            Ok(()) => ControlFlow::Continue(()),
            Err(err) => {
                self.error = Some(err);
                ControlFlow::Break(())
            }
        }
    }
}

fn arg_text(value: &ArgValue<'_>) -> String {
    match value {
        ArgValue::Null => String::new(),
        ArgValue::Bool(b) => b.to_string(),
        ArgValue::Int(n) => n.to_string(),
        ArgValue::UInt(n) => n.to_string(),
        ArgValue::Float(x) => x.to_string(),
        ArgValue::Number(text) | ArgValue::Str(text) => text.to_string(),
        ArgValue::Array(raw) | ArgValue::Object(raw) => raw.as_str().to_owned(),
    }
}

fn args_json(args: &trace_format::Args<'_>) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&serde_json::to_string(&*key).unwrap_or_default());
        out.push_str(": ");
        let text = match &value {
            ArgValue::Null => "null".to_owned(),
            ArgValue::Str(text) => serde_json::to_string(&**text).unwrap_or_default(),
            ArgValue::Float(x) if !x.is_finite() => "null".to_owned(),
            other => arg_text(other),
        };
        out.push_str(&text);
    }
    out.push('}');
    out
}
