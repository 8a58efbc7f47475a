//! `neuronprof analyze` reports the `key_averages`-style operator table per rank (text:
//! the top operators by self device time; `--json`: all of them under
//! `per_rank[].operators`), respecting `--rank`, `--step` and `--by-shape`. The numbers
//! are checked against `operator_table` called on its own and against facts of the real
//! trace obtained by scanning its JSON directly in the test.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use analysis::analyses::operators::{operator_table, operator_table_with, OperatorOptions};
use analysis::{load_paths, LoadOptions};
use common::{gunzip, shared_traces};
use serde_json::Value;

fn neuronprof(args: &[&str], paths: &[PathBuf]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(args)
        .args(paths)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "neuronprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json_of(args: &[&str], paths: &[PathBuf]) -> Value {
    serde_json::from_slice(&neuronprof(args, paths).stdout).unwrap()
}

/// The trace's events, parsed here with serde_json (not by the analysis crate).
fn events(path: &Path) -> Vec<Value> {
    let doc: Value = serde_json::from_slice(&gunzip(path)).unwrap();
    doc["traceEvents"].as_array().unwrap().clone()
}

fn is_complete(e: &Value, category: &str) -> bool {
    e["ph"] == "X" && e["cat"] == category
}

/// (calls, Σ dur µs, Σ device µs by `External id`) of the `cpu_op`s named `name` that
/// start in `[from, to)` µs, by a direct scan.
fn scan_op(events: &[Value], name: &str, from: f64, to: f64) -> (u64, f64, f64) {
    let mut device_by_external: HashMap<i64, f64> = HashMap::new();
    for e in events {
        if ["kernel", "gpu_memcpy", "gpu_memset"]
            .iter()
            .any(|c| is_complete(e, c))
        {
            if let Some(id) = e["args"]["External id"].as_i64() {
                *device_by_external.entry(id).or_default() += e["dur"].as_f64().unwrap();
            }
        }
    }
    let (mut calls, mut host, mut device) = (0, 0.0, 0.0);
    for e in events {
        let ts = e["ts"].as_f64().unwrap_or(f64::NAN);
        if is_complete(e, "cpu_op") && e["name"] == name && from <= ts && ts < to {
            calls += 1;
            host += e["dur"].as_f64().unwrap();
            if let Some(id) = e["args"]["External id"].as_i64() {
                device += device_by_external.get(&id).copied().unwrap_or(0.0);
            }
        }
    }
    (calls, host, device)
}

/// Distinct names of the lines torch's key_averages gives (`cpu_op`, `user_annotation`
/// with every `ProfilerStep#N` as `ProfilerStep*`, and `cuda_runtime` calls), by a
/// direct scan.
fn distinct_operators(events: &[Value]) -> usize {
    let mut names: Vec<&str> = events
        .iter()
        .filter(|e| {
            is_complete(e, "cpu_op")
                || is_complete(e, "user_annotation")
                || is_complete(e, "cuda_runtime")
        })
        .filter_map(|e| e["name"].as_str())
        .map(|name| {
            if name.starts_with("ProfilerStep#") {
                "ProfilerStep*"
            } else {
                name
            }
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    names.len()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

fn line<'v>(operators: &'v Value, name: &str) -> &'v Value {
    operators
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name)
        .unwrap_or_else(|| panic!("no operator {name}"))
}

#[test]
fn json_operators_equal_operator_table_and_a_direct_scan() {
    let dir = shared_traces();
    let path = dir.join("hta/nccl_data.json.gz");
    let report = json_of(
        &["analyze", "--json", "--rank", "0"],
        std::slice::from_ref(&path),
    );
    let per_rank = report["per_rank"].as_array().unwrap();
    assert_eq!(per_rank.len(), 1, "--rank 0: one rank");
    let table = &per_rank[0]["operators"];
    assert_eq!(table["rank"], 0);
    assert_eq!(table["by_shape"], false);
    assert_eq!(table["step"], Value::Null);

    // Equal, line for line, to the table the library makes on its own.
    let set = load_paths(&[&path], &LoadOptions::default()).unwrap();
    let direct = operator_table(&set.ranks[0], false).unwrap();
    assert_eq!(*table, serde_json::to_value(&direct).unwrap());

    // Facts of the file, scanned here.
    let events = events(&path);
    assert_eq!(direct.operators.len(), distinct_operators(&events));
    assert_eq!(
        direct.operators.len(),
        115,
        "89 cpu_op, 9 annotation (the steps as one) and 17 runtime names"
    );
    let (calls, host_us, device_us) =
        scan_op(&events, "aten::cudnn_convolution", f64::MIN, f64::MAX);
    assert_eq!(calls, 159);
    let conv = line(&table["operators"], "aten::cudnn_convolution");
    assert_eq!(conv["calls"], calls);
    assert!(
        close(conv["cpu_total_us"].as_f64().unwrap(), host_us),
        "{conv}"
    );
    assert!(
        close(conv["device_self_us"].as_f64().unwrap(), device_us),
        "{conv}"
    );
    assert!(close(device_us, 17013.651), "{device_us}");
    let empty = scan_op(&events, "aten::empty", f64::MIN, f64::MAX);
    assert_eq!(line(&table["operators"], "aten::empty")["calls"], empty.0);
    assert_eq!(empty.0, 1590);
}

