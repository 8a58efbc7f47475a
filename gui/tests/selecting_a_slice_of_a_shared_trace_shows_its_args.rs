//! Opens a real CUDA trace in the whole viewer, clicks a kernel on the timeline (a real
//! pointer click at the slice's position) and finds its arguments in the details panel.

mod support;

use eframe::egui;
use egui_kittest::kittest::Queryable as _;
use gui::app::Selection;
use gui::model::SliceRef;

/// The longest slice whose category is `category`.
fn longest_of_category(timeline: &gui::model::Timeline, category: &str) -> SliceRef {
    let id = timeline.names.lookup(category).expect("category present");
    let mut best: Option<(i64, SliceRef)> = None;
    for (t, track) in timeline.tracks.iter().enumerate() {
        for (depth, row) in track.rows().iter().enumerate() {
            for i in 0..row.len() {
                let dur = row.end_ns[i] - row.start_ns[i];
                if row.category[i] == id && best.is_none_or(|(d, _)| dur > d) {
                    let slice = SliceRef {
                        track: t as u32,
                        depth: depth as u16,
                        index: i as u32,
                    };
                    best = Some((dur, slice));
                }
            }
        }
    }
    best.expect("a slice of that category").1
}

#[test]
fn selecting_a_slice_of_a_shared_trace_shows_its_args() {
    let dir = support::traces_dir();
    let mut harness = support::viewer(vec![dir.join("hta/nccl_data.json.gz")]);
    support::wait_loaded(&mut harness);

    let timeline = harness.state().loaded.as_ref().unwrap().timeline.clone();
    let kernel = longest_of_category(&timeline, "kernel");
    let (start, end) = timeline.span(kernel);
    {
        let view = &mut harness.state_mut().loaded.as_mut().unwrap().view;
        view.jump_to(&timeline, start as f64, end as f64, Some(kernel.track));
        view.selection = Selection::None;
    }
    harness.run_steps(2);

    // Click the middle of the slice where the canvas drew it.
    let view = &harness.state().loaded.as_ref().unwrap().view;
    let rect = view.last_tracks_rect;
    let place = view.layout.place_of(kernel.track).expect("track laid out");
    let x = rect.left() + view.viewport.x_of((start + end) as f64 / 2.0, rect.width());
    let y = rect.top() + place.top - view.scroll_y
        + (kernel.depth as f32 + 0.5) * gui::frame::ROW_HEIGHT;
    assert!(rect.contains(egui::pos2(x, y)), "the kernel is on screen");
    let pos = egui::pos2(x, y);
    harness.event(egui::Event::PointerMoved(pos));
    harness.step();
    for pressed in [true, false] {
        harness.event(egui::Event::PointerButton {
            pos,
            button: egui::PointerButton::Primary,
            pressed,
            modifiers: egui::Modifiers::default(),
        });
        harness.step();
    }
    harness.run_steps(2);

    let loaded = harness.state().loaded.as_ref().unwrap();
    assert_eq!(
        loaded.view.selection,
        Selection::Slice(kernel),
        "the click selected the kernel"
    );

    // The details show its name and every argument with its value.
    let track = &timeline.tracks[kernel.track as usize];
    let row = timeline.row(kernel);
    let args = track.slice_args(row.args_at[kernel.index as usize]);
    assert!(
        args.iter().any(|(k, _)| *k == "correlation"),
        "kernel has a correlation arg"
    );
    for (key, value) in args {
        assert!(
            harness.query_all_by_label(key).count() >= 1,
            "argument {key} shown"
        );
        assert!(
            harness.query_all_by_label(value).count() >= 1,
            "value {value} of {key} shown"
        );
    }
    assert!(
        harness
            .query_all_by_label(timeline.slice_name(kernel))
            .count()
            >= 1
    );
    // A kernel of this trace is launched by a runtime call: the flow is listed.
    assert!(
        harness.query_all_by_label_contains("from ").count() >= 1,
        "the incoming launch flow is listed"
    );
}
