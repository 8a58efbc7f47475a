//! Every op of an external program costed by the emulator's own lowerings.
//!
//! The caller (the PyTorch extension) passes an op's ATen name, its tensor inputs and
//! its tensor outputs (shapes, strides, element types); [`describe`] picks the lowering
//! the native backend uses for that kind of op ([`table`]): TensorE matmul passes for the
//! matmul family (`mm`, `addmm`, `bmm`, `baddbmm`, `addbmm`, `linear`, `matmul`, `mv`,
//! `dot`), convolution as an implicit GEMM, fused attention as two matmuls around a
//! softmax, the native row kernels for layer/group/batch norm, RMS norm, softmax and
//! log-softmax (the same engine stages as `ops/norm.rs`), reductions to the output's
//! real size (partial sums on every partition, then across partitions), gathers and
//! scatters on GpSimdE with indirect DMA (`ops/index.rs`'s embedding), random numbers on
//! GpSimdE, fills as stores, and the elementwise rest on the engine of its table entry
//! (ScalarE for activations and transcendental functions, VectorE for arithmetic,
//! comparisons and selection, GpSimdE for index sequences).
//!
//! Element types are the tensors' own ([`ScalarType`]): bytes moved are real; bf16 and
//! f16 run at the 16-bit rates; fp8 matmuls at TensorE's FP8 rate; integers and bool
//! never at the FP8 rate (TensorE has no integer mode: their matmuls are costed at the
//! FP32 rate, and said so); f64 has no engine, so f64 work is costed as f32 and the
//! kernel says so; complex matmuls as four real ones.
//!
//! An op the table does not know (or whose operands do not fit its class) is costed by
//! the *default rule*, an elementwise pass on VectorE over its largest operand, and
//! [`Description::costed_by_default`] says so: the extension puts `"costed_by":
//! "default"` in the kernel's args and `neuronprof analyze` counts those kernels. Every
//! kernel's args name its lowering ([`Description::lowering`]).

mod dtype;
mod table;

/// Whether `name` is an op of the table's elementwise class (the ops a compiled graph
/// fuses into their producer's pass: `external/program.rs`).
pub(crate) fn is_elementwise(name: &str) -> bool {
    matches!(class_of(name), Some(OpClass::Elementwise(_)))
}

pub use dtype::{ScalarType, TypeClass};

use runtime_hooks::DmaDirection;

use crate::timing::cost::Precision;
use crate::timing::lower::{reduction_passes, MatmulPlan, RowPlan, Stage};
use crate::timing::KernelRun;
use crate::Engine;
use table::{class_of, MatmulKind, OpClass};

/// One tensor argument or result of an external op.
#[derive(Debug, Clone, Copy)]
pub struct ExternalTensor<'a> {
    /// Element type.
    pub dtype: ScalarType,
    /// Sizes.
    pub sizes: &'a [i64],
    /// Strides, in elements.
    pub strides: &'a [i64],
    /// The tensor-list argument it belongs to, counted from 1 (0: a plain tensor).
    pub list: u16,
}

impl ExternalTensor<'_> {
    /// Elements.
    pub fn numel(&self) -> u64 {
        self.sizes.iter().map(|&s| s.max(0) as u64).product()
    }

    /// Bytes of its elements.
    pub fn bytes(&self) -> u64 {
        self.numel() * self.dtype.size_bytes()
    }

    fn dim(&self) -> usize {
        self.sizes.len()
    }

    /// Size of dimension `d` counted from the end (1 when it has fewer dimensions).
    fn size_from_end(&self, d: usize) -> u64 {
        self.sizes
            .len()
            .checked_sub(d)
            .map_or(1, |i| self.sizes[i].max(0) as u64)
    }

    fn is_integer(&self) -> bool {
        self.dtype.class() == TypeClass::Integer
    }
}

/// An external op to describe.
#[derive(Debug, Clone, Copy)]
pub struct ExternalOp<'a> {
    /// ATen's name (`aten::addmm`, `addmm`, `add_`, `_foreach_mul_`; an overload after a
    /// dot is ignored).
    pub name: &'a str,
    /// Tensor inputs in schema order (every element of tensor-list arguments; an
    /// in-place op's `self` too), without `out=` arguments.
    pub inputs: &'a [ExternalTensor<'a>],
    /// Tensor results (an `out=` op's written arguments, an in-place op's `self`).
    pub outputs: &'a [ExternalTensor<'a>],
}

