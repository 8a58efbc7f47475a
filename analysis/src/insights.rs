//! Insights: a ranked list of findings, each with its number, the threshold that
//! triggered it and the time range it is about.
//!
//! The same finding on several ranks (or steps) is one line: the ranks, how many
//! findings it stands for, and the median, smallest and largest value ("ranks [0, 1, 2,
//! 3]: MFU median 1.4% (min 1.3%, max 1.6%)"), so a 64-rank run does not print 64 lines
//! that say one thing. A launch delay is a finding only where the device sat idle
//! waiting for the work ([`crate::analyses::launch_stats::LaunchStats`]'s
//! `idle_launch_delay_outliers`): work that starts late behind other queued work on a
//! busy device is the healthy, device-bound case.

pub mod collectives;
mod compile;
mod device_bound;
pub mod roofline;

use serde::Serialize;

use crate::report::Report;

/// What a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// The device sat idle for much of the profiled time.
    DeviceIdle,
    /// A step where the device mostly waited for the host to launch work.
    HostBoundStep,
    /// A step where the device was busy for most of it (the host kept it fed).
    DeviceBoundStep,
    /// Communication that computation did not hide.
    CommunicationNotOverlapped,
    /// One rank kept the others waiting in collectives.
    CollectiveBottleneck,
    /// A group's collectives move their bytes well below the link's nominal bandwidth,
    /// and transfer (not waiting) is where their time goes.
    SlowCollectives,
    /// Reserved memory close to the device's capacity.
    MemoryNearCapacity,
    /// Many launches whose device work started long after the launch call.
    LaunchDelays,
    /// Most copies of a kind are small, so per-transfer setup dominates.
    SmallTransfers,
    /// Model flops utilization below the threshold.
    LowMfu,
    /// Most DMA transfers are small, so their fixed cost dominates.
    SmallDmas,
    /// `torch.compile` broke graphs (Dynamo's count, with reasons).
    GraphBreaks,
    /// `torch.compile` compiled a frame again because a guard failed.
    Recompiles,
    /// Ops the neuron graph compiler does not know ran eagerly inside compiled graphs.
    EagerFallbacks,
    /// Much of the kernel time is in ops far below the device's roofline.
    FarFromRoofline,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// Ranking key in 0..=1 (the share of time or capacity concerned), largest first.
    pub score: f64,
    /// What it is about.
    pub kind: FindingKind,
    /// The rank, when it is about one.
    pub rank: Option<i64>,
    /// Every rank concerned (one for a single finding), sorted.
    pub ranks: Vec<i64>,
    /// How many findings this line stands for (1, or the ranks and steps merged).
    pub count: usize,
    /// One line for people.
    pub summary: String,
    /// The measured value (the median over the merged findings).
    pub value: f64,
    /// The smallest value over the merged findings.
    pub value_min: f64,
    /// The largest value over the merged findings.
    pub value_max: f64,
    /// The threshold it crossed.
    pub threshold: f64,
    /// The unit of `value` and `threshold` (`"%"`, `"fraction"`).
    pub unit: &'static str,
    /// The time range concerned, µs since the rank's first event, when narrower than the
    /// whole trace (and the finding is about one rank and step).
    pub time_range_us: Option<(f64, f64)>,
    /// What is measured, as the merged line names it ("MFU of 667 TFLOPS bf16"); equal
    /// metrics of one kind merge.
    #[serde(skip)]
    metric: String,
    /// The step, when the finding is about one.
    #[serde(skip)]
    step: Option<i64>,
    /// Every (rank, step) a step finding stands for, with the window (µs) it was measured
    /// over: what [`disagreements`] compares.
    #[serde(skip)]
    rank_steps: Vec<RankStep>,
    /// Further numbers a merged line also gives the median of (name, value in %).
    #[serde(skip)]
    also: Vec<(&'static str, f64)>,
}

impl Finding {
    /// A finding about one rank (`rank: None` when about none).
    #[allow(clippy::too_many_arguments)]
    fn new(
        score: f64,
        kind: FindingKind,
        rank: Option<i64>,
        summary: String,
        value: f64,
        threshold: f64,
        unit: &'static str,
        time_range_us: Option<(f64, f64)>,
        metric: String,
    ) -> Self {
        Finding {
            score,
            kind,
            rank,
            ranks: rank.into_iter().collect(),
            count: 1,
            summary,
            value,
            value_min: value,
            value_max: value,
            threshold,
            unit,
            time_range_us,
            metric,
            step: None,
            rank_steps: Vec::new(),
            also: Vec::new(),
        }
    }

