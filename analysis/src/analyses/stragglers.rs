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
use crate::frame::{step_number, Frames};
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

/// Finds potential stragglers (HTA default `num_candidates` = 2).
pub fn potential_stragglers(
    frames: &Frames<'_>,
    num_candidates: usize,
) -> Result<Stragglers, AnalysisError> {
    let k = num_candidates.max(1);
    let steps: BTreeSet<i64> = frames
        .ranks
        .iter()
        .flat_map(|f| {
            f.rows
                .iter()
                .filter_map(move |r| step_number(f.name(r), true))
        })
        .collect();
    if steps.is_empty() {
        return Err(not_applicable("no ProfilerStep in the traces"));
    }
    let rows: Vec<_> = frames
        .ranks
        .iter()
        .flat_map(|f| f.rows.iter().map(move |r| (f, r)))
        .filter(|(_, r)| steps.contains(&r.iteration))
        .collect();
    let iterations: BTreeSet<i64> = rows.iter().map(|(_, r)| r.iteration).collect();
    let Some(t_min) = rows
        .iter()
        .map(|(f, r)| f.us(r.start_ticks))
        .min_by(f64::total_cmp)
    else {
        return Err(not_applicable("no event in the profiled iterations"));
    };
    let t_max = rows
        .iter()
        .map(|(f, r)| f.us(r.end_ticks))
        .fold(f64::MIN, f64::max);
    let mean_iter_us = (t_max - t_min) / iterations.len() as f64;
    let min_dur_us = mean_iter_us * 0.01;
    // Last long communication row per (rank, stream, iteration, name), in row order.
    let mut last: BTreeMap<(i64, i64, i64, String), Candidate> = BTreeMap::new();
    for (f, r) in &rows {
        let model = f.model_row(r);
        let name = f.name(r);
        let is_communication = match f.mode {
            Mode::HtaCompat => model.stream > 0 && name.starts_with("ncclKernel"),
            Mode::Default => {
                r.is_device
                    && model.stream >= 0
                    && (model.is_collective() || r.kernel_type == KernelType::Communication)
            }
        };
        // HTA drops short copies rank by rank; but the rank everyone waits for has the
        // shortest copy of each collective (it arrives last and waits for no one), so
        // the default mode keeps every copy here and drops short collectives below,
        // by their longest copy over the ranks.
        let long_enough = f.mode == Mode::Default || f.us(r.dur_ticks()) >= min_dur_us;
        if is_communication && r.iteration > 0 && long_enough {
            let key = (f.rank(), model.stream, r.iteration, name.to_owned());
            last.insert(
                key,
                Candidate {
                    rank: f.rank(),
                    stream: model.stream,
                    iteration: r.iteration,
                    name: name.to_owned(),
                    start_us: f.us(r.start_ticks),
                    dur_us: f.us(r.dur_ticks()),
                },
            );
        }
    }
    if frames
        .ranks
        .first()
        .is_some_and(|f| f.mode == Mode::Default)
    {
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
    if frames
        .ranks
        .first()
        .is_some_and(|f| f.mode == Mode::Default)
    {
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
