//! `neuronprof analyze` and `neuronprof diff` through the binary, on the real traces in
//! `tests/data/traces/`, checked against what HTA 0.6 printed (`hta-reference/`); the
//! roofline's device (`--device-spec`) through `analyze`, `export` and `query`.

mod common;

use std::path::PathBuf;

use common::{gunzip, shared_traces};
use std::process::{Command, Output};

fn neuronprof(args: &[&str], paths: &[PathBuf]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(args)
        .args(paths)
        .output()
        .unwrap()
}

#[test]
fn analyze_hta_compat_json_matches_hta_temporal_breakdown() {
    let dir = shared_traces();
    let out = neuronprof(
        &["analyze", "--hta-compat", "--json"],
        &[
            dir.join("hta/two_rank-rank0.json.gz"),
            dir.join("hta/two_rank-rank1.json.gz"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ranks"], serde_json::json!([0, 1]));
    // hta-reference/two_rank.txt, temporal_breakdown rows for ranks 0 and 1.
    let rows = report["temporal_breakdown"]["ranks"].as_array().unwrap();
    assert_eq!(rows[0]["idle_time_us"], 321378.0);
    assert_eq!(rows[0]["kernel_time_us"], 600058.0);
    assert_eq!(rows[1]["compute_time_us"], 135548.0);
    assert_eq!(rows[1]["non_compute_time_pctg"], 22.72);
}

/// `--hta-version 0.5` follows the kernel-name rules of the HTA on PyPI: on
/// `simple_add` its `Stream Wait Event` rows are computation, and the compute time is
/// what HTA 0.5 computes there (10676 µs, `scripts/hta_reference.py` in the HTA venv);
/// under 0.6's rules they are not (10670 µs). `--numpy-sort` is accepted and echoed.
#[test]
fn analyze_hta_version_selects_the_hta_release_rules() {
    let dir = shared_traces();
    let trace = [dir.join("hta/simple_add.json.gz")];
    let compute = |args: &[&str]| {
        let out = neuronprof(args, &trace);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            report["temporal_breakdown"]["ranks"][0]["compute_time_us"].clone(),
            report["hta_version"].clone(),
        )
    };
    assert_eq!(
        compute(&["analyze", "--json", "--hta-compat", "--hta-version", "0.5"]),
        (serde_json::json!(10676.0), serde_json::json!("0.5"))
    );
    assert_eq!(
        compute(&["analyze", "--json", "--hta-compat"]),
        (serde_json::json!(10670.0), serde_json::json!("0.6"))
    );
    assert_eq!(
        compute(&[
            "analyze",
            "--json",
            "--hta-compat",
            "--numpy-sort",
            "scalar"
        ])
        .1,
        serde_json::json!("0.6")
    );
    assert_eq!(compute(&["analyze", "--json"]).1, serde_json::Value::Null);
    // Both need --hta-compat; a version we do not know is refused.
    for args in [
        &["analyze", "--hta-version", "0.5"][..],
        &["analyze", "--hta-compat", "--hta-version", "0.4"][..],
        &["analyze", "--hta-compat", "--numpy-sort", "neon"][..],
    ] {
        let out = neuronprof(args, &trace);
        assert!(!out.status.success(), "{args:?} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--hta-compat") || err.contains("0.4") || err.contains("neon"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn analyze_text_report_puts_insights_first_for_one_rank() {
    let dir = shared_traces();
    let out = neuronprof(
        &["analyze", "--rank", "0"],
        &[dir.join("hta/nccl_data.json.gz")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let insights = text.find("\nInsights\n").expect("an insights section");
    let temporal = text
        .find("\nTemporal breakdown\n")
        .expect("a temporal breakdown");
    assert!(insights < temporal, "{text}");
}

#[test]
fn analyze_truncated_trace_names_the_damage_unless_lenient() {
    let dir = shared_traces();
    let json = gunzip(&dir.join("hta/simple_add.json.gz"));
    let cut = json.len() / 2;
    let path = std::env::temp_dir().join(format!("neuronprof-analyze-{}.json", std::process::id()));
    std::fs::write(&path, &json[..cut]).unwrap();
    let strict = neuronprof(&["analyze"], std::slice::from_ref(&path));
    assert_eq!(strict.status.code(), Some(2));
    let err = String::from_utf8(strict.stderr).unwrap();
    assert!(
        err.contains(&path.display().to_string()) && err.contains("byte"),
        "{err}"
    );
    let lenient = neuronprof(
        &["analyze", "--lenient", "--json"],
        std::slice::from_ref(&path),
    );
    assert!(
        lenient.status.success(),
        "{}",
        String::from_utf8_lossy(&lenient.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&lenient.stdout).unwrap();
    let errors = report["errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e.as_str().unwrap().contains("truncated")),
        "{errors:?}"
    );
}

#[test]
fn diff_of_identical_first_steps_lists_every_name_as_unchanged() {
    let dir = shared_traces();
    let inputs = [
        dir.join("hta/compare_base.json.gz"),
        dir.join("hta/compare_test.json.gz"),
    ];
    let rows = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = neuronprof(&[&["diff", "--json"], args].concat(), &inputs);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let diff: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        diff["rows"].as_array().unwrap().clone()
    };
    let all = rows(&[]);
    assert_eq!(all.len(), 7);
    assert!(all.iter().all(|r| r["counts_change_category"] == "="));
    let text = neuronprof(&["diff"], &inputs);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.starts_with("7 names: 0 added, 0 deleted"), "{text}");

    // --rows splits them: host rows and device rows, which together are all 7.
    let (host, device) = (
        rows(&["--rows", "host"]).len(),
        rows(&["--rows", "device"]).len(),
    );
    assert!(host > 0 && device > 0, "{host} host, {device} device");
    assert_eq!(host + device, 7);
}

/// The MI300X BERT trace TraceLens reported on (vendored in `tracelens/`).
fn bert_mi300x() -> PathBuf {
    shared_traces().join("tracelens/mi300_gaunernst_bert-small-uncased__1016001.json.gz")
}

fn json_of(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each row's roofline time on H100 SXM (989.4 dense BF16 TFLOP/s, 3.35 TB/s;
/// docs/HARDWARE.md): the larger of FLOPs at the peak of its units and bytes at the
/// bandwidth; a vector op of a type without a published peak at the FP32 vector peak.
fn h100_roofline_us(op: &serde_json::Value) -> f64 {
    let flops = op["gflops"].as_f64().unwrap() * 1e9;
    let bytes = op["data_moved_bytes"].as_f64().unwrap();
    let peak = match op["compute_spec"].as_str().unwrap() {
        "matrix_bf16" | "matrix_fp16" => 989.4e12,
        "vector_bf16" | "vector_fp16" => 133.8e12,
        "matrix_fp32" => 66.9e12,
        vector if vector.starts_with("vector_") => 66.9e12,
        other => panic!("no H100 peak in this test for {other}"),
    };
    (flops / peak).max(bytes / 3.35e12) * 1e6
}

#[test]
fn analyze_puts_operators_against_deviceproperties_or_the_device_spec_named() {
    let trace = [bert_mi300x()];
    let text = neuronprof(&["analyze"], &trace);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Roofline, rank 0 (MI300X, from deviceProperties: AMD Instinct MI300X"),
        "{text}"
    );

    let report = json_of(&neuronprof(
        &["analyze", "--json", "--device-spec", "h100-sxm"],
        &trace,
    ));
    let table = &report["per_rank"][0]["roofline"];
    assert_eq!(table["device"], "H100 SXM");
    assert_eq!(table["device_source"], "--device-spec");
    let ops = table["ops"].as_array().unwrap();
    assert!(ops.len() > 10, "{} rows", ops.len());
    for op in ops {
        let ours = op["roofline_time_us"].as_f64().unwrap();
        let want = h100_roofline_us(op);
        assert!(
            (ours - want).abs() <= 1e-9 * want,
            "{op}: {ours} µs, not {want}"
        );
    }

    // A device file: half an H100's figures double every roofline time.
    let file = std::env::temp_dir().join(format!("device-{}.json", std::process::id()));
    std::fs::write(
        &file,
        r#"{"name": "half an H100", "memory_tb_per_s": 1.675, "peak_tflops":
            {"matrix_bf16": 494.7, "matrix_fp16": 494.7, "matrix_fp32": 33.45,
             "vector_fp32": 33.45, "vector_bf16": 66.9, "vector_fp16": 66.9}}"#,
    )
    .unwrap();
    let half = json_of(&neuronprof(
        &["analyze", "--json", "--device-spec", file.to_str().unwrap()],
        &trace,
    ));
    std::fs::remove_file(&file).ok();
    let half = &half["per_rank"][0]["roofline"];
    assert_eq!(half["device"], "half an H100");
    let time_of = |ops: &serde_json::Value, name: &str, dims: &str| {
        ops.as_array()
            .unwrap()
            .iter()
            .find(|op| op["name"] == name && op["input_dims"] == dims)
            .map(|op| op["roofline_time_us"].as_f64().unwrap())
    };
    for op in ops {
        let (name, dims) = (
            op["name"].as_str().unwrap(),
            op["input_dims"].as_str().unwrap(),
        );
        let full = op["roofline_time_us"].as_f64().unwrap();
        let halved = time_of(&half["ops"], name, dims).unwrap();
        assert!((halved - 2.0 * full).abs() <= 1e-9 * full, "{name} {dims}");
    }

    // An unknown name is an error naming it and the built-in devices, before reading.
    let out = neuronprof(&["analyze", "--device-spec", "tpu-v9"], &trace);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tpu-v9") && err.contains("mi300x, mi325x"),
        "{err}"
    );
}

/// `export --format parquet --device-spec` writes the roofline rows as
/// `analysis_roofline`, and `query` reads them back equal to `analyze --json`'s.
#[test]
fn the_roofline_table_is_exported_and_queried_as_analyze_reports_it() {
    let trace = [bert_mi300x()];
    let report = json_of(&neuronprof(
        &["analyze", "--json", "--device-spec", "mi325x"],
        &trace,
    ));
    let ops = report["per_rank"][0]["roofline"]["ops"]
        .as_array()
        .unwrap()
        .clone();
    let dir = std::env::temp_dir().join(format!("neuronprof-roofline-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    let out = neuronprof(
        &[
            "export",
            "--format",
            "parquet",
            "--device-spec",
            "mi325x",
            "-o",
            dir.to_str().unwrap(),
        ],
        &trace,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("analysis_roofline/: {} row(s)", ops.len())),
        "{stdout}"
    );
    let sql = "SELECT rank, device, name, input_dims, count, kernel_time_us, gflops, \
               data_moved_bytes, tflops_per_sec_mean, roofline_pct, bound, win_us \
               FROM analysis_roofline ORDER BY win_us DESC, kernel_time_us DESC";
    let out = neuronprof(
        &["query", sql, "--format", "json"],
        std::slice::from_ref(&dir),
    );
    let rows = json_of(&out);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), ops.len(), "{rows:?}");
    for (row, op) in rows.iter().zip(&ops) {
        assert_eq!(row["rank"], 0);
        assert_eq!(row["device"], "MI325X");
        for key in ["name", "input_dims", "count", "bound"] {
            assert_eq!(row[key], op[key], "{key}: {row} vs {op}");
        }
        for key in [
            "kernel_time_us",
            "gflops",
            "data_moved_bytes",
            "roofline_pct",
            "win_us",
        ] {
            let (a, b) = (row[key].as_f64().unwrap(), op[key].as_f64().unwrap());
            assert!((a - b).abs() <= 1e-9 * b.abs(), "{key}: {row} vs {op}");
        }
        let tflops = op["tflops_per_sec"]["mean"].as_f64().unwrap();
        let got = row["tflops_per_sec_mean"].as_f64().unwrap();
        assert!((got - tflops).abs() <= 1e-9 * tflops, "{row} vs {op}");
    }
    // Each row's kernels join on (rank, op_index): per row, the count of its kernel
    // names and their launches, as `analyze` lists them.
    let sql = "SELECT r.op_index, r.name, COUNT(*) AS kernels, SUM(k.count) AS launches \
               FROM analysis_roofline r JOIN analysis_roofline_kernels k \
               ON r.rank = k.rank AND r.op_index = k.op_index \
               GROUP BY r.op_index, r.name ORDER BY r.op_index";
    let out = neuronprof(
        &["query", sql, "--format", "json"],
        std::slice::from_ref(&dir),
    );
    let joined = json_of(&out);
    let joined = joined.as_array().unwrap();
    let expected: Vec<(usize, &serde_json::Value)> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| !op["kernels"].as_array().unwrap().is_empty())
        .collect();
    assert_eq!(joined.len(), expected.len(), "{joined:?}");
    for (row, (index, op)) in joined.iter().zip(expected) {
        let kernels = op["kernels"].as_array().unwrap();
        let launches: u64 = kernels.iter().map(|k| k["count"].as_u64().unwrap()).sum();
        assert_eq!(row["op_index"], index, "{row}");
        assert_eq!(row["name"], op["name"], "{row}");
        assert_eq!(row["kernels"], kernels.len(), "{row}");
        assert_eq!(row["launches"], launches, "{row}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `diff` of one model on two devices (TraceLens's BERT traces, MI300X and H100): each
/// operator with its arguments in both, with its percent of the roofline on each side as
/// `analyze` reports it.
#[test]
fn diff_puts_each_operators_roofline_before_and_after() {
    let control = bert_mi300x();
    let test = shared_traces().join("tracelens/h100_gaunernst_bert-small-uncased__1016001.json.gz");
    let pair = [control.clone(), test.clone()];
    let diff = json_of(&neuronprof(&["diff", "--json"], &pair));
    assert!(!diff["rows"].as_array().unwrap().is_empty());
    let roofline = &diff["roofline"];
    assert_eq!(
        roofline["devices"],
        serde_json::json!(["MI300X", "H100 SXM"])
    );
    let changes = roofline["changes"].as_array().unwrap();
    assert!(changes.len() > 10, "{} changes", changes.len());
    let control_ops = json_of(&neuronprof(&["analyze", "--json"], &[control]));
    let test_ops = json_of(&neuronprof(&["analyze", "--json"], &[test]));
    // The rows of an operator and its `Input Dims` (several when strides differ).
    let rows_of = |report: &serde_json::Value,
                   change: &serde_json::Value|
     -> Vec<serde_json::Value> {
        report["per_rank"][0]["roofline"]["ops"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|op| op["name"] == change["name"] && op["input_dims"] == change["input_dims"])
            .cloned()
            .collect()
    };
    let mut checked = 0;
    for change in changes {
        let (before, after) = (rows_of(&control_ops, change), rows_of(&test_ops, change));
        assert!(!before.is_empty() && !after.is_empty(), "{change}");
        if before.len() == 1 && after.len() == 1 {
            let pct = &change["roofline_pct"];
            assert_eq!(pct[0], before[0]["roofline_pct"], "{change}");
            assert_eq!(pct[1], after[0]["roofline_pct"], "{change}");
            checked += 1;
        }
    }
    assert!(checked > 10, "{checked} rows compared");
    let text = neuronprof(&["diff"], &pair);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Roofline, control (MI300X) → test (H100 SXM): "),
        "{text}"
    );
}
