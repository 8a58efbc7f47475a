//! Elementwise ops: binary with broadcasting, scalar, unary (activations) and the
//! activations' backward ops.

use runtime_hooks::NameId;

use super::{float_dtype, shape_error};
use crate::dispatch::{self, common_device, Lowering, OpCall};
use crate::tensor::Values;
use crate::timing::lower::{RowPlan, Stage};
use crate::timing::Engine;
use crate::{BackendError, DType, Tensor};

/// A binary elementwise op (inputs broadcast like NumPy/PyTorch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// `max(a, b)`
    Maximum,
}

impl BinaryOp {
    fn names(self) -> (&'static str, &'static str) {
        match self {
            BinaryOp::Add => ("aten::add", "add"),
            BinaryOp::Sub => ("aten::sub", "sub"),
            BinaryOp::Mul => ("aten::mul", "mul"),
            BinaryOp::Div => ("aten::div", "div"),
            BinaryOp::Maximum => ("aten::maximum", "maximum"),
        }
    }

    fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Maximum => a.max(b),
        }
    }
}

/// A unary elementwise op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// `-x` (VectorE)
    Neg,
    /// `max(x, 0)` (VectorE)
    Relu,
    /// `x·Φ(x)`, the exact (erf) GELU (ScalarE)
    Gelu,
    /// `x·σ(x)` (ScalarE)
    Silu,
    /// `eˣ` (ScalarE)
    Exp,
    /// `ln x` (ScalarE)
    Log,
    /// `tanh x` (ScalarE)
    Tanh,
    /// `σ(x)` (ScalarE)
    Sigmoid,
    /// `√x` (ScalarE)
    Sqrt,
    /// `1/√x` (ScalarE)
    Rsqrt,
}

impl UnaryOp {
    fn names(self) -> (&'static str, &'static str) {
        match self {
            UnaryOp::Neg => ("aten::neg", "neg"),
            UnaryOp::Relu => ("aten::relu", "relu"),
            UnaryOp::Gelu => ("aten::gelu", "gelu"),
            UnaryOp::Silu => ("aten::silu", "silu"),
            UnaryOp::Exp => ("aten::exp", "exp"),
            UnaryOp::Log => ("aten::log", "log"),
            UnaryOp::Tanh => ("aten::tanh", "tanh"),
            UnaryOp::Sigmoid => ("aten::sigmoid", "sigmoid"),
            UnaryOp::Sqrt => ("aten::sqrt", "sqrt"),
            UnaryOp::Rsqrt => ("aten::rsqrt", "rsqrt"),
        }
    }

    fn engine(self) -> Engine {
        match self {
            UnaryOp::Neg | UnaryOp::Relu => Engine::Vector,
            _ => Engine::Scalar,
        }
    }

    /// The op on one value (computed in `f64`).
    pub fn apply(self, x: f64) -> f64 {
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Relu => x.max(0.0),
            UnaryOp::Gelu => x * normal_cdf(x),
            UnaryOp::Silu => x * sigmoid(x),
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Sigmoid => sigmoid(x),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        }
    }
}

pub(crate) fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The error function, from the complementary-error-function approximation with
/// fractional error below 1.2e-7 everywhere (Numerical Recipes, `erfcc`).
pub(crate) fn erf(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 {
        1.0 - erfc
    } else {
        erfc - 1.0
    }
}

/// Φ(x), the standard normal CDF.
pub(crate) fn normal_cdf(x: f64) -> f64 {
    0.5 * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

/// The broadcast shape of `a` and `b`, or `None` if they do not broadcast.
pub(crate) fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    (0..rank)
        .map(|i| {
            let da = if i + a.len() >= rank {
                a[i + a.len() - rank]
            } else {
                1
            };
            let db = if i + b.len() >= rank {
                b[i + b.len() - rank]
            } else {
                1
            };
            match (da, db) {
                _ if da == db => Some(da),
                (1, _) => Some(db),
                (_, 1) => Some(da),
                _ => None,
            }
        })
        .collect()
}

/// For each element of `out_shape`, the index of the element of `in_shape` it reads.
pub(crate) fn broadcast_indices(out_shape: &[usize], in_shape: &[usize]) -> Vec<usize> {
    let rank = out_shape.len();
    let mut strides = vec![0usize; rank];
    let mut stride = 1;
    for i in (0..in_shape.len()).rev() {
        let out_dim = i + rank - in_shape.len();
        strides[out_dim] = if in_shape[i] == 1 { 0 } else { stride };
        stride *= in_shape[i];
    }
    let numel: usize = out_shape.iter().product();
    let mut indices = Vec::with_capacity(numel);
    let mut counter = vec![0usize; rank];
    let mut offset = 0usize;
    for _ in 0..numel {
        indices.push(offset);
        for d in (0..rank).rev() {
            counter[d] += 1;
            offset += strides[d];
            if counter[d] < out_shape[d] {
                break;
            }
            offset -= strides[d] * counter[d];
            counter[d] = 0;
        }
    }
    indices
}

