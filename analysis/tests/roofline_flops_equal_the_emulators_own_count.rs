//! On a trace of our own emulator (`tests/data/gpt-2ranks-4steps/`, the `gpt` workload on
//! two trn2 ranks at LNC=2, `tests/data/README.md`), the performance model's FLOPs of every GEMM row
//! equal the FLOPs the emulator itself wrote on the kernels (their `flops` args), and the
//! device is the trace's trn2 logical core with the peaks the trace states. On ops
//! profiled here on the emulator: the rows of `aten::embedding` and
//! `aten::native_layer_norm` read their arguments as on PyTorch's traces.

use std::path::PathBuf;
use std::sync::Mutex;

use analysis::analyses::roofline::{roofline_table, RankRoofline, RooflineOp, RooflineOptions};
use analysis::{load_paths, LoadOptions};
use neuron_backend::{DType, Device, RecordDetail, Runtime};
use perf_model::Category;
use profiler::{Activity, DeviceDetail, DeviceInfo, Profiler};

/// The profiler is one per process: the tests that profile take turns.
static PROFILER: Mutex<()> = Mutex::new(());

/// The emulated device as `neuronprof run` describes it in a trace's `deviceProperties`.
fn device_info(device: &Device) -> DeviceInfo {
    let profile = device.profile();
    DeviceInfo {
        core_version: profile.core_version().to_owned(),
        lnc: profile.lnc,
        hbm_bytes: profile.hbm_bytes_per_core(),
        peak_tflops: profile
            .peak_tflops_per_core()
            .iter()
            .map(|&(dtype, tflops)| (dtype.to_owned(), tflops))
            .collect(),
        compute_queues: profile.compute_queues,
        collective_queues: profile.collective_queues,
        tensor_op_queues: profile.tensor_op_queues,
        ..DeviceInfo::new(device.index() as u16, &profile.name)
    }
}

/// Runs `body` on logical core 0 of a trn2 (LNC=2; timing only, kernels recorded) under
/// the profiler with shapes and FLOPs, writes the trace, and returns its roofline table.
fn roofline_of(test: &str, body: impl FnOnce(&Device)) -> RankRoofline {
    roofline_with(test, RecordDetail::Kernels, body)
}

/// [`roofline_of`] recording `detail` (with instructions, kernels state their engines'
/// busy time).
fn roofline_with(test: &str, detail: RecordDetail, body: impl FnOnce(&Device)) -> RankRoofline {
    let _turn = PROFILER.lock().unwrap_or_else(|p| p.into_inner());
    let runtime = Runtime::trn2();
    runtime.set_numerics(false);
    runtime.set_detail(detail);
    let device = runtime.device(0).unwrap();
    let mut prof = Profiler::builder()
        .activities(&[Activity::Cpu, Activity::Neuron])
        .record_shapes(true)
        .with_flops(true)
        .device_detail(match detail {
            RecordDetail::Kernels => DeviceDetail::Kernels,
            _ => DeviceDetail::Instructions,
        })
        .device(device_info(&device))
        .start();
    body(&device);
    runtime.synchronize();
    prof.step().unwrap();
    let result = prof.stop().unwrap().expect("a profiled window");
    let dir = std::env::temp_dir().join(format!("roofline-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rank0.pt.trace.json.gz");
    result.export_chrome_trace(&path).unwrap();
    let traces = load_paths(&[&path], &LoadOptions::default()).expect("trace loads");
    std::fs::remove_dir_all(&dir).ok();
    roofline_table(&traces.ranks[0], &RooflineOptions::default()).expect("roofline")
}

fn row<'t>(table: &'t RankRoofline, name: &str) -> &'t RooflineOp {
    table
        .ops
        .iter()
        .find(|op| op.name == name)
        .unwrap_or_else(|| panic!("no {name} row; not covered: {:?}", table.uncovered))
}

fn assert_close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs(),
        "{what}: {got}, expected {want}"
    );
}

#[test]
fn the_emulators_embedding_and_layer_norm_rows_read_their_arguments_as_pytorchs() {
    let table = roofline_of("args", |d| {
        let weight = d.zeros(&[1000, 64], DType::BF16).unwrap();
        let indices = d.zeros(&[4, 32], DType::I64).unwrap();
        weight.embedding(&indices).unwrap();
        let x = d.zeros(&[4, 32, 64], DType::F32).unwrap();
        let (w, b) = (
            d.ones(&[64], DType::F32).unwrap(),
            d.zeros(&[64], DType::F32).unwrap(),
        );
        x.layer_norm(&w, &b, 1e-5).unwrap();
    });
    // As PyTorch records aten::embedding(weight, indices, padding_idx,
    // scale_grad_by_freq, sparse): the 128 indices read once (8 bytes), each gathered
    // 64-wide BF16 row read and written.
    let embedding = row(&table, "aten::embedding");
    assert_eq!(embedding.input_dims, "[[1000, 64], [4, 32], [], [], []]");
    assert_eq!(embedding.category, Category::Embedding);
    assert_close(
        embedding.data_moved_bytes,
        128.0 * 8.0 + 2.0 * 128.0 * 64.0 * 2.0,
        "embedding bytes",
    );
    // native_layer_norm(input, normalized_shape, weight, bias, eps): 5 FLOPs per element
    // and one each for the weight and the bias; the input read and the output written,
    // weight and bias read once (FP32).
    let norm = row(&table, "aten::native_layer_norm");
    assert_eq!(norm.input_dims, "[[4, 32, 64], [], [64], [64], []]");
    assert_eq!(norm.category, Category::NormFwd);
    assert_close(norm.gflops * 1e9, 8192.0 * 7.0, "layer norm FLOPs");
    assert_close(
        norm.data_moved_bytes,
        2.0 * 8192.0 * 4.0 + 2.0 * 64.0 * 4.0,
        "layer norm bytes",
    );
}

