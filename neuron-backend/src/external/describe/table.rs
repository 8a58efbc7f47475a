//! Which lowering each ATen op gets: the op → class table of `describe`.
//!
//! Names are ATen's without the `aten::` prefix and without an overload (`add.Tensor`,
//! `add.out` and `add_` are all `add`/`add_`: a trailing `_` marks the in-place form and
//! is stripped here). `_foreach_<op>` takes `<op>`'s class, over every tensor of its lists.

use crate::Engine;

/// The matmul-shaped ops, by how their operands read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MatmulKind {
    /// `mm(A[m,k], B[k,n])`.
    Mm,
    /// `addmm(bias, A[m,k], B[k,n])`.
    Addmm,
    /// `bmm(A[b,m,k], B[b,k,n])`.
    Bmm,
    /// `baddbmm(bias, A[b,m,k], B[b,k,n])`.
    Baddbmm,
    /// `addbmm(bias, A[b,m,k], B[b,k,n])`: batches summed into `[m,n]`.
    Addbmm,
    /// `linear(x[..,k], W[n,k], bias?)`.
    Linear,
    /// `matmul(A, B)` with numpy broadcasting (1-D operands too).
    Matmul,
    /// `mv(A[m,k], x[k])` / `addmv(bias, A, x)`.
    Mv,
    /// `dot(a[k], b[k])` / `vdot`.
    Dot,
}

/// The lowering class of an op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpClass {
    /// TensorE matmul passes (`timing::lower::MatmulPlan`).
    Matmul(MatmulKind),
    /// Convolution as an implicit GEMM; the backward is one per gradient it computes
    /// (input, weight).
    Convolution {
        /// `convolution_backward`.
        backward: bool,
        /// A transposed convolution (`conv_transpose*`): its input and output swap roles
        /// against the direct convolution it is the adjoint of.
        transposed: bool,
    },
    /// Fused scaled dot-product attention: two matmuls around a softmax; the backward
    /// does twice the matmul work.
    Attention {
        /// A `*_backward` form.
        backward: bool,
    },
    /// Layer/group/batch norm over rows (the native backend's layer-norm stages).
    LayerNorm {
        /// A `*_backward` form.
        backward: bool,
    },
    /// RMS norm over rows (the native backend's RMS-norm stages).
    RmsNorm {
        /// A `*_backward` form.
        backward: bool,
    },
    /// Softmax / log-softmax over the last dimension (the native backend's stages).
    Softmax {
        /// `_softmax_backward_data` / `_log_softmax_backward_data`.
        backward: bool,
    },
    /// A reduction to the output's real size: partial sums on every partition, then
    /// across partitions.
    Reduction,
    /// Rows gathered by index on GpSimdE with indirect DMA (embedding, index_select, …).
    Gather,
    /// Rows added or written by index on GpSimdE (embedding backward, index_add, …).
    Scatter,
    /// Elementwise over the output on one engine.
    Elementwise(Engine),
    /// Random numbers (GpSimdE), then the elementwise rest on VectorE.
    Random,
    /// A fill: stores only.
    Fill,
}

/// Activation and transcendental functions: ScalarE's lookup tables.
const SCALAR: &[&str] = &[
    "gelu",
    "gelu_backward",
    "tanh",
    "tanh_backward",
    "sigmoid",
    "sigmoid_backward",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "silu",
    "silu_backward",
    "mish",
    "mish_backward",
    "erf",
    "erfc",
    "erfinv",
    "sqrt",
    "rsqrt",
    "pow",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "softplus",
    "softplus_backward",
    "elu",
    "elu_backward",
    "selu",
    "celu",
    "hardswish",
    "hardswish_backward",
    "hardsigmoid",
    "hardsigmoid_backward",
    "logsigmoid",
    "log_sigmoid_forward",
    "log_sigmoid_backward",
    "reciprocal",
    "lgamma",
    "digamma",
    "sgn",
    "logit",
    "xlogy",
    "special_erfcx",
    "glu",
    "glu_backward",
];

