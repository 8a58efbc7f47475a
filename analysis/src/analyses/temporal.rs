//! Temporal breakdown: idle, compute and non-compute time per rank.
//!
//! HTA `BreakdownAnalysis.get_temporal_breakdown` (`hta-analyses.md`, "Temporal
//! breakdown"): M = merge(device rows); `kernel_time = M.last.end − M.first.start`;
//! `idle = kernel_time − Σ merged`; `compute = Σ merge(computation rows)`;
//! `non_compute = kernel_time − compute − idle`; percentages `round(100·x/kernel_time, 2)`.

use serde::Serialize;

use super::{covered, merge_intervals};
use crate::classify::KernelType;
use crate::error::AnalysisError;
use crate::frame::{Frame, Frames};
use crate::stats::np_round;

/// One rank's temporal breakdown. JSON: an object with these fields, times in µs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TemporalRank {
    /// The rank.
    pub rank: i64,
    /// Time with no device row running, between the first start and the last end.
    pub idle_time_us: f64,
    /// Time covered by computation rows.
    pub compute_time_us: f64,
    /// Time covered by device rows but by no computation row.
    pub non_compute_time_us: f64,
    /// From the first device row's start to the last one's end.
    pub kernel_time_us: f64,
    /// `round(100 · idle / kernel_time, 2)`.
    pub idle_time_pctg: f64,
    /// `round(100 · compute / kernel_time, 2)`.
    pub compute_time_pctg: f64,
    /// `round(100 · non_compute / kernel_time, 2)`.
    pub non_compute_time_pctg: f64,
}

/// The temporal breakdown of every rank. JSON: `{"ranks": [TemporalRank, …]}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TemporalBreakdown {
    /// One entry per rank, by rank.
    pub ranks: Vec<TemporalRank>,
}

/// Computes the temporal breakdown; fails for a rank without device rows.
pub fn temporal_breakdown(frames: &Frames<'_>) -> Result<TemporalBreakdown, AnalysisError> {
    temporal_breakdown_from(frames.ranks.iter().map(temporal_rank))
}

/// [`temporal_breakdown`] from each rank's [`temporal_rank`], in rank order: the first
/// rank's error, if any (HTA raises on a rank without device rows).
pub(crate) fn temporal_breakdown_from(
    ranks: impl IntoIterator<Item = Result<TemporalRank, AnalysisError>>,
) -> Result<TemporalBreakdown, AnalysisError> {
    Ok(TemporalBreakdown {
        ranks: ranks.into_iter().collect::<Result<_, _>>()?,
    })
}

/// One rank's row of the temporal breakdown.
pub(crate) fn temporal_rank(frame: &Frame<'_>) -> Result<TemporalRank, AnalysisError> {
    let all = merge_intervals(frame.device_rows());
    let (Some(first), Some(last)) = (all.first(), all.last()) else {
        return Err(AnalysisError::NotApplicable {
            analysis: "temporal_breakdown",
            reason: format!("rank {} has no device rows", frame.rank()),
        });
    };
    let kernel_time = last.1 - first.0;
    let idle = kernel_time - covered(&all);
    let compute = covered(&merge_intervals(
        frame
            .device_rows()
            .filter(|r| r.kernel_type == KernelType::Computation),
    ));
    let non_compute = kernel_time - compute - idle;
    let pctg = |x: i64| np_round(100.0 * (x as f64 / kernel_time as f64), 2);
    Ok(TemporalRank {
        rank: frame.rank(),
        idle_time_us: frame.us(idle),
        compute_time_us: frame.us(compute),
        non_compute_time_us: frame.us(non_compute),
        kernel_time_us: frame.us(kernel_time),
        idle_time_pctg: pctg(idle),
        compute_time_pctg: pctg(compute),
        non_compute_time_pctg: pctg(non_compute),
    })
}
