//! Key handling: tabs, F, freeze, filter, help, sorts, the memory tree, quit.

mod common;

use common::*;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui::app::{OpSort, Units, View};
use tui::Event;

#[test]
fn number_keys_and_a_d_select_tabs() {
    let mut app = app_with(&[ours()]);
    assert_eq!(app.tab_labels(), ["all", "9001/rank0", "9001/rank1"]);
    assert!(key(&mut app, KeyCode::Char('2')));
    assert_eq!(app.selected, 1);
    let s = screen(&app, 80, 24);
    // The selected tab is drawn reversed in the tab bar; the pane shows rank 0 only.
    assert!(
        text(&s).contains("NC1") && !text(&s).contains("NC2"),
        "{}",
        text(&s)
    );
    assert!(!key(&mut app, KeyCode::Char('9')), "no ninth tab");
    assert_eq!(app.selected, 1);
    key(&mut app, KeyCode::Char('d'));
    assert_eq!(app.selected, 2);
    key(&mut app, KeyCode::Char('d'));
    assert_eq!(app.selected, 0, "wraps to all");
    key(&mut app, KeyCode::Char('a'));
    assert_eq!(app.selected, 2);
    key(&mut app, KeyCode::Char('1'));
    assert_eq!(app.selected, 0);
}

#[test]
fn capital_f_toggles_percent_and_tflops() {
    let mut app = app_with(&[aws()]);
    assert!(text(&screen(&app, 80, 24)).contains("87.5%"));
    key(&mut app, KeyCode::Char('F'));
    assert_eq!(app.units, Units::Tflops);
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("152.1TF"), "{s}");
    assert!(s.contains("TFLOPS"), "title shows the unit: {s}");
    assert!(!s.contains("87.5%"), "{s}");
    key(&mut app, KeyCode::Char('F'));
    assert_eq!(app.units, Units::Percent);
}

#[test]
fn freeze_keeps_the_screen_and_queues_reports_until_unfrozen() {
    let mut app = app_with(&[ours()]);
    key(&mut app, KeyCode::Char('f'));
    let mut busy = ours();
    busy.neuron_runtime_data[0]
        .report
        .neuroncore_counters
        .as_mut()
        .unwrap()
        .neuroncores_in_use
        .get_mut(&0)
        .unwrap()
        .neuroncore_utilization = 12.5;
    app.handle(Event::Document(Box::new(busy)));
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("FROZEN (1 queued)"), "{s}");
    assert!(
        s.contains("91.2%") && !s.contains("12.5%"),
        "frozen screen: {s}"
    );
    assert_eq!(app.documents_applied, 1);
    key(&mut app, KeyCode::Char('f'));
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("12.5%") && !s.contains("FROZEN"), "{s}");
    assert_eq!(app.documents_applied, 2);
    assert_eq!(app.runtimes[0].core_history[&0].len(), 2, "history kept");
}

#[test]
fn slash_filters_operators_and_escape_clears() {
    let mut app = app_with(&[ours()]);
    app.view = View::Activity;
    key(&mut app, KeyCode::Char('/'));
    chars(&mut app, "GELU");
    let typing = text(&screen(&app, 80, 24));
    assert!(typing.contains("filter: GELU█"), "{typing}");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.filter, "GELU");
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("aten::gelu") && !s.contains("aten::mm"), "{s}");
    assert!(s.contains("filter:GELU"), "title shows the filter: {s}");
    assert!(s.contains("in flight: 0"), "collectives filtered too: {s}");
    key(&mut app, KeyCode::Esc);
    assert!(app.filter.is_empty());
    assert!(text(&screen(&app, 80, 24)).contains("aten::mm"));
    app.filter = "all_red".into();
    let s = text(&screen(&app, 80, 24));
    assert!(
        s.contains("in flight: 2") && s.contains("none over the period"),
        "{s}"
    );
    app.filter.clear();
    // Backspace edits, Esc while typing cancels.
    key(&mut app, KeyCode::Char('/'));
    chars(&mut app, "mmx");
    key(&mut app, KeyCode::Backspace);
    assert_eq!(app.filter_input.as_deref(), Some("mm"));
    key(&mut app, KeyCode::Esc);
    assert!(app.filter_input.is_none() && app.filter.is_empty());
}

#[test]
fn question_mark_shows_help_and_any_key_closes_it() {
    let mut app = app_with(&[aws()]);
    key(&mut app, KeyCode::Char('?'));
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains(" help "), "{s}");
    assert!(s.contains("freeze / unfreeze"), "{s}");
    assert!(s.contains("replay: play / pause"), "{s}");
    // Every binding's whole text fits at 80 columns (none cut by the box).
    for (_, what) in tui::app::KEY_HELP {
        assert!(s.contains(what), "{what:?} cut:\n{s}");
    }
    key(&mut app, KeyCode::Char('q'));
    assert!(!app.help && !app.quit, "the key closes help, nothing else");
    assert!(!text(&screen(&app, 80, 24)).contains("freeze / unfreeze"));
}

