//! Analyses of Kineto traces (what `torch.profiler` writes), for any device: CUDA, AMD,
//! MTIA and `neuron` (PrivateUse1) traces.
//!
//! The first goal is exact parity with HTA (Holistic Trace Analysis): in
//! [`Mode::HtaCompat`] every analysis reproduces HTA's numbers on the same traces, value
//! by value — HTA 0.6's by default, HTA 0.5's (the release on PyPI) with
//! [`HtaVersion::V0_5`]. Proven by `tests/analyses_match_hta_reference_outputs.rs`
//! (what HTA 0.6 printed, `tests/data/traces/hta-reference/`) and
//! `tests/analyses_match_hta_run_here.rs` (HTA 0.5 run in the test on every other shared
//! trace and on our own neuron traces); definitions from
//! HTA's source (`hta/analyzers/` of HolisticTraceAnalysis); known limits below.
//!
//! # Pipeline
//! 1. [`load_paths`] reads one trace per rank, in parallel (`std::thread::scope`), each in
//!    one streaming pass ([`trace_format::TraceReader`] pushing events into our sink;
//!    with fewer files than cores, each file's events are decoded on worker threads and
//!    taken in order, [`trace_format::TraceReader::read_parallel`],
//!    [`LoadOptions::read_threads`];
//!    [`LoadOptions::with_progress`] reports bytes read per file for a progress bar),
//!    keeping only what analyses need ([`RankTrace`]: device rows, rows with a
//!    `correlation`, `ProfilerStep`s, `[memory]` events, neuron engine instructions and
//!    DMA, `deviceProperties`) and, unless [`LoadOptions::with_host_ops`]`(false)`, every
//!    host operator and other host event, compactly, in [`RankTrace::host_ops`]. Errors
//!    name the file, byte offset and event index ([`AnalysisError::Read`]); lenient reads
//!    report damage.
//! 2. [`Frames::build`] applies HTA's preprocessing for a [`Mode`] (rounding,
//!    launch↔device links, iterations, last-step filter); [`Frames::build_both`] gives
//!    the filtered and unfiltered views from one pass.
//! 3. The [`analyses`] each return a plain `serde::Serialize` struct; [`analyze`] runs
//!    them all (the independent ones on their own threads) into one [`Report`] with
//!    [`insights`] first, and [`render::render_report`] prints aligned tables (per rank,
//!    the top 10 operators by self device time, then self host time).
//!
//! # Many ranks
//! [`analyze`] reduces each rank on its own to a summary (its rows of the per-rank
//! tables, its kernel tables, straggler candidates, steps, copies of collectives and
//! utilization; the per-rank analyses only for the ranks asked for) and combines the
//! cross-rank analyses from the summaries. [`analyze_paths`] does the same straight from
//! the files with [`load_each`] ([`analyze_plan`]: the chosen windows of
//! [`plan_inputs`]): a rank is summarized as soon as it is read and its trace
//! dropped, so at most one trace per core is in memory however many ranks there are,
//! and the report is the one [`analyze`] gives on the loaded set (tested on real traces,
//! `tests/analyzing_ranks_a_few_at_a_time_equals_the_loaded_set.rs`). What still grows
//! with the ranks is the summaries and the report itself: per rank a few kernel-table
//! rows, one entry per step, per collective and per communication kernel of each
//! iteration. `neuronprof analyze` and the Parquet export's analysis tables use it.
//!
//! # Analyses
//! HTA's, equal to HTA in compat mode: [`analyses::temporal`],
//! [`analyses::kernel_breakdown`], [`analyses::idle_time`], [`analyses::overlap`],
//! [`analyses::queue_length`], [`analyses::memory_bw`], [`analyses::launch_stats`],
//! [`analyses::stragglers`], [`analyses::trace_diff`].
//! Beyond HTA: [`analyses::memory`] (timeline from `[memory]` events),
//! [`analyses::operators`] (a `key_averages` table), [`analyses::steps`] (each step split
//! by what the device did, host- or device-bound), [`analyses::collectives`]
//! (collectives matched across ranks: the transfer — the shortest duration across
//! ranks — versus each rank's wait, start and end skew, algorithm and bus bandwidth,
//! per process group and operation with a size histogram and bandwidth percentiles,
//! who arrived first and last, the bottleneck rank; equal to TraceLens's collective
//! report),
//! [`analyses::transfers`] (copies by kind, small transfers, achieved bandwidth),
//! [`analyses::utilization`] (neuron engines and cores active %, MFU/HFU against
//! `deviceProperties` peaks, DMA use and small DMAs, TensorE throttling, host- versus
//! device-bound steps), [`analyses::compile`] (`torch.compile`: Dynamo's compiled
//! regions, graph kernels, and the graph breaks and recompiles with their reasons from
//! the trace's `neuron_compile` member), [`analyses::roofline`] (per operator and unique
//! arguments: FLOPs and bytes from the [`perf_model`] crate, achieved TFLOP/s and TB/s,
//! the device's roofline and the time reaching it would win; TraceLens's definitions,
//! checked on its reports), [`insights`].
//! `trace_diff` and `operators` work from the same single read: the loader keeps each
//! host operator (`cpu_op`, `user_annotation`) in 40 bytes (start, duration,
//! `External id`, interned name and `Input Dims`, thread), each other complete event that
//! is not a row in 24 bytes, and device time per `External id` ([`model::HostOps`]);
//! `with_host_ops(false)` saves that memory (63.7 MiB per GB of HTA's NCCL trace) and
//! those two then say they cannot run. With a step, the operator table counts only
//! operators that start in that `ProfilerStep`, with the device time they launched.
//!
//! # JSON
//! [`Report`] serializes (serde) to one object whose fields are the analyses' result
//! structs, each documented with its JSON shape:
//! `{"mode", "hta_version": "0.5" | "0.6" | null, "insights": [Finding…], "device_type",
//! "ranks", "last_step_filtered", "step",
//! "temporal_breakdown": TemporalBreakdown | null, "comm_comp_overlap",
//! "kernel_breakdown", "per_rank": [{"rank", "idle_time", "queue_length", "memory_bw",
//! "launch_stats", "memory", "transfers", "operators": OperatorTable | null,
//! "roofline": RankRoofline | null}…],
//! "stragglers": Stragglers | null,
//! "steps": [StepSplit…], "collectives", "utilization": [DeviceUtilization…],
//! "compile": [RankCompile…], "errors": [string…]}`. Times are µs (`_us`),
//! sizes bytes (`_bytes`), bandwidth GB/s (`_gbps`); `null` stands where HTA prints
//! `NaN`.
//!
//! # Default mode versus HTA compat mode
//! | | [`Mode::Default`] | [`Mode::HtaCompat`] |
//! |---|---|---|
//! | times | exact nanoseconds | HTA's `ts = ceil(ts)`, `end = floor(ts + dur)` in µs, with HTA's `f64` arithmetic, whenever the file has fractional `ts` |
//! | device rows | kernel / memcpy / memset / MTIA command-processor categories | any row with a `stream` arg ≠ −1 (so AMD runtime calls carrying `stream` count as device rows, as in HTA) |
//! | kernel type | category and args first (`gpu_memcpy` → memory, a kernel with `Collective name` → communication), names second | names only (`nccl*` → communication, `Memcpy*` → memory, …), by the chosen release's patterns ([`HtaVersion`]) |
//! | launch calls | any host row linked to device work by `correlation` | HTA's list of names (`cudaLaunchKernel`, `hipLaunchKernel`, …) |
//! | idle time kernels | every device row | kernel, memcpy, memset and MTIA categories only |
//! | device rows per launch | once | once per host row with its correlation (HTA's merge; a neuron launch has two, `nrt_execute` and `nrt_queue_submit`, so kernels count twice and `kernel_wait` goes negative, as in HTA) |
//! | stragglers' communication kernels | collective args or communication type, any stream; 1% floor on a collective's longest copy; ties to the latest starter | names starting `ncclKernel`, stream > 0 (neuron's `ncclDevKernel_*` are not seen); 1% floor per rank's copy |
//! | `device_type` | from `deviceProperties` (`Trainium2 NeuronCore (trn2, LNC=2)`) | HTA's `infer_gpu_type` (`UNKNOWN GPU` for neuron) |
//! | equal timestamps in HTA's sorts | any order (the results do not depend on it) | the order of the numpy argsort kernel under the HTA compared with ([`stats::NumpySort`], AVX-512 by default) |
//!
//! Why: HTA's rounding makes sub-µs kernels last 0 or −1 µs and drifts sums by up to
//! 1 µs per event; its name rules see a `neuron` kernel or a collective not named
//! `nccl*` as computation and miss launches whose runtime is not CUDA's. The default
//! mode is what our own traces need; the compat mode proves the definitions equal.
//! Both modes share HTA's last-`ProfilerStep` filter for HTA's analyses (the step
//! split, collectives and memory timeline see every step).
//!
//! Known limits of compat mode: HTA's unstable sorts decide the order of equal
//! timestamps (queue-length and memory-bandwidth steps, idle gaps). We reproduce the
//! order numpy's `argsort(kind="quicksort")` gives on an x86-64 CPU with AVX-512
//! (x86-simd-sort as numpy 2.4 vendors it, checked permutation for permutation against
//! numpy 2.4.6), which is what HTA's reference outputs were printed with, and on request
//! ([`ReportOptions::numpy_sort`], `--numpy-sort`) its AVX2 kernel or numpy's scalar
//! introsort. HTA run with numpy 1.x–2.3 (older x86-simd-sort; 2.0–2.3 also reorder ties
//! in already sorted input) can order ties differently; on `nccl_data` the scalar order
//! moves the queue-length mean by 4 steps in 5,004. HTA 0.6's separate MTIA filter (used
//! only with ≥ 2 steps) is not reproduced (no trace to check it on; HTA 0.5 has none).
//! Whether `ts` was written as `12` or `12.0` cannot be told from the reader's
//! nanoseconds; integral `ts` everywhere is taken as HTA's integer column.
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
pub mod critical_path;
mod error;
pub mod frame;
pub mod inputs;
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
pub use model::{
    load_each, load_inputs, load_paths, load_ranks, plan_inputs, InputPlan, LoadOptions,
    LoadProgress, RankTrace, TraceSet,
};
pub use report::{analyze, analyze_paths, analyze_plan, RankReport, Report, ReportOptions};