    fn with_step(mut self, step: i64) -> Self {
        self.step = Some(step);
        self.rank_steps = self
            .rank
            .map(|rank| (rank, step, self.time_range_us))
            .into_iter()
            .collect();
        self
    }

    fn with_also(mut self, name: &'static str, pct: f64) -> Self {
        self.also.push((name, pct));
        self
    }
}

/// (rank, step, the window in µs it was measured over).
type RankStep = (i64, i64, Option<(f64, f64)>);

/// Thresholds that turn numbers into findings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Thresholds {
    /// Device idle % of the profiled span (50).
    pub device_idle_pct: f64,
    /// Host-bound idle share of a step (0.3).
    pub host_bound_step_fraction: f64,
    /// Device busy share of a device-bound step (0.9).
    pub device_bound_busy_fraction: f64,
    /// Communication share of device time above which overlap matters (0.1).
    pub communication_share: f64,
    /// Overlap % below which communication is "not overlapped" (50).
    pub overlap_pct: f64,
    /// Share of collective time the others spent waiting for one rank (0.1).
    pub bottleneck_wait_fraction: f64,
    /// Median bus bandwidth / the link's nominal figure below which a group's transfers
    /// are slow (0.5).
    pub slow_link_fraction: f64,
    /// Peak reserved / capacity (0.9).
    pub memory_capacity_fraction: f64,
    /// Share of launches with a delay over the cutoff (0.1).
    pub launch_delay_fraction: f64,
    /// Share of a kind's transfers that are small (0.5), counted from
    /// `small_transfer_min_count` (100) transfers on.
    pub small_transfer_fraction: f64,
    /// See `small_transfer_fraction`.
    pub small_transfer_min_count: u64,
    /// MFU % below which a device is reported (30).
    pub mfu_pct: f64,
    /// Share of a device's DMA transfers under the small-DMA limit (0.5), counted from
    /// `small_transfer_min_count` transfers on.
    pub small_dma_fraction: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            device_idle_pct: 50.0,
            host_bound_step_fraction: 0.3,
            device_bound_busy_fraction: 0.9,
            communication_share: 0.1,
            overlap_pct: 50.0,
            bottleneck_wait_fraction: 0.1,
            slow_link_fraction: 0.5,
            memory_capacity_fraction: 0.9,
            launch_delay_fraction: 0.1,
            small_transfer_fraction: 0.5,
            small_transfer_min_count: 100,
            mfu_pct: 30.0,
            small_dma_fraction: 0.5,
        }
    }
}

