//! Lowering kernels to engine instructions (hw.md cost rules).
//!
//! Two shapes of kernel cover every op:
//! - [`RowPlan`]: rows on the 128 SBUF partitions, a tile is up to 128 rows; per tile the
//!   inputs are loaded by DMA (spread over the core's DMA engines), a chain of compute
//!   stages runs on VectorE/ScalarE/GpSimdE/TensorE, and the result is stored by DMA.
//!   Tiles are multi-buffered: the loads of tile `t` wait only for the compute of tile
//!   `t - 3`, so DMA overlaps compute. Tiles alternate between the physical cores of a
//!   logical core.
//! - [`MatmulPlan`]: output tiles of 128 rows (the stationary edge) and all N columns
//!   (held in PSUM, 512 columns per moving pass). For each 128-deep slice of K the
//!   stationary tile is loaded and one moving pass per 512 columns issues; PSUM is then
//!   evacuated by VectorE and stored by DMA. Input traffic assumes the RHS stays in
//!   SBUF when it fits in half of it; otherwise the LHS is re-read once per SBUF-sized
//!   block of RHS columns.

use runtime_hooks::{DmaDirection, NameId};

use super::{cost, Engine, KernelRun};

/// Elements per partition per tile when rows are flattened elementwise data.
pub(crate) const FLAT_FREE: u64 = 2048;

/// SBUF buffers per input of a row kernel: loads of tile `t` wait for the compute of
/// tile `t - ROW_BUFFERS` (3 × 3 tiles of 8 KiB per partition fit well within SBUF).
const ROW_BUFFERS: usize = 3;
/// Buffers of a matmul's per-step input slices (each at most a few hundred KiB, so
/// eight stay far below SBUF).
const MATMUL_BUFFERS: usize = 8;

/// When each of a ring of SBUF buffers becomes free (compute ends of the last tiles).
#[derive(Debug, Clone)]
struct Buffers {
    free_ns: std::collections::VecDeque<u64>,
}

impl Buffers {
    fn new(count: usize, start_ns: u64) -> Self {
        Buffers {
            free_ns: std::iter::repeat_n(start_ns, count).collect(),
        }
    }

    /// When the oldest buffer is free for the next load.
    fn free_at(&self) -> u64 {
        self.free_ns[0]
    }

