//! Communication–computation overlap per rank.
//!
//! HTA `CommunicationAnalysis.get_comm_comp_overlap` (`hta-analyses.md`): merge
//! communication and computation rows separately; overlap = time covered by both;
//! percentage = `round(100 · overlap / Σ merged communication, 2)`, `NaN` (here `None`)
//! without communication.

use serde::Serialize;

use super::merge_intervals;
use crate::classify::KernelType;
use crate::frame::{Frame, Frames};
use crate::stats::np_round;

/// One rank's overlap. JSON: `{"rank", "comm_time_us", "overlap_time_us",
/// "comp_comm_overlap_pctg"}` (the last `null` without communication).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverlapRank {
    /// The rank.
    pub rank: i64,
    /// Time covered by communication rows.
    pub comm_time_us: f64,
    /// Time covered by both communication and computation rows.
    pub overlap_time_us: f64,
    /// `round(100 · overlap / comm, 2)`; `None` without communication.
    pub comp_comm_overlap_pctg: Option<f64>,
}

/// Every rank's overlap. JSON: `{"ranks": [OverlapRank, …]}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommCompOverlap {
    /// One entry per rank.
    pub ranks: Vec<OverlapRank>,
}

/// Computes the overlap of every rank.
pub fn comm_comp_overlap(frames: &Frames<'_>) -> CommCompOverlap {
    CommCompOverlap {
        ranks: frames.ranks.iter().map(overlap_rank).collect(),
    }
}

/// The overlap of one rank.
pub(crate) fn overlap_rank(frame: &Frame<'_>) -> OverlapRank {
    let of_type =
        |t: KernelType| merge_intervals(frame.device_rows().filter(|r| r.kernel_type == t));
    let comm = of_type(KernelType::Communication);
    let comp = of_type(KernelType::Computation);
    // Sweep: +1/-1 for communication, +2/-2 for computation; 3 means both.
    let mut points: Vec<(i64, i32)> = Vec::with_capacity(2 * (comm.len() + comp.len()));
    for &(s, e) in &comm {
        points.extend([(s, 1), (e, -1)]);
    }
    for &(s, e) in &comp {
        points.extend([(s, 2), (e, -2)]);
    }
    points.sort_by_key(|p| p.0);
    let mut running = 0;
    let mut overlap = 0i64;
    for (i, &(time, delta)) in points.iter().enumerate() {
        running += delta;
        if running == 3 {
            if let Some(next) = points.get(i + 1) {
                overlap += next.0 - time;
            }
        }
    }
    let comm_time: i64 = comm.iter().map(|(s, e)| e - s).sum();
    OverlapRank {
        rank: frame.rank(),
        comm_time_us: frame.us(comm_time),
        overlap_time_us: frame.us(overlap),
        comp_comm_overlap_pctg: (comm_time != 0)
            .then(|| np_round(100.0 * (overlap as f64 / comm_time as f64), 2)),
    }
}