/// Derives the findings of a report, most important first.
pub fn insights(report: &Report, t: &Thresholds) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(temporal) = &report.temporal_breakdown {
        for r in temporal
            .ranks
            .iter()
            .filter(|r| r.idle_time_pctg >= t.device_idle_pct)
        {
            out.push(Finding::new(
                r.idle_time_pctg / 100.0,
                FindingKind::DeviceIdle,
                Some(r.rank),
                format!(
                    "rank {}: device idle {:.1}% of {:.0} us",
                    r.rank, r.idle_time_pctg, r.kernel_time_us
                ),
                r.idle_time_pctg,
                t.device_idle_pct,
                "%",
                None,
                "device idle, % of the profiled span".to_owned(),
            ));
        }
        for (r, o) in temporal.ranks.iter().zip(&report.comm_comp_overlap.ranks) {
            let share = if r.kernel_time_us > 0.0 {
                o.comm_time_us / r.kernel_time_us
            } else {
                0.0
            };
            match o.comp_comm_overlap_pctg {
                Some(pct) if share >= t.communication_share && pct < t.overlap_pct => {
                    out.push(Finding::new(
                        share * (1.0 - pct / 100.0),
                        FindingKind::CommunicationNotOverlapped,
                        Some(r.rank),
                        format!(
                        "rank {}: only {pct:.1}% of {:.0} us of communication overlaps computation",
                        r.rank, o.comm_time_us
                    ),
                        pct,
                        t.overlap_pct,
                        "%",
                        None,
                        "communication overlapping computation".to_owned(),
                    ))
                }
                _ => {}
            }
        }
    }
    for s in &report.steps {
        let fraction = if s.dur_us > 0.0 {
            s.host_bound_idle_us / s.dur_us
        } else {
            0.0
        };
        if fraction >= t.host_bound_step_fraction {
            out.push(
                Finding::new(
                    fraction,
                    FindingKind::HostBoundStep,
                    Some(s.rank),
                    format!(
                        "rank {} step {} ({} of {:.0} us): device waited {:.0} us ({:.0}%) \
                         for the host to launch",
                        s.rank,
                        s.step,
                        s.window.label(),
                        s.dur_us,
                        s.host_bound_idle_us,
                        fraction * 100.0
                    ),
                    fraction,
                    t.host_bound_step_fraction,
                    "fraction",
                    Some((s.start_us, s.start_us + s.dur_us)),
                    "device waiting for the host to launch, share of the step".to_owned(),
                )
                .with_step(s.step),
            );
        }
    }
    out.extend(device_bound::device_bound_steps(report, t));
    out.extend(collectives::late_rank(report, t));
    out.extend(collectives::slow_collectives(report, t));
    for rank in &report.per_rank {
        for d in &rank.memory.devices {
            let Some(capacity) = d.capacity_bytes.filter(|&c| c > 0) else {
                continue;
            };
            let fraction = d.peak_reserved_bytes as f64 / capacity as f64;
            if fraction >= t.memory_capacity_fraction {
                out.push(Finding::new(
                    fraction.min(1.0),
                    FindingKind::MemoryNearCapacity,
                    Some(rank.rank),
                    format!(
                        "rank {} {}: reserved memory peaked at {:.0}% of capacity",
                        rank.rank,
                        d.device,
                        fraction * 100.0
                    ),
                    fraction,
                    t.memory_capacity_fraction,
                    "fraction",
                    Some((d.peak_reserved_at_us, d.peak_reserved_at_us)),
                    format!(
                        "reserved memory at its peak, share of {} capacity",
                        d.device
                    ),
                ));
            }
        }
        let stats = &rank.launch_stats;
        if stats.launch_delay.count > 0 {
            // Only where the device idled: late behind queued work is device-bound.
            let fraction =
                stats.idle_launch_delay_outliers as f64 / stats.launch_delay.count as f64;
            if fraction >= t.launch_delay_fraction {
                out.push(Finding::new(
                    fraction,
                    FindingKind::LaunchDelays,
                    Some(rank.rank),
                    format!(
                        "rank {}: the device sat idle more than 100 us waiting for {} of {} \
                         launches ({} started > 100 us late in all)",
                        rank.rank,
                        stats.idle_launch_delay_outliers,
                        stats.launch_delay.count,
                        stats.launch_delay_outliers
                    ),
                    fraction,
                    t.launch_delay_fraction,
                    "fraction",
                    None,
                    "launches the device sat idle waiting for (> 100 us)".to_owned(),
                ));
            }
        }
    }
    for rank in &report.per_rank {
        for k in &rank.transfers {
            if k.with_bytes < t.small_transfer_min_count {
                continue;
            }
            let fraction = k.small_count as f64 / k.with_bytes as f64;
            if fraction >= t.small_transfer_fraction {
                out.push(Finding::new(
                    fraction * 0.5,
                    FindingKind::SmallTransfers,
                    Some(rank.rank),
                    format!(
                        "rank {} {}: {} of {} transfers under 64 KiB",
                        rank.rank, k.kind, k.small_count, k.with_bytes
                    ),
                    fraction,
                    t.small_transfer_fraction,
                    "fraction",
                    None,
                    format!("{} transfers under 64 KiB", k.kind),
                ));
            }
        }
    }
    for d in &report.utilization {
        let range = Some((d.window_start_us, d.window_start_us + d.window_us));
        if let Some(mfu) = d.mfu_pct.filter(|&m| d.model_flops > 0 && m < t.mfu_pct) {
            out.push(
                Finding::new(
                    0.5 * (1.0 - mfu / t.mfu_pct),
                    FindingKind::LowMfu,
                    Some(d.rank),
                    format!(
                        "rank {} device {}: MFU {} of {} TFLOPS {} (HFU {}), {}",
                        d.rank,
                        d.device,
                        pct_text(Some(mfu)),
                        d.peak_tflops.unwrap_or(0.0),
                        d.peak_dtype.as_deref().unwrap_or(""),
                        pct_text(d.hfu_pct),
                        busy_text(d)
                    ),
                    mfu,
                    t.mfu_pct,
                    "%",
                    range,
                    format!(
                        "MFU of {} TFLOPS {}",
                        d.peak_tflops.unwrap_or(0.0),
                        d.peak_dtype.as_deref().unwrap_or("")
                    ),
                )
                .with_also("device busy", d.device_busy_pct)
                .with_also("of it only waiting for peers", d.peer_wait_pct),
            );
        }
        let Some(dma) = &d.dma else { continue };
        if dma.transfers < t.small_transfer_min_count {
            continue;
        }
        let fraction = dma.small_transfers as f64 / dma.transfers as f64;
        if fraction >= t.small_dma_fraction {
            let time_share = if dma.transfer_time_us > 0.0 {
                dma.small_time_us / dma.transfer_time_us
            } else {
                0.0
            };
            out.push(Finding::new(
                0.5 * time_share,
                FindingKind::SmallDmas,
                Some(d.rank),
                format!(
                    "rank {} device {}: {} of {} DMA transfers under {} KiB ({:.0}% of DMA time), each paying ~1.3 us of fixed cost",
                    d.rank,
                    d.device,
                    dma.small_transfers,
                    dma.transfers,
                    dma.small_limit_bytes >> 10,
                    time_share * 100.0
                ),
                fraction,
                t.small_dma_fraction,
                "fraction",
                range,
                format!("DMA transfers under {} KiB", dma.small_limit_bytes >> 10),
            )
            .with_also("share of DMA time", time_share * 100.0));
        }
    }
    if !report.device_activity {
        // A CPU-only run: nothing about a device it does not have.
        out.retain(|f| f.kind == FindingKind::MemoryNearCapacity);
    }
    out.extend(compile::compile_findings(report));
    out.extend(roofline::far_from_roofline(report));
    let mut out = merge_alike(out);
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    out
}

