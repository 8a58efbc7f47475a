//! A trace cut in the middle (a killed process) opens with the events before the cut
//! and a visible warning that names the damage.

mod support;

use std::io::Read as _;

use egui_kittest::kittest::Queryable as _;

#[test]
fn damaged_trace_opens_up_to_the_damage_with_a_warning() {
    let dir = support::traces_dir();
    let mut text = Vec::new();
    gunzip(&dir.join("hta/simple_add.json.gz"), &mut text);
    let cut = text.len() / 2;
    let path = std::env::temp_dir().join(format!("gui-damaged-{}.json", std::process::id()));
    std::fs::write(&path, &text[..cut]).unwrap();

    let mut harness = support::viewer(vec![path.clone()]);
    support::wait_loaded(&mut harness);
    let timeline = harness.state().loaded.as_ref().unwrap().timeline.clone();
    assert!(
        timeline.slice_count > 10,
        "events before the damage are shown"
    );
    let warnings = &timeline.files[0].warnings;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("damaged trace"), "{}", warnings[0]);
    assert!(
        harness.query_all_by_label_contains("damaged trace").count() >= 1,
        "the warning is visible"
    );
    let _ = std::fs::remove_file(&path);
}

fn gunzip(path: &std::path::Path, out: &mut Vec<u8>) {
    let file = std::fs::File::open(path).unwrap();
    flate2::read::GzDecoder::new(file).read_to_end(out).unwrap();
}
