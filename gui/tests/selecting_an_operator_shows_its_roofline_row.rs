//! Selecting a host operator of a real H100 trace (a TraceLens sample) shows its row of
//! the roofline table with the numbers `roofline_table` (what `neuronprof analyze
//! --json` prints) gives for it, this call's own rates, and for an operator the model
//! does not cover, the table's reason.

mod support;

use analysis::analyses::roofline::{roofline_table, RankRoofline, RooflineOp, RooflineOptions};
use analysis::{load_paths, LoadOptions};
use egui_kittest::kittest::Queryable as _;
use egui_kittest::Harness;
use gui::model::{SliceRef, Timeline};
use gui::roofline::call_kernels;
use gui::ui::panels_ui::{pct, us};
use gui::ui::roofline_ui::{bytes_per_call, sig};
use gui::ViewerApp;

fn shown(harness: &Harness<'static, ViewerApp>, text: &str) -> bool {
    harness.query_all_by_label(text).count() >= 1
}

/// Every slice named `name` whose `record_shapes` arguments are `args` (dims, types,
/// strides, concrete inputs; a missing one is empty).
fn calls_of(timeline: &Timeline, name: &str, args: [&str; 4]) -> Vec<SliceRef> {
    let Some(id) = timeline.names.lookup(name) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (t, track) in timeline.tracks.iter().enumerate() {
        for (depth, row) in track.rows().iter().enumerate() {
            for i in 0..row.len() {
                if row.name[i] != id {
                    continue;
                }
                let have = track.slice_args(row.args_at[i]);
                let get = |key: &str| have.iter().find(|(k, _)| *k == key).map_or("", |(_, v)| *v);
                let key = [
                    get("Input Dims"),
                    get("Input type"),
                    get("Input Strides"),
                    get("Concrete Inputs"),
                ];
                if key == args {
                    found.push(SliceRef {
                        track: t as u32,
                        depth: depth as u16,
                        index: i as u32,
                    });
                }
            }
        }
    }
    found
}

fn select(harness: &mut Harness<'static, ViewerApp>, slice: SliceRef) {
    let loaded = harness.state_mut().loaded.as_mut().unwrap();
    let timeline = loaded.timeline.clone();
    loaded.view.select_slice(&timeline, slice);
    harness.run_steps(3);
}

/// Selects the calls of `op` with the longest and the shortest kernel time and checks
/// the panel against the row: the longest call's TFLOP/s and TB/s are the row's
/// minimum, the shortest's its maximum.
fn check_row(harness: &mut Harness<'static, ViewerApp>, table: &RankRoofline, op: &RooflineOp) {
    let timeline = harness.state().loaded.as_ref().unwrap().timeline.clone();
    let calls = calls_of(
        &timeline,
        &op.name,
        [
            &op.input_dims,
            &op.input_types,
            &op.input_strides,
            &op.concrete_inputs,
        ],
    );
    // This call's kernel time, found from the timeline's launch flows, is what the
    // table counts per call: the same calls and the same spread.
    let mut timed: Vec<(i64, SliceRef)> = calls
        .iter()
        .map(|&c| (call_kernels(&timeline, c).time_ns, c))
        .filter(|(ns, _)| *ns > 0)
        .collect();
    assert_eq!(
        timed.len() as u64,
        op.count,
        "{} calls with kernels",
        op.name
    );
    timed.sort_by_key(|(ns, _)| *ns);
    let per_call_us: Vec<f64> = timed.iter().map(|(ns, _)| *ns as f64 / 1e3).collect();
    let mean = per_call_us.iter().sum::<f64>() / per_call_us.len() as f64;
    let spread = op.kernel_time_per_call_us;
    assert!((mean - spread.mean).abs() < 1e-6, "{mean} vs {spread:?}");
    assert!(
        (per_call_us[0] - spread.min).abs() < 1e-6,
        "{per_call_us:?} {spread:?}"
    );
    let longest = *per_call_us.last().unwrap();
    assert!(
        (longest - spread.max).abs() < 1e-6,
        "{per_call_us:?} {spread:?}"
    );

    let (longest_ns, longest_call) = *timed.last().unwrap();
    let (shortest_ns, shortest_call) = timed[0];
    let roofline_pct = op.roofline_pct.expect("a device, so a % of roofline");
    let (spec, peak) = op.peak.clone().expect("a peak");
    let row_numbers = [
        sig(op.gflops),
        bytes_per_call(op.data_moved_bytes),
        sig(op.flops_per_byte),
        pct(roofline_pct),
        us(op.win_us),
        spec.clone(),
        sig(peak),
    ];
    select(harness, longest_call);
    for text in &row_numbers {
        assert!(shown(harness, text), "{}: {text} shown", op.name);
    }
    let bound = format!("{:?}", op.bound.unwrap()).to_lowercase();
    assert!(shown(harness, &bound), "{bound}");
    assert!(shown(harness, table.device.as_deref().unwrap()), "device");
    assert!(shown(harness, &op.count.to_string()), "calls");
    assert!(
        shown(harness, &us(longest_ns as f64 / 1e3)),
        "this call's time"
    );
    assert!(
        shown(harness, &sig(op.tflops_per_sec.min)),
        "{}: the longest call's TFLOP/s {} is the row's minimum",
        op.name,
        sig(op.tflops_per_sec.min)
    );
    assert!(shown(harness, &sig(op.tb_per_sec.min)), "its TB/s");
    assert!(shown(harness, "TFLOP/s of this call"));

    select(harness, shortest_call);
    assert!(shown(harness, &us(shortest_ns as f64 / 1e3)));
    assert!(
        shown(harness, &sig(op.tflops_per_sec.max)),
        "{}: the shortest call's TFLOP/s {} is the row's maximum",
        op.name,
        sig(op.tflops_per_sec.max)
    );
    assert!(shown(harness, &sig(op.tb_per_sec.max)));
    if sig(op.tflops_per_sec.max) != sig(op.tflops_per_sec.min) {
        assert!(
            !shown(harness, &sig(op.tflops_per_sec.min)),
            "the other call's rate is gone"
        );
    }
}

