//! `--replay`: the top-operators pane shows, per operator, its achieved rate, % of the
//! device's roofline and bound, from `analysis`'s roofline table of the period; "—" for
//! an operator the model does not cover. On a real recorded trace: the `gpt` workload on
//! two emulated trn2 ranks (`analysis/tests/data/gpt-2ranks-4steps`, see its README).

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use analysis::analyses::roofline::{roofline_table, RankRoofline, RooflineOptions};
use analysis::live::{replay_dir, ReplayOptions};
use analysis::{load_paths, LoadOptions};
use common::*;
use ratatui::crossterm::event::KeyCode;
use tui::roofline::ReplayRoofline;
use tui::App;

fn gpt_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../analysis/tests/data/gpt-2ranks-4steps")
}

/// The replay of the gpt run cut into periods of `period` (`None`: the default), with
/// its roofline.
fn replay(period: Option<Duration>) -> App {
    replay_against(period, None)
}

/// [`replay`] against `device` (`--device-spec`), `None`: the traces' own.
fn replay_against(
    period: Option<Duration>,
    device: Option<analysis::analyses::roofline::DeviceSpec>,
) -> App {
    let options = ReplayOptions {
        period,
        ..ReplayOptions::default()
    };
    let series = replay_dir(&gpt_dir(), &options).unwrap();
    let roofline = ReplayRoofline::build(&series, device);
    let mut app = App::with_replay("replay gpt", series.documents, series.times_s);
    app.set_replay_roofline(roofline);
    app
}

/// `analysis`'s roofline table of rank 0 over the whole trace.
fn whole_table() -> RankRoofline {
    whole_table_against(None)
}

/// [`whole_table`] against `device`.
fn whole_table_against(device: Option<analysis::analyses::roofline::DeviceSpec>) -> RankRoofline {
    let path = gpt_dir().join("rank0.pt.trace.json.gz");
    let traces = load_paths(&[&path], &LoadOptions::default()).unwrap();
    roofline_table(
        &traces.ranks[0],
        &RooflineOptions::default().with_device(device),
    )
    .unwrap()
}

/// The documented % of roofline of operator `name` from a table: Σ calls × roofline
/// time per call / Σ kernel time over its rows.
fn documented_pct(table: &RankRoofline, name: &str) -> f64 {
    let rows: Vec<_> = table.ops.iter().filter(|r| r.name == name).collect();
    assert!(!rows.is_empty(), "no {name} row");
    let roofline: f64 = rows
        .iter()
        .map(|r| r.count as f64 * r.roofline_time_us.unwrap())
        .sum();
    let kernel: f64 = rows.iter().map(|r| r.kernel_time_us).sum();
    roofline / kernel * 100.0
}

/// The operators pane's line of operator `name`, between the pane's borders (`None`
/// when it is not shown).
fn op_line(lines: &[String], name: &str) -> Option<String> {
    let needle = format!("│{name} ");
    lines.iter().find_map(|l| {
        let start = l.find(&needle)? + '│'.len_utf8();
        let rest = &l[start..];
        Some(rest[..rest.find('│').unwrap_or(rest.len())].to_string())
    })
}

