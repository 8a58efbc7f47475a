//! Every pane, rendered into ratatui's TestBackend at 80×24 and 120×40, with an AWS
//! neuron-monitor report (no extension) and with neuronprof's (two ranks).

mod common;

use common::*;
use ratatui::crossterm::event::KeyCode;

#[test]
fn aws_report_overview_at_80x24_matches_golden_screen() {
    let app = app_with(&[aws()]);
    let lines = screen(&app, 80, 24);
    assert_golden("aws_overview_80x24", &lines);
}

#[test]
fn aws_report_shows_amazon_panes_at_80x24() {
    let app = app_with(&[aws()]);
    let s = text(&screen(&app, 80, 24));
    for needle in [
        "trn2.48xlarge i-0a1b2c3d4e5f60718",
        "NeuronCore v3d Utilization",
        "NC0",
        "87.5%",
        "NC3",
        "vCPU Utilization",
        "user  38.4%",
        "Memory Usage Summary",
        "Host",
        "1.08 GiB",
        "Device",
        "23.6 GiB",
        "DMA buffers",
        "model code",
        "Memory Usage Details",
        "▸ 48211",
        "1:all",
        "2:48211",
    ] {
        assert!(s.contains(needle), "missing {needle:?} in\n{s}");
    }
}

#[test]
fn aws_report_at_120x40_shows_every_pane_and_says_what_is_missing() {
    let app = app_with(&[aws()]);
    let s = text(&screen(&app, 120, 40));
    for needle in [
        "NeuronCore v3d Utilization",
        "87.5% 85/90%",
        "0.0%   0/0%",
        "vCPU Utilization",
        "Memory Usage Summary",
        "Memory Usage Details",
        "Engine Utilization",
        "HBM Usage",
        "Collectives",
        "Top Operators",
        "Execution Latency",
        "412 done, 0 failed",
        "p50 2.40 ms",
        "not in these reports (neuronprof extension)",
    ] {
        assert!(s.contains(needle), "missing {needle:?} in\n{s}");
    }
}

#[test]
fn neuronprof_report_at_120x40_matches_golden_screen() {
    let app = app_with(&[ours(), ours()]);
    assert_golden("neuronprof_all_120x40", &screen(&app, 120, 40));
}

#[test]
fn neuronprof_report_fills_our_panes_at_120x40() {
    let app = app_with(&[ours(), ours()]);
    let s = text(&screen(&app, 120, 40));
    for needle in [
        "NC0 tensor   91.2%",
        "▇▇",
        "used 31.0 GiB (16.1%) of 192 GiB peak 33.0 GiB",
        "waiting for rank 1",
        "rank0 41 done p50 4.12 ms p99 21.4 ms",
        "in flight: 2",
        "all_reduce#42",
        "waits 1",
        "aten::mm",
        "624 ms",
        "dropped records: 17",
        "1:all",
        "2:9001/rank0",
        "3:9001/rank1",
    ] {
        assert!(s.contains(needle), "missing {needle:?} in\n{s}");
    }
}

#[test]
fn narrow_views_show_device_and_activity_panes_at_80x24() {
    let mut app = app_with(&[ours()]);
    key(&mut app, KeyCode::Tab);
    let device = text(&screen(&app, 80, 24));
    for needle in [
        "│ device",
        "Engine Utilization",
        "NC1 tensor   88.5%",
        "HBM Usage",
        "used 31.0 GiB",
    ] {
        assert!(device.contains(needle), "missing {needle:?} in\n{device}");
    }
    assert!(
        device.contains("more engines"),
        "24 engine rows cannot fit:\n{device}"
    );
    key(&mut app, KeyCode::Tab);
    let activity = text(&screen(&app, 80, 24));
    for needle in [
        "│ activity",
        "Collectives",
        "waiting for rank 1",
        "Top Operators",
        "aten::mm",
        "Execution Latency",
        "dropped records: 17",
    ] {
        assert!(
            activity.contains(needle),
            "missing {needle:?} in\n{activity}"
        );
    }
    key(&mut app, KeyCode::Tab);
    assert!(text(&screen(&app, 80, 24)).contains("│ overview"));
}

#[test]
fn single_rank_tab_shows_that_ranks_figures() {
    let mut app = app_with(&[ours()]);
    key(&mut app, KeyCode::Char('3'));
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains("NC2"), "{s}");
    assert!(!s.contains("NC0 "), "rank 1 has cores 2 and 3 only:\n{s}");
    assert!(s.contains("1540 done, 0 failed"), "{s}");
    assert!(s.contains("dropped records: 17"), "{s}");
}

/// The HBM pane says what its capacity is: the HBM of the tab's logical cores (each rank
/// of the fixture reports 2 cores and 96 GiB), so "all" and a rank tab do not seem to
/// disagree about one device.
#[test]
fn hbm_capacity_says_whose_it_is() {
    let mut app = app_with(&[ours()]);
    let all = text(&screen(&app, 120, 40));
    assert!(
        all.contains("HBM Usage, 4 logical cores") && all.contains("of 192 GiB"),
        "{all}"
    );
    key(&mut app, KeyCode::Char('3'));
    let rank = text(&screen(&app, 120, 40));
    assert!(
        rank.contains("HBM Usage, 2 logical cores") && rank.contains("of 96.0 GiB"),
        "{rank}"
    );
}

#[test]
fn tiny_and_odd_sizes_do_not_panic() {
    let app = app_with(&[ours()]);
    for (w, h) in [
        (1, 1),
        (10, 3),
        (20, 4),
        (40, 10),
        (79, 23),
        (80, 24),
        (200, 60),
        (119, 36),
        (120, 35),
    ] {
        let lines = screen(&app, w, h);
        assert_eq!(lines.len(), h as usize);
    }
    assert!(
        text(&screen(&app, 10, 3)).contains("too small")
            || text(&screen(&app, 10, 3)).contains("neuron")
    );
}

#[test]
fn empty_state_waits_for_reports() {
    let app = tui::App::new("stdin");
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("waiting for reports from stdin"), "{s}");
}

#[test]
fn resizing_switches_between_narrow_and_wide_layouts() {
    use ratatui::{backend::TestBackend, Terminal};
    let mut app = app_with(&[ours()]);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let screen_text = |t: &Terminal<TestBackend>| -> String {
        t.backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect()
    };
    terminal.draw(|f| tui::ui::draw(f, &app)).unwrap();
    let narrow = screen_text(&terminal);
    assert!(narrow.contains("│ overview") && !narrow.contains("HBM Usage"));
    terminal.backend_mut().resize(120, 40);
    assert!(app.handle(tui::Event::Resize));
    terminal.draw(|f| tui::ui::draw(f, &app)).unwrap();
    let wide = screen_text(&terminal);
    assert!(
        wide.contains("HBM Usage")
            && wide.contains("Top Operators")
            && !wide.contains("│ overview")
    );
    terminal.backend_mut().resize(80, 24);
    terminal.draw(|f| tui::ui::draw(f, &app)).unwrap();
    assert!(screen_text(&terminal).contains("│ overview"));
}
