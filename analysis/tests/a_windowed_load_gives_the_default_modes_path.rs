//! The default mode's critical path (across ranks) from a windowed load
//! (`LoadOptions::with_window_mode(Mode::Default)`), as `neuronprof critical-path`
//! loads: the same graph, edge for edge, as from the whole trace, on HTA's traces (one
//! rank and two) and on a neuron-style trace whose launches share a correlation; what
//! the load keeps does not grow with the steps after the window (no per-row log, as
//! HTA-compat mode's queue count needs); a window whose device work runs past the
//! range kept is refused, not answered from too little.

#[path = "../../trace-format/benches/support/replicate.rs"]
#[allow(dead_code)]
mod replicate;

use std::path::{Path, PathBuf};

use analysis::critical_path::{build_graph, CriticalPathError, Options};
use analysis::model::WindowCorrelations;
use analysis::{load_paths, LoadOptions, Mode, TraceSet};
use serde_json::Value;

fn vendored(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/traces/hta")
        .join(file)
}

/// What a windowed load is asked to keep.
#[derive(Clone, Default)]
struct Keep {
    also: Vec<u64>,
    records: bool,
}

fn load(paths: &[PathBuf], window: Option<(&str, usize, &Keep)>) -> TraceSet {
    let mut options = LoadOptions::default()
        .with_host_ops(false)
        .with_timeline(true);
    if let Some((annotation, instance, keep)) = window {
        options = options
            .with_window(annotation, (instance, instance))
            .with_window_events(keep.also.clone())
            .with_window_records(keep.records)
            .with_window_mode(Mode::Default);
    }
    load_paths(paths, &options).expect("load")
}

fn options(annotation: &str, instance: usize) -> Options {
    let mut o = Options::default();
    o.annotation = annotation.to_owned();
    o.instances = (instance, instance);
    o
}

/// How the windowed loads ended.
#[derive(Debug, PartialEq)]
enum Loaded {
    /// A graph from this many windowed loads.
    Windowed(usize),
    /// Refused with nothing more to keep: only the whole trace will do.
    Whole,
}

/// Windowed loads as the command makes them (keeping what the first missed, or every
/// correlated row), the set of the last and how they ended.
fn load_window(paths: &[PathBuf], annotation: &str, instance: usize) -> (TraceSet, Loaded) {
    let mut keep = Keep::default();
    let mut set = load(paths, Some((annotation, instance, &keep)));
    for loads in 1..4 {
        match build_graph(&set, &options(annotation, instance)) {
            Err(CriticalPathError::OutsideKeptWindow { missing, .. }) if missing.is_empty() => {
                return (set, Loaded::Whole)
            }
            Err(CriticalPathError::OutsideKeptWindow { missing, .. }) => keep.also.extend(missing),
            Err(CriticalPathError::WindowNeedsRecords { .. }) if !keep.records => {
                keep.records = true
            }
            Err(e) => panic!("{e}"),
            Ok(_) => return (set, Loaded::Windowed(loads)),
        }
        set = load(paths, Some((annotation, instance, &keep)));
    }
    panic!("three windowed loads did not give a graph");
}

/// The whole critical path and every edge of the graph, as JSON.
fn path_json(set: &TraceSet, annotation: &str, instance: usize) -> Value {
    let graph = build_graph(set, &options(annotation, instance)).expect("graph");
    let mut json = serde_json::to_value(graph.critical_path().expect("path")).unwrap();
    let edges = graph.graph.longest_path(|e| e.weight).unwrap();
    json["critical_events"] = serde_json::to_value(graph.path_events(&edges)).unwrap();
    let all: Vec<(u32, u32, i64, &str, bool)> = graph
        .graph
        .edges
        .iter()
        .map(|e| (e.src, e.dst, e.weight, e.kind.hta_name(), e.causal))
        .collect();
    json["graph_edges"] = serde_json::to_value(all).unwrap();
    json
}

/// Rows and timeline events kept, summed over the ranks.
fn kept(set: &TraceSet) -> usize {
    set.ranks
        .iter()
        .map(|r| r.rows.len() + r.timeline.as_ref().map_or(0, |t| t.events.len()))
        .sum()
}

#[test]
fn the_window_of_each_instance_gives_the_whole_traces_graph() {
    let cases: [(&[&str], &str, &[usize]); 3] = [
        (
            &["simple_add.json.gz"],
            "[param|pytorch.model.alex_net|0|0|0|measure|forward]",
            &[0, 1],
        ),
        (&["nccl_data.json.gz"], "ProfilerStep", &[0, 1, 2]),
        (
            &["two_rank-rank0.json.gz", "two_rank-rank1.json.gz"],
            "ProfilerStep",
            &[0, 1],
        ),
    ];
    let mut windowed_answers = 0;
    for (files, annotation, instances) in cases {
        let paths: Vec<PathBuf> = files.iter().map(|f| vendored(f)).collect();
        let whole = load(&paths, None);
        for &instance in instances {
            let (windowed, loaded) = load_window(&paths, annotation, instance);
            eprintln!("{files:?} instance {instance}: {loaded:?}");
            if loaded == Loaded::Whole {
                continue;
            }
            windowed_answers += 1;
            assert!(
                kept(&windowed) < kept(&whole),
                "{files:?} #{instance}: the window dropped nothing"
            );
            assert_eq!(
                path_json(&windowed, annotation, instance),
                path_json(&whole, annotation, instance),
                "{files:?} instance {instance}: the windowed load's graph differs"
            );
        }
    }
    // nccl_data's three steps and two_rank's two at least are answered windowed.
    assert!(windowed_answers >= 5, "{windowed_answers} windowed answers");
}

