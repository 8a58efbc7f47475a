//! Kineto traces as CSV tables (events, kernels, collectives, memory, steps), streaming.
//!
//! One file per table in an output directory, one row per matching event of every
//! input, written as the events are read (bounded memory), so a fleet of rank traces
//! can be loaded into DuckDB, Spark or a spreadsheet. CSV as RFC 4180: a header row,
//! comma-separated, fields with a comma, quote or line break in double quotes (quotes
//! doubled); empty field = absent. Times are Unix-epoch nanoseconds (Kineto's `ts` made
//! absolute, see `trace_format`), durations nanoseconds.
//!
//! # Schema
//!
//! Every table starts with `file` (the input's path as given) and `rank`
//! (`distributedInfo.rank`, empty when the trace has none).
//!
//! | table | one row per | columns after `file, rank` |
//! |---|---|---|
//! | `events.csv` | event of `traceEvents` | `index, phase, category, name, pid, tid, ts_ns, dur_ns, flow_id, args` (`args`: the event's args as a JSON object) |
//! | `kernels.csv` | `X` event of category `kernel`, `gpu_memcpy`, `gpu_memset` (legacy spellings normalised) | `category, name, device, stream, correlation, external_id, ts_ns, dur_ns, bytes` |
//! | `collectives.csv` | `X` event with a `Collective name` arg (host `record_param_comms` and device kernels) | `on` (`host`/`device`), `name, collective, in_msg_nelems, out_msg_nelems, group_size, dtype, process_group_name, process_group_ranks, seq, ts_ns, dur_ns` |
//! | `memory.csv` | `[memory]` instant | `pid, tid, ts_ns, device_type, device_id, addr, bytes, total_allocated, total_reserved` |
//! | `steps.csv` | `X` event named `ProfilerStep#N` | `step, pid, tid, ts_ns, dur_ns` |

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use trace_format::{ArgValue, Category, Event, Phase, TraceMeta, TraceReader, TraceSink};

use crate::ExportError;

/// The tables, in the order of [`TableStats::rows`].
pub const TABLES: [&str; 5] = ["events", "kernels", "collectives", "memory", "steps"];

const HEADERS: [&str; 5] = [
    "file,rank,index,phase,category,name,pid,tid,ts_ns,dur_ns,flow_id,args",
    "file,rank,category,name,device,stream,correlation,external_id,ts_ns,dur_ns,bytes",
    "file,rank,on,name,collective,in_msg_nelems,out_msg_nelems,group_size,dtype,process_group_name,process_group_ranks,seq,ts_ns,dur_ns",
    "file,rank,pid,tid,ts_ns,device_type,device_id,addr,bytes,total_allocated,total_reserved",
    "file,rank,step,pid,tid,ts_ns,dur_ns",
];

/// Rows written per table (same order as [`TABLES`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableStats {
    /// Rows per table.
    pub rows: [u64; 5],
    /// The files written.
    pub files: Vec<PathBuf>,
}

/// Writes the CSV tables of one or more traces into a directory.
#[derive(Debug)]
pub struct CsvExporter {
    writers: Vec<BufWriter<File>>,
    stats: TableStats,
}

impl CsvExporter {
    /// Creates (or truncates) `events.csv` … `steps.csv` in `dir` (created if missing).
    pub fn create(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let mut writers = Vec::new();
        let mut files = Vec::new();
        for (table, header) in TABLES.iter().zip(HEADERS) {
            let path = dir.join(format!("{table}.csv"));
            let mut writer = BufWriter::with_capacity(1 << 16, File::create(&path)?);
            writeln!(writer, "{header}")?;
            writers.push(writer);
            files.push(path);
        }
        Ok(CsvExporter {
            writers,
            stats: TableStats {
                rows: [0; 5],
                files,
            },
        })
    }

    /// Adds the rows of one trace file.
    pub fn add_path(&mut self, path: &Path) -> Result<(), ExportError> {
        let mut sink = Rows {
            exporter: self,
            file: csv_field(&path.display().to_string()),
            rank: String::new(),
            line: String::new(),
            error: None,
        };
        let result = TraceReader::open(path).read(&mut sink);
        if let Some(source) = sink.error.take() {
            return Err(ExportError::Write {
                input: path.to_owned(),
                source,
            });
        }
        result.map(|_| ()).map_err(ExportError::Read)
    }

