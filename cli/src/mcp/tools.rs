//! The tools' typed inputs (their JSON schemas come from these types) and their work:
//! each checks its paths against the [`AllowedDirs`], then calls the function the CLI
//! command calls and writes its result as the command's `--json` does.

use std::io::Write;

use anyhow::Context as _;
use schemars::JsonSchema;
use serde::Deserialize;

use super::confine::AllowedDirs;
use super::sections::{Section, Selected};

/// What a tool gives back: the text the CLI prints, and whether it is JSON.
#[derive(Debug)]
pub struct ToolOutput {
    /// Exactly what the command prints on standard output.
    pub text: String,
    /// Whether `text` is a JSON document (then it is the structured content too).
    pub json: bool,
    /// What the command prints on standard error besides (damage a lenient read
    /// skipped), as a second block.
    pub notes: Option<String>,
}

/// The most bytes a `query` result may take; past it the query stops with an error.
pub const MAX_QUERY_RESULT_BYTES: usize = 8 << 20;

fn json_output<T: serde::Serialize + ?Sized>(value: &T) -> anyhow::Result<ToolOutput> {
    let mut text = Vec::new();
    crate::write_json(&mut text, value).context("writing JSON")?;
    Ok(ToolOutput {
        text: String::from_utf8(text).context("writing JSON")?,
        json: true,
        notes: None,
    })
}

/// `device_spec`: a built-in device name as it is, else a file the rule allows.
fn device_spec(allowed: &AllowedDirs, spec: Option<String>) -> anyhow::Result<Option<String>> {
    match spec {
        Some(name) if perf_model::DeviceSpec::builtin(&name).is_some() => Ok(Some(name)),
        Some(file) => {
            let path = allowed.input("device_spec", &file)?;
            Ok(Some(path.to_string_lossy().into_owned()))
        }
        None => Ok(None),
    }
}

/// Input of `inspect`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InspectArgs {
    /// Trace files (.json, .json.gz), folders of rank traces, or Neuron Explorer
    /// profile folders.
    pub paths: Vec<String>,
}

/// `neuronprof inspect PATH… --json`.
pub fn inspect(allowed: &AllowedDirs, args: InspectArgs) -> anyhow::Result<ToolOutput> {
    let paths = allowed.inputs("paths", &args.paths)?;
    json_output(&crate::inspect::inspect_paths(&paths)?)
}

/// An HTA release whose rules `hta_compat` follows.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
pub enum HtaRelease {
    /// HTA 0.5, the release on PyPI.
    #[serde(rename = "0.5")]
    V05,
    /// HTA 0.6 (GitHub), the default.
    #[serde(rename = "0.6")]
    V06,
}

/// Input of `analyze`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeArgs {
    /// Trace files (.json, .json.gz) or folders, one file per rank.
    pub paths: Vec<String>,
    /// The parts of the report to return (default: all, exactly `analyze --json`). The
    /// context (mode, device_type, ranks, step, errors, notes) always comes with them.
    #[serde(default)]
    pub sections: Option<Vec<Section>>,
    /// The rank for per-rank analyses (default: the first rank).
    #[serde(default)]
    pub rank: Option<i64>,
    /// Analyse only ProfilerStep#N.
    #[serde(default)]
    pub step: Option<i64>,
    /// HTA's integer-microsecond rounding and name rules: numbers equal to HTA's.
    #[serde(default)]
    pub hta_compat: bool,
    /// With hta_compat: the HTA release to equal (default 0.6).
    #[serde(default)]
    pub hta_version: Option<HtaRelease>,
    /// With hta_compat: numpy's argsort kernel under that HTA: avx512 (default), avx2,
    /// scalar.
    #[serde(default)]
    pub numpy_sort: Option<String>,
    /// Analyse what can be read of damaged traces instead of stopping at the damage.
    #[serde(default)]
    pub lenient: bool,
    /// The dtype whose peak TFLOPS MFU is measured against: bf16 (default), fp8, fp32.
    #[serde(default)]
    pub peak_dtype: Option<String>,
    /// Split the operator table by input shapes.
    #[serde(default)]
    pub by_shape: bool,
    /// Which profiling window of each rank, from 1 in time order (default: the latest).
    #[serde(default)]
    pub window: Option<usize>,
    /// Ranks per node for the collective report (default: from the traces).
    #[serde(default)]
    pub ranks_per_node: Option<u32>,
    /// Nominal bus bandwidth, GB/s, every collective group is judged against.
    #[serde(default)]
    pub peak_bus_gbps: Option<f64>,
    /// The roofline's device: a built-in name (h100-sxm, mi300x, trn2, trn3, …) or a
    /// JSON file of peaks (default: the traces' deviceProperties).
    #[serde(default)]
    pub device_spec: Option<String>,
}

