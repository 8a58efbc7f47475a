//! Shared machinery of row kernels: ops along one dimension (reductions, softmax,
//! normalizations), with rows on partitions and the dimension as the free axis.

use crate::dispatch::{self, common_device, Lowering, OpCall};
use crate::tensor::Values;
use crate::timing::lower::{reduction_passes, RowPlan, Stage};
use crate::{BackendError, DType, Tensor};

/// How a tensor splits around dimension `dim`: `outer × size × inner` elements.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lanes {
    pub(crate) outer: usize,
    pub(crate) size: usize,
    pub(crate) inner: usize,
}

impl Lanes {
    pub(crate) fn of(shape: &[usize], dim: usize) -> Self {
        Lanes {
            outer: shape[..dim].iter().product(),
            size: shape.get(dim).copied().unwrap_or(1),
            inner: shape[dim + 1..].iter().product(),
        }
    }

    /// Number of lanes (rows of the kernel).
    pub(crate) fn count(&self) -> usize {
        self.outer * self.inner
    }

    /// Calls `f(lane, base, stride)` for each lane: its elements are
    /// `base + j * stride` for `j < size`.
    pub(crate) fn for_each(&self, mut f: impl FnMut(usize, usize, usize)) {
        for o in 0..self.outer {
            for i in 0..self.inner {
                f(
                    o * self.inner + i,
                    o * self.size * self.inner + i,
                    self.inner,
                );
            }
        }
    }
}

/// One row kernel: what it reads, writes and runs.
#[derive(Debug)]
pub(crate) struct RowKernel<'a> {
    pub(crate) op: &'static str,
    pub(crate) kernel: &'static str,
    pub(crate) inputs: &'a [&'a Tensor],
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    /// Inputs streamed row by row (the others are loaded once).
    pub(crate) streamed: usize,
    pub(crate) outputs: Vec<(Vec<usize>, DType)>,
    /// Output bytes stored per row.
    pub(crate) store_bytes_per_row: u64,
    pub(crate) stages: Vec<Stage>,
    pub(crate) flops: u64,
}

impl RowKernel<'_> {
    /// Runs a gather: the first input (indices) streams, and each row also streams
    /// `cols × elem_bytes` gathered from the second input instead of loading it whole.
    pub(crate) fn run_gather(
        self,
        elem_bytes: u64,
        numerics: impl FnOnce(&[Values]) -> Result<Vec<Values>, BackendError>,
    ) -> Result<Vec<Tensor>, BackendError> {
        self.run_with(Some(elem_bytes), numerics)
    }

    pub(crate) fn run(
        self,
        numerics: impl FnOnce(&[Values]) -> Result<Vec<Values>, BackendError>,
    ) -> Result<Vec<Tensor>, BackendError> {
        self.run_with(None, numerics)
    }

    /// Runs a reduction of each row to one result, its elements `inner` apart: its
    /// first stage over the streamed input, tiled by [`reduction_passes`] (results
    /// accumulated in contiguous runs, or a few long rows cut over the partitions and
    /// their partial results reduced in a second pass).
    pub(crate) fn run_reduction(
        self,
        inner: usize,
        numerics: impl FnOnce(&[Values]) -> Result<Vec<Values>, BackendError>,
    ) -> Result<Vec<Tensor>, BackendError> {
        let dtype = self.inputs[0].dtype;
        let passes = reduction_passes(
            self.rows as u64,
            self.cols as u64,
            inner as u64,
            (dtype.size_bytes(), self.store_bytes_per_row),
            self.stages[0],
            dtype == DType::BF16,
        );
        self.dispatch(Lowering::RowPasses(passes), numerics)
    }

    fn run_with(
        mut self,
        gather_elem_bytes: Option<u64>,
        numerics: impl FnOnce(&[Values]) -> Result<Vec<Values>, BackendError>,
    ) -> Result<Vec<Tensor>, BackendError> {
        let dtype = self.inputs[0].dtype;
        let mut plan = RowPlan {
            rows: self.rows as u64,
            cols: self.cols as u64,
            load_bytes_per_row: Vec::new(),
            const_bytes: 0,
            store_bytes_per_row: self.store_bytes_per_row,
            stages: std::mem::take(&mut self.stages),
            sixteen_bit: dtype == DType::BF16,
            direction: runtime_hooks::DmaDirection::DeviceToDevice,
        };
        for (i, input) in self.inputs.iter().enumerate() {
            if let (Some(eb), 1) = (gather_elem_bytes, i) {
                plan.load_bytes_per_row.push(self.cols as u64 * eb);
            } else if i < self.streamed {
                plan.load_bytes_per_row
                    .push(input.size_bytes() / self.rows.max(1) as u64);
            } else {
                plan.const_bytes += input.size_bytes();
            }
        }
        self.dispatch(Lowering::Rows(plan), numerics)
    }

    /// Dispatches the kernel with `lowering` on its inputs' device.
    fn dispatch(
        self,
        lowering: Lowering,
        numerics: impl FnOnce(&[Values]) -> Result<Vec<Values>, BackendError>,
    ) -> Result<Vec<Tensor>, BackendError> {
        let device = common_device(self.op, self.inputs)?;
        let call = OpCall {
            op: self.op,
            kernel: self.kernel,
            inputs: self.inputs,
            outputs: self.outputs,
            flops: self.flops,
            lowering,
        };
        dispatch::dispatch_checked(&device, call, numerics)
    }
}
