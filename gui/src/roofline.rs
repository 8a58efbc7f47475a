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

    /// A timeline of `events` (a trace's `traceEvents` array text).
    fn timeline_of(name: &str, events: &str) -> Timeline {
        let dir = std::env::temp_dir().join(format!("gui-roofline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, format!(r#"{{"traceEvents": {events}}}"#)).unwrap();
        let progress = crate::load::Progress::for_files(std::slice::from_ref(&path));
        let timeline = crate::load::load_timeline(std::slice::from_ref(&path), &progress).unwrap();
        let _ = std::fs::remove_file(&path);
        timeline
    }

    fn slice_named(timeline: &Timeline, name: &str) -> SliceRef {
        let id = timeline.names.lookup(name).unwrap();
        for (t, track) in timeline.tracks.iter().enumerate() {
            for (depth, row) in track.rows().iter().enumerate() {
                if let Some(i) = row.name.iter().position(|&n| n == id) {
                    return SliceRef {
                        track: t as u32,
                        depth: depth as u16,
                        index: i as u32,
                    };
                }
            }
        }
        panic!("no slice {name}");
    }

    #[test]
    fn a_call_counts_the_union_of_the_device_work_launched_inside_it() {
        // aten::mm [0, 100] launches two kernels that overlap ([30, 60] and [50, 80]:
        // 50 us of union, not 60) and a memset; a launch after it and a fwdbwd flow to
        // another operator do not count.
        let timeline = timeline_of(
            "union",
            r#"[
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 1, "tid": 1, "ts": 40, "dur": 5},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 150, "dur": 5},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm_backward", "pid": 1, "tid": 2, "ts": 300, "dur": 50},
            {"ph": "X", "cat": "kernel", "name": "gemm_a", "pid": 0, "tid": 7, "ts": 30, "dur": 30},
            {"ph": "X", "cat": "kernel", "name": "gemm_b", "pid": 0, "tid": 8, "ts": 50, "dur": 30},
            {"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "tid": 7, "ts": 90, "dur": 2},
            {"ph": "X", "cat": "kernel", "name": "later", "pid": 0, "tid": 7, "ts": 160, "dur": 10},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 1, "tid": 1, "ts": 10},
            {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": 30, "bp": "e"},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 2, "pid": 1, "tid": 1, "ts": 20},
            {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 2, "pid": 0, "tid": 8, "ts": 50, "bp": "e"},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 3, "pid": 1, "tid": 1, "ts": 40},
            {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 3, "pid": 0, "tid": 7, "ts": 90, "bp": "e"},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 4, "pid": 1, "tid": 1, "ts": 150},
            {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 4, "pid": 0, "tid": 7, "ts": 160, "bp": "e"},
            {"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": 5, "pid": 1, "tid": 1, "ts": 0},
            {"ph": "f", "cat": "fwdbwd", "name": "fwdbwd", "id": 5, "pid": 1, "tid": 2, "ts": 300, "bp": "e"}
            ]"#,
        );
        let mm = slice_named(&timeline, "aten::mm");
        assert_eq!(
            call_kernels(&timeline, mm),
            CallKernels {
                kernels: 3,
                time_ns: 52_000
            }
        );
        // The launch and the operator outside it: their own work only.
        let launch = slice_named(&timeline, "cudaMemsetAsync");
        assert_eq!(
            call_kernels(&timeline, launch),
            CallKernels {
                kernels: 1,
                time_ns: 2_000
            }
        );
        let backward = slice_named(&timeline, "aten::mm_backward");
        assert_eq!(call_kernels(&timeline, backward), CallKernels::default());
    }

    #[test]
    fn a_trace_without_flows_gives_no_kernels_rather_than_a_guess() {
        let timeline = timeline_of(
            "no-flows",
            r#"[
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 30}
            ]"#,
        );
        let mm = slice_named(&timeline, "aten::mm");
        assert_eq!(call_kernels(&timeline, mm), CallKernels::default());
    }

    #[test]
    fn a_missing_argument_is_empty() {
        let args = [("Input Dims", "[[2, 3]]"), ("Input type", "[\"float\"]")];
        assert_eq!(arg(&args, "Input Dims"), "[[2, 3]]");
        assert_eq!(arg(&args, "Concrete Inputs"), "");
    }
}
