//! On a `torch.compile(backend="neuron")` trace (`tests/data/compiled-block/`, made
//! through real PyTorch: `tests/data/README.md`), every graph kernel is a roofline row of
//! its own, costed from the passes its kernel states (`pass_costs`), with its passes'
//! shares of its time: the numbers add up to what the kernels state and to the device's
//! figures, and the launching `CompiledFunction` is no longer "not covered".

use std::path::PathBuf;

use analysis::analyses::roofline::{roofline_table, RooflineOptions};
use analysis::{load_paths, LoadOptions};
use perf_model::{Category, ComputeSpec, DeviceSpec};

#[test]
fn compiled_graphs_are_rows_costed_from_their_passes() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/compiled-block/rank0.pt.trace.json.gz");
    let traces = load_paths(&[&path], &LoadOptions::default()).expect("trace loads");
    let rank = &traces.ranks[0];
    let table = roofline_table(rank, &RooflineOptions::default()).expect("roofline");
    assert_eq!(table.device.as_deref(), Some("trn2 (LNC=2)"));
    let trn2 = DeviceSpec::builtin("trn2").expect("trn2 is built in");
    let graphs: Vec<_> = table
        .ops
        .iter()
        .filter(|op| op.category == Category::CompiledGraph)
        .collect();
    let names: Vec<&str> = graphs.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.iter().any(|n| n.ends_with("_forward")), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with("_backward")), "{names:?}");
    for g in &graphs {
        assert_eq!(g.count, 2, "{}: one call per profiled step", g.name);
        let passes = g.passes.as_ref().expect("a graph row lists its passes");
        // Σ passes = what the kernel states of itself.
        let flops: f64 = passes.iter().map(|p| p.gflops * 1e9).sum();
        let stated = g
            .device_flops_per_call
            .expect("the kernel states its flops");
        assert!(
            (flops - stated).abs() <= 1e-6 * stated,
            "{}: {flops} vs {stated}",
            g.name
        );
        assert!(
            (g.gflops * 1e9 - stated).abs() <= 1e-6 * stated,
            "{}",
            g.name
        );
        let bytes: f64 = passes.iter().map(|p| p.data_moved_bytes).sum();
        assert!(
            (bytes - g.data_moved_bytes).abs() <= 1e-6 * bytes,
            "{}",
            g.name
        );
        // Each single pass's roofline is max(FLOPs / peak, bytes / bandwidth) on trn2.
        let mut checked = 0;
        for p in passes.iter().filter(|p| p.count == 1) {
            let spec = ComputeSpec::parse(&p.compute_spec).expect("a compute spec");
            let compute = trn2
                .peak_flops_per_sec(spec)
                .map_or(0.0, |peak| p.gflops * 1e9 / peak.flops_per_sec);
            let want = compute.max(p.data_moved_bytes / trn2.memory_bytes_per_sec) * 1e6;
            let got = p.roofline_time_us.expect("a device");
            assert!(
                (got - want).abs() <= 1e-9 * want,
                "{} {}: {got} vs {want}",
                g.name,
                p.pass
            );
            checked += 1;
        }
        assert!(checked > 0, "{}: no single pass to check", g.name);
        // The graph's roofline is its passes'; their shares are at most its time.
        let sum: f64 = passes.iter().filter_map(|p| p.roofline_time_us).sum();
        let roofline = g.roofline_time_us.expect("a device");
        assert!((sum - roofline).abs() <= 1e-9 * sum, "{}", g.name);
        let pct = g.roofline_pct.expect("a percent");
        assert!((pct - roofline / g.kernel_time_per_call_us.mean * 100.0).abs() < 1e-9);
        let shares: f64 = passes.iter().map(|p| p.time_us).sum();
        let per_call = g.kernel_time_per_call_us.mean;
        assert!(
            shares <= per_call * (1.0 + 1e-9) && shares > 0.9 * per_call,
            "{}: {shares} of {per_call} us",
            g.name
        );
        let share_pct: f64 = passes.iter().map(|p| p.share_pct).sum();
        assert!((share_pct - shares / per_call * 100.0).abs() < 1e-6);
        // Fused passes are lines of their own, matmuls on TensorE.
        assert!(
            passes.iter().any(|p| p.pass.contains('+')),
            "{}: {passes:?}",
            g.name
        );
        assert!(
            passes
                .iter()
                .filter(|p| p.pass.starts_with("mm")
                    || p.pass.starts_with("addmm")
                    || p.pass.starts_with("bmm"))
                .all(|p| p.compute_spec == "matrix_fp32"),
            "{passes:?}"
        );
    }
    let forward = graphs
        .iter()
        .find(|g| g.name.ends_with("_forward"))
        .unwrap();
    let passes = forward.passes.as_ref().unwrap();
    assert!(
        passes.iter().any(|p| p.pass == "addmm+gelu+mul+add"),
        "{passes:?}"
    );
    assert!(
        !table
            .uncovered
            .iter()
            .any(|u| u.name.starts_with("CompiledFunction")),
        "{:?}",
        table.uncovered
    );
    // The graphs' time is modeled now: almost all of the rank's kernel time.
    assert!(
        table.modeled_kernel_time_us > 0.95 * table.kernel_time_us,
        "{table:?}"
    );
    let report = analysis::analyze(&traces, &analysis::ReportOptions::default());
    let text = analysis::render::render_report(&report);
    assert!(
        text.contains(&format!("{}: 2 calls", forward.name)),
        "{text}"
    );
    assert!(text.contains("its passes per call"), "{text}");
}
