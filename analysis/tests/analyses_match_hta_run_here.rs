//! Our analyses in HTA-compat mode, following HTA 0.5's rules
//! ([`analysis::HtaVersion::V0_5`]), equal what HTA 0.5 — the release on PyPI — computes
//! when run here, value by value at its printed precision, on every shared trace that
//! has no printed reference (`tests/data/traces/`: MTIA inference, CUDA with memory
//! events, syncs, Triton, CPU-only, the diff pair, a 2021 legacy trace, PyTorch 2.15 gloo
//! and PrivateUse1 traces) and on our own profiler's neuron traces
//! (`tests/data/gpt-2ranks-4steps`). Where HTA raises or finds nothing, we must give no
//! result either.
//!
//! HTA runs once for all cases, in one Python process (`scripts/hta_reference.py`,
//! about 15 s), writing what it computed in the layout of the shared references; the
//! checks are the ones the references are checked with (`support/hta_checks.rs`). The
//! printer itself is proven by `scripts/hta_reference.py` reproducing the four shared
//! references (`tests/data/traces/hta-reference/`) line for line apart from the
//! `device_type` HTA 0.5 does not infer.
//!
//! HTA sorts with pandas, whose order of equal timestamps is that of the argsort kernel
//! numpy picks for the CPU; the script says which, and compat mode is told
//! (`analysis::stats::NumpySort`), so the tests hold on machines with and without
//! AVX-512.
//!
//! Needs a Python with HTA 0.5: `NEURONPROF_HTA_PYTHON`, else the venv `bash
//! scripts/hta-venv` makes (`target/hta-venv`, which `.ci/run` creates). Without one
//! every test skips with a message — except in CI (`CI` set), where they fail.

#[path = "../../tests/support/skip.rs"]
mod skip;

mod support {
    pub mod hta_checks;
    pub mod reference;
    pub mod traces;
}

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use analysis::stats::NumpySort;
use analysis::{load_paths, HtaVersion, LoadOptions};
use support::hta_checks::*;
use support::reference::Reference;
use support::traces::traces_dir;

/// The cases: a name and its trace files, one per rank (relative to the shared traces,
/// or to this crate when they start with `tests/`).
const CASES: [(&str, &[&str]); 11] = [
    ("mtia_inference", &["hta/mtia_inference_rank_0.json.gz"]),
    ("memory_events", &["hta/memory_events.json.gz"]),
    ("simple_add", &["hta/simple_add.json.gz"]),
    ("triton", &["hta/triton_example.json.gz"]),
    ("cpu_only", &["hta/cpu_only_rank34.json.gz"]),
    ("compare_base", &["hta/compare_base.json.gz"]),
    ("compare_test", &["hta/compare_test.json.gz"]),
    ("resnet50_2021", &["kineto-legacy/resnet50_2021.json.gz"]),
    (
        "gloo_2rank",
        &[
            "torch-2.15/gloo_2rank-rank0.pt.trace.json.gz",
            "torch-2.15/gloo_2rank-rank1.pt.trace.json.gz",
        ],
    ),
    (
        "python_privateuse1_neuron",
        &["torch-2.15/python_privateuse1_neuron.pt.trace.json.gz"],
    ),
    (
        "our_gpt_2ranks",
        &[
            "tests/data/gpt-2ranks-4steps/rank0.pt.trace.json.gz",
            "tests/data/gpt-2ranks-4steps/rank1.pt.trace.json.gz",
        ],
    ),
];

