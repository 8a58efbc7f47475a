//! The model per operator name: which family a name belongs to ([`category_of`]),
//! whether it is a wrapper whose work its children do ([`is_wrapper`]), and its cost
//! from its arguments ([`model`]).

mod attention;
mod conv;
mod elementwise;
mod gemm;
mod memory;
mod norm;
mod reduce;

use crate::args::OpArgs;
use crate::cost::{Category, ComputeSpec, Model, OpCost, Unit};
use crate::dtype::DType;

/// The op name without its namespace (`aten::addmm` → `addmm`).
pub fn base_name(name: &str) -> &str {
    name.strip_prefix("aten::").unwrap_or(name)
}

/// Composite ops whose kernels their children launch (`linear` → `addmm`, `matmul` →
/// `mm`/`bmm`, `scaled_dot_product_attention` → its flash variant, `conv2d` →
/// `convolution`, `softmax` → `_softmax`, `clone` → `copy_`): the model costs them
/// only where they launch kernels themselves, so the child carries the row.
pub fn is_wrapper(name: &str) -> bool {
    matches!(
        base_name(name),
        "linear"
            | "matmul"
            | "scaled_dot_product_attention"
            | "conv1d"
            | "conv2d"
            | "conv3d"
            | "conv_transpose1d"
            | "conv_transpose2d"
            | "conv_transpose3d"
            | "softmax"
            | "log_softmax"
            | "clone"
            | "contiguous"
            | "to"
            | "_to_copy"
            | "embedding_backward"
            | "dropout"
            | "feature_dropout"
    )
}

/// The family of an op name, whatever its arguments.
pub fn category_of(name: &str) -> Category {
    let base = base_name(name);
    if gemm::is_gemm(base) {
        Category::Gemm
    } else if let Some(bwd) = attention::is_attention(base) {
        if bwd {
            Category::SdpaBwd
        } else {
            Category::SdpaFwd
        }
    } else if let Some(bwd) = conv::is_conv(base) {
        if bwd {
            Category::ConvBwd
        } else {
            Category::ConvFwd
        }
    } else if let Some(bwd) = norm::is_norm(base) {
        if bwd {
            Category::NormBwd
        } else {
            Category::NormFwd
        }
    } else if matches!(
        base,
        "_softmax"
            | "_log_softmax"
            | "softmax"
            | "log_softmax"
            | "_softmax_backward_data"
            | "_log_softmax_backward_data"
    ) {
        Category::Softmax
    } else if reduce::is_reduce(base) {
        Category::Reduce
    } else if elementwise::kind(base).is_some() {
        Category::Elementwise
    } else if matches!(base, "embedding" | "embedding_dense_backward") {
        Category::Embedding
    } else if memory::is_memory(base) {
        Category::Memory
    } else if base.starts_with("_foreach_") || base.starts_with("_fused_") {
        Category::Optimizer
    } else {
        Category::Other
    }
}

/// The model of one call of op `name` with `args`.
pub fn model(name: &str, args: &OpArgs) -> Model {
    let base = base_name(name);
    let category = category_of(name);
    let result = match category {
        Category::Gemm => gemm::cost(base, args),
        Category::SdpaFwd | Category::SdpaBwd => attention::cost(base, args),
        Category::ConvFwd | Category::ConvBwd => conv::cost(base, args),
        Category::NormFwd | Category::NormBwd => norm::cost(base, args),
        Category::Softmax => norm::softmax_cost(base, args),
        Category::Reduce => reduce::cost(base, args),
        Category::Elementwise => elementwise::cost(base, args),
        Category::Embedding | Category::Memory => memory::cost(base, args),
        Category::Optimizer => Err(
            "the element types of TensorList arguments are not recorded (`Input type` says \
             `TensorList`), so bytes cannot be counted"
                .to_owned(),
        ),
        Category::CompiledGraph | Category::Other => return Model::Unknown,
    };
    match result {
        Ok(cost) => Model::Cost(cost),
        Err(reason) => Model::NotModeled { category, reason },
    }
}

/// What an op family's cost function returns: the cost, or why there is none.
type CostResult = Result<OpCost, String>;

