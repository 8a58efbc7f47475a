//! The C ABI that the PyTorch extension in `python/` links (`include/neuronprof_capi.h`):
//! the emulated neuron device (`neuron-backend`) and the conversion of recorded windows
//! into Kineto activities (`profiler`). It is a top crate like `cli`: it may depend on
//! `runtime-hooks`, `neuron-backend`, `profiler` and `trace-format`, and nothing depends
//! on it.
//!
//! The library builds as `libneuronprof_capi.so`; it also carries the `nph_*` recording
//! calls of `runtime-hooks` (`runtime-hooks/include/neuronprof_hooks.h`), which the
//! extension uses to switch recording on and off.
//!
//! # Calls (`npc_*`)
//!
//! - [`npc_init`]: the process's runtime (a built-in device profile, `trn2` by default);
//!   [`npc_device_count`].
//! - Memory: [`npc_allocate`], [`npc_free`], [`npc_memory_stats`], [`npc_empty_cache`],
//!   [`npc_reset_peak_memory_stats`], [`npc_reset_accumulated_memory_stats`]:
//!   the device's caching allocator. The extension keeps tensors in host memory (the
//!   emulator's device memory *is* host memory) and takes each block's device address,
//!   size and the device totals from here, so HBM statistics and `[memory]` events are
//!   the allocator's.
//! - Work: [`npc_launch_op`] (an op by its ATen name and tensors, costed by the
//!   emulator's lowering of its kind: `neuron_backend::describe`), [`npc_launch`] (a
//!   kernel of an explicit shape, [`NpcLaunch`]: copies), [`npc_read_wait`],
//!   [`npc_synchronize`]. Every launch names its queue (the stream).
//! - Compiled graphs (`torch.compile(backend="neuron")`): [`npc_program_build`] lowers
//!   and schedules a graph's nodes into one device program
//!   (`neuron_backend::ExternalProgram`), [`npc_program_launch`] launches one of its
//!   kernels (one per call unless a node falls back to eager), [`npc_program_describe`]
//!   (JSON: the groups, what fusion saved, the fallbacks), [`npc_program_segments`],
//!   [`npc_program_free`].
//! - Streams and events: [`npc_queue_count`], [`npc_stream_pool`] (a pool of user
//!   streams after the hardware queues), [`npc_stream_query`], [`npc_stream_synchronize`],
//!   [`npc_event_record`], [`npc_event_wait`], [`npc_event_query`],
//!   [`npc_event_synchronize`] ([`NpcEvent`]: the modeled instant it completes).
//! - Collectives of the c10d backend `neuron` (one process per rank):
//!   [`npc_collective_queue`], [`npc_collective_issue`] (the launch; this core's ready
//!   instant, which the backend sends to the other ranks with the data),
//!   [`npc_collective_place`] (the last arrival plus the topology model's cost: the same
//!   end on every rank). `NEURONPROF_STRAGGLER=RANK:FACTOR` slows the device of that
//!   global rank (`RANK`) by `FACTOR`, as `neuronprof run --straggler` does.
//! - The warp: [`npc_warp_trace_file`] (a trace PyTorch wrote, onto the cut timeline, in
//!   place; host ops inside a cut, the emulator's, left out and counted),
//!   [`npc_warp_unix_ns`] / [`npc_warp_unix_intervals`] (PyTorch's times for
//!   `key_averages`, the latter also saying which ops lay inside a cut),
//!   [`npc_cut_total_ns`]; the cut itself is `runtime-hooks`' `nph_cut_begin` /
//!   `nph_cut_end`.
//! - Profiling: [`npc_window_begin`] opens a window (a background thread drains the
//!   rings every few milliseconds, so a window longer than a ring loses nothing);
//!   [`npc_collect`] closes it and converts its records with
//!   [`profiler::plugin_window`] into [`NpcActivity`]s held by an [`NpcWindow`]
//!   ([`npc_window_len`], [`npc_window_get`], [`npc_window_dropped`],
//!   [`npc_window_unpaired`], [`npc_window_free`]); [`npc_discard`] drops what was
//!   recorded so far.
//! - Detail: [`npc_set_record_detail`] switches what the devices record (kernels, or
//!   also engine instructions and DMA transfers) while the process runs, as
//!   `torch_neuronx.profiling`'s `ProfileMode.DEVICE` does for a session.
//! - Descriptions: [`npc_device_properties`] (the `deviceProperties` entry),
//!   [`npc_device_name`], [`npc_queue_name`]: the labels `profiler::DeviceInfo` gives
//!   the crate's own traces.
//! - Errors: calls that can fail return a non-zero status and leave a message for
//!   [`npc_last_error`] (per thread). No call panics across the boundary: a panic is
//!   caught and reported as status [`NPC_ERR_PANIC`].
//!
//! # Design choices
//!
//! - **A shared library, not a static one.** The extension links
//!   `libneuronprof_capi.so` by path (rpath), so a Rust change needs no rebuild of the
//!   C++ extension (whose build `torch.utils.cpp_extension` caches), and the test links
//!   exactly the library cargo built for it.
//! - **Conversion lives in `profiler`.** Records become Kineto activities in
//!   [`profiler::plugin_window`] (DESIGN.md: nowhere else); this crate only flattens
//!   them into C structs and owns their strings.
//! - **The host clock is the cut timeline.** The extension computes the numerics on its
//!   host threads inside process-wide cuts (`runtime_hooks::clock::cut_scope`); kernel
//!   placement here is cut too, and every call first cuts the calling thread's run delay
//!   (`clock::cut_run_delay`: time it waited for a CPU since its previous call) and
//!   registers its ring inside a cut. Waits sleep until the cut timeline reaches the
//!   modeled instant. PyTorch's own events are moved onto the same timeline afterwards
//!   ([`npc_warp_trace_file`], [`npc_warp_unix_ns`]).
//! - **Rings are drained during a window** by a background thread (every 2 ms in the
//!   plugin), since PyTorch calls the plugin only at a window's start and end.
//!
//! # Example
//!
//! ```
//! use neuronprof_capi::*;
//!
//! // SAFETY: a null profile name selects trn2.
//! assert!(unsafe { npc_init(std::ptr::null()) } > 0);
//! let (mut addr, mut bytes) = (0u64, 0u64);
//! // SAFETY: both out-pointers are valid.
//! let status = unsafe { npc_allocate(0, 0, 4096, &mut addr, &mut bytes) };
//! assert_eq!(status, NPC_OK);
//! assert_eq!(bytes, 4096);
//! // SAFETY: no queue list.
//! unsafe { npc_free(0, addr, std::ptr::null(), 0) };
//! ```

