//! Convolutions: FLOPs 2 · N · C_out · ∏out · (C_in / groups) · ∏kernel (plus one add
//! per output element for a bias); bytes input, weight, bias and output once each.
//! Backward: each gradient asked for (`output_mask`) costs one forward's FLOPs (the bias
//! gradient one add per output element).

use super::{elems, make_cost, optional_tensor, tensor, CostResult};
use crate::args::OpArgs;
use crate::cost::{Category, Unit};

/// `Some(backward)` for convolution ops.
pub(super) fn is_conv(base: &str) -> Option<bool> {
    match base {
        "convolution"
        | "_convolution"
        | "conv1d"
        | "conv2d"
        | "conv3d"
        | "conv_transpose1d"
        | "conv_transpose2d"
        | "conv_transpose3d"
        | "cudnn_convolution"
        | "cudnn_convolution_transpose"
        | "miopen_convolution"
        | "miopen_convolution_transpose"
        | "miopen_depthwise_convolution"
        | "mkldnn_convolution"
        | "_convolution_mode"
        | "_slow_conv2d_forward"
        | "slow_conv3d_forward"
        | "thnn_conv2d" => Some(false),
        "convolution_backward"
        | "_slow_conv2d_backward"
        | "cudnn_convolution_backward"
        | "miopen_convolution_backward"
        | "mkldnn_convolution_backward" => Some(true),
        _ => None,
    }
}

/// The geometry of one convolution.
struct Conv {
    flops: f64,
    out_elems: f64,
    params: String,
}

fn geometry(
    input: &[i64],
    weight: &[i64],
    args: &OpArgs,
    first_scalar: usize,
) -> Result<Conv, String> {
    let spatial = weight
        .len()
        .checked_sub(2)
        .filter(|&s| s >= 1)
        .ok_or("weight has no spatial dims")?;
    if input.len() != spatial + 2 {
        return Err(format!(
            "input {input:?} and weight {weight:?} ranks differ"
        ));
    }
    let list = |i: usize, default: i64| -> Result<Vec<i64>, String> {
        let Some(arg) = args.get(i) else {
            return Ok(vec![default; spatial]);
        };
        let mut values = arg
            .int_list()
            .or_else(|| arg.int().map(|v| vec![v]))
            .ok_or_else(|| format!("argument {i}: `{}` is not a list of sizes", arg.concrete))?;
        if values.len() == 1 {
            values = vec![values[0]; spatial];
        }
        if values.len() != spatial {
            return Err(format!(
                "argument {i}: {values:?} for {spatial} spatial dims"
            ));
        }
        Ok(values)
    };
    let stride = list(first_scalar, 1)?;
    let padding = list(first_scalar + 1, 0)?;
    let dilation = list(first_scalar + 2, 1)?;
    let transposed = args
        .get(first_scalar + 3)
        .and_then(|a| a.bool())
        .unwrap_or(false);
    let output_padding = list(first_scalar + 4, 0)?;
    let groups = args
        .get(first_scalar + 5)
        .and_then(|a| a.int())
        .unwrap_or(1)
        .max(1);
    let n = input[0] as f64;
    let in_sp = &input[2..];
    let k_sp = &weight[2..];
    let out_sp: Vec<i64> = (0..spatial)
        .map(|i| {
            let eff_k = dilation[i] * (k_sp[i] - 1);
            if transposed {
                (in_sp[i] - 1) * stride[i] - 2 * padding[i] + eff_k + output_padding[i] + 1
            } else {
                (in_sp[i] + 2 * padding[i] - eff_k - 1) / stride[i].max(1) + 1
            }
        })
        .collect();
    if out_sp.iter().any(|&d| d <= 0) {
        return Err(format!("output spatial dims {out_sp:?} are empty"));
    }
    let (c_in, c_out) = if transposed {
        (input[1] as f64, weight[1] as f64 * groups as f64)
    } else {
        (input[1] as f64, weight[0] as f64)
    };
    // Each output element is a dot product of (C_in / groups) · ∏kernel terms; for a
    // transposed convolution each input element scatters the same number.
    let flops = if transposed {
        2.0 * n * c_in * elems(in_sp) * (c_out / groups as f64) * elems(k_sp)
    } else {
        2.0 * n * c_out * elems(&out_sp) * (c_in / groups as f64) * elems(k_sp)
    };
    Ok(Conv {
        flops,
        out_elems: n * c_out * elems(&out_sp),
        params: format!(
            "conv{spatial}d in={input:?} w={weight:?} stride={stride:?} pad={padding:?} dil={dilation:?} groups={groups}{}",
            if transposed { " transposed" } else { "" }
        ),
    })
}

pub(super) fn cost(base: &str, args: &OpArgs) -> CostResult {
    match base {
        "convolution" | "_convolution" => {
            let (x, xt) = tensor(args, 0, "input")?;
            let (w, wt) = tensor(args, 1, "weight")?;
            let g = geometry(&x, &w, args, 3)?;
            let bias = optional_tensor(args, 2);
            let bias_bytes = bias.as_ref().map_or(0.0, |(d, t)| elems(d) * t.bytes() as f64);
            let flops = g.flops + if bias.is_some() { g.out_elems } else { 0.0 };
            let bytes = elems(&x) * xt.bytes() as f64
                + elems(&w) * wt.bytes() as f64
                + bias_bytes
                + g.out_elems * xt.bytes() as f64;
            Ok(make_cost(Category::ConvFwd, flops, bytes, Unit::Matrix, xt, g.params))
        }
        "convolution_backward" => {
            let (dy, dyt) = tensor(args, 0, "grad_output")?;
            let (x, xt) = tensor(args, 1, "input")?;
            let (w, wt) = tensor(args, 2, "weight")?;
            let g = geometry(&x, &w, args, 4)?;
            let mask = args
                .get(10)
                .map(|a| a.concrete.clone())
                .unwrap_or_default();
            let mask: Vec<bool> = mask
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .map(|s| s.trim() == "True" || s.trim() == "true" || s.trim() == "1")
                .collect();
            let want = |i: usize| mask.get(i).copied().unwrap_or(true);
            let (x_bytes, w_bytes) = (elems(&x) * xt.bytes() as f64, elems(&w) * wt.bytes() as f64);
            let mut flops = 0.0;
            let mut bytes = elems(&dy) * dyt.bytes() as f64;
            if want(0) {
                flops += g.flops;
                bytes += w_bytes + x_bytes;
            }
            if want(1) {
                flops += g.flops;
                bytes += x_bytes + w_bytes;
            }
            if want(2) && mask.len() > 2 {
                flops += g.out_elems;
            }
            Ok(make_cost(Category::ConvBwd, flops, bytes, Unit::Matrix, xt, g.params))
        }
        other => Err(format!(
            "`{other}` is the inner op of `aten::convolution`/`convolution_backward`, which the model costs"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_embedding_conv_counts_its_dot_products() {
        let args = OpArgs::parse(
            "[[4, 3, 224, 224], [768, 3, 16, 16], [], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]"#,
            "",
            r#"["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"]"#,
        )
        .unwrap();
        let c = cost("convolution", &args).unwrap();
        assert_eq!(c.flops, 924_844_032.0);
        assert_eq!(c.bytes / 1048576.0, 3.421875);
    }
}
