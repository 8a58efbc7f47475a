//! Shape ops: views (reshape/view, leading-dimension slices) share storage and run no
//! kernel; transpose, other slices and concat are copy kernels.

use super::{normalize_dim, shape_error};
use crate::dispatch::{self, common_device, host_op, Lowering, OpCall};
use crate::tensor::Values;
use crate::timing::lower::{RowPlan, Stage};
use crate::timing::Engine;
use crate::{BackendError, Tensor};

impl Tensor {
    /// The same storage with another shape (`aten::view`); one dimension may be `-1`.
    pub fn reshape(&self, shape: &[isize]) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::view";
        self.check_live(OP)?;
        let numel = self.numel();
        let known = shape
            .iter()
            .filter(|&&d| d >= 0)
            .try_fold(1usize, |n, &d| n.checked_mul(d as usize))
            .ok_or_else(|| shape_error(OP, &[self], format!("cannot view as {shape:?}")))?;
        let inferred = shape.iter().filter(|&&d| d < 0).count();
        let bad = || shape_error(OP, &[self], format!("cannot view as {shape:?}"));
        if inferred > 1 || shape.iter().any(|&d| d < -1) {
            return Err(bad());
        }
        let resolved: Vec<usize> = shape
            .iter()
            .map(|&d| {
                if d < 0 {
                    numel / known.max(1)
                } else {
                    d as usize
                }
            })
            .collect();
        // Checked: a product that wraps could equal `numel` (0 for an empty tensor).
        if crate::tensor::checked_numel(OP, &resolved)? != numel {
            return Err(bad());
        }
        Ok(host_op(OP, &[self], || {
            self.view_as(&resolved, self.offset)
        }))
    }

    /// Elements `start..end` of dimension `dim` (`aten::slice`): a view for the leading
    /// dimension, a copy kernel otherwise.
    pub fn slice(&self, dim: isize, start: usize, end: usize) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::slice";
        self.check_live(OP)?;
        let d = normalize_dim(OP, dim, self.shape.len())?;
        let size = self.shape[d];
        if start > end || end > size {
            return Err(BackendError::IndexOutOfRange {
                op: OP,
                index: end.max(start) as i64,
                size,
                what: format!(
                    "dimension {d} of a {:?} tensor (slice {start}..{end})",
                    self.shape
                ),
            });
        }
        let mut shape = self.shape.to_vec();
        shape[d] = end - start;
        let inner: usize = self.shape[d + 1..].iter().product();
        if self.shape[..d].iter().all(|&s| s == 1) {
            return Ok(host_op(OP, &[self], || {
                self.view_as(&shape, self.offset + start * inner)
            }));
        }
        let outer: usize = self.shape[..d].iter().product();
        let (row, begin, len) = (size * inner, start * inner, (end - start) * inner);
        self.copy_kernel(OP, "slice", &[self], shape, move |v| {
            let ranges = (0..outer).map(|o| (0, o * row + begin, len));
            vec![Values::gather_ranges(v, ranges)]
        })
    }

    /// Swaps dimensions `dim0` and `dim1` (`aten::transpose` followed by a contiguous
    /// copy; TensorE transposes 128×128 blocks).
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::transpose";
        self.check_live(OP)?;
        let rank = self.shape.len();
        let (d0, d1) = (
            normalize_dim(OP, dim0, rank)?,
            normalize_dim(OP, dim1, rank)?,
        );
        let mut shape = self.shape.to_vec();
        shape.swap(d0, d1);
        let in_shape = self.shape.to_vec();
        let out_shape = shape.clone();
        let numel = self.numel();
        let mut plan = RowPlan::flat(
            numel as u64,
            vec![Stage::new(
                Engine::Tensor,
                1,
                runtime_hooks::name!("transpose"),
            )],
            self.dtype == crate::DType::BF16,
        )
        .load(self.dtype.size_bytes())
        .store(self.dtype.size_bytes());
        plan.stages.push(Stage::new(
            Engine::Vector,
            1,
            runtime_hooks::name!("psum_copy"),
        ));
        self.kernel(OP, "transpose", &[self], shape, plan, move |v| {
            let mut in_strides = vec![1usize; rank];
            for i in (0..rank.saturating_sub(1)).rev() {
                in_strides[i] = in_strides[i + 1] * in_shape[i + 1];
            }
            let mut strides = in_strides.clone();
            strides.swap(d0, d1);
            let mut indices = Vec::with_capacity(numel);
            let mut counter = vec![0usize; rank];
            for _ in 0..numel {
                indices.push(
                    counter
                        .iter()
                        .zip(&strides)
                        .map(|(c, s)| c * s)
                        .sum::<usize>(),
                );
                for d in (0..rank).rev() {
                    counter[d] += 1;
                    if counter[d] < out_shape[d] {
                        break;
                    }
                    counter[d] = 0;
                }
            }
            vec![v[0].pick(indices.into_iter())]
        })
    }

    /// Concatenates `tensors` along `dim` (`aten::cat`).
    pub fn concat(tensors: &[&Tensor], dim: isize) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::cat";
        let first = tensors
            .first()
            .ok_or_else(|| BackendError::InvalidArgument {
                op: OP,
                reason: "no tensors to concatenate".into(),
            })?;
        let d = normalize_dim(OP, dim, first.shape.len())?;
        let dtype = first.dtype;
        if tensors.iter().any(|t| t.dtype != dtype) {
            return Err(BackendError::DTypeMismatch {
                op: OP,
                dtypes: tensors.iter().map(|t| t.dtype).collect(),
                expected: "one dtype for all inputs".into(),
            });
        }
        let same_rest = tensors.iter().all(|t| {
            t.shape.len() == first.shape.len()
                && t.shape
                    .iter()
                    .enumerate()
                    .all(|(i, &s)| i == d || s == first.shape[i])
        });
        if !same_rest {
            return Err(shape_error(
                OP,
                tensors,
                format!("shapes must match except in dimension {d}"),
            ));
        }
        let mut shape = first.shape.to_vec();
        shape[d] = tensors.iter().map(|t| t.shape[d]).sum();
        let outer: usize = first.shape[..d].iter().product();
        let inners: Vec<usize> = tensors
            .iter()
            .map(|t| t.shape[d..].iter().product())
            .collect();
        first.copy_kernel(OP, "cat", tensors, shape, move |v| {
            let ranges = (0..outer).flat_map(|o| {
                inners
                    .iter()
                    .enumerate()
                    .map(move |(p, &inner)| (p, o * inner, inner))
            });
            vec![Values::gather_ranges(v, ranges)]
        })
    }

    /// A contiguous copy (`aten::clone`).
    pub fn copy(&self) -> Result<Tensor, BackendError> {
        self.copy_kernel("aten::clone", "copy", &[self], self.shape.to_vec(), |v| {
            vec![v[0].clone()]
        })
    }

    fn copy_kernel(
        &self,
        op: &'static str,
        kernel: &'static str,
        inputs: &[&Tensor],
        shape: Vec<usize>,
        numerics: impl FnOnce(&[Values]) -> Vec<Values>,
    ) -> Result<Tensor, BackendError> {
        let numel: u64 = shape.iter().product::<usize>() as u64;
        let eb = self.dtype.size_bytes();
        let plan = RowPlan::flat(numel, Vec::new(), self.dtype == crate::DType::BF16)
            .load(eb)
            .store(eb);
        self.kernel(op, kernel, inputs, shape, plan, numerics)
    }

    fn kernel(
        &self,
        op: &'static str,
        kernel: &'static str,
        inputs: &[&Tensor],
        shape: Vec<usize>,
        plan: RowPlan,
        numerics: impl FnOnce(&[Values]) -> Vec<Values>,
    ) -> Result<Tensor, BackendError> {
        let device = common_device(op, inputs)?;
        let call = OpCall {
            op,
            kernel,
            inputs,
            outputs: vec![(shape, self.dtype)],
            flops: 0,
            lowering: Lowering::Rows(plan),
        };
        let out = dispatch::dispatch(&device, call, numerics)?;
        Ok(out.into_iter().next().expect("one output"))
    }
}
