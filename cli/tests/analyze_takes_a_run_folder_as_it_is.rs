//! `neuronprof analyze DIR` on a run folder as users have them: the trace files are
//! analyzed, everything else (torch's `key_averages.json`, a TensorBoard folder and event
//! file, notes) is skipped with one line each; files of one rank (by `distributedInfo`,
//! else by process) are that rank's profiling windows, not more ranks; an error names
//! the file once.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn neuronprof(args: &[&str], paths: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(args)
        .args(paths)
        .output()
        .expect("neuronprof runs")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("run-folder-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn traces_are_taken_and_the_rest_skipped_one_line_each() {
    let traces = common::shared_traces();
    let dir = temp_dir("mixed");
    for rank in 0..2 {
        let name = format!("gloo_2rank-rank{rank}.pt.trace.json.gz");
        std::fs::copy(traces.join("torch-2.15").join(&name), dir.join(&name)).unwrap();
    }
    // What else such a folder holds: torch's own table, a TensorBoard log folder and
    // event file, a JSON that is not a trace, notes.
    std::fs::write(
        dir.join("key_averages.json"),
        r#"[{"key": "aten::mm", "count": 9, "cpu_time_total": 49789.43}]"#,
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("plugins/profile")).unwrap();
    std::fs::write(
        dir.join("events.out.tfevents.1790857026.builder"),
        b"\x00\x01",
    )
    .unwrap();
    std::fs::write(dir.join("config.json"), r#"{"lr": 0.1, "traceEvents": 3}"#).unwrap();
    std::fs::write(dir.join("README.txt"), "run notes").unwrap();

    let out = neuronprof(&["analyze"], &[&dir]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.starts_with("ranks [0, 1]"), "{stdout}");
    let skipped: Vec<&str> = stderr.lines().filter(|l| l.contains("skipped")).collect();
    assert_eq!(skipped.len(), 5, "{stderr}");
    for name in [
        "key_averages.json",
        "plugins",
        "events.out.tfevents",
        "config.json",
        "README.txt",
    ] {
        assert_eq!(
            skipped.iter().filter(|l| l.contains(name)).count(),
            1,
            "{name}: {stderr}"
        );
    }
}

#[test]
fn files_of_one_rank_are_its_windows() {
    let traces = common::shared_traces();
    // Two files of one distributedInfo rank (and the other rank's).
    let dir = temp_dir("windows-by-rank");
    let rank0 = traces.join("torch-2.15/gloo_2rank-rank0.pt.trace.json.gz");
    std::fs::copy(&rank0, dir.join("cycle1.rank0.pt.trace.json.gz")).unwrap();
    std::fs::copy(&rank0, dir.join("cycle2.rank0.pt.trace.json.gz")).unwrap();
    std::fs::copy(
        traces.join("torch-2.15/gloo_2rank-rank1.pt.trace.json.gz"),
        dir.join("cycle1.rank1.pt.trace.json.gz"),
    )
    .unwrap();
    let out = neuronprof(&["analyze"], &[&dir]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.starts_with("ranks [0, 1]"), "{stdout}");
    assert!(
        stdout.contains("note: rank 0: 2 profiling windows")
            && stdout.contains("one distributedInfo rank")
            && stdout.contains("analyzed window 2 of 2"),
        "{stdout}"
    );
    let first = neuronprof(&["analyze", "--window", "1", "--json"], &[&dir]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let json: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(json["ranks"], serde_json::json!([0, 1]));
    let missing = neuronprof(&["analyze", "--window", "3"], &[&dir]);
    assert!(!missing.status.success());
    assert!(
        text(&missing.stderr).contains("--window 3: rank 0 has 2 profiling window(s)"),
        "{}",
        text(&missing.stderr)
    );

    // Two files of one process without distributedInfo (as a profiler schedule with
    // `repeat` writes them): one rank, not two.
    let dir = temp_dir("windows-by-process");
    let trace = traces.join("torch-2.15/python_privateuse1_neuron.pt.trace.json.gz");
    std::fs::copy(&trace, dir.join("host.1.pt.trace.json.gz")).unwrap();
    std::fs::copy(&trace, dir.join("host.2.pt.trace.json.gz")).unwrap();
    let out = neuronprof(&["analyze"], &[&dir]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.starts_with("ranks [0]"), "{stdout}");
    assert!(
        stdout.contains("2 profiling windows") && stdout.contains("one process"),
        "{stdout}"
    );
}

#[test]
fn a_damaged_trace_is_named_once() {
    let traces = common::shared_traces();
    let dir = temp_dir("damaged");
    let whole = common::gunzip(&traces.join("hta/simple_add.json.gz"));
    let path = dir.join("rank0.pt.trace.json");
    std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    let out = neuronprof(&["analyze"], &[&dir]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.matches("rank0.pt.trace.json").count(), 1, "{stderr}");
    assert!(
        stderr.contains("byte ") && stderr.contains("event #"),
        "{stderr}"
    );
}