/// How an op is lowered: one or more plans run one after another in one kernel.
#[derive(Debug, Clone)]
pub struct ExternalLowering {
    pub(crate) pieces: Vec<Piece>,
}

#[derive(Debug, Clone)]
pub(crate) enum Piece {
    Rows(RowPlan),
    Matmul(MatmulPlan),
}

impl ExternalLowering {
    pub(crate) fn lower(&self, run: &mut KernelRun<'_>) {
        for (i, piece) in self.pieces.iter().enumerate() {
            if i > 0 {
                run.begin_next_stage();
            }
            match piece {
                Piece::Rows(plan) => plan.lower(run),
                Piece::Matmul(plan) => plan.lower(run),
            }
        }
    }
}

/// What [`describe`] found.
#[derive(Debug, Clone)]
pub struct Description {
    /// The kernel's lowering.
    pub lowering_plan: ExternalLowering,
    /// FLOPs.
    pub flops: u64,
    /// Bytes read and written.
    pub bytes: u64,
    /// The element type the kernel is named after (`addmm_bf16`).
    pub dtype: ScalarType,
    /// The lowering in words, for the kernel's args (`matmul bf16`, `softmax rows`,
    /// `default: elementwise VectorE (op not in the table)`): one of a fixed set of
    /// texts, shapes are not in it.
    pub lowering: String,
    /// Whether the default rule costed it (the table did not know the op, or its
    /// operands did not fit the table's class).
    pub costed_by_default: bool,
}

/// Describes `op` for the timing model (see the module docs).
pub fn describe(op: &ExternalOp<'_>) -> Description {
    let class = class_of(op.name);
    let described = class.and_then(|class| match class {
        OpClass::Matmul(kind) => matmul(op, kind),
        OpClass::Convolution {
            backward,
            transposed,
        } => convolution(op, backward, transposed),
        OpClass::Attention { backward } => attention(op, backward),
        OpClass::LayerNorm { backward } => norm(op, backward, Norm::Layer),
        OpClass::RmsNorm { backward } => norm(op, backward, Norm::Rms),
        OpClass::Softmax { backward } => softmax(op, backward),
        OpClass::Reduction => reduction(op),
        OpClass::Gather => gather(op),
        OpClass::Scatter => scatter(op),
        OpClass::Elementwise(engine) => elementwise(op, engine, "elementwise"),
        OpClass::Random => random(op),
        OpClass::Fill => fill(op),
    });
    match described {
        Some(d) => d,
        None => {
            let mut d = elementwise(op, Engine::Vector, "default: elementwise")
                .unwrap_or_else(|| empty(op));
            d.lowering = match class {
                None => format!("{} (op not in the table)", d.lowering),
                Some(_) => format!("{} (operands do not fit the op's lowering)", d.lowering),
            };
            d.costed_by_default = true;
            d
        }
    }
}

fn io_bytes(op: &ExternalOp<'_>) -> u64 {
    op.inputs.iter().chain(op.outputs).map(|t| t.bytes()).sum()
}

fn main_dtype(op: &ExternalOp<'_>) -> ScalarType {
    op.inputs
        .iter()
        .chain(op.outputs)
        .find(|t| !t.is_integer())
        .or_else(|| op.inputs.first())
        .or_else(|| op.outputs.first())
        .map_or(ScalarType(6), |t| t.dtype)
}

fn engine_name(engine: Engine) -> &'static str {
    engine.name()
}

/// A kernel that does nothing but exist (no tensors at all).
fn empty(op: &ExternalOp<'_>) -> Description {
    let plan = RowPlan::flat(1, vec![stage(Engine::Vector, 1)], false);
    Description {
        lowering_plan: ExternalLowering {
            pieces: vec![Piece::Rows(plan)],
        },
        flops: 0,
        bytes: 0,
        dtype: main_dtype(op),
        lowering: "default: elementwise VectorE".to_owned(),
        costed_by_default: true,
    }
}

fn stage(engine: Engine, inputs: u32) -> Stage {
    Stage::new(engine, inputs.max(1), runtime_hooks::name!("compute"))
}

fn stages(list: &[(Engine, u32)]) -> Vec<Stage> {
    list.iter().map(|&(e, i)| stage(e, i)).collect()
}

