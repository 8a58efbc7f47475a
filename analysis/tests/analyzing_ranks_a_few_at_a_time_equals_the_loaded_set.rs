//! `analyze_paths` (each rank read, reduced to a summary and dropped, a few ranks in
//! memory at a time) gives exactly the report `analyze` gives over the whole loaded set,
//! on real traces: in both modes and both HTA releases' rules, with a chosen step, with
//! every rank's per-rank analyses, with files in reverse rank order, with ranks that
//! cannot tell on their own whether HTA's last-step filter applies, and with damage read
//! leniently; and it reports the same errors (duplicate ranks, unreadable files).

mod support {
    pub mod traces;
}

use std::path::{Path, PathBuf};

use analysis::inputs::Window;
use analysis::{
    analyze, analyze_paths, analyze_plan, load_ranks, plan_inputs, AnalysisError, HtaVersion,
    LoadOptions, Mode, ReportOptions,
};
use support::traces::traces_dir;

fn option_sets(ranks: &[i64]) -> Vec<(String, ReportOptions)> {
    let mut sets = Vec::new();
    for mode in [Mode::Default, Mode::HtaCompat] {
        for version in [HtaVersion::V0_5, HtaVersion::V0_6] {
            let base = ReportOptions::hta_reference()
                .with_mode(mode)
                .with_hta_version(version);
            sets.push((format!("{mode:?} {version:?}"), base.clone()));
            sets.push((
                format!("{mode:?} {version:?} every rank"),
                base.clone().with_ranks(Some(ranks.to_vec())),
            ));
        }
    }
    sets.push(("default options".to_owned(), ReportOptions::default()));
    sets.push((
        "by shape".to_owned(),
        ReportOptions::default().with_operators_by_shape(true),
    ));
    sets
}

/// Both ways over `files` (explicit ranks where given) must agree for every option set.
fn check(label: &str, files: &[(Option<i64>, PathBuf)], extra: &[(String, ReportOptions)]) {
    let ranked: Vec<(Option<i64>, &Path)> = files.iter().map(|(r, p)| (*r, p.as_path())).collect();
    let load = LoadOptions::default();
    let set = load_ranks(&ranked, &load).unwrap_or_else(|e| panic!("{label}: {e}"));
    let ranks: Vec<i64> = set.ranks.iter().map(|r| r.rank).collect();
    let mut sets = option_sets(&ranks);
    sets.extend(extra.iter().cloned());
    for (name, options) in sets {
        let whole = analyze(&set, &options);
        let streamed = analyze_paths(&ranked, &load, &options)
            .unwrap_or_else(|e| panic!("{label}, {name}: {e}"));
        assert_eq!(whole.ranks, ranks, "{label}, {name}");
        assert_eq!(streamed, whole, "{label}, {name}: the reports differ");
    }
}

fn at(dir: &Path, files: &[(Option<i64>, &str)]) -> Vec<(Option<i64>, PathBuf)> {
    files.iter().map(|(r, f)| (*r, dir.join(f))).collect()
}

#[test]
fn multi_rank_traces_give_the_same_report_both_ways() {
    let dir = traces_dir();
    let step = |n| {
        vec![(
            format!("step {n}"),
            ReportOptions::hta_reference().with_step(Some(n)),
        )]
    };
    check(
        "two_rank",
        &at(
            &dir,
            &[
                (None, "hta/two_rank-rank0.json.gz"),
                (None, "hta/two_rank-rank1.json.gz"),
            ],
        ),
        &step(551),
    );
    // Given in reverse rank order: the lowest rank still gets the per-rank analyses.
    check(
        "two_rank reversed",
        &at(
            &dir,
            &[
                (None, "hta/two_rank-rank1.json.gz"),
                (None, "hta/two_rank-rank0.json.gz"),
            ],
        ),
        &[],
    );
    check(
        "gloo_2rank",
        &at(
            &dir,
            &[
                (None, "torch-2.15/gloo_2rank-rank1.pt.trace.json.gz"),
                (None, "torch-2.15/gloo_2rank-rank0.pt.trace.json.gz"),
            ],
        ),
        &step(3),
    );
    check(
        "nccl_data",
        &at(&dir, &[(None, "hta/nccl_data.json.gz")]),
        &step(5),
    );
}

#[test]
fn ranks_that_cannot_tell_the_last_step_filter_on_their_own_get_the_right_one() {
    let dir = traces_dir();
    // simple_add has no ProfilerStep: alone it cannot tell; two_rank's rank has two, so
    // the filter applies to both.
    check(
        "simple_add + two_rank",
        &at(
            &dir,
            &[
                (Some(0), "hta/simple_add.json.gz"),
                (Some(1), "hta/two_rank-rank0.json.gz"),
            ],
        ),
        &[],
    );
    // No rank has two step names: the filter does not apply.
    check(
        "simple_add + mtia + cpu_only",
        &at(
            &dir,
            &[
                (Some(2), "hta/simple_add.json.gz"),
                (Some(0), "hta/mtia_inference_rank_0.json.gz"),
                (Some(1), "hta/cpu_only_rank34.json.gz"),
            ],
        ),
        &[],
    );
}

