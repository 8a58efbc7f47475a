//! `neuronprof critical-path` and `neuronprof what-if` through the binary: HTA's numbers
//! on HTA's own trace, the cross-rank path of our neuron traces, predicted traces that
//! `inspect` and `analyze` read, and clear errors for bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn neuronprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ours() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../analysis/tests/data/gpt-2ranks-4steps")
}

#[test]
fn hta_compat_prints_htas_critical_path_of_simple_add() {
    // The vendored copy of HTA's trace (tests/data/README.md).
    let trace =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/traces/hta/simple_add.json.gz");
    let overlay = std::env::temp_dir().join(format!("neuronprof-overlay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&overlay);
    let out = neuronprof(&[
        "critical-path",
        "--overlay",
        overlay.to_str().unwrap(),
        "--hta-compat",
        "--annotation",
        "[param|pytorch.model.alex_net|0|0|0|measure|forward]",
        "--instance",
        "1",
        trace.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = text(&out);
    // HTA 0.5: 241724 us, cpu_bound 99.779087 %, 414 nodes, 415 edges.
    assert!(t.contains(": 241724.0 us, 414 nodes, 415 edges"), "{t}");
    assert!(
        t.contains("cpu_bound                      241190.0     99.78%"),
        "{t}"
    );
    assert!(t.contains("not placed: 20 event syncs"), "{t}");
    // HTA's overlay of this path (HTA's tests/test_critical_path_analysis.py): 159
    // events marked critical, 21 flows of the default edge types.
    let file = overlay.join("overlaid_critical_path_simple_add.json.gz");
    assert!(t.contains(&format!("overlay: {}", file.display())), "{t}");
    #[derive(Default)]
    struct Count {
        marked: usize,
        flows: usize,
    }
    impl trace_format::TraceSink for Count {
        fn on_event(
            &mut self,
            _index: u64,
            event: &trace_format::Event<'_>,
        ) -> std::ops::ControlFlow<()> {
            let critical = event.arg("critical").and_then(|v| v.as_i64()) == Some(1);
            match event.phase {
                trace_format::Phase::Complete if critical => self.marked += 1,
                trace_format::Phase::FlowStart if event.name() == "critical_path" => {
                    self.flows += 1
                }
                _ => {}
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut count = Count::default();
    trace_format::read_path(&file, &mut count).expect("the overlay reads back");
    let (marked, flows) = (count.marked, count.flows);
    assert_eq!((marked, flows), (159, 21));
}

#[test]
fn what_if_writes_predicted_traces_that_inspect_and_analyze_read() {
    let dir = std::env::temp_dir().join(format!("neuronprof-whatif-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = neuronprof(&[
        "what-if",
        ours().to_str().unwrap(),
        "--scale",
        "host=0.5",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = text(&out);
    assert!(t.starts_with("what-if: host=0.5\n"), "{t}");
    assert!(t.contains("critical path (across ranks)"), "{t}");
    assert_eq!(t.matches("predicted trace: ").count(), 2, "{t}");
    let inspect = neuronprof(&["inspect", dir.to_str().unwrap()]);
    assert!(inspect.status.success(), "{}", text(&inspect));
    assert!(text(&inspect).contains("ranks: 0, 1"), "{}", text(&inspect));
    let analyze = neuronprof(&["analyze", dir.to_str().unwrap()]);
    assert!(
        analyze.status.success(),
        "{}",
        String::from_utf8_lossy(&analyze.stderr)
    );
    let json = neuronprof(&["critical-path", "--json", ours().to_str().unwrap()]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(value["windows"].as_array().unwrap().len(), 2);
    assert!(value["length_us"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_scales_and_annotations_are_clear_errors() {
    let out = neuronprof(&["what-if", ours().to_str().unwrap(), "--scale", "gpu=2"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("scale \"gpu=2\": expected kernel:REGEX=F"),
        "{err}"
    );
    let out = neuronprof(&[
        "critical-path",
        ours().to_str().unwrap(),
        "--annotation",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no event name contains the annotation \"nope\""),
        "{err}"
    );
}
