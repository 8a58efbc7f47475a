//! Lowering kernels to engine instructions (docs/HARDWARE.md, "Instruction cost rules").
//!
//! Two shapes of kernel cover every op, plus copies:
//! - [`RowPlan`] (`lower/rows.rs`): rows on the 128 SBUF partitions, a tile is up to 128
//!   rows; per tile the inputs are loaded by DMA (spread over the core's DMA engines), a
//!   chain of compute stages runs on VectorE/ScalarE/GpSimdE/TensorE, and the result is
//!   stored by DMA. Tiles are multi-buffered as far as SBUF holds them, so DMA overlaps
//!   compute; a row longer than a partition's SBUF is cut into chunks, and a kernel of
//!   several stages then runs one pass per stage, spilling its intermediate to HBM and
//!   reloading it (`dma_spill`, `dma_reload` transfers). Tiles alternate between the
//!   physical cores of a logical core.
//! - [`MatmulPlan`] (`lower/matmul.rs`): output tiles of 128 rows (the stationary edge)
//!   and column groups that fit half of PSUM (4 banks of 512 FP32 accumulators per
//!   partition), so one group accumulates while the other is evacuated. For each group
//!   and each 128-deep slice of K the stationary tile is loaded and one moving pass per
//!   512 columns issues; VectorE evacuates the group and DMA stores it. The RHS stays in
//!   SBUF in column blocks that fit beside the LHS panels; with more than one block the
//!   LHS is reloaded once per block (`dma_reload`).
//! - [`copy`]: host↔device copies through the DMA engines at the host link's rate,
//!   device↔device copies at the engines' rate.

mod matmul;
mod rows;

pub(crate) use matmul::{Epilogue, MatmulPlan};
pub(crate) use rows::{reduction_passes, RowPlan, FLAT_FREE};

use runtime_hooks::{DmaDirection, NameId};

use super::{cost, Engine, KernelRun};

/// When each of a ring of buffers (SBUF tiles, PSUM groups) becomes free.
#[derive(Debug, Clone)]
pub(super) struct Buffers {
    free_ns: std::collections::VecDeque<u64>,
}

impl Buffers {
    pub(super) fn new(count: usize, start_ns: u64) -> Self {
        Buffers {
            free_ns: std::iter::repeat_n(start_ns, count.max(1)).collect(),
        }
    }

    /// When the oldest buffer is free for the next use.
    pub(super) fn free_at(&self) -> u64 {
        self.free_ns[0]
    }

    /// The next use, ending at `end_ns`, frees its buffer then.
    pub(super) fn push(&mut self, end_ns: u64) {
        self.free_ns.pop_front();
        self.free_ns.push_back(end_ns);
    }
}

/// One compute stage of a row kernel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stage {
    pub(crate) engine: Engine,
    /// Input tiles the instruction reads (VectorE cost), at least 1.
    pub(crate) inputs: u32,
    pub(crate) name_id: NameId,
    /// FLOP per element of the tile.
    pub(crate) flops_per_elem: u64,
}

impl Stage {
    pub(crate) fn new(engine: Engine, inputs: u32, name_id: NameId) -> Self {
        Stage {
            engine,
            inputs,
            name_id,
            flops_per_elem: 1,
        }
    }
}

/// A plain copy of `bytes` (host↔device or device↔device) through the DMA engines,
/// split between the physical cores; its pieces fill the engines' idle gaps
/// (`timing/backfill.rs`), so a copy on one stream runs under compute queued on
/// another. A copy to or from the host moves at the host link's rate
/// (`host_link_bytes_per_ns`, an assumption: docs/HARDWARE.md Host link), shared by the
/// pieces in flight on every core; a device copy at the engines' own rate.
pub(crate) fn copy(run: &mut KernelRun<'_>, bytes: u64, direction: DmaDirection) {
    let cores = run.core_count() as u64;
    let start = run.start_ns;
    let host = matches!(
        direction,
        DmaDirection::HostToDevice | DmaDirection::DeviceToHost
    );
    // The chip's host link is the bottleneck of a host copy: each core's share of it.
    let link = host.then(|| run.profile().host_link_bytes_per_ns / cores as f64);
    for core in 0..cores {
        let share = bytes / cores + u64::from(core < bytes % cores);
        if share > 0 || core == 0 {
            let transfer = cost::Transfer::contiguous(share.max(1));
            run.dma_spread_backfill(core as usize, transfer, direction, start, link);
        }
    }
}
