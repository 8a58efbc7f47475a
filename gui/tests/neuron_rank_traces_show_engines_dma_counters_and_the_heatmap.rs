//! Our emulator's rank traces (committed under `analysis/tests/data`): per NeuronCore its
//! queues, engines, DMA queues (collapsed: there are hundreds) and counters; ranks on one
//! time axis; the engine heatmap; the utilization panel with `analyze`'s numbers.

mod support;

use eframe::egui;
use std::path::PathBuf;

use egui_kittest::kittest::Queryable as _;
use gui::ui::panels_ui::pct;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../analysis/tests/data/gpt-2ranks-4steps")
}

#[test]
fn neuron_rank_traces_show_engines_dma_counters_and_the_heatmap() {
    let mut harness = support::viewer(vec![data_dir()]);
    // The first frame comes back at once, with the loader still running.
    assert!(
        harness.state().is_loading(),
        "loading runs off the UI thread"
    );
    support::wait_loaded(&mut harness);
    let loaded = harness.state().loaded.as_ref().unwrap();
    let timeline = loaded.timeline.clone();
    assert_eq!(timeline.files.len(), 2);

    let group = |suffix: &str, rank: i64| {
        timeline
            .groups
            .iter()
            .position(|g| {
                g.label.starts_with(&format!("rank {rank} ")) && g.label.ends_with(suffix)
            })
            .unwrap_or_else(|| panic!("rank {rank} group ending {suffix:?}"))
    };
    for rank in [0, 1] {
        let engines = &timeline.groups[group(" · engines", rank)];
        assert!(engines
            .tracks
            .iter()
            .any(|&t| timeline.tracks[t as usize].label.contains("TensorE")));
        let dma = group(" · DMA queues", rank);
        assert!(timeline.groups[dma].tracks.len() > 8);
        assert!(
            loaded.view.collapsed[dma],
            "hundreds of DMA queues start collapsed"
        );
        let counters = &timeline.groups[group(" · counters", rank)];
        assert!(!counters.tracks.is_empty());
    }

    // Ranks share one time axis: a collective ends at the same modeled instant on every
    // rank (DESIGN.md, "Time"), so the first collective kernel of each rank ends together.
    let first_collective_end = |rank: i64| {
        let mut best: Option<(i64, i64)> = None;
        for &t in timeline
            .groups
            .iter()
            .filter(|g| g.label.starts_with(&format!("rank {rank} ")))
            .flat_map(|g| g.tracks.iter())
        {
            for row in timeline.tracks[t as usize].rows() {
                for i in 0..row.len() {
                    if timeline.names.get(row.name[i]).starts_with("ncclDevKernel")
                        && best.is_none_or(|(s, _)| row.start_ns[i] < s)
                    {
                        best = Some((row.start_ns[i], row.end_ns[i]));
                    }
                }
            }
        }
        best.expect("a collective kernel").1
    };
    assert_eq!(first_collective_end(0), first_collective_end(1));

    // The heatmap has one row per engine track of both ranks, with busy time in it.
    let heatmap = gui::heatmap::engine_heatmap(&timeline, 120);
    assert!(
        heatmap.rows.len() >= 8,
        "{} engine rows",
        heatmap.rows.len()
    );
    assert!(heatmap
        .rows
        .iter()
        .all(|r| r.busy.iter().all(|b| (0.0..=1.0).contains(b))));
    assert!(heatmap.rows.iter().any(|r| r.busy.iter().any(|b| *b > 0.1)));

    // Utilization panel (key 2): each engine's active % as `analyze` computes it.
    let set = analysis::load_paths(
        &gui::load::collect_trace_files(&[data_dir()]).unwrap(),
        &analysis::LoadOptions::default(),
    )
    .unwrap();
    let report = analysis::analyze(&set, &analysis::ReportOptions::default());
    harness.key_press(egui::Key::Num2);
    harness.run_steps(3);
    assert!(harness.query_all_by_label_contains("Engine busy %").count() >= 1);
    let engines: Vec<_> = report.utilization.iter().flat_map(|d| &d.engines).collect();
    assert!(!engines.is_empty());
    for e in engines {
        assert!(
            harness.query_all_by_label(&pct(e.active_pct)).count() >= 1,
            "engine {} active {}",
            e.engine,
            pct(e.active_pct)
        );
    }

    // Collectives panel (key 4): a collective's sequence number jumps to its kernels on
    // every rank and selects the one of the rank everyone waited for.
    harness.key_press(egui::Key::Num4);
    harness.run_steps(3);
    let instance = report
        .collectives
        .instances
        .iter()
        .find(|i| i.seq == Some(3))
        .expect("collective #3");
    let kernels = gui::ui::panels_ui::collective_kernels(&timeline, &instance.process_group, 3);
    assert_eq!(kernels.len(), 2, "one kernel per rank");
    harness
        .get_all_by_label("3")
        .next()
        .expect("the seq link")
        .click();
    harness.run_steps(3);
    let view = &harness.state().loaded.as_ref().unwrap().view;
    let gui::app::Selection::Slice(selected) = view.selection else {
        panic!("the seq link selects a kernel, got {:?}", view.selection);
    };
    assert!(kernels.contains(&selected));
    let file = timeline.groups[timeline.tracks[selected.track as usize].group as usize].file;
    assert_eq!(
        timeline.files[file as usize].rank,
        Some(instance.waited_for_rank)
    );
    for k in &kernels {
        let (s, e) = timeline.span(*k);
        assert!(view.viewport.start_ns <= s as f64 && view.viewport.end_ns >= e as f64);
    }
}

/// The same rank traces as a Neuron Explorer data path (`profiles/global/*@latest`, the
/// Parquet tables a Trainium capture is ingested as): the folder opens as the traces do,
/// each profile a rank with its engines, DMA queues and collectives.
#[test]
fn a_data_path_of_neuron_explorer_profiles_opens_with_engines_and_dma() {
    let data = std::env::temp_dir().join(format!("gui-profiles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let mut traces = gui::load::collect_trace_files(&[data_dir()]).unwrap();
    traces.sort();
    for (rank, trace) in traces.iter().enumerate() {
        let dir = data.join(format!("profiles/global/rank{rank}@latest"));
        neuron_explorer::write_profile(trace, &dir).unwrap();
    }
    let files = gui::load::collect_trace_files(std::slice::from_ref(&data)).unwrap();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().all(|f| f.is_dir()));

    let mut harness = support::viewer(vec![data.clone()]);
    support::wait_loaded(&mut harness);
    let loaded = harness.state().loaded.as_ref().unwrap();
    let timeline = loaded.timeline.clone();
    assert_eq!(timeline.files.len(), 2);
    for rank in [0, 1] {
        let in_rank = |suffix: &str| {
            timeline
                .groups
                .iter()
                .find(|g| {
                    g.label.starts_with(&format!("rank {rank} ")) && g.label.ends_with(suffix)
                })
                .unwrap_or_else(|| panic!("rank {rank} group ending {suffix:?}"))
        };
        assert!(in_rank(" · engines")
            .tracks
            .iter()
            .any(|&t| timeline.tracks[t as usize].label.contains("TensorE")));
        assert!(in_rank(" · DMA queues").tracks.len() > 8);
    }
    let collectives = timeline
        .tracks
        .iter()
        .flat_map(|t| t.rows())
        .flat_map(|row| (0..row.len()).map(move |i| row.name[i]))
        .filter(|&n| timeline.names.get(n) == "allreduce")
        .count();
    assert!(
        collectives > 0,
        "the collectives come back from CcOp (named by operation)"
    );
    let _ = std::fs::remove_dir_all(&data);
}