/// Dispatches a flat elementwise kernel over `out_shape` with `streamed` full-size inputs
/// and `broadcast_bytes` of small inputs loaded once.
#[allow(clippy::too_many_arguments)]
pub(crate) fn elementwise(
    op: &'static str,
    kernel: &'static str,
    inputs: &[&Tensor],
    out_shape: &[usize],
    out_dtype: DType,
    stages: Vec<Stage>,
    broadcast_bytes: u64,
    numerics: impl FnOnce(&[Values]) -> Vec<Values>,
) -> Result<Tensor, BackendError> {
    let device = common_device(op, inputs)?;
    let numel = crate::tensor::checked_numel(op, out_shape)?;
    let sixteen_bit = out_dtype == DType::BF16;
    let flops = (numel as u64).saturating_mul(stages.iter().map(|s| s.flops_per_elem).sum::<u64>());
    let mut plan = RowPlan::flat(numel as u64, stages, sixteen_bit);
    for input in inputs {
        if input.numel() == numel {
            plan = plan.load(input.dtype.size_bytes());
        }
    }
    plan.const_bytes = broadcast_bytes;
    let plan = plan.store(out_dtype.size_bytes());
    let call = OpCall {
        op,
        kernel,
        inputs,
        outputs: vec![(out_shape.to_vec(), out_dtype)],
        flops,
        lowering: Lowering::Rows(plan),
    };
    let out = dispatch::dispatch(&device, call, numerics)?;
    Ok(out.into_iter().next().expect("one output"))
}

fn stage(engine: Engine, inputs: u32, kernel: &'static str) -> Stage {
    Stage::new(engine, inputs, instr_name(kernel))
}

pub(crate) fn instr_name(kernel: &'static str) -> NameId {
    runtime_hooks::intern(kernel)
}

impl Tensor {
    /// `op(self, other)` elementwise with broadcasting.
    pub fn binary(&self, op: BinaryOp, other: &Tensor) -> Result<Tensor, BackendError> {
        let (name, kernel) = op.names();
        let inputs = [self, other];
        let dtype = float_dtype(name, &inputs)?;
        let shape = broadcast_shape(&self.shape, &other.shape)
            .ok_or_else(|| shape_error(name, &inputs, "shapes do not broadcast"))?;
        let numel = crate::tensor::checked_numel(name, &shape)?;
        let broadcast_bytes = inputs
            .iter()
            .filter(|t| t.numel() != numel)
            .map(|t| t.size_bytes())
            .sum();
        let (a_shape, b_shape) = (self.shape.clone(), other.shape.clone());
        let out_shape = shape.clone();
        elementwise(
            name,
            kernel,
            &inputs,
            &shape,
            dtype,
            vec![stage(Engine::Vector, 2, kernel)],
            broadcast_bytes,
            move |v| {
                let (a, b) = (v[0].f32(), v[1].f32());
                let out = if *a_shape == *out_shape && *b_shape == *out_shape {
                    a.iter()
                        .zip(b.iter())
                        .map(|(&x, &y)| op.apply(x, y))
                        .collect()
                } else {
                    let ia = broadcast_indices(&out_shape, &a_shape);
                    let ib = broadcast_indices(&out_shape, &b_shape);
                    ia.iter()
                        .zip(&ib)
                        .map(|(&i, &j)| op.apply(a[i], b[j]))
                        .collect()
                };
                vec![Values::F32(out)]
            },
        )
    }

    /// `self + other` (broadcasting).
    pub fn add(&self, other: &Tensor) -> Result<Tensor, BackendError> {
        self.binary(BinaryOp::Add, other)
    }

    /// `self - other` (broadcasting).
    pub fn sub(&self, other: &Tensor) -> Result<Tensor, BackendError> {
        self.binary(BinaryOp::Sub, other)
    }

    /// `self * other` (broadcasting).
    pub fn mul(&self, other: &Tensor) -> Result<Tensor, BackendError> {
        self.binary(BinaryOp::Mul, other)
    }

    /// `self / other` (broadcasting).
    pub fn div(&self, other: &Tensor) -> Result<Tensor, BackendError> {
        self.binary(BinaryOp::Div, other)
    }

