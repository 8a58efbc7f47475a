//! The `investigate` prompt: a trace walked from the insights down, one tool call per
//! step, naming the fields of each answer to read.

/// The prompt's text for these paths (as the user gave them) and, optionally, a rank.
pub fn investigate(paths: &str, rank: Option<i64>) -> String {
    let paths_json = serde_json::to_string(&split_paths(paths)).unwrap_or_default();
    let rank_arg = rank.map(|r| format!(", \"rank\": {r}")).unwrap_or_default();
    format!(
        "Find where the time goes in the profiled run at {paths}, and what would win the \
most, with the neuronprof tools. Take every number from the tools' answers (they are \
neuronprof's own analyses, the same as its CLI's --json) and say which tool and field it \
comes from. Go in this order:

1. Insights. Call `analyze` with {{\"paths\": {paths_json}, \"sections\": [\"insights\"]{rank_arg}}}. \
The findings come most important first (`score`); note the first three: `kind`, `summary`, \
`ranks`.

2. Step breakdown. Call `analyze` with {{\"paths\": {paths_json}, \"sections\": [\"steps\", \
\"utilization\"]}}. Each `steps` row is one ProfilerStep of one rank: `dur_us` splits into \
`computation_us` (device working), `communication_us` (collective transfer), `peer_wait_us` \
(a collective waiting for a late rank), `memory_us`, `host_bound_idle_us` and \
`other_idle_us`; `bound` says whether the host or the device set the pace. Name the \
slowest rank and what dominates its steps.

3. Critical path. Call `critical_path` with {{\"paths\": {paths_json}}} (one step across every \
rank; `instance` picks another step). Read `length_us`, the time by `bound_by` in \
`summary`, and which ranks and events hold most of `path` (it is long: group it by \
`rank` and `name`).

4. Roofline. Call `analyze` with {{\"paths\": {paths_json}, \"sections\": [\"roofline\"]{rank_arg}}}. \
In `per_rank[].roofline.ops` each operator and shape has `win_us`, the kernel time that \
reaching its roofline would save; take the five largest: `name`, `params`, `count`, \
`kernel_time_us`, `roofline_pct`, `bound` (compute or memory). Operators in `uncovered` \
have no cost model: say so rather than guess.

5. What-if. For each fix the steps above point to, call `what_if` once with scales that \
stand for it: 'kernel:REGEX=0.5' for a top roofline kernel (its name in `kernels`), \
'rank:R=0.5' for a slow rank's device, 'collective=0.5' for collective transfers, \
'host=0.5' for host-bound steps. Compare `predicted_step_us` with `step_us` (and each \
rank's `change_percent`).

End with the opportunities ranked by predicted step time saved: what to change, the \
prediction, and the evidence from steps 1 to 4."
    )
}

/// The paths of the prompt's `paths` argument: one path, or several separated by
/// commas or new lines.
fn split_paths(paths: &str) -> Vec<&str> {
    paths
        .split([',', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}
