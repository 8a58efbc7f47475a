//! Data movement: embedding lookups, `index_select`, `gather`, scatters, `cat`. No
//! FLOPs (a scatter-add counts one per element added); bytes the indices read and each
//! element gathered read and written once.

use super::{elems, make_cost, tensor, CostResult};
use crate::args::{OpArgs, Shape};
use crate::cost::{Category, Unit};

pub(super) fn is_memory(base: &str) -> bool {
    matches!(
        base,
        "cat"
            | "stack"
            | "index_select"
            | "gather"
            | "scatter"
            | "scatter_"
            | "scatter_add"
            | "scatter_add_"
            | "index_add_"
            | "index_add"
            | "index"
            | "index_put_"
            | "_index_put_impl_"
            | "_local_scalar_dense"
            | "item"
            | "masked_select"
            | "nonzero"
            | "repeat"
            | "roll"
            | "flip"
            | "constant_pad_nd"
            | "embedding_bag"
            | "_embedding_bag"
    )
}

pub(super) fn cost(base: &str, args: &OpArgs) -> CostResult {
    match base {
        "embedding" => {
            let (w, wt) = tensor(args, 0, "weight")?;
            let (idx, it) = tensor(args, 1, "indices")?;
            let row = elems(&w[1..]);
            let out = elems(&idx) * row * wt.bytes() as f64;
            let bytes = elems(&idx) * it.bytes() as f64 + 2.0 * out;
            Ok(make_cost(Category::Embedding, 0.0, bytes, Unit::Vector, wt, format!("table={w:?} indices={idx:?}")))
        }
        "embedding_dense_backward" => {
            let (g, gt) = tensor(args, 0, "grad_output")?;
            let (idx, it) = tensor(args, 1, "indices")?;
            let rows = args.get(2).and_then(|a| a.int()).ok_or("num_weights is not recorded")?;
            let width = *g.last().ok_or("grad_output is 0-d")? as f64;
            let bytes = elems(&g) * gt.bytes() as f64
                + elems(&idx) * it.bytes() as f64
                + rows as f64 * width * gt.bytes() as f64;
            Ok(make_cost(Category::Embedding, elems(&g), bytes, Unit::Vector, gt, format!("grad={g:?} rows={rows}")))
        }
        "index_select" => {
            let (x, xt) = tensor(args, 0, "self")?;
            let (idx, it) = tensor(args, 2, "index")?;
            let dim = args.get(1).and_then(|a| a.int()).ok_or("dim is not recorded")?;
            let d = if dim < 0 { dim + x.len() as i64 } else { dim };
            let size = *x.get(d as usize).ok_or_else(|| format!("dim {dim} out of range for {x:?}"))?;
            let out = if size > 0 { elems(&x) / size as f64 * elems(&idx) } else { 0.0 };
            let bytes = elems(&idx) * it.bytes() as f64 + 2.0 * out * xt.bytes() as f64;
            Ok(make_cost(Category::Memory, 0.0, bytes, Unit::Vector, xt, format!("self={x:?} index={idx:?}")))
        }
        "gather" => {
            let (x, xt) = tensor(args, 0, "self")?;
            let (idx, it) = tensor(args, 2, "index")?;
            let bytes = elems(&idx) * (it.bytes() + 2 * xt.bytes()) as f64;
            Ok(make_cost(Category::Memory, 0.0, bytes, Unit::Vector, xt, format!("self={x:?} index={idx:?}")))
        }
        "scatter" | "scatter_" | "scatter_add" | "scatter_add_" => {
            let (x, xt) = tensor(args, 0, "self")?;
            let (idx, it) = tensor(args, 2, "index")?;
            let n = elems(&idx);
            let add = base.starts_with("scatter_add");
            // Source and indices read; the destination's elements read (an add) and written.
            let bytes = n * (it.bytes() + xt.bytes()) as f64 + n * xt.bytes() as f64 * if add { 2.0 } else { 1.0 };
            Ok(make_cost(Category::Memory, if add { n } else { 0.0 }, bytes, Unit::Vector, xt, format!("self={x:?} index={idx:?}")))
        }
        "cat" | "stack" => match args.get(0).map(|a| &a.shape) {
            Some(Shape::List(_)) => Err("the element type of a TensorList argument is not recorded (`Input type` says `TensorList`), so bytes cannot be counted".to_owned()),
            _ => Err("the tensors are not recorded as a list".to_owned()),
        },
        "_local_scalar_dense" | "item" => Err("a device-to-host read of one value: its time is latency, not bandwidth".to_owned()),
        other => Err(format!("no data-movement model for `{other}` (its output size depends on values not in the trace, or it is not modeled yet)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_embedding_lookup_reads_the_indices_and_moves_one_row_per_index() {
        let args = OpArgs::parse(
            "[[151936, 1024], [16, 559], [], [], []]",
            r#"["c10::BFloat16", "long int", "Scalar", "Scalar", "Scalar"]"#,
            "",
            "",
        )
        .unwrap();
        let c = cost("embedding", &args).unwrap();
        assert_eq!(c.bytes, 8944.0 * 8.0 + 2.0 * 8944.0 * 1024.0 * 2.0);
    }
}
