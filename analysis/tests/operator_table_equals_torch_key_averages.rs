//! The operator table equals PyTorch's own `prof.key_averages()` on the same trace, op
//! for op: every CPU line of torch's table is a line of ours with the same calls, total
//! and self CPU time, and ours has no other line. Torch runs here, in the torch venv
//! (`scripts/torch_key_averages.py` profiles a small CPU training run twice, without and
//! with Python stacks, and writes the trace and both tables, by name and by input
//! shapes). What this checks of torch's rules: the `record_function` ranges' self times
//! (`forward`, `backward`, `Optimizer.step#SGD.step`, `ProfilerStep*`), the folding of a
//! range into a same-named parent that has only it as child (`block`), Python frames as
//! parents in the nesting but not lines.
//!
//! Needs a Python with torch 2.15: `NEURONPROF_TORCH_PYTHON`, else the venv `bash
//! scripts/torch-venv` makes (`target/torch-venv`). Without one the tests are recorded
//! as skipped (`scripts/check` lists them); under CI they fail.

#[path = "../../tests/support/skip.rs"]
mod skip;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use analysis::analyses::operators::operator_table;
use analysis::{load_paths, LoadOptions};

fn torch_python() -> Option<PathBuf> {
    if let Some(python) = std::env::var_os("NEURONPROF_TORCH_PYTHON") {
        return Some(python.into());
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/torch-venv/bin/python");
    venv.exists().then_some(venv)
}

/// Why every test here skips without PyTorch.
const NO_TORCH: &str = "no PyTorch: run `bash scripts/torch-venv` or set NEURONPROF_TORCH_PYTHON \
                        to a python with torch 2.15";

/// Runs the script once for every test: the folder with `plain/` and `stack/`, or `None`
/// (skipped).
fn torch_outputs() -> Option<&'static PathBuf> {
    static OUT: OnceLock<Option<PathBuf>> = OnceLock::new();
    OUT.get_or_init(|| {
        // Each test records its own skip ([`NO_TORCH`]).
        let python = torch_python()?;
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("torch-key-averages");
        let _ = std::fs::remove_dir_all(&out);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/torch_key_averages.py");
        let run = Command::new(&python)
            .arg(&script)
            .arg(&out)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
        assert!(
            run.status.success(),
            "{} {} failed: {}\n{}",
            python.display(),
            script.display(),
            run.status,
            String::from_utf8_lossy(&run.stderr)
        );
        Some(out)
    })
    .as_ref()
}

/// torch's CPU lines: (name, shapes) → (calls, total µs, self µs).
fn torch_table(path: &Path, by_shape: bool) -> BTreeMap<(String, String), (u64, f64, f64)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&text).expect("key_averages JSON");
    let mut out = BTreeMap::new();
    for row in rows {
        // Device lines (kernels) have no CPU time; `[memory]` lines are memory events
        // outside every operator, not operators.
        if row["device_type"] != "DeviceType.CPU" || row["key"] == "[memory]" {
            continue;
        }
        let shapes = if by_shape {
            row["input_shapes"].as_str().unwrap().to_owned()
        } else {
            String::new()
        };
        let key = (row["key"].as_str().unwrap().to_owned(), shapes);
        let value = (
            row["count"].as_u64().unwrap(),
            row["cpu_time_total_us"].as_f64().unwrap(),
            row["self_cpu_time_total_us"].as_f64().unwrap(),
        );
        assert!(
            out.insert(key.clone(), value).is_none(),
            "torch lists {key:?} twice"
        );
    }
    out
}

fn check(config: &str, by_shape: bool) {
    let Some(out) = torch_outputs() else {
        skip::skipped(&skip::this_test(), NO_TORCH);
        return;
    };
    let dir = out.join(config);
    let traces = load_paths(&[dir.join("trace.json")], &LoadOptions::default()).expect("loads");
    let ours = operator_table(&traces.ranks[0], by_shape).expect("operator table");
    let file = if by_shape {
        "key_averages_by_shape.json"
    } else {
        "key_averages.json"
    };
    let mut torch = torch_table(&dir.join(file), by_shape);
    assert!(
        torch.len() > 40,
        "{config}: torch listed {} lines",
        torch.len()
    );
    let mut problems = Vec::new();
    for op in &ours.operators {
        let shapes = match (by_shape, op.input_dims.as_str()) {
            (false, _) => String::new(),
            (true, "") => "[]".to_owned(),
            (true, dims) => dims.to_owned(),
        };
        let key = (op.name.clone(), shapes);
        let Some((calls, total_us, self_us)) = torch.remove(&key) else {
            problems.push(format!("{key:?}: ours only ({} calls)", op.calls));
            continue;
        };
        // Both sum the same nanoseconds (the trace's `ts`/`dur` carry them exactly); only
        // the order of float additions differs.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()) + 1e-6;
        if op.calls != calls || !close(op.cpu_total_us, total_us) || !close(op.cpu_self_us, self_us)
        {
            problems.push(format!(
                "{key:?}: ours {} calls, {} us total, {} us self; torch {calls}, {total_us}, \
                 {self_us}",
                op.calls, op.cpu_total_us, op.cpu_self_us
            ));
        }
    }
    for (key, (calls, ..)) in &torch {
        problems.push(format!("{key:?}: torch only ({calls} calls)"));
    }
    assert!(
        problems.is_empty(),
        "{config}, by shape {by_shape}: {} of our {} lines differ from key_averages:\n{}",
        problems.len(),
        ours.operators.len(),
        problems.join("\n")
    );
}

#[test]
fn operator_table_equals_key_averages() {
    check("plain", false);
}

#[test]
fn operator_table_by_shape_equals_key_averages_by_input_shape() {
    check("plain", true);
}

#[test]
fn operator_table_with_python_stacks_equals_key_averages() {
    check("stack", false);
}

#[test]
fn operator_table_with_python_stacks_by_shape_equals_key_averages() {
    check("stack", true);
}
