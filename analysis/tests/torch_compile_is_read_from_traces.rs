//! `torch.compile` in traces (`analysis::analyses::compile`):
//! - a real CUDA `torch.compile` trace (HTA's `triton_example`, PyTorch's Inductor) shows
//!   its one compiled region `0/0` from Dynamo's `Torch-Compiled Region` range, with no
//!   finding (nothing was recompiled, no counts were recorded);
//! - a trace with the extension's `neuron_compile` member gets graph-break, recompile and
//!   eager-fallback findings, merged into one line each across ranks, and a recompiled
//!   region in the window is a finding even without the member;
//! - a damaged member is a report error naming the rank and the file, and the trace's
//!   own counts still stand; traces without any of it have no `compile` entry.

mod support {
    pub mod traces;
}

use std::path::{Path, PathBuf};

use analysis::insights::FindingKind;
use analysis::{analyze, load_paths, render, LoadOptions, ReportOptions};
use support::traces::traces_dir;

#[test]
fn a_real_inductor_trace_shows_its_compiled_region() {
    let path = traces_dir().join("hta/triton_example.json.gz");
    let traces = load_paths(&[&path], &LoadOptions::default()).unwrap();
    let report = analyze(&traces, &ReportOptions::default());
    assert_eq!(report.compile.len(), 1, "{:?}", report.compile);
    let rank = &report.compile[0];
    let regions = rank.regions.as_ref().unwrap();
    assert_eq!(regions.len(), 1, "{regions:?}");
    assert_eq!(regions[0].compile_id, "0/0");
    assert_eq!((regions[0].frame, regions[0].compile), (Some(0), Some(0)));
    assert_eq!(regions[0].calls, 1);
    assert!(regions[0].host_us > 0.0);
    assert!(rank.counts.is_none());
    assert_eq!(
        rank.graph_kernels, 0,
        "Inductor's kernels are not neuron graphs"
    );
    let kinds = [
        FindingKind::GraphBreaks,
        FindingKind::Recompiles,
        FindingKind::EagerFallbacks,
    ];
    assert!(
        !report.insights.iter().any(|f| kinds.contains(&f.kind)),
        "{:?}",
        report.insights
    );
    let text = render::render_report(&report);
    assert!(text.contains("torch.compile"), "{text}");

    // A trace without torch.compile has no entry.
    let plain = traces_dir().join("hta/simple_add.json.gz");
    let traces = load_paths(&[&plain], &LoadOptions::default()).unwrap();
    assert!(analyze(&traces, &ReportOptions::default())
        .compile
        .is_empty());
}

const COUNTS: &str = r#"{"graphs": 3, "calls": 9, "kernels_launched": 10,
  "cache_hits": 1, "cache_misses": 2, "eager_fallback_ops": {"aten::renorm": 1},
  "unique_graphs": 3, "graph_breaks": [{"reason": "Data-dependent branching\nmore", "count": 2}],
  "recompiles": 1, "recompile_reasons": [{"compile_id": "0/1", "function": "branchy",
  "reason": "tensor 'x' size mismatch at index 0. expected 8, actual 16"}],
  "compiles_kept": 4, "compiles_kept_limit": 64, "backend": "neuron",
  "counted_since": "process start"}"#;

