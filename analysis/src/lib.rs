//! Analyses of Kineto traces (what `torch.profiler` writes), for any device: CUDA, AMD,
//! MTIA and `neuron` (PrivateUse1) traces.
//!
//! The first goal is exact parity with HTA (Holistic Trace Analysis 0.6): in
//! [`Mode::HtaCompat`] every analysis reproduces HTA's numbers on the same traces, value
//! by value (see `tests/analyses_match_hta_reference_outputs.rs`,
//! `../shared/reference/hta-analyses.md`, and the known limits below).
//!
//! # Pipeline
//! 1. [`load_paths`] reads one trace per rank, in parallel (`std::thread::scope`), each in
//!    one streaming pass ([`trace_format::TraceReader`] pushing events into our sink;
//!    [`LoadOptions::with_progress`] reports bytes read per file for a progress bar),
//!    keeping only what analyses need ([`RankTrace`]: device rows, rows with a
//!    `correlation`, `ProfilerStep`s, `[memory]` events, neuron engine instructions and
//!    DMA, `deviceProperties`). Errors name the file, byte
//!    offset and event index ([`AnalysisError::Read`]); lenient reads report damage.
//! 2. [`Frames::build`] applies HTA's preprocessing for a [`Mode`] (rounding,
//!    launch↔device links, iterations, last-step filter).
//! 3. The [`analyses`] each return a plain `serde::Serialize` struct; [`analyze`] runs
//!    them all into one [`Report`] with [`insights`] first, and [`render::render_report`]
//!    prints aligned tables.
//!
//! # Analyses
//! HTA's, equal to HTA 0.6 in compat mode: [`analyses::temporal`],
//! [`analyses::kernel_breakdown`], [`analyses::idle_time`], [`analyses::overlap`],
//! [`analyses::queue_length`], [`analyses::memory_bw`], [`analyses::launch_stats`],
//! [`analyses::stragglers`], [`analyses::trace_diff`].
//! Beyond HTA: [`analyses::memory`] (timeline from `[memory]` events),
//! [`analyses::operators`] (a `key_averages` table), [`analyses::steps`] (each step split
//! by what the device did, host- or device-bound), [`analyses::collectives`]
//! (collectives matched across ranks: waiting versus transfer, the bottleneck rank),
//! [`analyses::transfers`] (copies by kind, small transfers, achieved bandwidth),
//! [`analyses::utilization`] (neuron engines and cores active %, MFU/HFU against
//! `deviceProperties` peaks, DMA use and small DMAs, TensorE throttling, host- versus
//! device-bound steps), [`insights`].
//! `trace_diff` and `operators` read the file a second time, streaming, because they need
//! every host operator, which the model does not keep.
//!
//! # JSON
//! [`Report`] serializes (serde) to one object whose fields are the analyses' result
//! structs, each documented with its JSON shape:
//! `{"mode", "insights": [Finding…], "device_type", "ranks", "last_step_filtered", "step",
//! "temporal_breakdown": TemporalBreakdown | null, "comm_comp_overlap",
//! "kernel_breakdown", "per_rank": [{"rank", "idle_time", "queue_length", "memory_bw",
//! "launch_stats", "memory", "transfers"}…], "stragglers": Stragglers | null,
//! "steps": [StepSplit…], "collectives", "utilization": [DeviceUtilization…],
//! "errors": [string…]}`. Times are µs (`_us`),
//! sizes bytes (`_bytes`), bandwidth GB/s (`_gbps`); `null` stands where HTA prints
//! `NaN`.
//!
//! # Default mode versus HTA compat mode
//! | | [`Mode::Default`] | [`Mode::HtaCompat`] |
//! |---|---|---|
//! | times | exact nanoseconds | HTA's `ts = ceil(ts)`, `end = floor(ts + dur)` in µs, with HTA's `f64` arithmetic, whenever the file has fractional `ts` |
//! | device rows | kernel / memcpy / memset / MTIA command-processor categories | any row with a `stream` arg ≠ −1 (so AMD runtime calls carrying `stream` count as device rows, as in HTA) |
//! | kernel type | category and args first (`gpu_memcpy` → memory, a kernel with `Collective name` → communication), names second | names only (`nccl*` → communication, `Memcpy*` → memory, …) |
//! | launch calls | any host row linked to device work by `correlation` | HTA's list of names (`cudaLaunchKernel`, `hipLaunchKernel`, …) |
//! | idle time kernels | every device row | kernel, memcpy, memset and MTIA categories only |
//! | device rows per launch | once | once per host row with its correlation (HTA's merge; a neuron launch has two, `nrt_execute` and `nrt_queue_submit`, so kernels count twice and `kernel_wait` goes negative, as in HTA) |
//! | stragglers' communication kernels | collective args or communication type, any stream; 1% floor on a collective's longest copy; ties to the latest starter | names starting `ncclKernel`, stream > 0 (neuron's `ncclDevKernel_*` are not seen); 1% floor per rank's copy |
//! | `device_type` | from `deviceProperties` (`Trainium2 NeuronCore (trn2, LNC=2)`) | HTA's `infer_gpu_type` (`UNKNOWN GPU` for neuron) |
//!
//! Why: HTA's rounding makes sub-µs kernels last 0 or −1 µs and drifts sums by up to
//! 1 µs per event; its name rules see a `neuron` kernel or a collective not named
//! `nccl*` as computation and miss launches whose runtime is not CUDA's. The default
//! mode is what our own traces need; the compat mode proves the definitions equal.
//! Both modes share HTA's last-`ProfilerStep` filter for HTA's analyses (the step
//! split, collectives and memory timeline see every step).
//!
//! Known limits of compat mode: HTA's unstable sorts decide the order of equal
//! timestamps; we reproduce numpy's scalar introsort, but a numpy built with SIMD
//! sorting may order ties differently (on `nccl_data` this moves the queue-length mean
//! by 4 steps in 5,004). HTA's separate MTIA filter (used only with ≥ 2 steps) is not
//! reproduced. Whether `ts` was written as `12` or `12.0` cannot be told from the
//! reader's nanoseconds; integral `ts` everywhere is taken as HTA's integer column.
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
pub mod insights;
pub mod live;
pub mod live_client;
pub mod model;
pub mod render;
mod report;
pub mod stats;

pub use classify::{HtaVersion, KernelType, Mode};
pub use error::AnalysisError;
pub use frame::{Frame, FrameRow, Frames};
pub use model::{load_paths, load_ranks, LoadOptions, LoadProgress, RankTrace, TraceSet};
pub use report::{analyze, RankReport, Report, ReportOptions};
