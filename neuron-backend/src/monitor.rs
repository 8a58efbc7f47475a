//! Live monitoring: every process running the backend publishes its metrics on a
//! local endpoint, in neuron-monitor's JSON layout (`shared/reference/neuron-monitor.md`)
//! plus a `neuronprof` extension; `neuronprof monitor` and `neuron-top` read it. The
//! reports are built from the `monitor-schema` crate's types, the ones the readers
//! (`analysis::live`) parse into.
//!
//! # Endpoint
//!
//! A Unix socket `<pid>.sock` (mode 0600) in `$XDG_RUNTIME_DIR/neuronprof`, else
//! `/tmp/neuronprof-<uid>` (mode 0700; an existing directory owned by another user, or
//! open to group or others, or a symbolic link, is refused with an error naming it).
//! See [`endpoint_dir`]. The socket is removed at exit; a stale one left by a crash
//! is removed by the next server that wants the path and by the clients' discovery
//! (`analysis::live_client`).
//!
//! The endpoint thread (`neuronprof-monitor`) starts with the first
//! [`Runtime`](crate::Runtime) or [`World`](crate::dist::World) of the process, or
//! earlier through [`start`] (`neuronprof run` calls it to report a bad directory at
//! once). `NEURONPROF_MONITOR=0` in the environment switches publishing off. A child
//! forked after the endpoint started (a PyTorch DataLoader worker) does not publish
//! and leaves its parent's socket in place when it exits.
//!
//! # Protocol
//!
//! A client connects, writes one line holding a JSON object, and reads one JSON
//! document (one line) before the server closes the connection:
//!
//! - request: `{"period_s": 1.0}` — the window, in seconds, that rates, utilization
//!   and latency percentiles cover (default 1; at most [`MAX_PERIOD_S`]; unknown keys
//!   are ignored). The answer covers the last `period_s` seconds for which samples
//!   exist: right after a client first attaches that is less (the `period` fields say
//!   how much), so a client that wants full periods sends one request at start and
//!   uses the answers from the second on.
//! - answer: `{"neuron_runtime_data": [...], "neuron_hardware_info": {...}}`, the
//!   process's part of a neuron-monitor document (the monitor adds `system_data` and
//!   `instance_info`), or `{"error": "<what was wrong with the request>"}`.
//! - A connection closed without a byte (a client's liveness probe) gets no answer and
//!   does not count as a client. A request is at most 4096 bytes. Clients are served
//!   concurrently (one thread polls them all): each connection has 2 s from its accept
//!   to the end of its answer, after which it is closed (a partial request first gets
//!   an error document saying so); at most 64 are open at once, and a new one beyond
//!   that closes the oldest one still sending its request. After an `accept` error
//!   (EMFILE) the server stops accepting for 10 ms, doubling up to 1 s while errors
//!   repeat.
//!
//! # One entry per rank
//!
//! Each rank of a [`World`](crate::dist::World) (a thread) is one element of
//! `neuron_runtime_data`, tagged `<pid>/rank<N>` (`<pid>` for a one-rank world or a
//! [`Runtime`](crate::Runtime), whose logical cores are one entry). A finished rank
//! stays listed with `"state": "finished"` for 30 s. A process that is one rank of a
//! multi-process job (a PyTorch rank under `torchrun`, see [`set_process_rank`]) tags
//! its runtime's entry `<pid>/rank<N>` with the job's rank and world size, and its
//! entry lists only the logical cores it has used (a kernel run or memory reserved;
//! all of them until it has used one): the job's other ranks drive the others, and a
//! reader that sums the entries counts each core and its HBM once.
//!
//! # What the numbers mean
//!
//! - Windows are measured on the emulated timeline (the host clock of the thread that
//!   drives the device, `runtime_hooks::clock`): the emulator's own CPU work takes no
//!   time there and host waits jump to the modeled completion, so a window of one
//!   wall-clock period covers however much device time passed in it. Utilization is
//!   busy device time in that window divided by its length. A rank's clock (it follows
//!   its thread's CPU time) is read at its last submission: while the rank waits for a
//!   peer, is preempted or the emulator computes, it stands still. Wall-clock
//!   stretches in which no core's timeline moved are skipped: a report's window goes
//!   back until `period_s` of wall time *with* progress is covered (at most the
//!   [`MAX_PERIOD_S`] of history), so a rank that waits reads its last busy period
//!   rather than 0 % and nothing done; the `period` fields give the wall time the
//!   window then spans. A rank that makes no progress in the whole history reads
//!   idle over all of it.
//! - `neuroncore_utilization`: the share of the window in which a kernel ran on the
//!   logical core's engines. Collectives are left out: the CC-cores run them, and a
//!   collective kernel spinning while it waits for a slow peer would otherwise read
//!   as a busy core (they have their own figures below). `flops`: FLOPs of kernels
//!   placed in the window per second of device time. The per-physical-core entries
//!   neuron-monitor adds at LNC=2 (`"v3d": {"nc_v3.0": …}`) are not produced: they
//!   would need a union per physical core updated on every instruction, which slowed
//!   the timing model by ~4 % when tried; `engine_utilization` gives the detail.
//! - `engine_utilization` (extension): per engine (`tensor`, `vector`, `scalar`,
//!   `gpsimd`, `dma`) busy time over the window, as a percentage of all such engines of
//!   the logical core (LNC physical cores; 16 DMA engines per physical core).
//! - `execution_stats`: kernels (not collectives) placed in the window (`completed`);
//!   errors raised by
//!   ops that reached their device and by collectives, by class (`timed_out`:
//!   collective timeouts; `failed_to_queue`: a released stream; `incorrect_input`:
//!   shapes, dtypes, devices, indices, arguments; `completed_with_err`: the rest, such
//!   as out of memory); latency percentiles (nearest rank) of the window's last 4096
//!   executions: `total_latency` from the host's launch to the kernel's end,
//!   `device_latency` the kernel's own span. `null` when nothing ran.
//! - `memory_used`: per core, `tensors` = bytes allocated, `runtime_memory` = bytes the
//!   caching allocator holds beyond them; `neuron_device` = bytes reserved. `host` is
//!   the process's resident memory (`/proc/self/statm`), all of it
//!   `application_memory`: the emulated runtime keeps no host-side constants, DMA
//!   buffers or host tensors apart from the process's memory (device tensors' values,
//!   when numerics are on, are in it too). Every entry of a process reports the same
//!   figure (a reader sums it once per pid); when `/proc` cannot be read it is 0 and
//!   `memory_used.error` says so. The extension adds
//!   `hbm` (allocated, peak allocated, capacity) and `memory_categories` (parameters,
//!   activations, gradients, optimizer state, other).
//! - `neuron_runtime_vcpu_usage`: CPU time of the rank's thread (of the whole process
//!   for a runtime) over the window, as a percentage of all online CPUs.
//! - Collectives (extension): `in_flight` lists a rank's collective from its call until
//!   the ranks met, with the ranks not yet arrived; `latency_s` and `histogram`
//!   (hdrhistogram, log buckets from 1 µs doubling) hold each collective's modeled span
//!   on this rank since start; `slowest_rank` is the rank this one waited for longest
//!   (modeled time) in the window.
//! - `top_operators`: the window's 10 operators with most modeled device time.
//! - `dropped_records`: records the rank's thread (the process, for a runtime) lost
//!   on a full recording ring.
//!
//! # Cost
//!
//! The recording path adds, per kernel, a few additions under the timeline lock it
//! already holds (the operator table too) and one relaxed store; per collective an
//! uncontended mutex, twice. Without a client nothing else runs: the endpoint thread
//! sleeps in `poll`. With a client attached it samples every 100 ms (a few locks per
//! rank and a `/proc` read for the rank's CPU time) and builds each answer (about
//! 40–70 µs per rank). Measured (`docs/PERFORMANCE.md`, "live monitoring"; example
//! `live_overhead`): on a 4-rank GPT the endpoint and a client polling every second
//! take 0.28 % of the workload's CPU time (0.98 % at a 10 Hz poll); the counters do not
//! move the dispatch benchmark beyond its noise.
//!
//! ```
//! use neuron_backend::{monitor, DType, Runtime};
//!
//! let runtime = Runtime::trn2();
//! let device = runtime.device(0)?;
//! let x = device.ones(&[64, 64], DType::F32)?;
//! let _y = x.matmul(&x)?;
//! let document: serde_json::Value = serde_json::from_str(&monitor::report_json(1.0)).unwrap();
//! let entries = document["neuron_runtime_data"].as_array().unwrap();
//! assert!(entries.iter().any(|e| e["report"]["neuronprof"]["hbm"]["used_bytes"].as_u64() > Some(0)));
//! # Ok::<(), neuron_backend::BackendError>(())
//! ```

