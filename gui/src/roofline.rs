//! The roofline of a selected operator: its row of the rank's roofline table (the one
//! `neuronprof analyze` prints, [`analysis::analyses::roofline`]) and this call's own
//! kernel time.
//!
//! - **The table** is the analyses' ([`crate::load::Analyses::report`]'s per-rank
//!   `roofline`), computed once per rank by the loader thread; selecting a slice only
//!   looks a row up, once per selection ([`SelectedRoofline`] is kept until the
//!   selection changes).
//! - **The row** of a call is the one with its name and the same `Input Dims`,
//!   `Input type`, `Input Strides` and `Concrete Inputs` text (a missing argument is
//!   empty, as the table keys it). An operator the model does not cover shows the
//!   table's reason ([`analysis::analyses::roofline::UncoveredOp::reason`]); no number
//!   is made up.
//! - **This call's kernel time** is the union of the intervals of the device work
//!   (kernels, copies, memsets) that flows from a launch on the call's thread inside its
//!   span, as the table counts a call (every kernel of its subtree, the union, not the
//!   sum). A trace without launch flows gives none; the panel then says the rates are
//!   the row's mean.

use analysis::analyses::roofline::{RankRoofline, RooflineOp, UncoveredOp};
use analysis::classify::is_device_work_category;

use crate::load::Analyses;
use crate::model::{SliceRef, Timeline};

/// The device work one operator call launched (through the launches on its thread
/// inside its span).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallKernels {
    /// Device slices (kernels, copies, memsets).
    pub kernels: usize,
    /// The union of their intervals, ns.
    pub time_ns: i64,
}

/// Where the selected operator stands in its rank's roofline table.
#[derive(Clone, Debug, PartialEq)]
pub enum OpRoofline {
    /// The row with its name and arguments: index in [`RankRoofline::ops`].
    Row(usize),
    /// Its name is among the ops the model does not cover: index in
    /// [`RankRoofline::uncovered`].
    Uncovered(usize),
    /// No row and not uncovered: the call launched nothing, or its kernels are counted
    /// under the operators it calls (a wrapper such as `aten::linear`).
    NoRow,
    /// The rank has no roofline table, and why.
    NoTable(String),
}

/// The roofline of one selected operator call.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectedRoofline {
    /// The call.
    pub slice: SliceRef,
    /// The rank of its file in the analyses (`None`: the analyses did not read it).
    pub rank: Option<i64>,
    /// Its row, or why there is none.
    pub found: OpRoofline,
    /// The device work it launched.
    pub call: CallKernels,
}

/// Whether a slice's category is a host operator (what the roofline table has rows for).
pub fn is_host_operator(category: &str) -> bool {
    matches!(category, "cpu_op" | "Operator")
}

/// The argument `key` of a slice, empty when absent (as the roofline table keys it).
fn arg<'t>(args: &[(&'t str, &'t str)], key: &str) -> &'t str {
    args.iter().find(|(k, _)| *k == key).map_or("", |(_, v)| *v)
}

/// The device work launched from inside `slice`: every flow that starts on its track
/// within its span and ends on a device slice (kernel, copy, memset), each target once.
pub fn call_kernels(timeline: &Timeline, slice: SliceRef) -> CallKernels {
    let (start, end) = timeline.span(slice);
    let Some(track) = timeline.tracks.get(slice.track as usize) else {
        return CallKernels::default();
    };
    let first = track.flow_points.partition_point(|(t, _)| *t < start);
    let mut targets: Vec<SliceRef> = track.flow_points[first..]
        .iter()
        .take_while(|(t, _)| *t <= end)
        .filter_map(|&(t, flow)| {
            let f = timeline.flows.get(flow as usize)?;
            if f.from != (slice.track, t) {
                return None;
            }
            let target = timeline.innermost_at(f.to.0, f.to.1)?;
            let row = timeline.row(target);
            let category = timeline.names.get(row.category[target.index as usize]);
            is_device_work_category(category).then_some(target)
        })
        .collect();
    targets.sort_unstable_by_key(|s| (s.track, s.depth, s.index));
    targets.dedup();
    let mut spans: Vec<(i64, i64)> = targets.iter().map(|s| timeline.span(*s)).collect();
    spans.sort_unstable();
    let (mut time_ns, mut covered_to) = (0i64, i64::MIN);
    for (s, e) in spans {
        if e <= covered_to {
            continue;
        }
        time_ns += e - s.max(covered_to);
        covered_to = e;
    }
    CallKernels {
        kernels: targets.len(),
        time_ns,
    }
}

