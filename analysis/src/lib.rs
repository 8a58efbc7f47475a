//! Analyses of Kineto traces (what `torch.profiler` writes), for any device: CUDA, AMD,
//! MTIA and `neuron` (PrivateUse1) traces.
//!
//! The first goal is exact parity with HTA (Holistic Trace Analysis 0.6): in
//! [`Mode::HtaCompat`] every analysis reproduces HTA's numbers on the same traces, value
//! by value (see `tests/analyses_match_hta_reference_outputs.rs` and
//! `../shared/reference/hta-analyses.md`).
//!
//! # Pipeline
//! 1. [`load_paths`] reads one trace per rank, in parallel, each in one streaming pass
//!    ([`trace_format::TraceReader`] pushing events into our sink), keeping only the
//!    rows analyses need ([`RankTrace`]).
//! 2. [`Frames::build`] applies HTA's preprocessing for a [`Mode`] (rounding,
//!    launch↔device links, iterations, last-step filter).
//! 3. The [`analyses`] each return a plain `serde::Serialize` struct; [`analyze`] runs
//!    them all into one [`Report`], and [`render::render_report`] prints aligned tables.
//!
//! # Default mode versus HTA compat mode
//! | | [`Mode::Default`] | [`Mode::HtaCompat`] |
//! |---|---|---|
//! | times | exact nanoseconds | HTA's `ts = ceil(ts)`, `end = floor(ts + dur)` in µs, with HTA's `f64` arithmetic, whenever the file has fractional `ts` |
//! | device rows | kernel / memcpy / memset / MTIA command-processor categories | any row with a `stream` arg ≠ −1 (so AMD runtime calls carrying `stream` count as device rows, as in HTA) |
//! | kernel type | category and args first (`gpu_memcpy` → memory, a kernel with `Collective name` → communication), names second | names only (`nccl*` → communication, `Memcpy*` → memory, …) |
//! | launch calls | any host row linked to device work by `correlation` | HTA's list of names (`cudaLaunchKernel`, `hipLaunchKernel`, …) |
//!
//! Why: HTA's rounding makes sub-µs kernels last 0 or −1 µs and drifts sums by up to
//! 1 µs per event; its name rules see a `neuron` kernel or an MTIA collective as
//! computation and miss launches whose runtime is not CUDA's. The default mode is what
//! our own traces need; the compat mode exists to prove the definitions equal.
//!
//! # Example
//! ```
//! use analysis::{analyze, load_paths, LoadOptions, ReportOptions};
//! # let dir = std::env::temp_dir().join("analysis-doc-example");
//! # std::fs::create_dir_all(&dir).unwrap();
//! # let path = dir.join("rank0.json");
//! # std::fs::write(&path, r#"{"traceEvents": [
//! #  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
//! #   "ts": 0.5, "dur": 2, "args": {"correlation": 1}},
//! #  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 5.0, "dur": 10,
//! #   "args": {"stream": 7, "correlation": 1}}]}"#).unwrap();
//! let traces = load_paths(&[&path], &LoadOptions::default())?;
//! let report = analyze(&traces, &ReportOptions::hta_reference());
//! let temporal = report.temporal_breakdown.as_ref().unwrap();
//! assert_eq!(temporal.ranks[0].kernel_time_us, 10.0);
//! println!("{}", analysis::render::render_report(&report));
//! # Ok::<(), analysis::AnalysisError>(())
//! ```
#![warn(missing_docs)]

pub mod analyses;
pub mod classify;
mod error;
pub mod frame;
pub mod model;
pub mod render;
mod report;
pub mod stats;

pub use classify::{KernelType, Mode};
pub use error::AnalysisError;
pub use frame::{Frame, FrameRow, Frames};
pub use model::{load_paths, load_ranks, LoadOptions, RankTrace, TraceSet};
pub use report::{analyze, RankReport, Report, ReportOptions};