/// A neuron rank trace with a graph kernel, a compile range and compiled regions
/// `0/0` and `0/1`; `member` is the raw `neuron_compile` value, if any.
fn write_rank(dir: &Path, rank: i64, member: Option<&str>) -> PathBuf {
    let member = member.map_or(String::new(), |m| format!("\"neuron_compile\": {m},\n"));
    let text = format!(
        r#"{{"schemaVersion": 1, "distributedInfo": {{"rank": {rank}, "world_size": 2}},
{member}"traceEvents": [
 {{"ph": "X", "cat": "user_annotation", "name": "Torch-Compiled Region: 0/0", "pid": 1, "tid": 1, "ts": 0, "dur": 50}},
 {{"ph": "X", "cat": "user_annotation", "name": "neuron_compile", "pid": 1, "tid": 1, "ts": 5, "dur": 20}},
 {{"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "pid": 1, "tid": 1, "ts": 30, "dur": 2, "args": {{"correlation": 7}}}},
 {{"ph": "X", "cat": "user_annotation", "name": "Torch-Compiled Region: 0/1", "pid": 1, "tid": 1, "ts": 60, "dur": 40}},
 {{"ph": "X", "cat": "kernel", "name": "graph_0_0_forward", "pid": 0, "tid": 7, "ts": 33, "dur": 30, "args": {{"stream": 7, "correlation": 7}}}},
 {{"ph": "X", "cat": "kernel", "name": "add_f32", "pid": 0, "tid": 7, "ts": 70, "dur": 10, "args": {{"stream": 7}}}}
]}}"#
    );
    let path = dir.join(format!("rank{rank}.json"));
    std::fs::write(&path, text).unwrap();
    path
}

fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn compile_counts_become_findings_merged_across_ranks() {
    let dir = work_dir("analysis-compile-counts");
    let paths = [
        write_rank(&dir, 0, Some(COUNTS)),
        write_rank(&dir, 1, Some(COUNTS)),
    ];
    let traces = load_paths(&paths, &LoadOptions::default()).unwrap();
    let report = analyze(&traces, &ReportOptions::default());
    assert!(
        !report.errors.iter().any(|e| e.contains("neuron_compile")),
        "{:?}",
        report.errors
    );
    assert_eq!(report.compile.len(), 2);
    let rank = &report.compile[0];
    assert_eq!(rank.graph_kernels, 1);
    assert_eq!(rank.graph_kernel_us, 30.0);
    assert_eq!(rank.device_kernel_us, 40.0);
    assert_eq!((rank.compile_ranges, rank.compile_range_us), (1, 20.0));
    assert_eq!(rank.recompiled_regions().len(), 1);
    let counts = rank.counts.as_ref().unwrap();
    assert_eq!(counts.graph_break_count(), 2);
    for kind in [
        FindingKind::GraphBreaks,
        FindingKind::Recompiles,
        FindingKind::EagerFallbacks,
    ] {
        let found: Vec<_> = report.insights.iter().filter(|f| f.kind == kind).collect();
        assert_eq!(found.len(), 1, "one line for both ranks: {found:?}");
        assert_eq!(found[0].ranks, vec![0, 1], "{found:?}");
        assert_eq!(found[0].count, 2, "{found:?}");
    }
    let text = render::render_report(&report);
    for line in [
        "rank 0 graph break x2: Data-dependent branching",
        "rank 0 recompile 0/1 of branchy: tensor 'x' size mismatch at index 0. expected 8, actual 16",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    assert!(
        !text.contains("more\n"),
        "a reason shows its first line: {text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_recompiled_region_is_a_finding_without_the_member_and_damage_is_reported() {
    let dir = work_dir("analysis-compile-damage");
    let paths = [
        write_rank(&dir, 0, None),
        write_rank(&dir, 1, Some(r#"{"graphs": "three"}"#)),
    ];
    let traces = load_paths(&paths, &LoadOptions::default()).unwrap();
    let report = analyze(&traces, &ReportOptions::default());
    assert_eq!(report.compile.len(), 2, "{:?}", report.compile);
    assert!(report.compile.iter().all(|r| r.counts.is_none()));
    let error = report
        .errors
        .iter()
        .find(|e| e.contains("neuron_compile"))
        .unwrap_or_else(|| panic!("{:?}", report.errors));
    assert!(
        error.starts_with("rank 1 (") && error.contains("rank1.json"),
        "{error}"
    );
    let recompiled: Vec<_> = report
        .insights
        .iter()
        .filter(|f| f.kind == FindingKind::Recompiles)
        .collect();
    assert_eq!(recompiled.len(), 1, "{:?}", report.insights);
    assert_eq!(recompiled[0].ranks, vec![0, 1]);
    let _ = std::fs::remove_dir_all(&dir);
}
