//! The device for a host program that computes the numerics itself: a PyTorch
//! PrivateUse1 extension (`python/`) whose tensors live in host memory and whose ops run
//! ATen's CPU kernels, while this crate supplies what a device runtime would — the
//! caching allocator's addresses and statistics, kernel launches placed on the
//! execution queues by the timing model, streams and events, and host waits.
//!
//! Differences from the crate's own ops ([`crate::Tensor`]), and why:
//! - **The host clock is the process timeline.** The caller computes the numerics on
//!   its own threads and cuts that time from the whole process's timeline
//!   ([`runtime_hooks::clock::cut_scope`]); its profiler (PyTorch's) stamps host events
//!   with the real clock, and they are put on the same cut timeline afterwards. So this
//!   path never moves a thread's clock by itself: the launch and wait records are
//!   stamped with [`runtime_hooks::clock::now_ns`] like any host record.
//! - **Waits really wait.** A host wait (the in-flight limit of a queue, a
//!   synchronization, a copy to the host the host reads) sleeps until the cut timeline
//!   reaches the modeled completion, instead of moving the thread's clock
//!   ([`runtime_hooks::clock::advance_to`]), because PyTorch's host events see real time.
//!   A cut by another thread while one sleeps stops the timeline, and the sleep goes on
//!   until the modeled instant is reached.
//! - **The queue is the caller's.** Every call names the execution queue (a framework
//!   keeps a current stream per thread); queues beyond the hardware's are a pool of user
//!   streams ([`USER_STREAM_POOL`](crate::USER_STREAM_POOL)).
//! - **Ops are costed by the native lowerings** ([`describe`]): the caller passes an
//!   op's name and its tensors, and the op gets the lowering the native backend uses
//!   for its kind ([`ExternalKernel::Lowered`]); copies are lowered like
//!   [`crate::Tensor::to_device`]. ([`ExternalKernel`] also takes a matmul or
//!   elementwise shape directly.)

mod collective;
mod describe;
mod program;
mod streams;

pub use collective::{ExternalCollective, ExternalCollectiveSpan};

pub use describe::{
    describe, Description, ExternalLowering, ExternalOp, ExternalTensor, ScalarType, TypeClass,
};
pub use program::{
    ExternalProgram, GroupCost, ProgramNode, ProgramNodeInfo, ProgramSegment, ProgramStats,
    SegmentKind,
};
pub use streams::ExternalEvent;

use runtime_hooks::{DmaDirection, NameId, RuntimeCallKind, RuntimeCallPayload, RuntimeCallScope};

use std::sync::atomic::{AtomicU64, Ordering};

use crate::timing::cost::Precision;
use crate::timing::lower::{MatmulPlan, RowPlan, Stage};
use crate::timing::{KernelInfo, KernelRun};
use crate::{BackendError, DType, Device, Engine, KernelSpan};

/// The shape of an externally computed kernel, for the timing model.
#[derive(Debug, Clone)]
pub enum ExternalKernel {
    /// An op described by [`describe`]: the native backend's lowering of its kind.
    Lowered(ExternalLowering),
    /// `[batch, m, k] × [k, n]` (the RHS per batch when `batch > 1`), plus a bias row.
    Matmul {
        /// Batch count (1 for a plain matmul).
        batch: u64,
        /// Rows of the LHS and output.
        m: u64,
        /// Contraction depth.
        k: u64,
        /// Columns of the RHS and output.
        n: u64,
        /// Input element type.
        dtype: DType,
        /// Whether a bias row is added (`addmm`).
        bias: bool,
    },
    /// A kernel over `elements` elements reading `inputs` streamed tensors, run on one
    /// engine (VectorE for arithmetic and reductions, ScalarE for activations, GpSimdE
    /// for gathers and random numbers).
    Elementwise {
        /// Output elements (or input elements of a reduction, the larger).
        elements: u64,
        /// Streamed inputs (at least 1 for the cost; 0 for a fill).
        inputs: u32,
        /// Element type.
        dtype: DType,
        /// The engine that computes it.
        engine: Engine,
    },
    /// A copy of `bytes` through the DMA engines.
    Copy {
        /// Bytes moved.
        bytes: u64,
        /// Host to device, device to host, or within the device.
        direction: DmaDirection,
    },
}

