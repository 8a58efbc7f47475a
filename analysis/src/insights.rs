//! Insights: a ranked list of findings, each with its number, the threshold that
//! triggered it and the time range it is about.

mod device_bound;

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
    /// One line for people.
    pub summary: String,
    /// The measured value.
    pub value: f64,
    /// The threshold it crossed.
    pub threshold: f64,
    /// The unit of `value` and `threshold` (`"%"`, `"fraction"`).
    pub unit: &'static str,
    /// The time range concerned, µs since the rank's first event, when narrower than the
    /// whole trace.
    pub time_range_us: Option<(f64, f64)>,
}

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
            out.push(Finding {
                score: r.idle_time_pctg / 100.0,
                kind: FindingKind::DeviceIdle,
                rank: Some(r.rank),
                summary: format!(
                    "rank {}: device idle {:.1}% of {:.0} us",
                    r.rank, r.idle_time_pctg, r.kernel_time_us
                ),
                value: r.idle_time_pctg,
                threshold: t.device_idle_pct,
                unit: "%",
                time_range_us: None,
            });
        }
        for (r, o) in temporal.ranks.iter().zip(&report.comm_comp_overlap.ranks) {
            let share = if r.kernel_time_us > 0.0 {
                o.comm_time_us / r.kernel_time_us
            } else {
                0.0
            };
            match o.comp_comm_overlap_pctg {
                Some(pct) if share >= t.communication_share && pct < t.overlap_pct => {
                    out.push(Finding {
                        score: share * (1.0 - pct / 100.0),
                        kind: FindingKind::CommunicationNotOverlapped,
                        rank: Some(r.rank),
                        summary: format!(
                        "rank {}: only {pct:.1}% of {:.0} us of communication overlaps computation",
                        r.rank, o.comm_time_us
                    ),
                        value: pct,
                        threshold: t.overlap_pct,
                        unit: "%",
                        time_range_us: None,
                    })
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
            out.push(Finding {
                score: fraction,
                kind: FindingKind::HostBoundStep,
                rank: Some(s.rank),
                summary: format!(
                    "rank {} step {}: device waited {:.0} us ({:.0}%) for the host to launch",
                    s.rank,
                    s.step,
                    s.host_bound_idle_us,
                    fraction * 100.0
                ),
                value: fraction,
                threshold: t.host_bound_step_fraction,
                unit: "fraction",
                time_range_us: Some((s.start_us, s.start_us + s.dur_us)),
            });
        }
    }
    out.extend(device_bound::device_bound_steps(report, t));
    let c = &report.collectives;
    let total: f64 = c.per_rank.iter().map(|r| r.wait_us + r.transfer_us).sum();
    if let Some(rank) = c.bottleneck_rank {
        let waited = c
            .per_rank
            .iter()
            .find(|r| r.rank == rank)
            .map_or(0.0, |r| r.others_waited_us);
        let fraction = if total > 0.0 { waited / total } else { 0.0 };
        if fraction >= t.bottleneck_wait_fraction {
            out.push(Finding {
                score: fraction,
                kind: FindingKind::CollectiveBottleneck,
                rank: Some(rank),
                summary: format!(
                    "rank {rank} arrived last: others waited {waited:.0} us for it ({:.0}% of collective time)",
                    fraction * 100.0
                ),
                value: fraction,
                threshold: t.bottleneck_wait_fraction,
                unit: "fraction",
                time_range_us: None,
            });
        }
    }
    for rank in &report.per_rank {
        for d in &rank.memory.devices {
            let Some(capacity) = d.capacity_bytes.filter(|&c| c > 0) else {
                continue;
            };
            let fraction = d.peak_reserved_bytes as f64 / capacity as f64;
            if fraction >= t.memory_capacity_fraction {
                out.push(Finding {
                    score: fraction.min(1.0),
                    kind: FindingKind::MemoryNearCapacity,
                    rank: Some(rank.rank),
                    summary: format!(
                        "rank {} {}: reserved memory peaked at {:.0}% of capacity",
                        rank.rank,
                        d.device,
                        fraction * 100.0
                    ),
                    value: fraction,
                    threshold: t.memory_capacity_fraction,
                    unit: "fraction",
                    time_range_us: Some((d.peak_reserved_at_us, d.peak_reserved_at_us)),
                });
            }
        }
        let stats = &rank.launch_stats;
        if stats.launch_delay.count > 0 {
            let fraction = stats.launch_delay_outliers as f64 / stats.launch_delay.count as f64;
            if fraction >= t.launch_delay_fraction {
                out.push(Finding {
                    score: fraction,
                    kind: FindingKind::LaunchDelays,
                    rank: Some(rank.rank),
                    summary: format!(
                        "rank {}: {} of {} launches started on the device more than 100 us late",
                        rank.rank, stats.launch_delay_outliers, stats.launch_delay.count
                    ),
                    value: fraction,
                    threshold: t.launch_delay_fraction,
                    unit: "fraction",
                    time_range_us: None,
                });
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
                out.push(Finding {
                    score: fraction * 0.5,
                    kind: FindingKind::SmallTransfers,
                    rank: Some(rank.rank),
                    summary: format!(
                        "rank {} {}: {} of {} transfers under 64 KiB",
                        rank.rank, k.kind, k.small_count, k.with_bytes
                    ),
                    value: fraction,
                    threshold: t.small_transfer_fraction,
                    unit: "fraction",
                    time_range_us: None,
                });
            }
        }
    }
    for d in &report.utilization {
        let range = Some((d.window_start_us, d.window_start_us + d.window_us));
        if let Some(mfu) = d.mfu_pct.filter(|&m| d.model_flops > 0 && m < t.mfu_pct) {
            out.push(Finding {
                score: 0.5 * (1.0 - mfu / t.mfu_pct),
                kind: FindingKind::LowMfu,
                rank: Some(d.rank),
                summary: format!(
                    "rank {} device {}: MFU {} of {} TFLOPS {} (HFU {}), device busy {:.1}%",
                    d.rank,
                    d.device,
                    pct_text(Some(mfu)),
                    d.peak_tflops.unwrap_or(0.0),
                    d.peak_dtype.as_deref().unwrap_or(""),
                    pct_text(d.hfu_pct),
                    d.device_busy_pct
                ),
                value: mfu,
                threshold: t.mfu_pct,
                unit: "%",
                time_range_us: range,
            });
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
            out.push(Finding {
                score: 0.5 * time_share,
                kind: FindingKind::SmallDmas,
                rank: Some(d.rank),
                summary: format!(
                    "rank {} device {}: {} of {} DMA transfers under {} KiB ({:.0}% of DMA time), each paying ~1.3 us of fixed cost",
                    d.rank,
                    d.device,
                    dma.small_transfers,
                    dma.transfers,
                    dma.small_limit_bytes >> 10,
                    time_share * 100.0
                ),
                value: fraction,
                threshold: t.small_dma_fraction,
                unit: "fraction",
                time_range_us: range,
            });
        }
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    out
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
