//! Reductions along one dimension (VectorE), and over all elements.

use super::rows::{Lanes, RowKernel};
use super::{float_dtype, normalize_dim};
use crate::ops::elementwise::instr_name;
use crate::tensor::Values;
use crate::timing::lower::Stage;
use crate::timing::Engine;
use crate::{BackendError, Tensor};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reduction {
    Sum,
    Mean,
    Max,
}

impl Tensor {
    /// Sum along `dim` (`aten::sum`), keeping it as size 1 when `keepdim`.
    pub fn sum(&self, dim: isize, keepdim: bool) -> Result<Tensor, BackendError> {
        self.reduce(Reduction::Sum, dim, keepdim)
    }

    /// Mean along `dim` (`aten::mean`).
    pub fn mean(&self, dim: isize, keepdim: bool) -> Result<Tensor, BackendError> {
        self.reduce(Reduction::Mean, dim, keepdim)
    }

    /// Maximum along `dim` (`aten::amax`).
    pub fn max(&self, dim: isize, keepdim: bool) -> Result<Tensor, BackendError> {
        self.reduce(Reduction::Max, dim, keepdim)
    }

    /// Sum of all elements, as a 0-dimensional tensor.
    pub fn sum_all(&self) -> Result<Tensor, BackendError> {
        self.reshape(&[-1])?.sum(0, false)
    }

    fn reduce(&self, how: Reduction, dim: isize, keepdim: bool) -> Result<Tensor, BackendError> {
        let (op, kernel) = match how {
            Reduction::Sum => ("aten::sum", "reduce_sum"),
            Reduction::Mean => ("aten::mean", "reduce_mean"),
            Reduction::Max => ("aten::amax", "reduce_max"),
        };
        let dtype = float_dtype(op, &[self])?;
        let d = normalize_dim(op, dim, self.shape.len())?;
        let lanes = Lanes::of(&self.shape, d);
        let mut shape = self.shape.to_vec();
        if keepdim {
            shape[d] = 1;
        } else if !shape.is_empty() {
            shape.remove(d);
        }
        let out = RowKernel {
            op,
            kernel,
            inputs: &[self],
            rows: lanes.count(),
            cols: lanes.size,
            streamed: 1,
            outputs: vec![(shape, dtype)],
            store_bytes_per_row: dtype.size_bytes(),
            stages: vec![Stage::new(Engine::Vector, 1, instr_name(kernel))],
            flops: self.numel() as u64,
        }
        .run_reduction(lanes.inner, move |v| {
            let x = v[0].f32();
            let mut out = vec![0.0f32; lanes.count()];
            lanes.for_each(|lane, base, stride| {
                let values = (0..lanes.size).map(|j| f64::from(x[base + j * stride]));
                out[lane] = match how {
                    Reduction::Sum => values.sum::<f64>() as f32,
                    Reduction::Mean => (values.sum::<f64>() / lanes.size.max(1) as f64) as f32,
                    Reduction::Max => values.fold(f64::NEG_INFINITY, f64::max) as f32,
                };
            });
            Ok(vec![Values::F32(out)])
        })?;
        Ok(out.into_iter().next().expect("one output"))
    }
}