/// The tensor argument `i` (dims and type), or an error that names it.
fn tensor(args: &OpArgs, i: usize, what: &str) -> Result<(Vec<i64>, DType), String> {
    let arg = args
        .get(i)
        .ok_or_else(|| format!("argument {i} ({what}) is missing"))?;
    match (arg.tensor_dims(), arg.dtype) {
        (Some(dims), Some(dtype)) => Ok((dims.to_vec(), dtype)),
        _ => Err(format!(
            "argument {i} ({what}) is not a tensor of a known type (`{}`)",
            arg.type_name
        )),
    }
}

/// The tensor argument `i` when it is one (an optional bias, say).
fn optional_tensor(args: &OpArgs, i: usize) -> Option<(Vec<i64>, DType)> {
    let arg = args.get(i)?;
    Some((arg.tensor_dims()?.to_vec(), arg.dtype?))
}

fn elems(dims: &[i64]) -> f64 {
    crate::args::numel(dims) as f64
}

fn make_cost(
    category: Category,
    flops: f64,
    bytes: f64,
    unit: Unit,
    dtype: DType,
    params: String,
) -> OpCost {
    OpCost {
        category,
        flops,
        bytes,
        compute: ComputeSpec { unit, dtype },
        params,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(dims: &str, types: &str, concrete: &str) -> OpArgs {
        OpArgs::parse(dims, types, "", concrete).unwrap()
    }

    fn cost_of(name: &str, args: &OpArgs) -> OpCost {
        match model(name, args) {
            Model::Cost(c) => c,
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn attention_backward_costs_five_products_and_moves_every_gradient() {
        let bf = r#""c10::BFloat16""#;
        let args = parse(
            "[[1, 2, 4, 8], [1, 2, 4, 8], [1, 2, 4, 8], [1, 2, 4, 8], [1, 2, 4, 8], [1, 2, 4], [], [], [], [], [], [], [], [], []]",
            &format!(r#"[{bf}, {bf}, {bf}, {bf}, {bf}, "float", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "Scalar"]"#),
            r#"["", "", "", "", "", "", "", "", "4", "4", "0.", "False", "", "", "0.35"]"#,
        );
        let c = cost_of("aten::_scaled_dot_product_flash_attention_backward", &args);
        assert_eq!(c.category, Category::SdpaBwd);
        assert_eq!(c.flops, 2.5 * 2.0 * 2.0 * 4.0 * 4.0 * 16.0);
        assert_eq!(c.bytes, 2.0 * 3.0 * 128.0 + 2.0 * 128.0);
    }

    #[test]
    fn convolution_backward_costs_each_gradient_asked_for() {
        let args = parse(
            "[[2, 8, 6, 6], [2, 3, 8, 8], [8, 3, 3, 3], [], [], [], [], [], [], [], []]",
            r#"["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar", "ScalarList"]"#,
            r#"["", "", "", "[8]", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1", "[False, True, True]"]"#,
        );
        let c = cost_of("aten::convolution_backward", &args);
        let fwd = 2.0 * 2.0 * 8.0 * 36.0 * 3.0 * 9.0;
        assert_eq!(c.flops, fwd + 2.0 * 8.0 * 36.0);
        assert_eq!(c.category, Category::ConvBwd);
    }

    #[test]
    fn layer_norm_counts_its_affine_terms_and_softmax_five_per_element() {
        let args = parse(
            "[[4, 197, 768], [], [768], [768], []]",
            r#"["c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar"]"#,
            r#"["", "[768]", "", "", "1e-12"]"#,
        );
        let c = cost_of("aten::native_layer_norm", &args);
        assert_eq!(c.flops, 7.0 * 605_184.0);
        let args = parse(
            "[[2, 8, 128, 128], [], []]",
            r#"["float", "Scalar", "Scalar"]"#,
            r#"["", "-1", "False"]"#,
        );
        assert_eq!(cost_of("aten::_softmax", &args).flops, 5.0 * 262_144.0);
    }

    #[test]
    fn wrappers_and_unknown_ops_are_said_so() {
        assert!(is_wrapper("aten::linear"));
        assert!(!is_wrapper("aten::addmm"));
        assert_eq!(model("aten::view", &OpArgs::default()), Model::Unknown);
        let cat = parse(
            "[[[1, 2], [1, 2]], []]",
            r#"["TensorList", "Scalar"]"#,
            r#"["", "0"]"#,
        );
        assert!(matches!(model("aten::cat", &cat), Model::NotModeled { .. }));
        assert_eq!(category_of("aten::_foreach_add_"), Category::Optimizer);
    }
}
