//! Normalizations and softmax, forward and backward, per element of the input.
//!
//! FLOPs per element (our convention; TraceLens has no softmax model): a norm's forward
//! 5 (mean 1, variance 2, normalize 2) plus 1 each for a weight and a bias; RMS norm's 3
//! (square-accumulate 2, scale 1) plus 1 for a weight; a backward 8. Softmax forward 5
//! (max, subtract, exp, sum, divide), backward 4. Bytes: the input read and the output
//! written once, every per-channel tensor (weight, bias, running statistics) once, and a
//! backward's incoming gradient, saved statistics and outgoing gradients once each.

use super::{elems, make_cost, optional_tensor, tensor, CostResult};
use crate::args::OpArgs;
use crate::cost::{Category, Unit};
use crate::dtype::DType;

/// `Some(backward)` for normalization ops.
pub(super) fn is_norm(base: &str) -> Option<bool> {
    match base {
        "layer_norm"
        | "native_layer_norm"
        | "rms_norm"
        | "_fused_rms_norm"
        | "group_norm"
        | "native_group_norm"
        | "batch_norm"
        | "native_batch_norm"
        | "_native_batch_norm_legit"
        | "_native_batch_norm_legit_no_training"
        | "_batch_norm_impl_index"
        | "cudnn_batch_norm"
        | "miopen_batch_norm"
        | "instance_norm" => Some(false),
        "native_layer_norm_backward"
        | "_fused_rms_norm_backward"
        | "native_group_norm_backward"
        | "native_batch_norm_backward"
        | "cudnn_batch_norm_backward"
        | "miopen_batch_norm_backward"
        | "_batch_norm_impl_index_backward" => Some(true),
        _ => None,
    }
}

fn bytes(dims: &[i64], t: DType) -> f64 {
    elems(dims) * t.bytes() as f64
}

pub(super) fn cost(base: &str, args: &OpArgs) -> CostResult {
    if is_norm(base) == Some(true) {
        return backward(base, args);
    }
    // The input is the first tensor; weight and bias positions per op.
    let (x, xt) = tensor(args, 0, "input")?;
    let n = elems(&x);
    let (weight_at, bias_at, per_element): (usize, Option<usize>, f64) = match base {
        "layer_norm" | "native_layer_norm" => (2, Some(3), 5.0),
        "rms_norm" | "_fused_rms_norm" => (2, None, 3.0),
        "group_norm" => (2, Some(3), 5.0),
        "native_group_norm" => (1, Some(2), 5.0),
        "instance_norm" => (1, Some(2), 5.0),
        _ => (1, Some(2), 5.0), // the batch norms
    };
    let weight = optional_tensor(args, weight_at);
    let bias = bias_at.and_then(|i| optional_tensor(args, i));
    let mut flops_per = per_element;
    let mut moved = 2.0 * bytes(&x, xt);
    for (dims, t) in weight.iter().chain(bias.iter()) {
        flops_per += 1.0;
        moved += bytes(dims, *t);
    }
    // Running statistics of the batch norms (read, and written when training).
    if matches!(
        base,
        "batch_norm"
            | "native_batch_norm"
            | "_native_batch_norm_legit"
            | "cudnn_batch_norm"
            | "miopen_batch_norm"
            | "_batch_norm_impl_index"
            | "_native_batch_norm_legit_no_training"
    ) {
        for i in [3, 4] {
            if let Some((dims, t)) = optional_tensor(args, i) {
                moved += 2.0 * bytes(&dims, t);
            }
        }
    }
    let params = format!(
        "shape={x:?}{}{}",
        if weight.is_some() { " weight" } else { "" },
        if bias.is_some() { " bias" } else { "" }
    );
    Ok(make_cost(
        Category::NormFwd,
        n * flops_per,
        moved,
        Unit::Vector,
        xt,
        params,
    ))
}

fn backward(base: &str, args: &OpArgs) -> CostResult {
    // Every tensor argument is read once; the input's gradient (the size of the largest
    // tensor) is written, and each per-channel gradient (the weight's size) when a
    // weight is given.
    let tensors: Vec<(Vec<i64>, DType)> = args
        .tensors()
        .filter_map(|a| Some((a.tensor_dims()?.to_vec(), a.dtype?)))
        .collect();
    let (big, bt) = tensors
        .iter()
        .max_by(|a, b| elems(&a.0).total_cmp(&elems(&b.0)))
        .cloned()
        .ok_or("no tensor argument of a known type")?;
    let read: f64 = tensors.iter().map(|(d, t)| bytes(d, *t)).sum();
    let weight_at = match base {
        "native_layer_norm_backward" => 5,
        "_fused_rms_norm_backward" => 4,
        "native_group_norm_backward" => 4,
        "cudnn_batch_norm_backward" | "miopen_batch_norm_backward" => 2,
        _ => 2,
    };
    let per_channel = optional_tensor(args, weight_at).map_or(0.0, |(d, t)| 2.0 * bytes(&d, t));
    let n = elems(&big);
    let params = format!("shape={big:?}");
    Ok(make_cost(
        Category::NormBwd,
        8.0 * n,
        read + bytes(&big, bt) + per_channel,
        Unit::Vector,
        bt,
        params,
    ))
}

/// `_softmax(self, dim, half_to_float)`, `_log_softmax`, and their backward
/// `(grad_output, output, dim, input_dtype)`.
pub(super) fn softmax_cost(base: &str, args: &OpArgs) -> CostResult {
    match base {
        "_softmax" | "_log_softmax" | "softmax" | "log_softmax" => {
            let (x, xt) = tensor(args, 0, "input")?;
            let to_float =
                base.starts_with('_') && args.get(2).and_then(|a| a.bool()).unwrap_or(false);
            let out_type = if to_float { DType::F32 } else { xt };
            let n = elems(&x);
            let moved = n * (xt.bytes() + out_type.bytes()) as f64;
            Ok(make_cost(
                Category::Softmax,
                5.0 * n,
                moved,
                Unit::Vector,
                xt,
                format!("shape={x:?}"),
            ))
        }
        _ => {
            let (g, gt) = tensor(args, 0, "grad_output")?;
            let (y, yt) = tensor(args, 1, "output")?;
            let in_type = args
                .get(3)
                .and_then(|a| a.int())
                .and_then(DType::from_scalar_type_code)
                .unwrap_or(gt);
            let n = elems(&g);
            let moved = bytes(&g, gt) + bytes(&y, yt) + n * in_type.bytes() as f64;
            Ok(make_cost(
                Category::Softmax,
                4.0 * n,
                moved,
                Unit::Vector,
                gt,
                format!("shape={g:?}"),
            ))
        }
    }
}
