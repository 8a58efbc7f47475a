//! Navigation on a real trace through the whole viewer: W/S zoom, A/D pan, F focuses the
//! selection, `]` and `[` follow a launch to its kernel and back, Shift+drag selects a
//! range whose table counts the slices in it.

mod support;

use eframe::egui;
use egui_kittest::kittest::Queryable as _;
use gui::app::Selection;

#[test]
fn keys_zoom_focus_follow_flows_and_select_ranges() {
    let dir = support::traces_dir();
    let mut harness = support::viewer(vec![dir.join("hta/simple_add.json.gz")]);
    support::wait_loaded(&mut harness);
    let timeline = harness.state().loaded.as_ref().unwrap().timeline.clone();

    // W zooms in, S zooms out, D pans right (pointer away from the timeline: around the
    // centre).
    let before = harness_viewport(&harness);
    harness.key_press(egui::Key::W);
    harness.run_steps(2);
    let zoomed = harness_viewport(&harness);
    assert!(zoomed.span_ns() < before.span_ns(), "W zooms in");
    harness.key_press(egui::Key::S);
    harness.run_steps(2);
    assert!(
        harness_viewport(&harness).span_ns() > zoomed.span_ns(),
        "S zooms out"
    );
    let left = harness_viewport(&harness).start_ns;
    harness.key_press(egui::Key::D);
    harness.run_steps(2);
    assert!(harness_viewport(&harness).start_ns > left, "D pans right");

    // A launch with an outgoing flow: select it, F focuses it, ] goes to its kernel, [
    // comes back.
    let launch = (0..timeline.flows.len())
        .filter_map(|f| {
            let flow = &timeline.flows[f];
            (timeline.names.get(flow.category) == "ac2g")
                .then(|| timeline.innermost_at(flow.from.0, flow.from.1))
                .flatten()
        })
        .next()
        .expect("a launch with an ac2g flow");
    {
        let loaded = harness.state_mut().loaded.as_mut().unwrap();
        loaded.view.selection = Selection::Slice(launch);
    }
    harness.key_press(egui::Key::F);
    harness.run_steps(2);
    let (s, e) = timeline.span(launch);
    let v = harness_viewport(&harness);
    assert!(
        v.start_ns <= s as f64 && v.end_ns >= e as f64,
        "F shows the launch"
    );
    assert!(
        v.span_ns() < (e - s) as f64 * 1.2 + 200.0,
        "F zooms to the launch"
    );

    harness.event(egui::Event::Text("]".into()));
    harness.run_steps(2);
    let Selection::Slice(kernel) = harness.state().loaded.as_ref().unwrap().view.selection else {
        panic!("] selects the flow's target");
    };
    assert_ne!(kernel, launch);
    let category = timeline
        .names
        .get(timeline.row(kernel).category[kernel.index as usize]);
    assert!(
        ["kernel", "gpu_memcpy", "gpu_memset"].contains(&category),
        "] lands on device work, got {category}"
    );
    harness.event(egui::Event::Text("[".into()));
    harness.run_steps(2);
    assert_eq!(
        harness.state().loaded.as_ref().unwrap().view.selection,
        Selection::Slice(launch),
        "[ comes back to the launch"
    );

    // Shift+drag across the whole track area selects a range; its table counts slices.
    harness.key_press(egui::Key::Escape);
    harness.run_steps(1);
    {
        let loaded = harness.state_mut().loaded.as_mut().unwrap();
        loaded.view.viewport = gui::frame::Viewport::whole(&timeline);
    }
    harness.run_steps(2);
    let rect = harness
        .state()
        .loaded
        .as_ref()
        .unwrap()
        .view
        .last_tracks_rect;
    let shift = egui::Modifiers::SHIFT;
    let (from, to) = (
        egui::pos2(rect.left() + 1.0, rect.top() + 5.0),
        egui::pos2(rect.right() - 1.0, rect.top() + 5.0),
    );
    harness.event_modifiers(egui::Event::PointerMoved(from), shift);
    harness.step();
    harness.event_modifiers(
        egui::Event::PointerButton {
            pos: from,
            button: egui::PointerButton::Primary,
            pressed: true,
            modifiers: shift,
        },
        shift,
    );
    harness.step();
    for i in 1..=10 {
        let p = from + (to - from) * (i as f32 / 10.0);
        harness.event_modifiers(egui::Event::PointerMoved(p), shift);
        harness.step();
    }
    harness.event_modifiers(
        egui::Event::PointerButton {
            pos: to,
            button: egui::PointerButton::Primary,
            pressed: false,
            modifiers: shift,
        },
        shift,
    );
    harness.run_steps(3);
    let view = &harness.state().loaded.as_ref().unwrap().view;
    let Selection::Range(rs, re) = view.selection else {
        panic!("Shift+drag selects a range, got {:?}", view.selection);
    };
    assert!(
        re - rs > 0.5 * timeline.end_ns as f64,
        "the range spans the drag"
    );
    let (_, stats) = view
        .range_stats
        .as_ref()
        .expect("range statistics computed");
    let counted: u64 = stats.names.iter().map(|n| n.count).sum();
    assert!(counted > 0);
    let top = &stats.names[0];
    assert!(
        harness
            .query_all_by_label(timeline.names.get(top.name))
            .count()
            >= 1,
        "the range table lists {}",
        timeline.names.get(top.name)
    );
}

fn harness_viewport(h: &egui_kittest::Harness<'static, gui::ViewerApp>) -> gui::frame::Viewport {
    h.state().loaded.as_ref().unwrap().view.viewport
}
