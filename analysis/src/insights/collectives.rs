//! Collectives: "rank R is late" and "communication is slow" are different causes with
//! different fixes, so each is said only when the numbers point at it
//! ([`crate::analyses::collectives`]: transfer = an instance's shortest duration, wait =
//! the rest).
//!
//! - **A late rank** ([`late_rank`]): the rank the others waited for longest, when their
//!   wait for it is at least `bottleneck_wait_fraction` of all collective time and, in
//!   the instances it arrived last, the others' wait exceeds the transfer (waiting, not
//!   moving bytes, is what those collectives spent their time on).
//! - **Slow collectives** ([`slow_collectives`]): a process group and operation whose
//!   median bus bandwidth is below `slow_link_fraction` of the nominal bus bandwidth of
//!   the link it crosses, whose messages average at least 1 MB (below that, a
//!   collective's time is its hops' latency and no link reaches its bandwidth), whose
//!   transfer is at least its wait, and whose transfer is at least `communication_share`
//!   of all collective time. Without a nominal figure (a group spanning nodes of GPUs,
//!   say) nothing is claimed: `--peak-bus-gbps` names one.

use super::{Finding, FindingKind, Thresholds};
use crate::report::Report;

/// Messages below this (bytes, 10⁶) are latency-bound: no bandwidth verdict.
pub const BANDWIDTH_BOUND_BYTES: f64 = 1e6;

/// The rank that kept the others waiting, when waiting dominates its collectives.
pub(crate) fn late_rank(report: &Report, t: &Thresholds) -> Option<Finding> {
    let c = &report.collectives;
    let rank = c.bottleneck_rank?;
    let total: f64 = c.per_rank.iter().map(|r| r.wait_us + r.transfer_us).sum();
    let waited = c
        .per_rank
        .iter()
        .find(|r| r.rank == rank)
        .map_or(0.0, |r| r.others_waited_us);
    let fraction = if total > 0.0 { waited / total } else { 0.0 };
    // Everyone's transfer in the instances this rank alone arrived last.
    let transfer: f64 = c
        .instances
        .iter()
        .filter(|i| i.arrived_last == Some(rank))
        .map(|i| i.transfer_us * i.ranks.len() as f64)
        .sum();
    if fraction < t.bottleneck_wait_fraction || waited <= transfer {
        return None;
    }
    Some(Finding::new(
        fraction,
        FindingKind::CollectiveBottleneck,
        Some(rank),
        format!(
            "rank {rank} arrived last: others waited {waited:.0} us for it ({:.0}% of collective time; \
             {transfer:.0} us of transfer in those collectives)",
            fraction * 100.0
        ),
        fraction,
        t.bottleneck_wait_fraction,
        "fraction",
        None,
        "arrived last in collectives".to_owned(),
    ))
}

/// One finding per group whose transfers are slow against their link.
pub(crate) fn slow_collectives(report: &Report, t: &Thresholds) -> Vec<Finding> {
    let c = &report.collectives;
    let total: f64 = c.groups.iter().map(|g| g.transfer_us + g.wait_us).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for g in &c.groups {
        let (Some(fraction), Some(peak), Some(busbw)) = (
            g.median_fraction_of_peak,
            g.link.peak_bus_gbps,
            g.bus_bandwidth_gbps,
        ) else {
            continue;
        };
        let mean_bytes = g.bytes as f64 / g.instances.max(1) as f64;
        let share = g.transfer_us / total;
        if fraction >= t.slow_link_fraction
            || mean_bytes < BANDWIDTH_BOUND_BYTES
            || g.transfer_us < g.wait_us
            || share < t.communication_share
        {
            continue;
        }
        out.push(Finding::new(
            (share * (1.0 - fraction)).clamp(0.0, 1.0),
            FindingKind::SlowCollectives,
            None,
            format!(
                "group {} {}: transfers at {:.0}% of {}'s {:.0} GB/s (busbw p50 {:.1} GB/s over {} \
                 collectives of {:.2} MB on average); {:.0} us of transfer against {:.0} us of waiting",
                g.process_group,
                g.collective,
                fraction * 100.0,
                g.link.link,
                peak,
                busbw[1],
                g.instances,
                mean_bytes / 1e6,
                g.transfer_us,
                g.wait_us,
            ),
            fraction,
            t.slow_link_fraction,
            "fraction",
            None,
            // One line per group: alike findings merge by metric.
            format!(
                "group {} {}: median bus bandwidth / the link's nominal",
                g.process_group, g.collective
            ),
        ));
    }
    out
}