/// Arithmetic, comparisons, selection, clamping and type conversion: VectorE.
const VECTOR: &[&str] = &[
    "add",
    "sub",
    "rsub",
    "mul",
    "div",
    "true_divide",
    "floor_divide",
    "remainder",
    "fmod",
    "neg",
    "abs",
    "sign",
    "addcmul",
    "addcdiv",
    "lerp",
    "clamp",
    "clamp_min",
    "clamp_max",
    "clip",
    "hardtanh",
    "hardtanh_backward",
    "relu",
    "relu6",
    "leaky_relu",
    "leaky_relu_backward",
    "threshold",
    "threshold_backward",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "where",
    "masked_fill",
    "copy",
    "clone",
    "_to_copy",
    "contiguous",
    "floor",
    "ceil",
    "round",
    "trunc",
    "frac",
    "square",
    "isnan",
    "isinf",
    "isfinite",
    "nan_to_num",
    "heaviside",
    "hypot",
    "copysign",
    "addr",
    "triu",
    "tril",
    "cat",
    "stack",
    "flip",
    "roll",
    "repeat",
    "pad",
    "constant_pad_nd",
    "reflection_pad1d",
    "reflection_pad2d",
    "replication_pad1d",
    "replication_pad2d",
    "_unsafe_view",
    "expand_copy",
    "permute_copy",
    "transpose_copy",
    "mse_loss",
    "mse_loss_backward",
    "l1_loss",
    "smooth_l1_loss",
    "smooth_l1_loss_backward",
    "huber_loss",
    "huber_loss_backward",
    "binary_cross_entropy",
    "binary_cross_entropy_backward",
    "binary_cross_entropy_with_logits",
    "lerp_scalar",
    "_amp_foreach_non_finite_check_and_unscale",
    "_amp_update_scale",
    "sqrt_grad",
    "native_dropout_backward",
    "bucketize",
    "searchsorted",
];

/// Index arithmetic and sequences: GpSimdE.
const GPSIMD: &[&str] = &[
    "arange", "linspace", "logspace", "range", "eye", "one_hot", "nonzero",
];

/// Reductions.
const REDUCTION: &[&str] = &[
    "sum",
    "mean",
    "amax",
    "amin",
    "max",
    "min",
    "aminmax",
    "prod",
    "norm",
    "linalg_vector_norm",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "argmax",
    "argmin",
    "all",
    "any",
    "logsumexp",
    "nansum",
    "nanmean",
    "count_nonzero",
    "cumsum",
    "cumprod",
    "logcumsumexp",
    "cummax",
    "cummin",
    "median",
    "nanmedian",
    "mode",
    "topk",
    "sort",
    "argsort",
    "kthvalue",
    "_fused_moving_avg_obs_fq_helper",
    "nll_loss_forward",
    "nll_loss_backward",
    "nll_loss2d_forward",
    "nll_loss2d_backward",
    "_euclidean_dist",
    "cdist",
    "trace",
];

/// Gathers.
const GATHER: &[&str] = &[
    "embedding",
    "index_select",
    "gather",
    "index",
    "take",
    "take_along_dim",
    "masked_select",
    "embedding_bag",
    "_embedding_bag",
    "_embedding_bag_forward_only",
    "unfold",
    "im2col",
];

/// Scatters.
const SCATTER: &[&str] = &[
    "embedding_dense_backward",
    "embedding_backward",
    "index_add",
    "index_copy",
    "index_fill",
    "index_put",
    "_index_put_impl",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "masked_scatter",
    "put",
    "col2im",
    "_embedding_bag_backward",
    "_embedding_bag_dense_backward",
];

/// Random numbers.
const RANDOM: &[&str] = &[
    "uniform",
    "normal",
    "bernoulli",
    "random",
    "exponential",
    "geometric",
    "cauchy",
    "log_normal",
    "native_dropout",
    "dropout",
    "randperm",
    "multinomial",
    "rand",
    "randn",
    "randint",
    "rand_like",
    "randn_like",
    "randint_like",
    "poisson",
];

/// Fills.
const FILL: &[&str] = &[
    "fill",
    "zero",
    "zeros",
    "ones",
    "full",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
];