/// Pairs of findings that contradict each other, each as one line naming both (empty
/// for a report that agrees with itself). Two findings disagree when they are about the
/// same rank and step and
/// - one says the device mostly waited for the host and the other that it was
///   device-bound, or
/// - they measured that step over different windows (a step's host and device windows
///   differ, and each finding about a step must say which it uses: one).
///
/// Findings of one line merged from several (ranks, steps) are compared by each.
pub fn disagreements(findings: &[Finding]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, f) in findings.iter().enumerate() {
        for g in &findings[i + 1..] {
            for &(rank, step, f_window) in &f.rank_steps {
                for &(_, _, g_window) in g
                    .rank_steps
                    .iter()
                    .filter(|(r, s, _)| (*r, *s) == (rank, step))
                {
                    let opposite = matches!(
                        (f.kind, g.kind),
                        (FindingKind::HostBoundStep, FindingKind::DeviceBoundStep)
                            | (FindingKind::DeviceBoundStep, FindingKind::HostBoundStep)
                    );
                    if opposite {
                        out.push(format!(
                            "rank {rank} step {step}: host-bound and device-bound: \"{}\" vs \"{}\"",
                            f.summary, g.summary
                        ));
                    } else if f_window != g_window {
                        out.push(format!(
                            "rank {rank} step {step}: measured over {f_window:?} and {g_window:?} us: \
                             \"{}\" vs \"{}\"",
                            f.summary, g.summary
                        ));
                    }
                }
            }
        }
    }
    out
}

/// Merges findings of one kind and metric (on several ranks, or several steps) into one
/// line each: ranks, count, median, min and max; the score is the largest.
fn merge_alike(findings: Vec<Finding>) -> Vec<Finding> {
    let mut groups: Vec<Vec<Finding>> = Vec::new();
    for f in findings {
        match groups
            .iter_mut()
            .find(|g| g[0].kind == f.kind && g[0].metric == f.metric)
        {
            Some(group) => group.push(f),
            None => groups.push(vec![f]),
        }
    }
    groups
        .into_iter()
        .map(|group| {
            if group.len() == 1 {
                return group.into_iter().next().expect("one finding");
            }
            let mut values: Vec<f64> = group.iter().map(|f| f.value).collect();
            values.sort_by(f64::total_cmp);
            let median = crate::stats::quantile_sorted(&values, 0.5);
            let (min, max) = (values[0], values[values.len() - 1]);
            let mut ranks: Vec<i64> = group.iter().flat_map(|f| f.rank).collect();
            ranks.sort_unstable();
            ranks.dedup();
            let mut steps: Vec<i64> = group.iter().flat_map(|f| f.step).collect();
            steps.sort_unstable();
            steps.dedup();
            let first = &group[0];
            let shown = |v: f64| match first.unit {
                "fraction" => pct_text(Some(v * 100.0)),
                "%" => pct_text(Some(v)),
                unit => format!("{v} {unit}"),
            };
            let who = match ranks.as_slice() {
                [rank] => format!("rank {rank}"),
                ranks => format!("ranks {}", rank_list(ranks)),
            };
            let steps_text = if steps.is_empty() {
                String::new()
            } else {
                format!(", {} steps ({})", group.len(), rank_list(&steps))
            };
            let mut summary = format!(
                "{who}{steps_text}: {}: median {} (min {}, max {})",
                first.metric,
                shown(median),
                shown(min),
                shown(max)
            );
            for (k, &(name, _)) in first.also.iter().enumerate() {
                let mut also: Vec<f64> = group
                    .iter()
                    .filter_map(|f| f.also.get(k).map(|a| a.1))
                    .collect();
                also.sort_by(f64::total_cmp);
                let median = crate::stats::quantile_sorted(&also, 0.5);
                summary.push_str(&format!("; {name} median {}", pct_text(Some(median))));
            }
            Finding {
                score: group.iter().map(|f| f.score).fold(f64::MIN, f64::max),
                kind: first.kind,
                rank: (ranks.len() == 1).then(|| ranks[0]),
                ranks,
                count: group.len(),
                summary,
                value: median,
                value_min: min,
                value_max: max,
                threshold: first.threshold,
                unit: first.unit,
                time_range_us: None,
                metric: first.metric.clone(),
                step: None,
                rank_steps: group.iter().flat_map(|f| f.rank_steps.clone()).collect(),
                also: Vec::new(),
            }
        })
        .collect()
}

