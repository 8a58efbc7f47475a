//! Potential stragglers across ranks.
//!
//! HTA `StragglerAnalysis.get_potential_stragglers` with
//! `find_stragglers_with_late_start_comm_kernels` (`hta-analyses.md`, "Stragglers"):
//! among communication kernels of the profiled iterations lasting ≥ 1% of the mean
//! iteration time, take the last per (rank, stream, iteration, name); pick the
//! (stream, name) whose normalized duration varies most across ranks; per iteration mark
//! the ranks whose normalized start is among the `num_candidates` latest; report the ranks
//! marked most often.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::classify::{KernelType, Mode};
use crate::error::AnalysisError;
use crate::frame::{step_number, Frame, Frames};
use crate::stats::Describe;

/// The straggler verdict. JSON: `{"stream", "kernel", "times_marked": {rank: n},
/// "stragglers": [rank…]}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stragglers {
    /// The stream of the kernel used as the metric.
    pub stream: i64,
    /// The kernel name used as the metric.
    pub kernel: String,
    /// How often each rank was among the latest starters.
    pub times_marked: BTreeMap<i64, u64>,
    /// The potential stragglers, most often marked first.
    pub stragglers: Vec<i64>,
}

struct Candidate {
    rank: i64,
    stream: i64,
    iteration: i64,
    name: String,
    start_us: f64,
    dur_us: f64,
}

fn not_applicable(reason: impl Into<String>) -> AnalysisError {
    AnalysisError::NotApplicable {
        analysis: "potential_stragglers",
        reason: reason.into(),
    }
}

/// What [`potential_stragglers`] needs of one rank, made from that rank's frame alone
/// (so that many ranks can be analyzed a few at a time, `crate::analyze_paths`): its
/// `ProfilerStep` numbers, the time span of each iteration, and its communication
/// kernels, the last per (stream, iteration, name) — in compat mode every one that could
/// still be the last after the 1% floor, which needs every rank to be known.
#[derive(Debug)]
pub(crate) struct StragglerPart {
    rank: i64,
    mode: Mode,
    /// `ProfilerStep` numbers among the rank's rows (HTA's lenient pattern).
    steps: BTreeSet<i64>,
    /// Per iteration (≥ 0): the earliest start and latest end of its rows, µs.
    spans: BTreeMap<i64, (f64, f64)>,
    /// Per (stream, iteration, name), in row order: communication kernels of an
    /// iteration > 0, each longer than every later one (a shorter earlier kernel can
    /// never be the last one to pass the floor). In the default mode only the last.
    candidates: BTreeMap<(i64, i64, String), Vec<(f64, f64)>>,
}

/// [`StragglerPart`] of one rank.
pub(crate) fn straggler_part(frame: &Frame<'_>) -> StragglerPart {
    let mut part = StragglerPart {
        rank: frame.rank(),
        mode: frame.mode,
        steps: BTreeSet::new(),
        spans: BTreeMap::new(),
        candidates: BTreeMap::new(),
    };
    for r in &frame.rows {
        if let Some(step) = step_number(frame.name(r), true) {
            part.steps.insert(step);
        }
        if r.iteration < 0 {
            continue;
        }
        let (start, end) = (frame.us(r.start_ticks), frame.us(r.end_ticks));
        let span = part.spans.entry(r.iteration).or_insert((start, end));
        span.0 = span.0.min(start);
        span.1 = span.1.max(end);
        let model = frame.model_row(r);
        // HTA compat: `ncclKernel*` on a stream > 0. Default: any device row that is a
        // collective (args) or of communication type, any stream (neuron's collectives
        // are `ncclDevKernel_*` or named by the op).
        let is_communication = match frame.mode {
            Mode::HtaCompat => model.stream > 0 && frame.name(r).starts_with("ncclKernel"),
            Mode::Default => {
                r.is_device
                    && model.stream >= 0
                    && (model.is_collective() || r.kernel_type == KernelType::Communication)
            }
        };
        if !is_communication || r.iteration <= 0 {
            continue;
        }
        let kept = part
            .candidates
            .entry((model.stream, r.iteration, frame.name(r).to_owned()))
            .or_default();
        let dur = frame.us(r.dur_ticks());
        match frame.mode {
            Mode::Default => kept.clear(),
            Mode::HtaCompat => {
                while kept.last().is_some_and(|&(_, d)| d <= dur) {
                    kept.pop();
                }
            }
        }
        kept.push((start, dur));
    }
    part
}

/// Finds potential stragglers (HTA default `num_candidates` = 2).
pub fn potential_stragglers(
    frames: &Frames<'_>,
    num_candidates: usize,
) -> Result<Stragglers, AnalysisError> {
    potential_stragglers_from(
        frames.ranks.iter().map(straggler_part).collect(),
        num_candidates,
    )
}

