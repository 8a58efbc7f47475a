//! A runtime that leaves the reports, or whose process exits, is shown as exited; one
//! whose publisher says its workload finished is shown as finished. Nothing crashes.

mod common;

use common::*;
use tui::Event;

#[test]
fn runtime_missing_from_the_next_report_is_exited() {
    let two = ours();
    let mut one = ours();
    one.neuron_runtime_data.truncate(1);
    let mut app = app_with(&[two, one]);
    assert_eq!(
        app.tab_labels(),
        ["all", "9001/rank0", "9001/rank1 (exited)"]
    );
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("3:9001/rank1 (exited)"), "{s}");
    // Its tab still shows its last figures.
    ratatui_key(&mut app, '3');
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("NC2") && s.contains("45.8%"), "{s}");
    // "all" leaves an exited process's memory out.
    ratatui_key(&mut app, '1');
    let view = app.tab_view(10);
    assert_eq!(
        view.device_total, 17179869184,
        "rank 0's device memory only"
    );
    // It comes back when reported again.
    app.handle(Event::Document(Box::new(ours())));
    assert_eq!(app.tab_labels()[2], "9001/rank1");
}

#[test]
fn exit_event_marks_every_rank_of_the_process() {
    let mut app = app_with(&[ours()]);
    assert!(app.handle(Event::Exited {
        pid: 9001,
        reason: "endpoint closed".into()
    }));
    assert_eq!(
        app.tab_labels(),
        ["all", "9001/rank0 (exited)", "9001/rank1 (exited)"]
    );
    assert!(!app.handle(Event::Exited {
        pid: 4242,
        reason: "unknown pid".into()
    }));
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains("2:9001/rank0 (exited)"), "{s}");
}

#[test]
fn finished_workload_is_labelled_finished() {
    let mut doc = ours();
    for e in &mut doc.neuron_runtime_data {
        e.report.neuronprof.as_mut().unwrap().state = "finished".into();
    }
    let app = app_with(&[doc]);
    assert_eq!(app.tab_labels()[1], "9001/rank0 (finished)");
}

/// "all" shows the runtimes still running: an exited or finished one would only add
/// 0 % core rows and "0 done" latency rows beside them. The utilization pane counts
/// what it left out; the runtime's own tab keeps its figures.
#[test]
fn all_leaves_out_the_activity_of_runtimes_that_stopped() {
    let two = ours();
    let mut one = ours();
    one.neuron_runtime_data.truncate(1);
    let mut app = app_with(&[two.clone(), one]);
    let view = app.tab_view(10);
    assert_eq!(view.not_running, 1);
    assert!(
        view.cores.iter().all(|c| !c.label.contains("NC2")),
        "{:?}",
        view.cores
    );
    assert_eq!(view.latencies.len(), 1, "{:?}", view.latencies);
    assert!(view.engines.iter().all(|e| !e.label.starts_with("NC2")));
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains("1 exited/finished not shown"), "{s}");
    ratatui_key(&mut app, '3');
    let view = app.tab_view(10);
    assert_eq!((view.not_running, view.latencies.len()), (0, 1));
    assert!(view.cores.iter().any(|c| c.label.contains("NC2")));

    // Finished: left out of "all" too; when nothing runs, the pane says so.
    let mut finished = two;
    for e in &mut finished.neuron_runtime_data {
        e.report.neuronprof.as_mut().unwrap().state = "finished".into();
    }
    let app = app_with(&[finished]);
    let view = app.tab_view(10);
    assert_eq!((view.not_running, view.cores.len()), (2, 0));
    assert!(view.latencies.is_empty() && view.operators.is_empty());
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains("no runtime running"), "{s}");
}

fn ratatui_key(app: &mut tui::App, c: char) {
    key(app, ratatui::crossterm::event::KeyCode::Char(c));
}
