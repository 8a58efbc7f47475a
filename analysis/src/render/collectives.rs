//! The collective report's text: per process group and operation, then per rank.

use std::fmt::Write as _;

use super::{num, opt, section, Table};
use crate::analyses::collectives::{AllToAll, Collectives};

/// "Collectives by group", the per-rank table and the bottleneck line (nothing when the
/// window has no matched collective).
pub(super) fn render_collectives(out: &mut String, c: &Collectives) {
    if c.instances.is_empty() {
        return;
    }
    {
        // The bandwidth columns are NCCL's: algbw = bytes / transfer, busbw = algbw × the
        // operation's factor; "nominal" is the link's one-direction figure.
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
            "nodes",
            "link (nominal GB/s)",
            "p50 of nominal %",
        ]);
        for g in &c.groups {
            t.row(vec![
                // gloo's collectives name no group.
                if g.process_group.is_empty() {
                    "(unnamed)".to_owned()
                } else {
                    g.process_group.clone()
                },
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
                match (g.link.nodes, g.link.inter_node) {
                    (Some(n), Some(true)) => format!("{n} (spans nodes)"),
                    (Some(n), _) => n.to_string(),
                    (None, _) => "?".to_owned(),
                },
                match g.link.peak_bus_gbps {
                    Some(peak) => format!("{} ({})", g.link.link, num(peak)),
                    None => g.link.link.clone(),
                },
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
    for a in &c.all_to_all {
        render_all_to_all(out, a);
    }
}

/// Ranks up to which the all-to-all matrix is printed (the JSON and the export have it
/// whole).
const MATRIX_RANKS: usize = 16;

/// One group's all-to-all: the rank × rank matrix of MB sent, each rank's totals, the
/// imbalance.
fn render_all_to_all(out: &mut String, a: &AllToAll) {
    let mb = |b: i64| format!("{:.2}", b as f64 / 1e6);
    let group = if a.process_group.is_empty() {
        "(unnamed)"
    } else {
        &a.process_group
    };
    let title = format!(
        "All-to-all, group {group} {} ({} instances{}{}): MB sent, row to column",
        a.collective,
        a.instances,
        if a.recorded_splits {
            ""
        } else {
            "; no split sizes recorded: even splits"
        },
        if a.unplaced_instances > 0 {
            format!(
                "; {} left out: ranks or dtype unknown",
                a.unplaced_instances
            )
        } else {
            String::new()
        },
    );
    if a.ranks.len() <= MATRIX_RANKS {
        let mut header = vec!["from \\ to".to_owned()];
        header.extend(a.ranks.iter().map(|r| r.to_string()));
        header.push("sent".to_owned());
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&header);
        for (i, row) in a.bytes.iter().enumerate() {
            let mut cells = vec![a.ranks[i].to_string()];
            cells.extend(row.iter().map(|&b| mb(b)));
            cells.push(mb(a.send_bytes[i]));
            t.row(cells);
        }
        let mut cells = vec!["received".to_owned()];
        cells.extend(a.recv_bytes.iter().map(|&b| mb(b)));
        cells.push(String::new());
        t.row(cells);
        section(out, &title, &t);
    } else {
        let _ = writeln!(out, "\n{title}: {} ranks (matrix in --json)", a.ranks.len());
    }
    let _ = writeln!(
        out,
        "all-to-all imbalance (largest / mean): sent {}, received {}",
        a.send_imbalance
            .map_or("-".to_owned(), |v| format!("{v:.2}")),
        a.recv_imbalance
            .map_or("-".to_owned(), |v| format!("{v:.2}")),
    );
}
