//! Placing a collective on a logical core's timeline.
//!
//! A collective's start and end are decided by all the ranks together (it starts when
//! the last rank is ready and ends at the same modeled instant everywhere; see
//! `crate::dist`), so unlike a compute kernel its span is given, not derived from its
//! instructions. Here it occupies its collective queue for that span and moves its
//! bytes through the core's DMA engines from its start, so compute kernels queued
//! behind those transfers find the engines busy (hw.md Collectives: compute and
//! communication overlap but contend for DMA engines). The CC-cores orchestrate it; no
//! compute engine runs an instruction for it.

use runtime_hooks::{CollectiveOp, CollectivePayload, DmaDirection, FlowKind, KernelPayload};

use super::{KernelInfo, KernelRun, KernelSpan, RecordDetail, Timeline};

impl Timeline {
    /// The earliest instant a collective submitted at `launch_ns` on `queue` may start on
    /// this core: after the launch latency, the queue's earlier work, the events it
    /// waits on, `inputs_ready_ns` (the compute that produces its input) and the first
    /// free DMA engine of physical core 0.
    pub(crate) fn collective_ready_ns(
        &self,
        queue: usize,
        launch_ns: u64,
        inputs_ready_ns: u64,
    ) -> u64 {
        let q = &self.queues[queue];
        let dma_free_ns = self.cores[0]
            .dma_engine_free_ns
            .iter()
            .copied()
            .min()
            .unwrap_or(0);
        (launch_ns + self.profile.launch_latency_ns)
            .max(q.last_end_ns)
            .max(q.wait_until_ns)
            .max(inputs_ready_ns)
            .max(dma_free_ns)
    }

    /// Places a collective on `queue`: its kernel runs from `ready_ns` (when this core
    /// was ready; until `start_ns` it waits for the other ranks, as an NCCL kernel spins
    /// on a fast rank) to `end_ns`; from `start_ns`, when the last rank was ready, it
    /// moves `dma_bytes` through the DMA engines. Records the kernel, the collective
    /// (same correlation id and span, carrying the collective's arguments) and the
    /// launch→kernel flow end.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_collective(
        &mut self,
        queue: usize,
        ready_ns: u64,
        start_ns: u64,
        end_ns: u64,
        kernel: KernelInfo,
        dma_bytes: u64,
        detail: RecordDetail,
        op: CollectiveOp,
        payload: CollectivePayload,
    ) -> KernelSpan {
        let end_ns = end_ns.max(start_ns + 1);
        let ready_ns = ready_ns.min(start_ns);
        let mut run = KernelRun {
            timeline: self,
            record_instructions: detail == RecordDetail::Instructions
                && runtime_hooks::is_enabled(),
            corr_id: kernel.corr_id,
            start_ns,
            end_ns: start_ns,
        };
        let cores = run.core_count() as u64;
        for core in 0..cores {
            let share = dma_bytes / cores + u64::from(core < dma_bytes % cores);
            if share > 0 {
                let transfer = super::cost::Transfer::contiguous(share);
                run.dma_spread(core as usize, transfer, DmaDirection::PeerToPeer, start_ns);
            }
        }
        let q = &mut self.queues[queue];
        q.last_end_ns = q.last_end_ns.max(end_ns);
        q.in_flight_end_ns.push_back(end_ns);
        self.time.kernels += 1;
        self.time.last_end_ns = self.time.last_end_ns.max(end_ns);
        let span = KernelSpan {
            corr_id: kernel.corr_id,
            queue,
            start_ns: ready_ns,
            end_ns,
        };
        self.last_kernel = Some(span);
        if runtime_hooks::is_enabled() {
            runtime_hooks::kernel(
                ready_ns,
                end_ns,
                KernelPayload {
                    name_id: kernel.name_id,
                    device: self.device_index,
                    queue: queue as u16,
                    corr_id: kernel.corr_id,
                    flops: kernel.flops,
                    bytes: kernel.bytes,
                    ..Default::default()
                },
            );
            runtime_hooks::collective(op, ready_ns, end_ns, payload);
            runtime_hooks::flow_end_at(FlowKind::LaunchToKernel, kernel.corr_id, ready_ns);
        }
        span
    }
}
