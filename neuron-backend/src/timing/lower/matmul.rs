//! Matmul kernels on TensorE within PSUM and SBUF capacity.

use runtime_hooks::DmaDirection;

use super::{cost, Buffers, Engine, KernelRun, Stage};

/// LHS panels of one core in SBUF at once: the next unit's loads overlap the current
/// unit's passes.
const LHS_BUFFERS: u64 = 2;

/// The stationary loads of one physical core's TensorE in a kernel. TensorE loads the
/// next stationary tile in the background while the moving passes of the current one
/// run (NKI architecture guide, "Background LoadStationary"), so a load costs time only
/// where it outlasts those passes or has nothing to run behind (the first load of a
/// kernel, or one whose operand arrived after the array went idle): the exposed part is
/// an instruction on TensorE; a load hidden whole has no instruction of its own.
#[derive(Debug, Clone, Copy, Default)]
struct StationaryLoads {
    /// When the current stationary's moving passes began and ended.
    passes: Option<(u64, u64)>,
}

impl StationaryLoads {
    /// Loads a stationary tile taking `load_ns` whose operand is in SBUF at `input_ns`;
    /// returns when it is in the array.
    fn load(
        &mut self,
        run: &mut KernelRun<'_>,
        core: usize,
        load_ns: f64,
        input_ns: u64,
        name: runtime_hooks::NameId,
    ) -> u64 {
        match self.passes {
            // The array's second stationary buffer frees when the current passes begin.
            Some((start, end)) if input_ns <= end => {
                let loaded = input_ns.max(start) + load_ns.round() as u64;
                if loaded > end {
                    run.exec(core, Engine::Tensor, (loaded - end) as f64, end, name, 0)
                } else {
                    loaded
                }
            }
            _ => run.exec(core, Engine::Tensor, load_ns, input_ns, name, 0),
        }
    }

    /// When the last moving passes ended (the kernel's start before any).
    fn passes_end(&self) -> u64 {
        self.passes.map_or(0, |(_, end)| end)
    }

    /// The moving passes on the stationary just loaded ran from `start` to `end`.
    fn passes(&mut self, start: u64, end: u64) {
        self.passes = Some((start, end));
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

/// Elementwise work fused into a matmul's PSUM evacuation (a compiled graph's epilogue
/// fusion, `external/program.rs`): after each output tile is evacuated from PSUM to
/// SBUF, the fused nodes' stages run on that tile where it lies (their other streamed
/// operands loaded per tile), and only what the graph still needs is stored.
#[derive(Debug, Clone, Default)]
pub(crate) struct Epilogue {
    /// The fused nodes' stages, in order, each over the whole tile.
    pub(crate) stages: Vec<Stage>,
    /// Whether every fused node's data is 16-bit (VectorE/ScalarE rates).
    pub(crate) sixteen_bit: bool,
    /// Other operands streamed per output element, bytes per element each.
    pub(crate) loads_per_elem: Vec<u64>,
    /// Broadcast operands (a scalar, a bias row), loaded once per core before the first
    /// tile, spread over the partitions (as a row pass's).
    pub(crate) const_bytes: u64,
    /// Bytes stored per output element (the results the graph still needs: the matmul's
    /// own and the fused nodes'; 0 stores nothing).
    pub(crate) store_per_elem: u64,
}

/// How a matmul is tiled to fit PSUM and SBUF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tiling {
    /// Output columns accumulated in PSUM at once (half of its banks, so the other half
    /// can be evacuated meanwhile).
    pub(crate) group_cols: u64,
    /// RHS columns resident in SBUF at once (a multiple of `group_cols`).
    pub(crate) block_cols: u64,
}

impl MatmulPlan {
    /// The tiling on `profile`: PSUM groups of half the banks, RHS blocks that fit one
    /// partition's SBUF beside two LHS panels and two output groups.
    #[cfg(test)]
    pub(crate) fn tiling(&self, profile: &crate::DeviceProfile) -> Tiling {
        self.tiling_with(profile, None)
    }

    /// The tiling with an epilogue's operand tiles beside each output group.
    fn tiling_with(&self, profile: &crate::DeviceProfile, epilogue: Option<&Epilogue>) -> Tiling {
        let moving_max = u64::from(profile.tensor_moving_free_max);
        // Accumulators are FP32 (4 bytes) whatever the inputs.
        let bank_cols = (profile.psum_bank_bytes_per_partition() / 4).max(1);
        let group_banks = (u64::from(profile.psum_banks) / 2).max(1);
        let group_cols = self.n.min(group_banks * bank_cols).max(1);
        let partition = profile.sbuf_bytes_per_partition();
        let lhs_panel = self.k * self.elem_bytes;
        let epilogue_loads: u64 = epilogue.map_or(0, |e| e.loads_per_elem.iter().sum());
        let out_groups = 2 * group_cols * (self.out_elem_bytes + epilogue_loads);
        let room = partition.saturating_sub(LHS_BUFFERS * lhs_panel + out_groups);
        let k_tiles = self.k.div_ceil(u64::from(profile.tensor_array_dim)).max(1);
        // Per partition the RHS holds k_tiles rows of every resident column.
        let fit_cols = room / (k_tiles * self.elem_bytes).max(1);
        let block_cols = if fit_cols >= self.n {
            self.n
        } else {
            // Whole groups where possible, at least one moving pass's columns.
            (fit_cols / group_cols * group_cols).max(moving_max.min(self.n))
        };
        Tiling {
            group_cols,
            block_cols: block_cols.max(1),
        }
    }

