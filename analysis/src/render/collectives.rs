//! The collective report's text: per process group and operation, then per rank.

use std::fmt::Write as _;

use super::{num, opt, section, Table};
use crate::analyses::collectives::Collectives;

/// "Collectives by group", the per-rank table and the bottleneck line (nothing when the
/// window has no matched collective).
pub(super) fn render_collectives(out: &mut String, c: &Collectives) {
    if c.instances.is_empty() {
        return;
    }
    {
        let mut t = Table::new(&[
            "group",
            "op",
            "ranks",
            "count",
            "MB",
            "transfer us",
            "wait us",
            "skew mean/max us",
            "busbw GB/s min/p50/p90/max",
            "p50 of peak",
        ]);
        for g in &c.groups {
            t.row(vec![
                g.process_group.clone(),
                g.collective.clone(),
                crate::insights::rank_list(&g.ranks),
                g.instances.to_string(),
                format!("{:.2}", g.bytes as f64 / 1e6),
                num(g.transfer_us),
                num(g.wait_us),
                format!("{}/{}", num(g.mean_start_skew_us), num(g.max_start_skew_us)),
                g.bus_bandwidth_gbps.map_or_else(
                    || "-".to_owned(),
                    |b| format!("{:.1}/{:.1}/{:.1}/{:.1}", b[0], b[1], b[2], b[3]),
                ),
                opt(g.median_fraction_of_peak.map(|f| 100.0 * f)),
            ]);
        }
        section(out, "Collectives by group", &t);
        let mut t = Table::new(&[
            "rank",
            "collectives",
            "dur us",
            "wait us",
            "transfer us",
            "arrived last",
            "arrived first",
            "cost others us",
        ]);
        for r in &c.per_rank {
            t.row(vec![
                r.rank.to_string(),
                r.instances.to_string(),
                num(r.dur_us),
                num(r.wait_us),
                num(r.transfer_us),
                r.times_waited_for.to_string(),
                r.times_arrived_first.to_string(),
                num(r.others_waited_us),
            ]);
        }
        section(out, "Collectives", &t);
        if let Some(rank) = c.bottleneck_rank {
            let _ = writeln!(
                out,
                "Collective bottleneck: rank {rank} (others waited longest for it)"
            );
        }
    }
}
