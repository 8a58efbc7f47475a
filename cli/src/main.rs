//! The `neuronprof` command. Thin: parsing arguments and printing; the work is in
//! the `neuronprof` library and the crates below it.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use analysis::analyses::trace_diff::DeviceFilter;
use anyhow::Context as _;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "neuronprof",
    version,
    about = "Profiler and trace toolkit for PyTorch on AWS Trainium"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Summarise Kineto traces: ranks, devices, time span, event counts, flows, damage.
    ///
    /// Exits 0 when every file read cleanly, 1 when any file is damaged (the report
    /// still shows everything read up to the damage), 2 on a usage error.
    Inspect {
        /// Trace files (.json, .json.gz) or directories of rank traces.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Analyse rank traces: HTA's analyses (temporal, kernel, idle time, overlap, queue
    /// length, memory bandwidth, launches, stragglers) and more (memory timeline,
    /// operators, steps, collectives across ranks), insights first.
    Analyze {
        /// Trace files (.json, .json.gz) or directories, one file per rank.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print the whole result as JSON (schema: the `analysis` crate docs).
        #[arg(long)]
        json: bool,
        /// The rank for per-rank analyses (default: the first rank).
        #[arg(long)]
        rank: Option<i64>,
        /// Analyse only ProfilerStep#N.
        #[arg(long)]
        step: Option<i64>,
        /// HTA's integer-microsecond rounding and name rules: numbers equal to HTA's
        /// (0.6 unless --hta-version says otherwise).
        #[arg(long)]
        hta_compat: bool,
        /// With --hta-compat: the HTA release to equal, 0.6 (default; GitHub) or 0.5 (the
        /// release on PyPI); their kernel-name rules differ.
        #[arg(long, requires = "hta_compat", value_name = "VERSION")]
        hta_version: Option<analysis::HtaVersion>,
        /// With --hta-compat: the argsort kernel of the numpy under that HTA, avx512
        /// (default), avx2 or scalar; it decides the order of equal timestamps in HTA's
        /// sorts (queue length, memory bandwidth, idle gaps).
        #[arg(long, requires = "hta_compat", value_name = "KERNEL")]
        numpy_sort: Option<analysis::stats::NumpySort>,
        /// Analyse what can be read of damaged traces instead of stopping at the damage.
        #[arg(long)]
        lenient: bool,
        /// The dtype whose peak TFLOPS MFU is measured against: bf16 (default), fp8, fp32.
        #[arg(long, value_parser = ["bf16", "fp8", "fp32"])]
        peak_dtype: Option<String>,
        /// Split the operator table by input shapes (`Input Dims`), as PyTorch's
        /// key_averages(group_by_input_shape=True).
        #[arg(long)]
        by_shape: bool,
        /// Which profiling window of each rank to analyze, counting from 1 in time order,
        /// when a rank has several files (a profiler schedule with repeat writes one per
        /// cycle) [default: the latest].
        #[arg(long, value_name = "N")]
        window: Option<usize>,
        /// Ranks per node for the collective report: rank r runs on node r / N [default:
        /// the nodes the traces name: `host_name`, or the emulator's instance].
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        ranks_per_node: Option<u32>,
        /// Nominal bus bandwidth, GB/s (10^9 B/s), every collective group is judged
        /// against [default: each group's link, as its ranks' traces describe it].
        #[arg(long, value_name = "GBPS", value_parser = positive_gbps)]
        peak_bus_gbps: Option<f64>,
        /// The device of the roofline table: a built-in name (h100-sxm, h100-pcie, h200,
        /// b200, a100-sxm-80gb, a100-sxm-40gb, a100-pcie-80gb, a100-pcie-40gb, mi300x,
        /// mi325x, mi355x, trn2, trn2-lnc1, trn3, trn3-lnc1) or a JSON file {"name",
        /// "memory_tb_per_s", "peak_tflops": {"matrix_bf16": …}} [default: from the
        /// traces' deviceProperties].
        #[arg(long, value_name = "NAME|FILE")]
        device_spec: Option<String>,
    },
    /// Run a built-in workload (mlp, gpt, gpt-infer) on emulated Trainium ranks under the
    /// profiler: one Kineto trace per rank, then a summary and the analysis' insights.
    Run {
        /// mlp, gpt or gpt-infer.
        workload: String,
        /// Ranks, one logical NeuronCore each (threads of this process).
        #[arg(long, default_value_t = 1)]
        ranks: usize,
        /// Tensor-parallel group size (gpt).
        #[arg(long, default_value_t = 1)]
        tp: usize,
        /// trn2 or trn3.
        #[arg(long, default_value = "trn2")]
        device: String,
        /// Physical cores per logical NeuronCore: 1 or 2.
        #[arg(long, default_value_t = 2)]
        lnc: u32,
        /// A device profile file instead of --device/--lnc: one JSON object whose
        /// "base" names a built-in profile (trn2, trn2-lnc1, trn3, trn3-lnc1) and whose
        /// other keys replace its figures, e.g. {"base": "trn2", "tensor_clock_ghz":
        /// 4.8} for a TensorE twice as fast (trn2's is 2.4).
        #[arg(long, value_name = "FILE")]
        device_file: Option<PathBuf>,
        /// The GPT's size (gpt, gpt-infer): tiny (the default) or demo (the demo's: 2
        /// blocks of width 512, device-bound).
        #[arg(long, default_value = "tiny", value_parser = ["tiny", "demo"])]
        shape: String,
        /// Per-op host costs instead of eager PyTorch's measured ones: a JSON object of
        /// the fields to replace, e.g. {"launch_ns": 2500, "forward_op_ns": 3000}
        /// (fields: forward_op_ns, backward_op_ns, backward_node_ns, plain_op_ns,
        /// view_op_ns, collective_ns, launch_ns; docs/HARDWARE.md, Host cost).
        #[arg(long, value_name = "FILE")]
        host_cost: Option<PathBuf>,
        /// Steps to run (default: the workload's own).
        #[arg(long)]
        steps: Option<usize>,
        /// on: compute real values; off: timing only (large shapes run fast).
        #[arg(long, default_value = "on", value_parser = ["on", "off"])]
        numerics: String,
        /// The gpt workload's optimizer: adamw or sgd (plain SGD, no optimizer state).
        /// Default: AdamW with numerics on, SGD timing only.
        #[arg(long, value_parser = ["adamw", "sgd"])]
        optimizer: Option<String>,
        /// Directory for the traces (must hold no other traces) [default:
        /// neuronprof-traces/WORKLOAD-UNIXMS]
        #[arg(long)]
        out: Option<PathBuf>,
        /// A slow rank: RANK:FACTOR (its device runs FACTOR times slower).
        #[arg(long)]
        straggler: Option<String>,
        /// Device detail recorded: kernels, or kernels plus engine instructions and DMA.
        #[arg(long, default_value = "instructions", value_parser = ["kernels", "instructions"])]
        detail: String,
        /// Profiler options, comma-separated key=value: skip_first, wait, warmup, active,
        /// repeat (torch.profiler.schedule), memory, shapes, flops (on/off). Example:
        /// wait=1,warmup=1,active=2,memory=off. Default: skip 1 step, warm up 1, record
        /// the rest but at most 10 steps (a window stays in memory until it ends), with
        /// memory, shapes and flops.
        #[arg(long)]
        profile: Option<String>,
        /// Also write all ranks as one Perfetto trace (OUT/trace.pftrace).
        #[arg(long)]
        perfetto: bool,
        /// What the run writes: kineto (one .pt.trace.json per rank) or neuron-explorer
        /// (one Neuron Explorer profile per rank, OUT/profiles/global/NAME@latest/, the
        /// Parquet tables a Trainium capture is ingested as).
        #[arg(long, default_value = "kineto", value_parser = ["kineto", "neuron-explorer"])]
        output: String,
    },
    /// The tour: gpt on 4 ranks with one slow rank, profiled; prints the summary and
    /// where the traces are.
    Demo {
        /// Directory for the traces (must hold no other traces) [default:
        /// neuronprof-traces/demo-UNIXMS]
        #[arg(long)]
        out: Option<PathBuf>,
        /// on: compute real values (the default); off: timing only, faster, the same
        /// traces but no loss.
        #[arg(long, default_value = "on", value_parser = ["on", "off"])]
        numerics: String,
    },
    /// Convert Kineto traces into one Perfetto protobuf trace (.pftrace: named tracks
    /// per rank, device queue, engine and DMA queue; counters; flows; overlapping slices
    /// on extra tracks, printed, instead of dropped), a Perfetto archive (perfetto-archive:
    /// a tar of one .pftrace per rank and a perfetto_manifest.json naming each file's
    /// machine, its host, and relating hosts' clocks by their collectives; Perfetto v58
    /// opens it as one timeline) or tables (events, kernels,
    /// collectives, memory, steps, ranks, operators, flows, and the analysis' results:
    /// temporal breakdown, kernels, steps, collectives, utilization, insights, roofline) as CSV
    /// files in a directory or a Hive-partitioned Parquet dataset (TABLE/rank=R/
    /// part-K.parquet; ranks converted in parallel; re-running adds the ranks it lacks),
    /// or Neuron Explorer profile folders (OUT/profiles/global/NAME@latest/, one per
    /// trace, with the documented Parquet tables).
    Export {
        /// Trace files (.json, .json.gz) or directories, one file per rank.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(
            long,
            default_value = "perfetto",
            value_parser = ["perfetto", "perfetto-archive", "csv", "parquet", "neuron-explorer"]
        )]
        format: String,
        /// The output file (perfetto, perfetto-archive: a .tar) or directory (csv,
        /// parquet, neuron-explorer: a data path).
        #[arg(short, long)]
        out: PathBuf,
        /// Parquet: read past damaged events and truncations; damaged files are
        /// converted up to the damage and listed.
        #[arg(long)]
        lenient: bool,
        /// The device of the analysis_roofline table (csv, parquet), as `analyze
        /// --device-spec` [default: from the traces' deviceProperties].
        #[arg(long, value_name = "NAME|FILE")]
        device_spec: Option<String>,
        /// Print what was written as JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// SQL over traces (any Kineto trace) or over a dataset of `export --format
    /// parquet`: tables events, kernels, collectives, memory, steps, ranks, operators,
    /// flows (and analysis_* in a dataset); schema and ready queries in docs/SQL.md.
    Query {
        /// The SQL (one statement).
        sql: String,
        /// Trace files, directories of rank traces, or one dataset directory.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Output format (parquet needs -o).
        #[arg(long, default_value = "table", value_parser = ["table", "csv", "json", "parquet"])]
        format: String,
        /// Write the result to this file instead of standard output (replaced only
        /// once the whole result is written; never one of the inputs).
        #[arg(short, long)]
        out: Option<PathBuf>,
        /// Read past damaged events and truncations; damaged files are listed on
        /// standard error.
        #[arg(long)]
        lenient: bool,
        /// Run statements that write files, read files other than the given ones or
        /// change the session (COPY … TO, CREATE EXTERNAL TABLE, INSERT, SET …):
        /// refused by default.
        #[arg(long)]
        allow_write: bool,
    },
    /// Live metrics of every process running the emulated device (each rank
    /// separately), as one neuron-monitor JSON document per period on standard output,
    /// or as Prometheus metrics with --prometheus.
    Monitor {
        /// The window of each document: 1s, 500ms, 0.5 … (at most 30s).
        #[arg(long, default_value = "1s")]
        period: String,
        /// Serve Prometheus metrics at http://ADDR/metrics instead of printing
        /// documents: a port (9464: 127.0.0.1:9464), IP:PORT or NAME:PORT. The metrics
        /// name the host, pids, workloads and operators: a name must resolve to
        /// loopback unless --listen-public; a non-loopback IP is served with a warning
        /// saying who can read it.
        #[arg(long, value_name = "ADDR")]
        prometheus: Option<String>,
        /// Let --prometheus serve off the loopback: a NAME that resolves to a network
        /// address, and a bare PORT on every interface (0.0.0.0).
        #[arg(long, requires = "prometheus")]
        listen_public: bool,
        /// Also push each period's metrics under Neuron Observer's names to an
        /// OpenTelemetry collector, OTLP over HTTP/protobuf to URL/v1/metrics (plain
        /// http). Without it, OTEL_EXPORTER_OTLP_ENDPOINT (a base URL) or
        /// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (the full URL) turn the push on.
        #[arg(long, value_name = "URL")]
        otlp_endpoint: Option<String>,
        /// Stop after this many documents (default: until Ctrl-C).
        #[arg(long)]
        count: Option<u64>,
        /// The endpoint directory [default: $XDG_RUNTIME_DIR/neuronprof, else
        /// /tmp/neuronprof-UID].
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// The critical path of one step: HTA's lightweight critical path (--hta-compat:
    /// numbers equal to HTA 0.5's, one rank) or across every rank (collectives join
    /// ranks: the path goes through the rank that arrived last); time by bound_by.
    CriticalPath {
        /// Trace files (.json, .json.gz) or directories, one file per rank.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Only this rank (with --hta-compat: default the first).
        #[arg(long)]
        rank: Option<i64>,
        /// Events whose name contains this bound the window [default: ProfilerStep#].
        #[arg(long)]
        annotation: Option<String>,
        /// Which instance of the annotation, from 0.
        #[arg(long, default_value_t = 0)]
        instance: usize,
        /// HTA's rules, integer-microsecond rounding and name-based classes.
        #[arg(long)]
        hta_compat: bool,
        /// Write HTA's overlay into this directory: each trace with the path's events
        /// marked args.critical and its edges as flows (opens in the viewer, Perfetto).
        #[arg(long, value_name = "DIR")]
        overlay: Option<PathBuf>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-time the dependency graph of one step with scaled durations and predict the
    /// step: --scale 'kernel:REGEX=F', 'op:REGEX=F', 'rank:R=F' (R's device work),
    /// 'host=F', 'collective=F' (transfer time); several multiply.
    WhatIf {
        /// Trace files (.json, .json.gz) or directories, one file per rank.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// A scaling rule; repeat for several.
        #[arg(long = "scale", required_unless_present_any = ["device", "lnc"])]
        scales: Vec<String>,
        /// Predict the step on another device: every device row re-timed from the per-op
        /// model for a built-in device (h100-sxm, mi300x, … as analyze --device-spec) or a
        /// device file, with the time by op group; on emulator traces (recorded with
        /// --detail instructions) trn2, trn2-lnc1, trn3, trn3-lnc1 re-cost with the
        /// emulator's profiles instead.
        #[arg(long)]
        device: Option<String>,
        /// Re-cost the device rows at this LNC (physical cores per logical core).
        #[arg(long)]
        lnc: Option<u32>,
        /// Only this rank.
        #[arg(long)]
        rank: Option<i64>,
        /// Events whose name contains this bound the window [default: ProfilerStep#].
        #[arg(long)]
        annotation: Option<String>,
        /// Which instance of the annotation, from 0.
        #[arg(long, default_value_t = 0)]
        instance: usize,
        /// Write the predicted rank traces (same file names) into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The timing model's microbenchmarks (matmul, each engine, DMA, host copies,
    /// all-reduce on 3 topologies, two collectives at once) beside the published figures
    /// they come from; outside ±10 % a row says why.
    Calibrate {
        /// trn2 or trn3.
        #[arg(long, default_value = "trn2")]
        device: String,
        /// Physical cores per logical NeuronCore: 1 or 2.
        #[arg(long, default_value_t = 2)]
        lnc: u32,
        /// A device profile file instead of --device/--lnc (see `run --device-file`).
        #[arg(long, value_name = "FILE")]
        device_file: Option<PathBuf>,
        /// Print the rows as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Serve the commands as the tools of a Model Context Protocol server on standard
    /// input and output, for agents: inspect, analyze (sections selectable),
    /// critical_path, what_if, diff, query (read-only SQL; the schema as a resource) and
    /// export, each answering with the command's --json; a prompt, `investigate`, walks a
    /// trace from the insights down.
    Mcp {
        /// A folder the tools may read and write in (and below); repeat for several.
        /// Paths outside them, with `..`, or through a symlink leading out are refused.
        #[arg(long = "allow", value_name = "DIR", required = true)]
        allow: Vec<PathBuf>,
    },
    /// Compare two traces (or two directories of rank traces) by operator and kernel name,
    /// and each operator with its arguments by efficiency (percent of its roofline).
    Diff {
        /// The control trace or directory.
        control: PathBuf,
        /// The test trace or directory.
        test: PathBuf,
        /// The rank to compare (default: the first).
        #[arg(long)]
        rank: Option<i64>,
        /// Which rows: host operators and calls, device kernels and copies, or both
        /// (HTA's `device_type` CPU / GPU / ALL).
        #[arg(long, default_value = "all", value_parser = ["host", "device", "all"])]
        rows: String,
        /// HTA's rounding (durations in integer microseconds).
        #[arg(long)]
        hta_compat: bool,
        /// Rows to print, largest change in duration first (and operator rows of the
        /// roofline, largest change of kernel time first).
        #[arg(long, default_value_t = 20)]
        top: usize,
        /// The device of both roofline tables, as `analyze --device-spec` [default: each
        /// trace's deviceProperties].
        #[arg(long, value_name = "NAME|FILE")]
        device_spec: Option<String>,
        /// Print every row as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("neuronprof: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::CriticalPath {
            paths,
            rank,
            annotation,
            instance,
            hta_compat,
            overlay,
            json,
        } => {
            let request = neuronprof::critical_path::CriticalPathRequest {
                paths,
                rank,
                annotation,
                instance,
                hta_compat,
                hta_version: analysis::HtaVersion::V0_5,
                ..Default::default()
            };
            let (path, files) =
                neuronprof::critical_path::run_critical_path_overlay(&request, overlay.as_deref())?;
            print_report(json, &path, |path, out| {
                out.write_all(neuronprof::critical_path::render_critical_path(path).as_bytes())?;
                for file in &files {
                    writeln!(out, "overlay: {}", file.display())?;
                }
                Ok(())
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::WhatIf {
            paths,
            scales,
            rank,
            annotation,
            instance,
            out: out_dir,
            json,
            device,
            lnc,
        } => {
            let request = neuronprof::critical_path::CriticalPathRequest {
                paths,
                rank,
                annotation,
                instance,
                device,
                lnc,
                ..Default::default()
            };
            let (answer, files) = neuronprof::critical_path::run_what_if_writing(
                &request,
                &scales,
                out_dir.as_deref(),
            )?;
            print_report(json, &answer, |answer, out| {
                out.write_all(neuronprof::critical_path::render_what_if(answer).as_bytes())?;
                for file in &files {
                    writeln!(out, "predicted trace: {}", file.display())?;
                }
                Ok(())
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Inspect { paths, json } => {
            let report = neuronprof::inspect::inspect_paths(&paths)?;
            print_report(json, &report, |report, out| {
                neuronprof::inspect::render_text(report, out)
            })?;
            Ok(if report.damaged_files() > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Analyze {
            paths,
            json,
            rank,
            step,
            hta_compat,
            hta_version,
            numpy_sort,
            lenient,
            peak_dtype,
            by_shape,
            window,
            ranks_per_node,
            peak_bus_gbps,
            device_spec,
        } => {
            let request = neuronprof::analyze::AnalyzeRequest {
                ranks_per_node,
                peak_bus_gbps,
                paths,
                rank,
                step,
                hta_compat,
                hta_version: hta_version.unwrap_or_default(),
                numpy_sort: numpy_sort.unwrap_or_default(),
                lenient,
                peak_dtype,
                progress: true,
                operators_by_shape: by_shape,
                window: window.map_or(
                    analysis::inputs::Window::Latest,
                    analysis::inputs::Window::Nth,
                ),
                device_spec,
            };
            let report = neuronprof::analyze::run_analyze(&request)?;
            print_report(json, &report, |report, out| {
                out.write_all(analysis::render::render_report(report).as_bytes())
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            workload,
            ranks,
            tp,
            device,
            lnc,
            device_file,
            shape,
            host_cost,
            steps,
            numerics,
            optimizer,
            out,
            straggler,
            detail,
            profile,
            perfetto,
            output,
        } => {
            let request = neuronprof::run::RunRequest {
                ranks,
                tp,
                device,
                lnc,
                device_file,
                host_cost_file: host_cost,
                steps,
                numerics: numerics == "on",
                out_dir: out.unwrap_or_else(|| neuronprof::run::default_out_dir(&workload)),
                straggler: straggler
                    .as_deref()
                    .map(neuronprof::run::parse_straggler)
                    .transpose()?,
                instructions: detail == "instructions",
                profile: profile
                    .as_deref()
                    .map(neuronprof::run::ProfileSpec::parse)
                    .transpose()?
                    .unwrap_or_default(),
                perfetto,
                progress: true,
                output: neuronprof::run::RunOutput::parse(&output)?,
                gpt: (shape == "demo").then_some(neuron_backend::workloads::GptShape::DEMO),
                optimizer: optimizer.as_deref().map(|name| match name {
                    "sgd" => neuron_backend::workloads::Optimizer::Sgd,
                    _ => neuron_backend::workloads::Optimizer::AdamW,
                }),
                ..neuronprof::run::RunRequest::new(&workload)
            };
            run_and_print(&request)
        }
        Command::Demo { out, numerics } => {
            let request = neuronprof::run::RunRequest {
                progress: true,
                numerics: numerics == "on",
                ..neuronprof::run::RunRequest::demo(
                    out.unwrap_or_else(|| neuronprof::run::default_out_dir("demo")),
                )
            };
            let code = run_and_print(&request)?;
            // The critical path of a recorded step, and what the slow rank costs.
            if let Some((rank, factor)) = request.straggler {
                let text =
                    neuronprof::critical_path::demo_epilogue(&request.out_dir, rank, factor)?;
                std::io::stdout()
                    .lock()
                    .write_all(text.as_bytes())
                    .context("writing summary")?;
            }
            Ok(code)
        }
        Command::Calibrate {
            device,
            lnc,
            device_file,
            json,
        } => {
            let profile = match &device_file {
                Some(path) => neuron_backend::DeviceProfile::from_file(path)
                    .with_context(|| format!("--device-file {}", path.display()))?,
                None => neuronprof::run::device_profile(&device, lnc)?,
            };
            let rows = neuron_backend::calibrate::calibrate(&profile)
                .context("running the microbenchmarks")?;
            let mut out = std::io::stdout().lock();
            if json {
                neuronprof::write_json(&mut out, &rows).context("writing JSON")?;
            } else {
                out.write_all(neuronprof::calibrate::render(&profile.name, &rows).as_bytes())
                    .context("writing the table")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Export {
            paths,
            format,
            out,
            lenient,
            device_spec,
            json,
        } => {
            let request = neuronprof::export::ExportRequest {
                paths,
                format: neuronprof::export::ExportFormat::parse(&format)?,
                out,
                lenient,
                progress: true,
                device_spec,
            };
            let outcome = neuronprof::export::run_export(&request)?;
            let mut stdout = std::io::stdout().lock();
            if json {
                let summary = neuronprof::export::summary(&outcome);
                neuronprof::write_json(&mut stdout, &summary).context("writing JSON")?;
            } else {
                neuronprof::export::render_outcome(&outcome, &mut stdout)
                    .context("writing summary")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Query {
            sql,
            paths,
            format,
            out,
            lenient,
            allow_write,
        } => {
            let request = neuronprof::query::QueryRequest {
                sql,
                paths,
                format: query::OutputFormat::parse(&format).context("--format")?,
                out,
                lenient,
                allow_write,
            };
            let outcome = neuronprof::query::run_query(&request)?;
            neuronprof::query::render_damage(&outcome, &mut std::io::stderr().lock())
                .context("writing to standard error")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Monitor {
            period,
            prometheus,
            listen_public,
            otlp_endpoint,
            count,
            dir,
        } => {
            neuronprof::monitor::run_monitor(&neuronprof::monitor::MonitorOptions {
                period: neuronprof::monitor::parse_period(&period)?,
                dir: dir.unwrap_or_else(analysis::live_client::endpoint_dir),
                count,
                prometheus,
                otlp: metrics_server::push::endpoint_from(otlp_endpoint.as_deref(), |name| {
                    std::env::var(name).ok()
                }),
                exposure: if listen_public {
                    metrics_server::Exposure::Public
                } else {
                    metrics_server::Exposure::Loopback
                },
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp { allow } => {
            neuronprof::mcp::serve_stdio(&allow)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Diff {
            control,
            test,
            rank,
            rows,
            hta_compat,
            top,
            device_spec,
            json,
        } => {
            let rows = match rows.as_str() {
                "host" => DeviceFilter::Cpu,
                "device" => DeviceFilter::Gpu,
                _ => DeviceFilter::All,
            };
            let diff = neuronprof::analyze::run_diff(&neuronprof::analyze::DiffRequest {
                control,
                test,
                rank,
                rows,
                hta_compat,
                device_spec,
            })?;
            print_report(json, &diff, |diff, out| {
                out.write_all(neuronprof::analyze::render_diff(diff, top).as_bytes())
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Prints `value` on standard output: as pretty JSON with `json`, else as the text
/// `render` writes.
fn print_report<T: serde::Serialize>(
    json: bool,
    value: &T,
    render: impl FnOnce(&T, &mut dyn std::io::Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        neuronprof::write_json(&mut out, value).context("writing JSON")?;
    } else {
        render(value, &mut out).context("writing the report")?;
    }
    Ok(())
}

fn run_and_print(request: &neuronprof::run::RunRequest) -> anyhow::Result<ExitCode> {
    let outcome = neuronprof::run::run_workload(request)?;
    let mut out = std::io::stdout().lock();
    neuronprof::run::render_outcome(&outcome, &mut out).context("writing summary")?;
    Ok(ExitCode::SUCCESS)
}

/// `--peak-bus-gbps`: a positive, finite number of GB/s.
fn positive_gbps(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(v) => Err(format!("{v} GB/s: a bandwidth must be a positive number")),
        Err(e) => Err(format!("`{text}` is not a number of GB/s: {e}")),
    }
}