    pub(crate) fn lower(&self, run: &mut KernelRun<'_>) {
        self.lower_with(run, None);
    }

    /// [`MatmulPlan::lower`] with `epilogue`'s work on every evacuated output tile.
    pub(crate) fn lower_with(&self, run: &mut KernelRun<'_>, epilogue: Option<&Epilogue>) {
        let profile = run.profile().clone();
        let dim = u64::from(profile.tensor_array_dim);
        let moving_max = u64::from(profile.tensor_moving_free_max);
        let cores = run.core_count() as u64;
        let m_tiles = self.m.div_ceil(dim).max(1);
        let k_tiles = self.k.div_ceil(dim).max(1);
        let tiling = self.tiling_with(&profile, epilogue);
        let blocks = self.n.div_ceil(tiling.block_cols).max(1);
        let eb = self.elem_bytes;
        let pass_name = runtime_hooks::name!("matmul");
        let load_name = runtime_hooks::name!("load_stationary");
        let evac_name = if self.bias {
            runtime_hooks::name!("psum_bias_add")
        } else {
            runtime_hooks::name!("psum_copy")
        };
        let (dma, reload) = (
            runtime_hooks::name!("dma"),
            runtime_hooks::name!("dma_reload"),
        );
        let direction = DmaDirection::DeviceToDevice;
        let start = run.start_ns;
        let mut const_ready = vec![start; cores as usize];
        if let Some(e) = epilogue.filter(|e| e.const_bytes > 0) {
            let partitions = u64::from(profile.sbuf_partitions);
            let rows = partitions.min(e.const_bytes).max(1);
            let transfer = cost::Transfer::rows(rows, e.const_bytes.div_ceil(rows));
            for (core, ready) in const_ready.iter_mut().enumerate() {
                *ready = run.dma_spread(core, transfer, DmaDirection::DeviceToDevice, start);
            }
        }
        let mut lhs = vec![Buffers::new(LHS_BUFFERS as usize, start); cores as usize];
        let mut stationary = vec![StationaryLoads::default(); cores as usize];
        let mut psum = vec![Buffers::new(2, start); cores as usize];
        let mut pending_store: Vec<Option<(cost::Transfer, u64)>> = vec![None; cores as usize];
        // RHS residency: which (batch, block) each core holds, and when each k-tile of
        // it arrived.
        let mut resident: Vec<Option<(u64, u64)>> = vec![None; cores as usize];
        let mut rhs_ready: Vec<Vec<u64>> = vec![vec![start; k_tiles as usize]; cores as usize];
        let rhs_batches = if self.rhs_per_batch { self.batch } else { 1 };
        let mut unit = 0u64;
        for rhs_batch in 0..rhs_batches {
            let batches = if self.rhs_per_batch { 1 } else { self.batch };
            for block in 0..blocks {
                let block_start = block * tiling.block_cols;
                let block_cols = tiling.block_cols.min(self.n - block_start);
                for _ in 0..batches {
                    for mt in 0..m_tiles {
                        let core = (unit % cores) as usize;
                        unit += 1;
                        let rows = dim.min(self.m - mt * dim).max(1);
                        if resident[core] != Some((rhs_batch, block)) {
                            // Load this RHS block, one k-tile at a time, after the
                            // passes of the previous block are done with its buffer.
                            let free = lhs[core].free_at();
                            for kt in 0..k_tiles {
                                let depth = dim.min(self.k - kt * dim).max(1);
                                let transfer = cost::Transfer::rows(depth, block_cols * eb);
                                rhs_ready[core][kt as usize] =
                                    run.dma_spread(core, transfer, direction, free);
                            }
                            resident[core] = Some((rhs_batch, block));
                        }
                        // The LHS panel: `rows` rows of the whole K; reloaded for every
                        // RHS block after the first.
                        let name = if block == 0 { dma } else { reload };
                        let panel = cost::Transfer::rows(rows, self.k * eb);
                        let lhs_loaded =
                            run.dma_spread_named(core, panel, direction, lhs[core].free_at(), name);
                        // The previous unit's output goes out once this unit's loads
                        // are issued: DMA engines take work in issue order.
                        if let Some((transfer, ready)) = pending_store[core].take() {
                            run.dma_spread(core, transfer, direction, ready);
                        }
                        let mut last_pass = lhs_loaded;
                        let groups = block_cols.div_ceil(tiling.group_cols);
                        for group in 0..groups {
                            let group_start = group * tiling.group_cols;
                            let cols = tiling.group_cols.min(block_cols - group_start);
                            let psum_free = psum[core].free_at();
                            // The passes write PSUM (a free group) and read the RHS
                            // k-tile; the stationary load needs only the LHS panel.
                            let mut ready = psum_free;
                            let load = cost::tensor_stationary_ns(&profile, rows, self.precision);
                            for kt in 0..k_tiles {
                                let depth = dim.min(self.k - kt * dim).max(1);
                                let loaded =
                                    stationary[core].load(run, core, load, lhs_loaded, load_name);
                                ready = ready.max(loaded).max(rhs_ready[core][kt as usize]);
                                // The array runs one instruction at a time.
                                let passes_start = ready.max(stationary[core].passes_end());
                                let chunks = cols.div_ceil(moving_max);
                                for chunk in 0..chunks {
                                    let c = moving_max.min(cols - chunk * moving_max).max(1);
                                    let pass = cost::tensor_pass_ns(&profile, c, self.precision);
                                    let flops = 2 * rows * depth * c;
                                    ready = run.exec(
                                        core,
                                        Engine::Tensor,
                                        pass,
                                        ready,
                                        pass_name,
                                        flops,
                                    );
                                }
                                stationary[core].passes(passes_start, ready);
                            }
                            last_pass = ready;
                            let inputs = if self.bias { 2 } else { 1 };
                            let evac = cost::vector_ns(
                                &profile,
                                cols,
                                inputs,
                                self.precision != cost::Precision::Fp32,
                            );
                            let flops = if self.bias { rows * cols } else { 0 };
                            let evacuated =
                                run.exec(core, Engine::Vector, evac, ready, evac_name, flops);
                            psum[core].push(evacuated);
                            let mut done = evacuated;
                            let mut store_per_elem = self.out_elem_bytes;
                            if let Some(e) = epilogue {
                                done = done.max(const_ready[core]);
                                for &bytes in &e.loads_per_elem {
                                    let operand = cost::Transfer::rows(rows, cols * bytes);
                                    let loaded =
                                        run.dma_spread(core, operand, direction, lhs_loaded);
                                    done = done.max(loaded);
                                }
                                for stage in &e.stages {
                                    let nominal = super::rows::stage_ns(
                                        &profile,
                                        stage,
                                        cols,
                                        rows,
                                        e.sixteen_bit,
                                    );
                                    let flops = stage.flops_per_elem * cols * rows;
                                    done = run.exec(
                                        core,
                                        stage.engine,
                                        nominal,
                                        done,
                                        stage.name_id,
                                        flops,
                                    );
                                }
                                store_per_elem = e.store_per_elem;
                            }
                            if let Some((transfer, ready)) = pending_store[core].take() {
                                run.dma_spread(core, transfer, direction, ready);
                            }
                            if store_per_elem > 0 {
                                let out = cost::Transfer::rows(rows, cols * store_per_elem);
                                pending_store[core] = Some((out, done));
                            }
                        }
                        lhs[core].push(last_pass);
                    }
                }
            }
        }
        for (core, pending) in pending_store.into_iter().enumerate() {
            if let Some((transfer, ready)) = pending {
                run.dma_spread(core, transfer, direction, ready);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(m: u64, k: u64, n: u64) -> MatmulPlan {
        MatmulPlan {
            batch: 1,
            m,
            k,
            n,
            elem_bytes: 2,
            out_elem_bytes: 2,
            precision: cost::Precision::Bf16,
            rhs_per_batch: false,
            bias: false,
        }
    }

    #[test]
    fn psum_groups_hold_half_the_banks_and_sbuf_blocks_the_rhs() {
        let p = crate::DeviceProfile::trn2();
        // 8 banks × 512 FP32: groups of 2048 columns.
        assert_eq!(
            plan(512, 512, 512).tiling(&p),
            Tiling {
                group_cols: 512,
                block_cols: 512
            }
        );
        assert_eq!(plan(512, 512, 8192).tiling(&p).group_cols, 2048);
        assert_eq!(
            plan(512, 512, 8192).tiling(&p).block_cols,
            8192,
            "fits SBUF"
        );
        // Llama's MLP: K 4096 (32 k-tiles), N 14336 bf16 = 896 KiB per partition: blocks.
        let t = plan(4096, 4096, 14336).tiling(&p);
        assert_eq!(t.group_cols, 2048);
        assert!(
            t.block_cols < 14336 && t.block_cols.is_multiple_of(2048),
            "{t:?}"
        );
    }
}
