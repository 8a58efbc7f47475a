use super::*;
use crate::{DType, Device, ExternalKernel, ExternalLaunch, Runtime, Tensor};

const F32: ScalarType = ScalarType(6);
const BF16: ScalarType = ScalarType(15);
const I64: ScalarType = ScalarType(4);

/// Contiguous strides of `sizes`.
fn strides(sizes: &[i64]) -> Vec<i64> {
    let mut out = vec![1; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        out[i] = out[i + 1] * sizes[i + 1];
    }
    out
}

struct Owned {
    dtype: ScalarType,
    sizes: Vec<i64>,
    strides: Vec<i64>,
    list: u16,
}

fn t(dtype: ScalarType, sizes: &[i64]) -> Owned {
    Owned {
        dtype,
        strides: strides(sizes),
        sizes: sizes.to_vec(),
        list: 0,
    }
}

fn view(o: &Owned) -> ExternalTensor<'_> {
    ExternalTensor {
        dtype: o.dtype,
        sizes: &o.sizes,
        strides: &o.strides,
        list: o.list,
    }
}

fn describe_op(name: &str, inputs: &[Owned], outputs: &[Owned]) -> Description {
    let inputs: Vec<_> = inputs.iter().map(view).collect();
    let outputs: Vec<_> = outputs.iter().map(view).collect();
    describe(&ExternalOp {
        name,
        inputs: &inputs,
        outputs: &outputs,
    })
}

/// Modeled duration of a described op launched on a fresh device.
fn modeled_ns(d: &Description) -> u64 {
    let runtime = Runtime::trn2();
    let device = runtime.device(0).unwrap();
    device
        .external_launch(
            0,
            &ExternalLaunch {
                name_id: runtime_hooks::intern("describe_test"),
                corr_id: runtime_hooks::next_corr_id(),
                flops: d.flops,
                bytes: d.bytes,
                kernel: ExternalKernel::Lowered(d.lowering_plan.clone()),
            },
        )
        .unwrap()
        .dur_ns()
}

/// Modeled duration of a native op on a fresh device without numerics.
fn native_ns(op: impl FnOnce(&Device) -> Tensor) -> u64 {
    let runtime = Runtime::trn2();
    runtime.set_numerics(false);
    let device = runtime.device(0).unwrap();
    op(&device);
    device.last_kernel().unwrap().dur_ns()
}

#[test]
fn an_mm_out_is_the_native_matmul() {
    // `mm.out(self, mat2, out)`: inputs self and mat2, the output written.
    let d = describe_op(
        "aten::mm",
        &[t(BF16, &[512, 256]), t(BF16, &[256, 384])],
        &[t(BF16, &[512, 384])],
    );
    assert!(!d.costed_by_default);
    assert_eq!(d.flops, 2 * 512 * 256 * 384);
    assert_eq!(d.lowering, "matmul bf16");
    assert_eq!(d.dtype.tag(), "bf16");
    let native = native_ns(|device| {
        let a = device.zeros(&[512, 256], DType::BF16).unwrap();
        let b = device.zeros(&[256, 384], DType::BF16).unwrap();
        a.matmul(&b).unwrap()
    });
    assert_eq!(modeled_ns(&d), native);
}

#[test]
fn addmm_linear_and_bmm_read_their_operands() {
    let addmm = describe_op(
        "addmm",
        &[t(F32, &[64]), t(F32, &[32, 16]), t(F32, &[16, 64])],
        &[t(F32, &[32, 64])],
    );
    assert_eq!(addmm.flops, 2 * 32 * 16 * 64 + 32 * 64);
    let linear = describe_op(
        "linear",
        &[t(F32, &[4, 8, 16]), t(F32, &[64, 16])],
        &[t(F32, &[4, 8, 64])],
    );
    assert_eq!(linear.flops, 2 * 32 * 16 * 64);
    let bmm = describe_op(
        "bmm",
        &[t(F32, &[6, 32, 16]), t(F32, &[6, 16, 8])],
        &[t(F32, &[6, 32, 8])],
    );
    assert_eq!(bmm.flops, 2 * 6 * 32 * 16 * 8);
    let matmul = describe_op(
        "matmul",
        &[t(F32, &[6, 32, 16]), t(F32, &[16])],
        &[t(F32, &[6, 32])],
    );
    assert_eq!(matmul.flops, 2 * 6 * 32 * 16);
}

