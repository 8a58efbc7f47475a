//! `neuronprof what-if --device NAME` on a GPU trace predicts the step on another device
//! (#38), checked where both devices were recorded: two Hugging Face models profiled on
//! an H100 and on an MI300X (`tests/data/traces/tracelens/`, TraceLens's test traces),
//! each trace predicted for the other device, both directions, against that device's
//! recorded trace (which the prediction never reads).
//!
//! Targets: the window's device-busy time within ±15 % of the other device's, in all
//! four directions; per op group within ±25 % where the method meets it. Where it does
//! not (attention everywhere, elementwise and GEMM on one model each, the small `other`
//! group), `docs/WHAT-IF.md` ("Predicting another device") says by how much and why:
//! those cells are listed in [`NOT_MET`] and printed, not asserted.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::shared_traces;

/// The models recorded on both devices: (short name, file name without the device).
const MODELS: [(&str, &str); 2] = [
    ("bert", "gaunernst_bert-small-uncased__1016001"),
    ("falcon", "Falconsai_nsfw_image_detection__1016002"),
];

/// (model, target device, group) the method does not bring within ±25 %
/// (docs/WHAT-IF.md, "Predicting another device").
const NOT_MET: &[(&str, &str, &str)] = &[
    ("bert", "MI300X", "GEMM"),
    ("bert", "H100 SXM", "GEMM"),
    ("bert", "MI300X", "attention"),
    ("bert", "H100 SXM", "attention"),
    ("bert", "MI300X", "other"),
    ("bert", "H100 SXM", "other"),
    ("falcon", "MI300X", "attention"),
    ("falcon", "H100 SXM", "attention"),
    ("falcon", "MI300X", "elementwise"),
    ("falcon", "H100 SXM", "elementwise"),
    ("falcon", "MI300X", "other"),
    ("falcon", "H100 SXM", "other"),
];

fn trace(device: &str, model: &str) -> PathBuf {
    shared_traces()
        .join("tracelens")
        .join(format!("{device}_{model}.json.gz"))
}

/// `what-if --device DEVICE TRACE --json`'s `cross_device` object.
fn predict(trace: &Path, device: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(["what-if", "--device", device, "--json"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "what-if --device {device} {}: {}",
        trace.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    answer["cross_device"].clone()
}

/// A group's (recorded, predicted) µs in a `cross_device` object.
fn group(cross: &serde_json::Value, name: &str) -> Option<(f64, f64)> {
    cross["groups"].as_array().unwrap().iter().find_map(|g| {
        (g["group"] == name).then(|| {
            (
                g["recorded_us"].as_f64().unwrap(),
                g["predicted_us"].as_f64().unwrap(),
            )
        })
    })
}

#[test]
fn each_gpu_trace_predicts_the_other_gpus_busy_time_and_op_groups() {
    let mut failures = Vec::new();
    let mut table = String::new();
    for (model, file) in MODELS {
        let h100 = predict(&trace("h100", file), "mi300x");
        let mi300 = predict(&trace("mi300", file), "h100-sxm");
        assert_eq!(h100["ranks"][0]["source"], "H100 SXM");
        assert_eq!(mi300["ranks"][0]["source"], "MI300X");
        // (prediction, the target's recording).
        for (prediction, actual) in [(&h100, &mi300), (&mi300, &h100)] {
            let target = prediction["target"].as_str().unwrap();
            let source_busy = prediction["device_busy_us"].as_f64().unwrap();
            let predicted = prediction["predicted_device_busy_us"].as_f64().unwrap();
            let recorded = actual["device_busy_us"].as_f64().unwrap();
            let error = predicted / recorded - 1.0;
            table += &format!(
                "{model} -> {target}: busy {source_busy:.1} -> {predicted:.1} us, recorded \
                 {recorded:.1} us ({:+.1} %)\n",
                error * 100.0
            );
            if error.abs() > 0.15 {
                failures.push(format!("{model} -> {target}: busy {:+.1} %", error * 100.0));
            }
            // Nearer the target than keeping the source's time.
            assert!(
                (predicted - recorded).abs() < (source_busy - recorded).abs(),
                "{model} -> {target}: {predicted} is no nearer {recorded} than {source_busy}"
            );
            for name in ["GEMM", "attention", "elementwise", "reduction", "other"] {
                let (Some((_, predicted)), Some((recorded, _))) =
                    (group(prediction, name), group(actual, name))
                else {
                    continue;
                };
                let error = predicted / recorded - 1.0;
                let known = NOT_MET.contains(&(model, target, name));
                table += &format!(
                    "  {name:<12} {predicted:8.1} us predicted, {recorded:8.1} recorded \
                     ({:+.0} %){}\n",
                    error * 100.0,
                    if known {
                        " (not met: docs/WHAT-IF.md)"
                    } else {
                        ""
                    }
                );
                if !known && error.abs() > 0.25 {
                    failures.push(format!(
                        "{model} -> {target}: {name} {:+.1} %",
                        error * 100.0
                    ));
                }
            }
        }
    }
    eprintln!("{table}");
    assert!(failures.is_empty(), "{failures:?}\n{table}");
}

/// The text a user reads: the step on the other device and the table by op group.
#[test]
fn the_text_names_both_devices_and_the_op_groups() {
    let out = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(["what-if", "--device", "mi300x"])
        .arg(trace("h100", MODELS[0].1))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("what-if: device: H100 SXM -> MI300X"),
        "{text}"
    );
    assert!(
        text.contains("device time of the window: recorded on H100 SXM, predicted on MI300X"),
        "{text}"
    );
    for label in [
        "GEMM",
        "attention",
        "elementwise",
        "reduction",
        "device busy",
    ] {
        assert!(text.contains(&format!("  {label}")), "{label}: {text}");
    }
    assert!(text.contains("step (slowest rank):"), "{text}");
}

/// `--lnc` belongs to emulator traces; a name that is neither a device nor a file is
/// an error naming it.
#[test]
fn a_gpu_trace_refuses_lnc_and_unknown_devices() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_neuronprof"))
            .arg("what-if")
            .args(args)
            .arg(trace("h100", MODELS[0].1))
            .output()
            .unwrap()
    };
    let out = run(&["--device", "mi300x", "--lnc", "1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--lnc"));
    let out = run(&["--device", "no-such-gpu"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no-such-gpu"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
