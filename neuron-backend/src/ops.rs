//! The ops: each checks its inputs (errors name the op and shapes), builds its kernel's
//! lowering and numerics, and goes through the [dispatcher](crate::dispatch).
//!
//! Numerics are computed in `f32` (BF16 inputs widened exactly, outputs rounded to
//! nearest even); tests compare them with an `f64` reference.

mod copy;
mod create;
mod elementwise;
mod index;
mod matmul;
mod norm;
mod reduce;
mod rows;
mod shape;

pub(crate) use create::{random_normal, random_u64};
pub use elementwise::{BinaryOp, UnaryOp};

use crate::{BackendError, DType, Tensor};

/// Errors unless every input is a float tensor of one dtype; returns it.
pub(crate) fn float_dtype(op: &'static str, inputs: &[&Tensor]) -> Result<DType, BackendError> {
    let dtype = inputs[0].dtype;
    if !dtype.is_float() || inputs.iter().any(|t| t.dtype != dtype) {
        return Err(BackendError::DTypeMismatch {
            op,
            dtypes: inputs.iter().map(|t| t.dtype).collect(),
            expected: "one floating-point dtype (f32 or bf16) for all inputs".into(),
        });
    }
    Ok(dtype)
}

/// A shape-mismatch error.
pub(crate) fn shape_error(
    op: &'static str,
    inputs: &[&Tensor],
    reason: impl Into<String>,
) -> BackendError {
    BackendError::ShapeMismatch {
        op,
        shapes: inputs.iter().map(|t| t.shape.to_vec()).collect(),
        reason: reason.into(),
    }
}

/// Normalizes a possibly negative dimension index.
pub(crate) fn normalize_dim(
    op: &'static str,
    dim: isize,
    rank: usize,
) -> Result<usize, BackendError> {
    let resolved = if dim < 0 { dim + rank as isize } else { dim };
    if resolved < 0 || resolved as usize >= rank.max(1) {
        return Err(BackendError::IndexOutOfRange {
            op,
            index: dim as i64,
            size: rank,
            what: "dimension of a tensor of that rank".into(),
        });
    }
    Ok(resolved as usize)
}
