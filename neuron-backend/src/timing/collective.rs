//! Placing a collective on a logical core's timeline.
//!
//! A collective's start and end are decided by all the ranks together (it starts when
//! the last rank is ready and ends at the same modeled instant everywhere; see
//! `crate::dist`), so unlike a compute kernel its span is given, not derived from its
//! instructions. It occupies its collective queue and one of the core's CC-cores
//! (docs/HARDWARE.md Chips: 2 per physical core; they orchestrate it, no compute engine
//! runs an instruction for it), and moves its bytes step by step through the core's DMA
//! engines: the algorithm's steps each send their share of the wire bytes after the
//! step's hop latency, at the rate the links give ([`CollectiveSchedule`]). The DMA
//! engines are shared with compute both ways (docs/HARDWARE.md Collectives): a step's
//! transfers go in the engines' idle gaps around compute placed earlier, and compute
//! placed later goes around the collective's transfers. A collective's descriptors are
//! a stream of their own (on each engine's last queue, like a copy's): its transfers
//! are placed when the last rank arrives, which for a fast rank is in its future, so
//! they do not move the engines' issue-order frontier that a kernel's transfers follow
//! (they did, and a fast rank's next kernels queued their loads behind the whole
//! collective: a 47 µs `gelu_backward` lasted 713 µs in the demo).

use runtime_hooks::{
    CollectiveOp, CollectivePayload, DmaDirection, DmaPayload, FlowKind, KernelPayload,
};

use super::{cost, CoreState, KernelInfo, KernelSpan, RecordDetail, Timeline};
use crate::DeviceProfile;

/// How one rank's part of a collective moves: one transfer of `chunk_bytes` per step,
/// issued at each of `issue_ns`, moving at `bytes_per_ns` over the links.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CollectiveSchedule {
    pub(crate) issue_ns: Vec<u64>,
    pub(crate) chunk_bytes: u64,
    pub(crate) bytes_per_ns: f64,
}

/// One DMA transfer of a collective step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece {
    pub(crate) core: usize,
    pub(crate) queue: usize,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) bytes: u64,
}

/// Places one step on `cores` (a timeline's own, or a copy of them for planning):
/// `chunk_bytes` split between the physical cores and, on each, over as many engines as
/// 32 KiB pieces it makes, all of them moving at `bytes_per_ns` together from `issue_ns`.
/// The links set the pace, so a piece costs its bytes at its share of that rate, without
/// a transfer's fixed latency or row cost (the step's hop latency stands for them).
/// Returns the pieces.
pub(crate) fn place_step(
    cores: &mut [CoreState],
    profile: &DeviceProfile,
    chunk_bytes: u64,
    bytes_per_ns: f64,
    issue_ns: u64,
) -> Vec<Piece> {
    let count = cores.len() as u64;
    let engines = u64::from(profile.dma_engines);
    let mut pieces = Vec::new();
    if chunk_bytes == 0 || bytes_per_ns <= 0.0 {
        return pieces;
    }
    let parts: Vec<(usize, u64)> = (0..count)
        .map(|c| {
            (
                c as usize,
                chunk_bytes / count + u64::from(c < chunk_bytes % count),
            )
        })
        .filter(|&(_, share)| share > 0)
        .collect();
    let spread: u64 = parts
        .iter()
        .map(|&(_, share)| (share / (32 * 1024)).clamp(1, engines))
        .sum();
    let rate = bytes_per_ns / spread.max(1) as f64;
    let queues_per_engine = profile.dma_queues_per_engine as usize;
    for (core, share) in parts {
        let n = (share / (32 * 1024)).clamp(1, engines);
        for piece in cost::Transfer::contiguous(share).split(n) {
            let moving_ns = ((piece.bytes() as f64 / rate).round() as u64).max(1);
            let state = &mut cores[core];
            let (engine, (start_ns, at)) = state
                .dma_busy
                .iter()
                .map(|busy| super::backfill::earliest_gap(busy, issue_ns, moving_ns))
                .enumerate()
                .min_by_key(|&(engine, (start_ns, _))| (start_ns, engine))
                .expect("at least one DMA engine");
            let end_ns = start_ns + moving_ns;
            state.dma_busy[engine].insert(at, (start_ns, end_ns));
            pieces.push(Piece {
                core,
                queue: engine * queues_per_engine + queues_per_engine - 1,
                start_ns,
                end_ns,
                bytes: piece.bytes(),
            });
        }
    }
    pieces
}

impl Timeline {
    /// The earliest instant a collective submitted at `launch_ns` on `queue` may start on
    /// this core: after the launch latency, the queue's earlier work, the events it
    /// waits on, `inputs_ready_ns` (the compute that produces its input) and a free
    /// CC-core. (Its transfers then wait for DMA engines step by step.)
    pub(crate) fn collective_ready_ns(
        &self,
        queue: usize,
        launch_ns: u64,
        inputs_ready_ns: u64,
    ) -> u64 {
        let q = &self.queues[queue];
        let cc_free_ns = self.cc_free_ns.iter().copied().min().unwrap_or(0);
        (launch_ns + self.profile.launch_latency_ns)
            .max(q.last_end_ns)
            .max(q.wait_until_ns)
            .max(inputs_ready_ns)
            .max(cc_free_ns)
    }

    /// Places a collective on `queue`: its kernel runs from `ready_ns` (when this core
    /// was ready; until `start_ns` it waits for the other ranks, as an NCCL kernel spins
    /// on a fast rank) to `end_ns`; its transfers follow `schedule`. Records the kernel,
    /// the collective (same correlation id and span, carrying the collective's
    /// arguments), the transfers and the launch→kernel flow end.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_collective(
        &mut self,
        queue: usize,
        ready_ns: u64,
        start_ns: u64,
        end_ns: u64,
        kernel: KernelInfo,
        schedule: &CollectiveSchedule,
        detail: RecordDetail,
        op: CollectiveOp,
        payload: CollectivePayload,
    ) -> KernelSpan {
        let end_ns = end_ns.max(start_ns + 1);
        let ready_ns = ready_ns.min(start_ns);
        let record = detail == RecordDetail::Instructions && runtime_hooks::is_enabled();
        let profile = std::sync::Arc::clone(&self.profile);
        for &issue_ns in &schedule.issue_ns {
            let pieces = place_step(
                &mut self.cores,
                &profile,
                schedule.chunk_bytes,
                schedule.bytes_per_ns,
                issue_ns,
            );
            for piece in pieces {
                let busy = piece.end_ns - piece.start_ns;
                self.time.dma_busy_ns += busy;
                self.time.dma_bytes += piece.bytes;
                self.time.instructions += 1;
                if record {
                    let per_core =
                        profile.dma_engines as usize * profile.dma_queues_per_engine as usize;
                    runtime_hooks::dma(
                        DmaDirection::PeerToPeer,
                        piece.start_ns,
                        piece.end_ns,
                        DmaPayload {
                            name_id: runtime_hooks::name!("dma"),
                            device: self.device_index,
                            queue: (piece.core * per_core + piece.queue) as u16,
                            corr_id: kernel.corr_id,
                            bytes: piece.bytes,
                            ..Default::default()
                        },
                    );
                }
            }
        }
        if let Some(cc) = self.cc_free_ns.iter_mut().min_by_key(|free| **free) {
            *cc = (*cc).max(end_ns);
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
