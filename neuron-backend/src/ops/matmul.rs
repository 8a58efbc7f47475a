//! Matrix multiplication (batched) and linear layers, on TensorE; numerics by the
//! `matrixmultiply` crate's optimized `sgemm`.

use super::shape_error;
use crate::dispatch::{self, common_device, Lowering, OpCall};
use crate::tensor::{checked_numel, Values};
use crate::timing::cost::Precision;
use crate::timing::lower::MatmulPlan;
use crate::{BackendError, DType, Tensor};

/// `c[m×n] = a[m×k] · b` where `b` is `k×n` (or `n×k` read transposed when `b_transposed`).
pub(crate) fn sgemm(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    m: usize,
    k: usize,
    n: usize,
    b_transposed: bool,
) {
    // Checked products: a wrapped one would pass this check and let the kernel read
    // and write past the slices (the callers check their shapes first; this is the
    // last line).
    let holds =
        |len: usize, rows: usize, cols: usize| rows.checked_mul(cols).is_some_and(|n| len >= n);
    assert!(
        holds(a.len(), m, k) && holds(b.len(), k, n) && holds(c.len(), m, n),
        "sgemm operand sizes"
    );
    let (rsb, csb) = if b_transposed {
        (1, k as isize)
    } else {
        (n as isize, 1)
    };
    // SAFETY: the assertion above guarantees that `a` holds m×k elements read with row
    // stride k, `b` holds k×n elements read with strides (rsb, csb) covering exactly
    // k×n positions of a k×n or n×k row-major buffer, and `c` has room for m×n elements
    // written with row stride n; the slices do not alias (`c` is borrowed mutably).
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            rsb,
            csb,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// The product of `factors` as FLOPs, saturating: shapes whose work passes `u64` (an
/// empty operand beside huge dimensions) count as `u64::MAX` rather than wrap.
fn flops(factors: &[usize]) -> u64 {
    factors
        .iter()
        .try_fold(1u64, |n, &f| n.checked_mul(u64::try_from(f).ok()?))
        .unwrap_or(u64::MAX)
}

/// The input dtype (both operands) and the output dtype of a matmul: f32 → f32,
/// bf16 → bf16, fp8 e4m3 → bf16.
fn matmul_dtypes(op: &'static str, inputs: &[&Tensor]) -> Result<(DType, DType), BackendError> {
    let dtype = inputs[0].dtype;
    let out = match dtype {
        DType::F32 | DType::BF16 => dtype,
        DType::F8E4M3 => DType::BF16,
        DType::I64 => DType::I64,
    };
    if dtype == DType::I64 || inputs.iter().any(|t| t.dtype != dtype) {
        return Err(BackendError::DTypeMismatch {
            op,
            dtypes: inputs.iter().map(|t| t.dtype).collect(),
            expected: "two f32, two bf16 or two fp8 e4m3 operands".into(),
        });
    }
    Ok((dtype, out))
}

impl Tensor {
    /// Matrix product: `[.., m, k] × [k, n]` (the RHS shared by every batch) or
    /// `[.., m, k] × [.., k, n]` with equal batch dimensions.
    pub fn matmul(&self, rhs: &Tensor) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::matmul";
        let inputs = [self, rhs];
        let (dtype, out_dtype) = matmul_dtypes(OP, &inputs)?;
        let (a, b) = (&self.shape, &rhs.shape);
        if a.len() < 2 || b.len() < 2 {
            return Err(shape_error(
                OP,
                &inputs,
                "both operands need at least 2 dimensions",
            ));
        }
        let (m, k) = (a[a.len() - 2], a[a.len() - 1]);
        let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
        if k != k2 {
            return Err(shape_error(
                OP,
                &inputs,
                format!("inner dimensions differ: {k} vs {k2}"),
            ));
        }
        let rhs_per_batch = b.len() > 2;
        if rhs_per_batch && a[..a.len() - 2] != b[..b.len() - 2] {
            return Err(shape_error(OP, &inputs, "batch dimensions differ"));
        }
        let batch: usize = a[..a.len() - 2].iter().product();
        let mut out_shape = a[..a.len() - 2].to_vec();
        out_shape.extend([m, n]);
        // The output's element count (every product the numerics take is at most this
        // or an operand's, whose counts were checked when they were made).
        checked_numel(OP, &out_shape)?;
        let plan = MatmulPlan {
            batch: batch as u64,
            m: m as u64,
            k: k as u64,
            n: n as u64,
            elem_bytes: dtype.size_bytes(),
            out_elem_bytes: out_dtype.size_bytes(),
            precision: Precision::of(dtype),
            rhs_per_batch,
            bias: false,
        };
        let device = common_device(OP, &inputs)?;
        let call = OpCall {
            op: OP,
            kernel: "matmul",
            inputs: &inputs,
            outputs: vec![(out_shape, out_dtype)],
            flops: flops(&[2, batch, m, k, n]),
            lowering: Lowering::Matmul(plan),
        };
        let out = dispatch::dispatch(&device, call, move |v| {
            let (a, b) = (v[0].f32(), v[1].f32());
            let mut c = vec![0.0f32; batch * m * n];
            for i in 0..batch {
                let b_off = if rhs_per_batch { i * k * n } else { 0 };
                sgemm(
                    &a[i * m * k..],
                    &b[b_off..],
                    &mut c[i * m * n..],
                    m,
                    k,
                    n,
                    false,
                );
            }
            vec![Values::F32(c)]
        })?;
        Ok(out.into_iter().next().expect("one output"))
    }

    /// A linear layer: `self[.., in] · weight[out, in]ᵀ + bias[out]`.
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::linear";
        let mut inputs = vec![self, weight];
        let (dtype, out_dtype) = matmul_dtypes(OP, &inputs)?;
        if let Some(bias) = bias {
            inputs.push(bias);
            if bias.dtype != out_dtype {
                return Err(BackendError::DTypeMismatch {
                    op: OP,
                    dtypes: inputs.iter().map(|t| t.dtype).collect(),
                    expected: format!("a {out_dtype} bias"),
                });
            }
        }
        let x = &self.shape;
        let w = &weight.shape;
        if x.is_empty() || w.len() != 2 || x[x.len() - 1] != w[1] {
            return Err(shape_error(
                OP,
                &inputs,
                "expected input [.., in] and weight [out, in]",
            ));
        }
        let (k, n) = (w[1], w[0]);
        if bias.is_some_and(|b| *b.shape != [n]) {
            return Err(shape_error(OP, &inputs, format!("bias must be [{n}]")));
        }
        let m: usize = x[..x.len() - 1].iter().product();
        let mut out_shape = x[..x.len() - 1].to_vec();
        out_shape.push(n);
        checked_numel(OP, &out_shape)?;
        let plan = MatmulPlan {
            batch: 1,
            m: m as u64,
            k: k as u64,
            n: n as u64,
            elem_bytes: dtype.size_bytes(),
            out_elem_bytes: out_dtype.size_bytes(),
            precision: Precision::of(dtype),
            rhs_per_batch: false,
            bias: bias.is_some(),
        };
        let device = common_device(OP, &inputs)?;
        let has_bias = bias.is_some();
        let call = OpCall {
            op: OP,
            kernel: "linear",
            inputs: &inputs,
            outputs: vec![(out_shape, out_dtype)],
            flops: flops(&[2, m, k, n]).saturating_add(if has_bias { flops(&[m, n]) } else { 0 }),
            lowering: Lowering::Matmul(plan),
        };
        let out = dispatch::dispatch(&device, call, move |v| {
            let (a, b) = (v[0].f32(), v[1].f32());
            let mut c = vec![0.0f32; m * n];
            sgemm(&a, &b, &mut c, m, k, n, true);
            if has_bias {
                let bias = v[2].f32();
                for row in c.chunks_mut(n) {
                    row.iter_mut().zip(bias.iter()).for_each(|(c, b)| *c += b);
                }
            }
            vec![Values::F32(c)]
        })?;
        Ok(out.into_iter().next().expect("one output"))
    }
}
