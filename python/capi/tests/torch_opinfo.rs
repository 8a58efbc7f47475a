//! PyTorch's own operator database (OpInfo, `op_db` in the torch wheel) is the `neuron`
//! device's test suite (`scripts/torch_opinfo.py`, which says what it measures): every
//! op's first two samples in float32 and bfloat16 run on `neuron` and on the CPU, and
//! at least 99 % of the (op, dtype) pairs that run on the CPU must give the CPU's
//! results on `neuron`. No op may kill the process: an op the device cannot run raises a
//! Python exception. The failures that remain are printed with their reasons (and listed
//! in python/README.md, "PyTorch's op tests").
//!
//! Two samples per op is CI's subset (every op runs, in both dtypes); the full run, all
//! samples, is `scripts/torch_opinfo.py --samples all` (python/README.md has its figure).
//!
//! Needs a Python with torch 2.15 and expecttest (`bash scripts/torch-venv`); without one
//! the skip is recorded (`tests/support/skip.rs`), and under CI it fails.

#[path = "../../../tests/support/skip.rs"]
mod skip;
#[path = "support/torch.rs"]
mod torch;

const TEST: &str = "neuronprof-capi: torch_opinfo";
/// The least share of the counted (op, dtype) pairs that must pass (issue #30's target).
const MIN_PASS_RATE: f64 = 0.99;

#[test]
fn pytorch_opinfo_ops_give_the_cpu_results_on_neuron_in_at_least_99_percent_of_pairs() {
    let Some(python) = torch::torch_python() else {
        skip::skipped(TEST, torch::NO_TORCH);
        return;
    };
    let script = torch::repo_dir().join("scripts/torch_opinfo.py");
    let (result, _) =
        torch::run_script(&python, &script, &["--samples".as_ref(), "2".as_ref()], &[]);
    let failures = result["failures"].as_array().expect("failures");
    let crashes = result["crashes"].as_array().expect("crashes");
    let listing: Vec<String> = crashes
        .iter()
        .chain(failures)
        .map(|f| format!("{} {}: {}", f["op"], f["dtype"], f["reason"]))
        .collect();
    eprintln!("{}", listing.join("\n"));
    let counted = result["pairs_counted"].as_u64().unwrap();
    let passed = result["pairs_passed"].as_u64().unwrap();
    let rate = result["rate"].as_f64().unwrap();
    eprintln!(
        "{passed} of {counted} pairs pass ({:.2} %), {} ops, {} s",
        100.0 * rate,
        result["ops"],
        result["secs"]
    );
    assert!(
        crashes.is_empty(),
        "ops that killed the process: {crashes:#?}"
    );
    // torch 2.15's op_db has 680 entries: all of them ran.
    assert!(result["ops"].as_u64().unwrap() >= 650, "{result}");
    assert!(counted >= 1000, "only {counted} pairs ran on the CPU");
    assert!(
        failures
            .iter()
            .all(|f| !f["reason"].as_str().unwrap().is_empty()),
        "a failure without its reason: {failures:#?}"
    );
    assert!(
        rate >= MIN_PASS_RATE,
        "{passed} of {counted} pairs pass ({:.2} % < 99 %); failures:\n{}",
        100.0 * rate,
        listing.join("\n")
    );
}
