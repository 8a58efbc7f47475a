//! Row kernels: rows on SBUF partitions, a chain of compute stages per tile, within the
//! partition's SBUF capacity.

use runtime_hooks::{DmaDirection, NameId};

use super::{cost, Buffers, Engine, KernelRun, Stage};

/// Elements per partition per tile when rows are flattened elementwise data.
pub(crate) const FLAT_FREE: u64 = 2048;

/// Partitions a reduction of few long rows is spread over (one core's).
const REDUCTION_PARTITIONS: u64 = 128;

/// The passes of a reduction to `rows` results of `cols` elements each (`in_eb` bytes
/// an element read, `out_eb` bytes a result stored), each pass running `stage`, where
/// consecutive elements of one result lie `inner` apart (1: the reduced dimension is
/// the innermost), tiled as a compiler tiles them:
/// - `inner` > 1 (say a sum over the batch): the results are contiguous runs of `inner`,
///   so each partition row accumulates a run of results elementwise over the `cols`
///   slices, enough results a row to fill the partitions (up to [`FLAT_FREE`] elements
///   read a row; the slices of a row are costed as one contiguous load). Kept as one
///   result a partition row, an 8-slice sum of 16 Ki results read 32 B rows and ran
///   8 elements an instruction: 11× slower;
/// - whole rows on the partitions when there are as many rows as partitions or the rows
///   are short ([`FLAT_FREE`] elements at most);
/// - otherwise each row is cut over the partitions into 4-byte partial results, then a
///   second pass reduces across them. (Cut only as far as SBUF needs, the one row of a
///   1 MiB sum of all elements ran on 6 partitions of 128, 5× slower.)
///
/// The native reductions (`ops/reduce.rs`) and the PyTorch path's
/// (`external/describe.rs`, which passes `inner` 1: it sees shapes, not which dimension
/// is reduced) use it alike.
pub(crate) fn reduction_passes(
    rows: u64,
    cols: u64,
    inner: u64,
    (in_eb, out_eb): (u64, u64),
    stage: Stage,
    sixteen_bit: bool,
) -> Vec<RowPlan> {
    let (rows, cols) = (rows.max(1), cols.max(1));
    let pass = |rows: u64, cols: u64, in_eb: u64, store: u64, sixteen_bit: bool| RowPlan {
        rows,
        cols,
        load_bytes_per_row: vec![cols * in_eb],
        const_bytes: 0,
        store_bytes_per_row: store,
        stages: vec![stage],
        sixteen_bit,
        direction: DmaDirection::DeviceToDevice,
    };
    if inner > 1 {
        let per_row = rows
            .div_ceil(REDUCTION_PARTITIONS)
            .clamp(1, (FLAT_FREE / cols).max(1))
            .min(inner);
        return vec![pass(
            rows.div_ceil(per_row),
            per_row * cols,
            in_eb,
            per_row * out_eb,
            sixteen_bit,
        )];
    }
    if rows >= REDUCTION_PARTITIONS || cols <= FLAT_FREE {
        return vec![pass(rows, cols, in_eb, out_eb, sixteen_bit)];
    }
    let parts = (REDUCTION_PARTITIONS / rows).clamp(1, cols.div_ceil(FLAT_FREE));
    vec![
        pass(rows * parts, cols.div_ceil(parts), in_eb, 4, sixteen_bit),
        pass(rows, parts, 4, out_eb, false),
    ]
}

/// SBUF buffers per input of a row kernel when they fit: loads of tile `t` wait for the
/// compute of tile `t - ROW_BUFFERS`.
const ROW_BUFFERS: u64 = 3;

/// A kernel over `rows × cols` with per-row loads and stores.
#[derive(Debug, Clone)]
pub(crate) struct RowPlan {
    pub(crate) rows: u64,
    pub(crate) cols: u64,
    /// Bytes loaded per row, one entry per streamed input.
    pub(crate) load_bytes_per_row: Vec<u64>,
    /// Bytes loaded once per core before the first tile (broadcast operands), spread
    /// over the partitions.
    pub(crate) const_bytes: u64,
    /// Bytes stored per row.
    pub(crate) store_bytes_per_row: u64,
    pub(crate) stages: Vec<Stage>,
    /// Whether the data is 16-bit (VectorE/ScalarE rates).
    pub(crate) sixteen_bit: bool,
    pub(crate) direction: DmaDirection,
}

/// How a row plan fits SBUF: buffers per tile, and chunks per row when a row does not
/// fit a partition even once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fit {
    pub(crate) buffers: u64,
    pub(crate) chunks: u64,
}