#![warn(missing_docs)]

mod activity;
mod collective;
mod collector;
mod describe;
mod detail;
mod device;
mod error;
mod ops;
mod program;
mod streams;
mod warp;

pub use activity::{
    npc_collect, npc_discard, npc_window_begin, npc_window_dropped, npc_window_free,
    npc_window_get, npc_window_len, npc_window_unpaired, NpcActivity, NpcWindow,
    NPC_ACTIVITY_EVENT_RECORD, NPC_ACTIVITY_KERNEL, NPC_ACTIVITY_MEMCPY, NPC_ACTIVITY_MEMSET,
    NPC_ACTIVITY_RUNTIME, NPC_ACTIVITY_RUNTIME_LAUNCH, NPC_ACTIVITY_STREAM_WAIT, NPC_FLOW_END,
    NPC_FLOW_NONE, NPC_FLOW_START,
};
pub use collective::{
    npc_collective_issue, npc_collective_place, npc_collective_queue, NpcCollective,
    NpcCollectiveSpan,
};
pub use describe::{npc_device_name, npc_device_properties, npc_queue_name};
pub use detail::{npc_set_record_detail, NPC_DETAIL_INSTRUCTIONS, NPC_DETAIL_KERNELS};
pub use device::{
    npc_allocate, npc_device_count, npc_device_stats, npc_empty_cache, npc_free, npc_init,
    npc_launch, npc_memory_blocks, npc_memory_stats, npc_read_wait,
    npc_reset_accumulated_memory_stats, npc_reset_peak_memory_stats, npc_synchronize, NpcBlock,
    NpcDeviceStats, NpcKernelSpan, NpcLaunch, NpcMemoryStats, NpcStat, NPC_BLOCK_ALLOCATED,
    NPC_BLOCK_FREE, NPC_BLOCK_PENDING_FREE, NPC_DTYPE_BF16, NPC_DTYPE_F32, NPC_DTYPE_F8E4M3,
    NPC_DTYPE_I64, NPC_ENGINE_GPSIMD, NPC_ENGINE_SCALAR, NPC_ENGINE_TENSOR, NPC_ENGINE_VECTOR,
    NPC_KERNEL_COPY_D2D, NPC_KERNEL_COPY_D2H, NPC_KERNEL_COPY_H2D, NPC_KERNEL_ELEMENTWISE,
    NPC_KERNEL_MATMUL,
};
pub use error::{
    npc_last_error, NPC_ERR_ARGUMENT, NPC_ERR_NO_DEVICE, NPC_ERR_OUT_OF_MEMORY, NPC_ERR_PANIC,
    NPC_OK,
};
pub use ops::{npc_launch_op, NpcOp, NpcTensor};
pub use program::{
    npc_program_build, npc_program_describe, npc_program_free, npc_program_launch,
    npc_program_segments, NpcGraphNode, NpcProgram,
};
pub use streams::{
    npc_event_query, npc_event_record, npc_event_synchronize, npc_event_wait, npc_queue_count,
    npc_stream_pool, npc_stream_query, npc_stream_synchronize, NpcEvent,
};
pub use warp::{
    npc_cut_total_ns, npc_warp_trace_file, npc_warp_unix_intervals, npc_warp_unix_ns, NpcWarpStats,
    HOST_OP_CATEGORIES, NPC_ERR_ALREADY_WARPED, NPC_ERR_TRACE, PLUGIN_CATEGORIES, WARP_MARKER,
};

#[cfg(test)]
mod tests {
    use std::sync::{Mutex, MutexGuard};

    static RECORDING: Mutex<()> = Mutex::new(());

    /// Tests that switch recording on or drain the rings run one at a time.
    pub(crate) fn recording() -> MutexGuard<'static, ()> {
        RECORDING.lock().unwrap_or_else(|p| p.into_inner())
    }
}
