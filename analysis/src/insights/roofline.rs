//! Far from the roofline: a large share of a rank's kernel time is in operators that
//! run well below what the device allows for their FLOPs and bytes
//! ([`crate::analyses::roofline`]). The finding names the share, the time reaching the
//! roofline would win, and the op with the most to win.

use super::{Finding, FindingKind};
use crate::report::Report;

/// An op row counts as far from its roofline below this percent of it.
pub const FAR_PCT: f64 = 50.0;

/// The share of a rank's kernel time in far rows from which it is a finding.
pub const FAR_SHARE: f64 = 0.25;

/// One finding per rank whose far rows hold at least [`FAR_SHARE`] of its kernel time.
pub(crate) fn far_from_roofline(report: &Report) -> Vec<Finding> {
    let mut out = Vec::new();
    for rank in &report.per_rank {
        let Some(table) = &rank.roofline else {
            continue;
        };
        let Some(device) = &table.device else {
            continue;
        };
        if table.kernel_time_us <= 0.0 {
            continue;
        }
        let far: Vec<_> = table
            .ops
            .iter()
            .filter(|op| op.roofline_pct.is_some_and(|p| p < FAR_PCT))
            .collect();
        // Nested calls' kernels are their parent's too: count each kernel once.
        let far_us: f64 = far.iter().map(|op| op.unnested_kernel_time_us).sum();
        let share = far_us / table.kernel_time_us;
        if share < FAR_SHARE {
            continue;
        }
        let win_us: f64 = table.ops.iter().map(|op| op.win_us).sum();
        let top = table.ops.first().map_or(String::new(), |op| {
            format!(
                "; most to win: {} ({}) {:.2} ms at {:.0}% of its roofline, {}-bound",
                op.name,
                op.params,
                op.kernel_time_us / 1e3,
                op.roofline_pct.unwrap_or(0.0),
                op.bound
                    .map_or("?".to_owned(), |b| format!("{b:?}").to_lowercase()),
            )
        });
        out.push(Finding::new(
            (win_us / table.kernel_time_us).clamp(0.0, 1.0),
            FindingKind::FarFromRoofline,
            Some(table.rank),
            format!(
                "rank {}: {:.0}% of kernel time ({:.2} of {:.2} ms) is in ops below {FAR_PCT:.0}% \
                 of their {device} roofline; reaching it would win up to {:.2} ms{top}",
                table.rank,
                share * 100.0,
                far_us / 1e3,
                table.kernel_time_us / 1e3,
                win_us / 1e3,
            ),
            share,
            FAR_SHARE,
            "fraction",
            None,
            format!("far from the {device} roofline: share of kernel time"),
        ));
    }
    out
}