// ---------------------------------------------------------------------------------
// Matmuls.

/// TensorE's precision for `dtype`, and what the lowering says about it.
fn precision(dtype: ScalarType) -> (Precision, &'static str) {
    match dtype.class() {
        TypeClass::Float16 => (Precision::Bf16, "bf16"),
        TypeClass::Float8 => (Precision::Fp8, "fp8"),
        TypeClass::Float32 => (Precision::Fp32, "fp32"),
        TypeClass::Float64 => (Precision::Fp32, "fp32 (f64: no fp64 on TensorE)"),
        TypeClass::Integer => (Precision::Fp32, "fp32 (integers: no integer TensorE mode)"),
        TypeClass::Complex => (Precision::Fp32, "fp32 (complex: four real matmuls)"),
    }
}

struct Gemm {
    batch: u64,
    m: u64,
    k: u64,
    n: u64,
    rhs_per_batch: bool,
    bias: bool,
}

fn gemm_plan(g: &Gemm, lhs: ScalarType, out: ScalarType) -> (MatmulPlan, u64, String) {
    let (precision, name) = precision(lhs);
    let complex = u64::from(lhs.class() == TypeClass::Complex) * 3 + 1;
    let plan = MatmulPlan {
        batch: (g.batch * complex).max(1),
        m: g.m.max(1),
        k: g.k.max(1),
        n: g.n.max(1),
        elem_bytes: lhs.size_bytes().max(1),
        out_elem_bytes: out.size_bytes().max(1),
        precision,
        rhs_per_batch: g.rhs_per_batch || complex > 1,
        bias: g.bias,
    };
    let flops = complex * (2 * g.batch * g.m * g.k * g.n + u64::from(g.bias) * g.batch * g.m * g.n);
    (plan, flops, format!("matmul {name}"))
}

fn matmul(op: &ExternalOp<'_>, kind: MatmulKind) -> Option<Description> {
    let ins = op.inputs;
    let last2 = || -> Option<(&ExternalTensor<'_>, &ExternalTensor<'_>)> {
        let n = ins.len();
        (n >= 2).then(|| (&ins[n - 2], &ins[n - 1]))
    };
    let (a, gemm) = match kind {
        MatmulKind::Mm | MatmulKind::Addmm => {
            let (a, b) = last2()?;
            (a.dim() == 2 && b.dim() == 2).then_some(())?;
            let gemm = Gemm {
                batch: 1,
                m: a.size_from_end(2),
                k: a.size_from_end(1),
                n: b.size_from_end(1),
                rhs_per_batch: false,
                bias: kind == MatmulKind::Addmm,
            };
            (a, gemm)
        }
        MatmulKind::Bmm | MatmulKind::Baddbmm | MatmulKind::Addbmm => {
            let (a, b) = last2()?;
            (a.dim() == 3 && b.dim() == 3).then_some(())?;
            let gemm = Gemm {
                batch: a.size_from_end(3),
                m: a.size_from_end(2),
                k: a.size_from_end(1),
                n: b.size_from_end(1),
                rhs_per_batch: true,
                bias: kind != MatmulKind::Bmm,
            };
            (a, gemm)
        }
        MatmulKind::Linear => {
            let (x, w) = (ins.first()?, ins.get(1)?);
            (w.dim() == 2 && x.dim() >= 1).then_some(())?;
            let k = x.size_from_end(1);
            let gemm = Gemm {
                batch: 1,
                m: x.numel() / k.max(1),
                k,
                n: w.size_from_end(2),
                rhs_per_batch: false,
                bias: ins.len() >= 3,
            };
            (x, gemm)
        }
        MatmulKind::Matmul => {
            let (a, b) = (ins.first()?, ins.get(1)?);
            (a.dim() >= 1 && b.dim() >= 1).then_some(())?;
            let m = if a.dim() >= 2 { a.size_from_end(2) } else { 1 };
            let n = if b.dim() >= 2 { b.size_from_end(1) } else { 1 };
            let k = a.size_from_end(1);
            let out = op.outputs.first().map_or(m * n, |o| o.numel());
            let gemm = Gemm {
                batch: (out / (m * n).max(1)).max(1),
                m,
                k,
                n,
                rhs_per_batch: b.dim() > 2,
                bias: false,
            };
            (a, gemm)
        }
        MatmulKind::Mv => {
            let (a, x) = last2()?;
            (a.dim() == 2 && x.dim() == 1).then_some(())?;
            let gemm = Gemm {
                batch: 1,
                m: a.size_from_end(2),
                k: a.size_from_end(1),
                n: 1,
                rhs_per_batch: false,
                bias: ins.len() >= 3,
            };
            (a, gemm)
        }
        MatmulKind::Dot => {
            let (a, b) = last2()?;
            (a.dim() == 1 && b.dim() == 1).then_some(())?;
            let gemm = Gemm {
                batch: 1,
                m: 1,
                k: a.numel(),
                n: 1,
                rhs_per_batch: false,
                bias: false,
            };
            (a, gemm)
        }
    };
    let out = op.outputs.first().map_or(a.dtype, |o| o.dtype);
    let (plan, flops, lowering) = gemm_plan(&gemm, a.dtype, out);
    Some(Description {
        lowering_plan: ExternalLowering {
            pieces: vec![Piece::Matmul(plan)],
        },
        flops,
        bytes: io_bytes(op),
        dtype: a.dtype,
        lowering,
        costed_by_default: false,
    })
}