/// `NEURONPROF_HTA_PYTHON`, else the workspace's `target/hta-venv` python if it exists.
fn hta_python() -> Option<PathBuf> {
    if let Some(python) = std::env::var_os("NEURONPROF_HTA_PYTHON") {
        return Some(python.into());
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/hta-venv/bin/python");
    venv.exists().then_some(venv)
}

fn trace_path(shared: &Path, file: &str) -> PathBuf {
    if file.starts_with("tests/") {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(file)
    } else {
        shared.join(file)
    }
}

/// Why every test here skips without HTA.
const NO_HTA: &str = "no HTA: run `bash scripts/hta-venv` or set NEURONPROF_HTA_PYTHON to a \
                      python with HolisticTraceAnalysis 0.5";

/// Runs HTA on every case once: the directory holding `<case>.txt` and the argsort
/// kernel of HTA's numpy, or `None` (skip).
fn hta_outputs() -> Option<&'static (PathBuf, NumpySort)> {
    static OUTPUTS: OnceLock<Option<(PathBuf, NumpySort)>> = OnceLock::new();
    OUTPUTS
        .get_or_init(|| {
            let shared = traces_dir();
            // Each test records its own skip ([`NO_HTA`]).
            let python = hta_python()?;
            let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hta-run-here");
            let _ = std::fs::remove_dir_all(&work);
            let mut args: Vec<PathBuf> = Vec::new();
            for (name, files) in CASES {
                // HTA reads every file of a directory as one rank's trace.
                let dir = work.join("traces").join(name);
                std::fs::create_dir_all(&dir).expect("case directory");
                for file in files {
                    let source = trace_path(&shared, file);
                    let link = dir.join(source.file_name().expect("file name"));
                    std::os::unix::fs::symlink(&source, &link).expect("symlink a trace");
                }
                args.push(dir);
                args.push(work.join(format!("{name}.txt")));
            }
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/hta_reference.py");
            let out = Command::new(&python)
                .arg(&script)
                .args(&args)
                .output()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
            assert!(
                out.status.success(),
                "{} {} failed: {}\n{}",
                python.display(),
                script.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            // `numpy <version> <kernel>`
            let stdout = String::from_utf8_lossy(&out.stdout);
            let kernel = stdout
                .lines()
                .find_map(|l| l.strip_prefix("numpy "))
                .and_then(|l| l.split_whitespace().nth(1))
                .unwrap_or_else(|| panic!("no numpy kernel line in {stdout:?}"));
            let sort: NumpySort = kernel.parse().expect("numpy kernel");
            eprintln!("HTA's numpy: {}", stdout.trim());
            Some((work, sort))
        })
        .as_ref()
}

/// Case `index` of [`CASES`]: what HTA computed and our load of the same files.
fn case(index: usize) -> Option<&'static Case> {
    static LOADED: [OnceLock<Option<Case>>; CASES.len()] = [const { OnceLock::new() }; 11];
    LOADED[index]
        .get_or_init(|| {
            let (outputs, sort) = hta_outputs()?;
            let shared = traces_dir();
            let (name, files) = CASES[index];
            let paths: Vec<PathBuf> = files.iter().map(|f| trace_path(&shared, f)).collect();
            let traces = load_paths(&paths, &LoadOptions::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            Some(Case {
                reference: Reference::from_path(
                    &outputs.join(format!("{name}.txt")),
                    &format!("HTA 0.5 on {name}"),
                ),
                traces,
                version: HtaVersion::V0_5,
                sort: *sort,
            })
        })
        .as_ref()
}

macro_rules! live_cases {
    ($($case:ident = $index:expr),* $(,)?) => {
        $(
            mod $case {
                use super::*;

                fn run(check: fn(&Case)) {
                    assert_eq!(CASES[$index].0, stringify!($case));
                    match case($index) {
                        Some(case) => check(case),
                        None => skip::skipped(&skip::this_test(), NO_HTA),
                    }
                }

                #[test]
                fn ranks_and_iterations_match_hta() { run(check_header) }
                #[test]
                fn device_rows_match_hta() { run(check_device_rows) }
                #[test]
                fn temporal_breakdown_matches_hta() { run(check_temporal) }
                #[test]
                fn comm_comp_overlap_matches_hta() { run(check_overlap) }
                #[test]
                fn kernel_breakdown_matches_hta() { run(check_kernel_breakdown) }
                #[test]
                fn idle_time_breakdown_matches_hta() { run(check_idle_time) }
                #[test]
                fn queue_length_summary_matches_hta() { run(check_queue_length) }
                #[test]
                fn memory_bw_summary_matches_hta() { run(check_memory_bw) }
                #[test]
                fn kernel_launch_stats_match_hta() { run(check_launch_stats) }
                #[test]
                fn potential_stragglers_match_hta() { run(check_stragglers) }
            }
        )*
    };
}

live_cases!(
    mtia_inference = 0,
    memory_events = 1,
    simple_add = 2,
    triton = 3,
    cpu_only = 4,
    compare_base = 5,
    compare_test = 6,
    resnet50_2021 = 7,
    gloo_2rank = 8,
    python_privateuse1_neuron = 9,
    our_gpt_2ranks = 10,
);