mod clients;
mod counters;
mod cpu;
mod endpoint;
mod registry;
mod report;
mod server;

use std::path::PathBuf;

pub(crate) use counters::{DeviceLive, InFlight, TimelineLive};
pub use endpoint::{
    check_private_dir, endpoint_dir, endpoint_dir_for, ensure_private_dir, pid_alive,
    socket_path_in, EndpointError,
};
pub use report::{ENGINE_NAMES, SCHEMA_VERSION};
pub use server::MAX_PERIOD_S;

use crate::Device;

/// 0: follow the environment; 1: on; 2: off ([`set_enabled`]).
static ENABLED_OVERRIDE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Whether runtimes and worlds created from now on are published: [`set_enabled`]'s
/// choice if made, else on unless `NEURONPROF_MONITOR` is `0`, `off` or `false`.
pub fn enabled() -> bool {
    match ENABLED_OVERRIDE.load(std::sync::atomic::Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => !matches!(
            std::env::var("NEURONPROF_MONITOR").as_deref(),
            Ok("0" | "off" | "false")
        ),
    }
}

/// Publishes runtimes and worlds created from now on (`true`) or not (`false`),
/// whatever `NEURONPROF_MONITOR` says; those already published stay published.
pub fn set_enabled(on: bool) {
    ENABLED_OVERRIDE.store(if on { 1 } else { 2 }, std::sync::atomic::Ordering::Relaxed);
}

