//! What the model says of one operator: its category, FLOPs, bytes moved and the units
//! that run it.

use serde::Serialize;

use crate::dtype::DType;

/// An operator's family, for tables and the roofline. The labels of the families
/// TraceLens also has are TraceLens's (`GEMM`, `SDPA_fwd`, `CONV_fwd`, `NORM_fwd`,
/// `elementwise`, `reduce`, `other`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Category {
    /// Matrix multiplications (`mm`, `addmm`, `bmm`, `baddbmm`, `matmul`, `linear`,
    /// `_scaled_mm`, grouped GEMMs).
    #[serde(rename = "GEMM")]
    Gemm,
    /// Attention forward (`scaled_dot_product_attention` and its variants).
    #[serde(rename = "SDPA_fwd")]
    SdpaFwd,
    /// Attention backward.
    #[serde(rename = "SDPA_bwd")]
    SdpaBwd,
    /// Convolution forward.
    #[serde(rename = "CONV_fwd")]
    ConvFwd,
    /// Convolution backward.
    #[serde(rename = "CONV_bwd")]
    ConvBwd,
    /// Unary, binary and ternary elementwise ops, copies and fills.
    #[serde(rename = "elementwise")]
    Elementwise,
    /// Reductions (`sum`, `mean`, `amax`, …).
    #[serde(rename = "reduce")]
    Reduce,
    /// Softmax and log-softmax, forward and backward.
    #[serde(rename = "softmax")]
    Softmax,
    /// Layer, RMS, group and batch norm forward.
    #[serde(rename = "NORM_fwd")]
    NormFwd,
    /// Layer, RMS, group and batch norm backward.
    #[serde(rename = "NORM_bwd")]
    NormBwd,
    /// Embedding lookups and their backward.
    #[serde(rename = "embedding")]
    Embedding,
    /// Data movement that is not elementwise: `cat`, `stack`, `index_select`, `gather`,
    /// `scatter`, device-to-host reads.
    #[serde(rename = "memory")]
    Memory,
    /// Optimizer steps: `_foreach_*` and fused optimizers.
    #[serde(rename = "optimizer")]
    Optimizer,
    /// A compiled graph's kernel (a `torch.compile` program on neuron), costed from the
    /// costs of its passes that its kernel states (`pass_costs`), not from an operator.
    #[serde(rename = "compiled_graph")]
    CompiledGraph,
    /// Everything else.
    #[serde(rename = "other")]
    Other,
}

impl Category {
    /// Every category, in table order.
    pub const ALL: [Category; 15] = [
        Category::Gemm,
        Category::SdpaFwd,
        Category::SdpaBwd,
        Category::ConvFwd,
        Category::ConvBwd,
        Category::Elementwise,
        Category::Reduce,
        Category::Softmax,
        Category::NormFwd,
        Category::NormBwd,
        Category::Embedding,
        Category::Memory,
        Category::Optimizer,
        Category::CompiledGraph,
        Category::Other,
    ];

    /// The label (`GEMM`, `SDPA_fwd`, `elementwise`, …).
    pub fn label(self) -> &'static str {
        match self {
            Category::Gemm => "GEMM",
            Category::SdpaFwd => "SDPA_fwd",
            Category::SdpaBwd => "SDPA_bwd",
            Category::ConvFwd => "CONV_fwd",
            Category::ConvBwd => "CONV_bwd",
            Category::Elementwise => "elementwise",
            Category::Reduce => "reduce",
            Category::Softmax => "softmax",
            Category::NormFwd => "NORM_fwd",
            Category::NormBwd => "NORM_bwd",
            Category::Embedding => "embedding",
            Category::Memory => "memory",
            Category::Optimizer => "optimizer",
            Category::CompiledGraph => "compiled_graph",
            Category::Other => "other",
        }
    }
}

/// Which units of the device run an op: the matrix units (tensor cores, MFMA, TensorE)
/// or the vector units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Matrix units.
    Matrix,
    /// Vector units.
    Vector,
}

/// The units and element type whose peak bounds an op (`matrix_bf16`, `vector_fp32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ComputeSpec {
    /// Matrix or vector units.
    pub unit: Unit,
    /// The element type the units compute in.
    pub dtype: DType,
}

impl ComputeSpec {
    /// `matrix_bf16`, `vector_fp32`, … (TraceLens's `Compute Spec` spelling).
    pub fn label(self) -> String {
        let unit = match self.unit {
            Unit::Matrix => "matrix",
            Unit::Vector => "vector",
        };
        format!("{unit}_{}", self.dtype.short_name())
    }

    /// Reads a [`label`](Self::label) back (`matrix_bf16`); `None` for anything else.
    pub fn parse(label: &str) -> Option<ComputeSpec> {
        let (unit, dtype) = label.split_once('_')?;
        let unit = match unit {
            "matrix" => Unit::Matrix,
            "vector" => Unit::Vector,
            _ => return None,
        };
        Some(ComputeSpec {
            unit,
            dtype: DType::from_short_name(dtype)?,
        })
    }
}

/// The model's cost of one operator call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpCost {
    /// Its family.
    pub category: Category,
    /// Floating-point operations (a multiply-add is 2).
    pub flops: f64,
    /// Bytes read and written in device memory, each tensor once (no cache reuse).
    pub bytes: f64,
    /// The units and type whose peak bounds it.
    pub compute: ComputeSpec,
    /// The parameters the cost came from, readable (`M=8944 N=2816 K=1024`).
    pub params: String,
}

impl OpCost {
    /// FLOPs per byte moved (arithmetic intensity); 0 when nothing moves.
    pub fn flops_per_byte(&self) -> f64 {
        if self.bytes > 0.0 {
            self.flops / self.bytes
        } else {
            0.0
        }
    }
}

/// What the model says of one operator call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Model {
    /// Its cost.
    Cost(OpCost),
    /// An op of a known family the model cannot cost from these arguments, and why.
    NotModeled {
        /// Its family.
        category: Category,
        /// Why (`TensorList element types are not recorded`, …).
        reason: String,
    },
    /// An op the model does not know.
    Unknown,
}
