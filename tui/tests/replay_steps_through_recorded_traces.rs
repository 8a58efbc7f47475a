//! `--replay`: recorded rank traces become reports; the cursor steps, jumps and plays,
//! and the panes show the figures of the report under the cursor.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use analysis::live::{replay_dir, ReplayOptions};
use common::*;
use ratatui::crossterm::event::KeyCode;
use tui::{App, Event};

/// Two ranks, 100 µs: rank 0's device busy 0..25 and 50..100 µs, rank 1's 25..50 µs;
/// device memory grows from 1 KiB to 3 KiB at 60 µs.
fn trace_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tui-replay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let rank = |r: u32, kernels: &[(u32, u32)], memory: &[(u32, u64)]| {
        let mut events = vec![format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 500, "tid": 1, "ts": 0, "dur": 1, "args": {{"External id": {r}}}}}"#
        )];
        for (i, (ts, dur)) in kernels.iter().enumerate() {
            events.push(format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "k{i}", "pid": {r}, "tid": 0, "ts": {ts}, "dur": {dur}, "args": {{"device": {r}, "stream": 0, "External id": {r}}}}}"#
            ));
        }
        for (ts, total) in memory {
            events.push(format!(
                r#"{{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 500, "tid": 1, "ts": {ts}, "args": {{"Device Type": 20, "Device Id": {r}, "Total Allocated": {total}, "Bytes": 1, "Addr": 1, "Total Reserved": 0}}}}"#
            ));
        }
        format!(
            r#"{{"distributedInfo": {{"backend": "nccom", "rank": {r}, "world_size": 2}}, "traceEvents": [{}]}}"#,
            events.join(",\n")
        )
    };
    std::fs::write(
        dir.join("rank0.json"),
        rank(0, &[(0, 25), (50, 50)], &[(1, 1024), (60, 3072)]),
    )
    .unwrap();
    std::fs::write(dir.join("rank1.json"), rank(1, &[(25, 25)], &[])).unwrap();
    dir
}

fn replay_app() -> App {
    let options = ReplayOptions {
        period: Some(Duration::from_micros(25)),
        ..ReplayOptions::default()
    };
    let series = replay_dir(&trace_dir(), &options).unwrap();
    assert_eq!(series.documents.len(), 4);
    App::with_replay("replay traces", series.documents, series.times_s)
}

fn util(app: &App, core: &str) -> f64 {
    app.tab_view(10)
        .cores
        .iter()
        .find(|c| c.label == core)
        .map(|c| c.utilization)
        .unwrap()
}

#[test]
fn arrows_step_and_the_panes_follow_the_cursor() {
    let mut app = replay_app();
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("⏸ 1/4 t=25.0 µs"), "{s}");
    assert!(s.contains("←/→ step"), "{s}");
    assert_eq!(app.tab_labels(), ["all", "500/rank0", "500/rank1"]);
    assert_eq!((util(&app, "NC0"), util(&app, "NC1")), (100.0, 0.0));
    key(&mut app, KeyCode::Right);
    assert_eq!(app.replay.as_ref().unwrap().index, 1);
    assert_eq!((util(&app, "NC0"), util(&app, "NC1")), (0.0, 100.0));
    assert!(text(&screen(&app, 80, 24)).contains("2/4 t=50.0 µs"));
    key(&mut app, KeyCode::Left);
    assert_eq!(util(&app, "NC0"), 100.0);
    assert!(!key(&mut app, KeyCode::Left), "already at the start");
    key(&mut app, KeyCode::End);
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains("4/4 t=100 µs"), "{s}");
    assert!(s.contains("500/rank0 (finished)"), "{s}");
    assert!(s.contains("used 3.00 KiB"), "{s}");
    // The history up to the cursor is rebuilt: four samples.
    assert_eq!(app.runtimes[0].core_history[&0].len(), 4);
    assert_eq!(app.all_hbm_history.len(), 4);
    key(&mut app, KeyCode::Home);
    assert_eq!(app.runtimes[0].core_history[&0].len(), 1);
    assert!(text(&screen(&app, 120, 40)).contains("used 1.00 KiB"));
}

#[test]
fn space_plays_and_ticks_advance_until_the_end() {
    let mut app = replay_app();
    assert!(!app.handle(Event::Tick), "paused: a tick does nothing");
    key(&mut app, KeyCode::Char(' '));
    assert!(app.replay.as_ref().unwrap().playing);
    assert!(text(&screen(&app, 80, 24)).contains("▶ 1/4"));
    for expected in 1..4 {
        assert!(app.handle(Event::Tick));
        assert_eq!(app.replay.as_ref().unwrap().index, expected);
    }
    assert_eq!(
        app.runtimes[0].core_history[&0].len(),
        4,
        "played reports add history"
    );
    app.handle(Event::Tick);
    assert!(!app.replay.as_ref().unwrap().playing, "stops at the end");
    // Space at the end plays again from the start; freeze holds the cursor.
    key(&mut app, KeyCode::Char(' '));
    assert_eq!(app.replay.as_ref().unwrap().index, 0);
    key(&mut app, KeyCode::Char('f'));
    assert!(!app.handle(Event::Tick));
    assert_eq!(app.replay.as_ref().unwrap().index, 0);
    // An arrow pauses.
    key(&mut app, KeyCode::Char('f'));
    key(&mut app, KeyCode::Right);
    assert!(!app.replay.as_ref().unwrap().playing);
}

#[test]
fn a_real_privateuse1_trace_replays() {
    // A real recorded trace, vendored (tests/data/README.md): PyTorch 2.15's PrivateUse1
    // trace (one rank).
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/traces/torch-2.15/python_privateuse1_neuron.pt.trace.json.gz");
    let series = replay_dir(&path, &ReplayOptions::default()).unwrap();
    assert!(!series.documents.is_empty());
    let app = App::with_replay("replay", series.documents, series.times_s);
    for (w, h) in [(80, 24), (120, 40)] {
        let s = text(&screen(&app, w, h));
        assert!(s.contains("Utilization"), "{s}");
    }
}