/// Convolution as an implicit GEMM (im2col without the copy, as the Neuron compiler
/// lowers a convolution onto TensorE): the output positions by the filter's receptive
/// field by the output channels, per group (im2col's data movement is not modeled beyond
/// the GEMM's own loads). A transposed convolution is the adjoint of a direct one whose
/// input is its output (the weight, `(in, out / groups, k…)`, read as that direct
/// convolution's `(out, in / groups, k…)`): the same GEMM with the two swapped, so its
/// FLOPs are the multiply-adds it really does (no zeros of a stride-dilated input).
/// The backward computes the input gradient, the weight gradient or both: one GEMM of
/// the forward's size each (its results say which: a result of the input's shape, one
/// of the weight's).
fn convolution(op: &ExternalOp<'_>, backward: bool, transposed: bool) -> Option<Description> {
    let (input, weight, out) = if backward {
        // (grad_output, input, weight) -> (grad_input?, grad_weight?, grad_bias?)
        (op.inputs.get(1)?, op.inputs.get(2)?, op.inputs.first()?)
    } else {
        (op.inputs.first()?, op.inputs.get(1)?, op.outputs.first()?)
    };
    // The direct convolution's input and output.
    let (input, out) = if transposed {
        (out, input)
    } else {
        (input, out)
    };
    let spatial = weight.dim().checked_sub(2).filter(|&s| s >= 1)?;
    (input.dim() == spatial + 2 && out.dim() == spatial + 2).then_some(())?;
    let (cin, cin_per_group) = (input.sizes[1].max(1) as u64, weight.sizes[1].max(1) as u64);
    let groups = (cin / cin_per_group).max(1);
    let cout = out.sizes[1].max(1) as u64;
    let out_positions: u64 =
        out.sizes[0].max(1) as u64 * out.numel() / (out.sizes[0].max(1) as u64 * cout);
    let receptive: u64 = cin_per_group
        * weight.sizes[2..]
            .iter()
            .map(|&s| s.max(1) as u64)
            .product::<u64>();
    let gemms = if backward {
        let (x, w) = (op.inputs.get(1)?, op.inputs.get(2)?);
        let grads = op
            .outputs
            .iter()
            .filter(|g| g.sizes == x.sizes || g.sizes == w.sizes)
            .count() as u64;
        grads.clamp(1, 2)
    } else {
        1
    };
    let gemm = Gemm {
        batch: groups * gemms,
        m: out_positions,
        k: receptive,
        n: cout / groups,
        rhs_per_batch: groups > 1 || gemms > 1,
        bias: !backward && op.inputs.len() >= 3,
    };
    let (plan, flops, lowering) = gemm_plan(&gemm, input.dtype, out.dtype);
    let what = match (backward, gemms, transposed) {
        (false, _, false) => "implicit GEMM".to_owned(),
        (false, _, true) => "implicit GEMM of its adjoint (transposed)".to_owned(),
        (true, n, t) => format!(
            "{n} implicit GEMM{}{}",
            if n > 1 { "s" } else { "" },
            if t { " (transposed)" } else { "" }
        ),
    };
    Some(Description {
        lowering_plan: ExternalLowering {
            pieces: vec![Piece::Matmul(plan)],
        },
        flops,
        bytes: io_bytes(op),
        dtype: input.dtype,
        lowering: format!("convolution as {what}: {lowering}"),
        costed_by_default: false,
    })
}

