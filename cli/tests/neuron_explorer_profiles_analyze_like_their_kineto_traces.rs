//! A run exported as Neuron Explorer profile folders (`export --format neuron-explorer`)
//! is read back wherever traces are read: `analyze --json` gives the same utilization,
//! steps and collectives as on the run's Kineto traces; `inspect` names the schema; a
//! data path, a single `…@latest` folder and a mix with Kineto files are all inputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn neuronprof(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuronprof-ne-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn analyze_json(paths: &[&Path], cwd: &Path) -> serde_json::Value {
    let mut args = vec!["analyze", "--json"];
    let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    args.extend(paths.iter().map(String::as_str));
    serde_json::from_str(&ok(neuronprof(&args, cwd))).unwrap()
}

#[test]
fn an_exported_run_analyzes_as_its_kineto_traces() {
    let cwd = scratch("roundtrip");
    let traces = cwd.join("traces");
    ok(neuronprof(
        &[
            "run",
            "mlp",
            "--ranks",
            "2",
            "--numerics",
            "off",
            "--out",
            traces.to_str().unwrap(),
        ],
        &cwd,
    ));
    let data = cwd.join("data");
    let export = ok(neuronprof(
        &[
            "export",
            "--format",
            "neuron-explorer",
            traces.to_str().unwrap(),
            "-o",
            data.to_str().unwrap(),
        ],
        &cwd,
    ));
    assert_eq!(
        export.matches("SystemProfileEvents.parquet").count(),
        2,
        "{export}"
    );
    assert!(export.contains("CcOp.parquet"), "{export}");
    let profiles: Vec<PathBuf> = {
        let mut p: Vec<PathBuf> = std::fs::read_dir(data.join("profiles/global"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        p.sort();
        p
    };
    assert_eq!(profiles.len(), 2);
    assert!(profiles
        .iter()
        .all(|p| p.to_str().unwrap().ends_with("@latest")));

    // The device's peak TFLOPS (and so MFU/HFU) come from Kineto's `deviceProperties`;
    // a profile has no such field (its Metadata gives engine geometry and clocks), so
    // they are left out of the comparison.
    // A process group's name: `CcOp.replica_group_id` is an integer, so a named group
    // (`dp0`) comes back as its number; and `CcOp.op_id` carries the launch correlation,
    // not the collective's `Seq`: instances are compared without both.
    let without_peak = |mut v: serde_json::Value| {
        for rank in v["utilization"].as_array_mut().into_iter().flatten() {
            for key in ["peak_dtype", "peak_tflops", "mfu_pct", "hfu_pct"] {
                rank.as_object_mut().unwrap().remove(key);
            }
        }
        for instance in v["collectives"]["instances"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            instance.as_object_mut().unwrap().remove("process_group");
            instance.as_object_mut().unwrap().remove("seq");
        }
        for group in v["collectives"]["groups"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            group.as_object_mut().unwrap().remove("process_group");
        }
        v
    };
    let kineto = without_peak(analyze_json(&[&traces], &cwd));
    let from_profiles = without_peak(analyze_json(&[&data], &cwd));
    for section in ["utilization", "steps", "collectives"] {
        assert!(!kineto[section].is_null(), "{section} in {kineto}");
        assert_eq!(
            from_profiles[section], kineto[section],
            "{section} differs between the Kineto traces and their Neuron Explorer export"
        );
    }
    // The two folders given one by one, and a mix: rank 0's profile, rank 1's trace.
    let one_by_one = without_peak(analyze_json(&[&profiles[0], &profiles[1]], &cwd));
    assert_eq!(one_by_one["collectives"], kineto["collectives"]);
    let mut kineto_files: Vec<PathBuf> = std::fs::read_dir(&traces)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    kineto_files.sort();
    let rank0_profile = profiles
        .iter()
        .find(|p| p.to_str().unwrap().contains("rank0"))
        .expect("a rank0 profile");
    let rank1_trace = kineto_files
        .iter()
        .find(|p| p.to_str().unwrap().contains("rank1"))
        .expect("a rank1 trace");
    let mixed = without_peak(analyze_json(&[rank0_profile, rank1_trace], &cwd));
    // (Collectives of a mix do not match across the two kinds: the export names the
    // group `0` where the trace says `dp0`.)
    assert_eq!(mixed["utilization"], kineto["utilization"]);
    assert_eq!(mixed["steps"], kineto["steps"]);

    let inspect = ok(neuronprof(&["inspect", data.to_str().unwrap()], &cwd));
    assert_eq!(
        inspect
            .matches("neuron explorer profile: schema 7.4.0")
            .count(),
        2,
        "{inspect}"
    );
}

#[test]
fn an_unknown_schema_version_is_a_clear_error() {
    let cwd = scratch("version");
    let traces = cwd.join("traces");
    ok(neuronprof(
        &[
            "run",
            "mlp",
            "--numerics",
            "off",
            "--out",
            traces.to_str().unwrap(),
        ],
        &cwd,
    ));
    let data = cwd.join("data");
    ok(neuronprof(
        &[
            "export",
            "--format",
            "neuron-explorer",
            traces.to_str().unwrap(),
            "-o",
            data.to_str().unwrap(),
        ],
        &cwd,
    ));
    // Metadata with a future major version: the version text patched in the file's
    // bytes (small pages are stored uncompressed enough for it to appear as is).
    let profile = std::fs::read_dir(data.join("profiles/global"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let metadata = profile.join("Metadata.parquet");
    let mut bytes = std::fs::read(&metadata).unwrap();
    let text = b"7.4.0";
    let mut patched = 0;
    let mut at = 0;
    while let Some(i) = bytes[at..].windows(text.len()).position(|w| w == text) {
        bytes[at + i..at + i + text.len()].copy_from_slice(b"9.4.0");
        at += i + text.len();
        patched += 1;
    }
    assert!(patched > 0, "the version is stored as plain text");
    std::fs::write(&metadata, bytes).unwrap();
    let out = neuronprof(&["analyze", profile.to_str().unwrap()], &cwd);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains("profile_schema_version 9.4.0: major version 9 is not known (known: 7, 12)"),
        "{stderr}"
    );
}