#[test]
fn one_period_over_the_whole_run_shows_the_tables_percent_of_roofline() {
    // One report covering the run: its roofline is the table of the whole trace.
    let mut app = replay(Some(Duration::from_secs(1)));
    assert_eq!(app.replay.as_ref().unwrap().documents.len(), 1);
    key(&mut app, KeyCode::Char('2')); // rank 0's tab (on "all" a finished rank is left out)
    let table = whole_table();
    let view = app.tab_view(10);
    let roofline = view.roofline.as_ref().expect("a replay has a roofline");
    assert_eq!(roofline.device.as_deref(), Ok("trn2 (LNC=2)"));
    // aten::add has four rows of different shapes and % of roofline: weighting by
    // kernel time is not their plain mean.
    let add_rows: Vec<f64> = table
        .ops
        .iter()
        .filter(|r| r.name == "aten::add")
        .map(|r| r.roofline_pct.unwrap())
        .collect();
    assert!(add_rows.len() >= 2, "{add_rows:?}");
    let mean = add_rows.iter().sum::<f64>() / add_rows.len() as f64;
    let expected = documented_pct(&table, "aten::add");
    assert!((expected - mean).abs() > 0.01, "{expected} vs mean {mean}");
    let got = roofline.ops["aten::add"].roofline_pct().unwrap();
    assert!(
        (got - expected).abs() <= 1e-9 * expected,
        "pane {got}, table {expected}"
    );
    for (w, h) in [(80, 24), (120, 40)] {
        if w == 80 {
            key(&mut app, KeyCode::Tab);
            key(&mut app, KeyCode::Tab); // overview → device → activity
        }
        let lines = screen(&app, w, h);
        let s = text(&lines);
        assert!(s.contains("vs trn2 (LNC=2)"), "{s}");
        let line = op_line(&lines, "aten::add").unwrap_or_else(|| panic!("{s}"));
        assert!(
            line.contains(&format!("{expected:.1}% M")),
            "{w}x{h}: {line} (expected {expected:.1}%)"
        );
        assert!(
            line.contains("GB/s"),
            "memory-bound: a rate in bytes: {line}"
        );
    }
}

/// `--device-spec mi300x`: the trn2 run's operators against an MI300X's roofline, as
/// `analyze --device-spec mi300x` reports them; the pane says which device.
#[test]
fn a_named_device_replaces_the_traces_own() {
    let mi300x = analysis::analyses::roofline::DeviceSpec::named("mi300x").unwrap();
    let mut app = replay_against(Some(Duration::from_secs(1)), Some(mi300x.clone()));
    key(&mut app, KeyCode::Char('2'));
    let view = app.tab_view(10);
    let roofline = view.roofline.as_ref().expect("a replay has a roofline");
    assert_eq!(roofline.device.as_deref(), Ok(mi300x.name.as_str()));
    let table = whole_table_against(Some(mi300x.clone()));
    let expected = documented_pct(&table, "aten::add");
    let on_trn2 = documented_pct(&whole_table(), "aten::add");
    assert!((expected - on_trn2).abs() > 0.1, "{expected} vs {on_trn2}");
    let got = roofline.ops["aten::add"].roofline_pct().unwrap();
    assert!(
        (got - expected).abs() <= 1e-9 * expected,
        "pane {got}, table {expected}"
    );
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains(&format!("vs {}", mi300x.name)), "{s}");
    // A name that is neither built in nor a file says so.
    let err = analysis::analyses::roofline::DeviceSpec::named("no-such-device").unwrap_err();
    assert!(err.contains("neither a built-in device"), "{err}");
}

#[test]
fn an_operator_the_model_does_not_cover_shows_a_dash() {
    let mut app = replay(Some(Duration::from_secs(1)));
    key(&mut app, KeyCode::Char('2'));
    let table = whole_table();
    let shown: Vec<String> = app
        .tab_view(10)
        .operators
        .iter()
        .map(|o| o.name.clone())
        .collect();
    let uncovered = table
        .uncovered
        .iter()
        .find(|u| shown.contains(&u.name) && !table.ops.iter().any(|r| r.name == u.name))
        .unwrap_or_else(|| panic!("no uncovered op among {shown:?}"));
    let lines = screen(&app, 120, 40);
    let line = op_line(&lines, &uncovered.name).unwrap_or_else(|| panic!("{}", text(&lines)));
    assert!(
        line.trim_end().ends_with("—       —"),
        "{} ({}): {line}",
        uncovered.name,
        uncovered.reason
    );
    assert!(!line.contains('%'), "{line}");
}

