//! The differentiable ops of [`Var`]: each runs the backend's forward op and records
//! its backward in terms of backend ops.

use super::{Tape, Var};
use crate::{BackendError, DType, Tensor, UnaryOp};

type Grads = Result<Vec<Option<Tensor>>, BackendError>;

/// Sums `g` (the gradient of a broadcast result) down to `shape`.
pub(crate) fn reduce_to(g: &Tensor, shape: &[usize]) -> Result<Tensor, BackendError> {
    let mut g = g.clone();
    while g.shape().len() > shape.len() {
        g = g.sum(0, false)?;
    }
    for (i, &size) in shape.iter().enumerate() {
        if size == 1 && g.shape()[i] != 1 {
            g = g.sum(i as isize, true)?;
        }
    }
    Ok(g)
}

/// `g` broadcast to `shape` (a sum's backward), `g` having `shape`'s rank with ones.
fn expand(g: &Tensor, shape: &[usize]) -> Result<Tensor, BackendError> {
    let device = g
        .device()
        .cloned()
        .ok_or_else(|| BackendError::DeviceMismatch {
            op: "expand",
            devices: vec![g.place()],
        })?;
    device.zeros(shape, g.dtype())?.add(g)
}

fn dims(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

impl Var {
    fn tape_of(&self, other: &Var) -> Tape {
        if self.node.is_some() {
            self.tape.clone()
        } else {
            other.tape.clone()
        }
    }

    /// Matrix product (see [`Tensor::matmul`]).
    pub fn matmul(&self, rhs: &Var) -> Result<Var, BackendError> {
        let (a, b) = (self.tensor.clone(), rhs.tensor.clone());
        self.tape_of(rhs).record(
            "MmBackward0",
            &[self, rhs],
            || self.tensor.matmul(&rhs.tensor),
            |_| {
                move |g: &Tensor| -> Grads {
                    let (ar, br) = (a.shape().len(), b.shape().len());
                    if br == 2 {
                        let da = g.matmul(&b.transpose(0, 1)?)?;
                        let k = a.shape()[ar - 1] as isize;
                        let n = b.shape()[1] as isize;
                        let db = a
                            .reshape(&[-1, k])?
                            .transpose(0, 1)?
                            .matmul(&g.reshape(&[-1, n])?)?;
                        Ok(vec![Some(da), Some(db)])
                    } else {
                        let da = g.matmul(&b.transpose(-1, -2)?)?;
                        let db = a.transpose(-1, -2)?.matmul(g)?;
                        Ok(vec![Some(da), Some(db)])
                    }
                }
            },
        )
    }

    /// A linear layer `self · weightᵀ + bias` (see [`Tensor::linear`]).
    pub fn linear(&self, weight: &Var, bias: Option<&Var>) -> Result<Var, BackendError> {
        let (x, w) = (self.tensor.clone(), weight.tensor.clone());
        let mut inputs = vec![self, weight];
        inputs.extend(bias);
        let has_bias = bias.is_some();
        self.tape_of(weight).record(
            "AddmmBackward0",
            &inputs,
            || self.tensor.linear(&weight.tensor, bias.map(|b| &b.tensor)),
            |_| {
                move |g: &Tensor| -> Grads {
                    let (out, inp) = (w.shape()[0] as isize, w.shape()[1] as isize);
                    let g2 = g.reshape(&[-1, out])?;
                    let x2 = x.reshape(&[-1, inp])?;
                    let dx = g2.matmul(&w)?.reshape(&dims(x.shape()))?;
                    let dw = g2.transpose(0, 1)?.matmul(&x2)?;
                    let mut grads = vec![Some(dx), Some(dw)];
                    if has_bias {
                        grads.push(Some(g2.sum(0, false)?));
                    }
                    Ok(grads)
                }
            },
        )
    }

    /// `self + other` (broadcasting).
    pub fn add(&self, other: &Var) -> Result<Var, BackendError> {
        let (a, b) = (self.tensor.clone(), other.tensor.clone());
        let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
        self.tape_of(other).record(
            "AddBackward0",
            &[self, other],
            || self.tensor.add(&other.tensor),
            |_| {
                move |g: &Tensor| -> Grads {
                    Ok(vec![Some(reduce_to(g, &sa)?), Some(reduce_to(g, &sb)?)])
                }
            },
        )
    }

    /// `self − other` (broadcasting).
    pub fn sub(&self, other: &Var) -> Result<Var, BackendError> {
        let (a, b) = (self.tensor.clone(), other.tensor.clone());
        let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
        self.tape_of(other).record(
            "SubBackward0",
            &[self, other],
            || self.tensor.sub(&other.tensor),
            |_| {
                move |g: &Tensor| -> Grads {
                    Ok(vec![
                        Some(reduce_to(g, &sa)?),
                        Some(reduce_to(g, &sb)?.mul_scalar(-1.0)?),
                    ])
                }
            },
        )
    }

    /// `self ⊙ other` (broadcasting).
    pub fn mul(&self, other: &Var) -> Result<Var, BackendError> {
        let (a, b) = (self.tensor.clone(), other.tensor.clone());
        self.tape_of(other).record(
            "MulBackward0",
            &[self, other],
            || self.tensor.mul(&other.tensor),
            |_| {
                move |g: &Tensor| -> Grads {
                    let da = reduce_to(&g.mul(&b)?, a.shape())?;
                    let db = reduce_to(&g.mul(&a)?, b.shape())?;
                    Ok(vec![Some(da), Some(db)])
                }
            },
        )
    }

    /// `self · scale + shift` with scalars.
    pub fn affine(&self, scale: f64, shift: f64) -> Result<Var, BackendError> {
        self.tape.record(
            "MulBackward0",
            &[self],
            || self.tensor.affine(scale, shift),
            |_| move |g: &Tensor| -> Grads { Ok(vec![Some(g.mul_scalar(scale)?)]) },
        )
    }

    /// `self · value` with a scalar.
    pub fn mul_scalar(&self, value: f64) -> Result<Var, BackendError> {
        self.affine(value, 0.0)
    }

    fn activation(&self, op: UnaryOp, name: &'static str) -> Result<Var, BackendError> {
        let x = self.tensor.clone();
        self.tape.record(
            name,
            &[self],
            || self.tensor.unary(op),
            |_| move |g: &Tensor| -> Grads { Ok(vec![Some(x.activation_backward(op, g)?)]) },
        )
    }

    /// ReLU.
    pub fn relu(&self) -> Result<Var, BackendError> {
        self.activation(UnaryOp::Relu, "ReluBackward0")
    }

    /// GELU (erf).
    pub fn gelu(&self) -> Result<Var, BackendError> {
        self.activation(UnaryOp::Gelu, "GeluBackward0")
    }

    /// SiLU.
    pub fn silu(&self) -> Result<Var, BackendError> {
        self.activation(UnaryOp::Silu, "SiluBackward0")
    }

    /// Softmax along the last dimension.
    pub fn softmax(&self) -> Result<Var, BackendError> {
        self.tape.record(
            "SoftmaxBackward0",
            &[self],
            || self.tensor.softmax(),
            |y| {
                let y = y.clone();
                move |g: &Tensor| -> Grads { Ok(vec![Some(y.softmax_backward(g)?)]) }
            },
        )
    }

    /// Log-softmax along the last dimension.
    pub fn log_softmax(&self) -> Result<Var, BackendError> {
        self.tape.record(
            "LogSoftmaxBackward0",
            &[self],
            || self.tensor.log_softmax(),
            |y| {
                let y = y.clone();
                move |g: &Tensor| -> Grads { Ok(vec![Some(y.log_softmax_backward(g)?)]) }
            },
        )
    }

    /// Layer norm over the last dimension.
    pub fn layer_norm(&self, weight: &Var, bias: &Var, eps: f64) -> Result<Var, BackendError> {
        let (x, w) = (self.tensor.clone(), weight.tensor.clone());
        self.tape_of(weight).record(
            "NativeLayerNormBackward0",
            &[self, weight, bias],
            || self.tensor.layer_norm(&weight.tensor, &bias.tensor, eps),
            |_| {
                move |g: &Tensor| -> Grads {
                    let (dx, dw, db) = x.layer_norm_backward(g, &w, eps)?;
                    Ok(vec![Some(dx), Some(dw), Some(db)])
                }
            },
        )
    }

    /// Rows of the table `self` picked by `indices` (i64).
    pub fn embedding(&self, indices: &Tensor) -> Result<Var, BackendError> {
        let (table, idx) = (self.tensor.clone(), indices.clone());
        let num = table.shape()[0];
        self.tape.record(
            "EmbeddingBackward0",
            &[self],
            || self.tensor.embedding(indices),
            |_| move |g: &Tensor| -> Grads { Ok(vec![Some(g.embedding_backward(&idx, num)?)]) },
        )
    }

    /// Mean cross-entropy of logits `self` (`[n, classes]`) against `targets` (i64).
    pub fn cross_entropy(&self, targets: &Tensor) -> Result<Var, BackendError> {
        let (x, t) = (self.tensor.clone(), targets.clone());
        self.tape.record(
            "NllLossBackward0",
            &[self],
            || self.tensor.cross_entropy(targets),
            |_| move |g: &Tensor| -> Grads { Ok(vec![Some(x.cross_entropy_backward(&t, g)?)]) },
        )
    }

    /// Another shape of the same elements (`-1` once for the inferred size).
    pub fn reshape(&self, shape: &[isize]) -> Result<Var, BackendError> {
        let x = self.tensor.clone();
        let original = dims(x.shape());
        self.tape.record(
            "ViewBackward0",
            &[self],
            || self.tensor.reshape(shape),
            |_| move |g: &Tensor| -> Grads { Ok(vec![Some(g.reshape(&original)?)]) },
        )
    }

    /// Swaps two dimensions.
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<Var, BackendError> {
        self.tape.record(
            "TransposeBackward0",
            &[self],
            || self.tensor.transpose(dim0, dim1),
            |_| move |g: &Tensor| -> Grads { Ok(vec![Some(g.transpose(dim0, dim1)?)]) },
        )
    }

    /// Sum along `dim`.
    pub fn sum(&self, dim: isize, keepdim: bool) -> Result<Var, BackendError> {
        let x = self.tensor.clone();
        let shape = x.shape().to_vec();
        self.tape.record(
            "SumBackward1",
            &[self],
            || self.tensor.sum(dim, keepdim),
            |_| {
                move |g: &Tensor| -> Grads {
                    let d = if dim < 0 {
                        dim + shape.len() as isize
                    } else {
                        dim
                    } as usize;
                    let mut kept = dims(&shape);
                    kept[d] = 1;
                    Ok(vec![Some(expand(&g.reshape(&kept)?, &shape)?)])
                }
            },
        )
    }

    /// Sum of all elements (a 0-dimensional result).
    pub fn sum_all(&self) -> Result<Var, BackendError> {
        let x = self.tensor.clone();
        let shape = x.shape().to_vec();
        self.tape.record(
            "SumBackward0",
            &[self],
            || self.tensor.sum_all(),
            |_| {
                move |g: &Tensor| -> Grads {
                    let ones = vec![1isize; shape.len()];
                    Ok(vec![Some(expand(&g.reshape(&ones)?, &shape)?)])
                }
            },
        )
    }

    /// Mean of all elements.
    pub fn mean_all(&self) -> Result<Var, BackendError> {
        let n = self.tensor.numel().max(1) as f64;
        self.sum_all()?.mul_scalar(1.0 / n)
    }

    /// A copy in `dtype` (mixed precision: the gradient comes back in this dtype).
    pub fn cast(&self, dtype: DType) -> Result<Var, BackendError> {
        let x = self.tensor.clone();
        let from = x.dtype();
        if from == dtype {
            return Ok(self.clone());
        }
        self.tape.record(
            "ToCopyBackward0",
            &[self],
            || self.tensor.cast(dtype),
            |_| move |g: &Tensor| -> Grads { Ok(vec![Some(g.cast(from)?)]) },
        )
    }
}