/// Every GEMM row of a TraceLens sample (several shapes of addmm, some with calls of
/// different times) and attention: the row is the one of the call's arguments, not
/// only of its name.
fn gemm_and_attention_rows_are_shown(trace: &str, device: &str) {
    let path = support::traces_dir().join("tracelens").join(trace);
    let set = load_paths(
        std::slice::from_ref(&path),
        &LoadOptions::default().with_lenient(true),
    )
    .unwrap();
    let table = roofline_table(&set.ranks[0], &RooflineOptions::default()).unwrap();
    assert_eq!(
        table.device.as_deref(),
        Some(device),
        "{}",
        table.device_source
    );

    let mut harness = support::viewer(vec![path]);
    support::wait_loaded(&mut harness);

    let addmm: Vec<&RooflineOp> = table
        .ops
        .iter()
        .filter(|op| op.name == "aten::addmm")
        .collect();
    assert!(addmm.len() >= 2, "several addmm shapes");
    assert!(addmm
        .iter()
        .any(|op| op.count >= 2 && op.tflops_per_sec.min < op.tflops_per_sec.max));
    assert!(
        !shown(&harness, &sig(addmm[0].tflops_per_sec.min)),
        "nothing selected yet"
    );
    for op in addmm {
        check_row(&mut harness, &table, op);
    }
    let attention = table
        .ops
        .iter()
        .find(|op| op.name == "aten::_scaled_dot_product_flash_attention")
        .expect("an attention row");
    check_row(&mut harness, &table, attention);
}

#[test]
fn selecting_an_operator_shows_its_roofline_row() {
    gemm_and_attention_rows_are_shown(
        "h100_gaunernst_bert-small-uncased__1016001.json.gz",
        "H100 SXM",
    );
}

#[test]
fn selecting_an_operator_of_a_rocm_trace_shows_its_roofline_row() {
    gemm_and_attention_rows_are_shown(
        "mi300_gaunernst_bert-small-uncased__1016001.json.gz",
        "MI300X",
    );
}

#[test]
fn an_operator_the_model_does_not_cover_shows_why() {
    let path =
        support::traces_dir().join("tracelens/h100_gaunernst_bert-small-uncased__1016001.json.gz");
    let set = load_paths(
        std::slice::from_ref(&path),
        &LoadOptions::default().with_lenient(true),
    )
    .unwrap();
    let table = roofline_table(&set.ranks[0], &RooflineOptions::default()).unwrap();
    let uncovered = table.uncovered.first().expect("an uncovered operator");

    let mut harness = support::viewer(vec![path]);
    support::wait_loaded(&mut harness);
    let timeline = harness.state().loaded.as_ref().unwrap().timeline.clone();
    let id = timeline.names.lookup(&uncovered.name).expect("its slices");
    let call = timeline
        .tracks
        .iter()
        .enumerate()
        .flat_map(|(t, track)| {
            track
                .rows()
                .iter()
                .enumerate()
                .flat_map(move |(depth, row)| {
                    (0..row.len())
                        .filter(move |&i| row.name[i] == id)
                        .map(move |i| SliceRef {
                            track: t as u32,
                            depth: depth as u16,
                            index: i as u32,
                        })
                })
        })
        .find(|&s| call_kernels(&timeline, s).kernels > 0)
        .expect("a call of it that launched a kernel");
    let reason = format!("not covered by the performance model: {}", uncovered.reason);
    assert!(!shown(&harness, &reason));

    select(&mut harness, call);
    assert!(shown(&harness, &reason), "{reason}");
    assert!(
        !shown(&harness, "TFLOP/s of this call") && !shown(&harness, "TFLOP/s (row mean)"),
        "no rate for an operator the model does not cost"
    );

    // Its parent (aten::item) has no row and is not uncovered itself: its kernel counts
    // under the child, which the panel says instead of a number.
    let parent = timeline.parent(call).expect("a parent operator");
    let parent_name = timeline.slice_name(parent).to_owned();
    assert!(table.ops.iter().all(|op| op.name != parent_name));
    assert!(table.uncovered.iter().all(|u| u.name != parent_name));
    select(&mut harness, parent);
    assert!(!shown(&harness, &reason), "the child's reason is gone");
    assert_eq!(
        harness
            .query_all_by_label_contains("no roofline row of its own: its 1 kernel count")
            .count(),
        1,
        "{parent_name}"
    );
    assert!(!shown(&harness, "TFLOP/s of this call") && !shown(&harness, "TFLOP/s (row mean)"));
}
