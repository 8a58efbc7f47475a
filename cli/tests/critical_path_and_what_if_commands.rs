//! `neuronprof critical-path` and `neuronprof what-if` through the binary: HTA's numbers
//! on HTA's own trace, the cross-rank path of our neuron traces, predicted traces that
//! `inspect` and `analyze` read, and clear errors for bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn neuronprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ours() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../analysis/tests/data/gpt-2ranks-4steps")
}

#[test]
fn hta_compat_prints_htas_critical_path_of_simple_add() {
    // The vendored copy of HTA's trace (tests/data/README.md).
    let trace =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/traces/hta/simple_add.json.gz");
    let overlay = std::env::temp_dir().join(format!("neuronprof-overlay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&overlay);
    let out = neuronprof(&[
        "critical-path",
        "--overlay",
        overlay.to_str().unwrap(),
        "--hta-compat",
        "--annotation",
        "[param|pytorch.model.alex_net|0|0|0|measure|forward]",
        "--instance",
        "1",
        trace.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = text(&out);
    // HTA 0.5: 241724 us, cpu_bound 99.779087 %, 414 nodes, 415 edges.
    assert!(t.contains(": 241724.0 us, 414 nodes, 415 edges"), "{t}");
    assert!(
        t.contains("cpu_bound                      241190.0     99.78%"),
        "{t}"
    );
    assert!(t.contains("not placed: 20 event syncs"), "{t}");
    // HTA's overlay of this path (HTA's tests/test_critical_path_analysis.py): 159
    // events marked critical, 21 flows of the default edge types.
    let file = overlay.join("overlaid_critical_path_simple_add.json.gz");
    assert!(t.contains(&format!("overlay: {}", file.display())), "{t}");
    #[derive(Default)]
    struct Count {
        marked: usize,
        flows: usize,
    }
    impl trace_format::TraceSink for Count {
        fn on_event(
            &mut self,
            _index: u64,
            event: &trace_format::Event<'_>,
        ) -> std::ops::ControlFlow<()> {
            let critical = event.arg("critical").and_then(|v| v.as_i64()) == Some(1);
            match event.phase {
                trace_format::Phase::Complete if critical => self.marked += 1,
                trace_format::Phase::FlowStart if event.name() == "critical_path" => {
                    self.flows += 1
                }
                _ => {}
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut count = Count::default();
    trace_format::read_path(&file, &mut count).expect("the overlay reads back");
    let (marked, flows) = (count.marked, count.flows);
    assert_eq!((marked, flows), (159, 21));
}

#[test]
fn what_if_writes_predicted_traces_that_inspect_and_analyze_read() {
    let dir = std::env::temp_dir().join(format!("neuronprof-whatif-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = neuronprof(&[
        "what-if",
        ours().to_str().unwrap(),
        "--scale",
        "host=0.5",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = text(&out);
    assert!(t.starts_with("what-if: host=0.5\n"), "{t}");
    assert!(t.contains("critical path (across ranks)"), "{t}");
    assert_eq!(t.matches("predicted trace: ").count(), 2, "{t}");
    let inspect = neuronprof(&["inspect", dir.to_str().unwrap()]);
    assert!(inspect.status.success(), "{}", text(&inspect));
    assert!(text(&inspect).contains("ranks: 0, 1"), "{}", text(&inspect));
    let analyze = neuronprof(&["analyze", dir.to_str().unwrap()]);
    assert!(
        analyze.status.success(),
        "{}",
        String::from_utf8_lossy(&analyze.stderr)
    );
    let json = neuronprof(&["critical-path", "--json", ours().to_str().unwrap()]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(value["windows"].as_array().unwrap().len(), 2);
    assert!(value["length_us"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_scales_and_annotations_are_clear_errors() {
    let out = neuronprof(&["what-if", ours().to_str().unwrap(), "--scale", "gpu=2"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("scale \"gpu=2\": expected kernel:REGEX=F"),
        "{err}"
    );
    // A rule that selects nothing (a typo, a rank the run does not have) is an error
    // that says so, not a confident "+0.0 %".
    for (scale, expected) in [
        (
            "kernel:^matmull=0.5",
            "--scale kernel:^matmull=0.5: matches nothing in the graph (no kernel name \
             matches the pattern)",
        ),
        (
            "rank:9=0.5",
            "--scale rank:9=0.5: matches nothing in the graph (no device work of that \
             rank; the ranks are [0, 1])",
        ),
    ] {
        let out = neuronprof(&["what-if", ours().to_str().unwrap(), "--scale", scale]);
        assert_eq!(out.status.code(), Some(2), "{scale}");
        assert!(text(&out).is_empty(), "{scale}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{scale}: {err}");
    }
    let out = neuronprof(&[
        "critical-path",
        ours().to_str().unwrap(),
        "--annotation",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no event name contains the annotation \"nope\""),
        "{err}"
    );
    // Re-costing: an unknown profile, an LNC the chip cannot have, a trace the
    // emulator did not record at another LNC (`--device` on it predicts another
    // device: what_if_predicts_another_device.rs).
    let simple_add =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/traces/hta/simple_add.json.gz");
    for (args, expected) in [
        (
            vec![ours().to_str().unwrap(), "--device", "trn9"],
            "--device \"trn9\": not a built-in profile (trn2, trn2-lnc1, trn3, trn3-lnc1)",
        ),
        (
            vec![ours().to_str().unwrap(), "--lnc", "3"],
            "--lnc 3: must divide the 8 physical cores of a trn2 chip",
        ),
        (
            vec![simple_add.to_str().unwrap(), "--lnc", "1"],
            "simple_add.json.gz) has no deviceProperties profile",
        ),
    ] {
        let out = neuronprof(&[&["what-if"], args.as_slice()].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

/// A rank trace of ours, decompressed (one event per line, as our writer puts them).
fn decompressed(rank: usize) -> String {
    let path = ours().join(format!("rank{rank}.pt.trace.json.gz"));
    let out = Command::new("gzip").arg("-dc").arg(&path).output().unwrap();
    assert!(out.status.success(), "gzip -dc {}", path.display());
    String::from_utf8(out.stdout).unwrap()
}

/// The event of a `  {"ph": …},` line.
fn event_of(line: &str) -> Option<serde_json::Value> {
    let line = line.trim().trim_end_matches(',');
    line.starts_with("{\"ph\"")
        .then(|| serde_json::from_str(line).expect("one event per line"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuronprof-cp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        ours().join("rank0.pt.trace.json.gz"),
        dir.join("rank0.pt.trace.json.gz"),
    )
    .unwrap();
    dir
}

/// Damaged input. A rank file cut inside an event stops `critical-path` and `what-if`
/// with one message that names the file, byte offset and event index (not a partial
/// answer: the step's events after the cut are unknown). A rank whose launches are
/// missing (its runtime calls for half the device rows removed, as in a trace whose
/// launches were not recorded) still has a path, and the device rows that could not be
/// placed are counted, in the JSON and in the text.
#[test]
fn damaged_rank_files_are_clear_errors_or_counted() {
    let text1 = decompressed(1);

    // Cut in the middle of the 5000th event.
    let dir = scratch("cut");
    let starts: Vec<usize> = text1
        .match_indices("\n  {\"ph\"")
        .map(|(i, _)| i + 1)
        .collect();
    let cut = starts[5000] + 20;
    let cut_path = dir.join("rank1.pt.trace.json");
    std::fs::write(&cut_path, &text1[..cut]).unwrap();
    let at = format!("{}: byte {cut}, event #5000", cut_path.display());
    for args in [
        vec!["critical-path"],
        vec!["what-if", "--scale", "host=0.5"],
    ] {
        let mut args = args;
        args.push(dir.to_str().unwrap());
        let out = neuronprof(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches(&at).count(), 1, "{args:?}: {err}");
        assert!(err.contains("truncated"), "{err}");
    }

    // Launches missing: drop the runtime calls of every other device row.
    let dir = scratch("no-launch");
    let events: Vec<serde_json::Value> = text1.lines().filter_map(event_of).collect();
    let is_row = |e: &serde_json::Value| {
        matches!(e["cat"].as_str(), Some("kernel" | "gpu_memcpy")) && e["ph"] == "X"
    };
    let rows: Vec<&serde_json::Value> = events.iter().filter(|e| is_row(e)).collect();
    let removed: std::collections::HashSet<i64> = rows
        .iter()
        .step_by(2)
        .map(|e| e["args"]["correlation"].as_i64().unwrap())
        .collect();
    let step = events
        .iter()
        .find(|e| e["name"].as_str().unwrap_or("").contains("ProfilerStep#"))
        .unwrap();
    let (from, to) = (
        step["ts"].as_f64().unwrap(),
        step["ts"].as_f64().unwrap() + step["dur"].as_f64().unwrap(),
    );
    let expected = rows
        .iter()
        .filter(|e| removed.contains(&e["args"]["correlation"].as_i64().unwrap()))
        .filter(|e| (from..=to).contains(&e["ts"].as_f64().unwrap()))
        .count();
    assert!(
        expected > 100,
        "{expected} rows of the step lose their launch"
    );
    let kept: Vec<&str> = text1
        .lines()
        .filter(|line| {
            !event_of(line).is_some_and(|e| {
                !is_row(&e)
                    && e["ph"] == "X"
                    && e["args"]["correlation"]
                        .as_i64()
                        .is_some_and(|c| removed.contains(&c))
            })
        })
        .collect();
    std::fs::write(dir.join("rank1.pt.trace.json"), kept.join("\n")).unwrap();
    let out = neuronprof(&["critical-path", "--json", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        value["skipped"]["rows_without_launch"].as_u64(),
        Some(expected as u64)
    );
    assert!(value["length_us"].as_f64().unwrap() > 0.0);
    let note = format!("{expected} device rows with no launch (not in the graph)");
    let out = neuronprof(&["critical-path", dir.to_str().unwrap()]);
    assert!(text(&out).contains(&note), "{}", text(&out));
    let out = neuronprof(&["what-if", "--scale", "host=0.5", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text(&out).contains(&note), "{}", text(&out));
}