#[test]
fn what_a_default_mode_window_keeps_does_not_grow_with_the_file() {
    let original = vendored("nccl_data.json.gz");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("windowed-default-load");
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("nccl_data_x4.json");
    let file = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    replicate::replicate(&original, file, 40_000_000).expect("replicate");
    let keep = Keep::default();
    let one = load(
        std::slice::from_ref(&original),
        Some(("ProfilerStep", 1, &keep)),
    );
    let many = load(std::slice::from_ref(&big), Some(("ProfilerStep", 1, &keep)));
    assert!(many.ranks[0].counts.events >= 3 * one.ranks[0].counts.events);
    assert_eq!(
        kept(&many),
        kept(&one),
        "the file with more steps kept more"
    );
    for set in [&one, &many] {
        let window = set.ranks[0].timeline.as_ref().unwrap().window.as_ref();
        match &window.unwrap().correlations {
            WindowCorrelations::Compact(c) => {
                // No entry per launch or device row of the file: the default mode's
                // queue length counts the window's own rows.
                assert!(c.launches.ts_rel_ns.is_empty() && c.device_rows.ts_rel_ns.is_empty());
                assert!(!c.pairs.is_empty());
            }
            other => panic!("expected the compact form, got {other:?}"),
        }
    }
    let whole = load(std::slice::from_ref(&big), None);
    assert_eq!(
        path_json(&many, "ProfilerStep", 1),
        path_json(&whole, "ProfilerStep", 1)
    );
}

/// A neuron-style trace: each launch is an `nrt_execute` holding an `nrt_queue_submit`
/// of the same correlation, and the device rows come after every host event. Each
/// 900 µs step launches 8 rows 100 µs apart (each starts 70 µs after its launch and
/// runs 20 µs: the queue is empty at each launch), then one at 850 µs that starts at
/// 960 µs, past the step; between the steps, at 940 µs, one more launch: so that row
/// was not alone in the queue when it started, which only a load that kept the launch
/// after the window knows.
fn neuron_style() -> String {
    let mut events: Vec<String> = Vec::new();
    let mut device: Vec<String> = Vec::new();
    let mut correlation = 100;
    let mut launch = |events: &mut Vec<String>, ts: i64, start: i64, dur: i64| {
        correlation += 1;
        events.push(format!(
            r#"{{"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "pid": 1, "tid": 1, "ts": {ts}, "dur": 8, "args": {{"correlation": {correlation}}}}}"#
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_queue_submit", "pid": 1, "tid": 1, "ts": {}, "dur": 4, "args": {{"correlation": {correlation}}}}}"#,
            ts + 2
        ));
        device.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "matmul_f32", "pid": 0, "tid": 0, "ts": {start}, "dur": {dur}, "args": {{"stream": 0, "correlation": {correlation}}}}}"#
        ));
    };
    for step in 0..3 {
        let t0 = step * 1000;
        events.push(format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 1, "tid": 1, "ts": {t0}, "dur": 900}}"#
        ));
        for k in 0..8 {
            let ts = t0 + 10 + k * 100;
            launch(&mut events, ts, ts + 70, 20);
        }
        launch(&mut events, t0 + 850, t0 + 960, 20);
        launch(&mut events, t0 + 940, t0 + 985, 3);
    }
    events.extend(device);
    format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n"))
}

#[test]
fn launches_sharing_a_correlation_are_read_in_one_windowed_load() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("windowed-default-load");
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("neuron_style.json");
    std::fs::write(&trace, neuron_style()).unwrap();
    let paths = vec![trace];
    let whole = load(&paths, None);
    for instance in 0..3 {
        let (windowed, loaded) = load_window(&paths, "ProfilerStep", instance);
        assert_eq!(loaded, Loaded::Windowed(1), "instance {instance}");
        let path = path_json(&whole, "ProfilerStep", instance);
        assert_eq!(path_json(&windowed, "ProfilerStep", instance), path);
        assert!(kept(&windowed) < kept(&whole));
        // A launch delay where the queue was empty from the launch to the row's start:
        // the 8 rows, not the one a later launch joined in the queue.
        let delays = path["graph_edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e[3] == "critical_path_kernel_launch_delay" && e[4] == false)
            .count();
        assert_eq!(delays, 8, "instance {instance}: {delays} launch delays");
    }
}
