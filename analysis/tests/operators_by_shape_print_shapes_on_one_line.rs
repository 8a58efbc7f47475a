//! `analyze --by-shape` on a real trace whose profiler pretty-printed `Input Dims` over
//! many lines (the MI300X Qwen trace, `../shared/traces/tracelens/`): each operator is
//! one line of the table, its shapes `[a, b] x [c, d]`, cut when long; the JSON keeps
//! the whole value.

#[path = "../../tests/support/skip.rs"]
mod skip;
mod support {
    pub mod traces;
}

use analysis::{analyze, load_paths, render, LoadOptions, ReportOptions};
use support::traces::shared_traces_dir;

#[test]
fn operators_by_shape_print_each_operators_shapes_on_one_line() {
    let Some(shared) = shared_traces_dir() else {
        skip::skipped(
            "analysis: operators_by_shape_print_each_operators_shapes_on_one_line",
            "../shared/traces/tracelens is absent (set NEURONPROF_SHARED_TRACES)",
        );
        return;
    };
    let file = shared.join("tracelens/mi300_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    let set = load_paths(&[file], &LoadOptions::default()).unwrap();
    let report = analyze(
        &set,
        &ReportOptions::default().with_operators_by_shape(true),
    );
    let table = report.per_rank[0].operators.as_ref().unwrap();
    assert!(
        table.operators.iter().any(|o| o.input_dims.contains('\n')),
        "the trace writes Input Dims over several lines"
    );
    let text = render::render_report(&report);
    let section = text
        .split("\nOperators, rank 0")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    let lines: Vec<&str> = section
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(
        lines.len(),
        1 + render::TOP_OPERATORS,
        "a header and one line per operator:\n{section}"
    );
    assert!(
        lines.iter().skip(1).any(|l| l.contains("] x [")),
        "{section}"
    );
    for line in &lines {
        assert!(!line.trim_end().ends_with('['), "{line}");
    }
    assert_eq!(
        render::shapes_text(
            "[\n  [\n    151936,\n    1024\n  ],\n  [\n    16,\n    559\n  ],\n  [],\n  []\n]"
        ),
        "[151936, 1024] x [16, 559] x [] x []"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert!(
        json["per_rank"][0]["operators"]["operators"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["input_dims"].as_str().is_some_and(|d| d.contains('\n'))),
        "the JSON has the value as written"
    );
}
