//! The what-if's checked predictions (docs/WHAT-IF.md, issue 19): a prediction made on
//! one emulator run against an actual run of the same workload changed the way the
//! what-if assumed, with the issue's targets.
//!
//! - (a) a run with a straggler (rank 2's device at half speed) predicted with rank 2's
//!   device work scaled 0.5, against a run without the straggler: the step within 5 %;
//! - (b) a trn2 run re-costed for trn3 (`--device trn3`), against a trn3 run: the step
//!   within 10 %;
//! - (c) matmul kernels scaled 0.5, against a run whose TensorE is twice as fast (a
//!   device-profile override): the step within 10 %.
//!
//! The runs' host time is modeled (`neuron_backend::HostCost`: every rank thread's
//! clock advances by eager PyTorch's cost per op, not by what the emulator itself takes),
//! so a debug build on a loaded machine records the same timelines as a release build
//! on a quiet one, and these checks are exact reruns of the table's.

use std::path::{Path, PathBuf};
use std::process::Command;

fn neuronprof(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "neuronprof {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuronprof-whatif-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `neuronprof run gpt` of the demo's shape, timing only, 4 steps (2 recorded), kernel
/// detail, into `out`, with `extra` arguments.
fn run_gpt(out: &Path, ranks: &str, extra: &[&str]) {
    run_gpt_detail(out, ranks, "kernels", extra);
}

/// [`run_gpt`] with the trace's `detail` (`kernels`, `instructions`).
fn run_gpt_detail(out: &Path, ranks: &str, detail: &str, extra: &[&str]) {
    let mut args = vec![
        "run",
        "gpt",
        "--ranks",
        ranks,
        "--shape",
        "demo",
        "--steps",
        "4",
        "--numerics",
        "off",
        "--detail",
        detail,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    neuronprof(&args);
}

/// (recorded, predicted) step of the slowest rank, µs, of `what-if --json` on step
/// `instance` of `dir` with `how` (`--scale RULE`, `--device NAME`).
fn what_if(dir: &Path, instance: usize, how: &[&str]) -> (f64, f64) {
    let instance = instance.to_string();
    let mut args = vec!["what-if", "--json", "--instance", &instance];
    args.extend_from_slice(how);
    args.push(dir.to_str().unwrap());
    let json = neuronprof(&args);
    let value: serde_json::Value = serde_json::from_str(&json).expect("what-if's JSON");
    (
        value["step_us"].as_f64().unwrap(),
        value["predicted_step_us"].as_f64().unwrap(),
    )
}

/// Checks each recorded step: the prediction on `predicted` with `how` against the
/// same step of `actual`, within `target` (a fraction).
fn check(what: &str, predicted: &Path, how: &[&str], actual: &Path, target: f64) {
    for instance in [0, 1] {
        let (recorded, prediction) = what_if(predicted, instance, how);
        let (real, _) = what_if(actual, instance, &["--scale", "host=1"]);
        let error = (prediction - real) / real;
        eprintln!(
            "{what}, step {instance}: recorded {recorded:.1} us, predicted {prediction:.1} us, \
             actual {real:.1} us, error {:+.2} %",
            error * 100.0
        );
        assert!(
            error.abs() <= target,
            "{what}, step {instance}: predicted {prediction:.1} us vs actual {real:.1} us \
             ({:+.2} %, target {:.0} %); recorded {recorded:.1} us",
            error * 100.0,
            target * 100.0
        );
        // The prediction explains the change: "no change" would not pass.
        assert!(
            (prediction - real).abs() < (recorded - real).abs() / 2.0,
            "{what}, step {instance}: predicted {prediction:.1} us is not nearer the actual \
             {real:.1} us than half the way from the recorded {recorded:.1} us"
        );
    }
}

#[test]
fn a_straggler_predicted_at_full_speed_meets_the_run_without_it() {
    let slow = scratch("straggler");
    let full = scratch("no-straggler");
    run_gpt(&slow, "4", &["--straggler", "2:2"]);
    run_gpt(&full, "4", &[]);
    check(
        "(a) rank:2=0.5",
        &slow,
        &["--scale", "rank:2=0.5"],
        &full,
        0.05,
    );
    for dir in [slow, full] {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_trn2_run_re_costed_for_trn3_meets_a_trn3_run() {
    // One rank: with engine instructions recorded, more ranks of this shape overflow
    // the recording rings; the kernels' `<engine> busy (ns)` args need them.
    let trn2 = scratch("trn2-instructions");
    let trn3 = scratch("trn3-instructions");
    run_gpt_detail(&trn2, "1", "instructions", &[]);
    run_gpt_detail(&trn3, "1", "instructions", &["--device", "trn3"]);
    check(
        "(b) --device trn3",
        &trn2,
        &["--device", "trn3"],
        &trn3,
        0.10,
    );
    for dir in [trn2, trn3] {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn matmuls_at_half_time_meet_a_run_with_tensore_twice_as_fast() {
    let base = scratch("trn2");
    let fast = scratch("tensor2x");
    let profile = scratch("tensor2x-profile");
    std::fs::create_dir_all(&profile).unwrap();
    let file = profile.join("t2x.json");
    std::fs::write(
        &file,
        r#"{"base": "trn2", "name": "trn2-tensor2x", "tensor_clock_ghz": 4.8}"#,
    )
    .unwrap();
    run_gpt(&base, "2", &[]);
    run_gpt(&fast, "2", &["--device-file", file.to_str().unwrap()]);
    check(
        "(c) kernel:^(matmul|linear)=0.5",
        &base,
        &["--scale", "kernel:^(matmul|linear)=0.5"],
        &fast,
        0.10,
    );
    for dir in [base, fast, profile] {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