/// The class of `name` (ATen's op name without `aten::`), or `None` for an op the table
/// does not know (then the default rule applies).
pub(crate) fn class_of(name: &str) -> Option<OpClass> {
    let name = name.strip_prefix("aten::").unwrap_or(name);
    let name = name.split('.').next().unwrap_or(name);
    let name = name.strip_prefix("_foreach_").unwrap_or(name);
    let base = name.strip_suffix('_').unwrap_or(name);
    let class = match base {
        "mm" => OpClass::Matmul(MatmulKind::Mm),
        "addmm" | "_addmm_activation" => OpClass::Matmul(MatmulKind::Addmm),
        "bmm" => OpClass::Matmul(MatmulKind::Bmm),
        "baddbmm" => OpClass::Matmul(MatmulKind::Baddbmm),
        "addbmm" => OpClass::Matmul(MatmulKind::Addbmm),
        "linear" => OpClass::Matmul(MatmulKind::Linear),
        "matmul" => OpClass::Matmul(MatmulKind::Matmul),
        "mv" | "addmv" => OpClass::Matmul(MatmulKind::Mv),
        "dot" | "vdot" | "inner" => OpClass::Matmul(MatmulKind::Dot),
        "convolution"
        | "_convolution"
        | "convolution_overrideable"
        | "conv1d"
        | "conv2d"
        | "conv3d"
        | "_slow_conv2d_forward"
        | "mkldnn_convolution"
        | "thnn_conv2d" => OpClass::Convolution {
            backward: false,
            transposed: false,
        },
        "conv_transpose1d" | "conv_transpose2d" | "conv_transpose3d" => OpClass::Convolution {
            backward: false,
            transposed: true,
        },
        "convolution_backward"
        | "convolution_backward_overrideable"
        | "_slow_conv2d_backward"
        | "conv1d_backward"
        | "conv2d_backward"
        | "conv3d_backward" => OpClass::Convolution {
            backward: true,
            transposed: false,
        },
        "conv_transpose1d_backward" | "conv_transpose2d_backward" | "conv_transpose3d_backward" => {
            OpClass::Convolution {
                backward: true,
                transposed: true,
            }
        }
        "scaled_dot_product_attention"
        | "_scaled_dot_product_flash_attention"
        | "_scaled_dot_product_flash_attention_for_cpu"
        | "_scaled_dot_product_efficient_attention"
        | "_scaled_dot_product_fused_attention_overrideable"
        | "_scaled_dot_product_cudnn_attention" => OpClass::Attention { backward: false },
        "_scaled_dot_product_flash_attention_backward"
        | "_scaled_dot_product_flash_attention_for_cpu_backward"
        | "_scaled_dot_product_efficient_attention_backward"
        | "_scaled_dot_product_fused_attention_overrideable_backward" => {
            OpClass::Attention { backward: true }
        }
        "native_layer_norm"
        | "layer_norm"
        | "native_group_norm"
        | "group_norm"
        | "native_batch_norm"
        | "_native_batch_norm_legit"
        | "batch_norm"
        | "_batch_norm_impl_index"
        | "instance_norm" => OpClass::LayerNorm { backward: false },
        "native_layer_norm_backward"
        | "native_group_norm_backward"
        | "native_batch_norm_backward"
        | "batch_norm_backward" => OpClass::LayerNorm { backward: true },
        "rms_norm" | "_fused_rms_norm" => OpClass::RmsNorm { backward: false },
        "_fused_rms_norm_backward" | "rms_norm_backward" => OpClass::RmsNorm { backward: true },
        "_softmax" | "softmax" | "_log_softmax" | "log_softmax" | "_safe_softmax" => {
            OpClass::Softmax { backward: false }
        }
        "_softmax_backward_data" | "_log_softmax_backward_data" => {
            OpClass::Softmax { backward: true }
        }
        _ if REDUCTION.contains(&base) => OpClass::Reduction,
        _ if GATHER.contains(&base) => OpClass::Gather,
        _ if SCATTER.contains(&base) => OpClass::Scatter,
        _ if RANDOM.contains(&base) => OpClass::Random,
        _ if FILL.contains(&base) => OpClass::Fill,
        _ if SCALAR.contains(&base) => OpClass::Elementwise(Engine::Scalar),
        _ if VECTOR.contains(&base) => OpClass::Elementwise(Engine::Vector),
        _ if GPSIMD.contains(&base) => OpClass::Elementwise(Engine::GpSimd),
        _ => return None,
    };
    Some(class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overloads_in_place_and_foreach_forms_share_a_class() {
        assert_eq!(
            class_of("aten::add.Tensor"),
            Some(OpClass::Elementwise(Engine::Vector))
        );
        assert_eq!(class_of("add_"), Some(OpClass::Elementwise(Engine::Vector)));
        assert_eq!(
            class_of("_foreach_sqrt_"),
            Some(OpClass::Elementwise(Engine::Scalar))
        );
        assert_eq!(class_of("mm.out"), Some(OpClass::Matmul(MatmulKind::Mm)));
        assert_eq!(class_of("gelu"), Some(OpClass::Elementwise(Engine::Scalar)));
        assert_eq!(class_of("embedding"), Some(OpClass::Gather));
        assert_eq!(class_of("embedding_dense_backward"), Some(OpClass::Scatter));
        assert_eq!(class_of("sum.dim_IntList"), Some(OpClass::Reduction));
        assert_eq!(
            class_of("native_layer_norm_backward"),
            Some(OpClass::LayerNorm { backward: true })
        );
        assert_eq!(class_of("bernoulli_"), Some(OpClass::Random));
        assert_eq!(class_of("zero_"), Some(OpClass::Fill));
        assert_eq!(class_of("some_new_op"), None);
    }

    #[test]
    fn no_op_is_listed_twice() {
        let lists = [
            SCALAR, VECTOR, GPSIMD, REDUCTION, GATHER, SCATTER, RANDOM, FILL,
        ];
        let mut seen = std::collections::HashSet::new();
        for name in lists.iter().flat_map(|l| l.iter()) {
            assert!(seen.insert(*name), "{name} is in two lists");
        }
    }
}