/// Fused attention: `softmax(Q Kᵀ) V` per batch and head, as QKᵀ, a softmax over the
/// keys, and PV. The backward recomputes QKᵀ, runs the softmax backward and four
/// matmuls (dV, dP, dQ, dK).
fn attention(op: &ExternalOp<'_>, backward: bool) -> Option<Description> {
    let at = usize::from(backward);
    let (q, k, v) = (
        op.inputs.get(at)?,
        op.inputs.get(at + 1)?,
        op.inputs.get(at + 2)?,
    );
    (q.dim() >= 3 && k.dim() == q.dim() && v.dim() == q.dim()).then_some(())?;
    let (l, e) = (q.size_from_end(2), q.size_from_end(1));
    let (s, ev) = (k.size_from_end(2), v.size_from_end(1));
    let batch = q.numel() / (l * e).max(1);
    let out = op.outputs.first().map_or(q.dtype, |o| o.dtype);
    let mm = |m, kk, n| {
        gemm_plan(
            &Gemm {
                batch,
                m,
                k: kk,
                n,
                rhs_per_batch: true,
                bias: false,
            },
            q.dtype,
            out,
        )
    };
    let eb = q.dtype.size_bytes();
    let sixteen = q.dtype.sixteen_bit();
    let softmax_rows = |forward: bool| {
        let list: &[(Engine, u32)] = if forward {
            &[
                (Engine::Vector, 1),
                (Engine::Scalar, 1),
                (Engine::Vector, 1),
            ]
        } else {
            &[(Engine::Vector, 2), (Engine::Vector, 2)]
        };
        row_plan(batch * l, s, stages(list), sixteen, &[eb], 0, eb)
    };
    let mut pieces = Vec::new();
    let mut flops = 0;
    let (qk, f, precision_name) = mm(l, e, s);
    pieces.push(Piece::Matmul(qk));
    flops += f;
    pieces.push(Piece::Rows(softmax_rows(!backward)));
    flops += 5 * batch * l * s;
    let products: &[(u64, u64, u64)] = if backward {
        &[(s, l, ev), (l, ev, s), (l, s, e), (s, l, e)]
    } else {
        &[(l, s, ev)]
    };
    for &(m, kk, n) in products {
        let (plan, f, _) = mm(m, kk, n);
        pieces.push(Piece::Matmul(plan));
        flops += f;
    }
    let what = if backward {
        "attention backward"
    } else {
        "attention"
    };
    Some(Description {
        lowering_plan: ExternalLowering { pieces },
        flops,
        bytes: io_bytes(op),
        dtype: q.dtype,
        lowering: format!("{what}: {precision_name}, softmax rows"),
        costed_by_default: false,
    })
}

// ---------------------------------------------------------------------------------
// Row kernels.

