//! Re-timing the cross-rank graph of our own 2-rank neuron trace
//! (`tests/data/gpt-2ranks-4steps`) with every factor 1 must give back each rank's
//! recorded step (a graph that dropped host time between operators, or a launch's or a
//! stream's order, would predict a shorter step), and halving the host must shorten it.

use std::path::Path;

use analysis::critical_path::what_if::{what_if, ScaleRule};
use analysis::critical_path::{build_graph, Options};
use analysis::{load_paths, LoadOptions};

fn graph_set() -> analysis::TraceSet {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gpt-2ranks-4steps");
    let paths = [
        dir.join("rank0.pt.trace.json.gz"),
        dir.join("rank1.pt.trace.json.gz"),
    ];
    load_paths(&paths, &LoadOptions::default().with_timeline(true)).expect("load")
}

#[test]
fn unit_factors_predict_the_recorded_step_and_half_host_is_faster() {
    let set = graph_set();
    let graph = build_graph(&set, &Options::default()).expect("graph");
    let path = graph.critical_path().expect("path");
    assert_eq!(path.windows.len(), 2, "both ranks in one graph");
    assert!(path.length_us > 0.0);
    let same = what_if(&graph, &["host=1".parse::<ScaleRule>().unwrap()], &[]).unwrap();
    for r in &same.ranks {
        assert!(
            (r.predicted_step_us - r.step_us).abs() <= 0.005 * r.step_us,
            "rank {}: recorded {} us, predicted {} us at factor 1",
            r.rank,
            r.step_us,
            r.predicted_step_us
        );
    }
    let faster = what_if(&graph, &["host=0.5".parse::<ScaleRule>().unwrap()], &[]).unwrap();
    assert!(
        faster.predicted_step_us < same.predicted_step_us,
        "halving host time: {} us, not below {} us",
        faster.predicted_step_us,
        same.predicted_step_us
    );
}

#[test]
fn a_missing_annotation_or_instance_is_a_clear_error() {
    let set = graph_set();
    let mut options = Options::default();
    options.annotation = "no such annotation".into();
    let err = build_graph(&set, &options).unwrap_err().to_string();
    assert!(
        err.contains("no event name contains the annotation"),
        "{err}"
    );
    assert!(err.contains("rank 0"), "{err}");
    let mut options = Options::default();
    options.instances = (99, 99);
    let err = build_graph(&set, &options).unwrap_err().to_string();
    assert!(err.contains("instance 99"), "{err}");
    let plain = load_paths(
        &[Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/gpt-2ranks-4steps/rank0.pt.trace.json.gz")],
        &LoadOptions::default(),
    )
    .unwrap();
    let err = build_graph(&plain, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("with_timeline"), "{err}");
}

#[test]
fn a_scale_rule_that_selects_nothing_is_an_error_that_says_so() {
    let set = graph_set();
    let graph = build_graph(&set, &Options::default()).expect("graph");
    for (rule, expected) in [
        (
            "kernel:^matmull=0.5",
            "--scale kernel:^matmull=0.5: matches nothing in the graph (no kernel name \
             matches the pattern)",
        ),
        (
            "rank:9=0.5",
            "--scale rank:9=0.5: matches nothing in the graph (no device work of that rank; \
             the ranks are [0, 1])",
        ),
    ] {
        let err = what_if(
            &graph,
            &[rule.parse::<ScaleRule>().unwrap()],
            &[rule.to_owned()],
        )
        .expect_err(rule)
        .to_string();
        assert!(err.starts_with(expected), "{rule}: {err}");
    }
    assert!(what_if(&graph, &["rank:1=0.5".parse::<ScaleRule>().unwrap()], &[]).is_ok());
}