    /// Flushes the files; returns the row counts.
    pub fn finish(mut self) -> io::Result<TableStats> {
        for writer in &mut self.writers {
            writer.flush()?;
        }
        Ok(self.stats)
    }
}

struct Rows<'e> {
    exporter: &'e mut CsvExporter,
    file: String,
    rank: String,
    line: String,
    error: Option<io::Error>,
}

impl Rows<'_> {
    fn start(&mut self) {
        self.line.clear();
        self.line.push_str(&self.file);
        self.line.push(',');
        self.line.push_str(&self.rank);
    }

    fn push(&mut self, field: &str) {
        self.line.push(',');
        self.line.push_str(&csv_field(field));
    }

    fn push_opt<T: ToString>(&mut self, value: Option<T>) {
        let text = value.map(|v| v.to_string()).unwrap_or_default();
        self.push(&text);
    }

    fn push_arg(&mut self, event: &Event<'_>, key: &str) {
        let text = event.arg(key).map(|v| arg_text(&v)).unwrap_or_default();
        self.push(&text);
    }

    fn end(&mut self, table: usize) -> io::Result<()> {
        self.line.push('\n');
        self.exporter.writers[table].write_all(self.line.as_bytes())?;
        self.exporter.stats.rows[table] += 1;
        Ok(())
    }

    fn rows(&mut self, index: u64, event: &Event<'_>) -> io::Result<()> {
        // events
        self.start();
        self.push(&index.to_string());
        self.push(event.phase.as_str());
        self.push(event.category.as_ref().map_or("", |c| c.as_str()));
        self.push(event.name());
        self.push_opt(event.pid.as_ref());
        self.push_opt(event.tid.as_ref());
        self.push_opt(event.ts_ns);
        self.push_opt(event.dur_ns);
        self.push_opt(event.flow_id.as_ref());
        let args = event.args.as_ref().map(args_json).unwrap_or_default();
        self.push(&args);
        self.end(0)?;
        let complete = event.phase == Phase::Complete;
        let category = event.normalized_category();
        if complete
            && matches!(
                category,
                Some(Category::Kernel | Category::GpuMemcpy | Category::GpuMemset)
            )
        {
            self.start();
            self.push(category.as_ref().map_or("", |c| c.as_str()));
            self.push(event.name());
            for key in ["device", "stream", "correlation", "External id"] {
                self.push_arg(event, key);
            }
            self.push_opt(event.ts_ns);
            self.push_opt(event.dur_ns);
            self.push_arg(event, "bytes");
            self.end(1)?;
        }
        if complete && event.arg("Collective name").is_some() {
            self.start();
            let on = if category.as_ref().is_some_and(|c| c.is_device_activity()) {
                "device"
            } else {
                "host"
            };
            self.push(on);
            self.push(event.name());
            for key in [
                "Collective name",
                "In msg nelems",
                "Out msg nelems",
                "Group size",
                "dtype",
                "Process Group Name",
                "Process Group Ranks",
                "Seq",
            ] {
                self.push_arg(event, key);
            }
            self.push_opt(event.ts_ns);
            self.push_opt(event.dur_ns);
            self.end(2)?;
        }
        if event.is_memory_event() {
            self.start();
            self.push_opt(event.pid.as_ref());
            self.push_opt(event.tid.as_ref());
            self.push_opt(event.ts_ns);
            for key in [
                "Device Type",
                "Device Id",
                "Addr",
                "Bytes",
                "Total Allocated",
                "Total Reserved",
            ] {
                self.push_arg(event, key);
            }
            self.end(3)?;
        }
        if let Some(step) = event
            .name()
            .strip_prefix("ProfilerStep#")
            .filter(|_| complete)
        {
            self.start();
            self.push(step);
            self.push_opt(event.pid.as_ref());
            self.push_opt(event.tid.as_ref());
            self.push_opt(event.ts_ns);
            self.push_opt(event.dur_ns);
            self.end(4)?;
        }
        Ok(())
    }
}

impl TraceSink for Rows<'_> {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.rank = meta.rank().map(|r| r.to_string()).unwrap_or_default();
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

/// Quotes a CSV field when it holds a comma, quote or line break (RFC 4180).
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("matmul"), "matmul");
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