/// The rank the analyses gave the file of `slice`, if they read it.
fn rank_of(timeline: &Timeline, analyses: &Analyses, slice: SliceRef) -> Option<i64> {
    let track = timeline.tracks.get(slice.track as usize)?;
    let file = timeline.groups.get(track.group as usize)?.file;
    let path = &timeline.files.get(file as usize)?.path;
    analyses
        .set
        .ranks
        .iter()
        .find(|t| &t.path == path)
        .map(|t| t.rank)
}

/// The roofline table of `rank`, or why there is none.
pub fn rank_table(analyses: &Analyses, rank: i64) -> Result<&RankRoofline, String> {
    let report = analyses.report.per_rank.iter().find(|r| r.rank == rank);
    match report.and_then(|r| r.roofline.as_ref()) {
        Some(table) => Ok(table),
        None => {
            let why = analyses
                .report
                .errors
                .iter()
                .find(|e| e.contains("roofline") && e.contains(&format!("rank {rank}:")));
            Err(match why {
                Some(e) => e.clone(),
                None => format!("the analyses made no roofline table for rank {rank}"),
            })
        }
    }
}

/// The roofline of the host operator `slice`; `None` when it is not one.
pub fn selected_roofline(
    timeline: &Timeline,
    analyses: &Analyses,
    slice: SliceRef,
) -> Option<SelectedRoofline> {
    let track = timeline.tracks.get(slice.track as usize)?;
    let row = track.rows().get(slice.depth as usize)?;
    let i = slice.index as usize;
    if !is_host_operator(timeline.names.get(*row.category.get(i)?)) {
        return None;
    }
    let call = call_kernels(timeline, slice);
    let rank = rank_of(timeline, analyses, slice);
    let found = match rank.map(|r| rank_table(analyses, r)) {
        None => OpRoofline::NoTable("the analyses did not read this file".to_owned()),
        Some(Err(why)) => OpRoofline::NoTable(why),
        Some(Ok(table)) => {
            let name = timeline.slice_name(slice);
            let args = track.slice_args(row.args_at[i]);
            let key = [
                arg(&args, "Input Dims"),
                arg(&args, "Input type"),
                arg(&args, "Input Strides"),
                arg(&args, "Concrete Inputs"),
            ];
            let same = |op: &&RooflineOp| {
                op.name == name
                    && [
                        op.input_dims.as_str(),
                        op.input_types.as_str(),
                        op.input_strides.as_str(),
                        op.concrete_inputs.as_str(),
                    ] == key
            };
            let uncovered = |u: &&UncoveredOp| u.name == name;
            if let Some(at) = table.ops.iter().position(|op| same(&op)) {
                OpRoofline::Row(at)
            } else if let Some(at) = table.uncovered.iter().position(|u| uncovered(&u)) {
                OpRoofline::Uncovered(at)
            } else {
                OpRoofline::NoRow
            }
        }
    };
    Some(SelectedRoofline {
        slice,
        rank,
        found,
        call,
    })
}

/// Achieved TFLOP/s of one call of `op` that took `time_ns` of kernel time (as the
/// table computes each call's: FLOPs / time / 10¹²).
pub fn call_tflops_per_sec(op: &RooflineOp, time_ns: i64) -> f64 {
    op.gflops * 1e9 / (time_ns as f64 * 1e-9) / 1e12
}

/// Achieved TB/s (10¹² bytes) of one call of `op` that took `time_ns` of kernel time.
pub fn call_tb_per_sec(op: &RooflineOp, time_ns: i64) -> f64 {
    op.data_moved_bytes / (time_ns as f64 * 1e-9) / 1e12
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cpu_operators_get_a_roofline() {
        assert!(is_host_operator("cpu_op"));
        assert!(is_host_operator("Operator"));
        assert!(!is_host_operator("kernel"));
        assert!(!is_host_operator("cuda_runtime"));
        assert!(!is_host_operator("user_annotation"));
    }

    #[test]
    fn a_missing_argument_is_empty() {
        let args = [("Input Dims", "[[2, 3]]"), ("Input type", "[\"float\"]")];
        assert_eq!(arg(&args, "Input Dims"), "[[2, 3]]");
        assert_eq!(arg(&args, "Concrete Inputs"), "");
    }
}
