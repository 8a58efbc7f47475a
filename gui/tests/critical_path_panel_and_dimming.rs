//! The critical-path panel (key 8) on a real two-rank trace (HTA's `two_rank`, both ranks
//! analyzed together): it shows the numbers `neuronprof
//! critical-path --instance 0` computes (the same `analysis::critical_path` call on the
//! same files: the length and every class's time), the toggle (key `C`) keeps exactly
//! the path's events undimmed (checked slice by slice against the analysis' event set),
//! another step can be chosen, and clicking an event of the panel selects its slice.

mod support;

use std::collections::HashSet;

use analysis::critical_path::{build_graph, Options};
use analysis::{load_paths, LoadOptions};
use eframe::egui;
use egui_kittest::kittest::Queryable as _;
use gui::app::Selection;
use gui::model::SliceRef;
use gui::ui::panels_ui::us;

fn wait_for_path(harness: &mut egui_kittest::Harness<'static, gui::ViewerApp>, instance: usize) {
    support::wait_until(harness, "the critical path's computation", |app| {
        let critical = &app.loaded.as_ref().unwrap().critical;
        if let Some(Err(e)) = &critical.result {
            panic!("no critical path: {e}");
        }
        critical
            .shown()
            .is_some_and(|p| p.instance == Some(instance))
    });
}

#[test]
fn critical_path_panel_and_dimming() {
    let dir = support::traces_dir();
    let files = vec![
        dir.join("hta/two_rank-rank0.json.gz"),
        dir.join("hta/two_rank-rank1.json.gz"),
    ];
    // What `neuronprof critical-path --instance N` computes (default mode, every rank).
    let set = load_paths(
        &files,
        &LoadOptions::default()
            .with_lenient(true)
            .with_timeline(true),
    )
    .unwrap();
    let expected = |instance: usize| {
        let mut options = Options::default();
        options.instances = (instance, instance);
        let graph = build_graph(&set, &options).unwrap();
        let path = graph.critical_path().unwrap();
        let edges = graph.graph.longest_path(|e| e.weight).unwrap();
        let events: HashSet<(i64, u64)> = graph.path_events(&edges).into_iter().collect();
        (path, events)
    };
    let (path, events) = expected(0);
    // Both ranks are analyzed (the path of this step stays on rank 1, the later one).
    assert_eq!(path.windows.len(), 2);

    let mut harness = support::viewer(files.clone());
    support::wait_loaded(&mut harness);
    assert!(!harness.state().loaded.as_ref().unwrap().critical.dim);
    harness.key_press(egui::Key::Num8);
    wait_for_path(&mut harness, 0);

    // The panel: the length, each class's time, the ranks it runs through.
    let label = format!("Critical path across ranks: {} µs", us(path.length_us));
    assert!(
        harness.query_all_by_label(&label).count() == 1,
        "{label} shown"
    );
    for share in &path.summary {
        assert!(
            harness.query_all_by_label(&us(share.duration_us)).count() >= 1,
            "{} {} shown",
            share.bound_by,
            us(share.duration_us)
        );
    }
    for w in &path.windows {
        assert!(
            harness
                .query_all_by_label(&us(w.end_us - w.start_us))
                .count()
                >= 1,
            "rank {}'s window",
            w.rank
        );
    }
    assert_eq!(
        harness.query_all_by_label_contains("through rank ").count(),
        usize::from(path.ranks_on_path.len() > 1)
    );

    // C dims: every slice keeps its colour exactly when its event is on the path.
    harness.event(egui::Event::Text("c".to_owned()));
    harness.run_steps(2);
    let loaded = harness.state().loaded.as_ref().unwrap();
    assert!(loaded.critical.dim, "C turns the dimming on");
    let shown = loaded.critical.shown().expect("the path is shown").clone();
    let timeline = loaded.timeline.clone();
    let rank_of_file: Vec<i64> = timeline
        .files
        .iter()
        .map(|f| {
            set.ranks
                .iter()
                .find(|t| t.path == f.path)
                .expect("same files")
                .rank
        })
        .collect();
    let (mut on, mut off) = (0usize, 0usize);
    for (t, track) in timeline.tracks.iter().enumerate() {
        let rank = rank_of_file[timeline.groups[track.group as usize].file as usize];
        for (depth, row) in track.rows().iter().enumerate() {
            for (i, &event_index) in row.event_index.iter().enumerate() {
                let slice = SliceRef {
                    track: t as u32,
                    depth: depth as u16,
                    index: i as u32,
                };
                let wanted = events.contains(&(rank, event_index));
                assert_eq!(
                    shown.contains(slice),
                    wanted,
                    "slice {} (rank {rank}, event {event_index})",
                    timeline.slice_name(slice)
                );
                if wanted {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
    }
    assert_eq!(on, events.len(), "every path event has its slice");
    assert_eq!(shown.not_on_timeline, 0);
    assert!(off > on, "{off} slices dimmed, {on} on the path");
    harness.event(egui::Event::Text("c".to_owned()));
    harness.run_steps(2);
    assert!(!harness.state().loaded.as_ref().unwrap().critical.dim);

    // Clicking the event with most time on the path selects its longest slice.
    let top = path
        .path
        .iter()
        .filter(|e| e.name.is_some())
        .max_by(|a, b| a.duration_us.total_cmp(&b.duration_us))
        .unwrap();
    let name = top.name.clone().unwrap();
    let short: String = name.chars().take(48).collect();
    harness.get_by_label(&short).click();
    harness.run_steps(3);
    let loaded = harness.state().loaded.as_ref().unwrap();
    let Selection::Slice(selected) = loaded.view.selection else {
        panic!("the click selected nothing");
    };
    assert_eq!(timeline.slice_name(selected), name);
    let rank = rank_of_file
        [timeline.groups[timeline.tracks[selected.track as usize].group as usize].file as usize];
    let index = timeline.row(selected).event_index[selected.index as usize];
    assert!(
        path.path
            .iter()
            .any(|e| e.rank == rank && e.event_index == Some(index)),
        "the selected slice is an event of the path"
    );

    // Another step: its own numbers.
    let (second, _) = expected(1);
    harness
        .state_mut()
        .loaded
        .as_mut()
        .unwrap()
        .critical
        .instance = Some(1);
    wait_for_path(&mut harness, 1);
    let label = format!("Critical path across ranks: {} µs", us(second.length_us));
    assert!(
        harness.query_all_by_label(&label).count() == 1,
        "{label} shown for step 1"
    );
}