#[test]
fn integer_and_f64_matmuls_say_how_they_are_costed() {
    let int8 = describe_op(
        "mm",
        &[t(ScalarType(1), &[128, 128]), t(ScalarType(1), &[128, 128])],
        &[t(ScalarType(3), &[128, 128])],
    );
    assert!(
        int8.lowering.contains("no integer TensorE mode"),
        "{}",
        int8.lowering
    );
    let fp8 = describe_op(
        "mm",
        &[
            t(ScalarType(24), &[128, 128]),
            t(ScalarType(24), &[128, 128]),
        ],
        &[t(BF16, &[128, 128])],
    );
    assert_eq!(fp8.lowering, "matmul fp8");
    // Same bytes per element, but the integer never runs at the FP8 rate.
    assert!(modeled_ns(&int8) > modeled_ns(&fp8));
    let f64 = describe_op(
        "mm",
        &[t(ScalarType(7), &[64, 64]), t(ScalarType(7), &[64, 64])],
        &[t(ScalarType(7), &[64, 64])],
    );
    assert!(f64.lowering.contains("no fp64"), "{}", f64.lowering);
}

#[test]
fn softmax_and_layer_norm_are_the_native_row_kernels() {
    let softmax = describe_op("_softmax", &[t(F32, &[256, 1024])], &[t(F32, &[256, 1024])]);
    assert_eq!(softmax.lowering, "softmax rows");
    let native = native_ns(|device| {
        device
            .zeros(&[256, 1024], DType::F32)
            .unwrap()
            .softmax()
            .unwrap()
    });
    assert_eq!(modeled_ns(&softmax), native);

    let ln = describe_op(
        "native_layer_norm",
        &[t(F32, &[512, 768]), t(F32, &[768]), t(F32, &[768])],
        &[t(F32, &[512, 768]), t(F32, &[512, 1]), t(F32, &[512, 1])],
    );
    assert_eq!(ln.lowering, "layer norm rows");
    let native = native_ns(|device| {
        let x = device.zeros(&[512, 768], DType::F32).unwrap();
        let w = device.ones(&[768], DType::F32).unwrap();
        let b = device.zeros(&[768], DType::F32).unwrap();
        x.layer_norm(&w, &b, 1e-5).unwrap()
    });
    assert_eq!(modeled_ns(&ln), native);
}

#[test]
fn reductions_go_to_the_outputs_real_size() {
    let rows = describe_op("sum", &[t(F32, &[4096, 512])], &[t(F32, &[4096])]);
    assert_eq!(rows.lowering, "reduction rows");
    let full = describe_op("sum", &[t(F32, &[4096, 512])], &[t(F32, &[])]);
    assert!(full.lowering.contains("partial sums"), "{}", full.lowering);
    // Spread over the partitions, a full reduction is far faster than one long row.
    let one_row = describe_op("sum", &[t(F32, &[1, 4096 * 512])], &[t(F32, &[1])]);
    assert!(modeled_ns(&full) <= modeled_ns(&one_row));
    assert!(modeled_ns(&full) < 8 * modeled_ns(&rows));
}