    /// The next tile's compute, ending at `end_ns`, frees its buffer then.
    fn push(&mut self, end_ns: u64) {
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

/// A kernel over `rows × cols` with per-row loads and stores.
#[derive(Debug, Clone)]
pub(crate) struct RowPlan {
    pub(crate) rows: u64,
    pub(crate) cols: u64,
    /// Bytes loaded per row, one entry per streamed input.
    pub(crate) load_bytes_per_row: Vec<u64>,
    /// Bytes loaded once per core before the first tile (broadcast parameters).
    pub(crate) const_bytes: u64,
    /// Bytes stored per row.
    pub(crate) store_bytes_per_row: u64,
    pub(crate) stages: Vec<Stage>,
    /// Whether the data is 16-bit (VectorE/ScalarE rates).
    pub(crate) sixteen_bit: bool,
    pub(crate) direction: DmaDirection,
}

impl RowPlan {
    /// A plan for `elements` flattened into rows of [`FLAT_FREE`] elements.
    pub(crate) fn flat(elements: u64, stages: Vec<Stage>, sixteen_bit: bool) -> Self {
        let cols = elements.clamp(1, FLAT_FREE);
        RowPlan {
            rows: elements.div_ceil(cols).max(1),
            cols,
            load_bytes_per_row: Vec::new(),
            const_bytes: 0,
            store_bytes_per_row: 0,
            stages,
            sixteen_bit,
            direction: DmaDirection::DeviceToDevice,
        }
    }

    /// Adds a streamed input of `elem_bytes` per element.
    pub(crate) fn load(mut self, elem_bytes: u64) -> Self {
        self.load_bytes_per_row.push(self.cols * elem_bytes);
        self
    }

    /// Sets the output to `elem_bytes` per element (`cols` elements per row).
    pub(crate) fn store(mut self, elem_bytes: u64) -> Self {
        self.store_bytes_per_row = self.cols * elem_bytes;
        self
    }

    pub(crate) fn lower(&self, run: &mut KernelRun<'_>) {
        let partitions = u64::from(run.profile().sbuf_partitions);
        let cores = run.core_count();
        let tiles = self.rows.div_ceil(partitions);
        let mut const_ready = vec![run.start_ns; cores];
        if self.const_bytes > 0 {
            for (core, ready) in const_ready.iter_mut().enumerate() {
                *ready = run.dma_spread(core, self.const_bytes, self.direction, run.start_ns);
            }
        }
        let mut done = vec![Buffers::new(ROW_BUFFERS, run.start_ns); cores];
        let mut pending_store: Vec<Option<(usize, u64, u64)>> = vec![None; cores];
        for tile in 0..tiles {
            let core = (tile % cores as u64) as usize;
            let rows = partitions.min(self.rows - tile * partitions);
            let buffer_free = done[core].free_at();
            let mut ready = const_ready[core];
            for bytes_per_row in &self.load_bytes_per_row {
                let loaded =
                    run.dma_spread(core, bytes_per_row * rows, self.direction, buffer_free);
                ready = ready.max(loaded);
            }
            for stage in &self.stages {
                let profile = run.profile();
                let nominal = match stage.engine {
                    Engine::Vector => {
                        cost::vector_ns(profile, self.cols, stage.inputs, self.sixteen_bit)
                    }
                    Engine::Scalar => cost::scalar_ns(profile, self.cols, self.sixteen_bit),
                    Engine::GpSimd => cost::gpsimd_ns(profile, self.cols * rows),
                    Engine::Tensor => {
                        let passes = self.cols.div_ceil(u64::from(profile.tensor_array_dim));
                        passes as f64
                            * cost::tensor_pass_ns(
                                profile,
                                u64::from(profile.tensor_array_dim),
                                if self.sixteen_bit {
                                    cost::Precision::Bf16
                                } else {
                                    cost::Precision::Fp32
                                },
                            )
                    }
                };
                let flops = stage.flops_per_elem * self.cols * rows;
                ready = run.exec(core, stage.engine, nominal, ready, stage.name_id, flops);
            }
            done[core].push(ready);
            // Software pipelining: the store is issued after the next tile's loads,
            // whose data is ready earlier, so DMA engines are used in time order.
            if let Some((core, bytes, ready)) = pending_store[core].take() {
                run.dma_spread(core, bytes, self.direction, ready);
            }
            if self.store_bytes_per_row > 0 {
                pending_store[core] = Some((core, self.store_bytes_per_row * rows, ready));
            }
        }
        for (core, bytes, ready) in pending_store.into_iter().flatten() {
            run.dma_spread(core, bytes, self.direction, ready);
        }
    }
}

/// A (batched) matmul `[batch, m, k] × [k, n]` (RHS shared or per batch).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MatmulPlan {
    pub(crate) batch: u64,
    pub(crate) m: u64,
    pub(crate) k: u64,
    pub(crate) n: u64,
    pub(crate) elem_bytes: u64,
    /// Bytes per output element.
    pub(crate) out_elem_bytes: u64,
    pub(crate) precision: cost::Precision,
    /// Whether every batch has its own RHS (batched matmul) or all share one (linear).
    pub(crate) rhs_per_batch: bool,
    /// Whether a bias row is added while evacuating PSUM.
    pub(crate) bias: bool,
}

impl MatmulPlan {
    pub(crate) fn lower(&self, run: &mut KernelRun<'_>) {
        let profile = run.profile().clone();
        let dim = u64::from(profile.tensor_array_dim);
        let moving_max = u64::from(profile.tensor_moving_free_max);
        let cores = run.core_count() as u64;
        let m_tiles = self.m.div_ceil(dim).max(1);
        let k_tiles = self.k.div_ceil(dim).max(1);
        let n_chunks = self.n.div_ceil(moving_max).max(1);
        let units = self.batch * m_tiles;
        let eb = self.elem_bytes;
        let rhs_bytes = self.k * self.n * eb;
        let lhs_bytes = self.batch * self.m * self.k * eb;
        let rhs_copies = if self.rhs_per_batch {
            self.batch
        } else {
            cores.min(units)
        };
        let sbuf_budget = profile.sbuf_bytes / 2;
        let lhs_rereads = rhs_bytes.div_ceil(sbuf_budget).max(1);
        let load_total = lhs_bytes * lhs_rereads + rhs_bytes * rhs_copies;
        let steps = units * k_tiles;
        let step_load = load_total.div_ceil(steps);
        let pass_name = runtime_hooks::name!("matmul");
        let load_name = runtime_hooks::name!("load_stationary");
        let evac_name = if self.bias {
            runtime_hooks::name!("psum_bias_add")
        } else {
            runtime_hooks::name!("psum_copy")
        };
        let direction = DmaDirection::DeviceToDevice;
        let mut done = vec![Buffers::new(MATMUL_BUFFERS, run.start_ns); cores as usize];
        let mut pending_store: Vec<Option<(u64, u64)>> = vec![None; cores as usize];
        for unit in 0..units {
            let core = (unit % cores) as usize;
            let rows = dim.min(self.m - (unit % m_tiles) * dim).max(1);
            let mut last_pass = run.start_ns;
            for kt in 0..k_tiles {
                let depth = dim.min(self.k - kt * dim).max(1);
                let loaded = run.dma_spread(core, step_load, direction, done[core].free_at());
                // The previous unit's output goes out once the loads issued so far are
                // ready no earlier than it: DMA engines take work in issue order, so a
                // store issued ahead of earlier-ready loads would hold them up.
                if let Some((bytes, ready)) = pending_store[core] {
                    if done[core].free_at() >= ready {
                        pending_store[core] = None;
                        run.dma_spread(core, bytes, direction, ready);
                    }
                }
                let stationary = cost::tensor_stationary_ns(&profile);
                let mut ready = run.exec(core, Engine::Tensor, stationary, loaded, load_name, 0);
                for chunk in 0..n_chunks {
                    let cols = moving_max.min(self.n - chunk * moving_max).max(1);
                    let pass = cost::tensor_pass_ns(&profile, cols, self.precision);
                    let flops = 2 * rows * depth * cols;
                    ready = run.exec(core, Engine::Tensor, pass, ready, pass_name, flops);
                }
                done[core].push(ready);
                last_pass = ready;
            }
            let inputs = if self.bias { 2 } else { 1 };
            let evac = cost::vector_ns(
                &profile,
                self.n,
                inputs,
                self.precision != cost::Precision::Fp32,
            );
            let flops = if self.bias { rows * self.n } else { 0 };
            let evacuated = run.exec(core, Engine::Vector, evac, last_pass, evac_name, flops);
            if let Some((bytes, ready)) = pending_store[core].take() {
                run.dma_spread(core, bytes, direction, ready);
            }
            pending_store[core] = Some((rows * self.n * self.out_elem_bytes, evacuated));
        }
        for (core, pending) in pending_store.into_iter().enumerate() {
            if let Some((bytes, ready)) = pending {
                run.dma_spread(core, bytes, direction, ready);
            }
        }
    }
}

/// A plain copy of `bytes` (host↔device or device↔device) through the DMA engines,
/// split between the physical cores; its pieces fill the engines' idle gaps
/// (`timing/backfill.rs`), so a copy on one stream runs under compute queued on
/// another. hw.md gives no figure for the host link, so host copies are modeled with the
/// DMA engines' own figures.
pub(crate) fn copy(run: &mut KernelRun<'_>, bytes: u64, direction: DmaDirection) {
    let cores = run.core_count() as u64;
    let start = run.start_ns;
    for core in 0..cores {
        let share = bytes / cores + u64::from(core < bytes % cores);
        if share > 0 || core == 0 {
            run.dma_spread_backfill(core as usize, share.max(1), direction, start);
        }
    }
}
