//! Elementwise ops: one FLOP per output element (TraceLens's convention, whatever the
//! function: an `exp` and an `add` both count one), bytes every tensor input read once
//! and the output written once. The output has the broadcast shape of the tensor inputs
//! and the first tensor input's type (a comparison's is `bool`). A copy reads its source
//! and writes its destination; a fill only writes, and counts no FLOPs.

use super::{elems, make_cost, CostResult};
use crate::args::OpArgs;
use crate::cost::{Category, Unit};
use crate::dtype::DType;

/// How an elementwise op moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Reads its tensor inputs, writes one output of their broadcast shape.
    Map,
    /// Like [`Kind::Map`], with a `bool` output.
    Compare,
    /// `where(cond, a, b)`: the output has `a`'s type.
    Select,
    /// `copy_(dst, src)`: reads `src`, writes `dst`.
    Copy,
    /// `fill_`/`zero_`: writes its first argument.
    Fill,
    /// `upsample_*(input, output_size, …)`: reads the input, writes the output of size
    /// N × C × `output_size`; one FLOP per output element.
    Resize,
}

const MAP: &[&str] = &[
    "abs",
    "neg",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "asin",
    "acos",
    "atan",
    "sigmoid",
    "silu",
    "gelu",
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "selu",
    "celu",
    "hardswish",
    "hardsigmoid",
    "hardtanh",
    "mish",
    "softplus",
    "erf",
    "erfc",
    "erfinv",
    "reciprocal",
    "sign",
    "sgn",
    "floor",
    "ceil",
    "round",
    "trunc",
    "frac",
    "clamp",
    "clamp_min",
    "clamp_max",
    "clip",
    "pow",
    "square",
    "bitwise_not",
    "logical_not",
    "nan_to_num",
    "add",
    "sub",
    "rsub",
    "mul",
    "div",
    "true_divide",
    "floor_divide",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "remainder",
    "fmod",
    "atan2",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "logical_and",
    "logical_or",
    "logical_xor",
    "addcmul",
    "addcdiv",
    "lerp",
    "masked_fill",
    "xlogy",
    "hypot",
    "gelu_backward",
    "silu_backward",
    "sigmoid_backward",
    "tanh_backward",
    "threshold_backward",
    "hardswish_backward",
    "hardsigmoid_backward",
    "leaky_relu_backward",
    "elu_backward",
    "softplus_backward",
    "mish_backward",
    "threshold",
    "glu",
    "mse_loss",
    "native_dropout",
    "native_dropout_backward",
];

const RESIZE: &[&str] = &[
    "upsample_nearest1d",
    "upsample_nearest2d",
    "upsample_nearest3d",
    "upsample_linear1d",
    "upsample_bilinear2d",
    "upsample_bicubic2d",
    "upsample_trilinear3d",
    "_upsample_nearest_exact1d",
    "_upsample_nearest_exact2d",
    "_upsample_bilinear2d_aa",
];

const COMPARE: &[&str] = &[
    "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite",
];

/// The kind of an elementwise op (in-place `x_` forms included), `None` for others.
pub(super) fn kind(base: &str) -> Option<Kind> {
    match base {
        "copy_" => return Some(Kind::Copy),
        "fill_" | "zero_" => return Some(Kind::Fill),
        "where" => return Some(Kind::Select),
        _ => {}
    }
    let name = base.strip_suffix('_').unwrap_or(base);
    if RESIZE.contains(&name) {
        Some(Kind::Resize)
    } else if COMPARE.contains(&name) {
        Some(Kind::Compare)
    } else if MAP.contains(&name) {
        Some(Kind::Map)
    } else {
        None
    }
}

/// The broadcast shape of `shapes` (right-aligned), `None` when they do not broadcast.
pub(crate) fn broadcast(shapes: &[&[i64]]) -> Option<Vec<i64>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1i64; rank];
    for shape in shapes {
        let offset = rank - shape.len();
        for (i, &d) in shape.iter().enumerate() {
            let slot = &mut out[offset + i];
            if *slot == 1 {
                *slot = d;
            } else if d != 1 && d != *slot {
                return None;
            }
        }
    }
    Some(out)
}

