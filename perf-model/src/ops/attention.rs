//! Scaled dot-product attention, forward and backward, every variant.
//!
//! Forward FLOPs: 2·B·H·N_Q·N_KV·(d_qk + d_v) (the two products Q·Kᵀ and P·V), halved
//! when causal (TraceLens's convention: the masked half is not computed; the exact
//! fraction, (N+1)/2N for square masks, differs by 1/N). Softmax's element work is not
//! counted. Bytes: Q, K, V read and the output written once.
//!
//! Backward FLOPs: 2.5× the forward (five products — Q·Kᵀ recomputed, dV, dP, dQ, dK —
//! against the forward's two). Bytes: Q, K, V, the output and its gradient read, dQ, dK,
//! dV written.

use super::{elems, make_cost, tensor, CostResult};
use crate::args::OpArgs;
use crate::cost::{Category, Unit};

/// Argument positions of one variant.
struct Variant {
    /// Whether q is [B, N, H, d] (the `_flash_attention_*`/`_efficient_attention_*`
    /// inner ops) rather than [B, H, N, d].
    seq_major: bool,
    /// Position of q (after `grad_out` in the backward ops).
    q: usize,
    /// Position of the causal flag; a mask type (non-zero: causal) with `mask_type`.
    causal: Option<usize>,
    mask_type: bool,
    backward: bool,
}

fn variant(base: &str) -> Option<Variant> {
    let v = |seq_major, q, causal, mask_type, backward| Variant {
        seq_major,
        q,
        causal,
        mask_type,
        backward,
    };
    Some(match base {
        "scaled_dot_product_attention" => v(false, 0, Some(5), false, false),
        "_scaled_dot_product_flash_attention" => v(false, 0, Some(4), false, false),
        "_scaled_dot_product_flash_attention_for_cpu" => v(false, 0, Some(4), false, false),
        "_scaled_dot_product_efficient_attention" => v(false, 0, Some(6), false, false),
        "_scaled_dot_product_cudnn_attention" => v(false, 0, Some(6), false, false),
        "_scaled_dot_product_attention_math" => v(false, 0, Some(5), false, false),
        "_scaled_dot_product_fused_attention_overrideable" => v(false, 0, Some(5), false, false),
        "_flash_attention_forward" => v(true, 0, Some(8), false, false),
        "_efficient_attention_forward" => v(true, 0, Some(9), true, false),
        "_scaled_dot_product_flash_attention_backward" => v(false, 1, Some(11), false, true),
        "_scaled_dot_product_flash_attention_for_cpu_backward" => v(false, 1, Some(6), false, true),
        "_scaled_dot_product_efficient_attention_backward" => v(false, 1, Some(11), false, true),
        "_scaled_dot_product_cudnn_attention_backward" => v(false, 1, Some(14), false, true),
        "_flash_attention_backward" => v(true, 1, Some(11), false, true),
        "_efficient_attention_backward" => v(true, 1, Some(14), true, true),
        _ => return None,
    })
}

/// `Some(backward)` for attention ops.
pub(super) fn is_attention(base: &str) -> Option<bool> {
    variant(base).map(|v| v.backward)
}

pub(super) fn cost(base: &str, args: &OpArgs) -> CostResult {
    let v = variant(base).ok_or_else(|| format!("no attention model for `{base}`"))?;
    let (q, qt) = tensor(args, v.q, "query")?;
    let (k, kt) = tensor(args, v.q + 1, "key")?;
    let (val, vt) = tensor(args, v.q + 2, "value")?;
    let dims4 = |d: &[i64], what: &str| -> Result<[f64; 4], String> {
        match d {
            // [B, H, N, d] or [B, N, H, d]: returned as [B, H, N, d].
            [b, x, y, e] if v.seq_major => Ok([*b as f64, *y as f64, *x as f64, *e as f64]),
            [b, x, y, e] => Ok([*b as f64, *x as f64, *y as f64, *e as f64]),
            [x, y, e] if !v.seq_major => Ok([1.0, *x as f64, *y as f64, *e as f64]),
            _ => Err(format!("{what}: expected 4 dims, got {d:?}")),
        }
    };
    let [b, h_q, n_q, d_qk] = dims4(&q, "query")?;
    let [_, h_kv, n_kv, _] = dims4(&k, "key")?;
    let [_, _, _, d_v] = dims4(&val, "value")?;
    let causal = match v.causal.and_then(|i| args.get(i)) {
        Some(arg) if v.mask_type => arg.int().is_some_and(|m| m != 0),
        Some(arg) => arg.bool().unwrap_or(false),
        None => false,
    };
    let mut flops = 2.0 * b * h_q * n_q * n_kv * (d_qk + d_v);
    if causal {
        flops /= 2.0;
    }
    let qb = elems(&q) * qt.bytes() as f64;
    let kb = elems(&k) * kt.bytes() as f64;
    let vb = elems(&val) * vt.bytes() as f64;
    let out = b * h_q * n_q * d_v * qt.bytes() as f64;
    let (category, flops, bytes) = if v.backward {
        // Read q, k, v, out, grad_out; write dq, dk, dv.
        (
            Category::SdpaBwd,
            flops * 2.5,
            2.0 * (qb + kb + vb) + 2.0 * out,
        )
    } else {
        (Category::SdpaFwd, flops, qb + kb + vb + out)
    };
    let params = format!(
        "B={b} N_Q={n_q} H_Q={h_q} N_KV={n_kv} H_KV={h_kv} d_qk={d_qk} d_v={d_v}{}",
        if causal { " causal" } else { "" }
    );
    Ok(make_cost(category, flops, bytes, Unit::Matrix, qt, params))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causal_flash_attention_counts_half_the_products() {
        let args = OpArgs::parse(
            "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", "Scalar"]"#,
            "",
            r#"["", "", "", "0.", "True", "False", "0.125"]"#,
        )
        .unwrap();
        let c = cost("_scaled_dot_product_flash_attention", &args).unwrap();
        assert_eq!(c.flops, 10_239_377_408.0);
        assert_eq!(c.bytes / 1048576.0, 69.875);
    }
}