/// [`potential_stragglers`] from each rank's [`StragglerPart`], in rank order.
pub(crate) fn potential_stragglers_from(
    parts: Vec<StragglerPart>,
    num_candidates: usize,
) -> Result<Stragglers, AnalysisError> {
    let k = num_candidates.max(1);
    // The profiled iterations: those with a `ProfilerStep#N` row in any rank.
    let steps: BTreeSet<i64> = parts.iter().flat_map(|p| p.steps.iter().copied()).collect();
    if steps.is_empty() {
        return Err(not_applicable("no ProfilerStep in the traces"));
    }
    // Rows of the profiled iterations: their span over every rank.
    let spans: Vec<(i64, (f64, f64))> = parts
        .iter()
        .flat_map(|p| p.spans.iter().map(|(&i, &s)| (i, s)))
        .filter(|(i, _)| steps.contains(i))
        .collect();
    let iterations: BTreeSet<i64> = spans.iter().map(|(i, _)| *i).collect();
    let Some(t_min) = spans.iter().map(|(_, s)| s.0).min_by(f64::total_cmp) else {
        return Err(not_applicable("no event in the profiled iterations"));
    };
    let t_max = spans.iter().map(|(_, s)| s.1).fold(f64::MIN, f64::max);
    let mean_iter_us = (t_max - t_min) / iterations.len() as f64;
    let min_dur_us = mean_iter_us * 0.01;
    let default_mode = parts.first().is_some_and(|p| p.mode == Mode::Default);
    // The last communication kernel per (rank, stream, iteration, name) of the profiled
    // iterations (iteration > 0, as HTA's filter `iteration > 0`). In compat mode only
    // kernels lasting at least 1% of the mean iteration time (HTA's `min_dur_us`); the
    // default mode applies that floor per collective below, not per rank's copy, so a
    // rank's short (punctual) copy of a collective others waited for still counts.
    let mut last: BTreeMap<(i64, i64, i64, String), Candidate> = BTreeMap::new();
    for part in parts {
        for ((stream, iteration, name), kept) in part.candidates {
            if !steps.contains(&iteration) {
                continue;
            }
            let chosen = kept
                .iter()
                .rev()
                .find(|&&(_, dur)| default_mode || dur >= min_dur_us);
            if let Some(&(start_us, dur_us)) = chosen {
                last.insert(
                    (part.rank, stream, iteration, name.clone()),
                    Candidate {
                        rank: part.rank,
                        stream,
                        iteration,
                        name,
                        start_us,
                        dur_us,
                    },
                );
            }
        }
    }
    if default_mode {
        let mut longest: BTreeMap<(i64, i64, String), f64> = BTreeMap::new();
        for c in last.values() {
            let slot = longest
                .entry((c.stream, c.iteration, c.name.clone()))
                .or_insert(0.0);
            *slot = slot.max(c.dur_us);
        }
        last.retain(|_, c| longest[&(c.stream, c.iteration, c.name.clone())] >= min_dur_us);
    }
    // std across ranks per (stream, iteration, name), then mean per (stream, name).
    let mut per_iteration: BTreeMap<(i64, i64, &str), Vec<f64>> = BTreeMap::new();
    for c in last.values() {
        per_iteration
            .entry((c.stream, c.iteration, &c.name))
            .or_default()
            .push(c.dur_us / mean_iter_us);
    }
    let mut per_kernel: BTreeMap<(i64, &str), Vec<f64>> = BTreeMap::new();
    for ((stream, _, name), durations) in &per_iteration {
        if let Some(std) = Describe::of(durations).std {
            per_kernel.entry((*stream, name)).or_default().push(std);
        }
    }
    let mut best: Option<((i64, &str), f64)> = None;
    for (key, stds) in &per_kernel {
        let mean = stds.iter().sum::<f64>() / stds.len() as f64;
        if best.is_none_or(|(_, m)| mean > m) {
            best = Some((*key, mean));
        }
    }
    let Some(((stream, kernel), _)) = best else {
        return Err(not_applicable(
            "no communication kernel spread over two or more ranks (HTA raises here)",
        ));
    };
    let metric: Vec<(i64, i64, f64)> = last
        .values()
        .filter(|c| c.stream == stream && c.name == kernel)
        .map(|c| (c.rank, c.iteration, (c.start_us - t_min) / mean_iter_us))
        .collect();
    let metric_iterations: BTreeSet<i64> = metric.iter().map(|m| m.1).collect();
    let mut times_marked: BTreeMap<i64, u64> = BTreeMap::new();
    let groups: Vec<Vec<&(i64, i64, f64)>> = if metric_iterations.len() > 1 {
        metric_iterations
            .iter()
            .filter(|&&i| i >= 0)
            .map(|&i| metric.iter().filter(|m| m.1 == i).collect())
            .collect()
    } else {
        vec![metric.iter().collect()]
    };
    for m in &metric {
        times_marked.entry(m.0).or_insert(0);
    }
    for group in groups {
        let mut values: Vec<f64> = group.iter().map(|m| m.2).collect();
        values.sort_by(|a, b| b.total_cmp(a));
        let Some(&threshold) = values.get(k - 1) else {
            return Err(not_applicable(format!(
                "fewer than {k} ranks ran the metric kernel"
            )));
        };
        for m in group {
            if m.2 >= threshold {
                *times_marked.entry(m.0).or_default() += 1;
            }
        }
    }
    let mut ranked: Vec<(i64, u64)> = times_marked.iter().map(|(&r, &n)| (r, n)).collect();
    ranked.sort_by_key(|r| std::cmp::Reverse(r.1));
    if default_mode {
        // Ties (every rank marked as often, as when all but one start together) go to
        // the rank that started the metric kernel latest on average.
        let mean_start = |rank: i64| {
            let starts: Vec<f64> = metric.iter().filter(|m| m.0 == rank).map(|m| m.2).collect();
            starts.iter().sum::<f64>() / starts.len().max(1) as f64
        };
        ranked.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then_with(|| mean_start(b.0).total_cmp(&mean_start(a.0)))
        });
    }
    Ok(Stragglers {
        stream,
        kernel: kernel.to_owned(),
        stragglers: ranked.into_iter().take(k).map(|(r, _)| r).collect(),
        times_marked,
    })
}