impl ExternalKernel {
    /// Places the kernel's instructions (the crate's own lowerings).
    fn lower(&self, run: &mut KernelRun<'_>) {
        match *self {
            ExternalKernel::Lowered(ref lowering) => lowering.lower(run),
            ExternalKernel::Matmul {
                batch,
                m,
                k,
                n,
                dtype,
                bias,
            } => MatmulPlan {
                batch: batch.max(1),
                m: m.max(1),
                k: k.max(1),
                n: n.max(1),
                elem_bytes: dtype.size_bytes(),
                out_elem_bytes: dtype.size_bytes().max(2),
                precision: Precision::of(dtype),
                rhs_per_batch: batch > 1,
                bias,
            }
            .lower(run),
            ExternalKernel::Elementwise {
                elements,
                inputs,
                dtype,
                engine,
            } => {
                let stage = Stage::new(engine, inputs.max(1), runtime_hooks::name!("compute"));
                let elem_bytes = dtype.size_bytes();
                let mut plan = RowPlan::flat(elements, vec![stage], dtype == DType::BF16);
                for _ in 0..inputs {
                    plan = plan.load(elem_bytes);
                }
                plan.store(elem_bytes).lower(run)
            }
            ExternalKernel::Copy { bytes, direction } => {
                crate::timing::lower::copy(run, bytes, direction)
            }
        }
    }
}

/// One launch of an externally computed kernel.
#[derive(Debug, Clone)]
pub struct ExternalLaunch {
    /// The kernel's name (distinct from the operator's, e.g. `mm_f32`; copies are named
    /// `Memcpy HtoD (Host -> Neuron)` and so on so profilers file them as copies).
    pub name_id: NameId,
    /// Correlation id shared by the launch, the kernel and their flow
    /// ([`runtime_hooks::next_corr_id`]).
    pub corr_id: u64,
    /// FLOPs the kernel does.
    pub flops: u64,
    /// Bytes it reads and writes.
    pub bytes: u64,
    /// Its shape for the timing model.
    pub kernel: ExternalKernel,
}

/// A kernel name as the `&'static str` the live operator table keys on: each distinct
/// name is leaked once (kernel names are few: one per op kind and dtype, one per graph).
/// Ends the calling thread's cut when dropped (one [`runtime_hooks::clock::cut_begin`]).
struct CutEnd;

impl Drop for CutEnd {
    fn drop(&mut self) {
        runtime_hooks::clock::cut_end();
    }
}

/// Launches whose host time was the modeled launch call, and that time in total, ns.
static MODELED_LAUNCHES: AtomicU64 = AtomicU64::new(0);
static MODELED_LAUNCH_NS: AtomicU64 = AtomicU64::new(0);

/// The modeled cost of a launch call on a host program's thread: the thread's
/// [`HostCost`](crate::HostCost) if it has one, else eager PyTorch's
/// ([`HostCost::eager_pytorch`](crate::HostCost::eager_pytorch)).
pub fn external_launch_ns() -> u64 {
    crate::host_cost::thread_host_cost()
        .unwrap_or_default()
        .launch_ns
}

fn note_modeled_launch(kept_ns: u64) {
    if kept_ns > 0 {
        MODELED_LAUNCHES.fetch_add(1, Ordering::Relaxed);
        MODELED_LAUNCH_NS.fetch_add(kept_ns, Ordering::Relaxed);
    }
}

/// How many launches of host programs took the modeled launch cost instead of the
/// emulator's dispatch, and their modeled time in total, ns (for a trace's metadata).
pub fn modeled_launches() -> (u64, u64) {
    (
        MODELED_LAUNCHES.load(Ordering::Relaxed),
        MODELED_LAUNCH_NS.load(Ordering::Relaxed),
    )
}

fn static_name(name_id: NameId) -> &'static str {
    static NAMES: std::sync::Mutex<std::collections::BTreeMap<NameId, &'static str>> =
        std::sync::Mutex::new(std::collections::BTreeMap::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    names.entry(name_id).or_insert_with(|| {
        let name = runtime_hooks::resolve(name_id);
        Box::leak(name.as_deref().unwrap_or("(unnamed kernel)").into())
    })
}

