//! Matrix multiplications: FLOPs 2·M·N·K per product (plus M·N for a bias or `beta·C`
//! add), bytes the operands, the bias and the result once each.

use super::{elems, make_cost, optional_tensor, tensor, CostResult};
use crate::args::OpArgs;
use crate::cost::{Category, Unit};
use crate::dtype::DType;

pub(super) fn is_gemm(base: &str) -> bool {
    matches!(
        base,
        "mm" | "addmm"
            | "bmm"
            | "baddbmm"
            | "matmul"
            | "linear"
            | "_scaled_mm"
            | "_grouped_mm"
            | "_scaled_grouped_mm"
            | "addbmm"
            | "_addmm_activation"
    )
}

/// One GEMM: `batch` products of (M×K)·(K×N).
struct Gemm {
    batch: f64,
    m: f64,
    n: f64,
    k: f64,
    a: DType,
    b_bytes: f64,
    a_bytes: f64,
    out: DType,
    bias_bytes: f64,
    bias_add: bool,
}

pub(super) fn cost(base: &str, args: &OpArgs) -> CostResult {
    let gemm = match base {
        "mm" => two_d(args, 0, 1, None)?,
        "addmm" | "_addmm_activation" => two_d(args, 1, 2, Some(0))?,
        "bmm" => batched(args, 0, 1, None)?,
        "baddbmm" => batched(args, 1, 2, Some(0))?,
        "addbmm" => {
            let mut g = batched(args, 1, 2, Some(0))?;
            // Σ over the batch into one M×N result.
            g.bias_add = true;
            g
        }
        "matmul" => matmul(args)?,
        "linear" => linear(args)?,
        "_scaled_mm" => {
            let mut g = two_d(args, 0, 1, None)?;
            if let Some((dims, dtype)) = optional_tensor(args, 4) {
                g.bias_bytes = elems(&dims) * dtype.bytes() as f64;
                g.bias_add = true;
            }
            g.out = out_dtype(args, 6).unwrap_or(g.a);
            g
        }
        "_grouped_mm" => grouped(args, 3, 4)?,
        "_scaled_grouped_mm" => grouped(args, 5, 7)?,
        other => return Err(format!("no GEMM model for `{other}`")),
    };
    let Gemm {
        batch,
        m,
        n,
        k,
        a,
        a_bytes,
        b_bytes,
        out,
        bias_bytes,
        bias_add,
    } = gemm;
    let mut flops = 2.0 * batch * m * n * k;
    if bias_add {
        flops += batch * m * n;
    }
    let out_bytes = batch * m * n * out.bytes() as f64;
    let params = format!(
        "B={batch} M={m} N={n} K={k}{}",
        if bias_add { " bias" } else { "" }
    );
    Ok(make_cost(
        Category::Gemm,
        flops,
        a_bytes + b_bytes + bias_bytes + out_bytes,
        Unit::Matrix,
        a,
        params,
    ))
}

fn bytes_of(dims: &[i64], dtype: DType) -> f64 {
    elems(dims) * dtype.bytes() as f64
}

fn two_d(args: &OpArgs, ia: usize, ib: usize, bias: Option<usize>) -> Result<Gemm, String> {
    let (a, at) = tensor(args, ia, "A")?;
    let (b, bt) = tensor(args, ib, "B")?;
    let [m, k] = dims2(&a)?;
    let [k2, n] = dims2(&b)?;
    if k != k2 {
        return Err(format!("inner sizes differ: {a:?} × {b:?}"));
    }
    let bias = bias.and_then(|i| optional_tensor(args, i));
    Ok(Gemm {
        batch: 1.0,
        m: m as f64,
        n: n as f64,
        k: k as f64,
        a: at,
        a_bytes: bytes_of(&a, at),
        b_bytes: bytes_of(&b, bt),
        out: at,
        bias_bytes: bias.as_ref().map_or(0.0, |(d, t)| bytes_of(d, *t)),
        bias_add: bias.is_some(),
    })
}

fn dims2(dims: &[i64]) -> Result<[i64; 2], String> {
    match dims {
        [x, y] => Ok([*x, *y]),
        _ => Err(format!("expected a matrix, got dims {dims:?}")),
    }
}

fn batched(args: &OpArgs, ia: usize, ib: usize, bias: Option<usize>) -> Result<Gemm, String> {
    let (a, at) = tensor(args, ia, "A")?;
    let (b, bt) = tensor(args, ib, "B")?;
    let ([bb, m, k], [bb2, k2, n]) = (dims3(&a)?, dims3(&b)?);
    if k != k2 || bb != bb2 {
        return Err(format!("batched sizes differ: {a:?} × {b:?}"));
    }
    let bias = bias.and_then(|i| optional_tensor(args, i));
    Ok(Gemm {
        batch: bb as f64,
        m: m as f64,
        n: n as f64,
        k: k as f64,
        a: at,
        a_bytes: bytes_of(&a, at),
        b_bytes: bytes_of(&b, bt),
        out: at,
        bias_bytes: bias.as_ref().map_or(0.0, |(d, t)| bytes_of(d, *t)),
        bias_add: bias.is_some(),
    })
}

fn dims3(dims: &[i64]) -> Result<[i64; 3], String> {
    match dims {
        [x, y, z] => Ok([*x, *y, *z]),
        _ => Err(format!("expected a batch of matrices, got dims {dims:?}")),
    }
}

