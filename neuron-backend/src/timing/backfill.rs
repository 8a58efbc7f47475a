//! DMA transfers that fill idle gaps of the engines.
//!
//! Transfers a kernel issues are placed in issue order on the least busy engine, each
//! after the engine's last transfer ([`KernelRun::dma`]): within one kernel that is the
//! order the hardware processes its descriptors in. A copy on another stream, though,
//! is an independent stream of descriptors that the engines interleave with the
//! compute kernels' own (each engine serves several queues). Placed after every transfer
//! of the kernels queued before it, a side-stream copy could never run under compute
//! that was already in flight. So a plain copy's pieces go into the earliest idle gap of
//! an engine that holds them (the engines' occupancy intervals are kept for this, and
//! dropped once no kernel can start before them); the copy still shares the engines'
//! bandwidth with everything else, it only no longer waits for work it does not depend
//! on. Compute kernels keep issue-order placement (their loads and stores are ordered by
//! the kernel itself).

use runtime_hooks::DmaDirection;

use super::{cost, KernelRun, Timeline};

/// The descriptor size a back-filled copy is moved in: an engine interleaves other
/// queues' work between descriptors (an assumption: the NKI DMA guide advises transfers
/// of at least 2 KiB per partition, 256 KiB per 128-partition tile; 64 KiB keeps a
/// descriptor past the latency-bound 32 KiB while fitting the gaps of a streaming kernel).
const CHUNK_BYTES: u64 = 64 * 1024;

/// How far before a launch occupancy intervals are kept: threads launching at nearly
/// the same instant may reach the timeline in either order.
const PRUNE_SLACK_NS: u64 = 1_000_000;

impl Timeline {
    /// Drops occupancy intervals no kernel launched at `launch_ns` or later can use.
    pub(crate) fn prune_dma_busy(&mut self, launch_ns: u64) {
        let horizon_ns = launch_ns.saturating_sub(PRUNE_SLACK_NS);
        for core in &mut self.cores {
            for busy in &mut core.dma_busy {
                let keep_from = busy.partition_point(|&(_, end)| end <= horizon_ns);
                if keep_from > 0 {
                    busy.drain(..keep_from);
                }
            }
        }
    }
}

/// The earliest start at or after `ready_ns` at which `occupancy_ns` fits between the
/// sorted intervals of `busy`, and the index to insert it at.
pub(crate) fn earliest_gap(busy: &[(u64, u64)], ready_ns: u64, occupancy_ns: u64) -> (u64, usize) {
    // Usually nothing is placed beyond `ready_ns` (issue order): no search.
    if busy.last().is_none_or(|&(_, end)| end <= ready_ns) {
        return (ready_ns, busy.len());
    }
    let mut start_ns = ready_ns;
    let mut i = busy.partition_point(|&(_, end)| end <= start_ns);
    while i < busy.len() && busy[i].0 < start_ns + occupancy_ns {
        start_ns = start_ns.max(busy[i].1);
        i += 1;
    }
    (start_ns, i)
}