/// One pass over the rows: what it loads, runs and stores.
struct Pass<'a> {
    rows: u64,
    cols: u64,
    /// `(bytes per row, name)` of each load.
    loads: Vec<(u64, NameId)>,
    stages: &'a [Stage],
    /// `(bytes per row, name)` of the store, if any.
    store: Option<(u64, NameId)>,
    buffers: u64,
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

    /// How the plan fits a partition of `sbuf_bytes_per_partition`: as many buffers of
    /// a row's loads and store as fit (3 at most), else one buffer of a row cut into
    /// the fewest chunks that fit.
    pub(crate) fn fit(&self, sbuf_bytes_per_partition: u64, partitions: u64) -> Fit {
        // Broadcast operands stay resident, spread over the partitions; at most half a
        // partition is given to them (a larger one is streamed with the tiles instead,
        // which this model does not tell apart).
        let resident = self.const_bytes.div_ceil(partitions.max(1));
        let room = sbuf_bytes_per_partition
            .saturating_sub(resident.min(sbuf_bytes_per_partition / 2))
            .max(1);
        let per_buffer =
            (self.load_bytes_per_row.iter().sum::<u64>() + self.store_bytes_per_row).max(1);
        let buffers = (room / per_buffer).min(ROW_BUFFERS);
        if buffers >= 1 {
            Fit { buffers, chunks: 1 }
        } else {
            Fit {
                buffers: 1,
                chunks: per_buffer.div_ceil(room),
            }
        }
    }

    pub(crate) fn lower(&self, run: &mut KernelRun<'_>) {
        let partitions = u64::from(run.profile().sbuf_partitions);
        let fit = self.fit(run.profile().sbuf_bytes_per_partition(), partitions);
        let cores = run.core_count();
        let mut const_ready = vec![run.start_ns; cores];
        if self.const_bytes > 0 {
            let rows = partitions.min(self.const_bytes).max(1);
            let transfer = cost::Transfer::rows(rows, self.const_bytes.div_ceil(rows));
            for (core, ready) in const_ready.iter_mut().enumerate() {
                *ready = run.dma_spread(core, transfer, self.direction, run.start_ns);
            }
        }
        let dma = runtime_hooks::name!("dma");
        if fit.chunks == 1 {
            let loads = self.load_bytes_per_row.iter().map(|&b| (b, dma)).collect();
            let store = (self.store_bytes_per_row > 0).then_some((self.store_bytes_per_row, dma));
            let pass = Pass {
                rows: self.rows,
                cols: self.cols,
                loads,
                stages: &self.stages,
                store,
                buffers: fit.buffers,
            };
            self.run_pass(run, &pass, &const_ready);
            return;
        }
        // A row does not fit a partition: cut it into chunks (rows × chunks short rows);
        // with several stages each runs as its own pass over all chunks, the
        // intermediate spilled to HBM and reloaded by the next pass.
        let (spill, reload) = (
            runtime_hooks::name!("dma_spill"),
            runtime_hooks::name!("dma_reload"),
        );
        let chunks = fit.chunks;
        let chunk = |bytes: u64| bytes.div_ceil(chunks);
        let rows = self.rows * chunks;
        let cols = self.cols.div_ceil(chunks);
        // The intermediate between passes has the width of the first input.
        let between = chunk(
            self.load_bytes_per_row
                .first()
                .copied()
                .unwrap_or(self.store_bytes_per_row),
        );
        let last = self.stages.len().saturating_sub(1);
        let mut ready = const_ready;
        for (i, stage) in self.stages.iter().enumerate() {
            let name = if i == 0 { dma } else { reload };
            let mut loads: Vec<(u64, NameId)> = self
                .load_bytes_per_row
                .iter()
                .map(|&b| (chunk(b), name))
                .collect();
            if i > 0 {
                loads.push((between, reload));
            }
            let store = if i == last {
                (self.store_bytes_per_row > 0).then_some((chunk(self.store_bytes_per_row), dma))
            } else {
                Some((between, spill))
            };
            let pass = Pass {
                rows,
                cols,
                loads,
                stages: std::slice::from_ref(stage),
                store,
                buffers: 1,
            };
            let end = self.run_pass(run, &pass, &ready);
            ready = vec![end; ready.len()];
        }
    }

    /// Runs one pass over its rows; returns when its last instruction or transfer ends.
    fn run_pass(&self, run: &mut KernelRun<'_>, pass: &Pass<'_>, const_ready: &[u64]) -> u64 {
        let partitions = u64::from(run.profile().sbuf_partitions);
        let cores = run.core_count();
        let tiles = pass.rows.div_ceil(partitions);
        let mut done = vec![Buffers::new(pass.buffers as usize, run.start_ns); cores];
        let mut pending_store: Vec<Option<(cost::Transfer, u64, NameId)>> = vec![None; cores];
        let mut end_ns = const_ready.iter().copied().max().unwrap_or(run.start_ns);
        for tile in 0..tiles {
            let core = (tile % cores as u64) as usize;
            let rows = partitions.min(pass.rows - tile * partitions);
            let buffer_free = done[core].free_at().max(const_ready[core]);
            let mut ready = const_ready[core];
            for &(bytes_per_row, name) in &pass.loads {
                let transfer = cost::Transfer::rows(rows, bytes_per_row);
                let loaded =
                    run.dma_spread_named(core, transfer, self.direction, buffer_free, name);
                ready = ready.max(loaded);
            }
            for stage in pass.stages {
                let nominal = self.stage_ns(run, stage, pass.cols, rows);
                let flops = stage.flops_per_elem * pass.cols * rows;
                ready = run.exec(core, stage.engine, nominal, ready, stage.name_id, flops);
            }
            done[core].push(ready);
            end_ns = end_ns.max(ready);
            // Software pipelining: the store is issued after the next tile's loads,
            // whose data is ready earlier, so DMA engines are used in time order.
            if let Some((transfer, ready, name)) = pending_store[core].take() {
                let stored = run.dma_spread_named(core, transfer, self.direction, ready, name);
                end_ns = end_ns.max(stored);
            }
            if let Some((bytes_per_row, name)) = pass.store {
                pending_store[core] =
                    Some((cost::Transfer::rows(rows, bytes_per_row), ready, name));
            }
        }
        for (core, pending) in pending_store.into_iter().enumerate() {
            if let Some((transfer, ready, name)) = pending {
                let stored = run.dma_spread_named(core, transfer, self.direction, ready, name);
                end_ns = end_ns.max(stored);
            }
        }
        end_ns
    }

    /// The nominal time of `stage` over a tile of `rows × cols`.
    fn stage_ns(&self, run: &KernelRun<'_>, stage: &Stage, cols: u64, rows: u64) -> f64 {
        stage_ns(run.profile(), stage, cols, rows, self.sixteen_bit)
    }
}