/// `matmul`'s broadcasting: 1-D operands are a row or a column; leading dims broadcast.
fn matmul(args: &OpArgs) -> Result<Gemm, String> {
    let (a, at) = tensor(args, 0, "A")?;
    let (b, bt) = tensor(args, 1, "B")?;
    if a.is_empty() || b.is_empty() {
        return Err("matmul of a 0-d tensor".to_owned());
    }
    let (m, k) = if a.len() == 1 {
        (1, a[0])
    } else {
        (a[a.len() - 2], a[a.len() - 1])
    };
    let (k2, n) = if b.len() == 1 {
        (b[0], 1)
    } else {
        (b[b.len() - 2], b[b.len() - 1])
    };
    if k != k2 {
        return Err(format!("inner sizes differ: {a:?} × {b:?}"));
    }
    let lead_a = &a[..a.len().saturating_sub(2)];
    let lead_b = &b[..b.len().saturating_sub(2)];
    let batch = crate::ops::elementwise::broadcast(&[lead_a, lead_b])
        .ok_or_else(|| format!("batch dims do not broadcast: {a:?} × {b:?}"))?;
    Ok(Gemm {
        batch: elems(&batch),
        m: m as f64,
        n: n as f64,
        k: k as f64,
        a: at,
        a_bytes: bytes_of(&a, at),
        b_bytes: bytes_of(&b, bt),
        out: at,
        bias_bytes: 0.0,
        bias_add: false,
    })
}

/// `linear(input[..., K], weight[N, K], bias?)`.
fn linear(args: &OpArgs) -> Result<Gemm, String> {
    let (x, xt) = tensor(args, 0, "input")?;
    let (w, wt) = tensor(args, 1, "weight")?;
    let [n, k] = dims2(&w)?;
    if x.last() != Some(&k) {
        return Err(format!("input {x:?} does not end in K of weight {w:?}"));
    }
    let m = elems(&x[..x.len() - 1]);
    let bias = optional_tensor(args, 2);
    Ok(Gemm {
        batch: 1.0,
        m,
        n: n as f64,
        k: k as f64,
        a: xt,
        a_bytes: bytes_of(&x, xt),
        b_bytes: bytes_of(&w, wt),
        out: xt,
        bias_bytes: bias.as_ref().map_or(0.0, |(d, t)| bytes_of(d, *t)),
        bias_add: bias.is_some(),
    })
}

/// `_grouped_mm(a, b, offs, bias, out_dtype)` and the scaled form: a 2-D `a` of all
/// groups' rows against a 3-D `b` (one K×N per group), both 3-D (one product per group),
/// or both 2-D (groups split K).
fn grouped(args: &OpArgs, bias_index: usize, out_dtype_index: usize) -> Result<Gemm, String> {
    let (a, at) = tensor(args, 0, "A")?;
    let (b, bt) = tensor(args, 1, "B")?;
    let (batch, m, n, k, out_batch) = match (a.as_slice(), b.as_slice()) {
        ([m, k], [_, k2, n]) if k == k2 => (1, *m, *n, *k, 1),
        ([g, m, k], [g2, k2, n]) if g == g2 && k == k2 => (*g, *m, *n, *k, *g),
        ([m, k], [k2, n]) if k == k2 => {
            // Groups split K: one M×N result per group.
            let groups =
                optional_tensor(args, 2).map_or(1, |(d, _)| d.first().copied().unwrap_or(1));
            (1, *m, *n, *k, groups)
        }
        _ => return Err(format!("no grouped-GEMM layout for {a:?} × {b:?}")),
    };
    let out = out_dtype(args, out_dtype_index).unwrap_or(at);
    let bias = optional_tensor(args, bias_index);
    // The result is counted as `batch` M×N blocks in `cost`; a K-split grouping writes
    // one block per group, so its extra blocks go into the bias bytes' slot.
    let extra_out = (out_batch - batch).max(0) as f64 * (m * n) as f64 * out.bytes() as f64;
    Ok(Gemm {
        batch: batch as f64,
        m: m as f64,
        n: n as f64,
        k: k as f64,
        a: at,
        a_bytes: bytes_of(&a, at),
        b_bytes: bytes_of(&b, bt),
        out,
        bias_bytes: bias.as_ref().map_or(0.0, |(d, t)| bytes_of(d, *t)) + extra_out,
        bias_add: bias.is_some(),
    })
}

/// An `out_dtype` argument given as a `ScalarType` code.
fn out_dtype(args: &OpArgs, i: usize) -> Option<DType> {
    DType::from_scalar_type_code(args.get(i)?.int()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dims: &str, types: &str) -> OpArgs {
        OpArgs::parse(dims, types, "", "").unwrap()
    }

    #[test]
    fn mm_counts_two_flops_per_multiply_add_and_each_operand_once() {
        let a = args(
            "[[8944, 1024], [1024, 2816]]",
            r#"["c10::BFloat16", "c10::BFloat16"]"#,
        );
        let c = cost("mm", &a).unwrap();
        assert_eq!(c.flops, 51_581_550_592.0);
        assert_eq!(c.bytes / 1048576.0, 71.0078125);
    }

    #[test]
    fn addmm_adds_the_bias_once_per_output_element() {
        let a = args(
            "[[1024], [8944, 1024], [1024, 1024], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]"#,
        );
        let c = cost("addmm", &a).unwrap();
        assert_eq!(c.flops, 18_766_086_144.0);
        assert_eq!(c.bytes / 1048576.0, 36.939453125);
    }

    #[test]
    fn matmul_broadcasts_batch_dims() {
        let a = args("[[2, 3, 4, 5], [5, 6]]", r#"["float", "float"]"#);
        let c = cost("matmul", &a).unwrap();
        assert_eq!(c.flops, 2.0 * 6.0 * 4.0 * 6.0 * 5.0);
    }
}
