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

/// `neuronprof export --format neuron-explorer INPUT -o OUT`, which must succeed; its
/// standard output.
fn export_profiles(input: &Path, out: &Path, cwd: &Path) -> String {
    ok(neuronprof(
        &[
            "export",
            "--format",
            "neuron-explorer",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        cwd,
    ))
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
    let export = export_profiles(&traces, &data, &cwd);
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
    // The emulator's `neuron_topology` (each rank's chip and its machine's link figures)
    // has no place in a profile either: a group's link, nodes and nominal bus bandwidth,
    // and the fractions of it, are left out too.
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
            for key in ["process_group", "seq", "fraction_of_peak"] {
                instance.as_object_mut().unwrap().remove(key);
            }
        }
        for group in v["collectives"]["groups"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            for key in [
                "process_group",
                "nodes",
                "inter_node",
                "link",
                "peak_bus_gbps",
                "median_fraction_of_peak",
            ] {
                group.as_object_mut().unwrap().remove(key);
            }
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
    export_profiles(&traces, &data, &cwd);
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

/// The runtime and device side of a TorchNeuron run as a profile holds it: `nrt_execute`
/// (with the `nrt_sequence_id` of the driver call that caused it) and its device
/// execution, linked by flow 7. Written as a Kineto file, then exported.
const SYSTEM_SIDE: &str = r#"{"schemaVersion": 1, "deviceProperties": [],
 "baseTimeNanoseconds": 1790000000000000000,
 "traceEvents": [
 {"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "pid": 4242, "tid": 4243, "ts": 2.0, "dur": 1.0, "args": {"correlation": 7, "nrt_sequence_id": 3, "device": 0}},
 {"ph": "X", "cat": "kernel", "name": "nc_exec_running model 1", "pid": 0, "tid": 0, "ts": 5.0, "dur": 40.0, "args": {"device": 0, "correlation": 7}}
 ]}"#;

/// TorchNeuron's framework trace of the same process: the operator, its driver call
/// (carrying the `nrt_sequence_id`), no device rows.
const FRAMEWORK_TRACE: &str = r#"{"schemaVersion": 1, "deviceProperties": [],
 "distributedInfo": {"backend": "neuron", "rank": 0, "world_size": 1},
 "baseTimeNanoseconds": 1790000000000000000,
 "traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 4242, "tid": 4242, "ts": 0.0, "dur": 60.0},
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4242, "ts": 1.0, "dur": 3.0, "args": {"External id": 11}},
 {"ph": "X", "cat": "privateuse1_driver", "name": "neuron_stream_submit", "pid": 4242, "tid": 4250, "ts": 1.5, "dur": 0.4, "args": {"External id": 11, "nrt_sequence_id": 3}},
 {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 4242, "tid": 4242, "ts": 10.0, "dur": 2.0, "args": {"External id": 12}}
 ]}"#;

#[test]
fn a_framework_trace_and_its_profile_analyze_as_one_rank_with_device_time_under_the_operator() {
    let cwd = scratch("framework");
    let system = cwd.join("system.json");
    std::fs::write(&system, SYSTEM_SIDE).unwrap();
    let data = cwd.join("data");
    export_profiles(&system, &data, &cwd);
    let capture = cwd.join("capture");
    std::fs::create_dir_all(&capture).unwrap();
    let trace = capture.join("trace.json");
    std::fs::write(&trace, FRAMEWORK_TRACE).unwrap();

    // Given in either order: one rank, the device time under aten::mm.
    for paths in [[&trace, &data], [&data, &trace]] {
        let report = analyze_json(&[paths[0], paths[1]], &cwd);
        assert_eq!(report["ranks"], serde_json::json!([0]), "{report}");
        let ops = &report["per_rank"][0]["operators"]["operators"];
        let mm = ops
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == "aten::mm")
            .unwrap_or_else(|| panic!("no aten::mm in {ops}"));
        assert_eq!(mm["device_self_us"], 40.0, "{mm}");
        let add = ops
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == "aten::add")
            .unwrap();
        assert_eq!(add["device_self_us"], 0.0, "{add}");
    }
    // inspect reads the pair as one profile, and says so.
    let out = neuronprof(
        &["inspect", trace.to_str().unwrap(), data.to_str().unwrap()],
        &cwd,
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let stdout = ok(out);
    assert!(
        stderr.contains("read merged with") && stderr.contains("process 4242"),
        "{stderr}"
    );
    assert!(
        stdout.contains("framework trace merged:")
            && stdout.contains("linked 1 runtime calls and 1 device-execution rows"),
        "{stdout}"
    );
}

