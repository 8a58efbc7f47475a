//! The library behind the `neuronprof` command.
//!
//! The binary (`src/main.rs`) only parses arguments and prints; each command's work
//! lives in a module here, built on the workspace's library crates:
//!
//! - [`calibrate`]: `neuronprof calibrate` — the timing model's microbenchmarks beside
//!   the published Trainium figures.
//! - [`inspect`]: `neuronprof inspect PATH…` — what is in a set of Kineto rank traces.
//! - [`analyze`]: `neuronprof analyze PATH…` and `neuronprof diff A B` — the `analysis`
//!   crate's report (HTA's analyses and more) and trace diff.
//! - [`critical_path`]: `neuronprof critical-path PATH…` and `neuronprof what-if PATH…
//!   --scale …` — the critical path (HTA's, or across ranks) and its re-timing.
//! - [`export`]: `neuronprof export --format perfetto|csv|parquet PATH… -o OUT` — Kineto
//!   traces into one Perfetto protobuf trace or tables (the `exporters` crate; Parquet
//!   as a Hive-partitioned dataset, `TABLE/rank=R/part-K.parquet`).
//! - [`query`]: `neuronprof query "SQL" PATH…` — SQL over traces or that dataset (the
//!   `query` crate, embedded DataFusion).
//! - [`run`]: `neuronprof run WORKLOAD` and `neuronprof demo` — built-in workloads on
//!   emulated ranks, profiled into one Kineto trace per rank (published live while
//!   they run).
//! - [`monitor`]: `neuronprof monitor` — every live process's metrics as
//!   neuron-monitor JSON documents, or Prometheus metrics over HTTP.
//! - [`mcp`]: `neuronprof mcp --allow DIR…` — the commands above as the tools of a Model
//!   Context Protocol server on stdio, for agents, confined to the folders named.
//!
//! Every command's `--json` document is written by [`write_json`], so the MCP tools give
//! the same bytes as the CLI.
#![warn(missing_docs)]

pub mod analyze;
pub mod calibrate;
pub mod critical_path;
pub mod export;
pub mod inspect;
pub mod mcp;
pub mod monitor;
pub mod paths;
pub mod query;
pub mod recost;
pub mod replace;
pub mod run;

/// Writes `value` as the commands' `--json` print it: pretty JSON and a newline.
pub fn write_json<T: serde::Serialize + ?Sized>(
    out: &mut dyn std::io::Write,
    value: &T,
) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    out.write_all(b"\n")
}