/// `neuronprof analyze PATH… --json`, with only `sections` when given.
pub fn analyze(allowed: &AllowedDirs, args: AnalyzeArgs) -> anyhow::Result<ToolOutput> {
    let hta_version = match args.hta_version {
        Some(HtaRelease::V05) => analysis::HtaVersion::V0_5,
        Some(HtaRelease::V06) => analysis::HtaVersion::V0_6,
        None => analysis::HtaVersion::default(),
    };
    let numpy_sort = match &args.numpy_sort {
        Some(text) => text
            .parse()
            .map_err(|e| anyhow::anyhow!("numpy_sort `{text}`: {e}"))?,
        None => Default::default(),
    };
    if let Some(dtype) = &args.peak_dtype {
        if !["bf16", "fp8", "fp32"].contains(&dtype.as_str()) {
            anyhow::bail!("peak_dtype `{dtype}`: one of bf16, fp8, fp32");
        }
    }
    if args.ranks_per_node == Some(0) {
        anyhow::bail!("ranks_per_node: at least 1");
    }
    if let Some(gbps) = args.peak_bus_gbps {
        if !(gbps.is_finite() && gbps > 0.0) {
            anyhow::bail!("peak_bus_gbps {gbps}: a bandwidth must be a positive number");
        }
    }
    let request = crate::analyze::AnalyzeRequest {
        paths: allowed.inputs("paths", &args.paths)?,
        rank: args.rank,
        step: args.step,
        hta_compat: args.hta_compat,
        hta_version,
        numpy_sort,
        lenient: args.lenient,
        peak_dtype: args.peak_dtype,
        progress: false,
        operators_by_shape: args.by_shape,
        window: args.window.map_or(
            analysis::inputs::Window::Latest,
            analysis::inputs::Window::Nth,
        ),
        ranks_per_node: args.ranks_per_node,
        peak_bus_gbps: args.peak_bus_gbps,
        device_spec: device_spec(allowed, args.device_spec)?,
    };
    let report = crate::analyze::run_analyze(&request)?;
    match &args.sections {
        Some(sections) if !sections.is_empty() => json_output(&Selected::new(&report, sections)),
        _ => json_output(&report),
    }
}

/// Input of `critical_path`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CriticalPathArgs {
    /// Trace files (.json, .json.gz) or folders, one file per rank.
    pub paths: Vec<String>,
    /// Only this rank (with hta_compat: default the first).
    #[serde(default)]
    pub rank: Option<i64>,
    /// Events whose name contains this bound the window (default: ProfilerStep#).
    #[serde(default)]
    pub annotation: Option<String>,
    /// Which instance of the annotation, from 0 (default 0).
    #[serde(default)]
    pub instance: usize,
    /// HTA 0.5's rules, integer-microsecond rounding and name-based classes (one rank).
    #[serde(default)]
    pub hta_compat: bool,
    /// Write HTA's overlay into this folder: each trace with the path's events marked
    /// args.critical and its edges as flows. Replaces files of the same names.
    #[serde(default)]
    pub overlay: Option<String>,
}

/// `neuronprof critical-path PATH… --json`.
pub fn critical_path(allowed: &AllowedDirs, args: CriticalPathArgs) -> anyhow::Result<ToolOutput> {
    let overlay = args
        .overlay
        .as_deref()
        .map(|dir| allowed.output("overlay", dir))
        .transpose()?;
    let request = crate::critical_path::CriticalPathRequest {
        paths: allowed.inputs("paths", &args.paths)?,
        rank: args.rank,
        annotation: args.annotation,
        instance: args.instance,
        hta_compat: args.hta_compat,
        hta_version: analysis::HtaVersion::V0_5,
        ..Default::default()
    };
    let (path, _files) =
        crate::critical_path::run_critical_path_overlay(&request, overlay.as_deref())?;
    json_output(&path)
}

