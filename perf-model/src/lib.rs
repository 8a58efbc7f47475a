//! A performance model of PyTorch operators and the rooflines of the devices they run
//! on: from what `record_shapes` writes into a trace (an op's name and its `Input Dims`,
//! `Input type`, `Input Strides` and `Concrete Inputs`), the op's FLOPs, the bytes it
//! moves and its category; from a device's table row, its peak FLOP/s per element type
//! on matrix and vector units and its memory bandwidth; and from both, the op's
//! roofline time and whether compute or memory binds it.
//!
//! A leaf crate (serde only): `analysis` uses it for its per-op efficiency table, and
//! the emulator's timing model or a what-if on another device can use the same figures.
//!
//! # The model
//! [`model`] returns [`Model::Cost`] for the families it covers — GEMMs (`mm`, `addmm`,
//! `bmm`, `baddbmm`, `matmul`, `linear`, `_scaled_mm`, grouped GEMMs), attention (every
//! `scaled_dot_product_attention` variant, forward and backward, causal or not),
//! convolution forward and backward, elementwise ops, softmax, layer/RMS/group/batch
//! norm forward and backward, reductions, embedding, `index_select`/`gather`/scatter —
//! [`Model::NotModeled`] with the reason for a known op it cannot cost from these
//! arguments (`cat` and the optimizers' `_foreach_*`: a `TensorList`'s element type is
//! not recorded), and [`Model::Unknown`] for the rest. Nothing is guessed: an op the
//! model cannot cost is counted and named by the caller. Each family's definitions
//! (which FLOPs, which bytes) are in its module's docs; where they follow TraceLens's
//! (AMD's trace analyzer) they give the same numbers, checked on TraceLens's own reports.
//!
//! [`is_wrapper`] names the composite ops (`linear`, `matmul`, `conv2d`, `softmax`, …)
//! whose children launch the kernels; a caller attributing kernels to ops costs the
//! outermost op of a call chain that is not a wrapper (`layer_norm` over
//! `native_layer_norm`, `_scaled_dot_product_flash_attention` over
//! `_flash_attention_forward`), and a wrapper only where it launches kernels itself.
//!
//! # Example
//! ```
//! use perf_model::{model, roofline, DeviceSpec, Model, OpArgs};
//! let args = OpArgs::parse(
//!     "[[8944, 1024], [1024, 2816]]",
//!     r#"["c10::BFloat16", "c10::BFloat16"]"#,
//!     "[[1024, 1], [1, 1024]]",
//!     r#"["", ""]"#,
//! )?;
//! let Model::Cost(cost) = model("aten::mm", &args) else { unreachable!() };
//! assert_eq!(cost.flops, 2.0 * 8944.0 * 2816.0 * 1024.0);
//! let mi300x = DeviceSpec::builtin("mi300x").unwrap();
//! let line = roofline(&cost, &mi300x);
//! assert_eq!(line.bound, perf_model::Bound::Compute);
//! # Ok::<(), perf_model::ArgsError>(())
//! ```
#![warn(missing_docs)]

mod args;
mod cost;
mod device;
mod dtype;
mod ops;
mod roofline;

pub use args::{numel, Arg, ArgsError, OpArgs, Shape};
pub use cost::{Category, ComputeSpec, Model, OpCost, Unit};
pub use device::{DeviceSpec, Peak, BUILTIN as BUILTIN_DEVICES};
pub use dtype::DType;
pub use ops::{base_name, category_of, is_wrapper, model};
pub use roofline::{roofline, Bound, Roofline};