/// A reduction's backward (and a scan or a sort) has an output as large as its data: it
/// runs along the data's rows, not one row per output element. `nll_loss_backward` of a
/// GPT-2's 512 × 4096 logits took 4.4 ms as 2 M one-element rows (its first input is
/// the scalar gradient); as a pass over the logits it takes what an elementwise pass of
/// them takes.
#[test]
fn a_reductions_backward_runs_along_the_datas_rows() {
    let backward = describe_op(
        "nll_loss_backward",
        &[
            t(F32, &[]),
            t(F32, &[512, 4096]),
            t(I64, &[512]),
            t(F32, &[]),
        ],
        &[t(F32, &[512, 4096])],
    );
    assert!(!backward.costed_by_default, "{}", backward.lowering);
    let pass = describe_op("neg", &[t(F32, &[512, 4096])], &[t(F32, &[512, 4096])]);
    let (ns, pass_ns) = (modeled_ns(&backward), modeled_ns(&pass));
    assert!(
        ns < 2 * pass_ns,
        "nll_loss_backward {ns} ns, a pass over the logits {pass_ns} ns"
    );
    let cumsum = describe_op("cumsum", &[t(F32, &[512, 4096])], &[t(F32, &[512, 4096])]);
    assert!(modeled_ns(&cumsum) < 2 * pass_ns);
    // The forward still reduces the logits to one value, spread over the partitions.
    let forward = describe_op(
        "nll_loss_forward",
        &[t(F32, &[512, 4096]), t(I64, &[512])],
        &[t(F32, &[]), t(F32, &[])],
    );
    assert!(
        forward.lowering.contains("partial sums"),
        "{}",
        forward.lowering
    );
}

#[test]
fn an_embedding_gathers_rows_on_gpsimd() {
    let d = describe_op(
        "embedding",
        &[t(F32, &[50257, 768]), t(I64, &[4, 128])],
        &[t(F32, &[4, 128, 768])],
    );
    assert!(d.lowering.starts_with("gather GpSimdE"), "{}", d.lowering);
    // Only the gathered rows move, not the table.
    assert_eq!(d.bytes, 2 * 512 * 768 * 4 + 512 * 8);
    let native = native_ns(|device| {
        let w = device.zeros(&[50257, 768], DType::F32).unwrap();
        let idx = device.zeros(&[4, 128], DType::I64).unwrap();
        w.embedding(&idx).unwrap()
    });
    let modeled = modeled_ns(&d);
    assert!(
        modeled.abs_diff(native) * 10 <= native,
        "{modeled} vs native {native}"
    );
}

#[test]
fn elementwise_ops_use_their_engine_and_the_default_rule_is_marked() {
    let gelu = describe_op("gelu", &[t(BF16, &[1 << 20])], &[t(BF16, &[1 << 20])]);
    assert_eq!(gelu.lowering, "elementwise ScalarE");
    // A broadcast operand loads once.
    let add = describe_op(
        "add_",
        &[t(F32, &[1024, 1024]), t(F32, &[1024])],
        &[t(F32, &[1024, 1024])],
    );
    assert_eq!(add.lowering, "elementwise VectorE");
    assert_eq!(add.flops, 1 << 20, "one streamed input");
    let unknown = describe_op("frobnicate", &[t(F32, &[4096])], &[t(F32, &[4096])]);
    assert!(unknown.costed_by_default);
    assert!(
        unknown.lowering.starts_with("default: elementwise VectorE"),
        "{}",
        unknown.lowering
    );
    assert!(unknown.lowering.contains("not in the table"));
    // Known, but the operands do not fit: also the default rule, said differently.
    let odd = describe_op("mm", &[t(F32, &[4, 4, 4])], &[t(F32, &[4])]);
    assert!(
        odd.costed_by_default && odd.lowering.contains("do not fit"),
        "{}",
        odd.lowering
    );
}