impl Device {
    /// Launches an externally computed kernel on execution queue `queue`: records the
    /// `nrt_execute` launch (holding the `nrt_queue_submit`, long when the queue was full
    /// and the host slept until a slot was free, and the start of the launch→kernel
    /// flow) on the calling thread, and places the kernel with the timing model (which
    /// records it and the flow's end) inside a process-wide cut, since that is emulator
    /// work. Returns where the kernel was placed.
    pub fn external_launch(
        &self,
        queue: usize,
        launch: &ExternalLaunch,
    ) -> Result<KernelSpan, BackendError> {
        self.external_launch_with(
            queue,
            launch.name_id,
            launch.corr_id,
            launch.flops,
            launch.bytes,
            |run| launch.kernel.lower(run),
        )
    }

    /// [`external_launch`](Self::external_launch) of a kernel that `lower` places.
    pub(crate) fn external_launch_with(
        &self,
        queue: usize,
        name_id: NameId,
        corr_id: u64,
        flops: u64,
        bytes: u64,
        lower: impl FnOnce(&mut KernelRun<'_>),
    ) -> Result<KernelSpan, BackendError> {
        self.check_queue("external launch", queue)?;
        if self.timeline().queues[queue].released {
            return Err(BackendError::StreamReleased {
                op: "external launch",
                stream: self.stream_of_queue(queue).to_string(),
            });
        }
        let payload = RuntimeCallPayload {
            name_id: runtime_hooks::name!("nrt_execute"),
            device: self.shared.index,
            queue: queue as u16,
            corr_id,
            bytes,
            ..Default::default()
        };
        // The emulator's dispatch of the launch (and, inside the caller's cut, of the
        // whole op) is cut from the timeline; the launch call lasts the modeled cost of a
        // real runtime's before its queue submission, and a wait for a free queue slot is
        // real (`sleep_until` leaves the cut): a real host waits too.
        runtime_hooks::clock::cut_begin();
        let _dispatch = CutEnd;
        let _launch = RuntimeCallScope::new(RuntimeCallKind::KernelLaunch, payload);
        note_modeled_launch(runtime_hooks::clock::cut_keep(external_launch_ns()));
        let launch_ns = crate::dispatch::submit_waiting(self, queue, payload, sleep_until);
        let kernel = KernelInfo {
            name_id,
            corr_id,
            flops,
            bytes,
        };
        let detail = self.detail();
        // Placing the kernel is the emulator's work, not the host's: cut from the
        // timeline like the numerics.
        let (start_ns, end_ns) = {
            let _cut = runtime_hooks::clock::cut_scope();
            let mut timeline = self.timeline();
            let span = timeline.run_kernel(queue, launch_ns, kernel, detail, lower);
            // The live operator table: an external launch knows its kernel's name
            // (`mm_f32`, `graph_1_forward`), not PyTorch's operator, so that is the row.
            timeline
                .live
                .note_op(static_name(name_id), span.1.saturating_sub(span.0));
            span
        };
        Ok(KernelSpan {
            corr_id,
            queue,
            start_ns,
            end_ns,
        })
    }

    /// Waits (really) until the kernel `span` has ended, recorded as an
    /// `nrt_tensor_read` runtime call of `bytes` (a copy to the host the caller reads).
    pub fn external_read_wait(&self, span: &KernelSpan, bytes: u64) -> u64 {
        let _call = RuntimeCallScope::new(
            RuntimeCallKind::MemoryCopy,
            RuntimeCallPayload {
                name_id: runtime_hooks::name!("nrt_tensor_read"),
                device: self.shared.index,
                queue: span.queue as u16,
                corr_id: span.corr_id,
                bytes,
                ..Default::default()
            },
        );
        sleep_until(span.end_ns)
    }

    /// Allocates a block for `bytes` for work on queue `queue` (the caller's current
    /// stream) from the device's caching allocator, tagged with the current category
    /// (recorded with the totals after it, like every allocation). Returns the block's
    /// device address and size.
    ///
    /// Blocks freed while another stream used them become reusable here once the
    /// calling thread's clock has passed that stream's work (see the allocator's module
    /// docs). When HBM is exhausted while such blocks are pending, the host waits
    /// (really) until every stream passed them, releases them and retries once, as
    /// CUDA's caching allocator synchronizes its pending frees before it reports out of
    /// memory (counted in `num_sync_all_streams`).
    pub fn external_allocate(&self, bytes: u64, queue: usize) -> Result<(u64, u64), BackendError> {
        self.check_queue("allocation", queue)?;
        let category = self.category();
        let now_ns = runtime_hooks::clock::now_ns();
        let first = {
            let mut allocator = self.allocator();
            allocator.release_completed(now_ns);
            allocator.allocate_on(bytes, category, queue as u16)
        };
        let Err(BackendError::OutOfMemory { .. }) = &first else {
            return first;
        };
        let Some(latest_ns) = self.allocator().latest_pending_ns() else {
            return first;
        };
        let now_ns = sleep_until(latest_ns);
        let mut allocator = self.allocator();
        allocator.note_sync_all_streams();
        allocator.release_completed(now_ns);
        allocator.allocate_on(bytes, category, queue as u16)
    }

    /// Frees a block returned by [`external_allocate`](Self::external_allocate). The
    /// block's own stream needs no wait (its work runs in order); when other queues
    /// used it (`record_stream`), it is reused only after the work queued on them so
    /// far has ended on the device. Returns that modeled instant when the block waits
    /// for it (None: reusable at once).
    pub fn external_free(&self, addr: u64, used_by: &[usize]) -> Option<u64> {
        let queues = self.external_queue_count();
        let ready_ns = used_by
            .iter()
            .filter(|&&q| q < queues)
            .map(|&q| self.queue_done_ns(q))
            .max();
        let mut allocator = self.allocator();
        match ready_ns {
            Some(ready_ns) if ready_ns > runtime_hooks::clock::now_ns() => {
                allocator.free_pending(addr, ready_ns);
                Some(ready_ns)
            }
            _ => {
                allocator.free(addr);
                None
            }
        }
    }
}

/// Sleeps the calling thread until its host clock (the cut timeline) reaches
/// `target_ns` (no-op when it already has); returns the host clock after. Sleeps in
/// steps that end short of the target (the kernel's timer slack makes a sleep overshoot
/// by tens of µs) and spins, yielding, for the last 100 µs, so a wait lasts what the
/// model says to a few µs.
///
/// The wait itself runs on the monotonic clock (reads that hand out no timestamp), and
/// starts and ends with a run-delay cut ([`runtime_hooks::clock::cut_run_delay`]): on a
/// loaded machine a thread can wait milliseconds for a CPU between the runtime call's
/// first record and its wait (measured: 8 ms inside an `nrt_queue_submit` whose queue was
/// not full, at load 12) or once its wait is over (9.4 ms past a 73 µs queue-slot wait),
/// and that is preemption, not host time. Reading the host clock in the loop would note
/// each read and keep the cut from reaching back over the delay.
pub(crate) fn sleep_until(target_ns: u64) -> u64 {
    const SPIN_NS: u64 = 100_000;
    let now_ns = runtime_hooks::clock::now_ns();
    if now_ns >= target_ns {
        return now_ns;
    }
    // A wait is the program's time: inside the dispatch's cut the timeline would stand
    // still and never reach the target, so the cut is left for the wait.
    let (_, depth) = runtime_hooks::clock::cut_pause_keeping(0);
    runtime_hooks::clock::cut_run_delay();
    loop {
        let now_ns = runtime_hooks::clock::now_ns();
        if now_ns >= target_ns {
            runtime_hooks::clock::cut_resume(depth);
            return now_ns;
        }
        // The cut timeline runs with the monotonic clock outside cuts, and stands still
        // in them: the monotonic instant is the earliest the target can be reached.
        let until_ns = runtime_hooks::clock::monotonic_ns() + (target_ns - now_ns);
        loop {
            let mono_ns = runtime_hooks::clock::monotonic_ns();
            if mono_ns >= until_ns {
                break;
            }
            let left_ns = until_ns - mono_ns;
            if left_ns > SPIN_NS {
                std::thread::sleep(std::time::Duration::from_nanos(left_ns - SPIN_NS));
            } else {
                std::thread::yield_now();
            }
        }
        runtime_hooks::clock::cut_run_delay();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runtime;

    fn launch(kernel: ExternalKernel) -> ExternalLaunch {
        ExternalLaunch {
            name_id: runtime_hooks::intern("external_test_kernel"),
            corr_id: runtime_hooks::next_corr_id(),
            flops: 0,
            bytes: 0,
            kernel,
        }
    }

    #[test]
    fn kernels_queue_in_order_and_synchronize_waits_for_the_last() {
        let runtime = Runtime::trn2();
        let device = runtime.device(0).unwrap();
        let mm = device
            .external_launch(
                0,
                &launch(ExternalKernel::Matmul {
                    batch: 1,
                    m: 512,
                    k: 512,
                    n: 512,
                    dtype: DType::F32,
                    bias: true,
                }),
            )
            .unwrap();
        let add = device
            .external_launch(
                0,
                &launch(ExternalKernel::Elementwise {
                    elements: 1 << 20,
                    inputs: 2,
                    dtype: DType::F32,
                    engine: Engine::Vector,
                }),
            )
            .unwrap();
        assert!(mm.dur_ns() > 1_000, "a 512^3 fp32 matmul takes µs: {mm:?}");
        assert!(add.start_ns >= mm.end_ns, "one queue runs in order");
        let after = device.external_synchronize();
        assert!(after >= add.end_ns);
        assert!(runtime_hooks::clock::now_ns() >= add.end_ns, "a real wait");
        assert_eq!(runtime_hooks::clock::emulation_offset_ns(), 0);
    }

    #[test]
    fn allocations_go_through_the_caching_allocator() {
        let runtime = Runtime::trn2();
        let device = runtime.device(1).unwrap();
        let (addr, bytes) = device.external_allocate(1000, 0).unwrap();
        assert_eq!(bytes, crate::size_class(1000));
        assert_eq!(device.memory_stats().allocated_bytes, bytes);
        assert_eq!(device.external_free(addr, &[]), None);
        assert_eq!(device.memory_stats().allocated_bytes, 0);
        assert!(
            device.memory_stats().reserved_bytes > 0,
            "the segment stays cached"
        );
    }

    /// The stream_reuse scenario of python/capi/tests/torch_parity_driver.py, below the
    /// extension: a block of the default stream that a side stream used
    /// (`record_stream`) is freed while a host copy queued on the side stream still runs.
    #[test]
    fn a_block_a_busy_side_stream_used_waits_for_it_and_is_reused_after() {
        const MIB: u64 = 1 << 20;
        let runtime = Runtime::trn2();
        let device = runtime.device(2).unwrap();
        let side = device.external_pool_queue();
        let (a, _) = device.external_allocate(4 * MIB, 0).unwrap();
        let (_keep, _) = device.external_allocate(4 * MIB, 0).unwrap();
        assert_eq!(device.external_free(a, &[]), None);
        let (b, _) = device.external_allocate(4 * MIB, 0).unwrap();
        assert_eq!(b, a, "the default stream reuses its own block at once");
        // 1 GiB from the host: about 17 ms of the side stream at the host link's rate,
        // far longer than this thread takes to the free even on a loaded machine.
        let bytes = 1 << 30;
        let copy = device
            .external_launch(
                side,
                &launch(ExternalKernel::Copy {
                    bytes,
                    direction: DmaDirection::HostToDevice,
                }),
            )
            .unwrap();
        let link_ns = bytes as f64 / device.profile().host_link_bytes_per_ns;
        assert!(
            copy.dur_ns() as f64 >= 0.99 * link_ns,
            "a host copy takes at least its bytes over the host link: {copy:?}, {link_ns} ns"
        );
        assert!(!device.external_queue_done(side).unwrap(), "{copy:?}");
        let before = device.memory_stats();
        let ready_ns = device.external_free(b, &[side]);
        let after = device.memory_stats();
        assert_eq!(ready_ns, Some(copy.end_ns), "pending until the copy ends");
        assert_eq!(before.allocated_bytes - after.allocated_bytes, 4 * MIB);
        assert_eq!(
            before.pools.active_bytes[0].current, after.pools.active_bytes[0].current,
            "still active while the side stream may use it"
        );
        let (d, _) = device.external_allocate(4 * MIB, 0).unwrap();
        assert_ne!(
            d, a,
            "not handed out before the side stream passed the free"
        );
        device.external_synchronize_queue(side).unwrap();
        let (e, _) = device.external_allocate(4 * MIB, 0).unwrap();
        assert_eq!(e, a, "reused once the side stream passed the free");
        let s = device.memory_stats();
        assert_eq!(s.pools.active_bytes[0].current, s.allocated_bytes);
    }

    #[test]
    fn a_copy_is_lowered_to_dma() {
        let runtime = Runtime::trn2();
        let device = runtime.device(0).unwrap();
        let span = device
            .external_launch(
                0,
                &launch(ExternalKernel::Copy {
                    bytes: 1 << 20,
                    direction: DmaDirection::HostToDevice,
                }),
            )
            .unwrap();
        assert!(span.dur_ns() > 0);
        assert!(device.engine_time().dma_bytes >= 1 << 20);
        device.external_read_wait(&span, 1 << 20);
    }
}
