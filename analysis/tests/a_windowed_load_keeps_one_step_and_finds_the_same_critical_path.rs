//! `LoadOptions::with_window` keeps only the events of one annotation's window (and of
//! the other correlated rows only what HTA's links and queue length need), and the
//! HTA-compat critical path of that window is the one the whole trace gives: on HTA's
//! own traces, and on HTA's NCCL trace repeated many times, where the events kept are
//! exactly those kept from a single copy, however many copies follow. A device row that
//! starts too long after its launch for the window to keep it is reported, not silently
//! left out, and a second windowed load that keeps it gives the whole trace's path; a
//! file whose correlation ids repeat is refused by the compact form and read again
//! keeping every correlated row.

#[path = "../../trace-format/benches/support/replicate.rs"]
#[allow(dead_code)]
mod replicate;

use std::path::{Path, PathBuf};

use analysis::critical_path::{build_graph, CriticalPathError, Options};
use analysis::model::{CompactCorrelations, WindowCorrelations};
use analysis::{load_paths, LoadOptions, TraceSet};
use serde_json::Value;

fn vendored(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/traces/hta")
        .join(file)
}

fn load(path: &Path, window: Option<(&str, usize)>) -> TraceSet {
    load_keeping(path, window, Vec::new())
}

fn load_keeping(path: &Path, window: Option<(&str, usize)>, also: Vec<u64>) -> TraceSet {
    load_with(path, window, also, false)
}

fn load_with(
    path: &Path,
    window: Option<(&str, usize)>,
    also: Vec<u64>,
    records: bool,
) -> TraceSet {
    let mut options = LoadOptions::default()
        .with_host_ops(false)
        .with_timeline(true);
    if let Some((annotation, instance)) = window {
        options = options
            .with_window(annotation, (instance, instance))
            .with_window_events(also)
            .with_window_records(records);
    }
    load_paths(&[path], &options).expect("load")
}

/// A windowed load, and more keeping what the first missed or every correlated row
/// (as `neuronprof critical-path --hta-compat` does); the number of loads.
fn load_window(path: &Path, annotation: &str, instance: usize) -> (TraceSet, usize) {
    let mut set = load(path, Some((annotation, instance)));
    let options = Options::hta(set.ranks[0].rank, annotation, instance);
    let (mut also, mut records) = (Vec::new(), false);
    for loads in 1..4 {
        match build_graph(&set, &options) {
            Err(CriticalPathError::OutsideKeptWindow { missing, .. }) => {
                assert!(!missing.is_empty());
                also.extend(missing);
            }
            Err(CriticalPathError::WindowNeedsRecords { .. }) if !records => records = true,
            _ => return (set, loads),
        }
        set = load_with(path, Some((annotation, instance)), also.clone(), records);
    }
    panic!("three windowed loads did not give a graph");
}

/// What the windowed load kept of the file's correlations, compact form.
fn compact(set: &TraceSet) -> &CompactCorrelations {
    let window = set.ranks[0].timeline.as_ref().unwrap().window.as_ref();
    match &window.expect("a windowed load says so").correlations {
        WindowCorrelations::Compact(c) => c,
        other => panic!("expected the compact form, got {other:?}"),
    }
}

/// The whole critical path as JSON (windows, counts, summary, every edge, skipped).
fn path_json(set: &TraceSet, annotation: &str, instance: usize) -> Value {
    let options = Options::hta(set.ranks[0].rank, annotation, instance);
    let graph = build_graph(set, &options).expect("graph");
    let mut json = serde_json::to_value(graph.critical_path().expect("path")).unwrap();
    let edges = graph.graph.longest_path(|e| e.weight).unwrap();
    json["critical_events"] = serde_json::to_value(graph.path_events(&edges)).unwrap();
    // Every edge of the graph, not only the path's: launch delays and kernel-kernel
    // delays follow HTA's queue length, counted over the whole trace.
    let all: Vec<(u32, u32, i64, &str)> = graph
        .graph
        .edges
        .iter()
        .map(|e| (e.src, e.dst, e.weight, e.kind.hta_name()))
        .collect();
    json["graph_edges"] = serde_json::to_value(all).unwrap();
    json
}