#[test]
fn foreach_ops_cover_every_tensor_of_their_lists() {
    let list = |sizes: &[&[i64]], list: u16| -> Vec<Owned> {
        sizes.iter().map(|s| Owned { list, ..t(F32, s) }).collect()
    };
    let mut inputs = list(&[&[100], &[300]], 1);
    inputs.extend(list(&[&[100], &[300]], 2));
    let d = describe_op("_foreach_add_", &inputs, &[]);
    assert_eq!(d.lowering, "elementwise VectorE");
    assert_eq!(d.flops, 800, "two lists of 400 elements");
}

#[test]
fn attention_is_two_matmuls_around_a_softmax() {
    let q = || t(BF16, &[2, 12, 256, 64]);
    let d = describe_op(
        "_scaled_dot_product_flash_attention_for_cpu",
        &[q(), q(), q()],
        &[q(), t(F32, &[2, 12, 256])],
    );
    assert!(
        d.lowering.starts_with("attention: matmul bf16"),
        "{}",
        d.lowering
    );
    assert!(d.flops >= 2 * 2 * 2 * 12 * 256 * 256 * 64);
    let backward = describe_op(
        "_scaled_dot_product_flash_attention_for_cpu_backward",
        &[q(), q(), q(), q(), q(), t(F32, &[2, 12, 256])],
        &[q(), q(), q()],
    );
    assert!(backward.flops > 2 * d.flops);
    assert!(modeled_ns(&backward) > modeled_ns(&d));
}

#[test]
fn a_convolution_is_an_implicit_gemm() {
    let d = describe_op(
        "convolution_overrideable",
        &[
            t(F32, &[8, 64, 32, 32]),
            t(F32, &[128, 64, 3, 3]),
            t(F32, &[128]),
        ],
        &[t(F32, &[8, 128, 32, 32])],
    );
    assert_eq!(
        d.flops,
        2 * (8 * 32 * 32) * (64 * 9) * 128 + 8 * 32 * 32 * 128
    );
    assert!(
        d.lowering.starts_with("convolution as implicit GEMM"),
        "{}",
        d.lowering
    );
}

#[test]
fn a_transposed_convolution_is_the_gemm_of_its_adjoint() {
    // ConvTranspose2d(64 -> 32, kernel 4, stride 2): 16x16 -> 32x32.
    let d = describe_op(
        "conv_transpose2d",
        &[t(F32, &[2, 64, 16, 16]), t(F32, &[64, 32, 4, 4])],
        &[t(F32, &[2, 32, 32, 32])],
    );
    // Every input position meets every weight element once: 2 · N·16·16 · 64 · 32·16.
    assert_eq!(d.flops, 2 * (2 * 16 * 16) * (32 * 16) * 64);
    assert!(d.lowering.contains("adjoint"), "{}", d.lowering);
    // Grouped: 4 groups of 16 -> 8 channels.
    let g = describe_op(
        "conv_transpose2d",
        &[t(F32, &[2, 64, 16, 16]), t(F32, &[64, 8, 4, 4])],
        &[t(F32, &[2, 32, 32, 32])],
    );
    assert_eq!(g.flops, d.flops / 4);
}

#[test]
fn a_convolution_backward_costs_one_gemm_per_gradient_it_computes() {
    let ins = || {
        [
            t(F32, &[8, 128, 32, 32]),
            t(F32, &[8, 64, 32, 32]),
            t(F32, &[128, 64, 3, 3]),
        ]
    };
    let forward = 2 * (8 * 32 * 32) * (64 * 9) * 128;
    let both = describe_op(
        "conv2d_backward",
        &ins(),
        &[t(F32, &[8, 64, 32, 32]), t(F32, &[128, 64, 3, 3])],
    );
    assert_eq!(both.flops, 2 * forward);
    let weight_only = describe_op(
        "conv2d_backward",
        &ins(),
        &[t(F32, &[128, 64, 3, 3]), t(F32, &[128])],
    );
    assert_eq!(weight_only.flops, forward);
    assert!(weight_only
        .lowering
        .starts_with("convolution as 1 implicit GEMM"));
    assert!(!weight_only.costed_by_default);
}