/// A row plan: `rows × cols`, streamed inputs of `load_eb` bytes per element each,
/// `const_bytes` loaded once, `store_eb` bytes stored per element.
fn row_plan(
    rows: u64,
    cols: u64,
    stages: Vec<Stage>,
    sixteen_bit: bool,
    load_eb: &[u64],
    const_bytes: u64,
    store_eb: u64,
) -> RowPlan {
    let cols = cols.max(1);
    RowPlan {
        rows: rows.max(1),
        cols,
        load_bytes_per_row: load_eb.iter().map(|eb| cols * eb).collect(),
        const_bytes,
        store_bytes_per_row: cols * store_eb,
        stages,
        sixteen_bit,
        direction: DmaDirection::DeviceToDevice,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Norm {
    Layer,
    Rms,
}

/// Normalizations over rows: the row count is the size of the per-row statistics (the
/// `mean`/`rstd` results, or the inputs of a backward), the row width the rest.
fn norm(op: &ExternalOp<'_>, backward: bool, kind: Norm) -> Option<Description> {
    let x = op.inputs.first()?;
    let numel = x.numel();
    (numel > 0).then_some(())?;
    let stats = if backward {
        op.inputs.get(2..).unwrap_or(&[])
    } else {
        op.outputs.get(1..).unwrap_or(&[])
    };
    let rows = stats
        .iter()
        .map(|t| t.numel())
        .find(|&n| n > 0 && n < numel && numel % n == 0)
        .or_else(|| {
            // RMS norm returns no statistics: its weight is the row.
            let w = op.inputs.get(if backward { 2 } else { 1 })?.numel();
            (w > 0 && numel % w == 0).then(|| numel / w)
        })
        .unwrap_or(numel / x.size_from_end(1).max(1));
    let cols = numel / rows.max(1);
    let list: &[(Engine, u32)] = match (kind, backward) {
        (Norm::Layer, false) => &[
            (Engine::Vector, 1),
            (Engine::Vector, 1),
            (Engine::Scalar, 1),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
        ],
        (Norm::Layer, true) => &[
            (Engine::Vector, 1),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
        ],
        (Norm::Rms, false) => &[
            (Engine::Scalar, 1),
            (Engine::Vector, 1),
            (Engine::Vector, 2),
        ],
        (Norm::Rms, true) => &[
            (Engine::Scalar, 1),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
            (Engine::Vector, 2),
        ],
    };
    let eb = x.dtype.size_bytes();
    // Streamed: x (and the gradient); the parameters and statistics load once.
    let streamed: Vec<u64> = op
        .inputs
        .iter()
        .filter(|t| t.numel() == numel)
        .map(|t| t.dtype.size_bytes())
        .collect();
    let const_bytes = op
        .inputs
        .iter()
        .filter(|t| t.numel() != numel)
        .map(|t| t.bytes())
        .sum();
    let plan = row_plan(
        rows,
        cols,
        stages(list),
        x.dtype.sixteen_bit(),
        &streamed,
        const_bytes,
        eb,
    );
    let name = match kind {
        Norm::Layer => "layer norm",
        Norm::Rms => "RMS norm",
    };
    Some(Description {
        lowering_plan: ExternalLowering {
            pieces: vec![Piece::Rows(plan)],
        },
        flops: numel * list.len() as u64,
        bytes: io_bytes(op),
        dtype: x.dtype,
        lowering: format!("{name}{} rows", if backward { " backward" } else { "" }),
        costed_by_default: false,
    })
}

fn softmax(op: &ExternalOp<'_>, backward: bool) -> Option<Description> {
    let out = op.outputs.first().or_else(|| op.inputs.first())?;
    let cols = out.size_from_end(1).max(1);
    let rows = out.numel() / cols;
    let list: &[(Engine, u32)] = if backward {
        &[(Engine::Vector, 2), (Engine::Vector, 2)]
    } else {
        &[
            (Engine::Vector, 1),
            (Engine::Scalar, 1),
            (Engine::Vector, 1),
        ]
    };
    let streamed: Vec<u64> = op.inputs.iter().map(|t| t.dtype.size_bytes()).collect();
    let eb = out.dtype.size_bytes();
    let plan = row_plan(
        rows,
        cols,
        stages(list),
        out.dtype.sixteen_bit(),
        &streamed,
        0,
        eb,
    );
    Some(Description {
        lowering_plan: ExternalLowering {
            pieces: vec![Piece::Rows(plan)],
        },
        flops: 5 * out.numel(),
        bytes: io_bytes(op),
        dtype: out.dtype,
        lowering: format!("softmax{} rows", if backward { " backward" } else { "" }),
        costed_by_default: false,
    })
}

/// A reduction of the first input to the first output's size, tiled by
/// [`reduction_passes`] (few long rows split over the partitions, then a pass across).
fn reduction(op: &ExternalOp<'_>) -> Option<Description> {
    // The data reduced is the largest floating input (`nll_loss_backward`'s first
    // input is the scalar gradient of the loss; the class's integer inputs are indices).
    let x = op
        .inputs
        .iter()
        .filter(|t| !t.is_integer())
        .max_by_key(|t| t.numel())
        .or_else(|| op.inputs.first())?;
    let out = op.outputs.first()?;
    let numel = x.numel().max(1);
    let (rows, cols) = if out.numel() >= numel {
        // An output as large as the data: a scan, a sort, or a reduction's backward
        // (`nll_loss_backward`'s gradient of the logits) runs along rows of the data's
        // last dimension, not one row per output element.
        let cols = x.size_from_end(1).max(1);
        ((numel / cols).max(1), cols)
    } else {
        let rows = out.numel().max(1);
        (rows, (numel / rows).max(1))
    };
    let eb = x.dtype.size_bytes();
    let oeb = out.dtype.size_bytes();
    let sixteen = x.dtype.sixteen_bit();
    let passes = reduction_passes(rows, cols, 1, (eb, oeb), stage(Engine::Vector, 1), sixteen);
    let lowering = if passes.len() == 1 {
        "reduction rows"
    } else {
        "reduction rows in partial sums, then across partitions"
    }
    .to_owned();
    let pieces = passes.into_iter().map(Piece::Rows).collect();
    Some(Description {
        lowering_plan: ExternalLowering { pieces },
        flops: numel,
        bytes: io_bytes(op),
        dtype: x.dtype,
        lowering,
        costed_by_default: false,
    })
}

/// Rows of a table gathered by index: the output's last dimension is the row, each
/// row's index and its `row × element` bytes stream in by indirect DMA, the offsets are
/// computed on GpSimdE (as `ops/index.rs`'s embedding).
fn gather(op: &ExternalOp<'_>) -> Option<Description> {
    let out = op.outputs.first()?;
    let table = op
        .inputs
        .iter()
        .find(|t| !t.is_integer())
        .or_else(|| op.inputs.first())?;
    let cols = out.size_from_end(1).max(1);
    let rows = out.numel() / cols;
    let index_bytes: u64 = op
        .inputs
        .iter()
        .filter(|t| t.is_integer() && t.numel() > 0)
        .map(|t| t.bytes())
        .sum();
    let mut gathered = Stage::new(Engine::GpSimd, 1, runtime_hooks::name!("gather_offsets"));
    gathered.flops_per_elem = 0;
    let mut plan = row_plan(
        rows,
        cols,
        vec![gathered],
        out.dtype.sixteen_bit(),
        &[table.dtype.size_bytes()],
        0,
        out.dtype.size_bytes(),
    );
    plan.load_bytes_per_row.push(index_bytes / rows.max(1));
    Some(Description {
        lowering_plan: ExternalLowering {
            pieces: vec![Piece::Rows(plan)],
        },
        flops: 0,
        bytes: index_bytes + rows * cols * table.dtype.size_bytes() + out.bytes(),
        dtype: table.dtype,
        lowering: "gather GpSimdE + indirect DMA".to_owned(),
        costed_by_default: false,
    })
}

/// Rows added (or written) into a destination by index on GpSimdE: the source rows and
/// indices stream in, the destination rows are read and written back.
fn scatter(op: &ExternalOp<'_>) -> Option<Description> {
    let source = op
        .inputs
        .iter()
        .filter(|t| !t.is_integer())
        .max_by_key(|t| t.numel())?;
    let out = op.outputs.first().unwrap_or(source);
    let cols = source.size_from_end(1).max(1);
    let rows = source.numel() / cols;
    let index_bytes: u64 = op
        .inputs
        .iter()
        .filter(|t| t.is_integer())
        .map(|t| t.bytes())
        .sum();
    let eb = out.dtype.size_bytes();
    let mut plan = row_plan(
        rows,
        cols,
        vec![Stage::new(
            Engine::GpSimd,
            1,
            runtime_hooks::name!("scatter_add"),
        )],
        out.dtype.sixteen_bit(),
        &[source.dtype.size_bytes(), eb],
        0,
        eb,
    );
    plan.load_bytes_per_row.push(index_bytes / rows.max(1));
    Some(Description {
        lowering_plan: ExternalLowering {
            pieces: vec![Piece::Rows(plan)],
        },
        flops: rows * cols,
        bytes: io_bytes(op),
        dtype: out.dtype,
        lowering: "scatter GpSimdE + indirect DMA".to_owned(),
        costed_by_default: false,
    })
}

/// The elements of an op: the output's (for `_foreach_` ops, every tensor of the first
/// output list, or of the first input list for in-place ones), the streamed inputs
/// (those as large as the output, or every list) and what broadcasts.
struct Elements {
    elements: u64,
    streamed: Vec<u64>,
    const_bytes: u64,
    store_eb: u64,
    sixteen_bit: bool,
}

fn elements(op: &ExternalOp<'_>) -> Option<Elements> {
    let lists = op.inputs.iter().chain(op.outputs).any(|t| t.list > 0);
    if lists {
        let first_list = |ts: &[ExternalTensor<'_>]| -> Option<(u64, ScalarType)> {
            let list = ts.iter().find(|t| t.list > 0)?.list;
            let members: Vec<_> = ts.iter().filter(|t| t.list == list).collect();
            Some((members.iter().map(|t| t.numel()).sum(), members[0].dtype))
        };
        let (elements, dtype) = first_list(op.outputs).or_else(|| first_list(op.inputs))?;
        let mut input_lists: Vec<u16> = op
            .inputs
            .iter()
            .filter(|t| t.list > 0)
            .map(|t| t.list)
            .collect();
        input_lists.dedup();
        let plain: u64 = op
            .inputs
            .iter()
            .filter(|t| t.list == 0)
            .map(|t| t.bytes())
            .sum();
        return Some(Elements {
            elements,
            streamed: input_lists.iter().map(|_| dtype.size_bytes()).collect(),
            const_bytes: plain,
            store_eb: dtype.size_bytes(),
            sixteen_bit: dtype.sixteen_bit(),
        });
    }
    let largest = op
        .outputs
        .iter()
        .chain(op.inputs)
        .max_by_key(|t| t.numel())?;
    let out = op.outputs.first().unwrap_or(largest);
    let elements = out.numel().max(largest.numel());
    Some(Elements {
        elements,
        streamed: op
            .inputs
            .iter()
            .filter(|t| t.numel() == elements)
            .map(|t| t.dtype.size_bytes())
            .collect(),
        const_bytes: op
            .inputs
            .iter()
            .filter(|t| t.numel() != elements)
            .map(|t| t.bytes())
            .sum(),
        store_eb: out.dtype.size_bytes(),
        sixteen_bit: out.dtype.sixteen_bit(),
    })
}

fn flat_plan(e: &Elements, stages: Vec<Stage>, store: bool) -> RowPlan {
    let mut plan = RowPlan::flat(e.elements.max(1), stages, e.sixteen_bit);
    for eb in &e.streamed {
        plan = plan.load(*eb);
    }
    plan.const_bytes = e.const_bytes;
    if store {
        plan = plan.store(e.store_eb);
    }
    plan
}

fn elementwise(op: &ExternalOp<'_>, engine: Engine, what: &str) -> Option<Description> {
    let e = elements(op)?;
    let inputs = (e.streamed.len() as u32).max(1);
    let plan = flat_plan(&e, vec![stage(engine, inputs)], true);
    Some(Description {
        lowering_plan: ExternalLowering {
            pieces: vec![Piece::Rows(plan)],
        },
        flops: e.elements * u64::from(inputs),
        bytes: io_bytes(op),
        dtype: main_dtype(op),
        lowering: format!("{what} {}", engine_name(engine)),
        costed_by_default: false,
    })
}

fn random(op: &ExternalOp<'_>) -> Option<Description> {
    let e = elements(op)?;
    let inputs = (e.streamed.len() as u32).max(1);
    let list = [
        Stage::new(Engine::GpSimd, 1, runtime_hooks::name!("random")),
        stage(Engine::Vector, inputs + 1),
    ];
    let plan = flat_plan(&e, list.to_vec(), true);
    Some(Description {
        lowering_plan: ExternalLowering {
            pieces: vec![Piece::Rows(plan)],
        },
        flops: 2 * e.elements,
        bytes: io_bytes(op),
        dtype: main_dtype(op),
        lowering: "random GpSimdE + VectorE".to_owned(),
        costed_by_default: false,
    })
}

fn fill(op: &ExternalOp<'_>) -> Option<Description> {
    let mut e = elements(op)?;
    e.streamed.clear();
    e.const_bytes = 0;
    let plan = flat_plan(&e, vec![stage(Engine::Vector, 1)], true);
    Some(Description {
        lowering_plan: ExternalLowering {
            pieces: vec![Piece::Rows(plan)],
        },
        flops: 0,
        bytes: op.outputs.iter().map(|t| t.bytes()).sum(),
        dtype: main_dtype(op),
        lowering: "fill VectorE".to_owned(),
        costed_by_default: false,
    })
}

#[cfg(test)]
mod tests;