#[test]
fn text_report_lists_the_top_operators_by_self_device_time() {
    let dir = shared_traces();
    let path = dir.join("hta/nccl_data.json.gz");
    let text =
        String::from_utf8(neuronprof(&["analyze"], std::slice::from_ref(&path)).stdout).unwrap();
    let title = format!(
        "\nOperators, rank 0 (top 10 of {} by self device, then self host time)\n",
        distinct_operators(&events(&path))
    );
    let start = text
        .find(&title)
        .unwrap_or_else(|| panic!("an operators section:\n{text}"));
    let insights = text.find("\nInsights\n").expect("insights");
    assert!(insights < start, "insights come first");
    let lines: Vec<&str> = text[start + 1..].lines().skip(1).take(11).collect();
    assert!(
        lines[0].starts_with("operator") && lines[0].contains("device self us"),
        "{}",
        lines[0]
    );
    // By the direct scan, record_param_comms (the NCCL calls, 27 of them) launched the
    // most device time, then aten::convolution_backward.
    let first: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(first[0], "record_param_comms", "{}", lines[1]);
    assert_eq!(first[1], "27", "{}", lines[1]);
    assert!(
        lines[2].starts_with("aten::convolution_backward "),
        "{}",
        lines[2]
    );
    // Aligned: numbers are right-aligned, so each row's device-self cell ends where
    // its header does (cells are counted from the right: names can have spaces).
    let header_end = lines[0].find("device self us").unwrap() + "device self us".len();
    for row in &lines[1..] {
        let ends: Vec<usize> = row
            .char_indices()
            .filter(|&(i, c)| {
                let rest = &row[i + c.len_utf8()..];
                !c.is_whitespace() && (rest.is_empty() || rest.starts_with(char::is_whitespace))
            })
            .map(|(i, c)| i + c.len_utf8())
            .collect();
        assert_eq!(ends[ends.len() - 1], row.len(), "{row}");
        assert_eq!(ends[ends.len() - 2], header_end, "{row}");
    }
}

#[test]
fn step_keeps_the_operators_that_start_in_it() {
    let dir = shared_traces();
    let path = dir.join("hta/nccl_data.json.gz");
    let report = json_of(
        &["analyze", "--json", "--step", "5"],
        std::slice::from_ref(&path),
    );
    let table = &report["per_rank"][0]["operators"];
    assert_eq!(table["step"], 5);
    let events = events(&path);
    let step = events
        .iter()
        .find(|e| e["name"] == "ProfilerStep#5")
        .unwrap();
    let from = step["ts"].as_f64().unwrap();
    let to = from + step["dur"].as_f64().unwrap();
    for name in [
        "aten::cudnn_convolution",
        "aten::empty",
        "record_param_comms",
    ] {
        let (calls, host_us, device_us) = scan_op(&events, name, from, to);
        let got = line(&table["operators"], name);
        assert_eq!(got["calls"], calls, "{name}");
        assert!(
            close(got["cpu_total_us"].as_f64().unwrap(), host_us),
            "{got}"
        );
        assert!(
            close(got["device_self_us"].as_f64().unwrap(), device_us),
            "{got}"
        );
    }
    let all = scan_op(&events, "aten::cudnn_convolution", f64::MIN, f64::MAX).0;
    assert!(
        line(&table["operators"], "aten::cudnn_convolution")["calls"].as_u64() < Some(all),
        "one step of three"
    );
    let set = load_paths(&[&path], &LoadOptions::default()).unwrap();
    let direct = operator_table_with(
        &set.ranks[0],
        &OperatorOptions::default().with_step(Some(5)),
    )
    .unwrap();
    assert_eq!(*table, serde_json::to_value(&direct).unwrap());
}

#[test]
fn by_shape_splits_operators_by_input_dims() {
    let dir = shared_traces();
    let path = dir.join("torch-2.15/gloo_2rank-rank0.pt.trace.json.gz");
    let report = json_of(
        &["analyze", "--json", "--by-shape"],
        std::slice::from_ref(&path),
    );
    let table = &report["per_rank"][0]["operators"];
    assert_eq!(table["by_shape"], true);
    let events = events(&path);
    // Calls per (name, Input Dims) by a direct scan; the dims as serde_json writes them
    // compactly, the table keeps the file's text, so compare without spaces.
    let mut expected: HashMap<(String, String), u64> = HashMap::new();
    for e in events.iter().filter(|e| is_complete(e, "cpu_op")) {
        // No shapes and an empty list are one line, as torch's `str(input_shapes)`.
        let dims = match &e["args"]["Input Dims"] {
            Value::Array(list) if list.is_empty() => String::new(),
            dims @ Value::Array(_) => dims.to_string(),
            _ => String::new(),
        };
        *expected
            .entry((e["name"].as_str().unwrap().to_owned(), dims))
            .or_default() += 1;
    }
    let got: HashMap<(String, String), u64> = table["operators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                (
                    o["name"].as_str().unwrap().to_owned(),
                    o["input_dims"].as_str().unwrap().replace(' ', ""),
                ),
                o["calls"].as_u64().unwrap(),
            )
        })
        .collect();
    // Annotation lines (every `ProfilerStep#N` is one, `ProfilerStep*`) are not cpu_ops.
    let user_annotations: Vec<String> = events
        .iter()
        .filter(|e| is_complete(e, "user_annotation"))
        .map(|e| match e["name"].as_str().unwrap() {
            step if step.starts_with("ProfilerStep#") => "ProfilerStep*".to_owned(),
            name => name.to_owned(),
        })
        .collect();
    let got: HashMap<_, _> = got
        .into_iter()
        .filter(|((name, _), _)| !user_annotations.contains(name))
        .collect();
    assert_eq!(got, expected);
    let mm_shapes = got.keys().filter(|(n, _)| n == "aten::mm").count();
    assert!(mm_shapes > 1, "aten::mm has several shapes: {mm_shapes}");
    let text = String::from_utf8(neuronprof(&["analyze", "--by-shape"], &[path]).stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("operator") && l.contains("input dims")),
        "{text}"
    );
}