/// Rows and timeline events kept of the first rank.
fn kept(set: &TraceSet) -> (usize, usize) {
    let rank = &set.ranks[0];
    let timeline = rank.timeline.as_ref().expect("timeline");
    (rank.rows.len(), timeline.events.len())
}

#[test]
fn the_window_of_each_instance_gives_the_whole_traces_path() {
    let cases: [(&str, &str, &[usize]); 2] = [
        (
            "simple_add.json.gz",
            "[param|pytorch.model.alex_net|0|0|0|measure|forward]",
            &[0, 1],
        ),
        ("nccl_data.json.gz", "ProfilerStep", &[0, 1, 2]),
    ];
    for (file, annotation, instances) in cases {
        let trace = vendored(file);
        let whole = load(&trace, None);
        for &instance in instances {
            let (windowed, loads) = load_window(&trace, annotation, instance);
            eprintln!("{file} instance {instance}: {loads} windowed loads");
            let (rows, events) = kept(&windowed);
            let (all_rows, all_events) = kept(&whole);
            assert!(
                rows + events < all_rows + all_events,
                "{file} #{instance}: the window dropped nothing ({rows} + {events} kept)"
            );
            assert_eq!(
                path_json(&windowed, annotation, instance),
                path_json(&whole, annotation, instance),
                "{file} instance {instance}: the windowed load's path differs"
            );
        }
    }
}

#[test]
fn events_kept_do_not_grow_with_the_steps_after_the_window() {
    let original = vendored("nccl_data.json.gz");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("windowed-load");
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("nccl_data_x4.json");
    // About 4.6 copies of the trace (8.6 MB of JSON each), 3 steps each.
    let file = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    let (written, _) = replicate::replicate(&original, file, 40_000_000).expect("replicate");
    let one = load(&original, Some(("ProfilerStep", 1)));
    let many = load(&big, Some(("ProfilerStep", 1)));
    assert!(
        many.ranks[0].counts.events >= 3 * one.ranks[0].counts.events,
        "{written} events written: fewer than 3 copies"
    );
    assert_eq!(
        kept(&many),
        kept(&one),
        "rows and timeline events kept: the file with more steps kept more"
    );
    let whole = load(&big, None);
    let (rows, events) = kept(&whole);
    assert!(rows + events > 3 * (kept(&one).0 + kept(&one).1));
    // The pairs kept are the window's: the same from one copy and from many.
    assert_eq!(compact(&many).pairs, compact(&one).pairs);
    assert!(!compact(&one).pairs.is_empty());
    // What does grow with the file: one 10-byte log entry per launch call and per
    // device row with a correlation (the queue length sorts them all), fewer than the
    // correlated rows a record per row kept.
    let rows = &whole.ranks[0].rows;
    let names = &whole.ranks[0];
    let launches = rows
        .iter()
        .filter(|r| r.correlation != -1 && r.stream == -1 && is_launch(names.name(r)))
        .count();
    let device_rows = rows
        .iter()
        .filter(|r| r.correlation >= 0 && r.stream >= 0)
        .count();
    let with_correlation = rows.iter().filter(|r| r.correlation != -1).count();
    let (l, d) = (&compact(&many).launches, &compact(&many).device_rows);
    assert_eq!(
        (l.ts_rel_ns.len(), d.ts_rel_ns.len()),
        (launches, device_rows)
    );
    assert!(launches + device_rows < with_correlation);
    assert_eq!(l.kept, compact(&one).launches.kept);
    assert_eq!(d.kept, compact(&one).device_rows.kept);
    assert_eq!(
        path_json(&many, "ProfilerStep", 1),
        path_json(&whole, "ProfilerStep", 1)
    );
    // The path is the single copy's; a few of the graph's other edges are not, as in
    // HTA: its queue length sorts every launch and kernel of the file by time with
    // numpy's unstable sort, whose order of equal times depends on all the keys.
    let without_edges = |mut json: Value| {
        json.as_object_mut().unwrap().remove("graph_edges");
        json
    };
    assert_eq!(
        without_edges(path_json(&many, "ProfilerStep", 1)),
        without_edges(path_json(&one, "ProfilerStep", 1)),
        "the copies after the window change the path"
    );
}

