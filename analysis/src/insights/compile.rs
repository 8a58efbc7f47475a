//! Findings about `torch.compile` ([`crate::analyses::compile`]): graph breaks,
//! recompiles and eager fallbacks inside compiled graphs.
//!
//! None of them is a share of time, so each has a fixed score that ranks it below any
//! finding about a quarter of the time or more (graph breaks 0.25, recompiles 0.2,
//! eager fallbacks 0.15): they say why a compiled program is slower than it could be,
//! while the time findings say where the time went. The value is a count and the
//! threshold 1 (any).

use super::{Finding, FindingKind};
use crate::analyses::compile::RankCompile;
use crate::report::Report;

/// Reasons shown in a finding's line, most frequent first.
const REASONS_SHOWN: usize = 2;
/// A reason's first line is cut to this many characters in a finding.
const REASON_CHARS: usize = 100;

/// The first line of a reason, cut to [`REASON_CHARS`].
fn short(reason: &str) -> String {
    let line = reason.lines().next().unwrap_or("").trim();
    match line.char_indices().nth(REASON_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(super) fn compile_findings(report: &Report) -> Vec<Finding> {
    let mut out = Vec::new();
    for rank in &report.compile {
        out.extend(graph_breaks(rank));
        out.extend(recompiles(rank));
        out.extend(eager_fallbacks(rank));
    }
    out
}

fn graph_breaks(rank: &RankCompile) -> Option<Finding> {
    let counts = rank.counts.as_ref()?;
    let total = counts.graph_break_count();
    if total == 0 {
        return None;
    }
    let reasons: Vec<String> = counts
        .graph_breaks
        .iter()
        .take(REASONS_SHOWN)
        .map(|b| format!("\"{}\" x{}", short(&b.reason), b.count))
        .collect();
    let more = counts.graph_breaks.len().saturating_sub(REASONS_SHOWN);
    let more = if more > 0 {
        format!(" and {} more", plural(more as u64, "reason", "reasons"))
    } else {
        String::new()
    };
    Some(Finding::new(
        0.25,
        FindingKind::GraphBreaks,
        Some(rank.rank),
        format!(
            "rank {}: torch.compile broke graphs {} since the process started ({}{more}); \
             each break ends a graph, so the code on either side runs as separate graphs \
             (more launches, no fusion across the break)",
            rank.rank,
            plural(total, "time", "times"),
            reasons.join(", ")
        ),
        total as f64,
        1.0,
        "graph breaks",
        None,
        "torch.compile graph breaks".to_owned(),
    ))
}

fn recompiles(rank: &RankCompile) -> Option<Finding> {
    if let Some(counts) = rank.counts.as_ref().filter(|c| c.recompiles > 0) {
        let first = counts.recompile_reasons.first();
        let example = first.map_or(String::new(), |r| {
            format!(
                " (first: {} of `{}`: {})",
                r.compile_id,
                r.function,
                short(&r.reason)
            )
        });
        return Some(Finding::new(
            0.2,
            FindingKind::Recompiles,
            Some(rank.rank),
            format!(
                "rank {}: torch.compile compiled frames again {} since the process \
                 started{example}: a guard failed, so Dynamo traced and compiled the frame \
                 anew",
                rank.rank,
                plural(counts.recompiles, "time", "times"),
            ),
            counts.recompiles as f64,
            1.0,
            "recompiles",
            None,
            "torch.compile recompiles".to_owned(),
        ));
    }
    // Without the extension's counts (a CUDA trace, say): the window ran a frame's
    // later compile, so that frame was compiled again before or during it.
    let again = rank.recompiled_regions();
    if again.is_empty() {
        return None;
    }
    let ids: Vec<&str> = again.iter().map(|r| r.compile_id.as_str()).collect();
    Some(Finding::new(
        0.2,
        FindingKind::Recompiles,
        Some(rank.rank),
        format!(
            "rank {}: the window ran recompiled code (Torch-Compiled Region {}): a guard \
             failed and Dynamo compiled the frame again",
            rank.rank,
            ids.join(", ")
        ),
        again.len() as f64,
        1.0,
        "recompiled regions",
        None,
        "torch.compile recompiled regions run".to_owned(),
    ))
}

fn eager_fallbacks(rank: &RankCompile) -> Option<Finding> {
    let counts = rank.counts.as_ref()?;
    let total: u64 = counts.eager_fallback_ops.values().sum();
    if total == 0 {
        return None;
    }
    let ops: Vec<String> = counts
        .eager_fallback_ops
        .iter()
        .map(|(op, n)| format!("{op} x{n}"))
        .collect();
    Some(Finding::new(
        0.15,
        FindingKind::EagerFallbacks,
        Some(rank.rank),
        format!(
            "rank {}: {} in compiled graphs ran as eager kernels ({}): the neuron graph \
             compiler has no lowering for them, so each splits its graph around an eager \
             launch",
            rank.rank,
            plural(total, "node", "nodes"),
            ops.join(", ")
        ),
        total as f64,
        1.0,
        "nodes",
        None,
        "eager fallbacks in compiled graphs".to_owned(),
    ))
}