#[test]
fn s_and_u_change_sort_orders() {
    let mut app = app_with(&[ours()]);
    app.view = View::Activity;
    let order = |app: &tui::App| -> Vec<String> {
        app.tab_view(10)
            .operators
            .iter()
            .map(|o| o.name.clone())
            .collect()
    };
    assert_eq!(order(&app)[0], "aten::mm");
    key(&mut app, KeyCode::Char('s'));
    assert_eq!(app.op_sort, OpSort::Calls);
    assert_eq!(order(&app)[0], "aten::mm", "192 calls");
    assert_eq!(order(&app)[1], "aten::native_layer_norm", "80 calls");
    assert!(text(&screen(&app, 80, 24)).contains("Top Operators by calls"));
    key(&mut app, KeyCode::Char('s'));
    assert_eq!(order(&app)[0], "aten::_scaled_dot_product_attention");
    key(&mut app, KeyCode::Char('s'));
    assert_eq!(app.op_sort, OpSort::DeviceTime);

    let cores = |app: &tui::App| -> Vec<String> {
        app.tab_view(10)
            .cores
            .iter()
            .map(|c| c.label.clone())
            .collect()
    };
    let mut aws_app = app_with(&[aws()]);
    assert_eq!(cores(&aws_app), ["NC0", "NC1", "NC2", "NC3"]);
    let mut doc = aws();
    doc.neuron_runtime_data[0]
        .report
        .neuroncore_counters
        .as_mut()
        .unwrap()
        .neuroncores_in_use
        .get_mut(&3)
        .unwrap()
        .neuroncore_utilization = 99.0;
    aws_app.handle(Event::Document(Box::new(doc)));
    key(&mut aws_app, KeyCode::Char('u'));
    assert_eq!(cores(&aws_app), ["NC3", "NC0", "NC1", "NC2"]);
    assert!(text(&screen(&aws_app, 80, 24)).contains("cores:busiest"));
}

#[test]
fn arrows_enter_and_x_walk_the_memory_tree() {
    let mut app = app_with(&[aws()]);
    assert_eq!(app.tree_nodes().len(), 1, "collapsed: the runtime only");
    key(&mut app, KeyCode::Enter);
    let labels: Vec<String> = app.tree_nodes().iter().map(|n| n.label.clone()).collect();
    assert_eq!(labels, ["48211", "host memory", "device memory", "models"]);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Right);
    let s = text(&screen(&app, 80, 24));
    assert!(
        s.contains("▾ device memory") && s.contains("NC0") && s.contains("6.84 GiB"),
        "{s}"
    );
    key(&mut app, KeyCode::Left);
    assert!(text(&screen(&app, 80, 24)).contains("▸ device memory"));
    key(&mut app, KeyCode::Char('x'));
    let all = app.tree_nodes();
    assert!(all
        .iter()
        .any(|n| n.label == "model 10001 llama_decoder.neff, running"));
    assert!(all.iter().any(|n| n.label == "sg_00 on NC0"));
    key(&mut app, KeyCode::Char('x'));
    assert_eq!(app.tree_nodes().len(), 1, "x again collapses all");
    // The filter shows matching rows with their ancestors.
    app.filter = "scratch".into();
    let labels: Vec<String> = app.tree_nodes().iter().map(|n| n.label.clone()).collect();
    assert!(
        labels.contains(&"scratchpad".to_string()) && labels.contains(&"NC0".to_string()),
        "{labels:?}"
    );
    assert!(!labels.contains(&"host memory".to_string()), "{labels:?}");
}

#[test]
fn q_and_ctrl_c_quit() {
    let mut app = app_with(&[aws()]);
    key(&mut app, KeyCode::Char('q'));
    assert!(app.quit);
    let mut app = app_with(&[aws()]);
    app.handle(Event::Key(KeyEvent::new(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL,
    )));
    assert!(app.quit);
    // SIGTERM and friends arrive as events and quit the same way.
    let mut app = app_with(&[aws()]);
    assert!(app.handle(Event::Signal(15)));
    assert!(app.quit);
}

#[test]
fn unknown_keys_and_resizes_do_not_change_state() {
    let mut app = app_with(&[aws()]);
    assert!(!key(&mut app, KeyCode::Char('z')));
    assert!(!key(&mut app, KeyCode::F(5)));
    assert!(app.handle(Event::Resize), "a resize redraws");
    assert!(
        !app.handle(Event::Tick),
        "a tick without replay does nothing"
    );
}