/// Starts this process's endpoint now (it otherwise starts with the first runtime or
/// world) and returns its socket path. The first outcome is kept: a refused directory
/// stays an error for the life of the process.
pub fn start() -> Result<PathBuf, EndpointError> {
    if !enabled() {
        return Err(EndpointError::Disabled);
    }
    server::ensure_started().map_err(|reason| EndpointError::UnsafeDirectory {
        path: endpoint_dir(),
        reason,
    })
}

/// The socket this process publishes on, if its endpoint is running.
pub fn socket_path() -> Option<PathBuf> {
    server::socket_path().map(|p| p.to_path_buf())
}

/// The document the endpoint would answer now for a window of `period_s` seconds
/// (built in this process, without a client): for tests, benchmarks and embedding.
/// Windows need history: each call adds a sample (at most one per 100 ms), as does
/// the endpoint's sampler while a socket client is attached.
pub fn report_json(period_s: f64) -> String {
    server::report_json(period_s)
}

/// Says that this process is rank `rank` of a job of `world_size` processes (one per
/// rank, as `torchrun` starts them; the PyTorch extension calls it with the default
/// process group's rank): its runtime's entry then reports `rank` and `world_size` and
/// is tagged `<pid>/rank<rank>`, as the ranks of a [`World`](crate::dist::World) are.
pub fn set_process_rank(rank: usize, world_size: usize) {
    registry::set_process_rank(rank, world_size);
}

/// Stops publishing the runtimes and ranks that have finished, now rather than 30 s
/// after they finished (for a long-lived process that runs one workload after
/// another and wants only the current one listed).
pub fn forget_finished() {
    registry::forget_finished();
}

fn start_lazily() {
    if !enabled() {
        return;
    }
    static WARNED: std::sync::Once = std::sync::Once::new();
    if let Err(reason) = server::ensure_started() {
        WARNED.call_once(|| eprintln!("neuronprof: live monitoring is off: {reason}"));
    }
}

/// A runtime's logical cores become one publisher.
pub(crate) fn register_runtime(devices: &[Device]) {
    if enabled() {
        registry::register_runtime(devices);
        start_lazily();
    }
}

/// A world's ranks become one publisher each.
pub(crate) fn register_world(devices: &[Device]) {
    if enabled() {
        registry::register_world(devices);
        start_lazily();
    }
}

/// Names the workload of the publishers registered from now on.
pub(crate) fn set_workload(name: &str) {
    registry::set_workload(name);
}

/// The calling thread starts running rank work on `device`.
pub(crate) fn rank_started(device: &Device) {
    let live = &device.shared.live;
    live.os_tid
        .store(cpu::current_tid(), std::sync::atomic::Ordering::Relaxed);
    if let Some(thread) = runtime_hooks::current_thread_id() {
        live.hooks_thread
            .store(thread, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The rank driving `device` left its body.
pub(crate) fn rank_finished(device: &Device) {
    device
        .shared
        .live
        .finished
        .store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The rank driving `device` completed step `step`.
pub(crate) fn note_step(device: &Device, step: u64) {
    device.shared.live.note_step(step);
}