#[test]
fn damage_read_leniently_and_errors_are_the_same_both_ways() {
    let dir = traces_dir();
    let tmp = std::env::temp_dir().join(format!("analysis-streamed-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    // A rank cut in the middle of an event.
    let text = trace_format_text(&dir.join("hta/two_rank-rank1.json.gz"));
    let cut = tmp.join("rank1-cut.json");
    std::fs::write(&cut, &text.as_bytes()[..text.len() * 2 / 3]).unwrap();
    let rank0 = dir.join("hta/two_rank-rank0.json.gz");
    let ranked: Vec<(Option<i64>, &Path)> = vec![(None, rank0.as_path()), (None, cut.as_path())];

    let lenient = LoadOptions::default().with_lenient(true);
    let options = ReportOptions::default();
    let whole = analyze(&load_ranks(&ranked, &lenient).unwrap(), &options);
    let streamed = analyze_paths(&ranked, &lenient, &options).unwrap();
    assert!(
        streamed.errors.iter().any(|e| e.starts_with("rank 1: ")),
        "the damage is reported: {:?}",
        streamed.errors
    );
    assert_eq!(streamed, whole);

    // Strict: the same read error (file, offset) both ways.
    let strict = LoadOptions::default();
    let whole = load_ranks(&ranked, &strict).unwrap_err().to_string();
    let streamed = analyze_paths(&ranked, &strict, &options)
        .unwrap_err()
        .to_string();
    assert_eq!(streamed, whole);
    assert!(streamed.contains("rank1-cut.json"), "{streamed}");

    // Two files of one rank: the second is named, as by `load_ranks`.
    let twice: Vec<(Option<i64>, &Path)> = vec![(None, rank0.as_path()), (None, rank0.as_path())];
    let error = analyze_paths(&twice, &strict, &options).unwrap_err();
    assert!(
        matches!(&error, AnalysisError::DuplicateRank { rank: 0, .. }),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        load_ranks(&twice, &strict).unwrap_err().to_string()
    );
    assert!(matches!(
        analyze_paths(&[], &strict, &options),
        Err(AnalysisError::NoTraces)
    ));
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// The JSON text of a `.json.gz` trace (`gzip -dc`).
fn trace_format_text(path: &Path) -> String {
    let out = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .expect("gzip runs");
    assert!(out.status.success(), "gzip -dc {}", path.display());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_planned_directory_gives_the_same_report_both_ways() {
    // What `neuronprof analyze DIR` reads: the ranks `plan_inputs` finds (two by
    // distributedInfo, one by process), with their ranks and window notes.
    let dir = traces_dir();
    let load = LoadOptions::default();
    for paths in [
        vec![dir.join("torch-2.15")],
        vec![
            dir.join("hta/two_rank-rank0.json.gz"),
            dir.join("hta/nccl_data.json.gz"),
        ],
    ] {
        for window in [Window::Latest, Window::Nth(1)] {
            let plan = plan_inputs(&paths, window).unwrap();
            let whole = analyze(&plan.load(&load).unwrap(), &ReportOptions::default());
            let streamed = analyze_plan(&plan, &load, &ReportOptions::default()).unwrap();
            assert_eq!(streamed, whole, "{paths:?} {window:?}");
        }
    }
    // two_rank-rank0 and nccl_data both say rank 0: two windows of one rank, noted.
    let plan = plan_inputs(
        &[
            dir.join("hta/two_rank-rank0.json.gz"),
            dir.join("hta/nccl_data.json.gz"),
        ],
        Window::Latest,
    )
    .unwrap();
    let report = analyze_plan(&plan, &load, &ReportOptions::default()).unwrap();
    assert!(
        report.notes.iter().any(|n| n.contains("profiling windows")),
        "{:?}",
        report.notes
    );
}

#[test]
fn many_ranks_in_any_order_give_the_same_report_both_ways() {
    // 24 ranks (copies of the two gloo ranks and of HTA's two_rank, each given its own
    // rank), listed out of rank order with the lowest rank last: each rank is folded
    // into the report as it is read, in whatever order the workers finish, and the
    // lowest one keeps the per-rank analyses.
    let dir = traces_dir();
    let sources = [
        "torch-2.15/gloo_2rank-rank0.pt.trace.json.gz",
        "torch-2.15/gloo_2rank-rank1.pt.trace.json.gz",
    ];
    let gloo: Vec<(Option<i64>, PathBuf)> = (0..24)
        .rev()
        .map(|i: i64| (Some((i * 7) % 24), dir.join(sources[(i % 2) as usize])))
        .collect();
    assert_eq!(gloo.last().map(|f| f.0), Some(Some(0)));
    check("24 gloo ranks", &gloo, &[]);
    let two_rank: Vec<(Option<i64>, PathBuf)> = (0..8)
        .map(|i: i64| {
            let file =
                ["hta/two_rank-rank1.json.gz", "hta/two_rank-rank0.json.gz"][(i % 2) as usize];
            (Some(7 - i), dir.join(file))
        })
        .collect();
    check(
        "8 two_rank ranks",
        &two_rank,
        &[(
            "step 551".to_owned(),
            ReportOptions::hta_reference().with_step(Some(551)),
        )],
    );
    // The order of the files does not change the report.
    let ranked: Vec<(Option<i64>, &Path)> = gloo.iter().map(|(r, p)| (*r, p.as_path())).collect();
    let mut reversed = ranked.clone();
    reversed.reverse();
    let load = LoadOptions::default();
    let options = ReportOptions::default();
    assert_eq!(
        analyze_paths(&ranked, &load, &options).unwrap(),
        analyze_paths(&reversed, &load, &options).unwrap()
    );
}
