//! `/` focuses the search field; typing a kernel's name and Enter selects a matching
//! slice and lists the matches.

mod support;

use eframe::egui;
use egui_kittest::kittest::Queryable as _;
use gui::app::Selection;

#[test]
fn search_finds_a_kernel_and_selects_it() {
    let dir = support::traces_dir();
    let mut harness = support::viewer(vec![dir.join("hta/nccl_data.json.gz")]);
    support::wait_loaded(&mut harness);
    let timeline = harness.state().loaded.as_ref().unwrap().timeline.clone();
    let kernel_category = timeline.names.lookup("kernel").unwrap();
    // A kernel name that is rare enough to be specific: the first NCCL kernel.
    let name = timeline
        .tracks
        .iter()
        .flat_map(|t| t.rows().iter())
        .flat_map(|r| r.name.iter().zip(&r.category))
        .filter(|(_, c)| **c == kernel_category)
        .map(|(n, _)| timeline.names.get(*n))
        .find(|n| n.starts_with("ncclKernel") || n.starts_with("ncclDevKernel"))
        .expect("an NCCL kernel in nccl_data")
        .to_owned();
    let expected = gui::search::find(&timeline, &name).1;
    assert!(expected > 0);

    harness.event(egui::Event::Text("/".into()));
    harness.run_steps(2);
    harness.event(egui::Event::Text(name.clone()));
    harness.step();
    harness.key_press(egui::Key::Enter);
    harness.run_steps(3);

    let loaded = harness.state().loaded.as_ref().unwrap();
    let Selection::Slice(selected) = loaded.view.selection else {
        panic!("Enter in the search field selects the first match");
    };
    assert!(timeline.slice_name(selected).contains(&name));
    assert!(
        harness
            .query_all_by_label(&format!("{expected} matches"))
            .count()
            == 1,
        "the match count is shown"
    );
}