/// The nominal time of `stage` over a tile of `rows` partitions × `cols` elements (a row
/// pass's tile, or a matmul's output tile in an epilogue).
pub(crate) fn stage_ns(
    profile: &crate::DeviceProfile,
    stage: &Stage,
    cols: u64,
    rows: u64,
    sixteen_bit: bool,
) -> f64 {
    match stage.engine {
        Engine::Vector => cost::vector_ns(profile, cols, stage.inputs, sixteen_bit),
        Engine::Scalar => cost::scalar_ns(profile, cols, sixteen_bit),
        Engine::GpSimd => cost::gpsimd_ns(profile, cols * rows, if sixteen_bit { 2 } else { 4 }),
        Engine::Tensor => {
            let passes = cols.div_ceil(u64::from(profile.tensor_array_dim));
            let precision = if sixteen_bit {
                cost::Precision::Bf16
            } else {
                cost::Precision::Fp32
            };
            passes as f64
                * cost::tensor_pass_ns(profile, u64::from(profile.tensor_array_dim), precision)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(cols: u64, inputs: usize, stages: usize) -> RowPlan {
        let stage = Stage::new(Engine::Vector, 1, runtime_hooks::NameId::NONE);
        let mut plan = RowPlan::flat(cols * 256, vec![stage; stages], false);
        plan.cols = cols;
        plan.rows = 256;
        for _ in 0..inputs {
            plan.load_bytes_per_row.push(cols * 4);
        }
        plan.store_bytes_per_row = cols * 4;
        plan
    }

    #[test]
    fn rows_that_fit_get_three_buffers_and_long_rows_are_chunked() {
        let fit = |plan: RowPlan| plan.fit(224 * 1024, 128);
        assert_eq!(
            fit(plan(2048, 2, 1)),
            Fit {
                buffers: 3,
                chunks: 1
            }
        );
        // 8192 f32 in, 8192 out: 64 KiB a buffer, three fit in 224 KiB.
        assert_eq!(
            fit(plan(8192, 1, 1)),
            Fit {
                buffers: 3,
                chunks: 1
            }
        );
        assert_eq!(
            fit(plan(16384, 1, 1)),
            Fit {
                buffers: 1,
                chunks: 1
            }
        );
        // A 128K-element f32 row (a Llama vocabulary) in and out: 1 MiB, 5 chunks.
        assert_eq!(
            fit(plan(128_256, 1, 2)),
            Fit {
                buffers: 1,
                chunks: 5
            }
        );
        // A broadcast operand of 256 KiB spreads over the partitions (2 KiB each).
        let mut broadcast = plan(2048, 2, 1);
        broadcast.const_bytes = 256 * 1024;
        assert_eq!(
            fit(broadcast),
            Fit {
                buffers: 3,
                chunks: 1
            }
        );
    }
}