pub(super) fn cost(base: &str, args: &OpArgs) -> CostResult {
    let kind = kind(base).ok_or_else(|| format!("no elementwise model for `{base}`"))?;
    let tensors: Vec<(&[i64], DType)> = args
        .tensors()
        .filter_map(|a| Some((a.tensor_dims()?, a.dtype?)))
        .collect();
    let Some(&(first_dims, first_type)) = tensors.first() else {
        return Err("no tensor argument of a known type".to_owned());
    };
    let bytes_of = |dims: &[i64], t: DType| elems(dims) * t.bytes() as f64;
    let (flops, bytes, out_dims, compute_type) = match kind {
        Kind::Fill => (
            0.0,
            bytes_of(first_dims, first_type),
            first_dims.to_vec(),
            first_type,
        ),
        Kind::Copy => {
            let &(src_dims, src_type) = tensors.get(1).ok_or("copy_ without a source tensor")?;
            let n = elems(first_dims);
            (
                n,
                bytes_of(src_dims, src_type) + bytes_of(first_dims, first_type),
                first_dims.to_vec(),
                src_type,
            )
        }
        Kind::Resize => {
            let size = args
                .get(1)
                .and_then(|a| a.int_list())
                .filter(|s| !s.is_empty())
                .ok_or("the output size is not recorded (scale factors only)")?;
            if first_dims.len() != size.len() + 2 {
                return Err(format!("output size {size:?} for input {first_dims:?}"));
            }
            let out: Vec<i64> = first_dims[..2].iter().copied().chain(size).collect();
            (
                elems(&out),
                bytes_of(first_dims, first_type) + bytes_of(&out, first_type),
                out,
                first_type,
            )
        }
        Kind::Map | Kind::Compare | Kind::Select => {
            let shapes: Vec<&[i64]> = tensors.iter().map(|(d, _)| *d).collect();
            let out = broadcast(&shapes)
                .ok_or_else(|| format!("tensor shapes do not broadcast: {shapes:?}"))?;
            let out_type = match kind {
                Kind::Compare => DType::Bool,
                Kind::Select => tensors.get(1).map_or(first_type, |t| t.1),
                _ => first_type,
            };
            let read: f64 = tensors.iter().map(|(d, t)| bytes_of(d, *t)).sum();
            (
                elems(&out),
                read + bytes_of(&out, out_type),
                out,
                first_type,
            )
        }
    };
    let params = format!("shape={out_dims:?}");
    Ok(make_cost(
        Category::Elementwise,
        flops,
        bytes,
        Unit::Vector,
        compute_type,
        params,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broadcast_multiply_reads_both_inputs_and_writes_the_full_shape() {
        let args = OpArgs::parse(
            "[[16, 16, 559, 64], [1, 1, 559, 64]]",
            r#"["c10::BFloat16", "c10::BFloat16"]"#,
            "",
            "",
        )
        .unwrap();
        let c = cost("mul", &args).unwrap();
        assert_eq!(c.flops, 9_158_656.0);
        assert_eq!(c.bytes / 1048576.0, 35.0057373046875);
    }

    #[test]
    fn a_zero_dim_double_counts_one_element() {
        let args = OpArgs::parse(
            "[[16, 559, 1], [], []]",
            r#"["float", "double", "Scalar"]"#,
            "",
            "",
        )
        .unwrap();
        let c = cost("add", &args).unwrap();
        assert_eq!(c.bytes, (8944.0 * 4.0 * 2.0) + 8.0);
    }

    #[test]
    fn a_converting_copy_reads_the_source_type_and_writes_the_destination_type() {
        let args = OpArgs::parse(
            "[[16, 559, 1024], [16, 559, 1024], []]",
            r#"["float", "c10::BFloat16", "Scalar"]"#,
            "",
            "",
        )
        .unwrap();
        let c = cost("copy_", &args).unwrap();
        assert_eq!(c.bytes / 1048576.0, 52.40625);
    }
}