/// How busy a device was, the part of that it ran nothing but collectives waiting for
/// a late peer apart (a collective kernel runs while it waits, but the time is the
/// late rank's).
fn busy_text(d: &crate::analyses::utilization::DeviceUtilization) -> String {
    if d.peer_wait_pct > 0.0 {
        format!(
            "device busy {:.1}% of the window, {} of it running only collectives that \
             waited for a late peer",
            d.device_busy_pct,
            pct_text(Some(d.peer_wait_pct))
        )
    } else {
        format!("device busy {:.1}%", d.device_busy_pct)
    }
}

/// `[0-3, 5, 7-9]`: sorted numbers with runs collapsed.
pub(crate) fn rank_list(sorted: &[i64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if j > i + 1 {
            format!("{}-{}", sorted[i], sorted[j])
        } else if j == i + 1 {
            format!("{}, {}", sorted[i], sorted[j])
        } else {
            sorted[i].to_string()
        });
        i = j + 1;
    }
    format!("[{}]", parts.join(", "))
}

/// A percentage with enough digits to be non-zero when it is (`0.0042%`).
pub(crate) fn pct_text(value: Option<f64>) -> String {
    match value {
        None => "-".to_owned(),
        Some(v) if v == 0.0 || v.abs() >= 1.0 => format!("{v:.1}%"),
        Some(v) => {
            let digits = (-v.abs().log10()).ceil() as usize + 1;
            format!("{v:.digits$}%")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step_finding(kind: FindingKind, rank: i64, step: i64, window: (f64, f64)) -> Finding {
        Finding::new(
            0.5,
            kind,
            Some(rank),
            format!("{kind:?} rank {rank} step {step}"),
            0.5,
            0.3,
            "fraction",
            Some(window),
            format!("{kind:?}"),
        )
        .with_step(step)
    }

    #[test]
    fn findings_that_contradict_on_one_step_are_caught_even_when_merged() {
        use FindingKind::{DeviceBoundStep, HostBoundStep};
        let device = (10.0, 20.0);
        let host = (0.0, 30.0);
        assert!(disagreements(&[
            step_finding(HostBoundStep, 0, 6, device),
            step_finding(DeviceBoundStep, 0, 7, device),
            step_finding(DeviceBoundStep, 1, 6, device),
        ])
        .is_empty());
        let both = disagreements(&[
            step_finding(HostBoundStep, 0, 6, device),
            step_finding(DeviceBoundStep, 0, 6, device),
        ]);
        assert_eq!(both.len(), 1, "{both:?}");
        assert!(both[0].contains("host-bound and device-bound"), "{both:?}");
        // Two host-bound findings over different windows of one step, merged into one
        // line with another step's: still caught.
        let merged = merge_alike(vec![
            step_finding(HostBoundStep, 0, 6, host),
            step_finding(HostBoundStep, 0, 5, host),
        ]);
        let windows =
            disagreements(&[merged[0].clone(), step_finding(HostBoundStep, 0, 6, device)]);
        assert_eq!(windows.len(), 1, "{windows:?}");
        assert!(windows[0].contains("measured over"), "{windows:?}");
    }
}
