//! Softmax, log-softmax, layer norm and RMS norm along the last dimension, with their
//! backward ops. Statistics are accumulated in `f64`.

use super::rows::{Lanes, RowKernel};
use super::{float_dtype, shape_error};
use crate::ops::elementwise::instr_name;
use crate::tensor::Values;
use crate::timing::lower::Stage;
use crate::timing::Engine;
use crate::{BackendError, Tensor};

fn stages(list: &[(Engine, u32)], kernel: &'static str) -> Vec<Stage> {
    list.iter()
        .map(|&(engine, inputs)| Stage::new(engine, inputs, instr_name(kernel)))
        .collect()
}

/// Softmax of one row into `out` (or log-softmax when `log`).
fn softmax_row(x: &[f32], out: &mut [f32], log: bool) {
    let max = x
        .iter()
        .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
    let sum: f64 = x.iter().map(|&v| (f64::from(v) - max).exp()).sum();
    for (o, &v) in out.iter_mut().zip(x) {
        let shifted = f64::from(v) - max;
        *o = if log {
            (shifted - sum.ln()) as f32
        } else {
            (shifted.exp() / sum) as f32
        };
    }
}

impl Tensor {
    fn last_dim_kernel<'a>(
        &'a self,
        op: &'static str,
        kernel: &'static str,
        inputs: &'a [&'a Tensor],
        engines: &[(Engine, u32)],
        outputs: Vec<(Vec<usize>, crate::DType)>,
    ) -> Result<RowKernel<'a>, BackendError> {
        let dtype = float_dtype(op, inputs)?;
        if self.shape.is_empty() {
            return Err(shape_error(op, inputs, "needs at least one dimension"));
        }
        let lanes = Lanes::of(&self.shape, self.shape.len() - 1);
        Ok(RowKernel {
            op,
            kernel,
            inputs,
            rows: lanes.count(),
            cols: lanes.size,
            streamed: inputs.iter().filter(|t| t.shape == self.shape).count(),
            outputs,
            store_bytes_per_row: lanes.size as u64 * dtype.size_bytes(),
            stages: stages(engines, kernel),
            flops: 5 * self.numel() as u64,
        })
    }

    fn row_map(
        &self,
        op: &'static str,
        kernel: &'static str,
        engines: &[(Engine, u32)],
        f: impl Fn(&[f32], &mut [f32]) + Send,
    ) -> Result<Tensor, BackendError> {
        let outputs = vec![(self.shape.to_vec(), self.dtype)];
        let cols = self.shape.last().copied().unwrap_or(1).max(1);
        let out = self
            .last_dim_kernel(op, kernel, &[self], engines, outputs)?
            .run(move |v| {
                let x = v[0].f32();
                let mut out = vec![0.0f32; x.len()];
                for (row, o) in x.chunks(cols).zip(out.chunks_mut(cols)) {
                    f(row, o);
                }
                Ok(vec![Values::F32(out)])
            })?;
        Ok(out.into_iter().next().expect("one output"))
    }

    /// Softmax along the last dimension (`aten::_softmax`): VectorE max, ScalarE exp
    /// with the sum accumulated, VectorE scale.
    pub fn softmax(&self) -> Result<Tensor, BackendError> {
        let engines = [
            (Engine::Vector, 1),
            (Engine::Scalar, 1),
            (Engine::Vector, 1),
        ];
        self.row_map("aten::_softmax", "softmax", &engines, |x, o| {
            softmax_row(x, o, false)
        })
    }

    /// Log-softmax along the last dimension (`aten::_log_softmax`).
    pub fn log_softmax(&self) -> Result<Tensor, BackendError> {
        let engines = [
            (Engine::Vector, 1),
            (Engine::Scalar, 1),
            (Engine::Vector, 1),
        ];
        self.row_map("aten::_log_softmax", "log_softmax", &engines, |x, o| {
            softmax_row(x, o, true)
        })
    }

    /// Gradient of softmax: `y ⊙ (g − Σ g⊙y)` with `self` the softmax output `y`
    /// (`aten::_softmax_backward_data`).
    pub fn softmax_backward(&self, grad: &Tensor) -> Result<Tensor, BackendError> {
        self.pair_backward(
            "aten::_softmax_backward_data",
            "softmax_backward",
            grad,
            false,
        )
    }

    /// Gradient of log-softmax: `g − eʸ Σ g` with `self` the log-softmax output `y`
    /// (`aten::_log_softmax_backward_data`).
    pub fn log_softmax_backward(&self, grad: &Tensor) -> Result<Tensor, BackendError> {
        self.pair_backward(
            "aten::_log_softmax_backward_data",
            "log_softmax_backward",
            grad,
            true,
        )
    }

    fn pair_backward(
        &self,
        op: &'static str,
        kernel: &'static str,
        grad: &Tensor,
        log: bool,
    ) -> Result<Tensor, BackendError> {
        let inputs = [grad, self];
        if grad.shape != self.shape {
            return Err(shape_error(
                op,
                &inputs,
                "grad and output must have the same shape",
            ));
        }
        let engines = [(Engine::Vector, 2), (Engine::Vector, 2)];
        let outputs = vec![(self.shape.to_vec(), self.dtype)];
        let cols = self.shape.last().copied().unwrap_or(1).max(1);
        let out = self
            .last_dim_kernel(op, kernel, &inputs, &engines, outputs)?
            .run(move |v| {
                let (g, y) = (v[0].f32(), v[1].f32());
                let mut out = vec![0.0f32; g.len()];
                for ((g, y), o) in g.chunks(cols).zip(y.chunks(cols)).zip(out.chunks_mut(cols)) {
                    if log {
                        let sum: f64 = g.iter().map(|&v| f64::from(v)).sum();
                        for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
                            *o = (f64::from(g) - f64::from(y).exp() * sum) as f32;
                        }
                    } else {
                        let dot: f64 = g
                            .iter()
                            .zip(y)
                            .map(|(&g, &y)| f64::from(g) * f64::from(y))
                            .sum();
                        for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
                            *o = (f64::from(y) * (f64::from(g) - dot)) as f32;
                        }
                    }
                }
                Ok(vec![Values::F32(out)])
            })?;
        Ok(out.into_iter().next().expect("one output"))
    }

    /// Layer norm over the last dimension with weight and bias of that size
    /// (`aten::native_layer_norm`).
    pub fn layer_norm(
        &self,
        weight: &Tensor,
        bias: &Tensor,
        eps: f64,
    ) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::native_layer_norm";
        let inputs = [self, weight, bias];
        let cols = self.norm_params(OP, &inputs)?;
        let engines = [
            (Engine::Vector, 1),
            (Engine::Vector, 1),
            (Engine::Scalar, 1),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
        ];
        let outputs = vec![(self.shape.to_vec(), self.dtype)];
        let out = self
            .last_dim_kernel(OP, "layer_norm", &inputs, &engines, outputs)?
            .run(move |v| {
                let (x, w, b) = (v[0].f32(), v[1].f32(), v[2].f32());
                let mut out = vec![0.0f32; x.len()];
                for (row, o) in x.chunks(cols).zip(out.chunks_mut(cols)) {
                    let (mean, rstd) = moments(row, eps);
                    for (j, (o, &x)) in o.iter_mut().zip(row).enumerate() {
                        *o = ((f64::from(x) - mean) * rstd * f64::from(w[j]) + f64::from(b[j]))
                            as f32;
                    }
                }
                Ok(vec![Values::F32(out)])
            })?;
        Ok(out.into_iter().next().expect("one output"))
    }

    /// Gradients of [`layer_norm`](Self::layer_norm): `(dx, dweight, dbias)`
    /// (`aten::native_layer_norm_backward`), statistics recomputed from `self`.
    pub fn layer_norm_backward(
        &self,
        grad: &Tensor,
        weight: &Tensor,
        eps: f64,
    ) -> Result<(Tensor, Tensor, Tensor), BackendError> {
        const OP: &str = "aten::native_layer_norm_backward";
        let inputs = [grad, self, weight];
        if grad.shape != self.shape {
            return Err(shape_error(
                OP,
                &inputs,
                "grad and input must have the same shape",
            ));
        }
        let cols = self.norm_params(OP, &[self, weight])?;
        let engines = [
            (Engine::Vector, 1),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
        ];
        let param = vec![cols];
        let outputs = vec![
            (self.shape.to_vec(), self.dtype),
            (param.clone(), self.dtype),
            (param, self.dtype),
        ];
        let out = self
            .last_dim_kernel(OP, "layer_norm_backward", &inputs, &engines, outputs)?
            .run(move |v| {
                let (g, x, w) = (v[0].f32(), v[1].f32(), v[2].f32());
                let mut dx = vec![0.0f32; x.len()];
                let mut dw = vec![0.0f64; cols];
                let mut db = vec![0.0f64; cols];
                for ((g, x), dx) in g.chunks(cols).zip(x.chunks(cols)).zip(dx.chunks_mut(cols)) {
                    let (mean, rstd) = moments(x, eps);
                    let xhat: Vec<f64> = x.iter().map(|&x| (f64::from(x) - mean) * rstd).collect();
                    let gw: Vec<f64> = g
                        .iter()
                        .zip(w.iter())
                        .map(|(&g, &w)| f64::from(g) * f64::from(w))
                        .collect();
                    let n = cols as f64;
                    let sum_gw: f64 = gw.iter().sum();
                    let sum_gw_xhat: f64 = gw.iter().zip(&xhat).map(|(a, b)| a * b).sum();
                    for j in 0..cols {
                        dx[j] = (rstd * (gw[j] - sum_gw / n - xhat[j] * sum_gw_xhat / n)) as f32;
                        dw[j] += f64::from(g[j]) * xhat[j];
                        db[j] += f64::from(g[j]);
                    }
                }
                let to_f32 = |v: Vec<f64>| Values::F32(v.into_iter().map(|x| x as f32).collect());
                Ok(vec![Values::F32(dx), to_f32(dw), to_f32(db)])
            })?;
        let mut out = out.into_iter();
        Ok((
            out.next().expect("dx"),
            out.next().expect("dw"),
            out.next().expect("db"),
        ))
    }

    /// RMS norm over the last dimension: `x / sqrt(mean(x²) + eps) · weight`.
    pub fn rms_norm(&self, weight: &Tensor, eps: f64) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::rms_norm";
        let inputs = [self, weight];
        let cols = self.norm_params(OP, &inputs)?;
        let engines = [
            (Engine::Scalar, 1),
            (Engine::Vector, 1),
            (Engine::Vector, 2),
        ];
        let outputs = vec![(self.shape.to_vec(), self.dtype)];
        let out = self
            .last_dim_kernel(OP, "rms_norm", &inputs, &engines, outputs)?
            .run(move |v| {
                let (x, w) = (v[0].f32(), v[1].f32());
                let mut out = vec![0.0f32; x.len()];
                for (row, o) in x.chunks(cols).zip(out.chunks_mut(cols)) {
                    let rstd = rms_rstd(row, eps);
                    for (j, (o, &x)) in o.iter_mut().zip(row).enumerate() {
                        *o = (f64::from(x) * rstd * f64::from(w[j])) as f32;
                    }
                }
                Ok(vec![Values::F32(out)])
            })?;
        Ok(out.into_iter().next().expect("one output"))
    }

    /// Gradients of [`rms_norm`](Self::rms_norm): `(dx, dweight)`.
    pub fn rms_norm_backward(
        &self,
        grad: &Tensor,
        weight: &Tensor,
        eps: f64,
    ) -> Result<(Tensor, Tensor), BackendError> {
        const OP: &str = "aten::rms_norm_backward";
        let inputs = [grad, self, weight];
        if grad.shape != self.shape {
            return Err(shape_error(
                OP,
                &inputs,
                "grad and input must have the same shape",
            ));
        }
        let cols = self.norm_params(OP, &[self, weight])?;
        let engines = [
            (Engine::Scalar, 1),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
        ];
        let outputs = vec![(self.shape.to_vec(), self.dtype), (vec![cols], self.dtype)];
        let out = self
            .last_dim_kernel(OP, "rms_norm_backward", &inputs, &engines, outputs)?
            .run(move |v| {
                let (g, x, w) = (v[0].f32(), v[1].f32(), v[2].f32());
                let mut dx = vec![0.0f32; x.len()];
                let mut dw = vec![0.0f64; cols];
                for ((g, x), dx) in g.chunks(cols).zip(x.chunks(cols)).zip(dx.chunks_mut(cols)) {
                    let rstd = rms_rstd(x, eps);
                    let dot: f64 = (0..cols)
                        .map(|j| f64::from(g[j]) * f64::from(w[j]) * f64::from(x[j]))
                        .sum();
                    for j in 0..cols {
                        let (gj, xj, wj) = (f64::from(g[j]), f64::from(x[j]), f64::from(w[j]));
                        dx[j] = (rstd * gj * wj - rstd.powi(3) * xj * dot / cols as f64) as f32;
                        dw[j] += gj * xj * rstd;
                    }
                }
                Ok(vec![
                    Values::F32(dx),
                    Values::F32(dw.into_iter().map(|v| v as f32).collect()),
                ])
            })?;
        let mut out = out.into_iter();
        Ok((out.next().expect("dx"), out.next().expect("dw")))
    }

    /// Checks the norm parameters are `[C]` for input `[.., C]`; returns `C`.
    fn norm_params(&self, op: &'static str, inputs: &[&Tensor]) -> Result<usize, BackendError> {
        float_dtype(op, inputs)?;
        let cols = *self
            .shape
            .last()
            .ok_or_else(|| shape_error(op, inputs, "input needs at least one dimension"))?;
        if inputs[1..].iter().any(|p| *p.shape != [cols]) {
            return Err(shape_error(
                op,
                inputs,
                format!("parameters must be [{cols}] for input [.., {cols}]"),
            ));
        }
        Ok(cols)
    }
}

/// Mean and 1/sqrt(variance + eps) of a row (biased variance, as layer norm uses).
fn moments(row: &[f32], eps: f64) -> (f64, f64) {
    let n = row.len().max(1) as f64;
    let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let var = row
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    (mean, 1.0 / (var + eps).sqrt())
}

/// 1/sqrt(mean(x²) + eps) of a row.
fn rms_rstd(row: &[f32], eps: f64) -> f64 {
    let n = row.len().max(1) as f64;
    1.0 / (row.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / n + eps).sqrt()
}