    /// `self * scale + shift` with scalars (`aten::add`/`aten::mul` with a scalar are
    /// this op with `scale` 1 or `shift` 0).
    pub fn affine(&self, scale: f64, shift: f64) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::affine_scalar";
        let dtype = float_dtype(OP, &[self])?;
        elementwise(
            OP,
            "affine_scalar",
            &[self],
            &self.shape.clone(),
            dtype,
            vec![stage(Engine::Vector, 1, "affine_scalar")],
            0,
            move |v| {
                vec![Values::F32(
                    v[0].f32()
                        .iter()
                        .map(|&x| (f64::from(x) * scale + shift) as f32)
                        .collect(),
                )]
            },
        )
    }

    /// A copy converted to `dtype` (`aten::_to_copy` with a dtype; to bf16 or fp8 rounds
    /// to nearest even, to i64 truncates). The same tensor if it already has `dtype`.
    pub fn cast(&self, dtype: DType) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::_to_copy";
        if dtype == self.dtype {
            self.check_live(OP)?;
            return Ok(self.clone());
        }
        let shape = self.shape.clone();
        let stage = Stage {
            flops_per_elem: 0,
            ..stage(Engine::Vector, 1, "cast")
        };
        elementwise(OP, "cast", &[self], &shape, dtype, vec![stage], 0, |v| {
            vec![v[0].clone()]
        })
    }

    /// `self + value` with a scalar.
    pub fn add_scalar(&self, value: f64) -> Result<Tensor, BackendError> {
        self.affine(1.0, value)
    }

    /// `self * value` with a scalar.
    pub fn mul_scalar(&self, value: f64) -> Result<Tensor, BackendError> {
        self.affine(value, 0.0)
    }

    /// A unary op.
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor, BackendError> {
        let (name, kernel) = op.names();
        let dtype = float_dtype(name, &[self])?;
        let shape = self.shape.clone();
        elementwise(
            name,
            kernel,
            &[self],
            &shape,
            dtype,
            vec![stage(op.engine(), 1, kernel)],
            0,
            move |v| {
                vec![Values::F32(
                    v[0].f32()
                        .iter()
                        .map(|&x| op.apply(f64::from(x)) as f32)
                        .collect(),
                )]
            },
        )
    }

    /// ReLU.
    pub fn relu(&self) -> Result<Tensor, BackendError> {
        self.unary(UnaryOp::Relu)
    }

    /// Exact (erf) GELU.
    pub fn gelu(&self) -> Result<Tensor, BackendError> {
        self.unary(UnaryOp::Gelu)
    }

    /// SiLU (swish).
    pub fn silu(&self) -> Result<Tensor, BackendError> {
        self.unary(UnaryOp::Silu)
    }

    /// `eˣ`.
    pub fn exp(&self) -> Result<Tensor, BackendError> {
        self.unary(UnaryOp::Exp)
    }

    /// The gradient of an activation: `grad · f'(self)` for `f` GELU, SiLU or ReLU
    /// (`aten::gelu_backward`, `aten::silu_backward`, `aten::threshold_backward`).
    pub fn activation_backward(&self, op: UnaryOp, grad: &Tensor) -> Result<Tensor, BackendError> {
        let (name, kernel) = match op {
            UnaryOp::Gelu => ("aten::gelu_backward", "gelu_backward"),
            UnaryOp::Silu => ("aten::silu_backward", "silu_backward"),
            UnaryOp::Relu => ("aten::threshold_backward", "relu_backward"),
            other => {
                return Err(BackendError::InvalidArgument {
                    op: "activation_backward",
                    reason: format!("no backward op for {other:?}; use gelu, silu or relu"),
                })
            }
        };
        let inputs = [grad, self];
        let dtype = float_dtype(name, &inputs)?;
        if grad.shape != self.shape {
            return Err(shape_error(
                name,
                &inputs,
                "grad and input must have the same shape",
            ));
        }
        let shape = self.shape.clone();
        let stages = vec![
            stage(Engine::Scalar, 1, kernel),
            stage(Engine::Vector, 2, kernel),
        ];
        elementwise(name, kernel, &inputs, &shape, dtype, stages, 0, move |v| {
            let (g, x) = (v[0].f32(), v[1].f32());
            let out = g
                .iter()
                .zip(x.iter())
                .map(|(&g, &x)| {
                    let x = f64::from(x);
                    let d = match op {
                        UnaryOp::Gelu => {
                            let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
                            normal_cdf(x) + x * pdf
                        }
                        UnaryOp::Silu => {
                            let s = sigmoid(x);
                            s * (1.0 + x * (1.0 - s))
                        }
                        _ => f64::from(u8::from(x > 0.0)),
                    };
                    (f64::from(g) * d) as f32
                })
                .collect();
            vec![Values::F32(out)]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_and_gelu_match_known_values() {
        assert!((erf(0.5) - 0.520_499_877_813_046_5).abs() < 2e-7);
        assert!((erf(-1.5) + 0.966_105_146_475_310_7).abs() < 2e-7);
        assert!((UnaryOp::Gelu.apply(1.0) - 0.841_344_746_068_542_9).abs() < 2e-7);
        assert!((UnaryOp::Gelu.apply(-1.0) + 0.158_655_253_931_457_07).abs() < 2e-7);
    }

    #[test]
    fn broadcasting_follows_numpy_rules() {
        assert_eq!(broadcast_shape(&[2, 3], &[3]), Some(vec![2, 3]));
        assert_eq!(broadcast_shape(&[4, 1, 3], &[2, 1]), Some(vec![4, 2, 3]));
        assert_eq!(broadcast_shape(&[2, 3], &[2]), None);
        assert_eq!(broadcast_indices(&[2, 3], &[3]), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(broadcast_indices(&[2, 3], &[2, 1]), vec![0, 0, 0, 1, 1, 1]);
    }
}
