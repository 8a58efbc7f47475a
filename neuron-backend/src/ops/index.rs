//! Index-driven ops: embedding lookup (an indirect DMA gather with GpSimdE computing the
//! row offsets), its backward scatter-add, cross-entropy and seeded dropout.

use super::create::random_unit;
use super::rows::RowKernel;
use super::{float_dtype, shape_error};
use crate::ops::elementwise::instr_name;
use crate::tensor::Values;
use crate::timing::lower::Stage;
use crate::timing::Engine;
use crate::{BackendError, DType, Tensor};

fn check_indices(op: &'static str, indices: &Tensor) -> Result<(), BackendError> {
    if indices.dtype != DType::I64 {
        return Err(BackendError::DTypeMismatch {
            op,
            dtypes: vec![indices.dtype],
            expected: "i64 indices".into(),
        });
    }
    Ok(())
}

fn index_error(op: &'static str, index: i64, size: usize, what: &str) -> BackendError {
    BackendError::IndexOutOfRange {
        op,
        index,
        size,
        what: what.to_string(),
    }
}

impl Tensor {
    /// Rows of `self` (`[num, dim]`) picked by `indices` (`aten::embedding`): output
    /// `[..indices, dim]`. An index outside `0..num` is an error naming it.
    pub fn embedding(&self, indices: &Tensor) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::embedding";
        check_indices(OP, indices)?;
        float_dtype(OP, &[self])?;
        if self.shape.len() != 2 {
            return Err(shape_error(
                OP,
                &[self, indices],
                "weight must be [num, dim]",
            ));
        }
        let (num, dim) = (self.shape[0], self.shape[1]);
        let tokens = indices.numel();
        let mut shape = indices.shape.to_vec();
        shape.push(dim);
        let eb = self.dtype.size_bytes();
        let mut kernel = RowKernel {
            op: OP,
            kernel: "embedding_gather",
            inputs: &[indices, self],
            rows: tokens,
            cols: dim,
            streamed: 1,
            outputs: vec![(shape, self.dtype)],
            store_bytes_per_row: dim as u64 * eb,
            stages: vec![Stage::new(Engine::GpSimd, 1, instr_name("gather_offsets"))],
            flops: 0,
        };
        // The gathered rows stream in by indirect DMA: count them as a streamed load of
        // `dim` elements per token rather than the whole table.
        kernel.stages[0].flops_per_elem = 0;
        let out = kernel.run_gather(eb, move |v| {
            let (idx, w) = (v[0].i64(), v[1].f32());
            let mut out = Vec::with_capacity(tokens * dim);
            for &i in idx.iter() {
                if i < 0 || i as usize >= num {
                    return Err(index_error(OP, i, num, "rows of the embedding weight"));
                }
                out.extend_from_slice(&w[i as usize * dim..(i as usize + 1) * dim]);
            }
            Ok(vec![Values::F32(out)])
        })?;
        Ok(out.into_iter().next().expect("one output"))
    }

    /// Gradient of [`embedding`](Self::embedding): `self` is the output gradient
    /// `[..indices, dim]`, summed into `[num, dim]` rows by index
    /// (`aten::embedding_dense_backward`).
    pub fn embedding_backward(&self, indices: &Tensor, num: usize) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::embedding_dense_backward";
        check_indices(OP, indices)?;
        float_dtype(OP, &[self])?;
        let dim = *self.shape.last().unwrap_or(&0);
        if self.numel() != indices.numel() * dim {
            return Err(shape_error(
                OP,
                &[self, indices],
                "grad must be [..indices, dim]",
            ));
        }
        let tokens = indices.numel();
        let out = RowKernel {
            op: OP,
            kernel: "embedding_scatter_add",
            inputs: &[self, indices],
            rows: tokens,
            cols: dim,
            streamed: 2,
            outputs: vec![(vec![num, dim], self.dtype)],
            store_bytes_per_row: dim as u64 * self.dtype.size_bytes(),
            stages: vec![Stage::new(Engine::GpSimd, 1, instr_name("scatter_add"))],
            flops: (tokens * dim) as u64,
        }
        .run(move |v| {
            let (g, idx) = (v[0].f32(), v[1].i64());
            let mut out = vec![0.0f32; num * dim];
            for (t, &i) in idx.iter().enumerate() {
                if i < 0 || i as usize >= num {
                    return Err(index_error(OP, i, num, "rows of the embedding weight"));
                }
                let row = &mut out[i as usize * dim..(i as usize + 1) * dim];
                row.iter_mut()
                    .zip(&g[t * dim..(t + 1) * dim])
                    .for_each(|(o, g)| *o += g);
            }
            Ok(vec![Values::F32(out)])
        })?;
        Ok(out.into_iter().next().expect("one output"))
    }

    /// Mean cross-entropy of `self` (logits `[n, classes]`) against class `targets`
    /// (`[n]`, i64): a 0-dimensional tensor (`aten::cross_entropy_loss`).
    pub fn cross_entropy(&self, targets: &Tensor) -> Result<Tensor, BackendError> {
        let (n, classes) = self.cross_entropy_shapes("aten::cross_entropy_loss", targets)?;
        let out = self.cross_entropy_kernel(
            "aten::cross_entropy_loss",
            "cross_entropy",
            targets,
            vec![],
            move |x, t| {
                let mut total = 0.0f64;
                for (row, &target) in x.chunks(classes).zip(t.iter()) {
                    let max = row
                        .iter()
                        .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
                    let sum: f64 = row.iter().map(|&v| (f64::from(v) - max).exp()).sum();
                    total += max + sum.ln() - f64::from(row[target as usize]);
                }
                vec![(total / n.max(1) as f64) as f32]
            },
        )?;
        Ok(out)
    }

    /// Gradient of the mean cross-entropy with respect to the logits `self`, scaled by
    /// `grad` (a 0-dimensional tensor): `(softmax(x) − onehot(t)) · grad / n`.
    pub fn cross_entropy_backward(
        &self,
        targets: &Tensor,
        grad: &Tensor,
    ) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::cross_entropy_loss_backward";
        let (n, classes) = self.cross_entropy_shapes(OP, targets)?;
        if grad.numel() != 1 {
            return Err(shape_error(
                OP,
                &[self, targets, grad],
                "grad must hold one value",
            ));
        }
        crate::dispatch::common_device(OP, &[self, targets, grad])?;
        let grad_value = grad.values(OP).ok().map(|v| f64::from(v.f32()[0]));
        let shape = self.shape.to_vec();
        self.cross_entropy_kernel(OP, "cross_entropy_backward", targets, shape, move |x, t| {
            let scale = grad_value.unwrap_or(1.0) / n.max(1) as f64;
            let mut out = vec![0.0f32; x.len()];
            for ((row, o), &target) in x.chunks(classes).zip(out.chunks_mut(classes)).zip(t.iter())
            {
                let max = row
                    .iter()
                    .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
                let sum: f64 = row.iter().map(|&v| (f64::from(v) - max).exp()).sum();
                for (j, (o, &v)) in o.iter_mut().zip(row).enumerate() {
                    let p = (f64::from(v) - max).exp() / sum;
                    let onehot = f64::from(u8::from(j as i64 == target));
                    *o = ((p - onehot) * scale) as f32;
                }
            }
            out
        })
    }

    fn cross_entropy_shapes(
        &self,
        op: &'static str,
        targets: &Tensor,
    ) -> Result<(usize, usize), BackendError> {
        check_indices(op, targets)?;
        float_dtype(op, &[self])?;
        if self.shape.len() != 2 || *targets.shape != [self.shape[0]] {
            return Err(shape_error(
                op,
                &[self, targets],
                "expected logits [n, classes] and targets [n]",
            ));
        }
        Ok((self.shape[0], self.shape[1]))
    }

    fn cross_entropy_kernel(
        &self,
        op: &'static str,
        kernel: &'static str,
        targets: &Tensor,
        out_shape: Vec<usize>,
        f: impl FnOnce(&[f32], &[i64]) -> Vec<f32>,
    ) -> Result<Tensor, BackendError> {
        let (n, classes) = (self.shape[0], self.shape[1]);
        let store = if out_shape.is_empty() {
            0
        } else {
            classes as u64 * self.dtype.size_bytes()
        };
        let engines = [
            (Engine::Vector, 1),
            (Engine::Scalar, 1),
            (Engine::GpSimd, 1),
            (Engine::Vector, 2),
        ];
        let out = RowKernel {
            op,
            kernel,
            inputs: &[self, targets],
            rows: n,
            cols: classes,
            streamed: 2,
            outputs: vec![(out_shape, self.dtype)],
            store_bytes_per_row: store,
            stages: engines
                .iter()
                .map(|&(e, i)| Stage::new(e, i, instr_name(kernel)))
                .collect(),
            flops: 5 * self.numel() as u64,
        }
        .run(move |v| {
            let (x, t) = (v[0].f32(), v[1].i64());
            if let Some(&bad) = t.iter().find(|&&t| t < 0 || t as usize >= classes) {
                return Err(index_error(op, bad, classes, "classes of the logits"));
            }
            Ok(vec![Values::F32(f(&x, &t))])
        })?;
        Ok(out.into_iter().next().expect("one output"))
    }

    /// Dropout with probability `p` from `seed` (`aten::native_dropout`): returns the
    /// output and the mask (0 or `1/(1−p)` per element; multiply a gradient by it for
    /// the backward).
    pub fn dropout(&self, p: f64, seed: u64) -> Result<(Tensor, Tensor), BackendError> {
        const OP: &str = "aten::native_dropout";
        float_dtype(OP, &[self])?;
        if !(0.0..1.0).contains(&p) {
            return Err(BackendError::InvalidArgument {
                op: OP,
                reason: format!("probability must be in [0, 1), got {p}"),
            });
        }
        let numel = self.numel();
        let cols = numel.clamp(1, crate::timing::lower::FLAT_FREE as usize);
        let eb = self.dtype.size_bytes();
        let out = RowKernel {
            op: OP,
            kernel: "dropout",
            inputs: &[self],
            rows: numel.div_ceil(cols),
            cols,
            streamed: 1,
            outputs: vec![
                (self.shape.to_vec(), self.dtype),
                (self.shape.to_vec(), self.dtype),
            ],
            store_bytes_per_row: 2 * cols as u64 * eb,
            stages: vec![
                Stage::new(Engine::GpSimd, 1, instr_name("random_mask")),
                Stage::new(Engine::Vector, 2, instr_name("dropout")),
            ],
            flops: numel as u64,
        }
        .run(move |v| {
            let x = v[0].f32();
            let scale = 1.0 / (1.0 - p);
            let mask: Vec<f32> = (0..numel as u64)
                .map(|i| {
                    if random_unit(seed, i) < p {
                        0.0
                    } else {
                        scale as f32
                    }
                })
                .collect();
            let out = x.iter().zip(&mask).map(|(x, m)| x * m).collect();
            Ok(vec![Values::F32(out), Values::F32(mask)])
        })?;
        let mut out = out.into_iter();
        Ok((out.next().expect("output"), out.next().expect("mask")))
    }
}