#[test]
fn the_periods_split_the_run_each_modeled_call_in_one_of_them() {
    // Default period: 64 reports. Every device row ends in one period, so over the
    // periods each operator's kernel time and roofline time add up to the whole
    // trace's (a call split across two periods would count its roofline time twice).
    let app = replay(None);
    let reports = app.replay.as_ref().unwrap().documents.len();
    assert!(reports > 10, "{reports}");
    let Some(Ok(roofline)) = &app.replay.as_ref().unwrap().roofline else {
        panic!("no roofline")
    };
    let rank0 = roofline.rank(0).unwrap();
    assert_eq!(rank0.steps.len(), reports);
    let mut summed: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for step in &rank0.steps {
        for (name, op) in step {
            let e = summed.entry(name.clone()).or_default();
            e.0 += op.kernel_time_us;
            e.1 += op.roofline_time_us.unwrap();
        }
    }
    let table = whole_table();
    let mut whole: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for r in table.ops.iter().filter(|r| r.kernel_time_us > 0.0) {
        let e = whole.entry(r.name.clone()).or_default();
        e.0 += r.kernel_time_us;
        e.1 += r.count as f64 * r.roofline_time_us.unwrap();
    }
    assert_eq!(
        summed.keys().collect::<Vec<_>>(),
        whole.keys().collect::<Vec<_>>()
    );
    for (name, (kernel, line)) in &whole {
        let (k, l) = summed[name];
        assert!(
            (k - kernel).abs() <= 1e-6 * kernel,
            "{name}: kernel {k} vs {kernel}"
        );
        assert!(
            (l - line).abs() <= 1e-6 * line,
            "{name}: roofline {l} vs {line}"
        );
    }
    // Stepping through the periods on rank 0's tab: each shown operator reads a % of
    // roofline when a modeled call of it ends in the period, "…" when it is modeled
    // but its calls end later, "—" when the model does not cover it.
    let mut app = app;
    key(&mut app, KeyCode::Char('2'));
    let (mut numbers, mut later, mut dashes) = (0, 0, 0);
    for _ in 0..reports {
        let view = app.tab_view(10);
        let roofline = view.roofline.as_ref().unwrap();
        let lines = screen(&app, 120, 40);
        for op in view.operators.iter().take(8) {
            let Some(line) = op_line(&lines, &op.name) else {
                continue;
            };
            let cell = line.trim_end();
            if let Some(r) = roofline.ops.get(&op.name) {
                let pct = r.roofline_pct().unwrap();
                assert!(cell.contains(&format!("{pct:.1}% ")), "{cell} ({pct})");
                numbers += 1;
            } else if whole.contains_key(&op.name) {
                assert!(cell.ends_with("…       …"), "{cell}");
                later += 1;
            } else {
                assert!(cell.ends_with("—       —"), "{cell}");
                dashes += 1;
            }
        }
        key(&mut app, KeyCode::Right);
    }
    assert!(
        numbers > 0 && later > 0 && dashes > 0,
        "{numbers} {later} {dashes}"
    );
}

#[test]
fn live_reports_have_no_roofline_and_the_pane_is_unchanged() {
    let app = app_with(&[ours()]);
    assert!(app.tab_view(10).roofline.is_none());
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains("Top Operators by device time "), "{s}");
    assert!(!s.contains("%roof"), "{s}");
}

#[test]
fn a_replay_without_its_roofline_says_why() {
    let series = replay_dir(&gpt_dir(), &ReplayOptions::default()).unwrap();
    let mut app = App::with_replay("replay gpt", series.documents, series.times_s);
    // A trace directory that does not exist: an error in the pane, not a panic.
    let missing = gpt_dir().join("no-such-dir");
    let built = ReplayRoofline::build_from(&[missing], 0, 1000, 3, None);
    assert!(built.is_err());
    app.set_replay_roofline(built);
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains("no roofline"), "{s}");
    assert!(s.contains("roofline: "), "{s}");
    let why = app.tab_view(10).roofline.unwrap().device.unwrap_err();
    assert!(why.contains("no-such-dir"), "{why}");
}