impl KernelRun<'_> {
    /// One transfer of shape `transfer` whose bytes move at `bytes_per_ns` (at most the
    /// engine's own rate), in the idle gaps of the engines of `core` once `ready_ns` has
    /// passed (the module docs say when); returns its end.
    ///
    /// The transfer goes in descriptors of [`CHUNK_BYTES`], each in the earliest gap of
    /// any engine that holds its engine time, one after another at the transfer's rate:
    /// an engine interleaves the descriptors of its queues, so a long copy runs between
    /// a compute kernel's loads instead of waiting for a gap as long as itself, and a copy
    /// paced by a slower link (the host's) occupies the engine only for what the engine
    /// moves at its own rate.
    pub(crate) fn dma_backfill(
        &mut self,
        core: usize,
        transfer: cost::Transfer,
        direction: DmaDirection,
        ready_ns: u64,
        bytes_per_ns: f64,
    ) -> u64 {
        let profile = std::sync::Arc::clone(&self.timeline.profile);
        let ready_ns = ready_ns.max(self.start_ns);
        let chunks = transfer.bytes().div_ceil(CHUNK_BYTES).max(1);
        // When the bytes moved so far have passed the link (at the transfer's rate).
        let mut moved_ns = ready_ns as f64;
        let mut end_ns = ready_ns;
        for chunk in transfer.split(chunks) {
            let (moving_ns, busy_ns) = cost::dma_moving_ns(&profile, chunk, bytes_per_ns);
            let occupancy_ns =
                (busy_ns.max(profile.dma_descriptor_ns as f64).round() as u64).max(1);
            // A descriptor is taken once the previous one has passed the link.
            let issue_ns = (moved_ns.round() as u64).max(ready_ns);
            let state = &mut self.timeline.cores[core];
            let (engine, (start_ns, at)) = state
                .dma_busy
                .iter()
                .map(|busy| earliest_gap(busy, issue_ns, occupancy_ns))
                .enumerate()
                .min_by_key(|&(engine, (start_ns, _))| (start_ns, engine))
                .expect("at least one DMA engine");
            moved_ns = moved_ns.max(start_ns as f64) + moving_ns;
            let chunk_end_ns = (moved_ns.round() as u64)
                .max(start_ns + profile.dma_fixed_latency_ns)
                .max(start_ns + 1);
            state.dma_busy[engine].insert(at, (start_ns, start_ns + occupancy_ns));
            let free = &mut state.dma_engine_free_ns[engine];
            *free = (*free).max(start_ns + occupancy_ns);
            let queues_per_engine = profile.dma_queues_per_engine as usize;
            // The engine's last queue: a copy's descriptors are a stream of their own.
            let queue = engine * queues_per_engine + queues_per_engine - 1;
            self.note_dma(
                core,
                queue,
                direction,
                (start_ns, chunk_end_ns),
                occupancy_ns,
                chunk.bytes(),
                runtime_hooks::name!("dma"),
            );
            end_ns = end_ns.max(chunk_end_ns);
        }
        end_ns
    }

    /// [`dma_backfill`](Self::dma_backfill) of `transfer` split over up to all engines
    /// of `core`, like [`dma_spread`](Self::dma_spread); returns when the last piece
    /// ends. `link_bytes_per_ns` is the rate of a slower link behind the engines that
    /// the pieces share (a host copy: the host link's share of this core), `None` for
    /// each piece at its engine's own rate.
    pub(crate) fn dma_spread_backfill(
        &mut self,
        core: usize,
        transfer: cost::Transfer,
        direction: DmaDirection,
        ready_ns: u64,
        link_bytes_per_ns: Option<f64>,
    ) -> u64 {
        if transfer.bytes() == 0 {
            return ready_ns;
        }
        let pieces = cost::spread_pieces(&self.timeline.profile, transfer);
        let rate = match link_bytes_per_ns {
            Some(link) => link / pieces as f64,
            None => cost::dma_bytes_per_ns(&self.timeline.profile),
        };
        let mut end_ns = ready_ns;
        for piece in transfer.split(pieces) {
            end_ns = end_ns.max(self.dma_backfill(core, piece, direction, ready_ns, rate));
        }
        end_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::{Engine, KernelInfo, RecordDetail};
    use crate::DeviceProfile;
    use runtime_hooks::NameId;
    use std::sync::Arc;

    fn info() -> KernelInfo {
        KernelInfo {
            name_id: NameId::NONE,
            corr_id: 1,
            flops: 0,
            bytes: 0,
        }
    }

    #[test]
    fn gaps_are_found_between_and_after_intervals() {
        let busy = [(10, 20), (30, 40)];
        assert_eq!(earliest_gap(&busy, 0, 5), (0, 0));
        assert_eq!(earliest_gap(&busy, 0, 15), (40, 2));
        assert_eq!(earliest_gap(&busy, 15, 10), (20, 1));
        assert_eq!(earliest_gap(&busy, 20, 10), (20, 1));
        assert_eq!(earliest_gap(&busy, 35, 1), (40, 2));
    }

    #[test]
    fn a_copy_uses_the_gaps_of_a_kernel_queued_before_it() {
        let mut tl = Timeline::new(Arc::new(DeviceProfile::trn2()), 0);
        // A compute kernel whose loads leave the DMA engines idle most of the time: one
        // small load, then long compute, then one more small load.
        let (_, kernel_end) = tl.run_kernel(0, 0, info(), RecordDetail::Kernels, |run| {
            let small = cost::Transfer::contiguous(4096);
            let dma = runtime_hooks::name!("dma");
            let loaded = run.dma(0, small, DmaDirection::DeviceToDevice, 0, dma);
            let computed = run.exec(0, Engine::Vector, 200_000.0, loaded, NameId::NONE, 0);
            run.dma(0, small, DmaDirection::DeviceToDevice, computed, dma);
        });
        // Every engine is "free" only after the kernel's last load...
        let greedy_free = tl.cores[0]
            .dma_engine_free_ns
            .iter()
            .copied()
            .min()
            .unwrap();
        assert!(greedy_free > 100_000 || kernel_end > 200_000);
        // ...but a copy launched on another queue right after runs in the gap.
        let (copy_start, copy_end) = tl.run_kernel(6, 0, info(), RecordDetail::Kernels, |run| {
            // A host copy, at the host link's rate.
            let link = run.profile().host_link_bytes_per_ns;
            let copy = cost::Transfer::contiguous(1 << 20);
            run.dma_spread_backfill(
                0,
                copy,
                DmaDirection::HostToDevice,
                run.start_ns,
                Some(link),
            );
        });
        assert!(
            copy_end < kernel_end,
            "copy {copy_start}..{copy_end}, kernel ends {kernel_end}"
        );
    }

    #[test]
    fn a_host_copy_under_busy_engines_moves_at_the_link_rate() {
        let mut tl = Timeline::new(Arc::new(DeviceProfile::trn2()), 0);
        // Compute whose loads keep every engine of core 0 busy 2 µs in every 12 µs
        // (a matmul streaming tiles): no gap is as long as a host copy's piece.
        let (_, kernel_end) = tl.run_kernel(0, 0, info(), RecordDetail::Kernels, |run| {
            let tile = cost::Transfer::rows(128, 16 * 1024);
            let dma = runtime_hooks::name!("dma");
            let mut ready = 0;
            for _ in 0..400 {
                let loaded =
                    run.dma_spread_named(0, tile, DmaDirection::DeviceToDevice, ready, dma);
                ready = run.exec(0, Engine::Tensor, 10_000.0, loaded, NameId::NONE, 0);
            }
        });
        let link = tl.profile.host_link_bytes_per_ns;
        let bytes = 64u64 << 20;
        let cores = tl.core_count() as f64;
        let (copy_start, copy_end) = tl.run_kernel(6, 0, info(), RecordDetail::Kernels, |run| {
            let copy = cost::Transfer::contiguous(bytes / cores as u64);
            let share = Some(link / cores);
            run.dma_spread_backfill(0, copy, DmaDirection::HostToDevice, run.start_ns, share);
        });
        // The link, not the engines, bounds it: a piece waiting on the link leaves its
        // engine to the compute's loads, and its descriptors go between them, so the copy
        // is not held until the compute ends (it was, 11.4 ms, when a piece needed one
        // gap as long as itself). It is slower than the link alone (1.13× here) by the
        // descriptors that wait for an engine.
        let link_ns = bytes as f64 / cores / (link / cores);
        let took = (copy_end - copy_start) as f64;
        assert!(
            took < 1.25 * link_ns && copy_end < kernel_end,
            "copy {copy_start}..{copy_end} ({took} ns, link alone {link_ns} ns), compute ends {kernel_end}"
        );
    }
}