fn run_mlp(out: &Path, output: &str, cwd: &Path) {
    ok(neuronprof(
        &[
            "run",
            "mlp",
            "--ranks",
            "2",
            "--numerics",
            "off",
            "--output",
            output,
            "--out",
            out.to_str().unwrap(),
        ],
        cwd,
    ));
}

fn json_of(args: &[&str], cwd: &Path) -> serde_json::Value {
    let text = ok(neuronprof(args, cwd));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `run --output neuron-explorer` leaves profile folders only, and the commands that read
/// traces give on them what they give on the Kineto traces of the same workload (the
/// emulator's runs are the same every time but for their absolute times: modeled host
/// and device time).
#[test]
fn a_run_written_as_profiles_reads_in_critical_path_what_if_diff_and_query_as_its_traces() {
    let cwd = scratch("run-output");
    let kineto = cwd.join("kineto");
    let data = cwd.join("data");
    run_mlp(&kineto, "kineto", &cwd);
    run_mlp(&data, "neuron-explorer", &cwd);
    let entries: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        entries,
        ["profiles"],
        "no Kineto trace left beside the profiles"
    );
    let profiles = std::fs::read_dir(data.join("profiles/global"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("@latest"))
        .count();
    assert_eq!(profiles, 2);
    let (k, d) = (kineto.to_str().unwrap(), data.to_str().unwrap());

    let steps = |v: serde_json::Value| v["steps"].clone();
    let from_traces = steps(analyze_json(&[&kineto], &cwd));
    assert!(!from_traces.as_array().unwrap().is_empty(), "{from_traces}");
    assert_eq!(steps(analyze_json(&[&data], &cwd)), from_traces);
    // The critical path: the same graph, length, breakdown and path (the windows'
    // absolute times differ: two runs).
    let path = |dir: &str| json_of(&["critical-path", dir, "--json"], &cwd);
    let (from_traces, from_profiles) = (path(k), path(d));
    assert!(
        from_traces["length_us"].as_f64().unwrap() > 0.0,
        "{from_traces}"
    );
    assert!(!from_traces["path"].as_array().unwrap().is_empty());
    for key in ["nodes", "edges", "length_us", "summary", "ranks_on_path"] {
        assert_eq!(from_profiles[key], from_traces[key], "critical-path {key}");
    }
    let names = |v: &serde_json::Value| -> Vec<String> {
        v["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| format!("{} {} {}", n["rank"], n["name"], n["duration_us"]))
            .collect()
    };
    assert_eq!(
        names(&from_profiles),
        names(&from_traces),
        "the path's nodes"
    );
    // What-if: the same prediction.
    let what_if = |dir: &str| json_of(&["what-if", dir, "--scale", "host=0.5", "--json"], &cwd);
    let (from_traces, from_profiles) = (what_if(k), what_if(d));
    assert!(from_traces["predicted_step_us"].as_f64().unwrap() > 0.0);
    for key in ["ranks", "step_us", "predicted_step_us"] {
        assert_eq!(from_profiles[key], from_traces[key], "what-if {key}");
    }
    // Diff, traces against profiles: every device row as often and as long, except the
    // collective's name (`CcOp` keeps the operation, not NCCL's kernel name).
    let diff = json_of(&["diff", k, d, "--rows", "device", "--json"], &cwd);
    let rows = diff["rows"].as_array().unwrap();
    assert!(rows.len() > 10, "{diff}");
    let changed: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["counts_change_category"] != "=" || r["diff_duration_us"] != 0.0)
        .collect();
    let name_of = |sign: &str| {
        changed
            .iter()
            .find(|r| r["counts_change_category"] == sign)
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_owned(),
                    r["diff_counts"].clone(),
                )
            })
    };
    assert_eq!(changed.len(), 2, "{changed:?}");
    let (added, deleted) = (name_of("+").unwrap(), name_of("-").unwrap());
    assert_eq!(added.0, "allreduce");
    assert!(
        deleted.0.starts_with("ncclDevKernel_AllReduce"),
        "{deleted:?}"
    );
    assert_eq!(
        added.1.as_i64().unwrap(),
        -deleted.1.as_i64().unwrap(),
        "as many collectives"
    );
    let query = |dir: &str| {
        ok(neuronprof(
            &[
                "query",
                "SELECT rank, count(*) AS n, sum(dur_ns) AS t FROM kernels GROUP BY rank ORDER BY rank",
                dir,
                "--format",
                "csv",
            ],
            &cwd,
        ))
    };
    let (from_traces, from_profiles) = (query(k), query(d));
    assert_eq!(from_traces.lines().count(), 3, "{from_traces}");
    assert_eq!(from_profiles, from_traces);
}