#[test]
fn gemm_flops_of_the_model_equal_the_emulators_kernel_flops() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/gpt-2ranks-4steps/rank0.pt.trace.json.gz");
    let traces = load_paths(&[&path], &LoadOptions::default()).expect("trace loads");
    let table = roofline_table(&traces.ranks[0], &RooflineOptions::default()).expect("roofline");
    assert_eq!(
        table.device.as_deref(),
        Some("trn2 (LNC=2)"),
        "{}",
        table.device_source
    );
    let gemms: Vec<_> = table
        .ops
        .iter()
        .filter(|op| op.category == Category::Gemm)
        .collect();
    assert!(gemms.len() >= 3, "GEMM rows: {}", gemms.len());
    for op in &gemms {
        let device = op
            .device_flops_per_call
            .unwrap_or_else(|| panic!("{} {}: no kernel flops", op.name, op.input_dims));
        assert_eq!(
            op.gflops * 1e9,
            device,
            "{} {}: model vs emulator FLOPs",
            op.name,
            op.input_dims
        );
        // The matrix peak is the trace's own (deviceProperties.peakTflops fp32 = 39.5).
        if op.compute_spec == "matrix_fp32" {
            assert_eq!(op.peak.as_ref().map(|p| p.1), Some(39.5));
        }
    }
}

/// With engine instructions recorded: a compute-bound BF16 GEMM should be bound by
/// TensorE and was; its percent of the roofline is the share of the kernel TensorE spent
/// busy (moving passes; each stationary load runs behind the previous one's passes, so
/// only a few loads show), at the passes' 2.4 GHz × 128 × 128 × 2 (78.64 TFLOP/s) against
/// the trace's 79 per physical core. A large layer norm is memory-bound (DMA should bind)
/// and VectorE is its busiest engine.
#[test]
fn the_emulators_rows_are_split_by_engine_against_the_engine_that_should_bind() {
    let table = roofline_with("engines", RecordDetail::Instructions, |d| {
        let a = d.zeros(&[4096, 2048], DType::BF16).unwrap();
        let b = d.zeros(&[2048, 2048], DType::BF16).unwrap();
        a.matmul(&b).unwrap();
        let x = d.zeros(&[64, 128, 1024], DType::F32).unwrap();
        let (w, b) = (
            d.ones(&[1024], DType::F32).unwrap(),
            d.zeros(&[1024], DType::F32).unwrap(),
        );
        x.layer_norm(&w, &b, 1e-5).unwrap();
    });
    let gemm = row(&table, "aten::matmul");
    let split = gemm.engines.as_ref().expect("engine busy times");
    assert_eq!(split.should_bind.as_deref(), Some("TensorE"));
    assert_eq!(split.busiest, "TensorE");
    let tensor = &split.engines[0];
    let expected = tensor.share_pct * (2.4 * 128.0 * 128.0 * 2.0 / 1e3) / 79.0;
    let pct = gemm.roofline_pct.unwrap();
    eprintln!(
        "GEMM 4096×2048×2048 bf16: {pct:.2} % of the roofline, TensorE busy {:.2} %, \
         expected {expected:.2} %",
        tensor.share_pct
    );
    assert!(
        (pct - expected).abs() <= 2.0,
        "{pct:.2} % of the roofline, TensorE busy {:.2} % of the kernel: expected {expected:.2} %",
        tensor.share_pct
    );
    let norm = row(&table, "aten::native_layer_norm");
    let split = norm.engines.as_ref().expect("engine busy times");
    assert_eq!(norm.bound, Some(perf_model::Bound::Memory));
    assert_eq!(split.should_bind.as_deref(), Some("DMA"));
    assert_eq!(split.busiest, "VectorE", "{split:?}");
}

/// A GEMM the emulator runs at its peak reads 100 % ± 2 % of the trn2 roofline. Its RHS
/// (2048 × 2048 BF16, 8 MiB) stays in each physical core's SBUF and its LHS streams in
/// 128-row panels, so after the first k-tile arrives TensorE runs moving passes back to
/// back (the stationary loads behind them): the emulator's own rate, 78.64 of 79 TFLOP/s
/// per physical core, less the prologue (the first tiles wait for the RHS's k-tiles to
/// arrive) and the last tile's evacuation and store: 98.9 % here.
#[test]
fn a_gemm_at_the_emulators_peak_reads_its_full_roofline() {
    let table = roofline_of("peak", |d| {
        let a = d.zeros(&[65536, 2048], DType::BF16).unwrap();
        let b = d.zeros(&[2048, 2048], DType::BF16).unwrap();
        a.matmul(&b).unwrap();
    });
    assert_eq!(table.device.as_deref(), Some("trn2 (LNC=2)"));
    let gemm = row(&table, "aten::matmul");
    assert_eq!(gemm.bound, Some(perf_model::Bound::Compute));
    assert_eq!(
        gemm.peak.as_ref().map(|p| p.1),
        Some(158.0),
        "{:?}",
        gemm.peak
    );
    let pct = gemm.roofline_pct.expect("a roofline");
    let tflops = gemm.tflops_per_sec.mean;
    eprintln!("GEMM 65536×2048×2048 bf16: {tflops:.2} TFLOP/s, {pct:.2} % of the roofline");
    assert!((98.0..=102.0).contains(&pct), "{pct:.2} % of the roofline");
}