/// Input of `what_if`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WhatIfArgs {
    /// Trace files (.json, .json.gz) or folders, one file per rank.
    pub paths: Vec<String>,
    /// Scaling rules, several multiply: 'kernel:REGEX=F', 'op:REGEX=F', 'rank:R=F' (R's
    /// device work), 'host=F', 'collective=F' (transfer time). F=0.5 halves the time.
    #[serde(default)]
    pub scales: Vec<String>,
    /// Re-cost emulator traces' device rows for a built-in device profile: trn2,
    /// trn2-lnc1, trn3, trn3-lnc1.
    #[serde(default)]
    pub device: Option<String>,
    /// Re-cost the device rows at this LNC.
    #[serde(default)]
    pub lnc: Option<u32>,
    /// Only this rank.
    #[serde(default)]
    pub rank: Option<i64>,
    /// Events whose name contains this bound the window (default: ProfilerStep#).
    #[serde(default)]
    pub annotation: Option<String>,
    /// Which instance of the annotation, from 0 (default 0).
    #[serde(default)]
    pub instance: usize,
    /// Write the predicted rank traces (same file names) into this folder.
    #[serde(default)]
    pub out: Option<String>,
}

/// `neuronprof what-if PATH… --scale … --json`.
pub fn what_if(allowed: &AllowedDirs, args: WhatIfArgs) -> anyhow::Result<ToolOutput> {
    let out = args
        .out
        .as_deref()
        .map(|dir| allowed.output("out", dir))
        .transpose()?;
    let request = crate::critical_path::CriticalPathRequest {
        paths: allowed.inputs("paths", &args.paths)?,
        rank: args.rank,
        annotation: args.annotation,
        instance: args.instance,
        device: args.device,
        lnc: args.lnc,
        ..Default::default()
    };
    let (answer, _files) =
        crate::critical_path::run_what_if_writing(&request, &args.scales, out.as_deref())?;
    json_output(&answer)
}

/// Which rows `diff` compares.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiffRows {
    /// Host operators and calls.
    Host,
    /// Device kernels and copies.
    Device,
    /// Both (the default).
    #[default]
    All,
}

/// Input of `diff`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffArgs {
    /// The control trace or folder.
    pub control: String,
    /// The test trace or folder.
    pub test: String,
    /// The rank to compare (default: the first).
    #[serde(default)]
    pub rank: Option<i64>,
    /// Which rows: host, device or all (default).
    #[serde(default)]
    pub rows: DiffRows,
    /// HTA's rounding (durations in integer microseconds).
    #[serde(default)]
    pub hta_compat: bool,
    /// The device of both roofline tables, as analyze's device_spec.
    #[serde(default)]
    pub device_spec: Option<String>,
}

/// `neuronprof diff A B --json`.
pub fn diff(allowed: &AllowedDirs, args: DiffArgs) -> anyhow::Result<ToolOutput> {
    use analysis::analyses::trace_diff::DeviceFilter;
    let report = crate::analyze::run_diff(&crate::analyze::DiffRequest {
        control: allowed.input("control", &args.control)?,
        test: allowed.input("test", &args.test)?,
        rank: args.rank,
        rows: match args.rows {
            DiffRows::Host => DeviceFilter::Cpu,
            DiffRows::Device => DeviceFilter::Gpu,
            DiffRows::All => DeviceFilter::All,
        },
        hta_compat: args.hta_compat,
        device_spec: device_spec(allowed, args.device_spec)?,
    })?;
    json_output(&report)
}

/// How `query` writes its result.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueryFormat {
    /// A JSON array of row objects (the default).
    #[default]
    Json,
    /// CSV with a header line.
    Csv,
    /// An aligned text table.
    Table,
}

/// Input of `query`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArgs {
    /// One read-only SQL statement (DataFusion's dialect) over the tables events,
    /// kernels, collectives, memory, steps, ranks, operators, flows (and analysis_* in
    /// a dataset); schema in the resource neuronprof://sql/schema.
    pub sql: String,
    /// Trace files, folders of rank traces, or one Parquet dataset folder written by
    /// export.
    pub paths: Vec<String>,
    /// json (default), csv or table.
    #[serde(default)]
    pub format: QueryFormat,
    /// Read past damaged events and truncations; the damage is listed in a second
    /// text block.
    #[serde(default)]
    pub lenient: bool,
}