#[test]
fn a_device_row_starting_long_after_the_window_is_reported_missing() {
    // Instance 1 of ProfilerStep is 200..300 us; its launch's kernel starts at 5 ms,
    // past the window and one more window's length.
    let json = r#"{"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 200, "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 210, "dur": 50},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 220, "dur": 10,
         "args": {"correlation": 5}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 5000, "dur": 40,
         "args": {"stream": 7, "correlation": 5}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 9000, "dur": 5}
    ]}"#;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("windowed-load");
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("late_kernel.json");
    std::fs::write(&trace, json).unwrap();
    let windowed = load(&trace, Some(("ProfilerStep", 1)));
    let options = Options::hta(0, "ProfilerStep", 1);
    match build_graph(&windowed, &options) {
        Err(CriticalPathError::OutsideKeptWindow { missing, .. }) => {
            assert_eq!(missing, [4], "the kernel, event 4")
        }
        other => panic!(
            "expected one missing event, got {:?}",
            other.map(|g| g.windows)
        ),
    }
    // The whole trace has the kernel on the path, and so has the second windowed load.
    let whole = load(&trace, None);
    let path = path_json(&whole, "ProfilerStep", 1);
    let (again, loads) = load_window(&trace, "ProfilerStep", 1);
    assert_eq!(loads, 2);
    assert_eq!(path_json(&again, "ProfilerStep", 1), path);
    assert_eq!(
        kept(&again),
        (4, 1),
        "rows: both steps, the launch, the kernel; timeline: mm, not add"
    );
    let names: Vec<&str> = path["path"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(names.contains(&"gemm"), "{names:?}");
    // Another window than the one loaded is refused too.
    match build_graph(&windowed, &Options::hta(0, "ProfilerStep", 0)) {
        Err(CriticalPathError::OutsideKeptWindow { missing, .. }) if missing.is_empty() => {}
        other => panic!("expected a refusal, got {:?}", other.map(|g| g.windows)),
    }
}

/// HTA's launch calls in the vendored CUDA traces.
fn is_launch(name: &str) -> bool {
    matches!(
        name,
        "cudaLaunchKernel" | "cudaLaunchKernelExC" | "cudaMemcpyAsync" | "cudaMemsetAsync"
    )
}

#[test]
fn a_correlation_id_used_twice_is_read_again_keeping_every_correlated_row() {
    // Correlation 5 names a launch and a kernel in step 0 and again in step 1: HTA
    // pairs each launch with the last kernel of the id (in file order), which the
    // compact form, built for one launch and one kernel per id, cannot know exactly.
    let json = r#"{"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 10,
         "args": {"correlation": 5}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 40,
         "args": {"stream": 7, "correlation": 5}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 200, "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 205, "dur": 60},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 210, "dur": 10,
         "args": {"correlation": 5}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 230, "dur": 40,
         "args": {"stream": 7, "correlation": 5}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 240, "dur": 10,
         "args": {"correlation": 6}},
        {"ph": "X", "cat": "kernel", "name": "add", "pid": 0, "tid": 7, "ts": 275, "dur": 10,
         "args": {"stream": 7, "correlation": 6}}
    ]}"#;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("windowed-load");
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("reused_correlation.json");
    std::fs::write(&trace, json).unwrap();
    let windowed = load(&trace, Some(("ProfilerStep", 1)));
    let window = windowed.ranks[0].timeline.as_ref().unwrap().window.as_ref();
    assert!(
        matches!(
            window.unwrap().correlations,
            WindowCorrelations::Unproven(_)
        ),
        "{:?}",
        window.unwrap().correlations
    );
    match build_graph(&windowed, &Options::hta(0, "ProfilerStep", 1)) {
        Err(CriticalPathError::WindowNeedsRecords { rank: 0, .. }) => {}
        other => panic!("expected a refusal, got {:?}", other.map(|g| g.windows)),
    }
    let (again, loads) = load_window(&trace, "ProfilerStep", 1);
    assert_eq!(loads, 2);
    let whole = load(&trace, None);
    let path = path_json(&whole, "ProfilerStep", 1);
    assert_eq!(path_json(&again, "ProfilerStep", 1), path);
    let names: Vec<&str> = path["path"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(names.contains(&"gemm"), "{names:?}");
}
