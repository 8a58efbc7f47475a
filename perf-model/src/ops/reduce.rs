//! Reductions: one FLOP per input element; bytes the input read and the output written.
//! The output has the input's size with the reduced dims removed (all of them when no
//! dim is given). TraceLens counts the output as one element whatever the dims; where a
//! dim is given our bytes are larger by the output's other elements (documented in
//! `docs/HARDWARE.md`, checked in the analysis crate's TraceLens test).

use super::{elems, make_cost, tensor, CostResult};
use crate::args::OpArgs;
use crate::cost::{Category, Unit};
use crate::dtype::DType;

pub(super) fn is_reduce(base: &str) -> bool {
    matches!(
        base,
        "sum"
            | "mean"
            | "amax"
            | "amin"
            | "max"
            | "min"
            | "prod"
            | "all"
            | "any"
            | "argmax"
            | "argmin"
            | "norm"
            | "linalg_vector_norm"
            | "var"
            | "std"
            | "var_mean"
            | "std_mean"
            | "logsumexp"
            | "count_nonzero"
            | "nansum"
            | "aminmax"
    )
}

pub(super) fn cost(base: &str, args: &OpArgs) -> CostResult {
    let (x, xt) = tensor(args, 0, "input")?;
    let dims_index = if matches!(base, "norm" | "linalg_vector_norm") {
        2
    } else {
        1
    };
    let dims: Option<Vec<i64>> = args.get(dims_index).and_then(|a| {
        // A dim list (`[-1]`) or one dim (`-1`); a `dtype` or `keepdim` argument is not.
        if a.type_name == "ScalarList" || a.concrete.starts_with('[') {
            a.int_list()
        } else if a.type_name == "Scalar" && !matches!(base, "sum" | "mean" | "prod" | "nansum") {
            a.int().map(|d| vec![d])
        } else {
            None
        }
    });
    let rank = x.len() as i64;
    let out_elems = match dims {
        Some(dims) if !dims.is_empty() => {
            let mut out = x.clone();
            for d in dims {
                let d = if d < 0 { d + rank } else { d };
                let slot = out
                    .get_mut(usize::try_from(d).map_err(|_| format!("dim {d} out of range"))?)
                    .ok_or_else(|| format!("dim {d} out of range for {x:?}"))?;
                *slot = 1;
            }
            elems(&out)
        }
        _ => 1.0,
    };
    let out_type = match base {
        "all" | "any" => DType::Bool,
        "argmax" | "argmin" | "count_nonzero" => DType::I64,
        _ => xt,
    };
    let n = elems(&x);
    let bytes = n * xt.bytes() as f64 + out_elems * out_type.bytes() as f64;
    let params = format!("in={x:?} out_elems={out_elems}");
    Ok(make_cost(
        Category::Reduce,
        n,
        bytes,
        Unit::Vector,
        xt,
        params,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mean_over_the_last_dim_writes_one_element_per_row() {
        let args = OpArgs::parse(
            "[[16, 559, 1024], [], [], []]",
            r#"["float", "ScalarList", "Scalar", ""]"#,
            "",
            r#"["", "[-1]", "True", ""]"#,
        )
        .unwrap();
        let c = cost("mean", &args).unwrap();
        assert_eq!(c.flops, 9_158_656.0);
        assert_eq!(c.bytes, (9_158_656.0 + 8944.0) * 4.0);
    }
}
