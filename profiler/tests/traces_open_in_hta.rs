//! Interop: the traces of a two-rank run open in Holistic Trace Analysis and its
//! temporal breakdown and kernel breakdown run on them. Needs a Python with HTA
//! installed: `NEURONPROF_HTA_PYTHON`, else the venv `bash scripts/hta-venv` makes
//! (`target/hta-venv`, which `.ci/run` creates). Without either it is skipped with a
//! message — except in CI (`CI` set), where a missing HTA fails the test.
//!
//! HTA 0.5 with pandas 3 fails on any trace whose correlation ids fit in an `int8`
//! (its `index_correlation` column keeps the downcast type and pandas 3 refuses to
//! store larger row indices in it); real CUDA traces have large correlation ids and
//! do not hit it.

#[path = "../../tests/support/skip.rs"]
mod skip;

mod common;

use neuron_backend::{DType, Runtime};
use profiler::{RankOf, RunOptions, Schedule};

const SCRIPT: &str = r#"
import sys
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=sys.argv[1])
breakdown = analysis.get_temporal_breakdown(visualize=False)
print("ranks", sorted(int(r) for r in breakdown["rank"]))
print("compute", [float(x) for x in breakdown["compute_time(us)"]])
kernels = analysis.get_gpu_kernel_breakdown(visualize=False)[0]
print("kernel types", sorted(kernels["kernel_type"]))
"#;

fn rank_of(thread_id: u32) -> Option<RankOf> {
    let stats = runtime_hooks::thread_stats();
    let name = stats
        .iter()
        .find(|t| t.thread_id == thread_id)?
        .thread_name
        .clone()?;
    Some(RankOf {
        rank: name.strip_prefix("hta-rank-")?.parse().ok()?,
        world_size: 2,
    })
}

/// `NEURONPROF_HTA_PYTHON`, else the workspace's `target/hta-venv` python if it exists.
fn hta_python() -> Option<String> {
    if let Ok(python) = std::env::var("NEURONPROF_HTA_PYTHON") {
        return Some(python);
    }
    let venv =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/hta-venv/bin/python");
    venv.exists().then(|| venv.to_string_lossy().into_owned())
}

#[test]
fn traces_open_in_hta() {
    let Some(python) = hta_python() else {
        skip::skipped(
            "profiler: traces_open_in_hta",
            "no HTA: run `bash scripts/hta-venv` or set NEURONPROF_HTA_PYTHON to a python \
             with HolisticTraceAnalysis",
        );
        return;
    };
    let _serial = common::serial();
    let runtime = Runtime::trn2();
    let dir = common::temp_dir("hta");
    let mut options = RunOptions::new(&dir, 2);
    options.schedule = Some(Schedule::new(0, 1, 0, 3, 1));
    for r in 0..2 {
        options
            .config
            .devices
            .push(common::device_info(&runtime.device(r).unwrap()));
    }
    let run = profiler::run_profiled(&options, rank_of, |prof| {
        std::thread::scope(|scope| {
            for r in 0..2 {
                let device = runtime.device(r).unwrap();
                let prof = prof.clone();
                std::thread::Builder::new()
                    .name(format!("hta-rank-{r}"))
                    .spawn_scoped(scope, move || {
                        runtime_hooks::register_thread();
                        let a = device.randn(&[64, 128], DType::BF16, 1).unwrap();
                        let b = device.randn(&[128, 64], DType::BF16, 2).unwrap();
                        let mut steps = prof.rank_steps();
                        for _ in 0..5 {
                            {
                                // A range with device work: a gpu_user_annotation too.
                                let _forward = profiler::record_function("forward");
                                let c = a.matmul(&b).unwrap().gelu().unwrap();
                                drop(c.to_host().unwrap());
                            }
                            steps.step();
                        }
                    })
                    .unwrap();
            }
        })
    })
    .unwrap();
    assert_eq!(run.files.len(), 2);
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(SCRIPT)
        .arg(&dir)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "HTA failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("ranks [0, 1]"), "{stdout}\n{stderr}");
    let compute: Vec<f64> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("compute "))
        .map(|l| {
            l.trim_matches(|c| c == '[' || c == ']')
                .split(", ")
                .map(|x| x.parse().unwrap())
                .collect()
        })
        .unwrap();
    assert!(compute.iter().all(|&us| us > 0.0), "{stdout}");
    assert!(
        stdout.contains("kernel types ['COMPUTATION', 'MEMORY']"),
        "copies are memory kernels, the rest computation: {stdout}"
    );
}