/// A buffer that refuses to grow past its limit.
struct Capped(Vec<u8>);

impl Write for Capped {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + bytes.len() > MAX_QUERY_RESULT_BYTES {
            return Err(std::io::Error::other(format!(
                "the result passed {} MiB: aggregate it or add a LIMIT",
                MAX_QUERY_RESULT_BYTES >> 20
            )));
        }
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `neuronprof query "SQL" PATH… --format json`: read-only (statements that write or
/// read other files are refused).
pub fn query(allowed: &AllowedDirs, args: QueryArgs) -> anyhow::Result<ToolOutput> {
    let format = match args.format {
        QueryFormat::Json => query::OutputFormat::Json,
        QueryFormat::Csv => query::OutputFormat::Csv,
        QueryFormat::Table => query::OutputFormat::Table,
    };
    let request = crate::query::QueryRequest {
        sql: args.sql,
        paths: allowed.inputs("paths", &args.paths)?,
        format,
        out: None,
        lenient: args.lenient,
        allow_write: false,
    };
    let mut out = Capped(Vec::new());
    let outcome = crate::query::query_to_writer(&request, &mut out).map_err(|err| {
        match err.downcast_ref::<query::QueryError>() {
            // The CLI's message offers --allow-write, which this tool does not have.
            Some(query::QueryError::ReadOnly { statement }) => anyhow::anyhow!(
                "the query tool is read-only: statements that write files, read files \
                 other than the given ones or change the session (COPY … TO, CREATE \
                 EXTERNAL TABLE, INSERT, SET …) are refused ({statement})"
            ),
            _ => err,
        }
    })?;
    let mut damage = Vec::new();
    crate::query::render_damage(&outcome, &mut damage).context("listing damage")?;
    Ok(ToolOutput {
        text: String::from_utf8(out.0).context("the result is not UTF-8")?,
        json: matches!(args.format, QueryFormat::Json),
        notes: (!damage.is_empty()).then(|| String::from_utf8_lossy(&damage).into_owned()),
    })
}

/// An export format.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExportFormatArg {
    /// Perfetto TrackEvent protobuf, one .pftrace with every rank.
    Perfetto,
    /// A .tar of one .pftrace per rank and a perfetto_manifest.json (a machine per host,
    /// clocks related by the collectives), which Perfetto v58+ opens as one timeline.
    PerfettoArchive,
    /// CSV tables in a folder.
    Csv,
    /// A Hive-partitioned Parquet dataset (query reads it).
    Parquet,
    /// Neuron Explorer profile folders.
    NeuronExplorer,
}

/// Input of `export`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportArgs {
    /// Trace files (.json, .json.gz) or folders, one file per rank.
    pub paths: Vec<String>,
    /// perfetto, perfetto-archive, csv, parquet or neuron-explorer.
    pub format: ExportFormatArg,
    /// The output file (perfetto, perfetto-archive) or folder (the others), inside the
    /// allowed folders;
    /// an existing file is replaced.
    pub out: String,
    /// Parquet: read past damage; damaged files are converted up to it and listed.
    #[serde(default)]
    pub lenient: bool,
    /// The device of the analysis_roofline table (csv, parquet), as analyze's
    /// device_spec.
    #[serde(default)]
    pub device_spec: Option<String>,
}

/// `neuronprof export … -o OUT --json`.
pub fn export(allowed: &AllowedDirs, args: ExportArgs) -> anyhow::Result<ToolOutput> {
    use crate::export::ExportFormat;
    let request = crate::export::ExportRequest {
        paths: allowed.inputs("paths", &args.paths)?,
        format: match args.format {
            ExportFormatArg::Perfetto => ExportFormat::Perfetto,
            ExportFormatArg::PerfettoArchive => ExportFormat::PerfettoArchive,
            ExportFormatArg::Csv => ExportFormat::Csv,
            ExportFormatArg::Parquet => ExportFormat::Parquet,
            ExportFormatArg::NeuronExplorer => ExportFormat::NeuronExplorer,
        },
        out: allowed.output("out", &args.out)?,
        lenient: args.lenient,
        progress: false,
        device_spec: device_spec(allowed, args.device_spec)?,
    };
    let outcome = crate::export::run_export(&request)?;
    json_output(&crate::export::summary(&outcome))
}
